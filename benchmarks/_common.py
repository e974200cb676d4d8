"""Shared set-up for the benchmark scripts: inputs, weights and a table printer."""

from __future__ import annotations

import os
import platform
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import style_studio  # noqa: E402, F401  (its settings for torch, e.g. huge pages, come before torch)

PROXY = ROOT.parent / "shared" / "weights" / "vgg19-hed-proxy.pth"
CONTENT = ROOT / "resources" / "samples" / "content" / "chelsea.png"
STYLE = ROOT / "resources" / "samples" / "style" / "starry_night.jpg"


def machine() -> str:
    import torch

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    gpu = f", {torch.cuda.get_device_name()}" if torch.cuda.is_available() else ""
    return f"{cpu}, {os.cpu_count()} cores{gpu}, torch {torch.__version__}"


def images(size: int, content_path: Path = CONTENT):
    from PIL import Image

    content = Image.open(content_path).convert("RGB")
    style = Image.open(STYLE).convert("RGB")
    return content, style


def weights(choice: str | None = None):
    from style_studio.core.network.weights import load_weights

    if choice is None:
        choice = str(PROXY) if PROXY.exists() else "untrained"
    return load_weights(choice)


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    cells = [[str(h) for h in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = ["| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |" for r in cells]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def add_painting_share(parser) -> None:
    """``--painting-share``: a what-if for the video benchmarks (``frame_styler.PAINTING_SHARE``)."""
    parser.add_argument("--painting-share", type=float, default=None,
                        help="what-if: the style pictures' share of a frame's style under the clip's look "
                             "(default: the app's)")  # fmt: skip


def painting_share(args) -> float:
    """The painting share the frames are styled under: the one asked for (set for this process), else the app's."""
    from style_studio.core.jobs import frame_styler

    if args.painting_share is not None:
        frame_styler.PAINTING_SHARE = args.painting_share
    return frame_styler.PAINTING_SHARE
