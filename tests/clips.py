"""Short video clips made with PyAV for the tests and the benchmark: camera motion, a moving object, sound, damage."""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
from PIL import Image


def textured(width: int, height: int, seed: int = 0) -> np.ndarray:
    """A picture with structure at several scales (blobs, stripes, noise), so that flow has something to follow."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width].astype(np.float32)
    picture = np.zeros((height, width, 3), np.float32)
    for channel in range(3):
        for _ in range(6):
            fx, fy, phase = rng.uniform(0.01, 0.08), rng.uniform(0.01, 0.08), rng.uniform(0, 2 * math.pi)
            picture[..., channel] += np.sin(fx * x + fy * y + phase)
    picture = (picture - picture.min()) / (np.ptp(picture) + 1e-6)
    coarse = rng.uniform(0, 1, (height // 8 + 1, width // 8 + 1, 3)).astype(np.float32)
    blocks = np.asarray(Image.fromarray((coarse * 255).astype(np.uint8)).resize((width, height), Image.BICUBIC))
    return np.clip(0.6 * picture * 255 + 0.4 * blocks, 0, 255).astype(np.uint8)


def camera_pan(frames: int, size: tuple[int, int] = (96, 64), step: float = 2.0, seed: int = 0) -> list[np.ndarray]:
    """A camera moving right and a little down over a still scene."""
    width, height = size
    scene = textured(width + int(step * frames) + 8, height + frames + 8, seed)
    return [
        scene[int(i * step * 0.5) : int(i * step * 0.5) + height, int(i * step) : int(i * step) + width].copy()
        for i in range(frames)
    ]


def moving_object(frames: int, size: tuple[int, int] = (96, 64), seed: int = 1) -> list[np.ndarray]:
    """A textured square crossing a still background."""
    width, height = size
    background = textured(width, height, seed)
    thing = textured(height // 2, height // 2, seed + 7)[..., ::-1]
    side = thing.shape[0]
    out = []
    for i in range(frames):
        picture = background.copy()
        left = int(4 + i * (width - side - 8) / max(1, frames - 1))
        top = height // 4
        picture[top : top + side, left : left + side] = thing
        out.append(picture)
    return out


def write_clip(
    path: Path,
    pictures: list[np.ndarray],
    rate: int = 12,
    sound: str | None = None,
    codec: str = "libx264",
    times: list[float] | None = None,
    rotate: int = 0,
    pix_fmt: str | None = None,
    sound_rate: int = 48000,
) -> Path:
    """Encode ``pictures`` as ``path`` with PyAV; ``sound``: an audio codec for a 440 Hz tone of the same length.

    ``times`` gives each frame's time in seconds (a variable frame rate; a clock that starts at 100 s, as a
    camera's may); ``rotate`` tags the stream's display rotation; the sound starts with the first frame.
    """
    height, width = pictures[0].shape[:2]
    time_base = Fraction(1, 1000)
    with av.open(str(path), "w") as out:
        stream = out.add_stream(codec, rate=rate)
        stream.width, stream.height = width, height
        stream.pix_fmt = pix_fmt or ("yuv420p" if codec != "gif" else "rgb8")
        stream.codec_context.time_base = time_base
        if rotate:
            stream.set_display_rotation(rotate)
        audio = None
        if sound is not None:
            audio = out.add_stream(sound, rate=sound_rate)
            audio.layout = "stereo"
        for index, picture in enumerate(pictures):
            frame = av.VideoFrame.from_ndarray(picture, format="rgb24")
            if stream.pix_fmt != "rgb24":
                frame = frame.reformat(format=stream.pix_fmt)
            when = times[index] if times is not None else index / rate
            frame.pts, frame.time_base = round(when / time_base), time_base
            out.mux(stream.encode(frame))
        out.mux(stream.encode(None))
        if audio is not None:
            first = times[0] if times else 0.0
            seconds = (times[-1] - first if times else len(pictures) / rate) + 0.1
            samples = int(sound_rate * seconds)
            tone = (0.3 * np.sin(2 * math.pi * 440 * np.arange(samples) / sound_rate)).astype(np.float32)
            block = 1024
            for begin in range(0, samples, block):
                chunk = np.stack([tone[begin : begin + block]] * 2)
                frame = av.AudioFrame.from_ndarray(chunk, format="fltp", layout="stereo")
                frame.sample_rate, frame.pts = sound_rate, begin + round(first * sound_rate)
                out.mux(audio.encode(frame))
            out.mux(audio.encode(None))
    return path


def sound_only(path: Path, seconds: float = 1.0) -> Path:
    """A file with sound and no picture."""
    with av.open(str(path), "w") as out:
        audio = out.add_stream("aac", rate=48000)
        audio.layout = "mono"
        samples = int(48000 * seconds)
        tone = (0.3 * np.sin(2 * math.pi * 440 * np.arange(samples) / 48000)).astype(np.float32)
        for begin in range(0, samples, 1024):
            frame = av.AudioFrame.from_ndarray(tone[None, begin : begin + 1024], format="fltp", layout="mono")
            frame.sample_rate, frame.pts = 48000, begin
            out.mux(audio.encode(frame))
        out.mux(audio.encode(None))
    return path


def streams_of(path: Path) -> dict[str, str]:
    """Each stream's type -> its codec's name."""
    with av.open(str(path)) as container:
        return {s.type: s.codec_context.name for s in container.streams}
