from __future__ import annotations

import pytest
from PIL import Image

from tests.conftest import SAMPLES


@pytest.fixture(scope="session")
def pictures() -> tuple[Image.Image, tuple[Image.Image, ...]]:
    """The cat photo and two styles, at their own sizes."""
    content = Image.open(SAMPLES / "content" / "chelsea.png").convert("RGB")
    styles = tuple(
        Image.open(SAMPLES / "style" / name).convert("RGB") for name in ("starry_night.jpg", "the_scream.jpg")
    )
    return content, styles
