"""Engine overhead: time per iteration relative to the bare truncated VGG19.

The bare pass is VGG19 up to relu5_1 (the default deepest layer), forward and
backward for the input's gradient only, on the same device, precision and
memory format. Bare passes and engine iterations are interleaved one for one
in the same process, so both see the same machine load; the ratio of their
medians is the overhead. Previews are on (every 150 ms, as in the window).

    python benchmarks/overhead.py            # 256 and 512 px, L-BFGS and Adam
    python benchmarks/overhead.py --sizes 256 --pairs 8
"""

from __future__ import annotations

import argparse
import dataclasses
import time

from _common import images, machine, median, table, weights

TARGET = 1.10


def measure(size: int, optimizer: str, pairs: int, loaded) -> tuple[float, float]:
    import torch

    from style_studio.core.engine import StyleTransfer, network_for
    from style_studio.core.features import TruncatedNetwork
    from style_studio.core.settings import DEFAULTS

    content, style = images(size)
    settings = dataclasses.replace(
        DEFAULTS, size=size, iterations=pairs + 3, optimizer=optimizer, weights=loaded.choice
    )
    transfer = StyleTransfer(content, [style], settings, loaded, preview_interval=0.15)
    compute = transfer.compute
    net = TruncatedNetwork(network_for(loaded, compute), ["relu5_1"], settings.pooling)
    width, height = transfer.sizes[-1]
    x = torch.rand(1, 3, height, width, device=compute.device, requires_grad=True)
    dtype = compute.autocast_dtype

    def bare() -> None:
        with torch.autocast(compute.device.type, dtype=dtype, enabled=dtype is not None):
            out = net(x, compute.memory_format)
        out.float().sum().backward()
        x.grad = None
        if compute.device.type == "cuda":
            torch.cuda.synchronize()

    run = transfer.run()
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[256, 512])
    parser.add_argument("--optimizers", nargs="+", default=["lbfgs", "adam"])
    parser.add_argument("--pairs", type=int, default=12)
    parser.add_argument("--weights", default=None, help="default: the proxy file if present, else untrained")
    args = parser.parse_args()
    loaded = weights(args.weights)
    rows = []
    for size in args.sizes:
        for optimizer in args.optimizers:
            bare, engine = measure(size, optimizer, args.pairs, loaded)
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
    print(f"Engine overhead per iteration ({machine()}; weights: {loaded.label})")
    print(table(["px", "optimizer", "bare ms", "engine ms", "ratio", f"<= {TARGET}"], rows))


if __name__ == "__main__":
    main()
