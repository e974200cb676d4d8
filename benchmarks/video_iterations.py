"""Video frames under the defaults: how many frame iterations give the 2016 recipe's flicker and style at 60.

One clip (an object crossing a still scene, or a camera pan) is styled
coherently, once with the 2016 recipe (Gram style loss, the photo as the
start, 300 iterations for the first frame, 60 for each later one: the video
defaults before issue #34) and once under today's defaults for each number of
frame iterations asked for. Printed for each run, as ratios to the 2016
recipe's figures measured in the same run:

- the warping error of Lai et al. 2018 (flicker; lower is steadier);
- the mean style distance of the frames to the painting, by the quality
  benchmark's neutral judge (sliced Wasserstein over VGG features; lower is
  more like the painting);
- the seconds a frame after the first takes.

The fewest frame iterations whose flicker and style distance are both no worse
than the recipe's is named at the end.

    python benchmarks/video_iterations.py                               # 8 frames, 128 px
    python benchmarks/video_iterations.py --clip pan --iterations 10 20 40
"""

from __future__ import annotations

import argparse
import dataclasses
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import ROOT, machine, table, weights
from PIL import Image
from video import object_clip, pan_clip

SAMPLES = ROOT / "resources" / "samples"
RECIPE_FIELDS = {"style_loss": "gram", "init": "content", "first_scale": 0, "iterations": 300}
RECIPE_FRAME_ITERATIONS = 60


def render_timed(clip: Path, style: Path, settings, loaded, frame_iterations: int, temporal: float, out: Path):
    """The clip styled coherently: its frames, and the seconds each frame after the first took (on average)."""
    from style_studio.core.jobs.job import Job, VideoOptions
    from style_studio.core.jobs.video_job import _render_video as render_video

    second_began: list[float] = []

    def progress(record) -> None:
        if record.frame >= 2 and not second_began:
            second_began.append(time.perf_counter())

    job = Job("bench", clip, (style,), settings, out, video=VideoOptions(frame_iterations, temporal))
    rendered = render_video(job, loaded, resume=False, progress=progress)
    ended = time.perf_counter()
    pictures = [np.asarray(Image.open(p).convert("RGB")) for p in sorted(out.iterdir())]
    return pictures, (ended - second_began[0]) / (rendered.frames - 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clip", choices=("object", "pan"), default="object")
    parser.add_argument("--frames", type=int, default=8)
    parser.add_argument("--size", type=int, default=128, help="longest side of the clip and the render")
    parser.add_argument("--iterations", type=int, nargs="+", default=[15, 30, 45, 60],
                        help="frame iterations to try under the defaults")  # fmt: skip
    parser.add_argument("--weights", default=None, help="default: the proxy weights when present, else untrained")
    parser.add_argument("--style", default="starry_night.jpg")
    args = parser.parse_args()

    from quality import Features

    from style_studio.core.jobs.job import VideoOptions
    from style_studio.core.objective.temporal import FlowEstimator, clip_warping_error
    from style_studio.core.settings import DEFAULTS
    from tests.clips import write_clip

    loaded = weights(args.weights)
    width, height = args.size, args.size * 2 // 3 // 2 * 2
    style_path = SAMPLES / "style" / args.style
    painting = Image.open(style_path).convert("RGB").resize((width, height), Image.Resampling.LANCZOS)
    features = Features(loaded)
    target = features.of(painting)
    flows = FlowEstimator("dis")
    temporal = VideoOptions().temporal_weight
    today = dataclasses.replace(DEFAULTS, size=args.size, weights=loaded.choice)
    recipe = dataclasses.replace(today, **RECIPE_FIELDS)
    runs = [("2016 recipe", recipe, RECIPE_FRAME_ITERATIONS)]
    runs += [("defaults", today, n) for n in args.iterations]
    print(f"{machine()}\nweights: {loaded.label}; {args.clip}, {args.frames} frames of {width}×{height}, "
          f"style {args.style}; the first frame gets each run's still iterations\n")  # fmt: skip

    measured = []
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        inputs = (object_clip if args.clip == "object" else pan_clip)(args.frames, (width, height))
        clip = write_clip(folder / "clip.mkv", inputs, codec="ffv1", pix_fmt="bgr0")
        for index, (name, settings, frame_iterations) in enumerate(runs):
            pictures, per_frame = render_timed(clip, style_path, settings, loaded, frame_iterations, temporal,
                                               folder / f"run-{index}")  # fmt: skip
            flicker = clip_warping_error(inputs, pictures, flows)
            distance = float(np.mean([features.distance(features.of(Image.fromarray(p)), target) for p in pictures]))
            measured.append((name, frame_iterations, flicker, distance, per_frame))

    _, _, base_flicker, base_distance, base_seconds = measured[0]
    rows, enough = [], None
    for name, frame_iterations, flicker, distance, seconds in measured:
        rows.append([name, str(frame_iterations), f"{flicker:.5f}", f"{flicker / base_flicker:.2f}",
                     f"{distance:.4f}", f"{distance / base_distance:.2f}", f"{seconds:.2f}",
                     f"{seconds / base_seconds:.2f}"])  # fmt: skip
        if name == "defaults" and enough is None and flicker <= base_flicker and distance <= base_distance:
            enough = frame_iterations
    print(table(["run", "frame iterations", "warp err.", "vs recipe", "style distance", "vs recipe",
                 "s/frame", "vs recipe"], rows))  # fmt: skip
    if enough is None:
        print("\nno number of frame iterations tried matched the recipe's flicker and style distance together")
    else:
        print(f"\nthe defaults match the recipe's flicker and style distance at {enough} frame iterations "
              f"(the recipe: {RECIPE_FRAME_ITERATIONS})")  # fmt: skip


if __name__ == "__main__":
    main()
