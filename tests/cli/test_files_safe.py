"""The command line keeps what the user had: a checkpoint it cannot use is set aside and named, a link planted
in a batch's output folder while it runs is not followed out of it."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
from pathlib import Path

import pytest

from style_studio.cli.reports import JobProgress
from style_studio.cli.runners import InProcess, run_batch
from style_studio.core import JobOutcome
from style_studio.core.jobs.batch import check_jobs, jobs_from_arguments
from style_studio.core.run.checkpoints import CheckpointStore
from style_studio.core.settings import DEFAULTS
from tests.cli.test_cli import run_cli
from tests.conftest import SAMPLES

FAST = ["--size", "32", "--iterations", "2", "--scales", "1", "--weights", "untrained"]
CONTENT = str(SAMPLES / "content" / "chelsea.png")
STYLE = str(SAMPLES / "style" / "starry_night.jpg")


def cli_run_id(output: Path) -> str:
    return "cli-" + hashlib.sha256(str(output.resolve()).encode()).hexdigest()[:16]


@pytest.mark.parametrize(
    ("document", "said"),
    [("{ damaged", "JSONDecodeError"), (json.dumps({"format": "style-studio-checkpoint", "version": 99}), "newer")],
    ids=["damaged", "newer-version"],
)
def test_a_render_sets_aside_a_checkpoint_it_cannot_use_and_says_where(
    tmp_path: Path, document: str, said: str
) -> None:
    out = tmp_path / "out.png"
    store = CheckpointStore()
    folder = store.folder(cli_run_id(out))
    folder.mkdir(parents=True)
    (folder / "run.json").write_text(document)
    code, _, err = run_cli("render", CONTENT, STYLE, "-o", str(out), *FAST)
    assert code == 0, err
    assert said in err and "was moved to" in err and "starting from the beginning" in err
    (kept,) = (store.root.parent / "checkpoints.unreadable").iterdir()
    assert (kept / "run.json").read_text() == document and str(kept) in err


def test_a_link_planted_in_the_output_folder_while_a_batch_runs_is_not_followed(tmp_path: Path) -> None:
    photos = [tmp_path / "a.png", tmp_path / "b.png"]
    for photo in photos:
        shutil.copy(CONTENT, photo)
    outdir, victim = tmp_path / "out", tmp_path / "victim.png"
    outdir.mkdir()
    victim.write_bytes(b"precious")
    settings = dataclasses.replace(DEFAULTS, size=32, iterations=2, scales=1, weights="untrained")
    jobs = jobs_from_arguments(photos, [Path(STYLE)], outdir, settings)
    check_jobs(jobs, outdir)  # the folder is checked before the batch starts ...
    planted = []

    def plant(event: JobProgress | JobOutcome) -> None:
        if isinstance(event, JobProgress) and not planted and event.job == "2":  # ... and a link appears while it runs
            jobs[1].output.symlink_to(victim)
            planted.append(True)

    batch = run_batch(jobs, InProcess(), plant)
    outcomes = {o.job.id: o for o in batch.ordered()}
    assert planted and outcomes["1"].status == "done"
    assert outcomes["2"].status == "failed" and "leads outside the output folder" in outcomes["2"].reason
    assert victim.read_bytes() == b"precious" and jobs[1].output.is_symlink()
