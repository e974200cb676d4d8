"""L-BFGS for one image, one function evaluation per step, without waiting on the device.

``torch.optim.LBFGS`` reads about 45 numbers back from the device per step
once its history is full (``float()``, ``if ys > 1e-10``, tensor-valued
``alpha=`` arguments): on a GPU each is a wait for the queue to drain.
This one keeps every coefficient as a tensor. It computes what
``torch.optim.LBFGS(max_iter=1, tolerance_grad=0, tolerance_change=0,
line_search_fn=None)`` computes (Nocedal & Wright, Algorithm 7.4), with one
difference: a pair without positive curvature (``y·s <= 1e-10``) is kept in
the history with weight 0, where torch leaves it out; it then takes a place
of the history without changing the direction.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch import Tensor


class LBFGS(torch.optim.Optimizer):
    """L-BFGS without a line search; one parameter tensor (the image).

    The state (``optimizer.state[image]``) keeps torch's names for what the
    engine reads and writes: ``d``, the last direction, and ``t``, its step
    length (a tensor), so that ``d * t`` is the last step.

    Args:
        params: the one tensor to optimise.
        lr: the step length after the first step (the first is scaled by the gradient).
        history_size: (step, gradient change) pairs kept.
    """

    def __init__(self, params: Iterable[Tensor], lr: float = 1.0, history_size: int = 20) -> None:
        super().__init__(params, {"lr": lr, "history_size": history_size})
        if len(self.param_groups) != 1 or len(self.param_groups[0]["params"]) != 1:
            raise ValueError("this L-BFGS optimises exactly one tensor")

    @torch.no_grad()
    def step(self, closure: Callable[[], Tensor]) -> Tensor:  # type: ignore[override]
        """Evaluate ``closure`` (which must compute the gradient) and take one step."""
        with torch.enable_grad():
            loss = closure()
        group = self.param_groups[0]
        (x,) = group["params"]
        if x.grad is None:
            raise RuntimeError("the closure computed no gradient")
        grad = x.grad.reshape(-1)
        state = self.state[x]
        if "d" not in state:
            direction = grad.neg()
            length = torch.clamp(grad.abs().sum().reciprocal(), max=1.0) * group["lr"]
            state.update(dirs=[], steps=[], rhos=[], h_diag=grad.new_ones(()))
        else:
            direction = self._direction(state, grad, group["history_size"])
            length = torch.full_like(state["t"], group["lr"])
        state["prev_grad"] = grad.clone()
        # torch stops (takes no step) where the direction does not descend.
        length = torch.where(grad.dot(direction) > 0, torch.zeros_like(length), length)
        state["d"], state["t"] = direction, length
        x.add_((direction * length).view_as(x))
        return loss

    @staticmethod
    def _direction(state: dict[str, Any], grad: Tensor, history_size: int) -> Tensor:
        """The two-loop recursion over the history, after adding the last pair to it."""
        dirs: list[Tensor] = state["dirs"]
        steps: list[Tensor] = state["steps"]
        rhos: list[Tensor] = state["rhos"]
        y = grad - state["prev_grad"]
        s = state["d"] * state["t"]
        ys = y.dot(s)
        curved = ys > 1e-10
        if len(dirs) == history_size:
            del dirs[0], steps[0], rhos[0]
        dirs.append(y)
        steps.append(s)
        rhos.append(torch.where(curved, ys.reciprocal(), torch.zeros_like(ys)))
        h_diag = torch.where(curved, ys / y.dot(y), state["h_diag"])
        state["h_diag"] = h_diag
        q = grad.neg()
        alphas = []
        for y_i, s_i, rho_i in zip(reversed(dirs), reversed(steps), reversed(rhos), strict=True):
            alpha = s_i.dot(q) * rho_i
            q.addcmul_(y_i, alpha, value=-1)
            alphas.append(alpha)
        r = q.mul_(h_diag)
        for y_i, s_i, rho_i, alpha in zip(dirs, steps, rhos, reversed(alphas), strict=True):
            beta = y_i.dot(r) * rho_i
            r.addcmul_(s_i, alpha - beta)
        return r
