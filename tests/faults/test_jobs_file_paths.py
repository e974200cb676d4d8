"""A jobs file cannot write outside the output folder, nor over one of its own input pictures."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.cli.test_cli import run_cli
from tests.conftest import SAMPLES

FAST = ["--size", "32", "--iterations", "1", "--scales", "1", "--weights", "untrained"]


@pytest.fixture
def inputs(tmp_path):
    folder = tmp_path / "pictures"
    folder.mkdir()
    shutil.copy(SAMPLES / "content" / "chelsea.png", folder / "cat.png")
    shutil.copy(SAMPLES / "style" / "starry_night.jpg", folder / "starry.jpg")
    return folder


def run(inputs, tmp_path, output):
    jobs = inputs / "jobs.json"
    jobs.write_text(json.dumps({"jobs": [{"content": "cat.png", "styles": ["starry.jpg"], "output": output}]}))
    return run_cli("batch", "--jobs", str(jobs), "-o", str(tmp_path / "out"), *FAST)


@pytest.mark.parametrize("output", ["../escaped.png", "sub/../../escaped.png", "{tmp}/escaped.png"])
def test_an_output_outside_the_output_folder_is_refused_and_nothing_is_written(inputs, tmp_path, output):
    # A hidden temporary file beside the escaped output, as a killed batch would leave there: it must stay.
    (tmp_path / ".escaped.x.png.part").write_text("someone else's")
    code, _, err = run(inputs, tmp_path, output.format(tmp=tmp_path))
    assert code == 2 and "leads outside the output folder" in err, err
    assert not (tmp_path / "escaped.png").exists() and not (tmp_path / "out").exists()
    assert (tmp_path / ".escaped.x.png.part").exists()


def test_an_output_through_a_link_that_leaves_the_folder_is_refused(inputs, tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "out" / "link").symlink_to(tmp_path / "elsewhere")
    code, _, err = run(inputs, tmp_path, "link/escaped.png")
    assert code == 2 and "leads outside the output folder" in err
    assert not (tmp_path / "elsewhere" / "escaped.png").exists()


def test_an_output_that_is_an_input_picture_is_refused(inputs, tmp_path):
    before = (inputs / "cat.png").read_bytes()
    jobs = inputs / "jobs.json"
    jobs.write_text(json.dumps({"jobs": [{"content": "cat.png", "styles": ["starry.jpg"], "output": "cat.png"}]}))
    code, _, err = run_cli("batch", "--jobs", str(jobs), "-o", str(inputs), *FAST)
    assert code == 2 and "is one of the job's inputs" in err
    assert (inputs / "cat.png").read_bytes() == before


def test_an_output_in_a_subfolder_of_the_output_folder_is_fine(inputs, tmp_path):
    code, _, err = run(inputs, tmp_path, "cats/cat-starry.png")
    assert code == 0, err
    assert (tmp_path / "out" / "cats" / "cat-starry.png").exists()
