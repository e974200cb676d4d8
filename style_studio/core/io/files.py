"""Writing files so that a reader never sees half of one."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import tempfile
import time
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
    file behind. The folder is synced after the rename, so that the new name
    survives a power cut too. A file that exists keeps its permissions; a
    symbolic link stays a link, and the file it points to is replaced.

    Raises:
        OSError: the folder is missing or read-only, the disk is full, ...
    """
    path = Path(os.path.realpath(path)) if path.is_symlink() else path
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except OSError:
        mode = 0o666 & ~_UMASK
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=path.suffix + ".part", dir=path.parent)
    tmp: Path | None = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            write(out)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp_name, mode)
        os.replace(tmp_name, path)
        tmp = None
    finally:
        if tmp is not None:
            tmp.unlink(missing_ok=True)
    _sync_folder(path.parent)


def write_bytes_atomically(path: Path, data: bytes) -> None:
    """``write_atomically`` of ``data``."""

    def write(out: BinaryIO) -> None:
        out.write(data)

    write_atomically(path, write)


def folder_problem(target: Path, folder: Path) -> str | None:
    """Why ``target`` cannot be written in ``folder`` (missing, read-only), said for the user; None: it can."""
    if not folder.is_dir():
        return f"{target}: the folder {folder} does not exist"
    if not os.access(folder, os.W_OK):
        return f"{target}: the folder {folder} is not writable"
    return None


def _sync_folder(folder: Path) -> None:
    """Make a rename in ``folder`` durable (POSIX; Windows has no folder handles to sync)."""
    if os.name != "posix":
        return
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:  # some file systems (network mounts) refuse it; the file itself is synced
        pass
    finally:
        os.close(fd)


def set_aside(path: Path) -> Path:
    """Rename a file or folder that cannot be read to ``<name>.unreadable-<time>`` beside it, and return the new path.

    What this version cannot read (damaged, or written by a newer one) is
    never deleted: the user, or a newer Style Studio, may still want it.

    Raises:
        OSError: it cannot be renamed (it stays where it is).
    """
    stamp = time.strftime("%Y%m%d-%H%M%S")
    target = path.with_name(f"{path.name}.unreadable-{stamp}")
    number = 2
    while target.exists():
        target = path.with_name(f"{path.name}.unreadable-{stamp}-{number}")
        number += 1
    os.replace(path, target)
    return target


def cache_folder() -> Path:
    """The user's cache folder for Style Studio (``STYLE_STUDIO_CACHE`` overrides it)."""
    override = os.environ.get("STYLE_STUDIO_CACHE")
    if override:
        return Path(override)
    import platformdirs

    return Path(platformdirs.user_cache_dir("style-studio", appauthor=False))


def data_folder() -> Path:
    """The user's data folder for Style Studio: the queue, kept results (``STYLE_STUDIO_DATA`` overrides it)."""
    override = os.environ.get("STYLE_STUDIO_DATA")
    if override:
        return Path(override)
    import platformdirs

    return Path(platformdirs.user_data_dir("style-studio", appauthor=False))


_DIGESTS_FILE = "file-digests.json"
_digests: dict[str, tuple[int, int, str]] = {}


def file_digest(path: Path) -> str:
    """The SHA-256 of a file's bytes, worked out once per (path, size, modification time).

    What a file *is* rather than where it is: a different file copied to the
    same path gets another digest. Known digests are kept in memory and in
    the cache folder, so a 550 MB weights file is read once, not at every run.

    Raises:
        OSError: the file cannot be read.
    """
    real = os.path.realpath(path)
    info = os.stat(real)
    known = _digests.get(real) or _stored_digests().get(real)
    if known is not None and known[:2] == (info.st_size, info.st_mtime_ns):
        _digests[real] = known
        return known[2]
    digest = hashlib.sha256()
    with open(real, "rb") as data:
        for chunk in iter(lambda: data.read(1 << 20), b""):
            digest.update(chunk)
    _digests[real] = (info.st_size, info.st_mtime_ns, digest.hexdigest())
    _store_digests()
    return digest.hexdigest()


def _stored_digests() -> dict[str, tuple[int, int, str]]:
    try:
        stored = json.loads((cache_folder() / _DIGESTS_FILE).read_text(encoding="utf-8"))
        return {str(k): (int(v[0]), int(v[1]), str(v[2])) for k, v in stored.items()}
    except (OSError, ValueError, TypeError, KeyError, IndexError, AttributeError):
        return {}  # none yet, or damaged: the digests are worked out again


def _store_digests() -> None:
    merged = {**_stored_digests(), **_digests}
    text = json.dumps({k: list(v) for k, v in merged.items()}, indent=0).encode()
    try:
        cache_folder().mkdir(parents=True, exist_ok=True)
        write_atomically(cache_folder() / _DIGESTS_FILE, lambda out: out.writelines([text]))
    except OSError:
        pass  # a cache: the digest is still right, only worked out again next time
