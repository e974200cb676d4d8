"""The memory check: what counts as free, and what a run is estimated to need."""

from __future__ import annotations

import pytest
import torch

from style_studio.core.errors import ResourceError
from style_studio.core.network.device import free_device_memory
from style_studio.core.run import memory

GB = 2**30


def test_memory_pytorch_keeps_cached_on_a_gpu_counts_as_free(monkeypatch):
    # After a large run, PyTorch keeps its blocks reserved: counted as used, they
    # made the next run look as if it would not fit.
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device: (1 * GB, 24 * GB))
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda device: 10 * GB)
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda device: 2 * GB)
    assert free_device_memory(torch.device("cuda:0")) == 9 * GB


def test_an_apple_gpu_is_checked_against_metals_recommended_working_set(monkeypatch):
    monkeypatch.setattr(torch.mps, "recommended_max_memory", lambda: 12 * GB)
    monkeypatch.setattr(torch.mps, "current_allocated_memory", lambda: 3 * GB)
    free = free_device_memory(torch.device("mps"))
    assert free == 9 * GB
    assert memory.available_bytes("mps", free) == 9 * GB
    with pytest.raises(ResourceError, match="needs about .* GB of memory, but only 9.0 GB is free on the GPU"):
        memory.check_fits((4000, 3000), 4096, [(4096, 3000)], "fp32", free, "GPU")


def test_the_estimate_counts_the_optimisers_state_lbfgs_history_included():
    pixels = 1024 * 768
    lbfgs = memory.estimate_bytes(1024, 768, [], "fp32", "lbfgs")
    adam = memory.estimate_bytes(1024, 768, [], "fp32", "adam")
    # 20 (step, gradient change) pairs, the direction and the last gradient, against Adam's 2 moments.
    assert lbfgs - adam == (42 - 2) * 3 * 4 * pixels
    assert memory.optimizer_bytes(pixels, "lbfgs") == 42 * 3 * 4 * pixels


def test_lbfgs_keeps_fewer_pairs_at_print_sizes_and_its_history_stays_within_its_allowance():
    assert memory.lbfgs_history(512 * 512) == memory.LBFGS_HISTORY
    assert memory.lbfgs_history(2048 * 1536) < memory.LBFGS_HISTORY
    for pixels in (1024 * 768, 2048 * 1536, 4096 * 3072):
        history = memory.lbfgs_history(pixels)
        assert history >= memory.LBFGS_MIN_HISTORY
        assert history == memory.LBFGS_MIN_HISTORY or 2 * history * 3 * 4 * pixels <= memory.LBFGS_HISTORY_BYTES


def test_a_picture_that_does_not_fit_is_tiled_in_the_largest_tiles_that_fit():
    # Untiled, a 4096×3072 fp32 run needs far more than 8 GB.
    with pytest.raises(ResourceError):
        memory.check_fits((4000, 3000), 4096, [(4096, 3072)], "fp32", 8 * GB, "computer")
    tile = memory.plan_tiles((4000, 3000), 4096, [(4096, 3072)], "fp32", 8 * GB, "computer")
    assert tile in memory.TILE_SIDES
    assert memory.tiled_bytes(4096, 3072, tile, "fp32") <= 8 * GB * memory.HEADROOM
    larger = [t for t in memory.TILE_SIDES if t > tile]
    assert all(memory.tiled_bytes(4096, 3072, t, "fp32") > 8 * GB * memory.HEADROOM for t in larger)
    # What fits untiled runs untiled; tiles asked for are used; a tile as large as the picture is no tile.
    assert memory.plan_tiles((4000, 3000), 512, [(512, 384)], "fp32", 8 * GB, "computer") is None
    assert memory.plan_tiles((4000, 3000), 512, [(512, 384)], "fp32", 8 * GB, "computer", tile=256) == 256
    assert memory.plan_tiles((4000, 3000), 512, [(512, 384)], "fp32", 8 * GB, "computer", tile=512) is None


def test_with_memory_to_spare_a_print_picture_runs_in_fewer_larger_tiles():
    # 24 GB, as this development machine: a 4096 px picture does not fit whole, but tiles of 2048 px do.
    tile = memory.plan_tiles((4000, 3000), 4096, [(4096, 3072)], "fp32", 24 * GB, "computer")
    assert tile is not None and tile > 1024
    assert memory.tiled_bytes(4096, 3072, tile, "fp32") <= 24 * GB * memory.HEADROOM


def test_a_picture_too_large_even_in_tiles_is_refused_with_what_it_needs():
    with pytest.raises(ResourceError, match=r"even in tiles of 256 px, but only 0.5 GB is free"):
        memory.plan_tiles((4000, 3000), 8192, [(8192, 6144)], "fp32", GB // 2, "computer")


def test_the_suggested_size_fits_once_the_optimiser_is_counted():
    available = 3 * GB
    with pytest.raises(ResourceError, match=r"use a size of (\d+) px or less") as refused:
        memory.check_fits((4000, 3000), 4096, [(4096, 3072)], "fp32", available, "computer")
    suggested = int(refused.value.args[0].split("use a size of ")[1].split(" px")[0])
    memory.check_fits((4000, 3000), suggested, [(suggested, suggested * 3 // 4)], "fp32", available, "computer")


def test_a_run_plan_has_its_tiles_memory_work_and_refusal_before_it_starts():
    from style_studio.core.run.plan import Target, plan_run
    from style_studio.core.settings import Settings

    # The schedule from screen size: 1024 -> 2048 -> 4096 px, 300 + 150 + 75 iterations.
    print_size = Settings(size=4096, first_scale=0, iterations=300)
    plan = plan_run(print_size, (4000, 3000), [(4096, 3072)], Target("cpu", "fp32", 8 * GB))
    assert plan.refusal is None and plan.tile in memory.TILE_SIDES
    assert plan.sizes == [(1024, 768), (2048, 1536), (4096, 3072)] and plan.iterations == [300, 150, 75]
    assert plan.bytes <= 8 * GB * memory.HEADROOM
    # Megapixel-iterations: 300 at 0.79 MP, 150 at 3.1 MP, 75 at 12.6 MP (tiled scales cost more).
    untiled_work = (300 * 1024 * 768 + 150 * 2048 * 1536 + 75 * 4096 * 3072) / 1e6
    assert untiled_work < plan.work <= untiled_work * memory.TILED_TIME_FACTOR
    one_scale = Settings(size=512, scales=1, iterations=300)
    small = plan_run(one_scale, (4000, 3000), [(512, 384)], Target("cpu", "fp32", 8 * GB))
    assert small.tile is None and small.work == pytest.approx(300 * 512 * 384 / 1e6)
    refused = plan_run(print_size, (4000, 3000), [(4096, 3072)], Target("cpu", "fp32", GB))
    assert refused.refusal is not None and "use a size of" in refused.refusal
    with pytest.raises(ResourceError, match="use a size of"):
        refused.check()
