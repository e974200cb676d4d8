"""Starting the desktop app: the window first, the heavy imports after it shows."""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

from PySide6.QtCore import QCoreApplication, QTimer
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QApplication

from .. import APP_ID, APP_NAME, __version__
from ..resources import icon_files

log = logging.getLogger(__name__)


def _warm_up() -> None:
    """Import torch and the engine in the background so the first Start is quick."""
    try:
        from ..core import load_engine

        load_engine()
    except Exception:  # reported again, with context, when a run starts
        log.exception("loading the compute engine failed")


def app_icon() -> QIcon:
    icon = QIcon()
    for path in icon_files():
        icon.addFile(str(path))
    return icon


def create_application(argv: Sequence[str] | None = None) -> QApplication:
    app = QApplication.instance()
    if not isinstance(app, QApplication):
        app = QApplication(list(argv) if argv is not None else sys.argv[:1])
    QCoreApplication.setOrganizationName("StyleStudio")
    QCoreApplication.setOrganizationDomain("stylestudio.org")
    QCoreApplication.setApplicationName(APP_NAME)
    QCoreApplication.setApplicationVersion(__version__)
    app.setDesktopFileName(APP_ID)
    app.setWindowIcon(app_icon())
    return app


def run_app(content: str | None = None, styles: Sequence[str] = ()) -> int:
    """Open the window (on the bundled samples unless files are given) and run until it closes."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    app = create_application()
    from .main_window import MainWindow

    window = MainWindow(content=Path(content) if content else None, styles=[Path(p) for p in styles])
    window.show()
    QTimer.singleShot(0, lambda: threading.Thread(target=_warm_up, name="warm-up", daemon=True).start())
    return app.exec()
