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

from ..errors import ResourceError
from ..io.imageio import fit_size

#: Bytes per output pixel for a bf16 / fp16 run, and for an fp32 run: measured
#: on the CPU with benchmarks/memory.py, with about 20 % added for safety.
BYTES_PER_PIXEL: Final = {"bf16": 1_700, "fp16": 1_700, "fp32": 2_400}
#: Fixed cost of a run: the network in the compute dtype, targets, allocator slack
#: (measured as above, rounded up).
BASE_BYTES: Final = 256 * 2**20
#: An allowance for cuDNN's convolution workspace on CUDA GPUs, which the CPU
#: measurements above cannot see (to be checked with benchmarks/gpu.py).
CUDNN_WORKSPACE_BYTES: Final = 512 * 2**20
#: Keep this share of the available memory free for everything else.
HEADROOM: Final = 0.85


#: L-BFGS corrections kept: fewer cost less time per step; more bring no lower
#: loss (docs/performance.md).
LBFGS_HISTORY: Final = 20
#: Memory L-BFGS's history may take: at print sizes a full history would be
#: the largest thing in memory, so larger pictures keep fewer pairs
#: (benchmarks/print_size.py measures what that costs in loss).
LBFGS_HISTORY_BYTES: Final = 1 * 2**30
#: Fewest pairs kept, however large the picture.
LBFGS_MIN_HISTORY: Final = 3


def lbfgs_history(pixels: int, channels: int = 3) -> int:
    """The (step, gradient change) pairs L-BFGS keeps for an image of ``pixels`` pixels."""
    pair = 2 * channels * 4 * pixels
    return max(LBFGS_MIN_HISTORY, min(LBFGS_HISTORY, LBFGS_HISTORY_BYTES // pair))


def optimizer_bytes(pixels: int, optimizer: str, channels: int = 3) -> int:
    """The optimiser's state for an image of ``pixels`` pixels, in bytes.

    Float32 vectors of the image's size: L-BFGS keeps its history of (step,
    gradient change) pairs plus its direction and last gradient; Adam its two
    moments. (``BYTES_PER_PIXEL`` was measured over 5 iterations, before
    L-BFGS's history fills.)
    """
    vectors = 2 if optimizer == "adam" else 2 * lbfgs_history(pixels, channels) + 2
    return vectors * channels * 4 * pixels


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


#: A tiled run's memory besides its tile, per pixel of the whole picture: the
#: image, its gradient, the tiles' gradients added up, the lowest-loss image,
#: the step's origin, the smoothing term's differences (float32 RGB each), the
#: style pictures and the content targets. Measured with benchmarks/print_size.py.
WHOLE_PICTURE_BYTES_PER_PIXEL: Final = 200
#: The widest halo a tile carries (conv5_4's reach, on the pools' 16 px grid).
MAX_HALO: Final = 128
#: Tile cores tried, largest first, when a picture does not fit untiled: the
#: larger the tile, the less of each is halo and the fewer forward passes the
#: Gram pass repeats, so the faster the iteration.
TILE_SIDES: Final = (2048, 1536, 1024, 768, 512, 384, 256)


def tiled_bytes(width: int, height: int, tile: int, precision: str, optimizer: str = "lbfgs") -> int:
    """Extra memory a run at (width, height) needs when evaluated in tiles whose core is ``tile`` px."""
    per_pixel = BYTES_PER_PIXEL.get(precision, BYTES_PER_PIXEL["fp32"])
    crop = min(width, tile + 2 * MAX_HALO) * min(height, tile + 2 * MAX_HALO)
    pixels = width * height
    return int(
        BASE_BYTES + per_pixel * crop + WHOLE_PICTURE_BYTES_PER_PIXEL * pixels + optimizer_bytes(pixels, optimizer)
    )


def kept_tiles(
    width: int, height: int, tile: int, precision: str, available: int | None, optimizer: str = "lbfgs"
) -> int:
    """How many tiles' forward passes a tiled evaluation may keep from its Gram pass for its backward pass.

    Each one kept saves a tile's forward pass per iteration and costs a
    tile's graph of memory. One always (the last tile's); more only from
    memory to spare, and at most as much again as the tiled evaluation needs:
    a picture tiled to fit in little memory stays within twice that.
    """
    if available is None:
        return 1
    per_pixel = BYTES_PER_PIXEL.get(precision, BYTES_PER_PIXEL["fp32"])
    per_tile = per_pixel * min(width, tile + 2 * MAX_HALO) * min(height, tile + 2 * MAX_HALO)
    base = tiled_bytes(width, height, tile, precision, optimizer)
    spare = min(available * HEADROOM - base, base)
    return 1 + max(0, int(spare // per_tile))


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


def plan_tiles(
    content_size: tuple[int, int],
    size: int,
    style_sizes: Sequence[tuple[int, int]],
    precision: str,
    available: int | None,
    where: str,
    optimizer: str = "lbfgs",
    *,
    tile: int = 0,
    workspace: int = 0,
) -> int | None:
    """The tile core a run at ``size`` evaluates in, or None for the whole picture at once.

    ``tile`` > 0 asks for tiles of that size (None when one covers the
    picture); 0 tiles only a picture that would not fit untiled, in the
    largest of ``TILE_SIDES`` that fits.

    Raises:
        ResourceError: not even the smallest tiles fit, with the memory needed.
    """
    width, height = fit_size(*content_size, size)
    if tile and tile >= max(width, height):
        tile = 0
    if not tile:
        try:
            check_fits(content_size, size, style_sizes, precision, available, where, optimizer, workspace=workspace)
            return None
        except ResourceError:
            candidates = [t for t in TILE_SIDES if t < max(width, height)]
            if not candidates:
                raise
    else:
        candidates = [tile]
    budget = math.inf if available is None else available * HEADROOM
    for candidate in candidates:
        need = tiled_bytes(width, height, candidate, precision, optimizer) + workspace
        if need <= budget:
            return candidate
    assert available is not None
    # What fits in the smallest tiles: the whole picture's share grows with the size, the tile's does not.
    fixed = tiled_bytes(width, height, candidates[-1], precision, optimizer) + workspace
    per_pixel = (fixed - tiled_bytes(1, 1, candidates[-1], precision, optimizer)) / (width * height - 1)
    fitting_pixels = max(0.0, (budget - (fixed - per_pixel * width * height)) / per_pixel)
    suggestion = int(math.sqrt(fitting_pixels * max(content_size) / min(content_size)) // 64 * 64)
    advice = (
        f"use a size of {suggestion} px or less" if suggestion >= 64 else "close other programs or use another device"
    )
    raise ResourceError(
        f"a {width}×{height} picture needs about {need / 2**30:.1f} GB of memory even in tiles of "
        f"{candidates[-1]} px, but only {available / 2**30:.1f} GB is free on the {where}; {advice}"
    )


#: A tiled iteration's time against an untiled one at the same size: each tile
#: carries its halo, and the Gram matrices take a forward pass of their own
#: (benchmarks/print_size.py --ratio measures it; docs/performance.md has the figures).
TILED_TIME_FACTOR: Final = 1.8


def iteration_work(width: int, height: int, tile: int | None) -> float:
    """An iteration's work in megapixels, a tiled one's (``tile`` not None) at its extra cost."""
    return width * height / 1e6 * (TILED_TIME_FACTOR if tile is not None else 1.0)
