"""The window's render queue: add, apply to a folder, reorder, pause, cancel, and a restart in between."""

from __future__ import annotations

import dataclasses
import shutil

from PIL import Image

from style_studio.core import settings as settings_mod
from style_studio.core.io.imageio import read_metadata
from style_studio.core.jobs.render_queue import RenderQueue
from style_studio.core.objective.regions import from_document
from style_studio.core.run.checkpoints import CheckpointStore
from tests.conftest import SAMPLES
from tests.ui.conftest import FAST


def wait_for_queue(qtbot, window, timeout=60_000) -> None:
    qtbot.waitUntil(lambda: not window.queue.busy and window.queue.queue.next_waiting() is None, timeout=timeout)


def test_add_to_queue_renders_and_writes_the_picture_with_its_settings(qtbot, window, tmp_path):
    assert window.intake.add(tmp_path / "out")
    item = window.queue.queue.items[0]
    assert item.job.output == tmp_path / "out" / "chelsea-starry_night.png"
    wait_for_queue(qtbot, window)
    assert item.word == "done", item.reason
    with Image.open(item.job.output) as made:
        assert made.size == (48, 32)
    assert settings_mod.loads(read_metadata(item.job.output)) == window.state.settings
    assert not window.queue_panel.list.item(0).icon().isNull()  # the thumbnail
    assert "1 done" in window.queue_panel.status.text()
    assert window.history.count() == 0  # a queued picture goes to its file, not to the history


def test_a_queued_job_keeps_the_regions_painted_when_it_was_added(qtbot, window, tmp_path):
    window.regions.add_region()
    window.regions.fill(0)
    window.intake.add(tmp_path)
    window.regions.set_photo(451, 300)  # painting on goes on without changing the queued job
    wait_for_queue(qtbot, window)
    regions = from_document(read_metadata(window.queue.queue.items[0].job.output))
    assert regions is not None and len(regions) == 1


def test_apply_to_folder_queues_every_picture_and_the_window_stays_usable(qtbot, window, tmp_path):
    photos = tmp_path / "photos"
    photos.mkdir()
    for name in ("chelsea.png", "coffee.png", "rocket.jpg"):
        shutil.copy(SAMPLES / "content" / name, photos / name)
    (photos / "notes.txt").write_text("not a picture")
    assert window.intake.apply_to_folder(photos, tmp_path / "out") == 3
    # While the queue renders, the user goes on editing.
    window.controls.set_settings(dataclasses.replace(FAST, style_weight=7.0))
    assert window.state.settings.style_weight == 7.0
    window.regions.add_region()
    wait_for_queue(qtbot, window, timeout=120_000)
    made = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert made == ["chelsea-starry_night.png", "coffee-starry_night.png", "rocket-starry_night.png"]
    # The settings at the time of queueing, not the ones edited afterwards.
    assert settings_mod.loads(read_metadata(tmp_path / "out" / made[0])).style_weight == FAST.style_weight


def test_start_while_the_queue_renders_asks_to_pause_it(qtbot, window, tmp_path):
    window.controls.set_settings(dataclasses.replace(FAST, iterations=5_000))
    window.intake.add(tmp_path)
    qtbot.waitUntil(lambda: window.queue.current is not None and window.controller.running, timeout=10_000)
    window.runs.start()  # the run bar's Start is off then: the helper still says why
    assert "pause it" in window.banner.text()
    # Esc pauses the queue: the job goes back to waiting, and the user's own runs can start.
    window.commands.stop.trigger()
    qtbot.waitUntil(lambda: not window.queue.busy and not window.controller.running, timeout=30_000)
    assert window.queue.queue.paused and window.queue.queue.items[0].word == "waiting"
    assert window.queue_panel.pause.isChecked()


def test_reorder_remove_and_cancel_jobs(qtbot, window, tmp_path):
    window.queue.queue.paused = True
    for n in range(3):
        window.controls.set_settings(dataclasses.replace(FAST, seed=n))
        window.intake.add(tmp_path)
    ids = [i.id for i in window.queue.queue]
    window.queue.move(ids[2], -2)
    assert [i.id for i in window.queue.queue] == [ids[2], ids[0], ids[1]]
    window.queue.remove(ids[0])
    window.queue.cancel(ids[1])
    assert [(i.id, i.word) for i in window.queue.queue] == [(ids[2], "waiting"), (ids[1], "cancelled")]
    window.queue_panel.pause.setChecked(False)  # go on
    wait_for_queue(qtbot, window)
    assert [i.word for i in window.queue.queue] == ["done", "cancelled"]
    window.queue.retry(ids[1])
    wait_for_queue(qtbot, window)
    assert [i.word for i in window.queue.queue] == ["done", "done"]


def test_the_queue_survives_a_restart_and_a_job_cut_off_goes_again(qtbot, make_window, tmp_path):
    first = make_window(dataclasses.replace(FAST, iterations=5_000))
    first.intake.add(tmp_path)
    qtbot.waitUntil(lambda: first.queue.current is not None and first.controller.running, timeout=10_000)
    first.close()  # the app quits during the job
    second = make_window()
    (item,) = second.queue.queue.items
    assert item.word == "waiting"
    assert item.job.settings.iterations == 5_000 and item.job.output.parent == tmp_path
    second.queue.cancel(item.id)  # not 5000 iterations in a test
    qtbot.waitUntil(lambda: not second.queue.busy, timeout=30_000)
    assert second.queue.queue.items[0].word == "cancelled"


def test_a_job_whose_photo_is_gone_fails_with_why_and_the_next_one_runs(qtbot, window, tmp_path):
    photo = tmp_path / "photo.png"
    shutil.copy(SAMPLES / "content" / "coffee.png", photo)
    window.queue.queue.paused = True
    window.intake.add(tmp_path / "out")
    first = window.queue.queue.items[0]
    first.job = dataclasses.replace(first.job, content=photo)
    window.intake.add(tmp_path / "out")
    photo.unlink()
    window.queue_panel.pause.setChecked(False)
    wait_for_queue(qtbot, window)
    states = [(i.word, i.reason) for i in window.queue.queue]
    assert states[0][0] == "failed" and "photo.png" in states[0][1]
    assert states[1][0] == "done"


def test_the_window_says_where_an_unreadable_queue_was_kept(make_window, tmp_path):
    data = tmp_path / "data"
    data.mkdir(exist_ok=True)
    (data / "queue.json").write_text('{"format": "style-studio-queue", "version": 7, "items": []}')
    window = make_window()
    assert "newer Style Studio" in window.banner.text() and "queue.json.unreadable-" in window.banner.text()


def test_a_paused_queue_job_goes_on_where_it_stood_and_is_not_offered_as_the_users(qtbot, make_window, tmp_path):
    window = make_window(settings=dataclasses.replace(FAST, size=64, iterations=40))
    steps = []
    window.controller.progressed.connect(lambda record: steps.append(record.step))
    assert window.intake.add(tmp_path / "out")
    item = window.queue.queue.items[0]
    qtbot.waitUntil(lambda: len(steps) >= 5, timeout=30_000)
    with qtbot.waitSignal(window.controller.finished, timeout=30_000):
        window.queue.set_paused(True)
    assert item.word == "waiting"
    stood = CheckpointStore().load(item.run_id).position.step
    assert stood >= 5
    assert "unfinished run" not in make_window().banner.text()  # the queue's, not the user's to resume

    steps.clear()
    window.queue.set_paused(False)
    wait_for_queue(qtbot, window)
    assert item.word == "done", item.reason
    assert min(s for s in steps if s > 0) == stood + 1 and max(steps) == 40
    assert CheckpointStore().load(item.run_id) is None  # written: nothing left to go on from


def test_a_queue_job_cut_off_by_closing_the_window_goes_on_at_the_next_start(qtbot, make_window, tmp_path):
    first = make_window(settings=dataclasses.replace(FAST, size=64, iterations=40))
    steps = []
    first.controller.progressed.connect(lambda record: steps.append(record.step))
    first.intake.add(tmp_path / "out")
    qtbot.waitUntil(lambda: len(steps) >= 5, timeout=30_000)
    first.close()
    (item,) = RenderQueue().items
    stood = CheckpointStore().load(item.run_id).position.step

    second = make_window(settings=None)
    resumed = []
    second.controller.progressed.connect(lambda record: resumed.append(record.step))
    second.queue.start_next()
    wait_for_queue(qtbot, second)
    assert second.queue.queue.get(item.id).word == "done"
    assert min(s for s in resumed if s > 0) == stood + 1


def test_a_queued_picture_already_made_by_the_same_job_is_not_rendered_again(qtbot, window, tmp_path):
    window.intake.add(tmp_path)
    wait_for_queue(qtbot, window)
    item = window.queue.queue.items[0]
    made = item.job.output.stat().st_mtime_ns
    started = []
    window.controller.started.connect(started.append)
    window.queue.retry(item.id)  # the same job again: its output already carries its key
    wait_for_queue(qtbot, window)
    assert item.word == "done" and "already made" in item.reason
    assert started == [] and item.job.output.stat().st_mtime_ns == made
