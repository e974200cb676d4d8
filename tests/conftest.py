"""Fixtures shared by every test: tiny images, a tiny encoder and untrained weights; nothing downloads."""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "resources" / "samples"
PROXY_WEIGHTS = ROOT.parent / "shared" / "weights" / "vgg19-hed-proxy.pth"


def pytest_configure(config: pytest.Config) -> None:
    # A shell starts a background job with Ctrl+C ignored, and the commands the tests start would inherit that:
    # the tests that stop a command with SIGINT need it heard, however pytest was started.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def ray_address(tmp_path_factory):
    """A Ray head on this machine (``ray start --head``, two CPUs), as a user starts one; stopped after the tests.

    It is protected by a token (RAY_AUTH_TOKEN, as a saved ~/.ray/auth_token
    protects every cluster `ray start` makes), so the tests join it as a user's
    commands must, whatever this machine's own ~/.ray holds.
    """
    from style_studio.core.network.weights import TEST_NETWORK_VARIABLE

    pytest.importorskip("ray")
    ray = shutil.which("ray", path=str(Path(sys.executable).parent))
    if ray is None:
        pytest.skip("the ray command is not installed")
    port = _free_port()
    # Its workers build the tiny test network for "untrained", as this process does, and keep their
    # checkpoints in a cache of their own (set up before any test's isolated cache): never the user's.
    temp = tmp_path_factory.mktemp("ray")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RAY_AUTH_TOKEN", secrets.token_hex(32))
        patch.delenv("RAY_AUTH_MODE", raising=False)
        env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", TEST_NETWORK_VARIABLE: "tiny",
               "STYLE_STUDIO_CACHE": str(temp / "cache"), "STYLE_STUDIO_DATA": str(temp / "data")}  # fmt: skip
        start = [ray, "start", "--head", f"--port={port}", "--num-cpus=2", "--include-dashboard=false",
                 "--disable-usage-stats", f"--temp-dir={temp}"]  # fmt: skip
        subprocess.run(start, check=True, env=env, capture_output=True, timeout=180)
        try:
            yield f"127.0.0.1:{port}"
        finally:
            subprocess.run([ray, "stop", "--force"], env=env, capture_output=True, timeout=120)
