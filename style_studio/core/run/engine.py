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

import dataclasses
import functools
import gc
import logging
import math
import uuid
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image
from torch import Tensor

from ..errors import Cancelled, ResourceError, StyleStudioError
from ..io.tensors import resized_tensor, tensor_to_pil
from ..network.device import Compute, free_device_memory, resolve
from ..network.layers import check_image_fits
from ..network.vgg import FeatureNetwork
from ..network.weights import NetworkWeights
from ..objective.guided import ScaleRegions
from ..objective.loss_scale import LossScale
from ..objective.objective import Objective, ScaleInputs, StyleCache, Terms, TileDone, initial_image
from ..objective.regions import Regions
from ..objective.temporal import FrameGuide
from ..objective.tiles import TiledObjective
from ..progress import CANCELLED, FINISHED, NO_LOSSES, Losses, Progress, RunEnd
from ..settings import Settings
from . import memory, previews
from .cancel import CancelToken
from .checkpoints import Checkpoint, CheckpointStore, Position
from .compute import device_flags, empty_device_cache, is_out_of_memory, network_for, target_of
from .image_hooks import GradientNorm, KeepPhoto, record_projected_step, returning
from .lbfgs import LBFGS, new_optimizer
from .live import LiveChanges, repainted, reweighted
from .plan import plan_run
from .records import RunRecords
from .saving import RunSaver
from .steps import Settle, StepControl

log = logging.getLogger(__name__)

#: With ``Settings.average``, a scale's picture is the average of about its last 1/AVERAGED_SHARE iterations.
AVERAGED_SHARE = 5
#: A live change (a slider moved, regions painted) has at least this many iterations at its scale to show in the
#: picture: one made near a scale's end moves the end on. Fewer left, and a late change barely shows (0.1 % of the
#: pixels changed with 10 iterations left at 256 px, against 21 % with 30; docs/performance.md).
LIVE_ITERATIONS = 30


@dataclass
class _Scale:
    """One scale's optimisation as it stands between iterations: what live changes and step verdicts replace."""

    image: Tensor
    inputs: ScaleInputs
    network: FeatureNetwork
    objective: Objective
    optimizer: torch.optim.Optimizer
    control: StepControl
    keep_photo: KeepPhoto
    loss_scale: LossScale
    #: The objective and layer the style map was last asked of (asked again when either changes).
    watching: tuple[Objective, str | None] | None = None


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
        frame: in a clip, what this frame takes from the previous one (``temporal.FrameGuide``); None: a picture.
        known_styles: the style images' statistics, kept between the frames of a clip.
        live: the run's inbox for changes made while it goes on (weights, regions, the style map's layer), which
            the caller may make first and post to from any thread; None: one of its own (``self.live``).
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
        frame: FrameGuide | None = None,
        known_styles: StyleCache | None = None,
        live: LiveChanges | None = None,
    ) -> None:
        if not styles:
            raise StyleStudioError("at least one style image is needed")
        if regions:
            regions.check(len(styles))
        self.regions = regions or None
        self.frame, self.known_styles = frame, known_styles
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
        self.live = live or LiveChanges(self.settings, len(self.style_images), self.content_image.size)
        self._control: StepControl | None = None
        self._optimizer_now: torch.optim.Optimizer | None = None  # the scale's, for its checkpoints
        #: The result outside an optimisation: the start picture of a run that optimises nothing, or the result
        #: kept on the CPU after the device ran out of memory.
        self._kept: Tensor | None = None
        self._final_content: Tensor | None = None
        self.checkpoints = checkpoints
        self.resume = resume
        self.input_names = tuple(input_names) or ("content", *(f"style {n}" for n in range(1, len(styles) + 1)))
        self.run_id = resume.run_id if resume is not None else run_id or uuid.uuid4().hex
        self._saver = RunSaver(checkpoints, self.run_id, self.content_image, self.style_images, self.input_names)
        if resume is not None:
            schedule = list(zip(self.sizes, self.iterations, strict=True))
            self._saver.check_resume(resume, self.settings, self.regions, schedule)

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

    # -- result ---------------------------------------------------------------

    @property
    def result(self) -> Image.Image | None:
        """The lowest-loss image so far at the requested size (None before the first iteration).

        Lowest at the current scale, and since the last live change of weights:
        losses under other weights do not compare.
        """
        kept = self._control.kept if self._control is not None else self._kept
        if kept is None:
            return None
        return tensor_to_pil(self._final_rgb(kept))

    def result_array(self) -> np.ndarray | None:
        """``result`` as an (H, W, 3) float32 array in [0, 1], before rounding to 8 bits (for 16-bit files)."""
        kept = self._control.kept if self._control is not None else self._kept
        if kept is None:
            return None
        rgb = self._final_rgb(kept).detach().float().clamp(0, 1)
        return rgb[0].permute(1, 2, 0).cpu().numpy()

    def _final_rgb(self, image: Tensor) -> Tensor:
        chroma = self._chroma_source(image.device) if self.settings.preserve_colors else None
        return previews.final_picture(image, self.sizes[-1], chroma)

    def _chroma_source(self, device: torch.device) -> Tensor:
        """The content image at the requested size, resized once: the chroma of every preview and result."""
        if self._final_content is None:
            self._final_content = resized_tensor(self.content_image, self.sizes[-1]).to(device)
        return self._final_content

    def evaluate(self, image: Image.Image) -> dict[str, float]:
        """Loss terms of ``image`` at the requested size, as this run defines them.

        For comparing results (e.g. a bf16 run's result judged by an fp32
        objective). Returns {"total", "content", "tv", <style layer>: ...} (and any other term, by name).
        Not available with preserve_colors (the result is not what is optimised).
        """
        if self.settings.preserve_colors:
            raise StyleStudioError("evaluate() does not apply to preserve-colours runs")
        network = network_for(self.weights, self.compute)
        inputs = self._inputs(self.sizes[-1])
        with self._objective(network, inputs, self.settings) as objective, torch.no_grad():
            terms = objective.evaluate(resized_tensor(image, self.sizes[-1]).to(self.compute.device))
            losses = terms.losses(terms.total.new_zeros(()))
        return {"total": losses.total, **losses.terms, **losses.style}

    # -- the run ----------------------------------------------------------------

    def run(self) -> Generator[Progress, None, None]:
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
        # The run-time state, set up here: records and their counts, the checkpoints' pace, where the run stands.
        position = self.resume.position if self.resume is not None else None
        self._records = RunRecords(
            self.plan, self.weights.label, self.compute.describe(), self.preview_interval, position
        )
        self._saver.started()
        self._position: tuple[int, int, Tensor] | None = None  # scale, iteration done, image
        device = self.compute.device
        image: Tensor | None = None
        first_scale = position.scale if position is not None else 0
        out_of_memory: str | None = None
        try:
            # No network for a run that optimises nothing: its picture is the start picture (the instant look alone).
            network = network_for(self.weights, self.compute) if self.settings.optimises else None
            with device_flags(self.compute, self.settings.deterministic):
                for index, size in enumerate(self.sizes):
                    if index < first_scale:
                        continue
                    self.cancel_token.raise_if_cancelled()
                    inputs = self._inputs(size)
                    if image is None and self.resume is not None:
                        image = self.resume.image.to(device)
                    elif image is None and self.frame is not None:
                        image = self.frame.start_tensor(size, device, self.settings.preserve_colors)
                    elif image is None:
                        image = initial_image(self.settings, inputs, self.content_image, self.style_images)
                    else:
                        image = F.interpolate(image, size=(size[1], size[0]), mode="bicubic", align_corners=False)
                        image.clamp_(0, 1)
                    if index == first_scale and self.resume is None:
                        yield self._start_record(index, size, image)
                    if network is None:
                        self._kept = image.detach()
                        continue
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
            if not is_out_of_memory(exc):
                raise
            out_of_memory = str(exc).splitlines()[0] if str(exc) else "out of memory"
        if out_of_memory is None:
            return
        # Out of the handler, so that its traceback no longer holds the image, the
        # optimiser's history and the graph: only then can their memory be freed.
        image = None
        self._keep_result_on_cpu()
        last = self._records.last
        where = f"{last.width}×{last.height}" if last else "the requested size"
        raise ResourceError(
            f"the {device} device ran out of memory at {where} pixels ({out_of_memory}); "
            "lower the size or the number of style images, or use the CPU"
        )

    def _save_checkpoint(self) -> None:
        """Save where the run stands, once it has done an iteration (``RunSaver.save``)."""
        if self._position is None or self._control is None:
            return
        index, iteration, image = self._position
        lbfgs = self._optimizer_now if isinstance(self._optimizer_now, LBFGS) else None
        self._saver.save(
            self.settings, Position(index, iteration, self._records.step, self._records.elapsed), image,
            self._control.lowest, self._control.best, self.regions, lbfgs.step_scale() if lbfgs else None,
        )  # fmt: skip

    def _keep_result_on_cpu(self) -> None:
        """Move the lowest-loss image to the CPU and give the device's memory back."""
        if self._control is not None:
            self._kept = self._control.kept.cpu()
        self._control = None
        self._optimizer_now = None
        self._position = None
        self._final_content = None
        gc.collect()
        empty_device_cache(self.compute.device)

    def _inputs(self, size: tuple[int, int]) -> ScaleInputs:
        inputs = ScaleInputs.prepare(
            self.content_image, self.style_images, size, self.settings, self.compute.device, self.regions
        )
        temporal = self.frame.target(size, self.compute.device, self.settings.preserve_colors) if self.frame else None
        repair = self.frame.repair_group(size, self.compute.device) if self.frame else None
        if repair is not None:
            inputs = dataclasses.replace(inputs, regions=inputs.regions.with_group(repair))
        return dataclasses.replace(inputs, temporal=temporal, known_styles=self.known_styles)

    def _optimizer(self, image: Tensor, lr: float, step_scale: float | None = None) -> torch.optim.Optimizer:
        self._optimizer_now = optimizer = new_optimizer(self.settings.optimizer, image, lr, step_scale)
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

        Each iteration takes the changes made while it ran, steps, judges the step and records it; the loss it
        reports is that of the image before its step. ``resumed``: the checkpoint this scale goes on from (its
        iterations done, its lowest-loss image).
        """
        pending = self.live.take_settings(self.settings)
        if pending is not None:
            self.settings = pending
        # The photo where the regions keep it: an upscaled coarse scale would blur it.
        start = inputs.regions.kept_photo(start.detach(), inputs.content)
        # L-BFGS flattens the gradient with view(-1): the image must be NCHW-contiguous.
        image = start.clone(memory_format=torch.contiguous_format).requires_grad_(True)
        average_over = max(2, self.iterations[index] // AVERAGED_SHARE) if self.settings.average else 0
        control = self._control = StepControl(
            image, self.settings.optimizer, self.settings.effective_step, average_over
        )
        first = 1
        if resumed is not None:
            control.resume(resumed.lowest.to(image.device), resumed.best)
            first = resumed.position.iteration + 1
            if first > self.iterations[index]:
                return control.kept
        optimizer = self._optimizer(image, control.step_size, resumed.step_scale if resumed is not None else None)
        keep_photo = KeepPhoto(image, inputs.regions.keep)  # first: the norm sees the kept pixels left out
        gradient_norm = GradientNorm(image)  # sees the scaled gradient
        scale = _Scale(image, inputs, network, self._objective(network, inputs, self.settings), optimizer, control,
                       keep_photo, LossScale(self.compute.precision == "fp16"))  # fmt: skip
        settle = Settle(self.frame.settle) if self.frame is not None and self.frame.settle > 0 else None
        try:
            iteration, last_scale = first - 1, index == len(self.sizes) - 1
            # The end can move on: a live change is given time, one made as the last scale ends too.
            while iteration < self.iterations[index] or (last_scale and self.live.waiting):
                iteration += 1
                self.cancel_token.raise_if_cancelled()
                if self._take_live_changes(scale):
                    self._give_time(index, iteration)
                terms = yield from self._step(scale, index, iteration)
                losses = terms.losses(scale.loss_scale.unscaled(gradient_norm.value))
                event = self._judge(scale, losses, iteration)
                self._iteration_done(index, iteration, image)
                # A new scale's first picture, and each scale's last, are previewed (the first scale's start has its
                # own record).
                last = iteration == self.iterations[index]
                yield self._progress(index, iteration, scale.inputs.size, losses, event=event,
                                     force_preview=(iteration == 1 and index > 0) or last)  # fmt: skip
                if settle is not None and settle.settled(control.best):
                    break  # a frame that started close to its end: its loss no longer falls
            return control.kept
        finally:
            gradient_norm.remove()
            keep_photo.remove()
            scale.objective.close()

    def _take_live_changes(self, scale: _Scale) -> bool:
        """The loss weights and the regions changed since the last iteration: the objective is made again for them,
        and the optimiser with it where its history no longer describes the loss. Whether anything changed."""
        changed = self.live.take_settings(self.settings)
        if changed is not None:
            self.settings = changed
            rebuilt = functools.partial(self._objective, scale.network, scale.inputs, changed)
            scale.objective, restart = reweighted(scale.objective, changed, rebuilt)
            scale.control.new_objective()
            if restart:
                scale.optimizer = self._optimizer(scale.image, scale.control.step_size)
        painted = self.live.take_regions()
        if painted is not None:
            self.regions = painted or None
            regions = ScaleRegions.prepare(self.regions, scale.inputs.size, self.compute.device)
            scale.inputs = dataclasses.replace(scale.inputs, regions=regions)
            rebuilt = functools.partial(self._objective, scale.network, scale.inputs, self.settings)
            scale.objective = repainted(scale.objective, regions, self.settings, rebuilt)
            scale.keep_photo.take(regions.keep)
            with torch.no_grad():
                scale.image.copy_(regions.kept_photo(scale.image, scale.inputs.content))
            scale.control.new_objective()
            scale.optimizer = self._optimizer(scale.image, scale.control.step_size)
        return changed is not None or painted is not None

    def _give_time(self, index: int, iteration: int) -> None:
        """A change made near a scale's end gets ``LIVE_ITERATIONS`` to show: the scale's end moves on, and the
        records count and foresee the iterations added."""
        wanting = iteration - 1 + LIVE_ITERATIONS - self.iterations[index]
        if wanting > 0:
            self.plan = self.plan.extended(index, wanting)
            self.iterations = self.plan.iterations
            self._records.replan(self.plan)

    def _step(self, scale: _Scale, index: int, iteration: int) -> Generator[Progress, None, Terms]:
        """One step: the loss and its gradient (a record after each tile of a tiled one), the optimiser's step from
        them, and the picture projected back into [0, 1]; the terms evaluated."""
        image, optimizer = scale.image, scale.optimizer
        scale.control.before_step(image)
        optimizer.zero_grad(set_to_none=False)
        wanted = self.live.style_map_layer
        if scale.watching != (scale.objective, wanted):
            scale.objective.watch(wanted)
            scale.watching = (scale.objective, wanted)
        evaluation = scale.objective.gradient(image, scale.loss_scale)
        terms = yield from self._evaluate(evaluation, index, iteration, scale.inputs.size)
        self._style_map = scale.objective.style_map() if wanted is not None else None
        if isinstance(optimizer, LBFGS):
            optimizer.step(functools.partial(returning, terms.total))  # its one evaluation is the one just made
        else:
            optimizer.step()
        with torch.no_grad():
            # A projected step: the loss reported is then that of the image the user gets. Left free, pixels drift
            # outside [0, 1] and are clipped on export.
            image.clamp_(0, 1)
            if isinstance(optimizer, LBFGS):
                record_projected_step(optimizer, image, scale.control.step_origin)
        return terms

    def _judge(self, scale: _Scale, losses: Losses, iteration: int) -> str | None:
        """Step control's verdict on the step: the optimiser made again after a blow-up or an overflow, its step
        raised after good ones, the result's losses kept when the picture improved; the event to tell, if any."""
        finite = math.isfinite(losses.grad_norm)
        verdict = scale.control.judge(losses.total, scale.image, iteration, gradient_finite=finite)
        scale.loss_scale.update(finite)
        if verdict.blew_up or verdict.overflowed:
            scale.optimizer = self._optimizer(scale.image, verdict.step_size)
        elif verdict.step_raised:
            scale.optimizer.param_groups[0]["lr"] = verdict.step_size  # in place: the history stays
        if verdict.improved:
            self._records.result_losses = losses
        return verdict.event

    def _iteration_done(self, index: int, iteration: int, image: Tensor) -> None:
        """Count the iteration and keep where the run stands, saved when a checkpoint is due."""
        self._records.iteration_done(index)
        self._position = (index, iteration, image)
        if self._saver.due:
            self._save_checkpoint()

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
            yield self._progress(index, iteration, size, self._records.last_losses(), part=(part.done, part.parts))

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
        stop_reason: RunEnd | None = None,
        part: tuple[int, int] | None = None,
    ) -> Progress:
        """A record (``RunRecords.record``), with a preview and the style map when one is due."""
        pictures = None
        due = self._records.preview_due(force_preview or stop_reason is not None)
        kept = self._control.kept if self._control is not None else self._kept
        if kept is not None and due and part is None:
            preview = self._preview(kept)
            pictures = (preview, self._style_map_preview(preview.shape[:2]))
        return self._records.record(
            index, iteration, size, losses, pictures=pictures, event=event, stop_reason=stop_reason, part=part
        )

    def _start_record(self, index: int, size: tuple[int, int], image: Tensor) -> Progress:
        """The record of the picture the run starts from (iteration 0), with it as its preview: the first look."""
        preview = self._preview(image)
        return self._records.record(index, 0, size, NO_LOSSES, pictures=(preview, None))

    def _end(self, reason: RunEnd) -> Progress:
        """The last record: the result's losses (the lowest-loss image's), at the last position reached."""
        last = self._records.last
        if last is None:
            return self._progress(0, 0, self.sizes[0], NO_LOSSES, stop_reason=reason)
        losses = self._records.result_losses or last.losses
        return self._progress(last.scale - 1, last.iteration, (last.width, last.height), losses, stop_reason=reason)

    def _style_map_preview(self, size: tuple[int, int]) -> np.ndarray | None:
        return None if self._style_map is None else previews.style_map_picture(self._style_map, size)

    def _preview(self, image: Tensor) -> np.ndarray:
        chroma = self._chroma_source(image.device) if self.settings.preserve_colors else None
        return previews.preview_picture(image, self.preview_max_side, chroma)


__all__ = ["StyleTransfer"]
