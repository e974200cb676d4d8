"""Tiled evaluation gives the untiled loss and gradient: every Gram matrix, the image gradient, a short run."""

from __future__ import annotations

import dataclasses
import itertools

import pytest
import torch

from style_studio.core.network.device import resolve
from style_studio.core.objective.inputs import ScaleInputs
from style_studio.core.objective.loss_scale import LossScale
from style_studio.core.objective.objective import Objective
from style_studio.core.objective.tiles import Reach, TiledObjective, split, tiles_for
from style_studio.core.run.compute import network_for
from style_studio.core.settings import Settings

FP32 = resolve("cpu", "fp32")
#: Odd sides, neither a multiple of the pools' 16 px grid.
SIZE = (301, 229)
BLEND = Settings(
    size=301,
    weights="untrained",
    precision="fp32",
    device="cpu",
    style_loss="gram",
    content_layers=("relu4_2",),
    style_layers=(("relu1_1", 1.0), ("relu2_1", 0.5), ("relu3_1", 1.0), ("relu4_1", 1.0), ("relu5_1", 2.0)),
    style_blend=(0.7, 0.3),
)


def both(weights, pictures, settings, tile=128):
    content, styles = pictures
    network = network_for(weights, FP32)
    inputs = ScaleInputs.prepare(content, styles, SIZE, settings, FP32.device)
    return Objective(network, inputs, settings, FP32), TiledObjective(network, inputs, settings, FP32, tile), inputs


def relative(ours: torch.Tensor, theirs: torch.Tensor) -> float:
    return float((ours - theirs).norm() / theirs.norm())


def gradient_of(objective, image, hook=None, scale=None):
    image = image.detach().clone().requires_grad_(True)
    if hook is not None:
        image.register_hook(hook)
    generator = objective.gradient(image, scale or LossScale(False))
    parts = []
    while True:
        try:
            parts.append(next(generator))
        except StopIteration as finished:
            return finished.value, image.grad, parts


@pytest.mark.parametrize(
    "settings",
    [
        BLEND,
        dataclasses.replace(BLEND, pooling="avg", preserve_colors=True),
    ],
    ids=["max-pool-rgb", "avg-pool-preserve-colours"],
)
@pytest.mark.slow
def test_tiled_gram_matrices_and_gradient_are_the_untiled_ones(untrained, pictures, settings):
    untiled, tiled, inputs = both(untrained, pictures, settings)
    with untiled, tiled:
        assert len(tiled.tiles(*SIZE)) >= 4
        for ours, theirs in zip(tiled.style.styles, untiled.style.styles, strict=True):
            for layer in theirs:
                assert relative(ours[layer][0], theirs[layer][0]) < 1e-4, layer
        for layer, target in untiled.content.targets.items():
            assert relative(tiled.content.targets[layer], target) < 1e-4, layer

        torch.manual_seed(0)
        image = (inputs.content + 0.2 * torch.randn_like(inputs.content)).clamp(0, 1)
        activations, grams = untiled.summarise(image.expand(-1, 3, -1, -1))
        tiled_activations, tiled_grams = tiled.summarise(image.expand(-1, 3, -1, -1))
        for layer in grams:
            assert relative(tiled_grams[layer][0], grams[layer][0]) < 1e-4, layer
        for layer in activations:
            assert relative(tiled_activations[layer], activations[layer]) < 1e-4, layer

        terms, gradient, parts = gradient_of(untiled, image)
        tiled_terms, tiled_gradient, tiled_parts = gradient_of(tiled, image)
        assert parts == []
        assert [p.done for p in tiled_parts] == list(range(1, 2 * len(tiled.tiles(*SIZE)) + 1))
        assert relative(tiled_gradient, gradient) < 1e-4
        torch.testing.assert_close(tiled_gradient, gradient, rtol=0, atol=1e-4 * float(gradient.abs().max()))
        assert float(tiled_terms.total) == pytest.approx(float(terms.total.detach()), rel=1e-4)
        assert float(tiled_terms.parts["content"]) == pytest.approx(float(terms.parts["content"].detach()), rel=1e-4)
        for layer, value in terms.style.items():
            assert float(tiled_terms.style[layer]) == pytest.approx(float(value.detach()), rel=1e-4)


def test_the_image_hooks_see_the_whole_gradient_once(tiny, pictures):
    untiled, tiled, inputs = both(tiny, pictures, BLEND, tile=64)
    with untiled, tiled:
        seen = []
        _, gradient, _ = gradient_of(tiled, inputs.content, hook=lambda grad: seen.append(grad.clone()))
    assert len(seen) == 1
    assert torch.equal(seen[0], gradient)


def test_cores_cover_the_picture_once_and_crops_start_on_the_pools_grid(untrained):
    network = network_for(untrained, FP32)
    from style_studio.core.network.vgg import TruncatedNetwork

    reach = Reach.of(TruncatedNetwork(network, ["relu5_1"]))
    assert reach.alignment == 16
    # conv1 2 + conv2 2·2 + conv3 4·4 + conv4 4·8 + conv5_1 16 pixels, rounded up to the grid.
    assert reach.halo == 80
    for length in (16, 17, 301, 1000, 4096):
        spans = split(length, 128, reach)
        assert spans[0].core_start == 0 and spans[-1].core_stop == length
        assert all(a.core_stop == b.core_start for a, b in itertools.pairwise(spans))
        assert all(s.core_stop - s.core_start <= 128 for s in spans)
        assert all(s.crop_start % 16 == 0 for s in spans)
        assert all(
            s.crop_start <= max(0, s.core_start - 80) and s.crop_stop >= min(length, s.core_stop + 80) for s in spans
        )
    assert len(tiles_for(4096, 3072, 1024, reach)) == 12


def test_fp16s_loss_scale_keeps_a_tiled_gradient_from_underflowing(tiny, pictures):
    # Each tile's backward pass gets the scaled loss, as an untiled one does: the
    # benchmark's tiled fp16 check at 2048 px (emulated) relies on it.
    content, styles = pictures
    settings = dataclasses.replace(BLEND, style_weight=1e-5, content_weight=1e-5, tv_weight=0, colour_weight=0)
    emulated = dataclasses.replace(resolve("cpu", "fp16"), fp16_emulated=True)
    network = network_for(tiny, emulated)
    inputs = ScaleInputs.prepare(content, styles, SIZE, settings, FP32.device)
    with Objective(network, inputs, settings, emulated) as untiled:
        _, expected, _ = gradient_of(untiled, inputs.content, scale=LossScale(True))
    gradients = {}
    with TiledObjective(network, inputs, settings, emulated, 128) as tiled:
        assert len(tiled.tiles(*SIZE)) >= 4
        for scaled in (False, True):
            _, gradients[scaled], _ = gradient_of(tiled, inputs.content, scale=LossScale(scaled))
    assert relative(gradients[True], expected) < 0.01
    assert relative(gradients[False], expected) > 0.5, "fp16 no longer underflows here: pick smaller weights"


def test_a_short_tiled_run_follows_the_untiled_run(tiny, pictures):
    from tests.runs import run

    content, styles = pictures
    settings = dataclasses.replace(BLEND, size=300, iterations=6, scales=1, weights="untrained")

    def losses(tile):
        plans = []
        every, _ = run(content, styles, dataclasses.replace(settings, tile=tile), tiny, started=plans.append)
        records = [r for r in every if not r.within_iteration and not r.done and not r.start]
        return plans[0], [r.total_loss for r in records]

    tiled, tiled_losses = losses(128)
    untiled, untiled_losses = losses(0)
    assert tiled.tile == 128 and untiled.tile is None
    assert tiled_losses == pytest.approx(untiled_losses, rel=1e-3)
    assert tiled_losses[-1] < 0.9 * tiled_losses[0]  # (the colour term starts near 0: the start has its colours)


def test_a_picture_that_would_not_fit_is_tiled_and_one_that_fits_is_not(tiny, pictures, monkeypatch):
    from style_studio.core.run import memory
    from style_studio.core.run.cancel import CancelToken
    from tests.runs import run

    content, styles = pictures
    monkeypatch.setattr(memory, "available_bytes", lambda *args: 6 * 2**30)

    def plan(size):
        """The run's plan, the run stopped as soon as it is set up."""
        plans, stop = [], CancelToken()
        run(content, styles[:1], dataclasses.replace(BLEND, size=size, style_blend=()), tiny, cancel=stop,
            started=lambda made: (plans.append(made), stop.cancel()))  # fmt: skip
        return plans[0]

    large = plan(4096)
    assert large.tile in memory.TILE_SIDES and large.scales[-1].tile == large.tile
    # Its coarse scales fit untiled: only the scales larger than a tile are tiled.
    assert large.scales[0].tile is None
    assert plan(512).tile is None


def test_keeping_more_tiles_forward_passes_gives_the_same_gradient_with_fewer_forward_passes(tiny, pictures):
    content, styles = pictures
    network = network_for(tiny, FP32)
    inputs = ScaleInputs.prepare(content, styles, SIZE, BLEND, FP32.device)
    one = TiledObjective(network, inputs, BLEND, FP32, 128, keep=1)
    three = TiledObjective(network, inputs, BLEND, FP32, 128, keep=3)
    every = TiledObjective(network, inputs, BLEND, FP32, 128, keep=100)
    with one, three, every:
        torch.manual_seed(0)
        image = (inputs.content + 0.2 * torch.randn_like(inputs.content)).clamp(0, 1)
        forwards = []
        for objective in (one, three):
            objective.net.register_forward_pre_hook(lambda module, args: forwards.append(1))
        terms, gradient, _ = gradient_of(one, image)
        count_one = len(forwards)
        forwards.clear()
        kept_terms, kept_gradient, parts = gradient_of(three, image)
        count_three = len(forwards)
        _, all_gradient, _ = gradient_of(every, image)
    tiles = len(one.tiles(*SIZE))
    assert count_one == 2 * tiles - 1 and count_three == 2 * tiles - 3
    assert relative(kept_gradient, gradient) < 1e-6 and relative(all_gradient, gradient) < 1e-6
    assert float(kept_terms.total) == pytest.approx(float(terms.total), rel=1e-6)
    assert [p.done for p in parts] == list(range(1, 2 * tiles + 1))


def test_spare_memory_keeps_more_tiles_but_never_more_than_doubles_the_tiled_footprint():
    from style_studio.core.run import memory

    gib = 2**30
    assert memory.kept_tiles(2048, 1365, 1024, "fp32", None) == 1
    assert memory.kept_tiles(2048, 1365, 1024, "fp32", 2 * gib) == 1  # only the tiled evaluation fits
    plenty = memory.kept_tiles(2048, 1365, 1024, "fp32", 64 * gib)
    assert plenty > 1
    base = memory.tiled_bytes(2048, 1365, 1024, "fp32")
    per_tile = memory.BYTES_PER_PIXEL["fp32"] * min(2048, 1024 + 256) * min(1365, 1024 + 256)
    assert (plenty - 1) * per_tile <= base
