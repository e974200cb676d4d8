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
