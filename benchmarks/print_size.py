"""Print sizes: peak memory and time per iteration, untiled and tiled; and what a shorter L-BFGS history costs.

Each case runs in a fresh process (peak resident memory, ru_maxrss, only
grows) with the proxy weights where they exist, one scale, on the CPU. The
time per iteration is the median after the first (which includes the
targets). The peak is the whole process's, optimiser state included.

    python benchmarks/print_size.py                       # 1024 and 2048 px, untiled and tiled
    python benchmarks/print_size.py --tiled-only 4096     # adds tiled 4096 px (minutes per iteration on a CPU)
    python benchmarks/print_size.py --history             # loss after 100 iterations: 20 pairs against 3
    python benchmarks/print_size.py --ratio 2048          # tiled / untiled, interleaved in one process

The per-process times compare runs made minutes apart on a shared machine;
``--ratio`` times the untiled and the tiled evaluation (loss and gradient)
alternately in one process, and reports the ratio of their medians.

Goals (issue #12): 4096×3072 within 6 GB; tiled time per iteration at most
1.8x the untiled one at 2048 px.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from _common import machine, table

CHILD = r"""
import dataclasses, json, resource, sys, time
sys.path.insert(0, sys.argv[1])
from _common import images, weights
from style_studio.core.run import memory
from style_studio.core import Pictures, Previews, RunHooks, RunSpec, door
from style_studio.core.settings import DEFAULTS
case = json.loads(sys.argv[2])
if case.get("history"):
    memory.LBFGS_HISTORY = case["history"]
    memory.LBFGS_MIN_HISTORY = min(memory.LBFGS_MIN_HISTORY, case["history"])
loaded = weights()
content, style = images(case["size"])
if case.get("four_three"):  # the issue's 4096x3072: the sample cropped to 4:3
    width = content.height * 4 // 3
    content = content.crop(((content.width - width) // 2, 0, (content.width + width) // 2, content.height))
settings = dataclasses.replace(
    DEFAULTS, size=case["size"], iterations=case["iterations"], scales=1, tile=case["tile"],
    weights=loaded.choice, precision=case["precision"], device="cpu",
)
times, kept, plans = [], [], []
started = [time.perf_counter()]
def timed(record):
    if record.within_iteration or record.done or record.start:
        return
    now = time.perf_counter()
    times.append(now - started[0])
    started[0] = now
    kept.append(record)
door.picture(RunSpec(Pictures(content, (style,)), settings), loaded,
            RunHooks(report=timed, started=plans.append, previews=Previews(1e9)))
last = kept[-1]
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
width, height = plans[0].sizes[-1]
tile, precision = plans[0].tile, plans[0].target.precision
later = sorted(times[1:]) or times
print(json.dumps({
    "pixels": f"{width}x{height}", "tile": tile, "precision": precision,
    "per_iteration": later[len(later) // 2], "peak": peak, "loss": last.total_loss,
    "estimate": memory.tiled_bytes(width, height, tile, precision) if tile
    else memory.estimate_bytes(width, height, [(width, height)], precision),
}))
"""

HERE = str(Path(__file__).resolve().parent)


def run(case: dict[str, object]) -> dict[str, object]:
    out = subprocess.run([sys.executable, "-c", CHILD, HERE, json.dumps(case)], capture_output=True, text=True)
    if out.returncode != 0:
        return {"error": out.stderr.strip().splitlines()[-1] if out.stderr.strip() else f"exit {out.returncode}"}
    result: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def sizes_table(args: argparse.Namespace) -> None:
    def tile(size: int) -> int:
        return args.tile or min(1024, max(512, size // 2))

    cases = [(size, t) for size in args.sizes for t in (0, tile(size))]
    cases += [(size, tile(size)) for size in args.tiled_only]
    rows, untiled = [], {}
    for size, core in cases:
        # tile 0: untiled where it fits (the automatic choice); the CLI's --tile N otherwise.
        case = {"size": size, "tile": core, "iterations": args.iterations, "precision": args.precision}
        m = run(case | {"four_three": args.four_three})
        if "error" in m:
            rows.append([size, "tiled" if core else "untiled", "-", "-", "-", "-", "-", m["error"]])
            continue
        per_iteration = float(m["per_iteration"])  # type: ignore[arg-type]
        if not m["tile"]:
            untiled[size] = per_iteration
        ratio = f"{per_iteration / untiled[size]:.2f}" if m["tile"] and size in untiled else "-"
        rows.append(
            [
                size,
                f"tiles of {m['tile']} px" if m["tile"] else "untiled",
                m["pixels"],
                f"{per_iteration:.1f}",
                ratio,
                f"{int(m['peak']) / 2**30:.2f}",  # type: ignore[call-overload]
                f"{int(m['estimate']) / 2**30:.2f}",  # type: ignore[call-overload]
                "",
            ]
        )
    print(f"Print sizes, {args.precision}, {args.iterations} iterations each ({machine()})")
    headers = ["px", "evaluation", "picture", "s / iteration", "tiled / untiled", "peak GB", "estimate GB", "note"]
    print(table(headers, rows))


def history_table(args: argparse.Namespace) -> None:
    rows = []
    for history in (20, 3):
        m = run({"size": 512, "tile": 0, "iterations": 100, "precision": args.precision, "history": history})
        rows.append([history, f"{float(m['loss']):.4f}", f"{float(m['per_iteration']):.2f}"])  # type: ignore[arg-type]
    ratio = float(rows[1][1]) / float(rows[0][1])
    print(f"L-BFGS history at 512 px, 100 iterations, {args.precision} ({machine()})")
    print(table(["pairs kept", "final loss", "s / iteration"], rows))
    print(f"loss with 3 pairs / with 20: {ratio:.3f}")


RATIO_CHILD = r"""
import json, statistics, sys, time
sys.path.insert(0, sys.argv[1])
from _common import images, weights
from style_studio.core.network.device import resolve
from style_studio.core.run.compute import network_for
from style_studio.core.io.imageio import fit_size
from style_studio.core.objective.objective import Objective
from style_studio.core.objective.inputs import ScaleInputs
from style_studio.core.settings import DEFAULTS
from style_studio.core.objective.loss_scale import LossScale
from style_studio.core.objective.tiles import TiledObjective
size, tile, repeats = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
loaded = weights()
content, style = images(size)
compute = resolve("cpu", sys.argv[5])
settings = DEFAULTS
network = network_for(loaded, compute)
inputs = ScaleInputs.prepare(content, (style,), fit_size(*content.size, size), settings, compute.device)
from style_studio.core.run import memory
untiled = Objective(network, inputs, settings, compute)
tiled = TiledObjective(network, inputs, settings, compute, tile)
width, height = inputs.size
keep = memory.kept_tiles(width, height, tile, compute.precision, memory.available_bytes("cpu"))
kept = TiledObjective(network, inputs, settings, compute, tile, keep)
def seconds(objective):
    image = inputs.content.clone().requires_grad_(True)
    start = time.perf_counter()
    for _ in objective.gradient(image, LossScale(False)):
        pass
    return time.perf_counter() - start
times = {"untiled": [], "tiled": [], "kept": []}
seconds(untiled), seconds(tiled), seconds(kept)  # warm-up
for _ in range(repeats):
    times["untiled"].append(seconds(untiled))
    times["tiled"].append(seconds(tiled))
    times["kept"].append(seconds(kept))
tiles = len(tiled.tiles(*inputs.size))
print(json.dumps({k: statistics.median(v) for k, v in times.items()} | {"tiles": tiles, "keep": min(keep, tiles)}))
"""


def ratio_table(args: argparse.Namespace) -> None:
    rows = []
    for size in args.ratio:
        core = args.tile or min(1024, max(512, size // 2))
        command = [sys.executable, "-c", RATIO_CHILD, HERE, str(size), str(core), str(args.repeats), args.precision]
        out = subprocess.run(command, capture_output=True, text=True, check=True)
        m = json.loads(out.stdout.strip().splitlines()[-1])
        rows.append([size, f"{m['tiles']} tiles of {core} px", f"{m['untiled']:.1f}", f"{m['tiled']:.1f}",
                     f"{m['tiled'] / m['untiled']:.2f}", f"{m['keep']}: {m['kept']:.1f}",
                     f"{m['kept'] / m['untiled']:.2f}"])  # fmt: skip
    print(f"Tiled against untiled evaluation, interleaved, medians of {args.repeats} ({machine()})")
    print("(1 tile's forward pass kept for the backward, the least memory; then as many as spare memory allows)")
    print(table(["px", "tiles", "untiled s", "tiled s (1 kept)", "tiled / untiled", "kept: tiled s",
                 "tiled / untiled"], rows))  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[1024, 2048])
    parser.add_argument("--tiled-only", type=int, nargs="*", default=[])
    parser.add_argument(
        "--tile", type=int, default=0, help="tile core of the tiled rows (default: half the size, 512-1024)"
    )
    parser.add_argument("--iterations", type=int, default=3)
    parser.add_argument("--precision", default="auto")
    parser.add_argument("--history", action="store_true", help="measure the history's cost instead")
    parser.add_argument("--ratio", type=int, nargs="*", default=[], help="sizes to time tiled/untiled interleaved")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--four-three", action="store_true", help="crop the photo to 4:3 (4096 px: 4096x3072)")
    args = parser.parse_args()
    if args.ratio:
        ratio_table(args)
    elif args.history:
        history_table(args)
    else:
        sizes_table(args)


if __name__ == "__main__":
    main()
