"""The engine's L-BFGS: torch.optim.LBFGS's steps, without reading numbers back from the device."""

from __future__ import annotations

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from style_studio.core.run.lbfgs import LBFGS


class DeviceReads(TorchDispatchMode):
    """Counts the operations that copy a number from a tensor to Python: a wait on a GPU."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func in (torch.ops.aten._local_scalar_dense.default, torch.ops.aten.is_nonzero.default):
            self.count += 1
        return func(*args, **(kwargs or {}))


def problem(seed: int = 0):
    generator = torch.Generator().manual_seed(seed)
    target = torch.randn(2, 3, 8, 8, generator=generator)
    scale = torch.rand(2, 3, 8, 8, generator=generator) * 10 + 0.1

    def loss(x):
        # Badly scaled and not quadratic, so the history matters.
        return ((x - target) ** 2 * scale).sum() + 0.05 * (x**4).sum()

    return loss


def run(optimizer_class, steps: int, **kwargs):
    loss_of = problem()
    x = torch.zeros(2, 3, 8, 8, requires_grad=True)
    optimizer = optimizer_class([x], lr=1.0, history_size=5, **kwargs)

    def closure():
        optimizer.zero_grad()
        loss = loss_of(x)
        loss.backward()
        return loss

    losses = [optimizer.step(closure).detach().item() for _ in range(steps)]
    return x.detach(), losses


def test_the_steps_are_torchs_lbfgs_steps_history_overflow_included():
    ours, our_losses = run(LBFGS, 30)
    theirs, their_losses = run(torch.optim.LBFGS, 30, max_iter=1, tolerance_grad=0.0, tolerance_change=0.0)
    torch.testing.assert_close(torch.tensor(our_losses), torch.tensor(their_losses), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(ours, theirs, rtol=1e-5, atol=1e-6)
    assert our_losses[-1] < 0.05 * our_losses[0]


def test_a_step_reads_nothing_back_from_the_device():
    loss_of = problem()
    x = torch.zeros(2, 3, 8, 8, requires_grad=True)
    optimizer = LBFGS([x], history_size=20)

    def closure():
        optimizer.zero_grad()
        loss = loss_of(x)
        loss.backward()
        return loss

    reads = []
    for _ in range(25):
        with DeviceReads() as counted:
            optimizer.step(closure)
        reads.append(counted.count)
    assert reads == [0] * 25


def test_torchs_lbfgs_reads_back_dozens_of_numbers_per_step():
    # The reason for our own: the count this test makes shows what a GPU waits for.
    loss_of = problem()
    x = torch.zeros(2, 3, 8, 8, requires_grad=True)
    optimizer = torch.optim.LBFGS([x], max_iter=1, history_size=20, tolerance_grad=0.0, tolerance_change=0.0)

    def closure():
        optimizer.zero_grad()
        loss = loss_of(x)
        loss.backward()
        return loss

    for _ in range(24):
        optimizer.step(closure)
    with DeviceReads() as counted:
        optimizer.step(closure)
    assert counted.count > 40


def test_a_pair_without_curvature_is_kept_with_no_weight():
    x = torch.zeros(4, requires_grad=True)
    optimizer = LBFGS([x], history_size=3)
    grads = iter([torch.tensor([1.0, 2.0, 0.0, 0.0]), torch.tensor([1.0, 2.0, 0.0, 0.0])])  # y = 0: no curvature

    def closure():
        x.grad = next(grads)
        return x.sum()

    optimizer.step(closure)
    before = x.detach().clone()
    optimizer.step(closure)
    state = optimizer.state[x]
    assert state["rhos"][0].item() == 0 and state["h_diag"].item() == 1
    # With no usable pair the direction is the plain negative gradient.
    torch.testing.assert_close(state["d"], -torch.tensor([1.0, 2.0, 0.0, 0.0]))
    torch.testing.assert_close(x.detach() - before, state["d"] * state["t"])


def test_only_one_tensor_is_accepted():
    with pytest.raises(ValueError, match="exactly one tensor"):
        LBFGS([torch.zeros(2, requires_grad=True), torch.zeros(2, requires_grad=True)])


def spread_problem():
    """A smooth loss whose gradient is spread thinly over many values, as a print-size picture's is."""
    generator = torch.Generator().manual_seed(1)
    target = torch.rand(1, 3, 256, 256, generator=generator)
    weight = torch.rand(1, 3, 256, 256, generator=generator) + 0.5

    def loss(x):
        return ((x - target) ** 2 * weight).mean() + 0.1 * ((x - target) ** 4).mean()

    return loss


def steps_from(x, optimizer, loss_of, count):
    def closure():
        optimizer.zero_grad()
        loss = loss_of(x)
        loss.backward()
        return loss

    return [optimizer.step(closure).item() for _ in range(count)] + [loss_of(x).item()]


def converged_start(loss_of):
    """A point part way down ``loss_of``, and the curvature scale measured on the way."""
    x = torch.zeros(1, 3, 256, 256, requires_grad=True)
    optimizer = LBFGS([x], history_size=5)
    assert optimizer.step_scale() is None  # nothing measured before a pair
    steps_from(x, optimizer, loss_of, 3)
    scale = optimizer.step_scale()
    assert scale is not None and scale > 0
    return x.detach().clone(), scale


def test_a_restarted_optimiser_measures_the_curvature_of_a_small_step_where_torchs_stalls():
    loss_of = spread_problem()
    start, _ = converged_start(loss_of)
    ours_x = start.clone().requires_grad_(True)
    ours = steps_from(ours_x, LBFGS([ours_x], history_size=5), loss_of, 3)
    torchs_x = start.clone().requires_grad_(True)
    torch_optimizer = torch.optim.LBFGS(
        [torchs_x], lr=1.0, history_size=5, max_iter=1, tolerance_grad=0.0, tolerance_change=0.0
    )
    torchs = steps_from(torchs_x, torch_optimizer, loss_of, 3)
    # The first step is the same small one; torch refuses its pair (y·s under 1e-10) and stays small.
    assert ours[1] == pytest.approx(torchs[1], rel=1e-6)
    assert torchs[-1] > 0.999 * torchs[0]
    assert ours[-1] < 0.1 * ours[0]


def test_a_resumed_optimiser_starts_from_the_curvature_scale_its_run_had_measured():
    loss_of = spread_problem()
    start, scale = converged_start(loss_of)
    # The history is lost (a new process); the image and the scale are kept.
    fresh_x = start.clone().requires_grad_(True)
    fresh = steps_from(fresh_x, LBFGS([fresh_x], history_size=5), loss_of, 1)
    resumed_x = start.clone().requires_grad_(True)
    resumed_optimizer = LBFGS([resumed_x], history_size=5)
    resumed_optimizer.start_from(scale)
    resumed = steps_from(resumed_x, resumed_optimizer, loss_of, 1)
    # Its first step is -scale · gradient at the full step length...
    torch.testing.assert_close(resumed_x.detach() - start, -scale * torch.func.grad(loss_of)(start))
    # ...which gains far more than a new optimiser's first step, scaled down by the gradient's 1-norm.
    assert fresh[0] - fresh[1] < 1e-3 * (resumed[0] - resumed[1])


def test_a_curvature_scale_that_is_not_one_is_refused():
    x = torch.zeros(4, requires_grad=True)
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="positive and finite"):
            LBFGS([x]).start_from(bad)
