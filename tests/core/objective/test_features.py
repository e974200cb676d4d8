"""Hooks capture the right layers and never outlive their block; Gram matrices in closed form."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from style_studio.core.network.layers import MIRRORED_BORDER
from style_studio.core.network.vgg import TruncatedNetwork, vgg19
from style_studio.core.network.weights import build_features
from style_studio.core.objective.capture import capture
from style_studio.core.objective.losses import magnitude, total_variation, weighted_mse
from style_studio.core.objective.statistics import Gram, gram, statistic_tap


def hooks_on(module: nn.Module) -> int:
    return sum(len(m._forward_hooks) + len(m._forward_pre_hooks) + len(m._backward_hooks) for m in module.modules())


@pytest.fixture(scope="module")
def vgg(untrained):
    return vgg19(build_features(untrained))


def test_gram_of_ones_is_one_over_hw_times_hw():
    # F is all ones: every entry of F·Fᵀ is H·W, so G = H·W / (C·H·W) = 1/C.
    g = gram(torch.ones(2, 4, 3, 5))
    assert g.shape == (2, 4, 4)
    torch.testing.assert_close(g, torch.full((2, 4, 4), 1 / 4))


def test_gram_matches_the_definition_for_random_features_in_both_memory_formats():
    f = torch.randn(1, 8, 6, 7)
    expected = (f.reshape(8, 42) @ f.reshape(8, 42).T / (8 * 42)).unsqueeze(0)
    torch.testing.assert_close(gram(f), expected)
    torch.testing.assert_close(gram(f.contiguous(memory_format=torch.channels_last)), expected)


def test_gram_is_float32_under_bf16_autocast_and_close_to_the_fp32_gram():
    f = torch.randn(1, 64, 32, 32).bfloat16()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        g = gram(f)
    assert g.dtype == torch.float32
    exact = gram(f.float())
    assert ((g - exact).abs().max() / exact.abs().max()).item() < 0.01


def test_float16_features_are_multiplied_in_float32():
    # 300² · 64 · 64 would overflow float16 (max 65504) before normalisation.
    f = torch.full((1, 4, 64, 64), 300.0).half()
    g = gram(f)
    assert torch.isfinite(g).all()
    torch.testing.assert_close(g, torch.full((1, 4, 4), 300.0**2 / 4))


def test_gram_gradient_matches_autograd_of_the_definition():
    x = torch.randn(1, 8, 5, 6, requires_grad=True)
    weights = torch.randn(1, 8, 8)
    (gram(x) * weights).sum().backward()
    y = x.detach().clone().requires_grad_(True)
    flat = y.reshape(1, 8, 30)
    ((flat @ flat.mT / 240) * weights).sum().backward()
    torch.testing.assert_close(x.grad, y.grad)


@pytest.mark.parametrize(
    ("dtype", "memory_format"),
    [
        (torch.float32, torch.contiguous_format),
        (torch.float32, torch.channels_last),
        (torch.float16, torch.channels_last),  # multiplied in float32, gradient back in float16
    ],
)
def test_gram_tap_passes_features_on_and_its_gradient_adds_both_paths(dtype, memory_format):
    # In the network's path, the tap's backward sums the downstream gradient
    # and the Gram's: the same as autograd of the definition with two consumers.
    torch.manual_seed(0)
    x = torch.randn(1, 6, 5, 4).to(dtype).contiguous(memory_format=memory_format).requires_grad_(True)
    gram_weights, downstream_weights = torch.randn(1, 6, 6), torch.randn(1, 6, 5, 4)
    passed_on, (g,) = statistic_tap(x, Gram())
    torch.testing.assert_close(passed_on, x)
    ((g * gram_weights).sum() + (passed_on.float() * downstream_weights).sum()).backward()
    y = x.detach().float().requires_grad_(True)
    flat = y.reshape(1, 6, 20)
    ((flat @ flat.mT / 120 * gram_weights).sum() + (y * downstream_weights).sum()).backward()
    assert x.grad.dtype == dtype
    tolerance = {"rtol": 1e-2, "atol": 1e-2} if dtype == torch.float16 else {}
    torch.testing.assert_close(x.grad.float(), y.grad, **tolerance)


def test_relative_loss_is_zero_at_target_and_its_weight_for_a_zero_image():
    target = torch.randn(1, 3, 8, 8)
    factor = 3.0 / magnitude(target)
    assert weighted_mse(target, target, factor).item() == 0
    assert weighted_mse(torch.zeros_like(target), target, factor).item() == pytest.approx(3.0)


def test_total_variation_of_a_flat_image_is_zero_and_of_a_checkerboard_is_known():
    assert total_variation(torch.full((1, 3, 5, 5), 0.3)).item() == 0
    checker = (torch.arange(4).view(1, 4) + torch.arange(4).view(4, 1)) % 2
    # Every neighbour pair differs by 1: mean of 1² in both directions.
    assert total_variation(checker.float().view(1, 1, 4, 4)).item() == pytest.approx(2.0)


def test_network_is_truncated_after_the_deepest_requested_layer(vgg):
    net = TruncatedNetwork(vgg, ["relu1_1", "relu3_1"])
    assert net.names[-1] == "relu3_1"
    assert len(net.layers) == 12
    assert not any(p.requires_grad for p in net.parameters())
    assert not net.training


def test_average_pooling_swaps_the_pools_and_keeps_the_convolutions(vgg):
    net = TruncatedNetwork(vgg, ["relu3_1"], pooling="avg")
    assert isinstance(net.module("pool1"), nn.AvgPool2d)
    assert net.module("conv2_1") is vgg.layer("conv2_1")
    assert isinstance(TruncatedNetwork(vgg, ["relu3_1"]).module("pool1"), nn.MaxPool2d)


def test_the_first_block_sees_the_picture_up_to_its_edges_not_a_dark_frame(vgg):
    # With VGG's zero padding, the first block saw a dark frame around the
    # picture, and the style losses turned edge pixels white. A flat picture
    # must give the same first-block features at its edges as inside.
    net = TruncatedNetwork(vgg, ["relu1_2", "relu2_1"])
    flat = torch.full((1, 3, 24, 40), 0.6)
    with capture(net, content_layers=["relu1_2"]) as got, torch.no_grad():
        net(flat)
        features = got.activations["relu1_2"][0]
    assert features.shape[-2:] == (24, 40)
    inside = features[:, 12, 20]
    torch.testing.assert_close(features, inside[:, None, None].expand_as(features))


def test_the_style_of_the_first_layer_pulls_no_harder_on_the_pixels_the_mirror_repeats(vgg):
    # relu1_1's Gram matrix counted its 1 px mirrored border, so the pixels 1
    # and 2 from each edge sat in more of its windows than any other: its
    # style loss pulled them 1.7-1.8x and 1.3x as hard as inner pixels, and
    # long renders grew a frame of brighter strokes along the edges. Counting
    # the picture's positions only leaves line 1 at 1.3-1.5x (the mirror
    # repeats it in the edge's own window) and line 2 as an inner line.
    net = TruncatedNetwork(vgg, ["relu1_1"])
    image = torch.rand(1, 3, 64, 80, generator=torch.Generator().manual_seed(0)).requires_grad_(True)
    target = torch.rand(1, 64, 64, generator=torch.Generator().manual_seed(1)) * 0.01
    with capture(net, style_layers=["relu1_1"]) as got:
        net(image)
        (got.statistics["relu1_1"][0] - target).square().sum().backward()
    grad = image.grad.abs().mean(1)[0]
    by_column, by_row = grad.mean(0), grad.mean(1)
    for lines, inner in ((by_column, by_column[16:64].mean()), (by_row, by_row[16:48].mean())):
        for first in (lines, lines.flip(0)):
            assert first[1] < 1.6 * inner
            assert first[2] < 1.15 * inner


@pytest.mark.parametrize("pooling", ["max", "avg"])
def test_the_last_row_and_column_of_an_odd_sized_image_reach_the_deep_layers(vgg, pooling):
    # VGG's own pools drop an odd side's last row: the deep layers then barely
    # held the bottom edge, and results grew a white line along it. Here the
    # last 3 rows and columns got 0.10 to 0.27 of an inner one's gradient; they
    # get 0.50 to 0.74 with the pools rounding up.
    net = TruncatedNetwork(vgg, ["relu5_1"], pooling)
    image = torch.rand(1, 3, 81, 97, generator=torch.Generator().manual_seed(0)).requires_grad_(True)
    with capture(net, content_layers=["relu5_1"]) as got:
        net(image)
        assert got.activations["relu5_1"].shape[-2:] == (6, 7)  # 81 -> 41 -> 21 -> 11 -> 6
        got.activations["relu5_1"].square().sum().backward()
    grad = image.grad.abs().mean(1)[0]
    inner_rows, inner_cols = grad[20:60].mean(), grad[:, 24:72].mean()
    assert grad[-3:].mean() > 0.4 * inner_rows
    assert grad[:, -3:].mean() > 0.4 * inner_cols


def test_hooks_capture_requested_layers_with_the_right_shapes(vgg):
    net = TruncatedNetwork(vgg, ["conv1_2", "relu2_1", "relu4_2", "pool3"])
    with capture(net, content_layers=["conv1_2", "relu4_2"], style_layers=["relu2_1", "pool3"]) as got, torch.no_grad():
        net(torch.rand(1, 3, 64, 48))
        assert set(got.activations) == {"conv1_2", "relu4_2"}
        assert set(got.statistics) == {"relu2_1", "pool3"}
        assert got.activations["conv1_2"].shape == (1, 64, 64, 48)
        assert got.activations["relu4_2"].shape == (1, 512, 8, 6)
        assert got.statistics["relu2_1"][0].shape == (1, 128, 128)
        assert got.statistics["pool3"][0].shape == (1, 256, 256)


def test_a_captured_conv_output_is_not_overwritten_by_an_in_place_relu(vgg):
    net = TruncatedNetwork(vgg, ["conv1_1", "relu1_2"])
    x = torch.rand(1, 3, 16, 16)
    with capture(net, content_layers=["conv1_1"], style_layers=["relu1_2"]) as got, torch.no_grad():
        net(x)
        conv = got.activations["conv1_1"]
    conv1_1 = vgg.layer("conv1_1").conv
    mirrored = F.pad(net.normalize(x), (MIRRORED_BORDER,) * 4, mode="reflect")
    # The losses see the picture's positions: the map's mirrored border is cropped.
    expected = F.conv2d(mirrored, conv1_1.weight, conv1_1.bias)[..., 1:-1, 1:-1]
    torch.testing.assert_close(conv, expected)
    assert (conv < 0).any(), "a ReLU ran in place over the captured convolution output"


def test_no_hook_is_left_after_the_block_or_an_exception(vgg):
    net = TruncatedNetwork(vgg, ["relu1_1", "relu2_1"], pooling="avg")
    with capture(net, ["relu1_1"], ["relu2_1"]):
        assert hooks_on(vgg) == 2
    assert hooks_on(vgg) == 0
    with pytest.raises(RuntimeError), capture(net, ["relu1_1"], ["relu2_1"]):
        raise RuntimeError("boom")
    assert hooks_on(vgg) == 0


@pytest.mark.parametrize("border", [1, 2, 3])
def test_the_mirror_is_torchs_reflection_pad_forward_and_backward(border):
    # Built from slices and flips: CUDA's reflection-pad backward adds with atomics,
    # in an order that changes from run to run; these do not.
    from style_studio.core.network.vgg import mirror

    x = torch.randn(2, 3, 7, 9, requires_grad=True)
    y = x.detach().clone().requires_grad_(True)
    weights = torch.randn(2, 3, 7 + 2 * border, 9 + 2 * border)
    ours, theirs = mirror(x, border), F.pad(y, (border,) * 4, mode="reflect")
    torch.testing.assert_close(ours, theirs, rtol=0, atol=0)
    (ours * weights).sum().backward()
    (theirs * weights).sum().backward()
    torch.testing.assert_close(x.grad, y.grad)
