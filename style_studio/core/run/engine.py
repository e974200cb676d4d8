"""The run: scales, live settings and the optimisation loop, as a generator of ``Progress``.

One loop, three consumers: the command line prints the records, the tests
assert on them, and the window's worker thread forwards them as signals::

    transfer = StyleTransfer(content, [style], settings, weights)
    for progress in transfer.run():
        ...
    transfer.result  # PIL image at the requested size

Where things happen: the loss is computed in ``objective.Objective``; a step
is accepted or undone in ``steps.StepControl``; every ``Progress`` record,
preview included, is made in ``StyleTransfer._progress``.

Each iteration is one forward and one backward pass of the truncated network
(L-BFGS runs with one function evaluation per step and keeps its history
across steps, so its iterations cost the same as Adam's).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import gc
import logging
import math
import threading
import time
import uuid
from collections.abc import Generator, Hashable, Iterator, Sequence
from typing import Final, Protocol

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image
from torch import Tensor

from ..errors import Cancelled, ResourceError, StyleStudioError
from ..io.imageio import fit_size
from ..io.tensors import resized_tensor, tensor_to_pil, tensor_to_uint8
from ..network.device import Compute, free_device_memory, resolve
from ..network.layers import check_image_fits
from ..network.vgg import FeatureNetwork, store_as_fp16
from ..network.weights import identity as weights_identity
from ..objective import color
from ..objective.guided import ScaleRegions
from ..objective.loss_scale import LossScale
from ..objective.objective import Objective, ScaleInputs, Terms, TileDone
from ..objective.regions import Regions
from ..objective.tiles import TiledObjective
from ..progress import CANCELLED, FINISHED, NO_LOSSES, Losses, Progress, TimeLeft
from ..settings import LIVE_FIELDS, Settings
from . import checkpoints, memory
from .cancel import CancelToken
from .checkpoints import Checkpoint, CheckpointStore, Position, image_hash
from .lbfgs import LBFGS
from .plan import Target, plan_run
from .steps import StepControl

log = logging.getLogger(__name__)

#: A live change that scales a loss term's factor by more than this (either
#: way) restarts the optimiser: L-BFGS's curvature pairs describe the old
#: objective and overshoot on the new one. Smaller changes, such as the steps
#: of a dragged slider, keep the history: a restart begins with a tiny step,
#: and the picture would stand still for as long as the drag lasts.
RESTART_RATIO: Final = 2.0


class NetworkWeights(Hashable, Protocol):
    """What a run needs of its weights: a name for the user, and the network they make."""

    @property
    def label(self) -> str: ...

    def build_network(self) -> FeatureNetwork: ...


def target_of(compute: Compute) -> Target:
    """What the run plan needs to know of a device: its kind, precision and free memory."""
    device = compute.device
    return Target(device.type, compute.precision, memory.available_bytes(device.type, free_device_memory(device)))


def network_for(weights: NetworkWeights, compute: Compute) -> FeatureNetwork:
    """The network ``weights`` make, on the compute device and in its dtype, shared between runs.

    Under mixed precision the weights are stored in the autocast dtype: autocast
    would otherwise cast every parameter on every forward pass.
    """
    dtype = compute.autocast_dtype or torch.float32
    return _network_on(weights, str(compute.device), compute.memory_format, dtype, compute.fp16_emulated)


@functools.lru_cache(maxsize=2)
def _network_on(
    weights: NetworkWeights, device: str, memory_format: torch.memory_format, dtype: torch.dtype, fp16_emulated: bool
) -> FeatureNetwork:
    network = weights.build_network().to(device=device, dtype=dtype).to(memory_format=memory_format)
    return store_as_fp16(network) if fp16_emulated else network


@contextlib.contextmanager
def _device_flags(compute: Compute, deterministic: bool) -> Iterator[None]:
    """CUDA's global flags for the run, put back as they were afterwards.

    Deterministic runs use deterministic kernels only (the same seed gives the
    same picture); otherwise cuDNN times its kernels and keeps the fastest, as
    the size stays fixed for hundreds of iterations. "fp32" computes in
    float32, not in the TF32 that Ampere and later GPUs otherwise use.
    """
    if compute.device.type != "cuda":
        yield
        return
    cudnn, matmul = torch.backends.cudnn, torch.backends.cuda.matmul
    before = (cudnn.benchmark, cudnn.deterministic, cudnn.allow_tf32, matmul.allow_tf32)
    algorithms = (torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled())
    cudnn.benchmark, cudnn.deterministic = not deterministic, deterministic
    if deterministic:
        torch.use_deterministic_algorithms(True, warn_only=True)
    if compute.precision == "fp32":
        cudnn.allow_tf32 = matmul.allow_tf32 = False
    try:
        yield
    finally:
        cudnn.benchmark, cudnn.deterministic, cudnn.allow_tf32, matmul.allow_tf32 = before
        torch.use_deterministic_algorithms(algorithms[0], warn_only=algorithms[1])


def _is_out_of_memory(error: BaseException) -> bool:
    """CUDA raises ``torch.OutOfMemoryError``; Apple's MPS a plain ``RuntimeError`` that says so."""
    return isinstance(error, torch.OutOfMemoryError) or "out of memory" in str(error).lower()


def _empty_device_cache(device: torch.device) -> None:
    """Return the memory PyTorch's allocator keeps cached to the device."""
    if device.type == "cuda":
        torch.cuda.empty_cache()
    elif device.type == "mps":
        torch.mps.empty_cache()


class _KeepPhoto:
    """A hook on the optimised image that scales its gradient by 1 - the keep mask: kept pixels do not move.

    Registered before ``_GradientNorm`` (PyTorch runs a tensor's hooks in the
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


class _GradientNorm:
    """A hook on the optimised image that keeps its gradient's L2 norm (a device scalar).

    It sees the gradient of the loss as autograd delivers it, after ``_KeepPhoto``, before the optimiser.
    """

    def __init__(self, image: Tensor) -> None:
        self.value = image.new_zeros(())
        self._handle = image.register_hook(self._record)

    def _record(self, grad: Tensor) -> None:
        self.value = grad.detach().norm()

    def remove(self) -> None:
        self._handle.remove()


def _returning(value: Tensor) -> Tensor:
    return value


def _record_projected_step(optimizer: LBFGS, image: Tensor, before: Tensor) -> None:
    """Make L-BFGS remember the step the image took, not the one it proposed.

    L-BFGS learns curvature from (step, change of gradient) pairs and takes the
    step to be its direction times its length (``d * t`` in its state). Where
    the clamp to [0, 1] cut the step short, that pair is wrong and the next
    steps overshoot; recording the direction actually taken keeps it true.
    """
    state = optimizer.state[image]
    if "d" in state and "t" in state:
        state["d"] = (image.detach() - before).flatten().div_(state["t"])


class StyleTransfer:
    """A style-transfer run: set up with images and settings, then iterate ``run()``.

    Args:
        content: the content image (RGB).
        styles: one or more style images (RGB).
        settings: the run's settings (validated here).
        weights: what makes the network, e.g. ``weights.load_weights(...)``.
        cancel: set it from any thread to stop the run within one iteration.
        preview_interval: minimum seconds between previews (0 = every iteration).
        preview_max_side: longest side of preview images.
        checkpoints: where to save the run's state every ``checkpoints.interval()``
            seconds and when it is stopped (None: nowhere).
        run_id: the run's name in ``checkpoints`` (a new one when None).
        resume: a checkpoint to go on from; refused, with what changed, when
            its settings or inputs are not these.
        input_names: the content's and the styles' names for the user (file names), kept in checkpoints.
        regions: where each style goes and what stays a photo (``regions.Regions``); None: one style everywhere.
        compute: where and how to compute; None: as ``settings.device`` and
            ``settings.precision`` resolve (tests and benchmarks pass an
            emulated fp16, ``Compute.fp16_emulated``).
    """

    def __init__(
        self,
        content: Image.Image,
        styles: Sequence[Image.Image],
        settings: Settings,
        weights: NetworkWeights,
        *,
        cancel: CancelToken | None = None,
        preview_interval: float = 0.15,
        preview_max_side: int = 512,
        checkpoints: CheckpointStore | None = None,
        run_id: str | None = None,
        resume: Checkpoint | None = None,
        input_names: Sequence[str] = (),
        regions: Regions | None = None,
        compute: Compute | None = None,
    ) -> None:
        if not styles:
            raise StyleStudioError("at least one style image is needed")
        if regions:
            regions.check(len(styles))
        self.regions = regions or None
        self._pending_regions: Regions | None = None
        self._style_map_layer: str | None = None
        self._style_map: Tensor | None = None
        self.settings = settings.validate()
        settings.blend_weights(len(styles))  # raises on a count mismatch
        self.content_image = content.convert("RGB")
        self.style_images = tuple(s.convert("RGB") for s in styles)
        self.weights = weights
        self.cancel_token = cancel or CancelToken()
        self.preview_interval = preview_interval
        self.preview_max_side = preview_max_side
        self.compute = compute or resolve(settings.device, settings.precision)
        layers = list(settings.content_layers) + list(settings.active_style_layers)
        if layers:
            check_image_fits(self.content_image, settings.size, layers, "the content image")
            for number, style in enumerate(self.style_images, start=1):
                check_image_fits(style, settings.style_side(), layers, f"style image {number}")
        # Refused here, before anything is allocated, when the largest scale will not fit even in tiles.
        self.plan = plan_run(
            settings, self.content_image.size, [s.size for s in self.style_images], target_of(self.compute)
        ).check()
        self.sizes = self.plan.sizes
        self.iterations = self.plan.iterations
        self.tile = self.plan.tile
        self._pending: Settings | None = None
        self._lock = threading.Lock()
        self._control: StepControl | None = None
        self._optimizer_now: torch.optim.Optimizer | None = None  # the scale's, for its checkpoints
        self._kept: Tensor | None = None  # the result, on the CPU, after the device ran out of memory
        self._final_content: Tensor | None = None
        self.checkpoints = checkpoints
        self.resume = resume
        self.input_names = tuple(input_names) or ("content", *(f"style {n}" for n in range(1, len(styles) + 1)))
        self.run_id = resume.run_id if resume is not None else run_id or uuid.uuid4().hex
        self._hashes: tuple[str, tuple[str, ...]] | None = None
        if resume is not None:
            self._check_resume(resume)

    def _input_hashes(self) -> tuple[str, tuple[str, ...]]:
        if self._hashes is None:
            self._hashes = (image_hash(self.content_image), tuple(image_hash(s) for s in self.style_images))
        return self._hashes

    def _check_resume(self, checkpoint: Checkpoint) -> None:
        content, styles = self._input_hashes()
        changed = checkpoint.changes(
            self.settings, content, styles, self.regions, weights_identity(self.settings.weights)
        )
        if changed:
            raise StyleStudioError("the unfinished run cannot be resumed: " + "; ".join(changed))
        position = checkpoint.position
        if position.scale >= len(self.sizes) or position.iteration > self.iterations[position.scale]:
            raise StyleStudioError("the unfinished run cannot be resumed: it stopped past the end of its schedule")
        width, height = self.sizes[position.scale]
        if checkpoint.image.shape[-2:] != (height, width):
            raise StyleStudioError("the unfinished run cannot be resumed: its picture is not the size the run needs")

    def tiles_at(self, size: tuple[int, int]) -> int | None:
        """The tile core a scale of ``size`` is evaluated in; None when it is evaluated whole."""
        return self.plan.scales[self.sizes.index(size)].tile if size in self.sizes else self.tile

    def _objective(self, network: FeatureNetwork, inputs: ScaleInputs, settings: Settings) -> Objective:
        tile = self.tiles_at(inputs.size)
        if tile is None:
            return Objective(network, inputs, settings, self.compute)
        device = self.compute.device
        available = memory.available_bytes(device.type, free_device_memory(device))
        width, height = inputs.size
        keep = memory.kept_tiles(width, height, tile, self.compute.precision, available, settings.optimizer)
        return TiledObjective(network, inputs, settings, self.compute, tile, keep)

    # -- live changes -------------------------------------------------------

    def update_settings(self, settings: Settings) -> None:
        """Take new loss weights (``settings.LIVE_FIELDS``) at the next iteration; thread-safe.

        Other fields of ``settings`` are ignored until the next run.
        """
        settings.validate()
        settings.blend_weights(len(self.style_images))
        with self._lock:
            self._pending = settings

    def update_regions(self, regions: Regions | None) -> None:
        """Take new regions (painted during the run) at the next iteration; thread-safe.

        Raises:
            RegionError: the regions cannot be used (nothing is changed).
        """
        if regions:
            regions.check(len(self.style_images))
        with self._lock:
            self._pending_regions = regions or Regions.empty(*self.content_image.size)

    def set_style_map(self, layer: str | None) -> None:
        """Send a style map of ``layer`` with each preview from the next iteration on; None: none (thread-safe).

        Not made while a scale is evaluated in tiles.
        """
        self._style_map_layer = layer  # one reference, read once per iteration

    def _take_pending_regions(self) -> Regions | None:
        with self._lock:
            pending, self._pending_regions = self._pending_regions, None
        return pending

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
        kept = self._control.lowest if self._control is not None else self._kept
        if kept is None:
            return None
        return tensor_to_pil(self._final_rgb(kept))

    def result_array(self) -> np.ndarray | None:
        """``result`` as an (H, W, 3) float32 array in [0, 1], before rounding to 8 bits (for 16-bit files)."""
        kept = self._control.lowest if self._control is not None else self._kept
        if kept is None:
            return None
        rgb = self._final_rgb(kept).detach().float().clamp(0, 1)
        return rgb[0].permute(1, 2, 0).cpu().numpy()

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
            self._final_content = resized_tensor(self.content_image, self.sizes[-1]).to(device)
        return self._final_content

    def evaluate(self, image: Image.Image) -> dict[str, float]:
        """Loss terms of ``image`` at the requested size, as this run defines them.

        For comparing results (e.g. a bf16 run's result judged by an fp32
        objective). Returns {"total", "content", "tv", <style layer>: ...}.
        Not available with preserve_colors (the result is not what is optimised).
        """
        if self.settings.preserve_colors:
            raise StyleStudioError("evaluate() does not apply to preserve-colours runs")
        network = network_for(self.weights, self.compute)
        inputs = self._inputs(self.sizes[-1])
        with self._objective(network, inputs, self.settings) as objective, torch.no_grad():
            terms = objective.evaluate(resized_tensor(image, self.sizes[-1]).to(self.compute.device))
            losses = terms.losses(terms.total.new_zeros(()))
        return {"total": losses.total, "content": losses.content, "tv": losses.tv, **losses.style}

    # -- the run ----------------------------------------------------------------

    def run(self) -> Iterator[Progress]:
        """Optimise, yielding a Progress per iteration and a last one with ``done``.

        While it runs, the run's checkpoint is this process's (``CheckpointStore.claim``).

        Raises:
            StyleStudioError: bad input, or a device error the user can act on
                (e.g. out of memory). ``result`` keeps the best image so far.
            Busy: another process is running the same run (the same output on the command line).
        """
        if self.checkpoints is None:
            yield from self._run()
            return
        with self.checkpoints.claim(self.run_id):
            yield from self._run()

    def _run(self) -> Iterator[Progress]:
        self._started = time.perf_counter()
        self._work_done = 0.0
        self._last_preview = -math.inf
        self._last: Progress | None = None
        self._result_losses: Losses | None = None
        self._step = 0
        self._last_checkpoint = time.perf_counter()
        self._checkpoint_interval = checkpoints.interval()
        self._checkpoint_failed = False
        self._position: tuple[int, int, Tensor] | None = None  # scale, iteration done, image
        device = self.compute.device
        image: Tensor | None = None
        first_scale, done_before = 0, 0
        if self.resume is not None:
            position = self.resume.position
            first_scale, done_before, self._step = position.scale, position.iteration, position.step
            self._started -= position.elapsed
            self._work_done = sum(self._scale_work(index) for index in range(first_scale))
            self._work_done += done_before * self._iteration_work(first_scale)
        self._time_left = TimeLeft(sum(self._scale_work(index) for index in range(len(self.sizes))))
        out_of_memory: str | None = None
        try:
            network = network_for(self.weights, self.compute)
            with _device_flags(self.compute, self.settings.deterministic):
                for index, size in enumerate(self.sizes):
                    if index < first_scale:
                        continue
                    self.cancel_token.raise_if_cancelled()
                    inputs = self._inputs(size)
                    if image is None and self.resume is not None:
                        image = self.resume.image.to(device)
                    elif image is None:
                        image = self._initial_image(inputs)
                    else:
                        image = F.interpolate(image, size=(size[1], size[0]), mode="bicubic", align_corners=False)
                        image.clamp_(0, 1)
                    resumed = self.resume if index == first_scale else None
                    image = yield from self._optimise(index, image, inputs, network, resumed)
            yield self._end(FINISHED)
        except Cancelled:
            self._save_checkpoint()
            yield self._end(CANCELLED)
        except KeyboardInterrupt:
            self._save_checkpoint()  # Ctrl+C on the command line: nothing lost
            raise
        except (torch.OutOfMemoryError, RuntimeError) as exc:
            if not _is_out_of_memory(exc):
                raise
            out_of_memory = str(exc).splitlines()[0] if str(exc) else "out of memory"
        if out_of_memory is None:
            return
        # Out of the handler, so that its traceback no longer holds the image, the
        # optimiser's history and the graph: only then can their memory be freed.
        image = None
        self._keep_result_on_cpu()
        where = f"{self._last.width}×{self._last.height}" if self._last else "the requested size"
        raise ResourceError(
            f"the {device} device ran out of memory at {where} pixels ({out_of_memory}); "
            "lower the size or the number of style images, or use the CPU"
        )

    def _save_checkpoint(self) -> None:
        """Save where the run stands, if it has a store and has done an iteration; a failure is logged, not raised."""
        self._last_checkpoint = time.perf_counter()
        if self.checkpoints is None or self._position is None or self._control is None:
            return
        index, iteration, image = self._position
        content, styles = self._input_hashes()
        checkpoint = Checkpoint(
            run_id=self.run_id,
            settings=self.settings,
            content_hash=content,
            style_hashes=styles,
            names=self.input_names,
            position=Position(index, iteration, self._step, time.perf_counter() - self._started),
            state={"image": image.detach().float().cpu(), "lowest": self._control.lowest.float().cpu()},
            best=self._control.best,
            regions=self.regions.to_json() if self.regions else None,
            step_scale=self._optimizer_now.step_scale() if isinstance(self._optimizer_now, LBFGS) else None,
            weights=weights_identity(self.settings.weights),
        )
        try:
            self.checkpoints.save(checkpoint, (self.content_image, self.style_images))
        except OSError as exc:
            # Said once a run (a full disk fails every minute); the run itself goes on.
            report = log.debug if self._checkpoint_failed else log.error
            report(
                "could not save a checkpoint in %s (%s); the run goes on, but cannot be resumed from here",
                self.checkpoints.root,
                exc,
            )
            self._checkpoint_failed = True

    def _keep_result_on_cpu(self) -> None:
        """Move the lowest-loss image to the CPU and give the device's memory back."""
        if self._control is not None:
            self._kept = self._control.lowest.cpu()
        self._control = None
        self._optimizer_now = None
        self._position = None
        self._final_content = None
        gc.collect()
        _empty_device_cache(self.compute.device)

    def _inputs(self, size: tuple[int, int]) -> ScaleInputs:
        return ScaleInputs.prepare(
            self.content_image, self.style_images, size, self.settings, self.compute.device, self.regions
        )

    def _initial_image(self, inputs: ScaleInputs) -> Tensor:
        s = self.settings
        channels = 1 if s.preserve_colors else 3
        width, height = inputs.size
        if s.init == "noise":
            generator = torch.Generator().manual_seed(s.seed)
            return torch.rand(1, channels, height, width, generator=generator).to(self.compute.device)
        if s.init == "style":
            start = resized_tensor(self.style_images[0], (width, height)).to(self.compute.device)
            return color.luminance(start).clamp(0, 1) if s.preserve_colors else start
        return inputs.content.clone()

    def _optimizer(self, image: Tensor, lr: float, step_scale: float | None = None) -> torch.optim.Optimizer:
        """A new optimiser for ``image``; ``step_scale``: L-BFGS's curvature scale to begin from (a resume's)."""
        optimizer: torch.optim.Optimizer
        if self.settings.optimizer == "adam":
            optimizer = torch.optim.Adam([image], lr=lr)
        else:
            # One evaluation per step, history kept across steps, nothing read back from the device.
            history = memory.lbfgs_history(image[0, 0].numel(), image.shape[1])
            optimizer = LBFGS([image], lr=lr, history_size=history)
            if step_scale is not None:
                optimizer.start_from(step_scale)
        self._optimizer_now = optimizer
        return optimizer

    def _optimise(
        self,
        index: int,
        start: Tensor,
        inputs: ScaleInputs,
        network: FeatureNetwork,
        resumed: Checkpoint | None = None,
    ) -> Generator[Progress, None, Tensor]:
        """Optimise at one scale; returns the lowest-loss image (generator return value).

        The loss an iteration reports is that of the image before its step.
        ``resumed``: the checkpoint this scale goes on from (its iterations
        done, its lowest-loss image).
        """
        pending = self._take_pending()
        if pending is not None:
            self.settings = pending
        # The photo where the regions keep it: an upscaled coarse scale would blur it.
        start = inputs.regions.kept_photo(start.detach(), inputs.content)
        # L-BFGS flattens the gradient with view(-1): the image must be NCHW-contiguous.
        image = start.clone(memory_format=torch.contiguous_format).requires_grad_(True)
        control = self._control = StepControl(image, self.settings.optimizer, self.settings.effective_step)
        first = 1
        if resumed is not None:
            control.lowest, control.best = resumed.lowest.to(image.device), resumed.best
            first = resumed.position.iteration + 1
            if first > self.iterations[index]:
                return control.lowest
        optimizer = self._optimizer(image, control.step_size, resumed.step_scale if resumed is not None else None)
        keep_photo = _KeepPhoto(image, inputs.regions.keep)  # first: the norm sees the kept pixels left out
        gradient_norm = _GradientNorm(image)  # sees the scaled gradient
        scale = LossScale(self.compute.precision == "fp16")
        objective = self._objective(network, inputs, self.settings)
        watching: tuple[Objective, str | None] | None = None
        try:
            for iteration in range(first, self.iterations[index] + 1):
                self.cancel_token.raise_if_cancelled()
                changed = self._take_pending()
                if changed is not None:
                    objective, restart = self._apply(changed, objective, network, inputs)
                    control.new_objective()
                    if restart:
                        optimizer = self._optimizer(image, control.step_size)
                painted = self._take_pending_regions()
                if painted is not None:
                    self.regions = painted or None
                    inputs, objective = self._repaint(inputs, objective, network, image, keep_photo)
                    control.new_objective()
                    optimizer = self._optimizer(image, control.step_size)
                control.before_step(image)
                optimizer.zero_grad(set_to_none=False)
                wanted = self._style_map_layer
                if watching != (objective, wanted):
                    objective.watch(wanted)
                    watching = (objective, wanted)
                terms = yield from self._evaluate(objective.gradient(image, scale), index, iteration, inputs.size)
                self._style_map = objective.style_map() if wanted is not None else None
                if isinstance(optimizer, LBFGS):
                    # Its one evaluation per step is the one just made.
                    optimizer.step(functools.partial(_returning, terms.total))
                else:
                    optimizer.step()
                with torch.no_grad():
                    # A projected step: the loss reported is then that of the image the user
                    # gets. Left free, pixels drift outside [0, 1] and are clipped on export.
                    image.clamp_(0, 1)
                    if isinstance(optimizer, LBFGS):
                        _record_projected_step(optimizer, image, control.step_origin)
                losses = terms.losses(scale.unscaled(gradient_norm.value))
                finite = math.isfinite(losses.grad_norm)
                verdict = control.judge(losses.total, image, iteration, gradient_finite=finite)
                scale.update(finite)
                if verdict.blew_up or verdict.overflowed:
                    optimizer = self._optimizer(image, verdict.step_size)
                elif verdict.step_raised:
                    optimizer.param_groups[0]["lr"] = verdict.step_size  # in place: the history stays
                if verdict.improved:
                    self._result_losses = losses
                self._step += 1
                self._work_done += self._iteration_work(index)
                self._position = (index, iteration, image)
                if time.perf_counter() - self._last_checkpoint >= self._checkpoint_interval:
                    self._save_checkpoint()
                yield self._progress(
                    index,
                    iteration,
                    inputs.size,
                    losses,
                    event=verdict.event,
                    force_preview=iteration in (1, self.iterations[index]),
                )
            return control.lowest
        finally:
            gradient_norm.remove()
            keep_photo.remove()
            objective.close()

    def _repaint(
        self, inputs: ScaleInputs, objective: Objective, network: FeatureNetwork, image: Tensor, keep_photo: _KeepPhoto
    ) -> tuple[ScaleInputs, Objective]:
        """Take ``self.regions`` into a running scale: new groups, keep mask, and the photo put back where kept."""
        regions = ScaleRegions.prepare(self.regions, inputs.size, self.compute.device)
        inputs = dataclasses.replace(inputs, regions=regions)
        if not objective.regroup(regions, self.settings):
            objective.close()
            objective = self._objective(network, inputs, self.settings)
        keep_photo.take(regions.keep)
        with torch.no_grad():
            image.copy_(regions.kept_photo(image, inputs.content))
        return inputs, objective

    def _apply(
        self, settings: Settings, objective: Objective, network: FeatureNetwork, inputs: ScaleInputs
    ) -> tuple[Objective, bool]:
        """New loss weights; hooks and targets are rebuilt only when the style layers change.

        Returns the objective, and whether the optimiser must restart: a layer
        came or went, or a term's factor moved by more than RESTART_RATIO.
        """
        self.settings = settings
        if tuple(settings.active_style_layers) == objective.style_layers:
            return objective, objective.reweight(settings) > RESTART_RATIO
        objective.close()
        return self._objective(network, inputs, settings), True

    def _evaluate(
        self, evaluation: Generator[TileDone, None, Terms], index: int, iteration: int, size: tuple[int, int]
    ) -> Generator[Progress, None, Terms]:
        """Run an objective's evaluation, with a record after each part of a tiled one; the terms.

        Stop is checked after each part: a tiled iteration stops within one tile.
        """
        while True:
            try:
                part = next(evaluation)
            except StopIteration as finished:
                terms: Terms = finished.value
                return terms
            self.cancel_token.raise_if_cancelled()
            losses = self._last.losses if self._last is not None else NO_LOSSES
            yield self._progress(index, iteration, size, losses, part=(part.done, part.parts))

    # -- progress records ------------------------------------------------------------

    def _progress(
        self,
        index: int,
        iteration: int,
        size: tuple[int, int],
        losses: Losses,
        *,
        event: str | None = None,
        force_preview: bool = False,
        stop_reason: str | None = None,
        part: tuple[int, int] | None = None,
    ) -> Progress:
        """The one place a ``Progress`` is made; ``stop_reason`` makes it the run's last.

        ``part`` (done, parts) makes it a record from within an iteration.
        """
        now = time.perf_counter()
        done = stop_reason is not None
        preview = None
        due = done or force_preview or now - self._last_preview >= self.preview_interval
        style_map = None
        if self._control is not None and due and part is None:
            preview = self._preview(self._control.lowest)
            style_map = self._style_map_preview(preview.shape[:2])
            self._last_preview = now
        record = Progress(
            scale=index + 1,
            scales=len(self.sizes),
            iteration=iteration,
            iterations=self.iterations[index],
            step=self._step,
            steps=sum(self.iterations),
            width=size[0],
            height=size[1],
            total_loss=losses.total,
            content_loss=losses.content,
            style_losses=losses.style,
            tv_loss=losses.tv,
            grad_norm=losses.grad_norm,
            elapsed=now - self._started,
            eta=0.0 if done else self._eta(now, index, part),
            weights=self.weights.label,
            compute=self.compute.describe(),
            preview=preview,
            style_map=style_map,
            event=event,
            done=done,
            stop_reason=stop_reason,
            part=part[0] if part is not None else 0,
            parts=part[1] if part is not None else 0,
        )
        if not done and part is None:
            self._last = record
        return record

    def _eta(self, now: float, index: int, part: tuple[int, int] | None) -> float | None:
        work_done = self._work_done + (self._iteration_work(index) * part[0] / part[1] if part is not None else 0)
        return self._time_left(now, index, work_done)

    def _iteration_work(self, index: int) -> float:
        """An iteration's work at scale ``index``, for the ETA, as the window's expected time counts it."""
        return self.plan.scales[index].iteration_work

    def _scale_work(self, index: int) -> float:
        return self.iterations[index] * self._iteration_work(index)

    def _end(self, reason: str) -> Progress:
        """The last record: the result's losses (the lowest-loss image's), at the last position reached."""
        last = self._last
        if last is None:
            return self._progress(0, 0, self.sizes[0], NO_LOSSES, stop_reason=reason)
        losses = self._result_losses or last.losses
        return self._progress(last.scale - 1, last.iteration, (last.width, last.height), losses, stop_reason=reason)

    @torch.no_grad()
    def _style_map_preview(self, size: tuple[int, int]) -> np.ndarray | None:
        """The last style map at the preview's (height, width), scaled to [0, 1] by its largest value."""
        if self._style_map is None:
            return None
        values = F.interpolate(self._style_map[None, None], size=size, mode="bilinear", align_corners=False)[0, 0]
        top = float(values.max())
        if not math.isfinite(top) or top <= 0:
            return np.zeros(size, np.float32)
        result: np.ndarray = (values / top).clamp_(0, 1).cpu().numpy().astype(np.float32)
        return result

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


__all__ = ["NetworkWeights", "StyleTransfer", "network_for", "target_of"]
