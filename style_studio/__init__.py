"""Style Studio: neural style transfer on the desktop, on the command line, and from Python.

    import style_studio

    picture = style_studio.stylize("photo.jpg", "painting.jpg", size=384)
    picture.save("photo-painting.png")

``stylize`` and ``stylize_video`` (``style_studio.api``) are the door for Python: every setting by the command line's
name, through the door every surface calls (``core.jobs.door``).
The names below are loaded when first used, so that ``import style_studio`` does not import torch.
"""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
APP_NAME = "Style Studio"
APP_ID = "org.stylestudio.StyleStudio"

# PyTorch's CPU tensors of 2 MB and more in transparent huge pages (Linux; read
# once, when torch first allocates, so set before it is imported; a user's own
# value stays). VGG's activations are hundreds of MB each at print sizes, and
# mapped 4 KB at a time each new one costs a page fault per page
# (benchmarks/huge_pages.py; docs/performance.md, "Huge pages").
os.environ.setdefault("THP_MEM_ALLOC_ENABLE", "1")

if TYPE_CHECKING:
    from .api import Stylized as Stylized
    from .api import stylize as stylize
    from .api import stylize_video as stylize_video
    from .core.errors import Cancelled as Cancelled
    from .core.errors import StyleStudioError as StyleStudioError
    from .core.jobs.job import VideoOptions as VideoOptions
    from .core.jobs.video_job import FrameRecord as FrameRecord
    from .core.jobs.video_job import RenderedVideo as RenderedVideo
    from .core.objective.regions import Regions as Regions
    from .core.progress import Failed as Failed
    from .core.progress import Finished as Finished
    from .core.progress import Outcome as Outcome
    from .core.progress import Progress as Progress
    from .core.progress import Stopped as Stopped
    from .core.progress import Why as Why
    from .core.run.cancel import CancelToken as CancelToken
    from .core.settings import Settings as Settings

#: The public names, and the module each comes from.
_DOOR = {
    "stylize": ".api",
    "stylize_video": ".api",
    "Stylized": ".api",
    "Settings": ".core.settings",
    "VideoOptions": ".core.jobs.job",
    "Regions": ".core.objective.regions",
    "Progress": ".core.progress",
    "Finished": ".core.progress",
    "Stopped": ".core.progress",
    "Failed": ".core.progress",
    "Outcome": ".core.progress",
    "Why": ".core.progress",
    "FrameRecord": ".core.jobs.video_job",
    "RenderedVideo": ".core.jobs.video_job",
    "CancelToken": ".core.run.cancel",
    "StyleStudioError": ".core.errors",
    "Cancelled": ".core.errors",
}

__all__ = ["APP_ID", "APP_NAME", "__version__", *_DOOR]


def __getattr__(name: str) -> Any:
    module = _DOOR.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module, __name__), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *_DOOR})
