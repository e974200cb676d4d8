"""The command line's grammar: ``gui``, ``render``, ``batch``, and the settings options made from ``Settings``.

Each setting's option comes from its own description (``settings.About``):
its name, help, range or choices and default, so a new setting appears here,
in presets and in jobs files from one place.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Any, NoReturn

from .. import __version__
from ..core import (
    CHUNK_FRAMES,
    CHUNK_OVERLAP,
    About,
    SettingsError,
    StyleStudioError,
    VideoOptions,
    bound_text,
    plan_chunks,
)
from ..core import settings as settings_mod

#: Settings the ``batch`` command takes from its jobs (a job may have one style picture only).
NOT_FOR_BATCH = ("style_blend",)
PROGRESS_MODES = ("bar", "json", "none")
PRESET_HELP = (
    f"start from a preset: {', '.join(settings_mod.PRESETS)} (instant: the instant look alone, no optimisation; "
    "quick: a first look soon; best: the most like the painting), or a preset file saved by the window, named as a "
    "path (./quick or quick.json: a bare built-in name is always the built-in preset); options override it"
)


class UsageError(Exception):
    """Bad command-line input; its message is the one line printed."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message}")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="style-studio", description="Neural style transfer: a desktop app, and a headless renderer for scripts."
    )
    parser.add_argument("--version", action="version", version=f"style-studio {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    gui = sub.add_parser("gui", help="open the window (the default)")
    gui.add_argument("content", nargs="?", help="content image to open")
    gui.add_argument("styles", nargs="*", help="style images to open")
    _add_render(sub)
    _add_video(sub)
    _add_batch(sub)
    return parser


def _add_render(sub: Any) -> None:
    r = sub.add_parser(
        "render",
        help="stylise an image without opening a window",
        description="Stylise CONTENT with one or more STYLE images and write OUT.",
    )
    r.add_argument("content", metavar="CONTENT", help="the photo to stylise")
    r.add_argument("styles", metavar="STYLE", nargs="+", help="one or more style images")
    r.add_argument(
        "-o", "--output", metavar="OUT", required=True,
        help="output file: .png, .jpg, .webp or .tif (settings are embedded)",
    )  # fmt: skip
    r.add_argument(
        "--regions",
        metavar="MASK",
        help="a mask picture of where each style goes: colour-coded (one colour per region, black or any "
        "other colour unpainted), or greyscale for one region; say what each colour gets with --region",
    )
    r.add_argument(
        "--region",
        metavar="COLOUR=STYLE[:STRENGTH]",
        action="append",
        default=[],
        help="what a colour of --regions gets: a style's number (from 1) and a strength, or 'keep' to keep "
        "the photo there, e.g. --region red=1 --region '#00ff00=2:0.5' --region white=keep (repeatable)",
    )
    add_output_options(r)
    r.add_argument("--preset", metavar="NAME|FILE", help=PRESET_HELP)
    add_settings_options(r)
    r.add_argument(
        "--progress", choices=PROGRESS_MODES, default=None,
        help="bar (default on a terminal), json (one object per iteration on stdout), none",
    )  # fmt: skip
    r.add_argument(
        "--resume",
        action="store_true",
        help="go on with the unfinished run of the same OUT (after a crash, a kill or Ctrl+C) "
        "where its last checkpoint stood; refused if the inputs or settings changed",
    )
    r.add_argument(
        "--previews",
        metavar="DIR",
        help="keep the run's previews in DIR, for a timelapse: preview-NNNN.png (NNNN: the step, 0 the start "
        "picture) and a line each in previews.jsonl (file, elapsed, scale, step, losses); DIR new or empty",
    )
    r.add_argument(
        "--preview-every", metavar="SECONDS", type=float, default=0.5,
        help="with --previews: at most one preview per SECONDS of the run (0: every iteration; default 0.5)",
    )  # fmt: skip
    r.add_argument("-v", "--verbose", action="store_true", help="log what happens")


def _add_video(sub: Any) -> None:
    v = sub.add_parser(
        "video",
        help="stylise a video clip, without flicker, keeping its sound",
        description="Stylise each frame of CLIP with one or more STYLE images and write OUT. Each frame starts "
        "from the previous one carried along the optical flow, so strokes stay put instead of flickering.",
    )
    v.add_argument("content", metavar="CLIP", help="the video to stylise (any file FFmpeg reads)")
    v.add_argument("styles", metavar="STYLE", nargs="+", help="one or more style images")
    v.add_argument(
        "-o", "--output", metavar="OUT", required=True,
        help="output: .mp4 (H.264), .mov, .webm (VP9), .gif, or a folder (numbered PNG frames)",
    )  # fmt: skip
    add_video_options(v)
    v.add_argument("--preset", metavar="NAME|FILE", help=PRESET_HELP)
    add_settings_options(v)
    v.add_argument(
        "--progress", choices=PROGRESS_MODES, default=None,
        help="bar (default on a terminal), json (one object per iteration on stdout, with the frame's number), none",
    )  # fmt: skip
    v.add_argument(
        "--ray", metavar="auto|ADDRESS",
        help="render the clip in chunks, each a task on a Ray cluster (auto: the one `ray start` joined this "
        "machine to); the first frame is styled first and sets every chunk's look",
    )  # fmt: skip
    add_chunk_options(v, "the frames of each chunk")
    kept = v.add_mutually_exclusive_group()
    kept.add_argument(
        "--resume", action="store_true",
        help="go on from the frames an earlier run of the same command made (after Ctrl+C, a kill or a crash)",
    )  # fmt: skip
    kept.add_argument(
        "--restart", action="store_true",
        help="remove the frames an earlier run of the same command kept, and start again from the first frame",
    )  # fmt: skip


def _add_batch(sub: Any) -> None:
    b = sub.add_parser(
        "batch",
        help="render many pictures: every photo with every style, or the jobs of a jobs file",
        description="Render every PHOTO with every --style image (or the jobs of --jobs) into OUTDIR. Outputs "
        "already made with the same settings and pictures are skipped: run the same command again to finish "
        "an interrupted batch.",
    )
    b.add_argument("photos", metavar="PHOTO", nargs="*", help="photos to stylise")
    b.add_argument(
        "--style", dest="batch_styles", metavar="STYLE", nargs="+", action="extend", default=[],
        help="style images: each photo is rendered with each of them",
    )  # fmt: skip
    b.add_argument("--jobs", metavar="FILE", help="a TOML or JSON jobs file (see the README) instead of photos")
    b.add_argument("-o", "--output", metavar="OUTDIR", required=True, help="the folder outputs go to (made if missing)")
    b.add_argument("--format", choices=("png", "jpg", "webp", "tif"), default="png", help="of the outputs named here")
    b.add_argument("--preset", metavar="NAME|FILE", help=PRESET_HELP)
    b.add_argument("--workers", type=int, default=1, help="jobs at once on this machine, each in its own process")
    b.add_argument(
        "--ray", metavar="auto|ADDRESS",
        help="run each job as a task on a Ray cluster (auto: the one `ray start` joined this machine to); a clip "
        "longer than --chunk-frames is split into chunks, each a task",
    )  # fmt: skip
    add_chunk_options(b, "a clip of more frames than this is split into chunks of this many")
    b.add_argument("--progress", choices=PROGRESS_MODES, default=None)
    add_output_options(b)
    add_video_options(b)
    add_settings_options(b, leave_out=NOT_FOR_BATCH)


def add_chunk_options(parser: argparse.ArgumentParser, frames_help: str) -> None:
    """How ``--ray`` splits a clip: the frames of a chunk, and how many of the chunk before it each also styles."""
    parser.add_argument(
        "--chunk-frames", type=int, metavar="N", help=f"with --ray: {frames_help} (default {CHUNK_FRAMES})"
    )  # fmt: skip
    parser.add_argument(
        "--chunk-overlap", type=int, metavar="N",
        help=f"with --ray: the frames before its own that a chunk also styles and fades in over, so that no "
        f"seam shows (default {CHUNK_OVERLAP})",
    )  # fmt: skip


def chunking(args: argparse.Namespace) -> tuple[int, int]:
    """The frames of a chunk and its overlap, as the options give them.

    Raises:
        UsageError: chunk options without ``--ray``, or chunks that cannot be made.
    """
    if not args.ray and (args.chunk_frames is not None or args.chunk_overlap is not None):
        raise UsageError("--chunk-frames and --chunk-overlap split the clip for --ray; add --ray ADDRESS")
    frames = CHUNK_FRAMES if args.chunk_frames is None else args.chunk_frames
    overlap = CHUNK_OVERLAP if args.chunk_overlap is None else args.chunk_overlap
    try:
        plan_chunks(2 * max(frames, 1), frames, overlap)
    except StyleStudioError as exc:
        raise UsageError(f"--chunk-frames {frames} --chunk-overlap {overlap}: {exc}") from None
    return frames, overlap


def add_video_options(parser: argparse.ArgumentParser) -> None:
    """How a video's frames are made, and which part of the clip: one option per ``VideoOptions`` field."""
    _add_described(parser, VideoOptions, VideoOptions(), typed_defaults=True)


def video_options(args: argparse.Namespace) -> VideoOptions:
    """The ``VideoOptions`` the options give."""
    return VideoOptions(**{f.name: getattr(args, f.name) for f in dataclasses.fields(VideoOptions)})


def as_flags(problem: str, kind: type = VideoOptions) -> str:
    """A core message about a field (``frame_iterations must be ...``) said with its option (``--frame-iterations``)."""
    for f in dataclasses.fields(kind):
        if problem.startswith(f"{f.name} "):
            return _flag(f.name, f.metadata["about"]) + problem[len(f.name) :]
    return problem


def add_output_options(parser: argparse.ArgumentParser) -> None:
    """How pictures are written: bits per channel and print resolution."""
    parser.add_argument(
        "--bit-depth", type=int, choices=(8, 16), default=8,
        help="bits per channel of the output: 16 keeps the finest gradations, for print (.png and .tif)",
    )  # fmt: skip
    parser.add_argument(
        "--dpi", type=float, default=None,
        help="print resolution recorded in the output (default: the photo's own, else 72)",
    )  # fmt: skip


def add_settings_options(parser: argparse.ArgumentParser, leave_out: tuple[str, ...] = ()) -> None:
    """One option per setting, from its ``About``; each defaults to None, so only those typed are used."""
    _add_described(parser, settings_mod.Settings, settings_mod.DEFAULTS, leave_out)


def _flag(name: str, about: About) -> str:
    return about.flag or "--" + name.replace("_", "-")


def _add_described(
    parser: argparse.ArgumentParser,
    kind: type,
    defaults: object,
    leave_out: tuple[str, ...] = (),
    typed_defaults: bool = False,
) -> None:
    """One option per field of ``kind`` (``Settings``, ``VideoOptions``), each made from its ``About``.

    ``typed_defaults``: an option left out takes the field's default (else None, so that a preset's value stays).
    """
    for field in dataclasses.fields(kind):
        about = field.metadata["about"]
        if field.name in leave_out or about.flag == "":
            continue
        default = getattr(defaults, field.name)
        kwargs: dict[str, Any] = {
            "dest": field.name, "default": default if typed_defaults else None,
            "help": _help(about, field.name, default),
        }  # fmt: skip
        if field.type == "bool":
            kwargs.update(action="store_const", const=not about.inverted)
        else:
            kwargs.update(metavar=about.metavar)
            if about.choices:
                kwargs.update(choices=about.choices, metavar=None)
            elif field.type == "int":
                kwargs.update(type=int)
            elif field.type in ("float", "float | None"):
                kwargs.update(type=float)
        parser.add_argument(_flag(field.name, about), **kwargs)


def _help(about: About, name: str, default: object) -> str:
    text = about.help
    if about.low is not None and about.high is not None and not about.choices:
        text += f"; {bound_text(about.low)} to {bound_text(about.high)}"
    if isinstance(default, bool) or default is None or default == ():
        return text
    shown = _as_typed(name, default)
    return f"{text} (default {shown})"


def _as_typed(name: str, value: object) -> str:
    """A setting's value as it is typed on the command line."""
    if name == "style_layers":
        return ",".join(f"{n}:{w:g}" for n, w in value)  # type: ignore[attr-defined]
    if isinstance(value, tuple):
        return ",".join(str(v) for v in value)
    return f"{value:g}" if isinstance(value, float) else str(value)


def settings_data(args: argparse.Namespace) -> dict[str, Any]:
    """The settings the options give, by their names, as typed (``settings.from_fields`` reads the text ones);
    options not typed are left out."""
    names = (field.name for field in dataclasses.fields(settings_mod.Settings))
    return {name: getattr(args, name) for name in names if getattr(args, name, None) is not None}


def preset_base(args: argparse.Namespace) -> settings_mod.Settings:
    """The settings of ``--preset`` (the defaults without one), for the options to override: a built-in preset's
    name (``settings.PRESETS``), or a preset file saved by the window."""
    if not getattr(args, "preset", None):
        return settings_mod.DEFAULTS
    try:
        return settings_mod.preset(args.preset)
    except SettingsError as exc:
        if not Path(args.preset).exists():
            raise UsageError(str(exc)) from None
        raise


def settings_from_args(
    args: argparse.Namespace, base: settings_mod.Settings = settings_mod.DEFAULTS
) -> settings_mod.Settings:
    """The Settings a command line asks for, over ``base`` (validated)."""
    settings = settings_mod.from_fields(settings_data(args), base=base)
    styles = getattr(args, "styles", None)
    if styles is not None and settings.style_blend and len(settings.style_blend) != len(styles):
        raise UsageError(
            f"the style blend has {len(settings.style_blend)} weights for {len(styles)} style images (from "
            "--style-blend, or the preset's)"
        )
    return settings
