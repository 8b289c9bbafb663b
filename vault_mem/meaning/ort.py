"""The sentence model's forward pass run by onnxruntime, when it is installed (docs/ranking.md,
"By meaning").

The graph is built here from the weights already loaded for the numpy pass, op for op the same
computation (a BERT encoder: embeddings, then per layer attention and a feed-forward block, each
followed by a layer norm), so its vectors equal numpy's to float rounding and the stored vectors
serve both. It is written straight in the ONNX protobuf wire format (a few message types; field
numbers from onnx.proto), so neither torch nor the ``onnx`` package is needed: onnxruntime reads
the bytes from memory and nothing is written to disk. onnxruntime is faster than numpy's BLAS on
the short inputs a query is, which is what keeps a search by meaning near a keyword search.

A query is embedded by a second graph whose weight matrices are kept in 8 bits (``eight_bit``:
onnxruntime's ``DynamicQuantizeMatMul``, a scale per output column, each product's inputs scaled
to 8 bits as it runs). A query of a few words reads every weight once, so its time is mostly the
time to read them, and 8-bit weights are fewer bytes. Its vector is near the full-precision one,
not equal (docs/perf/meaning.md, "Search time"), so notes are embedded at full precision and the
8-bit graph serves queries only.
"""

from __future__ import annotations

import math
import struct
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from vault_mem.meaning.model import SentenceModel

FLOAT, INT8, INT64 = 1, 3, 7  # TensorProto.DataType
OPSET = 17  # LayerNormalization arrived in opset 17


# -- the protobuf wire format (only what an ONNX model needs) ----------------------------------


def _varint(value: int) -> bytes:
    if value < 0:  # int64 fields: two's complement in ten bytes
        value += 1 << 64
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _int(field: int, value: int) -> bytes:
    return _varint(field << 3) + _varint(value)


def _bytes(field: int, value: bytes | str) -> bytes:
    data = value.encode("utf-8") if isinstance(value, str) else value
    return _varint(field << 3 | 2) + _varint(len(data)) + data


def _float(field: int, value: float) -> bytes:
    return _varint(field << 3 | 5) + struct.pack("<f", value)


def _attribute(name: str, value: int | float | list[int]) -> bytes:
    """AttributeProto: name 1, f 2, i 3, ints 8, type 20 (FLOAT 1, INT 2, INTS 7)."""
    if isinstance(value, list):
        return _bytes(1, name) + b"".join(_int(8, v) for v in value) + _int(20, 7)
    if isinstance(value, float):
        return _bytes(1, name) + _float(2, value) + _int(20, 1)
    return _bytes(1, name) + _int(3, value) + _int(20, 2)


def _tensor(name: str, array: Any) -> bytes:
    """TensorProto: dims 1, data_type 2, name 8, raw_data 9 (little-endian)."""
    kind = _kind(array)
    data = array.astype("<i8" if kind == INT64 else "<i1" if kind == INT8 else "<f4").tobytes()
    return b"".join(_int(1, d) for d in array.shape) + _int(2, kind) + _bytes(8, name) + _bytes(9, data)


def _kind(array: Any) -> int:
    return INT8 if array.dtype == "int8" else INT64 if array.dtype.kind == "i" else FLOAT


def _external(name: str, array: Any) -> bytes:
    """A TensorProto whose data is elsewhere (external_data 13, data_location 14 = EXTERNAL): the
    session is handed it by ``add_external_initializers``."""
    location = _bytes(13, _bytes(1, "location") + _bytes(2, "memory"))
    return b"".join(_int(1, d) for d in array.shape) + _int(2, _kind(array)) + _bytes(8, name) + location + _int(14, 1)


def _value_info(name: str, kind: int, dims: list[int | str]) -> bytes:
    """ValueInfoProto: name 1, type 2 -> TypeProto.tensor_type 1 -> elem_type 1, shape 2 -> dim 1
    -> dim_value 1 | dim_param 2."""
    shape = b"".join(_bytes(1, _int(1, d) if isinstance(d, int) else _bytes(2, d)) for d in dims)
    return _bytes(1, name) + _bytes(2, _bytes(1, _int(1, kind) + _bytes(2, shape)))


class _Graph:
    def __init__(self) -> None:
        self.nodes: list[bytes] = []
        self.initializers: list[bytes] = []
        self.weights: dict[str, Any] = {}  # name -> array, handed over apart from the graph
        self._count = 0

    def const(self, name: str, array: Any) -> str:
        if array.ndim >= 2:  # a weight matrix: given to the session as it is in memory, not copied into the bytes
            self.weights[name] = array
        else:
            self.initializers.append(_tensor(name, array))
        return name

    def op(self, op_type: str, inputs: list[str], domain: str = "", **attributes: int | float | list[int]) -> str:
        """NodeProto: input 1, output 2, name 3, op_type 4, attribute 5, domain 7."""
        self._count += 1
        out = f"t{self._count}"
        self.nodes.append(b"".join(_bytes(1, i) for i in inputs) + _bytes(2, out) + _bytes(3, f"n{self._count}")
                          + _bytes(4, op_type) + b"".join(_bytes(5, _attribute(k, v)) for k, v in attributes.items())
                          + (_bytes(7, domain) if domain else b""))
        return out


def quantized(weights: Any) -> tuple[Any, Any]:
    """``weights`` (inputs x outputs, float) in 8 bits as ``DynamicQuantizeMatMul`` reads them:
    ``round(w / scale)`` with one scale an output column, its largest magnitude over 127. Returns
    the int8 matrix and the scales (float32)."""
    import numpy as np

    scales = np.abs(weights).max(axis=0) / 127.0
    scales[scales == 0] = 1.0  # a column of zeros: any scale stores it exactly
    stored = np.clip(np.rint(weights / scales), -127, 127)
    return stored.astype(np.int8), scales.astype(np.float32)


def graph_bytes(model: SentenceModel, eight_bit: bool) -> tuple[bytes, dict[str, Any]]:
    """An ONNX model of ``model``'s encoder, and the weight matrices it names (given to the session
    apart: ``add_initializer``). Inputs ``embedded`` (batch x length x dim, float: the embedding
    layer's output, which the model computes itself, so that the large table of word vectors is
    held once, not once a session) and ``bias`` (batch x 1 x 1 x length, float: 0 for a word piece,
    a large negative for padding); output ``hidden`` (batch x length x dim), pooled by the caller.
    ``eight_bit``: the linear layers' matrices kept in 8 bits (``quantized``), else as loaded."""
    import numpy as np

    g = _Graph()
    dim, heads = model.dim, model.heads
    size = dim // heads
    f32 = np.float32
    h = "embedded"
    split = g.const("split_heads", np.array([0, 0, heads, size], dtype=np.int64))
    join = g.const("join_heads", np.array([0, 0, dim], dtype=np.int64))
    scale = g.const("scale", np.array(1.0 / math.sqrt(size), dtype=f32))
    half = g.const("half", np.array(0.5, dtype=f32))
    one = g.const("one", np.array(1.0, dtype=f32))
    root_half = g.const("root_half", np.array(1.0 / math.sqrt(2.0), dtype=f32))
    def linear(x: str, weights: tuple[Any, Any], name: str) -> str:
        if eight_bit:
            stored, scales = quantized(weights[0])
            product = g.op("DynamicQuantizeMatMul", [x, g.const(name + "_q", stored), g.const(name + "_s", scales)],
                           domain="com.microsoft")
        else:
            product = g.op("MatMul", [x, g.const(name + "_w", weights[0])])
        return g.op("Add", [product, g.const(name + "_b", weights[1])])

    def heads_of(x: str, perm: list[int]) -> str:
        return g.op("Transpose", [g.op("Reshape", [x, split])], perm=perm)

    def add_norm(x: str, y: str, weights: tuple[Any, Any], name: str) -> str:
        return g.op("LayerNormalization", [g.op("Add", [x, y]), g.const(name + "_g", weights[0]),
                                           g.const(name + "_b", weights[1])], axis=-1, epsilon=model.eps)

    for i, layer in enumerate(model.layers):
        q = heads_of(linear(h, layer.q, f"q{i}"), [0, 2, 1, 3])
        k = heads_of(linear(h, layer.k, f"k{i}"), [0, 2, 3, 1])
        v = heads_of(linear(h, layer.v, f"v{i}"), [0, 2, 1, 3])
        scores = g.op("Add", [g.op("Mul", [g.op("MatMul", [q, k]), scale]), "bias"])
        weighted = g.op("MatMul", [g.op("Softmax", [scores], axis=-1), v])
        context = g.op("Reshape", [g.op("Transpose", [weighted], perm=[0, 2, 1, 3]), join])
        h = add_norm(h, linear(context, layer.out, f"out{i}"), layer.norm1, f"norm1_{i}")
        up = linear(h, layer.up, f"up{i}")
        erf = g.op("Erf", [g.op("Mul", [up, root_half])])
        gelu = g.op("Mul", [g.op("Mul", [up, half]), g.op("Add", [erf, one])])
        h = add_norm(h, linear(gelu, layer.down, f"down{i}"), layer.norm2, f"norm2_{i}")
    g.nodes.append(_bytes(1, h) + _bytes(2, "hidden") + _bytes(3, "output") + _bytes(4, "Identity"))
    graph = (b"".join(_bytes(1, n) for n in g.nodes) + _bytes(2, "encoder")
             + b"".join(_bytes(5, t) for t in g.initializers)
             + b"".join(_bytes(5, _external(name, array)) for name, array in g.weights.items())
             + _bytes(11, _value_info("embedded", FLOAT, ["batch", "length", dim]))
             + _bytes(11, _value_info("bias", FLOAT, ["batch", 1, 1, "length"]))
             + _bytes(12, _value_info("hidden", FLOAT, ["batch", "length", dim])))
    # ModelProto: ir_version 1, graph 7, opset_import 8 (domain 1, version 2); onnxruntime's own
    # operators (DynamicQuantizeMatMul) are in the com.microsoft domain, version 1.
    opsets = _bytes(8, _bytes(1, "") + _int(2, OPSET)) + _bytes(8, _bytes(1, "com.microsoft") + _int(2, 1))
    return _int(1, 8) + _bytes(7, graph) + opsets, g.weights


class OrtEncoder:
    """``run(embedded, bias)`` -> the last hidden states, by an onnxruntime session of ``model``
    (``eight_bit``: its linear layers' weights in 8 bits, ``graph_bytes``)."""

    def __init__(self, model: SentenceModel, eight_bit: bool) -> None:
        import numpy as np
        import onnxruntime  # type: ignore[import-untyped,import-not-found,unused-ignore]

        options = onnxruntime.SessionOptions()
        # One thread a call, as numpy's BLAS: the embedder runs beside the server's calls, and while
        # a search embeds its query the keyword ranking runs on the other core (search/fusion.py).
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.log_severity_level = 3  # errors only: on stdio, stderr is the user's terminal
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        # No memory arena: it would hold the buffers of the largest batch ever embedded for good.
        options.enable_cpu_mem_arena = False
        self._np = np
        graph, weights = graph_bytes(model, eight_bit)
        # The session reads the weights where numpy holds them (they must live as long as it does).
        self._weights = [onnxruntime.OrtValue.ortvalue_from_numpy(np.ascontiguousarray(a)) for a in weights.values()]
        options.add_external_initializers(list(weights), self._weights)
        self._session = onnxruntime.InferenceSession(graph, options, providers=["CPUExecutionProvider"])

    def run(self, embedded: Any, bias: Any) -> Any:
        np = self._np
        return self._session.run(["hidden"], {"embedded": np.ascontiguousarray(embedded, dtype=np.float32),
                                              "bias": bias})[0]
