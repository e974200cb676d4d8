"""Queue intake: the window's photo, styles, settings and regions (or a folder of photos) as queued jobs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtWidgets import QFileDialog, QWidget

from ..core import BUSY as QUEUE_BUSY
from ..core import SettingsError, item_for
from .documents import pictures_folder
from .pictures import InputImage
from .queue_panel import images_in

if TYPE_CHECKING:
    from .feedback import Feedback
    from .queue_panel import QueueController
    from .state import WindowState
    from .store import Store


class QueueIntake:
    """What the window puts in the render queue: the current photo, styles, settings and regions, or a folder.

    Args:
        state: what a queued job is made of (its pictures, settings and regions).
        queue: the queue's controller; ``show_queue`` brings its panel forward.
        store: where the queue's folder is remembered.
        feedback: tells the user why nothing was queued; ``parent``: the dialogs' parent.
    """

    def __init__(
        self,
        *,
        state: WindowState,
        queue: QueueController,
        store: Store,
        show_queue: Callable[[], None],
        feedback: Feedback,
        parent: QWidget,
    ) -> None:
        self.state, self.queue, self.store = state, queue, store
        self.show_queue, self.feedback, self.parent = show_queue, feedback, parent

    def output_folder(self) -> Path:
        return self.store.queue_folder() or (pictures_folder() / "Style Studio")

    def queued_inputs(self) -> tuple[Path, list[Path]] | None:
        """The current photo and styles as files (a pasted one is saved into the queue's folder first)."""
        if not self.queue.queue.owned:
            self.feedback.error(f"{QUEUE_BUSY[0].upper()}{QUEUE_BUSY[1:]}.")
            return None
        content = self.state.photo
        if content is None or not self.state.styles:
            self.feedback.error("Add a content image and at least one style image first.")
            return None
        try:
            photo = self.as_file(content)
            styles = [self.as_file(style) for style in self.state.styles]
        except OSError as exc:
            self.feedback.error(f"The pasted picture could not be kept for the queue ({exc.strerror or exc})")
            return None
        return photo, styles

    def as_file(self, item: InputImage) -> Path:
        if item.path is not None and item.path.is_file():
            return item.path
        from ..core import image_hash

        folder = self.queue.queue.folder / "inputs"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{image_hash(item.image)[:16]}.png"
        if not path.exists():
            item.image.save(path)
        return path

    def add(self, output_folder: Path | None = None) -> bool:
        """Queue the current photo and styles with the current settings and regions."""
        inputs = self.queued_inputs()
        if inputs is None:
            return False
        try:
            settings = self.state.settings.validate()
        except SettingsError as exc:
            self.feedback.error(str(exc))
            return False
        regions = self.state.regions_for_run()
        folder = output_folder or self.output_folder()
        photo, styles = inputs
        video = self.state.video
        mask = self.state.mask if regions is not None else None
        item = item_for(photo, styles, settings, folder, self.queue.queue, regions=regions, video=video, mask=mask)
        self.show_queue()
        self.queue.add([item])
        return True

    def apply_to_folder_dialog(self) -> None:
        source = QFileDialog.getExistingDirectory(self.parent, "Pictures to stylise", str(self.state.open_dir()))
        if not source:
            return
        target = QFileDialog.getExistingDirectory(
            self.parent, "Where the stylised pictures go", str(self.output_folder())
        )
        if target:
            self.store.save_queue_folder(Path(target))
            self.apply_to_folder(Path(source), Path(target))

    def apply_to_folder(self, folder: Path, output_folder: Path) -> int:
        """Queue every picture in ``folder`` with the current styles and settings; returns how many."""
        inputs = self.queued_inputs()
        if inputs is None:
            return 0
        try:
            settings = self.state.settings.validate()
            photos = images_in(folder)
        except (SettingsError, OSError) as exc:
            self.feedback.error(str(exc))
            return 0
        if not photos:
            self.feedback.error(f"{folder} has no pictures to stylise.")
            return 0
        _, styles = inputs
        # The regions were painted on this photo: other photos get the styles everywhere.
        items = [item_for(photo, styles, settings, output_folder, self.queue.queue) for photo in photos]
        self.show_queue()
        self.queue.add(items)
        return len(items)
