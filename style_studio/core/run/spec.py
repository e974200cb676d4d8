"""What a run makes and how it is heard and steered: the two values the engine is built from.

``RunSpec`` says what to make (the pictures, read; the settings; what it goes on from or follows); ``RunHooks`` how
the caller hears and steers it (records, cancel, live changes, checkpoints, previews). A picture's run
(``jobs/picture.run_picture``) and the engine (``engine.StyleTransfer``) take them as they are.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from PIL import Image

from ..objective.regions import Regions
from ..progress import Progress
from ..settings import Settings

if TYPE_CHECKING:
    from ..network.instant import TunedLook
    from ..objective.inputs import StyleCache
    from ..objective.temporal import FrameGuide
    from .cancel import CancelToken
    from .checkpoints import Checkpoint, CheckpointStore
    from .live import LiveChanges
    from .plan import RunPlan


@dataclass(frozen=True)
class Pictures:
    """A run's pictures, read: the photo, its styles, their names for the user, and the regions fitted to the photo.

    Attributes:
        names: the photo's name, then each style's (file names; kept in checkpoints and the embedded document).
        files: the files they were read from, the job's inputs (``job.input_files``: photo, styles, mask);
            what the result's output may never be. Empty for pictures that came from no file.
    """

    content: Image.Image
    styles: tuple[Image.Image, ...]
    names: tuple[str, ...] = ()
    regions: Regions | None = None
    files: tuple[Path, ...] = ()

    def __post_init__(self) -> None:
        if self.regions is not None and self.regions.size != self.content.size:
            object.__setattr__(self, "regions", self.regions.resized(*self.content.size))

    @property
    def content_name(self) -> str:
        return self.names[0] if self.names else "content"

    @property
    def style_names(self) -> tuple[str, ...]:
        return self.names[1:] if self.names else tuple(f"style {n}" for n in range(1, len(self.styles) + 1))


@dataclass(frozen=True)
class Previews:
    """How often a run sends a preview with its records, and how large (``math.inf``: never)."""

    interval: float = math.inf
    max_side: int = 512


@dataclass(frozen=True, eq=False)
class RunSpec:
    """What a picture's run makes: its pictures with its settings, and what it goes on from or follows.

    Attributes:
        resume: a checkpoint to go on from (refused, with what changed, when it is not this run's).
        run_id: the checkpoint's name (the resumed one's when resuming; a new one when None).
        frame: a video frame's guide from the previous one; ``known_styles``: the clip's style statistics.
        deep: keep the result at 16 bits per channel too (``PictureResult.deep``).
        key: the job key of the pictures with the settings, when the caller has worked it out already.
        look: with ``init`` "tuned", the look tuned to the painting when the caller has it (a batch's, tuned on its
            photos; a clip's, on its frames): the run paints with it and tunes nothing; None: the kept one, or
            tuned on the photo now.
    """

    pictures: Pictures
    settings: Settings
    resume: Checkpoint | None = None
    run_id: str | None = None
    frame: FrameGuide | None = None
    known_styles: StyleCache | None = None
    deep: bool = False
    key: str | None = None
    look: TunedLook | None = None


@dataclass(frozen=True, eq=False)
class RunHooks:
    """How a picture's run is heard and steered.

    Attributes:
        report: hears every record (with a preview as ``previews`` says).
        started: hears the run's plan once it is set up (a resume accepted), before its first iteration.
        cancel: stops the run within an iteration; ``live``: its inbox for changes made while it goes on (the
            window's sliders, painting, the style map).
        checkpoints: where it keeps its checkpoints as it goes (None: nowhere).
    """

    report: Callable[[Progress], None] | None = None
    started: Callable[[RunPlan], None] | None = None
    cancel: CancelToken | None = None
    live: LiveChanges | None = None
    checkpoints: CheckpointStore | None = None
    previews: Previews = Previews()
