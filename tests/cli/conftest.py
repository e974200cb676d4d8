"""The command line's tests run the tiny test network for "untrained": they test the command line, not VGG19."""

import pytest


@pytest.fixture(autouse=True)
def _tiny_network(tiny_network: None) -> None:
    pass
