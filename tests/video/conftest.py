"""Video tests run the tiny test network for "untrained", and style with one textured picture."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image

from tests.clips import textured


@pytest.fixture
def style(tmp_path: Path) -> Path:
    path = tmp_path / "style.png"
    Image.fromarray(textured(64, 64, seed=5)).save(path)
    return path
