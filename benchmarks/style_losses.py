"""What each style loss costs per iteration, and where the Gaussian loss's time goes.

Iterations of a run with the Gram loss and of the same run with the Gaussian
(Wasserstein-2) loss are interleaved one for one in the same process, so both
see the same machine load; the ratio of their medians is the Gaussian loss's
cost. Its distances do not shrink with the picture (one eigendecomposition per
style layer and iteration, of up to C×C, C up to 512): the last line times them
alone, for the default layers on random features (whose variance spreads over
nearly every direction, so the most they cost), and the ratio at a small size
shows how much they weigh where a schedule spends most of its iterations.

    python benchmarks/style_losses.py                 # 128, 256 and 384 px
    python benchmarks/style_losses.py --sizes 192 --pairs 6
"""

from __future__ import annotations

import argparse
import dataclasses
import time

from _common import images, machine, median, table, weights


def measure(size: int, pairs: int, loaded, optimizer: str) -> tuple[float, float]:
    from style_studio.core import PictureRun, Pictures, RunSpec
    from style_studio.core.settings import DEFAULTS

    content, style = images(size)
    settings = dataclasses.replace(DEFAULTS, size=size, iterations=pairs + 3, weights=loaded.choice,
                                   optimizer=optimizer)  # fmt: skip
    runs = [
        PictureRun(RunSpec(Pictures(content, (style,)), dataclasses.replace(settings, style_loss=name)), loaded)
        for name in ("gram", "gaussian")
    ]
    for _ in range(3):  # warm-up: first iterations allocate and tune
        for run in runs:
            next(run)
    times: list[list[float]] = [[], []]
    for _ in range(pairs):
        for run, kept in zip(runs, times, strict=True):
            start = time.perf_counter()
            next(run)
            kept.append(time.perf_counter() - start)
    for run in runs:
        run.close()
    return median(times[0]), median(times[1])


def square_roots(repeats: int = 5) -> float:
    """Seconds for the Gaussian loss's fixed part per iteration at the default style layers: each layer's
    distance from its statistics, forward and backward, as the loss computes it (float64, the style's principal
    directions), on random features of the layers' widths."""
    import torch

    from style_studio.core.objective.gaussian import GaussianLoss

    loss, layers = GaussianLoss(), []
    for channels in (64, 128, 256, 512, 512):  # relu1_1 ... relu5_1
        style, picture = (torch.randn(4 * channels, channels) * torch.rand(channels) for _ in range(2))
        target = loss.prepare((style.mean(0, keepdim=True), (style.t() @ style / len(style)).unsqueeze(0)))
        mean = picture.mean(0, keepdim=True).requires_grad_(True)
        layers.append((mean, (picture.t() @ picture / len(picture)).unsqueeze(0).requires_grad_(True), target))
    spent = []
    for _ in range(repeats):
        start = time.perf_counter()
        total = torch.stack([loss.distance((mean, moment), target) for mean, moment, target in layers]).sum()
        total.backward()
        spent.append(time.perf_counter() - start)
    return median(spent)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[128, 256, 384])
    parser.add_argument("--pairs", type=int, default=8)
    parser.add_argument("--optimizer", default="lbfgs")
    parser.add_argument("--weights", default=None, help="default: the proxy file if present, else untrained")
    args = parser.parse_args()
    loaded = weights(args.weights)
    roots = square_roots()
    rows = []
    for size in args.sizes:
        gram, gaussian = measure(size, args.pairs, loaded, args.optimizer)
        rows.append([size, f"{gram * 1000:.0f}", f"{gaussian * 1000:.0f}", f"{gaussian / gram:.2f}"])
    print(f"Style losses per iteration ({machine()}; weights: {loaded.label}; {args.optimizer})", flush=True)
    print(table(["px", "gram ms", "gaussian ms", "gaussian / gram"], rows))
    print(f"\nThe Gaussian distances alone, 5 style layers (forward and backward): {roots * 1000:.0f} ms per iteration")


if __name__ == "__main__":
    main()
