"""The memory check: what counts as free, and what a run is estimated to need."""

from __future__ import annotations

import pytest
import torch

from style_studio.core import memory
from style_studio.core.device import free_device_memory
from style_studio.core.errors import ResourceError

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


def test_the_suggested_size_fits_once_the_optimiser_is_counted():
    available = 3 * GB
    with pytest.raises(ResourceError, match=r"use a size of (\d+) px or less") as refused:
        memory.check_fits((4000, 3000), 4096, [(4096, 3072)], "fp32", available, "computer")
    suggested = int(refused.value.args[0].split("use a size of ")[1].split(" px")[0])
    memory.check_fits((4000, 3000), suggested, [(suggested, suggested * 3 // 4)], "fp32", available, "computer")
