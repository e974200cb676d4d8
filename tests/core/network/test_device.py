"""Choosing the device and the precision: the decision table, with the hardware queries replaced."""

from __future__ import annotations

import pytest
import torch

from style_studio.core.network import device
from style_studio.core.network.device import resolve_precision


@pytest.mark.parametrize(
    ("capability", "expected"),
    [
        ((6, 1), "fp16"),  # Pascal
        ((7, 0), "fp16"),  # Volta: V100
        ((7, 5), "fp16"),  # Turing: RTX 20xx, T4 (emulated bf16 would be slow)
        ((8, 0), "bf16"),  # Ampere: A100
        ((8, 6), "bf16"),  # Ampere: RTX 30xx
        ((8, 9), "bf16"),  # Ada: RTX 40xx
        ((9, 0), "bf16"),  # Hopper
        ((12, 0), "bf16"),  # Blackwell
    ],
)
def test_auto_precision_on_cuda_follows_the_chosen_devices_compute_capability(monkeypatch, capability, expected):
    asked = []

    def capability_of(which):
        asked.append(which)
        return capability

    monkeypatch.setattr(torch.cuda, "get_device_capability", capability_of)
    # Emulated bf16 counts as "supported" here: it must not decide.
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)
    chosen = torch.device("cuda:1")
    assert resolve_precision("auto", chosen) == expected
    assert asked == [chosen], "the capability of another device than the chosen one was asked for"


@pytest.mark.parametrize("name", ["fp32", "bf16", "fp16"])
def test_an_explicit_precision_is_kept(name):
    assert resolve_precision(name, torch.device("cuda:0")) == name
    assert resolve_precision(name, torch.device("cpu")) == name


@pytest.mark.parametrize(("fast", "expected"), [(True, "bf16"), (False, "fp32")])
def test_auto_precision_on_the_cpu_depends_on_bf16_hardware(monkeypatch, fast, expected):
    monkeypatch.setattr(device, "cpu_has_fast_bf16", lambda: fast)
    assert resolve_precision("auto", torch.device("cpu")) == expected


def test_bf16_on_apple_gpus_is_refused_and_auto_is_fp32():
    mps = torch.device("mps")
    with pytest.raises(device.StyleStudioError, match="bf16 is not supported on mps"):
        resolve_precision("bf16", mps)
    assert resolve_precision("auto", mps) == "fp32"


@pytest.mark.parametrize("deterministic", [True, False])
@pytest.mark.parametrize(("precision", "tf32"), [("fp32", False), ("bf16", True)])
def test_a_cuda_run_sets_its_flags_and_puts_them_back(precision, tf32, deterministic):
    # cudnn.benchmark was switched on globally and never restored, which also made
    # results vary from run to run; and "fp32" ran TF32 convolutions on Ampere and
    # later. The flags are plain globals: no GPU is needed to see them set and restored.
    from style_studio.core.network.device import Compute
    from style_studio.core.run.compute import device_flags

    cudnn, matmul = torch.backends.cudnn, torch.backends.cuda.matmul
    saved = (cudnn.benchmark, cudnn.deterministic, cudnn.allow_tf32, matmul.allow_tf32)
    cudnn.allow_tf32 = matmul.allow_tf32 = True
    before = (cudnn.benchmark, cudnn.deterministic, cudnn.allow_tf32, matmul.allow_tf32)
    try:
        with device_flags(Compute(torch.device("cuda"), precision, channels_last=True), deterministic):
            assert cudnn.benchmark != deterministic and cudnn.deterministic == deterministic
            assert torch.are_deterministic_algorithms_enabled() == deterministic
            assert cudnn.allow_tf32 == tf32 and matmul.allow_tf32 == tf32
        assert (cudnn.benchmark, cudnn.deterministic, cudnn.allow_tf32, matmul.allow_tf32) == before
        assert not torch.are_deterministic_algorithms_enabled()
    finally:
        cudnn.benchmark, cudnn.deterministic, cudnn.allow_tf32, matmul.allow_tf32 = saved


def test_cublas_is_told_to_be_deterministic_before_cuda_starts():
    import os

    assert os.environ.get("CUBLAS_WORKSPACE_CONFIG") in (":4096:8", ":16:8")


@pytest.mark.parametrize("own, expected", [(None, "1"), ("0", "0")])
def test_style_studio_asks_for_huge_pages_before_torch_loads_unless_the_user_said_otherwise(own, expected):
    # PyTorch reads THP_MEM_ALLOC_ENABLE once, at its first allocation: set after
    # torch is imported, it would do nothing.
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "THP_MEM_ALLOC_ENABLE"}
    if own is not None:
        env["THP_MEM_ALLOC_ENABLE"] = own
    script = "import os, sys, style_studio; print(os.environ['THP_MEM_ALLOC_ENABLE'], 'torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True).stdout
    assert out.split() == [expected, "False"]
