"""Where a run loses the painting's colours: colour closed (as ``quality.py`` measures it) at the start picture,
at the end of each scale, and at the end with the content term off and with each style layer off in turn.

    python benchmarks/colour_loss.py --size 384 --pairs 1,4     # quality.py's pairs, numbered from 1
    python benchmarks/colour_loss.py --changes '{"init": "content"}'
"""

from __future__ import annotations

import argparse
import dataclasses
import json

import numpy as np
from _common import machine, table, weights
from PIL import Image
from quality import PAIRS, SAMPLES, colour_distance, fitted, render

from style_studio.core.settings import DEFAULTS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=384)
    parser.add_argument("--pairs", default="1,4", help="quality.py's pairs by number, separated by commas")
    parser.add_argument("--changes", default="{}", help="settings changed from the defaults, as JSON")
    parser.add_argument("--ablations", action=argparse.BooleanOptionalAction, default=True,
                        help="also the runs with the content term off and with each style layer off")  # fmt: skip
    args = parser.parse_args()
    loaded = weights()
    base = dataclasses.replace(DEFAULTS, size=args.size, weights=loaded.choice, **json.loads(args.changes))
    runs = {"as set": base}
    if args.ablations:
        runs["content term off"] = dataclasses.replace(base, content_weight=0.0)
        for layer, _ in base.style_layers:
            runs[f"{layer} off"] = base.with_style_layer(layer, 0.0)
    rows = []
    for number in (int(n) for n in args.pairs.split(",")):
        photo_name, painting_name = PAIRS[number - 1]
        photo = Image.open(SAMPLES / "content" / photo_name).convert("RGB")
        painting = Image.open(SAMPLES / "style" / painting_name).convert("RGB")
        for name, settings in runs.items():
            by_stage: dict[str, Image.Image] = {}

            picture, seconds, _ = render(photo, painting, settings, loaded, every_record=True, staged=by_stage)
            size = picture.size
            painting_pixels = np.asarray(fitted(painting, max(size)))
            gap = colour_distance(np.asarray(photo.resize(size, Image.Resampling.LANCZOS)), painting_pixels)

            def closed(p: Image.Image, size=size, painting_pixels=painting_pixels, gap=gap) -> str:
                distance = colour_distance(np.asarray(p.resize(size, Image.Resampling.BICUBIC)), painting_pixels)
                return f"{1 - distance / gap:.2f}"

            stages = " → ".join(f"{stage} {closed(p)}" for stage, p in by_stage.items())
            rows.append([f"{photo_name} × {painting_name}", name, stages, closed(picture), f"{seconds:.0f}"])
            print(" | ".join(rows[-1]), flush=True)
    print(f"\nColour closed ({machine()}; weights: {loaded.label}; {args.size} px; changes {args.changes})")
    print(table(["pair", "run", "start → end of each scale", "picture", "seconds"], rows))


if __name__ == "__main__":
    main()
