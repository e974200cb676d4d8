"""Regions: guided Gram matrices, the keep-the-photo hook, mask files and their errors."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch
from PIL import Image

from style_studio.core import PictureResult, Pictures, Previews, Progress
from style_studio.core.network.device import resolve
from style_studio.core.objective.guided import LayerMask, ScaleRegions
from style_studio.core.objective.inputs import ScaleInputs
from style_studio.core.objective.masks import RegionSpec, regions_from_mask
from style_studio.core.objective.objective import Objective
from style_studio.core.objective.regions import Region, RegionError, Regions
from style_studio.core.objective.statistics import Gram, gram, guided_tap
from style_studio.core.objective.tiles import TiledObjective
from style_studio.core.progress import FINISHED, Failed
from style_studio.core.run.cancel import CancelToken
from style_studio.core.run.compute import network_for
from style_studio.core.run.image_hooks import GradientNorm, KeepPhoto
from style_studio.core.run.live import LiveChanges
from style_studio.core.settings import Settings
from tests.conftest import SAMPLES
from tests.core.objective.test_tiles import gradient_of, relative
from tests.runs import run

FP32 = resolve("cpu", "fp32")
SIZE = (301, 229)
SETTINGS = Settings(
    size=301,
    weights="untrained",
    precision="fp32",
    device="cpu",
    style_loss="gram",
    style_layers=(("relu1_1", 1.0), ("relu2_1", 1.0), ("relu3_1", 1.0), ("relu4_1", 1.0), ("relu5_1", 1.0)),
)
RED, GREEN, WHITE = (255, 0, 0), (0, 255, 0), (255, 255, 255)


@pytest.fixture(scope="module")
def pictures():
    content = Image.open(SAMPLES / "content" / "chelsea.png").convert("RGB")
    styles = tuple(
        Image.open(SAMPLES / "style" / name).convert("RGB") for name in ("starry_night.jpg", "the_scream.jpg")
    )
    return content, styles


def halves(width: int, height: int, first: Region, second: Region | None = None, feather: float = 0.01) -> Regions:
    """``first`` on the left half, ``second`` (if any) on the right."""
    left = np.zeros((height, width), np.uint8)
    left[:, : width // 2] = 255
    if second is None:
        return Regions((first,), left[None], feather)
    return Regions((first, second), np.stack([left, 255 - left]), feather)


@pytest.mark.slow
def test_an_all_ones_mask_gives_exactly_the_unguided_loss_and_gradient(untrained, pictures):
    content, styles = pictures
    settings = dataclasses.replace(SETTINGS, style_blend=(0.7, 0.3))
    everywhere = Regions(
        (Region("all", RED, blend=(0.7, 0.3)),), np.full((40, 50, 1), 255, np.uint8).transpose(2, 0, 1)
    )
    network = network_for(untrained, FP32)
    plain = ScaleInputs.prepare(content, styles, SIZE, settings, FP32.device)
    guided = ScaleInputs.prepare(content, styles, SIZE, settings, FP32.device, everywhere)
    assert guided.regions.guided and len(guided.regions.groups) == 1
    torch.manual_seed(0)
    image = (plain.content + 0.2 * torch.randn_like(plain.content)).clamp(0, 1)
    with Objective(network, plain, settings, FP32) as a, Objective(network, guided, settings, FP32) as b:
        terms, gradient, _ = gradient_of(a, image)
        guided_terms, guided_gradient, _ = gradient_of(b, image)
    assert float(guided_terms.total.detach()) == pytest.approx(float(terms.total.detach()), rel=1e-5)
    for layer, value in terms.style.items():
        assert float(guided_terms.style[layer].detach()) == pytest.approx(float(value.detach()), rel=1e-5), layer
    assert relative(guided_gradient, gradient) < 1e-5


def reference_guided_gram(features: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """G = (F·m)ᵀ(F·m) / (C·Σm²), through plain autograd."""
    weighted = (features * mask)[0].flatten(1)
    return (weighted @ weighted.t() / (features.shape[1] * mask.square().sum())).unsqueeze(0)


def test_guided_gram_matrices_and_their_gradient_are_the_formulas():
    torch.manual_seed(0)
    features = torch.randn(1, 6, 9, 7).contiguous(memory_format=torch.channels_last).requires_grad_(True)
    ones = LayerMask(None, 63.0)
    soft = torch.zeros(1, 1, 9, 7)
    soft[..., 2:6, 1:5] = torch.rand(4, 4) + 0.1
    masked = LayerMask(soft, float(soft.square().sum()), slice(2, 6), slice(1, 5))
    passed_on, [(whole,), (guided,)] = guided_tap(features, Gram(), [ones, masked])
    torch.testing.assert_close(whole, gram(features.detach()))
    torch.testing.assert_close(guided, reference_guided_gram(features.detach(), soft))
    downstream, weights = torch.randn(1, 6, 9, 7), torch.randn(2, 6, 6)
    ((passed_on * downstream).sum() + (whole * weights[0]).sum() + (guided * weights[1]).sum()).backward()
    ours = features.grad.clone()
    features.grad = None
    expected = (
        (features * downstream).sum()
        + (gram(features) * weights[0]).sum()
        + (reference_guided_gram(features, soft) * weights[1]).sum()
    )
    expected.backward()
    torch.testing.assert_close(ours, features.grad)


@pytest.mark.slow
def test_tiled_guided_gram_matrices_and_gradient_are_the_untiled_ones(untrained, pictures):
    content, styles = pictures
    regions = halves(*SIZE, Region("left", RED, blend=(1.0, 0.0)), Region("right", GREEN, blend=(0.0, 1.0), strength=2))
    # A third of the picture unpainted: three groups.
    regions = regions.with_masks(regions.masks.copy())
    regions.masks[:, : SIZE[1] // 3, :] = 0
    network = network_for(untrained, FP32)
    inputs = ScaleInputs.prepare(content, styles, SIZE, SETTINGS, FP32.device, regions)
    assert len(inputs.regions.groups) == 3
    untiled = Objective(network, inputs, SETTINGS, FP32)
    tiled = TiledObjective(network, inputs, SETTINGS, FP32, 128)
    with untiled, tiled:
        assert len(tiled.tiles(*SIZE)) >= 4
        torch.manual_seed(0)
        image = (inputs.content + 0.2 * torch.randn_like(inputs.content)).clamp(0, 1)
        terms, gradient, _ = gradient_of(untiled, image)
        tiled_terms, tiled_gradient, _ = gradient_of(tiled, image)
    assert relative(tiled_gradient, gradient) < 1e-4
    for layer, value in terms.style.items():
        assert float(tiled_terms.style[layer]) == pytest.approx(float(value.detach()), rel=1e-4), layer


def test_a_kept_region_stays_the_photo_while_the_rest_is_stylised(tiny, pictures):
    content, styles = pictures
    width, height = 96, 72
    regions = halves(width, height, Region("face", WHITE, keep=True))
    settings = dataclasses.replace(SETTINGS, size=96, iterations=15, scales=2, init="noise")
    records, made = run(content, styles[:1], settings, tiny, regions=regions)
    result = np.asarray(made.image, np.float32) / 255
    photo = np.asarray(content.resize(made.image.size, Image.Resampling.LANCZOS), np.float32) / 255
    edge = round(regions.feather * width * 3) + 2  # a few pixels in from the feathered edge
    kept = np.abs(result[:, : width // 2 - edge] - photo[:, : width // 2 - edge]).mean()
    changed = np.abs(result[:, width // 2 + edge :] - photo[:, width // 2 + edge :]).mean()
    assert kept < 1 / 255
    assert changed > 20 / 255  # started from noise: far from the photo
    assert records[-1].outcome == FINISHED


@pytest.mark.slow
def test_each_of_two_regions_ends_nearer_its_own_style(untrained, pictures):
    content, _ = pictures
    # Two styles far apart: a red and a blue picture with texture.
    rng = np.random.default_rng(0)
    red = np.clip(rng.normal(0, 40, (64, 64, 3)) + np.array([200, 30, 30]), 0, 255).astype(np.uint8)
    blue = np.clip(rng.normal(0, 40, (64, 64, 3)) + np.array([30, 30, 200]), 0, 255).astype(np.uint8)
    two = (Image.fromarray(red), Image.fromarray(blue))
    regions = halves(128, 85, Region("left", RED, blend=(1.0, 0.0)), Region("right", GREEN, blend=(0.0, 1.0)))
    settings = dataclasses.replace(SETTINGS, size=128, iterations=30, scales=1)
    _, made = run(content, two, settings, untrained, regions=regions)
    network = network_for(untrained, FP32)
    inputs = ScaleInputs.prepare(content, two, made.image.size, settings, FP32.device, regions)
    with Objective(network, inputs, settings, FP32) as objective:
        from style_studio.core.io.tensors import pil_to_tensor

        objective._forward(pil_to_tensor(made.image))
        for layer in objective.style_layers:
            grams = objective.captured.guided[layer]
            for group, (region_gram,), own, other in zip(objective.groups, grams, (0, 1), (1, 0), strict=True):
                near = (region_gram - objective.style.styles[own][layer][0]).norm()
                far = (region_gram - objective.style.styles[other][layer][0]).norm()
                assert near < far, (layer, group.name)


def run_to_the_end(content, styles, settings, weights, cancel_after: int | None = None, **options) -> PictureResult:
    """A run to its end, or stopped once it has made ``cancel_after`` steps."""
    token = CancelToken()

    def hear(record: Progress) -> None:
        if cancel_after is not None and record.step >= cancel_after:
            token.cancel()

    return run(content, styles, settings, weights, hear=hear, cancel=token, **options)[1]


@pytest.mark.parametrize("ending", ["finished", "cancelled", "failed"])
def test_no_hook_is_left_on_the_image_however_the_run_ends(tiny, pictures, monkeypatch, ending):
    content, styles = pictures
    regions = halves(64, 48, Region("keep", WHITE, keep=True))
    settings = dataclasses.replace(SETTINGS, size=64, iterations=4, scales=1)
    images = []
    real = KeepPhoto.__init__

    def spy(self, image, keep):
        images.append(image)
        real(self, image, keep)

    monkeypatch.setattr(KeepPhoto, "__init__", spy)
    if ending == "failed":
        calls = []

        def failing(self, *args, **kwargs):
            calls.append(1)
            if len(calls) > 2:
                raise RuntimeError("a device error")
            return original(self, *args, **kwargs)

        original = Objective.gradient
        monkeypatch.setattr(Objective, "gradient", failing)
        failed = run_to_the_end(content, styles[:1], settings, tiny, regions=regions)
        assert isinstance(failed.outcome, Failed) and isinstance(failed.outcome.exception, RuntimeError)
        assert "a device error" in failed.outcome.error
    else:
        run_to_the_end(content, styles[:1], settings, tiny, cancel_after=2 if ending == "cancelled" else None,
                       regions=regions)  # fmt: skip
    assert images
    for image in images:
        assert not image._backward_hooks


def test_the_gradient_norm_is_that_of_the_gradient_with_the_kept_pixels_left_out():
    image = torch.rand(1, 3, 8, 8, requires_grad=True)
    keep = torch.zeros(1, 1, 8, 8)
    keep[..., :4] = 1
    keep_photo = KeepPhoto(image, keep)
    norm = GradientNorm(image)
    (image * torch.arange(64.0).view(1, 1, 8, 8)).sum().backward()
    assert image.grad is not None
    assert torch.all(image.grad[..., :4] == 0)
    assert float(norm.value) == pytest.approx(float(image.grad.norm()))
    keep_photo.remove()
    norm.remove()
    assert not image._backward_hooks


def test_mask_files_colour_coded_and_greyscale(tmp_path):
    picture = np.zeros((30, 40, 3), np.uint8)
    picture[:, :20] = RED
    picture[:10, 20:] = (250, 5, 3)  # near red: still red
    picture[20:, 20:] = GREEN
    Image.fromarray(picture).save(tmp_path / "mask.png")
    specs = [RegionSpec.parse("red=1", 2), RegionSpec.parse("#00ff00=2:0.5", 2)]
    regions, notice = regions_from_mask(tmp_path / "mask.png", specs, 2, size=(80, 60))
    assert notice is not None and "scaled" in notice and "80×60" in notice
    assert regions.size == (80, 60)
    assert regions.regions[1].strength == 0.5 and regions.regions[1].blend == (0.0, 1.0)
    assert regions.coverage()[0] == pytest.approx(0.5 + 1 / 6, abs=0.02)
    assert regions.unpainted_share() == pytest.approx(1 / 6, abs=0.02)

    grey = np.tile(np.linspace(0, 255, 40, dtype=np.uint8), (30, 1))
    Image.fromarray(grey).save(tmp_path / "soft.png")
    soft, notice = regions_from_mask(tmp_path / "soft.png", [RegionSpec.parse("white=keep", 1)], 1, size=(40, 30))
    assert notice is None and soft.regions[0].keep
    assert np.array_equal(soft.masks[0], grey)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("blue=1", "no pixel of the mask mask.png is #0000ff"),
        ("octarine=1", "'octarine' is not a colour"),
        ("red=3", "there is no style 3"),
        ("red=one", "'one' is not a style number"),
        ("red", "expected COLOUR=STYLE"),
        ("red=keep", "nothing left to stylise"),
    ],
)
def test_bad_regions_are_refused_with_what_is_wrong(tmp_path, spec, message):
    Image.fromarray(np.full((8, 8, 3), RED, np.uint8)).save(tmp_path / "mask.png")
    with pytest.raises(RegionError, match=message):
        regions_from_mask(tmp_path / "mask.png", [RegionSpec.parse(spec, 2)], 2)


def test_an_unreadable_mask_is_refused(tmp_path):
    (tmp_path / "mask.png").write_bytes(b"not a picture")
    with pytest.raises(RegionError, match="cannot be read as an image"):
        regions_from_mask(tmp_path / "mask.png", [RegionSpec.parse("red=1", 1)], 1)
    with pytest.raises(RegionError, match="does not exist"):
        regions_from_mask(tmp_path / "missing.png", [RegionSpec.parse("red=1", 1)], 1)


def test_an_empty_region_and_a_wrong_blend_are_named():
    regions = Regions((Region("Sky", RED), Region("Town", GREEN, blend=(1.0, 0.0, 0.0))), np.zeros((2, 4, 4), np.uint8))
    with pytest.raises(RegionError) as error:
        regions.check(1)
    assert "region 'Sky' is empty" in str(error.value)
    assert "region 'Town' has 3 style weights for 1 style images" in str(error.value)


@pytest.mark.parametrize("weight", [math.nan, math.inf, 1e308, -1.0], ids=["nan", "inf", "huge", "negative"])
def test_a_region_style_weight_out_of_range_is_refused(weight):
    """Weights whose sum overflows would blend the paintings into colours of neither (shares of inf are 0)."""
    mask = np.full((1, 4, 4), 255, np.uint8)
    with pytest.raises(RegionError, match="not a number from 0 to 1000000"):
        Regions((Region("Sky", RED, blend=(weight, weight)),), mask).check(2)


def test_regions_go_through_json_unchanged():
    regions = halves(33, 17, Region("Sky", RED, blend=(0.2, 0.8), strength=1.5), Region("Face", WHITE, keep=True))
    back = Regions.from_json(regions.to_json())
    assert back.regions == regions.regions
    assert np.array_equal(back.masks, regions.masks)
    assert back.feather == regions.feather and back.digest() == regions.digest()


def test_the_keep_mask_and_groups_follow_the_painted_areas():
    regions = halves(64, 32, Region("keep", WHITE, keep=True), Region("right", RED, blend=(1.0,)), feather=0)
    scale = ScaleRegions.prepare(regions, (64, 32), torch.device("cpu"))
    assert scale.keep is not None and float(scale.keep[..., :, :32].min()) == 1.0
    assert [g.name for g in scale.groups] == ["right"]  # nothing unpainted
    assert scale.groups[0].share == 1.0


def test_a_soft_stroke_stays_soft_and_the_coverages_never_add_up_past_full():
    from style_studio.core.objective.strokes import Stroke, cleared, filled

    masks = np.zeros((2, 40, 60), np.uint8)
    masks[1, :, 30:] = 255
    stroke = Stroke(masks, 0, radius=10, hardness=0.5)
    for x in range(5, 56, 2):  # back and forth: soft edges do not build up
        stroke.to(x, 20)
    for x in range(55, 4, -3):
        stroke.to(x, 20)
    assert masks[0, 20, 20] == 255 and masks[1, 20, 40] == 0  # painted over region 1
    edge = masks[0, 20 + 8, 20]  # 8 px from the line, in the soft part of a 10 px brush
    assert 0 < edge < 255
    assert masks.astype(int).sum(0).max() <= 255
    area, before, after = stroke.patches()
    assert before.shape == after.shape == (2, area[0].stop - area[0].start, area[1].stop - area[1].start)
    eraser = Stroke(masks, 0, radius=4, hardness=1, erase=True)
    eraser.to(20, 20)
    assert masks[:, 20, 20].sum() == 0
    whole = filled(masks, 1)
    assert whole.astype(int).sum(0).min() >= 254  # every pixel covered
    assert not cleared(whole, 1)[1].any()


def test_the_style_map_is_the_layers_own_style_gradient_times_its_activations(untrained, pictures):
    """Grad-CAM's recipe with the layer's style loss: checked against autograd on that loss alone."""
    content, styles = pictures
    network = network_for(untrained, FP32)
    inputs = ScaleInputs.prepare(content, styles[:1], (96, 64), SETTINGS, FP32.device)
    with Objective(network, inputs, SETTINGS, FP32) as objective:
        assert objective.style_map() is None
        objective.watch("relu3_1")
        taps = []
        catch = objective._catch_map_gradient

        def spy():
            taps.append(objective.captured.taps["relu3_1"])
            catch()

        objective._catch_map_gradient = spy
        image = inputs.content.clone().requires_grad_(True)
        terms = objective.evaluate(image)
        (features,) = taps
        expected_gradient = torch.autograd.grad(terms.style["relu3_1"], features, retain_graph=True)[0]
        terms.total.backward()
        expected = (expected_gradient * features.detach()).sum(1)[0].abs()
        torch.testing.assert_close(objective.style_map(), expected)
        assert objective.style_map().shape == (16, 24) and float(objective.style_map().max()) > 0
        # The total gradient is unchanged by the watching branch.
        watched_gradient = image.grad.clone()
        objective.watch(None)
        image.grad = None
        objective.evaluate(image).total.backward()
        torch.testing.assert_close(image.grad, watched_gradient)
        assert objective.style_map() is None and not objective.captured.taps


def test_a_run_sends_a_style_map_with_its_previews_only_when_asked(tiny, pictures):
    content, styles = pictures
    settings = dataclasses.replace(SETTINGS, size=64, iterations=3, scales=1)
    records, _ = run(content, styles[:1], settings, tiny, previews=Previews(0))
    assert all(r.style_map is None for r in records)
    live = LiveChanges(settings, 1, content.size)
    live.style_map_layer = "relu2_1"
    records, _ = run(content, styles[:1], settings, tiny, previews=Previews(0), live=live)
    maps = [r.style_map for r in records if r.preview is not None and not r.start]
    assert maps and all(m is not None and m.shape == (43, 64) and m.min() >= 0 and m.max() == 1 for m in maps)


def test_a_stopped_run_keeps_its_regions_and_resuming_with_others_is_refused(tiny, pictures, tmp_path):
    from style_studio.core.errors import StyleStudioError
    from style_studio.core.run.checkpoints import CheckpointStore

    content, styles = pictures
    regions = halves(64, 43, Region("keep", WHITE, keep=True))
    settings = dataclasses.replace(SETTINGS, size=64, iterations=50, scales=1)
    store = CheckpointStore(tmp_path / "checkpoints")
    run_to_the_end(content, styles[:1], settings, tiny, cancel_after=3, regions=regions, checkpoints=store, run_id="r")
    checkpoint = store.load("r")
    assert checkpoint is not None and checkpoint.painted() is not None
    assert checkpoint.painted().digest() == Pictures(content, (), regions=regions).regions.digest()  # fitted to it
    records, _ = run(content, styles[:1], settings, tiny, regions=regions, resume=checkpoint)
    assert records[-1].outcome == FINISHED
    other = halves(64, 43, Region("keep", WHITE, keep=True), feather=0.05)
    with pytest.raises(StyleStudioError, match="painted regions are not the ones"):
        run(content, styles[:1], settings, tiny, regions=other, resume=checkpoint)
    with pytest.raises(StyleStudioError, match="painted regions are not the ones"):
        run(content, styles[:1], settings, tiny, resume=checkpoint)
