"""The window fixtures of tests/ui, for the fault tests that go through the window."""

from tests.ui.conftest import _no_dangling_qthreads, make_window, store, tiny_when_untrained, window

__all__ = ["_no_dangling_qthreads", "make_window", "store", "tiny_when_untrained", "window"]
