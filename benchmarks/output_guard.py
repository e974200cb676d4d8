"""What the guarded writer costs a picture: ``Output.write`` (inputs checked, containment checked twice, a lock,
temporaries swept) against the bare atomic write, interleaved in one process.

    python benchmarks/output_guard.py            # a 512 px PNG, 5 rounds of 20 writes each way
    python benchmarks/output_guard.py --side 2048
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import machine
from PIL import Image


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--side", type=int, default=512)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    os.environ["STYLE_STUDIO_CACHE"] = tempfile.mkdtemp()  # the output locks go there
    from style_studio.core.io.files import write_atomically
    from style_studio.core.io.outputs import Output

    folder = Path(tempfile.mkdtemp())
    inputs = (folder / "photo.png", folder / "style.png")
    for path in inputs:
        Image.new("RGB", (8, 8)).save(path)
    rng = np.random.default_rng(0)
    picture = Image.fromarray(rng.integers(0, 255, (args.side, args.side, 3), dtype=np.uint8))

    def save(out) -> None:
        picture.save(out, format="PNG", compress_level=1)

    def bare(n: int) -> None:
        write_atomically(folder / f"bare-{n % 4}.png", save)

    def guarded(n: int) -> None:
        Output(folder / f"guarded-{n % 4}.png", inputs, within=folder).write(save)

    best = {"bare": float("inf"), "guarded": float("inf")}
    for _ in range(args.rounds):
        for name, write in (("bare", bare), ("guarded", guarded)):
            began = time.perf_counter()
            for n in range(20):
                write(n)
            best[name] = min(best[name], (time.perf_counter() - began) / 20)
    print(machine())
    print(f"{args.side} px PNG: bare atomic write {best['bare'] * 1e3:.2f} ms, guarded {best['guarded'] * 1e3:.2f} ms, "
          f"ratio {best['guarded'] / best['bare']:.3f}")  # fmt: skip


if __name__ == "__main__":
    main()
