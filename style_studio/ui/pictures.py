"""What the window works on, free of Qt: the pictures the user gave and the results it keeps."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from PIL import Image

from ..core import (
    Finished,
    ImageLoadError,
    Outcome,
    Regions,
    Settings,
    StyleStudioError,
    is_video_path,
    load_image,
    probe,
    read_frames,
)


def seek_point(frame: int, rate: float) -> float:
    """Where to start reading a clip for frame ``frame``: half a frame before it.

    The rate a file reports and the one its frames are stamped at may differ in
    the last digits (11.98 against 12 per second), so ``frame / rate`` can land
    just past the frame, and the clip's last frame would then never be found.
    """
    return max(0.0, (frame - 0.5) / rate)


@dataclass(frozen=True)
class ClipFrameRef:
    """Which frame of a video a content picture is: its number (from 0), the clip's frames and rate."""

    frame: int
    frames: int
    rate: float


@dataclass(frozen=True)
class InputImage:
    """An image the user gave: its pixels and where it came from.

    Attributes:
        image: 8-bit RGB.
        name: what to call it (file name, "pasted image", ...).
        path: the file, when it came from one.
    """

    image: Image.Image
    name: str
    path: Path | None = None
    clip: ClipFrameRef | None = None

    @property
    def size_text(self) -> str:
        if self.clip is not None:
            return f"{self.image.width} × {self.image.height} px · frame {self.clip.frame + 1}/{self.clip.frames}"
        return f"{self.image.width} × {self.image.height} px"

    @classmethod
    def from_file(cls, path: str | Path) -> InputImage:
        path = Path(path)
        if is_video_path(path):
            return cls.from_clip(path, 0)
        return cls(load_image(path), path.name, path)

    @classmethod
    def from_clip(cls, path: Path, frame: int) -> InputImage:
        """Frame ``frame`` (from 0) of a video: the picture still runs and the sliders work on."""
        try:
            info = probe(path)
            frame = max(0, min(frame, info.frame_count - 1))
            picture = next(iter(read_frames(path, start=seek_point(frame, info.frame_rate)))).image()
        except StyleStudioError as exc:
            raise ImageLoadError(str(exc)) from None
        return cls(picture, path.name, path, ClipFrameRef(frame, info.frame_count, info.frame_rate))


@dataclass(frozen=True)
class HistoryEntry:
    result: Image.Image
    settings: Settings
    weights_label: str
    outcome: Outcome
    """How the run that made it ended (a picture so far is kept from a stopped or failed run too)."""
    created: float = field(default_factory=time.time)
    deep: np.ndarray | None = field(default=None, repr=False, compare=False)
    """The run's own values, (H, W, 3) uint16, for 16-bit exports."""
    regions: Regions | None = field(default=None, repr=False, compare=False)
    """The regions it was painted with (embedded in exports)."""
    kept: Path | None = field(default=None, repr=False, compare=False)
    """Its copy among the kept results, until it is exported or removed (``core.jobs.kept``)."""
    key: str | None = field(default=None, repr=False, compare=False)
    """The job key of a finished run's picture (embedded in exports: batches and the queue skip it)."""
    video: Path | None = field(default=None, compare=False)
    """A video's entry: the file written (``result`` is its first frame; it is opened, not exported)."""
    inputs: tuple[Path, ...] = field(default=(), compare=False)
    """The files it was made from (photo or clip, styles, mask): kept with it, so its export never replaces one."""

    @property
    def missing(self) -> bool:
        """A video's entry whose file cannot be found now (moved or deleted, or on a drive not connected)."""
        return self.video is not None and not self.video.exists()

    def summary(self) -> str:
        s = self.settings
        stamp = time.strftime("%H:%M:%S", time.localtime(self.created))
        if self.video is not None:
            where = (
                f"\nMissing: {self.video} cannot be found (moved, deleted, or on a drive not connected)"
                if self.missing
                else ""
            )
            return (
                f"{stamp} — video {self.video.name}, {self.result.width}×{self.result.height}\n{self.weights_label}"
                f"{where}"
            )
        return (
            f"{stamp} — {self.result.width}×{self.result.height}, {_iterations(s)}, "
            f"style {s.style_weight:g}, content {s.content_weight:g}\n{self.weights_label}"
            f"{'' if isinstance(self.outcome, Finished) else ' (stopped early)'}"
        )


def _iterations(settings: Settings) -> str:
    """The iterations of each scale ("150 + 75 iterations"), as the schedule under the size says them."""
    counts = [iterations for _, iterations in settings.schedule()]
    return f"{' + '.join(str(n) for n in counts)} iteration{'s' if sum(counts) != 1 else ''}"
