"""Video files in and out, through PyAV (FFmpeg's libraries).

Reading gives each frame upright (rotation metadata applied) and in sRGB:
the YUV matrix the file declares (BT.601, BT.709, BT.2020), or for an
untagged file the one its size implies (BT.709 from 720 lines up, as players
assume), with its range (limited or full). Each frame keeps its own time, so
a variable frame rate survives the round trip.

What can be written (``OUTPUT_KINDS``) is said here; ``video_writer`` writes it.
"""

from __future__ import annotations

import math
import os
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from ..errors import StyleStudioError
from .files import folder_problem

#: File endings read as videos (anything else is a picture).
VIDEO_SUFFIXES = frozenset(
    {".mp4", ".m4v", ".mov", ".mkv", ".webm", ".avi", ".mpg", ".mpeg", ".ts", ".mts", ".m2ts", ".wmv", ".flv", ".3gp"}
)


@dataclass(frozen=True)
class OutputKind:
    """How an output ending is written: container, video codec, pixel format, the sound codecs it takes."""

    container: str
    codec: str
    pixel_format: str
    sound_copied: frozenset[str]
    sound_codec: str | None  # re-encoded to this when the source's codec is not taken; None: no sound


OUTPUT_KINDS: dict[str, OutputKind] = {
    ".mp4": OutputKind("mp4", "libx264", "yuv420p", frozenset({"aac", "mp3", "alac", "flac", "opus", "ac3"}), "aac"),
    ".m4v": OutputKind("mp4", "libx264", "yuv420p", frozenset({"aac", "mp3", "alac", "ac3"}), "aac"),
    ".mov": OutputKind(
        "mov", "libx264", "yuv420p", frozenset({"aac", "mp3", "alac", "ac3", "pcm_s16le", "pcm_s24le"}), "aac"
    ),
    ".webm": OutputKind("webm", "libvpx-vp9", "yuv420p", frozenset({"opus", "vorbis"}), "libopus"),
    ".gif": OutputKind("gif", "gif", "rgb8", frozenset(), None),
}

#: Longest side and frame count beyond which a clip is refused before anything starts.
MAX_SIDE = 8192
MAX_FRAMES = 100_000


class VideoError(StyleStudioError):
    """A video cannot be read or written. The message names the file and the reason.

    Attributes:
        frames_readable: for a damaged file, how many frames decode before the damage (else None).
    """

    def __init__(self, message: str, frames_readable: int | None = None) -> None:
        super().__init__(message)
        self.frames_readable = frames_readable


def is_video_path(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` names a video by its ending."""
    return Path(path).suffix.lower() in VIDEO_SUFFIXES


def output_is_folder(path: str | os.PathLike[str]) -> bool:
    """Whether a video output ``path`` means a folder of numbered PNG frames: a name without a video's ending (no
    ending, or an existing folder of another). A video's ending always means a file, so that a folder there is
    refused before any frame is made, not after the last."""
    target = Path(path)
    if target.suffix.lower() in OUTPUT_KINDS:
        return False
    return target.suffix == "" or target.is_dir() or str(path).endswith(os.sep)


def check_output(path: str | os.PathLike[str]) -> None:
    """Refuse an output this module cannot write, before any work: an unknown ending, a missing folder.

    Raises:
        VideoError: what is wrong and what would work.
    """
    target = Path(path)
    problem = kind_problem(target) or folder_problem(target, target if target.is_dir() else target.parent)
    if problem is not None:
        raise VideoError(problem)


def kind_problem(path: Path) -> str | None:
    """Why a video cannot be written as ``path`` (an ending with no ``OUTPUT_KINDS``); None: it can."""
    if output_is_folder(path) or path.suffix.lower() in OUTPUT_KINDS:
        return None
    return f"{path.name}: cannot write '{path.suffix}' videos; use {', '.join(sorted(OUTPUT_KINDS))} or a folder"


@dataclass(frozen=True)
class ClipInfo:
    """What a video holds, read from its headers (and its first frame).

    Attributes:
        width, height: a frame's size as shown (rotation applied).
        frame_rate: the average frames per second.
        duration: seconds.
        frame_count: frames, as the headers say or as duration × rate estimates.
        rotation: degrees counter-clockwise the stored frames are turned to be shown.
        start_time: seconds on the file's clock at its first frame (a camera's .ts starts anywhere);
            every other time here counts from it.
        sound: the audio stream's codec name, or None.
        notes: what will not be kept (subtitles, chapters, a second audio stream).
    """

    path: Path
    width: int
    height: int
    frame_rate: float
    duration: float
    frame_count: int
    rotation: int = 0
    sound: str | None = None
    notes: tuple[str, ...] = field(default=())
    start_time: float = 0.0

    def seconds_between(self, start: float, duration: float | None) -> float:
        """How long [start, start + duration) is within the clip, in seconds."""
        end = self.duration if duration is None else min(self.duration, start + duration)
        return max(0.0, end - max(0.0, start))

    def frames_between(self, start: float, duration: float | None) -> int:
        """Roughly how many frames lie in [start, start + duration)."""
        end = self.duration if duration is None else min(self.duration, start + duration)
        return max(0, min(self.frame_count, math.ceil((end - max(0.0, start)) * self.frame_rate - 1e-6)))


def _open(path: Path) -> Any:
    import av

    if not path.is_file():
        raise VideoError(f"{path}: no such file")
    if path.stat().st_size == 0:
        raise VideoError(f"{path.name}: the file is empty")
    try:
        return av.open(str(path))
    except (av.FFmpegError, OSError, ValueError) as exc:
        raise VideoError(f"{path.name}: not a video FFmpeg can read ({error_reason(exc)})") from None


def error_reason(exc: Exception) -> str:
    """The first clause of an FFmpeg or OS error, for a one-line message."""
    text = getattr(exc, "strerror", None) or str(exc)
    return text.split(";")[0].strip() or type(exc).__name__


def probe(path: str | os.PathLike[str]) -> ClipInfo:
    """Read a video's headers and its first frame.

    Raises:
        VideoError: no such file, not a video, no video stream, no frames, an absurd size.
    """
    path = Path(path)
    with _open(path) as container:
        if not container.streams.video:
            kinds = sorted({s.type for s in container.streams}) or ["nothing"]
            raise VideoError(f"{path.name}: no video stream in this file (it holds {', '.join(kinds)})")
        stream = container.streams.video[0]
        first = _first_frame(container, stream, path)
        rotation = _rotation(first)
        width, height = (first.height, first.width) if rotation % 180 else (first.width, first.height)
        origin = _start_time(stream, first)
        duration = _duration(container, stream, origin)
        rate = _frame_rate(stream, duration)
        frames = stream.frames or max(1, round(duration * rate))
        notes = []
        audio = container.streams.audio
        if len(audio) > 1:
            notes.append(f"only the first of its {len(audio)} sound tracks is kept")
        if container.streams.subtitles:
            notes.append("its subtitles are not kept")
        if getattr(container, "chapters", None) and container.chapters():
            notes.append("its chapters are not kept")
        info = ClipInfo(
            path, width, height, rate, duration, frames, rotation, audio[0].codec_context.name if audio else None,
            tuple(notes), origin,
        )  # fmt: skip
    if max(width, height) > MAX_SIDE:
        raise VideoError(
            f"{path.name}: {width}×{height} pixels a frame is beyond what Style Studio renders (at most {MAX_SIDE} "
            f"pixels a side; each frame alone would take {width * height * 3 / 2**20:.0f} MB to decode)"
        )
    if frames > MAX_FRAMES:
        raise VideoError(
            f"{path.name}: about {frames} frames is beyond what Style Studio renders at once (at most {MAX_FRAMES}; "
            f"at even 2 s a frame that is {frames * 2 / 3600:.0f} hours): style a part with --start and --duration"
        )
    return info


def _first_frame(container: Any, stream: Any, path: Path) -> Any:
    import av

    try:
        for frame in container.decode(stream):
            return frame
    except (av.FFmpegError, ValueError) as exc:
        raise VideoError(f"{path.name}: the video cannot be decoded ({error_reason(exc)})", frames_readable=0) from None
    raise VideoError(f"{path.name}: the video has no frames")


def _start_time(stream: Any, first: Any) -> float:
    """Seconds on the file's clock at the first frame: the stream's declared start, else the first frame's time."""
    if stream.start_time is not None and stream.time_base is not None:
        return float(stream.start_time * stream.time_base)
    return float(first.time) if first.time is not None else 0.0


def _frame_rate(stream: Any, duration: float) -> float:
    """Frames per second: the average the headers give, unless it is far beyond what the frames can be
    (a file that declares 1000 fps for a handful of frames); then the count over the duration."""
    rate = float(stream.average_rate or stream.guessed_rate or 0) or 25.0
    if stream.frames and duration > 0 and rate > 1.5 * stream.frames / duration:
        return float(stream.frames) / duration
    return rate


def _duration(container: Any, stream: Any, origin: float) -> float:
    """Seconds from the first frame to the end: the stream's own duration, else to where the file ends."""
    if stream.duration is not None and stream.time_base is not None:
        return float(stream.duration) * float(stream.time_base)
    if container.duration is not None:
        begins = float(container.start_time or 0) / 1_000_000
        return max(0.0, begins + float(container.duration) / 1_000_000 - origin)
    return 0.0


def _rotation(frame: Any) -> int:
    """Degrees counter-clockwise to turn a stored frame to show it, a multiple of 90."""
    try:
        angle = round(float(frame.rotation or 0))
    except (AttributeError, TypeError, ValueError):
        return 0
    return (round(angle / 90) * 90) % 360


@dataclass(frozen=True)
class ClipFrame:
    """A decoded frame: its number in the part read (from 0), its time from that part's start, its sRGB pixels."""

    index: int
    time: float
    picture: np.ndarray  # (H, W, 3) uint8, upright

    def image(self) -> Image.Image:
        return Image.fromarray(self.picture)


# AVColorSpace values (libavutil/pixfmt.h) -> swscale's matrix names.
_MATRICES = {1: "itu709", 5: "itu601", 6: "smpte170m", 7: "smpte240m", 9: "bt2020", 10: "bt2020"}
_FULL_RANGE = 2  # AVCOL_RANGE_JPEG


def frame_to_rgb(frame: Any) -> np.ndarray:
    """A decoded frame as upright sRGB, (H, W, 3) uint8, converted with the matrix and range it declares."""
    fmt = frame.format.name
    if fmt.startswith(("rgb", "bgr", "gbr", "pal", "gray", "argb", "abgr")):
        picture = frame.to_ndarray(format="rgb24")
    else:
        matrix = _MATRICES.get(int(frame.colorspace or 0), "itu709" if frame.height >= 720 else "itu601")
        full = int(frame.color_range or 0) == _FULL_RANGE or fmt.startswith("yuvj")
        picture = frame.to_ndarray(
            format="rgb24",
            src_colorspace=matrix,
            dst_colorspace=matrix,
            src_color_range="JPEG" if full else "MPEG",
            dst_color_range="JPEG",
        )
    turns = _rotation(frame) // 90
    return np.ascontiguousarray(np.rot90(picture, k=turns)) if turns else picture


def read_frames(
    path: str | os.PathLike[str], start: float = 0.0, duration: float | None = None
) -> Generator[ClipFrame, None, None]:
    """The frames in [start, start + duration) seconds, one at a time (memory: one frame).

    Raises:
        VideoError: the file is damaged; ``frames_readable`` says how many frames came before the damage.
    """
    import av

    path = Path(path)
    count = 0
    with _open(path) as container:
        stream = container.streams.video[0]
        origin = float(stream.start_time * stream.time_base) if stream.start_time is not None else 0.0
        step = 1 / float(stream.average_rate or stream.guessed_rate or 25)
    end = math.inf if duration is None else start + duration
    clock = _Clock(step)
    try:
        for frame in _decoded_from(path, start + origin if start > 0 else 0.0):
            stamp = float(frame.time) - origin if frame.time is not None else None
            when = clock.time_of(stamp)
            if when < start - 1e-6:
                continue
            if when >= end - 1e-6:
                break
            yield ClipFrame(count, max(0.0, when - start), frame_to_rgb(frame))
            count += 1
    except (av.FFmpegError, ValueError) as exc:
        raise VideoError(
            f"{path.name}: the video is damaged after frame {count} ({error_reason(exc)})", frames_readable=count
        ) from None
    if count == 0:
        raise VideoError(f"{path.name}: no frames between {start:g} s and {end:g} s")


def _decoded_from(path: Path, seconds: float) -> Iterator[Any]:
    """The decoded video frames from the key frame at or before ``seconds`` on the file's clock.

    A file that cannot seek there exactly (an MPEG transport stream may land
    past the point, or nowhere) is decoded from its start instead.
    """
    if seconds > 0:
        with _open(path) as container:
            stream = container.streams.video[0]
            stream.thread_type = "AUTO"
            container.seek(int(seconds / stream.time_base), stream=stream, backward=True, any_frame=False)
            frames = container.decode(stream)
            first = next(frames, None)
            if first is not None and first.time is not None and float(first.time) <= seconds + 1e-6:
                yield first
                yield from frames
                return
    with _open(path) as container:
        stream = container.streams.video[0]
        stream.thread_type = "AUTO"
        yield from container.decode(stream)


class _Clock:
    """Each frame's time from the clip's first frame, always moving forward.

    A clip joined from parts whose clocks each start again at 0 (or a
    damaged stamp) would put frames before their predecessors; such a frame
    is given the previous frame's time plus the time its predecessor took
    (the nominal frame step when unknown), and the clip goes on from there.
    """

    def __init__(self, step: float) -> None:
        self.step, self.last, self.shift, self.gap = step, -math.inf, 0.0, step

    def time_of(self, stamp: float | None) -> float:
        if stamp is None:
            when = self.last + self.gap if self.last > -math.inf else 0.0
        else:
            when = stamp + self.shift
            if self.last > -math.inf and when <= self.last + 1e-3:  # backwards, or a clock that starts again
                self.shift += self.last + self.gap - when
                when = self.last + self.gap
        if self.last > -math.inf and when > self.last:
            self.gap = when - self.last
        self.last = when
        return when


def video_comment(path: str | os.PathLike[str]) -> str | None:
    """The comment recorded in a video file's metadata (``write_video``); None when none or not a video."""
    import av

    try:
        with av.open(str(path)) as container:
            return container.metadata.get("comment") or None
    except (av.FFmpegError, OSError, ValueError):
        return None
