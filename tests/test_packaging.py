"""The wheel carries what the app needs at run time; desktop files validate; icons exist in every size."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from style_studio import APP_ID, __version__
from tests.conftest import ROOT

ICON_SIZES = (16, 22, 24, 32, 48, 64, 128, 256, 512)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(ROOT)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (built,) = out.glob("style_studio-*.whl")
    return built


@pytest.mark.slow
def test_the_wheel_carries_the_code_resources_and_licences(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for required in (
        "style_studio/cli/__init__.py",
        "style_studio/core/run/engine.py",
        "style_studio/ui/main_window.py",
        "style_studio/resources/samples/SOURCES.md",
        "style_studio/resources/icons/style-studio.svg",
        f"style_studio/resources/icons/hicolor/256x256/apps/{APP_ID}.png",
    ):
        assert required in names, required
    samples = {n for n in names if n.startswith("style_studio/resources/samples/") and not n.endswith(".md")}
    assert len(samples) == 10
    assert not any(n.startswith(("tests/", "benchmarks/")) for n in names)


@pytest.mark.slow
def test_the_wheel_declares_the_entry_point_and_pinned_torch(wheel):
    archive = zipfile.ZipFile(wheel)
    dist = f"style_studio-{__version__}.dist-info"
    assert "style-studio = style_studio.cli:main" in archive.read(f"{dist}/entry_points.txt").decode()
    metadata = archive.read(f"{dist}/METADATA").decode()
    assert "Requires-Dist: torch==2.14.1" in metadata and "Requires-Dist: torchvision==0.29.1" in metadata


@pytest.mark.slow
def test_the_unpacked_wheel_runs_and_finds_its_own_resources(wheel, tmp_path):
    zipfile.ZipFile(wheel).extractall(tmp_path)
    code = (
        "import style_studio.resources as r, sys; print(r.resources_dir());"
        "from style_studio.cli import main; sys.exit(main(['--version']))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.split()
    assert lines[0] == str(tmp_path / "style_studio" / "resources") and lines[-1] == __version__


def test_icons_exist_in_every_size():
    from PIL import Image

    for size in ICON_SIZES:
        path = ROOT / "resources" / "icons" / "hicolor" / f"{size}x{size}" / "apps" / f"{APP_ID}.png"
        with Image.open(path) as icon:
            assert icon.size == (size, size) and icon.mode == "RGBA"
    with Image.open(ROOT / "resources" / "icons" / "style-studio.ico") as ico:
        assert (256, 256) in ico.info["sizes"]
    with Image.open(ROOT / "resources" / "icons" / "style-studio.icns") as icns:
        assert icns.size[0] >= 256


@pytest.mark.skipif(shutil.which("desktop-file-validate") is None, reason="desktop-file-utils not installed")
def test_the_desktop_file_validates():
    path = ROOT / "packaging" / "linux" / f"{APP_ID}.desktop"
    result = subprocess.run(["desktop-file-validate", str(path)], capture_output=True, text=True)
    assert result.returncode == 0 and "error" not in result.stdout.lower(), result.stdout


@pytest.mark.skipif(shutil.which("appstreamcli") is None, reason="appstream not installed")
def test_the_appstream_metainfo_validates():
    path = ROOT / "packaging" / "linux" / f"{APP_ID}.metainfo.xml"
    result = subprocess.run(["appstreamcli", "validate", "--no-net", str(path)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert __version__ in path.read_text()


def test_the_bundle_spec_takes_its_identity_from_the_package():
    spec = (ROOT / "packaging" / "style-studio.spec").read_text()
    assert "from style_studio import APP_ID, APP_NAME, __version__" in spec
