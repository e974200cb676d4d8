"""The render queue's file: kept across restarts, a cut-off job waiting again, a damaged file ignored."""

from __future__ import annotations

import json
from pathlib import Path

from style_studio.core.jobs.job import Job
from style_studio.core.jobs.render_queue import QueueItem, QueueState, RenderQueue, item_for, new_id
from style_studio.core.progress import FINISHED, Failed
from style_studio.core.settings import Settings


def test_the_queue_comes_back_after_a_restart_in_its_order(tmp_path):
    queue = RenderQueue(tmp_path)
    first = item_for(Path("a.png"), [Path("s.jpg")], Settings(size=64), tmp_path / "out", queue)
    queue.add([first])
    second = item_for(Path("a.png"), [Path("s.jpg")], Settings(size=96), tmp_path / "out", queue)
    queue.add(
        [
            second,
            QueueItem(Job(new_id(), Path("b.png"), (Path("s.jpg"), Path("t.jpg")), Settings(), tmp_path / "b.png")),
        ]
    )
    assert second.job.output.name == "a-s-2.png"  # the first job has a-s.png
    queue.set_state(first.id, QueueState.RUNNING)
    queue.move(second.id, 1)
    again = RenderQueue(tmp_path)
    assert [i.id for i in again] == [first.id, queue.items[1].id, second.id]
    assert again.get(first.id).word == "waiting"  # it was cut off: it goes again
    assert again.get(second.id).job.settings.size == 96
    assert again.next_waiting().id == first.id
    again.paused = True
    assert again.next_waiting() is None


def test_a_damaged_queue_file_is_set_aside_not_lost(tmp_path):
    (tmp_path / "queue.json").write_text("{not json")
    queue = RenderQueue(tmp_path)
    assert len(queue) == 0 and not (tmp_path / "queue.json").exists()
    (kept,) = tmp_path.glob("queue.json.unreadable-*")
    assert kept.read_text() == "{not json" and str(kept) in queue.notices[0]
    queue.add([QueueItem(Job(new_id(), Path("a.png"), (Path("s.jpg"),), Settings(size=64), Path("o.png")))])
    assert kept.read_text() == "{not json"  # a later save writes a new queue.json beside it


def test_jobs_that_cannot_be_read_are_kept_aside_and_the_rest_runs(tmp_path):
    text = (
        '{"format": "style-studio-queue", "version": 1, "items": [{"content": "a.png"}, '
        '{"content": "b.png", "styles": ["s.jpg"], "settings": {"size": 64, "a_setting_from_later": 1}, '
        '"output": "b-out.png"}, '
        '{"content": "a.png", "styles": ["s.jpg"], "settings": {"size": 64}, "output": "o.png", "state": "done"}]}'
    )
    (tmp_path / "queue.json").write_text(text)
    queue = RenderQueue(tmp_path)
    (item,) = queue.items
    assert item.word == "done" and item.job.settings.size == 64
    (kept,) = tmp_path.glob("queue.json.unreadable-*")
    assert kept.read_text() == text and "2 queued job(s) could not be read" in queue.notices[0]
    assert [i.id for i in RenderQueue(tmp_path)] == [item.id]  # the readable rest was saved


def test_a_newer_versions_queue_is_never_overwritten(tmp_path):
    text = '{"format": "style-studio-queue", "version": 7, "items": []}'
    (tmp_path / "queue.json").write_text(text)
    queue = RenderQueue(tmp_path)
    assert "newer Style Studio" in queue.notices[0]
    queue.add([QueueItem(Job(new_id(), Path("a.png"), (Path("s.jpg"),), Settings(size=64), Path("o.png")))])
    (kept,) = tmp_path.glob("queue.json.unreadable-*")
    assert kept.read_text() == text


def test_a_job_s_state_is_typed_and_kept_in_queue_json_as_its_word(tmp_path):
    """An ended job's state is its outcome in memory and the same words in the file; one this version does not know
    waits again rather than being lost."""
    queue = RenderQueue(tmp_path)
    items = [item_for(Path("a.png"), [Path("s.jpg")], Settings(size=64), tmp_path / "out", queue) for _ in range(3)]
    queue.add(items)
    queue.set_state(items[0].id, FINISHED, "out/a-s.png")
    queue.set_state(items[1].id, Failed("the photo is gone"))
    document = json.loads((tmp_path / "queue.json").read_text())
    assert [job["state"] for job in document["items"]] == ["done", "failed", "waiting"]
    document["items"][2]["state"] = "paused-by-a-newer-version"
    (tmp_path / "queue.json").write_text(json.dumps(document))
    again = RenderQueue(tmp_path)
    assert [item.state for item in again] == [FINISHED, Failed("the photo is gone"), QueueState.WAITING]
    assert [item.reason for item in again] == ["out/a-s.png", "the photo is gone", ""]
    assert [job["reason"] for job in document["items"]] == ["out/a-s.png", "the photo is gone", ""]
