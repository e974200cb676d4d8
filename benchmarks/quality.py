"""The picture's quality, measured: how far each recipe takes the photo towards the painting, and what it keeps.

For each pair (a photo and a painting) and each recipe (a set of settings), the
picture is rendered and measured against the photo and the painting, with
measures none of the recipes optimises:

- **colour closed**: the Wasserstein-2 distance between the RGB colour
  Gaussians (mean and covariance) of the picture and the painting, as a share
  of the photo's distance that the picture closed (0: the photo's colours, 1:
  the painting's);
- **style closed, half size**: the sliced Wasserstein distance between the
  distributions of VGG features (relu1_1 to relu4_1, 64 random directions
  each) of the picture at half its size and of the painting at the same size,
  the share of the photo's distance closed: strokes at the painting's scale;
- **layout kept**: the correlation of the picture's and the photo's
  luminance blurred to 24 px (1: the composition as it was);
- **edges kept**: the correlation of their luminance gradients' magnitudes at
  full size (1: every fine edge where it was).

Beside our recipes, crowsonkb's style-transfer-pytorch (CK, ``peer_ck.py``), run with the same weights at the
defaults' passes, is judged the same way, where its source is checked out (``--ck``).

A contact sheet (photo, painting, one column per recipe) is written to
docs/quality/sheet.jpg.

    python benchmarks/quality.py                        # 6 pairs, 160 px, each recipe's iterations
    python benchmarks/quality.py --size 256 --iterations 200
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import math
from collections.abc import Callable

import numpy as np
import peer_ck
from _common import ROOT, machine, table, weights
from PIL import Image, ImageDraw

from style_studio.core.settings import PRESETS

SAMPLES = ROOT / "resources" / "samples"
PAIRS = [
    ("chelsea.png", "starry_night.jpg"),
    ("astronaut.png", "the_scream.jpg"),
    ("coffee.png", "shipwreck.jpg"),
    ("rocket.jpg", "starry_night.jpg"),
    ("grace_hopper.jpg", "shipwreck.jpg"),
    ("coffee.png", "the_scream.jpg"),
]
#: CK's style layer weights, relu1_1 to relu5_1 (256:64:16:4:1), normalised to 1.
CK_LAYERS = tuple((name, w / 341) for name, w in zip(("relu1_1", "relu2_1", "relu3_1", "relu4_1", "relu5_1"),
                                                     (256, 64, 16, 4, 1), strict=True))  # fmt: skip
#: The 2016 recipe (the defaults until issue #34): Gram matrices, 300 iterations from the photo at full size.
RECIPE_2016 = {"style_loss": "gram", "init": "content", "first_scale": 0, "scales": 0, "iterations": 300}
GAUSSIAN_PALETTE = {**RECIPE_2016, "style_loss": "gaussian", "init": "palette"}
FROM_SMALL = {"first_scale": 128, "scale_ratio": 1.41, "iterations": 150}

#: The column of crowsonkb's tool (``peer_ck``), at the defaults' passes.
CK = "crowsonkb (CK), defaults' passes"
#: Recipe name -> the settings it changes from the defaults.
RECIPES: dict[str, dict[str, object]] = {
    "2016 recipe": RECIPE_2016,
    "defaults": {},
    "defaults, colour term off": {"colour_weight": 0.0},
    "defaults, colour weight 3": {"colour_weight": 3.0},
    "defaults, colour weight 10": {"colour_weight": 10.0},
    "gaussian": {**RECIPE_2016, "style_loss": "gaussian"},
    "gaussian, palette start": GAUSSIAN_PALETTE,
    "gaussian, palette, from 128 px": {**GAUSSIAN_PALETTE, **FROM_SMALL},
    "gaussian, palette, from 128 px, CK layers": {**GAUSSIAN_PALETTE, **FROM_SMALL, "style_layers": CK_LAYERS},
    "gaussian, palette, 100 iterations": {**GAUSSIAN_PALETTE, "iterations": 100},
    "gaussian, palette, 150 iterations": {**GAUSSIAN_PALETTE, "iterations": 150},
    "gaussian, palette, averaged": {**GAUSSIAN_PALETTE, "average": True},
    "adam": {**RECIPE_2016, "optimizer": "adam"},
    "adam, averaged": {**RECIPE_2016, "optimizer": "adam", "average": True},
    "defaults, instant start": {"init": "instant"},
    "defaults, from 192 px": {"first_scale": 192},
    "defaults, instant start, from 192 px": {"init": "instant", "first_scale": 192},
    **{f"preset {name}": preset for name, preset in PRESETS.items() if name != "default"},
}
LAYERS = ("relu1_1", "relu2_1", "relu3_1", "relu4_1")


def colour_distance(a: np.ndarray, b: np.ndarray) -> float:
    """W2 between the RGB Gaussians of two (H, W, 3) uint8 pictures, in [0, 1] units."""
    from scipy.linalg import sqrtm

    x, y = (p.reshape(-1, 3).astype(np.float64) / 255 for p in (a, b))
    mx, my = x.mean(0), y.mean(0)
    cx, cy = np.cov(x.T) + 1e-6 * np.eye(3), np.cov(y.T) + 1e-6 * np.eye(3)
    root = np.real(sqrtm(cy))
    cross = np.real(sqrtm(root @ cx @ root))
    return math.sqrt(max(float(((mx - my) ** 2).sum() + np.trace(cx + cy - 2 * cross)), 0.0))


def luminance(picture: np.ndarray) -> np.ndarray:
    return picture.astype(np.float64) @ np.array([0.299, 0.587, 0.114]) / 255


def correlation(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.corrcoef(a.ravel(), b.ravel())[0, 1])


def layout_kept(picture: np.ndarray, photo: np.ndarray) -> float:
    small = [Image.fromarray(p).reduce(max(1, max(p.shape[:2]) // 24)) for p in (picture, photo)]
    return correlation(*(luminance(np.asarray(s)) for s in small))


def edges_kept(picture: np.ndarray, photo: np.ndarray) -> float:
    def magnitude(p: np.ndarray) -> np.ndarray:
        y = luminance(p)
        return np.hypot(np.diff(y, axis=0)[:, :-1], np.diff(y, axis=1)[:-1, :])

    return correlation(magnitude(picture), magnitude(photo))


class Features:
    """VGG features of pictures and the sliced Wasserstein distance between their distributions."""

    def __init__(self, loaded) -> None:
        from style_studio.core.network.device import resolve
        from style_studio.core.network.vgg import TruncatedNetwork
        from style_studio.core.objective.capture import capture
        from style_studio.core.run.compute import network_for

        compute = resolve("cpu", "fp32")
        self.net = TruncatedNetwork(network_for(loaded, compute), list(LAYERS))
        self.capture = capture

    def of(self, picture: Image.Image) -> dict[str, np.ndarray]:
        import torch

        from style_studio.core.io.tensors import pil_to_tensor

        with self.capture(self.net, content_layers=LAYERS) as got, torch.no_grad():
            self.net(pil_to_tensor(picture))
            return {k: got.activations[k][0].flatten(1).t().numpy() for k in LAYERS}

    def distance(self, a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> float:
        rng = np.random.default_rng(0)
        total = 0.0
        for name in LAYERS:
            x, y = a[name], b[name]
            directions = rng.standard_normal((x.shape[1], 64))
            directions /= np.linalg.norm(directions, axis=0)
            px, py = (_quantiles(v @ directions) for v in (x, y))
            scale = np.sqrt((y**2).sum(1).mean() / x.shape[1]) + 1e-12
            total += float(np.sqrt(((px - py) ** 2).mean())) / scale
        return total / len(LAYERS)


def _quantiles(projected: np.ndarray, count: int = 256) -> np.ndarray:
    """``count`` evenly spaced quantiles of each column (the nearest sorted value: a sort, not 256 selections)."""
    ordered = np.sort(projected, axis=0)
    return ordered[np.round(np.linspace(0, len(ordered) - 1, count)).astype(int)]


def half(picture: Image.Image) -> Image.Image:
    return picture.resize((max(1, picture.width // 2), max(1, picture.height // 2)), Image.Resampling.LANCZOS)


def fitted(picture: Image.Image, side: int) -> Image.Image:
    scale = side / max(picture.size)
    return picture.resize((round(picture.width * scale), round(picture.height * scale)), Image.Resampling.LANCZOS)


def render(photo: Image.Image, painting: Image.Image, settings, loaded, *, every_record: bool = False,
           staged: dict[str, Image.Image] | None = None) -> tuple[Image.Image, float, list]:  # fmt: skip
    """The picture, the seconds it took, and its previews as (seconds, picture), about one a second (with
    ``every_record``, one per record). ``staged`` gets the start picture ("start") and each scale's last preview
    ("scale N")."""
    import time

    from style_studio.core import door
    from style_studio.core.jobs.picture import Pictures, Previews, RunHooks, RunSpec

    began, shown = time.perf_counter(), []

    def report(record) -> None:
        if record.preview is not None:
            shown.append((time.perf_counter() - began, Image.fromarray(record.preview)))
            if staged is not None:
                staged["start" if record.step == 0 else f"scale {record.scale}"] = shown[-1][1]

    previews = Previews(0.0 if every_record else 1.0, settings.size)
    result = door.picture(RunSpec(Pictures(photo, (painting,)), settings), loaded,
                         RunHooks(report=report, previews=previews))  # fmt: skip
    return result.finished_or_raise(), time.perf_counter() - began, shown


def gaps_closed(picture: Image.Image, *, painting_pixels: np.ndarray, photo_colour: float, half_painting: dict,
                photo_style: float, features: Features) -> tuple[float, float]:  # fmt: skip
    """The colour gap and the style gap at half size that ``picture`` closed (as the table measures them)."""
    colour = 1 - colour_distance(np.asarray(picture), painting_pixels) / photo_colour
    return colour, 1 - features.distance(features.of(half(picture)), half_painting) / photo_style


def first_look(shown: list, final: tuple[float, float], closed: Callable[[Image.Image], tuple[float, float]],
               size: tuple[int, int]) -> float:  # fmt: skip
    """Seconds until a preview is the painting: its colour gap and its style gap at half size closed (``closed``,
    at the picture's size) each at least 0.9 of the final picture's (``final``).

    Looked for among at most 16 previews evenly spread over the run, then to the second among those before it.
    """

    def close(index: int) -> bool:
        measured = closed(shown[index][1].resize(size, Image.Resampling.BICUBIC))
        return all(m >= 0.9 * f for m, f in zip(measured, final, strict=True))

    coarse = sorted({round(i * (len(shown) - 1) / 15) for i in range(16)}) if shown else []
    first = next((i for i in coarse if close(i)), None)
    if first is None:
        return math.nan
    earlier = [i for i in range(coarse[max(0, coarse.index(first) - 1)] + 1, first)]
    return shown[next((i for i in earlier if close(i)), first)][0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=160)
    parser.add_argument("--iterations", type=int, default=None, help="every recipe's (default: each recipe's own)")
    parser.add_argument("--pairs", type=int, default=len(PAIRS))
    parser.add_argument("--first-pair", type=int, default=1, help="the number of the first pair to run (from 1)")
    parser.add_argument("--recipes", default=";".join(RECIPES), help="separated by ;, the first is the baseline")
    parser.add_argument("--weights", default=None, help="default: the proxy file if present, else untrained")
    parser.add_argument("--sheet", default=str(ROOT / "docs" / "quality" / "sheet.jpg"))
    parser.add_argument("--ck", default=None,
                        help=f"CK's checkout (default: $CK_SOURCE, else {peer_ck.DEFAULT_SOURCE})")  # fmt: skip
    parser.add_argument("--no-ck", action="store_true", help="leave CK's column out")
    args = parser.parse_args()
    from style_studio.core.settings import DEFAULTS

    recipes = [name.strip() for name in args.recipes.split(";")]
    checkout = None if args.no_ck else peer_ck.source(args.ck)
    if checkout is None and not args.no_ck:
        print(f"CK's column left out: no checkout of its source at {peer_ck.DEFAULT_SOURCE} (see peer_ck.py)")
    columns = [*recipes, *([CK] if checkout is not None else [])]
    loaded = weights(args.weights)
    features = Features(loaded)
    rows, sheet_rows = [], []
    sums: dict[str, list[list[float]]] = {name: [] for name in columns}
    headers = ["pair", "recipe", "colour closed", "style closed, half size", "style closed", "layout kept",
               "edges kept", "time", "first look"]  # fmt: skip
    for photo_name, painting_name in PAIRS[args.first_pair - 1 : args.first_pair - 1 + args.pairs]:
        photo = Image.open(SAMPLES / "content" / photo_name).convert("RGB")
        painting = Image.open(SAMPLES / "style" / painting_name).convert("RGB")
        made, times, looks = {}, {}, {}
        for name in recipes:
            iterations = {"iterations": args.iterations} if args.iterations else {}
            changes = {**RECIPES[name], **iterations}
            settings = dataclasses.replace(DEFAULTS, size=args.size, weights=loaded.choice, **changes)
            made[name], times[name], looks[name] = render(photo, painting, settings, loaded)
        if checkout is not None:
            schedule = dataclasses.replace(DEFAULTS, size=args.size).schedule()
            made[CK], times[CK], looks[CK] = peer_ck.render(photo, painting, args.size, schedule, loaded.state,
                                                            checkout)  # fmt: skip
        size = next(iter(made.values())).size
        shown_photo = photo.resize(size, Image.Resampling.LANCZOS)
        photo_pixels, painting_pixels = np.asarray(shown_photo), np.asarray(fitted(painting, max(size)))
        half_painting = features.of(fitted(painting, max(size) // 2))
        full_painting = features.of(fitted(painting, max(size)))
        photo_colour = colour_distance(photo_pixels, painting_pixels)
        photo_style = features.distance(features.of(half(shown_photo)), half_painting)
        photo_full = features.distance(features.of(shown_photo), full_painting)
        baseline = times[recipes[0]]
        closed = functools.partial(gaps_closed, painting_pixels=painting_pixels, photo_colour=photo_colour,
                                   half_painting=half_painting, photo_style=photo_style, features=features)  # fmt: skip

        for name, picture in made.items():
            picture = made[name] = picture.resize(size, Image.Resampling.LANCZOS) if picture.size != size else picture
            pixels = np.asarray(picture)
            final = features.distance(features.of(picture), full_painting)
            colour, style = closed(picture)
            measures = [
                colour,
                style,
                1 - final / photo_full,
                layout_kept(pixels, photo_pixels),
                edges_kept(pixels, photo_pixels),
                times[name] / baseline,
                first_look(looks[name], (colour, style), closed, size) / times[name],
            ]
            sums[name].append(measures)
            rows.append([f"{photo_name} × {painting_name}", name, *(f"{m:.2f}" for m in measures)])
            print(" | ".join(str(c) for c in rows[-1]), f"({times[name]:.0f} s)", flush=True)
        sheet_rows.append([shown_photo, fitted(painting, max(size)), *made.values()])
        # After each pair: a run cut short (CK takes half an hour a pair here) keeps the pictures it made.
        contact_sheet(sheet_rows, ["photo", "painting", *columns]).save(args.sheet, quality=88)
    for name, measures in sums.items():
        rows.append(["mean", name, *(f"{v:.2f}" for v in np.nanmean(measures, axis=0))])
    iterations = args.iterations or "each recipe's own"
    print(f"\nQuality ({machine()}; weights: {loaded.label}; {args.size} px, iterations: {iterations}; "
          f"time as a share of {recipes[0]}'s; first look, the first preview whose colour and half-size style "
          "closed are each 0.9 of the picture's, as a share of the recipe's own time)")  # fmt: skip
    print(table(headers, rows))
    print(f"\ncontact sheet: {args.sheet}")


def contact_sheet(rows: list[list[Image.Image]], titles: list[str]) -> Image.Image:
    cell = max(max(p.size) for row in rows for p in row)
    band = 18
    sheet = Image.new("RGB", (cell * len(titles), band + cell * len(rows)), "white")
    draw = ImageDraw.Draw(sheet)
    for column, title in enumerate(titles):
        while title and draw.textlength(title) > cell - 8:  # a long recipe's name is cut, not run into the next
            title = title[:-2] + "…"
        draw.text((column * cell + 4, 3), title, fill="black")
    for number, row in enumerate(rows):
        for column, picture in enumerate(row):
            shown = fitted(picture, cell)
            sheet.paste(
                shown, (column * cell + (cell - shown.width) // 2, band + number * cell + (cell - shown.height) // 2)
            )
    return sheet


if __name__ == "__main__":
    main()
