"""The terminal side of a run: progress as a bar or JSON lines, the download bar, and what signals do."""

from __future__ import annotations

import contextlib
import json
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import IO, TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:
    from tqdm import tqdm

    from ..core import CancelToken, LoadedWeights, Progress


class DownloadBar:
    """A tqdm bar for the weights download, created on the first callback."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream
        self._bar: tqdm[None] | None = None

    def __call__(self, received: int, total: int | None) -> None:
        if self._bar is None:
            from tqdm import tqdm

            self._bar = tqdm(
                total=total,
                unit="B",
                unit_scale=True,
                unit_divisor=1024,
                file=self._stream,
                desc="Downloading VGG19 weights",
            )
        self._bar.update(received - self._bar.n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


def load_weights_shown(choice: str, mode: str, stderr: IO[str]) -> LoadedWeights:
    """The weights ``choice`` names, downloaded with a bar when ``mode`` is "bar"; untrained ones are named."""
    from ..core import load_weights

    bar = DownloadBar(stderr) if mode == "bar" else None
    try:
        loaded = load_weights(choice, download=True, progress=bar)
    finally:
        if bar:
            bar.close()
    if loaded.untrained:
        stderr.write(f"style-studio: using {loaded.label}\n")
    return loaded


class BarReporter:
    """What every progress display shares: its mode, where it writes, a tqdm bar once one is shown."""

    def __init__(self, mode: str, stdout: IO[str], stderr: IO[str]) -> None:
        self.mode, self.stdout, self.stderr = mode, stdout, stderr
        self._bar: tqdm[None] | None = None

    def _write(self, line: str) -> None:
        """A line on stderr, above the bar when there is one."""
        if self._bar is not None:
            self._bar.write(line, file=self.stderr)
        else:
            self.stderr.write(line + "\n")

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


class Reporter(BarReporter):
    """Shows Progress records as a bar, JSON lines, or not at all."""

    def show(self, record: Progress) -> None:
        if self.mode == "json":
            self.stdout.write(json.dumps(record.to_json()) + "\n")
            self.stdout.flush()
            return
        if record.event:
            self._write(f"style-studio: {record.event}")
        if self.mode != "bar" or record.done:
            return
        if self._bar is None:
            from tqdm import tqdm

            self._bar = tqdm(total=record.steps, file=self.stderr, unit="it", dynamic_ncols=True, desc=record.compute)
        where = f"scale {record.scale}/{record.scales} {record.width}×{record.height}"
        if record.within_iteration:
            where += f" part {record.part}/{record.parts}"
        self._bar.set_postfix_str(f"{where} loss {record.total_loss:.4g}", refresh=False)
        # Whole iterations and their parts: the bar moves during a long tiled iteration.
        self._bar.update(round(record.steps_done - self._bar.n, 6))


def interrupt(signum: int, frame: object) -> NoReturn:
    raise KeyboardInterrupt


@contextlib.contextmanager
def handling(signals: Sequence[signal.Signals], handler: Callable[[int, Any], None]) -> Iterator[None]:
    """``handler`` for ``signals`` during the block (main thread only), the previous handlers put back after."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {number: signal.signal(number, handler) for number in signals}
    try:
        yield
    finally:
        for number, old in previous.items():
            signal.signal(number, old)


def signals_stop_the_render(cancel: CancelToken, stderr: IO[str]) -> contextlib.AbstractContextManager[None]:
    """Ctrl+C (SIGINT) and SIGTERM stop a render after its current step, its checkpoint saved; a second one at once.

    A KeyboardInterrupt raised wherever the signal lands could land between
    two iterations, outside the run, which then had no chance to save. A
    SIGINT the shell ignores (a background job, ``nohup``) stays ignored.
    """

    def stop(signum: int, frame: object) -> None:
        if cancel.cancelled:
            raise KeyboardInterrupt
        cancel.cancel()
        stderr.write("style-studio: stopping after this step (Ctrl+C again stops at once)\n")

    wanted = [signal.SIGTERM] + ([signal.SIGINT] if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN else [])
    return handling(wanted, stop)
