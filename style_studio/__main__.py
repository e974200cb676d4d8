"""``python -m style_studio``: the same as the ``style-studio`` command."""

from __future__ import annotations

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
