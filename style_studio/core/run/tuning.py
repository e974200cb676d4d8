"""The look tuned to a painting: the instant look's network trained through our own objective.

The instant look (``network.instant``) paints any painting's style in one pass, but loosely. Johnson et al. (2016)
trained a feed-forward network per painting with the loss the optimisation minimises; Dumoulin et al. (2017)
showed that a style network learns a new painting fast from where it stands. Here the instant look's transformer
is the network, and its loss is the run's own ``Objective`` (the VGG19 hooks: the chosen style loss and layers,
the content layer, total variation), with two terms of the picture itself:

- **layout**: one minus the correlation of the painted and the photo's luminance, both blurred to about 24
  blocks across. Without it the network learns to darken and lighten whole areas (a dark sky) that the style
  statistics do not forbid; a correlation lets the painting choose its own tones;
- **colour**: the distance between the painted picture's RGB mean and covariance and the styles' (the palette
  start's target): the painting's colours, not the network's guess at them.

Each step paints a crop (``CROP`` px) of one of the photos at the run's scale, so the strokes have the size they
will have in the picture, and the network sees several parts of the scene (or of a clip's frames, a batch's
photos). The int8 network is trained as a float copy of its weights, each weight tensor moved by Adam at a
share of its own size (``RATE``); the activations' rounding passes the gradient straight through
(``onnx_graph``). Tuning stops when asked and keeps what it has (``TunedLook.steps_done``).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import torch
from PIL import Image
from torch import Tensor

from ..errors import StyleStudioError
from ..io.tensors import resized_tensor
from ..network.device import Compute
from ..network.instant import InstantLook, TunedLook
from ..network.vgg import FeatureNetwork
from ..objective import color
from ..objective.inputs import ScaleInputs
from ..objective.objective import Objective
from ..settings import Settings
from .cancel import CancelToken

#: The side of the square crops the network is tuned on, at the run's scale.
CROP = 256
#: The shortest crop side tuned on: a photo thinner than this at the run's scale is left out (a batch's thin one).
SMALLEST_CROP = 32
#: Crops taken from each photo, and the most photos tuned on (a clip's frames, a batch's photos).
CROPS_PER_PHOTO = 4
MOST_PHOTOS = 4
#: The layout and colour terms' weights, next to the objective's own terms (about 3 to 6 at the start).
LAYOUT_WEIGHT = 4.0
COLOUR_WEIGHT = 100.0
#: Adam's step for each weight tensor, as a share of the tensor's root mean square.
RATE = 1e-2
#: Blocks across the blurred luminance the layout term compares (as ``benchmarks/quality.py`` judges layout).
LAYOUT_BLOCKS = 24


@dataclass(frozen=True)
class TuningStep:
    """One tuning step done: ``step`` of ``steps``, its loss, and the look so far (``look()``, made when asked)."""

    step: int
    steps: int
    loss: float
    look: Callable[[], TunedLook]


class LookTuner:
    """Tunes the look on ``photos`` to ``styles`` (blended by ``settings``), through ``network``'s hooks.

    Args:
        network: the VGG19 features on ``compute``'s device; look: the instant look's networks on the same device.
        photos: what to tune on (the photo painted, a clip's frames, a batch's photos): at most ``MOST_PHOTOS``,
            spread over them, are used.
        size: the longer side of the pictures the look will paint (the run's size): the scale crops are taken at.
        start: a look tuned part of the way (stopped) to go on from; None: from the instant look.
    """

    def __init__(
        self,
        network: FeatureNetwork,
        look: InstantLook,
        photos: Sequence[Image.Image],
        styles: Sequence[Image.Image],
        settings: Settings,
        compute: Compute,
        start: TunedLook | None = None,
    ) -> None:
        # The look keeps colours afterwards; its colour is held by its own term (``COLOUR_WEIGHT``), as measured.
        self.settings = dataclasses.replace(settings, preserve_colors=False, colour_weight=0.0)
        self.look, self.compute, self.network = look, compute, network
        device = compute.device
        weights = settings.blend_weights(len(styles))
        self.vector = look.blend(styles, weights).detach()
        own = look.transformer.weights()
        begun = start.weights if start is not None else own
        self.weights = {name: begun[name].detach().to(device).clone().requires_grad_() for name in own}
        self.steps_done = start.steps_done if start is not None else 0
        self.losses: list[float] = list(start.losses) if start is not None else []
        self.crops = _crops(photos, settings.size, device)
        self.inputs = ScaleInputs.prepare(
            photos[0], tuple(styles), _fitted(photos[0].size, settings.size), self.settings, device
        )
        self.colour = color.blended_statistics(self.inputs.styles, weights)
        rates = [{"params": [w], "lr": RATE * _size(w) + 1e-8} for w in self.weights.values()]
        self.optimizer = torch.optim.Adam(rates)

    def steps(self, steps: int, cancel: CancelToken | None = None) -> Iterator[TuningStep]:
        """Tune until ``steps`` are done (counting those done before), a ``TuningStep`` after each.

        Raises:
            Cancelled: ``cancel`` was set; the look so far is ``look()``.
        """
        first = self.crops[0]
        inputs = dataclasses.replace(self.inputs, content=first)
        with Objective(self.network, inputs, self.settings, self.compute) as objective:
            aims = [objective.content_of(crop) for crop in self.crops]
            layouts = [_layout(crop) for crop in self.crops]
            while self.steps_done < steps:
                if cancel is not None:
                    cancel.raise_if_cancelled()
                index = self.steps_done % len(self.crops)
                objective.aim_at(aims[index])
                with torch.enable_grad():  # a caller's no_grad (the door's) does not reach the tuning
                    loss = self._step(objective, self.crops[index], layouts[index])
                self.steps_done += 1
                self.losses.append(loss)
                yield TuningStep(self.steps_done, steps, loss, lambda: self.result(steps))

    def _step(self, objective: Objective, crop: Tensor, layout: Tensor) -> float:
        painted = self.look.painted(crop, self.vector, self.weights).clamp(0, 1)
        total = objective.evaluate(painted).total
        total = total + LAYOUT_WEIGHT * (1 - _correlation(_layout(painted), layout))
        total = total + COLOUR_WEIGHT * color.statistics_distance(painted, self.colour)
        self.optimizer.zero_grad(set_to_none=False)
        total.backward()  # type: ignore[no-untyped-call]
        for weight in self.weights.values():
            assert weight.grad is not None
            weight.grad.nan_to_num_(0.0, 0.0, 0.0)  # a flat area's variance rounded to 0 gives no direction
        if math.isfinite(loss := float(total.detach())):
            self.optimizer.step()
        return loss

    def result(self, steps: int) -> TunedLook:
        """The look as tuned so far, on the CPU."""
        weights = {name: w.detach().cpu().clone() for name, w in self.weights.items()}
        return TunedLook(self.vector.cpu(), weights, self.steps_done, steps, tuple(self.losses))


def _fitted(size: tuple[int, int], longest: int) -> tuple[int, int]:
    width, height = size
    scale = longest / max(width, height)
    return max(1, round(width * scale)), max(1, round(height * scale))


def _crops(photos: Sequence[Image.Image], longest: int, device: torch.device) -> list[Tensor]:
    """``CROPS_PER_PHOTO`` square crops of each photo (at most ``MOST_PHOTOS``, spread over them) at the run's
    scale, from its corners inwards, all of one side: the whole photo's shorter side when it is below ``CROP``.
    A photo thinner than ``SMALLEST_CROP`` at that scale is left out.

    Raises:
        StyleStudioError: every photo is that thin.
    """
    wide = [photo for photo in photos if min(_fitted(photo.size, longest)) >= SMALLEST_CROP]
    if not wide:
        raise StyleStudioError(
            f"the photos are too thin to tune the look on at {longest} px: each needs {SMALLEST_CROP} px on its "
            "shorter side. Use a larger size"
        )
    chosen = [wide[index] for index in spread(len(wide))]
    pictures = [resized_tensor(photo, _fitted(photo.size, longest)) for photo in chosen]
    side = min(CROP, *(min(p.shape[-2:]) for p in pictures))
    side -= side % 4
    crops = []
    for picture in pictures:
        height, width = picture.shape[-2:]
        for n in range(CROPS_PER_PHOTO):
            fraction = (n + 0.5) / CROPS_PER_PHOTO  # corners to the centre along the diagonal, then across
            top = round((height - side) * (fraction if n % 2 == 0 else 1 - fraction))
            left = round((width - side) * fraction)
            crops.append(picture[..., top : top + side, left : left + side].to(device))
    return crops


def spread(count: int, most: int = MOST_PHOTOS) -> list[int]:
    """The indices of at most ``most`` of ``count`` photos (or frames), spread evenly from the first to the last."""
    used = min(count, most)
    return [round(i * (count - 1) / max(1, used - 1)) for i in range(used)]


def _layout(picture: Tensor) -> Tensor:
    """The picture's luminance blurred to about ``LAYOUT_BLOCKS`` blocks across its longer side."""
    block = max(1, max(picture.shape[-2:]) // LAYOUT_BLOCKS)
    return torch.nn.functional.avg_pool2d(color.luminance(picture), block)


def _correlation(a: Tensor, b: Tensor) -> Tensor:
    a, b = a - a.mean(), b - b.mean()
    correlation: Tensor = (a * b).sum() / (a.norm() * b.norm() + 1e-8)
    return correlation


def _size(weight: Tensor) -> float:
    """A weight tensor's root mean square."""
    return float(weight.detach().square().mean().sqrt())
