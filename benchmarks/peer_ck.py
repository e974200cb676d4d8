"""crowsonkb's style-transfer-pytorch (CK), the best-regarded optimisation tool, run with our weights at our passes.

CK is not a dependency and is not on the package index: ``--ck`` (or ``$CK_SOURCE``) is a checkout of
https://github.com/crowsonkb/style-transfer-pytorch (measured at commit e7e2c71), default
``benchmarks/peers/style-transfer-pytorch`` (git-ignored)::

    git clone https://github.com/crowsonkb/style-transfer-pytorch benchmarks/peers/style-transfer-pytorch

Its module is loaded without its package's ``__init__`` (which starts its web interface's imports); its
``torchvision.models.vgg19`` is given our weights (the same features file ours uses), so both tools see the same
network. Everything else is CK's defaults: its Wasserstein-2 style loss at relu1_1 to relu5_1 weighted
256:64:16:4:1, relu4_2's content at 0.015, TV at 2, Adam at 0.02 with the iterates averaged, from the photo,
scales from 128 px in steps of √2 with twice the iterations at the first. Only its iteration counts are scaled
down (``iterations_like``): its passes weighted by their pixels equal those of the run of ours it is beside.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import math
import os
import sys
import time
import types
from pathlib import Path

from _common import ROOT
from PIL import Image

DEFAULT_SOURCE = ROOT / "benchmarks" / "peers" / "style-transfer-pytorch"
#: CK's own defaults: the smallest scale, and the first scale's iterations over each later one's (1000:500).
MIN_SCALE, FIRST_SHARE = 128, 2


def source(given: str | None = None) -> Path | None:
    """CK's checkout, where there is one: ``given``, else ``$CK_SOURCE``, else ``DEFAULT_SOURCE``."""
    path = Path(given or os.environ.get("CK_SOURCE") or DEFAULT_SOURCE)
    return path if (path / "style_transfer" / "style_transfer.py").is_file() else None


def _module(checkout: Path) -> types.ModuleType:
    """``style_transfer.style_transfer`` from ``checkout``, its package's ``__init__`` left out."""
    if "style_transfer.style_transfer" not in sys.modules:
        package = types.ModuleType("style_transfer")
        package.__path__ = [str(checkout / "style_transfer")]
        sys.modules["style_transfer"] = package
    return importlib.import_module("style_transfer.style_transfer")


def iterations_like(side: int, schedule: list[tuple[int, int]]) -> tuple[int, int]:
    """(first scale's, each later scale's) iterations of CK's run to ``side`` px whose passes, each weighted by its
    pixels, equal ``schedule``'s ((side, iterations) per scale: ``Settings.schedule()``)."""
    ours = sum(iterations * (scale / side) ** 2 for scale, iterations in schedule)
    scales = _scales(min(MIN_SCALE, side), side)
    per_later = ours / (FIRST_SHARE * (scales[0] / side) ** 2 + sum((s / side) ** 2 for s in scales[1:]))
    return max(1, round(FIRST_SHARE * per_later)), max(1, round(per_later))


def _scales(start: int, end: int) -> list[int]:
    """CK's scales (``gen_scales``): ``end`` and down by √2 to no less than ``start``."""
    scales, i, scale = set(), 0, end
    while scale >= start:
        scales.add(scale)
        i += 1
        scale = round(end / math.pow(2, i / 2))
    return sorted(scales)


def render(photo: Image.Image, painting: Image.Image, side: int, schedule: list[tuple[int, int]], state: dict,
           checkout: Path) -> tuple[Image.Image, float, list]:  # fmt: skip
    """CK's picture of ``photo`` in ``painting`` at ``side`` px, with VGG19 ``features`` weights ``state`` (keys
    "0.weight" ...): (the picture, its seconds, its previews as (seconds, picture) about one a second)."""
    import torch
    import torchvision

    ck = _module(checkout)

    def vgg19(weights=None):
        network = torchvision.models.vgg19()
        network.features.load_state_dict({k: v.float() for k, v in state.items()})
        return network

    ck.models = types.SimpleNamespace(vgg19=vgg19, VGG19_Weights=torchvision.models.VGG19_Weights)  # CK's alone
    first, later = iterations_like(side, schedule)
    began, shown, last = time.perf_counter(), [], -math.inf
    transfer = ck.StyleTransfer(devices=["cuda" if torch.cuda.is_available() else "cpu"])

    def callback(iterate) -> None:
        nonlocal last
        now = time.perf_counter()
        if now - last >= 1.0:
            last = now
            shown.append((now - began, transfer.get_image()))

    with contextlib.redirect_stdout(io.StringIO()):  # its lines for each scale, between our table's rows
        picture = transfer.stylize(photo, [painting], end_scale=side, min_scale=MIN_SCALE, iterations=later,
                                   initial_iterations=first, callback=callback)  # fmt: skip
    return picture, time.perf_counter() - began, shown
