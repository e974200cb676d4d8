"""render, batch and the queue share one job model: the same job makes the same picture with the same key."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image

from style_studio.core.io.imageio import read_metadata
from style_studio.core.jobs.job import JOB_KEY
from style_studio.core.objective.regions import from_document
from tests.cli.test_cli import CONTENT, STYLE, run_cli

FAST = ["--size", "64", "--iterations", "5", "--scales", "1", "--weights", "untrained", "--init", "noise"]


@pytest.fixture
def mask(tmp_path):
    """Chelsea's proportions (3:2): the top half red, the bottom-left quarter white, the rest black."""
    picture = np.zeros((60, 90, 3), np.uint8)
    picture[:30] = (255, 0, 0)
    picture[30:, :45] = (255, 255, 255)
    Image.fromarray(picture).save(tmp_path / "mask.png")
    return tmp_path / "mask.png"


def test_a_jobs_file_takes_regions_and_makes_the_picture_render_makes(tmp_path, mask):
    rendered = tmp_path / "render" / "chelsea-starry_night.png"
    rendered.parent.mkdir()
    code, _, err = run_cli(
        "render", CONTENT, STYLE, "-o", str(rendered), *FAST, "--regions", str(mask), "--region", "red=1",
        "--region", "white=keep",
    )  # fmt: skip
    assert code == 0, err
    (tmp_path / "jobs.toml").write_text(
        f'[[jobs]]\ncontent = "{CONTENT}"\nstyle = "{STYLE}"\nregions = "mask.png"\nregion = ["red=1", "white=keep"]\n'
    )
    code, _, err = run_cli("batch", "--jobs", str(tmp_path / "jobs.toml"), "-o", str(tmp_path / "batch"), *FAST)
    assert code == 0, err
    batched = tmp_path / "batch" / "chelsea-starry_night.png"
    regions = from_document(read_metadata(batched))
    assert regions is not None and [r.keep for r in regions.regions] == [False, True]
    with Image.open(rendered) as a, Image.open(batched) as b:
        assert np.array_equal(np.asarray(a), np.asarray(b))
    keys = [json.loads(read_metadata(path))[JOB_KEY] for path in (rendered, batched)]
    assert keys[0] == keys[1]
    # A picture render made is the batch's job done: the batch skips it.
    code, _, err = run_cli(
        "batch", "--jobs", str(tmp_path / "jobs.toml"), "-o", str(tmp_path / "render"), *FAST
    )  # fmt: skip
    assert code == 0 and "1 skipped" in err


def test_a_batch_writes_16_bits_at_the_resolution_asked(tmp_path):
    import tifffile

    code, _, err = run_cli(
        "batch", CONTENT, "--style", STYLE, "-o", str(tmp_path), "--format", "tif", *FAST,
        "--bit-depth", "16", "--dpi", "300",
    )  # fmt: skip
    assert code == 0, err
    with tifffile.TiffFile(tmp_path / "chelsea-starry_night.tif") as tiff:
        pixels = tiff.pages[0].asarray()
    assert pixels.dtype == np.uint16 and len(np.unique(pixels)) > 256
    with Image.open(tmp_path / "chelsea-starry_night.tif") as made:
        assert made.info["dpi"] == pytest.approx((300, 300))


def test_a_batch_refuses_16_bits_in_a_jpeg_and_regions_without_a_mask(tmp_path):
    code, _, err = run_cli(
        "batch", CONTENT, "--style", STYLE, "-o", str(tmp_path / "out"), "--format", "jpg", *FAST, "--bit-depth", "16"
    )  # fmt: skip
    assert code == 2 and "16-bit pictures can be saved as .png or .tif, not .jpg" in err
    (tmp_path / "jobs.toml").write_text(f'[[jobs]]\ncontent = "{CONTENT}"\nstyle = "{STYLE}"\nregion = ["red=1"]\n')
    code, _, err = run_cli("batch", "--jobs", str(tmp_path / "jobs.toml"), "-o", str(tmp_path / "out"), *FAST)
    assert code == 2 and "give the mask as regions" in err
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
