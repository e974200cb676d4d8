"""A loss term is one object in one list: a new one reaches the loss, the tiles, the regions and the records."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import ClassVar

import pytest
import torch
import torch.nn.functional as F
from torch import Tensor

from style_studio.core.objective import objective as objective_module
from style_studio.core.objective.guided import ScaleRegions, StyleGroup
from style_studio.core.objective.inputs import ScaleInputs
from style_studio.core.objective.objective import Objective
from style_studio.core.objective.statistics import Statistic, Values
from style_studio.core.objective.terms import PictureTerm, StyleLoss
from style_studio.core.objective.tiles import TiledObjective
from style_studio.core.run.compute import network_for
from tests.core.objective.test_tiles import BLEND, FP32, SIZE, gradient_of, relative
from tests.runs import iterations, run


class Brightness(PictureTerm):
    """A made-up picture term: the picture's mean brightness pulled to 0.6."""

    name = "brightness"

    def __call__(self, image: Tensor) -> Tensor:
        return (image.float().mean() - 0.6).square() * 10

    @classmethod
    def of(cls, inputs, settings):
        return cls()


class Means(Statistic):
    """A made-up statistic: each channel's mean, and its mean square."""

    def sums(self, flat: Tensor, mask: Tensor | None = None) -> Values:
        flat = flat.float()
        return (flat if mask is None else flat * mask).sum(0), flat.square().sum(0)

    def divisors(self, positions: float, channels: int) -> tuple[float, ...]:
        return positions, positions

    def backward(
        self,
        flat: Tensor,
        grads: Sequence[Tensor | None],
        scales: Sequence[float],
        into: Tensor | None,
        mask: Tensor | None = None,
    ) -> Tensor:
        mean, square = grads
        total = torch.zeros_like(flat, dtype=torch.float32) if into is None else into.float()
        if mean is not None:
            total = total + mean * scales[0] * (1 if mask is None else mask)
        if square is not None:
            total = total + 2 * flat.float() * square * scales[1]
        return total.to(flat.dtype)


class MeansLoss(StyleLoss):
    statistic: ClassVar[Statistic] = Means()

    def distance(self, value: Values, target: Values) -> Tensor:
        return F.mse_loss(value[0], target[0]) + F.mse_loss(value[1], target[1])

    def magnitude(self, target: Values) -> Tensor:
        return target[0].square().mean() + target[1].square().mean()


def test_a_new_picture_term_reaches_the_total_and_every_record_without_other_edits(tiny, content_image, style_image,
                                                                                   monkeypatch):  # fmt: skip
    monkeypatch.setattr(objective_module, "PICTURE_TERMS", (*objective_module.PICTURE_TERMS, Brightness.of))
    settings = dataclasses.replace(BLEND, size=48, iterations=3, style_blend=())
    records = iterations(run(content_image, [style_image], settings, tiny)[0])
    for record in records:
        assert record.terms["brightness"] > 0
        parts = sum(record.terms.values()) + sum(record.style_losses.values())
        assert record.total_loss == pytest.approx(parts, rel=1e-5)
        assert "brightness" in record.loss_curves()
    assert "brightness" not in records[-1].to_json(), "the JSON record's shape is pinned"


@pytest.mark.parametrize("guided", [False, True], ids=["whole-picture", "two-regions"])
def test_a_new_statistic_is_exact_when_tiled_and_goes_through_the_regions(tiny, pictures, monkeypatch, guided):
    # The tiled pass adds the statistic's sums over the tiles and sends each
    # tile back through ``Statistic.backward``; the guided tap weighs by the
    # masks. Neither knows which statistic it carries.
    monkeypatch.setattr(objective_module, "style_loss", lambda name: MeansLoss())
    content, styles = pictures
    network = network_for(tiny, FP32)
    inputs = ScaleInputs.prepare(content, styles, SIZE, BLEND, FP32.device)
    if guided:
        left = torch.zeros(1, 1, SIZE[1], SIZE[0])
        left[..., : SIZE[0] // 2] = 1
        groups = (StyleGroup(left, (1.0, 0.0), share=0.5, name="left"), StyleGroup(1 - left, share=0.5))
        inputs = dataclasses.replace(inputs, regions=ScaleRegions(groups, None))
    with Objective(network, inputs, BLEND, FP32) as untiled, TiledObjective(network, inputs, BLEND, FP32, 64) as tiled:
        assert isinstance(untiled.loss, MeansLoss) and len(tiled.tiles(*SIZE)) >= 4
        torch.manual_seed(0)
        image = (inputs.content + 0.2 * torch.randn_like(inputs.content)).clamp(0, 1)
        terms, gradient, _ = gradient_of(untiled, image)
        tiled_terms, tiled_gradient, _ = gradient_of(tiled, image)
    assert float(gradient.abs().max()) > 0
    assert relative(tiled_gradient, gradient) < 1e-4
    for layer, value in terms.style.items():
        assert float(tiled_terms.style[layer]) == pytest.approx(float(value.detach()), rel=1e-4), layer


def test_a_statistic_tap_gradient_is_autograds_of_its_definition():
    from style_studio.core.objective.statistics import statistic_tap

    torch.manual_seed(0)
    x = torch.randn(1, 5, 4, 3, requires_grad=True)
    passed_on, (mean, square) = statistic_tap(x, Means())
    weights = torch.randn(2, 1, 5)
    ((mean * weights[0]).sum() + (square * weights[1]).sum() + passed_on.sum()).backward()
    ours = x.grad.clone()
    x.grad = None
    flat = x.flatten(2)
    ((flat.mean(2) * weights[0]).sum() + (flat.square().mean(2) * weights[1]).sum() + x.sum()).backward()
    torch.testing.assert_close(ours, x.grad)
