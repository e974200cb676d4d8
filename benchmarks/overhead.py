"""Engine overhead: time per iteration relative to the bare truncated VGG19.

The bare pass is VGG19 up to relu5_1 (the default deepest layer), forward and
backward for the input's gradient only, on the same device, precision and
memory format. Bare passes and engine iterations are interleaved one for one
in the same process, so both see the same machine load; the ratio of their
medians is the overhead. Previews are on (every 150 ms, as in the window).

    python benchmarks/overhead.py            # 256 and 512 px, L-BFGS and Adam
    python benchmarks/overhead.py --sizes 256 --pairs 8

The last row measures what regions cost: iterations of a run with two
painted regions (and the unpainted rest: three guided Gram matrices per style
layer) interleaved with iterations of the same run without regions, at 512 px.
"""

from __future__ import annotations

import argparse
import dataclasses
import time

from _common import images, machine, median, table, weights

TARGET = 1.10


def measure(size: int, optimizer: str, pairs: int, loaded, precision: str = "auto") -> tuple[float, float]:
    import torch

    from style_studio.core import PictureRun, Pictures, Previews, RunHooks, RunSpec
    from style_studio.core.network.vgg import TruncatedNetwork
    from style_studio.core.run.compute import network_for
    from style_studio.core.settings import DEFAULTS

    content, style = images(size)
    settings = dataclasses.replace(
        DEFAULTS, size=size, iterations=pairs + 3, optimizer=optimizer, weights=loaded.choice, precision=precision
    )
    run = PictureRun(RunSpec(Pictures(content, (style,)), settings), loaded, RunHooks(previews=Previews(0.15)))
    compute = run.compute
    net = TruncatedNetwork(network_for(loaded, compute), ["relu5_1"], settings.pooling)
    width, height = run.plan.sizes[-1]
    x = torch.rand(1, 3, height, width, device=compute.device, requires_grad=True)
    dtype = compute.autocast_dtype

    def bare() -> None:
        with torch.autocast(compute.device.type, dtype=dtype, enabled=dtype is not None):
            out = net(x, compute.memory_format)
        out.float().sum().backward()
        x.grad = None
        if compute.device.type == "cuda":
            torch.cuda.synchronize()

    for _ in range(3):  # warm-up: first iterations allocate and tune
        bare()
        next(run)
    bare_times, engine_times = [], []
    for _ in range(pairs):
        start = time.perf_counter()
        bare()
        middle = time.perf_counter()
        next(run)
        end = time.perf_counter()
        bare_times.append(middle - start)
        engine_times.append(end - middle)
    run.close()
    return median(bare_times), median(engine_times)


def measure_regions(size: int, pairs: int, loaded) -> tuple[float, float]:
    """Median seconds per iteration without and with two painted regions, interleaved one for one."""
    import numpy as np

    from style_studio.core import PictureRun, Pictures, Previews, RunHooks, RunSpec
    from style_studio.core.objective.regions import Region, Regions
    from style_studio.core.settings import DEFAULTS

    content, style = images(size)
    settings = dataclasses.replace(DEFAULTS, size=size, iterations=pairs + 3, weights=loaded.choice)
    width, height = content.size
    masks = np.zeros((2, height, width), np.uint8)
    masks[0, :, : width * 2 // 5] = 255  # a region on the left, one on the right, the middle unpainted
    masks[1, :, width * 3 // 5 :] = 255
    regions = Regions((Region("left", (255, 0, 0)), Region("right", (0, 255, 0), strength=2.0)), masks)
    hooks = RunHooks(previews=Previews(0.15))
    plain = PictureRun(RunSpec(Pictures(content, (style,)), settings), loaded, hooks)
    painted = PictureRun(RunSpec(Pictures(content, (style,), regions=regions), settings), loaded, hooks)
    for _ in range(3):
        next(plain)
        next(painted)
    plain_times, painted_times = [], []
    for _ in range(pairs):
        start = time.perf_counter()
        next(plain)
        middle = time.perf_counter()
        next(painted)
        end = time.perf_counter()
        plain_times.append(middle - start)
        painted_times.append(end - middle)
    plain.close()
    painted.close()
    return median(plain_times), median(painted_times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[256, 512])
    parser.add_argument("--optimizers", nargs="+", default=["lbfgs", "adam"])
    parser.add_argument("--pairs", type=int, default=12)
    parser.add_argument("--precision", default="auto", help="auto (bf16 where fast), fp32 or bf16")
    parser.add_argument("--weights", default=None, help="default: the proxy file if present, else untrained")
    parser.add_argument("--regions-size", type=int, default=512, help="size of the regions row (0: none)")
    args = parser.parse_args()
    loaded = weights(args.weights)
    rows = []
    for size in args.sizes:
        for optimizer in args.optimizers:
            bare, engine = measure(size, optimizer, args.pairs, loaded, args.precision)
            ratio = engine / bare
            rows.append(
                [
                    size,
                    optimizer,
                    f"{bare * 1000:.0f}",
                    f"{engine * 1000:.0f}",
                    f"{ratio:.3f}",
                    "yes" if ratio <= TARGET else "NO",
                ]
            )
    print(
        f"Engine overhead per iteration ({machine()}; weights: {loaded.label}; precision {args.precision})", flush=True
    )
    print(table(["px", "optimizer", "bare ms", "engine ms", "ratio", f"<= {TARGET}"], rows), flush=True)
    if args.regions_size:
        plain, painted = measure_regions(args.regions_size, args.pairs, loaded)
        ratio = painted / plain
        print(f"\nTwo painted regions against none, L-BFGS (target: at most {TARGET:.2f}x)")
        print(
            table(
                ["px", "no regions ms", "two regions ms", "ratio", f"<= {TARGET}"],
                [[args.regions_size, f"{plain * 1000:.0f}", f"{painted * 1000:.0f}", f"{ratio:.3f}",
                  "yes" if ratio <= TARGET else "NO"]],
            )
        )  # fmt: skip


if __name__ == "__main__":
    main()
