"""The time left that a run reports (``Progress.eta``)."""

import dataclasses

import pytest

from style_studio.core.progress import TimeLeft


def test_no_time_left_is_given_before_a_pace_is_measured():
    time_left = TimeLeft(total_work=10)
    assert time_left(now=100.0, scale=0, work_done=1) is None  # the set-up before it is not work
    assert time_left(now=102.0, scale=0, work_done=2) == pytest.approx(16.0)  # 8 left at 1 per 2 s


def test_a_slower_last_scale_is_timed_at_its_own_pace_not_the_runs_average():
    # Scale 0: 10 units at 1 per second. Scale 1: 40 units at 1 per 4 seconds
    # (a print-size scale in tiles). The run's average pace since its first record
    # (13 units in 30 s) would call the 36 units left after 4 done at scale 1
    # about 83 s; they take 144 s.
    time_left = TimeLeft(total_work=50)
    now = 0.0
    for done in range(1, 11):
        now += 1.0
        time_left(now, 0, done)
    now += 5.0  # the second scale's set-up: style targets at print size
    estimates = []
    for done in range(11, 15):
        now += 4.0
        estimates.append(time_left(now, 1, done))
    # Its first record carries the set-up and measures nothing: the first scale's pace stands.
    assert estimates[0] == pytest.approx(39.0)
    assert estimates[-1] == pytest.approx(36 * 4.0)


def test_the_time_left_never_goes_below_zero():
    time_left = TimeLeft(total_work=2)
    time_left(1.0, 0, 1)
    assert time_left(2.0, 0, 3) == 0.0


def test_an_outcome_is_typed_and_reads_as_the_word_kept_files_and_json_hold():
    from style_studio.core.progress import CANCELLED, FINISHED, Failed, read_outcome

    assert (FINISHED.word, CANCELLED.word, Failed("out of memory").word) == ("finished", "cancelled", "failed")
    assert read_outcome("finished") == FINISHED and isinstance(read_outcome("failed"), Failed)
    # A kept document from elsewhere naming a reason we do not know, or none, counts as stopped early.
    assert read_outcome("diverged") == CANCELLED and read_outcome(None) == CANCELLED


def test_a_record_says_its_outcome_by_the_word_scripts_parse():
    from style_studio.core.progress import CANCELLED, FINISHED, Progress

    record = Progress(1, 1, 1, 1, 1, 1, 8, 8, 1.0, {}, {}, 0.0, 0.1, 0.0, "untrained", "cpu", done=True)
    assert dataclasses.replace(record, outcome=FINISHED).to_json()["stop_reason"] == "finished"
    assert dataclasses.replace(record, outcome=CANCELLED).to_json()["stop_reason"] == "cancelled"
    assert record.to_json()["stop_reason"] is None
