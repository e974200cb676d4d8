"""How much memory a run needs, and refusing one that will not fit before it starts.

The estimate is linear in the pixels processed: VGG's activations saved for
the backward pass, the Gram matrices' inputs and the optimiser's copies of
the image all grow with the image. The constants were measured with
``benchmarks/memory.py`` (peak resident memory on the CPU, over the memory
in use before the run) and rounded up.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from .errors import ResourceError
from .imageio import fit_size

#: Bytes per output pixel for a bf16 / fp16 run, and for an fp32 run. Measured
#: on the CPU: 1.40 kB (bf16) and 1.97 kB (fp32) between 512 and 1024 px;
#: about 20 % added for safety.
BYTES_PER_PIXEL: Final = {"bf16": 1_700, "fp16": 1_700, "fp32": 2_400}
#: Fixed cost of a run: the network in the compute dtype, targets, allocator slack
#: (measured: 120 MB for bf16, 210 MB for fp32).
BASE_BYTES: Final = 256 * 2**20
#: An allowance for cuDNN's convolution workspace on CUDA GPUs, which the CPU
#: measurements above cannot see (to be checked with benchmarks/gpu.py).
CUDNN_WORKSPACE_BYTES: Final = 512 * 2**20
#: Keep this share of the available memory free for everything else.
HEADROOM: Final = 0.85


#: Float32 vectors of the image's size that each optimiser keeps: L-BFGS its
#: history of (step, gradient change) pairs plus its direction and last
#: gradient; Adam its two moments. (``BYTES_PER_PIXEL`` was measured over 5
#: iterations, before L-BFGS's history fills.)
OPTIMIZER_VECTORS: Final = {"lbfgs": 2 * 20 + 2, "adam": 2}


def optimizer_bytes(pixels: int, optimizer: str, channels: int = 3) -> int:
    """The optimiser's state for an image of ``pixels`` pixels, in bytes."""
    return OPTIMIZER_VECTORS.get(optimizer, OPTIMIZER_VECTORS["lbfgs"]) * channels * 4 * pixels


def estimate_bytes(
    width: int, height: int, style_sizes: Sequence[tuple[int, int]], precision: str, optimizer: str = "lbfgs"
) -> int:
    """Extra memory a run at (width, height) needs at its peak, in bytes.

    Style images are forwarded once per scale without a backward pass: only
    their Gram matrices stay, so they count at a tenth of the rate.
    """
    per_pixel = BYTES_PER_PIXEL.get(precision, BYTES_PER_PIXEL["fp32"])
    styles = sum(w * h for w, h in style_sizes)
    pixels = width * height
    return int(BASE_BYTES + per_pixel * (pixels + styles / 10) + optimizer_bytes(pixels, optimizer))


def available_bytes(device_type: str, device_free: int | None = None) -> int | None:
    """Memory the run may use: ``device_free`` on a GPU, the OS's available RAM on the CPU; None if unknown."""
    if device_type != "cpu":
        return device_free
    try:
        text = Path("/proc/meminfo").read_text()
        match = re.search(r"^MemAvailable:\s+(\d+) kB", text, re.MULTILINE)
        if match:
            return int(match.group(1)) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def check_fits(
    content_size: tuple[int, int],
    size: int,
    style_sizes: Sequence[tuple[int, int]],
    precision: str,
    available: int | None,
    where: str,
    optimizer: str = "lbfgs",
    *,
    workspace: int = 0,
) -> None:
    """Raise ResourceError, saying how much is needed and what size would fit, when it will not fit.

    ``workspace``: fixed memory the device's kernels need besides (cuDNN's).
    """
    if available is None:
        return
    width, height = fit_size(*content_size, size)
    need = estimate_bytes(width, height, style_sizes, precision, optimizer) + workspace
    budget = available * HEADROOM
    if need <= budget:
        return
    # Per output pixel, with the style images scaling along with the output.
    styles_share = sum(w * h for w, h in style_sizes) / (width * height)
    per_pixel = BYTES_PER_PIXEL.get(precision, BYTES_PER_PIXEL["fp32"]) * (1 + styles_share / 10)
    per_pixel += optimizer_bytes(1, optimizer)
    fitting_pixels = max(0.0, (budget - BASE_BYTES - workspace) / per_pixel)
    aspect = max(content_size) / min(content_size)
    suggestion = int(math.sqrt(fitting_pixels * aspect) // 64 * 64)
    advice = (
        f"use a size of {suggestion} px or less" if suggestion >= 64 else "close other programs or use another device"
    )
    raise ResourceError(
        f"a {width}×{height} picture needs about {need / 2**30:.1f} GB of memory, but only "
        f"{available / 2**30:.1f} GB is free on the {where}; {advice}"
    )
