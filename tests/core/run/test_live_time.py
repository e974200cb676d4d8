"""A change made during a run is given time to show: near a scale's end, the scale goes on."""

from __future__ import annotations

import dataclasses

import numpy as np

from style_studio.core import CheckpointStore, LiveChanges, Settings
from style_studio.core.progress import FINISHED
from style_studio.core.run.cancel import CancelToken
from style_studio.core.run.engine import LIVE_ITERATIONS
from tests.runs import iterations, run

SETTINGS = Settings(size=48, iterations=12, scales=1, weights="untrained", init="content")


def changed_at(step: int, content, style, tiny, settings: Settings = SETTINGS, **options):
    """A run whose relu5_1 weight goes from 1 to 5 once it has made ``step`` steps: its records and result."""
    live = LiveChanges(settings, 1, content.size)

    def hear(record) -> None:
        if record.step == step and not record.start and not record.done:
            live.change_settings(settings.with_style_layer("relu5_1", 5.0))

    return run(content, [style], settings, tiny, live=live, hear=hear, **options)


def test_a_change_at_a_scales_end_gets_its_iterations_and_the_records_count_them(tiny, content_image, style_image):
    records, result = changed_at(SETTINGS.iterations, content_image, style_image, tiny)
    made = iterations(records)
    assert made[-1].outcome == FINISHED and result.settings.style_layer_weights["relu5_1"] == 5.0
    done = [r for r in made if not r.done and not r.within_iteration]
    assert len(done) == SETTINGS.iterations + LIVE_ITERATIONS  # it went on for the change
    assert done[-1].iterations == done[-1].steps == SETTINGS.iterations + LIVE_ITERATIONS
    assert done[-1].eta is not None and done[0].steps == SETTINGS.iterations  # foreseen as it grew
    _, unchanged = run(content_image, [style_image], SETTINGS, tiny)
    difference = np.abs(np.asarray(result.image, float) - np.asarray(unchanged.image, float))
    assert difference.mean() > 2.0  # the change shows in the picture


def test_a_change_with_time_left_does_not_lengthen_the_run(tiny, content_image, style_image):
    settings = dataclasses.replace(SETTINGS, iterations=LIVE_ITERATIONS + 10)
    records, _ = changed_at(3, content_image, style_image, tiny, settings)
    done = [r for r in iterations(records) if not r.done and not r.within_iteration]
    assert len(done) == settings.iterations


def test_a_run_stopped_in_the_time_a_change_was_given_goes_on_from_its_checkpoint(
    tiny, content_image, style_image, tmp_path, monkeypatch
):
    monkeypatch.setenv("STYLE_STUDIO_CHECKPOINT_SECONDS", "0")
    store, stop = CheckpointStore(tmp_path / "runs"), CancelToken()
    live = LiveChanges(SETTINGS, 1, content_image.size)

    def hear(record) -> None:
        if record.start or record.done:
            return
        if record.step == SETTINGS.iterations:
            live.change_settings(SETTINGS.with_style_layer("relu5_1", 5.0))
        if record.step == SETTINGS.iterations + 5:
            stop.cancel()

    run(content_image, [style_image], SETTINGS, tiny, live=live, hear=hear, cancel=stop, checkpoints=store, run_id="r")
    checkpoint = store.load("r")
    assert checkpoint is not None and checkpoint.position.iteration > SETTINGS.iterations
    records, result = run(content_image, [style_image], checkpoint.settings, tiny, resume=checkpoint, checkpoints=store)
    assert records[-1].outcome == FINISHED and result.image is not None
