"""Every kept file is read in one guarded place: cut, emptied, a byte flipped or the wrong shape, it is read or set
aside with a line saying where, never a traceback and never deleted.

One test per store (checkpoints, a video's kept frames, a chunked render's chunks, the history's results, the
render queue), each damaging a file its own writer wrote, as Hypothesis chooses.
"""

from __future__ import annotations

import dataclasses
import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image

from style_studio.core import Job, KeptResults, QueueItem, RenderQueue, Settings
from style_studio.core import settings as settings_mod
from style_studio.core.jobs.frame_cache import FrameCache
from style_studio.core.jobs.video_chunks import Chunk, ChunkFrames, ChunkStore
from style_studio.core.run.checkpoints import Checkpoint, CheckpointStore, Position

#: How a kept file is damaged: emptied, cut at a share of its length, or one byte flipped at a share of it.
DAMAGE = st.one_of(
    st.just(("empty", 0.0, 0)),
    st.tuples(st.just("cut"), st.floats(0, 1, exclude_max=True), st.just(0)),
    st.tuples(st.just("flip"), st.floats(0, 1, exclude_max=True), st.integers(1, 255)),
)
EXAMPLES = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def damage(path: Path, how: tuple[str, float, int]) -> bytes:
    """Damage ``path`` as ``how`` says; returns its bytes now, which the file must keep wherever it is moved."""
    kind, where, mask = how
    data = bytearray(path.read_bytes())
    at = int(where * len(data))
    if kind == "empty":
        data = bytearray()
    elif kind == "cut":
        data = data[:at]
    else:
        data[at] ^= mask
    path.write_bytes(bytes(data))
    return bytes(data)


@contextmanager
def fresh_folders() -> Iterator[Path]:
    """A cache and data folder of this example's own (Hypothesis runs many examples in one test)."""
    with tempfile.TemporaryDirectory() as folder:
        before = {k: os.environ.get(k) for k in ("STYLE_STUDIO_CACHE", "STYLE_STUDIO_DATA")}
        os.environ["STYLE_STUDIO_CACHE"], os.environ["STYLE_STUDIO_DATA"] = f"{folder}/cache", f"{folder}/data"
        try:
            yield Path(folder)
        finally:
            for key, value in before.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value


def moved_whole(told: list[str], aside: Path, data: bytes, name: str) -> None:
    """The damaged file was moved (under ``aside``), with its bytes, and the one line told says where."""
    kept = [p for p in aside.rglob(f"*{name}*") if p.is_file() and p.read_bytes() == data]
    assert kept, f"{name} is not kept under {aside}"
    assert len(told) == 1 and "could not be read" in told[0] and any(str(k) in told[0] or str(k.parent) in told[0]
                                                                     for k in kept), told  # fmt: skip


def picture(width: int, height: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8)


# -- checkpoints ---------------------------------------------------------------------------------------------------


def keep_a_checkpoint(store: CheckpointStore) -> Checkpoint:
    import torch

    image = torch.rand(1, 3, 12, 16)
    checkpoint = Checkpoint("run-1", Settings(size=32), "c" * 8, ("s" * 8,), ("photo.png", "style.png"),
                            Position(0, 2, 2, 1.0), {"image": image, "lowest": image.clone()}, 1.5)  # fmt: skip
    photo, style = Image.fromarray(picture(16, 12)), Image.fromarray(picture(8, 8, 1))
    store.save(checkpoint, (photo, [style]))
    return checkpoint


@EXAMPLES
@given(how=DAMAGE, which=st.sampled_from(["run.json", "state", "content.png", "style-1.png"]))
def test_a_damaged_checkpoint_is_read_or_set_aside(how: tuple[str, float, int], which: str) -> None:
    with fresh_folders():
        store = CheckpointStore()
        keep_a_checkpoint(store)
        folder = store.folder("run-1")
        path = next(folder.glob("state-*.pt")) if which == "state" else folder / which
        data = damage(path, how)
        told: list[str] = []
        loaded = store.load("run-1", tell=told.append)
        if loaded is not None:  # a flip the formats cannot see: it is whole, and of its shape
            assert loaded.image.shape == (1, 3, 12, 16) and loaded.inputs()[0].size == (16, 12) and not told
            return
        assert not folder.exists()
        moved_whole(told, store.aside, data, path.name)


def test_a_checkpoint_of_the_wrong_shape_is_set_aside() -> None:
    import torch

    store = CheckpointStore()
    keep_a_checkpoint(store)
    state = next(store.folder("run-1").glob("state-*.pt"))
    torch.save({"image": torch.rand(3, 12), "lowest": torch.rand(3, 12)}, state)
    told: list[str] = []
    assert store.load("run-1", tell=told.append) is None
    assert "not (1, 3, H, W)" in told[0] and str(store.aside) in told[0]


# -- a video's kept frames -----------------------------------------------------------------------------------------

SIZE = (16, 12)


def keep_frames(count: int) -> FrameCache:
    cache = FrameCache("clip-key")
    for number in range(1, count + 1):
        cache.keep(number, picture(*SIZE, number), number / 10, number == 1, "cpu")
    return cache


@EXAMPLES
@given(how=DAMAGE, which=st.sampled_from(["frame-000002.png", "state.json"]))
def test_damaged_kept_frames_are_read_or_set_aside_and_styled_again(how: tuple[str, float, int], which: str) -> None:
    with fresh_folders():
        folder = keep_frames(3).folder
        data = damage(folder / which, how)
        told: list[str] = []
        cache = FrameCache("clip-key")
        cache.load(told.append)
        pictures = []
        for number in range(1, cache.done + 1):  # as a resumed render reads them, up to one that cannot be read
            pictures.append(cache.picture(number, SIZE, told.append))
            if pictures[-1] is None:
                break
        if which == "state.json" and cache.done == 0:  # the state cannot be read: the frames are set aside with it
            assert not folder.exists() and len(told) == 1 and "was moved to" in told[0]
            (kept,) = folder.parent.glob("clip-key.unreadable-*")
            assert (kept / which).read_bytes() == data and len(list(kept.glob("frame-*.png"))) == 3
            return
        if pictures and pictures[-1] is None:  # frame 2 cannot be read: styled again from it on (frame 1 stays)
            assert len(pictures) == 2 and pictures[0] is not None and cache.done == 1
            again = FrameCache("clip-key")
            again.load()
            assert again.done == 1
            moved_whole(told, cache.aside, data, which)
            return
        assert all(p is not None and p.shape == (12, 16, 3) for p in pictures) and not told


def test_a_kept_frame_of_another_size_or_not_a_png_is_styled_again() -> None:
    cache = keep_frames(3)
    Image.fromarray(picture(20, 12)).save(cache.frame_path(2))
    told: list[str] = []
    resumed = FrameCache("clip-key")
    resumed.load(told.append)
    assert resumed.picture(1, SIZE, told.append) is not None
    assert resumed.picture(2, SIZE, told.append) is None and resumed.done == 1
    assert "20×12, not a frame of (16, 12)" in told[0]


def test_a_missing_kept_frame_counts_the_frames_before_it() -> None:
    cache = keep_frames(3)
    cache.frame_path(2).unlink()
    resumed = FrameCache("clip-key")
    resumed.load()
    assert resumed.done == 1 and resumed.times == [0.1]


# -- a chunked render's chunks -------------------------------------------------------------------------------------

CHUNK = Chunk(1, 4, 5, 9)


def keep_a_chunk() -> ChunkStore:
    store = ChunkStore("clip-key-4x1")
    pictures = tuple(picture(*SIZE, n) for n in range(5))
    store.keep(ChunkFrames(CHUNK, pictures, tuple(n / 10 for n in range(5)), "cpu", 1.0))
    store.keep_frame(Chunk(2, 8, 9, None), 8, picture(*SIZE, 8))
    return store


@EXAMPLES
@given(how=DAMAGE, which=st.sampled_from(["chunk", "frame"]))
def test_a_damaged_kept_chunk_is_read_or_set_aside_and_styled_again(how: tuple[str, float, int], which: str) -> None:
    with fresh_folders():
        store = keep_a_chunk()
        told: list[str] = []
        if which == "chunk":
            (path,) = store.folder.glob("chunk-*.npz")
            data = damage(path, how)
            read = store.read(CHUNK, SIZE, told.append)
            if read is not None:
                assert len(read.pictures) == 5 and read.pictures[0].shape == (12, 16, 3) and not told
                return
        else:
            (path,) = store.folder.glob("*.frames/frame-000008.png")
            data = damage(path, how)
            frames = store.frames(Chunk(2, 8, 9, None), SIZE, told.append)
            if frames:
                assert frames[0].shape == (12, 16, 3) and not told
                return
        assert not path.exists()
        moved_whole(told, store.aside, data, path.name)


@pytest.mark.parametrize(
    ("pictures", "times", "said"),
    [
        (np.zeros((5, 12, 20, 3), np.uint8), [0.0] * 5, "not frames of 16×12"),
        (np.zeros((5, 12, 16, 3), np.float32), [0.0] * 5, "float32"),
        (np.zeros((5, 12, 16, 3), np.uint8), [0.0] * 4, "5 pictures and 4 times"),
        (np.zeros((9, 12, 16, 3), np.uint8), [0.0] * 9, "9 pictures"),
    ],
    ids=["size", "type", "times", "too-many"],
)
def test_a_kept_chunk_of_the_wrong_shape_is_set_aside(pictures: np.ndarray, times: list[float], said: str) -> None:
    store = keep_a_chunk()
    (path,) = store.folder.glob("chunk-*.npz")
    with open(path, "wb") as out:
        np.savez_compressed(out, pictures=pictures, about=np.array(json.dumps({"compute": "", "times": times})))
    told: list[str] = []
    assert store.read(CHUNK, SIZE, told.append) is None and said in told[0] and not path.exists()


# -- the history's kept results ------------------------------------------------------------------------------------


@EXAMPLES
@given(how=DAMAGE)
def test_a_damaged_kept_result_is_read_or_set_aside(how: tuple[str, float, int]) -> None:
    with fresh_folders():
        kept = KeptResults()
        path = kept.new_path()
        kept.keep(Image.fromarray(picture(*SIZE)), settings_mod.dumps(Settings(size=16), app_version="t"), path)
        data = damage(path, how)
        told: list[str] = []
        results = kept.load(told.append)
        if results:
            assert results[0].picture.size == SIZE and results[0].settings.size == 16 and not told
            return
        moved_whole(told, kept.folder, data, path.name)


def test_a_kept_result_with_settings_this_version_cannot_read_is_set_aside() -> None:
    kept = KeptResults()
    path = kept.new_path()
    document = settings_mod.dumps(Settings(size=16), app_version="t").replace('"size": 16', '"size": "huge"')
    kept.keep(Image.fromarray(picture(*SIZE)), document, path)
    told: list[str] = []
    assert kept.load(told.append) == [] and not path.exists() and "size" in told[0]


# -- the render queue ----------------------------------------------------------------------------------------------


@EXAMPLES
@given(how=DAMAGE)
def test_a_damaged_queue_is_read_or_set_aside(how: tuple[str, float, int]) -> None:
    with fresh_folders() as folder:
        queue = RenderQueue(folder / "queue")
        job = Job("j1", folder / "a.png", (folder / "s.png",), Settings(size=16), folder / "o.png")
        queue.add([QueueItem(dataclasses.replace(job))])
        queue.close()
        data = damage(queue.path, how)
        again = RenderQueue(folder / "queue")
        try:
            if len(again) == 1:
                assert again.items[0].job.settings.size == 16
                return
            assert (not again.items and again.notices) and "could not be read" in again.notices[0]
            (kept,) = (folder / "queue").glob("queue.json.unreadable-*")
            assert kept.read_bytes() == data and str(kept) in again.notices[0]
        finally:
            again.close()
