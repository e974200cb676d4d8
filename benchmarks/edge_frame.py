"""How much brighter a stylised picture is along its edges than inside: the edge frame in docs/performance.md.

For each picture, the share of pixels brighter than a threshold (mean of R, G
and B above 200 of 255) in each of the rows and columns nearest each edge,
against the picture's inside (its middle three quarters on each side). The
photo itself, scaled to the same size, is the reference: a frame it does not
have is the render's own.

    python benchmarks/edge_frame.py /work/print-4096/rocket-4096.png --photo resources/samples/content/rocket.jpg
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from PIL import Image

BRIGHT = 200


def bright(path: Path, size: tuple[int, int] | None = None) -> np.ndarray:
    """(H, W) booleans: where the picture's mean of R, G and B is above ``BRIGHT``."""
    with Image.open(path) as image:
        rgb = image.convert("RGB")
        if size is not None and rgb.size != size:
            rgb = rgb.resize(size, Image.Resampling.BICUBIC)
    return np.asarray(rgb, dtype=np.float32).mean(axis=-1) > BRIGHT


def shares(mask: np.ndarray, depth: int) -> dict[str, list[float]]:
    """Per edge, the bright share of each of the ``depth`` lines nearest it, the edge's own line first."""
    return {
        "top": [float(mask[i].mean()) for i in range(depth)],
        "bottom": [float(mask[-1 - i].mean()) for i in range(depth)],
        "left": [float(mask[:, i].mean()) for i in range(depth)],
        "right": [float(mask[:, -1 - i].mean()) for i in range(depth)],
    }


def inside(mask: np.ndarray) -> float:
    h, w = mask.shape
    return float(mask[h // 8 : h - h // 8, w // 8 : w - w // 8].mean())


def report(name: str, mask: np.ndarray, depth: int) -> None:
    print(f"{name}: {mask.shape[1]}×{mask.shape[0]}, inside {inside(mask):.1%} bright")
    for edge, values in shares(mask, depth).items():
        peak = max(range(depth), key=lambda i: values[i])
        line = " ".join(f"{v:.0%}" for v in values)
        print(f"  {edge:>6}: {line}   (most: line {peak} from the edge, {values[peak]:.1%})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("pictures", nargs="+", type=Path)
    parser.add_argument("--photo", type=Path, help="the content photo, scaled to each picture's size as a reference")
    parser.add_argument("--depth", type=int, default=0, help="lines per edge (default: 1/256 of the width, x 3)")
    args = parser.parse_args()
    for path in args.pictures:
        mask = bright(path)
        depth = args.depth or 3 * max(2, mask.shape[1] // 256)
        report(str(path), mask, depth)
        if args.photo is not None:
            report(f"{args.photo} at that size", bright(args.photo, (mask.shape[1], mask.shape[0])), depth)


if __name__ == "__main__":
    main()
