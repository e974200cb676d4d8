"""Style Studio: neural style transfer on the desktop."""

from __future__ import annotations

import os

__version__ = "0.1.0"
APP_NAME = "Style Studio"
APP_ID = "org.stylestudio.StyleStudio"

# PyTorch's CPU tensors of 2 MB and more in transparent huge pages (Linux; read
# once, when torch first allocates, so set before it is imported; a user's own
# value stays). VGG's activations are hundreds of MB each at print sizes, and
# mapped 4 KB at a time each new one costs a page fault per page
# (benchmarks/huge_pages.py; docs/performance.md, "Huge pages").
os.environ.setdefault("THP_MEM_ALLOC_ENABLE", "1")
