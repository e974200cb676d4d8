"""Style Studio's core: what the window, the command line and the batch runners use.

The core is in layers, each importing only those below it (import-linter checks
this; see ``pyproject.toml``):

- ``jobs``: batches, the render queue, kept results;
- ``run``: the engine, step control, L-BFGS, the memory plan, checkpoints;
- ``objective``: losses, Gram matrices, capture hooks, regions, tiles;
- ``settings`` and ``progress``: the settings and the records a run reports;
- ``network``: VGG19's layers by name, its weights, the device;
- ``io``: picture and video files, the guarded writer every output goes through, locks;
- ``errors``.

The names it offers are listed once, in ``__init__.pyi``, and loaded when first used, so that naming ``Settings`` or
``Progress`` does not import torch (the window starts before it needs it).
"""

import importlib
from typing import Any

import lazy_loader

# The names are in __init__.pyi, once: read from there at import, handed out when first used.
_named, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)


def __getattr__(name: str) -> Any:
    # lazy_loader hands out a subpackage's attributes, not its submodules: the door (jobs.door) is imported here,
    # and only when named, so that naming it does not import torch before a render needs it.
    if name == "door":
        return importlib.import_module(".jobs.door", __name__)
    return _named(name)
