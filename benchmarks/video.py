"""Video: flicker (warping error) and cost of a coherent render against frame by frame, on two clips.

Two clips are made from the sample photos: a camera panning over a photo,
and a photo's cut-out crossing a still photo. Each is styled twice through
``render_video`` with the same settings and the same iterations for every
frame: coherently (each frame from the previous one, with the temporal term)
and frame by frame (``temporal_weight`` 0: each frame on its own). Printed:

- the warping error of Lai et al. 2018 (mean squared difference, in [0, 1]
  RGB, over the pixels the input's flow trusts, between each output frame and
  the previous output frame warped along the input's flow), coherent / frame
  by frame: goal at most 0.35;
- each run's mean style loss per frame (the objective's style terms, without
  the temporal term), coherent / frame by frame: goal within 1.10;
- seconds per frame against one picture rendered at the same size and
  iterations (the median of three), and the share of a frame's time spent on flow and warping
  (goal at most 5 %);
- the trail behind the moving object and the drift of the look over each clip
  (``video_measures``; ``--clips slow-pan``: a 48-frame slow pan, for drift);
- with ``--instant``: the draft of ``--preset instant`` (each frame the instant look alone), its warping error
  against both runs' and its seconds per frame.

A contact sheet (inputs, frame by frame, coherent) is written for each clip.

    python benchmarks/video.py                         # proxy weights when present
    python benchmarks/video.py --frames 8 --size 128   # quicker
    python benchmarks/video.py --memory                # peak memory: 24 frames against 96
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import ROOT, add_painting_share, machine, painting_share, table, weights
from PIL import Image
from video_measures import Box, SetFeatures, spread, trail

SAMPLES = ROOT / "resources" / "samples"
GOAL_FLICKER, GOAL_STYLE, GOAL_FLOW = 0.35, 1.10, 0.05


def photo(name: str, width: int, height: int) -> np.ndarray:
    picture = Image.open(SAMPLES / "content" / name).convert("RGB")
    return np.asarray(picture.resize((width, height), Image.Resampling.LANCZOS))


def pan_clip(frames: int, size: tuple[int, int]) -> list[np.ndarray]:
    """A camera moving right and down over a photo, 3 px and 1 px a frame at this size."""
    width, height = size
    scene = photo("chelsea.png", width + 3 * frames + 4, height + frames + 4)
    return [scene[i : i + height, 3 * i : 3 * i + width].copy() for i in range(frames)]


def slow_pan_clip(frames: int, size: tuple[int, int]) -> list[np.ndarray]:
    """A camera moving slowly right over a photo, 1 px a frame at this size (48 frames: the issue's drift clip)."""
    width, height = size
    scene = photo("astronaut.png", width + frames + 2, height + 2)
    return [scene[1 : 1 + height, i : i + width].copy() for i in range(frames)]


def still_clip(frames: int, size: tuple[int, int]) -> list[np.ndarray]:
    """A still scene (a photo) as a camera on a tripod films it: only the sensor's noise changes."""
    rng = np.random.default_rng(0)
    scene = photo("coffee.png", *size).astype(np.float32)
    return [np.clip(scene + rng.normal(0, 1.5, scene.shape) + 0.5, 0, 255).astype(np.uint8) for _ in range(frames)]


def object_boxes(frames: int, size: tuple[int, int]) -> list[Box]:
    """Where the object of ``object_clip`` is in each frame: across the picture from left to right."""
    width, height = size
    side = height // 2
    return [
        Box(int(4 + i * (width - side - 8) / max(1, frames - 1)), height // 4 + int(6 * np.sin(i / 2)), side)
        for i in range(frames)
    ]


def object_clip(frames: int, size: tuple[int, int]) -> list[np.ndarray]:
    """A photo's cut-out (a rocket) moving across a still photo (coffee)."""
    width, height = size
    background = photo("coffee.png", width, height)
    out = []
    for box in object_boxes(frames, size):
        picture = background.copy()
        picture[box.top : box.top + box.side, box.left : box.left + box.side] = photo("rocket.jpg", box.side, box.side)
        out.append(picture)
    return out


def render(clip: Path, style: Path, settings, loaded, frame_iterations: int, temporal: float, out: Path,
           settle: float = 0.0, repair: float = 0.0):  # fmt: skip
    from style_studio.core.jobs.job import Job, VideoOptions
    from style_studio.core.jobs.video_job import _render_video as render_video

    options = VideoOptions(frame_iterations, temporal, frame_settle=settle, frame_repair=repair)
    job = Job("bench", clip, (style,), settings, out, video=options)
    rendered = render_video(job, loaded, resume=False)
    pictures = [np.asarray(Image.open(p).convert("RGB")) for p in sorted(out.iterdir())]
    return rendered, pictures


def style_losses(pictures: list[np.ndarray], inputs: list[np.ndarray], style: Image.Image, settings, loaded) -> float:
    """Mean over frames of the style terms of each output frame, as a still run of its input frame defines them."""
    from style_studio.core import PictureRun, Pictures, RunSpec

    total = []
    for output, content in zip(pictures, inputs, strict=True):
        judge = PictureRun(RunSpec(Pictures(Image.fromarray(content), (style,)), settings), loaded)
        terms = judge.evaluate(Image.fromarray(output))
        judge.close()
        total.append(sum(v for k, v in terms.items() if k not in ("total", "content", "tv")))
    return float(np.mean(total))


def single_picture_seconds(content: np.ndarray, style: Image.Image, settings, loaded) -> float:
    from style_studio.core import Pictures, Previews, RunHooks, RunSpec, door

    began = time.perf_counter()
    door.picture(
        RunSpec(Pictures(Image.fromarray(content), (style,)), settings), loaded, RunHooks(previews=Previews(0.5))
    )
    return time.perf_counter() - began


def contact_sheet(rows: list[list[np.ndarray]], path: Path, every: int) -> None:
    """Every ``every``-th frame of each row, rows one above the other, as a JPEG."""
    chosen = [[row[i] for i in range(0, len(row), every)] for row in rows]
    height, width = chosen[0][0].shape[:2]
    sheet = Image.new("RGB", (width * len(chosen[0]) + 2 * len(chosen[0]), height * len(chosen) + 2 * len(chosen)))
    for r, row in enumerate(chosen):
        for c, picture in enumerate(row):
            sheet.paste(Image.fromarray(picture), (c * (width + 2), r * (height + 2)))
    sheet.save(path, quality=90)


def peak_memory(frames: int, size: int) -> float:
    """Peak resident memory (MB) of a process that styles a ``frames``-frame clip at ``size`` px (untrained, 4 its)."""
    import subprocess
    import sys

    code = f"""
import resource, sys, tempfile
from pathlib import Path
sys.path[:0] = [{str(ROOT)!r}, {str(ROOT / "benchmarks")!r}]
import video as bench
from tests.clips import write_clip
from style_studio.core.jobs.job import Job, VideoOptions
from style_studio.core.jobs.video_job import _render_video as render_video
from style_studio.core.network.weights import load_weights
from style_studio.core.settings import DEFAULTS
import dataclasses
folder = Path(tempfile.mkdtemp())
clip = write_clip(folder / "clip.mp4", bench.pan_clip({frames}, ({size}, {size} * 2 // 3 // 2 * 2)))
settings = dataclasses.replace(DEFAULTS, size={size}, iterations=4, scales=1, weights="untrained")
job = Job("m", clip, (bench.SAMPLES / "style" / "starry_night.jpg",), settings, folder / "out.mp4",
          video=VideoOptions(frame_iterations=4))
render_video(job, load_weights("untrained"), resume=False)
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--frames", type=int, default=12)
    parser.add_argument("--size", type=int, default=192, help="longest side of the clip and the render")
    parser.add_argument("--iterations", type=int, default=40, help="iterations of every frame, in both runs")
    parser.add_argument("--temporal-weight", type=float, default=None, help="default: VideoOptions' default")
    parser.add_argument("--frame-settle", type=float, default=0.0, help="the coherent run's frames stop early")
    parser.add_argument("--frame-repair", type=float, default=0.0, help="the coherent run's untrusted pixels' term")
    parser.add_argument("--weights", default=None, help="default: the proxy weights when present, else untrained")
    parser.add_argument("--style", default="starry_night.jpg")
    parser.add_argument("--style-loss", default=None, help="default: the defaults' (to compare code of another day)")
    parser.add_argument("--init", default=None, help="the first frame's start; default: the defaults'")
    parser.add_argument("--clips", nargs="+", choices=("pan", "object", "slow-pan", "still"), default=["pan", "object"])
    parser.add_argument("--slow-pan-frames", type=int, default=48, help="the slow pan's frames (drift)")
    add_painting_share(parser)
    parser.add_argument("--instant", action="store_true", help="also the instant look's draft (--preset instant)")
    parser.add_argument("--memory", action="store_true", help="only: peak memory for a short and a 4x longer clip")
    parser.add_argument("--sheets", type=Path, default=ROOT / "docs" / "video", help="where contact sheets go")
    args = parser.parse_args()
    if args.memory:
        short, long = peak_memory(24, 256), peak_memory(96, 256)
        print(f"{machine()}\npeak memory styling 24 frames: {short:.0f} MB; 96 frames: {long:.0f} MB "
              f"(ratio {long / short:.2f}; untrained network, 256 px, 4 iterations a frame)")  # fmt: skip
        return

    from style_studio.core.jobs.job import VideoOptions
    from style_studio.core.objective.temporal import FlowEstimator, clip_warping_error
    from style_studio.core.settings import DEFAULTS
    from tests.clips import write_clip

    share = painting_share(args)
    loaded = weights(args.weights)
    temporal = VideoOptions().temporal_weight if args.temporal_weight is None else args.temporal_weight
    chosen = {name: value for name, value in (("style_loss", args.style_loss), ("init", args.init)) if value}
    settings = dataclasses.replace(DEFAULTS, size=args.size, iterations=args.iterations, scales=1,
                                   weights=loaded.choice, **chosen)  # fmt: skip
    style_path = SAMPLES / "style" / args.style
    style = Image.open(style_path).convert("RGB")
    width, height = args.size, args.size * 2 // 3 // 2 * 2  # even, as a 4:2:0 video is
    print(f"{machine()}\nweights: {loaded.label}; {args.frames} frames of {width}×{height}, {args.iterations} "
          f"iterations a frame, temporal weight {temporal:g}, frame settle {args.frame_settle:g}, frame repair "
          f"{args.frame_repair:g} (coherent), painting share {share:g}, "
          f"style {args.style}, style loss {settings.style_loss}, start {settings.init}\n")  # fmt: skip
    args.sheets.mkdir(parents=True, exist_ok=True)
    flows = FlowEstimator("dis")
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        clips = {"pan": ("camera pan", pan_clip), "object": ("moving object", object_clip),
                 "slow-pan": ("slow pan", slow_pan_clip), "still": ("still scene", still_clip)}  # fmt: skip
        from quality import Features

        features = Features(loaded)
        sets, painting = SetFeatures(features), style.resize((width, height), Image.Resampling.LANCZOS)
        looks, drafts = [], []
        # Warm-up: the network built and torch's first-run costs paid before anything is timed.
        single_picture_seconds(pan_clip(1, (width, height))[0], style, settings, loaded)
        for name, make in (clips[c] for c in args.clips):
            frames = args.slow_pan_frames if make is slow_pan_clip else args.frames
            inputs = make(frames, (width, height))
            clip = write_clip(folder / f"{name.replace(' ', '-')}.mkv", inputs, codec="ffv1", pix_fmt="bgr0")
            coherent, ours = render(clip, style_path, settings, loaded, args.iterations, temporal,
                                    folder / f"{name}-coherent", args.frame_settle, args.frame_repair)  # fmt: skip
            alone, theirs = render(clip, style_path, settings, loaded, args.iterations, 0.0,
                                   folder / f"{name}-alone")  # fmt: skip
            flicker_ours = clip_warping_error(inputs, ours, flows)
            flicker_theirs = clip_warping_error(inputs, theirs, flows)
            style_ours = style_losses(ours, inputs, style, settings, loaded)
            style_theirs = style_losses(theirs, inputs, style, settings, loaded)
            single = statistics.median(single_picture_seconds(inputs[i], style, settings, loaded) for i in (1, 2, 3))
            per_frame = coherent.seconds / coherent.frames
            flow_share = coherent.flow_seconds / coherent.seconds
            rows.append([
                name, f"{flicker_ours:.5f}", f"{flicker_theirs:.5f}", f"{flicker_ours / flicker_theirs:.2f}",
                f"{style_ours / style_theirs:.3f}", f"{per_frame:.2f}", f"{alone.seconds / alone.frames:.2f}",
                f"{single:.2f}", f"{per_frame / single:.2f}",
                f"{100 * flow_share:.1f} %",
            ])  # fmt: skip
            looks.append(look_row(name, inputs, ours, theirs, painting, features, sets, (width, height)))
            if args.instant:
                from style_studio.core.network.weights import load_weights
                from style_studio.core.settings import with_preset

                draft_settings = with_preset(settings, "instant")
                draft, drafted = render(clip, style_path, draft_settings, load_weights(draft_settings.network_weights),
                                        args.iterations, 0.0, folder / f"{name}-instant")  # fmt: skip
                flicker_draft = clip_warping_error(inputs, drafted, flows)
                drafts.append([
                    name, f"{flicker_draft:.5f}", f"{flicker_draft / flicker_theirs:.2f}",
                    f"{flicker_draft / flicker_ours:.2f}", f"{draft.seconds / draft.frames:.3f}",
                    f"{per_frame / (draft.seconds / draft.frames):.0f}",
                ])  # fmt: skip
            every = max(3, len(inputs) // 8)
            contact_sheet([inputs, theirs, ours], args.sheets / f"{name.replace(' ', '-')}.jpg", every=every)
            from style_studio.core.io.video_writer import write_video

            write_video(
                args.sheets / f"{name.replace(' ', '-')}.gif",
                ((i / 12, np.concatenate([a, b], axis=1)) for i, (a, b) in enumerate(zip(theirs, ours, strict=True))),
                12,
            )
    headers = ["clip", "warp err. coherent", "frame by frame", f"ratio (≤{GOAL_FLICKER})",
               f"style loss ratio (≤{GOAL_STYLE})", "s/frame", "s/frame alone", "s/picture", "frame/picture",
               f"flow+warp (≤{100 * GOAL_FLOW:.0f} %)"]  # fmt: skip
    print(table(headers, rows))
    headers = ["clip", "trail (frame by frame in brackets): photo distance, uncovered/never (≥0.9)",
               "style closed, uncovered/same-size never (≥0.9)", "uncovered/all never",
               "drift: style distance spread, coherent/frame by frame (≤1.5)", "mean colour spread (≤1.5)",
               "brightness first → last, coherent", "frame by frame"]  # fmt: skip
    print("\n" + table(headers, looks))
    if drafts:
        headers = ["clip", "instant draft: warp err.", "/ frame by frame", "/ coherent", "s/frame",
                   "coherent s/frame ÷ draft's"]  # fmt: skip
        print("\n" + table(headers, drafts))
    print(f"\ncontact sheets (rows: input, frame by frame, coherent) and GIFs (left: frame by frame, right: "
          f"coherent) in {args.sheets}")  # fmt: skip


def look_row(name, inputs, ours, theirs, painting, features, sets, size) -> list[str]:
    """The trail (the moving object's clip) and the drift of the look, coherent and frame by frame."""
    row = [name]
    if name == "moving object":
        boxes = object_boxes(len(inputs), size)
        paint = np.asarray(painting)
        ours_trail, theirs_trail = (trail(inputs, out, boxes, paint, sets) for out in (ours, theirs))
        row += [
            f"{ours_trail.photo_distance:.2f} ({theirs_trail.photo_distance:.2f})",
            f"{ours_trail.closed_matched:.2f} ({theirs_trail.closed_matched:.2f})",
            f"{ours_trail.closed:.2f} ({theirs_trail.closed:.2f})",
        ]
    else:
        row += ["", "", ""]
    (style_ours, colour_ours, light_ours), (style_theirs, colour_theirs, light_theirs) = (
        spread(out, painting, features) for out in (ours, theirs)
    )
    row += [f"{style_ours / style_theirs:.2f}", f"{colour_ours / colour_theirs:.2f}"]
    row += [f"{light[0]:.1f} → {light[-1]:.1f}" for light in (light_ours, light_theirs)]
    return row


if __name__ == "__main__":
    main()
