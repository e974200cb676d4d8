"""``style-studio render --regions MASK --region COLOUR=...``: a mask file from the command line."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from style_studio.core.io.imageio import read_metadata
from style_studio.core.objective.regions import from_document
from tests.cli.test_cli import CONTENT, STYLE, run_cli
from tests.conftest import SAMPLES

SCREAM = str(SAMPLES / "style" / "the_scream.jpg")
FAST = ["--size", "64", "--iterations", "6", "--scales", "1", "--weights", "untrained"]


@pytest.fixture
def mask(tmp_path):
    """Chelsea's proportions (3:2), at another size than the photo: top half red, bottom-left white, rest black."""
    picture = np.zeros((60, 90, 3), np.uint8)
    picture[:30] = (255, 0, 0)
    picture[30:, :45] = (255, 255, 255)
    path = tmp_path / "mask.png"
    Image.fromarray(picture).save(path)
    return path


def test_a_mask_with_a_kept_area_renders_and_its_regions_come_back_from_the_file(tmp_path, mask):
    target = tmp_path / "out.png"
    code, _, err = run_cli(
        "render", CONTENT, STYLE, SCREAM, "-o", str(target), *FAST,
        "--regions", str(mask), "--region", "red=2:1.5", "--region", "white=keep", "--init", "noise",
    )  # fmt: skip
    assert code == 0, err
    assert "scaled to the photo's 451×300" in err
    regions = from_document(read_metadata(target))
    assert regions is not None
    assert [r.keep for r in regions.regions] == [False, True]
    assert regions.regions[0].blend == (0.0, 1.0) and regions.regions[0].strength == 1.5
    # The kept corner is the photo (started from noise, everything else moved).
    result = np.asarray(Image.open(target).convert("RGB"), np.float32)
    photo = np.asarray(Image.open(CONTENT).convert("RGB").resize((64, 43), Image.Resampling.LANCZOS), np.float32)
    inside = (slice(26, 43), slice(0, 28))
    assert np.abs(result[inside] - photo[inside]).mean() < 1.0
    assert np.abs(result[:20] - photo[:20]).mean() > 20


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--region", "blue=1"], "no pixel of the mask mask.png is #0000ff"),
        (["--region", "red=3"], "there is no style 3"),
        (["--region", "purpleish=1"], "'purpleish' is not a colour"),
        (["--region", "red=keep", "--region", "white=keep"], None),
        ([], "a mask needs at least one --region"),
    ],
)
def test_bad_region_specs_exit_2_naming_the_colour_and_write_nothing(tmp_path, mask, extra, message):
    target = tmp_path / "out.png"
    code, _, err = run_cli("render", CONTENT, STYLE, SCREAM, "-o", str(target), *FAST, "--regions", str(mask), *extra)
    if message is None:  # black is unpainted: keeping red and white still leaves it to stylise
        assert code == 0, err
        return
    assert code == 2, err
    assert message in err
    assert len(err.strip().splitlines()) == 1, err
    assert not target.exists()


def test_every_colour_kept_is_refused(tmp_path):
    white = tmp_path / "white.png"
    Image.fromarray(np.full((20, 30), 255, np.uint8)).save(white)
    code, _, err = run_cli(
        "render",
        CONTENT,
        STYLE,
        "-o",
        str(tmp_path / "o.png"),
        *FAST,
        "--regions",
        str(white),
        "--region",
        "white=keep",
    )
    assert code == 2 and "nothing left to stylise" in err


def test_region_without_a_mask_is_a_usage_error(tmp_path):
    code, _, err = run_cli("render", CONTENT, STYLE, "-o", str(tmp_path / "o.png"), *FAST, "--region", "red=1")
    assert code == 2 and "give the mask with --regions" in err
