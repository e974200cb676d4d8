"""GPU benchmark: one prepared command for a borrowed GPU machine, finished in a few minutes.

A GPU machine may be lent for minutes, offline, with another torch version:
every row is printed (and flushed) as soon as it is measured, each
configuration runs on its own so that one failure costs only its row, and
the whole script aims to end in under five minutes on a data-centre GPU.

Rows: cold start (the first run in the process: network, weights and
kernel selection included), then warm iterations per second for L-BFGS and
Adam in fp32 (true float32: TF32 off), bf16 and fp16 (with loss scaling),
with the peak memory against the app's estimate; then the final losses of
fp16 and bf16 runs judged against fp32 by the same fp32 objective; and the
tiled rows at print size (speed untiled and in tiles, and fp16 against fp32
in a tiled run); and the classic figure, 500 L-BFGS iterations at 512 px (the original Lua
implementation: 22 s on a Pascal Titan X; the aim here is under 5 s).
Without a GPU it says so and exits 0.

    python benchmarks/gpu.py
    python benchmarks/gpu.py --sizes 512 --iterations 30 --no-classic
    python benchmarks/gpu.py --dry-run   # every row on the CPU at 64 px: check the script before a GPU is lent
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
import traceback
from collections.abc import Callable

from _common import images, machine, weights

from style_studio.core import PictureRun, Pictures, Previews, RunHooks, RunSpec

AIM_SECONDS = 5.0
DEVICE = "cuda"  # --dry-run: "cpu"


def sync() -> None:
    import torch

    if DEVICE == "cuda":
        torch.cuda.synchronize()


def say(*parts: object) -> None:
    print(*parts, flush=True)


def guarded(name: str, measure: Callable[[], str]) -> None:
    """Print one measured row, or why it could not be measured; never stop the script."""
    start = time.perf_counter()
    try:
        row = measure()
    except Exception as exc:  # one configuration's failure must not lose the others
        row = f"FAILED: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        traceback.print_exc(file=sys.stderr)
    say(f"| {name:<34} | {row} | {time.perf_counter() - start:6.1f} s |")


def settings_for(size: int, precision: str, optimizer: str, iterations: int, loaded, tile: int = 0):
    from style_studio.core.settings import DEFAULTS

    return dataclasses.replace(
        DEFAULTS,
        size=size,
        iterations=iterations,
        scales=1,
        precision=precision,
        optimizer=optimizer,
        device=DEVICE,
        weights=loaded.choice,
        tile=tile,
    )


def iterations_of(run):
    """A run's records of whole iterations (a tiled one also reports each tile)."""
    return (record for record in run if not record.within_iteration)


def cold_start(size: int, loaded) -> str:

    content, style = images(size)
    start = time.perf_counter()
    transfer = PictureRun(RunSpec(Pictures(content, (style,)), settings_for(size, "auto", "lbfgs", 1, loaded)), loaded)
    first = next(transfer)
    sync()
    return f"first iteration after {time.perf_counter() - start:.2f} s ({first.compute})"


def warm(size: int, precision: str, optimizer: str, iterations: int, loaded, tile: int = 0) -> str:
    import torch

    from style_studio.core.io.imageio import fit_size
    from style_studio.core.run.memory import estimate_bytes, tiled_bytes

    content, style = images(size)
    settings = settings_for(size, precision, optimizer, iterations + 10, loaded, tile)
    cuda = DEVICE == "cuda"
    if cuda:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated() if cuda else 0
    transfer = PictureRun(RunSpec(Pictures(content, (style,)), settings), loaded, RunHooks(previews=Previews(0.15)))
    run = iterations_of(transfer)
    for _ in range(10):  # warm-up: cuDNN autotuning, the allocator, L-BFGS's history filling
        next(run)
    sync()
    start = time.perf_counter()
    for _ in range(iterations):
        next(run)
    sync()
    rate = iterations / (time.perf_counter() - start)
    transfer.close()
    width, height = transfer.plan.sizes[-1]
    style_size = fit_size(*style.size, settings.style_side(max(width, height)))
    if transfer.plan.tile is not None:
        estimate = tiled_bytes(width, height, transfer.plan.tile, transfer.compute.precision, optimizer) / 2**30
    else:
        estimate = estimate_bytes(width, height, [style_size], transfer.compute.precision, optimizer) / 2**30
    if not cuda:
        return f"{rate:7.1f} it/s, estimate {estimate:.2f} GB"
    peak = (torch.cuda.max_memory_allocated() - before) / 2**30
    covered = "covers" if estimate >= peak else "DOES NOT cover"
    return f"{rate:7.1f} it/s, peak {peak:.2f} GB, estimate {estimate:.2f} GB ({covered})"


def final_loss(size: int, precision: str, iterations: int, loaded, tile: int = 0) -> str:
    content, style = images(size)
    results = {}
    for p in ("fp32", precision):
        transfer = PictureRun(RunSpec(Pictures(content, (style,)), settings_for(size, p, "lbfgs", iterations, loaded,
                                                                              tile)), loaded)  # fmt: skip
        for _ in transfer:
            pass
        results[p] = transfer
    judge = results["fp32"]
    fp32, other = (judge.evaluate(results[p].image)["total"] for p in ("fp32", precision))
    return f"fp32 {fp32:.4f}, {precision} {other:.4f}: {abs(other - fp32) / fp32 * 100:.2f} % apart"


def classic(loaded) -> str:
    """Wall time of a whole default run: 500 L-BFGS iterations at 512 px, set-up included."""

    content, style = images(512)
    start = time.perf_counter()
    records = list(PictureRun(RunSpec(Pictures(content, (style,)), settings_for(512, "auto", "lbfgs", 500, loaded)),
                              loaded))  # fmt: skip
    sync()
    seconds = time.perf_counter() - start
    verdict = "met" if seconds < AIM_SECONDS else "NOT met"
    return f"{seconds:.2f} s (aim: under {AIM_SECONDS:.0f} s, {verdict}); final loss {records[-1].total_loss:.4f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[512, 1024])
    parser.add_argument("--iterations", type=int, default=50, help="timed warm iterations per row")
    parser.add_argument("--loss-iterations", type=int, default=100, help="iterations of the final-loss runs")
    parser.add_argument("--weights", default=None, help="default: the proxy file if present, else untrained")
    parser.add_argument("--no-classic", action="store_true", help="skip the 500-iteration run")
    parser.add_argument("--tiled-size", type=int, default=2048, help="size of the tiled rows (tiles of half)")
    parser.add_argument("--dry-run", action="store_true", help="every row on the CPU at 64 px, 2 iterations")
    args = parser.parse_args()
    import torch

    if args.dry_run:
        global DEVICE
        DEVICE = "cpu"
        args.sizes, args.iterations, args.loss_iterations, args.no_classic = [64], 2, 2, True
    elif not torch.cuda.is_available():
        say("No CUDA GPU here; nothing to measure (--dry-run checks the script on the CPU).")
        return
    loaded = weights(args.weights)
    say(f"GPU benchmark ({machine()}; weights: {loaded.label})")
    say(f"| {'measure':<34} | result | time |")
    say(f"|{'-' * 36}|--------|------|")
    guarded(f"cold start, {args.sizes[0]} px", lambda: cold_start(args.sizes[0], loaded))
    for size in args.sizes:
        for optimizer in ("lbfgs", "adam"):
            for precision in ("fp32", "bf16", "fp16"):
                guarded(
                    f"{size} px, {optimizer}, {precision}",
                    lambda s=size, o=optimizer, p=precision: warm(s, p, o, args.iterations, loaded),
                )
    for precision in ("fp16", "bf16"):
        size = args.sizes[-1]
        guarded(
            f"final loss {precision} vs fp32, {size} px",
            lambda p=precision, s=size: final_loss(s, p, args.loss_iterations, loaded),
        )
    # Print sizes: tiled evaluation's speed against untiled, and fp16's loss scaling in a tiled run.
    tiled_size, tile = (256, 128) if args.dry_run else (args.tiled_size, args.tiled_size // 2)
    # On a CPU (--dry-run) bf16 and fp16 are emulated: minutes per row at this size.
    for precision in ("fp32",) if args.dry_run else ("fp32", "bf16", "fp16"):
        for t in (0, tile):
            guarded(
                f"{tiled_size} px {'tiles of ' + str(t) if t else 'untiled'}, lbfgs, {precision}",
                lambda p=precision, t=t: warm(tiled_size, p, "lbfgs", max(2, args.iterations // 5), loaded, t),
            )
    guarded(
        f"final loss fp16 vs fp32, {tiled_size} px in tiles of {tile}",
        lambda: final_loss(tiled_size, "fp16", args.loss_iterations // 2, loaded, tile),
    )
    if not args.no_classic:
        guarded("500 L-BFGS iterations, 512 px", lambda: classic(loaded))


if __name__ == "__main__":
    main()
