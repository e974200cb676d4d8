"""Transparent huge pages for PyTorch's CPU tensors: time per iteration with and without.

``style_studio`` sets ``THP_MEM_ALLOC_ENABLE=1`` before torch is imported
(Linux only). PyTorch reads it once, so each measurement is a child process:
with and without alternate, and the ratio of their medians is the gain. Each
child runs an fp32 L-BFGS render on the CPU and times iterations after the
first two, with the system time and page faults they cost.

    python benchmarks/huge_pages.py              # 1024 px, 3 pairs of 3 iterations
    python benchmarks/huge_pages.py --size 512 --pairs 5
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from _common import ROOT, machine, median, table


def child(size: int, iterations: int) -> None:
    """Runs in the child: time ``iterations`` iterations and print one JSON line."""
    import dataclasses
    import resource
    import time

    from _common import images, weights

    from style_studio.core import Pictures, Previews, RunHooks, RunSpec, door
    from style_studio.core.settings import DEFAULTS

    loaded = weights()
    content, style = images(size)
    settings = dataclasses.replace(
        DEFAULTS, size=size, iterations=iterations + 2, weights=loaded.choice, device="cpu", precision="fp32", scales=1
    )
    marks = {}

    def mark(record) -> None:  # the targets and the first two steps are not timed
        if record.start or record.done or record.within_iteration:
            return
        if record.step in (2, iterations + 2):
            marks[record.step] = (resource.getrusage(resource.RUSAGE_SELF), time.perf_counter())

    door.picture(RunSpec(Pictures(content, (style,)), settings), loaded, RunHooks(report=mark, previews=Previews()))
    (before, start), (after, end) = marks[2], marks[iterations + 2]
    seconds = end - start
    print(
        json.dumps(
            {
                "seconds": seconds / iterations,
                "system": (after.ru_stime - before.ru_stime) / iterations,
                "faults": (after.ru_minflt - before.ru_minflt) / iterations,
            }
        )
    )


def measure(huge_pages: bool, size: int, iterations: int) -> dict[str, float]:
    env = dict(os.environ, THP_MEM_ALLOC_ENABLE="1" if huge_pages else "0")
    command = [sys.executable, __file__, "--child", "--size", str(size), "--iterations", str(iterations)]
    out = subprocess.run(command, env=env, cwd=ROOT, check=True, capture_output=True, text=True).stdout
    result: dict[str, float] = json.loads(out.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--iterations", type=int, default=3, help="iterations timed per child")
    parser.add_argument("--pairs", type=int, default=3, help="children with and without, alternating")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.size, args.iterations)
        return
    if not sys.platform.startswith("linux"):
        sys.exit("transparent huge pages are a Linux feature")
    runs: dict[bool, list[dict[str, float]]] = {True: [], False: []}
    for pair in range(args.pairs):
        for huge in (pair % 2 == 0, pair % 2 == 1):  # alternate which goes first
            runs[huge].append(measure(huge, args.size, args.iterations))
            print(f"  pair {pair + 1}, huge pages {'on' if huge else 'off'}: {runs[huge][-1]}", file=sys.stderr)
    rows = []
    for huge in (False, True):
        rows.append(
            [
                "on" if huge else "off",
                f"{median([r['seconds'] for r in runs[huge]]):.2f}",
                f"{median([r['system'] for r in runs[huge]]):.2f}",
                f"{median([r['faults'] for r in runs[huge]]):,.0f}",
            ]
        )
    ratio = median([r["seconds"] for r in runs[True]]) / median([r["seconds"] for r in runs[False]])
    try:
        setting = Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text().strip()
    except OSError:
        setting = "unknown"
    print(f"Huge pages at {args.size} px, fp32 L-BFGS, medians of {args.pairs} ({machine()}; THP: {setting})")
    print(table(["huge pages", "s / iteration", "system s / iteration", "page faults / iteration"], rows))
    print(f"with / without: {ratio:.3f}")


if __name__ == "__main__":
    main()
