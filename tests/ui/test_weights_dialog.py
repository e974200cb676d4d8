"""Getting VGG19 weights from the window: download with progress and cancel, a file, or untrained."""

from __future__ import annotations

import dataclasses
import hashlib

from PySide6.QtCore import QTimer

from style_studio.core.network import weights
from style_studio.ui.weights_dialog import WeightsDialog
from tests.ui.conftest import FAST


def serve_fake_weights(tmp_path, monkeypatch, size=2 << 20):
    payload = b"v" * size
    source = tmp_path / f"vgg19-{hashlib.sha256(payload).hexdigest()[:8]}.pth"
    source.write_bytes(payload)
    monkeypatch.setattr(weights, "IMAGENET_URL", source.as_uri())
    return payload


def test_download_shows_progress_and_lands_in_torchs_cache(qtbot, tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "home"))
    payload = serve_fake_weights(tmp_path, monkeypatch)
    dialog = WeightsDialog()
    qtbot.addWidget(dialog)
    seen = []
    dialog.bar.valueChanged.connect(seen.append)
    with qtbot.waitSignal(dialog.accepted, timeout=30_000):
        dialog.download_button.click()
    assert dialog.choice == "imagenet"
    assert weights.imagenet_cache_path().read_bytes() == payload
    assert seen and seen[-1] == 1000


def test_a_failed_download_says_why_and_offers_the_other_choices(qtbot, tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(weights, "IMAGENET_URL", (tmp_path / "vgg19-00000000.pth").as_uri())
    dialog = WeightsDialog()
    qtbot.addWidget(dialog)
    dialog.download_button.click()
    qtbot.waitUntil(lambda: not dialog.downloading(), timeout=30_000)
    assert "could not download" in dialog.status.text()
    assert dialog.untrained_button.isEnabled() and dialog.file_button.isEnabled()
    assert (
        not weights.imagenet_cache_path().parent.exists() or list(weights.imagenet_cache_path().parent.iterdir()) == []
    )


def test_cancel_during_a_download_leaves_no_file(qtbot, tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "home"))
    serve_fake_weights(tmp_path, monkeypatch, size=64 << 20)
    dialog = WeightsDialog()
    qtbot.addWidget(dialog)
    dialog.download_button.click()
    dialog.cancel_button.click()
    assert not dialog.downloading()
    folder = weights.imagenet_cache_path().parent
    assert not folder.exists() or list(folder.iterdir()) == []


def test_starting_without_cached_imagenet_weights_offers_the_dialog(qtbot, make_window, monkeypatch):
    window = make_window(dataclasses.replace(FAST, weights="imagenet"))
    shown = []

    def choose_untrained():
        dialog = window.findChild(WeightsDialog)
        shown.append(dialog)
        dialog.untrained_button.click()

    QTimer.singleShot(0, choose_untrained)
    with qtbot.waitSignal(window.controller.finished, timeout=60_000) as blocker:
        window.commands.start.trigger()
    assert shown and blocker.args[1].weights_label.startswith("untrained")
    assert window.state.settings.weights == "untrained"
    assert "untrained" in window.weights_label.text()


def test_cancelling_the_dialog_does_not_start(qtbot, make_window):
    window = make_window(dataclasses.replace(FAST, weights="imagenet"))
    QTimer.singleShot(0, lambda: window.findChild(WeightsDialog).reject())
    window.commands.start.trigger()
    assert not window.controller.running


def test_a_weights_file_is_used_and_remembered(qtbot, make_window, store, tmp_path):
    import torch
    from torchvision.models.vgg import cfgs, make_layers

    path = tmp_path / "my-vgg.pth"
    torch.save({"features." + k: v for k, v in make_layers(cfgs["E"]).state_dict().items()}, path)
    window = make_window()
    window.files.use_weights_file(path)
    assert window.state.settings.weights == str(path)
    assert "my-vgg.pth" in window.weights_label.text()
    with qtbot.waitSignal(window.controller.finished, timeout=60_000) as blocker:
        window.commands.start.trigger()
    assert blocker.args[1].weights_label == "VGG19 weights from my-vgg.pth"
    window.close()
    again = make_window(settings=None)
    assert again.state.settings.weights == str(path)
    assert store.weights_file() == path


def test_the_status_bar_says_when_the_chosen_weights_are_not_on_this_computer(make_window, tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "home"))
    window = make_window(dataclasses.replace(FAST, weights="imagenet"))
    assert window.weights_label.text() == "Weights: ImageNet VGG19 — not downloaded yet"
    assert window.weights_label.toolTip().startswith("Start offers the download")
    cached = weights.imagenet_cache_path()
    cached.parent.mkdir(parents=True)
    cached.write_bytes(b"weights")
    window.controls.set_settings(dataclasses.replace(FAST, weights="untrained"))
    window.controls.set_settings(dataclasses.replace(FAST, weights="imagenet"))
    assert window.weights_label.text() == "Weights: ImageNet VGG19"
    gone = tmp_path / "my-vgg.pth"
    window.controls.set_settings(dataclasses.replace(FAST, weights=str(gone)))
    assert window.weights_label.text() == "Weights: VGG19 weights from my-vgg.pth — the file is missing"
