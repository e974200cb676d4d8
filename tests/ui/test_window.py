"""The window as a user meets it: inputs, controls, runs, export, persistence."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest
from PIL import Image
from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
from PySide6.QtGui import QDropEvent, QGuiApplication, QImage, QKeySequence

from style_studio.core import VideoOptions
from style_studio.core import settings as settings_mod
from style_studio.core.io.imageio import read_metadata
from style_studio.core.progress import CANCELLED, FINISHED
from style_studio.ui.qt_images import pil_to_qimage
from style_studio.ui.run_bar import STEP_RESOLUTION
from tests.conftest import SAMPLES
from tests.ui.conftest import FAST


def drop(widget, mime: QMimeData) -> None:
    event = QDropEvent(
        QPointF(10, 10), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier
    )
    widget.dropEvent(event)


def files(*paths) -> QMimeData:
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(p)) for p in paths])
    return mime


def start_long_run(qtbot, window) -> None:
    """Start a run that would take minutes, and return once its first iteration is done."""
    window.controls.set_settings(dataclasses.replace(FAST, iterations=10_000))
    with qtbot.waitSignal(window.controller.progressed, timeout=30_000, check_params_cb=lambda r: r.step >= 1):
        window.commands.start.trigger()


def run_to_end(qtbot, window, timeout=60_000):
    with qtbot.waitSignal(window.controller.finished, timeout=timeout) as blocker:
        window.commands.start.trigger()
    return blocker.args[1]


# -- first start and inputs ----------------------------------------------------


def test_first_start_loads_the_samples_so_start_works_at_once(window):
    assert window.inputs.content is not None and window.inputs.content.name == "chelsea.png"
    assert [r.item.name for r in window.inputs.style_rows] == ["starry_night.jpg"]
    assert window.run_bar.start_button.isEnabled() and not window.run_bar.stop_button.isEnabled()
    assert "451 × 300 px" in window.inputs.content_zone.caption.text()


def test_dropping_files_sets_the_content_and_adds_styles(window):
    drop(window.inputs.content_zone, files(SAMPLES / "content" / "coffee.png"))
    assert window.inputs.content.name == "coffee.png"
    drop(window.inputs.style_zone, files(SAMPLES / "style" / "the_scream.jpg", SAMPLES / "style" / "brick.png"))
    assert [r.item.name for r in window.inputs.style_rows] == ["starry_night.jpg", "the_scream.jpg", "brick.png"]


def test_dropped_image_data_is_used(window):
    mime = QMimeData()
    mime.setImageData(pil_to_qimage(Image.new("RGB", (40, 30), (0, 128, 255))))
    drop(window.inputs.content_zone, mime)
    assert window.inputs.content.name == "dropped image" and window.inputs.content.image.size == (40, 30)


def test_a_bad_file_is_refused_with_a_message_and_the_old_image_stays(window, tmp_path):
    bad = tmp_path / "holiday.jpg"
    bad.write_text("not really a photo")
    drop(window.inputs.content_zone, files(bad))
    assert window.inputs.content.name == "chelsea.png"
    assert "holiday.jpg: this is a text file, not an image" in window.banner.text()
    drop(window.inputs.style_zone, files(bad))
    assert len(window.inputs.style_rows) == 1


def test_a_web_address_is_refused_with_what_to_do(window):
    mime = QMimeData()
    mime.setUrls([QUrl("https://example.com/painting.jpg")])
    drop(window.inputs.content_zone, mime)
    assert "web addresses cannot be opened directly" in window.banner.text()


@pytest.fixture
def clipboard():
    board = QGuiApplication.clipboard()
    yield board
    # The clipboard owns the QMimeData; left there, Qt deletes its Python
    # wrapper after the interpreter is gone and the process crashes at exit.
    board.clear()


def test_paste_from_the_clipboard(window, clipboard):
    mime = QMimeData()
    mime.setImageData(pil_to_qimage(Image.new("RGB", (20, 24), (255, 0, 0))))
    clipboard.setMimeData(mime)
    window.commands.paste.trigger()
    assert window.inputs.content.name == "pasted image" and window.inputs.content.image.size == (20, 24)
    window.commands.paste_style.trigger()
    assert len(window.inputs.style_rows) == 2
    assert window.commands.paste.shortcut() == QKeySequence(QKeySequence.StandardKey.Paste)


def test_removing_a_style(window):
    drop(window.inputs.style_zone, files(SAMPLES / "style" / "brick.png"))
    window.inputs.style_rows[0].remove_button.click()
    assert [r.item.name for r in window.inputs.style_rows] == ["brick.png"]
    window.inputs.style_rows[0].remove_button.click()
    assert not window.run_bar.start_button.isEnabled()


def test_keyboard_shortcuts(window):
    assert QKeySequence("Ctrl+Return") in window.commands.start.shortcuts()
    assert window.commands.stop.shortcut() == QKeySequence("Esc")
    assert window.commands.export.shortcut() == QKeySequence(QKeySequence.StandardKey.Save)


# -- controls to settings ------------------------------------------------------------


def test_layer_and_weight_sliders_map_to_settings(window):
    controls = window.controls
    controls.layer_sliders["relu3_1"].slider.setValue(50)  # 50 / 20 = 2.5
    controls.layer_sliders["relu5_1"].slider.setValue(0)
    controls.layer_sliders["conv2_2"].slider.setValue(10)
    s = window.state.settings
    assert s.style_layer_weights["relu3_1"] == 2.5
    assert "relu5_1" not in s.style_layer_weights
    assert s.style_layer_weights["conv2_2"] == 0.5
    controls.widget("style_weight").slider.setValue(1000)
    assert window.state.settings.style_weight == 1000
    controls.widget("style_weight").slider.setValue(0)
    assert window.state.settings.style_weight == 0
    controls.widget("tv_weight").spin.setValue(0.25)
    assert window.state.settings.tv_weight == 0.25
    assert controls.widget("tv_weight").slider.value() == round((math.log10(0.25) + 3) / 4 * 1000)


def test_settings_show_in_the_controls_and_come_back_unchanged(window):
    custom = dataclasses.replace(
        FAST,
        size=640,
        iterations=123,
        scales=3,
        optimizer="adam",
        init="noise",
        seed=9,
        preserve_colors=True,
        style_scale=0.7,
        pooling="avg",
        precision="fp32",
        deterministic=False,
        content_weight=2.0,
        style_weight=40.0,
        tv_weight=0.01,
        content_layers=("relu3_2",),
        style_layers=(("relu1_1", 0.5), ("relu4_1", 2.0)),
    )
    window.controls.set_settings(custom)
    assert window.state.settings == custom


def test_blend_sliders_give_style_blend(window):
    drop(window.inputs.style_zone, files(SAMPLES / "style" / "brick.png"))
    assert window.state.settings.style_blend == ()
    window.inputs.style_rows[1].blend.setValue(25)
    assert window.state.settings.style_blend == (1.0, 0.25)


def test_a_blend_the_state_takes_moves_the_sliders_and_one_for_other_styles_gives_way(window):
    """A preset, Reset or a restored picture sets the blend in the state alone; the rows show it."""
    drop(window.inputs.style_zone, files(SAMPLES / "style" / "brick.png"))
    rows = window.inputs.style_rows
    window.state.set("style_blend", (0.6, 0.3))
    assert [row.blend_weight() for row in rows] == [1.0, 0.5]
    assert window.state.settings.style_blend == (0.6, 0.3)  # the document's own, not the sliders' rescaled one
    window.state.load(dataclasses.replace(window.state.settings, style_blend=()))
    assert [row.blend_weight() for row in rows] == [1.0, 1.0]
    window.state.set("style_blend", (1.0, 0.2, 0.5))  # three weights for two styles: the rows' blend stays
    assert window.state.settings.style_blend == () and [row.blend_weight() for row in rows] == [1.0, 1.0]


# -- runs ----------------------------------------------------------------------------


def test_a_short_run_streams_previews_and_finishes(qtbot, window):
    previews = []
    window.controller.preview.connect(previews.append)
    outcome = run_to_end(qtbot, window)
    assert outcome.outcome == FINISHED and outcome.error is None
    assert previews and all(isinstance(p, QImage) and not p.isNull() for p in previews)
    assert window.state.shown.result.size == (48, 32)
    assert len(window.history.entries) == 1
    assert window.commands.export.isEnabled() and window.run_bar.start_button.isEnabled()
    assert "untrained" in window.weights_label.text()
    assert window.run_bar.progress.value() == window.run_bar.progress.maximum() == 6 * STEP_RESOLUTION
    assert window.loss_plot.series("total")


def test_stop_during_a_run_keeps_the_picture(qtbot, window):
    start_long_run(qtbot, window)
    assert window.run_bar.stop_button.isEnabled() and not window.run_bar.start_button.isEnabled()
    with qtbot.waitSignal(window.controller.finished, timeout=30_000) as blocker:
        window.run_bar.stop_button.click()
    assert blocker.args[1].outcome == CANCELLED
    assert window.state.shown.result is not None
    assert "kept" in window.run_bar.progress.format()


def test_moving_a_slider_changes_the_running_optimisation(qtbot, window):
    records = []
    window.controller.progressed.connect(records.append)
    start_long_run(qtbot, window)
    window.controls.widget("tv_weight").spin.setValue(0)
    qtbot.waitUntil(lambda: records and records[-1].tv_loss == 0, timeout=30_000)
    assert next(r for r in records if not r.start).tv_loss > 0
    with qtbot.waitSignal(window.controller.finished, timeout=30_000):
        window.commands.stop.trigger()


def test_a_weights_tick_plans_nothing_and_a_layer_turned_off_plans_again(window, monkeypatch):
    """The memory and time shown depend on the layers computed, not on their weights: a slider's tick used to plan
    the run again and redraw the needs."""
    plans = []
    monkeypatch.setattr(window.runs, "update_needs", lambda: plans.append(window.state.settings.style_layers))
    sliders = window.controls.layer_sliders
    window.controls.widget("style_weight").spin.setValue(50)
    for value in (30, 45, 60):
        sliders["relu3_1"].slider.setValue(value)
    assert plans == []
    sliders["relu3_1"].slider.setValue(0)  # off: a layer fewer to compute
    sliders["relu3_1"].slider.setValue(20)  # on again
    assert len(plans) == 2
    window.controls.widget("size").setValue(300)
    assert len(plans) == 3


def test_a_slider_sends_only_the_setting_it_changed_to_the_run(qtbot, window, monkeypatch):
    sent = []
    original = window.controller.change
    monkeypatch.setattr(window.controller, "change", lambda fields: (sent.append(dict(fields)), original(fields)))
    records = []
    window.controller.progressed.connect(records.append)
    start_long_run(qtbot, window)
    window.controls.widget("style_weight").spin.setValue(50)
    window.controls.layer_sliders["relu1_1"].slider.setValue(0)
    assert sent == [{"style_weight": 50.0}, {"style_layers": sent[1]["style_layers"]}]
    assert "relu1_1" not in dict(sent[1]["style_layers"])
    qtbot.waitUntil(lambda: records and "relu1_1" not in records[-1].style_losses, timeout=30_000)
    with qtbot.waitSignal(window.controller.finished, timeout=30_000):
        window.commands.stop.trigger()


def test_closing_the_window_during_a_run_stops_it_cleanly(qtbot, window):
    start_long_run(qtbot, window)
    window.close()
    assert not window.controller.running  # and the fixture checks no QThread is left


def test_start_while_the_last_run_is_still_stopping_runs_the_new_one(qtbot, window):
    outcomes = []
    window.controller.finished.connect(lambda _owner, outcome: outcomes.append(outcome))
    start_long_run(qtbot, window)
    window.commands.stop.trigger()
    window.controls.set_settings(FAST)
    window.commands.start.trigger()
    qtbot.waitUntil(lambda: len(outcomes) == 2, timeout=60_000)
    assert [o.outcome for o in outcomes] == [CANCELLED, FINISHED]
    assert outcomes[1].settings.iterations == 6


def test_a_run_error_is_shown_and_the_app_keeps_going(qtbot, window):
    window.controls.set_settings(dataclasses.replace(FAST, content_layers=(), style_layers=()))
    outcome = run_to_end(qtbot, window)
    assert outcome.error and "nothing to optimise" in window.banner.text()
    assert window.run_bar.start_button.isEnabled()


# -- export and settings round trip ------------------------------------------------------


def test_a_16_bit_export_writes_the_runs_own_values_for_print(qtbot, window, tmp_path):
    import numpy as np
    import tifffile

    run_to_end(qtbot, window)
    target = tmp_path / "print.tif"
    with qtbot.waitSignal(window.documents.exportFinished, timeout=30_000) as blocker:
        assert window.files.export_to(target, bit_depth=16)
    assert blocker.args == [str(target), ""]
    pixels = tifffile.imread(target)
    assert pixels.dtype == np.uint16 and pixels.shape == (32, 48, 3)
    assert np.mean(pixels % 257 != 0) > 0.9  # not 8-bit values stretched
    # The 8-bit picture shown is the same picture.
    shown = np.asarray(window.state.shown.result, dtype=np.int32)
    assert np.abs(shown - (pixels.astype(np.int32) + 128) // 257).max() <= 1
    assert settings_mod.loads(read_metadata(target)) == window.state.settings


def test_export_writes_the_image_with_settings_and_a_drop_restores_them(qtbot, window, tmp_path):
    run_to_end(qtbot, window)
    target = tmp_path / "result.png"
    with qtbot.waitSignal(window.documents.exportFinished, timeout=30_000) as blocker:
        assert window.files.export_to(target)
    assert blocker.args == [str(target), ""]
    with Image.open(target) as exported:
        assert exported.size == (48, 32)
    saved = settings_mod.loads(read_metadata(target))
    assert saved == window.state.settings
    assert json.loads(read_metadata(target))["weights_label"].startswith("untrained")
    window.controls.widget("size").setValue(300)
    drop(window, files(target))
    assert window.state.settings.size == 48
    assert "Settings restored from result.png" in window.banner.text()


def test_export_failure_is_a_message_and_nothing_is_written(qtbot, window, tmp_path):
    run_to_end(qtbot, window)
    target = tmp_path / "missing" / "result.png"
    with qtbot.waitSignal(window.documents.exportFinished, timeout=30_000) as blocker:
        window.files.export_to(target)
    assert "does not exist" in blocker.args[1] and "does not exist" in window.banner.text()
    assert not target.exists()


def test_export_before_any_result_says_so(window, tmp_path):
    assert not window.files.export_to(tmp_path / "x.png")
    assert "Nothing to export yet" in window.banner.text()


def test_history_restore_and_compare(qtbot, window):
    run_to_end(qtbot, window)
    window.controls.widget("size").setValue(64)
    run_to_end(qtbot, window)
    first, second = window.history.entries
    assert first.settings.size == 48 and second.settings.size == 64
    window.history.restoreRequested.emit(first)
    assert window.state.settings.size == 48
    window.history.compareRequested.emit(first)
    assert window.view.split_enabled()
    window.history.setCurrentRow(0)
    assert window.state.shown.result is first.result


# -- persistence and presets -----------------------------------------------------------------


def test_settings_and_inputs_persist_across_restarts(qtbot, make_window, store):
    first = make_window()
    first.controls.widget("size").setValue(777)
    drop(first.inputs.content_zone, files(SAMPLES / "content" / "coffee.png"))
    first.close()
    second = make_window(settings=None)
    assert second.state.settings.size == 777
    assert second.inputs.content.name == "coffee.png"


def test_the_video_options_a_user_set_are_kept_across_restarts(qtbot, make_window, store):
    first = make_window()
    fields = first.inputs.video_options.fields  # as a user types them
    fields["frame_iterations"].widget.setValue(55)
    fields["temporal_weight"].widget.setValue(2.5)
    fields["frame_settle"].widget.setValue(0)
    fields["frame_repair"].widget.setValue(12)
    first.close()
    second = make_window(settings=None).state.video
    assert (second.frame_iterations, second.temporal_weight, second.frame_settle, second.frame_repair) == (
        55,
        2.5,
        0,
        12,
    )


def test_a_saved_video_option_out_of_range_falls_back_to_its_default_alone(qtbot, make_window, store):
    store.qs.setValue("video/options", '{"frame_iterations": -4, "temporal_weight": "x", "frame_repair": 3}')
    shown = make_window(settings=None).state.video
    defaults = VideoOptions()
    assert (shown.frame_iterations, shown.temporal_weight, shown.frame_repair) == (
        defaults.frame_iterations,
        defaults.temporal_weight,
        3,
    )


def test_reset_restores_the_defaults_but_keeps_the_weights_choice(window):
    window.controls.widget("size").setValue(999)
    window.commands.reset.trigger()
    s = window.state.settings
    assert dataclasses.replace(s, weights="imagenet") == settings_mod.DEFAULTS
    assert s.weights == "untrained"


def test_presets_save_and_load(window, tmp_path):
    window.controls.widget("iterations").setValue(77)
    assert window.files.save_preset(tmp_path / "mine.json")
    window.controls.widget("iterations").setValue(5)
    assert window.files.load_preset(tmp_path / "mine.json")
    assert window.state.settings.iterations == 77


@pytest.mark.parametrize(
    "text, message",
    [
        ("{broken", "not valid JSON"),
        ('{"format": "style-studio", "version": 7, "settings": {}}', "newer Style Studio"),
        (
            '{"format": "style-studio", "version": 1, "settings": {"style_layers": {"relu9_1": 1}, "size": 300}}',
            "unknown style layer 'relu9_1'",
        ),
        (
            '{"format": "style-studio", "version": 1, "settings": {"tv_weight": -3, "size": 300}}',
            "tv_weight must be a number from 0 to 1000000",
        ),
        (
            '{"format": "style-studio", "version": 1, "settings": {"style_weight": "lots", "size": 300}}',
            "style_weight must be a number",
        ),
    ],
)
def test_a_bad_preset_is_refused_and_nothing_is_applied(window, tmp_path, text, message):
    before = window.state.settings
    path = tmp_path / "bad.json"
    path.write_text(text)
    assert not window.files.load_preset(path)
    assert message in window.banner.text()
    assert window.state.settings == before


def test_stale_qsettings_are_ignored_at_start(qtbot, make_window, store, tmp_path):
    doc = json.loads(settings_mod.dumps(settings_mod.DEFAULTS))
    doc["settings"]["style_layers"] = {"relu1_1": 2.0, "relu9_9": 1.0}
    doc["settings"]["size"] = 640
    store.qs.setValue("run/settings", json.dumps(doc))
    store.qs.setValue("inputs/content", str(tmp_path / "gone.png"))
    store.qs.setValue("inputs/styles", [str(tmp_path / "gone-too.png")])
    store.qs.setValue("weights/file", 12345)
    store.qs.setValue("window/geometry", "not bytes")
    window = make_window(settings=None)
    s = window.state.settings
    assert s.size == 640 and s.style_layer_weights == {"relu1_1": 2.0}
    assert window.inputs.content.name == "chelsea.png"


def test_a_garbage_settings_value_gives_the_defaults(qtbot, make_window, store):
    store.qs.setValue("run/settings", "{{{{")
    window = make_window(settings=None)
    assert window.state.settings == settings_mod.DEFAULTS


def test_a_new_photo_is_shown_at_once_and_the_last_result_stays_in_the_history(qtbot, window):
    # The picture area kept showing the result made from the old photo.
    run_to_end(qtbot, window)
    assert window.state.shown.result is not None
    drop(window.inputs.content_zone, files(SAMPLES / "content" / "coffee.png"))
    coffee = Image.open(SAMPLES / "content" / "coffee.png")
    assert (window.view._image.width(), window.view._image.height()) == coffee.size
    assert window.state.shown is None and not window.commands.export.isEnabled()
    assert len(window.history.entries) == 1
    window.history.itemClicked.emit(window.history.item(0))  # a click on the (still selected) entry
    assert window.state.shown.result is window.history.entries[0].result and window.commands.export.isEnabled()


@pytest.mark.parametrize("from_samples", [True, False])
def test_export_suggests_the_pictures_folder_for_a_sample_and_the_photos_folder_otherwise(
    qtbot, window, tmp_path, monkeypatch, from_samples
):
    # A bundled sample lives in the app's own folder, read-only once installed.
    from style_studio.ui import documents

    if not from_samples:
        photo = tmp_path / "holiday.png"
        Image.open(SAMPLES / "content" / "chelsea.png").save(photo)
        drop(window.inputs.content_zone, files(photo))
    run_to_end(qtbot, window)
    asked = []
    monkeypatch.setattr(
        documents.QFileDialog,
        "getSaveFileName",
        lambda _p, _t, start, *_, **__: asked.append(start) or ("", ""),
    )
    window.commands.export.trigger()
    expected = documents.pictures_folder() / "chelsea-styled.png" if from_samples else tmp_path / "holiday-styled.png"
    assert asked == [str(expected)]


def test_a_tiled_run_moves_the_bar_tile_by_tile_and_plots_whole_iterations(qtbot, window):
    window.controls.set_settings(dataclasses.replace(FAST, size=300, iterations=2, tile=160))
    bar_values, formats = [], []
    window.controller.progressed.connect(
        lambda record: (
            bar_values.append(window.run_bar.progress.value()),
            formats.append(window.run_bar.progress.format()),
        )
    )
    outcome = run_to_end(qtbot, window)
    assert outcome.outcome == FINISHED
    # The start picture at 0, then 4 tiles visited twice per iteration: the bar moves in eighths of an iteration.
    assert bar_values[:9] == [round(k / 8 * STEP_RESOLUTION) for k in range(0, 9)]
    assert "part 3/8" in formats[3]
    assert len(window.loss_plot.series("total")) == 2


def test_the_schedule_a_large_picture_gets_is_shown_and_can_be_overridden(window):
    controls = window.controls
    controls.widget("size").setValue(4096)
    controls.widget("iterations").setValue(300)
    assert controls.widget("scales").text() == "Auto"
    assert controls.schedule.text() == "256 → 512 → 1024 → 2048 → 4096 px · 300 + 150 + 75 + 38 + 19 iterations"
    controls.widget("finer_iterations").setValue(100)
    assert controls.schedule.text() == "256 → 512 → 1024 → 2048 → 4096 px · 300 + 300 + 300 + 300 + 300 iterations"
    controls.widget("first_scale").setValue(0)
    assert controls.schedule.text() == "1024 → 2048 → 4096 px · 300 + 300 + 300 iterations"
    controls.widget("scales").setValue(1)
    assert controls.schedule.text() == "4096 px · 300 iterations"
    controls.widget("tile").setValue(512)
    settings = window.state.settings
    assert (settings.scales, settings.finer_iterations, settings.tile) == (1, 1.0, 512)


def test_a_result_outlives_the_window_until_it_is_exported_or_removed(qtbot, make_window, tmp_path):
    first = make_window()
    with qtbot.waitSignal(first.controller.finished, timeout=60_000):
        first.commands.start.trigger()
    made = first.history.entries[0]
    first.close()

    second = make_window(settings=None)  # after a close (or a crash): the result is still there
    (kept,) = second.history.entries
    assert kept.settings == made.settings and kept.outcome == made.outcome
    assert np.array_equal(np.asarray(kept.result), np.asarray(made.result))
    with qtbot.waitSignal(second.documents.exportFinished, timeout=30_000):
        second.files.export_to(tmp_path / "exported.png", entry=kept)
    second.close()
    assert make_window(settings=None).history.entries == []  # exported: let go


def test_a_result_removed_from_the_history_is_let_go(qtbot, make_window):
    first = make_window()
    with qtbot.waitSignal(first.controller.finished, timeout=60_000):
        first.commands.start.trigger()
    first.kept.wait()
    first.history.removeRequested.emit(first.history.entries[0])
    assert first.history.entries == [] and first.history.count() == 0
    first.close()
    assert make_window(settings=None).history.entries == []


def test_the_progress_text_fits_its_bar_with_the_side_panels_open(qtbot, window):
    window.resize(1360, 860)
    window.regions_dock.show()
    window.show()
    qtbot.waitExposed(window)
    window.controls.set_settings(dataclasses.replace(FAST, size=512, iterations=400))
    seen = []
    window.controller.progressed.connect(lambda record: seen.append(record))
    window.commands.start.trigger()
    qtbot.waitUntil(lambda: any(r.step >= 12 for r in seen), timeout=30_000)
    bar = window.run_bar.progress
    text = bar.text()
    assert "iteration" in text
    assert bar.fontMetrics().horizontalAdvance(text) < bar.contentsRect().width()  # one line, not cut
    with qtbot.waitSignal(window.controller.finished, timeout=30_000):
        window.commands.stop.trigger()


# -- the plan announced before Start ------------------------------------------------------


def run_plan_of(qtbot, window):
    """Run to the end; the plan the run itself followed."""
    plans = []
    window.controller.planned.connect(plans.append)
    run_to_end(qtbot, window)
    assert len(plans) == 1
    return plans[0]


def test_the_plan_the_window_announces_is_the_plan_the_run_follows(qtbot, window):
    # Three scales, the last tiled: every part of the plan has something to say.
    settings = dataclasses.replace(FAST, size=320, scales=3, tile=128, device="cpu", precision="fp32")
    window.controls.set_settings(settings)
    announced = window.runs.announced_plan()
    assert "in tiles of 128 px" in window.controls.needs.text()
    ran = run_plan_of(qtbot, window)
    assert ran.scales == announced.scales
    assert (ran.target.device_type, ran.target.precision) == ("cpu", "fp32") == (
        announced.target.device_type, announced.target.precision
    )  # fmt: skip
    assert [s.tile for s in ran.scales] == [None, 128, 128] and len(ran.sizes) == 3


def test_after_a_run_the_window_plans_for_the_precision_auto_chose(qtbot, window):
    window.controls.set_settings(dataclasses.replace(FAST, precision="auto"))
    assert window.runs.announced_plan().target.precision == "fp32"  # before any run: the most memory it can need
    ran = run_plan_of(qtbot, window)
    assert window.runs.announced_plan().target.precision == ran.target.precision  # bf16 on a CPU that has it
    assert window.runs.announced_plan().scales == ran.scales


def _another_value(name: str, about, value):
    """A valid value of setting ``name`` other than ``value``, as a user could set it in its control."""
    if isinstance(value, bool):
        return not value
    if name == "content_layers":
        return ("relu3_1",)
    if about.choices or about.offers:
        values = about.choices or about.offers
        return values[(values.index(value) + 1) % len(values)] if value in values else values[0]
    if about.slider is not None:
        return value * 2
    if isinstance(value, int) and about.high is not None and about.high > 2**31:
        return 2**40  # beyond a spin box's range: the seed
    step = about.step / 100 if about.percent else about.step
    if value == 0 and about.zero is not None:
        return type(value)(about.low)
    return value - step if about.high is not None and value + step > about.high else value + step


def test_every_setting_a_user_changes_is_kept_across_restarts(qtbot, make_window):
    """Walks the whole form: each control moved to another value, the window closed and opened again."""
    from style_studio.ui.settings_form import WholeNumberEdit, in_form
    from style_studio.ui.widgets import LogSlider

    first = make_window()
    wanted = {}
    for name, (about, _) in in_form(settings_mod.Settings).items():
        control = first.controls.fields[name]
        if name == "style_layers":
            first.controls.layer_sliders["relu2_1"].slider.setValue(50)  # 2.5, as a user drags it
            wanted[name] = first.state.settings.style_layers
            continue
        value = _another_value(name, about, getattr(first.state.settings, name))
        if isinstance(control.widget, LogSlider):
            control.widget.spin.setValue(value)  # typed beside the slider
        elif isinstance(control.widget, WholeNumberEdit):
            control.widget.clear()
            qtbot.keyClicks(control.widget, str(value))
        else:
            control.show(value)  # a check box, choice or spin box set: its change signal writes it, as a user's does
        wanted[name] = value
    first.controls.print_dpi.setValue(300)
    first.controls.more.expand(animate=False)
    first.controls.more_layers.expand(animate=False)
    assert {name: getattr(first.state.settings, name) for name in wanted} == wanted  # each control wrote its own
    first.close()
    second = make_window(settings=None)
    assert {name: getattr(second.state.settings, name) for name in wanted} == wanted
    assert second.state.print_dpi == 300
    assert second.controls.more.isExpanded() and second.controls.more_layers.isExpanded()
