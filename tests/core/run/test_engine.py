"""The optimisation loop, driven as the CLI and the window drive it."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch

from style_studio.core.errors import StyleStudioError
from style_studio.core.io.tensors import pil_to_tensor
from style_studio.core.network.device import Compute, resolve
from style_studio.core.network.vgg import own_modules
from style_studio.core.objective import color
from style_studio.core.progress import CANCELLED, FINISHED, Progress
from style_studio.core.run.cancel import CancelToken
from style_studio.core.run.compute import network_for, shared_network
from style_studio.core.run.engine import StyleTransfer
from style_studio.core.run.plan import scale_sizes
from style_studio.core.settings import Settings
from tests.runs import engine

SMALL = Settings(size=64, iterations=20, weights="untrained")


def run_all(transfer: StyleTransfer) -> list[Progress]:
    return [record for record in transfer.run() if not record.start]  # the start picture's has no losses


def network_hooks(weights) -> int:
    """Hooks on the network whose weights runs share, and on the modules of every run made since ``runs_modules``
    began recording (each run hooks modules of its own)."""
    networks = [shared_network(weights, resolve("auto", "auto")), *_runs_modules]
    return sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for n in networks for m in n.modules())


_runs_modules: list = []


@pytest.fixture
def runs_modules(monkeypatch):
    """Keeps the modules each run makes for itself (``own_modules``), for ``network_hooks``."""
    from style_studio.core.run import compute

    def recorded(network):
        own = own_modules(network)
        _runs_modules.append(own)
        return own

    monkeypatch.setattr(compute, "own_modules", recorded)
    yield
    _runs_modules.clear()


def test_a_run_on_the_real_untrained_vgg19_lowers_the_loss_and_says_it_is_untrained(
    untrained, content_image, style_image
):
    records = run_all(engine(content_image, [style_image], dataclasses.replace(SMALL, iterations=8), untrained))
    assert records[-1].outcome == FINISHED
    assert records[-2].total_loss < 0.7 * records[0].total_loss
    assert records[0].weights.startswith("untrained VGG19")


@pytest.mark.parametrize("optimizer", ["lbfgs", "adam"])
def test_total_loss_falls_over_20_iterations(optimizer, tiny, content_image, style_image):
    records = run_all(engine(content_image, [style_image], dataclasses.replace(SMALL, optimizer=optimizer), tiny))
    iterations = [r for r in records if not r.done]
    assert len(iterations) == 20
    # (Less than half with the colour term: it starts near 0, the start being in the painting's colours.)
    assert iterations[-1].total_loss < 0.6 * iterations[0].total_loss
    assert records[-1].done and records[-1].outcome == FINISHED


def test_records_carry_every_loss_term_and_previews(tiny, content_image, style_image):
    transfer = engine(content_image, [style_image], dataclasses.replace(SMALL, iterations=3), tiny, preview_interval=0)
    records = run_all(transfer)
    first = records[0]
    assert set(first.style_losses) == {"relu1_1", "relu2_1", "relu3_1", "relu4_1", "relu5_1"}
    assert set(first.terms) == {"content", "tv", "colour"}
    assert first.total_loss == pytest.approx(sum(first.terms.values()) + sum(first.style_losses.values()), rel=1e-4)
    assert first.grad_norm > 0 and first.elapsed > 0
    # The ETA is known from the second iteration (the first includes the set-up) and is 0 at the end.
    assert first.eta is None and records[1].eta > 0 and records[2].eta == records[-1].eta == 0
    assert "untrained" in first.weights
    for r in records:
        assert r.preview is not None and r.preview.dtype == np.uint8 and r.preview.shape == (43, 64, 3)
    json_record = records[0].to_json()
    assert "preview" not in json_record and json_record["iteration"] == 1


def test_previews_are_throttled_by_time(tiny, content_image, style_image):
    transfer = engine(
        content_image, [style_image], dataclasses.replace(SMALL, iterations=6), tiny, preview_interval=3600
    )
    previews = [r.preview is not None for r in transfer.run()]
    # The start picture, the last iteration and the end record; nothing in between.
    assert previews == [True, False, False, False, False, False, True, True]


def test_multi_scale_ends_at_the_requested_size(tiny, content_image, style_image):
    settings = dataclasses.replace(SMALL, size=128, scales=2, iterations=3)
    transfer = engine(content_image, [style_image], settings, tiny)
    records = run_all(transfer)
    sizes = sorted({(r.scale, r.width, r.height) for r in records})
    assert sizes == [(1, 64, 43), (2, 128, 85)]
    assert transfer.result.size == (128, 85)
    # The finer scale refines with half the coarse scale's iterations (3 -> 2).
    assert [max(r.iteration for r in records if r.scale == k) for k in (1, 2)] == [3, 2]
    assert records[-1].step == records[-1].steps == 5


def test_without_a_first_scale_large_pictures_settle_at_screen_size_then_refine_each_doubling():
    assert Settings(size=1024, first_scale=0).scale_count() == 1
    assert Settings(size=2048, first_scale=0).scale_count() == 2
    assert Settings(size=4096, first_scale=0).scale_count() == 3
    assert Settings(size=4096, scales=1).scale_count() == 1
    # The composition settles at screen size; each doubling refines with fewer iterations.
    assert Settings(size=4096, iterations=300).iterations_per_scale(3) == [300, 150, 75]
    assert Settings(size=4096, iterations=300, finer_iterations=1.0).iterations_per_scale(3) == [300, 300, 300]
    assert scale_sizes((4000, 3000), 4096, Settings(size=4096, first_scale=0).scale_count()) == [
        (1024, 768),
        (2048, 1536),
        (4096, 3072),
    ]


def test_scale_sizes_halve_and_skip_scales_that_are_too_small():
    assert scale_sizes((400, 200), 512, 3) == [(128, 64), (256, 128), (512, 256)]
    assert scale_sizes((400, 200), 128, 4) == [(64, 32), (128, 64)]


def test_cancel_stops_within_one_iteration_and_keeps_the_image(tiny, content_image, style_image):
    cancel = CancelToken()
    transfer = engine(content_image, [style_image], dataclasses.replace(SMALL, iterations=50), tiny, cancel=cancel)
    records = []
    for record in transfer.run():
        records.append(record)
        if record.iteration == 3 and not record.done:
            cancel.cancel()
    assert [r.iteration for r in records] == [0, 1, 2, 3, 3]  # 0: the start picture's record
    assert records[-1].done and records[-1].outcome == CANCELLED
    assert transfer.result is not None and transfer.result.size == (64, 43)


def test_a_tiled_iteration_reports_each_tile_and_stops_within_one(tiny, content_image, style_image):
    settings = dataclasses.replace(SMALL, size=300, tile=160, iterations=3)
    token = CancelToken()
    transfer = engine(content_image, [style_image], settings, tiny, cancel=token)
    assert transfer.tiles_at((300, 200)) == 160
    records = []
    for record in transfer.run():
        records.append(record)
        if record.within_iteration and record.step == 1 and record.part == 3:
            token.cancel()
    iteration_one = [r for r in records if r.within_iteration and r.step == 0]
    # 2 × 2 tiles, each visited twice: the Gram pass, then the forward and backward pass.
    assert [r.part for r in iteration_one] == list(range(1, 9)) and {r.parts for r in iteration_one} == {8}
    assert [r.steps_done for r in iteration_one] == [k / 8 for k in range(1, 9)]
    assert all(r.preview is None for r in iteration_one)
    # Stopped after the 3rd part of iteration 2: nothing more ran, the first iteration's result is kept.
    assert records[-2].within_iteration and (records[-2].step, records[-2].part) == (1, 3)
    assert records[-1].outcome == CANCELLED
    assert transfer.result is not None and transfer.result.size == (300, 200)


def test_no_hook_is_left_after_success_cancel_error_or_abandoned_run(tiny, content_image, style_image, runs_modules):
    settings = dataclasses.replace(SMALL, iterations=4)
    run_all(engine(content_image, [style_image], settings, tiny))
    assert network_hooks(tiny) == 0

    cancel = CancelToken()
    for _ in engine(content_image, [style_image], settings, tiny, cancel=cancel).run():
        cancel.cancel()
    assert network_hooks(tiny) == 0

    class Exploding(CancelToken):
        calls = 0

        def raise_if_cancelled(self):
            self.calls += 1
            if self.calls == 4:
                raise RuntimeError("device lost")

    with pytest.raises(RuntimeError, match="device lost"):
        run_all(engine(content_image, [style_image], settings, tiny, cancel=Exploding()))
    assert network_hooks(tiny) == 0

    run = engine(content_image, [style_image], settings, tiny).run()
    next(run), next(run)  # the start picture's record, then the first iteration's
    assert network_hooks(tiny) > 0  # mid-run, the hooks are there ...
    run.close()
    assert network_hooks(tiny) == 0  # ... and a consumer that walks away removes them


def test_repeated_runs_do_not_accumulate_hooks(tiny, content_image, style_image, runs_modules):
    settings = dataclasses.replace(SMALL, iterations=1)
    for _ in range(3):
        transfer = engine(content_image, [style_image], settings, tiny)
        counts = [network_hooks(tiny) for record in transfer.run() if not record.start]
        assert counts[0] == 6  # 1 content + 5 style layers, once each
    assert network_hooks(tiny) == 0


@pytest.mark.parametrize("init", ["noise", "content", "style"])
def test_same_seed_same_settings_give_the_same_image(init, tiny, content_image, style_image):
    settings = dataclasses.replace(SMALL, iterations=5, init=init, seed=7)
    a = engine(content_image, [style_image], settings, tiny)
    b = engine(content_image, [style_image], settings, tiny)
    run_all(a), run_all(b)
    assert np.array_equal(np.asarray(a.result), np.asarray(b.result))


def test_a_different_seed_gives_a_different_noise_start(tiny, content_image, style_image):
    results = []
    for seed in (1, 2):
        t = engine(
            content_image, [style_image], dataclasses.replace(SMALL, iterations=2, init="noise", seed=seed), tiny
        )
        run_all(t)
        results.append(np.asarray(t.result))
    assert not np.array_equal(*results)


def test_preserve_colors_keeps_the_content_chroma(tiny, content_image, style_image):
    settings = dataclasses.replace(SMALL, iterations=10, preserve_colors=True, init="noise")
    transfer = engine(content_image, [style_image], settings, tiny)
    run_all(transfer)
    result = pil_to_tensor(transfer.result)
    content = pil_to_tensor(content_image.resize(transfer.result.size))
    result_iq = color.rgb_to_yiq(result)[:, 1:]
    content_iq = color.rgb_to_yiq(content)[:, 1:]
    # Chroma equal up to 8-bit rounding and clipping at the gamut's edge.
    assert (result_iq - content_iq).abs().mean() < 0.01
    # ... while the luminance did change.
    assert (color.luminance(result) - color.luminance(content)).abs().mean() > 0.01


def test_without_preserve_colors_the_chroma_moves_towards_the_style(tiny, content_image, style_image):
    transfer = engine(content_image, [style_image], dataclasses.replace(SMALL, iterations=10), tiny)
    run_all(transfer)
    result = color.rgb_to_yiq(pil_to_tensor(transfer.result))[:, 1:]
    content = color.rgb_to_yiq(pil_to_tensor(content_image.resize(transfer.result.size)))[:, 1:]
    assert (result - content).abs().mean() > 0.01


def test_loss_weight_changes_take_effect_at_the_next_iteration(tiny, content_image, style_image):
    transfer = engine(content_image, [style_image], dataclasses.replace(SMALL, iterations=4), tiny)
    records = []
    for record in transfer.run():
        if not record.start:
            records.append(record)
        if record.iteration == 2 and not record.done:
            transfer.live.change_settings(
                dataclasses.replace(transfer.settings, tv_weight=0.0, style_layers=(("relu1_1", 2.0), ("relu3_2", 1.0)))
            )
    assert records[1].tv_loss > 0 and set(records[1].style_losses) == {
        "relu1_1",
        "relu2_1",
        "relu3_1",
        "relu4_1",
        "relu5_1",
    }
    assert records[2].tv_loss == 0
    assert set(records[2].style_losses) == {"relu1_1", "relu3_2"}


def run_with_a_change(transfer, at_iteration, settings):
    records = []
    for record in (r for r in transfer.run() if not r.start):
        records.append(record)
        if record.iteration == at_iteration and not record.done:
            transfer.live.change_settings(settings)
    return records


def count_optimizers(monkeypatch) -> list:
    from style_studio.core.run import scale

    made = []
    original = scale.new_optimizer

    def recording(kind, image, lr, step_scale=None):
        made.append(original(kind, image, lr, step_scale))
        return made[-1]

    monkeypatch.setattr(scale, "new_optimizer", recording)
    return made


@pytest.mark.parametrize("optimizer", ["lbfgs", "adam"])
def test_raising_a_weight_mid_run_is_not_taken_for_a_blow_up(optimizer, tiny, content_image, style_image, monkeypatch):
    # Style from 3 to 100 (the slider's top) multiplies the loss: measured against
    # the best loss before the change, every iteration looked like a blow-up, and the
    # run stopped as "diverging" after 6. The optimiser restarts on the new objective.
    made = count_optimizers(monkeypatch)
    settings = dataclasses.replace(SMALL, iterations=25, optimizer=optimizer)
    transfer = engine(content_image, [style_image], settings, tiny)
    records = run_with_a_change(transfer, 10, dataclasses.replace(settings, style_weight=100.0))
    assert [r.event for r in records if r.event] == []
    assert records[-1].outcome == FINISHED
    after = [r.total_loss for r in records[10:-1]]
    assert after[0] > 10 * records[9].total_loss and after[-1] < after[0]
    assert len(made) == 2


def test_a_small_weight_change_keeps_the_optimiser_history(tiny, content_image, style_image, monkeypatch):
    # A dragged slider changes a weight a little at every step; restarting L-BFGS
    # each time would leave the picture standing still until the drag ends.
    made = count_optimizers(monkeypatch)
    transfer = engine(content_image, [style_image], SMALL, tiny)
    run_with_a_change(transfer, 5, dataclasses.replace(SMALL, content_weight=1.5))
    assert len(made) == 1


def test_style_blend_weights_mix_two_styles(tiny, content_image, style_image, second_style_image):
    finals = {}
    for blend in ((1.0, 0.0), (0.0, 1.0), (1.0, 1.0)):
        settings = dataclasses.replace(SMALL, iterations=1, style_blend=blend)
        records = run_all(engine(content_image, [style_image, second_style_image], settings, tiny))
        finals[blend] = records[0].style_losses["relu1_1"]
    # Identical start image: distinct targets give distinct losses.
    assert len({round(v, 6) for v in finals.values()}) == 3


def test_a_blow_up_goes_back_to_the_lowest_loss_image_and_lowers_the_step(tiny, content_image, style_image):
    settings = dataclasses.replace(SMALL, optimizer="adam", step_size=1e4, iterations=10)
    transfer = engine(content_image, [style_image], settings, tiny, preview_interval=0)
    records = run_all(transfer)
    events = [r.event for r in records if r.event]
    assert events and "went back to the lowest-loss image" in events[0]
    assert records[-1].outcome == FINISHED
    kept = [r.total_loss for r in records if not r.event and not r.done]
    assert all(math.isfinite(loss) and loss <= kept[0] * 1.5 for loss in kept)
    for r in records:  # the preview never shows the blown-up image
        assert r.preview is not None and 10 < r.preview.mean() < 245


def test_convolution_and_pooling_layers_can_be_style_and_content_layers(tiny, content_image, style_image):
    # A convolution's output is overwritten by the in-place ReLU after it; the
    # losses must still see (and differentiate) the convolution's own output.
    settings = dataclasses.replace(
        SMALL,
        iterations=5,
        style_layers=(("conv2_2", 1.0), ("pool3", 1.0), ("relu3_1", 1.0)),
        content_layers=("conv4_2",),
    )
    records = run_all(engine(content_image, [style_image], settings, tiny))
    assert records[-1].outcome == FINISHED
    assert set(records[0].style_losses) == {"conv2_2", "pool3", "relu3_1"}
    assert records[-2].total_loss < records[0].total_loss


def test_nothing_to_optimise_is_a_clear_error(tiny, content_image, style_image):
    settings = dataclasses.replace(SMALL, content_layers=(), style_layers=(("relu1_1", 0.0),))
    with pytest.raises(StyleStudioError, match="nothing to optimise"):
        run_all(engine(content_image, [style_image], settings, tiny))


def test_an_image_too_thin_for_the_network_is_refused_before_starting(tiny, style_image):
    from PIL import Image

    with pytest.raises(StyleStudioError, match="at least 16 pixels"):
        engine(Image.new("RGB", (1000, 10)), [style_image], SMALL, tiny)


def test_a_picture_thinner_than_the_mirrored_border_is_refused_even_for_shallow_layers(tiny, style_image):
    # relu1_1 alone needs no pooling, but the picture is mirrored by 2 px
    # before the first block: a 1 px thin one failed inside torch.
    from PIL import Image

    settings = dataclasses.replace(SMALL, content_layers=(), style_layers=(("relu1_1", 1.0),))
    with pytest.raises(StyleStudioError, match="at least 3 pixels"):
        engine(Image.new("RGB", (512, 2)), [style_image], settings, tiny)


def test_wrong_number_of_blend_weights_is_refused(tiny, content_image, style_image):
    with pytest.raises(StyleStudioError, match="2 style blend weights given for 1"):
        engine(content_image, [style_image], dataclasses.replace(SMALL, style_blend=(1.0, 2.0)), tiny)


def test_explicit_fp32_precision_is_used_and_named(tiny, content_image, style_image):
    settings = dataclasses.replace(SMALL, iterations=2, precision="fp32", device="cpu")
    records = run_all(engine(content_image, [style_image], settings, tiny))
    assert records[0].compute == "cpu, fp32"


def test_asking_for_a_missing_gpu_is_a_clear_error(tiny, content_image, style_image):
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(StyleStudioError, match="no CUDA GPU"):
        engine(content_image, [style_image], dataclasses.replace(SMALL, device="cuda"), tiny)


@pytest.mark.parametrize("optimizer", ["lbfgs", "adam"])
def test_the_reported_loss_is_the_loss_of_the_image_the_user_gets(optimizer, tiny, content_image, style_image):
    # Left free, the optimiser pushes pixels outside [0, 1]: the loss it reports is
    # then that of an image nobody sees, and the exported (clamped) one scores worse.
    settings = dataclasses.replace(SMALL, iterations=40, optimizer=optimizer, precision="fp32", style_weight=30.0)
    transfer = engine(content_image, [style_image], settings, tiny)
    records = run_all(transfer)
    assert records[-1].outcome == FINISHED
    exported = transfer.evaluate(transfer.result)["total"]
    assert exported == pytest.approx(records[-2].total_loss, rel=0.02)


def test_lbfgs_remembers_the_step_the_clamp_let_the_image_take():
    # L-BFGS learns curvature from the steps it took; where the clamp to [0, 1]
    # shortened a step, remembering the proposed one made later steps overshoot.
    from style_studio.core.run.image_hooks import record_projected_step
    from style_studio.core.run.lbfgs import LBFGS

    image = torch.tensor([0.5, 0.9, 0.1], requires_grad=True)
    optimizer = LBFGS([image], lr=1.0)
    target = torch.tensor([0.2, 1.6, -0.7])  # two pixels' optimum lies outside [0, 1]

    def closure():
        optimizer.zero_grad()
        loss = (image - target).square().sum()
        loss.backward()
        return loss

    before = image.detach().clone()
    optimizer.step(closure)
    with torch.no_grad():
        image.clamp_(0, 1)
    record_projected_step(optimizer, image, before)
    state = optimizer.state[image]
    torch.testing.assert_close(state["d"] * state["t"], image.detach() - before)
    assert image[1] == 1 and image[2] == 0


def test_the_result_and_the_last_record_are_the_lowest_loss_image_of_the_run(tiny, content_image, style_image):
    # Whatever the trajectory: the last record carries the result's losses, and the
    # result scores what that record says.
    settings = dataclasses.replace(SMALL, optimizer="adam", step_size=0.25, iterations=8, precision="fp32")
    transfer = engine(content_image, [style_image], settings, tiny, preview_interval=0)
    records = run_all(transfer)
    losses = [r.total_loss for r in records if not r.done and not r.event]
    assert records[-1].done and records[-1].total_loss == min(losses)
    assert transfer.evaluate(transfer.result)["total"] == pytest.approx(min(losses), rel=0.02)
    best = next(r for r in records if r.total_loss == min(losses))
    assert np.array_equal(records[-1].preview, best.preview)


@pytest.mark.parametrize(
    "error",
    [
        torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"),
        RuntimeError("MPS backend out of memory (MPS allocated: 8.00 GB, other allocations: 1.00 GB)"),
    ],
    ids=["cuda", "mps"],
)
def test_out_of_memory_mid_run_frees_the_run_and_keeps_the_result_on_the_cpu(
    tiny, content_image, style_image, monkeypatch, error
):
    # The cache used to be emptied inside the except block, while its traceback
    # still held the image, the optimiser's history and the graph; and MPS's
    # out-of-memory error, a plain RuntimeError, reached the user as a traceback.
    import gc
    import weakref

    from style_studio.core.objective.objective import Objective
    from style_studio.core.run import engine as engine_module

    held = {}
    original = Objective.evaluate

    def exhausted(self, image):
        held.setdefault("image", weakref.ref(image))
        held.setdefault("objective", weakref.ref(self))
        if len(held.setdefault("calls", [])) == 3:
            raise type(error)(*error.args)  # a new one, as torch raises: the parameter would hold its traceback
        held["calls"].append(1)
        return original(self, image)

    alive_when_emptied = []

    def empty(device):
        gc.collect()
        alive_when_emptied.append([name for name in ("image", "objective") if held[name]() is not None])

    monkeypatch.setattr(Objective, "evaluate", exhausted)
    monkeypatch.setattr(engine_module, "empty_device_cache", empty)
    transfer = engine(content_image, [style_image], dataclasses.replace(SMALL, iterations=10), tiny)
    records = []
    with pytest.raises(StyleStudioError, match="ran out of memory at 64×43 pixels.*lower the size"):
        for record in transfer.run():
            records.append(record)
    assert len(records) == 4  # the start picture's and three more
    assert alive_when_emptied == [[]], "the image or the objective was still referenced when the cache was emptied"
    assert transfer.standing.kept is not None and transfer.standing.kept.device.type == "cpu"
    assert transfer.result is not None and transfer.result.size == (64, 43)


def test_an_error_that_is_not_out_of_memory_reaches_the_caller_as_it_is(tiny, content_image, style_image, monkeypatch):
    from style_studio.core.objective.objective import Objective

    def broken(self, image):
        raise RuntimeError("a bug")

    monkeypatch.setattr(Objective, "evaluate", broken)
    with pytest.raises(RuntimeError, match="a bug"):
        run_all(engine(content_image, [style_image], SMALL, tiny))


def test_an_lbfgs_iteration_reads_one_batch_of_numbers_back_from_the_device(
    tiny, content_image, style_image, monkeypatch
):
    # Each read is a wait for a GPU's queue to drain; torch's L-BFGS made about 45
    # a step. Counted on the CPU: scalar reads through the dispatcher, and tolist().
    from tests.core.run.test_lbfgs import DeviceReads

    lists = []
    original = torch.Tensor.tolist

    def counting_tolist(self):
        lists.append(1)
        return original(self)

    settings = dataclasses.replace(SMALL, iterations=30)
    run = engine(content_image, [style_image], settings, tiny, preview_interval=math.inf).run()
    next(run), next(run)  # the start picture's record, and the first iteration's
    monkeypatch.setattr(torch.Tensor, "tolist", counting_tolist)
    reads = []
    for _ in range(25):  # the history fills after 20
        lists.clear()
        with DeviceReads() as counted:
            record = next(run)
        reads.append(counted.count + len(lists))
    run.close()
    assert record.iteration == 26 and record.preview is None
    assert reads == [1] * 25


#: Weights so small that fp16's gradient underflows at a test's size, as it does at print sizes.
# The Gram loss: its products of activations are what underflow at these weights (the Gaussian loss takes its
# square roots in fp32).
UNDERFLOWING = dataclasses.replace(
    SMALL, size=96, iterations=1, style_weight=1e-8, content_weight=1e-8, tv_weight=0, colour_weight=0,
    precision="fp16", style_loss="gram",
)  # fmt: skip
REAL_FP16 = Compute(torch.device("cpu"), "fp16", channels_last=True)
EMULATED_FP16 = dataclasses.replace(REAL_FP16, fp16_emulated=True)


def unscaled_gradient(weights, content_image, style_image, settings: Settings, compute=None) -> torch.Tensor:
    """The image gradient of the first iteration's loss, without fp16's loss scale."""
    from style_studio.core.objective.inputs import ScaleInputs
    from style_studio.core.objective.objective import Objective

    transfer = engine(content_image, [style_image], settings, weights, compute=compute)
    inputs = ScaleInputs.prepare(transfer.content_image, transfer.style_images, transfer.sizes[-1], settings, "cpu")
    image = inputs.content.clone().requires_grad_(True)
    with Objective(network_for(weights, transfer.compute), inputs, transfer.settings, transfer.compute) as objective:
        objective.evaluate(image).total.backward()
    return image.grad


def test_fp16_scales_the_loss_so_small_gradients_do_not_underflow(tiny, content_image, style_image):
    # fp16's smallest normal number is 6e-5: the gradients of losses averaged over
    # many activations underflowed to 0, more of them the larger the picture. Tiny
    # weights make that happen at a test's size; unscaled, fp16 loses most of it.
    norms = {}
    for precision in ("fp32", "fp16"):
        settings = dataclasses.replace(UNDERFLOWING, precision=precision)
        norms[precision] = run_all(engine(content_image, [style_image], settings, tiny))[0].grad_norm
    unscaled = unscaled_gradient(tiny, content_image, style_image, UNDERFLOWING).norm().item()
    assert norms["fp16"] == pytest.approx(norms["fp32"], rel=0.05)
    assert unscaled < 0.5 * norms["fp32"], "fp16 no longer underflows here: pick smaller weights"


@pytest.mark.parametrize("weight, lost_at_least", [(1e-3, 0.01), (1e-4, 0.1)])
def test_emulated_fp16_loses_the_same_gradient_as_real_fp16(tiny, content_image, style_image, weight, lost_at_least):
    # The benchmarks check fp16 at 1024 px and in tiled print-size runs with the
    # emulation, as this CPU's own fp16 is ~40x slower: it must underflow where
    # real fp16 does, as much, and keep the rest of the gradient as real fp16 does.
    settings = dataclasses.replace(UNDERFLOWING, style_weight=weight, content_weight=weight)
    real = unscaled_gradient(tiny, content_image, style_image, settings, REAL_FP16)
    emulated = unscaled_gradient(tiny, content_image, style_image, settings, EMULATED_FP16)
    exact = unscaled_gradient(tiny, content_image, style_image, dataclasses.replace(settings, precision="fp32"))
    lost = {name: (g == 0).float().mean().item() for name, g in (("real", real), ("emulated", emulated))}
    assert (exact == 0).float().mean().item() < 0.001
    assert lost["real"] > lost_at_least, "fp16 underflows less than it did here: pick smaller weights"
    assert lost["emulated"] == pytest.approx(lost["real"], abs=0.01)
    assert torch.nn.functional.cosine_similarity(real.flatten(), emulated.flatten(), dim=0) > 0.9
    assert emulated.norm().item() == pytest.approx(real.norm().item(), rel=0.05)


def test_an_emulated_fp16_run_scales_its_loss_and_follows_fp32(tiny, content_image, style_image):
    settings = dataclasses.replace(UNDERFLOWING, iterations=5)
    fp32 = run_all(engine(content_image, [style_image], dataclasses.replace(settings, precision="fp32"), tiny))
    fp16 = run_all(engine(content_image, [style_image], settings, tiny, compute=EMULATED_FP16))
    assert fp16[0].grad_norm == pytest.approx(fp32[0].grad_norm, rel=0.05)
    assert fp16[-1].total_loss == pytest.approx(fp32[-1].total_loss, rel=0.05)
    assert "emulated" in fp16[-1].compute


def test_emulating_fp16_leaves_the_weights_it_was_built_from_alone(tiny):
    # Loaded weights share their tensors with the state dict that fp32 runs in the same process use.
    from style_studio.core.network.vgg import store_as_fp16

    network = tiny.build_network()
    originals = {name: (p, p.detach().clone()) for name, p in network.named_parameters()}
    store_as_fp16(network)
    changed = 0
    for name, rounded in network.named_parameters():
        shared, before = originals[name]
        assert torch.equal(shared, before), f"{name} was rounded in place"
        assert torch.equal(rounded, before.half().float())
        changed += not torch.equal(rounded, before)
    assert changed


def test_an_fp16_run_that_overflows_undoes_the_step_halves_the_scale_and_finishes(
    tiny, content_image, style_image, monkeypatch
):
    from style_studio.core.objective import loss_scale

    monkeypatch.setattr(loss_scale, "LOSS_SCALE_START", 2.0**40)  # the scaled gradient overflows at once
    settings = dataclasses.replace(SMALL, iterations=30, precision="fp16")
    records = run_all(engine(content_image, [style_image], settings, tiny))
    overflowed = [r for r in records if not r.done and r.grad_norm is not None and not math.isfinite(r.grad_norm)]
    assert overflowed, "the scale did not overflow: raise LOSS_SCALE_START"
    assert records[-1].outcome == FINISHED and math.isfinite(records[-1].total_loss)
    assert math.isfinite(records[-2].grad_norm) and records[-2].total_loss < records[0].total_loss


@pytest.mark.parametrize("optimizer", ["lbfgs", "adam"])
def test_an_averaged_run_keeps_the_average_of_its_last_iterates_as_its_picture_and_preview(
    optimizer, tiny, content_image, style_image
):
    settings = dataclasses.replace(SMALL, optimizer=optimizer, scales=2, iterations=8)
    plain = engine(content_image, [style_image], settings, tiny)
    run_all(plain)
    averaged = engine(
        content_image, [style_image], dataclasses.replace(settings, average=True), tiny, preview_interval=0
    )
    records = run_all(averaged)
    assert records[-1].outcome == FINISHED and averaged.result.size == plain.result.size
    assert not np.array_equal(np.asarray(averaged.result), np.asarray(plain.result))
    # What the user sees at the end is what is written: the average, not the lowest-loss iterate.
    assert np.abs(records[-1].preview.astype(int) - np.asarray(averaged.result).astype(int)).max() <= 1
