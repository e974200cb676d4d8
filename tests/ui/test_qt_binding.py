"""The Qt binding itself: a bug there crashes the app however right our code is."""

from __future__ import annotations

import subprocess
import sys

# Run in a child process: where the bug is present it can abort the interpreter.
_CHILD = """
import sys
from PySide6.QtCore import QCoreApplication, QObject, Signal

class Emitter(QObject):
    ping = Signal()

app = QCoreApplication([])
emitter = Emitter()
calls = []
emitter.ping.connect(lambda: calls.append(1))
before = sys.getrefcount(None)
for _ in range(2_000):
    emitter.ping.emit()
print(len(calls), before - sys.getrefcount(None))
"""


def test_calling_python_slots_does_not_drop_references_to_none():
    # PySide6 6.12.0 released a reference to None on every slot call; with
    # Python 3.11 None's count reached zero after about 5,000 signals and the
    # app aborted ("Fatal Python error: none_dealloc") seconds into a run.
    child = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True, timeout=120)
    assert child.returncode == 0, child.stderr[-2000:]
    calls, dropped = map(int, child.stdout.split())
    assert calls == 2_000
    assert dropped < 100, f"the Qt binding dropped {dropped} references to None in 2,000 slot calls"
