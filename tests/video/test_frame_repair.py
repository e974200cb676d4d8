"""Pixels the flow does not trust (uncovered behind a moving object) can get a style term of their own."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import torch
from PIL import Image

from style_studio.core import Job, VideoOptions, door
from style_studio.core import settings as settings_mod
from style_studio.core.jobs.picture import Pictures, RunSpec
from style_studio.core.objective.temporal import FrameGuide
from tests.clips import textured

SETTINGS = dataclasses.replace(
    settings_mod.DEFAULTS, size=64, iterations=15, scales=1, weights="untrained", init="content"
)


def untrusted_block(height: int, width: int) -> np.ndarray:
    """A frame's reliable pixels: all but a block on the left, as behind an object that moved right."""
    reliable = np.ones((height, width), np.float32)
    reliable[12:36, 8:24] = 0
    return reliable


def test_no_repair_or_nothing_untrusted_adds_no_style_group():
    photo = textured(64, 48)
    device = torch.device("cpu")
    assert FrameGuide(photo, photo, untrusted_block(48, 64), 1.0).repair_group((64, 48), device) is None
    everywhere = np.ones((48, 64), np.float32)
    assert FrameGuide(photo, photo, everywhere, 1.0, repair=5.0).repair_group((64, 48), device) is None


def test_the_repair_group_covers_the_untrusted_pixels_and_a_strokes_width_around_them():
    photo = textured(128, 96)
    reliable = np.ones((96, 128), np.float32)
    reliable[24:72, 16:48] = 0
    group = FrameGuide(photo, photo, reliable, 1.0, repair=5.0).repair_group((128, 96), torch.device("cpu"))
    assert group is not None and group.mask is not None
    mask = group.mask[0, 0].numpy()
    assert (mask[24:72, 16:48] == 1).all()
    assert mask[22, 30] == 1 and mask[73, 30] == 1  # two pixels around: 128 / 64
    assert mask[21, 30] == 0 and mask[74, 30] == 0 and mask[48, 60] == 0
    assert group.strength == 5.0
    assert group.share == float(mask.mean())
    half = FrameGuide(photo, photo, reliable, 1.0, repair=5.0).repair_group((64, 48), torch.device("cpu"))
    assert half is not None and half.mask is not None and half.mask.shape[-2:] == (48, 64)  # at the scale's size


def styled_frame(style: Path, tiny, repair: float) -> tuple[np.ndarray, np.ndarray]:
    """A frame whose start is the photo, styled with its untrusted block repaired (or not): (photo, result)."""
    photo = textured(64, 48, seed=4)
    guide = FrameGuide(photo, photo, untrusted_block(48, 64), 1.0, repair=repair)
    pictures = Pictures(Image.fromarray(photo), (Image.open(style).convert("RGB"),))
    result = door.picture(RunSpec(pictures, SETTINGS, frame=guide), tiny)
    return photo, np.asarray(result.finished_or_raise(), dtype=np.float32)


def test_repaired_untrusted_pixels_move_further_from_the_photo_than_the_rest(style, tiny):
    photo, plain = styled_frame(style, tiny, 0.0)
    _, repaired = styled_frame(style, tiny, 10.0)
    block = untrusted_block(48, 64) == 0

    def moved(result: np.ndarray, where: np.ndarray) -> float:
        return float(np.abs(result - photo).mean(-1)[where].mean())

    assert moved(repaired, block) > 3 * moved(plain, block)
    assert moved(repaired, block) > 3 * moved(repaired, ~block)  # the term is theirs: the rest moves far less


def test_a_video_made_before_the_repair_keeps_its_key_and_one_repaired_gets_another():
    from style_studio.core.jobs.job import video_key
    from tests.former import FORMER_DEFAULTS, FORMER_VIDEO_FIELDS

    settings = dataclasses.replace(FORMER_DEFAULTS, weights="untrained")
    styles = [Image.new("RGB", (8, 8), "blue")]

    def key(options: VideoOptions) -> str:
        job = Job("v", Path("clip.mp4"), (Path("style.png"),), settings, Path("out.mp4"), video=options)
        return video_key(job, "0" * 64, styles)

    former = VideoOptions(**FORMER_VIDEO_FIELDS)
    assert key(former) == "4d3d89526417375193a81a87e1aff4ad"
    assert key(dataclasses.replace(former, frame_repair=3.0)) != key(former)
