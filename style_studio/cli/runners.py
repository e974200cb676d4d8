"""The batch runners: many jobs, in this process or in a pool of processes (on Ray: ``ray_cluster``).

Whichever runs the jobs (a ``Runner``), this process reads the inputs, skips
the jobs whose outputs are already there, and writes every result, atomically:
a worker gets bytes and sends back pixels, so it needs no shared folder, and
no output is ever half-written by a worker that was stopped. A worker saves
its job's checkpoints in its machine's cache folder, so a job cut off by a
kill goes on where it stood when the batch runs again there.

Pictures that start from the tuned look in one painting share one look (``core.look_groups``): this process tunes
it on their photos (``door.look``) when the first of them still to make is taken, and each job carries it to
wherever it runs (``JobInputs.look``), so that every picture is painted with it at once.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import functools
import json
import multiprocessing
import os
import queue
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any, Protocol

from .. import __version__
from ..core import (
    FINISHED,
    JOB_WORDS,
    Cancelled,
    CancelToken,
    CheckpointStore,
    Failed,
    Finished,
    Job,
    JobInputs,
    JobOutcome,
    LookGroup,
    RenderedJob,
    Stopped,
    StyleStudioError,
    TuningProgress,
    Why,
    already_done,
    door,
    load_image,
    look_groups,
    remove_partial_files,
    summary_rows,
    write_output,
)
from .reports import JobFailed, JobProgress, JobRendered, LookProgress, RunnerReport, ended

if TYPE_CHECKING:
    from PIL import Image

    from ..core import NetworkWeights, Progress, TunedLook


class Runner(Protocol):
    """Renders jobs somewhere and reports as they progress and end (in any order).

    ``local_files``: it is handed a video's clip where it is, not its bytes (``JobInputs.content_file``): its
    workers read it there a frame at a time, or it reads the bytes itself for a worker elsewhere
    (``JobInputs.carried``), only when that worker needs them.
    """

    local_files: bool

    def run(self, work: Iterable[JobInputs]) -> Iterator[RunnerReport]:
        """Render ``work``, taking each job from it only when there is room to start it."""
        ...

    def cancel(self) -> None: ...


# -- weights, loaded once per worker process ------------------------------------------------


@functools.lru_cache(maxsize=2)
def _weights(choice: str) -> NetworkWeights:
    from ..core import load_weights

    return load_weights(choice, download=True)


def _progress(job_id: str, record: Progress | TuningProgress) -> JobProgress:
    return JobProgress(job_id, {"job": job_id, **record.to_json()})


# -- in this process -------------------------------------------------------------------------------


class InProcess:
    """One job at a time in this process: progress every iteration, Stop within one."""

    local_files = True

    def __init__(self) -> None:
        self._cancel = CancelToken()

    def run(self, work: Iterable[JobInputs]) -> Iterator[RunnerReport]:
        for inputs in work:
            if self._cancel.cancelled:
                return
            reports: queue.Queue[RunnerReport | None] = queue.Queue()
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

    def _render(self, inputs: JobInputs, reports: queue.Queue[RunnerReport | None]) -> None:
        job = inputs.job.id

        def told(record: Progress | TuningProgress) -> None:
            reports.put(_progress(job, record))

        try:
            hooks = door.JobHooks(cancel=self._cancel, progress=told, checkpoints=CheckpointStore(),
                                  app_version=__version__, tuning=told)  # fmt: skip
            rendered = door.job(inputs, _weights(inputs.job.settings.network_weights), hooks)
            reports.put(JobRendered(job, rendered))
        except Cancelled:
            pass
        except StyleStudioError as exc:
            reports.put(JobFailed(job, str(exc)))
        except Exception as exc:  # a bug or a device failure: this job fails, the batch goes on
            reports.put(JobFailed(job, f"failed unexpectedly: {exc.__class__.__name__}: {exc}"))
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

    def report(record: Progress | TuningProgress) -> None:
        if _worker_queue is not None:
            _worker_queue.put(_progress(job, record))

    hooks = door.JobHooks(progress=report, checkpoints=CheckpointStore(), app_version=__version__, tuning=report)
    return door.job(inputs, _weights(inputs.job.settings.network_weights), hooks)


class ProcessPool:
    """``workers`` jobs at once, each in a process of its own with its share of the CPU's threads
    (and a GPU of its own, in turn, where there are several)."""

    local_files = True

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self._executor: concurrent.futures.ProcessPoolExecutor | None = None

    def run(self, work: Iterable[JobInputs]) -> Iterator[RunnerReport]:
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
                    yield ended(futures.pop(future), _result_of(future))
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


def _drain(reports: Any) -> Iterator[RunnerReport]:
    """The reports a pool's workers have put in their queue, without waiting."""
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


# -- the batch ------------------------------------------------------------------------------------------


@dataclass
class BatchRun:
    """A batch's jobs and how it went, job by job."""

    jobs: Sequence[Job]
    outcomes: dict[str, JobOutcome]
    interrupted: bool = False

    def ordered(self) -> list[JobOutcome]:
        stopped = "the batch was stopped"
        return [self.outcomes.get(j.id, JobOutcome(j, Stopped(Why.NOT_RUN), stopped)) for j in self.jobs]

    @property
    def failed(self) -> bool:
        return any(isinstance(o.outcome, Failed) for o in self.outcomes.values())


#: What ``run_batch`` tells as it goes: a job's progress, a shared look's tuning, or how a job ended.
Event = Callable[[JobProgress | LookProgress | JobOutcome], None]


def run_batch(jobs: Sequence[Job], runner: Runner, on_event: Event | None = None) -> BatchRun:
    """Render the jobs that are not done yet with ``runner``; write each result as it comes.

    ``on_event``: each job's progress (``JobProgress``), each step of a look its pictures share being tuned
    (``LookProgress``), and how each job ended (``JobOutcome``: done, skipped, failed).
    Ctrl+C (KeyboardInterrupt) cancels what is left; finished outputs stay (and a look's tuning steps done).
    """
    event = on_event or (lambda _: None)
    batch = BatchRun(jobs, {})
    remove_partial_files(job.output.parent for job in jobs)
    by_id = {job.id: job for job in jobs}
    looks = BatchLooks(jobs, event)
    try:
        for report in runner.run(_work(jobs, batch, event, getattr(runner, "local_files", False), looks)):
            match report:
                case JobProgress():
                    event(report)
                case JobFailed(job_id, reason):
                    _finish(batch, JobOutcome(by_id[job_id], Failed(reason)), event)
                case JobRendered(job_id, rendered):
                    _finish(batch, _written(by_id[job_id], rendered), event)
    except KeyboardInterrupt:
        runner.cancel()
        batch.interrupted = True
    return batch


def _work(jobs: Sequence[Job], batch: BatchRun, event: Event, local: bool, looks: BatchLooks) -> Iterator[JobInputs]:
    """The jobs still to do, their files read only when a runner takes them (one job's bytes at a time,
    not 50 photos x 20 styles of 9 MB before the first starts), each with the look it shares (``looks``); done and
    unreadable ones are reported, and so are those whose look could not be tuned."""
    for job in jobs:
        try:
            inputs = JobInputs.read(job, local=local)
        except OSError as exc:
            reason = f"{exc.filename or job.content}: {exc.strerror or exc}"
            _finish(batch, JobOutcome(job, Failed(reason)), event)
            continue
        except StyleStudioError as exc:
            _finish(batch, JobOutcome(job, Failed.of(exc)), event)
            continue
        if already_done(job, inputs.key):
            already = "already done, with the same settings and pictures"
            _finish(batch, JobOutcome(job, Finished(made_before=True), already), event)
            continue
        try:
            look = looks.of(job)
        except StyleStudioError as exc:
            _finish(batch, JobOutcome(job, Failed(f"the look could not be tuned to the painting: {exc}")), event)
            continue
        yield dataclasses.replace(inputs, look=look) if look is not None else inputs


class BatchLooks:
    """The looks a batch's pictures share (``core.look_groups``: one for each painting whose pictures start from the
    tuned look), each tuned once, on its pictures' photos, when the first of them still to make is taken.

    The tuning runs in a thread of this process while this one waits, so that Ctrl+C is heard: it stops the
    tuning (the steps done are kept, and the next batch goes on from them) and then the batch. Its steps are
    told as ``LookProgress``.
    """

    def __init__(self, jobs: Sequence[Job], event: Event) -> None:
        self.event = event
        self._groups = {job.id: group for group in look_groups(jobs) for job in group.jobs}
        self._looks: dict[int, TunedLook | StyleStudioError] = {}

    def of(self, job: Job) -> TunedLook | None:
        """The look ``job`` is painted with (tuned now if it is the first of its group); None: it has none.

        Raises:
            StyleStudioError: the look could not be tuned (said once for each of its pictures).
            KeyboardInterrupt: Ctrl+C while it was tuned.
        """
        group = self._groups.get(job.id)
        if group is None:
            return None
        if id(group) not in self._looks:
            try:
                self._looks[id(group)] = self._tuned(group)
            except StyleStudioError as exc:
                self._looks[id(group)] = exc
        look = self._looks[id(group)]
        if isinstance(look, StyleStudioError):
            raise look
        return look

    def _tuned(self, group: LookGroup) -> TunedLook:
        photos: list[Image.Image] = []
        for path in group.photos:  # a photo that cannot be read is left out: its own job says why, the rest go on
            try:
                photos.append(load_image(path))
            except (OSError, StyleStudioError):
                continue
        if not photos:
            raise StyleStudioError("none of the photos could be read to tune the look on")
        readable = tuple(photos)
        try:
            styles = tuple(load_image(path) for path in group.styles)
        except OSError as exc:
            raise StyleStudioError(f"{exc.filename}: {exc.strerror or exc}") from None
        ids = tuple(job.id for job in group.jobs)
        steps: queue.Queue[TuningProgress | str | TunedLook | BaseException] = queue.Queue()
        cancel = CancelToken()

        def tune() -> None:
            try:
                hooks = door.LookHooks(progress=steps.put, cancel=cancel, say=steps.put)
                steps.put(door.look(door.LookSpec(readable, styles, group.settings),
                                    _weights(group.settings.network_weights), hooks))  # fmt: skip
            except BaseException as exc:  # handed to the batch's thread, which raises it there
                steps.put(exc)

        thread = threading.Thread(target=tune, name="style-studio-look", daemon=True)
        thread.start()
        try:
            while True:
                try:
                    step = steps.get(timeout=0.2)  # a timeout, so that Ctrl+C is seen
                except queue.Empty:
                    continue
                match step:
                    case BaseException():
                        raise step
                    case str():
                        self.event(LookProgress(ids, {"jobs": list(ids), "tuning": True, "event": step}))
                    case TuningProgress():
                        self.event(LookProgress(ids, {"jobs": list(ids), **step.to_json()}))
                    case _:
                        return step
        finally:
            if thread.is_alive():
                cancel.cancel()
                thread.join()


def _written(job: Job, rendered: RenderedJob) -> JobOutcome:
    job.output.parent.mkdir(parents=True, exist_ok=True)
    try:
        write_output(job, rendered, f"Style Studio {__version__}")
    except StyleStudioError as exc:
        return JobOutcome(job, Failed.of(exc), seconds=rendered.seconds)
    return JobOutcome(job, FINISHED, "; ".join([rendered.compute, *rendered.notes]), rendered.seconds)


def _finish(batch: BatchRun, outcome: JobOutcome, event: Event) -> None:
    batch.outcomes[outcome.job.id] = outcome
    event(outcome)


def print_summary(batch: BatchRun, out: IO[str]) -> None:
    """The table of every job: done, skipped, failed (and why), or not run."""
    rows = summary_rows(batch.ordered())
    header = ["job", "pictures", "output", "status", "s", "note"]
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, ["-" * w for w in widths], *rows]:
        out.write("  ".join(str(cell).ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() + "\n")
    counts = {status: sum(o.status == status for o in batch.ordered()) for status in JOB_WORDS}
    out.write(", ".join(f"{n} {status}" for status, n in counts.items() if n) + "\n")


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

    def __call__(self, event: JobProgress | LookProgress | JobOutcome) -> None:
        with self._lock:
            if self.mode == "json":
                match event:
                    case JobProgress(record=record) | LookProgress(record=record):
                        line = record
                    case JobOutcome():
                        line = event.to_json()
                self.stdout.write(json.dumps(line) + "\n")
                self.stdout.flush()
            elif self.mode == "bar":
                self._bar(event)

    def _bar(self, event: JobProgress | LookProgress | JobOutcome) -> None:
        match event:
            case LookProgress(jobs=jobs, record=record):
                named = f"job {jobs[0]}" if len(jobs) == 1 else f"{len(jobs)} jobs ({jobs[0]} to {jobs[-1]})"
                if record.get("event"):
                    self._batch.write(f"style-studio: {named}: {record['event']}", file=self.stderr)
                if "step" in record:
                    self._show(f"look for {named}", "step", record)
            case JobProgress(job=job, record=record):
                self._show(f"job {job}", "it", record)
            case JobOutcome(job=job, outcome=Failed(error=error)):
                self._batch.update(1)
                self._batch.write(f"style-studio: job {job.id} ({job.describe()}) failed: {error}", file=self.stderr)
            case JobOutcome():
                self._batch.update(1)

    def _show(self, name: str, unit: str, record: dict[str, Any]) -> None:
        """The second bar: ``name``'s steps (a job's, or a shared look's tuning), a new bar when it is another's."""
        from tqdm import tqdm

        if name != self._job_id or self._job is None:
            if self._job is not None:
                self._job.close()
            self._job_id = name
            self._job = tqdm(total=record["steps"], file=self.stderr, unit=unit, desc=name, position=1, leave=False)
        self._job.update(record["step"] - self._job.n)

    def close(self) -> None:
        for bar in (self._job, self._batch):
            if bar is not None:
                bar.close()
        self._job = self._batch = None
