"""Weights: torchvision's format, the ImageNet download, and the errors a user sees."""

from __future__ import annotations

import hashlib
import http.server
import threading
from pathlib import Path

import pytest
import torch
from torchvision.models import vgg19

from style_studio.core.errors import Cancelled, WeightsError
from style_studio.core.network.weights import (
    IMAGENET_URL,
    build_features,
    download_imagenet,
    imagenet_cache_path,
    load_weights,
    read_state_dict,
)
from tests.conftest import PROXY_WEIGHTS


def torchvision_shaped_state() -> dict[str, torch.Tensor]:
    """A state dict with exactly torchvision vgg19's keys, shapes and dtypes; cheap values."""
    with torch.device("meta"):
        reference = vgg19().state_dict()
    generator = torch.Generator().manual_seed(0)
    state = {}
    for key, meta in reference.items():
        if key.startswith("features."):
            state[key] = torch.randn(meta.shape, generator=generator) * 0.05
        else:  # the 103M-parameter classifier: shape matters, values do not
            state[key] = torch.zeros(meta.shape)
    return state


@pytest.fixture(scope="module")
def full_state_file(tmp_path_factory):
    state = torchvision_shaped_state()
    path = tmp_path_factory.mktemp("weights") / "vgg19-synthetic.pth"
    torch.save(state, path)
    return path, {k: v for k, v in state.items() if k.startswith("features.")}


def test_torch_home_decides_the_imagenet_cache_path(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path))
    assert imagenet_cache_path() == tmp_path / "hub" / "checkpoints" / "vgg19-dcbb9e9d.pth"


def test_a_full_torchvision_state_dict_round_trips(full_state_file):
    path, features_state = full_state_file
    loaded = load_weights(str(path))
    assert loaded.label == "VGG19 weights from vgg19-synthetic.pth" and not loaded.untrained
    features = build_features(loaded)
    for key, value in features.state_dict().items():
        torch.testing.assert_close(value, features_state["features." + key])
    assert not any(p.requires_grad for p in features.parameters())


@pytest.mark.parametrize("prefix", ["features.", ""])
def test_a_features_only_state_dict_loads(tmp_path, full_state_file, prefix):
    _, features_state = full_state_file
    path = tmp_path / "features.pth"
    torch.save({prefix + k.removeprefix("features."): v.half() for k, v in features_state.items()}, path)
    state = read_state_dict(path)
    assert state["0.weight"].dtype == torch.float32
    torch.testing.assert_close(state["34.bias"], features_state["features.34.bias"].half().float())


def test_a_truncated_file_is_rejected_naming_the_file(tmp_path, full_state_file):
    path, _ = full_state_file
    broken = tmp_path / "broken.pth"
    broken.write_bytes(path.read_bytes()[:100_000])
    with pytest.raises(WeightsError, match=r"broken\.pth is not a readable PyTorch weights file"):
        load_weights(str(broken))


def test_a_file_of_another_network_is_rejected_with_what_was_expected(tmp_path):
    path = tmp_path / "resnet.pth"
    torch.save({"conv1.weight": torch.zeros(64, 3, 7, 7)}, path)
    with pytest.raises(WeightsError, match=r"not a VGG19 state dict .*expected torchvision's vgg19 keys"):
        load_weights(str(path))


def test_a_wrong_shape_is_named(tmp_path, full_state_file):
    _, features_state = full_state_file
    state = dict(features_state)
    state["features.0.weight"] = torch.zeros(32, 3, 3, 3)
    path = tmp_path / "shape.pth"
    torch.save(state, path)
    with pytest.raises(
        WeightsError,
        match=r"features\.0\.weight has shape \(32, 3, 3, 3\), VGG19 expects "
        r"\(64, 3, 3, 3\)",
    ):
        load_weights(str(path))


def test_a_missing_weights_file_names_the_three_options(tmp_path):
    with pytest.raises(WeightsError, match="does not exist.*'imagenet'.*\\.pth file.*'untrained'"):
        load_weights(str(tmp_path / "nope.pth"))


def test_imagenet_weights_not_cached_name_the_three_options():
    with pytest.raises(WeightsError, match="not downloaded yet.*'imagenet'.*\\.pth file.*'untrained'"):
        load_weights("imagenet")


def test_untrained_weights_are_seeded_and_labelled(untrained):
    a, b = build_features(untrained), build_features(untrained)
    torch.testing.assert_close(a[0].weight, b[0].weight)
    assert "untrained" in untrained.label


@pytest.mark.skipif(not PROXY_WEIGHTS.exists(), reason="../shared/weights/vgg19-hed-proxy.pth is absent")
def test_the_real_proxy_weights_file_loads():
    loaded = load_weights(str(PROXY_WEIGHTS))
    features = build_features(loaded)
    assert features[0].weight.dtype == torch.float32
    assert features[0].weight.abs().sum() > 0


# -- the download ----------------------------------------------------------


def file_named_with_its_hash(folder: Path, payload: bytes, *, wrong: bool = False) -> Path:
    digest = hashlib.sha256(payload).hexdigest()[:8]
    if wrong:
        digest = "00000000" if digest != "00000000" else "11111111"
    path = folder / f"vgg19-{digest}.pth"
    path.write_bytes(payload)
    return path


def test_download_from_a_file_url_checks_the_hash_and_reports_progress(tmp_path):
    payload = b"x" * (3 << 20)
    source = file_named_with_its_hash(tmp_path, payload)
    dest = tmp_path / "cache" / "vgg19.pth"
    seen = []
    download_imagenet(url=source.as_uri(), dest=dest, progress=lambda got, total: seen.append((got, total)))
    assert dest.read_bytes() == payload
    assert seen[0] == (0, len(payload)) and seen[-1] == (len(payload), len(payload))
    assert list(dest.parent.iterdir()) == [dest]


def test_a_hash_mismatch_leaves_no_file(tmp_path):
    source = file_named_with_its_hash(tmp_path, b"not the weights", wrong=True)
    dest = tmp_path / "cache" / "vgg19.pth"
    with pytest.raises(WeightsError, match="is corrupt"):
        download_imagenet(url=source.as_uri(), dest=dest)
    assert list(dest.parent.iterdir()) == []


def test_a_cancelled_download_leaves_no_file(tmp_path):
    source = file_named_with_its_hash(tmp_path, b"y" * (3 << 20))
    dest = tmp_path / "cache" / "vgg19.pth"
    with pytest.raises(Cancelled):
        download_imagenet(url=source.as_uri(), dest=dest, cancelled=lambda: True)
    assert list(dest.parent.iterdir()) == []


class _Server:
    """A loopback HTTP server that promises ``length`` bytes and sends ``payload``."""

    def __init__(self, payload: bytes, length: int) -> None:
        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self.send_response(200)
                self.send_header("Content-Length", str(length))
                self.end_headers()
                self.wfile.write(payload)
                self.wfile.flush()
                self.close_connection = True

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = http.server.HTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def test_download_over_http_writes_where_torchvision_looks(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path))
    payload = b"z" * 100_000
    digest = hashlib.sha256(payload).hexdigest()[:8]
    server = _Server(payload, len(payload))
    try:
        path = download_imagenet(url=f"{server.url}/vgg19-{digest}.pth", dest=imagenet_cache_path())
    finally:
        server.close()
    assert path == tmp_path / "hub" / "checkpoints" / "vgg19-dcbb9e9d.pth"
    assert path.read_bytes() == payload


def test_an_interrupted_transfer_is_an_error_and_leaves_no_file(tmp_path):
    payload = b"w" * 50_000
    server = _Server(payload, length=200_000)
    dest = tmp_path / "cache" / "vgg19.pth"
    try:
        with pytest.raises(WeightsError, match="could not download|stopped after"):
            download_imagenet(url=f"{server.url}/vgg19-deadbeef.pth", dest=dest, timeout=5)
    finally:
        server.close()
    assert list(dest.parent.iterdir()) == []


def test_the_default_url_is_torchvisions():
    assert IMAGENET_URL == "https://download.pytorch.org/models/vgg19-dcbb9e9d.pth"


def test_the_url_is_torchvisions_own():
    from torchvision.models.vgg import VGG19_Weights

    assert VGG19_Weights.IMAGENET1K_V1.url == IMAGENET_URL


@pytest.mark.parametrize("env", [{"TORCH_HOME": "/opt/th"}, {"XDG_CACHE_HOME": "/var/cache/me"}, {}])
def test_the_cache_path_without_torch_loaded_is_torchs(monkeypatch, env):
    import sys

    import torch.hub

    from style_studio.core.network import weights as w

    for key in ("TORCH_HOME", "XDG_CACHE_HOME"):
        monkeypatch.delenv(key, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    expected = Path(torch.hub.get_dir()) / "checkpoints" / "vgg19-dcbb9e9d.pth"
    monkeypatch.delitem(sys.modules, "torch.hub")
    assert w.imagenet_cache_path() == expected
