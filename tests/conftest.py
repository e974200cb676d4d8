"""Fixtures shared by every test: tiny images, a tiny encoder and untrained weights; nothing downloads."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "resources" / "samples"
PROXY_WEIGHTS = ROOT.parent / "shared" / "weights" / "vgg19-hed-proxy.pth"


@pytest.fixture(autouse=True)
def _isolated_torch_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Point torch's cache at an empty folder: no test may see a user's cached weights."""
    monkeypatch.setenv("TORCH_HOME", str(tmp_path_factory.getbasetemp() / "torch-home"))


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Checkpoints, locks and the render queue go to folders of the test's own: none from a user or another test is
    seen. The cache is beside the test's folder, so that a test sees there only the files it made."""
    monkeypatch.setenv("STYLE_STUDIO_CACHE", str(tmp_path_factory.mktemp("cache")))
    monkeypatch.setenv("STYLE_STUDIO_DATA", str(tmp_path / "data"))


@pytest.fixture
def tiny_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Command lines and batches (subprocesses and Ray workers too) build the tiny test network for "untrained"."""
    from style_studio.core.network.weights import TEST_NETWORK_VARIABLE

    monkeypatch.setenv(TEST_NETWORK_VARIABLE, "tiny")


@pytest.fixture(scope="session")
def untrained():
    from style_studio.core.network.weights import load_weights

    return load_weights("untrained")


@pytest.fixture(scope="session")
def tiny():
    """Weights that make a tiny VGG19-shaped encoder: for tests of the loop, not of the network."""
    from tests.tiny import TinyWeights

    return TinyWeights()


@pytest.fixture(scope="session")
def content_image():
    from PIL import Image

    return Image.open(SAMPLES / "content" / "chelsea.png").convert("RGB").resize((72, 48))


@pytest.fixture(scope="session")
def style_image():
    from PIL import Image

    return Image.open(SAMPLES / "style" / "starry_night.jpg").convert("RGB").resize((64, 52))


@pytest.fixture(scope="session")
def second_style_image():
    from PIL import Image

    return Image.open(SAMPLES / "style" / "the_scream.jpg").convert("RGB").resize((48, 60))
