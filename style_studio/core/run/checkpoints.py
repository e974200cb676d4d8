"""Checkpoints: a long run's state on disk, so that a crash, a kill or a closed window loses at most a minute.

A run's folder in the user's cache holds what it needs to go on::

    checkpoints/<run id>/
        run.json        settings, the inputs' hashes and names, where the run stands,
                        the optimiser's curvature scale
        state.pt        the image, the lowest-loss image and its loss
        content.png     the inputs, as the run saw them (the window resumes from these)
        style-1.png ...

Every file is written atomically (``files.write_atomically``) and the
state last: a reader finds either the previous checkpoint or the new one,
never half of one. ``run.json`` names the state file it belongs with, so
a crash between the two writes is seen, not misread.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
import math
import os
import secrets
import time
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Final

from PIL import Image

from .. import settings as settings_mod
from ..errors import StyleStudioError
from ..io.files import cache_folder, check_name, remove_tree, write_atomically
from ..io.kept import LeftAlone, Tell, put_aside, read_kept
from ..io.locks import held, in_use_elsewhere
from ..objective.regions import Regions
from ..settings import Settings

if TYPE_CHECKING:
    from torch import Tensor

log = logging.getLogger(__name__)

#: Seconds between checkpoints of a run (``STYLE_STUDIO_CHECKPOINT_SECONDS`` overrides it).
INTERVAL: Final = 60.0
#: Checkpoints older than this are removed when the store is listed.
MAX_AGE: Final = 14 * 24 * 3600.0
FORMAT: Final = "style-studio-checkpoint"
VERSION: Final = 1


def interval() -> float:
    """Seconds between checkpoints: ``INTERVAL``, or the environment's ``STYLE_STUDIO_CHECKPOINT_SECONDS``."""
    value = os.environ.get("STYLE_STUDIO_CHECKPOINT_SECONDS")
    try:
        return float(value) if value else INTERVAL
    except ValueError:
        return INTERVAL


class NewerCheckpointError(LeftAlone):
    """A checkpoint written by a newer Style Studio: left alone, for that version to resume."""


@dataclass(frozen=True)
class Position:
    """Where a run stands: ``iteration`` iterations done at scale ``scale`` (0-based), ``step`` in all."""

    scale: int
    iteration: int
    step: int
    elapsed: float


@dataclass(frozen=True)
class Checkpoint:
    """One run's saved state.

    Attributes:
        run_id: the name of its folder.
        settings: the settings in effect (live changes included).
        content_hash, style_hashes: ``image_hash`` of the inputs.
        names: display names of the content and style images.
        position: where the run stood.
        state: {"image": the optimised image (1, C, H, W), "lowest": the
            lowest-loss image at that scale}, float32 on the CPU; or the file
            holding them, read when first needed (listing checkpoints reads none).
        best: the lowest-loss image's loss.
        saved_at: when it was written (seconds since the epoch).
        folder: where it lives, when loaded from a store.
        regions: the run's painted regions (``Regions.to_json``), or None.
        step_scale: the optimiser's curvature scale (``LBFGS.step_scale``), for
            its first step after a resume; None when unknown (Adam, no pair yet,
            or a checkpoint from before it was kept).
        weights: what the weights were (``weights.identity``: a file's digest),
            or None in a checkpoint from before it was kept.
        pictures: the content and style images the run saw, when the checkpoint was read whole
            (``CheckpointStore.load``); else read from ``folder`` when first asked for.
    """

    run_id: str
    settings: Settings
    content_hash: str
    style_hashes: tuple[str, ...]
    names: tuple[str, ...]
    position: Position
    state: dict[str, Tensor] | Path
    best: float
    saved_at: float = 0.0
    folder: Path | None = None
    regions: Mapping[str, Any] | None = None
    step_scale: float | None = None
    weights: str | None = None
    pictures: tuple[Image.Image, tuple[Image.Image, ...]] | None = None

    def painted(self) -> Regions | None:
        """The run's regions, or None."""
        return Regions.from_json(self.regions) if self.regions else None

    @functools.cached_property
    def _tensors(self) -> dict[str, Tensor]:
        if isinstance(self.state, dict):
            return self.state
        try:
            return _load_state(self.state)
        except (OSError, ValueError) as exc:
            raise StyleStudioError(
                f"the checkpoint in {self.folder} is damaged and cannot be resumed ({exc})"
            ) from None

    @property
    def image(self) -> Tensor:
        """The optimised image where the run stood (1, C, H, W), float32, on the CPU."""
        return self._tensors["image"]

    @property
    def lowest(self) -> Tensor:
        """The lowest-loss image at that scale."""
        return self._tensors["lowest"]

    def changes(
        self,
        settings: Settings,
        content_hash: str,
        style_hashes: Sequence[str],
        regions: Regions | None = None,
        weights: str | None = None,
    ) -> list[str]:
        """What differs between this checkpoint's run and one with these settings, inputs and weights (empty: none).

        ``weights``: the weights' ``identity``; not compared when either side does not know it.
        """
        problems = []
        if weights is not None and self.weights is not None and weights != self.weights:
            problems.append(f"the weights file {settings.weights} is not the one the run started with")
        ours_painted = self.painted()
        if (ours_painted.digest() if ours_painted else None) != (regions.digest() if regions else None):
            problems.append("the painted regions are not the ones the run started with")
        if content_hash != self.content_hash:
            problems.append("the content image is not the one the run started with")
        if len(style_hashes) != len(self.style_hashes):
            problems.append(f"the run had {len(self.style_hashes)} style images, now {len(style_hashes)}")
        else:
            problems += [
                f"style image {n} is not the one the run started with"
                for n, (a, b) in enumerate(zip(style_hashes, self.style_hashes, strict=True), start=1)
                if a != b
            ]
        ours, theirs = settings_mod.to_dict(self.settings), settings_mod.to_dict(settings)
        problems += [f"{key} was {ours[key]!r}, now {theirs[key]!r}" for key in ours if ours[key] != theirs[key]]
        return problems

    def check_resumable(
        self,
        settings: Settings,
        content_hash: str,
        style_hashes: Sequence[str],
        regions: Regions | None,
        weights: str | None,
        schedule: Sequence[tuple[tuple[int, int], int]],
    ) -> None:
        """Raise StyleStudioError saying why a run of these inputs and ``schedule`` ((width, height), iterations per
        scale) cannot go on from this checkpoint; nothing when it can."""
        changed = self.changes(settings, content_hash, style_hashes, regions, weights)
        if changed:
            raise StyleStudioError("the unfinished run cannot be resumed: " + "; ".join(changed))
        position = self.position
        # A scale may have gone on past its planned end for a live change (the engine's ``LIVE_ITERATIONS``): it is
        # then done, and the run goes on from the next.
        if position.scale >= len(schedule):
            raise StyleStudioError("the unfinished run cannot be resumed: it stopped past the end of its schedule")
        width, height = schedule[position.scale][0]
        if self.image.shape[-2:] != (height, width):
            raise StyleStudioError("the unfinished run cannot be resumed: its picture is not the size the run needs")

    def inputs(self) -> tuple[Image.Image, list[Image.Image]]:
        """The content and style images the run saw, from the checkpoint's folder.

        Raises:
            StyleStudioError: they cannot be read (``CheckpointStore.load`` finds that, and sets the run aside).
        """
        if self.pictures is not None:
            return self.pictures[0], list(self.pictures[1])
        if self.folder is None:
            raise StyleStudioError("this checkpoint has no folder to read its inputs from")
        try:
            content, styles = _read_inputs(self.folder, len(self.style_hashes))
        except (OSError, ValueError, SyntaxError) as exc:
            raise StyleStudioError(f"the checkpoint's input images cannot be read ({exc})") from None
        return content, list(styles)

    def describe(self) -> str:
        """For the user: what run it is and where it stood."""
        p = self.position
        scales = len(self.settings.schedule())
        where = f"scale {p.scale + 1}/{scales}, iteration {p.iteration}" if scales > 1 else f"iteration {p.iteration}"
        return f"{self.names[0]} ({self.settings.size} px), stopped at {where}"


def _write_png(image: Image.Image, out: BinaryIO) -> None:
    image.save(out, format="PNG")


def _write_bytes(out: BinaryIO, data: bytes) -> None:
    out.write(data)


def _write_state(state: dict[str, Tensor], out: BinaryIO) -> None:
    import torch

    try:
        torch.save(state, out)
    except RuntimeError as exc:  # torch's writer turns a full disk (the stream's OSError) into a RuntimeError
        first_line = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise OSError(f"the run's state could not be written ({first_line})") from exc


def _open(path: Path) -> Image.Image:
    with Image.open(path) as image:
        return image.convert("RGB")


def _read_inputs(folder: Path, styles: int) -> tuple[Image.Image, tuple[Image.Image, ...]]:
    """The content and the ``styles`` style images a run saw, as its checkpoint keeps them."""
    return _open(folder / "content.png"), tuple(_open(folder / f"style-{n}.png") for n in range(1, styles + 1))


class CheckpointStore:
    """The folder of every run's checkpoint (by default in the user's cache).

    Args:
        root: the folder; ``default_root()`` when None.
    """

    def __init__(self, root: Path | None = None) -> None:
        self.root = root if root is not None else default_root()
        #: What the last ``unfinished()`` passed over, for the user.
        self.notices: list[str] = []

    def folder(self, run_id: str) -> Path:
        """Run ``run_id``'s folder (UnsafePathError for an id that is not a plain name: ids come from files)."""
        return self.root / check_name(run_id, "a run id")

    def claim(self, run_id: str) -> AbstractContextManager[None]:
        """Hold run ``run_id`` for this process while the block runs: its checkpoint is this process's to write.

        Raises:
            Busy: another Style Studio process (a window, a render) is running it.
        """
        return held(self._lock(run_id), f"the run {run_id} is under way in another Style Studio process")

    def _lock(self, run_id: str) -> Path:
        return self.root / f"{check_name(run_id, 'a run id')}.lock"

    def save(self, checkpoint: Checkpoint, inputs: tuple[Image.Image, Sequence[Image.Image]] | None = None) -> None:
        """Write ``checkpoint`` (and, the first time, the run's input images) atomically.

        Raises:
            OSError: the folder cannot be written, the disk is full, ... (the run goes on; see the engine).
        """
        folder = self.folder(checkpoint.run_id)
        folder.mkdir(parents=True, exist_ok=True)
        if inputs is not None:
            content, styles = inputs
            for name, image in [("content.png", content), *((f"style-{n}.png", s) for n, s in enumerate(styles, 1))]:
                if not (folder / name).exists():
                    write_atomically(folder / name, functools.partial(_write_png, image))
        # A new state file each time, even for a step saved before (a Stop in the middle
        # of a tiled iteration saves it again): the file run.json names is never
        # touched until the new run.json names another.
        state_name = f"state-{checkpoint.position.step}-{secrets.token_hex(4)}.pt"
        state = {"image": checkpoint.image.detach().cpu(), "lowest": checkpoint.lowest.detach().cpu()}
        write_atomically(folder / state_name, functools.partial(_write_state, state))
        document = {
            "format": FORMAT,
            "version": VERSION,
            "run_id": checkpoint.run_id,
            "settings": settings_mod.to_dict(checkpoint.settings),
            "content_hash": checkpoint.content_hash,
            "style_hashes": list(checkpoint.style_hashes),
            "names": list(checkpoint.names),
            "position": dataclasses.asdict(checkpoint.position),
            "best": checkpoint.best,
            "state": state_name,
            "saved_at": time.time(),
            "regions": checkpoint.regions,
            "step_scale": checkpoint.step_scale,
            "weights": checkpoint.weights,
        }
        text = json.dumps(document, indent=1).encode()
        write_atomically(folder / "run.json", lambda out: _write_bytes(out, text))
        for old in folder.glob("state-*.pt"):
            if old.name != state_name:
                old.unlink(missing_ok=True)

    @property
    def aside(self) -> Path:
        """Where a checkpoint that cannot be read or used is moved: ``<root>.unreadable/``."""
        return self.root.with_name(f"{self.root.name}.unreadable")

    def load(self, run_id: str, *, read_state: bool = True, tell: Tell | None = None) -> Checkpoint | None:
        """The checkpoint of run ``run_id``; None if there is none, or it cannot be read.

        ``read_state``: read and check its picture and its inputs now (False: listing them, read when first used).
        One that cannot be read is moved to ``aside`` (``io.kept.read_kept``), never deleted; ``tell`` hears where.

        Raises:
            NewerCheckpointError: a newer Style Studio wrote it; it is left where it is, for that version.
        """
        reader = functools.partial(self._read, run_id=run_id, read_state=read_state)
        return read_kept(self.folder(run_id), reader, f"the unfinished run {run_id}", tell=tell, into=self.aside)

    @staticmethod
    def _read(folder: Path, run_id: str, read_state: bool) -> Checkpoint | None:
        if not (folder / "run.json").exists():
            return None  # a run whose first checkpoint is being written: nothing to go on from yet
        document: Any = json.loads((folder / "run.json").read_text())
        if document.get("format") != FORMAT:
            raise ValueError("not a Style Studio checkpoint")
        if document.get("version", 0) > VERSION:
            raise NewerCheckpointError(f"the checkpoint in {folder} was written by a newer Style Studio")
        if document.get("run_id") != run_id:
            raise ValueError("it names another run")
        style_hashes = tuple(str(h) for h in document["style_hashes"])
        checkpoint = Checkpoint(
            run_id=document["run_id"],
            settings=settings_mod.from_dict(document["settings"]),
            content_hash=str(document["content_hash"]),
            style_hashes=style_hashes,
            names=tuple(str(n) for n in document["names"]),
            position=Position(**document["position"]),
            state=folder / check_name(document["state"], "a state file"),
            best=float(document["best"]),
            saved_at=float(document["saved_at"]),
            folder=folder,
            regions=document.get("regions"),
            step_scale=_step_scale(document.get("step_scale")),
            weights=str(document["weights"]) if document.get("weights") else None,
        )
        if not read_state:
            return checkpoint
        assert isinstance(checkpoint.state, Path)
        state = _load_state(checkpoint.state)
        if not (folder / "content.png").exists():  # saved without its inputs: a run that resumes from its own
            return dataclasses.replace(checkpoint, state=state)
        return dataclasses.replace(checkpoint, state=state, pictures=_read_inputs(folder, len(style_hashes)))

    def unfinished(self) -> list[Checkpoint]:
        """Every checkpoint, newest first, its images not yet read; removes those older than ``MAX_AGE``.

        One this version cannot read is never deleted: a newer version's stays
        where it is (that version resumes it), a damaged one is moved to
        ``<root>.unreadable/``; ``notices`` says what was passed over.
        """
        found: list[Checkpoint] = []
        self.notices = []
        if not self.root.is_dir():
            return found
        for folder in self.root.iterdir():
            if not folder.is_dir() or folder.is_symlink() or in_use_elsewhere(self.root / f"{folder.name}.lock"):
                continue  # another window or render is running it: not unfinished, and not ours
            try:
                checkpoint = self.load(folder.name, read_state=False, tell=self.notices.append)
            except NewerCheckpointError:
                self.notices.append(
                    f"an unfinished run in {folder} was saved by a newer Style Studio; it is left for that version"
                )
                log.warning("%s", self.notices[-1])
                continue
            except StyleStudioError as exc:  # a folder whose name cannot be a run's
                self.notices.append(str(put_aside(folder, str(exc), "an unfinished run", self.aside)))
                continue
            if checkpoint is None:
                continue
            if time.time() - checkpoint.saved_at > MAX_AGE:
                self.discard(folder.name)
                continue
            found.append(checkpoint)
        return sorted(found, key=lambda c: c.saved_at, reverse=True)

    def set_aside(self, run_id: str, problem: StyleStudioError) -> str:
        """Move run ``run_id``'s checkpoint, which cannot be used (``problem``), out of the way without deleting it;
        returns what the user should be told (where it is kept). A newer version's is moved too: this version
        starts the run again, and that version can still resume the moved one by hand."""
        return str(put_aside(self.folder(run_id), str(problem), f"the unfinished run {run_id}", self.aside))

    def discard(self, run_id: str) -> None:
        """Remove run ``run_id``'s checkpoint, if there is one (never one another process is running)."""
        folder = self.folder(run_id)
        if in_use_elsewhere(self._lock(run_id)):
            return
        try:
            remove_tree(folder, self.root)
        except OSError as exc:
            log.warning("could not remove the checkpoint in %s: %s", folder, exc)
        self._lock(run_id).unlink(missing_ok=True)


def _step_scale(value: Any) -> float | None:
    """A saved curvature scale if it is one (a positive, finite number); None otherwise: the run starts afresh."""
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value > 0:
        return float(value)
    return None


def _load_state(path: Path) -> dict[str, Any]:
    import torch

    from ..io.tensors import read_tensors

    state = read_tensors(path, "its state file")
    if not isinstance(state, dict) or not all(isinstance(state.get(k), torch.Tensor) for k in ("image", "lowest")):
        raise ValueError("its state file holds no image")
    image, lowest = state["image"], state["lowest"]
    if image.dim() != 4 or image.shape[:2] != (1, 3) or lowest.shape != image.shape or not image.is_floating_point():
        raise ValueError(f"its state file holds a picture of shape {tuple(image.shape)}, not (1, 3, H, W)")
    return state


def default_root() -> Path:
    """``checkpoints`` in the user's cache folder (``STYLE_STUDIO_CACHE`` overrides the cache folder)."""
    return cache_folder() / "checkpoints"
