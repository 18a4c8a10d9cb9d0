"""Oracle: the onnxruntime contrib (``com.microsoft``) ops of TVM 0.27's ONNX convert map.

Each case is a one-node graph of a ``com.microsoft`` node built with ``onnx.helper``
(graph inputs, and initializers for weights), imported by memcore's
:func:`~memcore_py.frontend.onnx_model.from_onnx` and by ``tvm.relax.frontend.onnx.from_onnx``;
the two modules must be structurally equal. ONNX's shape inference does not know these ops,
so the graph outputs are typed by element type only; a second node after the contrib node
checks that its (uninferred) output is converted too.
"""
from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
tvm = pytest.importorskip("tvm")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from test_onnx_converters_more import _tvm_import  # noqa: E402

from memcore_py.errors import FrontendError, UnsupportedOperatorError  # noqa: E402
from memcore_py.frontend.onnx_model import from_onnx  # noqa: E402
from memcore_py.tvm import to_tvm  # noqa: E402

pytestmark = pytest.mark.oracle

F, I32 = TensorProto.FLOAT, TensorProto.INT32
RNG = np.random.default_rng(0)


def _w(*shape, dtype="float32"):
    return RNG.standard_normal(shape).astype(dtype)


def _model(op, inputs, n_outputs, relu_after=False, domain="com.microsoft", **attrs):
    """``inputs``: (name, elem type, shape) graph inputs or (name, array) initializers; an
    empty name is an omitted optional input."""
    graph_inputs = [helper.make_tensor_value_info(*s) for s in inputs if len(s) == 3]
    inits = [numpy_helper.from_array(s[1], s[0]) for s in inputs if len(s) == 2 and s[0]]
    outs = [f"y{k}" for k in range(n_outputs)]
    nodes = [helper.make_node(op, [s[0] for s in inputs], outs, name="n", domain=domain, **attrs)]
    if relu_after:
        nodes.append(helper.make_node("Relu", ["y0"], ["r"], name="after"))
        outs = ["r"] + outs[1:]
    graph = helper.make_graph(nodes, "g", graph_inputs, [helper.make_tensor_value_info(n, 0, None) for n in outs],
                              initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(domain, 1)])


X = ("x", F, [2, 4, 8])
CASES = [
    pytest.param("BiasGelu", [X, ("b", _w(8))], 1, {}, id="BiasGelu"),
    pytest.param("FastGelu", [X], 1, {}, id="FastGelu"),
    pytest.param("FastGelu", [X, ("b", _w(8))], 1, {"relu_after": True}, id="FastGelu-bias-then-relu"),
    pytest.param("MatMulInteger16", [("a", TensorProto.INT16, [3, 4]), ("b", TensorProto.UINT16, [4, 5])], 1, {},
                 id="MatMulInteger16"),
    pytest.param("MatMulInteger16", [("a", TensorProto.UINT16, [3, 4]), ("b", TensorProto.UINT16, [4, 5])], 1, {},
                 id="MatMulInteger16-unsigned"),
    pytest.param("SkipLayerNormalization", [X, ("s", F, [2, 4, 8]), ("g", _w(8)), ("be", _w(8)), ("bi", _w(8))], 1,
                 {"epsilon": 1e-5}, id="SkipLayerNormalization"),
    pytest.param("EmbedLayerNormalization",
                 [("ids", I32, [2, 5]), ("seg", I32, [2, 5]), ("we", _w(10, 8)), ("pe", _w(5, 8)), ("se", _w(2, 8)),
                  ("g", _w(8)), ("be", _w(8)), ("m", I32, [2, 5])], 2, {}, id="EmbedLayerNormalization"),
    pytest.param("EmbedLayerNormalization",
                 [("ids", I32, [2, 5]), ("", None), ("we", _w(10, 8)), ("pe", _w(5, 8)), ("", None), ("g", _w(8)),
                  ("be", _w(8))], 2, {"relu_after": True}, id="EmbedLayerNormalization-minimal"),
    pytest.param("Attention", [X, ("w", _w(8, 24)), ("b", _w(24))], 1, {"num_heads": 2}, id="Attention"),
    pytest.param("Attention", [X, ("w", _w(8, 24)), ("", None), ("m", I32, [2, 4]), ("", None),
                               ("qk", F, [2, 4, 4, 4])], 1, {"num_heads": 4, "mask_filter_value": -1e3},
                 id="Attention-2d-mask-bias"),
    pytest.param("Attention", [X, ("w", _w(8, 24))], 1, {"num_heads": 2, "relu_after": True},
                 id="Attention-minimal-then-relu"),
    pytest.param("Attention", [X, ("w", _w(8, 20)), ("b", _w(20)), ("m", I32, [2, 4, 4]), ("", None),
                               ("qk", F, [2, 2, 4, 4])], 1, {"num_heads": 2, "qkv_hidden_sizes": [6, 6, 8]},
                 id="Attention-mask-bias-sizes"),
]


@pytest.mark.parametrize("op, inputs, n_outputs, attrs", CASES)
def test_contrib_op_imports_as_tvm(op, inputs, n_outputs, attrs):
    model = _model(op, inputs, n_outputs, **attrs)
    tvm.ir.assert_structural_equal(to_tvm(from_onnx(model)), _tvm_import(model))


def test_contrib_op_in_the_default_domain_is_unsupported():
    """``Attention`` of the default domain (opset 23) is not the contrib op TVM converts."""
    model = _model("Attention", [X, ("w", _w(8, 24))], 1, domain="", num_heads=2)
    with pytest.raises(UnsupportedOperatorError, match="Attention"):
        from_onnx(model)


@pytest.mark.parametrize("inputs, attrs, match", [
    pytest.param([X, ("w", _w(8, 24)), ("", None), ("", None), ("past", F, [2, 2, 2, 0, 4])], {}, "past is not",
                 id="past"),
    pytest.param([X, ("w", _w(8, 24))], {"unidirectional": 0}, "unidirectional is not", id="unidirectional"),
    pytest.param([X, ("w", _w(8, 24)), ("", None), ("m", I32, [2, 4])], {}, "a mask without the attention bias",
                 id="mask-without-bias"),
])
def test_contrib_attention_cases_tvm_refuses_are_refused(inputs, attrs, match):
    """TVM 0.27 asserts or fails on these; memcore names the case."""
    with pytest.raises(FrontendError, match=rf"node 'n' \(Attention\): {match}"):
        from_onnx(_model("Attention", inputs, 1, num_heads=2, **attrs))
