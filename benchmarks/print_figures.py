"""The figures (docs/performance.md) for a finished print render (``print_render.sh``): times, peak memory, pictures.

Reads a render folder made by ``benchmarks/print_render.sh`` and prints:

- the render's own elapsed time (it carries across resumes; an iteration cut
  short by a stop is not in it) and the wall time of all its segments;
- the peak resident memory of the whole process, the largest over the segments;
- per scale, and per tiling where a scale ran in more than one (a segment
  resumed after the memory plan changed): the picture's size, the
  iterations, the median seconds per iteration (undisturbed by the odd
  iteration slowed by other work or by a resume's set-up) and the loss at
  the scale's end.

With ``--pictures DIR`` it also writes the whole picture scaled down
(``print-4096-whole.jpg``) and a crop at 100 % (``print-4096-crop.png``)
centred where four tiles' cores meet, the place a seam would show; with
several ``--tile`` sizes, between the places where each layout's tiles meet,
which the crop must then hold all of. The tile layout is the render's own:
``core.objective.tiles.split`` on the default layers' reach.

    python benchmarks/print_figures.py /work/print-4096 --tile 1024 --tile 2048 --pictures packaging/screenshots
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from _common import table

PICTURE = "rocket-4096.png"


@dataclass
class Scale:
    width: int = 0
    height: int = 0
    iterations: int = 0
    seconds: dict[int, list[float]] = field(default_factory=dict)  # tiles (0: untiled) -> seconds per iteration
    last_loss: float | None = None


def read_segments(log: Path) -> tuple[int, float, int]:
    """(segments, wall seconds, peak resident bytes) over the segments in ``segments.log``."""
    text = log.read_text()
    starts = len(re.findall(r"^segment start ", text, re.MULTILINE))
    seconds = [int(s) for s in re.findall(r"^segment end .* seconds=(\d+)$", text, re.MULTILINE)]
    # /usr/bin/time's %M is in KiB.
    peaks = [int(k) * 1024 for k in re.findall(r"^peak resident memory (\d+) kB$", text, re.MULTILINE)]
    return starts, float(sum(seconds)), max(peaks, default=0)


def read_progress(path: Path) -> tuple[dict[int, Scale], float, bool]:
    """Per-scale figures, the render's last elapsed time, and whether it finished, from ``progress.jsonl``.

    A segment ends with a stop's record (``done``) or, killed, with none; a
    resumed one starts again from its checkpoint, so iterations done after
    it and lost by a kill are made twice: the later making counts. An
    iteration is timed from the one before it in the same segment only, so a
    resume's set-up is never counted as one.
    """
    made: dict[tuple[int, int], tuple[int, dict]] = {}
    tiles: dict[tuple[int, int, int], int] = {}  # (segment, scale, iteration) -> tiles it ran in
    segment, last_elapsed, stopped = 0, -1.0, False
    elapsed, finished = 0.0, False
    for line in path.read_text().splitlines():
        record = json.loads(line)
        if stopped or record["elapsed"] < last_elapsed:
            segment += 1  # resumed after a stop, or after a kill: the clock went back to the checkpoint's
        last_elapsed, stopped = record["elapsed"], bool(record["done"])
        if record["done"]:
            finished = record["stop_reason"] == "finished"
            elapsed = record["elapsed"]
            continue  # the stop's record repeats the last iteration's, at the time of the stop
        if record["parts"]:  # a record from within a tiled iteration: 2 parts a tile
            tiles[(segment, record["scale"], record["iteration"])] = record["parts"] // 2
            continue
        if record["total_loss"] is None:
            continue  # a notice
        made[(record["scale"], record["iteration"])] = (segment, record)
    scales: dict[int, Scale] = {}
    for (number, iteration), (segment, record) in sorted(made.items()):
        scale = scales.setdefault(number, Scale())
        scale.width, scale.height = record["width"], record["height"]
        scale.iterations = max(scale.iterations, iteration)
        scale.last_loss = record["total_loss"]
        before = made.get((number, iteration - 1))
        if before is not None and before[0] == segment:
            tiled = tiles.get((segment, number, iteration), 0)
            scale.seconds.setdefault(tiled, []).append(record["elapsed"] - before[1]["elapsed"])
    return scales, max(elapsed, last_elapsed), finished


def junction(width: int, height: int, tile: int) -> tuple[int, int]:
    """The point nearest the picture's centre where four tiles' cores meet, in the render's tile layout."""
    from style_studio.core.network.vgg import TruncatedNetwork
    from style_studio.core.network.weights import load_weights
    from style_studio.core.objective.tiles import Reach, split
    from style_studio.core.settings import DEFAULTS

    layers = set(DEFAULTS.content_layers) | set(DEFAULTS.active_style_layers)
    network = load_weights("untrained").build_network()
    reach = Reach.of(TruncatedNetwork(network, layers, DEFAULTS.pooling))
    columns = [span.core_start for span in split(width, tile, reach)[1:]]
    rows = [span.core_start for span in split(height, tile, reach)[1:]]
    if not columns or not rows:
        raise SystemExit(f"a {width}×{height} picture in tiles of {tile} px has no place where four tiles meet")
    return min(columns, key=lambda x: abs(x - width / 2)), min(rows, key=lambda y: abs(y - height / 2))


def write_pictures(picture: Path, tiles: list[int], out: Path, crop: tuple[int, int], whole_width: int) -> str:
    from PIL import Image

    out.mkdir(parents=True, exist_ok=True)
    with Image.open(picture) as image:
        image.load()
    meets = [junction(image.width, image.height, tile) for tile in tiles]
    x = round(sum(x for x, _ in meets) / len(meets))
    y = round(sum(y for _, y in meets) / len(meets))
    left = min(max(x - crop[0] // 2, 0), image.width - crop[0])
    top = min(max(y - crop[1] // 2, 0), image.height - crop[1])
    inside = [(mx - left, my - top) for mx, my in meets]
    if not all(0 <= ix < crop[0] and 0 <= iy < crop[1] for ix, iy in inside):
        raise SystemExit(f"a {crop[0]}x{crop[1]} crop cannot hold where the tiles meet: {meets}")
    image.crop((left, top, left + crop[0], top + crop[1])).save(out / "print-4096-crop.png", optimize=True)
    whole = image.resize((whole_width, round(image.height * whole_width / image.width)), Image.Resampling.LANCZOS)
    whole.convert("RGB").save(out / "print-4096-whole.jpg", quality=88, optimize=True)
    where = "; ".join(
        f"tiles of {tile} px meet at ({mx}, {my}), ({ix}, {iy}) in the crop"
        for tile, (mx, my), (ix, iy) in zip(tiles, meets, inside, strict=True)
    )
    return f"{image.width}×{image.height}; crop {crop[0]}×{crop[1]} at ({left}, {top}); {where}"


def hours(seconds: float) -> str:
    return f"{seconds / 3600:.2f} h ({seconds:,.0f} s)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folder", type=Path, help="the folder print_render.sh rendered into")
    parser.add_argument(
        "--tile", type=int, action="append", help="a tile core the last scale ran in (repeatable; default 1024)"
    )
    parser.add_argument("--pictures", type=Path, help="write the whole picture and the 100 %% crop here")
    parser.add_argument("--crop", default="600x500", help="the crop's size (default 600x500)")
    parser.add_argument("--whole-width", type=int, default=1024, help="the scaled-down picture's width (default 1024)")
    args = parser.parse_args()

    segments, wall, peak = read_segments(args.folder / "segments.log")
    scales, elapsed, done = read_progress(args.folder / "progress.jsonl")
    print(f"render: {'finished' if done else 'NOT finished'}; {segments} segments")
    print(f"elapsed (the render's own clock, across resumes): {hours(elapsed)}")
    print(f"wall time of the segments: {hours(wall)}")
    print(f"peak resident memory (largest segment): {peak / 2**30:.2f} GB (GiB, as the other benchmarks)")
    rows = []
    for number, scale in sorted(scales.items()):
        for tiled, seconds in sorted(scale.seconds.items()):
            median = statistics.median(seconds)
            rows.append(
                [
                    number,
                    f"{scale.width}x{scale.height}",
                    f"{tiled} tiles" if tiled else "whole",
                    scale.iterations,
                    f"{median:.1f}",
                    len(seconds),
                    f"{median * scale.iterations:,.0f}",
                    f"{scale.last_loss:.3f}" if scale.last_loss is not None else "-",
                ]
            )
    headers = [
        "scale",
        "picture",
        "evaluated",
        "iterations",
        "median s / it",
        "timed",
        "median x iterations (s)",
        "last loss",
    ]
    print(table(headers, rows))
    if args.pictures:
        if not done:
            raise SystemExit("the render has not finished: no pictures written")
        crop = tuple(int(v) for v in args.crop.lower().split("x"))
        assert len(crop) == 2
        tiles = args.tile or [1024]
        print(write_pictures(args.folder / PICTURE, tiles, args.pictures, (crop[0], crop[1]), args.whole_width))


if __name__ == "__main__":
    main()
