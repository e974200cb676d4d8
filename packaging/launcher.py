"""Entry script of the PyInstaller bundle: the same as the ``style-studio`` command."""

import sys

from style_studio.cli import main

if __name__ == "__main__":
    sys.exit(main())
