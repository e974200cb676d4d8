"""A clip's frames styled in order, each from the last: what one pass through a clip (or a part of it) keeps.

Frame t starts from stylised frame t-1 carried along the optical flow, and a
temporal term keeps it there where the flow is reliable (``temporal``); a
cut starts a frame fresh, as the first. A fresh frame is styled from the
style images; the frames after it take its look (``Look``), so the clip keeps
one look from its first frame to its last. A pass that begins inside a clip
(a chunk rendered on another machine) begins under the clip's look, given.

With the tuned look alone (``--preset tuned``: nothing optimised), the look, tuned once for the clip on its
frames and handed to every frame's run, paints each frame at once, and the frame is blended with the last one
along the flow where it is reliable (``temporal.blend_along_flow``): the clip goes at the network's pace, without
most of its flicker. The instant look alone (``--preset instant``) stays a draft: each frame as it painted it.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np
from PIL import Image

from .. import settings as settings_mod
from .picture import Pictures, Previews, RunHooks, RunSpec, _run_picture

if TYPE_CHECKING:
    from ..network.instant import TunedLook
    from ..network.weights import NetworkWeights
    from ..objective.temporal import FlowEstimator, FrameGuide
    from ..progress import Progress
    from ..run.cancel import CancelToken
    from .job import VideoOptions


#: Under a look, the style pictures' share of a frame's style (the look has the rest).
PAINTING_SHARE = 0.85


class Look:
    """The look a clip's frames keep: a fresh frame's styled picture, blended into the style of every frame after it.

    A frame after the first starts from the last one and is optimised further. Against the painting alone, each
    frame would go on where the last stopped, and the look would move from frame to frame (darker, bluer):
    drift. Against the fresh frame's statistics alone, the style no longer pulls where the frame starts, and
    the content term draws every frame after the first towards the photo: softer strokes. Mostly the painting
    and some of the look (``PAINTING_SHARE``) keeps both the look and the painting's pull (docs/performance.md).
    """

    def __init__(self, picture: np.ndarray) -> None:
        from ..objective.inputs import StyleCache

        self.picture = Image.fromarray(picture)
        self.statistics = StyleCache()  # the look's and the styles' statistics, computed once for the frames after it

    def styles(self, settings: settings_mod.Settings, paintings: Sequence[Image.Image]) -> tuple[Image.Image, ...]:
        """The style pictures of a frame under this look: the look, then the paintings (``under_look``)."""
        return (self.at_style_side(settings), *paintings)

    def at_style_side(self, settings: settings_mod.Settings) -> Image.Image:
        """The look cut (or mirrored out) to the style pictures' size, so that its strokes keep the size they
        have in the frames whatever the style scale: a style picture is resized to ``settings.style_side``."""
        width, height = self.picture.size
        longest = max(width, height)
        side = settings.style_side(longest)
        if side == longest:
            return self.picture
        size = (max(1, round(width * side / longest)), max(1, round(height * side / longest)))
        if side < longest:
            left, top = (width - size[0]) // 2, (height - size[1]) // 2
            return self.picture.crop((left, top, left + size[0], top + size[1]))
        pixels = np.asarray(self.picture)
        padding = ((0, size[1] - height), (0, size[0] - width), (0, 0))
        return Image.fromarray(np.pad(pixels, padding, mode="symmetric"))


class FrameStyler:
    """Styles frames one after another, each from the last (``style``), or takes one made before (``kept``).

    Args:
        settings: the job's settings (a fresh frame's); options: how the frames after it are made.
        styles: the style pictures; a fresh frame after a cut is styled from them and sets a new look.
        look: the clip's look when this pass begins inside the clip: its first frame is styled fresh, with
            that look as its style (not the style pictures), so that its colours are the clip's.
        tuned: with ``init`` "tuned", the look tuned to the painting on the clip's frames, for every frame's run.
    """

    def __init__(
        self,
        settings: settings_mod.Settings,
        options: VideoOptions,
        styles: Sequence[Image.Image],
        weights: NetworkWeights,
        look: np.ndarray | None = None,
        tuned: TunedLook | None = None,
    ) -> None:
        from ..objective.inputs import StyleCache
        from ..objective.temporal import FlowEstimator

        self.settings, self.options, self.styles, self.weights = settings, options, list(styles), weights
        self.flows = FlowEstimator(options.flow)
        self.known_styles = StyleCache()
        self.look = Look(look) if look is not None else None
        self.tuned = tuned
        self.previous: tuple[np.ndarray, np.ndarray] | None = None  # (input frame, stylised frame) at render size
        self.flow_seconds = 0.0

    def kept(self, content: np.ndarray, picture: np.ndarray, fresh: bool) -> None:
        """A frame made before (kept, or given): the next frame starts from it; a fresh one sets the look."""
        self.previous = (content, picture)
        if fresh or self.look is None:
            self.look = Look(picture)

    def replay(self, content: np.ndarray, picture: np.ndarray) -> None:
        """A frame styled by an earlier pass, in its place: the next starts from it, and it sets the look where
        ``style`` did (the first, or after a cut)."""
        guide = self.guide(content) if self.previous is not None else None
        self.kept(content, picture, fresh=self.look is None or (guide is None and self.previous is not None))

    def guide(self, content: np.ndarray) -> FrameGuide | None:
        """What the next frame's run takes from the last one; None: it starts fresh (the first, after a cut,
        without coherence, or where nothing is optimised: the look paints it, and ``style`` blends the tuned
        look's with the last frame)."""
        if not self.settings.optimises:
            return None
        began = time.perf_counter()
        try:
            return _guide(self.previous, content, self.options, self.flows)
        finally:
            self.flow_seconds += time.perf_counter() - began

    def style(
        self, content: np.ndarray, guide: FrameGuide | None, cancel: CancelToken, report: Callable[[Progress], None]
    ) -> tuple[np.ndarray, str]:
        """The next frame styled (``guide`` from ``guide``): its pixels (8 bits) and where it was computed."""
        settings, styles, known = self.settings, self.styles, self.known_styles
        sets_look = self.look is None or (guide is None and self.previous is not None)  # the first, or a cut
        # Under the clip's look: carried on from the last frame, or the first of a pass inside the clip.
        if self.look is not None and (guide is not None or self.previous is None):
            paintings = len(self.styles)
            settings = (frame_settings(self.settings, self.options, paintings) if guide is not None
                        else under_look(self.settings, paintings))  # fmt: skip
            styles, known = list(self.look.styles(settings, self.styles)), self.look.statistics
        spec = RunSpec(Pictures(Image.fromarray(content), tuple(styles)), settings, frame=guide, known_styles=known,
                       look=self.tuned)  # fmt: skip
        result = _run_picture(spec, self.weights, RunHooks(report=report, cancel=cancel, previews=Previews(0.5, 256)))
        picture = np.asarray(result.finished_or_raise(), dtype=np.uint8)
        if settings.tunes and not settings.optimises:
            picture = self._carried(content, picture)
        self.kept(content, picture, fresh=sets_look)
        return picture, result.compute

    def _carried(self, content: np.ndarray, painted: np.ndarray) -> np.ndarray:
        """A frame the tuned look painted on its own, blended with the last one along the flow where it is reliable
        (``blend_along_flow``); the first, one after a cut, and every frame without coherence (temporal weight 0)
        as painted."""
        from ..objective.temporal import FrameMotion, blend_along_flow

        if self.previous is None or self.options.temporal_weight <= 0:
            return painted
        began = time.perf_counter()
        try:
            previous_input, previous_output = self.previous
            motion = FrameMotion.between(previous_input, content, self.flows)
            return painted if motion.is_cut else blend_along_flow(painted, previous_output, motion)
        finally:
            self.flow_seconds += time.perf_counter() - began


def under_look(settings: settings_mod.Settings, paintings: int) -> settings_mod.Settings:
    """A frame styled under the clip's look (``Look.styles``: the look, then the ``paintings`` style pictures):
    the look has ``1 - PAINTING_SHARE`` of the style, the style pictures the rest in their own blend."""
    blend = settings.blend_weights(paintings)
    return dataclasses.replace(settings, style_blend=(1 - PAINTING_SHARE, *(PAINTING_SHARE * w for w in blend)))


def frame_settings(settings: settings_mod.Settings, options: VideoOptions, paintings: int) -> settings_mod.Settings:
    """A frame after the first: one scale (it starts from a finished picture), ``frame_iterations``, under the
    clip's look (``under_look``)."""
    frame = dataclasses.replace(settings, scales=1, first_scale=0, iterations=options.frame_iterations,
                                init="content")  # fmt: skip
    return under_look(frame, paintings)


def _guide(
    previous: tuple[np.ndarray, np.ndarray] | None,
    content: np.ndarray,
    options: VideoOptions,
    flows: FlowEstimator,
) -> FrameGuide | None:
    from ..objective.temporal import FrameGuide, FrameMotion, warp

    if previous is None or options.temporal_weight <= 0:
        return None
    previous_input, previous_output = previous
    motion = FrameMotion.between(previous_input, content, flows)
    if motion.is_cut:
        return None
    return FrameGuide(motion.carried(previous_output, content), warp(previous_output, motion.backward),
                      motion.reliable, options.temporal_weight, options.frame_settle, options.frame_repair)  # fmt: skip
