"""The run: scales, live settings and the optimisation loop, as a generator of ``Progress``.

One loop, three consumers: the command line prints the records, the tests
assert on them, and the window's worker thread forwards them as signals::

    transfer = StyleTransfer(RunSpec(Pictures(content, (style,)), settings), weights, RunHooks(cancel=token))
    for progress in transfer.run():
        ...
    transfer.result  # PIL image at the requested size

The engine is built from what to make (``spec.RunSpec``) and how it is heard and steered (``spec.RunHooks``).
Where things happen: a scale's step (its closure, the optimiser's step, the verdict) in ``scale.ScaleRun``; the loss
in ``objective.Objective``; a step accepted or undone in ``steps.StepControl``; live changes taken through
``live.Steering`` and given time by ``plan.Schedule``; every ``Progress`` record, preview included, made in
``StyleTransfer._progress`` (``records.RunRecords``); checkpoints saved by ``saving.RunSaver``.

Each iteration is one forward and one backward pass of the truncated network
(L-BFGS runs with one function evaluation per step and keeps its history
across steps, so its iterations cost the same as Adam's).
"""

from __future__ import annotations

import dataclasses
import functools
import gc
import logging
import uuid
from collections.abc import Generator, Iterator, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image
from torch import Tensor

from ..errors import Cancelled, ResourceError, StyleStudioError
from ..io.tensors import resized_tensor, tensor_to_pil
from ..network.device import Compute, free_device_memory, resolve
from ..network.instant import TunedLook, instant_look
from ..network.layers import check_image_fits
from ..network.vgg import FeatureNetwork
from ..network.weights import NetworkWeights
from ..objective import color, palette
from ..objective.inputs import ScaleInputs
from ..objective.objective import Objective, initial_image, painted_look
from ..objective.regions import Regions
from ..objective.tiles import TiledObjective
from ..progress import CANCELLED, FINISHED, NO_LOSSES, Losses, Progress, RunEnd
from ..settings import Settings
from . import memory
from .cancel import CancelToken
from .checkpoints import Checkpoint, Position
from .compute import device_flags, empty_device_cache, is_out_of_memory, network_for, target_of
from .lbfgs import LBFGS
from .live import LiveChanges, Steering
from .plan import RunPlan, Schedule, plan_run
from .previews import RunPictures, preview_picture
from .records import RunRecords
from .saving import RunSaver
from .scale import AVERAGED_SHARE, ScaleRun, Standing
from .spec import RunHooks, RunSpec
from .steps import Settle
from .tuned_looks import obtain_look
from .tuning import TuningStep

log = logging.getLogger(__name__)

#: A live change (a slider moved, regions painted) has at least this many iterations at its scale to show in the
#: picture: one made near a scale's end moves the end on. Fewer left, and a late change barely shows (0.1 % of the
#: pixels changed with 10 iterations left at 256 px, against 21 % with 30; docs/performance.md).
LIVE_ITERATIONS = 30


class StyleTransfer:
    """A style-transfer run: built from what to make and how to hear and steer it, then iterate ``run()``.

    Args:
        spec: what to make: the pictures (photo, styles, their names, regions), the settings (validated here), a
            checkpoint to go on from (refused, with what changed, when its settings or inputs are not these), the
            run's checkpoint name, a video frame's guide (``temporal.FrameGuide``: its start, its temporal term, its
            extra style group) and the clip's style statistics.
        weights: what makes the network, e.g. ``weights.load_weights(...)``.
        hooks: how it is steered and heard: ``cancel`` stops it within one iteration (or one tile); ``live`` is its
            inbox for changes made while it goes on (None: one of its own, ``self.live``); ``checkpoints`` where its
            state is saved every ``checkpoints.interval()`` seconds and when it is stopped; ``previews`` how often
            and how large. ``report`` and ``started`` are its caller's (``jobs/picture.PictureRun``).
        compute: where and how to compute; None: as the settings' ``device`` and ``precision`` resolve (tests and
            benchmarks pass an emulated fp16, ``Compute.fp16_emulated``).
    """

    def __init__(
        self, spec: RunSpec, weights: NetworkWeights, hooks: RunHooks = RunHooks(), compute: Compute | None = None
    ) -> None:
        pictures = spec.pictures
        if not pictures.styles:
            raise StyleStudioError("at least one style image is needed")
        if pictures.regions:
            pictures.regions.check(len(pictures.styles))
        settings = spec.settings.validate()
        spec.settings.blend_weights(len(pictures.styles))  # raises on a count mismatch
        self.spec, self.weights, self.hooks = spec, weights, hooks
        self.content_image = pictures.content.convert("RGB")
        self.style_images = tuple(s.convert("RGB") for s in pictures.styles)
        self.compute = compute or resolve(settings.device, settings.precision)
        _check_fits(settings, self.content_image, self.style_images)
        # Refused here, before anything is allocated, when the largest scale will not fit even in tiles.
        plan = plan_run(settings, self.content_image.size, [s.size for s in self.style_images], target_of(self.compute))
        self.schedule = Schedule(plan.check())
        self.cancel_token = hooks.cancel or CancelToken()
        self.live = hooks.live or LiveChanges(settings, len(self.style_images), self.content_image.size)
        self.steering = Steering(self.live, settings, pictures.regions or None)
        previews = hooks.previews
        self.pictures = RunPictures(self.content_image, plan.sizes[-1], settings.preserve_colors, previews.max_side)
        self.standing = Standing()
        self._tuned: TunedLook | None = None
        self._painted_look: Image.Image | None = None
        resume = spec.resume
        self.run_id = resume.run_id if resume is not None else spec.run_id or uuid.uuid4().hex
        names = (pictures.content_name, *pictures.style_names)
        self._saver = RunSaver(hooks.checkpoints, self.run_id, self.content_image, self.style_images, names)
        if resume is not None:
            schedule = list(zip(plan.sizes, plan.iterations, strict=True))
            self._saver.check_resume(resume, settings, self.regions, schedule)

    @property
    def settings(self) -> Settings:
        """The settings as they stand (live changes included)."""
        return self.steering.settings

    @property
    def regions(self) -> Regions | None:
        """The regions as they stand (painting during the run included); None: one style everywhere."""
        return self.steering.regions

    @property
    def plan(self) -> RunPlan:
        """Its scales, tiles, memory and work (it grows when a live change is given time)."""
        return self.schedule.plan

    @property
    def sizes(self) -> list[tuple[int, int]]:
        return self.plan.sizes

    def tiles_at(self, size: tuple[int, int]) -> int | None:
        """The tile core a scale of ``size`` is evaluated in; None when it is evaluated whole."""
        return self.plan.scales[self.sizes.index(size)].tile if size in self.sizes else self.plan.tile

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
        kept = self.standing.picture
        return None if kept is None else tensor_to_pil(self.pictures.result(kept))

    def result_array(self) -> np.ndarray | None:
        """``result`` as an (H, W, 3) float32 array in [0, 1], before rounding to 8 bits (for 16-bit files)."""
        kept = self.standing.picture
        if kept is None:
            return None
        rgb = self.pictures.result(kept).detach().float().clamp(0, 1)
        return rgb[0].permute(1, 2, 0).cpu().numpy()

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
        if self.hooks.checkpoints is None:
            yield from self._run()
            return
        with self.hooks.checkpoints.claim(self.run_id):
            yield from self._run()

    def _run(self) -> Iterator[Progress]:
        """The run's records from start to end, and how it ends: finished, stopped, or out of memory."""
        resume = self.spec.resume
        position = resume.position if resume is not None else None
        self._records = RunRecords(
            self.plan, self.weights.label, self.compute.describe(), self.hooks.previews.interval, position
        )
        self._saver.started()
        self.standing.position = None
        out_of_memory: str | None = None
        try:
            yield from self._scales()
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
        if out_of_memory is not None:
            # Out of the handler, so that its traceback no longer holds the image, the
            # optimiser's history and the graph: only then can their memory be freed.
            self._keep_result_on_cpu()
            raise self._out_of_memory(out_of_memory)

    def _scales(self) -> Iterator[Progress]:
        """Each scale from the first (a resumed run's: where it stood), coarse to fine, its picture the last one's
        enlarged; the start picture's record before the first."""
        resume = self.spec.resume
        first = resume.position.scale if resume is not None else 0
        # No network for a run that neither optimises nor tunes: its picture is the start picture (the instant look,
        # or the tuned look it was given).
        settings, given = self.settings, self.spec.look
        tunes = settings.tunes and resume is None and self.spec.frame is None
        needed = settings.optimises or (tunes and given is None)
        network = network_for(self.weights, self.compute) if needed else None
        image: Tensor | None = None
        with device_flags(self.compute, settings.deterministic):
            if tunes:
                self._tuned = given if given is not None else (yield from self._tune(network))
            for index, size in enumerate(self.sizes):
                if index < first:
                    continue
                self.cancel_token.raise_if_cancelled()
                inputs = self._inputs(size)
                image = self._start_picture(image, inputs)
                if index == first and resume is None:
                    yield self._start_record(index, size, image)
                if network is None or not settings.optimises:
                    self.standing.kept = image.detach()
                    continue
                resumed = resume if index == first else None
                image = yield from self._optimise(index, image, inputs, network, resumed)

    def _start_picture(self, last: Tensor | None, inputs: ScaleInputs) -> Tensor:
        """A scale's start: the last scale's picture enlarged; the first's the checkpoint's, the frame's own
        start, or as the settings' ``init`` says."""
        device, (width, height) = self.compute.device, inputs.size
        if last is not None:
            enlarged = F.interpolate(last, size=(height, width), mode="bicubic", align_corners=False).clamp_(0, 1)
            strokes = self.pictures.look
            if strokes is None:
                return enlarged
            # A run from a look: the look's strokes at this size over the last scale's masses, not a blur.
            detail = F.interpolate(strokes, size=(height, width), mode="bilinear", antialias=True, align_corners=False)
            return color.composed(detail, enlarged)
        if self.spec.resume is not None:
            return self.spec.resume.image.to(device)
        if self.spec.frame is not None:
            return self.spec.frame.start_tensor(inputs.size, device, self.settings.preserve_colors)
        return initial_image(self.settings, inputs, self.content_image, self.style_images, self._look())

    def _look(self) -> Image.Image | None:
        """The look the run starts from (its ``init`` instant or tuned), painted once; None for another start."""
        settings = self.settings
        if settings.init not in ("instant", "tuned"):
            return None
        if self._painted_look is None:
            device = self.compute.device
            self._painted_look = painted_look(settings, self.content_image, self.style_images, device, self._tuned)
        return self._painted_look

    def _tune(self, network: FeatureNetwork | None) -> Generator[Progress, None, TunedLook]:
        """The look tuned to the painting (``tuned_looks.obtain_look``): the kept one, or tuned on the photo now,
        with a record saying so, then about one a preview interval showing the look so far."""
        assert network is not None
        told: list[str] = []
        settings, size = self.settings, self.sizes[-1]
        steps = obtain_look(network, (self.content_image,), self.style_images, settings, self.compute,
                            self.weights.label, cancel=self.cancel_token, tell=told.append)  # fmt: skip
        side = min(max(size), self.hooks.previews.max_side)
        first = True
        while True:
            try:
                step = next(steps)
            except StopIteration as end:
                look: TunedLook = end.value
                break
            # What was told (a kept look set aside) comes before the step, and does not replace its word.
            said = [*told, _tuning_said(step)] if first else [*told]
            first = False
            event = "; ".join(said) or None
            told.clear()
            if event is not None or step.step == step.steps or self._records.preview_due(False):
                preview = self._look_preview(step.look(), side)
                yield self._records.record(0, 0, size, NO_LOSSES, pictures=(preview, None), event=event)
        for event in told:
            yield self._records.record(0, 0, size, NO_LOSSES, event=event)
        return look

    def _look_preview(self, look: TunedLook, side: int) -> np.ndarray:
        device = self.compute.device
        painted = instant_look(str(device)).paint(self.content_image, look.vector.to(device), side, look.on(device))
        picture = resized_tensor(painted, painted.size).to(device)
        if self.settings.preserve_colors:  # shown as the run will make it: its light, the photo's colours
            picture = color.luminance(picture).clamp(0, 1)
        return self.pictures.preview(picture)

    def _inputs(self, size: tuple[int, int]) -> ScaleInputs:
        device, frame, preserve_colors = self.compute.device, self.spec.frame, self.settings.preserve_colors
        inputs = ScaleInputs.prepare(self.content_image, self.style_images, size, self.settings, device, self.regions)
        temporal = frame.target(size, device, preserve_colors) if frame else None
        repair = frame.repair_group(size, device) if frame else None
        if repair is not None:
            inputs = dataclasses.replace(inputs, regions=inputs.regions.with_group(repair))
        return dataclasses.replace(inputs, temporal=temporal, known_styles=self.spec.known_styles)

    def _optimise(
        self, index: int, start: Tensor, inputs: ScaleInputs, network: FeatureNetwork, resumed: Checkpoint | None
    ) -> Generator[Progress, None, Tensor]:
        """Optimise at one scale; returns the picture it keeps (generator return value).

        ``resumed``: the checkpoint this scale goes on from (its iterations done, its lowest-loss image).
        """
        self.steering.reweighed()  # weights changed between scales: the new scale's own, nothing to rebuild
        objectives = functools.partial(self._objective, network)
        planned = self.plan.iterations[index]
        scale = ScaleRun(start, inputs, self.settings, objectives, planned, self.compute, self.standing, resumed)
        if scale.first > planned:
            return scale.control.kept
        frame = self.spec.frame
        settle = Settle(frame.settle) if frame is not None and frame.settle > 0 else None
        with scale.begin(self.settings):
            iteration = scale.first - 1
            # The end can move on: a live change is given time, one made as the last scale ends too.
            while self.schedule.goes_on(index, iteration, self.live.waiting):
                iteration += 1
                yield from self._iterate(scale, index, iteration)
                if settle is not None and settle.settled(scale.control.best):
                    break  # a frame that started close to its end: its loss no longer falls
        return scale.control.kept

    def _iterate(self, scale: ScaleRun, index: int, iteration: int) -> Iterator[Progress]:
        """One iteration: the changes made while the last ran, the closure handed to the optimiser's step, the
        verdict on it, its record. The loss it reports is that of the image before its step."""
        self.cancel_token.raise_if_cancelled()
        if scale.take(self.steering) and self.schedule.give_time(index, iteration, LIVE_ITERATIONS):
            self._records.replan(self.plan)  # the records count and foresee the iterations added
        size, layer = scale.inputs.size, self.live.style_map_layer
        evaluation = scale.evaluation(layer)  # the gradient zeroed; the loss and its gradient, a part at a time
        for part in evaluation:  # a tiled one's: a record after each tile, a stop within one
            self.cancel_token.raise_if_cancelled()
            yield self._progress(index, iteration, size, self._records.last_losses(), part=(part.done, part.parts))
        self.pictures.style_map = scale.objective.style_map() if layer is not None else None
        scale.step(evaluation.closure)  # L-BFGS's one evaluation is the one just made
        losses = scale.losses(evaluation.terms)
        verdict = scale.judge(losses, iteration)
        if verdict.improved:
            self._records.result_losses = losses
        self._iteration_done(index, iteration, scale.image)
        # A new scale's first picture, and each scale's last, are previewed (the first scale's start has its own).
        force = (iteration == 1 and index > 0) or iteration == self.plan.iterations[index]
        yield self._progress(index, iteration, size, losses, event=verdict.event, force_preview=force)

    def _iteration_done(self, index: int, iteration: int, image: Tensor) -> None:
        """Count the iteration and keep where the run stands, saved when a checkpoint is due."""
        self._records.iteration_done(index)
        self.standing.position = (index, iteration, image)
        if self._saver.due:
            self._save_checkpoint()

    def _save_checkpoint(self) -> None:
        """Save where the run stands, once it has done an iteration (``RunSaver.save``)."""
        standing = self.standing
        if standing.position is None or standing.control is None:
            return
        index, iteration, image = standing.position
        lbfgs = standing.optimizer if isinstance(standing.optimizer, LBFGS) else None
        self._saver.save(
            self.settings, Position(index, iteration, self._records.step, self._records.elapsed), image,
            standing.control.lowest, standing.control.best, self.regions, lbfgs.step_scale() if lbfgs else None,
        )  # fmt: skip

    def _keep_result_on_cpu(self) -> None:
        """Move the lowest-loss image to the CPU and give the device's memory back."""
        self.standing.keep_on_cpu()
        self.pictures.forget()
        gc.collect()
        empty_device_cache(self.compute.device)

    def _out_of_memory(self, why: str) -> ResourceError:
        last = self._records.last
        where = f"{last.width}×{last.height}" if last else "the requested size"
        return ResourceError(
            f"the {self.compute.device} device ran out of memory at {where} pixels ({why}); "
            "lower the size or the number of style images, or use the CPU"
        )

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
        kept = self.standing.picture
        if kept is not None and due and part is None:
            pictures = self.pictures.with_style_map(kept)
        return self._records.record(
            index, iteration, size, losses, pictures=pictures, event=event, stop_reason=stop_reason, part=part
        )

    def _start_record(self, index: int, size: tuple[int, int], image: Tensor) -> Progress:
        """The record of the picture the run starts from (iteration 0), with it as its preview: the first look.

        A run from a look (``init`` instant or tuned) that optimises shows the look itself at the run's size, as
        the window showed it before Start; each later scale starts from, and an earlier one is previewed with,
        the look's strokes over it (``RunPictures.look``).
        """
        look = self._look()
        if look is None or not self.settings.optimises:
            return self._records.record(index, 0, size, NO_LOSSES, pictures=(self.pictures.preview(image), None))
        painted = resized_tensor(look, self.sizes[-1]).to(self.compute.device)
        preview = preview_picture(painted, self.pictures.max_side, None)
        if not self.settings.preserve_colors:
            weights = self.settings.blend_weights(len(self.style_images))
            inputs = self._inputs(self.sizes[-1])
            if self.settings.init == "tuned":
                strokes = painted
            else:
                strokes = palette.recoloured(painted, inputs.styles, weights, inputs.regions.groups)
            self.pictures.look = strokes
        return self._records.record(index, 0, size, NO_LOSSES, pictures=(preview, None))

    def _end(self, reason: RunEnd) -> Progress:
        """The last record: the result's losses (the lowest-loss image's), at the last position reached."""
        last = self._records.last
        if last is None:
            return self._progress(0, 0, self.sizes[0], NO_LOSSES, stop_reason=reason)
        losses = self._records.result_losses or last.losses
        return self._progress(last.scale - 1, last.iteration, (last.width, last.height), losses, stop_reason=reason)


def _tuning_said(step: TuningStep) -> str:
    """What a run says at its first tuning step: from the start, or going on from the steps a stopped run kept."""
    done = step.step - 1
    going_on = f", going on from step {done}" if done else ""
    return f"tuning the look to the painting ({step.steps} steps{going_on}; kept for the next photo in this painting)"


def _check_fits(settings: Settings, content: Image.Image, styles: Sequence[Image.Image]) -> None:
    """StyleStudioError when a picture is too small for the layers the settings read."""
    layers = list(settings.content_layers) + list(settings.active_style_layers)
    if layers:
        check_image_fits(content, settings.size, layers, "the content image")
        for number, style in enumerate(styles, start=1):
            check_image_fits(style, settings.style_side(), layers, f"style image {number}")


__all__ = ["AVERAGED_SHARE", "LIVE_ITERATIONS", "StyleTransfer"]
