"""memcore_py.frontend.onnx_model without TVM or torch: small ONNX graphs written with
``onnx.helper``, imported, and checked against ONNX's own shape inference (the type of every
graph output must be the shape and dtype ``onnx.shape_inference`` gives it), plus the
importer's inputs, symbolic dims, parameters, and its errors (missing onnx, unsupported
operators, values without shapes, bad ``shape_dict``, unreadable files).

The comparison with TVM's ONNX importer, and of planned bytes with the torch.export path, is
tests/oracle/test_onnx_oracle.py.
"""
import sys

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from memcore_py.errors import FrontendDependencyError, FrontendError, UnsupportedOperatorError  # noqa: E402
from memcore_py.frontend.onnx_model import (  # noqa: E402
    from_onnx,
    load_onnx,
    onnx_params,
    unsupported_onnx_operators,
)
from memcore_py.ir import Constant, PrimVar, Var, well_formed  # noqa: E402
from memcore_py.ir.prim import IntImm  # noqa: E402

F, I64 = TensorProto.FLOAT, TensorProto.INT64


def _model(nodes, inputs, outputs, initializers=(), opset=20):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _init(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def _dims(ty):
    return [d.value if isinstance(d, IntImm) else d.name for d in ty.shape]


def _onnx_output_types(model):
    """name -> (dims, dtype) of the graph outputs, as ONNX's shape inference gives them."""
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    names = {o.name for o in model.graph.output}
    out = {}
    for vi in (*inferred.graph.value_info, *inferred.graph.output):
        if vi.name in names:
            t = vi.type.tensor_type
            dims = [d.dim_value if d.HasField("dim_value") else d.dim_param for d in t.shape.dim]
            out[vi.name] = (dims, helper.tensor_dtype_to_np_dtype(t.elem_type).name)
    return out


def _assert_outputs_typed_as_onnx(model, **kwargs):
    mod = from_onnx(model, **kwargs)
    assert well_formed(mod)
    main = mod["main"]
    ret = main.ret_ty
    fields = ret.fields if len(model.graph.output) > 1 else (ret,)
    expected = _onnx_output_types(model)
    for out, ty in zip(model.graph.output, fields):
        dims, dtype = expected[out.name]
        assert (_dims(ty), ty.dtype) == (dims, dtype), out.name
    return mod


def _ops(mod):
    return [b.value.op.name for b in mod["main"].body.blocks[0].bindings if hasattr(b.value, "op")]


# ------------------------------------------------------------------------------------ conversion
def test_convnet_outputs_have_onnx_inferred_types():
    rng = np.random.default_rng(0)
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("MaxPool", ["r"], ["p"], name="pool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["p", "g", "beta", "mu", "var"], ["bn"], name="bn"),
        helper.make_node("AveragePool", ["bn"], ["ap"], name="ap", kernel_shape=[2, 2], strides=[1, 1]),
        helper.make_node("GlobalAveragePool", ["bn"], ["gap"], name="gap"),
        helper.make_node("Flatten", ["gap"], ["flat"], name="flat"),
        helper.make_node("Gemm", ["flat", "fw", "fb"], ["y"], name="fc", transB=1, alpha=0.5, beta=2.0),
        helper.make_node("Clip", ["y", "lo", "hi"], ["clipped"], name="clip"),
    ]
    inits = [_init("w", rng.standard_normal((8, 3, 3, 3)).astype("float32")), _init("b", np.zeros(8, "float32")),
             _init("g", np.ones(8, "float32")), _init("beta", np.zeros(8, "float32")),
             _init("mu", np.zeros(8, "float32")), _init("var", np.ones(8, "float32")),
             _init("fw", rng.standard_normal((10, 8)).astype("float32")), _init("fb", np.zeros(10, "float32")),
             _init("lo", np.float32(0)), _init("hi", np.float32(6))]
    model = _model(nodes, [helper.make_tensor_value_info("x", F, [1, 3, 16, 16])],
                   [helper.make_tensor_value_info(n, F, None) for n in ("c", "p", "bn", "ap", "y", "clipped")], inits)
    mod = _assert_outputs_typed_as_onnx(model)
    ops = _ops(mod)
    for op in ("relax.nn.conv2d", "relax.nn.max_pool2d", "relax.nn.batch_norm", "relax.nn.avg_pool2d", "relax.mean",
               "relax.permute_dims", "relax.matmul", "relax.multiply", "relax.clip"):
        assert op in ops, op
    main = mod["main"]
    assert [p.name for p in main.params][:2] == ["x", "w"]
    assert main.attrs["num_input"] == 1


def test_transformer_ops_outputs_have_onnx_inferred_types():
    rng = np.random.default_rng(1)
    nodes = [
        helper.make_node("Gather", ["emb", "ids"], ["e"], name="embed"),
        helper.make_node("LayerNormalization", ["e", "lw", "lb"], ["ln"], name="ln", epsilon=1e-6),
        helper.make_node("MatMul", ["ln", "wq"], ["q"], name="q"),
        helper.make_node("Reshape", ["q", "heads"], ["qh"], name="split_heads"),
        helper.make_node("Transpose", ["qh"], ["qt"], name="t", perm=[0, 2, 1, 3]),
        helper.make_node("Transpose", ["qh"], ["kt"], name="tk", perm=[0, 2, 3, 1]),
        helper.make_node("MatMul", ["qt", "kt"], ["s"], name="scores"),
        helper.make_node("Div", ["s", "scale"], ["sd"], name="div"),
        helper.make_node("Softmax", ["sd"], ["a"], name="softmax", axis=-1),
        helper.make_node("Gelu", ["ln"], ["ge"], name="gelu", approximate="tanh"),
        helper.make_node("Erf", ["ln"], ["er"], name="erf"),
        helper.make_node("Pow", ["ln", "two"], ["sq"], name="pow"),
        helper.make_node("ReduceMean", ["sq", "last"], ["ms"], name="mean", keepdims=1),
        helper.make_node("Sqrt", ["ms"], ["rms"], name="sqrt"),
        helper.make_node("Reciprocal", ["rms"], ["inv"], name="recip"),
        helper.make_node("Sub", ["ln", "inv"], ["d"], name="sub"),
        helper.make_node("Split", ["d"], ["h0", "h1"], name="split", axis=2, num_outputs=2),
        helper.make_node("Neg", ["h1"], ["nh1"], name="neg"),
        helper.make_node("Concat", ["nh1", "h0"], ["rot"], name="cat", axis=-1),
        helper.make_node("Unsqueeze", ["rot", "ax1"], ["u"], name="unsq"),
        helper.make_node("Expand", ["u", "eshape"], ["ex"], name="expand"),
        helper.make_node("Squeeze", ["u", "ax1"], ["sqz"], name="squeeze"),
        helper.make_node("Slice", ["ln", "st", "en", "ax2"], ["sl"], name="slice"),
        helper.make_node("Cast", ["ids"], ["idf"], name="cast", to=F),
        helper.make_node("Greater", ["idf", "zero"], ["pos"], name="gt"),
        helper.make_node("Where", ["pos", "idf", "zero"], ["w"], name="where"),
        helper.make_node("Trilu", ["a"], ["tri"], name="triu", upper=1),
        helper.make_node("Sigmoid", ["ln"], ["sg"], name="sigmoid"),
        helper.make_node("Tanh", ["ln"], ["th"], name="tanh"),
    ]
    inits = [_init("emb", rng.standard_normal((50, 16)).astype("float32")), _init("lw", np.ones(16, "float32")),
             _init("lb", np.zeros(16, "float32")), _init("wq", rng.standard_normal((16, 16)).astype("float32")),
             _init("heads", np.array([1, 6, 2, 8], "int64")), _init("scale", np.float32(2.0)),
             _init("two", np.float32(2.0)), _init("last", np.array([-1], "int64")),
             _init("ax1", np.array([1], "int64")), _init("eshape", np.array([1, 3, 6, 16], "int64")),
             _init("st", np.array([1], "int64")), _init("en", np.array([5], "int64")),
             _init("ax2", np.array([1], "int64")), _init("zero", np.float32(0))]
    outs = ["ln", "qh", "a", "ge", "er", "inv", "h0", "rot", "ex", "sqz", "sl", "w", "tri", "sg", "th"]
    model = _model(nodes, [helper.make_tensor_value_info("ids", I64, [1, 6])],
                   [helper.make_tensor_value_info(n, F, None) for n in outs], inits)
    mod = _assert_outputs_typed_as_onnx(model)
    ops = _ops(mod)
    for op in ("relax.take", "relax.where", "relax.nn.layer_norm", "relax.reshape", "relax.nn.softmax",
               "relax.nn.gelu_tanh", "relax.split", "relax.concat", "relax.expand_dims", "relax.broadcast_to",
               "relax.squeeze", "relax.strided_slice", "relax.astype", "relax.triu", "relax.power", "relax.divide"):
        assert op in ops, op


def test_dim_param_is_one_symbolic_var_and_shape_values_stay_symbolic():
    """``Shape -> Gather -> Unsqueeze -> Concat -> Reshape`` on a ``dim_param`` input: the
    reshape target is a shape known at import time, symbolic in ``seq``; ``Range`` up to
    ``seq`` has extent ``seq``."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s"], name="shape"),
        helper.make_node("Gather", ["s", "one"], ["n"], name="seq_len"),
        helper.make_node("Unsqueeze", ["n", "zero_axis"], ["n1"], name="as_shape"),
        helper.make_node("Concat", ["n1", "tail"], ["target"], name="target", axis=0),
        helper.make_node("Reshape", ["x", "target"], ["r"], name="reshape"),
        helper.make_node("Range", ["start", "n", "step"], ["pos"], name="positions"),
        helper.make_node("Add", ["x", "y"], ["z"], name="add"),
    ]
    inits = [_init("one", np.array(1, "int64")), _init("zero_axis", np.array([0], "int64")),
             _init("tail", np.array([-1], "int64")), _init("start", np.array(0, "int64")),
             _init("step", np.array(1, "int64"))]
    model = _model(nodes, [helper.make_tensor_value_info("x", F, [2, "seq"]),
                           helper.make_tensor_value_info("y", F, [2, "seq"])],
                   [helper.make_tensor_value_info(n, I64 if n == "pos" else F, None) for n in ("r", "pos", "z")],
                   inits)
    mod = from_onnx(model)
    main = mod["main"]
    x, y = main.params[:2]
    seq_x, seq_y = x.ty.shape[1], y.ty.shape[1]
    assert isinstance(seq_x, PrimVar) and seq_x.name == "seq" and seq_x is seq_y and seq_x.dtype == "int64"
    r, pos, z = main.ret_ty.fields
    assert len(r.shape) == 2 and r.shape[0] is seq_x
    assert _dims(pos) == ["seq"] and pos.dtype == "int64"
    assert _dims(z) == [2, "seq"]


def test_shape_dict_overrides_the_input_shape():
    model = _model([helper.make_node("Relu", ["x"], ["y"], name="relu")],
                   [helper.make_tensor_value_info("x", F, ["batch", 4])], [helper.make_tensor_value_info("y", F, None)])
    mod = from_onnx(model, shape_dict={"x": [3, 4]})
    assert _dims(mod["main"].params[0].ty) == [3, 4] and _dims(mod["main"].ret_ty) == [3, 4]
    sym = from_onnx(model, shape_dict={"x": ["n", 4]})
    assert _dims(sym["main"].ret_ty) == ["n", 4]
    assert len(model.graph.input[0].type.tensor_type.shape.dim) == 2  # the caller's model is unchanged
    assert model.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"


def test_initializers_as_parameters_or_constants():
    w = np.arange(12, dtype="float32").reshape(4, 3)
    model = _model([helper.make_node("MatMul", ["x.in", "onnx::w"], ["y"], name="mm")],
                   [helper.make_tensor_value_info("x.in", F, [2, 4])], [helper.make_tensor_value_info("y", F, None)],
                   [_init("onnx::w", w)])
    kept = from_onnx(model)["main"]
    assert [p.name for p in kept.params] == ["x_in", "w"]  # TVM's names: '.' -> '_', 'onnx::' dropped
    assert kept.attrs["num_input"] == 1
    bound = from_onnx(model, keep_params_as_input=False)["main"]
    assert [p.name for p in bound.params] == ["x_in"] and bound.attrs["num_input"] == 1
    consts = [a for b in bound.body.blocks[0].bindings for a in getattr(b.value, "args", ()) if isinstance(a, Constant)]
    assert len(consts) == 1 and np.array_equal(consts[0].data, w)
    params = onnx_params(model)
    assert list(params) == ["w"] and np.array_equal(params["w"], w)


def test_unused_values_are_not_bound_and_a_value_used_twice_is_bound_once():
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("Sigmoid", ["x"], ["dead"], name="unused"),
             helper.make_node("Add", ["r", "r"], ["y"], name="add")]
    model = _model(nodes, [helper.make_tensor_value_info("x", F, [4])], [helper.make_tensor_value_info("y", F, None)])
    main = from_onnx(model)["main"]
    bindings = main.body.blocks[0].bindings
    assert [b.value.op.name for b in bindings] == ["relax.nn.relu", "relax.add"]
    relu_var = bindings[0].var
    assert all(a is relu_var for a in bindings[1].value.args)


def test_constant_operands_fold_at_import_time():
    nodes = [helper.make_node("Constant", [], ["c"], name="c", value=_init("v", np.array([2, 3], "int64"))),
             helper.make_node("Mul", ["c", "c"], ["c2"], name="mul"),
             helper.make_node("Reshape", ["x", "c2"], ["y"], name="reshape")]
    model = _model(nodes, [helper.make_tensor_value_info("x", F, [4, 9])],
                   [helper.make_tensor_value_info("y", F, None)])
    main = from_onnx(model)["main"]
    assert _dims(main.ret_ty) == [4, 9]
    assert [b.value.op.name for b in main.body.blocks[0].bindings] == ["relax.reshape"]


# ------------------------------------------------------------------------------------ errors
def test_missing_onnx_is_a_typed_import_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "onnx", None)
    with pytest.raises(FrontendDependencyError, match=r"memcore\[onnx\]"):
        from_onnx(object())


def test_not_a_model_is_an_error():
    with pytest.raises(FrontendError, match="expects an onnx.ModelProto; got dict"):
        from_onnx({})


def test_every_unsupported_operator_is_listed_at_once():
    nodes = [helper.make_node("AllClassNMS", ["x", "k"], ["v"], name="nms"),
             helper.make_node("Relu", ["v"], ["r"], name="relu"),
             helper.make_node("Det", ["r"], ["nz"], name="nz1"),
             helper.make_node("Det", ["x"], ["nz2"], name="nz2"),
             helper.make_node("MyOp", ["r"], ["m"], name="custom", domain="com.example")]
    model = _model(nodes, [helper.make_tensor_value_info("x", F, [4])],
                   [helper.make_empty_tensor_value_info(n) for n in ("nz", "nz2", "m")],
                   [_init("k", np.array([2], "int64"))])
    model.opset_import.append(helper.make_opsetid("com.example", 1))
    with pytest.raises(UnsupportedOperatorError) as info:
        from_onnx(model)
    assert info.value.ops == {"AllClassNMS": ("nms",), "Det": ("nz1", "nz2"), "com.example::MyOp": ("custom",)}
    assert "3 operator(s)" in str(info.value) and "Det (nodes nz1, nz2)" in str(info.value)
    assert unsupported_onnx_operators(model) == info.value.ops


def test_an_input_without_shape_is_named():
    """A graph input without a shape is refused up front; node outputs are typed by the
    converters, so only the input is named."""
    model = _model([helper.make_node("Relu", ["x"], ["y"], name="relu")],
                   [helper.make_tensor_value_info("x", F, None)], [helper.make_tensor_value_info("y", F, None)])
    with pytest.raises(FrontendError, match=r"1 value\(s\) have no shape.*graph input 'x'; .*shape_dict"):
        from_onnx(model)
    assert _dims(from_onnx(model, shape_dict={"x": [5]})["main"].ret_ty) == [5]


def test_a_node_output_left_without_a_shape_by_its_converter_is_named(monkeypatch):
    """Node outputs are typed by the converters; one a converter leaves without a shape (none
    does today: they refuse run-time shapes themselves) is refused naming the node."""
    from memcore_py.frontend import _onnx_ops
    from memcore_py.ir.types import TensorType

    monkeypatch.setitem(_onnx_ops.CONVERTERS, "Relu", lambda ctx: Var("u", TensorType(None, "float32", 1)))
    model = _model([helper.make_node("Relu", ["x"], ["y"], name="relu")],
                   [helper.make_tensor_value_info("x", F, [4])], [helper.make_tensor_value_info("y", F, None)])
    with pytest.raises(FrontendError, match=r"node 'relu' \(Relu\): output 'y' has no shape"):
        from_onnx(model)


def test_an_unnamed_unknown_dimension_is_an_error():
    model = _model([helper.make_node("Relu", ["x"], ["y"], name="relu")],
                   [helper.make_tensor_value_info("x", F, [None, 4])], [helper.make_tensor_value_info("y", F, None)])
    with pytest.raises(FrontendError, match="graph input 'x': dimension 0 has neither a size nor a name"):
        from_onnx(model)


def test_bad_shape_dict_is_an_error():
    model = _model([helper.make_node("Relu", ["x"], ["y"], name="relu")],
                   [helper.make_tensor_value_info("x", F, [4])], [helper.make_tensor_value_info("y", F, None)])
    with pytest.raises(FrontendError, match="shape_dict names 'z'.*it has: 'x'"):
        from_onnx(model, shape_dict={"z": [1]})
    with pytest.raises(FrontendError, match=r"shape_dict\['x'\]: a dimension must be"):
        from_onnx(model, shape_dict={"x": [-2]})


def test_inconsistent_shapes_fail_shape_inference_with_a_typed_error():
    model = _model([helper.make_node("Add", ["x", "y"], ["z"], name="add")],
                   [helper.make_tensor_value_info("x", F, [3]), helper.make_tensor_value_info("y", F, [4])],
                   [helper.make_tensor_value_info("z", F, None)])
    with pytest.raises(FrontendError, match="ONNX shape inference failed"):
        from_onnx(model)


def test_a_computed_shape_operand_names_the_node():
    nodes = [helper.make_node("Relu", ["s"], ["s2"], name="relu"),
             helper.make_node("Cast", ["s2"], ["s3"], name="cast", to=I64),
             helper.make_node("Reshape", ["x", "s3"], ["y"], name="reshape")]
    model = _model(nodes, [helper.make_tensor_value_info("x", F, [6]), helper.make_tensor_value_info("s", F, [2])],
                   [helper.make_tensor_value_info("y", F, None)])
    with pytest.raises(FrontendError, match=r"node 'reshape' \(Reshape\): the target shape"):
        from_onnx(model, shape_dict={"x": [6], "s": [2]})


def test_load_onnx_errors_name_the_file(tmp_path):
    missing = tmp_path / "none.onnx"
    with pytest.raises(FrontendError, match="no such file"):
        load_onnx(str(missing))
    model = _model([helper.make_node("Relu", ["x"], ["y"], name="relu")],
                   [helper.make_tensor_value_info("x", F, [4])], [helper.make_tensor_value_info("y", F, None)],
                   [_init("w", np.zeros((64, 64), "float32"))])
    data = model.SerializeToString()
    cut = tmp_path / "cut.onnx"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(FrontendError, match=rf"{cut}: not (a readable ONNX model|an ONNX model)"):
        load_onnx(str(cut))
    text = tmp_path / "text.onnx"
    text.write_text("this is not protobuf")
    with pytest.raises(FrontendError, match=rf"{text}: not (a readable ONNX model|an ONNX model)"):
        load_onnx(str(text))
    good = tmp_path / "good.onnx"
    good.write_bytes(data)
    assert isinstance(from_onnx(load_onnx(str(good)))["main"].params[0], Var)


def test_lstm_variants_outside_the_supported_one_name_what_is_unsupported():
    rng = np.random.default_rng(2)
    inits = [_init("W", rng.standard_normal((1, 16, 3)).astype("float32")),
             _init("R", rng.standard_normal((1, 16, 4)).astype("float32"))]
    def lstm(**attrs):
        node = helper.make_node("LSTM", ["x", "W", "R"], ["y"], name="rnn", hidden_size=4, **attrs)
        return _model([node], [helper.make_tensor_value_info("x", F, [5, 2, 3])],
                      [helper.make_tensor_value_info("y", F, None)], inits)
    mod = from_onnx(lstm())
    assert _dims(mod["main"].ret_ty) == [5, 1, 2, 4]
    assert _ops(mod).count("relax.split") == 5  # one gate split per unrolled step
    with pytest.raises(FrontendError, match=r"node 'rnn' \(LSTM\): direction='reverse' is not supported"):
        from_onnx(lstm(direction="reverse"))
    with pytest.raises(FrontendError, match=r"clip, activations=\['Relu', 'Tanh', 'Tanh'\] is not supported"):
        from_onnx(lstm(clip=1.0, activations=["Relu", "Tanh", "Tanh"]))


def test_dim_bounds_become_the_tir_var_bound_attributes():
    model = _model([helper.make_node("Relu", ["x"], ["y"], name="relu")],
                   [helper.make_tensor_value_info("x", F, ["batch", "seq"])],
                   [helper.make_tensor_value_info("y", F, None)])
    attrs = from_onnx(model, dim_bounds={"seq": (2, 64), "batch": (1, None)})["main"].attrs
    assert attrs["tir_var_lower_bound"] == {"seq": 2, "batch": 1}
    assert attrs["tir_var_upper_bound"] == {"seq": 64}
    assert "tir_var_lower_bound" not in from_onnx(model)["main"].attrs
    with pytest.raises(FrontendError, match="dim_bounds names 'n', which no graph input has.*'batch', 'seq'"):
        from_onnx(model, dim_bounds={"n": (1, 2)})
    with pytest.raises(FrontendError, match=r"dim_bounds\['seq'\] = \(5, 2\) is not a range"):
        from_onnx(model, dim_bounds={"seq": (5, 2)})
    with pytest.raises(FrontendError, match=r"dim_bounds\['seq'\] must be \(lower, upper\)"):
        from_onnx(model, dim_bounds={"seq": 8})


def test_a_scalar_shape_value_meets_a_tensor_as_a_rank_0_int64_tensor():
    nodes = [helper.make_node("Shape", ["ids"], ["s"], name="shape"),
             helper.make_node("Gather", ["s", "one"], ["n"], name="seq_len"),
             helper.make_node("Mul", ["ids", "n"], ["y"], name="scale"),
             helper.make_node("Gather", ["s", "zero"], ["b"], name="batch"),
             helper.make_node("Add", ["ids", "b"], ["z"], name="shift")]
    model = _model(nodes, [helper.make_tensor_value_info("ids", I64, [1, "seq"])],
                   [helper.make_tensor_value_info(n, I64, None) for n in ("y", "z")],
                   [_init("one", np.array(1, "int64")), _init("zero", np.array(0, "int64"))])
    mod = _assert_outputs_typed_as_onnx(model)
    bindings = mod["main"].body.blocks[0].bindings
    ops = _ops(mod)
    assert ops[:2] == ["relax.shape_to_tensor", "relax.reshape"]  # seq as a tensor, at run time
    assert _dims(bindings[1].var.ty) == [] and bindings[1].var.ty.dtype == "int64"
    const = [a for b in bindings if getattr(getattr(b.value, "op", None), "name", "") == "relax.add"
             for a in b.value.args if isinstance(a, Constant)]
    assert len(const) == 1 and const[0].data.shape == () and int(const[0].data) == 1  # the static batch size
