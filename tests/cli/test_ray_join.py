"""Joining a Ray cluster ends (issue #50, item 7): an address nothing answers is one line at once, a port that
never speaks Ray is given up after its time, Ctrl+C or SIGTERM during the join stops at once with the stopped
line; ``auto`` says which cluster it joined, and a saved token goes only to a cluster the user named or started."""

from __future__ import annotations

import dataclasses
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from style_studio.cli import ray_join
from style_studio.core import StyleStudioError
from tests.cli.test_cli import run_cli
from tests.conftest import SAMPLES, _free_port

pytest.importorskip("ray")

PHOTO, STYLE = str(SAMPLES / "content" / "chelsea.png"), str(SAMPLES / "style" / "starry_night.jpg")
FAST = ["--size", "32", "--iterations", "1", "--scales", "1", "--weights", "untrained"]


@pytest.fixture
def silent_port():
    """A port that takes connections and never says a word: a service that is not Ray, or a firewall's trap."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    held: list[socket.socket] = []
    running = True

    def accept() -> None:
        while running:
            try:
                held.append(server.accept()[0])
            except OSError:
                return

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    running = False
    server.close()
    for connection in held:
        connection.close()


def test_an_address_nothing_answers_is_one_line_at_once(tmp_path: Path) -> None:
    address = f"127.0.0.1:{_free_port()}"
    began = time.monotonic()
    code, _, err = run_cli("batch", PHOTO, "--style", STYLE, "-o", str(tmp_path), *FAST, "--ray", address)
    assert code == 2 and time.monotonic() - began < 30, err
    (line,) = [line for line in err.splitlines() if address in line]
    assert "cannot reach a Ray cluster at" in line and "connection refused" in line and "ray start --head" in line


def test_an_address_that_is_not_host_and_port_is_refused() -> None:
    with pytest.raises(StyleStudioError, match="give HOST:PORT"):
        ray_join.find("my-cluster")


def start_batch(tmp_path: Path, address: str, seconds: float) -> subprocess.Popen[str]:
    env = {**os.environ, "STYLE_STUDIO_RAY_JOIN_SECONDS": str(seconds), "RAY_USAGE_STATS_ENABLED": "0"}
    command = [sys.executable, "-m", "style_studio", "batch", PHOTO, "--style", STYLE, "-o", str(tmp_path / "out"),
               *FAST, "--ray", address]  # fmt: skip
    return subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True, start_new_session=True)


@pytest.mark.slow
def test_a_port_that_never_speaks_ray_is_given_up_after_its_time_with_one_line(tmp_path: Path, silent_port) -> None:
    began = time.monotonic()
    batch = start_batch(tmp_path, f"127.0.0.1:{silent_port}", 4)
    _, err = batch.communicate(timeout=120)
    assert batch.returncode == 2 and time.monotonic() - began < 60, err
    assert f"the Ray cluster at 127.0.0.1:{silent_port} did not let this machine join within 4 s" in err


@pytest.mark.slow
@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "Ctrl+C"])
def test_a_signal_while_joining_stops_at_once_with_the_stopped_line(tmp_path: Path, silent_port, stop) -> None:
    batch = start_batch(tmp_path, f"127.0.0.1:{silent_port}", 600)
    time.sleep(8)  # the weights loaded, the port answered, ray.init waiting for a cluster that never speaks
    assert batch.poll() is None
    sent = time.monotonic()
    os.kill(batch.pid, stop)
    _, err = batch.communicate(timeout=60)
    assert batch.returncode == 130 and time.monotonic() - sent < 15, err
    assert "stopped; finished pictures are kept" in err and "Traceback" not in err


# -- auto, and the token ---------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_auto_finds_the_cluster_this_user_started_and_says_which(ray_address, monkeypatch) -> None:
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    found = ray_join.find("auto")
    assert found.address.endswith(f":{ray_address.rpartition(':')[2]}") and not found.named
    assert found.ours and found.trusted and found.describe() == f"{found.address}, started by you"


class FakeRay:
    """What ``join`` calls of Ray, heard: the address init was given."""

    def __init__(self) -> None:
        self.joined: list[str] = []

    def init(self, address: str, **_: object) -> None:
        self.joined.append(address)


def test_a_saved_token_goes_only_to_a_cluster_the_user_named_or_started(silent_port, monkeypatch) -> None:
    presented: list[str] = []
    monkeypatch.setattr(ray_join, "_present_a_saved_token", lambda: presented.append("token"))
    someone_elses = ray_join.Found(f"127.0.0.1:{silent_port}", named=False, owner="bob", ours=False)
    assert not someone_elses.trusted and someone_elses.describe().endswith("started by bob")
    ray = FakeRay()
    ray_join.join(ray, someone_elses)
    assert ray.joined == [someone_elses.address] and presented == []
    for trusted in (dataclasses.replace(someone_elses, owner="me", ours=True), ray_join.find(someone_elses.address)):
        ray_join.join(ray, trusted)
    assert presented == ["token", "token"]
