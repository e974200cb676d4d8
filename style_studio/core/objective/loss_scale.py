"""fp16's loss scale, as ``torch.amp.GradScaler`` keeps it, for the objective's backward pass."""

from __future__ import annotations

from typing import Final

from torch import Tensor

#: fp16's loss scale: where it starts, and how many good iterations double it
#: (torch.amp.GradScaler's start; a shorter interval than its 2000, for runs of hundreds).
LOSS_SCALE_START: Final = 2.0**16
LOSS_SCALE_GROWTH: Final = 100


class LossScale:
    """The factor fp16 runs multiply the loss by before the backward pass, and divide the gradient by after.

    fp16's smallest normal number is 6e-5: the gradients of losses averaged
    over millions of activations underflow to 0 in it, more of them the larger
    the picture. Scaled, they stay in range; when the scaled gradient
    overflows, the step is undone and the scale halved, and after
    ``LOSS_SCALE_GROWTH`` good iterations it is doubled (Micikevicius et al.
    2018, "Mixed precision training"; torch.amp.GradScaler does the same).
    bf16 has fp32's range and needs none: disabled, the factor is 1.
    """

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.value = LOSS_SCALE_START if enabled else 1.0
        self._good = 0

    def backward(self, loss: Tensor, image: Tensor) -> None:
        """``loss.backward()`` through the scale: ``image.grad`` ends up the loss's own gradient."""
        if not self.enabled:
            loss.backward()  # type: ignore[no-untyped-call]
            return
        (loss * self.value).backward()  # type: ignore[no-untyped-call]
        self.unscale(image)

    def unscale(self, image: Tensor) -> None:
        """Divide ``image.grad``, the gradient of the scaled loss, by the scale."""
        if self.enabled:
            assert image.grad is not None
            image.grad.mul_(1 / self.value)

    def unscaled(self, value: Tensor) -> Tensor:
        """A quantity measured on the scaled gradient (e.g. its norm), unscaled."""
        return value / self.value if self.enabled else value

    def update(self, gradient_finite: bool) -> None:
        """Halve the scale after an overflow; double it after enough good iterations."""
        if not self.enabled:
            return
        if not gradient_finite:
            self.value /= 2
            self._good = 0
            return
        self._good += 1
        if self._good >= LOSS_SCALE_GROWTH:
            self.value *= 2
            self._good = 0
