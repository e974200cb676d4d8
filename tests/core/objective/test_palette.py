"""The painting's colours: the palette start carries their whole distribution onto the photo (sliced optimal
transport), and the colour term holds the picture to it, each region to its own blend; preserved colours stay the
photo's."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from style_studio.core.io.tensors import pil_to_tensor
from style_studio.core.objective import color
from style_studio.core.objective.guided import ScaleRegions
from style_studio.core.objective.inputs import ScaleInputs
from style_studio.core.objective.objective import initial_image
from style_studio.core.objective.palette import ColourDistribution, ColourTerm, from_oklab, recoloured, to_oklab
from style_studio.core.objective.regions import Region, Regions
from style_studio.core.settings import Settings
from tests.runs import iterations, run

YELLOW, BLUE = (0.92, 0.8, 0.15), (0.1, 0.2, 0.62)
SETTINGS = Settings(size=48, weights="untrained", device="cpu", precision="fp32", style_loss="gaussian")


def two_colours(first: tuple[float, ...], second: tuple[float, ...], seed: int = 0) -> torch.Tensor:
    """A painting (1, 3, 40, 40) of two strong colours, half each, a little noisy: a palette no Gaussian holds."""
    generator = torch.Generator().manual_seed(seed)
    halves = torch.cat([torch.tensor(first).view(1, 3, 1, 1).expand(1, 3, 20, 40),
                        torch.tensor(second).view(1, 3, 1, 1).expand(1, 3, 20, 40)], dim=2)  # fmt: skip
    return (halves + 0.02 * torch.randn(1, 3, 40, 40, generator=generator)).clamp(0, 1)


def grey_photo(height: int = 36, width: int = 48) -> torch.Tensor:
    """A photo (1, 3, H, W): a grey ramp, dark at the left, with a little colour noise."""
    generator = torch.Generator().manual_seed(3)
    ramp = torch.linspace(0.15, 0.85, width).view(1, 1, 1, width).expand(1, 3, height, width)
    return (ramp + 0.03 * torch.randn(1, 3, height, width, generator=generator)).clamp(0, 1)


def near(picture: torch.Tensor, colour: tuple[float, ...], within: float = 0.12) -> torch.Tensor:
    """Which pixels of (1, 3, H, W) are within ``within`` of ``colour`` (each channel): (H, W) bool."""
    return ((picture[0] - torch.tensor(colour).view(3, 1, 1)).abs() < within).all(0)


def sliced_distance(picture: torch.Tensor, painting: torch.Tensor) -> float:
    """The colours' sliced Wasserstein-2 distance along 32 random directions (not the term's 16)."""
    generator = torch.Generator().manual_seed(7)
    directions = torch.nn.functional.normalize(torch.randn(3, 32, generator=generator, dtype=torch.float64), dim=0)
    a, b = (directions.t() @ p[0].flatten(1).double() for p in (picture, painting))
    ranks = torch.linspace(0, 1, 200, dtype=torch.float64)
    return float((torch.quantile(a, ranks, dim=1) - torch.quantile(b, ranks, dim=1)).square().mean().sqrt())


def test_oklab_goes_there_and_back_and_white_is_light_without_colour():
    rgb = torch.rand(3, 500, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    torch.testing.assert_close(from_oklab(to_oklab(rgb)), rgb)
    white = to_oklab(torch.ones(3, 1, dtype=torch.float64))[:, 0]
    torch.testing.assert_close(white, torch.tensor([1.0, 0.0, 0.0], dtype=torch.float64), atol=1e-4, rtol=0)


@pytest.mark.parametrize("size", [(36, 48), (300, 400)], ids=["every-pixel", "fitted-on-a-sample"])
def test_the_palette_start_takes_the_paintings_few_strong_colours_not_their_average(size):
    photo, painting = grey_photo(*size), two_colours(YELLOW, BLUE)
    start = recoloured(photo, [painting], [1.0])
    yellow, blue = near(start, YELLOW), near(start, BLUE)
    # A Gaussian's map would spread the grey ramp along the line between the two, through greys and greens.
    assert float((yellow | blue).float().mean()) > 0.9
    assert 0.4 < float(yellow.float().mean()) < 0.6
    # The photo's light stays: its light half turns yellow (the lighter colour), its dark half blue.
    width = photo.shape[-1]
    assert float(yellow[:, width * 3 // 4 :].float().mean()) > 0.9
    assert float(blue[:, : width // 4].float().mean()) > 0.9
    assert sliced_distance(start, painting) < 0.1 * sliced_distance(photo, painting)


def test_blended_paintings_give_their_colours_in_the_blends_shares():
    photo = grey_photo()
    warm, cool = two_colours(YELLOW, (0.9, 0.3, 0.1), seed=1), two_colours(BLUE, (0.1, 0.5, 0.3), seed=2)
    alone = recoloured(photo, [warm, cool], [1.0, 0.0])
    assert float((near(alone, YELLOW) | near(alone, (0.9, 0.3, 0.1))).float().mean()) > 0.9
    half = recoloured(photo, [warm, cool], [0.5, 0.5])
    shares = [float(near(half, colour).float().mean()) for colour in (YELLOW, (0.9, 0.3, 0.1), BLUE, (0.1, 0.5, 0.3))]
    assert shares == pytest.approx([0.25] * 4, abs=0.06)


def test_each_region_takes_its_own_paintings_colours_and_a_kept_region_keeps_the_photo():
    photo = grey_photo(36, 48)
    yellow_painting, blue_painting = two_colours(YELLOW, YELLOW, seed=1), two_colours(BLUE, BLUE, seed=2)
    masks = np.zeros((3, 36, 48), np.uint8)
    masks[0, :, :16], masks[1, :, 16:32], masks[2, :, 32:] = 255, 255, 255
    regions = Regions((Region("sun", (255, 0, 0), blend=(1.0, 0.0)), Region("sea", (0, 255, 0), blend=(0.0, 1.0)),
                       Region("kept", (0, 0, 255), keep=True)), masks, feather=0.0)  # fmt: skip
    groups = ScaleRegions.prepare(regions, (48, 36), torch.device("cpu")).groups
    start = recoloured(photo, [yellow_painting, blue_painting], [0.5, 0.5], groups)
    assert float(near(start[..., :16], YELLOW).float().mean()) > 0.95
    assert float(near(start[..., 16:32], BLUE).float().mean()) > 0.95
    torch.testing.assert_close(start[..., 32:], photo[..., 32:])


def test_a_region_at_strength_0_keeps_the_photos_colours_in_the_start_and_the_term():
    photo, painting = grey_photo(36, 48), two_colours(YELLOW, BLUE)
    left = np.zeros((1, 36, 48), np.uint8)
    left[:, :, :24] = 255
    regions = Regions((Region("calm", (255, 0, 0), strength=0.0),), left, feather=0.0)
    groups = ScaleRegions.prepare(regions, (48, 36), torch.device("cpu")).groups
    start = recoloured(photo, [painting], [1.0], groups)
    torch.testing.assert_close(start[..., :24], photo[..., :24])
    assert float((near(start[..., 24:], YELLOW) | near(start[..., 24:], BLUE)).float().mean()) > 0.9
    term = ColourTerm([painting], groups, SETTINGS)
    assert float(term(start)) < 0.02 * float(term(photo))  # the calm half, the photo's, costs nothing


def test_a_flat_painting_does_not_let_the_colour_term_outweigh_the_rest():
    photo = grey_photo()
    flat = torch.tensor([0.8, 0.1, 0.1]).view(1, 3, 1, 1).expand(1, 3, 20, 20)
    term = ColourTerm([flat], ScaleRegions.prepare(None, (48, 36), torch.device("cpu")).groups, SETTINGS)
    assert 1 < float(term(photo)) < 100  # divided by the least spread, not by a spread of 0


def test_the_palette_start_is_the_photo_itself_when_its_colours_are_preserved():
    photo, painting = grey_photo(), two_colours(YELLOW, BLUE)
    settings = dataclasses.replace(SETTINGS, init="palette", preserve_colors=True)
    luminance = color.luminance(photo)
    inputs = ScaleInputs(luminance, (color.luminance(painting).expand(-1, 3, -1, -1),))
    assert torch.equal(initial_image(settings, inputs, None, [None]), luminance)  # type: ignore[arg-type]
    assert ColourTerm.of(inputs, settings) is None


def test_the_colour_term_falls_to_nothing_as_the_colours_reach_the_paintings():
    photo, painting = grey_photo(), two_colours(YELLOW, BLUE)
    term = ColourTerm([painting], ScaleRegions.prepare(None, (48, 36), torch.device("cpu")).groups, SETTINGS)
    at_photo, at_start = float(term(photo)), float(term(recoloured(photo, [painting], [1.0])))
    assert at_start < 0.02 * at_photo
    # Its gradient alone carries the photo's colours to the painting's (all of them, not a mean and a spread).
    picture = photo.clone().requires_grad_()
    optimiser = torch.optim.Adam([picture], lr=0.02)
    for _ in range(150):
        optimiser.zero_grad()
        term(picture).backward()
        optimiser.step()
    assert float(term(picture.detach())) < 0.1 * at_photo
    assert sliced_distance(picture.detach(), painting) < 0.3 * sliced_distance(photo, painting)
    assert float((near(picture.detach(), YELLOW) | near(picture.detach(), BLUE)).float().mean()) > 0.7


def test_the_colour_term_weighs_a_region_by_its_mask_against_its_own_painting():
    yellow_painting, blue_painting = two_colours(YELLOW, YELLOW, seed=1), two_colours(BLUE, BLUE, seed=2)
    left = np.zeros((1, 36, 48), np.uint8)
    left[:, :, :24] = 255
    regions = Regions((Region("sun", (255, 0, 0), blend=(1.0, 0.0)),), left, feather=0.0)
    groups = ScaleRegions.prepare(regions, (48, 36), torch.device("cpu")).groups  # the sun, and the rest: blue
    term = ColourTerm([yellow_painting, blue_painting], groups, dataclasses.replace(SETTINGS, style_blend=(0.0, 1.0)))
    right = torch.cat([torch.tensor(YELLOW).view(1, 3, 1, 1).expand(1, 3, 36, 24),
                       torch.tensor(BLUE).view(1, 3, 1, 1).expand(1, 3, 36, 24)], dim=3)  # fmt: skip
    swapped = right.flip(3)
    assert float(term(right)) < 0.05 * float(term(swapped))


def test_a_run_with_the_colour_term_ends_nearer_the_paintings_colours(tiny, content_image, style_image):
    settings = dataclasses.replace(SETTINGS, iterations=8, init="content", scales=1, first_scale=0)
    painting = pil_to_tensor(style_image)
    distance = {}
    for weight in (0.0, 10.0):
        records, result = run(content_image, [style_image], dataclasses.replace(settings, colour_weight=weight), tiny)
        distance[weight] = sliced_distance(pil_to_tensor(result.image), painting)
        assert ("colour" in iterations(records)[-1].terms) is True
    assert distance[10.0] < 0.8 * distance[0.0]


def test_preserved_colours_stay_the_photos_with_the_colour_term_on(tiny, content_image, style_image):
    settings = dataclasses.replace(SETTINGS, iterations=6, init="palette", preserve_colors=True, colour_weight=10.0)
    records, result = run(content_image, [style_image], settings, tiny)
    assert "colour" not in iterations(records)[-1].terms
    picture = pil_to_tensor(result.image)
    photo = pil_to_tensor(content_image.resize(result.image.size))
    assert (color.rgb_to_yiq(picture)[:, 1:] - color.rgb_to_yiq(photo)[:, 1:]).abs().mean() < 0.01


def test_a_distribution_of_blended_paintings_weighs_each_by_its_share():
    warm, cool = two_colours(YELLOW, YELLOW), two_colours(BLUE, BLUE)
    distribution = ColourDistribution.of([warm, cool], [3.0, 1.0])
    red = distribution.colours[0]
    assert float((distribution.weights * (red > 0.5)).sum()) == pytest.approx(0.75, abs=1e-9)
    assert float(distribution.weights.sum()) == pytest.approx(1.0, abs=1e-12)
