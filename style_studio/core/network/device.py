"""Choosing the device and the numeric precision a run computes in."""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch

from ..errors import StyleStudioError

_DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}

# cuBLAS is deterministic only with a fixed workspace; it reads this when CUDA
# starts, so it is set when the device module is first imported (a user's own value stays).
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")


@dataclass(frozen=True)
class Compute:
    """Where and how a run computes.

    Attributes:
        device: the torch device.
        precision: "fp32", "bf16" or "fp16": the autocast dtype of the
            network's convolutions. Under bf16, Gram matrices are bf16
            products accumulated in float32 and rounded to bf16 once (see
            ``losses.gram``); under fp16 and fp32 they are computed in float32.
            Losses, their factors and the image are float32 throughout. "fp32"
            on a CUDA GPU means true float32: TF32 is switched off for the run.
        channels_last: use the NHWC memory format (faster convolutions with
            oneDNN on CPUs and with cuDNN's tensor cores).
        fp16_emulated: with precision "fp16", compute fp16's numbers on
            float32 kernels (``features.store_as_fp16``): how tests and
            benchmarks check fp16's underflow and loss scaling on a CPU,
            whose own fp16 is about 40x slower than fp32. Never chosen by
            ``resolve``.
    """

    device: torch.device
    precision: str
    channels_last: bool
    fp16_emulated: bool = False

    def __post_init__(self) -> None:
        if self.fp16_emulated and self.precision != "fp16":
            raise ValueError(f"only fp16 is emulated, not {self.precision}")

    @property
    def autocast_dtype(self) -> torch.dtype | None:
        return None if self.precision == "fp32" or self.fp16_emulated else _DTYPES[self.precision]

    @property
    def memory_format(self) -> torch.memory_format:
        return torch.channels_last if self.channels_last else torch.contiguous_format

    def describe(self) -> str:
        name = str(self.device)
        if self.device.type == "cuda":
            name += f" ({torch.cuda.get_device_name(self.device)})"
        return f"{name}, {self.precision}" + (" (emulated on fp32 kernels)" if self.fp16_emulated else "")


def free_device_memory(device: torch.device) -> int | None:
    """Bytes a run may still allocate on a GPU; None on the CPU (the OS says, see ``memory``).

    PyTorch keeps freed blocks reserved for reuse: they are free for the next
    run too, so a second run after a large one is not refused for the first
    one's cache. On Apple GPUs, Metal's recommended working set bounds it.
    """
    if device.type == "cuda":
        free, _total = torch.cuda.mem_get_info(device)
        cached = torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)
        return int(free + cached)
    if device.type == "mps":
        return int(torch.mps.recommended_max_memory() - torch.mps.current_allocated_memory())
    return None


def cpu_has_fast_bf16() -> bool:
    """AVX512-BF16 or AMX: the CPUs on which bf16 convolutions beat fp32."""
    cpu = getattr(torch, "cpu", None)
    for probe in ("_is_avx512_bf16_supported", "_is_amx_tile_supported"):
        fn = getattr(cpu, probe, None)
        if fn is not None and fn():
            return True
    return False


def mps_available() -> bool:
    backend = getattr(torch.backends, "mps", None)
    return bool(backend and backend.is_available())


def resolve_device(name: str) -> torch.device:
    """ "auto" -> CUDA if available, then MPS, else CPU; anything else as given.

    Raises:
        StyleStudioError: the device was asked for by name but is not available.
    """
    if name == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        if mps_available():
            return torch.device("mps")
        return torch.device("cpu")
    device = torch.device(name)
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise StyleStudioError(f"device {name} was asked for, but no CUDA GPU is available; use --device auto")
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise StyleStudioError(
                f"device {name} does not exist: this machine has {torch.cuda.device_count()} CUDA device(s)"
            )
    if device.type == "mps" and not mps_available():
        raise StyleStudioError("device mps was asked for, but Apple's Metal backend is not available here")
    return device


#: The first CUDA compute capability with bf16 tensor cores (Ampere).
BF16_CAPABILITY = (8, 0)


def cuda_has_fast_bf16(device: torch.device) -> bool:
    """Whether ``device`` (the one chosen, not the current one) computes bf16 in hardware.

    ``torch.cuda.is_bf16_supported()`` also counts emulation, which is slow on
    Turing and Volta (RTX 20xx, T4, V100), and asks about the current device.
    """
    return torch.cuda.get_device_capability(device) >= BF16_CAPABILITY


def resolve_precision(name: str, device: torch.device) -> str:
    """ "auto" -> mixed precision where the device does it well, else fp32.

    bf16 on CUDA GPUs with bf16 hardware (compute capability 8.0 and later),
    fp16 on older ones; bf16 on CPUs with AVX512-BF16 or AMX; fp32 on MPS and
    other CPUs.
    """
    if name != "auto":
        if name == "bf16" and device.type == "mps":
            raise StyleStudioError("bf16 is not supported on mps; use fp16 or fp32")
        return name
    if device.type == "cuda":
        return "bf16" if cuda_has_fast_bf16(device) else "fp16"
    if device.type == "cpu" and cpu_has_fast_bf16():
        return "bf16"
    return "fp32"


def resolve(device: str, precision: str) -> Compute:
    dev = resolve_device(device)
    prec = resolve_precision(precision, dev)
    # Channels-last pays off wherever oneDNN or cuDNN run the convolutions;
    # MPS gains nothing from it.
    return Compute(dev, prec, channels_last=dev.type in ("cpu", "cuda"))
