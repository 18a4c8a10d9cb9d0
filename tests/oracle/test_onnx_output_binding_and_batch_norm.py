"""Oracle: how the ONNX importer binds graph outputs and multi-output nodes, against TVM 0.27's
``tvm.relax.frontend.onnx.from_onnx`` (issue 28: "the output binding, unused batch-norm
outputs"), and the TorchScript exporter's ``nn.MultiheadAttention``.

TVM's rules, which memcore's importer now follows (:mod:`memcore_py.frontend.onnx_model`):

- a node's value is bound when first used, and one call object is bound once however many
  names refer to it: a model returning the same tensor twice (or a tensor and its
  ``Identity`` alias) gives ``gv = (lv, lv)``, not two copies of the call;
- a converter that returns a ``relax.Tuple`` has it normalized at once, so its calls are bound
  at the node, used or not: ``BatchNormalization`` binds the call and its three items
  ``[0]``, ``[1]``, ``[2]`` (the running mean and variance too), ``LayerNormalization``
  binds its call (a graph output is then ``gv = lv``: the output of every encoder that ends
  in a layer norm, e.g. a transformers DistilBERT from either exporter);
- a graph output that is a graph input, an initializer or a shape value is returned as is;
- values ONNX's shape inference leaves unshaped are typed by the converters (the TorchScript
  export of ``nn.MultiheadAttention``; the running statistics a ``BatchNormalization`` below
  opset 14 declares).

Refused where TVM is wrong (DIFFERENCES.md ``onnx-batchnorm-training-stats``): a training-mode
``BatchNormalization`` whose running mean or variance is used (TVM hands ONNX's momentum,
the weight of the old running value, to TOPI, which takes it as the weight of the batch's).
Imported where TVM fails (``onnx-batchnorm-saved-stats``): the five outputs of an opset-9
``BatchNormalization``, the two saved statistics unused.
"""
from __future__ import annotations

import logging
import warnings

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
torch = pytest.importorskip("torch")
tvm = pytest.importorskip("tvm")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from torch import nn  # noqa: E402

from memcore_py.errors import FrontendError  # noqa: E402
from memcore_py.frontend.onnx_model import from_onnx  # noqa: E402
from memcore_py.tvm import to_tvm  # noqa: E402
from oracle.test_fused_planning_oracle import compare, memcore_fused  # noqa: E402
from oracle.test_onnx_converters_more import _tvm_import  # noqa: E402
from oracle.test_stock_model_converters import MHABlock, _commuted, tvm_fused_default  # noqa: E402

pytestmark = pytest.mark.oracle

F, F16, I64 = TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.INT64
_V = helper.make_tensor_value_info


def _assert_imports_as_tvm(model):
    ours = from_onnx(model)
    tvm.ir.assert_structural_equal(to_tvm(ours), _tvm_import(model))
    return ours


def _graph_model(nodes, inputs, outputs, inits=(), opset=17):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _export(module, args, path, dynamo: bool, **options):
    """``torch.onnx.export`` of ``module`` to ``path`` (TorchScript exporter at opset 17 unless
    ``dynamo``), loaded back."""
    logging.disable(logging.CRITICAL)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if dynamo:
                torch.onnx.export(module, args, dynamo=True, verbose=False, **options).save(str(path))
            else:
                torch.onnx.export(module, args, str(path), dynamo=False, opset_version=17, **options)
    finally:
        logging.disable(logging.NOTSET)
    return onnx.load(str(path))


# ---------------------------------------------------------------------------- output binding
def _output_cases():
    x = _V("x", F, [2, 3])
    xs = _V("x", F, ["n", 3])
    out = lambda name, t=F: _V(name, t, None)  # noqa: E731 - declared without a shape, as often
    w = numpy_helper.from_array(np.ones((2, 3), "float32"), "w")
    node = helper.make_node
    relu, neg = node("Relu", ["x"], ["y"]), node("Neg", ["y"], ["z"])
    alias = node("Identity", ["y"], ["a"])
    index = node("Constant", [], ["i"], value=numpy_helper.from_array(np.array([0], "int64")))
    return {
        "same_output_twice": _graph_model([relu], [x], [out("y"), out("y")]),
        "output_and_its_alias": _graph_model([relu, alias], [x], [out("y"), out("a")]),
        "alias_output_value_used_later": _graph_model([relu, alias, neg], [x], [out("a"), out("z")]),
        "alias_single_output_used_later": _graph_model(
            [relu, alias, neg, node("Add", ["z", "a"], ["s"])], [x], [out("a")]),
        "three_outputs_one_twice": _graph_model([relu, node("Neg", ["x"], ["m"])], [x],
                                                [out("m"), out("y"), out("m")]),
        "input_is_the_output": _graph_model([], [x], [out("x")]),
        "input_and_a_node_output": _graph_model([relu], [x], [out("x"), out("y")]),
        "initializer_output": _graph_model([relu], [x], [out("y"), out("w")], [w]),
        "used_output": _graph_model([relu, neg], [x], [out("y"), out("z")]),
        "shape_output": _graph_model([node("Shape", ["x"], ["s"])], [xs], [out("s", I64)]),
        "shape_and_tensor_outputs": _graph_model([node("Shape", ["x"], ["s"]), relu], [x],
                                                 [out("s", I64), out("y")]),
        "gather_of_a_shape_by_a_vector": _graph_model(
            [index, node("Shape", ["x"], ["s"]), node("Gather", ["s", "i"], ["d"])], [xs], [out("d", I64)]),
        "layer_norm_output": _graph_model(
            [node("LayerNormalization", ["x", "g", "b"], ["y"], axis=-1)], [x], [out("y")],
            [numpy_helper.from_array(np.ones(3, "float32"), "g"), numpy_helper.from_array(np.zeros(3, "float32"), "b")]),
    }


@pytest.mark.parametrize("name", list(_output_cases()))
def test_graph_outputs_bind_as_tvm(name):
    """Each call bound once (``gv = lv, lv``), inputs, initializers and shape values returned
    as they are, a ``LayerNormalization`` output bound before ``gv``."""
    _assert_imports_as_tvm(_output_cases()[name])


class _Twice(nn.Module):
    def forward(self, x):
        y = torch.relu(x)
        return y, y


class _InputAndValue(nn.Module):
    def forward(self, x):
        return x, torch.relu(x)


class _LayerNormLast(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc, self.ln = nn.Linear(4, 4), nn.LayerNorm(4)

    def forward(self, x):
        return self.ln(self.fc(x))


@pytest.mark.parametrize("dynamo", [False, True], ids=["torchscript", "dynamo"])
@pytest.mark.parametrize("cls", [_Twice, _InputAndValue, _LayerNormLast], ids=lambda c: c.__name__.strip("_"))
def test_exported_outputs_bind_as_tvm(cls, dynamo, tmp_path):
    """A model returning one tensor twice (the dynamo exporter adds an ``Identity`` alias, the
    TorchScript one repeats the output), its input, or a layer norm: equal to TVM."""
    torch.manual_seed(0)
    _assert_imports_as_tvm(_export(cls().eval(), (torch.randn(2, 4),), tmp_path / "m.onnx", dynamo))


# ---------------------------------------------------------------------------- batch norm
class _ConvBN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv, self.bn = nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4)

    def forward(self, x):
        return torch.relu(self.bn(self.conv(x)))


class _BNOut(nn.Module):
    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm1d(3)

    def forward(self, x):
        return self.bn(x)


_BN_EXPORTS = {
    "torchscript_no_folding": (False, {"do_constant_folding": False}),
    "torchscript_training": (False, {"training": torch.onnx.TrainingMode.TRAINING}),
    "dynamo_unoptimized": (True, {"optimize": False}),
    "dynamo": (True, {}),
}


@pytest.mark.parametrize("export", list(_BN_EXPORTS))
@pytest.mark.parametrize("cls, shape", [(_ConvBN, (1, 3, 8, 8)), (_BNOut, (2, 3, 5))], ids=["conv_bn_relu", "bn_out"])
def test_exported_batch_norm_binds_its_unused_outputs_as_tvm(cls, shape, export, tmp_path):
    """Eval-mode batch norm from either exporter, and the TorchScript exporter's training mode
    (three outputs, two unused): ``R.nn.batch_norm`` and its three items bound at the node."""
    dynamo, options = _BN_EXPORTS[export]
    torch.manual_seed(0)
    model = _export(cls().eval(), (torch.randn(*shape),), tmp_path / "bn.onnx", dynamo, **options)
    ours = _assert_imports_as_tvm(model)
    bns = [n for n in model.graph.node if n.op_type == "BatchNormalization"]
    if bns:  # the default dynamo export of conv_bn_relu folds the batch norm into the conv
        items = [b for b in ours["main"].body.blocks[0].bindings if type(b.value).__name__ == "TupleGetItem"]
        assert len(items) == 3 * len(bns)


@pytest.mark.parametrize("export", ["torchscript_no_folding", "torchscript_training", "dynamo_unoptimized"])
def test_exported_batch_norm_plans_as_tvm(export, tmp_path):
    """Conv + batch norm + ReLU (eval, and training mode): memcore's fused plan is TVM's
    (kernels and bytes)."""
    dynamo, options = _BN_EXPORTS[export]
    torch.manual_seed(0)
    model = _export(_ConvBN().eval(), (torch.randn(1, 3, 8, 8),), tmp_path / "bn.onnx", dynamo, **options)
    ours, theirs = _assert_imports_as_tvm(model), _tvm_import(model)
    (k1, p1), (k2, p2) = memcore_fused(ours), tvm_fused_default(theirs)
    compare(f"conv_bn_relu_{export}", (_commuted(k1), p1), (_commuted(k2), p2))


def _bn_model(opset=17, training=None, outputs=1, used=(0,), dtype=F, param_dtype=F, stat_dtype=F):
    """A ``BatchNormalization`` on ``x`` (2, 3, 4, 4) with ``outputs`` outputs, a ``Neg`` of each
    used one as a graph output."""
    np_dtype = {F: "float32", F16: "float16"}
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.random(3).astype(np_dtype[t]), n)
             for n, t in (("s", param_dtype), ("b", param_dtype), ("m", stat_dtype), ("v", stat_dtype))]
    names = ["y", "rm", "rv", "sm", "sv"][:outputs]
    attrs = {} if training is None else {"training_mode": training}
    nodes = [helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], names, name="bn", **attrs)]
    nodes += [helper.make_node("Neg", [names[i]], [f"o{i}"]) for i in used]
    outs = [_V(f"o{i}", dtype if i == 0 else stat_dtype, None) for i in used]
    return _graph_model(nodes, [_V("x", dtype, [2, 3, 4, 4])], outs, inits, opset)


_BN_CASES = {
    "eval": {},
    "training_stats_unused": {"training": 1, "outputs": 3},
    "opset9_stats_declared_unused": {"opset": 9, "outputs": 3},
    "opset12_stats_declared_unused": {"opset": 12, "outputs": 3},
    "opset14_training": {"opset": 14, "training": 1, "outputs": 3},
    "float16": {"dtype": F16, "param_dtype": F16, "stat_dtype": F16},
    "float16_float32_params": {"dtype": F16, "param_dtype": F, "stat_dtype": F},
    "float16_float32_stats": {"dtype": F16, "param_dtype": F16, "stat_dtype": F},
    "float16_training": {"dtype": F16, "param_dtype": F16, "stat_dtype": F16, "training": 1, "outputs": 3},
}


@pytest.mark.parametrize("case", list(_BN_CASES))
def test_batch_norm_variants_import_as_tvm(case):
    """Training mode (the statistics unused), the running statistics an opset-9/12 node
    declares (unshaped by ONNX's inference), float16 data computed in float32 as TVM casts."""
    _assert_imports_as_tvm(_bn_model(**_BN_CASES[case]))


def test_training_batch_norm_with_used_running_stats_is_refused():
    """TVM imports it, but computes the running mean as ``0.1 * old + 0.9 * batch`` for ONNX's
    ``momentum=0.9`` (ONNX: ``0.9 * old + 0.1 * batch``): refused, naming the used output."""
    model = _bn_model(training=1, outputs=3, used=(0, 1))
    _tvm_import(model)
    with pytest.raises(FrontendError, match=r"'bn' \(BatchNormalization\): training_mode=1 with the running "
                                            r"statistics used \('rm'\)"):
        from_onnx(model)


def test_opset9_batch_norm_saved_stats_import_where_tvm_fails():
    """An opset-9 node declaring all five outputs (the saved mean and variance unused): TVM's
    converter gives three and asserts; memcore converts the used ``Y``."""
    model = _bn_model(opset=9, outputs=5)
    with pytest.raises(AssertionError, match="Missing outputs"):
        _tvm_import(model)
    ours = to_tvm(from_onnx(model))
    reference = _bn_model(opset=9, outputs=3)  # the same graph without the saved statistics
    tvm.ir.assert_structural_equal(ours, _tvm_import(reference))


def test_mixed_batch_norm_dtypes_tvm_refuses_are_refused():
    with pytest.raises(FrontendError, match="mixed dtypes"):
        from_onnx(_bn_model(param_dtype=F16, stat_dtype=F16))


# ------------------------------------------------------------- TorchScript MultiheadAttention
def test_torchscript_mha_export_imports_and_plans_as_tvm(tmp_path):
    """The TorchScript exporter writes ``nn.MultiheadAttention``'s head split as a ``Reshape``
    whose target is computed (``Slice`` of ``Shape`` with ends from ``Mod`` of constants).
    ONNX's shape inference leaves those values unshaped; memcore's converters fold the target
    and type them, as TVM's do: the import is equal to TVM's and plans, fused, as TVM."""
    torch.manual_seed(0)
    model = _export(MHABlock().eval(), (torch.randn(2, 8, 32),), tmp_path / "mha.onnx", dynamo=False)
    inferred = onnx.shape_inference.infer_shapes(model).graph
    typed = {vi.name for vi in (*inferred.value_info, *inferred.output) if vi.type.tensor_type.HasField("shape")}
    assert any(o not in typed for n in model.graph.node if n.op_type == "Reshape" for o in n.output)
    ours, theirs = _assert_imports_as_tvm(model), _tvm_import(model)
    (k1, p1), (k2, p2) = memcore_fused(ours), tvm_fused_default(theirs)
    compare("mha_torchscript_onnx", (_commuted(k1), p1), (_commuted(k2), p2))
