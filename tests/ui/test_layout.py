"""The picture first: on a laptop's screen and on a desktop's, the picture takes at least half of the window."""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import QScrollArea


def area(widget) -> int:
    return widget.width() * widget.height()


@pytest.mark.parametrize("screen", [(1366, 768), (1920, 1080)], ids=["1366x768", "1920x1080"])
def test_the_picture_takes_at_least_half_of_the_window(make_window, qtbot, screen):
    window = make_window()
    width, height = min(screen[0], 1600), min(screen[1], 1000)  # the size it opens at on that screen
    window.resize(width, height)
    window.reset_layout()
    window.show()
    qtbot.waitExposed(window)
    qtbot.wait(50)
    assert area(window.view) >= 0.5 * area(window), (window.view.size(), window.size())


def test_docks_a_user_has_not_opened_start_closed_and_open_when_used(window, qtbot):
    window.show()
    qtbot.waitExposed(window)
    assert not window.regions_dock.isVisible() and not window.queue_dock.isVisible()
    assert window.history_dock.isVisible() and window.inputs_dock.isVisible()
    window.commands.paint.trigger()
    assert window.regions_dock.isVisible()
    window.regions_dock.hide()
    window.reset_layout()
    assert not window.regions_dock.isVisible() and window.history_dock.isVisible()


def test_the_settings_column_fits_its_rows_without_scrolling_sideways(window, qtbot):
    window.resize(1366, 768)
    window.reset_layout()
    window.show()
    qtbot.waitExposed(window)
    column = window.controls.parentWidget().parentWidget()
    assert isinstance(column, QScrollArea)
    for opened in (None, window.controls.more, window.controls.more_layers):  # and with every fold open
        if opened is not None:
            opened.expand(animate=False)
            qtbot.wait(20)
        assert not column.horizontalScrollBar().isVisible()
        assert window.controls.width() >= window.controls.minimumSizeHint().width()


@pytest.mark.parametrize("screen", [(1366, 768), (1920, 1080)], ids=["1366x768", "1920x1080"])
def test_fit_enlarges_a_picture_smaller_than_the_view(window, qtbot, screen):
    from PySide6.QtGui import QImage

    window.resize(min(screen[0], 1600), min(screen[1], 1000))
    window.show()
    qtbot.waitExposed(window)
    small = QImage(128, 72, QImage.Format.Format_RGB888)
    small.fill(0xFF0000)
    window.view.set_image(small)
    window.view.fit()
    assert window.view.zoom() > 2.0


@pytest.mark.parametrize("screen", [(1366, 768), (1920, 1080)], ids=["1366x768", "1920x1080"])
def test_a_notice_lies_over_the_picture_and_fades_an_error_stays_until_a_new_photo(
    window, qtbot, monkeypatch, files, screen
):
    from style_studio.ui.pictures import InputImage
    from style_studio.ui.widgets import MessageBanner

    photo, other, _, _ = files

    monkeypatch.setattr(MessageBanner, "NOTICE_SECONDS", 0.2)
    window.resize(min(screen[0], 1600), min(screen[1], 1000))
    window.show()
    qtbot.waitExposed(window)
    before = window.view.geometry()
    window.show_info("Exported to out.png")
    assert window.banner.isVisible() and window.view.geometry() == before  # over the picture, not pushing it
    assert window.banner.geometry().top() >= 0 and window.banner.parentWidget() is window.view
    qtbot.waitUntil(lambda: window.banner.isHidden(), timeout=3000)
    window.show_error("out.png: the folder is read-only")
    qtbot.wait(1200)
    assert window.banner.isVisible() and "read-only" in window.banner.text()
    window.inputs.use_as_content(InputImage.from_file(photo))
    assert window.banner.isHidden()
    window.banner.show_message("Resume the unfinished run?", "info", [("Resume", lambda: None)])
    window.inputs.use_as_content(InputImage.from_file(other))
    qtbot.wait(400)
    assert window.banner.isVisible()  # a question waits for its answer


def test_an_error_stays_until_the_users_next_action_and_one_the_action_causes_stays(window, qtbot):
    window.show()
    qtbot.waitExposed(window)
    window.show_error("out.png: the folder is read-only")
    window.commands.fit.trigger()  # a command
    assert window.banner.isHidden()
    window.show_error("out.png: the folder is read-only")
    window.state.set("size", 64)  # a setting moved
    assert window.banner.isHidden()
    window.state.set_styles(())  # Start now has nothing to paint with (pressed before it greys out): its error stays
    window.commands.start.setEnabled(True)
    window.commands.start.trigger()
    assert window.banner.isVisible() and window.banner.kind == "error"


def test_the_style_measure_offers_every_style_loss_by_its_label(window):
    from style_studio.core.settings import STYLE_LOSS_KINDS

    box = window.controls.widget("style_loss")
    offered = {box.itemData(i): box.itemText(i) for i in range(box.count())}
    assert offered == {name: kind.label for name, kind in STYLE_LOSS_KINDS.items()}


def test_the_run_s_needs_get_every_line_they_wrap_to(make_window, qtbot):
    """At the settings column's width the needs wrap to several lines: none is cut off by its row."""
    window = make_window(settings=None)
    window.resize(1366, 768)
    window.reset_layout()
    window.show()
    qtbot.waitExposed(window)
    needs = window.controls.needs
    needs.setText("Needs about 0.5 GB · about 3 min 15 s on cpu, fp32 and some more words here")
    qtbot.wait(50)
    assert needs.height() >= needs.heightForWidth(needs.width()) > needs.fontMetrics().height() * 1.5


def test_the_run_bar_says_a_picture_from_the_history_is_one(window, qtbot):
    from tests.ui.test_window import run_to_end

    run_to_end(qtbot, window)
    entry = window.state.shown
    assert window.run_bar.progress.format().startswith("Done")
    window.state.show(None)
    window.history.entrySelected.emit(entry)
    assert window.run_bar.progress.format().startswith("From the history: ")


def test_a_history_entry_says_its_iterations_per_scale_not_the_scales_setting():
    from PIL import Image

    from style_studio.core import FINISHED, Settings
    from style_studio.ui.pictures import HistoryEntry

    entry = HistoryEntry(Image.new("RGB", (8, 8)), Settings(size=512, scales=0), "untrained", FINISHED)
    assert "150 + 75 iterations" in entry.summary() and "0 scale" not in entry.summary()


def test_before_after_has_a_handle_to_drag_wider_than_its_line(qtbot):
    from PySide6.QtCore import QPoint, Qt
    from PySide6.QtGui import QImage

    from style_studio.ui.image_view import ImageView

    view = ImageView()
    qtbot.addWidget(view)
    view.resize(400, 300)
    view.show()
    qtbot.waitExposed(view)
    for setter, colour in ((view.set_image, 0x3050F0), (view.set_before, 0xF0A040)):
        picture = QImage(200, 100, QImage.Format.Format_RGB888)
        picture.fill(colour)
        setter(picture)
    view.fit()
    view.set_split(True)
    target = view._target()
    handle = QPoint(round(target.center().x()) + 10, round(target.center().y()))  # on the handle, off the line
    qtbot.mousePress(view, Qt.MouseButton.LeftButton, pos=handle)
    qtbot.mouseMove(view, QPoint(round(target.left() + target.width() * 0.25), handle.y()))
    qtbot.mouseRelease(
        view, Qt.MouseButton.LeftButton, pos=QPoint(round(target.left() + target.width() * 0.25), handle.y())
    )
    assert abs(view._split - 0.25) < 0.05


def test_a_style_s_name_and_the_photo_s_are_read_whole_with_their_size_below(window, qtbot):
    window.resize(1366, 768)
    window.reset_layout()
    window.show()
    qtbot.waitExposed(window)
    (row,) = window.inputs.style_rows
    label = row.name_label
    assert label.fontMetrics().horizontalAdvance("starry_night.jpg") <= label.width()  # not cut to "starry_n…"
    assert window.inputs.content_zone.caption.text() == "chelsea.png\n451 × 300 px"


def test_no_tab_bar_is_left_over_the_picture_or_the_status_bar_after_a_reset(window, qtbot):
    """Hidden Regions and Queue docks left their tab bar over the status bar, and each Reset layout left the old
    History | Loss bar drawn over the photo and styles."""
    from PySide6.QtWidgets import QTabBar

    def shown_bars() -> list[list[str]]:
        inside = window.rect()
        return [
            [bar.tabText(i) for i in range(bar.count())]
            for bar in window.findChildren(QTabBar)
            if bar.isVisible() and bar.count() and inside.intersects(bar.geometry())
        ]

    window.show()
    qtbot.waitExposed(window)
    assert shown_bars() == [["History", "Loss"]]
    for _ in range(2):
        window.reset_layout()
        qtbot.wait(20)
        assert shown_bars() == [["History", "Loss"]]
