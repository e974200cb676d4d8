"""Checkpoints: saved while a run goes on and when it stops, resumed to the end, refused when inputs changed."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import time

import pytest
import torch

from style_studio.core import settings as settings_mod
from style_studio.core.errors import StyleStudioError
from style_studio.core.io.imageio import image_hash
from style_studio.core.progress import CANCELLED, FINISHED
from style_studio.core.run.cancel import CancelToken
from style_studio.core.run.checkpoints import MAX_AGE, CheckpointStore
from style_studio.core.settings import Settings
from tests.former import FORMER_FIELDS
from tests.runs import engine

SETTINGS = Settings(size=128, iterations=6, scales=2, weights="untrained", device="cpu")


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("STYLE_STUDIO_CHECKPOINT_SECONDS", "0")  # after every iteration
    return CheckpointStore(tmp_path / "checkpoints")


def stop_at(transfer, token, step):
    records = []
    for record in transfer.run():
        records.append(record)
        if record.step == step and not record.within_iteration:
            token.cancel()
    return records


def test_a_stopped_run_resumes_where_it_stood_and_finishes(tiny, content_image, style_image, store):
    token = CancelToken()
    first = engine(content_image, [style_image], SETTINGS, tiny, cancel=token, checkpoints=store,
                          names=("chelsea.png", "starry.png"))  # fmt: skip
    records = stop_at(first, token, 4)
    assert records[-1].outcome == CANCELLED
    checkpoint = store.load(first.run_id)
    # Scale 1 has 6 iterations, scale 2 has 3: the 4th step is scale 1's 4th iteration.
    assert (checkpoint.position.scale, checkpoint.position.iteration, checkpoint.position.step) == (0, 4, 4)
    assert checkpoint.names == ("chelsea.png", "starry.png")
    assert checkpoint.describe() == "chelsea.png (128 px), stopped at scale 1/2, iteration 4"
    content, styles = checkpoint.inputs()
    assert image_hash(content) == image_hash(content_image) and len(styles) == 1

    second = engine(content_image, [style_image], SETTINGS, tiny, checkpoints=store, resume=checkpoint)
    resumed = list(second.run())
    steps = [(r.scale, r.iteration, r.step) for r in resumed if not r.done]
    assert steps[0] == (1, 5, 5) and steps[-1] == (2, 3, 9)
    assert resumed[-1].outcome == FINISHED and second.result.size == (128, 85)
    # The loss goes on from where it stood, not from the start.
    assert resumed[0].total_loss < next(r for r in records if not r.start).total_loss


def test_resuming_with_other_settings_or_inputs_is_refused_with_what_changed(
    tiny, content_image, style_image, second_style_image, store
):
    token = CancelToken()
    first = engine(content_image, [style_image], SETTINGS, tiny, cancel=token, checkpoints=store)
    stop_at(first, token, 2)
    checkpoint = store.load(first.run_id)
    with pytest.raises(StyleStudioError, match="style_weight was 3.0, now 5.0"):
        engine(content_image, [style_image], dataclasses.replace(SETTINGS, style_weight=5.0), tiny,
                      resume=checkpoint)  # fmt: skip
    with pytest.raises(StyleStudioError, match="style image 1 is not the one the run started with"):
        engine(content_image, [second_style_image], SETTINGS, tiny, resume=checkpoint)
    with pytest.raises(StyleStudioError, match="content image is not the one"):
        engine(content_image.rotate(180), [style_image], SETTINGS, tiny, resume=checkpoint)


def test_a_damaged_checkpoint_is_never_read_and_is_set_aside_with_a_line_saying_where(
    tiny, content_image, style_image, store
):
    token = CancelToken()
    first = engine(content_image, [style_image], SETTINGS, tiny, cancel=token, checkpoints=store)
    stop_at(first, token, 2)
    folder = store.folder(first.run_id)
    state = next(folder.glob("state-*.pt"))
    state.write_bytes(state.read_bytes()[: state.stat().st_size // 2])
    # Listed (reading no images), but refused when resumed.
    (listed,) = store.unfinished()
    with pytest.raises(StyleStudioError, match="damaged and cannot be resumed"):
        engine(content_image, [style_image], SETTINGS, tiny, resume=listed)
    # Read whole, it is moved aside (never deleted), and the line says where.
    told: list[str] = []
    assert store.load(first.run_id, tell=told.append) is None and not folder.exists()
    (kept,) = store.aside.iterdir()
    assert kept.name.startswith(f"{first.run_id}.unreadable-") and (kept / "run.json").is_file()
    assert len(told) == 1 and str(kept) in told[0] and "state file cannot be read" in told[0]
    # A run whose description cannot be read is set aside when the runs are listed.
    second = engine(content_image, [style_image], SETTINGS, tiny, cancel=(token := CancelToken()),
                           checkpoints=store)  # fmt: skip
    stop_at(second, token, 2)
    (store.folder(second.run_id) / "run.json").write_text("{not json")
    assert store.unfinished() == [] and not store.folder(second.run_id).exists()
    (kept,) = [p for p in store.aside.iterdir() if p.name.startswith(second.run_id)]
    assert (kept / "run.json").read_text() == "{not json"
    assert str(kept) in store.notices[0] and "could not be read" in store.notices[0]


def test_a_newer_versions_checkpoint_is_left_where_it_is(tiny, content_image, style_image, store):
    token = CancelToken()
    first = engine(content_image, [style_image], SETTINGS, tiny, cancel=token, checkpoints=store)
    stop_at(first, token, 2)
    run_json = store.folder(first.run_id) / "run.json"
    document = json.loads(run_json.read_text())
    run_json.write_text(json.dumps({**document, "version": 99}))
    assert store.unfinished() == []
    assert run_json.exists() and "newer Style Studio" in store.notices[0]
    with pytest.raises(StyleStudioError, match="newer Style Studio"):
        store.load(first.run_id)


def test_each_save_replaces_the_last_and_old_checkpoints_are_removed(tiny, content_image, style_image, store):
    token = CancelToken()
    first = engine(content_image, [style_image], SETTINGS, tiny, cancel=token, checkpoints=store)
    stop_at(first, token, 3)
    folder = store.folder(first.run_id)
    (state,) = folder.glob("state-*.pt")
    assert re.fullmatch(r"state-3-[0-9a-f]{8}\.pt", state.name)
    assert not [p for p in folder.iterdir() if p.name.endswith(".part")]
    assert [c.run_id for c in store.unfinished()] == [first.run_id]
    document = json.loads((folder / "run.json").read_text())
    document["saved_at"] = time.time() - MAX_AGE - 1
    (folder / "run.json").write_text(json.dumps(document))
    assert store.unfinished() == [] and not folder.exists()


def test_without_a_store_nothing_is_written_and_a_run_with_one_checkpoints_on_its_interval(
    tiny, content_image, style_image, tmp_path, monkeypatch
):
    monkeypatch.setenv("STYLE_STUDIO_CHECKPOINT_SECONDS", "3600")
    store = CheckpointStore(tmp_path / "hourly")
    transfer = engine(content_image, [style_image], SETTINGS, tiny, checkpoints=store)
    list(transfer.run())
    # Finished within the hour: no checkpoint (a finished run's result is its caller's to keep).
    assert store.load(transfer.run_id) is None


def test_a_checkpoint_keeps_the_image_and_the_lowest_loss_image_bit_for_bit(tiny, content_image, style_image, store):
    token = CancelToken()
    transfer = engine(content_image, [style_image], SETTINGS, tiny, cancel=token, checkpoints=store)
    stop_at(transfer, token, 2)
    checkpoint = store.load(transfer.run_id)
    assert checkpoint.image.dtype == torch.float32 and checkpoint.image.shape == (1, 3, 43, 64)
    assert torch.equal(checkpoint.lowest, transfer.standing.control.lowest.cpu())


def test_a_checkpoint_keeps_the_optimisers_curvature_scale_and_a_resumed_run_starts_from_it(
    tiny, content_image, style_image, store
):
    token = CancelToken()
    first = engine(content_image, [style_image], SETTINGS, tiny, cancel=token, checkpoints=store)
    stop_at(first, token, 4)
    checkpoint = store.load(first.run_id)
    assert checkpoint.step_scale is not None and checkpoint.step_scale > 0

    second = engine(content_image, [style_image], SETTINGS, tiny, checkpoints=store, resume=checkpoint)
    records = second.run()
    next(records)  # the first resumed step, taken from the saved scale: no pair measured yet
    state = next(iter(second.standing.optimizer.state.values()))
    assert state["dirs"] == [] and state["h_diag"].item() == pytest.approx(checkpoint.step_scale)
    assert [r.outcome for r in records if r.done] == [FINISHED]


@pytest.mark.parametrize("saved", ["much", -1.0, 0, None, True])
def test_a_checkpoint_without_a_usable_curvature_scale_resumes_from_a_new_optimisers_first_step(
    tiny, content_image, style_image, store, saved
):
    token = CancelToken()
    first = engine(content_image, [style_image], SETTINGS, tiny, cancel=token, checkpoints=store)
    stop_at(first, token, 4)
    run_json = store.folder(first.run_id) / "run.json"
    document = json.loads(run_json.read_text())
    document["step_scale"] = saved
    run_json.write_text(json.dumps(document))
    checkpoint = store.load(first.run_id)
    assert checkpoint.step_scale is None
    second = engine(content_image, [style_image], SETTINGS, tiny, checkpoints=store, resume=checkpoint)
    assert [r.outcome for r in second.run() if r.done] == [FINISHED]


def test_an_adam_run_keeps_no_curvature_scale(tiny, content_image, style_image, store):
    token = CancelToken()
    settings = dataclasses.replace(SETTINGS, optimizer="adam")
    transfer = engine(content_image, [style_image], settings, tiny, cancel=token, checkpoints=store)
    stop_at(transfer, token, 2)
    assert store.load(transfer.run_id).step_scale is None


def test_another_weights_file_at_the_same_path_is_refused_on_resume(tiny, content_image, style_image, store, tmp_path):
    weights = tmp_path / "vgg19-finetuned.pth"
    weights.write_bytes(b"the weights the run started with")
    settings = dataclasses.replace(SETTINGS, weights=str(weights))
    token = CancelToken()
    first = engine(content_image, [style_image], settings, tiny, cancel=token, checkpoints=store)
    stop_at(first, token, 2)
    checkpoint = store.load(first.run_id)
    engine(content_image, [style_image], settings, tiny, resume=checkpoint)  # the same file: accepted
    weights.write_bytes(b"other weights, copied over the same name")
    with pytest.raises(StyleStudioError, match=f"the weights file {weights} is not the one the run started with"):
        engine(content_image, [style_image], settings, tiny, resume=checkpoint)


def test_a_batch_job_key_follows_the_weights_files_contents(content_image, style_image, tmp_path):
    from style_studio.core.jobs.job import job_key

    weights = tmp_path / "vgg19-finetuned.pth"
    weights.write_bytes(b"first")
    settings = dataclasses.replace(SETTINGS, weights=str(weights))
    first = job_key(settings, content_image, [style_image])
    assert job_key(settings, content_image, [style_image]) == first
    weights.write_bytes(b"second, a different file")
    assert job_key(settings, content_image, [style_image]) != first
    # The built-in choices key as they always did (settings and pixels): outputs made before still count as done.
    former = dataclasses.replace(SETTINGS, **FORMER_FIELDS)  # before the defaults changed
    described = settings_mod.to_dict(former)
    # Settings added since, at their old values: they key as before they were added.
    for added in ("style_loss", "first_scale", "scale_ratio", "average", "tune_steps", "colour_weight"):
        del described[added]
    before = hashlib.sha256(json.dumps(described, sort_keys=True).encode())
    for picture in (content_image, style_image):
        before.update(image_hash(picture).encode())
    assert job_key(former, content_image, [style_image]) == before.hexdigest()[:32]
