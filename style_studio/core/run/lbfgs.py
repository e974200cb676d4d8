"""L-BFGS for one image, one function evaluation per step, without waiting on the device.

``torch.optim.LBFGS`` reads about 45 numbers back from the device per step
once its history is full (``float()``, ``if ys > 1e-10``, tensor-valued
``alpha=`` arguments): on a GPU each is a wait for the queue to drain.
This one keeps every coefficient as a tensor. It computes what
``torch.optim.LBFGS(max_iter=1, tolerance_grad=0, tolerance_change=0,
line_search_fn=None)`` computes (Nocedal & Wright, Algorithm 7.4), with
two differences, both where torch's crawls at print sizes (a resumed run's
first steps barely lowered its loss):

- Torch's first step is ``lr · min(1, 1/|g|₁)`` along the gradient, which
  barely moves a picture of millions of pixels. A resumed run starts
  instead from the curvature scale it had measured (``step_scale``,
  ``start_from``): the step its lost history would have begun from.
- A pair counts as curved when the angle between its step and its gradient
  change is below 90°: ``y·s > 1e-8 · |y|·|s|``. Torch asks ``y·s > 1e-10``,
  a bound on a size. Our losses are means over the pixels, so the curvature
  per pixel falls with the picture's size, and the pair of a small first
  step can fall under torch's bound. Refused, it leaves the next step the
  bare gradient, as small, and so on (``tests/core/test_lbfgs.py`` shows it
  on a loss spread over 200 thousand values). A pair that is not curved is
  kept in the history with weight 0, where torch leaves it out; it then
  takes a place of the history without changing the direction.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch import Tensor

#: A (step, gradient change) pair is curved when the cosine of the angle
#: between them is above this: a bound on the angle, whatever the loss's scale.
CURVED_COSINE = 1e-8


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
            state.update(dirs=[], steps=[], rhos=[])
            if "h_diag" in state:  # resumed (start_from): the scale measured before, as with an empty history
                direction = grad.neg().mul_(state["h_diag"])
                length = torch.full_like(state["h_diag"], group["lr"])
            else:
                direction = grad.neg()
                length = torch.clamp(grad.abs().sum().reciprocal(), max=1.0) * group["lr"]
                state.update(h_diag=grad.new_ones(()), measured=grad.new_zeros((), dtype=torch.bool))
        else:
            direction = self._direction(state, grad, group["history_size"])
            length = torch.full_like(state["t"], group["lr"])
        state["prev_grad"] = grad.clone()
        # torch stops (takes no step) where the direction does not descend.
        length = torch.where(grad.dot(direction) > 0, torch.zeros_like(length), length)
        state["d"], state["t"] = direction, length
        x.add_((direction * length).view_as(x))
        return loss

    def step_scale(self) -> float | None:
        """The curvature scale last measured (``y·s / y·y``, the initial inverse Hessian's diagonal), or None.

        Reads a number back from the device: for a checkpoint, not for every step.
        """
        (x,) = self.param_groups[0]["params"]
        state = self.state[x]
        if "measured" not in state or not bool(state["measured"]):
            return None
        return float(state["h_diag"])

    def start_from(self, step_scale: float) -> None:
        """Take the first step as if the history were empty but ``step_scale`` had been measured.

        For a resumed run: ``-step_scale · g`` at the step length ``lr``, the
        step it would have taken with its history forgotten, rather than
        torch's first step, scaled by the gradient's 1-norm.
        """
        (x,) = self.param_groups[0]["params"]
        if not math.isfinite(step_scale) or step_scale <= 0:
            raise ValueError(f"a curvature scale must be positive and finite, not {step_scale}")
        if "d" in self.state[x]:
            raise RuntimeError("start_from is for a new optimiser, before its first step")
        self.state[x].update(h_diag=x.new_tensor(step_scale), measured=x.new_ones((), dtype=torch.bool))

    @staticmethod
    def _direction(state: dict[str, Any], grad: Tensor, history_size: int) -> Tensor:
        """The two-loop recursion over the history, after adding the last pair to it."""
        dirs: list[Tensor] = state["dirs"]
        steps: list[Tensor] = state["steps"]
        rhos: list[Tensor] = state["rhos"]
        y = grad - state["prev_grad"]
        s = state["d"] * state["t"]
        ys, yy = y.dot(s), y.dot(y)
        curved = ys > CURVED_COSINE * torch.sqrt(yy * s.dot(s))
        if len(dirs) == history_size:
            del dirs[0], steps[0], rhos[0]
        dirs.append(y)
        steps.append(s)
        rhos.append(torch.where(curved, ys.reciprocal(), torch.zeros_like(ys)))
        h_diag = torch.where(curved, ys / yy, state["h_diag"])
        state["h_diag"] = h_diag
        state["measured"] = state["measured"] | curved
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


def new_optimizer(kind: str, image: Tensor, lr: float, step_scale: float | None = None) -> torch.optim.Optimizer:
    """A new optimiser (``settings.optimizer``) for ``image``; ``step_scale``: L-BFGS's curvature scale to
    begin from (a resumed run's)."""
    from .memory import lbfgs_history

    if kind == "adam":
        return torch.optim.Adam([image], lr=lr)
    # One evaluation per step, history kept across steps, nothing read back from the device.
    optimizer = LBFGS([image], lr=lr, history_size=lbfgs_history(image[0, 0].numel(), image.shape[1]))
    if step_scale is not None:
        optimizer.start_from(step_scale)
    return optimizer
