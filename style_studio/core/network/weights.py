"""Where VGG19's weights come from: ImageNet (downloaded), a local file, or untrained.

A weights choice is one string, as the command line and the settings spell it:

- ``"imagenet"``: torchvision's ``VGG19_Weights.IMAGENET1K_V1``, read from
  torch's own hub cache (``$TORCH_HOME/hub/checkpoints``) and downloaded there
  when missing, with torchvision's hash checked.
- ``"untrained"``: the same architecture with a seeded random init. Its
  features carry colour and texture but not content; it is always named as
  such in progress output and in exported metadata.
- ``"none"``: no network, for a run that optimises nothing (``Settings.network_weights``): its picture is
  the start picture alone.
- anything else: a path to a ``.pth`` state dict, either torchvision's full
  ``vgg19`` state dict or just its ``features``.
"""

from __future__ import annotations

import hashlib
import http.client
import logging
import os
import re
import sys
import tempfile
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final, Protocol

from ..errors import Cancelled, WeightsError
from ..io.files import file_digest
from .layers import BLOCK_WIDTHS, vgg19_config

if TYPE_CHECKING:  # torch is imported where it is used: the window shows before torch loads
    import torch
    from torch import nn

    from .vgg import FeatureNetwork

log = logging.getLogger(__name__)

IMAGENET: Final = "imagenet"
UNTRAINED: Final = "untrained"
#: No network: what a run that optimises nothing loads (``Settings.network_weights``).
NO_NETWORK: Final = "none"
#: torchvision's ``VGG19_Weights.IMAGENET1K_V1.url`` (a test keeps them equal).
IMAGENET_URL: Final[str] = "https://download.pytorch.org/models/vgg19-dcbb9e9d.pth"
UNTRAINED_SEED: Final = 0

#: Set to "tiny" (by the tests, never by the app), the untrained choice builds a
#: network with VGG19's layers and names but 4 to 16 channels: command lines and
#: batches in subprocesses then run in milliseconds. Its label says so.
TEST_NETWORK_VARIABLE: Final = "STYLE_STUDIO_TEST_NETWORK"
#: The test network's channels per block (VGG19 has 64, 128, 256, 512, 512).
TINY_WIDTHS: Final = (4, 8, 8, 16, 16)
TINY_LABEL: Final = "untrained tiny VGG19 (test network)"

#: Called with (bytes received, total bytes or None) while downloading.
DownloadProgress = Callable[[int, "int | None"], None]

_CHUNK = 1 << 20
# torchvision names its files "<name>-<first 8 hex digits of the sha256>.pth".
_HASH_IN_NAME = re.compile(r"-([a-f0-9]{8,})\.")


def identity(choice: str) -> str:
    """What a weights choice is, for checkpoints and job keys: ``imagenet``/``untrained``, or a file's SHA-256.

    Another file at the same path is other weights: a resume is refused and a
    batch renders again. A file that cannot be read gives its path (loading
    it fails later, with its own message).
    """
    if choice == UNTRAINED and _test_network():
        return f"{UNTRAINED}-tiny"
    if choice in (IMAGENET, UNTRAINED):
        return choice
    try:
        return f"sha256:{file_digest(Path(choice))}"
    except OSError:
        return choice


def _test_network() -> bool:
    return os.environ.get(TEST_NETWORK_VARIABLE) == "tiny"


def describe(choice: str) -> str:
    """Human-readable name of a weights choice, as the status bar and CLI show it."""
    if choice == IMAGENET:
        return "ImageNet VGG19"
    if choice == UNTRAINED:
        return "untrained VGG19 (random features: colour and texture only)"
    if choice == NO_NETWORK:
        return "no VGG19 (the start picture alone, not optimised)"
    return f"VGG19 weights from {Path(choice).name}"


def options_hint() -> str:
    return (
        "choose one of: 'imagenet' (downloaded once from download.pytorch.org), "
        "a local VGG19 .pth file, or 'untrained' (random features: colour and texture only, "
        "no content)"
    )


def vgg19_features_module(widths: tuple[int, ...] = BLOCK_WIDTHS) -> nn.Sequential:
    """torchvision's VGG19 ``features`` with torchvision's own initialisation.

    Built from VGG19's configuration rather than torchvision's ``vgg19()`` so the
    103M-parameter classifier is never allocated. ``widths``: channels per
    block; the test network's are so narrow that torchvision's fan-out
    initialisation leaves its deep layers dead, so it keeps the variance of
    the forward pass instead (He et al., fan-in).
    """
    from torch import nn

    from .vgg import vgg19_layers

    features = vgg19_layers(vgg19_config(widths))
    for m in features.modules():
        if isinstance(m, nn.Conv2d):
            if widths == BLOCK_WIDTHS:
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            else:
                nn.init.kaiming_normal_(m.weight, mode="fan_in", nonlinearity="relu")
            if m.bias is not None:
                nn.init.constant_(m.bias, 0)
    assert isinstance(features, nn.Sequential)
    return features


def expected_feature_shapes() -> dict[str, torch.Size]:
    """Keys and shapes of a features state dict, without the ``features.`` prefix."""
    import torch

    from .vgg import vgg19_layers

    with torch.device("meta"):
        features = vgg19_layers(vgg19_config())
    return {k: v.shape for k, v in features.state_dict().items()}


def imagenet_cache_path() -> Path:
    """Where torchvision's own ``load_state_dict_from_url`` keeps the file."""
    return _hub_dir() / "checkpoints" / os.path.basename(IMAGENET_URL)


def _hub_dir() -> Path:
    """``torch.hub.get_dir()``, without importing torch when it is not loaded yet.

    The window asks this before its first run; importing torch for it would
    freeze the window for seconds. The fallback is torch's own rule
    (``torch.hub._get_torch_home``); a test keeps the two equal.
    """
    hub = sys.modules.get("torch.hub")
    if hub is not None:
        return Path(hub.get_dir())
    cache = os.getenv("XDG_CACHE_HOME", os.path.join("~", ".cache"))
    return Path(os.path.expanduser(os.getenv("TORCH_HOME", os.path.join(cache, "torch")))) / "hub"


def is_imagenet_cached() -> bool:
    return imagenet_cache_path().is_file()


def missing_weights(choice: str) -> str | None:
    """Why the weights ``choice`` names are not on this computer, in a user's words; None where they are (the
    untrained network and none at all always are)."""
    if choice == IMAGENET:
        return None if is_imagenet_cached() else "not downloaded yet"
    if choice in (UNTRAINED, NO_NETWORK):
        return None
    return None if Path(choice).is_file() else "the file is missing"


class NetworkWeights(Hashable, Protocol):
    """What a run needs of its weights: a name for the user, and the network they make."""

    @property
    def label(self) -> str: ...

    def build_network(self) -> FeatureNetwork: ...


@dataclass(frozen=True, eq=False)  # compared and hashed by identity
class LoadedWeights:
    """Weights ready for ``features.load_state_dict``.

    Attributes:
        choice: the choice as the user gave it ("imagenet", "untrained" or a path).
        label: what the window and the metadata call them.
        state: features-only state dict (keys "0.weight" ... "34.bias"), float32.
            Empty for untrained weights, which are generated instead.
    """

    choice: str
    label: str
    state: Mapping[str, torch.Tensor]
    widths: tuple[int, ...] = BLOCK_WIDTHS
    """Channels per block: VGG19's, or the test network's (untrained only)."""

    @property
    def untrained(self) -> bool:
        return self.choice == UNTRAINED

    def build_network(self) -> FeatureNetwork:
        """The feature network these weights make, on the CPU in float32 (WeightsError for no network)."""
        from .vgg import vgg19

        if self.choice == NO_NETWORK:
            raise WeightsError("optimising the picture needs VGG19's weights; " + options_hint())

        return vgg19(build_features(self))


def build_features(weights: LoadedWeights) -> nn.Sequential:
    """VGG19 ``features`` holding the given weights, in eval mode, frozen."""
    import torch
    from torch import nn

    from .vgg import vgg19_layers

    if weights.untrained:
        # Seeded without touching the global RNG, so untrained features are
        # the same in every run and never disturb the caller's random state.
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(UNTRAINED_SEED)
            features = vgg19_features_module(weights.widths)
    else:
        with torch.device("meta"):
            features = vgg19_layers(vgg19_config())
        features.load_state_dict(dict(weights.state), assign=True)
    assert isinstance(features, nn.Sequential)
    return features.eval().requires_grad_(False)


def load_weights(
    choice: str,
    *,
    download: bool = False,
    progress: DownloadProgress | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> LoadedWeights:
    """Resolve a weights choice into tensors.

    Args:
        choice: "imagenet", "untrained" or a path to a .pth file.
        download: for "imagenet", fetch the file when it is not cached.
        progress: download progress callback.
        cancelled: polled during a download; True stops it (raises Cancelled).

    Raises:
        WeightsError: the file is missing, corrupt or of another architecture,
            or the download failed. The message names the file and the options.
    """
    if choice == NO_NETWORK:
        return LoadedWeights(NO_NETWORK, describe(NO_NETWORK), {})
    if choice == UNTRAINED:
        if _test_network():
            return LoadedWeights(UNTRAINED, TINY_LABEL, {}, widths=TINY_WIDTHS)
        return LoadedWeights(UNTRAINED, describe(UNTRAINED), {})
    if choice == IMAGENET:
        path = imagenet_cache_path()
        if not path.is_file():
            if not download:
                raise WeightsError(
                    f"the ImageNet VGG19 weights are not downloaded yet (expected at {path}); " + options_hint()
                )
            download_imagenet(progress=progress, cancelled=cancelled)
        return LoadedWeights(IMAGENET, describe(IMAGENET), read_state_dict(path))
    path = Path(choice).expanduser()
    return LoadedWeights(str(path), describe(str(path)), read_state_dict(path))


class WeightsCache:
    """The weights last loaded, kept between runs (the window's, a notebook's ``stylize`` calls): loaded again only
    for another choice, or when the file chosen has changed since.

    Args:
        load: turns a choice into weights (default ``load_weights``, which downloads nothing; tests give a tiny
            network).
    """

    def __init__(self, load: Callable[[str], NetworkWeights] | None = None) -> None:
        self._load = load or load_weights
        self._lock = threading.Lock()
        self._key: tuple[str, float, bool] | None = None
        self._value: NetworkWeights | None = None

    @staticmethod
    def _key_of(choice: str) -> tuple[str, float, bool]:
        path = Path(choice)
        mtime = path.stat().st_mtime if choice not in (IMAGENET, UNTRAINED, NO_NETWORK) and path.is_file() else 0.0
        return choice, mtime, _test_network()

    def get(self, choice: str) -> NetworkWeights:
        """The weights ``choice`` names (``load``'s errors: WeightsError)."""
        key = self._key_of(choice)
        with self._lock:
            if self._key != key or self._value is None:
                self._value = self._load(choice)
                self._key = key
            return self._value


def read_state_dict(path: Path) -> dict[str, torch.Tensor]:
    """Read a VGG19 state dict (full torchvision model, or features only).

    Returns:
        The features' tensors keyed "0.weight" ... "34.bias", float32.

    Raises:
        WeightsError: naming the file and what was expected.
    """
    if path.is_dir():
        raise WeightsError(f"{path} is a folder, not a weights file; " + options_hint())
    if not path.exists():
        raise WeightsError(f"weights file {path} does not exist; " + options_hint())
    try:
        # mmap: a full torchvision file is 548 MB, of which only the 80 MB of
        # features is read; the classifier's pages are never touched.
        raw = _torch_load(path)
    except Exception as exc:  # torch raises many types for a bad file
        raise WeightsError(
            f"{path} is not a readable PyTorch weights file ({_short(exc)}); "
            "expected a VGG19 state dict saved with torch.save"
        ) from exc
    if isinstance(raw, Mapping) and "state_dict" in raw and isinstance(raw["state_dict"], Mapping):
        raw = raw["state_dict"]
    if not isinstance(raw, Mapping):
        raise WeightsError(
            f"{path} holds a {type(raw).__name__}, not a state dict; expected a VGG19 state dict saved with torch.save"
        )
    return _features_only(raw, path)


def _torch_load(path: Path) -> object:
    import torch

    try:
        return torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    except RuntimeError as exc:
        if "mmap" not in str(exc):
            raise
        # Files in torch's legacy (pre-1.6) format cannot be memory-mapped.
        return torch.load(path, map_location="cpu", weights_only=True)


def _features_only(raw: Mapping[str, object], path: Path) -> dict[str, torch.Tensor]:
    import torch

    expected = expected_feature_shapes()
    prefixed = any(str(k).startswith("features.") for k in raw)
    state: dict[str, torch.Tensor] = {}
    for key, value in raw.items():
        key = str(key)
        if prefixed:
            if not key.startswith("features."):
                continue  # the classifier of a full model
            key = key[len("features.") :]
        state[key] = value  # type: ignore[assignment]
    missing = sorted(set(expected) - set(state), key=_key_order)
    unexpected = sorted(set(state) - set(expected))
    if missing or unexpected:
        detail = []
        if missing:
            detail.append(f"missing {', '.join(missing[:4])}{' ...' if len(missing) > 4 else ''}")
        if unexpected:
            detail.append(f"unexpected {', '.join(unexpected[:4])}{' ...' if len(unexpected) > 4 else ''}")
        raise WeightsError(
            f"{path} is not a VGG19 state dict ({'; '.join(detail)}); expected torchvision's "
            "vgg19 keys features.0.weight ... features.34.bias"
        )
    out: dict[str, torch.Tensor] = {}
    for key, shape in expected.items():
        value = state[key]
        if not isinstance(value, torch.Tensor) or value.shape != shape:
            got = tuple(value.shape) if isinstance(value, torch.Tensor) else type(value).__name__
            raise WeightsError(f"{path}: features.{key} has shape {got}, VGG19 expects {tuple(shape)}")
        tensor = value.detach().to(torch.float32, memory_format=torch.contiguous_format, copy=True)
        if not torch.isfinite(tensor).all():
            raise WeightsError(f"{path}: features.{key} holds NaN or infinite values; the file is corrupt")
        out[key] = tensor
    return out


def _key_order(key: str) -> tuple[int, str]:
    index, _, rest = key.partition(".")
    return (int(index) if index.isdigit() else 999, rest)


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:200] if text else type(exc).__name__


def download_imagenet(
    *,
    url: str | None = None,
    dest: Path | None = None,
    progress: DownloadProgress | None = None,
    cancelled: Callable[[], bool] | None = None,
    timeout: float = 30.0,
) -> Path:
    """Download the ImageNet weights into torch's cache, atomically.

    The file is written to a temporary name in the destination folder and
    renamed only after its size and sha256 prefix (torchvision's, in the file
    name) have been checked, so an interrupted or corrupt transfer never
    leaves a file that looks complete.

    Raises:
        WeightsError: the transfer failed or the hash does not match.
        Cancelled: ``cancelled()`` returned True.
    """
    url = url or IMAGENET_URL
    dest = dest or imagenet_cache_path()
    match = _HASH_IN_NAME.search(os.path.basename(url))
    hash_prefix = match.group(1) if match else None
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=dest.name + ".", suffix=".partial", dir=dest.parent)
    tmp = Path(tmp_name)
    try:
        sha = hashlib.sha256()
        received = 0
        request = urllib.request.Request(url, headers={"User-Agent": "style-studio"})
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(request, timeout=timeout) as response:
            length = response.headers.get("Content-Length")
            total = int(length) if length and length.isdigit() else None
            if progress:
                progress(0, total)
            while True:
                if cancelled and cancelled():
                    raise Cancelled()
                chunk = response.read(_CHUNK)
                if not chunk:
                    break
                out.write(chunk)
                sha.update(chunk)
                received += len(chunk)
                if progress:
                    progress(received, total)
            if total is not None and received != total:
                raise WeightsError(f"the download of {url} stopped after {received} of {total} bytes; try again")
            out.flush()
            os.fsync(out.fileno())
        digest = sha.hexdigest()
        if hash_prefix and not digest.startswith(hash_prefix):
            raise WeightsError(
                f"the file downloaded from {url} is corrupt (sha256 {digest[:12]}..., "
                f"expected {hash_prefix}...); try again"
            )
        os.replace(tmp, dest)
        log.info("downloaded %s to %s", url, dest)
        return dest
    except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError) as exc:
        raise WeightsError(
            f"could not download the ImageNet VGG19 weights from {url} ({_short(exc)}); " + options_hint()
        ) from exc
    finally:
        tmp.unlink(missing_ok=True)
