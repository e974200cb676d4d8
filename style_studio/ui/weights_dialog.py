"""When the ImageNet weights are not on this computer: download them, pick a file, or go untrained."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QDialog, QFileDialog, QHBoxLayout, QLabel, QProgressBar, QPushButton, QVBoxLayout, QWidget

from ..core import IMAGENET, UNTRAINED, CancelToken, Failed, Finished, Stopped
from .background import BackgroundTask, Report, TaskOutcome

WEIGHTS_FILTER = "PyTorch weights (*.pth *.pt *.bin);;All files (*)"


def _download(report: Report[tuple[int, int]], cancel: CancelToken) -> None:
    from ..core import download_imagenet

    download_imagenet(progress=lambda got, total: report((got, total or 0)), cancelled=lambda: cancel.cancelled)


class WeightsDialog(QDialog):
    """Asks how to get VGG19 weights. ``choice`` is set when the dialog is accepted:
    ``IMAGENET`` (downloaded), ``UNTRAINED``, or a file path."""

    def __init__(self, parent: QWidget | None = None, *, start_dir: str = "") -> None:
        super().__init__(parent)
        self.setWindowTitle("VGG19 weights needed")
        self.choice: str | None = None
        self._start_dir = start_dir
        self._job: BackgroundTask[tuple[int, int], None] | None = None
        text = QLabel(
            "<b>Style Studio needs the trained VGG19 network</b> (548 MB, downloaded once from "
            "download.pytorch.org and kept in PyTorch's cache).<br><br>"
            "You can also use a VGG19 weights file you already have, or run with <i>untrained</i> "
            "features, which transfer colours and textures but not the content's shapes."
        )
        text.setWordWrap(True)
        self.status = QLabel("")
        self.status.setWordWrap(True)
        self.bar = QProgressBar()
        self.bar.setVisible(False)
        self.download_button = QPushButton("Download")
        self.download_button.setDefault(True)
        self.file_button = QPushButton("Choose file…")
        self.untrained_button = QPushButton("Use untrained features")
        self.cancel_button = QPushButton("Cancel")
        buttons = QHBoxLayout()
        for b in (self.download_button, self.file_button, self.untrained_button):
            buttons.addWidget(b)
        buttons.addStretch(1)
        buttons.addWidget(self.cancel_button)
        layout = QVBoxLayout(self)
        layout.addWidget(text)
        layout.addWidget(self.bar)
        layout.addWidget(self.status)
        layout.addLayout(buttons)
        self.download_button.clicked.connect(self.start_download)
        self.file_button.clicked.connect(self._choose_file)
        self.untrained_button.clicked.connect(lambda: self._accept_with(UNTRAINED))
        self.cancel_button.clicked.connect(self.reject)
        self.resize(520, 200)

    def _accept_with(self, choice: str) -> None:
        self.choice = choice
        self.accept()

    def _choose_file(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "VGG19 weights file", self._start_dir, WEIGHTS_FILTER)
        if path:
            self._accept_with(str(Path(path)))

    def start_download(self) -> None:
        self.download_button.setEnabled(False)
        self.file_button.setEnabled(False)
        self.untrained_button.setEnabled(False)
        self.bar.setVisible(True)
        self.bar.setRange(0, 0)
        self.status.setText("Connecting…")
        job = BackgroundTask(_download, "style-studio-download", failure="the download failed unexpectedly")
        job.on_report(self._progress)
        job.on_end(self._done)
        self._job = job
        job.start()

    def downloading(self) -> bool:
        return self._job is not None

    def _progress(self, received: tuple[int, int]) -> None:
        got, total = received
        if total:
            self.bar.setRange(0, 1000)
            self.bar.setValue(int(got / total * 1000))
            self.status.setText(f"{got / 1e6:.0f} of {total / 1e6:.0f} MB")
        else:
            self.status.setText(f"{got / 1e6:.0f} MB")

    def _stop_download(self) -> None:
        if self._job is not None:
            self._job.cancel()
            self._job.wait()

    def _done(self, outcome: TaskOutcome[None]) -> None:
        self._job = None
        match outcome.ended:
            case Finished():
                self._accept_with(IMAGENET)
                return
            case Stopped():
                self.status.setText("The download was cancelled.")
            case Failed(error=error):
                self.status.setText(error)
        self.bar.setVisible(False)
        for b in (self.download_button, self.file_button, self.untrained_button):
            b.setEnabled(True)

    def reject(self) -> None:
        self._stop_download()  # cancels a download in progress; no half file is left
        super().reject()

    def done(self, result: int) -> None:
        self._stop_download()
        super().done(result)
