"""Joining a Ray cluster: a wait that ends, the cluster joined said, and a saved token shown only where it belongs.

``--ray HOST:PORT`` that nothing answers made Ray retry for minutes with its
own warnings, and Ctrl+C or SIGTERM went unheard while ``ray.init`` held the
main thread (it also puts its own SIGTERM handler in ours' place). Here the
address is tried first (a refused or silent port is one line at once), then
``ray.init`` runs in a thread of its own while the main thread waits for it,
hearing Ctrl+C, SIGTERM (through ``stop``) and its deadline.

``auto`` is the cluster Ray would find on this machine; which one, and who
started it, is said. The token ``ray start`` saved (``~/.ray/auth_token``) is
presented only to the address the user gave (``--ray HOST:PORT``,
``RAY_ADDRESS``) or to a cluster this user started, never to whichever
cluster another user of a shared machine started last.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from ..core import Cancelled, StyleStudioError

if TYPE_CHECKING:
    from ..core import CancelToken

#: How long to wait for a cluster to be joined (``STYLE_STUDIO_RAY_JOIN_SECONDS`` overrides it).
JOIN_SECONDS: Final = 60.0
#: How long a port may take to answer at all.
REACH_SECONDS: Final = 5.0
#: How often the wait looks at Ctrl+C, the stop token and the clock.
_TICK: Final = 0.1


@dataclass(frozen=True)
class Found:
    """The cluster to join: its address (host:port), whether the user named it, and who started it (when known)."""

    address: str
    named: bool
    owner: str | None = None
    ours: bool = False

    @property
    def trusted(self) -> bool:
        """Whether the user's saved token may be presented: the user named it, or started it."""
        return self.named or self.ours

    def describe(self) -> str:
        if self.named or self.owner is None:
            return self.address
        return f"{self.address}, started by {'you' if self.ours else self.owner}"


def join_seconds() -> float:
    value = os.environ.get("STYLE_STUDIO_RAY_JOIN_SECONDS")
    try:
        return float(value) if value else JOIN_SECONDS
    except ValueError:
        return JOIN_SECONDS


def find(address: str) -> Found:
    """The cluster ``address`` means: HOST:PORT as given; ``auto`` (or RAY_ADDRESS) as Ray would find it.

    Raises:
        StyleStudioError: ``auto`` finds none, or the address is not HOST:PORT.
    """
    given = os.environ.get("RAY_ADDRESS") if address == "auto" else address
    if given:
        return Found(_host_port(given), named=True)
    try:
        from ray._private.services import canonicalize_bootstrap_address_or_die
    except ImportError:  # a Ray that moved it: let ray.init find it, trusting nothing
        return Found("auto", named=False)
    try:
        found = str(canonicalize_bootstrap_address_or_die("auto"))
    except (ConnectionError, ValueError) as exc:
        raise StyleStudioError(
            f"no Ray cluster runs on this machine ({_first_line(exc)}): start one with `ray start --head`, or give "
            "its address with --ray HOST:PORT"
        ) from None
    uid, owner = _starter(found)
    return Found(found, named=False, owner=owner, ours=uid is not None and uid == _uid())


def check_reachable(address: str, seconds: float = REACH_SECONDS) -> None:
    """Raise StyleStudioError at once when nothing answers at ``address`` (refused, unknown host, silent port)."""
    if address == "auto":
        return
    host, _, port = address.rpartition("://")[2].rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=seconds):
            return
    except (OSError, ValueError) as exc:
        if isinstance(exc, TimeoutError):
            reason = f"nothing answered within {seconds:g} s"
        else:
            reason = (getattr(exc, "strerror", None) or _first_line(exc) or type(exc).__name__).lower()
        raise StyleStudioError(
            f"cannot reach a Ray cluster at {address} ({reason}): check the address, that "
            f"`ray start --head --port={port}` runs there, and that this machine may reach that port"
        ) from None


def join(ray: Any, found: Found, stop: CancelToken | None = None, seconds: float | None = None) -> None:
    """``ray.init`` to ``found``, waited for in this (the main) thread until it is joined, ``seconds`` pass
    (``join_seconds()``), Ctrl+C, or ``stop`` is set.

    Raises:
        StyleStudioError: it could not be joined, or not within ``seconds`` (the line names the address).
        Cancelled: ``stop`` was set while waiting; KeyboardInterrupt: Ctrl+C.
    """
    check_reachable(found.address)
    if found.trusted:
        _present_a_saved_token()
    seconds = join_seconds() if seconds is None else seconds
    outcome: list[BaseException | None] = []

    def init() -> None:
        try:
            ray.init(address=found.address, ignore_reinit_error=True, log_to_driver=False, logging_level="ERROR")
            outcome.append(None)
        except BaseException as exc:  # handed to the waiting thread, which says it
            outcome.append(exc)

    # Not Ray's note that a thread sets no SIGTERM handler: ours stays, on purpose (ray.init sets ERROR anyway).
    logging.getLogger("ray._private.worker").setLevel(logging.ERROR)
    worker = threading.Thread(target=init, name="style-studio-ray-join", daemon=True)
    worker.start()
    deadline = time.monotonic() + seconds
    while worker.is_alive():
        worker.join(_TICK)
        if stop is not None and stop.cancelled:
            raise Cancelled()
        if time.monotonic() > deadline and worker.is_alive():
            raise StyleStudioError(
                f"the Ray cluster at {found.describe()} did not let this machine join within {seconds:g} s: check "
                "that it runs the same Ray and Python versions, and that its other ports are open to this machine"
            )
    failure = outcome[0] if outcome else None
    if failure is not None:
        raise StyleStudioError(f"cannot join the Ray cluster at {found.describe()} ({_first_line(failure)})")


def _present_a_saved_token() -> None:
    """Present the token `ray start` saved or was given (~/.ray/auth_token, RAY_AUTH_TOKEN), as `ray start` does.

    Ray's own client joins with token authentication only when RAY_AUTH_MODE
    says so, so a cluster that `ray start --head` protected with a saved token
    would refuse us. An explicit RAY_AUTH_MODE is left as the user set it.
    """
    try:
        from ray._private.authentication import authentication_token_setup as setup
    except ImportError:  # a Ray from before token authentication
        return
    enable = getattr(setup, "maybe_enable_token_auth_if_token_available", None)
    if enable is None:
        return
    log = logging.getLogger(setup.__name__)
    level = log.level
    log.setLevel(logging.ERROR)  # not Ray's "token authentication is enabled" notice on our stderr
    try:
        enable(warn_if_disabled=False)
    finally:
        log.setLevel(level)


def _starter(address: str) -> tuple[int | None, str | None]:
    """Who runs the cluster at ``address`` on this machine: the user id and name of its processes (None: not known).

    Its GCS server and raylet carry the address or port on their command line.
    """
    try:
        import psutil
    except ImportError:
        return None, None
    port = address.rpartition(":")[2]
    marks = (f"--gcs_server_port={port}", f"--gcs-address={address}", f"--gcs_address={address}")
    for process in psutil.process_iter(["cmdline", "uids", "username"]):
        try:
            cmdline = process.info["cmdline"] or []
            if any(arg in marks for arg in cmdline):
                return int(process.info["uids"].real), str(process.info["username"])
        except (psutil.Error, AttributeError, TypeError, ValueError):
            continue
    return None, None


def _uid() -> int | None:
    return os.getuid() if hasattr(os, "getuid") else None


def _host_port(text: str) -> str:
    """``text`` when it names a host and a port (``ray://`` too: Ray's client); else StyleStudioError."""
    host, _, port = text.strip().rpartition("://")[2].rpartition(":")
    if not host or not port.isdigit():
        raise StyleStudioError(f"--ray {text}: give HOST:PORT (as `ray start --head` prints it), or auto")
    return text.strip()


def _first_line(exc: BaseException) -> str:
    return next((line.strip() for line in str(exc).splitlines() if line.strip()), "")
