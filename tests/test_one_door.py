"""One door: the command line and the window render through ``core.jobs.door`` and nothing below it.

The renders below the door (a picture's run, a job's, a clip's, a chunk's, the engine) are the core's own: a module
under ``style_studio/cli`` or ``style_studio/ui`` that names one fails here, and so does a public render function in
``core/jobs`` beside the door's four.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "style_studio"

#: The renders below the door, by the names they had before they were made internal, and as they are now.
INTERNAL_NAMES = {
    "PictureRun", "run_picture", "render_job", "render_video", "render_video_inputs", "render_video_in_chunks",
    "render_chunk", "_run_picture", "_render_job", "_render_video", "_render_video_inputs",
    "_render_video_in_chunks", "_render_chunk", "StyleTransfer",
}  # fmt: skip

#: The modules that hold them, and the engine's package.
INTERNAL_MODULES = (
    "style_studio.core.jobs.picture", "style_studio.core.jobs.video_job", "style_studio.core.jobs.video_chunks",
    "style_studio.core.jobs.render", "style_studio.core.jobs.frame_styler", "style_studio.core.run",
)  # fmt: skip

SURFACES = sorted([*PACKAGE.glob("cli/*.py"), *PACKAGE.glob("ui/*.py")])


def imports(text: str, path: Path) -> list[tuple[str, str]]:
    """Each (module, name) ``text`` (the module at ``path``) imports, relative imports made absolute; a plain
    ``import m`` gives (m, "")."""
    package = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1])
    found: list[tuple[str, str]] = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            found += [(alias.name, "") for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            module = ".".join(part for part in (base, node.module or "") if part)
            found += [(module, alias.name) for alias in node.names]
    return found


def below_the_door(module: str, name: str) -> bool:
    whole = f"{module}.{name}" if name else module
    if any(m in (module, whole) or module.startswith(f"{m}.") for m in INTERNAL_MODULES):
        return True
    return module.startswith("style_studio.core") and name in INTERNAL_NAMES


@pytest.mark.parametrize("path", SURFACES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_surface_imports_a_render_below_the_door(path: Path) -> None:
    found = imports(path.read_text(encoding="utf-8"), path)
    below = [f"{m}:{n}" if n else m for m, n in found if below_the_door(m, n)]
    assert not below, f"{path.name} reaches below the door (call core.door.picture, clip or job): {below}"


def test_the_check_sees_a_surface_that_reaches_below_the_door() -> None:
    text = (
        "from ..core import render_job\nfrom ..core.jobs.video_chunks import ChunkWork\n"
        "from style_studio.core.run import engine\nfrom ..core import door, Job\n"
    )
    found = [below_the_door(m, n) for m, n in imports(text, PACKAGE / "cli" / "render.py")]
    assert found == [True, True, True, False, False]


def test_core_jobs_has_at_most_four_public_render_functions() -> None:
    """The door's four (picture, clip, job, and the look a batch's pictures share), and nothing else public there
    that renders: a function named as a render (render..., run_..., stylize...) that takes the network's weights
    or a chunk runner."""
    renders = []
    for path in sorted((PACKAGE / "core" / "jobs").glob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
                named = node.name.startswith(("render", "run_", "stylize"))
                takes = {a.arg for a in node.args.args + node.args.kwonlyargs} & {"weights", "runner"}
                if path.stem == "door" or (named and takes):
                    renders.append(f"{path.stem}.{node.name}")
    assert renders == ["door.picture", "door.clip", "door.job", "door.look"]
