"""The palette start against the photo: how far each run is after a few iterations, started either way.

Each pair (a photo and a painting) runs from the photo (``--init content``) and
from the photo in the painting's colours (``--init palette``), with the same
settings, for the Gram and the Gaussian style losses. The table gives the
total loss of the palette start over the photo start's after 10, 30 and the
last iteration (below 1: the palette start is ahead), and the seconds the
palette start took to reach the loss the photo start ended with (the first
look sooner).

    python benchmarks/start.py                  # 192 px, 60 iterations
    python benchmarks/start.py --size 256 --iterations 100
"""

from __future__ import annotations

import argparse
import dataclasses

from _common import ROOT, machine, table, weights

PAIRS = [
    ("chelsea.png", "starry_night.jpg"),
    ("astronaut.png", "the_scream.jpg"),
    ("coffee.png", "shipwreck.jpg"),
    ("rocket.jpg", "starry_night.jpg"),
]


def run(content, style, settings, loaded) -> list[tuple[float, float]]:
    """(seconds, total loss) of each iteration."""
    from style_studio.core import Pictures, Progress, RunHooks, RunSpec, door

    records: list[Progress] = []
    door.picture(RunSpec(Pictures(content, (style,)), settings), loaded, RunHooks(report=records.append))
    return [(r.elapsed, r.total_loss) for r in records if not r.done and not r.within_iteration and not r.start]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=192)
    parser.add_argument("--iterations", type=int, default=60)
    parser.add_argument("--weights", default=None, help="default: the proxy file if present, else untrained")
    args = parser.parse_args()
    from PIL import Image

    from style_studio.core.settings import DEFAULTS

    loaded = weights(args.weights)
    samples = ROOT / "resources" / "samples"
    rows = []
    for loss in ("gram", "gaussian"):
        for photo, painting in PAIRS:
            content = Image.open(samples / "content" / photo).convert("RGB")
            style = Image.open(samples / "style" / painting).convert("RGB")
            settings = dataclasses.replace(DEFAULTS, size=args.size, iterations=args.iterations, scales=1,
                                           weights=loaded.choice, style_loss=loss)  # fmt: skip
            plain = run(content, style, dataclasses.replace(settings, init="content"), loaded)
            palette = run(content, style, dataclasses.replace(settings, init="palette"), loaded)
            at = [min(9, len(plain) - 1), min(29, len(plain) - 1), len(plain) - 1]
            reached = next((t for t, value in palette if value <= plain[-1][1]), None)
            rows.append([
                loss, f"{photo} × {painting}", *(f"{palette[i][1] / plain[i][1]:.2f}" for i in at),
                f"{reached:.1f} of {plain[-1][0]:.1f}" if reached is not None else "not within the run",
            ])  # fmt: skip
    print(f"Palette start against the photo ({machine()}; weights: {loaded.label}; {args.size} px, "
          f"{args.iterations} iterations, L-BFGS)")  # fmt: skip
    print(table(["loss", "pair", "after 10", "after 30", "at the end", "s to the photo start's end"], rows))


if __name__ == "__main__":
    main()
