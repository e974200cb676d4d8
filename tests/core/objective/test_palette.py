"""The palette start: the photo in the painting's colours, by the linear map between their colour Gaussians."""

from __future__ import annotations

import dataclasses

import torch

from style_studio.core.objective.color import recoloured
from style_studio.core.objective.matrices import gaussian_map
from style_studio.core.settings import Settings
from tests.runs import iterations, run


def colour_statistics(picture: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    pixels = picture[0].flatten(1).double()
    return pixels.mean(1), torch.cov(pixels, correction=0)


def test_the_map_between_gaussians_takes_one_covariance_to_the_other():
    generator = torch.Generator().manual_seed(0)
    a, b = (torch.randn(3, 3, generator=generator, dtype=torch.float64) for _ in range(2))
    source, target = a @ a.t() + 0.1 * torch.eye(3), b @ b.t() + 0.1 * torch.eye(3)
    mapped = gaussian_map(source, target)
    torch.testing.assert_close(mapped @ source @ mapped.t(), target)
    torch.testing.assert_close(mapped, mapped.t())  # symmetric: the least displacement, no rotation


def test_the_recoloured_photo_has_the_blended_styles_colour_mean_and_covariance():
    generator = torch.Generator().manual_seed(1)
    photo = (0.5 + 0.08 * torch.randn(1, 3, 40, 30, generator=generator)).clamp(0, 1)
    warm = torch.tensor([0.6, 0.45, 0.3]).view(1, 3, 1, 1) + 0.05 * torch.randn(1, 3, 20, 20, generator=generator)
    cool = torch.tensor([0.3, 0.4, 0.6]).view(1, 3, 1, 1) + 0.05 * torch.randn(1, 3, 25, 25, generator=generator)
    out = recoloured(photo, [warm, cool], [1.0, 0.0])
    mean, covariance = colour_statistics(out)
    target_mean, target_covariance = colour_statistics(warm)
    torch.testing.assert_close(mean, target_mean, atol=2e-3, rtol=0)
    torch.testing.assert_close(covariance, target_covariance, atol=2e-4, rtol=0.05)
    # The photo's shapes stay: the new colours follow the old ones, pixel by pixel.
    assert torch.corrcoef(torch.stack([photo[0, 0].flatten(), out[0, 0].flatten()]))[0, 1] > 0.5
    blended_mean, _ = colour_statistics(recoloured(photo, [warm, cool], [0.5, 0.5]))
    torch.testing.assert_close(blended_mean, (target_mean + colour_statistics(cool)[0]) / 2, atol=3e-3, rtol=0)


def test_a_run_from_the_palette_starts_closer_to_the_styles_colours(tiny, content_image, style_image):
    settings = Settings(size=48, iterations=1, weights="untrained", device="cpu", precision="fp32",
                        style_loss="gaussian")  # fmt: skip
    first = {}
    for init in ("content", "palette"):
        records = iterations(run(content_image, [style_image], dataclasses.replace(settings, init=init), tiny)[0])
        first[init] = records[0].style_losses["relu1_1"]
    assert first["palette"] < 0.7 * first["content"]
