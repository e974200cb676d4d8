"""A long clip in chunks, each styled on its own (on a cluster's machines at once), joined so that no seam shows.

The clip's first frame is styled first, alone: it is the key frame, and its
look is the clip's (``Look``). Then every chunk is styled at once, each frame
from the last as in a whole clip's render, all under the key frame's look: a
chunk after the first begins ``overlap`` frames before its own part, fresh,
and over those frames its pictures fade in as the previous chunk's fade out.
Each frame a chunk styles is kept in the cache folder as it comes back, and
each finished chunk whole, so a stopped or killed render goes on from the
frame it stood at in each chunk; the video is
written from the kept chunks, through the job's guarded output, once all are
there.

With the tuned look (``init`` "tuned"), the key frame's pass first tunes the look on frames spread over the
whole clip (``video_job._clip_look``), on the machine that runs it; the look is kept with the key frame and handed
to every chunk, so that all are painted by the same network.

Where the chunks run is the caller's (``ChunkRunner``): one after another in
this process (``ChunksInProcess``), or as tasks on a cluster. What a chunk's
pass does is the core's: the runner is handed the function to run for each
chunk (``StyleChunk``), so a cluster's task runs what the core gives it.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol

import numpy as np
from PIL import Image

from ..errors import Cancelled, StyleStudioError
from ..io.files import cache_folder, check_name, file_digest, remove_tree, write_atomically
from ..io.imageio import load_image
from ..io.kept import Tell, read_kept
from ..io.locks import held
from ..io.video import probe, read_frames
from ..io.video_writer import check_writable, write_video
from ..run.cancel import CancelToken
from .frame_cache import GO_ON, read_frame
from .frame_styler import FrameStyler
from .job import CHUNK_FRAMES, CHUNK_OVERLAP, Job, video_key
from .video_job import (
    FrameRecord,
    KeptFramesError,
    RenderedVideo,
    _clip_look,
    check_video_job,
    frame_report,
    render_size,
)

if TYPE_CHECKING:
    from ..network.instant import TunedLook
    from ..network.weights import NetworkWeights


@dataclass(frozen=True)
class Chunk:
    """A run of a clip's frames styled in one pass (frames numbered from 1, as the clip's part is).

    Attributes:
        index: its place in the clip (0: the first; -1: the key frame alone).
        start: the first frame it styles (``overlap`` frames before ``own`` for all but the first).
        own: the first frame that is its own in the video; the frames before it fade in.
        stop: the first frame after it; None: to the clip's end.
    """

    index: int
    start: int
    own: int
    stop: int | None

    @property
    def name(self) -> str:
        return "key" if self.index < 0 else f"chunk-{self.index:05d}"


KEY_FRAME: Final = Chunk(-1, 1, 1, 2)


def plan_chunks(frames: int, chunk_frames: int = CHUNK_FRAMES, overlap: int = CHUNK_OVERLAP) -> list[Chunk]:
    """The chunks of a clip of about ``frames`` frames (from its headers): ``chunk_frames`` each, the last one
    reading to the clip's end whatever the headers said.

    Raises:
        StyleStudioError: a chunk of no frames, or an overlap as long as a chunk.
    """
    if chunk_frames < 1 or not 0 <= overlap < chunk_frames:
        raise StyleStudioError(
            f"chunks of {chunk_frames} frames with {overlap} overlapping: a chunk needs at least one frame, and "
            "more frames than it overlaps"
        )
    count = max(1, math.ceil(frames / chunk_frames))
    owns = [1 + i * chunk_frames for i in range(count)]
    return [
        Chunk(i, max(1, own - overlap) if i else 1, own, owns[i + 1] if i + 1 < count else None)
        for i, own in enumerate(owns)
    ]


@dataclass(frozen=True)
class ChunkWork:
    """What a chunk's pass needs: the job (its clip where it is read), the chunk, the style pictures (a cut
    inside the chunk starts from them), the key frame's picture (None: this is the key frame), the
    pictures of its first frames styled before (by a pass that was stopped or killed), which it goes on from,
    and with ``init`` "tuned" the look tuned on the clip (None: the key frame's pass tunes it)."""

    job: Job
    chunk: Chunk
    styles: tuple[Image.Image, ...]
    look: np.ndarray | None
    kept: tuple[np.ndarray, ...] = ()
    tuned: TunedLook | None = None


@dataclass(frozen=True)
class ChunkFrames:
    """A chunk styled: its frames' pictures and times (from the part's start), where, and in how long; the key
    frame's, with the look it tuned on the clip (``init`` "tuned")."""

    chunk: Chunk
    pictures: tuple[np.ndarray, ...]
    times: tuple[float, ...]
    compute: str
    seconds: float
    tuned: TunedLook | None = None


def _render_chunk(
    work: ChunkWork,
    weights: NetworkWeights,
    *,
    clip: Path | None = None,
    cancel: CancelToken | None = None,
    progress: Callable[[FrameRecord], None] | None = None,
    styled: Callable[[int, np.ndarray], None] | None = None,
) -> ChunkFrames:
    """Style a chunk's frames, each from the last, under the key frame's look (``clip``: where the clip is
    here, when not at the job's path: a cluster's worker), after the frames ``work`` kept. ``styled`` hears
    each frame styled here (its number and picture) as it is done.

    Raises:
        StyleStudioError: the clip cannot be read, out of memory; Cancelled: ``cancel`` was set.
    """
    began = time.perf_counter()
    job, chunk = work.job, work.chunk
    assert job.video is not None
    clip = clip or job.content
    info = probe(clip)
    size = render_size(info, job.settings.size)
    cancel = cancel or CancelToken()
    tuned = work.tuned
    if tuned is None and job.settings.tunes:
        tuned = _clip_look(clip, job, info, size, work.styles, weights, cancel, None, None)
    styler = FrameStyler(job.settings, job.video, work.styles, weights, look=work.look, tuned=tuned)
    pictures: list[np.ndarray] = []
    times: list[float] = []
    compute = ""
    for clip_frame in read_frames(clip, job.video.start, job.video.duration):
        number = clip_frame.index + 1
        if number < chunk.start:
            continue
        if chunk.stop is not None and number >= chunk.stop:
            break
        content = np.asarray(clip_frame.image().resize(size, Image.Resampling.LANCZOS))
        if number - chunk.start < len(work.kept):  # styled by an earlier pass
            picture = work.kept[number - chunk.start]
            styler.replay(content, picture)
        else:
            if number == 1 and work.look is not None:  # the key frame, made first
                picture = work.look
                styler.kept(content, picture, fresh=True)
            else:
                guide = styler.guide(content)
                last = (chunk.stop or number + 1) - 1
                report = functools.partial(frame_report, progress, number, last, guide is None, None)
                picture, compute = styler.style(content, guide, cancel, report)
            if styled is not None:
                styled(number, picture)
        pictures.append(picture)
        times.append(clip_frame.time)
    seconds = time.perf_counter() - began
    return ChunkFrames(chunk, tuple(pictures), tuple(times), compute, seconds, tuned if chunk.index < 0 else None)


#: Hears that a chunk under way has styled a frame: its number and its picture.
ChunkStyled = Callable[[Chunk, int, np.ndarray], None]


class StyleChunk(Protocol):
    """A chunk's pass, as the core hands it to a runner: ``work`` styled with ``weights`` (``clip``: where the
    clip is, when not at the job's path; ``styled`` hears each frame styled, its number and picture)."""

    def __call__(
        self,
        work: ChunkWork,
        weights: NetworkWeights,
        *,
        clip: Path | None = None,
        cancel: CancelToken | None = None,
        progress: Callable[[FrameRecord], None] | None = None,
        styled: Callable[[int, np.ndarray], None] | None = None,
    ) -> ChunkFrames: ...


class ChunkRunner(Protocol):
    """Where chunks are styled: each work's ``ChunkFrames`` as it is done (in any order), made by ``style``.

    ``run`` stops, cancelling what is under way, and raises ``Cancelled`` once ``cancel`` is set; a chunk
    that failed raises ``StyleStudioError`` saying why. ``styled`` hears each frame a chunk under way styles,
    soon after it is done (the render keeps it). ``style`` is the core's chunk pass: a runner runs it (on a
    cluster, in a task) and decides nothing of the picture.
    """

    def run(
        self, works: Sequence[ChunkWork], style: StyleChunk, cancel: CancelToken, styled: ChunkStyled | None = None
    ) -> Iterator[ChunkFrames]: ...


class ChunksInProcess:
    """The chunks one after another in this process: the same picture a cluster makes, for tests and figures."""

    def __init__(self, weights: NetworkWeights, progress: Callable[[FrameRecord], None] | None = None) -> None:
        self.weights, self.progress = weights, progress

    def run(
        self, works: Sequence[ChunkWork], style: StyleChunk, cancel: CancelToken, styled: ChunkStyled | None = None
    ) -> Iterator[ChunkFrames]:
        for work in works:
            if cancel.cancelled:
                raise Cancelled()
            told = functools.partial(styled, work.chunk) if styled is not None else None
            yield style(work, self.weights, cancel=cancel, progress=self.progress, styled=told)


@dataclass(frozen=True)
class ChunksDone:
    """Where a chunked render stands: chunks (the key frame counts as one) and frames kept, of how many, and
    the frames styled so far in the chunks still under way (``styling``)."""

    chunks: int
    of_chunks: int
    frames: int
    of_frames: int
    chunk: ChunkFrames | None  # the one that just came back; None for what was kept before, or a chunk's frame
    styling: int = 0

    def to_json(self) -> dict[str, object]:
        came = self.chunk
        return {"chunks_done": self.chunks, "chunks": self.of_chunks, "frames_done": self.frames,
                "frames_styling": self.styling, "frames": self.of_frames, "chunk": came.chunk.name if came else None,
                "chunk_seconds": round(came.seconds, 3) if came else None}  # fmt: skip


class ChunkStore:
    """A chunked render's finished chunks in the cache folder, each written whole (a kill loses none)."""

    def __init__(self, key: str) -> None:
        self.key = check_name(key, "a video's key")
        self.root = cache_folder() / "videos"
        self.folder = self.root / f"{self.key}-chunks"

    @property
    def lock(self) -> Path:
        return cache_folder() / "locks" / f"video-{self.key}.lock"

    def _path(self, chunk: Chunk) -> Path:
        return self.folder / f"{chunk.name}-{chunk.start}-{chunk.stop or 'end'}.npz"

    def _frames(self, chunk: Chunk) -> Path:
        """The folder of the frames a chunk under way has styled so far."""
        return self._path(chunk).with_suffix(".frames")

    def kept(self) -> list[str]:
        """The chunks kept whole, and those with frames kept."""
        if not self.folder.is_dir():
            return []
        parts = [p for p in self.folder.glob("*.frames") if any(p.glob("frame-*.png"))]
        return sorted([p.name for p in self.folder.glob("*.npz")] + [p.name for p in parts])

    def keep_frame(self, chunk: Chunk, number: int, picture: np.ndarray) -> None:
        """Keep a frame of a chunk under way, losslessly.

        Raises:
            StyleStudioError: the cache cannot be written (the frames and chunks kept before stay).
        """
        folder = self._frames(chunk)
        try:
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / f"frame-{number:06d}.png"
            write_atomically(path, lambda out: Image.fromarray(picture).save(out, format="PNG", compress_level=1))
        except OSError as exc:
            raise StyleStudioError(
                f"frame {number} of {chunk.name} cannot be kept in {folder} ({exc.strerror or exc}); what was kept "
                f"before stays: free some space and {GO_ON}"
            ) from None

    @property
    def aside(self) -> Path:
        """Where a kept chunk or frame that cannot be read is moved (named with the clip's key)."""
        return self.root.with_name(f"{self.root.name}.unreadable")

    def frames(self, chunk: Chunk, size: tuple[int, int], tell: Tell | None = None) -> tuple[np.ndarray, ...]:
        """The pictures ((H, W, 3) uint8 of ``size``: width, height) of a chunk's first frames kept so far, in order
        from its start, up to the first gap: a frame that cannot be read is set aside and styled again."""
        folder, pictures = self._frames(chunk), []
        for number in itertools.count(chunk.start):
            picture = read_kept(
                folder / f"frame-{number:06d}.png", functools.partial(read_frame, size=size),
                f"the kept frame {number} of {chunk.name}", tell=tell, into=self.aside, prefix=f"{self.key}-",
            )  # fmt: skip
            if picture is None:
                break
            pictures.append(picture)
        return tuple(pictures)

    def keep(self, frames: ChunkFrames) -> None:
        """Keep a chunk whole (the key frame's with its tuned look).

        Raises:
            StyleStudioError: the cache cannot be written (the chunks kept before stay).
        """
        about: dict[str, object] = {"compute": frames.compute, "times": frames.times}
        arrays: dict[str, Any] = {}
        if frames.tuned is not None:
            about["look"], arrays = _look_arrays(frames.tuned)
        pictures = np.stack(frames.pictures) if frames.pictures else np.zeros((0, 2, 2, 3), np.uint8)
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            write_atomically(
                self._path(frames.chunk),
                lambda out: np.savez_compressed(out, pictures=pictures, about=np.array(json.dumps(about)), **arrays),
            )
            remove_tree(self._frames(frames.chunk), self.folder)
        except OSError as exc:
            raise StyleStudioError(
                f"{frames.chunk.name} cannot be kept in {self.folder} ({exc.strerror or exc}); the chunks kept "
                f"before it stay: free some space and {GO_ON}"
            ) from None

    def read(self, chunk: Chunk, size: tuple[int, int], tell: Tell | None = None) -> ChunkFrames | None:
        """A chunk kept whole, its pictures of ``size`` (width, height); None when there is none or it cannot be
        read (it is then set aside, ``tell`` hears where, and the chunk is styled again)."""
        said = None if tell is None else lambda notice: tell(f"{notice}; the chunk is styled again")
        return read_kept(
            self._path(chunk), functools.partial(_read_chunk, chunk=chunk, size=size), f"the kept {chunk.name}",
            tell=said, into=self.aside, prefix=f"{self.key}-",
        )  # fmt: skip

    def clear(self) -> None:
        remove_tree(self.folder, self.root)


def _read_chunk(path: Path, chunk: Chunk, size: tuple[int, int]) -> ChunkFrames:
    """A kept chunk, checked: as many pictures as times, no more than the chunk has frames, each of ``size``."""
    with open(path, "rb") as data, np.load(data, allow_pickle=False) as kept:
        about = json.loads(str(kept["about"]))
        pictures = kept["pictures"]
        tuned = _look_of(about["look"], kept) if "look" in about else None
    times, compute = [float(t) for t in about["times"]], str(about["compute"])
    width, height = size
    most = (chunk.stop - chunk.start) if chunk.stop is not None else None
    if pictures.dtype != np.uint8 or pictures.ndim != 4 or pictures.shape[1:] != (height, width, 3):
        raise ValueError(f"its pictures are {pictures.dtype} {pictures.shape}, not frames of {width}×{height}")
    if len(times) != len(pictures) or not pictures.shape[0] or (most is not None and len(times) > most):
        raise ValueError(f"it holds {len(pictures)} pictures and {len(times)} times")
    return ChunkFrames(chunk, tuple(pictures), tuple(times), compute, 0.0, tuned)


def _look_arrays(look: TunedLook) -> tuple[dict[str, object], dict[str, np.ndarray]]:
    """A tuned look as a kept chunk holds it: its steps and weights' names (in the chunk's document), and its style
    vector and weights as arrays (``look-vector``, ``look-0``, ...)."""
    names = sorted(look.weights)
    about = {"names": names, "steps_done": look.steps_done, "steps": look.steps}
    arrays = {"look-vector": look.vector.float().numpy()}
    arrays |= {f"look-{n}": look.weights[name].float().numpy() for n, name in enumerate(names)}
    return about, arrays


def _look_of(about: dict[str, object], kept: Any) -> TunedLook:
    """The look ``_look_arrays`` kept (ValueError: it is not one)."""
    import torch

    from ..network.instant import TunedLook

    names, steps_done, steps = about["names"], about["steps_done"], about["steps"]
    if not (isinstance(names, list) and isinstance(steps_done, int) and isinstance(steps, int) and steps > 0):
        raise ValueError("its tuned look is not one")
    arrays = [kept["look-vector"], *(kept[f"look-{n}"] for n in range(len(names)))]
    if not all(a.dtype == np.float32 and np.isfinite(a).all() for a in arrays):
        raise ValueError("its tuned look's weights are not finite numbers")
    vector, *weights = (torch.from_numpy(np.array(a)) for a in arrays)
    return TunedLook(vector, dict(zip((str(n) for n in names), weights, strict=True)), steps_done, steps)


def faded(before: np.ndarray, after: np.ndarray, share: float) -> np.ndarray:
    """``share`` of the way from ``before`` to ``after``, two pictures of one frame, keeping their strokes' contrast.

    A plain mix of two unrelated stroke patterns is flatter than either (halfway, its detail has 0.7 of their
    contrast). The broad colours (a blur over 1/32 of the picture) mix plainly; the detail above them is mixed,
    then scaled to the contrast the two pictures' details have, mixed in the same shares.
    """
    import cv2

    blur = max(1.0, max(before.shape[:2]) / 32)
    first, second = before.astype(np.float32), after.astype(np.float32)
    broad_first, broad_second = (cv2.GaussianBlur(p, (0, 0), blur) for p in (first, second))
    detail_first, detail_second = first - broad_first, second - broad_second
    detail = (1 - share) * detail_first + share * detail_second
    wanted = (1 - share) * float(np.mean(detail_first**2)) + share * float(np.mean(detail_second**2))
    have = float(np.mean(detail**2))
    gain = math.sqrt(wanted / have) if have > 1e-6 else 1.0
    mixed = (1 - share) * broad_first + share * broad_second + gain * detail
    return np.clip(mixed + 0.5, 0, 255).astype(np.uint8)


def joined(chunks: Iterable[ChunkFrames], overlap: int) -> Iterator[tuple[float, np.ndarray]]:
    """The video's frames from its chunks, in order: over each overlap the earlier chunk's pictures fade out as
    the later one's fade in (``faded``: two pictures of the same frames); elsewhere each chunk's own.
    Two chunks are in memory at a time."""
    held: dict[int, tuple[float, np.ndarray]] = {}  # the last chunk's frames that the next one overlaps
    for frames in chunks:
        chunk = frames.chunk
        numbers = range(chunk.start, chunk.start + len(frames.pictures))
        for number in sorted(n for n in held if n < chunk.start):
            yield held.pop(number)
        both = [n for n in numbers if n in held]
        for number, when, picture in zip(numbers, frames.times, frames.pictures, strict=True):
            if number in held:
                share = (both.index(number) + 1) / (len(both) + 1)
                picture = faded(held.pop(number)[1], picture, share)
            if chunk.stop is not None and number >= chunk.stop - overlap:
                held[number] = (when, picture)
            else:
                for earlier in sorted(n for n in held if n < number):
                    yield held.pop(earlier)
                yield when, picture
    for number in sorted(held):
        yield held[number]


def _render_video_in_chunks(
    job: Job,
    runner: ChunkRunner,
    *,
    chunk_frames: int = CHUNK_FRAMES,
    overlap: int = CHUNK_OVERLAP,
    stop: CancelToken | None = None,
    progress: Callable[[ChunksDone], None] | None = None,
    resume: bool | None = True,
    comment: str | None = None,
    say: Callable[[str], None] | None = None,
    styles: Sequence[Image.Image] | None = None,
) -> RenderedVideo:
    """Render a video job in chunks on ``runner`` (the key frame first, then every chunk at once) and write it.

    Args:
        stop: set to stop at once: the chunks under way are cancelled, those done are kept for ``resume``.
        resume, comment, say, styles: as ``video_job._render_video``'s (kept chunks, not frames).

    Raises:
        StyleStudioError: bad input, an output that cannot be written, a chunk that failed (the others are kept).
        KeptFramesError: ``resume`` is None and an earlier render kept chunks.
        Busy: another process is rendering the same job or writing the same output.
        Cancelled: ``stop`` was set; the chunks done are kept.
    """
    began = time.perf_counter()
    options = job.video
    if options is None:
        raise StyleStudioError(f"{job.describe()}: not a video's job")
    info = check_video_job(job, read_styles=False)
    styles = tuple(styles) if styles is not None else tuple(load_image(p) for p in job.styles)
    total = info.frames_between(options.start, options.duration)
    plan = plan_chunks(total, chunk_frames, overlap)
    key = video_key(job, file_digest(job.content), list(styles))
    store = ChunkStore(f"{key}-{chunk_frames}x{overlap}")
    stop = stop or CancelToken()
    target = job.target()
    busy = f"{job.content.name} is being rendered to the same video by another style-studio process"
    with target.claim(), held(store.lock, busy):
        check_writable(target, info, options.start, key)
        _take_kept(store, resume)
        notes: list[str] = []
        # A kept chunk or frame that cannot be read: set aside, and styled again.
        chunks = _Chunks(store, plan, total, render_size(info, job.settings.size), say or notes.append, progress)
        key_frames, begun = chunks.kept()
        if key_frames is None:
            key_frames = chunks.run(runner, [ChunkWork(job, KEY_FRAME, styles, None)], stop)
        assert key_frames is not None
        look, tuned = key_frames.pictures[0], key_frames.tuned
        works = [ChunkWork(job, c, styles, look, begun[c.index], tuned) for c in plan if c.index in begun]
        chunks.run(runner, works, stop)
        document = json.dumps({"job_key": key, "chunks": [chunk_frames, overlap],
                               **({"note": comment} if comment else {})})  # fmt: skip
        notes += write_video(target, joined(chunks.written(), overlap), info.frame_rate,
                             info, options.start, options.duration, comment=document, key=key)  # fmt: skip
        store.clear()
    seconds = time.perf_counter() - began
    tally = chunks.tally
    return RenderedVideo(job.output, tally.frames, seconds, tally.compute, (*info.notes, *notes), key)


def _take_kept(store: ChunkStore, resume: bool | None) -> None:
    """Go on from the chunks an earlier render of the job kept (``resume``), remove them (False) or refuse to lose
    them (None: ``KeptFramesError``)."""
    kept = store.kept()
    if kept and resume is None:
        raise KeptFramesError(
            f"{len(kept)} chunk(s) or parts from an earlier render of this clip with these settings are kept: add "
            "--resume to go on from them, or --restart to start again"
        )
    if kept and resume is False:
        store.clear()


class _Chunks:
    """A chunked render's chunks as they come back: each frame and chunk kept at once, counted, and told.

    Args:
        plan: the chunks after the key frame's; total: the frames of the clip; size: the frames' (width, height).
        say: hears a kept chunk or frame that cannot be read (set aside, styled again).
        progress: hears what is done after each chunk and each frame styled.
    """

    def __init__(
        self,
        store: ChunkStore,
        plan: Sequence[Chunk],
        total: int,
        size: tuple[int, int],
        say: Callable[[str], None],
        progress: Callable[[ChunksDone], None] | None,
    ) -> None:
        self.store, self.plan, self.total, self.size, self.say, self.progress = store, plan, total, size, say, progress
        self.tally = _Tally()

    def kept(self) -> tuple[ChunkFrames | None, dict[int, tuple[np.ndarray, ...]]]:
        """What an earlier render kept, counted (and checked) one chunk at a time: the key frame's chunk when kept,
        and the frames kept so far of each chunk not kept whole (stopped half-way, or not begun)."""
        store, size, say, tally = self.store, self.size, self.say, self.tally
        key_frames = store.read(KEY_FRAME, size, say)
        for kept_whole in itertools.chain([key_frames], (store.read(c, size, say) for c in self.plan)):
            if kept_whole is not None:
                tally.add(kept_whole)
        begun = {c.index: store.frames(c, size, say) for c in self.plan if c.index not in tally.done}
        for chunk in self.plan:
            tally.styling[chunk.index] = max(0, chunk.start + len(begun.get(chunk.index, ())) - chunk.own)
        if tally.chunks or any(begun.values()):
            self.tell(None)
        return key_frames, begun

    def tell(self, frames: ChunkFrames | None) -> None:
        if self.progress is not None:
            tally = self.tally
            styling = sum(tally.styling.values())
            self.progress(ChunksDone(tally.chunks, len(self.plan) + 1, tally.frames, self.total, frames, styling))

    def run(self, runner: ChunkRunner, works: Sequence[ChunkWork], stop: CancelToken) -> ChunkFrames | None:
        """Run ``works`` on ``runner``, each chunk kept and told as it comes back; the last one back."""
        last = None
        for frames in runner.run(works, _render_chunk, stop, self.styled):
            self.came(frames)
            last = frames
        return last

    def came(self, frames: ChunkFrames) -> None:
        """A chunk came back whole."""
        self.store.keep(frames)
        self.tally.add(frames)
        self.tell(frames)

    def styled(self, chunk: Chunk, number: int, picture: np.ndarray) -> None:
        """A frame of a chunk under way was styled (the key frame's is kept with its chunk)."""
        if chunk.index < 0 or chunk.index in self.tally.done:
            return
        self.store.keep_frame(chunk, number, picture)
        own = number - chunk.own + 1
        if own > self.tally.styling.get(chunk.index, 0):
            self.tally.styling[chunk.index] = own
            self.tell(None)

    def written(self) -> Iterator[ChunkFrames]:
        """Every chunk kept during this render, read back in order to write the video."""
        return (_still_kept(self.store, c, self.size) for c in self.plan)


def _still_kept(store: ChunkStore, chunk: Chunk, size: tuple[int, int]) -> ChunkFrames:
    """A chunk kept during this render, read back to write the video.

    Raises:
        StyleStudioError: it was damaged since (it is set aside; --resume styles it again).
    """
    frames = store.read(chunk, size)
    if frames is None:
        raise StyleStudioError(f"the kept {chunk.name} was damaged after it was made and is set aside; {GO_ON}")
    return frames


@dataclass
class _Tally:
    """The chunks and the video's frames come back so far (and their indices), where the last one was computed,
    and the frames styled so far in each chunk under way (by its index)."""

    chunks: int = 0
    frames: int = 0
    compute: str = ""
    styling: dict[int, int] = field(default_factory=dict)
    done: set[int] = field(default_factory=set)

    def add(self, frames: ChunkFrames) -> None:
        chunk = frames.chunk
        self.styling.pop(chunk.index, None)
        self.done.add(chunk.index)
        self.chunks += 1
        self.frames += len(frames.pictures) - (chunk.own - chunk.start) if chunk.index >= 0 else 0
        self.compute = frames.compute or self.compute
