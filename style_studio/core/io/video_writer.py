"""Writing a video: the whole file in one pass, from frames already kept on disk, with the clip's sound.

The sound is copied packet for packet where the container takes its codec
and re-encoded where it does not; a GIF is written by Pillow (no sound). The
file appears under its name only when complete: a temporary file beside it
is renamed.
"""

from __future__ import annotations

import math
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from .video import OUTPUT_KINDS, ClipInfo, OutputKind, VideoError, check_output, error_reason, output_is_folder


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
        raise VideoError(f"{target}: cannot write the video ({error_reason(exc)})") from None
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
