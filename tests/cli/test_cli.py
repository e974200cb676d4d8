"""The headless command line, as a script would use it."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import subprocess
import sys

import pytest
from PIL import Image

from style_studio import __version__
from style_studio.cli import main
from style_studio.core import settings as settings_mod
from style_studio.core.io.imageio import read_metadata
from style_studio.core.network.weights import TEST_NETWORK_VARIABLE
from tests.conftest import SAMPLES

CONTENT = str(SAMPLES / "content" / "chelsea.png")
STYLE = str(SAMPLES / "style" / "starry_night.jpg")
FAST = ["--size", "48", "--iterations", "3", "--weights", "untrained"]


def run_cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(args), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_render_writes_an_image_with_settings_and_the_weights_named(tmp_path):
    target = tmp_path / "out.png"
    code, _, err = run_cli("render", CONTENT, STYLE, "-o", str(target), *FAST, "--seed", "3")
    assert code == 0, err
    with Image.open(target) as image:
        assert image.size == (48, 32)
    metadata = json.loads(read_metadata(target))
    assert metadata["weights_label"].startswith("untrained")
    assert settings_mod.loads(json.dumps(metadata)).seed == 3
    assert "untrained" in err


def test_progress_json_prints_one_object_per_iteration(tmp_path):
    code, out, err = run_cli("render", CONTENT, STYLE, "-o", str(tmp_path / "o.jpg"), *FAST, "--progress", "json")
    assert code == 0, err
    records = [json.loads(line) for line in out.splitlines()]
    assert [r["iteration"] for r in records] == [0, 1, 2, 3, 3]  # 0: the start picture
    assert records[-1]["done"] and records[-1]["stop_reason"] == "finished"
    assert {"total_loss", "content_loss", "style_losses", "tv_loss", "grad_norm", "eta", "weights"} <= set(records[0])
    assert "preview" not in records[0]


def test_two_styles_with_blend_weights(tmp_path):
    other = str(SAMPLES / "style" / "the_scream.jpg")
    code, _, err = run_cli(
        "render", CONTENT, STYLE, other, "--style-blend", "2,1", "-o", str(tmp_path / "o.png"), *FAST
    )
    assert code == 0, err


@pytest.mark.parametrize(
    "args, message",
    [
        (["render", CONTENT], "the following arguments are required"),
        (["render", CONTENT, STYLE, "-o", "OUT.png", "--size", "big"], "invalid int value"),
        (["render", CONTENT, STYLE, "-o", "OUT.png", "--style-layers", "relu9_1:1"], "unknown style layer 'relu9_1'"),
        (["render", CONTENT, STYLE, "-o", "OUT.png", "--style-layers", "relu1_1:x"], "'x' is not a number"),
        (
            ["render", CONTENT, STYLE, "-o", "OUT.png", "--tv-weight", "-1"],
            "tv_weight must be a number from 0 to 1000000",
        ),
        # Once accepted: every loss was infinite, the start picture was written with status 0.
        (
            ["render", CONTENT, STYLE, "-o", "OUT.png", "--style-weight", "1e308"],
            "style_weight must be a number from 0",
        ),
        # Once accepted, and embedded in the picture: the window could not show it, and never opened again.
        (["render", CONTENT, STYLE, "-o", "OUT.png", "--style-layers", "relu1_1:1e9"], "relu1_1 weight must be a"),
        (["render", CONTENT, STYLE, "-o", "OUT.png", "--style-blend", "1,2"], "2 weights for 1 style images"),
        (["render", CONTENT, STYLE, "-o", "OUT.gif"], "unknown output type .gif"),
        (["render", CONTENT, STYLE, "-o", "missing-dir/o.png"], "does not exist"),
        (["render", "nope.png", STYLE, "-o", "OUT.png", "--weights", "untrained"], "nope.png: does not exist"),
        (["render", CONTENT, STYLE, "-o", "OUT.png", "--weights", "missing.pth"], "missing.pth does not exist"),
        (["render", CONTENT, STYLE, "-o", "OUT.png", "--weights", "imagenet"], "imagenet"),
    ],
)
def test_bad_input_exits_2_with_one_line_and_writes_nothing(tmp_path, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    # No network: the imagenet case must fail fast with the three options.
    monkeypatch.setattr("style_studio.core.network.weights.IMAGENET_URL", "file:///nonexistent/vgg19-dcbb9e9d.pth")
    code, _, err = run_cli(*args)
    assert code == 2
    assert len(err.strip().splitlines()) == 1, err
    assert message in err
    assert not (tmp_path / "OUT.png").exists()


def test_version():
    with pytest.raises(SystemExit) as info:
        main(["--version"], stdout=io.StringIO(), stderr=io.StringIO())
    assert info.value.code == 0


def test_python_dash_m_entry_point_runs(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "style_studio", "--version"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0 and result.stdout.strip() == f"style-studio {__version__}"


def test_a_named_preset_sets_its_settings_and_options_still_override_it(tmp_path):
    target = tmp_path / "quick.png"
    code, _, err = run_cli("render", CONTENT, STYLE, "-o", str(target), *FAST, "--preset", "quick", "--size", "64")
    assert code == 0, err
    written = settings_mod.loads(read_metadata(target))
    quick = settings_mod.PRESETS["quick"]
    assert written.style_loss == quick["style_loss"] and written.first_scale == quick["first_scale"]
    assert written.size == 64 and written.iterations == 3  # the options typed win
    code, _, err = run_cli("render", CONTENT, STYLE, "-o", str(tmp_path / "x.png"), *FAST, "--preset", "fastest")
    assert code == 2 and "unknown preset 'fastest'" in err and "quick" in err


def test_a_built_in_preset_s_name_is_the_built_in_preset_whatever_the_folder_holds(tmp_path, monkeypatch):
    """A file named ``quick`` in the current folder was silently used for ``--preset quick``, and a folder named
    ``instant`` broke ``--preset instant``; a file is named as a path."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "quick").write_text(settings_mod.dumps(dataclasses.replace(settings_mod.DEFAULTS, first_scale=512)))
    (tmp_path / "instant").mkdir()
    code, _, err = run_cli("render", CONTENT, STYLE, "-o", "quick.png", *FAST, "--preset", "quick")
    assert code == 0, err
    assert (
        settings_mod.loads(read_metadata(tmp_path / "quick.png")).first_scale
        == settings_mod.PRESETS["quick"]["first_scale"]
    )
    code, _, err = run_cli("render", CONTENT, STYLE, "-o", "file.png", *FAST, "--preset", "./quick")
    assert code == 0, err
    assert settings_mod.loads(read_metadata(tmp_path / "file.png")).first_scale == 512
    code, _, err = run_cli("render", CONTENT, STYLE, "-o", "instant.png", "--preset", "instant")
    assert code == 0, err
    assert settings_mod.loads(read_metadata(tmp_path / "instant.png")).init == "instant"
    assert "./quick or quick.json" in " ".join(_help("render"))


def _help(command: str) -> list[str]:
    out = io.StringIO()
    with pytest.raises(SystemExit), contextlib.redirect_stdout(out):
        main([command, "--help"], stdout=out, stderr=io.StringIO())
    return out.getvalue().split()


@pytest.mark.parametrize(
    "document",
    [
        {"format": "style-studio", "version": 1, "settings": {"k" * 2_000_000: 1}},
        {"format": "style-studio", "version": 1, "settings": {"style_layers": {"relu" + "9" * 2_000_000: 1}}},
        {"format": "style-studio", "version": 1, "settings": {f"unknown{n}": 1 for n in range(20_000)}},
    ],
    ids=["a 2 MB key", "a 2 MB layer name", "20,000 unknown keys"],
)
def test_an_error_line_is_short_whatever_the_preset_names(tmp_path, document):
    """A preset with a 2 MB unknown key printed a 2,000,049-character line."""
    preset = tmp_path / "hostile.json"
    preset.write_text(json.dumps(document))
    code, _, err = run_cli("render", CONTENT, STYLE, "-o", str(tmp_path / "o.png"), *FAST, "--preset", str(preset))
    assert code == 2 and len(err.splitlines()) == 1 and len(err) <= 401, err[:600]  # the prefix counted
    assert "hostile.json" in err and "unknown" in err


def test_a_typed_value_of_megabytes_is_cut_in_the_error_line(tmp_path):
    code, _, err = run_cli("render", CONTENT, STYLE, "-o", str(tmp_path / "o.png"), "--size", "9" * 1_000_000)
    assert code == 2 and len(err.splitlines()) == 1 and len(err) <= 401, err[:600]
    assert "--size" in err


# What scripts parse: the shape of `--progress json` records and of the embedded
# settings document. Changing either breaks users' scripts; change it on purpose.
PINNED_RECORD_FIELDS = {
    "scale": int, "scales": int, "iteration": int, "iterations": int, "step": int, "steps": int,
    "width": int, "height": int, "total_loss": float, "content_loss": float, "style_losses": dict,
    "tv_loss": float, "grad_norm": float, "elapsed": float, "eta": (float, type(None)), "weights": str,
    "compute": str, "event": (str, type(None)), "done": bool, "stop_reason": (str, type(None)),
    "part": int, "parts": int,
}  # fmt: skip
PINNED_METADATA = {
    "format": "style-studio",
    "version": 1,
    "settings": {
        "size": 48, "iterations": 3, "scales": 0, "first_scale": 192, "scale_ratio": 2.0, "finer_iterations": 0.5,
        "average": False, "optimizer": "lbfgs", "init": "palette", "tune_steps": 120,
        "content_layers": ["relu4_2"],
        "style_layers": {"relu1_1": 1.0, "relu2_1": 1.0, "relu3_1": 1.0, "relu4_1": 1.0, "relu5_1": 1.0},
        "content_weight": 1.0, "style_weight": 3.0, "tv_weight": 0.1, "colour_weight": 1.0, "style_blend": [],
        "style_scale": 1.0, "preserve_colors": False, "pooling": "max", "style_loss": "gaussian", "seed": 3,
        "device": "auto",
        "precision": "auto",
        "weights": "untrained", "step_size": None, "tile": 0, "deterministic": True,
    },
    "weights_label": "untrained VGG19 (random features: colour and texture only)",
    "app_version": __version__,
    "content": "chelsea.png",
    "styles": ["starry_night.jpg"],
}  # fmt: skip


def test_progress_json_records_and_exported_metadata_keep_their_pinned_shape(tmp_path, monkeypatch):
    monkeypatch.delenv(TEST_NETWORK_VARIABLE)  # the label users see in their files
    target = tmp_path / "out.png"
    code, out, err = run_cli("render", CONTENT, STYLE, "-o", str(target), *FAST, "--seed", "3", "--progress", "json")
    assert code == 0, err
    start, *records = [json.loads(line) for line in out.splitlines()]
    # The start picture's record comes first: the same fields, no losses yet, no time left yet.
    assert list(start) == list(PINNED_RECORD_FIELDS)
    assert (start["iteration"], start["step"], start["style_losses"], start["eta"]) == (0, 0, {}, None)
    assert all(start[key] is None for key in ("total_loss", "content_loss", "tv_loss", "grad_norm"))
    for record in records:
        assert list(record) == list(PINNED_RECORD_FIELDS), "fields added, removed or reordered"
        for key, kind in PINNED_RECORD_FIELDS.items():
            assert isinstance(record[key], kind), f"{key} is {type(record[key]).__name__}"
        assert list(record["style_losses"]) == ["relu1_1", "relu2_1", "relu3_1", "relu4_1", "relu5_1"]
    assert [(r["step"], r["done"], r["stop_reason"]) for r in records] == [
        (1, False, None), (2, False, None), (3, False, None), (3, True, "finished")
    ]  # fmt: skip
    written = json.loads(read_metadata(target))
    # The job key (added when render, batch and the queue came to share one job model) depends on the pixels.
    key = written.pop("job_key")
    assert len(key) == 32 and int(key, 16) >= 0
    assert written == PINNED_METADATA
    assert list(written) == list(PINNED_METADATA)


def test_a_16_bit_tiff_for_print_keeps_the_photos_dpi_and_more_than_256_levels(tmp_path):
    import numpy as np
    import tifffile

    photo = tmp_path / "photo.png"
    Image.open(CONTENT).save(photo, dpi=(240, 240))
    target = tmp_path / "print.tif"
    code, _, err = run_cli("render", str(photo), STYLE, "-o", str(target), *FAST, "--bit-depth", "16")
    assert code == 0, err
    with tifffile.TiffFile(target) as tiff:
        page = tiff.pages[0]
        pixels = page.asarray()
        assert pixels.dtype == np.uint16 and pixels.shape == (32, 48, 3)
        assert page.tags["XResolution"].value[0] / page.tags["XResolution"].value[1] == pytest.approx(240, abs=0.1)
    # The run's own values, not 8-bit ones stretched: most are not multiples of 257.
    assert np.mean(pixels % 257 != 0) > 0.9
    code, _, err = run_cli("render", CONTENT, STYLE, "-o", str(target), *FAST, "--dpi", "300")
    assert code == 0, err
    with Image.open(target) as image:
        assert image.info["dpi"] == pytest.approx((300, 300), abs=0.05)


def test_16_bits_in_a_jpeg_is_refused_before_the_run(tmp_path):
    code, _, err = run_cli("render", CONTENT, STYLE, "-o", str(tmp_path / "o.jpg"), *FAST, "--bit-depth", "16")
    assert code == 2 and "16-bit pictures can be saved as .png or .tif, not .jpg" in err
    assert list(tmp_path.iterdir()) == []


# A value other than the default for each setting, as the command line types it.
NOT_DEFAULT = {
    "size": ("300", 300), "iterations": ("7", 7), "scales": ("2", 2), "first_scale": ("128", 128),
    "scale_ratio": ("1.5", 1.5), "finer_iterations": ("0.25", 0.25), "average": (None, True),
    "optimizer": ("adam", "adam"), "init": ("noise", "noise"), "tune_steps": ("40", 40),
    "content_layers": ("relu3_2", ("relu3_2",)),
    "style_layers": ("relu1_1:2,relu3_1:0.5", (("relu1_1", 2.0), ("relu3_1", 0.5))),
    "content_weight": ("2", 2.0), "style_weight": ("5000", 5000.0), "tv_weight": ("0", 0.0),
    "colour_weight": ("0.5", 0.5), "style_blend": ("2", (2.0,)), "style_scale": ("0.5", 0.5),
    "preserve_colors": (None, True),
    "pooling": ("avg", "avg"), "style_loss": ("gram", "gram"),
    "seed": ("9", 9), "device": ("cpu", "cpu"), "precision": ("fp32", "fp32"),
    "weights": ("untrained", "untrained"), "step_size": ("0.5", 0.5), "tile": ("256", 256),
    "deterministic": (None, False),
}  # fmt: skip


def test_every_setting_is_an_option_made_from_its_own_description():
    import dataclasses

    from style_studio.cli.parser import build_parser, settings_from_args

    fields = [f.name for f in dataclasses.fields(settings_mod.Settings)]
    assert sorted(NOT_DEFAULT) == sorted(fields), "a setting was added: give it a value here"
    parser = build_parser()
    for name in fields:
        about = settings_mod.about(name)
        flag = about.flag or "--" + name.replace("_", "-")
        typed, wanted = NOT_DEFAULT[name]
        args = parser.parse_args(["render", CONTENT, STYLE, "-o", "x.png", flag, *([typed] if typed else [])])
        settings = settings_from_args(args)
        assert getattr(settings, name) == wanted, name
        changed = {f for f in fields if getattr(settings, f) != getattr(settings_mod.DEFAULTS, f)}
        assert changed == {name}, f"{flag} changed {changed}"


def command_help(command: str, capsys) -> str:
    with pytest.raises(SystemExit):
        main([command, "--help"])
    return " ".join(capsys.readouterr().out.split())


def test_the_help_says_each_settings_range_and_default(capsys):
    render_help = command_help("render", capsys)
    assert "--size SIZE longest side in pixels; 32 to 8192 (default 512)" in render_help
    assert "--nondeterministic" in render_help and "--style-blend W1,W2" in render_help


def test_batch_takes_every_setting_but_the_blend_of_several_styles(capsys):
    batch_help = command_help("batch", capsys)
    assert "--style-blend" not in batch_help
    assert "--tile N" in batch_help and "--weights imagenet|untrained|PATH" in batch_help
