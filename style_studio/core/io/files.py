"""Writing files so that a reader never sees half of one."""

from __future__ import annotations

import contextlib
import errno
import functools
import hashlib
import json
import os
import re
import secrets
import shutil
import socket
import stat
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO, Final

from ..errors import UnsafePathError

# The permissions a plain open() would give a new file (mkstemp makes it 0600).
UMASK: Final = os.umask(0)
os.umask(UMASK)


#: What a temporary file or folder of ours is called: ``.<name>.ss-<host>-<pid>-<token>.part`` beside its target
#: (before the host was named: ``.<name>.ss-<pid>-<token>.part``). The host and the process id let a later run
#: tell a stale temporary (its writer, on this machine, is gone) from one being written now, here or elsewhere.
TEMPORARY: Final = re.compile(r"^\..*\.ss-(?:([0-9a-f]{8})-)?(\d+)-[0-9a-f]{8}\.part(\.[A-Za-z0-9]+)?$")
#: Another machine's temporary untouched this long is its killed writer's: no writer leaves a file alone a week.
FOREIGN_STALE_SECONDS: Final = 7 * 24 * 3600.0


@functools.cache
def host_tag() -> str:
    """This machine as its temporaries name it: its name, its boot and (Linux) its process-id namespace, hashed.

    Two containers or two computers writing to one shared folder may run processes of the same number: a
    temporary's process id is judged only by a process of the same host.
    """
    parts = [socket.gethostname()]
    for source in ("/proc/sys/kernel/random/boot_id", "/proc/self/ns/pid"):
        try:
            parts.append(os.readlink(source) if source.endswith("/pid") else Path(source).read_text().strip())
        except OSError:
            parts.append("")
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:8]


def temporary_beside(path: Path) -> Path:
    """A new temporary name beside ``path``, one ``sweep_temporaries`` recognises once its process is gone."""
    return path.with_name(f".{path.name}.ss-{host_tag()}-{os.getpid()}-{secrets.token_hex(4)}.part")


def sweep_temporaries(folder: Path) -> list[Path]:
    """Remove the temporary files and folders that a killed writer left in ``folder``; returns what was removed.

    Only names of ours (``TEMPORARY``) whose writing process is gone are
    removed: a user's ``.notes.part`` and a write under way now are left. A
    temporary another host (a computer or a container sharing the folder)
    is writing is left too; its process is not ours to judge, unless it was
    left untouched for a week.
    """
    removed: list[Path] = []
    try:
        entries = list(folder.iterdir())
    except OSError:
        return removed
    for entry in entries:
        match = TEMPORARY.match(entry.name)
        if match is None or _being_written(entry, match.group(1), int(match.group(2))):
            continue
        try:
            if entry.is_dir() and not entry.is_symlink():
                remove_tree(entry, folder)
            else:
                entry.unlink()
        except OSError:
            continue
        removed.append(entry)
    return removed


_swept: set[str] = set()


def _sweep_once(folder: Path) -> None:
    """``sweep_temporaries`` the first time this process writes into ``folder``: a batch of 10,000 pictures into
    one folder lists it once, not 10,000 times (a temporary left since is this process's own, not stale)."""
    key = os.path.realpath(folder)
    if key not in _swept:
        sweep_temporaries(folder)
        _swept.add(key)


def _being_written(entry: Path, host: str | None, pid: int) -> bool:
    """Whether a temporary may still be written: by a process of this host that runs, or on another host."""
    if host is None or host == host_tag():
        return _process_runs(pid)
    try:
        return time.time() - entry.lstat().st_mtime < FOREIGN_STALE_SECONDS
    except OSError:
        return True


def _process_runs(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True  # someone else's process, or a number we cannot ask about: leave it
    return True


def create_private(path: Path) -> None:
    """Create the new, empty file ``path``, readable by its owner alone until it is given its final mode.

    Raises:
        OSError: the folder is missing or read-only, or ``path`` exists.
    """
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))


@contextlib.contextmanager
def replacing(path: Path, before_replace: Callable[[], None] | None = None) -> Iterator[Path]:
    """Give the block a temporary file beside ``path`` to write; when it ends well, put it in ``path``'s place.

    The rules of a careful editor's autosave: the temporary is synced, given
    the permissions of the file it replaces (a new file gets what a plain
    ``open()`` would give it), renamed over ``path`` and the folder synced,
    so that a crash, a full disk or an exception leaves any existing file at
    ``path`` untouched and no temporary file behind (a kill leaves one that
    ``sweep_temporaries`` recognises). A symbolic link stays a link: the file
    it points to is replaced. ``before_replace`` runs just before the rename
    (a last check of where the file goes); what it raises leaves ``path`` as it was.

    Raises:
        OSError: the folder is missing or read-only, the disk is full, ...
    """
    path = Path(os.path.realpath(path)) if path.is_symlink() else path
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except OSError:
        mode = 0o666 & ~UMASK
    _sweep_once(path.parent)
    part = temporary_beside(path)
    create_private(part)
    try:
        yield part
        with open(part, "rb+") as written:
            os.fsync(written.fileno())
        os.chmod(part, mode)
        if before_replace is not None:
            before_replace()
        os.replace(part, path)
    finally:
        part.unlink(missing_ok=True)
    sync_folder(path.parent)


def write_atomically(
    path: Path, write: Callable[[BinaryIO], None], before_replace: Callable[[], None] | None = None
) -> None:
    """Call ``write`` on a temporary file beside ``path``, then put it in ``path``'s place (``replacing``).

    Raises:
        OSError: the folder is missing or read-only, the disk is full, ...
    """
    with replacing(path, before_replace) as part, open(part, "wb") as out:
        write(out)


def write_bytes_atomically(path: Path, data: bytes, before_replace: Callable[[], None] | None = None) -> None:
    """``write_atomically`` of ``data``."""

    def write(out: BinaryIO) -> None:
        out.write(data)

    write_atomically(path, write, before_replace)


def path_key(path: Path) -> str:
    """What names one file or folder, for the checks that two outputs are one and for the locks: its real path,
    case-folded where the file system ignores case (macOS's and Windows' do: ``A.png`` and ``a.png`` are one file,
    which ``realpath`` and ``normcase`` do not see for a file that does not exist yet)."""
    real = os.path.normcase(os.path.realpath(path))
    return real.casefold() if ignores_case(os.path.dirname(real)) else real


@functools.lru_cache(maxsize=256)
def ignores_case(folder: str) -> bool:
    """Whether the file system that holds ``folder`` ignores case: the nearest existing folder at or above it whose
    name has letters is found again under that name in the other case. Without one (the root), the system's
    usual file system answers (Windows' and macOS's ignore case)."""
    here = folder
    while True:
        name = os.path.basename(here)
        if name != name.swapcase() and os.path.isdir(here):
            try:
                return os.path.samefile(here, os.path.join(os.path.dirname(here), name.swapcase()))
            except OSError:
                return False
        parent = os.path.dirname(here)
        if parent == here:
            return os.name == "nt" or sys.platform == "darwin"
        here = parent


def writable_by_user(path: Path) -> bool:
    """Whether the user may write the existing file ``path`` (a link: the file it leads to), as ``cp`` and a shell's
    ``>`` judge it: renaming over a file would replace it whatever its permissions say.

    The superuser may write any file, but a file whose mode grants nobody writing was made read-only on purpose.
    """
    try:
        info = os.stat(path)
    except OSError:
        return True  # nothing there to protect (a link to nothing: the file is made)
    if os.name == "posix" and os.geteuid() == 0:
        return bool(info.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    return os.access(path, os.W_OK)


def read_given_file(path: Path, limit: int) -> bytes:
    """The bytes of a file the user named (a picture, a preset, a jobs file), read only when it is a plain file of
    at most ``limit`` bytes: a named pipe would block the read for ever, and ``/dev/zero`` fill the memory.

    Raises:
        OSError: it cannot be read; ``strerror`` says why for the user (missing, a folder, not a plain file, too
            large, a name too long, permission denied, ...).
    """
    info = os.stat(path)  # a pipe is refused from here, before open() waits for its writer
    if stat.S_ISDIR(info.st_mode):
        raise IsADirectoryError(errno.EISDIR, "a folder, not a file", str(path))
    if not stat.S_ISREG(info.st_mode):
        raise OSError(errno.EINVAL, "not a plain file, but a pipe, a device or a socket", str(path))
    if info.st_size > limit:
        raise OSError(errno.EFBIG, f"{info.st_size / 2**20:.0f} MB, over the {limit / 2**20:.0f} MB read",
                      str(path))  # fmt: skip
    with open(path, "rb") as file:
        return file.read(limit + 1)[:limit]


def folder_problem(target: Path, folder: Path) -> str | None:
    """Why ``target`` cannot be written in ``folder`` (missing, read-only), said for the user; None: it can."""
    try:
        is_folder = stat.S_ISDIR(os.stat(folder).st_mode)
    except FileNotFoundError:
        is_folder = False
    except (OSError, ValueError) as exc:  # a name too long, a NUL in it
        return f"{target}: cannot be written there ({exc.strerror if isinstance(exc, OSError) else exc})"
    if not is_folder:
        return f"{target}: the folder {folder} does not exist"
    if not os.access(folder, os.W_OK):
        return f"{target}: the folder {folder} is not writable"
    return None


def sync_folder(folder: Path) -> None:
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


def set_aside(path: Path, into: Path | None = None, prefix: str = "") -> Path:
    """Rename a file or folder that cannot be read to ``<prefix><name>.unreadable-<time>``, beside it or in the
    folder ``into`` (made if needed), and return the new path.

    What this version cannot read (damaged, or written by a newer one) is
    never deleted: the user, or a newer Style Studio, may still want it.

    Raises:
        OSError: it cannot be renamed (it stays where it is).
    """
    folder = path.parent if into is None else into
    folder.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    target = folder / f"{prefix}{path.name}.unreadable-{stamp}"
    number = 2
    while os.path.lexists(target):
        target = folder / f"{prefix}{path.name}.unreadable-{stamp}-{number}"
        number += 1
    os.replace(path, target)
    return target


def remove_tree(path: Path, owner: Path) -> None:
    """Remove the folder ``path`` and all it holds, which must lie inside the folder ``owner`` (its owner).

    The one way Style Studio deletes a folder: a path that leads outside
    ``owner`` (``..``, a link, an absolute name from a damaged file) or is
    ``owner`` itself is refused, and a link is never followed. Nothing to
    remove is not an error.

    Raises:
        UnsafePathError: ``path`` is not strictly inside ``owner``.
        OSError: it could not all be removed.
    """
    if not os.path.lexists(path):
        return
    real_owner = os.path.realpath(owner)
    real_parent = os.path.realpath(path.parent)
    inside = real_parent == real_owner or real_parent.startswith(real_owner.rstrip(os.sep) + os.sep)
    if not inside or path.name in ("", ".", "..") or path.is_symlink():
        raise UnsafePathError(f"{path}: not removed, it is not a folder inside {owner}")
    shutil.rmtree(path)


#: What a name that becomes a file or folder name may be: letters, digits, '.', '_' and '-', not starting with '.'.
_SAFE_NAME: Final = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}")


def check_name(name: str, what: str = "name") -> str:
    """``name`` when it can safely become one file or folder name; else UnsafePathError saying what it was.

    Names read from files (queue ids, run ids) reach here before any path is
    built from them, so ``x/../../victim`` is refused rather than followed.
    """
    if not isinstance(name, str) or not _SAFE_NAME.fullmatch(name):
        raise UnsafePathError(f"{what} {name!r} cannot be a file name (use letters, digits, '.', '_' and '-')")
    return name


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
