"""Reading and writing images with Pillow, and the settings embedded in exports.

Reading turns any file Pillow can decode into an 8-bit RGB image the right way
up, or raises ``ImageLoadError`` naming the file and the reason. Writing is
atomic: a temporary file in the target folder, renamed over the target only
once it is complete, so a failed export never damages an existing file.
"""

from __future__ import annotations

import errno
import hashlib
import io
import logging
import os
import warnings
from pathlib import Path
from typing import BinaryIO, Final

import numpy as np
from PIL import Image, ImageCms, ImageOps, PngImagePlugin, UnidentifiedImageError

from ..errors import ImageLoadError, ImageSaveError
from .files import read_given_file
from .outputs import Output

log = logging.getLogger(__name__)

#: Export formats by file extension.
FORMATS: Final = {".png": "PNG", ".jpg": "JPEG", ".jpeg": "JPEG", ".webp": "WEBP", ".tif": "TIFF", ".tiff": "TIFF"}

#: Decompression-bomb guard: Pillow's own limit (about 89 megapixels).
MAX_PIXELS: Final = Image.MAX_IMAGE_PIXELS or 89_478_485
#: The largest picture file read: 89 megapixels of uncompressed 16-bit RGBA are 716 MB.
MAX_FILE_BYTES: Final = 1 << 30

METADATA_KEY: Final = "style-studio"
#: What the network sees and every export is in; exports embed its profile.
SRGB_PROFILE: Final = ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB"))
_EXIF_DESCRIPTION: Final = 0x010E
_EXIF_SOFTWARE: Final = 0x0131


def load_image(path: str | os.PathLike[str]) -> Image.Image:
    """An image file as 8-bit RGB, rotated as its EXIF orientation says.

    Transparent pixels are composited onto white; 16-bit images are scaled,
    not clipped; animated and multi-page files give their first frame.

    Raises:
        ImageLoadError: "<file>: <reason>" for a missing, unreadable, non-image,
            truncated, unsupported or oversized file.
    """
    path = Path(path)
    name = str(path)
    try:
        data = read_given_file(path, MAX_FILE_BYTES)
    except IsADirectoryError:
        raise ImageLoadError(f"{name}: is a folder, not an image") from None
    except FileNotFoundError:
        reason = "is a link to a missing file" if path.is_symlink() else "does not exist"
        raise ImageLoadError(f"{name}: {reason}") from None
    except PermissionError:
        raise ImageLoadError(f"{name}: permission denied (the file cannot be read)") from None
    except OSError as exc:
        raise ImageLoadError(f"{name}: cannot be read ({exc.strerror or exc})") from None
    return decode_image(data, name)


def decode_image(data: bytes, name: str = "image") -> Image.Image:
    """Like ``load_image``, for bytes already in memory (a paste or a drop)."""
    if not data:
        raise ImageLoadError(f"{name}: the file is empty")
    try:
        image = open_image(io.BytesIO(data), name)
    except UnidentifiedImageError:
        raise ImageLoadError(f"{name}: {_not_an_image_reason(data)}") from None
    return _read(image, name, first_frame=True)


def picture_from(picture: Image.Image | np.ndarray, name: str = "picture") -> Image.Image:
    """A picture already in memory as ``load_image`` reads a file's: 8-bit RGB in sRGB, upright.

    ``picture``: a PIL image (read as a file of its mode is: its ICC profile and EXIF orientation applied, its
    alpha laid on white, its pixels loaded here, so that one opened from a truncated file is refused as that file
    is), or an array of (H, W) or (H, W, 3 or 4) values: uint8, uint16 (scaled, not clipped), or floats in [0, 1].
    A PIL image opened from a file is named by that file in what is said.

    Raises:
        ImageLoadError: a closed image, one whose file is truncated or damaged, one over the pixel limit a file has;
            an array of another shape, type or range, or without pixels; the message starts with the file's name,
            else ``name``.
    """
    if isinstance(picture, np.ndarray):
        return _from_array(picture, name)
    if not isinstance(picture, Image.Image):
        raise ImageLoadError(f"{name}: expected a file name, a PIL image or an array, not {type(picture).__name__}")
    file = image_file(picture)
    name = str(file) if file is not None else name
    problem = _size_problem(name, picture.width, picture.height)
    if problem is not None:  # one opened lazily holds only its file's header: decoding it is that file's bomb
        raise ImageLoadError(problem)
    return _read(picture, name, first_frame=False)  # the frame the user chose (a file gives its first)


def image_file(picture: Image.Image) -> Path | None:
    """The file a PIL image was opened from (``Image.open(path)``, or an open file), or None: it is that file's
    picture, so an output may not replace it, and what is said of it names it."""
    named = getattr(picture, "filename", None) or getattr(getattr(picture, "fp", None), "name", None)
    if isinstance(named, (str, bytes)) and named:
        return Path(os.fsdecode(named))
    return None


def _read(image: Image.Image, name: str, *, first_frame: bool) -> Image.Image:
    """An opened image as every picture is read: its pixels loaded, upright, in sRGB, as 8-bit RGB, with its print
    resolution when it has a sound one (ImageLoadError naming ``name`` when it cannot be)."""
    try:
        if first_frame:
            image.seek(0)  # first frame of an animation or first page of a TIFF
        image.load()
        dpi = _dpi_of(image)
        profile = image.info.get("icc_profile")
        image = _upright(image)
        rgb = _in_srgb(image, profile, name) if profile else _to_rgb(image)
        if dpi is not None:
            rgb.info["dpi"] = dpi
        return rgb
    except Image.DecompressionBombError:
        raise ImageLoadError(f"{name}: the image is too large to open safely") from None
    except (OSError, ValueError, SyntaxError, EOFError) as exc:
        detail = str(exc) or type(exc).__name__
        if "truncated" in detail or isinstance(exc, EOFError):
            detail = "the file is truncated or damaged"
        elif "closed image" in detail:  # Pillow's own words for an image whose close() was called
            detail = "the image was closed; give it before closing it, or give its file's name"
        raise ImageLoadError(f"{name}: {detail}") from None


def _from_array(values: np.ndarray, name: str) -> Image.Image:
    if values.ndim not in (2, 3) or (values.ndim == 3 and values.shape[2] not in (3, 4)) or 0 in values.shape:
        raise ImageLoadError(f"{name}: an array of shape {values.shape}; expected (H, W), (H, W, 3) or (H, W, 4)")
    if values.dtype.byteorder == ">":  # big-endian, as a FITS or network buffer holds it: the same numbers
        values = values.astype(values.dtype.newbyteorder("="))
    if values.dtype == np.uint8:
        eight = values
    elif values.dtype == np.uint16:
        eight = (values.astype(np.float64) / 257.0 + 0.5).astype(np.uint8)
    elif np.issubdtype(values.dtype, np.floating):
        if not np.isfinite(values).all() or values.min() < 0.0 or values.max() > 1.0:
            raise ImageLoadError(f"{name}: an array of floats must hold values from 0 to 1")
        eight = (values.astype(np.float64) * 255.0 + 0.5).astype(np.uint8)
    else:
        raise ImageLoadError(f"{name}: an array of {values.dtype}; expected uint8, uint16 or floats from 0 to 1")
    return _to_rgb(Image.fromarray(np.ascontiguousarray(eight)))


def open_image(source: str | os.PathLike[str] | BinaryIO, name: str) -> Image.Image:
    """An image opened lazily (its pixels not yet read), refused when it is too large to read safely.

    Pillow warns between 1x and 2x its pixel limit and raises above it; both are
    refused here, from the header alone, before gigabytes are allocated.

    Raises:
        UnidentifiedImageError: not an image (the caller says why, as it knows the bytes).
        FileNotFoundError, PermissionError: a path that cannot be opened.
        ImageLoadError: oversized, without pixels, or damaged; the message starts with ``name``.
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            image: Image.Image = Image.open(source)
    except Image.DecompressionBombError:
        raise ImageLoadError(
            f"{name}: the image is too large to open safely (over {MAX_PIXELS // 1_000_000} megapixels)"
        ) from None
    except (UnidentifiedImageError, FileNotFoundError, PermissionError):
        raise
    except (OSError, ValueError, SyntaxError) as exc:
        raise ImageLoadError(f"{name}: the file is damaged ({exc})") from None
    problem = _size_problem(name, *image.size)
    if problem is not None:
        image.close()
        raise ImageLoadError(problem)
    return image


def _size_problem(name: str, width: int, height: int) -> str | None:
    """Why a picture of this size is not read (over the pixel limit, or without pixels); None: it is."""
    if width * height > MAX_PIXELS:
        return f"{name}: the image is {width}×{height} pixels, over the {MAX_PIXELS // 1_000_000}-megapixel limit"
    if width < 1 or height < 1:
        return f"{name}: the image has no pixels"
    return None


def _not_an_image_reason(data: bytes) -> str:
    head = data[:512].lstrip().lower()
    if head.startswith(b"<svg") or (head.startswith(b"<?xml") and b"<svg" in data[:4096].lower()):
        return "SVG drawings are not supported; export it as PNG first"
    if head.startswith((b"<!doctype html", b"<html")):
        return "this is a web page (HTML), not an image"
    if all(32 <= b < 127 or b in (9, 10, 13) for b in data[:512]):
        return "this is a text file, not an image"
    return "not an image format Style Studio can read (PNG, JPEG, WebP, TIFF, BMP, GIF, ...)"


def _in_srgb(image: Image.Image, profile: bytes, name: str) -> Image.Image:
    """``image`` converted from its embedded ICC profile (Adobe RGB, Display P3, ProPhoto, ...) to sRGB.

    The network was trained on sRGB photos: Adobe RGB numbers read as sRGB
    look dull, ProPhoto ones duller still. A profile that cannot be read or
    applied is ignored with a warning, as browsers do.
    """
    from PIL import ImageCms

    try:
        source = ImageCms.ImageCmsProfile(io.BytesIO(profile))
        if image.mode not in ("RGB", "CMYK", "L"):
            image = _to_rgb(image)
        converted = ImageCms.profileToProfile(image, source, SRGB_PROFILE, outputMode="RGB")
    except (ImageCms.PyCMSError, OSError, ValueError) as exc:
        log.warning("%s: its colour profile cannot be applied (%s); reading it as sRGB", name, exc)
        return _to_rgb(image)
    assert converted is not None
    return converted


def _dpi_of(image: Image.Image) -> tuple[float, float] | None:
    dpi = image.info.get("dpi")
    if dpi is None:
        return None
    try:
        x, y = float(dpi[0]), float(dpi[1])
    except (TypeError, ValueError, IndexError):
        return None
    # A file's own resolution out of what an output may record (0.01, 1e12, NaN) is not carried into one: the
    # default stands in for it, as for a file without one.
    return (x, y) if 1 <= x <= MAX_DPI and 1 <= y <= MAX_DPI else None


def _upright(image: Image.Image) -> Image.Image:
    try:
        return ImageOps.exif_transpose(image)
    except Exception:  # malformed EXIF must not make a good image unreadable
        return image


def _to_rgb(image: Image.Image) -> Image.Image:
    mode = image.mode
    if mode in ("I;16", "I;16L", "I;16B", "I;16N", "I", "F"):
        values = np.asarray(image, dtype=np.float64)
        top = 65535.0 if mode.startswith("I;16") or values.max(initial=0) > 255 else 255.0
        gray = np.clip(values / top * 255.0 + 0.5, 0, 255).astype(np.uint8)
        return Image.fromarray(gray).convert("RGB")
    if mode in ("La", "RGBa"):  # premultiplied alpha: Pillow converts it only to its own plain kind (LA, RGBA)
        image = image.convert(mode.upper())
    palette_alpha = mode == "P" and image.palette is not None and image.palette.mode.endswith("A")
    if mode == "P" and ("transparency" in image.info or palette_alpha):
        image = image.convert("RGBA")
    if image.mode in ("RGBA", "LA", "PA"):
        rgba = image.convert("RGBA")
        background = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        return Image.alpha_composite(background, rgba).convert("RGB")
    return image.convert("RGB")


def fit_size(width: int, height: int, longest: int) -> tuple[int, int]:
    """(width, height) scaled so the longer side is ``longest``, each at least 1."""
    scale = longest / max(width, height)
    return max(1, round(width * scale)), max(1, round(height * scale))


#: Bit depths an export can have: 16 keeps the optimised image's gradations (PNG and TIFF only).
BIT_DEPTHS: Final = (8, 16)
#: The resolution written when neither the photo nor the user gives one.
DEFAULT_DPI: Final = 72.0
#: The highest print resolution an output records (``--dpi``'s bound; a photo's own beyond it is not carried).
MAX_DPI: Final = 10_000
#: The JPEG and WebP quality a picture may be written at (Pillow's scale), and the one used unless told.
QUALITIES: Final = range(1, 101)
DEFAULT_QUALITY: Final = 95


def save_image(
    image: Image.Image | np.ndarray,
    path: str | os.PathLike[str] | Output,
    metadata: str | None = None,
    *,
    quality: int = DEFAULT_QUALITY,
    software: str = "Style Studio",
    bit_depth: int = 8,
    dpi: tuple[float, float] | None = None,
) -> Path:
    """Write ``image`` atomically in sRGB with its profile, ``metadata`` (a JSON text) embedded.

    ``image``: a PIL image, or an (H, W, 3) float array in [0, 1] (the run's
    own result, for 16-bit files). PNG keeps the metadata in an iTXt chunk
    named "style-studio"; JPEG, WebP and TIFF in the ImageDescription.
    ``dpi``: the print resolution to record (default ``DEFAULT_DPI``).
    ``path``: a file name, or an ``Output`` that also names what it must not be (the job's inputs) and where
    it must stay; either way the file is written by the guarded writer.

    Raises:
        ImageSaveError: unknown extension, 16 bits in a format without them,
            missing or read-only folder, full disk. An existing file at
            ``path`` is left as it was.
        OutputError: the output is one of its inputs, a folder, or leads outside its folder.
        Busy: another process is writing the same file.
    """
    output = path if isinstance(path, Output) else Output(Path(path))
    path = output.path
    fmt = FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise ImageSaveError(f"{path}: unknown file type {path.suffix or '(none)'}; use .png, .jpg, .webp or .tif")
    if bit_depth not in BIT_DEPTHS:
        raise ImageSaveError(f"{path}: the bit depth must be 8 or 16, not {bit_depth}")
    if bit_depth == 16 and fmt not in ("PNG", "TIFF"):
        raise ImageSaveError(f"{path}: 16-bit pictures can be saved as .png or .tif, not {path.suffix}")
    folder = path.parent
    if not folder.is_dir():
        raise ImageSaveError(f"{path}: the folder {folder} does not exist")
    dpi = dpi or (DEFAULT_DPI, DEFAULT_DPI)
    profile = SRGB_PROFILE.tobytes()
    if bit_depth == 16:
        deep = _to_uint16(image)

        def write(out: BinaryIO) -> None:
            if fmt == "PNG":
                _write_png16(out, deep, metadata, software, profile, dpi)
            else:
                _write_tiff16(out, deep, metadata, software, profile, dpi)

    else:
        picture = image if isinstance(image, Image.Image) else Image.fromarray(_to_uint8(image))
        options = _pillow_options(fmt, metadata, software, quality)
        options["icc_profile"] = profile
        if fmt != "WEBP":
            options["dpi"] = dpi

        def write(out: BinaryIO) -> None:
            picture.convert("RGB").save(out, format=fmt, **options)

    try:
        output.write(write)
    except OSError as exc:
        raise ImageSaveError(f"{path}: {_write_error(exc)}") from None
    return path


def _pillow_options(fmt: str, metadata: str | None, software: str, quality: int) -> dict[str, object]:
    options: dict[str, object] = {}
    exif = Image.Exif()
    exif[_EXIF_SOFTWARE] = software
    if fmt == "PNG":
        info = PngImagePlugin.PngInfo()
        if metadata is not None:
            info.add_itxt(METADATA_KEY, metadata)
        info.add_text("Software", software)
        options["pnginfo"] = info
    else:
        if metadata is not None:
            exif[_EXIF_DESCRIPTION] = metadata
        options["exif"] = exif
        if fmt in ("JPEG", "WEBP"):
            options["quality"] = quality
        if fmt == "TIFF":
            options["compression"] = "tiff_deflate"
    return options


def _to_uint16(image: Image.Image | np.ndarray) -> np.ndarray:
    if isinstance(image, Image.Image):
        deep: np.ndarray = np.asarray(image.convert("RGB"), dtype=np.uint16) * 257
        return deep
    if image.dtype == np.uint16:
        return image
    scaled: np.ndarray = np.clip(image, 0.0, 1.0) * 65535.0 + 0.5
    return scaled.astype(np.uint16)


def _to_uint8(image: np.ndarray) -> np.ndarray:
    if image.dtype == np.uint8:
        return image
    if image.dtype == np.uint16:
        rounded: np.ndarray = (image.astype(np.uint32) + 128) // 257
        return rounded.astype(np.uint8)
    scaled: np.ndarray = np.clip(image, 0.0, 1.0) * 255.0 + 0.5
    return scaled.astype(np.uint8)


def _write_png16(
    out: BinaryIO, deep: np.ndarray, metadata: str | None, software: str, profile: bytes, dpi: tuple[float, float]
) -> None:
    """A 48-bit RGB PNG (pypng encodes the pixels; Pillow cannot) with iCCP, pHYs and text chunks."""
    import zlib

    import png

    height, width = deep.shape[:2]
    per_metre = [round(d / 0.0254) for d in dpi]
    writer = png.Writer(
        width,
        height,
        greyscale=False,
        bitdepth=16,
        compression=6,
        x_pixels_per_unit=per_metre[0],
        y_pixels_per_unit=per_metre[1],
        unit_is_meter=True,
    )
    encoded = io.BytesIO()
    writer.write_array(encoded, deep.reshape(-1))
    chunks = list(png.Reader(bytes=encoded.getvalue()).chunks())
    extra = [
        (b"iCCP", b"sRGB\0\0" + zlib.compress(profile)),
        (b"tEXt", b"Software\0" + software.encode("latin-1", "replace")),
    ]
    if metadata is not None:
        extra.append((b"iTXt", METADATA_KEY.encode() + b"\0\0\0\0\0" + metadata.encode("utf-8")))
    # After IHDR, before the image data.
    png.write_chunks(out, [chunks[0], *extra, *chunks[1:]])


def _write_tiff16(
    out: BinaryIO, deep: np.ndarray, metadata: str | None, software: str, profile: bytes, dpi: tuple[float, float]
) -> None:
    """A 48-bit RGB TIFF (tifffile; Pillow cannot), deflate-compressed, with its profile and resolution."""
    import tifffile

    encoded = io.BytesIO()  # tifffile seeks and names its file: not the atomic writer's descriptor
    tifffile.imwrite(
        encoded,
        deep,
        photometric="rgb",
        compression="zlib",
        description=metadata,
        software=software,
        iccprofile=profile,
        resolution=dpi,
        resolutionunit="INCH",
        metadata=None,
    )
    out.write(encoded.getvalue())


def _write_error(exc: OSError) -> str:
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return "permission denied: the folder is read-only or not yours"
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return "the disk is full; free some space or export elsewhere"
    return f"could not write the file ({exc.strerror or exc})"


def read_metadata(path: str | os.PathLike[str]) -> str | None:
    """The settings JSON embedded by ``save_image``, or None when there is none.

    Raises:
        ImageLoadError: the file cannot be opened as an image.
    """
    path = Path(path)
    try:
        with open_image(path, str(path)) as image:
            text = image.info.get(METADATA_KEY)
            if text is None and hasattr(image, "text"):
                text = image.text.get(METADATA_KEY)
            if text is None:
                text = image.getexif().get(_EXIF_DESCRIPTION)
    except (OSError, UnidentifiedImageError, ValueError) as exc:
        raise ImageLoadError(f"{path}: {exc}") from None
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    if isinstance(text, str) and f'"format": "{METADATA_KEY}"' in text:
        return text
    return None


def image_hash(image: Image.Image) -> str:
    """The SHA-256 of an image's RGB pixels and size: the same picture in any file format hashes the same."""
    rgb = image.convert("RGB")
    digest = hashlib.sha256(f"{rgb.width}x{rgb.height}:".encode())
    digest.update(rgb.tobytes())
    return digest.hexdigest()
