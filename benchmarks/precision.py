"""Automatic precision against fp32: speed per iteration, and the losses it reaches.

Speed: iterations of an fp32 run and an ``auto``-precision run are
interleaved one for one in the same process at 512 px; the ratio of their
medians is the speed-up. Quality: both runs' results are judged by the same
fp32 objective; the relative difference of the total losses must stay under
5 %. Both with trained features (the proxy weights) and untrained ones.
Side-by-side images go to benchmarks/out/precision-*.png to look at.

fp16 on a CPU without fp16 hardware is about 40x slower than fp32, too slow
to check at the sizes where its underflow shows. ``--emulate-fp16`` computes
fp16's numbers on fp32 kernels instead (``features.store_as_fp16``: weights,
activations and gradients rounded to fp16 between layers, as a GPU stores
them; the tests check it loses the same gradient as real fp16); its speed
says nothing. ``--loss-scale-start 1`` runs fp16 without loss scaling
(the scale never grows), to see what the scale saves.

    python benchmarks/precision.py                   # 512 px, 100 iterations
    python benchmarks/precision.py --iterations 300  # the full default run
    python benchmarks/precision.py --against fp16 --size 1024 --iterations 10  # fp16's loss scaling
    python benchmarks/precision.py --against fp16 --emulate-fp16 --size 1024 --iterations 10 --seed 1
    python benchmarks/precision.py --against fp16 --emulate-fp16 --size 2048 --tile 1024 --iterations 5 --weights proxy
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

from _common import CONTENT, PROXY, images, machine, median, table, weights

SPEED_TARGET = 1.8
LOSS_TOLERANCE = 0.05
OUT = Path(__file__).resolve().parent / "out"


def emulated_fp16():
    """fp16's numbers on the CPU's fp32 kernels (``Compute.fp16_emulated``)."""
    import torch

    from style_studio.core.network.device import Compute

    return Compute(torch.device("cpu"), "fp16", channels_last=True, fp16_emulated=True)


def compare(
    choice: str,
    size: int,
    iterations: int,
    speed_pairs: int,
    against: str = "auto",
    *,
    emulate_fp16: bool = False,
    tile: int = 0,
    seed: int = 0,
    content_path: Path = CONTENT,
) -> list[object]:
    from PIL import Image

    from style_studio.core import PictureRun, Pictures, Previews, RunHooks, RunSpec
    from style_studio.core.settings import DEFAULTS

    loaded = weights(choice)
    content, style = images(size, content_path)
    base = dataclasses.replace(
        DEFAULTS, size=size, iterations=iterations, weights=loaded.choice, device="cpu", tile=tile, seed=seed, scales=1
    )
    emulated = emulated_fp16() if emulate_fp16 else None
    runs = {
        p: PictureRun(
            RunSpec(Pictures(content, (style,)), dataclasses.replace(base, precision=p)),
            loaded,
            RunHooks(previews=Previews()),
            compute=emulated if p != "fp32" else None,
        )
        for p in ("fp32", against)
    }
    generators = runs
    times: dict[str, list[float]] = {p: [] for p in runs}
    for step in range(iterations + 1):  # + the final record
        for precision, generator in generators.items():
            start = time.perf_counter()
            record = next(generator, None)
            while record is not None and record.within_iteration:  # a tiled run reports each tile
                record = next(generator, None)
            if 2 <= step < 2 + speed_pairs:
                times[precision].append(time.perf_counter() - start)
            loss = f", loss {record.total_loss:.4f}" if record is not None else ""
            seconds = time.perf_counter() - start
            print(f"  {precision} iteration {step}: {seconds:.1f} s{loss}", file=sys.stderr, flush=True)
    judge = runs["fp32"]
    losses = {p: judge.evaluate(t.image)["total"] for p, t in runs.items()}
    OUT.mkdir(exist_ok=True)
    a, b = runs["fp32"].image, runs[against].image
    sheet = Image.new("RGB", (a.width * 2 + 8, a.height), "white")
    sheet.paste(a, (0, 0))
    sheet.paste(b, (a.width + 8, 0))
    name = "proxy" if Path(choice) == PROXY else choice
    sheet.save(OUT / f"precision-{name}-{against}{'-emulated' if emulate_fp16 else ''}-{size}.png")
    speedup = median(times["fp32"]) / median(times[against])
    difference = abs(losses[against] - losses["fp32"]) / losses["fp32"]
    fast_enough = emulate_fp16 or speedup >= SPEED_TARGET  # an emulation's speed says nothing
    return [
        loaded.label.split(" (")[0],
        runs[against].compute.describe().removeprefix("cpu, "),
        f"{median(times['fp32']) * 1000:.0f}",
        f"{median(times[against]) * 1000:.0f}",
        "-" if emulate_fp16 else f"{speedup:.2f}",
        f"{losses['fp32']:.4f}",
        f"{losses[against]:.4f}",
        f"{difference * 100:.2f} %",
        "yes" if fast_enough and difference <= LOSS_TOLERANCE else "NO",
    ]


def first_gradients(choice: str, size: int, tile: int, content_path: Path) -> list[list[object]]:
    """Emulated fp16's first image gradient against fp32's, with and without the loss scale.

    A short run's losses barely move at print sizes; the gradient shows at
    once what fp16 loses.
    """
    import torch

    from style_studio.core.io.imageio import fit_size
    from style_studio.core.network.device import Compute
    from style_studio.core.objective.inputs import ScaleInputs
    from style_studio.core.objective.loss_scale import LossScale
    from style_studio.core.objective.objective import Objective
    from style_studio.core.objective.tiles import TiledObjective
    from style_studio.core.run.compute import network_for
    from style_studio.core.settings import DEFAULTS

    loaded = weights(choice)
    content, style = images(size, content_path)
    settings = dataclasses.replace(DEFAULTS, size=size, weights=loaded.choice, device="cpu")
    cpu = torch.device("cpu")
    inputs = ScaleInputs.prepare(content, (style,), fit_size(*content.size, size), settings, cpu)

    def gradient(compute: Compute, scaled: bool) -> torch.Tensor:
        network = network_for(loaded, compute)
        objective = (
            TiledObjective(network, inputs, settings, compute, tile)
            if tile
            else Objective(network, inputs, settings, compute)
        )
        image = inputs.content.clone().requires_grad_(True)
        with objective:
            for _ in objective.gradient(image, LossScale(scaled)):
                pass  # tiles
        assert image.grad is not None
        return image.grad

    exact = gradient(Compute(cpu, "fp32", channels_last=True), False)
    rows = []
    for scaled in (False, True):
        ours = gradient(emulated_fp16(), scaled)
        lost = ((ours == 0) & (exact != 0)).float().mean().item()
        rows.append(
            [
                "loss scaling (the app)" if scaled else "no loss scaling",
                f"{((ours - exact).norm() / exact.norm()).item() * 100:.1f} %",
                f"{(ours.norm() / exact.norm()).item():.3f}",
                f"{lost * 100:.1f} %",
            ]
        )
        print(f"  first gradient, {rows[-1]}", file=sys.stderr, flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=512)
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--pairs", type=int, default=10, help="iterations timed per precision")
    parser.add_argument("--against", default="auto", choices=["auto", "bf16", "fp16"], help="the precision to compare")
    parser.add_argument("--emulate-fp16", action="store_true", help="fp16 on fp32 kernels (with --against fp16)")
    parser.add_argument("--loss-scale-start", type=float, help="fp16's first loss scale; 1: no loss scaling at all")
    parser.add_argument("--tile", type=int, default=0, help="evaluate both runs in tiles of at most N px")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--content", type=Path, default=CONTENT, help="the photo (default: %(default)s)")
    parser.add_argument("--weights", choices=["both", "proxy", "untrained"], default="both")
    parser.add_argument(
        "--first-gradient", action="store_true", help="emulated fp16's first gradient against fp32's, no runs"
    )
    args = parser.parse_args()
    if args.emulate_fp16 and args.against != "fp16":
        parser.error("--emulate-fp16 needs --against fp16")
    if args.loss_scale_start is not None:
        from style_studio.core.objective import loss_scale

        loss_scale.LOSS_SCALE_START = args.loss_scale_start
        if args.loss_scale_start == 1:
            loss_scale.LOSS_SCALE_GROWTH = 10**9
    if args.first_gradient:
        choice = str(PROXY) if PROXY.exists() and args.weights != "untrained" else "untrained"
        rows = first_gradients(choice, args.size, args.tile, args.content)
        tiles = f" in tiles of {args.tile} px" if args.tile else ""
        print(f"Emulated fp16's first gradient vs fp32's at {args.size} px{tiles}, {args.content.name} ({machine()})")
        print(table(["fp16", "difference", "norm / fp32's", "values lost"], rows))
        return
    choices = ([str(PROXY)] if PROXY.exists() and args.weights != "untrained" else []) + (
        ["untrained"] if args.weights != "proxy" else []
    )
    rows = []
    for choice in choices:
        rows.append(
            compare(
                choice,
                args.size,
                args.iterations,
                args.pairs,
                args.against,
                emulate_fp16=args.emulate_fp16,
                tile=args.tile,
                seed=args.seed,
                content_path=args.content,
            )
        )
    what = "Automatic precision" if args.against == "auto" else args.against
    if args.emulate_fp16:
        what += " emulated on fp32 kernels"
    if args.loss_scale_start is not None:
        what += f", loss scale from {args.loss_scale_start:g}"
    tiles = f", tiles of {args.tile} px" if args.tile else ""
    print(
        f"{what} vs fp32 at {args.size} px{tiles}, {args.iterations} L-BFGS iterations, seed {args.seed}, "
        f"{args.content.name} ({machine()})"
    )
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
                "<= 5 %" if args.emulate_fp16 else f">= {SPEED_TARGET}x, <= 5 %",
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
