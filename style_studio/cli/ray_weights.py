"""VGG weights sent to Ray's workers: the submitter puts a weights file's bytes in the object store once, keyed
by its SHA-256; a worker loads them through a temporary file and keeps the last two it loaded."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from ..core import StyleStudioError
from .runners import _weights

if TYPE_CHECKING:
    from ..core import NetworkWeights

#: Weights that came through Ray's object store, by their file's SHA-256 (a worker keeps the last two).
_shipped: dict[str, NetworkWeights] = {}


def weights_from_bytes(choice: str, data: bytes | None, digest: str) -> NetworkWeights:
    """Weights a worker got through Ray's object store: the file's bytes, read through a temporary file removed at once.

    ``digest`` is the file's SHA-256 (worked out by the submitter): two files
    that share their first layers and their size are still two files.
    """
    if data is None:
        return _weights(choice)
    if digest not in _shipped:
        from ..core import LoadedWeights, describe, read_state_dict

        with tempfile.TemporaryDirectory(prefix="style-studio-weights-") as folder:
            path = Path(folder) / "weights.pth"
            path.write_bytes(data)
            state = read_state_dict(path)
        while len(_shipped) >= 2:
            del _shipped[next(iter(_shipped))]
        _shipped[digest] = LoadedWeights(choice, describe(choice), state)
    return _shipped[digest]


def _file_of(choice: str) -> Path:
    """The file a weights choice other than untrained names: the ImageNet download, or the user's own."""
    from ..core import IMAGENET, imagenet_cache_path

    return imagenet_cache_path() if choice == IMAGENET else Path(choice).expanduser()


def weights_digest(choice: str) -> str:
    """The SHA-256 of a weights choice's file, as workers key what they loaded ("untrained" for none)."""
    from ..core import UNTRAINED, file_digest

    if choice == UNTRAINED:
        return UNTRAINED
    try:
        return file_digest(_file_of(choice))
    except OSError as exc:
        raise StyleStudioError(f"the weights file {choice} cannot be read ({exc.strerror or exc})") from None


def weights_bytes(choice: str) -> bytes | None:
    """The bytes of a weights choice's file (None: untrained, made from a seed on the worker)."""
    from ..core import UNTRAINED

    if choice == UNTRAINED:
        return None
    try:
        return _file_of(choice).read_bytes()
    except OSError as exc:
        raise StyleStudioError(f"the weights file {choice} cannot be read ({exc.strerror or exc})") from None
