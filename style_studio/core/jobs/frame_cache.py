"""A video's finished frames, kept in its cache folder as they are made, with the state that counts them.

A stopped, killed or crashed render goes on from the next unfinished frame:
each frame is written (losslessly, PNG) before the state that counts it.
Everything kept is read through ``io.kept.read_kept``: a state that cannot be
read is set aside with its frames, a frame that cannot be read (or is not the
clip's size) is set aside alone and styled again, with the frames after it.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import numpy as np
from PIL import Image

from ..errors import StyleStudioError
from ..io.files import cache_folder, check_name, remove_tree, write_atomically, write_bytes_atomically
from ..io.kept import Tell, read_kept

#: How a message about kept frames ends: what the user does to go on (a batch and the window go on by themselves).
GO_ON: Final = "run it again to go on (style-studio video: with --resume)"

#: The clip's state file in its cache folder.
STATE: Final = "state.json"
STATE_FORMAT: Final = "style-studio-video-frames"


class FrameCache:
    """A clip's finished frames (``frame-000001.png``, ...) and its state file, in the cache folder."""

    def __init__(self, key: str) -> None:
        self.key = check_name(key, "a video's key")
        self.root = cache_folder() / "videos"
        self.folder = self.root / key
        self.done = 0
        self.times: list[float] = []
        self.fresh: list[int] = []
        self.compute = ""

    @property
    def lock(self) -> Path:
        return cache_folder() / "locks" / f"video-{self.key}.lock"

    def frame_path(self, number: int) -> Path:
        return self.folder / f"frame-{number:06d}.png"

    @property
    def aside(self) -> Path:
        """Where a kept frame that cannot be read is moved (named with the clip's key)."""
        return self.root.with_name(f"{self.root.name}.unreadable")

    def load(self, tell: Tell | None = None) -> None:
        """Read what an earlier render left: ``done`` frames, as its state counts them, up to the first one missing.

        A state that cannot be read is set aside with the frames beside it (``<key>.unreadable-<time>``), never
        deleted, and ``tell`` hears where they are kept.

        Raises:
            StyleStudioError: they can be neither read nor moved aside.
        """
        state = read_kept(self.folder, self._read_state, "the frames an earlier render kept", tell=tell)
        if state is None:
            if os.path.lexists(self.folder):
                raise StyleStudioError(
                    f"the frames an earlier render kept in {self.folder} can be neither read nor moved aside; move "
                    "that folder away to start again"
                )
            return
        done, times, fresh, compute = state
        present = next((n - 1 for n in range(1, done + 1) if not self.frame_path(n).is_file()), done)
        self.done, self.times, self.compute = present, times[:present], compute
        self.fresh = [n for n in fresh if n <= present]

    def _read_state(self, folder: Path) -> tuple[int, list[float], list[int], str]:
        state: Any = json.loads((folder / STATE).read_text(encoding="utf-8"))
        if state.get("format") != STATE_FORMAT or state.get("key") != self.key:
            raise ValueError("not this clip's")
        done, times = int(state["done"]), [float(t) for t in state["times"]]
        fresh = [int(n) for n in state.get("fresh", [])]
        if done < 0 or len(times) != done:
            raise ValueError("its frames are miscounted")
        return done, times, fresh, str(state.get("compute", ""))

    def clear(self) -> None:
        """Remove the kept frames (the video is written, or the user asked to start again)."""
        remove_tree(self.folder, self.root)
        self.done, self.times, self.fresh = 0, [], []

    def keep(self, number: int, picture: np.ndarray, when: float, fresh: bool, compute: str) -> None:
        """Keep frame ``number`` (the next one) and then the state that counts it: a kill between them loses nothing.

        Raises:
            StyleStudioError: the cache cannot be written (full, read-only); the frames before are kept.
        """
        assert number == self.done + 1
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            write_atomically(self.frame_path(number), lambda out: Image.fromarray(picture).save(out, format="PNG"))
            times, fresh_frames = [*self.times, when], [*self.fresh, number] if fresh else self.fresh
            self._write_state(number, times, fresh_frames, compute)
        except OSError as exc:
            raise StyleStudioError(
                f"frame {number} cannot be kept in {self.folder} ({exc.strerror or exc}); "
                f"the {number - 1} frames before it are kept: free some space and {GO_ON}"
            ) from None
        self.done, self.times, self.fresh, self.compute = number, times, fresh_frames, compute

    def picture(self, number: int, size: tuple[int, int], tell: Tell | None = None) -> np.ndarray | None:
        """Kept frame ``number``, (H, W, 3) uint8 of ``size`` (width, height); None when it cannot be read: it is
        set aside (``tell`` hears where) and the frames from it on are to be styled again (``done`` goes back)."""
        said = None if tell is None else lambda notice: tell(f"{notice}; it is styled again, with the frames after it")
        picture = self._read(number, size, said)
        if picture is None:
            self._forget_from(number)
        return picture

    def _read(self, number: int, size: tuple[int, int], tell: Tell | None) -> np.ndarray | None:
        """Kept frame ``number`` through the guarded reader (set aside when it cannot be read)."""
        return read_kept(
            self.frame_path(number), functools.partial(read_frame, size=size), f"the kept frame {number} of a video",
            tell=tell, into=self.aside, prefix=f"{self.key}-",
        )  # fmt: skip

    def _write_state(self, done: int, times: list[float], fresh: list[int], compute: str) -> None:
        """The state that counts the kept frames, written atomically (OSError when it cannot be)."""
        state = {"format": STATE_FORMAT, "key": self.key, "done": done, "times": times, "fresh": fresh,
                 "compute": compute}  # fmt: skip
        write_bytes_atomically(self.folder / STATE, json.dumps(state).encode())

    def _forget_from(self, number: int) -> None:
        """Count only the frames before ``number``: it and those after it are styled again (and written over)."""
        self.done, self.times = number - 1, self.times[: number - 1]
        self.fresh = [n for n in self.fresh if n < number]
        try:
            self._write_state(self.done, self.times, self.fresh, self.compute)
        except OSError:
            pass  # the state still counts the frame: it is found missing, or damaged, and set aside again

    def frames(self, size: tuple[int, int]) -> Iterator[tuple[float, np.ndarray]]:
        """Every kept frame with its time, to write the video.

        Raises:
            StyleStudioError: a frame was damaged after it was made (it is set aside; --resume styles it again).
        """
        for number in range(1, self.done + 1):
            picture = self._read(number, size, None)
            if picture is None:
                raise StyleStudioError(
                    f"the kept frame {number} was damaged after it was made and is set aside; {GO_ON}"
                )
            yield self.times[number - 1], picture


def read_frame(path: Path, size: tuple[int, int]) -> np.ndarray:
    """A kept frame's picture, (H, W, 3) uint8, checked to be a PNG of ``size`` (width, height)."""
    with Image.open(path) as kept:
        if kept.format != "PNG" or kept.size != size:
            raise ValueError(f"a {kept.format} picture of {kept.size[0]}×{kept.size[1]}, not a frame of {size}")
        return np.asarray(kept.convert("RGB"))
