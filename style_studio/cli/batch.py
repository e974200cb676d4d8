"""``style-studio batch``: many pictures, in this process, a pool of processes or on Ray."""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING

from ..core import folder_lock, held
from .parser import UsageError, chunking, preset_base, settings_from_args, video_options
from .render import EXIT_INTERRUPTED

if TYPE_CHECKING:
    from ..core import Job

STOPPED = "style-studio: stopped; finished pictures are kept. Run the same command to do the rest"


def batch(args: argparse.Namespace, stdout: IO[str], stderr: IO[str]) -> int:
    """Run ``style-studio batch``; 0 when every job is done or skipped, 1 when one failed."""
    from ..core import OutputOptions, check_jobs, free_generated_names, jobs_from_arguments, jobs_from_file

    settings = settings_from_args(args, preset_base(args))
    outdir = Path(args.output)
    options = OutputOptions(args.bit_depth, args.dpi, video_options(args))
    if args.jobs:
        if args.photos or args.batch_styles:
            raise UsageError("give photos with --style, or --jobs, not both")
        jobs = jobs_from_file(Path(args.jobs), outdir, settings, options)
    else:
        if not args.photos or not args.batch_styles:
            raise UsageError("give one or more photos and --style with one or more style images (or --jobs FILE)")
        jobs = jobs_from_arguments([Path(p) for p in args.photos], [Path(p) for p in args.batch_styles], outdir,
                                   settings, f".{args.format}", options)  # fmt: skip
    jobs, renamed = free_generated_names(jobs)  # a name we made up never replaces a user's file
    check_jobs(jobs, outdir)
    for notice in renamed:
        stderr.write(f"style-studio: {notice}\n")
    chunking(args)  # chunks that cannot be made are refused before anything runs
    if args.workers < 1:
        raise UsageError(f"--workers must be 1 or more, got {args.workers}")
    try:
        outdir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"{outdir}: the output folder cannot be made ({exc.strerror or exc})") from None
    if not os.access(outdir, os.W_OK):
        raise UsageError(f"{outdir}: the output folder is not writable")
    busy = f"{outdir} is the output folder of another style-studio batch; wait for it, or choose another -o"
    with held(folder_lock(outdir, "batch"), busy):
        try:
            return _run_jobs(args, jobs, stdout, stderr)
        except KeyboardInterrupt:  # while loading weights, joining a cluster or leaving it: nothing was lost
            stderr.write(f"{STOPPED}\n")
            return EXIT_INTERRUPTED


def _run_jobs(args: argparse.Namespace, jobs: Sequence[Job], stdout: IO[str], stderr: IO[str]) -> int:
    """A checked batch's jobs, its output folder held by this process."""
    from ..core import load_weights
    from .ray_cluster import RayCluster
    from .runners import BatchProgress, InProcess, ProcessPool, Runner, print_summary, run_batch

    for choice in sorted({job.settings.network_weights for job in jobs}):
        loaded = load_weights(choice, download=True)  # every problem before anything runs
        if loaded.untrained:
            stderr.write(f"style-studio: using {loaded.label}\n")
    mode = args.progress or ("bar" if stderr.isatty() else "none")
    runner: Runner
    if args.ray:
        cluster = RayCluster(args.ray)
        cluster.jobs_hint = len(jobs)
        cluster.chunking = chunking(args)
        stderr.write(f"style-studio: on Ray {cluster.connect()}\n")
        runner = cluster
    elif args.workers > 1:
        runner = ProcessPool(args.workers)
    else:
        runner = InProcess()
    progress = BatchProgress(mode, len(jobs), stdout, stderr)
    try:
        result = run_batch(jobs, runner, progress)
    finally:
        progress.close()
        if isinstance(runner, RayCluster):
            runner.close()
    if mode == "json":
        stdout.write(json.dumps({"summary": [o.to_json() for o in result.ordered()]}) + "\n")
    else:
        print_summary(result, stderr)
    if result.interrupted:
        stderr.write(f"{STOPPED}\n")
        return EXIT_INTERRUPTED
    return 1 if result.failed else 0
