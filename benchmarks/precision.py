"""Automatic precision against fp32: speed per iteration, and the losses it reaches.

Speed: iterations of an fp32 run and an ``auto``-precision run are
interleaved one for one in the same process at 512 px; the ratio of their
medians is the speed-up. Quality: both runs' results are judged by the same
fp32 objective; the relative difference of the total losses must stay under
5 %. Both with trained features (the proxy weights) and untrained ones.
Side-by-side images go to benchmarks/out/precision-*.png to look at.

    python benchmarks/precision.py                   # 512 px, 100 iterations
    python benchmarks/precision.py --iterations 300  # the full default run
    python benchmarks/precision.py --against fp16 --size 1024 --iterations 10  # fp16's loss scaling
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path

from _common import PROXY, images, machine, median, table, weights

SPEED_TARGET = 1.8
LOSS_TOLERANCE = 0.05
OUT = Path(__file__).resolve().parent / "out"


def compare(choice: str, size: int, iterations: int, speed_pairs: int, against: str = "auto") -> list[object]:
    from PIL import Image

    from style_studio.core.engine import StyleTransfer
    from style_studio.core.settings import DEFAULTS

    loaded = weights(choice)
    content, style = images(size)
    base = dataclasses.replace(DEFAULTS, size=size, iterations=iterations, weights=loaded.choice, device="cpu")
    runs = {
        p: StyleTransfer(
            content, [style], dataclasses.replace(base, precision=p), loaded, preview_interval=float("inf")
        )
        for p in ("fp32", against)
    }
    generators = {p: t.run() for p, t in runs.items()}
    times: dict[str, list[float]] = {p: [] for p in runs}
    for step in range(iterations + 1):  # + the final record
        for precision, generator in generators.items():
            start = time.perf_counter()
            next(generator, None)
            if 2 <= step < 2 + speed_pairs:
                times[precision].append(time.perf_counter() - start)
    judge = runs["fp32"]
    losses = {p: judge.evaluate(t.result)["total"] for p, t in runs.items()}
    OUT.mkdir(exist_ok=True)
    a, b = runs["fp32"].result, runs[against].result
    sheet = Image.new("RGB", (a.width * 2 + 8, a.height), "white")
    sheet.paste(a, (0, 0))
    sheet.paste(b, (a.width + 8, 0))
    name = "proxy" if Path(choice) == PROXY else choice
    sheet.save(OUT / f"precision-{name}-{against}.png")
    speedup = median(times["fp32"]) / median(times[against])
    difference = abs(losses[against] - losses["fp32"]) / losses["fp32"]
    return [
        loaded.label.split(" (")[0],
        runs[against].compute.precision,
        f"{median(times['fp32']) * 1000:.0f}",
        f"{median(times[against]) * 1000:.0f}",
        f"{speedup:.2f}",
        f"{losses['fp32']:.4f}",
        f"{losses[against]:.4f}",
        f"{difference * 100:.2f} %",
        "yes" if speedup >= SPEED_TARGET and difference <= LOSS_TOLERANCE else "NO",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=512)
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--pairs", type=int, default=10, help="iterations timed per precision")
    parser.add_argument("--against", default="auto", choices=["auto", "bf16", "fp16"], help="the precision to compare")
    args = parser.parse_args()
    choices = ([str(PROXY)] if PROXY.exists() else []) + ["untrained"]
    rows = [compare(choice, args.size, args.iterations, args.pairs, args.against) for choice in choices]
    what = "Automatic precision" if args.against == "auto" else args.against
    print(f"{what} vs fp32 at {args.size} px, {args.iterations} L-BFGS iterations ({machine()})")
    print(
        table(
            [
                "weights",
                f"{args.against} is",
                "fp32 ms/it",
                f"{args.against} ms/it",
                "speed-up",
                "fp32 loss",
                f"{args.against} loss",
                "difference",
                f">= {SPEED_TARGET}x, <= 5 %",
            ],
            rows,
        )
    )
    print(
        "What each precision computes: under bf16 the convolutions run in bf16 and the Gram matrices are bf16\n"
        "products accumulated in fp32 and rounded to bf16 once; under fp32 everything is fp32 (on CUDA, TF32 is\n"
        "switched off for the run). Losses and the image are fp32 in both."
    )


if __name__ == "__main__":
    main()
