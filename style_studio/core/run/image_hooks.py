"""Hooks on the optimised image's gradient, and what L-BFGS remembers of the step it took."""

from __future__ import annotations

from torch import Tensor

from .lbfgs import LBFGS


class KeepPhoto:
    """A hook on the optimised image that scales its gradient by 1 - the keep mask: kept pixels do not move.

    Registered before ``GradientNorm`` (PyTorch runs a tensor's hooks in the
    order they were registered), so the norm the run reports is that of the
    gradient the optimiser gets, kept pixels left out.
    """

    def __init__(self, image: Tensor, keep: Tensor | None) -> None:
        self.moving: Tensor | None = None
        self.take(keep)
        self._handle = image.register_hook(self._scale)

    def take(self, keep: Tensor | None) -> None:
        """A new keep mask (1, 1, H, W), or None: every pixel moves."""
        self.moving = None if keep is None else (1 - keep).clamp_(0, 1)

    def _scale(self, grad: Tensor) -> Tensor | None:
        if self.moving is None:
            return None
        return grad * self.moving.to(grad.dtype)

    def remove(self) -> None:
        self._handle.remove()


class GradientNorm:
    """A hook on the optimised image that keeps its gradient's L2 norm (a device scalar).

    It sees the gradient of the loss as autograd delivers it, after ``KeepPhoto``, before the optimiser.
    """

    def __init__(self, image: Tensor) -> None:
        self.value = image.new_zeros(())
        self._handle = image.register_hook(self._record)

    def _record(self, grad: Tensor) -> None:
        self.value = grad.detach().norm()

    def remove(self) -> None:
        self._handle.remove()


def returning(value: Tensor) -> Tensor:
    return value


def record_projected_step(optimizer: LBFGS, image: Tensor, before: Tensor) -> None:
    """Make L-BFGS remember the step the image took, not the one it proposed.

    L-BFGS learns curvature from (step, change of gradient) pairs and takes the
    step to be its direction times its length (``d * t`` in its state). Where
    the clamp to [0, 1] cut the step short, that pair is wrong and the next
    steps overshoot; recording the direction actually taken keeps it true.
    """
    state = optimizer.state[image]
    if "d" in state and "t" in state:
        state["d"] = (image.detach() - before).flatten().div_(state["t"])
