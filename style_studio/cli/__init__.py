"""Command line: ``style-studio`` opens the window; ``render``, ``video`` and ``batch`` work headless.

Bad input ends with exit status 2 and one line on stderr saying what is
wrong; nothing is written at the output path unless the run succeeds.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
from collections.abc import Sequence
from typing import IO

from ..core import StyleStudioError
from ..core.errors import short_lines
from .batch import batch
from .parser import UsageError, build_parser
from .render import render
from .terminal import handling, interrupt
from .video import video

EXIT_USAGE = 2

__all__ = ["main"]


def main(argv: Sequence[str] | None = None, *, stdout: IO[str] | None = None, stderr: IO[str] | None = None) -> int:
    """Entry point of ``style-studio`` and ``python -m style_studio``."""
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if args.command == "render":
            logging.basicConfig(
                level=logging.INFO if args.verbose else logging.ERROR, format="style-studio: %(message)s", stream=stderr
            )
            return render(args, stdout, stderr)
        if args.command == "video":
            logging.basicConfig(level=logging.ERROR, format="style-studio: %(message)s", stream=stderr)
            return video(args, stdout, stderr)
        if args.command == "batch":
            logging.basicConfig(level=logging.ERROR, format="style-studio: %(message)s", stream=stderr)
            with handling([signal.SIGTERM], interrupt):  # kill, a job scheduler, a logout: as Ctrl+C
                return batch(args, stdout, stderr)
    except UsageError as exc:
        message = str(exc)  # argparse quotes what was typed, whatever its length
        stderr.write(_error_line(message if message.startswith("style-studio:") else f"style-studio: error: {message}"))
        return EXIT_USAGE
    except StyleStudioError as exc:
        stderr.write(_error_line(f"style-studio: error: {exc}"))
        return EXIT_USAGE
    except BrokenPipeError:
        # The reader of --progress json went away (e.g. `| head`): not an error of
        # ours. Point stdout at devnull so the interpreter's final flush is quiet
        # (as the Python docs on SIGPIPE recommend).
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    from ..ui.app import run_app

    return run_app(content=getattr(args, "content", None), styles=getattr(args, "styles", None) or [])


def _error_line(text: str) -> str:
    """The error as it is printed: each line, the prefix included, at most ``MAX_MESSAGE`` characters."""
    return short_lines(text) + "\n"
