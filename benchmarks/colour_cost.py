"""What the colour term and the palette start cost: one evaluation (forward and backward) of the defaults' loss
with the colour term and without it, interleaved six times each, and the palette start, at 384 px (chelsea ×
starry_night, proxy weights, fp32).

    python benchmarks/colour_cost.py
"""

from __future__ import annotations

import dataclasses
import statistics
import time

import torch
from _common import machine, weights
from PIL import Image
from quality import SAMPLES, fitted

from style_studio.core.network.device import resolve
from style_studio.core.objective import palette
from style_studio.core.objective.inputs import ScaleInputs
from style_studio.core.objective.objective import Objective
from style_studio.core.run.compute import network_for
from style_studio.core.settings import DEFAULTS


def main() -> None:
    loaded = weights()
    photo = Image.open(SAMPLES / "content" / "chelsea.png").convert("RGB")
    painting = Image.open(SAMPLES / "style" / "starry_night.jpg").convert("RGB")
    compute = resolve("cpu", "fp32")
    network = network_for(loaded, compute)
    size = fitted(photo, 384).size
    objectives, times = {}, {}
    for weight in (0.0, 1.0):
        settings = dataclasses.replace(DEFAULTS, size=384, colour_weight=weight, precision="fp32", device="cpu")
        inputs = ScaleInputs.prepare(photo, (painting,), size, settings, torch.device("cpu"))
        objectives[weight], times[weight] = Objective(network, inputs, settings, compute), []
    for _ in range(6):
        for weight, objective in objectives.items():
            image = inputs.content.clone().requires_grad_()
            began = time.perf_counter()
            objective.evaluate(image).total.backward()
            times[weight].append(time.perf_counter() - began)
    starts = []
    for _ in range(3):
        began = time.perf_counter()
        palette.recoloured(inputs.content, inputs.styles, [1.0])
        starts.append(time.perf_counter() - began)
    without, with_term = statistics.median(times[0.0]), statistics.median(times[1.0])
    print(f"{machine()}; {size[0]}×{size[1]} px")
    print(f"evaluation without the colour term {without * 1000:.0f} ms, with it {with_term * 1000:.0f} ms: "
          f"{with_term / without:.3f}x; the palette start {statistics.median(starts) * 1000:.0f} ms")  # fmt: skip


if __name__ == "__main__":
    main()
