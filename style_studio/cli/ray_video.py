"""A long clip in chunks on Ray (``video --ray``, and a batch's long clips): the chunks are Ray tasks; the clip's bytes
and the weights go by the object store."""

from __future__ import annotations

import dataclasses
import itertools
import queue
import tempfile
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from .. import __version__
from ..core import (
    Cancelled,
    CancelToken,
    Job,
    JobInputs,
    RenderedJob,
    StyleStudioError,
    VideoWritten,
    check_video_job,
    door,
    plan_chunks,
)
from .ray_weights import weights_from_bytes
from .reports import JobFailed, JobProgress, JobRendered, RunnerReport, ended

if TYPE_CHECKING:
    from ..core import ChunkFrames, ChunksDone, ChunkStyled, ChunkWork, StyleChunk


class JoinedCluster(Protocol):
    """What a clip's chunks need of a joined cluster (a ``ray_cluster.RayCluster``, which sends them here)."""

    @property
    def ray(self) -> Any:
        """The ``ray`` module, joined to the cluster."""

    @property
    def chunking(self) -> tuple[int, int]:
        """A chunk's frames and the frames it overlaps the next by: a longer clip goes in chunks."""

    def weights(self, choice: str) -> tuple[Any, str]:
        """The weights choice's file in the object store, and its digest."""

    def result_of(self, ref: Any) -> RenderedJob | StyleStudioError:
        """A task's result, or why it has none."""


def _ray_chunk(
    work: ChunkWork,
    style: StyleChunk,
    clip: bytes,
    weights_data: bytes | None,
    weights_digest: str,
    threads: int,
    inbox: Any,
) -> Any:
    """A Ray task: style one chunk on whichever node Ray chose with ``style`` (the core's chunk pass, handed to the
    runner), from the clip's bytes (a file of its own there), handing each frame to ``inbox`` (a ``StyledFrames``
    actor) as it is done; run again after its worker died, it goes on from the frames handed over before."""
    import ray
    import torch

    torch.set_num_threads(threads)
    weights = weights_from_bytes(work.job.settings.network_weights, weights_data, weights_digest)
    handed = {work.chunk.start + i: picture for i, picture in enumerate(work.kept)}
    handed |= ray.get(inbox.kept.remote(work.chunk.index))
    kept = list(itertools.takewhile(lambda n: n in handed, itertools.count(work.chunk.start)))
    work = dataclasses.replace(work, kept=tuple(handed[n] for n in kept))

    def styled(number: int, picture: Any) -> None:
        inbox.tell.remote(work.chunk.index, number, picture)  # not waited for: the next frame goes on

    with tempfile.TemporaryDirectory(prefix="style-studio-chunk-") as folder:
        path = Path(folder) / f"clip{work.job.content.suffix}"
        path.write_bytes(clip)
        return style(work, weights, clip=path, styled=styled)


class StyledFrames:
    """A Ray actor: the frames the chunks under way have styled (by the chunk's index, then the frame's number),
    the ones not yet taken by the render, and each chunk's until it is done."""

    def __init__(self) -> None:
        self.frames: dict[int, dict[int, Any]] = {}
        self.new: list[tuple[int, int, Any]] = []

    def tell(self, index: int, number: int, picture: Any) -> None:
        self.frames.setdefault(index, {})[number] = picture
        self.new.append((index, number, picture))

    def take(self) -> list[tuple[int, int, Any]]:
        """The frames styled since the last take."""
        new, self.new = self.new, []
        return new

    def kept(self, index: int) -> dict[int, Any]:
        return dict(self.frames.get(index, {}))

    def forget(self, index: int) -> None:
        self.frames.pop(index, None)


class RayChunks:
    """A clip's chunks as tasks on a Ray cluster (a ``RayCluster``, joined), one GPU each where there are
    GPUs, else the CPUs shared out between the chunks under way. Stopping cancels the tasks under way."""

    def __init__(self, cluster: JoinedCluster) -> None:
        self.cluster = cluster
        self._ray = cluster.ray
        self._clips: dict[Path, Any] = {}  # each clip's bytes in the object store, put once

    def run(
        self, works: Sequence[ChunkWork], style: StyleChunk, cancel: CancelToken, styled: ChunkStyled | None = None
    ) -> Iterator[ChunkFrames]:
        if not works:
            return
        ray = self._ray
        resources = ray.cluster_resources()
        gpus, total = int(resources.get("GPU", 0)), int(resources.get("CPU", 1))
        cpus = 1 if gpus else max(1, total // min(len(works), total))
        task = ray.remote(num_cpus=cpus, num_gpus=1 if gpus else 0, max_retries=1)(_ray_chunk)
        weights = self.cluster.weights(works[0].job.settings.network_weights)
        inbox = ray.remote(num_cpus=0)(StyledFrames).remote()
        refs = {task.remote(work, style, self._clip(work.job.content), *weights, cpus, inbox): work for work in works}
        chunks = {work.chunk.index: work.chunk for work in works}
        try:
            while refs:
                if cancel.cancelled:
                    raise Cancelled()
                done, _ = ray.wait(list(refs), num_returns=1, timeout=0.5)
                if styled is not None:  # every frame handed over, those of the chunks just done too
                    for index, number, picture in ray.get(inbox.take.remote()):
                        styled(chunks[index], number, picture)
                for ref in done:
                    work = refs.pop(ref)
                    inbox.forget.remote(work.chunk.index)
                    result = self.cluster.result_of(ref)
                    if isinstance(result, StyleStudioError):
                        raise StyleStudioError(f"{work.chunk.name} of {work.job.content.name}: {result}")
                    yield result  # type: ignore[misc]
        finally:
            for ref in refs:  # stopped, or a chunk failed: the others under way are not waited for
                try:
                    ray.cancel(ref, force=True)
                except Exception:  # a task that already ended cannot be cancelled
                    continue
            ray.kill(inbox)

    def _clip(self, path: Path) -> Any:
        if path not in self._clips:
            try:
                data = path.read_bytes()
            except OSError as exc:
                raise StyleStudioError(f"{path.name} cannot be read ({exc.strerror or exc})") from None
            self._clips[path] = self._ray.put(data)
        return self._clips[path]


class ChunkedVideos:
    """A batch's clips longer than a chunk, on Ray: each rendered in chunks by a thread of this process (its key
    frame, then every chunk at once, as tasks beside the batch's others) and written when it is done.

    Each reports as a batch runner does: a ``JobProgress`` as its frames are styled, then a ``JobRendered`` (the
    video already written) or a ``JobFailed``. Kept chunks of a batch that
    was stopped or killed are gone on from.
    """

    def __init__(self, cluster: JoinedCluster) -> None:
        self.cluster = cluster
        self.stop = CancelToken()
        self._reports: queue.Queue[RunnerReport] = queue.Queue()
        self._pending: set[str] = set()  # the jobs whose last report is not taken yet
        self._threads: list[threading.Thread] = []

    @property
    def running(self) -> int:
        return len(self._pending)

    def takes(self, inputs: JobInputs) -> bool:
        """Whether the job is a clip of more frames than a chunk (one it cannot read goes as a task, which says why)."""
        job = inputs.job
        if job.video is None:
            return False
        try:
            info = check_video_job(job, read_styles=False)
        except StyleStudioError:
            return False
        return info.frames_between(job.video.start, job.video.duration) > self.cluster.chunking[0]

    def start(self, job: Job) -> None:
        self._pending.add(job.id)
        thread = threading.Thread(target=self._render, args=(job,), name=f"style-studio-chunks-{job.id}", daemon=True)
        self._threads.append(thread)
        thread.start()

    def reports(self, wait: float = 0.0) -> Iterator[RunnerReport]:
        """The reports that came since the last call, waiting up to ``wait`` seconds for the first."""
        while True:
            try:
                report = self._reports.get(timeout=wait) if wait else self._reports.get_nowait()
            except queue.Empty:
                return
            wait = 0.0
            match report:
                case JobRendered(job=job) | JobFailed(job=job):
                    self._pending.discard(job)
            yield report

    def cancel(self) -> None:
        """Stop every clip under way (their chunks' tasks are cancelled, the chunks done are kept)."""
        self.stop.cancel()
        for thread in self._threads:
            thread.join(timeout=30)

    def _render(self, job: Job) -> None:
        chunk_frames, overlap = self.cluster.chunking

        def progress(done: ChunksDone) -> None:
            step = {"job": job.id, "step": done.frames + done.styling, "steps": done.of_frames}
            self._reports.put(JobProgress(job.id, step | done.to_json()))

        result: RenderedJob | StyleStudioError
        try:
            plan = door.ChunkPlan(RayChunks(self.cluster), chunk_frames, overlap)
            rendered = door.clip(door.ClipSpec(job), None, door.ClipHooks(
                chunks_done=progress, stop=self.stop, comment=f"Style Studio {__version__}", chunks=plan,
            ))  # fmt: skip
            chunks = f"{rendered.frames} frames in {len(plan_chunks(rendered.frames, chunk_frames, overlap))} chunks"
            result = RenderedJob(job.id, VideoWritten(), "", rendered.seconds, rendered.compute,
                                 notes=(chunks, *rendered.notes))  # fmt: skip
        except Cancelled:
            result = StyleStudioError("cancelled")
        except StyleStudioError as exc:
            result = exc
        except Exception as exc:  # a bug or Ray failing: this job fails, the batch goes on
            result = StyleStudioError(f"failed unexpectedly: {exc.__class__.__name__}: {exc}")
        self._reports.put(ended(job.id, result))
