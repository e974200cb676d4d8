"""What a batch runner reports as it goes: a job's progress, its result, or why it failed, one type each.

Whichever runs the jobs (this process, a pool, Ray, a clip in chunks), ``run_batch`` reads these and nothing
else; each crosses processes (pickled by a pool's queue) as it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeAlias

from ..core import RenderedJob, StyleStudioError


@dataclass(frozen=True)
class JobProgress:
    """Where a job's run stands: its record as ``--progress json`` prints it, with the job's id (``"job"``)."""

    job: str
    record: dict[str, Any]


@dataclass(frozen=True)
class LookProgress:
    """Where the look a batch's pictures in one painting share stands while it is tuned, before they are painted:
    its step's record as ``--progress json`` prints it (``TuningProgress``), with the jobs it is for (``"jobs"``)."""

    jobs: tuple[str, ...]
    record: dict[str, Any]


@dataclass(frozen=True)
class JobRendered:
    """A job's result, to be written by the batch (a clip in chunks: written already, ``VideoWritten``)."""

    job: str
    rendered: RenderedJob


@dataclass(frozen=True)
class JobFailed:
    """A job that could not be made, and why, said for the user ("cancelled" for one the batch stopped)."""

    job: str
    reason: str


RunnerReport: TypeAlias = JobProgress | JobRendered | JobFailed


def ended(job: str, result: RenderedJob | StyleStudioError) -> JobRendered | JobFailed:
    """The report of a job that ended with ``result``: its picture, or the error that stopped it."""
    if isinstance(result, StyleStudioError):
        return JobFailed(job, str(result))
    return JobRendered(job, result)
