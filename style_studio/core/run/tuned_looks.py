"""Looks tuned to a painting, kept: the first picture in a painting tunes the look, the next are painted at once.

A tuned look (``tuning.TunedLook``) is kept in the cache folder's ``looks/``, one file per key: the paintings, their
blend, the settings the tuning reads and the VGG19 weights (``look_key``). It is written as a checkpoint is,
through the guarded writer (``files.write_atomically``: a kill leaves the last whole file), and read in the one
guarded place (``io.kept.read_kept``): a damaged file is set aside and the look is tuned again. A look stopped part
of the way is kept too, and the next run goes on from its steps (``obtain_look``).
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
import time
from collections.abc import Callable, Generator, Sequence
from pathlib import Path
from typing import Any, BinaryIO, Final

import torch
from PIL import Image

from ..errors import Cancelled
from ..io.files import cache_folder, write_atomically
from ..io.imageio import image_hash
from ..io.kept import Tell, read_kept
from ..io.tensors import read_tensors
from ..network import instant
from ..network.device import Compute, resolve_device
from ..network.instant import TunedLook
from ..network.vgg import FeatureNetwork
from ..settings import TUNING_FIELDS, Settings
from . import checkpoints
from .cancel import CancelToken
from .tuning import LookTuner, TuningStep

FORMAT: Final = "style-studio-tuned-look"
VERSION: Final = 1


def look_key(settings: Settings, styles: Sequence[Image.Image], weights_label: str) -> str:
    """What names a tuned look: the paintings' pixels, their blend, the tuning's settings, the weights, this format
    and the instant look's network files."""
    document = {
        "format": [FORMAT, VERSION, sorted(instant.FILES.values())],
        "styles": [image_hash(style) for style in styles],
        "blend": list(settings.blend_weights(len(styles))),
        "settings": {name: _plain(getattr(settings, name)) for name in TUNING_FIELDS},
        "weights": weights_label,
    }
    return hashlib.sha256(json.dumps(document, sort_keys=True).encode()).hexdigest()[:32]


class TunedLooks:
    """The kept tuned looks, in ``root`` (default: the cache folder's ``looks``)."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = root if root is not None else cache_folder() / "looks"

    def path(self, key: str) -> Path:
        return self.root / f"{key}.pt"

    def any_kept(self) -> bool:
        """Whether any look is kept: where none is, nothing need be loaded to name one (``kept_look``)."""
        return self.root.is_dir() and any(self.root.glob("*.pt"))

    @property
    def aside(self) -> Path:
        """Where a kept look that cannot be read is moved: ``<root>.unreadable/``."""
        return self.root.with_name(f"{self.root.name}.unreadable")

    def load(self, key: str, shapes: dict[str, torch.Size], *, tell: Tell | None = None) -> TunedLook | None:
        """The look kept under ``key`` (its weights of ``shapes``, the network's); None when there is none, or it
        could not be read (it is then set aside, and ``tell`` hears where)."""
        reader = functools.partial(_read, key=key, shapes=shapes)
        return read_kept(self.path(key), reader, "a look tuned to the painting", tell=tell, into=self.aside)

    def save(self, key: str, look: TunedLook) -> None:
        """Keep ``look`` under ``key``, atomically.

        Raises:
            OSError: the cache folder cannot be written.
        """
        self.root.mkdir(parents=True, exist_ok=True)
        state = {
            "format": FORMAT,
            "version": VERSION,
            "key": key,
            "steps_done": look.steps_done,
            "steps": look.steps,
            "losses": torch.tensor(look.losses, dtype=torch.float32),
            "vector": look.vector,
            "weights": look.weights,
        }
        write_atomically(self.path(key), functools.partial(_write, state))


def _write(state: dict[str, Any], out: BinaryIO) -> None:
    buffer = io.BytesIO()
    torch.save(state, buffer)
    out.write(buffer.getvalue())


def _read(path: Path, key: str, shapes: dict[str, torch.Size]) -> TunedLook:
    state = read_tensors(path, "the file")
    if not isinstance(state, dict) or state.get("format") != FORMAT or state.get("key") != key:
        raise ValueError("not a tuned look, or another one's")
    weights, vector = state.get("weights"), state.get("vector")
    if not isinstance(weights, dict) or {name: getattr(w, "shape", None) for name, w in weights.items()} != shapes:
        raise ValueError("its weights are not the network's")
    if not all(w.is_floating_point() and bool(torch.isfinite(w).all()) for w in weights.values()):
        raise ValueError("its weights are not finite numbers")
    if not isinstance(vector, torch.Tensor) or vector.shape != (1, 1, 1, 100):
        raise ValueError("its style vector is not one")
    steps_done, steps = state.get("steps_done"), state.get("steps")
    if not (isinstance(steps_done, int) and isinstance(steps, int) and steps_done >= 0 and steps > 0):
        raise ValueError("its steps are not counts")
    losses = state.get("losses")
    kept = tuple(float(v) for v in losses.tolist()) if isinstance(losses, torch.Tensor) else ()
    return TunedLook(vector.float(), {name: w.float() for name, w in weights.items()}, steps_done, steps, kept)


def _plain(value: object) -> object:
    return [_plain(v) for v in value] if isinstance(value, tuple | list) else value


def obtain_look(
    network: FeatureNetwork,
    photos: Sequence[Image.Image] | Callable[[], Sequence[Image.Image]],
    styles: Sequence[Image.Image],
    settings: Settings,
    compute: Compute,
    weights_label: str,
    *,
    store: TunedLooks | None = None,
    cancel: CancelToken | None = None,
    tell: Tell | None = None,
) -> Generator[TuningStep, None, TunedLook]:
    """The look tuned to ``styles`` under ``settings``: the kept one when it is whole, else tuned on ``photos``
    (going on from a kept part), a ``TuningStep`` yielded after each step; kept as it goes and when stopped.

    ``photos`` may be a function that reads them (a clip's frames): it is called only when the look is tuned.

    Raises:
        Cancelled: stopped; what was tuned is kept, and the next call goes on from it.
    """
    store = store or TunedLooks()
    look = instant.instant_look(str(compute.device))
    key = look_key(settings, styles, weights_label)
    kept = store.load(key, _shapes(look), tell=tell)
    if kept is not None and kept.finished:
        return kept
    pictures = photos() if callable(photos) else photos
    tuner = LookTuner(network, look, pictures, styles, settings, compute, start=kept)
    steps = settings.tune_steps
    saved = time.monotonic()
    keep: Callable[[], None] = lambda: _keep(store, key, tuner.result(steps), tell)  # noqa: E731
    try:
        for step in tuner.steps(steps, cancel):
            yield step
            if time.monotonic() - saved >= checkpoints.interval():
                keep()
                saved = time.monotonic()
    except Cancelled:
        keep()
        raise
    keep()
    return tuner.result(steps)


def _keep(store: TunedLooks, key: str, look: TunedLook, tell: Tell | None) -> None:
    """Keep the look; a cache that cannot be written costs only the next picture's tuning (said through ``tell``)."""
    try:
        store.save(key, look)
    except OSError as exc:
        if tell is not None:
            problem = exc.strerror or exc
            tell(f"the tuned look could not be kept in {store.root} ({problem}); it is tuned again next time")


def kept_look(
    settings: Settings,
    styles: Sequence[Image.Image],
    weights_label: str,
    *,
    store: TunedLooks | None = None,
    tell: Tell | None = None,
) -> TunedLook | None:
    """The look tuned to ``styles`` under ``settings`` through the weights ``weights_label`` names, when it is kept
    whole (all its steps tuned); None when none is, or only a part of the way (``obtain_look`` goes on from that).

    It only reads: nothing is tuned, no VGG19 is needed. The window's look before Start is painted with it where
    it is kept (``ui.instant_preview``); a file that cannot be read is set aside as ``TunedLooks.load`` does.
    """
    store = store or TunedLooks()
    key = look_key(settings, styles, weights_label)
    if not store.path(key).is_file():
        return None  # no network loaded to learn the weights' shapes of a look that is not there
    look = store.load(key, _shapes(instant.instant_look(str(resolve_device(settings.device)))), tell=tell)
    return look if look is not None and look.finished else None


def _shapes(look: instant.InstantLook) -> dict[str, torch.Size]:
    """The shapes of the weights a tuning changes: a kept look's must be these."""
    return {name: w.shape for name, w in look.transformer.weights().items()}
