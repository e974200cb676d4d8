"""A video's finished frames, kept in its cache folder as they are made, with the state that counts them.

A stopped, killed or crashed render goes on from the next unfinished frame:
each frame is written (losslessly, PNG) before the state that counts it, and
a folder that cannot be read is set aside, never deleted.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import numpy as np
from PIL import Image

from ..errors import StyleStudioError
from ..io.files import cache_folder, check_name, remove_tree, set_aside, write_atomically, write_bytes_atomically

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

    def load(self) -> str | None:
        """Read what an earlier render left (``done`` frames); returns a notice when it could not be read.

        A folder that cannot be read is never deleted: it is set aside beside
        the others (``<key>.unreadable-<time>``) and the notice says where.
        """
        if not self.folder.exists():
            return None
        try:
            state = json.loads((self.folder / STATE).read_text())
            if state.get("format") != STATE_FORMAT or state.get("key") != self.key:
                raise ValueError("not this clip's")
            done, times = int(state["done"]), [float(t) for t in state["times"]]
            if len(times) != done or not all(self.frame_path(n).is_file() for n in range(1, done + 1)):
                raise ValueError("frames missing")
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            return self._set_aside(exc)
        self.done, self.times, self.fresh = done, times, [int(n) for n in state.get("fresh", [])]
        self.compute = str(state.get("compute", ""))
        return None

    def _set_aside(self, problem: Exception) -> str:
        try:
            kept = set_aside(self.folder)
        except OSError as exc:
            raise StyleStudioError(
                f"the frames an earlier render kept in {self.folder} cannot be read ({problem}) nor moved aside "
                f"({exc.strerror or exc}); move that folder away to start again"
            ) from None
        return f"the frames an earlier render kept could not be read ({problem}); they are kept in {kept}"

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
            state = {"format": STATE_FORMAT, "key": self.key, "done": number, "times": times, "fresh": fresh_frames,
                     "compute": compute}  # fmt: skip
            write_bytes_atomically(self.folder / STATE, json.dumps(state).encode())
        except OSError as exc:
            raise StyleStudioError(
                f"frame {number} cannot be kept in {self.folder} ({exc.strerror or exc}); "
                f"the {number - 1} frames before it are kept: free some space and run again with --resume"
            ) from None
        self.done, self.times, self.fresh, self.compute = number, times, fresh_frames, compute

    def picture(self, number: int) -> np.ndarray:
        with Image.open(self.frame_path(number)) as kept:
            return np.asarray(kept.convert("RGB"))

    def frames(self) -> Iterator[tuple[float, np.ndarray]]:
        for number in range(1, self.done + 1):
            yield self.times[number - 1], self.picture(number)
