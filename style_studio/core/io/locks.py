"""Locks between processes: two windows, two batches or two renders never work on the same files at once.

A lock is a file held with the operating system's file locking (through the
``filelock`` library), so it is let go when its process ends, even by a
crash or a kill: a stale lock never blocks the next start. Within one process
a lock is re-entrant, so that the command line can hold a run's lock while
the engine takes it again.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import filelock

from ..errors import StyleStudioError
from .files import cache_folder, path_key

log = logging.getLogger(__name__)


class Busy(StyleStudioError):
    """Another Style Studio process holds the lock."""


def _lock(path: Path) -> filelock.FileLock:
    # One instance per path in this process (re-entrant across threads); never waits.
    return filelock.FileLock(path, timeout=0, is_singleton=True, thread_local=False)


@contextmanager
def held(path: Path, busy_message: str) -> Iterator[None]:
    """Hold the lock file ``path`` while the block runs (its folder is made if needed).

    A lock file that cannot be made (a read-only folder) is logged and the
    block runs unlocked: what it guards cannot be written there either.

    Raises:
        Busy: another process holds it; ``busy_message`` says what for the user.
    """
    lock = _lock(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        lock.acquire()
    except filelock.Timeout:
        raise Busy(busy_message) from None
    except OSError as exc:
        log.warning("cannot lock %s (%s); going on without the lock", path, exc)
        yield
        return
    try:
        yield
    finally:
        lock.release()


def in_use_elsewhere(path: Path) -> bool:
    """Whether another process holds the lock file ``path`` now."""
    if not path.exists():
        return False
    try:
        with held(path, ""):
            return False
    except Busy:
        return True


def folder_lock(folder: Path, role: str) -> Path:
    """The lock file for ``folder`` in one ``role`` ("batch": a batch's output folder), in the cache folder.

    Kept out of the folder itself, so that a user's folder holds only their pictures.
    """
    key = hashlib.sha256(path_key(folder).encode()).hexdigest()[:16]
    return cache_folder() / "locks" / f"{role}-{key}.lock"
