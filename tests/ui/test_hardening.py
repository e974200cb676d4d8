"""Things going wrong in the window: nothing lost, nothing frozen, always a message."""

from __future__ import annotations

import dataclasses
import errno
import gc
import json

import pytest
import torch
from PIL import Image
from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
from PySide6.QtGui import QDropEvent

from style_studio.core import settings as settings_mod
from style_studio.core.io import files
from style_studio.core.io.imageio import save_image
from style_studio.core.network.device import resolve
from style_studio.core.progress import FINISHED
from style_studio.core.run import memory
from style_studio.core.run.compute import shared_network
from tests.ui.conftest import FAST


def drop(widget, path) -> None:
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(path))])
    widget.dropEvent(
        QDropEvent(
            QPointF(5, 5), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier
        )
    )


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def vgg_hooks(window) -> int:
    """Hooks left on the VGG19 whose weights the window's runs share (each run hooks modules of its own)."""
    vgg = shared_network(window.controller.weights.get("untrained"), resolve("auto", "auto"))
    return sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for m in vgg.modules())


def finish(qtbot, window, timeout=60_000):
    with qtbot.waitSignal(window.controller.finished, timeout=timeout) as blocker:
        window.commands.start.trigger()
    return blocker.args[1]


@pytest.mark.slow
def test_fifty_start_stop_cycles(qtbot, window):
    """Stops in the first iteration, mid-scale and at a scale change; no thread, hook or memory left behind."""
    window.controls.set_settings(dataclasses.replace(FAST, size=128, scales=2, iterations=4))
    records = []
    window.controller.progressed.connect(records.append)
    baseline = None
    for cycle in range(50):
        records.clear()
        with qtbot.waitSignal(window.controller.finished, timeout=60_000):
            window.commands.start.trigger()
            if cycle % 3 == 0:
                window.commands.stop.trigger()  # before the first iteration has even begun
            else:
                wanted = 1 if cycle % 3 == 1 else 5  # 5: the first iteration of the second scale
                qtbot.waitUntil(lambda w=wanted: len(records) >= w, timeout=30_000)
                window.commands.stop.trigger()
        assert not window.controller.running
        assert vgg_hooks(window) == 0
        if cycle == 5:
            gc.collect()
            baseline = rss_bytes()
    gc.collect()
    assert rss_bytes() < baseline * 1.10, f"memory grew from {baseline >> 20} to {rss_bytes() >> 20} MiB"
    assert window.run_bar.start_button.isEnabled()


def test_closing_the_window_during_an_export_finishes_the_file(qtbot, window, tmp_path):
    finish(qtbot, window)
    big = Image.effect_noise((3000, 2000), 60).convert("RGB")  # seconds of TIFF compression
    window.state.show(dataclasses.replace(window.state.shown, result=big))
    folder = tmp_path / "exports"
    folder.mkdir()
    target = folder / "big.tif"
    assert window.files.export_to(target)
    window.close()
    with Image.open(target) as written:
        assert written.size == (3000, 2000)
    assert [p.name for p in folder.iterdir()] == ["big.tif"]  # no temporary file left


@pytest.mark.parametrize(
    "failure, message",
    [
        (PermissionError(errno.EACCES, "Permission denied"), "permission denied"),
        (OSError(errno.ENOSPC, "No space left on device"), "the disk is full"),
    ],
)
def test_a_failed_export_is_a_message_and_the_old_file_is_untouched(
    qtbot, window, tmp_path, monkeypatch, failure, message
):
    finish(qtbot, window)
    target = tmp_path / "keep.png"
    target.write_bytes(b"the user's earlier picture")

    def fail(*args, **kwargs):
        raise failure

    monkeypatch.setattr(files, "create_private", fail)
    with qtbot.waitSignal(window.documents.exportFinished, timeout=30_000) as blocker:
        window.files.export_to(target)
    assert message in blocker.args[1] and message in window.banner.text()
    assert target.read_bytes() == b"the user's earlier picture"


def test_a_corrupt_weights_file_is_named_and_the_app_keeps_going(qtbot, window, tmp_path):
    bad = tmp_path / "vgg19-broken.pth"
    bad.write_bytes(b"PK\x03\x04 this is not really a zip")
    window.files.use_weights_file(bad)
    outcome = finish(qtbot, window)
    assert outcome.error and "vgg19-broken.pth" in window.banner.text()
    assert "not a readable PyTorch weights file" in window.banner.text()
    window.controls.set_weights("untrained")
    assert finish(qtbot, window).outcome == FINISHED


def test_a_blow_up_is_reported_and_the_run_finishes(qtbot, window):
    window.controls.set_settings(dataclasses.replace(FAST, optimizer="adam", step_size=1e4, iterations=8))
    outcome = finish(qtbot, window)
    assert outcome.outcome == FINISHED
    assert "went back to the lowest-loss image" in window.banner.text()
    pixels = outcome.image.convert("L").getextrema()
    assert pixels != (0, 0) and pixels != (255, 255)


def test_a_run_that_will_not_fit_in_memory_is_refused_with_what_to_change(qtbot, window, monkeypatch):
    monkeypatch.setattr(memory, "available_bytes", lambda *args: 600 * 2**20)
    window.controls.widget("size").setValue(4096)
    outcome = finish(qtbot, window)
    assert outcome.error and outcome.image is None
    text = window.banner.text()
    assert "needs about" in text and "GB of memory" in text and "use a size of" in text


def test_out_of_gpu_memory_mid_run_is_caught_and_the_picture_kept(qtbot, window, monkeypatch):
    from style_studio.core.objective.objective import Objective

    calls = {"n": 0}
    original = Objective.evaluate

    def exhausted(self, image):
        calls["n"] += 1
        if calls["n"] == 3:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return original(self, image)

    monkeypatch.setattr(Objective, "evaluate", exhausted)
    outcome = finish(qtbot, window)
    assert outcome.error and "ran out of memory" in outcome.error and "lower the size" in outcome.error
    assert outcome.image is not None and window.state.shown.result is not None


def test_dropping_an_image_with_bad_embedded_settings_applies_nothing(qtbot, window, tmp_path):
    before = window.state.settings
    doc = json.loads(settings_mod.dumps(settings_mod.DEFAULTS))
    doc["settings"]["style_layers"] = {"relu1_1": -2}
    doc["settings"]["size"] = 900
    path = save_image(Image.new("RGB", (32, 32)), tmp_path / "tampered.png", json.dumps(doc))
    drop(window, path)
    assert (
        "tampered.png" in window.banner.text()
        and "relu1_1 weight must be a number from 0 to 1000000" in window.banner.text()
    )
    assert window.state.settings == before


def test_a_preset_from_a_future_version_is_refused(window, tmp_path):
    path = tmp_path / "future.json"
    path.write_text(json.dumps({"format": "style-studio", "version": 2, "settings": {"size": 300}}))
    before = window.state.settings
    assert not window.files.load_preset(path)
    assert "newer Style Studio" in window.banner.text() and window.state.settings == before


def test_pasting_with_nothing_on_the_clipboard_says_so(window):
    from PySide6.QtGui import QGuiApplication

    QGuiApplication.clipboard().clear()
    window.commands.paste.trigger()
    assert "Nothing to paste" in window.banner.text() and window.inputs.content.name == "chelsea.png"
