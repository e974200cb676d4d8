"""Video files in and out, through PyAV (FFmpeg's libraries).

Reading gives each frame upright (rotation metadata applied) and in sRGB:
the YUV matrix the file declares (BT.601, BT.709, BT.2020), or for an
untagged file the one its size implies (BT.709 from 720 lines up, as players
assume), with its range (limited or full). Each frame keeps its own time, so
a variable frame rate survives the round trip.

Writing makes the whole file in one pass at the end, from frames already
kept on disk, with the source's sound copied packet for packet where the
container takes its codec and re-encoded where it does not. The file appears
under its name only when complete (a temporary file beside it is renamed).
"""

from __future__ import annotations

import math
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from ..errors import StyleStudioError

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
    """Whether a video output ``path`` means a folder of numbered PNG frames (no ending, or an existing folder)."""
    return Path(path).is_dir() or Path(path).suffix == "" or str(path).endswith(os.sep)


def check_output(path: str | os.PathLike[str]) -> None:
    """Refuse an output this module cannot write, before any work: an unknown ending, a missing folder.

    Raises:
        VideoError: what is wrong and what would work.
    """
    target = Path(path)
    if output_is_folder(target):
        parent = target.parent if not target.is_dir() else target
    else:
        if target.suffix.lower() not in OUTPUT_KINDS:
            known = ", ".join(sorted(OUTPUT_KINDS))
            raise VideoError(f"{target.name}: cannot write '{target.suffix}' videos; use {known} or a folder")
        parent = target.parent
    if not parent.is_dir():
        raise VideoError(f"{target}: the folder {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise VideoError(f"{target}: the folder {parent} is not writable")


@dataclass(frozen=True)
class ClipInfo:
    """What a video holds, read from its headers (and its first frame).

    Attributes:
        width, height: a frame's size as shown (rotation applied).
        frame_rate: the average frames per second.
        duration: seconds.
        frame_count: frames, as the headers say or as duration × rate estimates.
        rotation: degrees counter-clockwise the stored frames are turned to be shown.
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
        raise VideoError(f"{path.name}: not a video FFmpeg can read ({_reason(exc)})") from None


def _reason(exc: Exception) -> str:
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
        rate = float(stream.average_rate or stream.guessed_rate or 0) or 25.0
        duration = _duration(container, stream)
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
            tuple(notes),
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
        raise VideoError(f"{path.name}: the video cannot be decoded ({_reason(exc)})", frames_readable=0) from None
    raise VideoError(f"{path.name}: the video has no frames")


def _duration(container: Any, stream: Any) -> float:
    if stream.duration is not None and stream.time_base is not None:
        return float(stream.duration) * float(stream.time_base)
    if container.duration is not None:
        return float(container.duration) / 1_000_000
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


def read_frames(path: str | os.PathLike[str], start: float = 0.0, duration: float | None = None) -> Iterator[ClipFrame]:
    """The frames in [start, start + duration) seconds, one at a time (memory: one frame).

    Raises:
        VideoError: the file is damaged; ``frames_readable`` says how many frames came before the damage.
    """
    import av

    path = Path(path)
    count = 0
    with _open(path) as container:
        stream = container.streams.video[0]
        stream.thread_type = "AUTO"
        if start > 0 and stream.time_base is not None:
            container.seek(int(start / stream.time_base), stream=stream, backward=True, any_frame=False)
        end = math.inf if duration is None else start + duration
        try:
            for frame in container.decode(stream):
                when = float(frame.time) if frame.time is not None else count / float(stream.average_rate or 25)
                if when < start - 1e-6:
                    continue
                if when >= end - 1e-6:
                    break
                yield ClipFrame(count, when - start, frame_to_rgb(frame))
                count += 1
        except (av.FFmpegError, ValueError) as exc:
            raise VideoError(
                f"{path.name}: the video is damaged after frame {count} ({_reason(exc)})", frames_readable=count
            ) from None
    if count == 0:
        raise VideoError(f"{path.name}: no frames between {start:g} s and {end:g} s")


def video_comment(path: str | os.PathLike[str]) -> str | None:
    """The comment recorded in a video file's metadata (``write_video``); None when none or not a video."""
    import av

    try:
        with av.open(str(path)) as container:
            return container.metadata.get("comment") or None
    except (av.FFmpegError, OSError, ValueError):
        return None


# -- writing ------------------------------------------------------------------------------------------------


def write_video(
    output: str | os.PathLike[str],
    frames: Iterable[tuple[float, np.ndarray]],
    frame_rate: float,
    sound_from: ClipInfo | None = None,
    start: float = 0.0,
    duration: float | None = None,
    comment: str | None = None,
) -> list[str]:
    """Write ``frames`` ((time from the start in seconds, (H, W, 3) uint8)) as ``output``, atomically.

    ``output`` is a video (``OUTPUT_KINDS``) or a folder of numbered PNGs. The
    sound of ``sound_from`` between ``start`` and ``start + duration`` goes
    with it where the output can hold sound. ``comment`` is recorded in the
    file's metadata (``video_comment`` reads it back).

    Returns:
        Notes for the user: what was re-encoded or left out.

    Raises:
        VideoError: the file cannot be written (nothing is left at ``output``).
    """
    import av

    target = Path(output)
    check_output(target)
    if output_is_folder(target):
        return _write_folder(target, frames)
    kind = OUTPUT_KINDS[target.suffix.lower()]
    fd, part_name = tempfile.mkstemp(prefix=f".{target.stem}.", suffix=target.suffix, dir=target.parent)
    os.close(fd)
    part = Path(part_name)
    try:
        if kind.container == "gif":
            notes = _encode_gif(part, frames, frame_rate, sound_from)
        else:
            notes = _encode(part, kind, frames, frame_rate, sound_from, start, duration, comment)
        with open(part, "rb+") as written:
            os.fsync(written.fileno())
        os.chmod(part, 0o666 & ~_umask())
        os.replace(part, target)
    except OSError as exc:
        raise VideoError(f"{target}: cannot write the video ({exc.strerror or exc})") from None
    except (av.FFmpegError, ValueError) as exc:  # an encoder or muxer refused
        raise VideoError(f"{target}: cannot write the video ({_reason(exc)})") from None
    finally:
        part.unlink(missing_ok=True)
    return notes


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _write_folder(target: Path, frames: Iterable[tuple[float, np.ndarray]]) -> list[str]:
    """Numbered PNGs in a new folder, renamed into place when all are written (an existing folder is replaced)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    part = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        for number, (_, picture) in enumerate(frames, start=1):
            Image.fromarray(picture).save(part / f"frame-{number:06d}.png")
        if target.is_dir():
            shutil.rmtree(target)
        os.replace(part, target)
    except OSError as exc:
        raise VideoError(f"{target}: cannot write the frames ({exc.strerror or exc})") from None
    finally:
        if part.exists():
            shutil.rmtree(part, ignore_errors=True)
    return []


def _encode_gif(
    part: Path, frames: Iterable[tuple[float, np.ndarray]], frame_rate: float, sound_from: ClipInfo | None
) -> list[str]:
    """An animated GIF through Pillow: each frame with its own palette and no dithering, which would
    itself flicker from frame to frame; each frame shown for as long as the clip shows it."""
    pictures: list[Image.Image] = []
    times: list[float] = []
    for when, picture in frames:
        pictures.append(Image.fromarray(picture).quantize(255, Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE))
        times.append(when)
    if not pictures:
        raise VideoError(f"{part.name}: no frames to write")
    step = 1 / frame_rate if frame_rate > 0 else 0.04
    ends = [*times[1:], times[-1] + step]
    durations = [max(20, round(1000 * (end - begin))) for begin, end in zip(times, ends, strict=True)]
    pictures[0].save(part, format="GIF", save_all=True, append_images=pictures[1:], duration=durations, loop=0)
    return ["the sound is left out: GIF files have none"] if sound_from is not None and sound_from.sound else []


def _encode(
    part: Path,
    kind: OutputKind,
    frames: Iterable[tuple[float, np.ndarray]],
    frame_rate: float,
    sound_from: ClipInfo | None,
    start: float,
    duration: float | None,
    comment: str | None,
) -> list[str]:
    import av

    notes: list[str] = []
    rate = Fraction(frame_rate).limit_denominator(1001)
    time_base = Fraction(1, 100) if kind.container == "gif" else Fraction(1, 90_000)
    with av.open(str(part), "w", format=kind.container) as out:
        if comment is not None and kind.container != "gif":
            out.metadata["comment"] = comment
        video: Any = None
        sound = _SoundTrack(out, kind, sound_from, start, duration, notes)
        last_pts = -1
        for when, picture in frames:
            if video is None:
                video = out.add_stream(kind.codec, rate=rate)
                video.height, video.width = (
                    n + n % 2 if kind.pixel_format == "yuv420p" else n for n in picture.shape[:2]
                )
                video.pix_fmt = kind.pixel_format
                video.codec_context.time_base = time_base
                if kind.codec == "libx264":
                    video.options = {"crf": "18", "preset": "medium"}
                    video.codec_context.color_range = 1  # limited, tagged BT.709 below: what players assume
                    video.codec_context.colorspace = 1
                elif kind.codec == "libvpx-vp9":
                    video.options = {"crf": "30", "b": "0"}
                sound.open()
            if kind.pixel_format == "yuv420p" and (picture.shape[0] % 2 or picture.shape[1] % 2):
                # 4:2:0 needs an even size: the last row or column repeated.
                picture = np.pad(picture, ((0, picture.shape[0] % 2), (0, picture.shape[1] % 2), (0, 0)), mode="edge")
            frame = av.VideoFrame.from_ndarray(picture, format="rgb24")
            if kind.pixel_format.startswith("yuv"):
                frame = frame.reformat(format=kind.pixel_format, dst_colorspace="itu709", dst_color_range="MPEG")
            pts = max(last_pts + 1, round(when / time_base))
            frame.pts, frame.time_base, last_pts = pts, time_base, pts
            sound.mux_until(when)
            out.mux(video.encode(frame))
        if video is None:
            raise VideoError(f"{part.name}: no frames to write")
        out.mux(video.encode(None))
        sound.finish()
    return notes


class _SoundTrack:
    """The source's sound, muxed alongside the frames in time order: copied, or re-encoded where it must be."""

    def __init__(
        self,
        out: Any,
        kind: OutputKind,
        source: ClipInfo | None,
        start: float,
        duration: float | None,
        notes: list[str],
    ) -> None:
        self.out, self.kind, self.source, self.notes = out, kind, source, notes
        self.start, self.end = start, math.inf if duration is None else start + duration
        self.container: Any = None
        self.packets: Iterator[Any] = iter(())
        self.pending: Any = None
        self.stream: Any = None
        self.copy = True
        self.encoder: Any = None
        self.resampler: Any = None

    def open(self) -> None:
        import av

        if self.source is None or self.source.sound is None:
            return
        if self.kind.sound_codec is None:
            self.notes.append(f"the sound is left out: {self.kind.container.upper()} files have none")
            return
        self.container = av.open(str(self.source.path))
        source = self.container.streams.audio[0]
        self.copy = self.source.sound in self.kind.sound_copied
        if self.copy:
            self.stream = self.out.add_stream_from_template(source)
        else:
            self.stream = self.out.add_stream(self.kind.sound_codec, rate=source.codec_context.sample_rate or 48000)
            self.notes.append(f"the sound ({self.source.sound}) is re-encoded as {self.stream.codec_context.name}")
            self.resampler = av.AudioResampler(
                format=self.stream.codec_context.format, layout=self.stream.codec_context.layout,
                rate=self.stream.codec_context.sample_rate,
            )  # fmt: skip
        if self.start > 0 and source.time_base is not None:
            self.container.seek(int(self.start / source.time_base), stream=source, backward=True)
        self.packets = iter(self.container.demux(source))
        self.source_stream = source

    def mux_until(self, when: float) -> None:
        """Mux the sound up to ``when`` seconds after the start."""
        while self.stream is not None:
            packet = self.pending or next(self.packets, None)
            self.pending = None
            if packet is None or (packet.pts is None and packet.size == 0):
                return
            if packet.pts is None:
                continue
            at = float(packet.pts * packet.time_base)
            if at >= self.end:
                return
            if at - self.start > when:
                self.pending = packet
                return
            if self.start > 0 and at + float((packet.duration or 0) * packet.time_base) <= self.start + 1e-6:
                continue  # wholly before the part (from the clip's start, the encoder's priming packets are kept)
            self._mux(packet)

    def _mux(self, packet: Any) -> None:
        shift = round(self.start / packet.time_base)
        if self.copy:
            packet.pts -= shift
            if packet.dts is not None:
                packet.dts -= shift
            packet.stream = self.stream
            self.out.mux(packet)
            return
        for frame in packet.decode():
            frame.pts = None
            for converted in self.resampler.resample(frame):
                self.out.mux(self.stream.encode(converted))

    def finish(self) -> None:
        if self.stream is None:
            return
        self.mux_until(math.inf)
        if not self.copy:
            for converted in self.resampler.resample(None):
                self.out.mux(self.stream.encode(converted))
            self.out.mux(self.stream.encode(None))
        self.container.close()
