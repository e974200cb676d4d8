"""Jobs files and queue.json written by hand, by another version or by an attacker: any value of any type gives
a clean error or a valid job, never a traceback; no name read from them leads outside its folder."""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from style_studio.core.jobs.batch import JOB_KEYS, VIDEO_KEYS, BatchError, check_jobs, jobs_from_file
from style_studio.core.jobs.render_queue import RenderQueue
from style_studio.core.settings import DEFAULTS
from tests.cli.test_cli import run_cli

ANY = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8) | st.just("a\0b"),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)
GOOD = {"content": "clip.mp4", "styles": ["style.png"]}


def entries() -> st.SearchStrategy[dict[str, object]]:
    """A jobs-file entry: good keys with any values, a video table with any values, now and then an unknown key."""
    video = st.dictionaries(st.sampled_from([*sorted(VIDEO_KEYS), "speed"]), ANY, max_size=4)
    fields = st.dictionaries(st.sampled_from(sorted(JOB_KEYS)), ANY, max_size=4)
    return st.builds(lambda base, extra, table: {**base, **extra, "video": table}, st.just(GOOD), fields, video)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(entry=entries(), as_toml=st.booleans())
def test_any_jobs_file_entry_gives_jobs_or_a_clean_batch_error(entry: dict[str, object], as_toml: bool) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "jobs.json"
        path.write_text(json.dumps({"jobs": [entry]}, allow_nan=True))
        try:
            jobs = jobs_from_file(path, Path(folder) / "out", DEFAULTS)
            check_jobs(jobs, Path(folder) / "out")
        except BatchError as error:
            assert str(error) and "Traceback" not in str(error)


@pytest.mark.parametrize(
    ("video", "message"),
    [
        ('{ frame_iterations = "abc" }', "frame_iterations must be a whole number"),
        ('{ start = "2" }', "start must be a number of seconds >= 0, got '2'"),
        ("{ frame_iterations = 1.5 }", "frame_iterations must be a whole number"),
        ("{ start = nan }", "start must be a number of seconds >= 0, got nan"),
        ("{ duration = inf }", "duration must be a number of seconds > 0 or null, got inf"),
        ("{ flow = 3 }", "flow must be one of"),
    ],
)
def test_a_video_table_of_the_wrong_type_says_what_is_wrong(tmp_path: Path, video: str, message: str) -> None:
    jobs = tmp_path / "jobs.toml"
    jobs.write_text(f'[[jobs]]\ncontent = "clip.mp4"\nstyle = "style.png"\nvideo = {video}\n')
    code, _, err = run_cli("batch", "--jobs", str(jobs), "-o", str(tmp_path / "out"))
    assert code == 2 and message in err and "Traceback" not in err, err


def test_json_infinity_and_a_nul_in_a_path_are_refused(tmp_path: Path) -> None:
    jobs = tmp_path / "jobs.json"
    entries = [
        {"content": "clip.mp4", "styles": ["style.png"], "video": {"start": math.inf}},
        {"content": "cat\u0000.png", "styles": ["style.png"]},
        {"content": "cat.png", "styles": ["style.png"], "regions": "mask\u0000.png", "region": ["red=1"]},
    ]
    jobs.write_text(json.dumps({"jobs": entries}))
    code, _, err = run_cli("batch", "--jobs", str(jobs), "-o", str(tmp_path / "out"))
    assert code == 2 and "Traceback" not in err, err
    assert "start must be a number of seconds >= 0, got inf" in err and err.count("NUL") == 2


def queue_document(item: dict[str, object]) -> str:
    return json.dumps({"format": "style-studio-queue", "version": 1, "items": [item]}, allow_nan=True)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    fields=st.dictionaries(
        st.sampled_from(["id", "content", "styles", "settings", "output", "regions", "video", "state"]), ANY
    ),
    video=st.dictionaries(st.sampled_from([*sorted(VIDEO_KEYS), "speed"]), ANY, max_size=4),
)
def test_any_queued_item_is_loaded_or_set_aside_never_a_traceback(
    fields: dict[str, object], video: dict[str, object]
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        item = {"id": "a1", "content": "a.png", "styles": ["b.png"], "settings": {}, "output": "c.png",
                "video": video, **fields}  # fmt: skip
        (Path(folder) / "queue.json").write_text(queue_document(item))
        queue = RenderQueue(Path(folder))
        try:
            assert len(queue) == 1 or any("could not be read" in n for n in queue.notices)
            for queued in queue:
                assert queued.job.video is None or queued.job.video.problems() == []
        finally:
            queue.close()


@pytest.mark.parametrize(
    "change",
    [
        {"video": {"frame_iterations": -5}},
        {"video": {"start": "2"}},
        {"id": "../../outside"},
        {"output": "{folder}/a.png"},  # the output is the job's own photo
        {"content": "a\u0000.png"},
    ],
    ids=["iterations", "start-type", "id-path", "output-is-input", "nul"],
)
def test_a_hostile_queued_item_is_set_aside_with_the_file_kept(tmp_path: Path, change: dict[str, object]) -> None:
    item = {"id": "a1", "content": str(tmp_path / "a.png"), "styles": [str(tmp_path / "b.png")], "settings": {},
            "output": str(tmp_path / "c.png"), "state": "waiting"}  # fmt: skip
    item.update({k: v.format(folder=tmp_path) if isinstance(v, str) else v for k, v in change.items()})
    data = tmp_path / "data"
    data.mkdir()
    (data / "queue.json").write_text(queue_document(item))
    queue = RenderQueue(data)
    try:
        assert len(queue) == 0 and "1 queued job(s) could not be read" in queue.notices[0]
    finally:
        queue.close()
    (kept,) = data.glob("queue.json.unreadable-*")
    assert json.loads(kept.read_text())["items"][0]["content"] == item["content"]
