"""What a slider moved during a run does to the picture: a style layer's against the style weight's.

Issue #53 asks that a layer's slider, moved from 1 to 5 while the picture is painted, change it about as much
as the style weight's slider moved by the same factor at the same moment. Each run moves one slider by 5× once
it has made ``step`` iterations, through the run's live inbox as the window does, and its final picture is
compared with the picture the user would have had: the run with nothing moved, ending as planned. The figures are
the mean absolute difference (0-255) and the share of pixels that moved by more than 16 levels. A move near the
end gives the run ``LIVE_ITERATIONS`` more; the row "a move of nothing" (relu5_1 from 1 to 1.0001) is what that
and the optimiser's restart do alone.

    python benchmarks/live_sliders.py                       # 256 px, 60 iterations, moves at 10, 30 and 50
    python benchmarks/live_sliders.py --size 192 --steps 20 40
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable

import numpy as np
from _common import images, machine, table, weights

#: The sliders moved, each to 5× its value: (what the table calls it, the settings it makes from the run's).
MOVES: dict[str, Callable[..., object]] = {
    "relu5_1 1 → 5": lambda s: s.with_style_layer("relu5_1", 5 * s.style_layer_weights["relu5_1"]),
    "relu1_1 1 → 5": lambda s: s.with_style_layer("relu1_1", 5 * s.style_layer_weights["relu1_1"]),
    "style weight × 5": lambda s: dataclasses.replace(s, style_weight=5 * s.style_weight),
    "content weight × 5": lambda s: dataclasses.replace(s, content_weight=5 * s.content_weight),
}
NOTHING = "a move of nothing"
NOTHING_MOVE = lambda s: s.with_style_layer("relu5_1", 1.0001 * s.style_layer_weights["relu5_1"])  # noqa: E731


def paint(content, style, settings, loaded, step: int | None = None, move=None) -> np.ndarray:
    """The run's final picture, (H, W, 3) in 0-255; ``move`` applied once it has made ``step`` iterations."""
    from style_studio.core import LiveChanges, Pictures, RunHooks, RunSpec, door

    live = LiveChanges(settings, 1, content.size)

    def hear(record) -> None:
        if move is not None and record.step == step and not record.start and not record.done:
            live.change_settings(move(settings))

    result = door.picture(RunSpec(Pictures(content, (style,)), settings), loaded, RunHooks(report=hear, live=live))
    return np.asarray(result.image, np.float64)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--iterations", type=int, default=60)
    parser.add_argument("--steps", type=int, nargs="+", default=[10, 30, 50])
    parser.add_argument("--weights", default=None, help="default: the proxy file if present, else untrained")
    args = parser.parse_args()
    from style_studio.core.settings import DEFAULTS

    loaded = weights(args.weights)
    content, style = images(args.size)
    settings = dataclasses.replace(DEFAULTS, size=args.size, iterations=args.iterations, scales=1,
                                   weights=loaded.choice, seed=0)  # fmt: skip
    print(f"{machine()}; {args.size} px, {args.iterations} iterations, one scale, {loaded.choice}")
    reference = paint(content, style, settings, loaded)
    headers = ["moved", "at", "mean difference", "pixels > 16 levels"]
    rows = []
    for name, move in [(NOTHING, NOTHING_MOVE), *MOVES.items()]:
        for step in args.steps:
            moved = paint(content, style, settings, loaded, step, move)
            difference = np.abs(moved - reference)
            rows.append([name, f"{step} of {args.iterations}", f"{difference.mean():.1f}",
                         f"{100 * (difference.max(axis=2) > 16).mean():.1f} %"])  # fmt: skip
            print(table(headers, rows[-1:]).splitlines()[-1], flush=True)
    print()
    print(table(headers, rows))


if __name__ == "__main__":
    main()
