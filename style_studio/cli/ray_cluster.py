"""``style-studio batch --ray``: each job a Ray task on a cluster; the weights file travels through the object store."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from .. import __version__
from ..core import (
    CHUNK_FRAMES,
    CHUNK_OVERLAP,
    CheckpointStore,
    JobInputs,
    RenderedJob,
    StyleStudioError,
    door,
)
from .ray_join import find, join
from .ray_weights import weights_bytes, weights_digest, weights_from_bytes
from .reports import JobFailed, RunnerReport, ended
from .runners import _taken

if TYPE_CHECKING:
    from ..core import CancelToken

RAY_INSTALL_HINT = "rendering on Ray needs the cluster extra: pip install 'style-studio[cluster]'"

# -- a Ray cluster ---------------------------------------------------------------------------------


def _ray_render(inputs: JobInputs, weights_data: bytes | None, weights_digest: str, threads: int) -> RenderedJob:
    """A Ray task: render one job on whichever node Ray chose (the weights file's bytes travel with it)."""
    import torch

    torch.set_num_threads(threads)
    weights = weights_from_bytes(inputs.job.settings.network_weights, weights_data, weights_digest)
    # Checkpoints in the node's own cache: a job Ray starts again on the same node goes on from there.
    return door.job(inputs, weights, door.JobHooks(checkpoints=CheckpointStore(), app_version=__version__))


class RayCluster:
    """Each job a Ray task on an existing cluster (``address`` "auto" or host:port), one GPU each where there are GPUs.

    The inputs and the weights file travel through Ray's object store. A clip longer than a chunk
    (``chunking``: its frames and overlap) is rendered in chunks, each a task (``ray_video.ChunkedVideos``).
    """

    local_files = True  # a clip's bytes are read when its task goes (a clip in chunks: never whole)

    def __init__(self, address: str) -> None:
        try:
            import ray
        except ImportError:
            raise StyleStudioError(RAY_INSTALL_HINT) from None
        self.ray = ray
        self.address = address
        self._refs: dict[Any, str] = {}  # the tasks under way (their job's id)
        #: How many jobs the batch has (a few jobs on a large cluster get more CPUs each).
        self.jobs_hint = 1
        #: The frames of a chunk and its overlap: a longer clip goes in chunks.
        self.chunking = (CHUNK_FRAMES, CHUNK_OVERLAP)
        self._shipped: dict[str, tuple[Any, str]] = {}  # each weights file in the object store, and its digest
        self._videos: Any = None  # the batch's clips in chunks (a ChunkedVideos), while it runs

    def connect(self, stop: CancelToken | None = None) -> str:
        """Join the cluster (``ray_join``: a wait that ends, Ctrl+C or ``stop`` heard); which one, and what it has
        ("at 10.0.0.5:6379: 3 node(s), 24 CPUs, 2 GPUs").

        Raises:
            StyleStudioError: it cannot be found, reached or joined in time; Cancelled: ``stop`` was set.
        """
        ray = self.ray
        found = find(self.address)
        join(ray, found, stop)
        resources = ray.cluster_resources()
        nodes = len([n for n in ray.nodes() if n.get("Alive")])
        return (
            f"at {found.describe()}: {nodes} node(s), {resources.get('CPU', 0):g} CPUs, "
            f"{resources.get('GPU', 0):g} GPUs"
        )

    def weights(self, choice: str) -> tuple[Any, str]:
        """The weights choice's file in the object store, put there when a task first needs it (the ImageNet file
        too: workers may be offline), and its digest."""
        if choice not in self._shipped:
            self._shipped[choice] = (self.ray.put(weights_bytes(choice)), weights_digest(choice))
        return self._shipped[choice]

    def run(self, work: Iterable[JobInputs]) -> Iterator[RunnerReport]:
        from .ray_video import ChunkedVideos

        ray = self.ray
        work = iter(work)
        resources = ray.cluster_resources()
        gpus = int(resources.get("GPU", 0))
        total = int(resources.get("CPU", 1))
        cpus = 1 if gpus else max(1, total // max(1, min(self.jobs_hint, total)))
        slots = gpus if gpus else max(1, total // cpus)
        task = ray.remote(num_cpus=cpus, num_gpus=1 if gpus else 0, max_retries=0)(_ray_render)
        jobs: dict[Any, str] = {}
        self._refs = jobs  # what a Ctrl+C cancels: every task sent, from the first one on
        videos = self._videos = ChunkedVideos(self)

        unread: list[RunnerReport] = []  # the clips that could not be read to go with their task

        def submit(inputs: JobInputs) -> None:
            if videos.takes(inputs):
                videos.start(inputs.job)
                return
            try:
                carried = inputs.carried()
            except OSError as exc:
                unread.append(JobFailed(inputs.job.id, f"{inputs.job.content}: {exc.strerror or exc}"))
                return
            jobs[task.remote(carried, *self.weights(inputs.job.settings.network_weights), cpus)] = inputs.job.id

        def room() -> bool:  # every slot busy and as many jobs queued behind them: the rest are not read yet
            return len(jobs) + videos.running < 2 * slots

        for inputs in _taken(work, room):
            submit(inputs)
        while jobs or videos.running or unread:
            yield from unread
            unread.clear()
            done = ray.wait(list(jobs), num_returns=1, timeout=0.5)[0] if jobs else []
            for ref in done:
                yield ended(jobs.pop(ref), self.result_of(ref))
            yield from videos.reports(wait=0 if jobs or not videos.running else 0.5)
            for inputs in _taken(work, room):
                submit(inputs)

    def result_of(self, ref: Any) -> RenderedJob | StyleStudioError:
        ray = self.ray
        try:
            result: RenderedJob = ray.get(ref)
            return result
        except ray.exceptions.TaskCancelledError:
            return StyleStudioError("cancelled")
        except ray.exceptions.RayTaskError as exc:
            cause = exc.as_instanceof_cause() if hasattr(exc, "as_instanceof_cause") else exc
            if isinstance(cause, StyleStudioError):
                return StyleStudioError(str(cause).splitlines()[-1] if str(cause) else "failed")
            return StyleStudioError(f"the task failed on its worker: {_last_line(exc)}")
        except ray.exceptions.RayError as exc:
            return StyleStudioError(f"Ray could not run the task: {_last_line(exc)}")

    def cancel(self) -> None:
        if self._videos is not None:
            self._videos.cancel()
        for ref in list(self._refs):
            try:
                self.ray.cancel(ref, force=True)
            except Exception:  # a task that already ended cannot be cancelled
                continue

    def close(self) -> None:
        self.ray.shutdown()


def _last_line(exc: BaseException) -> str:
    lines = [line for line in str(exc).splitlines() if line.strip()]
    return lines[-1] if lines else exc.__class__.__name__
