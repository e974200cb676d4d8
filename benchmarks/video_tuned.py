"""Video with the tuned look: flicker (warping error) of the frames blended along the flow against frame by frame.

A clip is styled with ``--preset tuned`` (the look tuned once on frames spread over the clip, then each frame
painted by it at once) twice through ``render_video``: with coherence (each painted frame blended with the last
one along the flow where it is reliable, ``temporal.blend_along_flow``) and frame by frame (``temporal_weight``
0: each frame as the look painted it). The look is tuned by a first run, in a cache of the clip's own, and found
kept by the two that are measured. Printed:

- the warping error of Lai et al. 2018 (``temporal.clip_warping_error``, as ``video.py`` measures it), blended /
  frame by frame;
- each run's mean style loss per frame (as ``video.py``: the objective's style terms of a still run of the input
  frame), blended / frame by frame: what the blend costs in style, if anything;
- seconds per frame of each (the look kept), the share of the blended run's time spent on flow and blending, and
  the tuning's seconds.

    python benchmarks/video_tuned.py                       # proxy weights when present; 224 px, 12 frames
    python benchmarks/video_tuned.py --tune-steps 40 --clips pan
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import tempfile
from pathlib import Path

import numpy as np
from _common import ROOT, machine, table, weights
from PIL import Image
from video import object_clip, pan_clip, still_clip, style_losses

SAMPLES = ROOT / "resources" / "samples"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--frames", type=int, default=12)
    parser.add_argument("--size", type=int, default=224, help="longest side of the clip and the render")
    parser.add_argument("--tune-steps", type=int, default=None, help="default: the settings' default")
    parser.add_argument("--weights", default=None, help="default: the proxy weights when present, else untrained")
    parser.add_argument("--style", default="starry_night.jpg")
    parser.add_argument("--clips", nargs="+", choices=("pan", "object", "still"), default=["pan", "object", "still"])
    args = parser.parse_args()

    from style_studio.core import TuningProgress
    from style_studio.core.objective.temporal import FlowEstimator, clip_warping_error
    from style_studio.core.settings import DEFAULTS, with_preset
    from tests.clips import write_clip

    loaded = weights(args.weights)
    base = dataclasses.replace(DEFAULTS, size=args.size, weights=loaded.choice)
    settings = with_preset(base, "tuned")
    if args.tune_steps is not None:
        settings = dataclasses.replace(settings, tune_steps=args.tune_steps)
    judge = dataclasses.replace(base, iterations=40, scales=1)  # the style terms as a still run defines them
    style_path = SAMPLES / "style" / args.style
    style = Image.open(style_path).convert("RGB")
    width, height = args.size, args.size * 2 // 3 // 2 * 2  # even, as a 4:2:0 video is
    print(f"{machine()}\nweights: {loaded.label}; {args.frames} frames of {width}×{height}, tuned look "
          f"({settings.tune_steps} tuning steps), style {args.style}\n")  # fmt: skip
    flows = FlowEstimator("dis")
    clips = {"pan": ("camera pan", pan_clip), "object": ("moving object", object_clip),
             "still": ("still scene", still_clip)}  # fmt: skip
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        for name, make in (clips[c] for c in args.clips):
            inputs = make(args.frames, (width, height))
            clip = write_clip(folder / f"{name.replace(' ', '-')}.mkv", inputs, codec="ffv1", pix_fmt="bgr0")
            steps: list[TuningProgress] = []
            # A cache of the clip's own: its look is tuned on its frames, and none is left in the user's cache.
            os.environ["STYLE_STUDIO_CACHE"] = str(folder / f"cache-{name.replace(' ', '-')}")
            # The first run tunes the look on the clip (and is run again below, with the look kept, to be timed).
            render_tuned(clip, style_path, settings, loaded, 0.0, folder / f"{name}-first", steps)
            blended, ours = render_tuned(clip, style_path, settings, loaded, 1.0, folder / f"{name}-blended")
            alone, theirs = render_tuned(clip, style_path, settings, loaded, 0.0, folder / f"{name}-alone")
            tuning = steps[-1].elapsed if steps else 0.0
            flicker_ours = clip_warping_error(inputs, ours, flows)
            flicker_theirs = clip_warping_error(inputs, theirs, flows)
            style_ours = style_losses(ours, inputs, style, judge, loaded)
            style_theirs = style_losses(theirs, inputs, style, judge, loaded)
            rows.append([
                name, f"{flicker_ours:.5f}", f"{flicker_theirs:.5f}", f"{flicker_ours / flicker_theirs:.3f}",
                f"{style_ours / style_theirs:.3f}", f"{blended.seconds / blended.frames:.3f}",
                f"{alone.seconds / alone.frames:.3f}", f"{100 * blended.flow_seconds / blended.seconds:.1f} %",
                f"{tuning:.0f}",
            ])  # fmt: skip
    headers = ["clip", "warp err. blended", "frame by frame", "ratio", "style loss ratio", "s/frame blended",
               "s/frame alone", "flow+blend share", "tuning s"]  # fmt: skip
    print(table(headers, rows))


def render_tuned(clip: Path, style: Path, settings, loaded, temporal: float, out: Path, steps=None):
    """The clip rendered with ``settings`` (the tuned look) and coherence ``temporal``: what ``render_video`` said,
    and the frames; ``steps`` hears the tuning's steps, when the look is tuned."""
    from style_studio.core.jobs.job import Job, VideoOptions
    from style_studio.core.jobs.video_job import _render_video as render_video

    job = Job("bench", clip, (style,), settings, out, video=VideoOptions(temporal_weight=temporal))
    rendered = render_video(job, loaded, resume=False, tuning=steps.append if steps is not None else None)
    return rendered, [np.asarray(Image.open(p).convert("RGB")) for p in sorted(out.iterdir())]


if __name__ == "__main__":
    main()
