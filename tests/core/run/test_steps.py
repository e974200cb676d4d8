"""Step control on synthetic loss sequences: no network, every case chosen, nothing chaotic."""

from __future__ import annotations

import math

import pytest
import torch

from style_studio.core.errors import StyleStudioError
from style_studio.core.run.steps import (
    DIVERGENCE_FACTOR,
    MAX_BLOWUPS,
    STEP_BACKOFF,
    STEP_RECOVERY,
    Kept,
    StepControl,
    Undone,
    WentBack,
)


def drive(control: StepControl, losses: list[float], image: torch.Tensor) -> list:
    """Feed ``losses`` as the losses of images 0, 1, 2, ...: the image before step i holds the value i."""
    verdicts = []
    for i, loss in enumerate(losses):
        image.fill_(float(i))
        control.before_step(image)
        image.fill_(float(i) + 0.5)  # the optimiser moved it
        verdicts.append(control.judge(loss, image, i + 1))
    return verdicts


@pytest.fixture
def image():
    return torch.zeros(1, 3, 2, 2)


def test_the_lowest_loss_image_is_kept_not_the_last(image):
    # An Adam run that overshoots at the end without blowing up.
    control = StepControl(image, "adam", 0.25)
    verdicts = drive(control, [8.7, 49.0, 7.6, 5.1, 8.1, 12.2], image)
    assert [v.improved for v in verdicts] == [True, False, True, True, False, False]
    assert not any(isinstance(v, WentBack) for v in verdicts)
    assert control.best == 5.1
    assert torch.equal(control.lowest, torch.full_like(image, 3.0))


def test_a_blow_up_goes_back_to_the_lowest_loss_image_and_lowers_the_step(image):
    control = StepControl(image, "lbfgs", 1.0)
    verdicts = drive(control, [3.0, 2.0, 2.0 * DIVERGENCE_FACTOR + 1], image)
    assert isinstance(verdicts[-1], WentBack) and not verdicts[-1].improved
    assert verdicts[-1].step_size == 1.0 / STEP_BACKOFF["lbfgs"]
    assert "went back to the lowest-loss image" in verdicts[-1].event and "iteration 3" in verdicts[-1].event
    assert torch.equal(image, torch.full_like(image, 1.0)), "the image did not go back to the lowest-loss one"


@pytest.mark.parametrize("loss", [math.nan, math.inf])
def test_a_non_finite_loss_from_the_start_ends_the_run_with_what_to_lower(image, loss):
    """No image of the scale had a finite loss: there is nothing to go back to, and no step size helps (a style
    weight of 1e308 wrote the start picture with status 0)."""
    control = StepControl(image, "adam", 0.02)
    with pytest.raises(StyleStudioError, match="not finite .* lower the style, content or smoothing weight"):
        drive(control, [loss], image)


@pytest.mark.parametrize("loss", [math.nan, math.inf])
def test_a_non_finite_loss_after_a_finite_one_is_a_blow_up(image, loss):
    control = StepControl(image, "adam", 0.02)
    verdict = drive(control, [1.0, loss], image)[1]
    assert isinstance(verdict, WentBack) and "non-finite" in verdict.event
    assert torch.equal(image, torch.zeros_like(image)), "the image did not go back to the lowest-loss one"


def test_a_lowered_step_size_is_doubled_back_after_good_iterations_and_never_above_the_set_one(image):
    control = StepControl(image, "lbfgs", 1.0)
    losses = [4.0, 100.0, 100.0] + [3.0 - 0.01 * i for i in range(3 * STEP_RECOVERY)]
    verdicts = drive(control, losses, image)
    assert verdicts[2].step_size == 0.25
    raised = [i for i, v in enumerate(verdicts) if isinstance(v, Kept) and v.step_raised]
    assert raised == [2 + STEP_RECOVERY, 2 + 2 * STEP_RECOVERY]
    assert [verdicts[i].step_size for i in raised] == [0.5, 1.0]
    assert control.step_size == 1.0


def test_too_many_blow_ups_in_a_row_stop_the_run_with_a_clear_error(image):
    control = StepControl(image, "adam", 1e4)
    drive(control, [1.0], image)
    with pytest.raises(StyleStudioError, match=f"kept diverging \\({MAX_BLOWUPS} times in a row"):
        drive(control, [math.inf] * MAX_BLOWUPS, image)


def test_a_good_iteration_resets_the_count_of_blow_ups_in_a_row(image):
    control = StepControl(image, "lbfgs", 1.0)
    losses = [1.0] + ([math.inf] * (MAX_BLOWUPS - 1) + [0.9]) * 2
    verdicts = drive(control, losses, image)
    assert sum(isinstance(v, WentBack) for v in verdicts) == 2 * (MAX_BLOWUPS - 1)


def test_after_a_new_objective_a_higher_loss_is_not_a_blow_up(image):
    # Content from 1 to 100 (the slider's top) multiplies the loss: measured against
    # the old best, every iteration looked like a blow-up and the run stopped.
    control = StepControl(image, "lbfgs", 1.0)
    drive(control, [1.0, 0.9], image)
    control.new_objective()
    verdicts = drive(control, [90.0, 80.0], image)
    assert not any(isinstance(v, WentBack) for v in verdicts) and all(v.improved for v in verdicts)


def test_an_overflowed_gradient_undoes_the_step_but_its_loss_still_counts(image):
    control = StepControl(image, "lbfgs", 1.0)
    drive(control, [3.0], image)
    image.fill_(5.0)
    control.before_step(image)
    image.fill_(float("nan"))  # the step taken from an infinite gradient
    verdict = control.judge(2.0, image, 2, gradient_finite=False)
    assert isinstance(verdict, Undone) and verdict.improved and verdict.event is None
    assert torch.equal(image, torch.full_like(image, 5.0)), "the step was not undone"
    assert torch.equal(control.lowest, torch.full_like(image, 5.0)) and control.step_size == 1.0


def test_the_loss_scale_halves_on_overflow_and_doubles_after_good_iterations():
    from style_studio.core.objective.loss_scale import LOSS_SCALE_GROWTH, LOSS_SCALE_START, LossScale

    scale = LossScale(enabled=True)
    assert scale.value == LOSS_SCALE_START
    scale.update(gradient_finite=False)
    scale.update(gradient_finite=False)
    assert scale.value == LOSS_SCALE_START / 4
    for _ in range(LOSS_SCALE_GROWTH - 1):
        scale.update(gradient_finite=True)
    scale.update(gradient_finite=False)  # the count of good iterations starts again
    for _ in range(LOSS_SCALE_GROWTH):
        scale.update(gradient_finite=True)
    assert scale.value == LOSS_SCALE_START / 4
    disabled = LossScale(enabled=False)
    disabled.update(gradient_finite=False)
    disabled.update(gradient_finite=True)
    assert disabled.value == 1.0


def test_the_scaled_backward_leaves_the_losss_own_gradient():
    from style_studio.core.objective.loss_scale import LossScale

    for enabled in (True, False):
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        LossScale(enabled).backward((x**2).sum() * 1e-3, x)
        torch.testing.assert_close(x.grad, torch.tensor([2e-3, 4e-3]))


def test_averaging_keeps_the_bias_corrected_moving_average_of_the_iterates(image):
    control = StepControl(image, "lbfgs", 1.0, average_over=2)  # a decay of 1/2
    assert torch.equal(control.kept, control.lowest)  # nothing averaged yet: the start
    drive(control, [5.0, 4.0], image)  # iterates 0.5 and 1.5
    # (0.5 · 0.5 · 0.5 + 0.5 · 1.5) / (0.5 · 0.5 + 0.5) = 0.875 / 0.75
    assert control.kept.flatten()[0].item() == pytest.approx(0.875 / 0.75)


def test_a_step_undone_by_a_blow_up_stays_out_of_the_average(image):
    control = StepControl(image, "lbfgs", 1.0, average_over=2)
    drive(control, [5.0, 5.0 * DIVERGENCE_FACTOR * 2], image)  # the second blew up: the image went back
    assert control.kept.flatten()[0].item() == pytest.approx(0.5)


def test_without_averaging_the_lowest_loss_image_is_kept(image):
    control = StepControl(image, "lbfgs", 1.0)
    drive(control, [5.0, 4.0, 6.0], image)
    assert torch.equal(control.kept, control.lowest) and control.kept.flatten()[0].item() == 1.0
