"""The look tuned to the painting, against the instant look and the optimisation: quality and time, in one run.

For each painting, the look is tuned on one photo (``--preset tuned``: the first picture tunes, then paints) and
then paints a photo it never saw in the same painting (the next picture: at once, from the kept look). Each
picture is judged as ``benchmarks/quality.py`` judges pictures (style closed, style closed at half size, colour
closed, layout kept), beside the instant look's and the defaults' pictures of the same photos.

Times, in the same run: the first tuned picture (tuning included) as a share of the defaults' picture; and the
next photo's whole command (``style-studio render PHOTO PAINTING --preset tuned``, a new process: Python's start
and imports included) as a share of the instant look's whole command.

    python benchmarks/tuned.py                 # three paintings, 384 px, the proxy weights
    python benchmarks/tuned.py --paintings 1 --size 256
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import ROOT, machine, table, weights
from PIL import Image
from quality import SAMPLES, Features, colour_distance, fitted, half, layout_kept

#: (the photo tuned on, a photo of the same painting it never saw, the painting).
SETS = [
    ("chelsea.png", "rocket.jpg", "starry_night.jpg"),
    ("coffee.png", "grace_hopper.jpg", "shipwreck.jpg"),
    ("astronaut.png", "coffee.png", "the_scream.jpg"),
]


class Judge:
    """The quality sheet's measures of a picture against its photo and painting."""

    def __init__(self, loaded) -> None:
        self.features = Features(loaded)

    def __call__(self, picture: Image.Image, photo: Image.Image, painting: Image.Image) -> list[float]:
        features = self.features
        shown = photo.resize(picture.size, Image.Resampling.LANCZOS)
        photo_pixels, painting_pixels = np.asarray(shown), np.asarray(fitted(painting, max(shown.size)))
        full = features.of(fitted(painting, max(shown.size)))
        halved = features.of(fitted(painting, max(shown.size) // 2))
        photo_style = features.distance(features.of(shown), full)
        photo_half = features.distance(features.of(half(shown)), halved)
        photo_colour = colour_distance(photo_pixels, painting_pixels)
        return [
            1 - features.distance(features.of(picture), full) / photo_style,
            1 - features.distance(features.of(half(picture)), halved) / photo_half,
            1 - colour_distance(np.asarray(picture), painting_pixels) / photo_colour,
            layout_kept(np.asarray(picture), photo_pixels),
        ]


def picture(photo: Image.Image, painting: Image.Image, settings, loaded) -> tuple[Image.Image, float]:
    from style_studio.core import door
    from style_studio.core.jobs.picture import Pictures, RunHooks, RunSpec

    began = time.perf_counter()
    result = door.picture(RunSpec(Pictures(photo, (painting,)), settings), loaded, RunHooks())
    return result.finished_or_raise(), time.perf_counter() - began


def whole_commands(photo: Path, painting: Path, size: int, weights_choice: str, repeats: int) -> tuple[float, float]:
    """The median seconds of ``render --preset tuned`` (the look kept: the next photo) and ``--preset instant``."""
    command = [str(Path(sys.executable).parent / "style-studio"), "render", str(photo), str(painting),
               "--size", str(size), "--weights", weights_choice, "--progress", "none"]  # fmt: skip
    times: dict[str, list[float]] = {"tuned": [], "instant": []}
    with tempfile.TemporaryDirectory() as scratch:
        for n in range(repeats + 1):  # the first tuned call tunes (or finds the look kept): not counted
            for name in times:
                began = time.perf_counter()
                out = str(Path(scratch) / f"{name}-{n}.png")
                subprocess.run([*command, "--preset", name, "-o", out], check=True, capture_output=True)
                if n:
                    times[name].append(time.perf_counter() - began)
    return statistics.median(times["tuned"]), statistics.median(times["instant"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=384)
    parser.add_argument("--paintings", type=int, default=len(SETS))
    parser.add_argument("--tune-steps", type=int, default=None, help="default: the setting's default")
    parser.add_argument("--repeats", type=int, default=3, help="whole commands timed (median)")
    parser.add_argument("--weights", default=None, help="default: the proxy file if present, else untrained")
    args = parser.parse_args()
    from style_studio.core.settings import DEFAULTS, preset

    with tempfile.TemporaryDirectory() as cache:
        os.environ["STYLE_STUDIO_CACHE"] = cache  # tuned here, not found kept from before
        loaded = weights(args.weights)
        judge = Judge(loaded)
        common = {"size": args.size, "weights": loaded.choice}
        tuned = dataclasses.replace(preset("tuned"), **common)
        if args.tune_steps:
            tuned = dataclasses.replace(tuned, tune_steps=args.tune_steps)
        recipes = {"instant look": dataclasses.replace(preset("instant"), **common),
                   "defaults": dataclasses.replace(DEFAULTS, **common)}  # fmt: skip
        rows, ratios = [], []
        for tuned_on, unseen, painting_name in SETS[: args.paintings]:
            painting = Image.open(SAMPLES / "style" / painting_name).convert("RGB")
            for which, photo_name in (("tuned on", tuned_on), ("never seen", unseen)):
                photo = Image.open(SAMPLES / "content" / photo_name).convert("RGB")
                made = {name: picture(photo, painting, settings, loaded) for name, settings in recipes.items()}
                made["tuned look"] = picture(photo, painting, tuned, loaded)
                for name, (result, seconds) in made.items():
                    measures = judge(result, photo, painting)
                    rows.append([painting_name, f"{photo_name} ({which})", name,
                                 *(f"{m:.2f}" for m in measures), f"{seconds:.1f}"])  # fmt: skip
                    print(" | ".join(rows[-1]), flush=True)
                if which == "tuned on":
                    ratios.append(made["tuned look"][1] / made["defaults"][1])
        first = SETS[0]
        next_tuned, instant = whole_commands(SAMPLES / "content" / first[1], SAMPLES / "style" / first[2],
                                             args.size, loaded.choice, args.repeats)  # fmt: skip
    headers = ["painting", "photo", "picture", "style closed", "style closed, half size", "colour closed",
               "layout kept", "seconds"]  # fmt: skip
    print(f"\nThe tuned look ({machine()}; weights: {loaded.label}; {args.size} px; {tuned.tune_steps} tuning steps)")
    print(table(headers, rows))
    print(f"\nfirst tuned picture (tuning included) / the defaults' picture: "
          f"{', '.join(f'{r:.2f}' for r in ratios)} (mean {statistics.mean(ratios):.2f})")  # fmt: skip
    print(f"the next photo's whole command / the instant look's whole command: {next_tuned / instant:.2f} "
          f"({next_tuned:.1f} s / {instant:.1f} s)")  # fmt: skip


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
