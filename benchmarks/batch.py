"""Batch throughput: jobs per minute in this process, in a pool of worker processes, and on a local Ray instance.

Eight jobs (two bundled photos with four bundled styles) at 256 px, each
configuration writing into a fresh folder of its own. Ray runs on an instance
started here with ``ray start --head`` (as a user would), with as many CPUs as
the pool has workers, so each task gets the same share of the machine as a pool
worker does. Goal: Ray reaches at least 90 % of the pool's throughput.

    python benchmarks/batch.py                 # 1 and 2 workers, Ray with 2 CPUs
    python benchmarks/batch.py --iterations 10 --workers 2
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import ROOT, machine, table

GOAL = 0.90


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--weights", default="untrained")
    args = parser.parse_args()

    from style_studio.cli.ray_cluster import RayCluster
    from style_studio.cli.runners import InProcess, ProcessPool, run_batch
    from style_studio.core.jobs.batch import jobs_from_arguments
    from style_studio.core.settings import DEFAULTS

    samples = ROOT / "resources" / "samples"
    photos = [samples / "content" / "chelsea.png", samples / "content" / "coffee.png"]
    styles = sorted((samples / "style").glob("*.*"))[:4]
    settings = dataclasses.replace(DEFAULTS, size=args.size, iterations=args.iterations, scales=1, weights=args.weights)

    def timed(make_runner) -> float:
        folder = Path(tempfile.mkdtemp(prefix="style-studio-batch-"))
        try:
            jobs = jobs_from_arguments(photos, styles, folder, settings)
            runner = make_runner()
            start = time.perf_counter()
            result = run_batch(jobs, runner)
            seconds = time.perf_counter() - start
            if getattr(runner, "close", None):
                runner.close()
            failed = [o for o in result.ordered() if o.status != "done"]
            if failed:
                raise SystemExit(f"jobs failed: {[(o.job.id, o.reason) for o in failed]}")
            return len(jobs) / seconds * 60
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    rows = []
    print(f"Batch of 8 jobs at {args.size} px, {args.iterations} iterations ({machine()})", flush=True)
    one = timed(InProcess)
    rows.append(["this process", 1, f"{one:.2f}", ""])
    print(f"  1 worker: {one:.2f} jobs/min", flush=True)
    pool = timed(lambda: ProcessPool(args.workers))
    rows.append(["process pool", args.workers, f"{pool:.2f}", ""])
    print(f"  {args.workers} worker processes: {pool:.2f} jobs/min", flush=True)
    address, stop = start_ray(args.workers)
    try:
        ray = timed(lambda: connected(RayCluster(address)))
    finally:
        stop()
    share = ray / pool
    rows.append(
        [
            "Ray, local instance",
            args.workers,
            f"{ray:.2f}",
            f"{share:.2f} of the pool ({'yes' if share >= GOAL else 'NO'})",
        ]
    )
    print(table(["runs in", "workers", "jobs/min", f"Ray >= {GOAL:.0%} of the pool"], rows))


def connected(cluster):
    cluster.connect()
    return cluster


def start_ray(cpus: int):
    """``ray start --head`` on a free port; returns its address and how to stop it."""
    ray = shutil.which("ray", path=str(Path(sys.executable).parent)) or shutil.which("ray")
    if ray is None:
        raise SystemExit("Ray is not installed: pip install 'style-studio[cluster]'")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    subprocess.run(
        [ray, "start", "--head", f"--port={port}", f"--num-cpus={cpus}", "--include-dashboard=false",
         "--disable-usage-stats"],
        check=True, env=env, capture_output=True,
    )  # fmt: skip
    return f"127.0.0.1:{port}", lambda: subprocess.run([ray, "stop", "--force"], env=env, capture_output=True)


if __name__ == "__main__":
    main()
