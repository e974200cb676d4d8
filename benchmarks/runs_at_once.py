"""Two door calls at once in one process, against the same two one after the other.

Each run hooks modules of its own over the shared weights, so two threads calling ``style_studio.stylize`` at
once each get the picture they get alone. This measures what running them together costs or saves: torch already
spreads one run over every core, so two at once share the cores rather than double them.

    python benchmarks/runs_at_once.py                 # 256 px, 30 iterations, the proxy weights if present
    python benchmarks/runs_at_once.py --size 384 --iterations 40
"""

from __future__ import annotations

import argparse
import threading
import time

import numpy as np
from _common import PROXY, STYLE, images, machine, table

import style_studio


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--iterations", type=int, default=30)
    args = parser.parse_args()
    weights = str(PROXY) if PROXY.exists() else "untrained"
    content, style = images(args.size)
    fields = {"size": args.size, "iterations": args.iterations, "weights": weights}
    calls = [{**fields, "seed": 1}, {**fields, "seed": 2, "style_weight": 10.0}]
    style_studio.stylize(content, style, **{**fields, "iterations": 2})  # warm-up: weights loaded, kernels chosen

    start = time.perf_counter()
    alone = [np.asarray(style_studio.stylize(content, style, **call).image) for call in calls]
    in_turn = time.perf_counter() - start

    together: list[np.ndarray | None] = [None] * len(calls)

    def paint(index: int) -> None:
        together[index] = np.asarray(style_studio.stylize(content, style, **calls[index]).image)

    threads = [threading.Thread(target=paint, args=(i,)) for i in range(len(calls))]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    at_once = time.perf_counter() - start
    same = all(t is not None and np.array_equal(t, a) for t, a in zip(together, alone, strict=True))

    print(machine())
    print(f"{args.size} px, {args.iterations} iterations, weights {weights.rsplit('/', 1)[-1]}, style {STYLE.name}")
    print(table(["two runs", "seconds", "ratio"], [
        ["one after the other", f"{in_turn:.1f}", "1.00"],
        ["at once, two threads", f"{at_once:.1f}", f"{at_once / in_turn:.2f}"],
    ]))  # fmt: skip
    print(f"each picture the same as alone: {same}")


if __name__ == "__main__":
    main()
