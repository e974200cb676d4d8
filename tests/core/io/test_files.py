"""Atomic writes keep what the user had: permissions, links, and the new name across a power cut."""

from __future__ import annotations

import hashlib
import json
import os
import stat

import pytest

from style_studio.core.io import files
from style_studio.core.io.files import file_digest, write_atomically


def write(text):
    return lambda out: out.write(text.encode())


def test_a_rewritten_file_keeps_its_permissions(tmp_path):
    path = tmp_path / "preset.json"
    path.write_text("old")
    path.chmod(0o640)
    write_atomically(path, write("new"))
    assert path.read_text() == "new" and stat.S_IMODE(path.stat().st_mode) == 0o640


def test_a_new_file_gets_the_permissions_open_would_give(tmp_path):
    write_atomically(tmp_path / "new.json", write("x"))
    (tmp_path / "plain.json").write_text("x")
    modes = [stat.S_IMODE((tmp_path / name).stat().st_mode) for name in ("new.json", "plain.json")]
    assert modes[0] == modes[1]


def test_a_symlinked_file_stays_a_link_and_its_target_is_rewritten(tmp_path):
    (tmp_path / "shared").mkdir()
    target = tmp_path / "shared" / "preset.json"
    target.write_text("old")
    link = tmp_path / "preset.json"
    link.symlink_to(target)
    write_atomically(link, write("new"))
    assert link.is_symlink() and target.read_text() == "new"
    assert not [p for p in tmp_path.rglob("*.part")]


def test_the_folder_is_synced_after_the_rename(tmp_path, monkeypatch):
    synced = []
    real_fsync = os.fsync

    def recording_fsync(fd):
        synced.append(stat.S_ISDIR(os.fstat(fd).st_mode))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", recording_fsync)
    write_atomically(tmp_path / "out.bin", write("x"))
    assert synced == [False, True]  # the file's data, then the folder's entry


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    path = tmp_path / "out.bin"
    path.write_text("old")

    def failing(out):
        out.write(b"half")
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError):
        write_atomically(path, failing)
    assert path.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["out.bin"]


def test_a_files_digest_is_its_contents_and_is_worked_out_once(tmp_path, monkeypatch):
    monkeypatch.setattr(files, "_digests", {})
    path = tmp_path / "weights.pth"
    path.write_bytes(b"first weights")
    first = file_digest(path)
    assert first == hashlib.sha256(b"first weights").hexdigest()
    # Another process finds it in the cache folder, without reading the file again.
    monkeypatch.setattr(files, "_digests", {})
    stored = json.loads((files.cache_folder() / "file-digests.json").read_text())
    stored[os.path.realpath(path)][2] = "from the cache"
    (files.cache_folder() / "file-digests.json").write_text(json.dumps(stored))
    assert file_digest(path) == "from the cache"
    # Another file at the same path (same size, another time) is read again.
    path.write_bytes(b"other weights")
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))
    assert file_digest(path) == hashlib.sha256(b"other weights").hexdigest()
