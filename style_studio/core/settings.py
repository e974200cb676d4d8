"""Settings of a run: one frozen dataclass, its defaults, and JSON in and out.

Presets and the metadata embedded in exported images are the same JSON
document::

    {"format": "style-studio", "version": 1, "settings": {...}}

Reading validates everything first and raises ``SettingsError`` listing every
problem, so a bad document never applies half-way.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from .about import About, check_fields, described, shown
from .about import about as _about
from .errors import SettingsError
from .io.files import read_given_file
from .network.layers import LAYER_NAMES, PRIMARY_STYLE_LAYERS, is_layer
from .network.weights import NO_NETWORK

FORMAT: Final = "style-studio"
FORMAT_VERSION: Final = 1

OPTIMIZERS: Final = ("lbfgs", "adam")
INITS: Final = ("content", "noise", "style", "palette", "instant", "tuned")
POOLINGS: Final = ("max", "avg")


@dataclass(frozen=True)
class StyleLossKind:
    """A way of comparing the style, described once: its name is ``--style-loss``'s choice, ``label`` the window's,
    ``about`` its part of the help, and ``where`` its ``StyleLoss`` class in ``core/objective`` ("module:Class",
    loaded when a run uses it, so that naming the settings imports no torch)."""

    label: str
    about: str
    where: str


#: The style losses by name. A new one is a file in ``core/objective`` and a line here.
STYLE_LOSS_KINDS: Final = {
    "gram": StyleLossKind("Gram (classic)", "Gram matrices (Gatys et al.): the photo's colours with the painting's "
                          "texture laid over", "terms:GramLoss"),
    "gaussian": StyleLossKind("Gaussian (painterly)", "mean and covariance apart (Wasserstein-2): the "
                              "painting's palette and strokes; looks more like the painting", "gaussian:GaussianLoss"),
}  # fmt: skip
STYLE_LOSSES: Final = tuple(STYLE_LOSS_KINDS)
#: Optical-flow methods for a video's frames (``VideoOptions.flow``): OpenCV's DIS at two presets, and Farneback.
FLOW_METHODS: Final = ("dis", "dis-fast", "farneback")
PRECISIONS: Final = ("auto", "fp32", "bf16", "fp16")
#: A device by name; a GPU's number as torch reads it (no leading zero, at most 999).
DEVICE_PATTERN: Final = re.compile(r"^(auto|cpu|mps|cuda(:(0|[1-9][0-9]{0,2}))?)\Z")

MIN_SIZE: Final = 32
MAX_SIZE: Final = 8192
MAX_SCALES: Final = 6
#: With ``scales`` at 0 (automatic), a picture up to this longest side runs at one
#: scale; a larger one starts at this size or under and doubles up to its own.
SCREEN_SIDE: Final = 1024
#: The coarsest scale's longest side is at least this (coarser scales are skipped).
MIN_SCALE_SIDE: Final = 64
#: The most scales ``first_scale`` may step through (128 px to 8192 px in steps of √2 is 13).
MAX_STEPPED_SCALES: Final = 16
#: The smallest tile core ``tile`` may ask for, in pixels.
MIN_TILE: Final = 128
#: The smallest step size: below it a step moves no pixel by a level in a lifetime of iterations.
MIN_STEP: Final = 1e-6
#: The largest preset file read (the window's are about 1 kB).
MAX_PRESET_BYTES: Final = 16 << 20
#: The largest weight of a loss term, a style layer or a style's blend. The losses are normalised, so the useful
#: weights lie within 0.001 to 1000; far above, the loss overflows and the picture cannot be judged.
MAX_WEIGHT: Final = 1_000_000

#: The settings form's groups, in the window's order (each setting's ``About.group`` is one).
FORM_GROUPS: Final = ("Style layers", "Balance", "Picture", "Computation")

#: Step size each optimiser starts from when ``step_size`` is None. The image
#: lives in [0, 1]; L-BFGS scales its own steps.
DEFAULT_STEP: Final = {"lbfgs": 1.0, "adam": 0.02}


def _default_style_layers() -> tuple[tuple[str, float], ...]:
    return tuple((name, 1.0) for name in PRIMARY_STYLE_LAYERS)


@dataclass(frozen=True)
class Settings:
    """Everything that decides the picture a run makes.

    Loss weights are relative: each loss term is normalised by its target's
    magnitude (see ``losses``), so the same weights balance the same way at
    any size and with any weights file. Each field's ``About`` (``about(name)``)
    says what it is, for the command line and the help.
    """

    size: int = field(
        default=512,
        metadata=_about("longest side in pixels", low=MIN_SIZE, high=MAX_SIZE, unit="pixels",
                        tip="Longest side of the result in pixels. Larger takes longer and needs more memory.",
                        label="Size", group="Picture", everyday=True, step=64),
    )  # fmt: skip
    iterations: int = field(
        default=150,
        metadata=_about("optimiser steps at the first (coarsest) scale, one forward and backward pass each; 0: the "
                        "start picture alone at full size, no optimisation (with --init instant: the instant look)",
                        low=1, high=100_000, zero="the start picture alone",
                        tip="Optimisation steps at the first scale. More steps: a more finished picture. 0: the "
                        "start picture alone (with the instant start: the network's look, in a second).",
                        label="Iterations", group="Picture", everyday=True, step=50),
    )  # fmt: skip
    scales: int = field(
        default=0,
        metadata=_about("coarse-to-fine scales, each coarser one the scale ratio smaller; 0: from the first scale "
                        f"up (with no first scale: one up to {SCREEN_SIDE} px, then one more per doubling)", low=1,
                        high=MAX_SCALES, zero="automatic",
                        tip="Coarse-to-fine: paint smaller first (by the scale step for each further scale), then "
                        "refine at full size. 2-3 scales give larger, more coherent strokes. Auto: from the first "
                        "scale up to the size. 1 = full size only.", label="Scales", group="Picture"),
    )  # fmt: skip
    first_scale: int = field(
        default=192,
        metadata=_about("the first scale's longest side when --scales is automatic: the scales step up from about "
                        "this by the scale ratio to the size, whatever the size", low=MIN_SCALE_SIDE, high=MAX_SIZE,
                        zero="off", unit="pixels",
                        tip="Start every picture this small (most iterations are cheap there), then step up by the "
                        "scale step to the size: the whole picture's look shows within seconds. Used when Scales "
                        f"is automatic; 0: one scale up to {SCREEN_SIDE} px, then one more per doubling.", earlier=0,
                        label="First scale", group="Picture", step=32),
    )  # fmt: skip
    scale_ratio: float = field(
        default=2.0,
        metadata=_about("each finer scale's side as a multiple of the coarser one's (1.41: steps of √2)",
                        low=1.1, high=4, metavar="RATIO",
                        tip="How much larger each finer scale is than the one before: 2 doubles the side, 1.41 "
                        "takes steps of √2 (more scales, each closer to the last).", earlier=2.0,
                        label="Scale step", group="Picture", step=0.1),
    )  # fmt: skip
    # The composition settles at the coarse scales, the finer ones refine it.
    finer_iterations: float = field(
        default=0.5,
        metadata=_about("iterations at each finer scale, as a share of the previous scale's", low=0.05, high=1,
                        metavar="SHARE",
                        tip="Iterations at each finer scale, as a share of the previous scale's. The composition "
                        "settles at the coarse scales; the finer ones only refine it, and each costs four times as "
                        "much per iteration.", label="Finer scales", group="Picture", percent=True, step=5),
    )  # fmt: skip
    average: bool = field(
        default=False,
        metadata=_about("keep the average of each scale's last iterations (about a fifth of them) as the picture, "
                        "not the lowest-loss one",
                        tip="Show and save the average of the last iterations' pictures rather than the lowest-loss "
                        "one: fewer speckles where the optimisation still jitters.", earlier=False,
                        label="Average the last iterations", group="Picture"),
    )  # fmt: skip
    optimizer: str = field(
        default="lbfgs",
        metadata=_about("the optimiser", choices=OPTIMIZERS,
                        tip="L-BFGS converges fastest for style transfer; Adam is steadier with unusual settings.",
                        label="Optimiser", group="Picture", choice_labels=("L-BFGS", "Adam")),
    )  # fmt: skip
    init: str = field(
        default="palette",
        metadata=_about("the picture the run starts from: the photo, noise, the first style, the photo in "
                        "the styles' colours (palette), the instant look (a network paints it at once), or the "
                        "look tuned to the painting (the network trained through VGG19 first; kept for the next "
                        "photo in the same painting)",
                        choices=INITS,
                        tip="Where the picture starts: the content photo (keeps layout best), random noise (more "
                        "painterly, less faithful), the first style image, the photo already in the "
                        "painting's colours (its palette from the first iteration), or the instant look: a "
                        "network's painting of the photo, in a second, that the optimisation goes on from; or the "
                        "look tuned to the painting (a minute or two the first time, then at once).",
                        label="Start from", group="Picture", everyday=True,
                        choice_labels=("Content image", "Noise", "First style image", "Content, recoloured",
                                       "Instant look", "Tuned look")),
    )  # fmt: skip
    tune_steps: int = field(
        default=120,
        metadata=_about("steps tuning the look to the painting (with --init tuned), each on a crop of the photo",
                        low=1, high=100_000,
                        tip="How long the look is tuned to the painting, the first time it is used: more steps, "
                        "a look closer to the painting.",
                        label="Tuning steps", group="Picture", step=20, earlier=120),
    )  # fmt: skip
    content_layers: tuple[str, ...] = field(
        default=("relu4_2",),
        metadata=_about("the layers whose activations keep the photo's content", metavar="L1,L2",
                        tip="The layer whose activations must match the content image. Deeper layers keep the "
                        "layout but let details change; shallower ones keep the photo almost as it is.",
                        label="Content layer", group="Style layers", control="layer", offers=LAYER_NAMES),
    )  # fmt: skip
    style_layers: tuple[tuple[str, float], ...] = field(
        default_factory=_default_style_layers,
        metadata=_about("style layers with weights, e.g. relu1_1:1,relu2_1:0.5 (a layer absent or at 0 is not "
                        "computed)", metavar="L:W,...", low=0, high=MAX_WEIGHT, slider=(0, 5), step=0.05,
                        tip="How strongly this layer's textures are matched. Early layers (relu1_1, relu2_1) carry "
                        "colour and fine grain; deep layers (relu4_1, relu5_1) carry larger strokes and shapes. "
                        "0 turns the layer off. Changes apply to a running optimisation at once.", live=True,
                        label="Style layers", group="Style layers", everyday=True, control="layers"),
    )  # fmt: skip
    content_weight: float = field(
        default=1.0,
        metadata=_about("weight of the content term", low=0, high=MAX_WEIGHT,
                        tip="How much of the content image's layout to keep. Higher: more photo, less painting.",
                        live=True, plans=False, label="Content", group="Balance", everyday=True, slider=(0.01, 100)),
    )  # fmt: skip
    style_weight: float = field(
        default=3.0,
        metadata=_about("weight of the style terms", low=0, high=MAX_WEIGHT,
                        tip="How strongly the picture takes on the style. Higher: more painting, less photo.",
                        live=True, plans=False, label="Style", group="Balance", everyday=True, slider=(0.01, 1000)),
    )  # fmt: skip
    tv_weight: float = field(
        default=0.1,
        metadata=_about("weight of the smoothing (total variation) term", low=0, high=MAX_WEIGHT,
                        tip="Smoothing. Higher removes speckle and noise but blurs fine strokes.",
                        live=True, plans=False, label="Smoothing", group="Balance", everyday=True, slider=(0.001, 10)),
    )  # fmt: skip
    colour_weight: float = field(
        default=1.0,
        metadata=_about("weight of the colour term: the picture's colours held to the painting's whole colour "
                        "distribution (0: off; no effect with --preserve-colors)", low=0, high=MAX_WEIGHT, earlier=0.0,
                        tip="How closely the picture keeps the painting's colours, its few strong ones as well as "
                        "its average. 0: only the style terms decide the colours. No effect with Preserve colours.",
                        live=True, plans=False, label="Colour", group="Balance", everyday=True, slider=(0.01, 100)),
    )  # fmt: skip
    style_blend: tuple[float, ...] = field(
        default=(),
        metadata=_about(
            "blend weight of each style picture (default: equal)",
            metavar="W1,W2",
            low=0,
            high=MAX_WEIGHT,
            live=True,
            plans=False,
        ),
    )
    style_scale: float = field(
        default=1.0,
        metadata=_about("style picture size relative to the output", low=0.1, high=4,
                        tip="Size of the style image relative to the result. Smaller: finer, more repeated "
                        "strokes; larger: bigger strokes.", label="Style scale", group="Picture", step=0.1),
    )  # fmt: skip
    preserve_colors: bool = field(
        default=False,
        metadata=_about("keep the photo's colours",
                        tip="Keep the photo's own colours and take only the style's brushwork and texture.",
                        label="Preserve content colours", group="Picture", everyday=True),
    )  # fmt: skip
    # Max is VGG's own; average pooling (Gatys et al.) smooths the gradients.
    pooling: str = field(
        default="max",
        metadata=_about("the network's pooling", choices=POOLINGS,
                        tip="Max is VGG's own pooling; average pooling gives smoother, softer textures.",
                        label="Pooling", group="Picture", choice_labels=("Max", "Average")),
    )  # fmt: skip
    style_loss: str = field(
        default="gaussian",
        metadata=_about("how the style is compared: "
                        + "; ".join(f"{name}, {kind.about}" for name, kind in STYLE_LOSS_KINDS.items()),
                        choices=STYLE_LOSSES,
                        tip="How the picture's textures are compared with the painting's. "
                        + " ".join(f"{kind.label}: {kind.about}." for kind in STYLE_LOSS_KINDS.values()),
                        earlier="gram",
                        label="Style measure", group="Picture", everyday=True,
                        choice_labels=tuple(kind.label for kind in STYLE_LOSS_KINDS.values())),
    )  # fmt: skip
    seed: int = field(
        default=0,
        metadata=_about("the random seed: the same seed, the same picture", low=0, high=2**63 - 1,
                        tip="The random seed: the same seed and settings give the same picture on the same device.",
                        label="Seed", group="Picture"),
    )  # fmt: skip
    device: str = field(
        default="auto",
        metadata=_about("auto, cpu, cuda, cuda:N or mps", metavar="DEVICE",
                        tip="Where to compute: automatic picks a CUDA or Apple GPU when there is one, else the CPU.",
                        label="Device", group="Computation", offers=("auto", "cpu", "cuda", "mps"),
                        choice_labels=("Automatic", "CPU", "CUDA GPU", "Apple GPU (MPS)")),
    )  # fmt: skip
    precision: str = field(
        default="auto",
        metadata=_about("the arithmetic's precision (auto: bf16 or fp16 where fast)", choices=PRECISIONS,
                        tip="Automatic uses fast mixed precision (bf16/fp16) where the device does it well and "
                        "32-bit floats elsewhere. The picture looks the same.",
                        label="Precision", group="Computation",
                        choice_labels=("Automatic", "32-bit (fp32)", "bfloat16", "float16")),
    )  # fmt: skip
    weights: str = field(
        default="imagenet",
        metadata=_about("VGG19 weights: imagenet (downloaded once), untrained, or a .pth file",
                        metavar="imagenet|untrained|PATH",
                        tip="The trained network that judges content and style. ImageNet VGG19 gives real results; "
                        "untrained features only transfer colour and texture.",
                        label="Weights", group="Computation", everyday=True, control="weights",
                        offers=("imagenet", "untrained"),
                        choice_labels=("ImageNet VGG19", "Untrained VGG19")),
    )  # fmt: skip
    step_size: float | None = field(
        default=None,
        metadata=_about("the optimiser's step size (default: automatic)", low=MIN_STEP, high=MAX_WEIGHT),
    )
    tile: int = field(
        default=0,
        metadata=_about("evaluate in tiles whose core is at most N px on a side: the same result in bounded memory "
                        "(0: only when the picture would not fit)", low=MIN_TILE, high=MAX_SIZE, metavar="N",
                        zero="automatic", unit="pixels",
                        tip="Work on a large picture in tiles of this size: the same result, in less memory, a "
                        "little slower. Auto: only when the picture would not fit in memory otherwise.",
                        label="Tiles", group="Computation", step=256),
    )  # fmt: skip
    deterministic: bool = field(
        default=True,
        metadata=_about("let a GPU pick faster kernels whose results vary slightly from run to run",
                        flag="--nondeterministic", inverted=True,
                        tip="The same seed and settings give the same picture, on a GPU too. Off, a GPU may pick "
                        "faster kernels whose results differ slightly from run to run.",
                        label="Same seed, same picture", group="Computation"),
    )  # fmt: skip

    @property
    def style_layer_weights(self) -> dict[str, float]:
        return dict(self.style_layers)

    @property
    def active_style_layers(self) -> dict[str, float]:
        return {name: w for name, w in self.style_layers if w > 0}

    def style_side(self, longest: int | None = None) -> int:
        """Longest side of the style images for an output whose longest side is ``longest`` (default ``size``)."""
        return max(1, round((self.size if longest is None else longest) * self.style_scale))

    @property
    def optimises(self) -> bool:
        """Whether the run optimises at all: with no iterations its picture is the start picture alone."""
        return self.iterations > 0

    @property
    def tunes(self) -> bool:
        """Whether the run starts from the look tuned to the painting (tuned through VGG19 when not kept)."""
        return self.init == "tuned"

    @property
    def network_weights(self) -> str:
        """The weights the run loads: ``weights``, or none (``NO_NETWORK``) for a run that neither optimises nor
        tunes the look."""
        return self.weights if self.optimises or self.tunes else NO_NETWORK

    def scale_count(self) -> int:
        """The number of scales: ``scales`` when set, else from ``first_scale`` by ``scale_ratio``, or with neither
        one per doubling from SCREEN_SIDE; one, at full size, for a run that optimises nothing."""
        if not self.optimises:
            return 1
        if self.scales:
            return self.scales
        if self.first_scale:
            steps = math.log(self.size / self.first_scale) / math.log(self.scale_ratio)
            return min(MAX_STEPPED_SCALES, 1 + max(0, math.floor(steps + 1e-9)))
        return min(MAX_SCALES, 1 + max(0, math.ceil(math.log2(self.size / SCREEN_SIDE))))

    def iterations_per_scale(self, scales: int) -> list[int]:
        """Iterations at each of ``scales`` scales, coarse to fine."""
        if not self.optimises:
            return [0] * scales
        return [max(1, round(self.iterations * self.finer_iterations**k)) for k in range(scales)]

    def schedule(self) -> list[tuple[int, int]]:
        """(longest side, iterations) of each scale the run will have, coarse to fine."""
        sides = scale_sides(self.size, self.scale_count(), self.scale_ratio)
        return list(zip(sides, self.iterations_per_scale(len(sides)), strict=True))

    @property
    def effective_step(self) -> float:
        return self.step_size if self.step_size is not None else DEFAULT_STEP[self.optimizer]

    def plan_key(self) -> tuple[object, ...]:
        """What of the settings shapes the run's plan (its scales, memory and time): each field whose ``About.plans``,
        the style layers as the ones computed (their weights plan nothing)."""
        return tuple(
            tuple(self.active_style_layers) if f.name == "style_layers" else getattr(self, f.name)
            for f in dataclasses.fields(self)
            if f.metadata["about"].plans
        )

    def blend_weights(self, n_styles: int) -> list[float]:
        """Normalised blend weights for ``n_styles`` style images (sum 1)."""
        raw = list(self.style_blend) if self.style_blend else [1.0] * n_styles
        if len(raw) != n_styles:
            raise SettingsError(f"{len(raw)} style blend weights given for {n_styles} style images")
        total = sum(raw)
        if total <= 0:
            raise SettingsError("the style blend weights are all zero")
        return [w / total for w in raw]

    def with_style_layer(self, name: str, weight: float) -> Settings:
        """A copy with one style layer's weight set (added if absent)."""
        layers = dict(self.style_layers)
        layers[name] = weight
        ordered = tuple((n, layers[n]) for n in LAYER_NAMES if n in layers)
        return dataclasses.replace(self, style_layers=ordered)

    def validate(self) -> Settings:
        """Raise SettingsError listing every problem; return self when valid."""
        problems = _check(to_dict(self), type(self))
        if problems:
            raise SettingsError(problems)
        return self


def scale_sides(size: int, scales: int, ratio: float = 2.0) -> list[int]:
    """The longest side of each of ``scales`` scales, coarse to fine; the last is ``size``.

    Each coarser scale is the next one's side divided by ``ratio``; those under MIN_SCALE_SIDE are dropped.
    """
    sides = [round(size / ratio**k) for k in reversed(range(scales))]
    return [side for k, side in zip(reversed(range(scales)), sides, strict=True) if k == 0 or side >= MIN_SCALE_SIDE]


#: The defaults, in one place.
DEFAULTS: Final = Settings()

#: Presets named for what a user wants: the settings each sets over the user's (the size, the weights, the device
#: and the loss weights stay the user's). Chosen by ``benchmarks/quality.py`` (docs/quality/README.md).
PRESETS: Final[dict[str, dict[str, Any]]] = {
    # A quick look: the painting's colours from the first iteration, most iterations at a small first scale.
    "quick": {
        "style_loss": "gaussian",
        "init": "palette",
        "first_scale": 128,
        "scale_ratio": 1.41,
        "iterations": 150,
        "scales": 0,
        "finer_iterations": 0.5,
    },
    "default": {},
    # The best the machine can do: the Gaussian style measure from the painting's colours, every iteration at full size.
    "best": {"style_loss": "gaussian", "init": "palette", "iterations": 300, "scales": 0, "first_scale": 0},
    # The instant look alone: a network paints the photo at once; no optimisation, no VGG19.
    "instant": {"init": "instant", "iterations": 0},
    # The look tuned to the painting, alone: the first photo tunes it (a minute or two), the next paint at once.
    "tuned": {"init": "tuned", "iterations": 0},
}
#: The settings a look tuned to a painting is tuned under (``run.tuned_looks``): a look tuned under others is
#: another look (the window's look before Start follows them too).
TUNING_FIELDS: Final = (
    "size", "content_layers", "style_layers", "content_weight", "style_weight", "tv_weight", "style_scale",
    "pooling", "style_loss", "tune_steps", "weights",
)  # fmt: skip
#: What each preset says in the window's Settings menu.
PRESET_NAMES: Final = {
    "instant": "Instant look (no optimisation)",
    "tuned": "Tuned look (the look learns the painting)",
    "quick": "Quick look",
    "default": "Default",
    "best": "Best this machine can do",
}


def with_preset(settings: Settings, name: str) -> Settings:
    """``settings`` with preset ``name``'s fields (any field another preset sets goes back to its default)."""
    if name not in PRESETS:
        raise SettingsError(f"unknown preset {name!r}; choose {', '.join(PRESETS)}")
    touched = {field for preset in PRESETS.values() for field in preset}
    fields = {field: getattr(DEFAULTS, field) for field in touched} | PRESETS[name]
    return dataclasses.replace(settings, **fields)


def preset(name_or_file: str | os.PathLike[str]) -> Settings:
    """The settings a preset gives: a built-in preset's name (``PRESETS``), or a preset file saved by the window.

    A built-in name always means the built-in preset, whatever files the current folder holds; a file is named as a
    path (``./quick``, ``quick.json``, or a ``Path``).

    Raises:
        SettingsError: an unknown name, a file that cannot be read, or one that holds no valid settings.
    """
    if isinstance(name_or_file, str) and name_or_file in PRESETS:
        return with_preset(DEFAULTS, name_or_file)
    choices = ", ".join(PRESETS)
    if not isinstance(name_or_file, (str, os.PathLike)):
        raise SettingsError(f"a preset is one of {choices} or a preset file's path, got {shown(name_or_file)}")
    path = Path(name_or_file)
    try:
        if not str(name_or_file).strip():
            raise FileNotFoundError(name_or_file)  # "" would be the current folder
        data = read_given_file(path, MAX_PRESET_BYTES)
    except FileNotFoundError:
        raise SettingsError(
            f"unknown preset {shown(str(name_or_file))}: choose {choices}, or a preset file the window saved "
            "(named as a path: ./name or name.json)"
        ) from None
    except OSError as exc:
        raise SettingsError(f"the preset cannot be read ({exc.strerror or exc})", str(path)) from None
    return loads(data, source=path.name)


def about(name: str) -> About:
    """The description of the setting ``name``."""
    described: About = next(f for f in dataclasses.fields(Settings) if f.name == name).metadata["about"]
    return described


#: The settings a running optimisation picks up at its next iteration (``About.live``).
LIVE_FIELDS: Final = tuple(name for name, described_as in described(Settings).items() if described_as.live)
_described: Final = described(Settings)
#: Every setting's name.
NAMES: Final = frozenset(f.name for f in dataclasses.fields(Settings))


def to_dict(settings: Settings) -> dict[str, Any]:
    """Plain JSON-able dict; style layers become a {name: weight} mapping."""
    out = dataclasses.asdict(settings)
    out["style_layers"] = dict(settings.style_layers)
    out["content_layers"] = list(settings.content_layers)
    out["style_blend"] = list(settings.style_blend)
    return out


def from_dict(data: Mapping[str, Any], *, source: str | None = None, base: Settings = DEFAULTS) -> Settings:
    """Settings from a dict as ``to_dict`` makes it; missing keys keep ``base``'s values.

    Raises:
        SettingsError: listing every invalid or unknown entry; nothing is applied.
    """
    if not isinstance(data, Mapping):
        raise SettingsError(f"expected an object of settings, got {type(data).__name__}", source)
    merged = to_dict(base)
    unknown = sorted(set(data) - set(merged), key=str)
    problems = [f"unknown setting {shown(k)}" for k in unknown]
    merged.update({k: v for k, v in data.items() if k not in unknown})
    problems += _check(merged, type(base))
    if problems:
        raise SettingsError(problems, source)
    merged["content_layers"] = tuple(merged["content_layers"])
    order = {name: i for i, name in enumerate(LAYER_NAMES)}
    merged["style_layers"] = tuple(
        sorted(((str(k), float(v)) for k, v in merged["style_layers"].items()), key=lambda kv: order[kv[0]])
    )
    merged["style_blend"] = tuple(float(w) for w in merged["style_blend"])
    for key in _floats(type(base)):  # JSON may give a float as a whole number
        merged[key] = float(merged[key])
    for key in _ints(type(base)):  # numpy's whole numbers become Python's (a JSON document holds them)
        merged[key] = int(merged[key])
    if merged["step_size"] is not None:
        merged["step_size"] = float(merged["step_size"])
    return type(base)(**merged)


def parse_style_layers(text: str) -> dict[str, float]:
    """Style layers as the command line types them, ``relu1_1:1,relu2_1:0.5`` (a layer without a weight gets 1).

    Raises:
        SettingsError: a weight that is not a number (the layers' names are checked by ``from_dict``).
    """
    layers: dict[str, float] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, _, weight = item.partition(":")
        try:
            layers[name.strip()] = float(weight) if weight else 1.0
        except ValueError:
            raise SettingsError(f"style_layers: {weight!r} is not a number (in {item!r})") from None
    return layers


def _parse_names(text: str) -> list[str]:
    return [name.strip() for name in text.split(",") if name.strip()]


def _parse_blend(text: str) -> list[float]:
    try:
        return [float(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise SettingsError(f"style_blend must be numbers separated by commas, got {shown(text)}") from None


#: The settings the command line types as text, each with its reading: ``from_fields`` reads them so for the
#: command line's options and the door's keywords alike.
_TEXT_FORMS: Final = {"style_layers": parse_style_layers, "content_layers": _parse_names, "style_blend": _parse_blend}


def from_fields(fields: Mapping[str, Any], base: Settings = DEFAULTS) -> Settings:
    """Settings by the command line's names over ``base``: the command line's options, the door's keywords.

    A setting given as text is read as the command line reads it (``style_layers="relu1_1:1,relu2_1:0.5"``,
    ``content_layers="relu4_2,relu3_1"``, ``style_blend="2,1"``); style layers may also be a mapping of names to
    weights or (name, weight) pairs, as ``Settings.style_layers`` holds them. Then ``from_dict`` checks them all.

    Raises:
        SettingsError: listing every value that cannot be read or is invalid, each named; nothing is applied.
    """
    data = dict(fields)
    problems: list[str] = []
    for name, read in _TEXT_FORMS.items():
        if isinstance(data.get(name), str):
            try:
                data[name] = read(data[name])
            except SettingsError as exc:
                problems += exc.problems
                del data[name]  # said once, as it was given: not again as from_dict would see it
    layers = data.get("style_layers")
    if isinstance(layers, (list, tuple)) and all(
        isinstance(pair, (list, tuple)) and len(pair) == 2 and isinstance(pair[0], str) for pair in layers
    ):
        data["style_layers"] = dict(layers)
    try:
        settings = from_dict(data, base=base)
    except SettingsError as exc:
        raise SettingsError(problems + exc.problems) from None
    if problems:
        raise SettingsError(problems)
    return settings


def _floats(kind: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(kind) if f.type == "float")


def _ints(kind: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(kind) if f.type == "int")


def dumps(settings: Settings, **extra: Any) -> str:
    """The JSON document for presets and exported metadata.

    ``extra`` adds informational top-level keys (e.g. the weights' label);
    they are ignored when reading.
    """
    doc: dict[str, Any] = {"format": FORMAT, "version": FORMAT_VERSION, "settings": to_dict(settings)}
    doc.update(extra)
    return json.dumps(doc, indent=2, sort_keys=False)


def loads(text: str | bytes, *, source: str | None = None) -> Settings:
    """Settings from a document made by ``dumps``.

    Raises:
        SettingsError: malformed JSON, another format, a newer version or
            invalid settings, with ``source`` (a file name) in the message.
    """
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError) as exc:  # ValueError: bad JSON or text, an integer of over 4300 digits
        raise SettingsError(f"not valid JSON ({exc})", source) from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise SettingsError("not a Style Studio settings file", source)
    version = doc.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise SettingsError("the settings file has no valid version number", source)
    if version > FORMAT_VERSION:
        raise SettingsError(
            f"made by a newer Style Studio (format version {version}); "
            f"this version reads up to version {FORMAT_VERSION}. Update Style Studio",
            source,
        )
    return from_dict(doc.get("settings", {}), source=source)


def _check(d: Mapping[str, Any], kind: type) -> list[str]:
    """Every problem with a settings dict (as ``to_dict`` makes it) of settings ``kind`` (``Settings``)."""
    problems: list[str] = []

    def need(ok: bool, message: str) -> None:
        if not ok:
            problems.append(message)

    problems += check_fields(kind, d)  # every bounded number and every choice, from its About
    need(
        isinstance(d["device"], str) and bool(DEVICE_PATTERN.match(d["device"])),
        f"device must be auto, cpu, cuda, cuda:N or mps, got {shown(d['device'])}",
    )
    need(
        isinstance(d["weights"], str) and d["weights"].strip() != "",
        "weights must be 'imagenet', 'untrained' or a file path",
    )

    content = d["content_layers"]
    if not isinstance(content, (list, tuple)) or not all(isinstance(n, str) for n in content):
        problems.append(f"content_layers must be a list of layer names, got {shown(content)}")
    else:
        problems += [f"unknown content layer {shown(n)}" for n in content if not is_layer(n)]
    style, layers = d["style_layers"], _described["style_layers"]
    if not isinstance(style, Mapping):
        problems.append(f"style_layers must map layer names to weights, got {shown(style)}")
    else:
        for name, weight in style.items():
            if not (isinstance(name, str) and is_layer(name)):
                problems.append(f"unknown style layer {shown(name)}")
            else:  # each weight in the range the field's About says
                problem = layers.check(f"style layer {name} weight", weight, float)
                problems += [problem] if problem else []
    blend, blends = d["style_blend"], _described["style_blend"]
    if not isinstance(blend, (list, tuple)):
        problems.append(f"style_blend must be a list of numbers, got {shown(blend)}")
    else:
        blend_problems = [p for p in (blends.check("a style_blend weight", w, float) for w in blend) if p]
        problems += blend_problems
        if blend and not blend_problems and sum(blend) <= 0:
            problems.append("style_blend weights are all zero")
    return problems
