"""``style-studio batch``: many jobs, in this process, in a pool of processes, or as Ray tasks.

Whichever runs the jobs (a ``Runner``), this process reads the inputs, skips
the jobs whose outputs are already there, and writes every result, atomically:
a worker gets bytes and sends back pixels, so it needs no shared folder, and
no output is ever half-written by a worker that was stopped. A worker saves
its job's checkpoints in its machine's cache folder, so a job cut off by a
kill goes on where it stood when the batch runs again there.
"""

from __future__ import annotations

import concurrent.futures
import functools
import json
import multiprocessing
import os
import queue
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Protocol

from . import __version__
from .core.batch import (
    BatchJob,
    JobInputs,
    JobOutcome,
    RenderedJob,
    already_done,
    remove_partial_files,
    render_job,
    summary_rows,
    write_output,
)
from .core.cancel import CancelToken
from .core.checkpoints import CheckpointStore
from .core.errors import Cancelled, StyleStudioError

if TYPE_CHECKING:
    from .core.engine import NetworkWeights
    from .core.progress import Progress

RAY_INSTALL_HINT = "rendering on Ray needs the cluster extra: pip install 'style-studio[cluster]'"

#: A runner's report: (job id, a Progress record as JSON) while it renders, or
#: (job id, RenderedJob) / (job id, StyleStudioError) when it is done.
Report = tuple[str, Any]


class Runner(Protocol):
    """Renders jobs somewhere and reports as they progress and end (in any order)."""

    def run(self, work: Iterable[JobInputs]) -> Iterator[Report]:
        """Render ``work``, taking each job from it only when there is room to start it."""
        ...

    def cancel(self) -> None: ...


# -- weights, loaded once per worker process ------------------------------------------------


@functools.lru_cache(maxsize=2)
def _weights(choice: str) -> NetworkWeights:
    from .core.weights import load_weights

    return load_weights(choice, download=True)


#: Weights that came through Ray's object store, by their file's SHA-256 (a worker keeps the last two).
_shipped: dict[str, NetworkWeights] = {}


def _weights_from_bytes(choice: str, data: bytes | None, digest: str) -> NetworkWeights:
    """Weights a worker got through Ray's object store: the file's bytes, read through a temporary file removed at once.

    ``digest`` is the file's SHA-256 (worked out by the submitter): two files
    that share their first layers and their size are still two files.
    """
    if data is None:
        return _weights(choice)
    if digest not in _shipped:
        from .core.weights import LoadedWeights, describe, read_state_dict

        with tempfile.TemporaryDirectory(prefix="style-studio-weights-") as folder:
            path = Path(folder) / "weights.pth"
            path.write_bytes(data)
            state = read_state_dict(path)
        while len(_shipped) >= 2:
            del _shipped[next(iter(_shipped))]
        _shipped[digest] = LoadedWeights(choice, describe(choice), state)
    return _shipped[digest]


def _progress_json(job_id: str, record: Progress) -> dict[str, Any]:
    return {"job": job_id, **record.to_json()}


# -- in this process -------------------------------------------------------------------------------


class InProcess:
    """One job at a time in this process: progress every iteration, Stop within one."""

    def __init__(self) -> None:
        self._cancel = CancelToken()

    def run(self, work: Iterable[JobInputs]) -> Iterator[Report]:
        for inputs in work:
            if self._cancel.cancelled:
                return
            reports: queue.Queue[Report | None] = queue.Queue()
            thread = threading.Thread(target=self._render, args=(inputs, reports), name="style-studio-job", daemon=True)
            thread.start()
            try:
                while True:
                    try:
                        report = reports.get(timeout=0.2)  # a timeout, so that Ctrl+C is seen
                    except queue.Empty:
                        continue
                    if report is None:
                        break
                    yield report
            finally:
                if thread.is_alive():
                    self._cancel.cancel()
                    thread.join()

    def _render(self, inputs: JobInputs, reports: queue.Queue[Report | None]) -> None:
        job = inputs.job.id
        try:
            rendered = render_job(
                inputs,
                _weights(inputs.job.settings.weights),
                cancel=self._cancel,
                progress=lambda record: reports.put((job, _progress_json(job, record))),
                app_version=__version__,
                checkpoints=CheckpointStore(),
            )
            reports.put((job, rendered))
        except Cancelled:
            pass
        except StyleStudioError as exc:
            reports.put((job, exc))
        except Exception as exc:  # a bug or a device failure: this job fails, the batch goes on
            reports.put((job, StyleStudioError(f"failed unexpectedly: {exc.__class__.__name__}: {exc}")))
        finally:
            reports.put(None)

    def cancel(self) -> None:
        self._cancel.cancel()


# -- a pool of processes on this machine ----------------------------------------------------------

_worker_queue: Any = None


def _pool_start(threads: int, reports: Any, gpus: Any) -> None:
    """A pool worker's start: its GPU where there are several, its share of the CPU threads, where its progress goes."""
    global _worker_queue
    if gpus is not None:
        # Before torch starts CUDA in this process (spawned: nothing is imported yet).
        os.environ["CUDA_VISIBLE_DEVICES"] = str(gpus.get())
    import torch

    torch.set_num_threads(threads)
    _worker_queue = reports


def gpu_share(workers: int, gpus: int) -> list[int] | None:
    """The GPU each of ``workers`` pool processes takes (in turn), or None when there are fewer than two GPUs."""
    if gpus < 2:
        return None
    return [n % gpus for n in range(workers)]


def _pool_render(inputs: JobInputs) -> RenderedJob:
    job = inputs.job.id

    def report(record: Progress) -> None:
        if _worker_queue is not None:
            _worker_queue.put((job, _progress_json(job, record)))

    return render_job(
        inputs,
        _weights(inputs.job.settings.weights),
        progress=report,
        app_version=__version__,
        checkpoints=CheckpointStore(),
    )


class ProcessPool:
    """``workers`` jobs at once, each in a process of its own with its share of the CPU's threads
    (and a GPU of its own, in turn, where there are several)."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self._executor: concurrent.futures.ProcessPoolExecutor | None = None

    def run(self, work: Iterable[JobInputs]) -> Iterator[Report]:
        work = iter(work)
        context = multiprocessing.get_context("spawn")  # no inherited torch threads or locks
        manager = context.Manager()
        reports = manager.Queue()
        threads = max(1, (os.cpu_count() or 1) // self.workers)
        share = gpu_share(self.workers, _cuda_devices())
        gpus = None
        if share is not None:
            gpus = manager.Queue()
            for index in share:
                gpus.put(index)
        self._executor = concurrent.futures.ProcessPoolExecutor(
            self.workers, mp_context=context, initializer=_pool_start, initargs=(threads, reports, gpus)
        )
        executor = self._executor
        try:
            # Each worker busy and one job waiting for it: the rest of the inputs are not read yet.
            futures: dict[concurrent.futures.Future[RenderedJob], str] = {}
            for inputs in _taken(work, lambda: len(futures) < 2 * self.workers):
                futures[executor.submit(_pool_render, inputs)] = inputs.job.id
            while futures:
                done, _ = concurrent.futures.wait(futures, timeout=0.2, return_when="FIRST_COMPLETED")
                yield from _drain(reports)
                for future in done:
                    yield futures.pop(future), _result_of(future)
                for inputs in _taken(work, lambda: len(futures) < 2 * self.workers):
                    futures[executor.submit(_pool_render, inputs)] = inputs.job.id
            yield from _drain(reports)
        finally:
            self._stop()
            manager.shutdown()

    def cancel(self) -> None:
        self._stop()

    def _stop(self) -> None:
        executor, self._executor = self._executor, None
        if executor is None:
            return
        for process in list(getattr(executor, "_processes", {}).values()):
            process.terminate()  # a running render has nothing worth waiting for: nothing is written by workers
        executor.shutdown(wait=True, cancel_futures=True)


def _cuda_devices() -> int:
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def _taken(work: Iterator[JobInputs], room: Callable[[], bool]) -> Iterator[JobInputs]:
    """Jobs from ``work`` while ``room()`` says one more can start."""
    while room():
        inputs = next(work, None)
        if inputs is None:
            return
        yield inputs


def _drain(reports: Any) -> Iterator[Report]:
    while True:
        try:
            yield reports.get_nowait()
        except queue.Empty:
            return


def _result_of(future: concurrent.futures.Future[RenderedJob]) -> RenderedJob | StyleStudioError:
    try:
        return future.result()
    except StyleStudioError as exc:
        return exc
    except concurrent.futures.CancelledError:
        return StyleStudioError("cancelled")
    except Exception as exc:  # a worker died (out of memory, killed) or a bug: the job fails, the batch goes on
        return StyleStudioError(f"the worker failed: {exc.__class__.__name__}: {exc}")


# -- a Ray cluster ---------------------------------------------------------------------------------


def _ray_render(inputs: JobInputs, weights_data: bytes | None, weights_digest: str, threads: int) -> RenderedJob:
    """A Ray task: render one job on whichever node Ray chose (the weights file's bytes travel with it)."""
    import torch

    torch.set_num_threads(threads)
    weights = _weights_from_bytes(inputs.job.settings.weights, weights_data, weights_digest)
    # Checkpoints in the node's own cache: a job Ray starts again on the same node goes on from there.
    return render_job(inputs, weights, app_version=__version__, checkpoints=CheckpointStore())


class RayCluster:
    """Each job a Ray task on an existing cluster (``address`` "auto" or host:port), one GPU each where there are GPUs.

    The inputs and the weights file travel through Ray's object store.
    """

    def __init__(self, address: str) -> None:
        try:
            import ray
        except ImportError:
            raise StyleStudioError(RAY_INSTALL_HINT) from None
        self._ray = ray
        self.address = address
        self._refs: list[Any] = []
        #: How many jobs the batch has (a few jobs on a large cluster get more CPUs each).
        self.jobs_hint = 1

    def connect(self) -> str:
        """Join the cluster; a description of it ("3 nodes, 24 CPUs, 2 GPUs")."""
        ray = self._ray
        try:
            ray.init(address=self.address, ignore_reinit_error=True, log_to_driver=False, logging_level="ERROR")
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise StyleStudioError(
                f"cannot reach a Ray cluster at {self.address} ({exc}); start one with `ray start --head`"
            ) from None
        resources = ray.cluster_resources()
        nodes = len([n for n in ray.nodes() if n.get("Alive")])
        return f"{nodes} node(s), {resources.get('CPU', 0):g} CPUs, {resources.get('GPU', 0):g} GPUs"

    def run(self, work: Iterable[JobInputs]) -> Iterator[Report]:
        ray = self._ray
        work = iter(work)
        resources = ray.cluster_resources()
        gpus = int(resources.get("GPU", 0))
        total = int(resources.get("CPU", 1))
        cpus = 1 if gpus else max(1, total // max(1, min(self.jobs_hint, total)))
        slots = gpus if gpus else max(1, total // cpus)
        task = ray.remote(num_cpus=cpus, num_gpus=1 if gpus else 0, max_retries=0)(_ray_render)
        # Each weights file once into the object store, when a job first needs it; the ImageNet
        # file too (workers may be offline).
        shipped: dict[str, tuple[Any, str]] = {}
        jobs: dict[Any, str] = {}

        def submit(inputs: JobInputs) -> None:
            choice = inputs.job.settings.weights
            if choice not in shipped:
                shipped[choice] = (ray.put(_weights_bytes(choice)), _weights_digest(choice))
            jobs[task.remote(inputs, *shipped[choice], cpus)] = inputs.job.id

        # Every slot busy and as many jobs queued behind them: the rest of the inputs are not read yet.
        for inputs in _taken(work, lambda: len(jobs) < 2 * slots):
            submit(inputs)
        while jobs:
            self._refs = list(jobs)
            done, _ = ray.wait(list(jobs), num_returns=1, timeout=0.5)
            for ref in done:
                yield jobs.pop(ref), self._result_of(ref)
            for inputs in _taken(work, lambda: len(jobs) < 2 * slots):
                submit(inputs)
        self._refs = []

    def _result_of(self, ref: Any) -> RenderedJob | StyleStudioError:
        ray = self._ray
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
        for ref in self._refs:
            try:
                self._ray.cancel(ref, force=True)
            except Exception:  # a task that already ended cannot be cancelled
                continue

    def close(self) -> None:
        self._ray.shutdown()


def _last_line(exc: BaseException) -> str:
    lines = [line for line in str(exc).splitlines() if line.strip()]
    return lines[-1] if lines else exc.__class__.__name__


def _weights_digest(choice: str) -> str:
    """The SHA-256 of a weights choice's file, as workers key what they loaded ("untrained" for none)."""
    from .core.files import file_digest
    from .core.weights import IMAGENET, UNTRAINED, imagenet_cache_path

    if choice == UNTRAINED:
        return UNTRAINED
    try:
        return file_digest(imagenet_cache_path() if choice == IMAGENET else Path(choice).expanduser())
    except OSError as exc:
        raise StyleStudioError(f"the weights file {choice} cannot be read ({exc.strerror or exc})") from None


def _weights_bytes(choice: str) -> bytes | None:
    """The bytes of a weights choice's file (None: untrained, made from a seed on the worker)."""
    from .core.weights import IMAGENET, UNTRAINED, imagenet_cache_path

    if choice == UNTRAINED:
        return None
    path = imagenet_cache_path() if choice == IMAGENET else os.path.expanduser(choice)
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as exc:
        raise StyleStudioError(f"the weights file {choice} cannot be read ({exc.strerror or exc})") from None


# -- the batch ------------------------------------------------------------------------------------------


@dataclass
class BatchRun:
    """A batch's jobs and how it went, job by job."""

    jobs: Sequence[BatchJob]
    outcomes: dict[str, JobOutcome]
    interrupted: bool = False

    def ordered(self) -> list[JobOutcome]:
        return [self.outcomes.get(j.id, JobOutcome(j, "cancelled", "the batch was stopped")) for j in self.jobs]

    @property
    def failed(self) -> bool:
        return any(o.status == "failed" for o in self.outcomes.values())


Event = Callable[[str, Any], None]


def run_batch(jobs: Sequence[BatchJob], runner: Runner, on_event: Event | None = None) -> BatchRun:
    """Render the jobs that are not done yet with ``runner``; write each result as it comes.

    ``on_event(kind, data)``: "skipped"/"done"/"failed" with a JobOutcome,
    "progress" with a JSON progress record carrying the job's id.
    Ctrl+C (KeyboardInterrupt) cancels what is left; finished outputs stay.
    """
    event = on_event or (lambda kind, data: None)
    batch = BatchRun(jobs, {})
    remove_partial_files(job.output.parent for job in jobs)
    by_id = {job.id: job for job in jobs}
    try:
        for job_id, report in runner.run(_work(jobs, batch, event)):
            job = by_id[job_id]
            if isinstance(report, dict):
                event("progress", report)
            elif isinstance(report, StyleStudioError):
                _finish(batch, JobOutcome(job, "failed", str(report)), event)
            else:
                _finish(batch, _written(job, report), event)
    except KeyboardInterrupt:
        runner.cancel()
        batch.interrupted = True
    return batch


def _work(jobs: Sequence[BatchJob], batch: BatchRun, event: Event) -> Iterator[JobInputs]:
    """The jobs still to do, their files read only when a runner takes them (one job's bytes at a time,
    not 50 photos x 20 styles of 9 MB before the first starts); done and unreadable ones are reported."""
    for job in jobs:
        try:
            inputs = JobInputs.read(job)
        except OSError as exc:
            _finish(batch, JobOutcome(job, "failed", f"{exc.filename or job.content}: {exc.strerror or exc}"), event)
            continue
        except StyleStudioError as exc:
            _finish(batch, JobOutcome(job, "failed", str(exc)), event)
            continue
        if already_done(job, inputs.key):
            _finish(batch, JobOutcome(job, "skipped", "already done, with the same settings and pictures"), event)
        else:
            yield inputs


def _written(job: BatchJob, rendered: RenderedJob) -> JobOutcome:
    job.output.parent.mkdir(parents=True, exist_ok=True)
    try:
        write_output(job, rendered, f"Style Studio {__version__}")
    except StyleStudioError as exc:
        return JobOutcome(job, "failed", str(exc), rendered.seconds)
    return JobOutcome(job, "done", rendered.compute, rendered.seconds)


def _finish(batch: BatchRun, outcome: JobOutcome, event: Event) -> None:
    batch.outcomes[outcome.job.id] = outcome
    event(outcome.status, outcome)


def print_summary(batch: BatchRun, out: IO[str]) -> None:
    """The table of every job: done, skipped, failed (and why), or not run."""
    rows = summary_rows(batch.ordered())
    header = ["job", "pictures", "output", "status", "s", "note"]
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, ["-" * w for w in widths], *rows]:
        out.write("  ".join(str(cell).ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() + "\n")
    counts = {s: sum(o.status == s for o in batch.ordered()) for s in ("done", "skipped", "failed", "cancelled")}
    out.write(", ".join(f"{n} {s}" for s, n in counts.items() if n) + "\n")


class BatchProgress:
    """The batch's progress as two bars (the batch, the job reporting last), JSON lines, or nothing."""

    def __init__(self, mode: str, total: int, stdout: IO[str], stderr: IO[str]) -> None:
        self.mode, self.total, self.stdout, self.stderr = mode, total, stdout, stderr
        self._lock = threading.Lock()
        self._batch: Any = None
        self._job: Any = None
        self._job_id: str | None = None
        if mode == "bar":
            from tqdm import tqdm

            self._batch = tqdm(total=total, file=stderr, unit="job", desc="batch", position=0, dynamic_ncols=True)

    def __call__(self, kind: str, data: Any) -> None:
        with self._lock:
            if self.mode == "json":
                record = data if kind == "progress" else data.to_json()
                self.stdout.write(json.dumps(record) + "\n")
                self.stdout.flush()
            elif self.mode == "bar":
                self._bar(kind, data)

    def _bar(self, kind: str, data: Any) -> None:
        from tqdm import tqdm

        if kind == "progress":
            if data["job"] != self._job_id or self._job is None:
                if self._job is not None:
                    self._job.close()
                self._job_id = data["job"]
                self._job = tqdm(
                    total=data["steps"], file=self.stderr, unit="it", desc=f"job {data['job']}", position=1, leave=False
                )
            self._job.update(data["step"] - self._job.n)
            return
        self._batch.update(1)
        if kind == "failed":
            self._batch.write(
                f"style-studio: job {data.job.id} ({data.job.describe()}) failed: {data.reason}", file=self.stderr
            )

    def close(self) -> None:
        for bar in (self._job, self._batch):
            if bar is not None:
                bar.close()
        self._job = self._batch = None
