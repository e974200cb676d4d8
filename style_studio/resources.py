"""Files the app ships with: sample images and icons.

In a source checkout they live in ``resources/`` beside the package; the wheel
and the app bundle carry them inside the package as ``style_studio/resources``.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def resources_dir() -> Path:
    for candidate in (_PACKAGE / "resources", _PACKAGE.parent / "resources"):
        if (candidate / "samples").is_dir():
            return candidate
    raise FileNotFoundError("Style Studio's resources folder is missing; reinstall the application")


def sample(kind: str, name: str) -> Path:
    """A bundled sample image: ``kind`` is "content" or "style"."""
    return resources_dir() / "samples" / kind / name


def samples(kind: str) -> list[Path]:
    return sorted(p for p in (resources_dir() / "samples" / kind).iterdir() if p.is_file())


DEFAULT_CONTENT = ("content", "chelsea.png")
DEFAULT_STYLE = ("style", "starry_night.jpg")


def icon_path() -> Path:
    return resources_dir() / "icons" / "style-studio.svg"
