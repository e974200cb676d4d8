from __future__ import annotations

import pytest
from torch import nn
from torchvision.models.vgg import cfgs, make_layers

from style_studio.core.network.layers import LAYER_NAMES, channels, layer_index


def test_names_follow_torchvision_vgg19_module_order():
    features = make_layers(cfgs["E"])
    assert len(LAYER_NAMES) == len(features) == 37
    for name, module in zip(LAYER_NAMES, features, strict=True):
        expected = {"conv": nn.Conv2d, "relu": nn.ReLU, "pool": nn.MaxPool2d}[name[:4]]
        assert isinstance(module, expected), name
    assert LAYER_NAMES[21] == "conv4_2" and LAYER_NAMES[22] == "relu4_2" and LAYER_NAMES[-1] == "pool5"


def test_channels_match_the_convolutions():
    features = make_layers(cfgs["E"])
    for index, name in enumerate(LAYER_NAMES):
        if name.startswith("conv"):
            assert features[index].out_channels == channels(name)


def test_unknown_layer_names_the_valid_ones():
    with pytest.raises(KeyError, match="conv1_1 ... conv5_4"):
        layer_index("relu6_1")


def test_vgg19_is_built_as_torchvision_builds_it_without_importing_torchvision():
    import subprocess
    import sys

    import torch
    from torchvision.models.vgg import cfgs, make_layers

    from style_studio.core.network.layers import vgg19_config
    from style_studio.core.network.vgg import vgg19_layers

    assert vgg19_config() == cfgs["E"]
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(5)
        theirs = make_layers(cfgs["E"], batch_norm=False)
        torch.manual_seed(5)
        ours = vgg19_layers(vgg19_config())
    assert [repr(m) for m in ours] == [repr(m) for m in theirs]
    theirs_state, ours_state = theirs.state_dict(), ours.state_dict()
    assert list(ours_state) == list(theirs_state)
    assert all(torch.equal(ours_state[k], theirs_state[k]) for k in theirs_state)
    # A run's process never pays for importing torchvision.
    code = (
        "import sys; from style_studio.core.network.weights import load_weights, build_features; "
        "build_features(load_weights('untrained')); assert 'torchvision' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_a_layers_receptive_field_follows_vgg19s_convolutions_and_pools() -> None:
    """The published figures for VGG19 (four convolutions in blocks 3 to 5)."""
    from style_studio.core.network.layers import receptive_field

    names = ("conv1_1", "relu1_2", "pool1", "relu2_1", "relu3_1", "relu4_1", "relu5_1")
    assert [receptive_field(n) for n in names] == [3, 5, 6, 10, 24, 68, 156]


def test_a_layers_patch_is_as_much_of_the_style_as_it_sees_at_the_runs_style_size() -> None:
    from PIL import Image

    from style_studio.core.network.layers import style_patch

    style = Image.new("RGB", (1024, 640))
    assert style_patch(style, "relu3_1", 512).size == (48, 48)  # 24 px at 512, in a style twice as large
    assert style_patch(style, "relu5_1", 1024).size == (156, 156)
    assert style_patch(style, "relu5_1", 64).size == (640, 640)  # never more than the style has


@pytest.mark.parametrize("name", ["relu2_1", "relu3_1", "relu5_1"])
def test_the_receptive_field_is_what_one_value_of_the_real_network_sees(name: str) -> None:
    """The span of input pixels whose change moves one value in the middle of the layer's output (positive weights
    and average pools, so that no path cancels or is cut by a max)."""
    import torch

    from style_studio.core.network.layers import receptive_field

    features = make_layers(cfgs["E"])[: layer_index(name) + 1]
    for i, module in enumerate(features):
        if isinstance(module, nn.MaxPool2d):
            features[i] = nn.AvgPool2d(2)
        elif isinstance(module, nn.Conv2d):
            nn.init.constant_(module.weight, 0.01)
            nn.init.zeros_(module.bias)
    picture = torch.ones(1, 3, 256, 256, requires_grad=True)
    out = features(picture)
    out[0, 0, out.shape[2] // 2, out.shape[3] // 2].backward()
    rows = picture.grad[0, 0].abs().sum(dim=1).nonzero()
    assert int(rows[-1] - rows[0]) + 1 == receptive_field(name)
