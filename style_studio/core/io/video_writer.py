"""Writing a video: the whole file in one pass, from frames already kept on disk, with the clip's sound.

The sound is copied packet for packet where the container takes its codec
and re-encoded where it does not (resampled to a rate the encoder takes); a
GIF is written by Pillow (no sound); a folder of frames by ``FrameFolder``.
Every kind goes through the one guarded writer (``outputs.Output``): the
file appears under its name only when complete, never over an input.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from .files import temporary_beside
from .outputs import FrameFolder, Output
from .video import OUTPUT_KINDS, ClipInfo, OutputKind, VideoError, check_output, error_reason, output_is_folder


def write_video(
    output: Output | str | os.PathLike[str],
    frames: Iterable[tuple[float, np.ndarray]],
    frame_rate: float,
    sound_from: ClipInfo | None = None,
    start: float = 0.0,
    duration: float | None = None,
    comment: str | None = None,
    key: str = "",
) -> list[str]:
    """Write ``frames`` ((time from the start in seconds, (H, W, 3) uint8)) as ``output``, atomically.

    ``output`` is a video (``OUTPUT_KINDS``) or a folder of numbered PNGs
    (marked as the job ``key``'s). The sound of ``sound_from`` between
    ``start`` and ``start + duration`` (seconds from the clip's first frame)
    goes with it where the output can hold sound. ``comment`` is recorded in
    the file's metadata (``video_comment`` reads it back).

    Returns:
        Notes for the user: what was re-encoded or left out.

    Raises:
        VideoError: the file cannot be written (nothing is left at ``output``).
        OutputError: the output may not be written there (an input, outside its folder, a folder of other files).
    """
    import av

    output = output if isinstance(output, Output) else Output(Path(output))
    target = output.path
    check_output(target)
    if output_is_folder(target):
        try:
            FrameFolder(output, key).write(picture for _, picture in frames)
        except OSError as exc:
            raise VideoError(f"{target}: cannot write the frames ({exc.strerror or exc})") from None
        return []
    kind = OUTPUT_KINDS[target.suffix.lower()]
    try:
        with output.replacing() as part:
            if kind.container == "gif":
                return _encode_gif(part, frames, frame_rate, sound_from)
            return _encode(part, kind, frames, frame_rate, sound_from, start, duration, comment)
    except OSError as exc:
        raise VideoError(f"{target}: cannot write the video ({exc.strerror or exc})") from None
    except (av.FFmpegError, ValueError) as exc:  # an encoder or muxer refused
        raise VideoError(f"{target}: cannot write the video ({error_reason(exc)})") from None


def check_writable(output: Output, sound_from: ClipInfo | None, start: float, key: str = "") -> None:
    """Write two tiny frames with a moment of the clip's sound as ``output`` would be written, and throw them
    away: what the encoders or the folder refuse is found before the first frame is made, not after the last.

    Raises:
        VideoError, OutputError: as ``write_video`` would.
    """
    target = output.path
    check_output(target)
    if output_is_folder(target):
        FrameFolder(output, key).check()
        return
    output.check()
    trial = Output(Path(f"{temporary_beside(target)}{target.suffix}"))
    black = np.zeros((16, 16, 3), np.uint8)
    step = 1 / max(sound_from.frame_rate if sound_from else 25.0, 1.0)
    try:
        write_video(trial, [(0.0, black), (step, black)], 1 / step, sound_from, start, 2 * step)
    finally:
        trial.path.unlink(missing_ok=True)


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
        # Times from the clip's first frame: a camera's .ts starts its clock anywhere.
        self.origin = source.start_time if source is not None else 0.0
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
            self.stream = self.out.add_stream(self.kind.sound_codec, rate=_sample_rate(self.kind.sound_codec, source))
            self.notes.append(f"the sound ({self.source.sound}) is re-encoded as {self.stream.codec_context.name}")
            self.resampler = av.AudioResampler(
                format=self.stream.codec_context.format, layout=self.stream.codec_context.layout,
                rate=self.stream.codec_context.sample_rate,
            )  # fmt: skip
        if self.start > 0 and source.time_base is not None:
            self.container.seek(int((self.start + self.origin) / source.time_base), stream=source, backward=True)
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
            at = float(packet.pts * packet.time_base) - self.origin
            if at >= self.end:
                return
            if at - self.start > when:
                self.pending = packet
                return
            if self.start > 0 and at + float((packet.duration or 0) * packet.time_base) <= self.start + 1e-6:
                continue  # wholly before the part (from the clip's start, the encoder's priming packets are kept)
            self._mux(packet)

    def _mux(self, packet: Any) -> None:
        shift = round((self.start + self.origin) / packet.time_base)
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


def _sample_rate(codec: str, source: Any) -> int:
    """The source's sample rate if the encoder takes it, else the nearest it takes above (Opus: 48 kHz only)."""
    import av

    wanted = int(source.codec_context.sample_rate or 48000)
    rates = sorted(av.codec.Codec(codec, "w").audio_rates or [])
    if not rates or wanted in rates:
        return wanted
    return next((r for r in rates if r >= wanted), rates[-1])
