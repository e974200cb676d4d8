"""GPU throughput: iterations per second at 512 and 1024 px, fp32 and automatic precision.

One prepared script for a machine with a CUDA GPU (the `device` tool lends
one now and then; CI never has one). It also times the classic benchmark:
500 L-BFGS iterations at 512 px, which the original Lua implementation ran
in 22 s on a Pascal Titan X; the aim is under 5 s on a current data-centre
GPU. Without a GPU it says so and exits 0.

    python benchmarks/gpu.py
    python benchmarks/gpu.py --sizes 512 --iterations 60
"""

from __future__ import annotations

import argparse
import dataclasses
import time

from _common import images, machine, table, weights

AIM_SECONDS = 5.0


def rate(size: int, precision: str, iterations: int, loaded) -> tuple[float, str, float]:
    import torch

    from style_studio.core.engine import StyleTransfer
    from style_studio.core.settings import DEFAULTS

    content, style = images(size)
    settings = dataclasses.replace(
        DEFAULTS, size=size, iterations=iterations + 10, precision=precision, device="cuda", weights=loaded.choice
    )
    transfer = StyleTransfer(content, [style], settings, loaded, preview_interval=0.15)
    run = transfer.run()
    for _ in range(10):  # warm-up: cuDNN autotuning, allocator
        next(run)
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(iterations):
        next(run)
    torch.cuda.synchronize()
    elapsed = time.perf_counter() - start
    run.close()
    peak = torch.cuda.max_memory_allocated() / 2**30
    torch.cuda.reset_peak_memory_stats()
    return iterations / elapsed, transfer.compute.precision, peak


def classic(loaded) -> tuple[float, float]:
    """Wall time of a whole default run: 500 L-BFGS iterations at 512 px, set-up included."""
    import torch

    from style_studio.core.engine import StyleTransfer
    from style_studio.core.settings import DEFAULTS

    content, style = images(512)
    settings = dataclasses.replace(DEFAULTS, size=512, iterations=500, device="cuda", weights=loaded.choice)
    start = time.perf_counter()
    transfer = StyleTransfer(content, [style], settings, loaded, preview_interval=0.15)
    records = list(transfer.run())
    torch.cuda.synchronize()
    return time.perf_counter() - start, records[-1].total_loss


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[512, 1024])
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--weights", default="untrained")
    args = parser.parse_args()
    import torch

    if not torch.cuda.is_available():
        print("No CUDA GPU here; nothing to measure.")
        return
    loaded = weights(args.weights)
    rows = []
    for size in args.sizes:
        for precision in ("fp32", "auto"):
            its, actual, peak = rate(size, precision, args.iterations, loaded)
            rows.append([size, precision, actual, f"{its:.1f}", f"{peak:.2f}"])
    seconds, loss = classic(loaded)
    print(f"GPU throughput ({machine()}; weights: {loaded.label})")
    print(table(["px", "precision", "runs as", "iterations/s", "peak GB"], rows))
    print(
        f"500 L-BFGS iterations at 512 px, set-up included: {seconds:.2f} s "
        f"(aim: under {AIM_SECONDS:.0f} s; {'met' if seconds < AIM_SECONDS else 'NOT met'}); final loss {loss:.4f}"
    )


if __name__ == "__main__":
    main()
