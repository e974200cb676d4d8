"""The optimisation loop: a generator of frozen ``Progress`` records.

One loop, three consumers: the command line prints the records, the tests
assert on them, and the window's worker thread forwards them as signals::

    transfer = StyleTransfer(content, [style], settings, weights)
    for progress in transfer.run():
        ...
    transfer.result  # PIL image at the requested size

Each iteration is one forward and one backward pass of the truncated VGG19
(L-BFGS runs with one function evaluation per step and keeps its history
across steps, so its iterations cost the same as Adam's).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
import math
import threading
import time
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image
from torch import Tensor

from . import color, memory
from .cancel import CancelToken
from .device import Compute, resolve
from .errors import Cancelled, ResourceError, StyleStudioError
from .features import VGG19, Captured, TruncatedVGG, capture
from .imageio import check_image_fits, fit_size
from .layers import min_input_side
from .losses import magnitude, total_variation, weighted_mse
from .settings import LIVE_FIELDS, Settings
from .weights import LoadedWeights, build_features

log = logging.getLogger(__name__)

FINISHED: Final = "finished"
CANCELLED: Final = "cancelled"

#: A loss this many times the best one so far at the scale counts as a blow-up.
DIVERGENCE_FACTOR: Final = 10.0
#: Each blow-up divides the step size by this. L-BFGS overshoots now and then
#: in its first steps and recovers well with its history reset; Adam only
#: blows up when its step is far too large.
STEP_BACKOFF: Final = {"lbfgs": 2.0, "adam": 10.0}
#: After this many good iterations in a row, a lowered step size is doubled
#: (up to the one set). A blow-up early in a run otherwise slowed all the rest:
#: a 512 px fp32 run with untrained weights that jumped 3 times in its first 14
#: iterations went on at 1/8 of the step and ended 12.8 % above the same run
#: in bf16; recovering, they ended within 0.03 % (benchmarks/precision.py).
#: Since VGG's edges changed (features.VGG19), it jumps 4 times in 24 iterations and
#: ends about 2 % apart.
STEP_RECOVERY: Final = 10
#: A live change that scales a loss term by more than this (either way) restarts
#: the optimiser: L-BFGS's curvature pairs describe the old objective. Kept
#: after Content went from 1 to 100, they made it overshoot 20x and end 40 %
#: higher. Smaller changes, such as the steps of a slider being dragged, keep
#: the history: a restart begins with a tiny step, and the preview would stand
#: still for as long as the drag lasts.
RESTART_RATIO: Final = 2.0
#: Blow-ups in a row after which the run stops.
MAX_BLOWUPS: Final = 6
#: The coarsest scale's longest side is at least this (coarser scales are skipped).
MIN_SCALE_SIDE: Final = 64


@dataclass(frozen=True)
class Progress:
    """One iteration of a run, or its end (``done``).

    Loss values are the weighted terms that make up ``total_loss``.

    Attributes:
        scale, scales: 1-based scale index and the number of scales.
        iteration, iterations: 1-based iteration within the scale, and its total.
        step, steps: iteration counted over all scales, and their total.
        width, height: image size at this scale, pixels.
        total_loss: content + style + TV.
        content_loss: weighted content term.
        style_losses: style layer -> its weighted term.
        tv_loss: weighted total-variation term.
        grad_norm: L2 norm of the loss gradient w.r.t. the image.
        elapsed: seconds since the run started.
        eta: estimated seconds to the end, None until known.
        weights: which VGG weights are in use ("untrained ..." when untrained).
        compute: device and precision, e.g. "cpu, bf16".
        preview: (H, W, 3) uint8 downsampled image, at most every preview interval.
        event: something that happened (e.g. a recovered blow-up), else None.
        done: this is the last record of the run. Its loss values and
            ``grad_norm`` are the result's (the lowest-loss image of the last
            scale reached), which need not be the last iteration's.
        stop_reason: with ``done``: "finished", "cancelled" or why it stopped.
    """

    scale: int
    scales: int
    iteration: int
    iterations: int
    step: int
    steps: int
    width: int
    height: int
    total_loss: float
    content_loss: float
    style_losses: Mapping[str, float]
    tv_loss: float
    grad_norm: float
    elapsed: float
    eta: float | None
    weights: str
    compute: str
    preview: np.ndarray | None = field(default=None, repr=False, compare=False)
    event: str | None = None
    done: bool = False
    stop_reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The record as JSON-able data, without the preview; non-finite numbers become null."""
        out = {k: v for k, v in dataclasses.asdict(self).items() if k != "preview"}
        out["style_losses"] = {k: _finite_or_none(v) for k, v in self.style_losses.items()}
        for key in ("total_loss", "content_loss", "tv_loss", "grad_norm", "eta"):
            out[key] = _finite_or_none(out[key])
        return out


def _finite_or_none(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def scale_sizes(content_size: tuple[int, int], size: int, scales: int) -> list[tuple[int, int]]:
    """(width, height) of each scale, coarse to fine; the last is the requested size.

    Each coarser scale halves the previous one; scales whose longest side
    would be under MIN_SCALE_SIDE are dropped.
    """
    sizes = []
    for k in reversed(range(scales)):
        longest = round(size / 2**k)
        if k > 0 and longest < MIN_SCALE_SIDE:
            continue
        sizes.append(fit_size(*content_size, longest))
    return sizes


def features_for(weights: LoadedWeights, compute: Compute) -> VGG19:
    """VGG19 with ``weights`` on the compute device, in the compute dtype, shared between runs.

    Under mixed precision the weights are stored in the autocast dtype: autocast
    would otherwise cast all 20 M parameters on every forward pass.
    """
    dtype = compute.autocast_dtype or torch.float32
    if compute.device.type == "cuda":
        # The image size is fixed for hundreds of iterations: let cuDNN pick its fastest kernels.
        torch.backends.cudnn.benchmark = True
    return _features_on(weights, str(compute.device), compute.memory_format, dtype)


@functools.lru_cache(maxsize=2)
def _features_on(weights: LoadedWeights, device: str, memory_format: torch.memory_format, dtype: torch.dtype) -> VGG19:
    return VGG19(build_features(weights)).to(device=device, dtype=dtype).to(memory_format=memory_format)


def pil_to_tensor(image: Image.Image) -> Tensor:
    """PIL RGB -> (1, 3, H, W) float32 in [0, 1]."""
    array = np.array(image.convert("RGB"), dtype=np.uint8)
    return torch.from_numpy(array).permute(2, 0, 1).unsqueeze(0).float().div_(255).contiguous()


def tensor_to_uint8(image: Tensor) -> np.ndarray:
    """(1, 3, H, W) float -> (H, W, 3) uint8, clamped."""
    array = image.detach()[0].clamp(0, 1).mul(255).round_().to(torch.uint8).permute(1, 2, 0)
    return array.cpu().numpy()


def _resized(image: Image.Image, size: tuple[int, int]) -> Tensor:
    if image.size != size:
        image = image.resize(size, Image.Resampling.LANCZOS, reducing_gap=3.0)
    return pil_to_tensor(image)


ToInput = Callable[[Tensor], Tensor]


@dataclass
class _Scale:
    """The inputs at one scale, on the compute device.

    Attributes:
        content: (1, C, H, W), in the optimised image's format: RGB (C = 3),
            or luminance (C = 1) when preserving colours.
        styles: (1, 3, h, w) each, as VGG sees them: luminance repeated over
            RGB (and matched to the content's) when preserving colours.
    """

    content: Tensor
    styles: list[Tensor]

    @property
    def size(self) -> tuple[int, int]:
        return self.content.shape[-1], self.content.shape[-2]


@dataclass
class _Terms:
    """Loss terms of one evaluation, as tensors (weighted)."""

    total: Tensor
    content: Tensor
    style: dict[str, Tensor]
    tv: Tensor


class _Objective:
    """The loss at one scale for one set of layers: network, hooks and targets.

    Creating it registers the hooks (and computes the targets through them);
    ``close()`` removes them. ``to_input`` turns the optimised tensor into
    VGG's RGB input.
    """

    def __init__(self, features: VGG19, scale: _Scale, settings: Settings, compute: Compute, to_input: ToInput) -> None:
        self.settings = settings
        self.compute = compute
        self.content_layers = tuple(settings.content_layers)
        self.style_layers = tuple(settings.active_style_layers)
        layers = set(self.content_layers) | set(self.style_layers)
        if not layers:
            raise StyleStudioError("nothing to optimise: give a style layer a weight above 0 or choose a content layer")
        need = min_input_side(list(layers))
        width, height = scale.size
        if min(width, height) < need:
            raise StyleStudioError(
                f"the image is {width}×{height} pixels at this scale; the layers in use "
                f"need at least {need} pixels on each side. Use a larger size or "
                "fewer scales"
            )
        self.net = TruncatedVGG(features, layers, settings.pooling)
        self.net.to(compute.device)
        self._stack = contextlib.ExitStack()
        self.captured: Captured = self._stack.enter_context(capture(self.net, self.content_layers, self.style_layers))
        try:
            self._targets(scale, to_input)
        except BaseException:
            self._stack.close()
            raise

    def _forward(self, image: Tensor) -> None:
        self.captured.clear()
        dtype = self.compute.autocast_dtype
        with torch.autocast(self.compute.device.type, dtype=dtype, enabled=dtype is not None):
            self.net(image, self.compute.memory_format)

    @torch.no_grad()
    def _targets(self, scale: _Scale, to_input: ToInput) -> None:
        self._forward(to_input(scale.content))
        self.content_targets = {k: v.detach().clone() for k, v in self.captured.activations.items()}
        self.content_magnitudes = {k: magnitude(v) for k, v in self.content_targets.items()}
        self.style_grams: list[dict[str, Tensor]] = []
        for style in scale.styles:
            self._forward(style)
            self.style_grams.append({k: v.detach().clone() for k, v in self.captured.grams.items()})
        self.tv_reference = total_variation(to_input(scale.content)).clamp_min(1e-8)
        self.blend(self.settings)
        self.captured.clear()

    @torch.no_grad()
    def blend(self, settings: Settings) -> None:
        """Take ``settings``' loss weights: the style targets and every term's factor.

        A style target is the weighted sum of the style images' Gram matrices
        (Gatys et al.'s style blending). A term's factor is its weight over its
        target's magnitude, so the loss needs one multiplication per term.
        """
        weights = settings.blend_weights(len(self.style_grams))
        self.style_targets = {
            layer: torch.stack([w * grams[layer] for w, grams in zip(weights, self.style_grams, strict=True)]).sum(0)
            for layer in self.style_layers
        }
        layer_weights = settings.style_layer_weights
        self.style_factors = {
            k: settings.style_weight * layer_weights[k] / magnitude(v) for k, v in self.style_targets.items()
        }
        # Content layers are averaged.
        self.content_factors = {
            k: settings.content_weight / (len(self.content_layers) * m) for k, m in self.content_magnitudes.items()
        }
        self.tv_factor = settings.tv_weight / self.tv_reference
        self.settings = settings

    def factors(self) -> list[float]:
        """Every term's factor, in a fixed order (content, style, TV)."""
        factors = [*self.content_factors.values(), *self.style_factors.values(), self.tv_factor]
        return [float(f) for f in factors]

    def evaluate(self, image: Tensor, rgb: Tensor) -> _Terms:
        """Loss terms for ``image`` (the optimised tensor) seen by VGG as ``rgb``."""
        self._forward(rgb)
        activations, grams = self.captured.activations, self.captured.grams
        content_terms = [
            weighted_mse(activations[k], self.content_targets[k], self.content_factors[k]) for k in self.content_layers
        ]
        style = {k: weighted_mse(grams[k], self.style_targets[k], self.style_factors[k]) for k in self.style_layers}
        tv = total_variation(image) * self.tv_factor
        content = torch.stack(content_terms).sum() if content_terms else rgb.new_zeros(())
        # One stack and sum: fewer autograd nodes than a chain of additions.
        total = torch.stack([content, tv, *style.values()]).sum()
        self.captured.clear()
        return _Terms(total, content, style, tv)

    def close(self) -> None:
        self._stack.close()


def _record_projected_step(optimizer: torch.optim.LBFGS, image: Tensor, before: Tensor) -> None:
    """Make L-BFGS remember the step the image took, not the one it proposed.

    L-BFGS learns the curvature from (step, change of gradient) pairs, and
    takes the step to be the direction it proposed times its length
    (``d * t`` in its state). Where the clamp to [0, 1] cut that step short,
    the pair is wrong, and the next steps overshoot: the loss of a 256 px
    fp32 run jumped from 1.43 to 3.9 and back. Recording the direction that
    was actually taken keeps the pairs true.
    """
    state = optimizer.state[image]
    if "d" in state and "t" in state:
        state["d"] = (image.detach() - before).flatten().div_(float(state["t"]))


class StyleTransfer:
    """A style-transfer run: set up with images and settings, then iterate ``run()``.

    Args:
        content: the content image (RGB).
        styles: one or more style images (RGB).
        settings: the run's settings (validated here).
        weights: VGG19 weights from ``weights.load_weights``.
        cancel: set it from any thread to stop the run within one iteration.
        preview_interval: minimum seconds between previews (0 = every iteration).
        preview_max_side: longest side of preview images.
    """

    def __init__(
        self,
        content: Image.Image,
        styles: Sequence[Image.Image],
        settings: Settings,
        weights: LoadedWeights,
        *,
        cancel: CancelToken | None = None,
        preview_interval: float = 0.15,
        preview_max_side: int = 512,
    ) -> None:
        if not styles:
            raise StyleStudioError("at least one style image is needed")
        self.settings = settings.validate()
        settings.blend_weights(len(styles))  # raises on a count mismatch
        self.content_image = content.convert("RGB")
        self.style_images = [s.convert("RGB") for s in styles]
        self.weights = weights
        self.cancel_token = cancel or CancelToken()
        self.preview_interval = preview_interval
        self.preview_max_side = preview_max_side
        self.compute = resolve(settings.device, settings.precision)
        self.sizes = scale_sizes(self.content_image.size, settings.size, settings.scales)
        self.iterations = [settings.iterations] * len(self.sizes)
        layers = list(settings.content_layers) + list(settings.active_style_layers)
        if layers:
            check_image_fits(self.content_image, settings.size, layers, "the content image")
            for number, style in enumerate(self.style_images, start=1):
                longest = max(1, round(settings.size * settings.style_scale))
                check_image_fits(style, longest, layers, f"style image {number}")
        self._check_memory()
        self._pending: Settings | None = None
        self._lock = threading.Lock()
        self._result: Tensor | None = None
        self._result_record: Progress | None = None
        self._final_content: Tensor | None = None

    def _check_memory(self) -> None:
        """Refuse, before anything is allocated, a run that will not fit in memory."""
        device = self.compute.device
        final = self.sizes[-1]
        longest = max(1, round(max(final) * self.settings.style_scale))
        style_sizes = [fit_size(s.width, s.height, longest) for s in self.style_images]
        cuda_free = torch.cuda.mem_get_info(device)[0] if device.type == "cuda" else None
        memory.check_fits(
            self.content_image.size,
            self.settings.size,
            style_sizes,
            self.compute.precision,
            memory.available_bytes(device.type, cuda_free),
            "GPU" if device.type == "cuda" else "computer",
        )

    # -- live changes -------------------------------------------------------

    def update_settings(self, settings: Settings) -> None:
        """Take new loss weights (``settings.LIVE_FIELDS``) at the next iteration; thread-safe.

        Other fields of ``settings`` are ignored until the next run.
        """
        settings.validate()
        settings.blend_weights(len(self.style_images))
        with self._lock:
            self._pending = settings

    def _take_pending(self) -> Settings | None:
        with self._lock:
            pending, self._pending = self._pending, None
        if pending is None:
            return None
        return dataclasses.replace(self.settings, **{k: getattr(pending, k) for k in LIVE_FIELDS})

    # -- result ---------------------------------------------------------------

    @property
    def result(self) -> Image.Image | None:
        """The lowest-loss image so far at the requested size (None before the first iteration).

        Lowest at the current scale, and since the last live change of weights:
        losses under other weights do not compare.
        """
        if self._result is None:
            return None
        return Image.fromarray(tensor_to_uint8(self._final_rgb(self._result)))

    def _final_rgb(self, image: Tensor) -> Tensor:
        width, height = self.sizes[-1]
        if image.shape[-2:] != (height, width):
            image = F.interpolate(image, size=(height, width), mode="bicubic", align_corners=False)
        if self.settings.preserve_colors:
            return color.with_chroma(image, self._chroma_source(image.device))
        return image

    def _chroma_source(self, device: torch.device) -> Tensor:
        """The content image at the requested size, resized once: the chroma of every preview and result."""
        if self._final_content is None:
            self._final_content = _resized(self.content_image, self.sizes[-1]).to(device)
        return self._final_content

    def evaluate(self, image: Image.Image) -> dict[str, float]:
        """Loss terms of ``image`` at the requested size, as this run defines them.

        For comparing results (e.g. a bf16 run's result judged by an fp32
        objective). Returns {"total", "content", "tv", <style layer>: ...}.
        Not available with preserve_colors (the result is not what is optimised).
        """
        if self.settings.preserve_colors:
            raise StyleStudioError("evaluate() does not apply to preserve-colours runs")
        features = features_for(self.weights, self.compute)
        scale = self._scale_inputs(self.sizes[-1])
        objective = _Objective(features, scale, self.settings, self.compute, self._to_input)
        try:
            rgb = _resized(image, self.sizes[-1]).to(self.compute.device)
            with torch.no_grad():
                terms = objective.evaluate(rgb, rgb)
            values = {"total": terms.total.item(), "content": terms.content.item(), "tv": terms.tv.item()}
            values.update({k: v.item() for k, v in terms.style.items()})
            return values
        finally:
            objective.close()

    # -- the run ----------------------------------------------------------------

    def run(self) -> Iterator[Progress]:
        """Optimise, yielding a Progress per iteration and a last one with ``done``.

        Raises:
            StyleStudioError: bad input, or a device error the user can act on
                (e.g. out of memory). ``result`` keeps the best image so far.
        """
        self._started = time.perf_counter()
        self._work_total = sum(n * w * h for n, (w, h) in zip(self.iterations, self.sizes, strict=True))
        self._work_done = 0
        self._rate_origin: tuple[float, int] | None = None
        self._last_preview = -math.inf
        self._last: Progress | None = None
        self._result_record = None
        self._step = 0
        device = self.compute.device
        features = features_for(self.weights, self.compute)
        image: Tensor | None = None
        try:
            for index, size in enumerate(self.sizes):
                self.cancel_token.raise_if_cancelled()
                scale = self._scale_inputs(size)
                if image is None:
                    image = self._initial_image(scale)
                else:
                    image = F.interpolate(image, size=(size[1], size[0]), mode="bicubic", align_corners=False).clamp_(
                        0, 1
                    )
                image = yield from self._optimise(index, image, scale, features)
            yield self._end(FINISHED)
        except Cancelled:
            yield self._end(CANCELLED)
        except torch.OutOfMemoryError as exc:
            if device.type == "cuda":
                torch.cuda.empty_cache()
            raise ResourceError(
                f"the {device} device ran out of memory at {self._last_size()} pixels "
                f"({exc.args[0].splitlines()[0] if exc.args else 'out of memory'}); "
                "lower the size or the number of style images, or use the CPU"
            ) from None

    def _last_size(self) -> str:
        return f"{self._last.width}×{self._last.height}" if self._last else "the requested size"

    def _scale_inputs(self, size: tuple[int, int]) -> _Scale:
        device = self.compute.device
        content = _resized(self.content_image, size).to(device)
        styles = []
        longest = max(1, round(max(size) * self.settings.style_scale))
        for style in self.style_images:
            style_size = fit_size(style.width, style.height, longest)
            tensor = _resized(style, style_size).to(device)
            if self.settings.preserve_colors:
                y = color.match_luminance(color.luminance(tensor), color.luminance(content))
                tensor = y.expand(-1, 3, -1, -1)
            styles.append(tensor)
        if self.settings.preserve_colors:
            content = color.luminance(content)
        return _Scale(content, styles)

    def _to_input(self, image: Tensor) -> Tensor:
        """The optimised tensor as VGG's RGB input: luminance is repeated over 3 channels."""
        return image.expand(-1, 3, -1, -1) if image.shape[1] == 1 else image

    def _initial_image(self, scale: _Scale) -> Tensor:
        s = self.settings
        channels = 1 if s.preserve_colors else 3
        width, height = scale.size
        if s.init == "noise":
            generator = torch.Generator().manual_seed(s.seed)
            return torch.rand(1, channels, height, width, generator=generator).to(self.compute.device)
        if s.init == "style":
            start = _resized(self.style_images[0], (width, height)).to(self.compute.device)
            return color.luminance(start).clamp(0, 1) if s.preserve_colors else start
        return scale.content.clone()

    def _optimizer(self, image: Tensor, lr: float) -> torch.optim.Optimizer:
        if self.settings.optimizer == "adam":
            return torch.optim.Adam([image], lr=lr)
        # One evaluation per step, history kept across steps. The losses are
        # relative (order 1), so torch's absolute tolerances would stop it early.
        # 20 corrections: 7 % less time per run than 50, 0.2 % higher loss after
        # 150 iterations at 256 px (measured with the proxy weights).
        return torch.optim.LBFGS([image], lr=lr, max_iter=1, history_size=20, tolerance_grad=0.0, tolerance_change=0.0)

    def _optimise(self, index: int, start: Tensor, scale: _Scale, features: VGG19) -> Generator[Progress, None, Tensor]:
        """Optimise at one scale; returns the lowest-loss image (generator return value).

        The loss an iteration reports is that of the image before its step:
        ``candidate`` keeps that image, and becomes ``lowest`` when it beats it.
        """
        pending = self._take_pending()
        if pending is not None:
            self.settings = pending
        s = self.settings
        # L-BFGS flattens the gradient with view(-1): the image must be NCHW-contiguous.
        image = start.detach().clone(memory_format=torch.contiguous_format).requires_grad_(True)
        lowest = image.detach().clone()
        self._result = lowest
        candidate = torch.empty_like(lowest)
        grad_norm = [image.new_zeros(())]

        def record_grad(grad: Tensor) -> None:
            grad_norm[0] = grad.detach().norm()

        grad_handle = image.register_hook(record_grad)
        lr = s.effective_step
        optimizer = self._optimizer(image, lr)
        objective = _Objective(features, scale, s, self.compute, self._to_input)
        best = math.inf  # lowest's loss
        blowups = 0
        good_run = 0
        iterations = self.iterations[index]
        terms: list[_Terms] = []

        def closure() -> Tensor:
            self.cancel_token.raise_if_cancelled()
            optimizer.zero_grad(set_to_none=False)
            result = objective.evaluate(image, self._to_input(image))
            result.total.backward()
            terms[:] = [result]
            return result.total

        try:
            for iteration in range(1, iterations + 1):
                self.cancel_token.raise_if_cancelled()
                changed = self._take_pending()
                if changed is not None:
                    objective, reshaped = self._apply(changed, objective, features, scale)
                    # A new objective: losses before the change are no yardstick for a
                    # blow-up (Content from 1 to 100 stopped the run as diverging).
                    best = math.inf
                    if reshaped:
                        optimizer = self._optimizer(image, lr)
                candidate.copy_(image.detach())
                if isinstance(optimizer, torch.optim.LBFGS):
                    optimizer.step(closure)
                else:
                    closure()
                    optimizer.step()
                with torch.no_grad():
                    # Kept in the displayable range (a projected step): left free, 4 % of
                    # the pixels drift as far as -2 and 2.5, and the loss reported is that of
                    # an image nobody sees. Clamped on export, the free result of a 512 px
                    # run scored 2.46 where it reported 1.85; projected, it reports and
                    # exports 1.885 (proxy weights, benchmarks/time_to_result.py's inputs).
                    image.clamp_(0, 1)
                    if isinstance(optimizer, torch.optim.LBFGS):
                        _record_projected_step(optimizer, image, candidate)
                t = terms[0]
                values = (
                    torch.stack(
                        [
                            t.total.detach(),
                            t.content.detach(),
                            t.tv.detach(),
                            grad_norm[0],
                            *(v.detach() for v in t.style.values()),
                        ]
                    )
                    .float()
                    .tolist()
                )
                total = values[0]
                event = None
                improved = False
                if not math.isfinite(total) or total > DIVERGENCE_FACTOR * best:
                    blowups += 1
                    good_run = 0
                    lr /= STEP_BACKOFF[s.optimizer]
                    with torch.no_grad():
                        image.copy_(lowest)
                    optimizer = self._optimizer(image, lr)
                    what = "became non-finite" if not math.isfinite(total) else "jumped"
                    event = (
                        f"the loss {what} at iteration {iteration}: went back to the lowest-loss image "
                        f"and lowered the step size to {lr:.3g}"
                    )
                    log.warning(event)
                    if blowups >= MAX_BLOWUPS:
                        raise StyleStudioError(
                            f"the optimisation kept diverging ({blowups} times in a row, last step size "
                            f"{lr:.3g}); lower the step size or the style weight, or use L-BFGS"
                        )
                else:
                    blowups = 0
                    good_run += 1
                    if lr < s.effective_step and good_run >= STEP_RECOVERY:
                        # Raised again in place: the optimiser keeps its history.
                        lr = min(s.effective_step, lr * 2)
                        optimizer.param_groups[0]["lr"] = lr
                        good_run = 0
                    improved = total < best
                    if improved:
                        best = total
                        lowest, candidate = candidate, lowest
                        self._result = lowest
                self._step += 1
                self._work_done += scale.size[0] * scale.size[1]
                last = iteration == iterations
                yield self._record(
                    index,
                    iteration,
                    scale,
                    values,
                    list(t.style),
                    event,
                    lowest,
                    force_preview=iteration == 1 or last,
                )
                if improved:
                    self._result_record = self._last
            return lowest
        finally:
            grad_handle.remove()
            objective.close()

    def _apply(
        self, settings: Settings, objective: _Objective, features: VGG19, scale: _Scale
    ) -> tuple[_Objective, bool]:
        """New loss weights; rebuild hooks and targets only when the style layers change.

        Returns the objective, and whether it changed enough that the optimiser's
        history no longer describes it: a layer added or removed, or a term whose
        factor moved by more than RESTART_RATIO either way.
        """
        self.settings = settings
        if tuple(settings.active_style_layers) == objective.style_layers:
            before = objective.factors()
            objective.blend(settings)
            after = objective.factors()
            reshaped = any(max(a, b) > RESTART_RATIO * min(a, b) for a, b in zip(before, after, strict=True))
            return objective, reshaped
        objective.close()
        return _Objective(features, scale, settings, self.compute, self._to_input), True

    def _record(
        self,
        index: int,
        iteration: int,
        scale: _Scale,
        values: list[float],
        style_layers: list[str],
        event: str | None,
        image: Tensor,
        *,
        force_preview: bool,
    ) -> Progress:
        now = time.perf_counter()
        elapsed = now - self._started
        # The rate comes from the iterations since the first one: the set-up before
        # it (network, targets) would make an early ETA far too long.
        if self._rate_origin is None:
            self._rate_origin = (now, self._work_done)
        eta = None
        origin_time, origin_work = self._rate_origin
        if self._work_done > origin_work and now > origin_time:
            rate = (self._work_done - origin_work) / (now - origin_time)
            eta = (self._work_total - self._work_done) / rate
        preview = None
        if force_preview or now - self._last_preview >= self.preview_interval:
            preview = self._preview(image)
            self._last_preview = now
        total, content, tv, grad, *style = values
        self._last = Progress(
            scale=index + 1,
            scales=len(self.sizes),
            iteration=iteration,
            iterations=self.iterations[index],
            step=self._step,
            steps=sum(self.iterations),
            width=scale.size[0],
            height=scale.size[1],
            total_loss=total,
            content_loss=content,
            style_losses=dict(zip(style_layers, style, strict=True)),
            tv_loss=tv,
            grad_norm=grad,
            elapsed=elapsed,
            eta=eta,
            weights=self.weights.label,
            compute=self.compute.describe(),
            preview=preview,
            event=event,
        )
        return self._last

    @torch.no_grad()
    def _preview(self, image: Tensor) -> np.ndarray:
        height, width = image.shape[-2:]
        if max(width, height) > self.preview_max_side:
            w, h = fit_size(width, height, self.preview_max_side)
            image = F.interpolate(image, size=(h, w), mode="bilinear", antialias=True, align_corners=False)
        if self.settings.preserve_colors:
            content = F.interpolate(
                self._chroma_source(image.device),
                size=image.shape[-2:],
                mode="bilinear",
                antialias=True,
                align_corners=False,
            )
            image = color.with_chroma(image, content)
        return tensor_to_uint8(image)

    def _end(self, reason: str) -> Progress:
        elapsed = time.perf_counter() - self._started
        preview = self._preview(self._result) if self._result is not None else None
        if self._last is None:
            nan = math.nan
            width, height = self.sizes[0]
            return Progress(
                scale=1,
                scales=len(self.sizes),
                iteration=0,
                iterations=self.iterations[0],
                step=0,
                steps=sum(self.iterations),
                width=width,
                height=height,
                total_loss=nan,
                content_loss=nan,
                style_losses={},
                tv_loss=nan,
                grad_norm=nan,
                elapsed=elapsed,
                eta=0.0,
                weights=self.weights.label,
                compute=self.compute.describe(),
                preview=preview,
                done=True,
                stop_reason=reason,
            )
        result = self._result_record or self._last
        return dataclasses.replace(
            self._last,
            total_loss=result.total_loss,
            content_loss=result.content_loss,
            style_losses=result.style_losses,
            tv_loss=result.tv_loss,
            grad_norm=result.grad_norm,
            elapsed=elapsed,
            eta=0.0,
            preview=preview,
            event=None,
            done=True,
            stop_reason=reason,
        )


__all__ = ["CANCELLED", "FINISHED", "CancelToken", "Progress", "StyleTransfer", "scale_sizes"]
