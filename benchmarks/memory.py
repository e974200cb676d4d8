"""Peak memory of a run on the CPU, and how the app's estimate compares.

Each size runs in a fresh process (peak resident memory, ru_maxrss, only
grows), with 5 iterations of the default settings: the peak is reached in
the first backward pass. Reported: the whole process's peak, the part the
run added over what was loaded before it (torch, the weights file, the
images), and ``core.run.memory``'s estimate of that part, which must cover it.

    python benchmarks/memory.py                 # 512 and 1024 px
    python benchmarks/memory.py --sizes 2048
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

from _common import machine, table

LIMITS_GB = {512: 2.5, 1024: 6.0}

CHILD = r"""
import dataclasses, json, resource, sys
sys.path.insert(0, sys.argv[1])
from _common import images, weights
from style_studio.core import Pictures, RunHooks, RunSpec, door
from style_studio.core.io.imageio import fit_size
from style_studio.core.run.memory import estimate_bytes
from style_studio.core.settings import DEFAULTS
size, precision = int(sys.argv[2]), sys.argv[3]
loaded = weights()
content, style = images(size)
settings = dataclasses.replace(DEFAULTS, size=size, iterations=5, weights=loaded.choice, precision=precision,
                               device="cpu")
plans = []
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()
before = rss()  # torch, the weights and the images are loaded; the run itself has not begun
peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
door.picture(RunSpec(Pictures(content, (style,)), settings), loaded, RunHooks(started=plans.append))
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
width, height = plans[0].sizes[-1]
precision = plans[0].target.precision
longest = round(max(width, height) * settings.style_scale)
estimate = estimate_bytes(width, height, [fit_size(*style.size, longest)], precision)
print(json.dumps({"peak": peak, "added": peak - min(before, peak_before), "estimate": estimate,
                  "precision": precision, "pixels": f"{width}x{height}"}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[512, 1024])
    parser.add_argument("--precisions", nargs="+", default=["auto", "fp32"])
    args = parser.parse_args()
    here = str(__import__("pathlib").Path(__file__).resolve().parent)
    rows = []
    for size in args.sizes:
        for precision in args.precisions:
            out = subprocess.run(
                [sys.executable, "-c", CHILD, here, str(size), precision], capture_output=True, text=True, check=True
            )
            m = json.loads(out.stdout.strip().splitlines()[-1])
            limit = LIMITS_GB.get(size)
            rows.append(
                [
                    size,
                    m["pixels"],
                    m["precision"],
                    f"{m['peak'] / 2**30:.2f}",
                    f"{m['added'] / 2**30:.2f}",
                    f"{m['estimate'] / 2**30:.2f}",
                    f"{limit}" if limit else "-",
                    ("yes" if m["peak"] / 2**30 <= limit else "NO") if limit else "-",
                    "yes" if m["estimate"] >= m["added"] else "NO",
                ]
            )
    print(f"Peak memory on the CPU ({machine()})")
    print(
        table(
            [
                "px",
                "image",
                "precision",
                "peak GB",
                "run added GB",
                "estimate GB",
                "limit GB",
                "within",
                "estimate covers",
            ],
            rows,
        )
    )


if __name__ == "__main__":
    main()
