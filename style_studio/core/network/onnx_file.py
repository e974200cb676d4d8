"""Reading an ``.onnx`` file: the graph's nodes, attributes, weights, inputs and outputs, as plain values.

ONNX files are protocol buffers (``onnx.proto``); this reads the part of that format a graph needs. The
``onnx`` package reads it too, but importing it takes 1.5 s or more here (its ``ml_dtypes`` extension),
more than the instant look it serves is allowed in all; the fields below are those of ``onnx.proto`` (IR
version 3 and later), and ``tests/core/network/test_onnx_file.py`` checks them against the ``onnx`` package.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import numpy as np

from ..errors import StyleStudioError

#: TensorProto.DataType: the numpy type of each.
_TYPES: Final = {1: np.float32, 2: np.uint8, 3: np.int8, 4: np.uint16, 5: np.int16, 6: np.int32, 7: np.int64,
                 9: np.bool_, 10: np.float16, 11: np.float64, 12: np.uint32, 13: np.uint64}  # fmt: skip


class OnnxFileError(StyleStudioError):
    """The file is not an ONNX graph this reader can take."""


@dataclass(frozen=True)
class OnnxNode:
    op: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    attributes: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class OnnxModel:
    """A graph: its nodes in order, its weights (``initializers``, by name), its inputs' and outputs' names."""

    nodes: tuple[OnnxNode, ...]
    initializers: dict[str, np.ndarray]
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]


def read_model(path: Path) -> OnnxModel:
    """The graph in the ONNX file ``path``.

    Raises:
        OnnxFileError: it cannot be read, or is not an ONNX graph.
    """
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise OnnxFileError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    try:
        graphs = [value for number, value in _fields(data) if number == 7]
        if not graphs:
            raise ValueError("it holds no graph")
        return _graph(graphs[-1])
    except (ValueError, IndexError, KeyError, struct.error) as exc:
        raise OnnxFileError(f"{path.name}: not an ONNX graph this version can read ({exc})") from None


# -- the wire format: varints, fixed widths, length-delimited fields --------------------------------------------


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, at
        shift += 7
        if shift > 63:
            raise ValueError("a varint longer than 64 bits")


def _fields(data: bytes) -> Iterator[tuple[int, Any]]:
    """Each field of a message: its number and its value (an int, or the bytes of a length-delimited field)."""
    at = 0
    while at < len(data):
        key, at = _varint(data, at)
        number, wire = key >> 3, key & 7
        value: int | bytes
        if wire == 0:
            value, at = _varint(data, at)
        elif wire == 1:
            value, at = data[at : at + 8], at + 8
        elif wire == 2:
            length, at = _varint(data, at)
            if at + length > len(data):
                raise ValueError("a field runs past the end")
            value, at = data[at : at + length], at + length
        elif wire == 5:
            value, at = data[at : at + 4], at + 4
        else:
            raise ValueError(f"wire type {wire} (groups are not used by ONNX)")
        yield number, value


def _signed(value: int) -> int:
    """A varint read as int64 (negative numbers are sent as their 64-bit two's complement)."""
    return value - (1 << 64) if value >= 1 << 63 else value


def _packed_varints(value: Any) -> list[int]:
    """A repeated integer field's values: packed (bytes) or one (an int) at a time."""
    if isinstance(value, int):
        return [_signed(value)]
    numbers, at = [], 0
    while at < len(value):
        number, at = _varint(value, at)
        numbers.append(_signed(number))
    return numbers


def _floats(value: bytes) -> list[float]:
    return list(struct.unpack(f"<{len(value) // 4}f", value))


def _text(value: bytes) -> str:
    return bytes(value).decode("utf-8")


# -- the messages ------------------------------------------------------------------------------------------------


def _graph(data: bytes) -> OnnxModel:
    nodes, initializers, inputs, outputs = [], {}, [], []
    for number, value in _fields(data):
        if number == 1:
            nodes.append(_node(value))
        elif number == 5:
            name, array = _tensor(value)
            initializers[name] = array
        elif number == 11:
            inputs.append(_value_info_name(value))
        elif number == 12:
            outputs.append(_value_info_name(value))
    return OnnxModel(tuple(nodes), initializers, tuple(inputs), tuple(outputs))


def _value_info_name(data: bytes) -> str:
    return next(_text(value) for number, value in _fields(data) if number == 1)


def _node(data: bytes) -> OnnxNode:
    inputs, outputs, op, attributes = [], [], "", {}
    for number, value in _fields(data):
        if number == 1:
            inputs.append(_text(value))
        elif number == 2:
            outputs.append(_text(value))
        elif number == 4:
            op = _text(value)
        elif number == 5:
            name, attribute = _attribute(value)
            attributes[name] = attribute
    return OnnxNode(op, tuple(inputs), tuple(outputs), attributes)


def _attribute(data: bytes) -> tuple[str, Any]:
    """An attribute's name and value, by its type (FLOAT 1, INT 2, STRING 3, TENSOR 4, FLOATS 6, INTS 7)."""
    name, kind, found = "", 0, {}
    floats: list[float] = []
    ints: list[int] = []
    for number, value in _fields(data):
        if number == 1:
            name = _text(value)
        elif number == 20:
            kind = value
        elif number == 2:
            found[1] = struct.unpack("<f", value)[0]
        elif number == 3:
            found[2] = _signed(value)
        elif number == 4:
            found[3] = bytes(value)
        elif number == 5:
            found[4] = _tensor(value)[1]
        elif number == 7:
            floats += _floats(value)
        elif number == 8:
            ints += _packed_varints(value)
    found[6], found[7] = floats, ints
    if kind not in found:
        raise ValueError(f"attribute {name!r} is of a type (#{kind}) no op here takes")
    return name, found[kind]


def _tensor(data: bytes) -> tuple[str, np.ndarray]:
    """A TensorProto's name and values, shaped; from raw_data, or the typed fields (float_data, int32_data, ...)."""
    dims: list[int] = []
    name, kind, raw = "", 1, None
    floats: list[float] = []
    int32s: list[int] = []
    int64s: list[int] = []
    for number, value in _fields(data):
        if number == 1:
            dims += _packed_varints(value)
        elif number == 2:
            kind = value
        elif number == 4:
            floats += _floats(value)
        elif number == 5:
            int32s += _packed_varints(value)
        elif number == 7:
            int64s += _packed_varints(value)
        elif number == 8:
            name = _text(value)
        elif number == 9:
            raw = bytes(value)
        elif number == 14 and value == 1:
            raise ValueError(f"tensor {name!r} keeps its data in another file")
    dtype = np.dtype(_TYPES[kind]).newbyteorder("<")
    if raw is not None:
        array = np.frombuffer(raw, dtype=dtype)
    elif kind == 1:
        array = np.asarray(floats, dtype=dtype)
    elif kind == 7:
        array = np.asarray(int64s, dtype=dtype)
    else:  # int8, uint8, int16, int32, bool, float16 (its bits) are kept in int32_data
        array = (
            np.asarray(int32s, dtype=np.int64).astype(dtype)
            if kind != 10
            else np.asarray(int32s, dtype=np.uint16).view(np.float16)
        )
    return name, array.astype(dtype.newbyteorder("="), copy=True).reshape(dims)
