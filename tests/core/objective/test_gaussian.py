"""The Gaussian (Wasserstein-2) style loss: its square root against SciPy's, its gradient, and runs that use it."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import scipy.linalg
import torch

from style_studio.core.objective import objective as objective_module
from style_studio.core.objective.gaussian import EPS, GaussianLoss, Moments, _Distance
from style_studio.core.objective.inputs import ScaleInputs
from style_studio.core.objective.matrices import sqrtm
from style_studio.core.objective.objective import Objective
from style_studio.core.objective.statistics import statistic_tap
from style_studio.core.objective.tiles import TiledObjective
from style_studio.core.run.compute import network_for
from tests.core.objective.test_tiles import BLEND, FP32, SIZE, gradient_of, relative
from tests.runs import iterations, run

GAUSSIAN = dataclasses.replace(BLEND, style_loss="gaussian")


def covariance_like(channels: int, seed: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    samples = torch.randn(4 * channels, channels, generator=generator) * torch.rand(channels, generator=generator)
    return samples.t() @ samples / samples.shape[0] + 1e-4 * torch.eye(channels)


@pytest.mark.parametrize("channels", [3, 64, 256])
def test_the_square_root_is_scipys(channels):
    matrix = covariance_like(channels, channels)
    ours = sqrtm(matrix).double().numpy()
    theirs = np.real(scipy.linalg.sqrtm(matrix.double().numpy()))
    assert np.linalg.norm(ours - theirs) / np.linalg.norm(theirs) < 1e-4
    np.testing.assert_allclose(ours @ ours, matrix.double().numpy(), rtol=0, atol=1e-4 * float(matrix.abs().max()))


@pytest.mark.parametrize("share", [1.0, 0.9])
def test_the_distances_gradient_is_autograds_own(share):
    # gradcheck in float64 through the gradient found with the value: dW2²/dΣ = (I - B Bᵀ)/C, with respect to
    # the mean and (the symmetric part of) the second moment, reading all of the style's directions or some.
    generator = torch.Generator().manual_seed(1)
    loss = GaussianLoss(share=share)
    style = torch.randn(30, 6, generator=generator, dtype=torch.float64) * torch.rand(6, generator=generator)
    picture = torch.randn(30, 6, generator=generator, dtype=torch.float64) + 0.3
    target = loss.prepare((style.mean(0, keepdim=True), (style.t() @ style / 30).unsqueeze(0)))
    assert target[1].shape[1] == 6 if share == 1 else target[1].shape[1] < 6

    def of(mean: torch.Tensor, moment: torch.Tensor) -> torch.Tensor:
        return _Distance.apply(mean, (moment + moment.transpose(1, 2)) / 2, target, 1e-30)

    mean = picture.mean(0, keepdim=True).requires_grad_(True)
    moment = (picture.t() @ picture / 30).unsqueeze(0).requires_grad_(True)
    assert torch.autograd.gradcheck(of, (mean, moment), eps=1e-6, atol=1e-6)


def test_the_distance_is_the_definitions_and_reading_a_share_can_only_raise_it():
    # W2² = |μ - μₜ|² + tr Σ + tr Σₜ - 2 tr((Σₜ^½ Σ Σₜ^½)^½), per channel, against SciPy's square roots; fewer
    # of the style's directions can only lower the cross term (a nuclear norm of Σ^½ F), so raise the distance.
    style, picture = covariance_like(64, 4).double(), covariance_like(64, 5).double()
    style_mean, picture_mean = torch.full((1, 64), 0.2, dtype=torch.float64), torch.zeros(1, 64, dtype=torch.float64)

    def moments(mean: torch.Tensor, covariance: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return mean, (covariance + mean.t() @ mean).unsqueeze(0)

    whole, part = GaussianLoss(share=1.0), GaussianLoss(share=0.99)
    ours = float(whole.distance(moments(picture_mean, picture), whole.prepare(moments(style_mean, style))))
    target = part.prepare(moments(style_mean, style))
    assert target[1].shape[1] < 64 and float(target[2].sum() / style.trace()) >= 0.99
    eps = float(EPS * style.trace() / 64)
    with_eps = [m.numpy() + eps * np.eye(64) for m in (style, picture)]
    root = np.real(scipy.linalg.sqrtm(with_eps[0]))
    cross = np.trace(np.real(scipy.linalg.sqrtm(root @ with_eps[1] @ root)))
    expected = (0.2**2 * 64 + np.trace(with_eps[0]) + np.trace(with_eps[1]) - 2 * cross) / 64
    assert ours == pytest.approx(expected, rel=1e-4)
    assert float(part.distance(moments(picture_mean, picture), target)) >= ours


def test_the_distance_is_zero_at_the_target_and_grows_with_the_mean_and_the_covariance():
    loss = GaussianLoss(share=1.0)
    torch.manual_seed(0)
    features = torch.rand(1, 8, 12, 10)
    _, values = statistic_tap(features, Moments())
    target = loss.prepare(values)
    assert float(loss.distance(values, target)) == pytest.approx(0, abs=1e-4)
    _, brighter = statistic_tap(features + 0.5, Moments())
    _, bolder = statistic_tap((features - 0.5) * 2 + 0.5, Moments())  # the same mean, four times the covariance
    assert float(loss.distance(brighter, target)) == pytest.approx(0.25, rel=1e-3)
    assert float(loss.distance(bolder, target)) > 0.01


def test_reading_a_share_of_the_styles_variance_leaves_at_most_twice_the_rest_at_the_target():
    # At the style itself the cross term misses the directions left out: the distance is 2·(tr Σₜ - tr FFᵀ) / C
    # there, at most 2·(1 - share) of the style's variance per channel, a small part of its magnitude.
    torch.manual_seed(0)
    _, values = statistic_tap(torch.rand(1, 32, 12, 10), Moments())
    loss = GaussianLoss(share=0.99)
    target = loss.prepare(values)
    at_target = float(loss.distance(values, target))
    assert 0 < at_target <= 2 * 0.01 * float(target[3]) / 32 * 1.0001
    assert at_target / float(loss.magnitude(target)) < 0.02


def test_the_moments_taps_gradient_is_autograds_of_the_definition():
    torch.manual_seed(0)
    x = torch.randn(1, 6, 5, 4).contiguous(memory_format=torch.channels_last).requires_grad_(True)
    passed_on, (mean, moment) = statistic_tap(x, Moments())
    weights = torch.randn(1, 6), torch.randn(1, 6, 6), torch.randn(1, 6, 5, 4)
    ((mean * weights[0]).sum() + (moment * weights[1]).sum() + (passed_on * weights[2]).sum()).backward()
    ours = x.grad.clone()
    x.grad = None
    flat = x.flatten(2)  # (1, C, N)
    expected = (flat.mean(2) * weights[0]).sum() + (flat @ flat.mT / 20 * weights[1]).sum() + (x * weights[2]).sum()
    expected.backward()
    torch.testing.assert_close(ours, x.grad)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("deepest", "bound"),
    [
        ("relu3_1", 5e-4),
        # Deeper, this picture has fewer positions than channels (relu5_1: 19×15 for 512): the covariance has
        # directions of size EPS only, where the square root's gradient amplifies float32's rounding of the
        # sums, whose order differs between the tiles and the whole.
        ("relu5_1", 3e-2),
    ],
)
def test_the_gaussian_loss_is_exact_when_tiled(untrained, pictures, deepest, bound):
    content, styles = pictures
    network = network_for(untrained, FP32)
    layers = BLEND.style_layers[: [name for name, _ in BLEND.style_layers].index(deepest) + 1]
    settings = dataclasses.replace(GAUSSIAN, style_layers=layers)
    inputs = ScaleInputs.prepare(content, styles, SIZE, settings, FP32.device)
    with (
        Objective(network, inputs, settings, FP32) as untiled,
        TiledObjective(network, inputs, settings, FP32, 128) as tiled,
    ):
        assert isinstance(untiled.loss, GaussianLoss)
        torch.manual_seed(0)
        image = (inputs.content + 0.2 * torch.randn_like(inputs.content)).clamp(0, 1)
        terms, gradient, _ = gradient_of(untiled, image)
        tiled_terms, tiled_gradient, _ = gradient_of(tiled, image)
    assert relative(tiled_gradient, gradient) < bound
    for layer, value in terms.style.items():
        assert float(tiled_terms.style[layer]) == pytest.approx(float(value.detach()), rel=1e-3), layer


def test_a_run_with_the_gaussian_loss_lowers_it_in_bf16_as_in_fp32(tiny, content_image, style_image):
    losses = {}
    for precision in ("fp32", "bf16"):
        settings = dataclasses.replace(GAUSSIAN, size=48, iterations=12, style_blend=(), precision=precision)
        records = iterations(run(content_image, [style_image], settings, tiny)[0])
        assert all(np.isfinite(r.total_loss) for r in records), precision
        losses[precision] = (records[0].total_loss, records[-1].total_loss)
        assert records[-1].total_loss < 0.8 * records[0].total_loss, precision
    assert losses["bf16"][1] == pytest.approx(losses["fp32"][1], rel=0.2)


def test_a_style_loss_is_described_once_and_every_part_follows_that_line():
    """A new loss is its file and a line in settings.STYLE_LOSS_KINDS: the setting's choices, its help and the run's
    class all come from that line."""
    from style_studio.core.objective.terms import StyleLoss
    from style_studio.core.settings import STYLE_LOSS_KINDS, STYLE_LOSSES, about

    assert STYLE_LOSSES == tuple(STYLE_LOSS_KINDS) == about("style_loss").choices
    for name, kind in STYLE_LOSS_KINDS.items():
        loss = objective_module.style_loss(name)
        assert isinstance(loss, StyleLoss) and type(loss).__name__ == kind.where.partition(":")[2]
        assert kind.about in about("style_loss").help and kind.label in about("style_loss").tooltip


@pytest.mark.parametrize("scale", [1.0, 100.0])
def test_the_distances_gradient_holds_for_features_of_low_rank_and_any_scale(scale):
    # Trained deep layers have fewer positions than channels and features in the hundreds: computed in float32,
    # the distance's gradient was orders of magnitude off (and runs stalled). Finite differences in float64.
    generator = torch.Generator().manual_seed(0)
    channels, positions = 48, 20  # rank 20 of 48

    def features() -> torch.Tensor:
        basis = torch.randn(positions, 6, generator=generator, dtype=torch.float64)
        return torch.relu(basis @ torch.randn(6, channels, generator=generator, dtype=torch.float64)) * scale

    def statistics(flat: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return flat.mean(0, keepdim=True), (flat.t() @ flat / positions).unsqueeze(0)

    loss = GaussianLoss()
    target = loss.prepare(statistics(features()))
    flat = features().requires_grad_(True)
    loss.distance(statistics(flat), target).backward()
    direction = torch.randn(flat.shape, generator=generator, dtype=torch.float64)
    step = 1e-4 * scale
    with torch.no_grad():
        ahead = float(loss.distance(statistics(flat + step * direction), target))
        behind = float(loss.distance(statistics(flat - step * direction), target))
    assert float((flat.grad * direction).sum()) == pytest.approx((ahead - behind) / (2 * step), rel=1e-2)


def test_a_regions_mean_and_moment_weigh_each_position_by_its_mask_squared():
    # A soft mask's edge must not bias the mean: both parts weigh a position by m², as the second moment of the
    # masked features does, and both divide by Σm².
    from style_studio.core.objective.guided import LayerMask
    from style_studio.core.objective.statistics import guided_tap

    torch.manual_seed(0)
    features = torch.rand(1, 6, 9, 7).contiguous(memory_format=torch.channels_last).requires_grad_(True)
    soft = torch.zeros(1, 1, 9, 7)
    soft[..., 2:6, 1:5] = torch.rand(4, 4) * 0.8 + 0.1
    mask = LayerMask(soft, float(soft.square().sum()), slice(2, 6), slice(1, 5))
    passed_on, [(mean, moment)] = guided_tap(features, Moments(), [mask])
    weights = torch.randn(1, 6), torch.randn(1, 6, 6), torch.randn(1, 6, 9, 7)
    ((mean * weights[0]).sum() + (moment * weights[1]).sum() + (passed_on * weights[2]).sum()).backward()
    ours = features.grad.clone()
    features.grad = None
    flat, squared = features[0].flatten(1).t(), soft.flatten().square()[:, None]
    expected_mean = (squared * flat).sum(0) / squared.sum()
    expected_moment = (squared * flat).t() @ flat / squared.sum()
    torch.testing.assert_close(mean[0], expected_mean.detach())
    torch.testing.assert_close(moment[0], expected_moment.detach())
    (
        (expected_mean * weights[0]).sum() + (expected_moment * weights[1]).sum() + (features * weights[2]).sum()
    ).backward()
    torch.testing.assert_close(ours, features.grad)


def test_a_covariance_that_cannot_be_decomposed_is_a_loss_that_is_not_finite_not_a_crash():
    """A picture gone non-finite (a step of 1e-200 did it) made ``eigh`` raise out of the run; its loss is not
    finite instead, and step control goes back to the lowest-loss picture."""
    loss = GaussianLoss()
    style = torch.randn(30, 6, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    target = loss.prepare((style.mean(0, keepdim=True), (style.t() @ style / 30).unsqueeze(0)))
    mean = torch.full((1, 6), math.nan, dtype=torch.float64, requires_grad=True)
    moment = torch.full((1, 6, 6), math.nan, dtype=torch.float64, requires_grad=True)
    value = _Distance.apply(mean, moment, target, 1e-30)
    assert not math.isfinite(value.item())
    value.backward()
    assert mean.grad is not None and moment.grad is not None
