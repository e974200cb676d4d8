"""What the window announces before Start: the run's own plan (``core.plan_run``), for the device it will get.

The window does not load torch to find the device. It plans for the device
and precision the last run with the same choices got (each run reports its
plan), and before any run for the CPU, with "auto" precision counted as
fp32, the most memory a device can need.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..core import RunPlan, Settings, Target, available_bytes, plan_run
from .run_bar import duration
from .store import Store


class RunPlanner:
    def __init__(self, store: Store) -> None:
        self.store = store
        self._seen: dict[tuple[str, str], Target] = {}

    def target(self, settings: Settings) -> Target:
        """The device, precision and free memory a run of ``settings`` will get, as far as the window knows."""
        seen = self._seen.get((settings.device, settings.precision))
        if seen is not None:
            device_type, precision = seen.device_type, seen.precision
        else:
            speed = self.store.speed()
            guessed_gpu = settings.device == "auto" and speed is not None and not speed[1].startswith("cpu")
            device_type = "cuda" if guessed_gpu else settings.device.split(":")[0].replace("auto", "cpu")
            precision = "fp32" if settings.precision == "auto" else settings.precision
        available = available_bytes("cpu") if device_type == "cpu" else (seen.available if seen else None)
        return Target(device_type, precision, available)

    def plan(
        self, settings: Settings, content_size: tuple[int, int], style_sizes: Sequence[tuple[int, int]]
    ) -> RunPlan:
        return plan_run(settings, content_size, style_sizes, self.target(settings))

    def learn(self, settings: Settings, plan: RunPlan) -> None:
        """A run's own plan: later runs with the same device and precision choices get the same target."""
        self._seen[(settings.device, settings.precision)] = plan.target

    def describe(self, plan: RunPlan) -> str:
        """The announcement: memory, tiles and expected time; or why the run cannot start."""
        if plan.refusal is not None:
            return f"Too large for this computer: {plan.refusal}"
        text = f"Needs about {plan.bytes / 2**30:.1f} GB"
        if plan.tile is not None:
            text += f", in tiles of {plan.tile} px"
        speed = self.store.speed()
        if speed is not None:
            text += f" · about {duration(plan.work * speed[0])} on {speed[1]}"
        return text
