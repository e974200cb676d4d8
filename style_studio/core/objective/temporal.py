"""Coherence between a clip's frames: optical flow, where it can be trusted, warping, and the temporal term.

Ruder, Dosovitskiy and Brox, "Artistic style transfer for videos" (GCPR
2016): frame t starts from stylised frame t-1 warped along the flow between
the *input* frames, and a temporal term keeps it close to that warped frame
wherever the flow is reliable. A pixel is unreliable when it was hidden in
frame t-1 (the forward and backward flows disagree), when it lies on a motion
boundary (the flow changes sharply), or when the warped input does not match
the input there (a cut, a change of light).

Flow is OpenCV's DIS (Kroeger et al. 2016), on the frames at render size.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from ..errors import StyleStudioError
from ..settings import FLOW_METHODS
from . import color
from .guided import MIN_SHARE, StyleGroup

#: A frame whose share of reliable pixels is below this starts fresh, as after a cut.
SCENE_CUT_SHARE = 0.3

# How far (in [0, 1] RGB, averaged over channels) a warped input pixel may be from the input's and still be trusted.
_PHOTOMETRIC_TOLERANCE = 0.08

#: Where the flow is reliable, the share of a frame the look paints on its own that the stylised frame before it,
#: carried along the flow, takes (``blend_along_flow``).
CARRIED_SHARE = 0.8


def _gray(picture: np.ndarray) -> np.ndarray:
    import cv2

    return np.ascontiguousarray(cv2.cvtColor(picture, cv2.COLOR_RGB2GRAY), dtype=np.uint8)


class FlowEstimator:
    """Dense optical flow between two pictures of the same size, (H, W, 2) float32 in pixels.

    ``flow(a, b)[y, x]`` is where the pixel (x, y) of ``a`` is found in ``b``, as an offset.
    """

    def __init__(self, method: str = "dis") -> None:
        import cv2

        if method not in FLOW_METHODS:
            raise StyleStudioError(f"unknown flow method {method!r}; choose from {', '.join(FLOW_METHODS)}")
        self.method = method
        if method.startswith("dis"):
            preset = cv2.DISOPTICAL_FLOW_PRESET_FAST if method == "dis-fast" else cv2.DISOPTICAL_FLOW_PRESET_MEDIUM
            self._dis = cv2.DISOpticalFlow.create(preset)

    def flow(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Flow from ``a`` to ``b``, both (H, W, 3) uint8 RGB."""
        import cv2

        gray_a, gray_b = _gray(a), _gray(b)
        if self.method == "farneback":
            flow = cv2.calcOpticalFlowFarneback(gray_a, gray_b, None, 0.5, 4, 15, 3, 5, 1.2, 0)
        else:
            flow = self._dis.calc(gray_a, gray_b, None)  # type: ignore[call-overload]
        return np.asarray(flow, dtype=np.float32)


def warp(picture: np.ndarray, flow: np.ndarray) -> np.ndarray:
    """``picture`` sampled at each pixel plus ``flow`` (bilinear, edges repeated): frame t-1 seen from frame t.

    ``flow`` is the backward flow (from frame t to frame t-1); the result has ``flow``'s height and width.
    """
    import cv2

    height, width = flow.shape[:2]
    xs, ys = np.meshgrid(np.arange(width, dtype=np.float32), np.arange(height, dtype=np.float32))
    map_x, map_y = xs + flow[..., 0], ys + flow[..., 1]
    warped = cv2.remap(picture, map_x, map_y, interpolation=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
    return np.asarray(warped)


def reliable_pixels(forward: np.ndarray, backward: np.ndarray) -> np.ndarray:
    """Where the backward flow can be trusted: (H, W) float32, 1 or 0 (Ruder et al., section 3.2).

    ``forward``: frame t-1 to t; ``backward``: frame t to t-1. A pixel of
    frame t is disoccluded when following the backward flow and then the
    forward flow does not bring it back; it is on a motion boundary when the
    backward flow's gradient is large against its magnitude.
    """
    there = warp(forward, backward)  # the forward flow where each pixel of frame t came from
    round_trip = np.square(there + backward).sum(-1)
    disoccluded = round_trip > 0.01 * (np.square(there).sum(-1) + np.square(backward).sum(-1)) + 0.5
    du_y, du_x = np.gradient(backward[..., 0])
    dv_y, dv_x = np.gradient(backward[..., 1])
    boundary = du_x**2 + du_y**2 + dv_x**2 + dv_y**2 > 0.01 * np.square(backward).sum(-1) + 0.002
    trusted: np.ndarray = (~(disoccluded | boundary)).astype(np.float32)
    return trusted


@dataclass(frozen=True)
class FrameMotion:
    """How frame t relates to frame t-1: the backward flow and where it is reliable.

    Attributes:
        backward: (H, W, 2), from frame t to frame t-1.
        reliable: (H, W) float32 in {0, 1}.
    """

    backward: np.ndarray
    reliable: np.ndarray

    @property
    def reliable_share(self) -> float:
        return float(self.reliable.mean())

    @property
    def is_cut(self) -> bool:
        """Whether frame t is a new scene: too little of it is seen in frame t-1."""
        return self.reliable_share < SCENE_CUT_SHARE

    @classmethod
    def between(cls, previous: np.ndarray, current: np.ndarray, flows: FlowEstimator) -> FrameMotion:
        """The motion from input frame ``previous`` to input frame ``current`` (both (H, W, 3) uint8, same size)."""
        forward = flows.flow(previous, current)
        backward = flows.flow(current, previous)
        reliable = reliable_pixels(forward, backward)
        seen = warp(previous, backward).astype(np.float32)
        mismatch = np.abs(seen - current.astype(np.float32)).mean(-1) / 255
        reliable *= mismatch <= _PHOTOMETRIC_TOLERANCE
        return cls(backward, reliable)

    def carried(self, stylised: np.ndarray, content: np.ndarray) -> np.ndarray:
        """Frame t's starting picture: stylised frame t-1 warped where the flow is trusted; elsewhere (uncovered
        behind a moving object, a motion boundary) the content frame in the colours its stylised neighbours took
        (``styled_estimate``), so those pixels start as styled as their surroundings rather than as the photo."""
        warped = warp(stylised, self.backward)
        estimate = styled_estimate(warped, content, self.reliable)
        keep = self.reliable[..., None]
        start: np.ndarray = (warped * keep + estimate * (1 - keep)).round().clip(0, 255)
        return start.astype(np.uint8)


def blend_along_flow(
    painted: np.ndarray, previous: np.ndarray, motion: FrameMotion, carried: float = CARRIED_SHARE
) -> np.ndarray:
    """A frame painted on its own (the look alone, with no optimisation to keep it near the last one) made coherent
    with the stylised frame before it: where ``motion`` trusts the flow, ``carried`` of ``previous`` warped along
    it and the rest of ``painted``; where it does not (uncovered behind a moving object, a motion boundary, the
    light changed), ``painted`` alone.

    A network paints each frame afresh, and its strokes move with every change of the input (flicker). Blended so,
    a frame is the paintings of the frames before it, each carried along the flow to it, weighing less the older
    they are: a stroke painted k frames ago weighs ``carried``**k (at 0.8: a tenth after 10 frames). Flicker
    falls to about a fifth where the scene is still or moves smoothly, while what the warp's resampling blurs,
    and what the flow gets slightly wrong, fades out within a few frames instead of smearing for ever; new
    pixels are painted at once.

    Args:
        painted: frame t as the look painted it, (H, W, 3) uint8.
        previous: stylised frame t-1 (as this function made it), (H, W, 3) uint8.
        motion: from input frame t-1 to input frame t (``FrameMotion.between``).
        carried: the share of the warped frame t-1 where the flow is reliable, in [0, 1].

    Returns:
        Frame t, (H, W, 3) uint8.
    """
    warped = warp(previous, motion.backward).astype(np.float32)
    share = carried * motion.reliable[..., None]
    blended = share * warped + (1 - share) * painted.astype(np.float32)
    result: np.ndarray = np.clip(blended + 0.5, 0, 255).astype(np.uint8)
    return result


def styled_estimate(styled: np.ndarray, content: np.ndarray, known: np.ndarray) -> np.ndarray:
    """``content`` (H, W, 3) uint8 in the colours ``styled`` gave it nearby: (H, W, 3) float32 in [0, 255].

    Around each pixel, each channel of ``styled`` is fitted as a·content + b over the pixels where ``known``
    (H, W, 0 to 1) is 1, within a window an eighth of the picture's longer side (a guided filter's local
    linear model, He et al. 2010, fitted only where the styled picture is known). Where too few known pixels
    are near, the fit over the whole picture takes over. The estimate keeps the content's structure and takes
    the neighbours' palette; the optimisation then paints its strokes.
    """
    import cv2

    photo, painted = content.astype(np.float32) / 255, styled.astype(np.float32) / 255
    weight = known.astype(np.float32)[..., None]
    side = max(3, max(known.shape) // 8) | 1

    def mean(values: np.ndarray) -> np.ndarray:
        return np.asarray(cv2.blur(values, (side, side), borderType=cv2.BORDER_REFLECT))

    share = mean(weight[..., 0])[..., None]
    shares = np.maximum(share, 1e-6)
    local = [mean(weight * v) / shares for v in (photo, painted, photo * photo, photo * painted)]
    total = max(float(weight.sum()), 1e-6)
    overall = [(weight * v).sum((0, 1)) / total for v in (photo, painted, photo * photo, photo * painted)]
    fits = []
    for (m_photo, m_painted, m_square, m_product), flat in ((local, 1e-3), (overall, 1e-4)):
        gain = (m_product - m_photo * m_painted) / (m_square - m_photo**2 + flat)  # flat areas: the mean
        fits.append((gain, m_painted - gain * m_photo))
    (gain, offset), (all_gain, all_offset) = fits
    near = share / (share + 0.05)  # a window with a twentieth of its pixels known is trusted half
    estimate = (near * gain + (1 - near) * all_gain) * photo + near * offset + (1 - near) * all_offset
    result: np.ndarray = (estimate * 255).clip(0, 255).astype(np.float32)
    return result


@dataclass(frozen=True)
class TemporalTarget:
    """The temporal term at one scale: stylised frame t-1 warped, the pixels where it counts, the term's weight.

    Attributes:
        warped: (1, C, H, W) in the optimised image's format (luminance when preserving colours).
        reliable: (1, 1, H, W), 1 where the flow is trusted.
        factor: the term's weight (``--temporal-weight``) over its value for an unrelated picture.
    """

    warped: Tensor
    reliable: Tensor
    factor: Tensor

    @classmethod
    def prepare(
        cls, warped: np.ndarray, reliable: np.ndarray, weight: float, size: tuple[int, int], device: torch.device,
        luminance: bool,
    ) -> TemporalTarget:  # fmt: skip
        """From (H, W, 3) uint8 and (H, W) pictures, resized to ``size`` (width, height) when they differ.

        An unrelated picture of the same statistics differs from the warped
        frame by 2·var(warped) on average: dividing by that makes the term about
        ``weight`` for one and 0 at the warped frame, like the other terms (``losses``).
        """
        picture = picture_tensor(warped, size, device, luminance)
        mask = torch.from_numpy(np.ascontiguousarray(reliable, dtype=np.float32))[None, None]
        width, height = size
        if mask.shape[-2:] != (height, width):
            mask = torch.nn.functional.interpolate(mask, size=(height, width), mode="area").ge_(0.999).float()
        factor = weight / (2 * picture.var()).clamp_min(1e-4)
        return cls(picture, mask.to(device), factor)

    def term(self, image: Tensor) -> Tensor:
        """The factor times the mean over pixels of reliable · (image - warped)²."""
        return ((image.float() - self.warped).square() * self.reliable).mean() * self.factor


def picture_tensor(picture: np.ndarray, size: tuple[int, int], device: torch.device, luminance: bool) -> Tensor:
    """An (H, W, 3) uint8 picture as a (1, C, h, w) float tensor in [0, 1] at ``size`` (width, height) on ``device``.

    C is 1 (luminance) when preserving colours, as the optimised image is.
    """
    tensor = torch.from_numpy(np.ascontiguousarray(picture)).permute(2, 0, 1)[None].float().div_(255)
    width, height = size
    if tensor.shape[-2:] != (height, width):
        tensor = torch.nn.functional.interpolate(tensor, size=(height, width), mode="bilinear", antialias=True)
    return (color.luminance(tensor) if luminance else tensor).to(device)


def clip_warping_error(inputs: list[np.ndarray], outputs: list[np.ndarray], flows: FlowEstimator) -> float:
    """The mean warping error of a stylised clip, each frame against the one before, with the inputs' flow."""
    errors = [
        warping_error(outputs[t], outputs[t - 1], FrameMotion.between(inputs[t - 1], inputs[t], flows))
        for t in range(1, len(inputs))
    ]
    return float(np.mean(errors)) if errors else 0.0


def warping_error(output: np.ndarray, previous_output: np.ndarray, motion: FrameMotion) -> float:
    """Lai et al. 2018's warping error of one frame: mean squared difference in [0, 1] RGB over reliable pixels."""
    warped = warp(previous_output, motion.backward).astype(np.float32) / 255
    squared = np.square(output.astype(np.float32) / 255 - warped).mean(-1)
    seen = motion.reliable.sum()
    return float((squared * motion.reliable).sum() / seen) if seen else 0.0


@dataclass(frozen=True)
class FrameGuide:
    """What frame t of a clip takes from frame t-1, at render size.

    Attributes:
        start: the picture the frame's run starts from (``FrameMotion.carried``), (H, W, 3) uint8.
        warped: stylised frame t-1 warped to frame t, (H, W, 3) uint8: the temporal term's target.
        reliable: (H, W) float32, 1 where the flow is trusted.
        weight: the temporal term's weight; 0: the frame only starts from ``start``.
        settle: the frame stops once its loss falls by no more than this share over 10 iterations (it started
            close to its end: a still scene); 0: it runs all its iterations.
        repair: the untrusted pixels' own style term, as a multiple of the style weight (``repair_group``);
            0: none.
    """

    start: np.ndarray
    warped: np.ndarray
    reliable: np.ndarray
    weight: float
    settle: float = 0.0
    repair: float = 0.0

    def start_tensor(self, size: tuple[int, int], device: torch.device, luminance: bool) -> Tensor:
        """``start`` as the optimised image's first value at ``size`` (width, height)."""
        return picture_tensor(self.start, size, device, luminance)

    def repair_group(self, size: tuple[int, int], device: torch.device) -> StyleGroup | None:
        """The untrusted pixels (uncovered, on a motion boundary) as a style group of their own at ``size``
        (width, height): their own statistics are matched to the style, so that they end as styled as the
        pixels around them rather than as the photo they started near. None: no repair, or too few pixels."""
        if self.repair <= 0:
            return None
        untrusted = torch.from_numpy(np.ascontiguousarray(1 - self.reliable, dtype=np.float32))[None, None]
        width, height = size
        untrusted = torch.nn.functional.interpolate(untrusted, size=(height, width), mode="area")
        radius = max(1, round(max(width, height) / 64))  # and a stroke's width around them
        mask = torch.nn.functional.max_pool2d(untrusted, 2 * radius + 1, stride=1, padding=radius)
        share = float(mask.mean())
        if share < MIN_SHARE:
            return None
        return StyleGroup(mask.to(device), strength=self.repair, share=share, name="untrusted")

    def target(self, size: tuple[int, int], device: torch.device, luminance: bool) -> TemporalTarget | None:
        """The temporal term at ``size``; None when its weight is 0."""
        if self.weight <= 0:
            return None
        return TemporalTarget.prepare(self.warped, self.reliable, self.weight, size, device, luminance)
