"""The trail behind a moving object against ``--frame-repair``: how styled uncovered pixels end, and at what cost.

The moving-object clip of ``video.py`` is styled frame by frame (each frame on
its own: what a fresh render of the uncovered pixels reaches) and coherently
at each repair weight asked for (0: the default, no repair). Printed for each
run, the trail measure of ``video_measures`` (uncovered pixels against
never-covered ones, two frames after they are uncovered: style distance
closed against all never-covered pixels and against never-covered sets of
the same shape and size, goal at least 0.9, and distance from the photo), and as ratios to
frame by frame in the same run: the warping error (goal at most 0.35), the
style loss against the painting, and the seconds per frame.

    python benchmarks/video_repair.py                         # repair 0, 2, 5 and 12; about 12 minutes
    python benchmarks/video_repair.py --repair 0 12 --frames 8 --size 128
"""

from __future__ import annotations

import argparse
import dataclasses
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import ROOT, add_painting_share, machine, painting_share, table, weights
from PIL import Image
from video import object_boxes, object_clip, render, style_losses
from video_measures import SetFeatures, trail

SAMPLES = ROOT / "resources" / "samples"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--frames", type=int, default=8)
    parser.add_argument("--size", type=int, default=128, help="longest side of the clip and the render")
    parser.add_argument("--iterations", type=int, default=40, help="iterations of every frame")
    parser.add_argument("--repair", type=float, nargs="+", default=[0.0, 2.0, 5.0, 12.0])
    parser.add_argument("--weights", default=None, help="default: the proxy weights when present, else untrained")
    add_painting_share(parser)
    parser.add_argument("--style", default="starry_night.jpg")
    args = parser.parse_args()

    from quality import Features

    from style_studio.core.objective.temporal import FlowEstimator, clip_warping_error
    from style_studio.core.settings import DEFAULTS
    from tests.clips import write_clip

    share = painting_share(args)
    loaded = weights(args.weights)
    settings = dataclasses.replace(DEFAULTS, size=args.size, iterations=args.iterations, scales=1,
                                   weights=loaded.choice)  # fmt: skip
    style_path = SAMPLES / "style" / args.style
    style = Image.open(style_path).convert("RGB")
    width, height = args.size, args.size * 2 // 3 // 2 * 2
    inputs, boxes = object_clip(args.frames, (width, height)), object_boxes(args.frames, (width, height))
    sets = SetFeatures(Features(loaded))
    painting = np.asarray(style.resize((width, height), Image.Resampling.LANCZOS))
    flows = FlowEstimator("dis")
    print(f"{machine()}\nweights: {loaded.label}; moving object, {args.frames} frames of {width}×{height}, "
          f"{args.iterations} iterations a frame, style {args.style}, painting share {share:g}, "
          "frame settle off\n")  # fmt: skip
    measured = []
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        clip = write_clip(folder / "clip.mkv", inputs, codec="ffv1", pix_fmt="bgr0")
        runs = [("frame by frame", 0.0, 0.0)] + [("coherent", 1.0, repair) for repair in args.repair]
        for index, (name, temporal, repair) in enumerate(runs):
            began = time.perf_counter()
            rendered, pictures = render(clip, style_path, settings, loaded, args.iterations, temporal,
                                        folder / f"run-{index}", repair=repair)  # fmt: skip
            seconds = (time.perf_counter() - began) / rendered.frames
            measured_trail = trail(inputs, pictures, boxes, painting, sets)
            flicker = clip_warping_error(inputs, pictures, flows)
            loss = style_losses(pictures, inputs, style, settings, loaded)
            measured.append((name, repair, measured_trail, flicker, loss, seconds))
    _, _, _, base_flicker, base_loss, base_seconds = measured[0]
    rows = [
        [name, f"{repair:g}" if name == "coherent" else "", f"{got.closed_matched:.2f}", f"{got.closed:.2f}",
         f"{got.photo_distance:.2f}", f"{flicker / base_flicker:.2f}", f"{loss / base_loss:.3f}",
         f"{seconds / base_seconds:.2f}"]
        for name, repair, got, flicker, loss, seconds in measured
    ]  # fmt: skip
    print(table(["run", "repair", "trail: style closed vs same-size never covered (≥0.9)", "vs all never covered",
                 "photo distance", "warp err. / frame by frame (≤0.35)", "style loss / frame by frame",
                 "s/frame / frame by frame"], rows))  # fmt: skip


if __name__ == "__main__":
    main()
