"""The window fixtures of tests/ui, for the fault tests that go through the window."""

import pytest

from tests.ui.conftest import _no_dangling_qthreads, make_window, store, tiny_when_untrained, window


@pytest.fixture(autouse=True)
def _tiny_network(tiny_network: None) -> None:
    """Command lines, batches and their subprocesses run the tiny test network for "untrained"."""


__all__ = ["_no_dangling_qthreads", "make_window", "store", "tiny_when_untrained", "window"]
