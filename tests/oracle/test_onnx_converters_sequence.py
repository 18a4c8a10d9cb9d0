"""Oracle: ONNX sequences and optionals against TVM 0.27's ONNX importer.

TVM holds a sequence as a Relax tuple (``SplitToSequence``: the pending ``split``) and erases
a non-empty optional to its value. Each case is a small graph built with ``onnx.helper``
(positions as ``Constant`` nodes, which TVM reads at import), imported by memcore and by
``tvm.relax.frontend.onnx.from_onnx``; the modules must be structurally equal. (A node after
``SequenceEmpty`` whose output shape ONNX cannot infer is refused by memcore's shape check,
as any value without a shape is.)
"""
from __future__ import annotations

import pytest

onnx = pytest.importorskip("onnx")
tvm = pytest.importorskip("tvm")

from onnx import TensorProto, helper  # noqa: E402
from test_onnx_converters_more import _tvm_import  # noqa: E402

from memcore_py.errors import FrontendError  # noqa: E402
from memcore_py.frontend.onnx_model import from_onnx  # noqa: E402
from memcore_py.tvm import to_tvm  # noqa: E402

pytestmark = pytest.mark.oracle

F = TensorProto.FLOAT


def _const(name, value):
    return helper.make_node("Constant", [], [name], value=helper.make_tensor(name, TensorProto.INT64, [],
                                                                             [int(value)]))


def _model(nodes, outputs, opset=18, inputs=("a", "b", "c")):
    seq = helper.make_sequence_type_proto(helper.make_tensor_type_proto(F, None))
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, F, [2, 3]) for n in inputs],
                              [helper.make_value_info(n, seq) if n.startswith("s") else
                               helper.make_tensor_value_info(n, 0, None) for n in outputs])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


N = helper.make_node
CASES = [
    pytest.param([N("Relu", ["a"], ["r"]), N("SequenceConstruct", ["r", "b"], ["s"]), _const("p", 1),
                  N("SequenceAt", ["s", "p"], ["y"])], ["y"], id="construct-at"),
    pytest.param([N("Relu", ["a"], ["r"]), N("SequenceConstruct", ["r", "b"], ["s"]), _const("p0", 0),
                  N("SequenceInsert", ["s", "c", "p0"], ["s2"]), N("SequenceErase", ["s2"], ["s3"]),
                  N("ConcatFromSequence", ["s3"], ["y"], axis=1), N("SequenceLength", ["s2"], ["n"])], ["y", "n"],
                 id="insert-erase-concat-length"),
    pytest.param([N("SequenceConstruct", ["a"], ["s"]), N("SequenceInsert", ["s", "b"], ["s2"]),
                  N("ConcatFromSequence", ["s2"], ["y"], axis=-1, new_axis=1)], ["y"], id="insert-stack"),
    pytest.param([N("Constant", [], ["sp"], value=helper.make_tensor("sp", TensorProto.INT64, [2], [1, 2])),
                  N("SplitToSequence", ["a", "sp"], ["s"], axis=1), _const("p0", 0), _const("p1", 1),
                  N("SequenceAt", ["s", "p1"], ["y1"]), N("SequenceAt", ["s", "p0"], ["y0"])], ["y0", "y1"],
                 id="split-sizes-at"),
    pytest.param([N("SplitToSequence", ["a"], ["s"], axis=0, keepdims=0), _const("p", 1),
                  N("SequenceAt", ["s", "p"], ["y"])], ["y"], id="split-squeezed-at"),
    pytest.param([N("SequenceConstruct", ["a", "b"], ["s"])], ["s"], id="sequence-output"),
    pytest.param([N("Optional", ["a"], ["o"]), N("OptionalGetElement", ["o"], ["g"]), N("Relu", ["g"], ["y"]),
                  N("OptionalHasElement", ["o"], ["h"])], ["y", "h"], id="optional"),
]


@pytest.mark.parametrize("nodes, outputs", CASES)
def test_sequence_graph_imports_as_tvm(nodes, outputs):
    model = _model(nodes, outputs)
    tvm.ir.assert_structural_equal(to_tvm(from_onnx(model)), _tvm_import(model))


def test_empty_optional_is_refused():
    opt_type = helper.make_tensor_type_proto(F, [2, 3])
    model = _model([N("Optional", [], ["o"], type=opt_type), N("OptionalHasElement", ["o"], ["h"])], ["h"])
    with pytest.raises(FrontendError, match=r"node 'unnamed Optional node'|empty Optional"):
        from_onnx(model)


def test_sequence_position_out_of_range_is_refused():
    model = _model([N("SequenceConstruct", ["a", "b"], ["s"], name="n"), _const("p", 2),
                    N("SequenceAt", ["s", "p"], ["y"], name="at")], ["y"])
    with pytest.raises(FrontendError, match=r"node 'at' \(SequenceAt\): position 2 is out of range"):
        from_onnx(model)

