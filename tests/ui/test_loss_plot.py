"""The loss plot: every curve named once, never hidden by its legend."""

from __future__ import annotations

import math

from style_studio.ui.loss_plot import LossPlot

TERMS = ["total", "content", "tv", "relu1_1", "relu2_1", "relu3_1", "relu4_1", "relu5_1"]


def fill(plot: LossPlot, qtbot, steps: int) -> None:
    for step in range(1, steps + 1):
        plot.add(step, {name: 10.0 / (step + i) for i, name in enumerate(TERMS)})
    qtbot.waitUntil(lambda: len(plot._curves) == len(TERMS), timeout=2_000)


def legend_names(plot: LossPlot) -> list[str]:
    return [label.text for _, label in plot.legend.items]


def test_a_second_run_names_each_curve_once(qtbot):
    plot = LossPlot()
    qtbot.addWidget(plot)
    fill(plot, qtbot, 5)
    plot.clear()
    assert legend_names(plot) == [] and plot.series("total") == []
    fill(plot, qtbot, 3)
    assert legend_names(plot) == TERMS
    assert plot.series("total") == [10.0, 5.0, 10.0 / 3]


def test_the_legend_sits_beside_the_curves_not_over_them(qtbot):
    # Drawn over the plot, the legend hid the newest steps of the curves.
    plot = LossPlot()
    qtbot.addWidget(plot)
    plot.resize(900, 160)
    plot.show()
    fill(plot, qtbot, 300)
    qtbot.waitExposed(plot)
    plot.view.ci.layout.activate()  # lay out now, not at the next event loop pass
    plot_box = plot.plot.sceneBoundingRect()
    legend_box = plot.legend.sceneBoundingRect()
    assert not plot_box.intersects(legend_box)
    assert legend_box.left() >= plot_box.right()


def test_the_first_steps_show_from_step_0_over_whole_decades(qtbot):
    # pyqtgraph's auto-range spread the first step over -49 ... 51, and under a
    # decade a log axis prints its minor tick labels on top of each other.
    plot = LossPlot()
    qtbot.addWidget(plot)
    plot.resize(700, 200)
    plot.show()
    qtbot.waitExposed(plot)
    plot.add(1, {name: 2.0 + i / 10 for i, name in enumerate(TERMS)})
    qtbot.waitUntil(lambda: len(plot._curves) == len(TERMS), timeout=2_000)
    (x_low, x_high), (y_low, y_high) = plot.plot.viewRange()
    assert -1 < x_low <= 0 and 10 <= x_high < 11
    assert y_high - y_low >= 2 and y_low <= math.log10(2.0) and math.log10(2.7) <= y_high
    decades, minor = plot.plot.getAxis("left")._tickLevels
    assert [label for _, label in decades] == ["0.1", "1", "10"]
    assert all(label == "" for _, label in minor)
    axis_box = plot.plot.getAxis("left").sceneBoundingRect()
    assert not plot.legend.sceneBoundingRect().intersects(axis_box)


def test_a_wide_range_of_losses_labels_at_most_five_decades(qtbot):
    plot = LossPlot()
    qtbot.addWidget(plot)
    plot.add(1, {"total": 30.0, "content": 2e-6})
    qtbot.waitUntil(lambda: len(plot._curves) == 2, timeout=2_000)
    decades, _ = plot.plot.getAxis("left")._tickLevels
    labels = [label for _, label in decades if label]
    # 1e-06 ... 100: nine decades, every other one labelled.
    assert len(decades) == 9 and labels == ["1e-06", "0.0001", "0.01", "1", "100"]
