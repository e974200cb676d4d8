"""A picture's run: what it made comes back whole, also when it is stopped, fails part-way or was changed live."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from style_studio.core import door
from style_studio.core.errors import Cancelled, StyleStudioError
from style_studio.core.jobs.job import JOB_KEY, job_key
from style_studio.core.jobs.picture import Pictures, Previews, RunHooks, RunSpec
from style_studio.core.progress import CANCELLED, FINISHED, Failed
from style_studio.core.run.cancel import CancelToken
from style_studio.core.run.live import LiveChanges
from style_studio.core.settings import DEFAULTS

SETTINGS = dataclasses.replace(DEFAULTS, size=48, iterations=8, scales=1, weights="untrained")


@pytest.fixture
def pictures(content_image, style_image):
    return Pictures(content_image, (style_image,), ("cat.png", "night.jpg"))


def test_a_finished_run_returns_its_picture_its_key_and_the_document_that_names_them(tiny, pictures):
    plans = []
    result = door.picture(RunSpec(pictures, SETTINGS, deep=True), tiny, RunHooks(started=plans.append))
    assert result.outcome == FINISHED and result.finished and result.error is None
    assert result.image is not None and result.image.size == (48, 32)
    assert result.deep is not None and result.deep.dtype == np.uint16 and result.deep.shape == (32, 48, 3)
    assert plans and plans[0].sizes[-1] == (48, 32)
    assert result.key == job_key(SETTINGS, pictures.content, pictures.styles)
    document = json.loads(result.document("9.9"))
    assert document[JOB_KEY] == result.key
    assert document["content"] == "cat.png" and document["styles"] == ["night.jpg"]
    assert result.finished_or_raise() is result.image


def test_a_stopped_run_keeps_the_picture_so_far_and_all_or_nothing_callers_hear_cancelled(tiny, pictures):
    cancel = CancelToken()
    seen = []

    def report(record):
        seen.append(record)
        if len(seen) == 3:
            cancel.cancel()

    result = door.picture(
        RunSpec(pictures, dataclasses.replace(SETTINGS, iterations=200)), tiny, RunHooks(report=report, cancel=cancel)
    )
    assert result.outcome == CANCELLED and not result.finished
    assert result.image is not None  # what it made is the user's
    with pytest.raises(Cancelled):
        result.finished_or_raise()


def test_a_failure_part_way_is_returned_with_the_picture_so_far_and_raised_for_all_or_nothing_callers(tiny, pictures):
    trouble = StyleStudioError("the device went away")

    def report(record):
        if record.step >= 3:
            raise trouble

    result = door.picture(RunSpec(pictures, SETTINGS), tiny, RunHooks(report=report))
    assert result.outcome == Failed("the device went away") and result.outcome.exception is trouble
    assert result.image is not None
    with pytest.raises(StyleStudioError, match="the device went away"):
        result.finished_or_raise()


def test_a_live_change_is_in_the_result_and_its_key(tiny, pictures):
    live = LiveChanges(SETTINGS, 1, pictures.content.size)

    def report(record):
        if record.step == 2:
            live.change({"style_weight": 123.0})

    result = door.picture(RunSpec(pictures, SETTINGS), tiny, RunHooks(report=report, live=live))
    assert result.finished and result.settings.style_weight == 123.0
    changed = dataclasses.replace(SETTINGS, style_weight=123.0)
    assert (
        result.key
        == job_key(changed, pictures.content, pictures.styles)
        != job_key(SETTINGS, pictures.content, pictures.styles)
    )


def test_regions_at_another_size_are_fitted_to_the_photo(pictures):
    from style_studio.core.objective.regions import Region, Regions

    masks = np.full((1, 12, 18), 255, np.uint8)  # painted at a quarter of the photo's size
    small = Regions((Region("sky", (0, 0, 255)),), masks)
    fitted = Pictures(pictures.content, pictures.styles, regions=small)
    assert fitted.regions is not None and fitted.regions.size == pictures.content.size


def test_previews_come_at_the_size_asked_for(tiny, pictures):
    shown = []
    door.picture(
        RunSpec(pictures, SETTINGS),
        tiny,
        RunHooks(report=lambda r: shown.append(r.preview), previews=Previews(0.0, 16)),
    )
    previews = [p for p in shown if p is not None]
    assert previews and max(previews[-1].shape[:2]) == 16


def test_a_run_taken_a_record_at_a_time_is_the_run_run_picture_makes(tiny, pictures):
    """Benchmarks step two runs side by side: each ``next`` is the record run_picture's report hears."""
    from style_studio.core.jobs.picture import PictureRun

    heard = []
    whole = door.picture(RunSpec(pictures, SETTINGS), tiny, RunHooks(report=heard.append))
    first, second = PictureRun(RunSpec(pictures, SETTINGS), tiny), PictureRun(RunSpec(pictures, SETTINGS), tiny)
    stepped = [(next(first), next(second)) for _ in heard]
    assert [a.total_loss for a, _ in stepped if not a.start] == [b.total_loss for _, b in stepped if not b.start]
    assert [r.step for r, _ in stepped] == [r.step for r in heard]
    assert np.array_equal(np.asarray(first.image), np.asarray(whole.image))
    assert first.plan.sizes[-1] == (48, 32) and first.compute.precision in ("fp32", "bf16")
    judged = first.evaluate(first.image)
    assert judged["total"] > 0 and set(judged) >= {"total", "content", "tv"}
    with pytest.raises(StopIteration):
        next(first)
    second.close()
