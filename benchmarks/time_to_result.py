"""Time to result: coarse-to-fine against a single-scale L-BFGS run at 512 px.

The single-scale run does 300 L-BFGS iterations at 512 px; its final total
loss is the bar. The coarse-to-fine run (``--scales``, each coarser scale at
half the size, ``--coarse-iterations`` at each coarser scale) then runs at
the final scale until its total loss, as measured at 512 px by the same
objective, reaches that bar. The ratio of the two elapsed times must be at
most 0.40. Both runs happen in this process, one after the other.

A second table shows where each run's final scale starts, scored by the
final-scale objective: the single-scale run starts from the content photo, the
coarse-to-fine run from its coarser result enlarged. That start decides what
coarse-to-fine can save.

    python benchmarks/time_to_result.py
    python benchmarks/time_to_result.py --scales 3 --coarse-iterations 200
"""

from __future__ import annotations

import argparse
import dataclasses

from _common import images, machine, table, weights

TARGET = 0.40


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=512)
    parser.add_argument("--iterations", type=int, default=300)
    parser.add_argument("--scales", type=int, default=2)
    parser.add_argument("--coarse-iterations", type=int, default=150)
    parser.add_argument("--weights", default=None)
    args = parser.parse_args()

    from style_studio.core import Pictures, RunSpec
    from style_studio.core.run.engine import StyleTransfer
    from style_studio.core.settings import DEFAULTS

    loaded = weights(args.weights)
    content, style = images(args.size)
    base = dataclasses.replace(DEFAULTS, size=args.size, iterations=args.iterations, weights=loaded.choice)
    single = StyleTransfer(RunSpec(Pictures(content, (style,)), base), loaded)
    records = [r for r in single.run() if not r.done]
    bar, single_time = records[-1].total_loss, records[-1].elapsed
    # A record's loss is that of the image before its step: the first one scores the start.
    starts = {"single scale (content photo)": records[0]}

    c2f = StyleTransfer(RunSpec(Pictures(content, (style,)), dataclasses.replace(base, scales=args.scales)), loaded)
    counts = [args.coarse_iterations] * (len(c2f.sizes) - 1) + [args.iterations]
    scales = tuple(dataclasses.replace(s, iterations=n) for s, n in zip(c2f.plan.scales, counts, strict=True))
    c2f.schedule.plan = dataclasses.replace(c2f.plan, scales=scales)
    reached = None
    last = None
    for record in c2f.run():
        if record.done:
            break
        last = record
        if record.scale == record.scales and record.iteration == 1:
            starts["coarse to fine (coarser result, enlarged)"] = record
        if record.scale == record.scales and record.total_loss <= bar:
            reached = record
            break
    assert last is not None
    end = reached or last
    ratio = end.elapsed / single_time
    print(f"Time to result at {args.size} px ({machine()}; weights: {loaded.label})")
    print(
        table(
            ["run", "scales", "iterations", "final loss", "seconds", "ratio", f"<= {TARGET}"],
            [
                ["single scale", 1, args.iterations, f"{bar:.4f}", f"{single_time:.1f}", "1.000", "-"],
                [
                    "coarse to fine",
                    len(c2f.sizes),
                    f"{args.coarse_iterations} per coarse scale + {end.iteration} at the final scale",
                    f"{end.total_loss:.4f}" + ("" if reached else " (bar not reached)"),
                    f"{end.elapsed:.1f}",
                    f"{ratio:.3f}",
                    "yes" if reached and ratio <= TARGET else "NO",
                ],
            ],
        )
    )
    layers = list(records[0].style_losses)
    print()
    print(f"Loss at the start of the final scale ({args.size} px objective)")
    print(
        table(
            ["start", "seconds", "total", "content", "TV", *layers],
            [
                [
                    name,
                    f"{r.elapsed:.1f}",
                    f"{r.total_loss:.3f}",
                    f"{r.content_loss:.3f}",
                    f"{r.tv_loss:.3f}",
                    *(f"{r.style_losses[k]:.3f}" for k in layers),
                ]
                for name, r in starts.items()
            ],
        )
    )


if __name__ == "__main__":
    main()
