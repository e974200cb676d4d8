"""The run's device: the network on it (its weights shared between runs), its flags, its plan target, its
out-of-memory errors."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator

import torch

from ..network.device import Compute, free_device_memory
from ..network.vgg import FeatureNetwork, own_modules, store_as_fp16
from ..network.weights import NetworkWeights
from . import memory
from .plan import Target


def target_of(compute: Compute) -> Target:
    """What the run plan needs to know of a device: its kind, precision and free memory."""
    device = compute.device
    return Target(device.type, compute.precision, memory.available_bytes(device.type, free_device_memory(device)))


def network_for(weights: NetworkWeights, compute: Compute) -> FeatureNetwork:
    """The network ``weights`` make, on the compute device and in its dtype: its weights shared between runs, its
    modules the run's own (``own_modules``), so that the hooks of two runs at once (two threads calling the door)
    never meet.

    Under mixed precision the weights are stored in the autocast dtype: autocast
    would otherwise cast every parameter on every forward pass.
    """
    return own_modules(shared_network(weights, compute))


def shared_network(weights: NetworkWeights, compute: Compute) -> FeatureNetwork:
    """The network whose weights every run on ``compute`` shares (made once); no run hooks its modules."""
    dtype = compute.autocast_dtype or torch.float32
    return _network_on(weights, str(compute.device), compute.memory_format, dtype, compute.fp16_emulated)


@functools.lru_cache(maxsize=2)
def _network_on(
    weights: NetworkWeights, device: str, memory_format: torch.memory_format, dtype: torch.dtype, fp16_emulated: bool
) -> FeatureNetwork:
    network = weights.build_network().to(device=device, dtype=dtype).to(memory_format=memory_format)
    return store_as_fp16(network) if fp16_emulated else network


@contextlib.contextmanager
def device_flags(compute: Compute, deterministic: bool) -> Iterator[None]:
    """CUDA's global flags for the run, put back as they were afterwards.

    Deterministic runs use deterministic kernels only (the same seed gives the
    same picture); otherwise cuDNN times its kernels and keeps the fastest, as
    the size stays fixed for hundreds of iterations. "fp32" computes in
    float32, not in the TF32 that Ampere and later GPUs otherwise use.
    """
    if compute.device.type != "cuda":
        yield
        return
    cudnn, matmul = torch.backends.cudnn, torch.backends.cuda.matmul
    before = (cudnn.benchmark, cudnn.deterministic, cudnn.allow_tf32, matmul.allow_tf32)
    algorithms = (torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled())
    cudnn.benchmark, cudnn.deterministic = not deterministic, deterministic
    if deterministic:
        torch.use_deterministic_algorithms(True, warn_only=True)
    if compute.precision == "fp32":
        cudnn.allow_tf32 = matmul.allow_tf32 = False
    try:
        yield
    finally:
        cudnn.benchmark, cudnn.deterministic, cudnn.allow_tf32, matmul.allow_tf32 = before
        torch.use_deterministic_algorithms(algorithms[0], warn_only=algorithms[1])


def is_out_of_memory(error: BaseException) -> bool:
    """CUDA raises ``torch.OutOfMemoryError``; Apple's MPS a plain ``RuntimeError`` that says so."""
    return isinstance(error, torch.OutOfMemoryError) or "out of memory" in str(error).lower()


def empty_device_cache(device: torch.device) -> None:
    """Return the memory PyTorch's allocator keeps cached to the device."""
    if device.type == "cuda":
        torch.cuda.empty_cache()
    elif device.type == "mps":
        torch.mps.empty_cache()
