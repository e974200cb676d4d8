"""The loss plot: every curve named once, never hidden by its legend."""

from __future__ import annotations

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
