"""A clip's frames styled in order, each from the last: what one pass through a clip (or a part of it) keeps.

Frame t starts from stylised frame t-1 carried along the optical flow, and a
temporal term keeps it there where the flow is reliable (``temporal``); a
cut starts a frame fresh, as the first. A fresh frame is styled from the
style images; the frames after it take its look (``Look``), so the clip keeps
one look from its first frame to its last. A pass that begins inside a clip
(a chunk rendered on another machine) begins under the clip's look, given.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np
from PIL import Image

from .. import settings as settings_mod
from .picture import Pictures, Previews, run_picture

if TYPE_CHECKING:
    from ..objective.temporal import FlowEstimator, FrameGuide
    from ..progress import Progress
    from ..run.cancel import CancelToken
    from ..run.compute import NetworkWeights
    from .job import VideoOptions


class Look:
    """The look a clip's frames keep: a fresh frame's styled picture, the style of every frame after it.

    A frame after the first starts from the last one and is optimised further. Against the painting, each
    frame would go on where the last stopped, and the look would move from frame to frame (darker, bluer):
    drift. Matched to the fresh frame's statistics, each frame follows its own content with the look the
    clip began with.
    """

    def __init__(self, picture: np.ndarray) -> None:
        from ..objective.objective import StyleCache

        self.picture = Image.fromarray(picture)
        self.statistics = StyleCache()  # the fresh frame's statistics, computed once for the frames after it


class FrameStyler:
    """Styles frames one after another, each from the last (``style``), or takes one made before (``kept``).

    Args:
        settings: the job's settings (a fresh frame's); options: how the frames after it are made.
        styles: the style pictures; a fresh frame after a cut is styled from them and sets a new look.
        look: the clip's look when this pass begins inside the clip: its first frame is styled fresh, with
            that look as its style (not the style pictures), so that its colours are the clip's.
    """

    def __init__(
        self,
        settings: settings_mod.Settings,
        options: VideoOptions,
        styles: Sequence[Image.Image],
        weights: NetworkWeights,
        look: np.ndarray | None = None,
    ) -> None:
        from ..objective.objective import StyleCache
        from ..objective.temporal import FlowEstimator

        self.settings, self.options, self.styles, self.weights = settings, options, list(styles), weights
        self.flows = FlowEstimator(options.flow)
        self.known_styles = StyleCache()
        self.look = Look(look) if look is not None else None
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
        """What the next frame takes from the last one; None: it starts fresh (the first, after a cut, or
        without coherence)."""
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
        if guide is not None and self.look is not None:  # carried on from the last frame, with the clip's look
            settings, styles, known = frame_settings(self.settings, self.options), [self.look.picture], \
                self.look.statistics  # fmt: skip
        elif self.previous is None and self.look is not None:  # the first of a pass inside the clip
            settings, styles, known = under_look(self.settings), [self.look.picture], self.look.statistics
        result = run_picture(
            Pictures(Image.fromarray(content), tuple(styles)), settings, self.weights, cancel=cancel, report=report,
            previews=Previews(0.5, 256), frame=guide, known_styles=known,
        )  # fmt: skip
        picture = np.asarray(result.finished_or_raise(), dtype=np.uint8)
        self.kept(content, picture, fresh=sets_look)
        return picture, result.compute


def under_look(settings: settings_mod.Settings) -> settings_mod.Settings:
    """A fresh frame styled towards the clip's look: the whole schedule, the look as its one style at its scale."""
    return dataclasses.replace(settings, style_blend=(), style_scale=1.0)


def frame_settings(settings: settings_mod.Settings, options: VideoOptions) -> settings_mod.Settings:
    """A frame after the first: one scale (it starts from a finished picture), ``frame_iterations``, and the fresh
    frame's look as its one style, at its own scale."""
    return dataclasses.replace(settings, scales=1, first_scale=0, iterations=options.frame_iterations,
                               init="content", style_blend=(), style_scale=1.0)  # fmt: skip


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
