"""A long clip in chunks: do the seams show, and how much sooner is it done on a Ray instance?

The 48-frame slow pan of ``video.py`` (or the pan), styled three ways in one run:
whole, in one process (``render_video``); in chunks one after another in this
process (``ChunksInProcess``), with the cross-fade over ``--overlap`` frames and
with none (hard seams, to compare); and with ``--ray``, in chunks on a local
Ray instance started here with ``--ray-cpus`` CPUs (one task per CPU).

Printed:

- the warping error (``video.py``'s) of each pair of successive frames, the
  pairs at a seam (a frame of the fade, or the first frame after it) against
  those within a chunk: goal at most 1.5;
- the chunked clip's warping error and style loss against the whole render's;
- the wall time of the Ray render against the whole one in one process.

    python benchmarks/video_chunks.py                  # proxy weights when present; about 15 minutes
    python benchmarks/video_chunks.py --ray            # and on a local Ray instance
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import ROOT, machine, table, weights
from PIL import Image
from video import pan_clip, slow_pan_clip, style_losses

GOAL_SEAM = 1.5


def frames_of(folder: Path) -> list[np.ndarray]:
    return [np.asarray(Image.open(p).convert("RGB")) for p in sorted(folder.glob("*.png"))]


def pair_errors(inputs: list[np.ndarray], outputs: list[np.ndarray]) -> list[float]:
    """The warping error of each frame against the one before (index t: frames t and t+1)."""
    from style_studio.core.objective.temporal import FlowEstimator, FrameMotion, warping_error

    flows = FlowEstimator("dis")
    return [
        warping_error(outputs[t], outputs[t - 1], FrameMotion.between(inputs[t - 1], inputs[t], flows))
        for t in range(1, len(outputs))
    ]


def seam_pairs(frames: int, chunk_frames: int, overlap: int) -> set[int]:
    """The pairs (by their later frame's 1-based number) that touch a seam: into, through and out of each fade."""
    from style_studio.core import plan_chunks

    seams: set[int] = set()
    for chunk in plan_chunks(frames, chunk_frames, overlap)[1:]:
        seams.update(range(chunk.start, chunk.own + 1))
    return {n for n in seams if 2 <= n <= frames}


def seam_ratio(errors: list[float], seams: set[int]) -> tuple[float, float, float]:
    at = [e for t, e in enumerate(errors, start=2) if t in seams]
    within = [e for t, e in enumerate(errors, start=2) if t not in seams]
    return float(np.mean(at)), float(np.mean(within)), float(np.mean(at) / np.mean(within))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clip", choices=("slow-pan", "pan"), default="slow-pan")
    parser.add_argument("--frames", type=int, default=48)
    parser.add_argument("--size", type=int, default=96, help="longest side of the clip and the render")
    parser.add_argument("--iterations", type=int, default=40, help="iterations of every frame")
    parser.add_argument("--chunk-frames", type=int, default=12)
    parser.add_argument("--overlap", type=int, default=4)
    parser.add_argument("--no-hard-seams", dest="hard_seams", action="store_false",
                        help="leave out the chunks joined with no overlap")  # fmt: skip
    parser.add_argument("--ray", action="store_true", help="also on a local Ray instance (wall time)")
    parser.add_argument("--ray-cpus", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--weights", default=None)
    parser.add_argument("--style", default="starry_night.jpg")
    args = parser.parse_args()

    from style_studio.core import ChunksInProcess, Job, VideoOptions
    from style_studio.core.jobs.video_chunks import _render_video_in_chunks as render_video_in_chunks
    from style_studio.core.jobs.video_job import _render_video as render_video
    from style_studio.core.settings import DEFAULTS
    from tests.clips import write_clip

    loaded = weights(args.weights)
    width, height = args.size, args.size * 2 // 3 // 2 * 2  # even, as a 4:2:0 video is
    inputs = (slow_pan_clip if args.clip == "slow-pan" else pan_clip)(args.frames, (width, height))
    style_path = ROOT / "resources" / "samples" / "style" / args.style
    settings = dataclasses.replace(DEFAULTS, size=args.size, iterations=args.iterations, scales=1, first_scale=0,
                                   weights=loaded.choice)  # fmt: skip
    options = VideoOptions(frame_iterations=args.iterations)
    print(
        f"{machine()}\nweights: {loaded.label}; {args.clip}, {args.frames} frames of {width}×{height}, "
        f"{args.iterations} iterations a frame, chunks of {args.chunk_frames}, {args.overlap} overlapping"
    )
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        clip = write_clip(work / "clip.mkv", inputs, codec="ffv1", pix_fmt="bgr0")

        def job(name: str) -> Job:
            return Job(name, clip, (style_path,), settings, work / name, video=options)

        began = time.perf_counter()
        render_video(job("whole"), loaded, resume=False)
        whole_seconds = time.perf_counter() - began
        runs = {"whole, one process": (frames_of(work / "whole"), whole_seconds, set())}
        for overlap in (args.overlap, 0) if args.hard_seams else (args.overlap,):
            name = f"chunks, {overlap} faded" if overlap else "chunks, hard seams"
            began = time.perf_counter()
            render_video_in_chunks(job(name), ChunksInProcess(loaded), chunk_frames=args.chunk_frames,
                                   overlap=overlap, resume=False)  # fmt: skip
            seams = seam_pairs(args.frames, args.chunk_frames, overlap)
            runs[name] = (frames_of(work / name), time.perf_counter() - began, seams)
        if args.ray:
            runs["on Ray"] = (*on_ray(job("ray"), args), seam_pairs(args.frames, args.chunk_frames, args.overlap))
        style = Image.open(style_path).convert("RGB")
        rows = []
        whole_error = float(np.mean(pair_errors(inputs, runs["whole, one process"][0])))
        whole_style = style_losses(runs["whole, one process"][0], inputs, style, settings, loaded)
        seams_here = seam_pairs(args.frames, args.chunk_frames, args.overlap)
        for name, (pictures, seconds, seams) in runs.items():
            errors = pair_errors(inputs, pictures)
            at, within, ratio = seam_ratio(errors, seams or seams_here)
            rows.append([name, f"{at:.5f}", f"{within:.5f}", f"{ratio:.2f}",
                         f"{np.mean(errors) / whole_error:.2f}",
                         f"{style_losses(pictures, inputs, style, settings, loaded) / whole_style:.3f}",
                         f"{seconds:.0f}", f"{seconds / whole_seconds:.2f}"])  # fmt: skip
        print()
        print(table(["run", "warp err. at seams", "within chunks", f"seams/within (≤{GOAL_SEAM})",
                     "warp err. vs whole", "style loss vs whole", "seconds", "time vs whole"], rows))  # fmt: skip
        print("\n(the whole render's 'seams' are the same frames' pairs, where it has none: its own ratio)")


def on_ray(job, args) -> tuple[list[np.ndarray], float]:
    """The clip in chunks on a local Ray instance of ``--ray-cpus`` CPUs; the wall time includes its start."""
    import ray

    from style_studio.cli.ray_cluster import RayCluster
    from style_studio.cli.ray_video import RayChunks
    from style_studio.core.jobs.video_chunks import _render_video_in_chunks as render_video_in_chunks

    began = time.perf_counter()
    ray.init(num_cpus=args.ray_cpus, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
    try:
        runner = RayChunks(RayCluster("auto"))
        render_video_in_chunks(job, runner, chunk_frames=args.chunk_frames, overlap=args.overlap, resume=False)
        return frames_of(job.output), time.perf_counter() - began
    finally:
        ray.shutdown()


if __name__ == "__main__":
    main()
