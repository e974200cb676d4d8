"""Two runs at once in one process (two notebook cells' threads, a web service on the door): each makes the
picture it makes alone."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import style_studio
from tests.conftest import SAMPLES

PHOTO = SAMPLES / "content" / "chelsea.png"
PAINTING = SAMPLES / "style" / "starry_night.jpg"
SCREAM = SAMPLES / "style" / "the_scream.jpg"


@pytest.fixture(autouse=True)
def _tiny(tiny_network: None) -> None:
    """The tiny test network for "untrained"."""


def test_two_door_calls_at_once_each_give_the_picture_they_give_alone():
    """They shared the network's modules, and so each other's hooks: one raised "backward through the graph a
    second time", the other returned a finished picture 5 to 39 levels off."""
    calls = {
        "starry": (PHOTO, PAINTING, {"size": 64, "iterations": 12, "weights": "untrained", "seed": 1}),
        "scream": (PHOTO, SCREAM, {"size": 56, "iterations": 12, "weights": "untrained", "seed": 2,
                                   "style_loss": "gram"}),
    }  # fmt: skip
    alone = {name: np.asarray(style_studio.stylize(p, s, **f).image) for name, (p, s, f) in calls.items()}
    together: dict[str, object] = {}
    start = threading.Barrier(len(calls))

    def paint(name: str) -> None:
        photo, style, fields = calls[name]
        start.wait()
        try:
            together[name] = np.asarray(style_studio.stylize(photo, style, **fields).image)
        except BaseException as exc:  # the test reports it below
            together[name] = exc

    threads = [threading.Thread(target=paint, args=(name,)) for name in calls]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    for name in calls:
        assert isinstance(together[name], np.ndarray), f"{name}: {together[name]!r}"
        assert np.array_equal(together[name], alone[name]), f"{name} differs from the same call alone"
