"""The user's runs: start one from the window's pictures and settings, show it, keep its result; announce the plan."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtGui import QImage

from ..core import (
    FINISHED,
    IMAGENET,
    UNTRAINED,
    Checkpoint,
    Progress,
    RegionError,
    RunPlan,
    Settings,
    SettingsError,
    describe,
    fit_size,
    is_imagenet_cached,
)
from .history import HistoryEntry
from .regions_panel import style_map_image
from .runner import QUEUE, USER, RunOutcome, RunRequest
from .weights_dialog import WeightsDialog

if TYPE_CHECKING:
    from .main_window import MainWindow


class UserRuns:
    """The user's runs: started from the window's inputs, shown as they go, kept in the history when done."""

    def __init__(self, window: MainWindow) -> None:
        self.window = window
        #: (choice, label) of the weights of the run under way (the label as the run reports it).
        self.running_weights: tuple[str, str] | None = None
        self._running_plan: RunPlan | None = None  # the plan of the run under way: its work measures its speed
        self._final_size: tuple[int, int] | None = None  # the size previews are shown at

    def announced_plan(self, settings: Settings | None = None) -> RunPlan | None:
        """The plan the window announces for a run of ``settings`` (default: the panel's) on the pictures shown."""
        content = self.window.inputs.content
        if content is None:
            return None
        styles = [r.item.image.size for r in self.window.inputs.style_rows]
        return self.window.planner.plan(settings or self.window.current_settings(), content.image.size, styles)

    def update_needs(self) -> None:
        """Before Start: the memory the run will need, tiled or not, and how long it will take."""
        label = self.window.controls.needs
        plan = self.announced_plan()
        label.setText("" if plan is None else self.window.planner.describe(plan))
        label.setStyleSheet("color: #8a1c12;" if plan is not None and plan.refusal else "")

    def on_planned(self, plan: RunPlan) -> None:
        """The run that started planned this: later announcements plan for its device and precision."""
        self._running_plan = plan
        settings = self.window.controller.job_settings()
        if settings is not None:
            self.window.planner.learn(settings, plan)
            self.update_needs()

    def start(self, *, resume: Checkpoint | None = None) -> None:
        """Start a run with the current inputs and settings (going on from ``resume``, when given)."""
        if self.window.queue.busy:
            self.window.show_error("The queue is rendering: pause it (Queue panel, or Esc) to run here.")
            return
        if self.window.controller.running and not self.window.controller.stopping:
            return
        if self.window.video.running:
            self.window.show_error("The video is rendering: stop it (Esc) to run here.")
            return
        content = self.window.inputs.content
        if content is None or not self.window.inputs.style_rows:
            self.window.show_error("Add a content image and at least one style image first.")
            return
        try:
            # A resume runs with the checkpoint's own settings: the controls may round
            # or clamp them (a blend shown relative to its largest weight, a command
            # line's weight past a slider's end), and the run would then be refused.
            settings = (resume.settings if resume is not None else self.window.current_settings()).validate()
        except SettingsError as exc:
            self.window.show_error(str(exc))
            return
        ready = self.ensure_weights(settings)
        if ready is None:
            return
        settings = ready
        regions = self.window.regions.current()
        if regions is not None and resume is None:
            try:
                regions.check(len(self.window.inputs.style_rows))
            except RegionError as exc:
                self.window.show_error(f"The regions cannot be used: {exc}.")
                return
        self.window.banner.hide()
        rows = self.window.inputs.style_rows
        job = RunRequest(
            content.image,
            tuple(r.item.image for r in rows),
            settings,
            content.name,
            tuple(r.item.name for r in rows),
            resume,
            regions,
        )
        self._final_size = fit_size(*content.image.size, settings.size)
        self.window.loss_plot.clear()
        self.window.run_bar.begin()
        self.running_weights = (settings.weights, describe(settings.weights))
        self.window.controller.start(job)
        self.window._update_state()

    def ensure_weights(self, settings: Settings) -> Settings | None:
        """Make sure the chosen weights exist; offer the ways to get them when they do not."""
        if settings.weights == UNTRAINED:
            return settings
        if settings.weights != IMAGENET:
            if Path(settings.weights).is_file():
                return settings
            self.window.show_error(
                f"The weights file {settings.weights} is missing. Choose another file, the ImageNet "
                "weights, or untrained features under Computation → Weights."
            )
            return None
        if is_imagenet_cached():
            return settings
        dialog = WeightsDialog(self.window, start_dir=str(Path.home()))
        if not dialog.exec() or dialog.choice is None:
            return None
        if dialog.choice not in (IMAGENET, UNTRAINED):
            self.window.use_weights_file(Path(dialog.choice))
        else:
            self.window.controls.set_weights(dialog.choice)
        return dataclasses.replace(settings, weights=dialog.choice)

    def stop(self) -> None:
        if self.window.controller.owner == QUEUE:
            self.window.queue.set_paused(True)  # Stop (Esc) during a queued job pauses the queue
            self.window.show_info("The queue is paused; the job under way will go again when it goes on")
            return
        if self.window.controller.running:
            self.window.controller.stop()
            self.window.run_bar.show_stopping()
            self.window._update_state()

    def on_progress(self, record: Progress) -> None:
        if self.window.controller.owner != USER:  # the queue's: its panel shows it
            return
        self.window.run_bar.show_progress(record)
        if self.running_weights is not None and record.weights != self.running_weights[1]:
            self.running_weights = (self.running_weights[0], record.weights)
            self.window._update_weights_label()
        self.window.device_label.setText(record.compute)
        if not record.done and not record.within_iteration:
            self.window.loss_plot.add(record.step, record.loss_curves())
        if record.style_map is not None and self.window.commands.style_map.isChecked():
            self.window.view.set_overlay("style map", style_map_image(record.style_map))
        if record.event:
            self.window.show_info(record.event)

    def on_preview(self, image: QImage) -> None:
        if self.window._compare is None and self.window.controller.owner == USER:
            self.window.view.set_image(image, self._final_size)

    def on_finished(self, outcome: RunOutcome) -> None:
        if outcome.owner != USER:  # the queue's: it writes its picture
            self.window._update_state()
            return
        self.measure_speed(outcome)
        if outcome.result is not None:
            label = outcome.weights_label or (self.running_weights[1] if self.running_weights else "")
            entry = HistoryEntry(
                outcome.result,
                outcome.settings,
                label,
                outcome.stop_reason or "failed",
                deep=outcome.deep,
                regions=outcome.regions,
                key=outcome.key if outcome.stop_reason == FINISHED else None,
            )
            if self.window.queue.closing:
                self.window.history.add(entry)  # cut off by closing: its checkpoint keeps it, to be resumed
            else:
                entry = self.window.kept.add(entry)
            self.window._show(entry)
        if outcome.error:
            self.window.show_error(outcome.error)
        self.window.run_bar.show_outcome(outcome)
        self.running_weights = None
        self.window._update_state()

    def measure_speed(self, outcome: RunOutcome) -> None:
        """Keep a finished run's speed per pixel, for the next runs' expected time."""
        last, plan = outcome.last, self._running_plan
        self._running_plan = None
        if outcome.stop_reason != FINISHED or last is None or last.elapsed < 1.0 or plan is None or plan.work <= 0:
            return
        self.window.store.save_speed(last.elapsed / plan.work, last.compute)
        self.update_needs()
