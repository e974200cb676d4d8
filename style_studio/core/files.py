"""Writing files so that a reader never sees half of one."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

# The permissions a plain open() would give a new file (mkstemp makes it 0600).
_UMASK = os.umask(0)
os.umask(_UMASK)


def write_atomically(path: Path, write: Callable[[BinaryIO], None]) -> None:
    """Call ``write`` on a temporary file beside ``path``, sync it, then rename it over ``path``.

    A careful editor's autosave: a crash, a full disk or an exception in
    ``write`` leaves any existing file at ``path`` untouched and no temporary
    file behind.

    Raises:
        OSError: the folder is missing or read-only, the disk is full, ...
    """
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=path.suffix + ".part", dir=path.parent)
    tmp: Path | None = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            write(out)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp_name, 0o666 & ~_UMASK)
        os.replace(tmp_name, path)
        tmp = None
    finally:
        if tmp is not None:
            tmp.unlink(missing_ok=True)
