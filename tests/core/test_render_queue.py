"""The render queue's file: kept across restarts, a cut-off job waiting again, a damaged file ignored."""

from __future__ import annotations

from pathlib import Path

from style_studio.core.render_queue import QueueItem, RenderQueue, item_for
from style_studio.core.settings import Settings


def test_the_queue_comes_back_after_a_restart_in_its_order(tmp_path):
    queue = RenderQueue(tmp_path)
    first = item_for(Path("a.png"), [Path("s.jpg")], Settings(size=64), tmp_path / "out", queue)
    queue.add([first])
    second = item_for(Path("a.png"), [Path("s.jpg")], Settings(size=96), tmp_path / "out", queue)
    queue.add([second, QueueItem(Path("b.png"), (Path("s.jpg"), Path("t.jpg")), Settings(), tmp_path / "b.png")])
    assert second.output.name == "a-s-2.png"  # the first job has a-s.png
    queue.set_state(first.id, "running")
    queue.move(second.id, 1)
    again = RenderQueue(tmp_path)
    assert [i.id for i in again] == [first.id, queue.items[1].id, second.id]
    assert again.get(first.id).state == "waiting"  # it was cut off: it goes again
    assert again.get(second.id).settings.size == 96
    assert again.next_waiting().id == first.id
    again.paused = True
    assert again.next_waiting() is None


def test_a_damaged_queue_file_is_ignored_not_a_crash(tmp_path):
    (tmp_path / "queue.json").write_text("{not json")
    assert len(RenderQueue(tmp_path)) == 0
    (tmp_path / "queue.json").write_text(
        '{"format": "style-studio-queue", "version": 1, "items": [{"content": "a.png"}, '
        '{"content": "a.png", "styles": ["s.jpg"], "settings": {"size": 64}, "output": "o.png", "state": "done"}]}'
    )
    (item,) = RenderQueue(tmp_path).items  # the one without styles or settings is dropped
    assert item.state == "done" and item.settings.size == 64
