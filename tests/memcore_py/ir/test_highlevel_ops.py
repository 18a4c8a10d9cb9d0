"""High-level Relax ops without TVM: schemas, defaults, printing, type rules (symbolic dims
included) and bad input. Expected values are TVM 0.27's (its printed text and struct info for
these calls, written down by hand); tests/oracle/test_highlevel_ops_tvm.py checks every op
against TVM itself."""
import re

import pytest

from memcore_py import parse
from memcore_py.errors import IRError, ParseError
from memcore_py.examples.models import highlevel_model_text, list_highlevel_models, load_highlevel_model
from memcore_py.ir import Call, Var
from memcore_py.ir.expr import PrimValue, ShapeExpr, Tuple
from memcore_py.ir.infer import infer_type
from memcore_py.ir.op import get_op, list_ops
from memcore_py.ir.op_schema import ABSENT, REQUIRED, Attr, convert_attr, format_float_attr, make_schema
from memcore_py.ir.prim import FloatImm, IntImm, Min, PrimVar, Sub, prove_equal
from memcore_py.ir.text.printer import format_expr
from memcore_py.ir.types import ShapeType, TensorType, TupleType

PARAMS = {
    "x": 'R.Tensor((2, 3, 4, 5), dtype="float32")',
    "img": 'R.Tensor((1, 3, 8, 8), dtype="float32")',
    "w": 'R.Tensor((4, 3, 3, 3), dtype="float32")',
    "v": 'R.Tensor((5,), dtype="float32")',
    "c": 'R.Tensor((3,), dtype="float32")',
    "ix": 'R.Tensor((2,), dtype="int64")',
    "s": 'R.Tensor(("n", 4), dtype="float32")',
    "hw": 'R.Tensor((1, 3, "ih", "iw"), dtype="float32")',
    "z": 'R.Tensor((4, 5), dtype="float32")',
}


def text_of(*lines, ret="r"):
    body = "\n".join(lines)
    used = [p for p in PARAMS if re.search(r"\b%s\b" % p, body)]
    sig = ", ".join(f"{p}: {PARAMS[p]}" for p in used)
    return f"@R.function\ndef main({sig}):\n" + "".join(f"    {ln}\n" for ln in lines) + f"    return {ret}\n"


def call_of(expr):
    """Parse ``r = expr`` and return the call (and the module)."""
    mod = parse(text_of(f"r = {expr}"))
    return mod["main"].body.blocks[0].bindings[0].value, mod


def ty_of(expr):
    mod = parse(text_of(f"r = {expr}"))
    return mod["main"].body.blocks[0].bindings[0].var.ty


def same_type(a, b):
    if type(a) is not type(b):
        return False
    if isinstance(a, TensorType):
        return (a.dtype == b.dtype and a.ndim == b.ndim and (a.shape is None) == (b.shape is None)
                and (a.shape is None or all(prove_equal(x, y) for x, y in zip(a.shape, b.shape))))
    if isinstance(a, TupleType):
        return len(a.fields) == len(b.fields) and all(same_type(x, y) for x, y in zip(a.fields, b.fields))
    if isinstance(a, ShapeType):
        return a.ndim == b.ndim
    return True


def T(shape, dtype="float32"):
    return TensorType(tuple(IntImm(d) if isinstance(d, int) else d for d in shape), dtype)


# ------------------------------------------------------------------------------ schema
def test_op_table_holds_the_importers_ops():
    ops = [n for n in list_ops() if get_op(n).schema is not None]
    assert len(ops) >= 150
    for name in ("relax.nn.conv2d", "relax.nn.batch_norm", "relax.strided_slice", "relax.take", "relax.index_tensor",
                 "relax.nn.attention", "relax.einsum", "relax.image.resize2d", "relax.nn.rms_norm", "relax.nn.dropout",
                 "relax.repeat", "relax.tile", "relax.flip", "relax.one_hot", "relax.tril", "relax.triu", "relax.topk"):
        assert name in ops


def test_attr_names_are_tvms_printing_order():
    assert get_op("relax.nn.conv2d").attr_names == (
        "strides", "padding", "dilation", "groups", "data_layout", "kernel_layout", "out_layout", "out_dtype")
    assert get_op("relax.nn.max_pool2d").attr_names == (
        "pool_size", "strides", "dilation", "padding", "ceil_mode", "count_include_pad", "layout", "out_layout")
    assert get_op("relax.nn.pad").attr_names == ("pad_width", "pad_value", "pad_mode")
    assert get_op("relax.nn.pad").schema.signature == ("data", "pad_width", "pad_mode", "pad_value")
    assert get_op("relax.strided_slice").attr_names == ("assume_inbound",)
    assert get_op("relax.strided_slice").n_args == (4, 5)
    assert get_op("relax.nn.attention").n_args == (3, 3)  # a bias makes relax.nn.attention_bias
    assert get_op("relax.nn.attention_bias").n_args == (4, 4)
    assert get_op("relax.add").attr_names == () and get_op("relax.add").n_args == (2, 2)


def test_existing_properties_are_kept():
    assert get_op("relax.add").inplace and get_op("relax.add").legalize == "add"
    assert get_op("relax.nn.relu").inplace and get_op("relax.nn.silu").inplace
    assert get_op("relax.reshape").shares_storage
    for n in ("relax.expand_dims", "relax.squeeze", "relax.permute_dims", "relax.flatten", "relax.nn.batch_flatten"):
        assert get_op(n).view_memory and not get_op(n).shares_storage
    assert not get_op("relax.nn.conv2d").view_memory and get_op("relax.nn.conv2d").pure


def test_make_schema_checks():
    with pytest.raises(IRError, match="unknown kind"):
        make_schema(("x",), (Attr("a", "complex"),))
    with pytest.raises(IRError, match="duplicate"):
        make_schema(("x",), (Attr("x", "int"),))
    with pytest.raises(IRError, match="signature"):
        make_schema(("x",), (Attr("a", "int"),), ("x",))


@pytest.mark.parametrize("kind, value, want", [
    ("int", 3, 3), ("int", IntImm(3), 3), ("int?", None, None), ("ints", 2, (2,)), ("ints", [1, 2], (1, 2)),
    ("float", 1, 1.0), ("float", 1e-5, 1e-5), ("bool", True, True), ("str", "NCHW", "NCHW"),
    ("dtype?", None, None), ("dtype", "float16", "float16"), ("int|ints", 2, 2), ("int|ints", (1, 3), (1, 3)),
    ("fimm?", 0.5, FloatImm(0.5, "float32")),
])
def test_attribute_value_kinds(kind, value, want):
    got = convert_attr("R.test", Attr("a", kind), value)
    assert got == want if not isinstance(want, FloatImm) else (got.value, got.dtype) == (want.value, want.dtype)


@pytest.mark.parametrize("kind, value", [
    ("int", True), ("int", 1.5), ("int", "1"), ("ints", [1, "a"]), ("float", "x"), ("bool", 1), ("str", 3),
    ("dtype", ""), ("dtype", None), ("int", None),
])
def test_attribute_values_of_the_wrong_kind(kind, value):
    with pytest.raises(IRError, match="R.test: attribute 'a' must be"):
        convert_attr("R.test", Attr("a", kind), value)


def test_float_attributes_print_as_tvm():
    assert format_float_attr(1e-5) == "1.0000000000000001e-05"
    assert format_float_attr(0.1) == "0.10000000000000001"
    assert format_float_attr(20.0) == "20.0" and format_float_attr(-0.75) == "-0.75"
    assert format_float_attr(float("inf")) == 'float("inf")'


# ------------------------------------------------------------------------------ defaults
def test_conv2d_defaults_and_wrapper_expansion():
    call, _ = call_of("R.nn.conv2d(img, w)")
    assert call.attrs == {"strides": (1, 1), "padding": (0, 0, 0, 0), "dilation": (1, 1), "groups": 1,
                          "data_layout": "NCHW", "kernel_layout": "OIHW", "out_layout": "NCHW", "out_dtype": None}
    assert list(call.attrs) == list(get_op("relax.nn.conv2d").attr_names)
    call, _ = call_of("R.nn.conv2d(img, w, strides=2, padding=1)")
    assert call.attrs["strides"] == (2, 2) and call.attrs["padding"] == (1, 1, 1, 1)
    call, _ = call_of("R.nn.conv2d(img, w, padding=[1, 2])")
    assert call.attrs["padding"] == (1, 2, 1, 2)
    call, _ = call_of('R.nn.conv2d(img, w, data_layout="NHWC")')
    assert call.attrs["out_layout"] == "NHWC"  # defaults to the data layout


def test_defaults_of_other_ops():
    call, _ = call_of("R.nn.batch_norm(img, c, c, c, c, axis=1)")
    assert call.attrs == {"axis": 1, "epsilon": 1e-5, "center": True, "scale": True, "momentum": 0.1, "training": True}
    call, _ = call_of("R.nn.layer_norm(x, v, v, -1)")
    assert call.attrs["axes"] == (-1,) and call.attrs["epsilon"] == 1e-5
    call, _ = call_of("R.take(x, ix, axis=1)")
    assert call.attrs == {"axis": 1, "mode": "fast"}
    call, _ = call_of("R.mean(x)")
    assert call.attrs == {"axis": None, "keepdims": False}
    call, _ = call_of("R.topk(x, 2)")
    assert call.attrs == {"k": 2, "axis": -1, "ret_type": "both", "largest": True, "dtype": "int32"}
    call, _ = call_of("R.nn.attention(img, img, img, scale=0.5)")
    assert len(call.args) == 3 and call.attrs["scale"].dtype == "float32" and call.attrs["scale"].value == 0.5
    assert call.attrs["causal_mask"] is None and call.attrs["window_size"] is None
    call, _ = call_of("R.image.resize2d(img, (4, 4))")
    assert isinstance(call.args[1], ShapeExpr)
    assert [(f.value, f.dtype) for f in call.attrs["roi"]] == [(0.0, "float32")] * 4


def test_argument_defaults_and_kinds():
    call, _ = call_of("R.arange(5)")
    assert [a.value.value for a in call.args] == [0, 5, 1] and call.attrs == {"dtype": "int64"}
    call, _ = call_of("R.arange(0.0, 1.0, 0.25)")
    assert call.attrs == {"dtype": "float32"}
    call, _ = call_of("R.eye(3)")
    assert [a.value.value for a in call.args] == [3, 3, 0] and call.attrs == {"dtype": "float32"}
    call, _ = call_of("R.tril(z)")
    assert len(call.args) == 2 and isinstance(call.args[1], PrimValue) and call.args[1].value.value == 0
    call, _ = call_of("R.strided_slice(x, [1], [0], [2])")
    assert len(call.args) == 4 and all(isinstance(a, Tuple) for a in call.args[1:])
    assert call.args[1].fields[0].value.dtype == "int64"
    call, _ = call_of("R.strided_slice(x, [1], [0], [2], [1])")
    assert len(call.args) == 5
    call, _ = call_of("R.full((2, 3), R.const(1.0, \"float32\"))")
    assert isinstance(call.args[0], ShapeExpr) and call.attrs == {"dtype": None}


def test_printing_writes_every_attribute_as_tvm():
    call, _ = call_of("R.nn.conv2d(img, w)")
    assert format_expr(call) == (
        'R.nn.conv2d(img, w, strides=[1, 1], padding=[0, 0, 0, 0], dilation=[1, 1], groups=1, data_layout="NCHW", '
        'kernel_layout="OIHW", out_layout="NCHW", out_dtype=None)')
    call, _ = call_of("R.nn.batch_norm(img, c, c, c, c, axis=1)")
    assert format_expr(call).endswith(
        "axis=1, epsilon=1.0000000000000001e-05, center=True, scale=True, momentum=0.10000000000000001, training=True)")
    call, _ = call_of("R.strided_slice(x, [1], [0], [2])")
    assert format_expr(call) == "R.strided_slice(x, (1,), (0,), (2,), assume_inbound=False)"
    call, _ = call_of("R.arange(5)")
    assert format_expr(call) == 'R.arange(0, 5, 1, dtype="int64")'
    call, _ = call_of("R.nn.attention(img, img, img, scale=0.5)")
    assert format_expr(call) == "R.nn.attention(img, img, img, scale=T.float32(0.5), causal_mask=None, window_size=None)"


def test_a_call_built_without_attributes_prints_the_defaults():
    x = Var("x", T((2, 3)))
    call = Call(get_op("relax.nn.softmax"), [x])
    assert format_expr(call) == "R.nn.softmax(x, axis=-1)"
    assert get_op("relax.nn.softmax").attr(call, "axis") == -1
    call = Call(get_op("relax.sum"), [x], {"axis": (1,)})
    assert format_expr(call) == "R.sum(x, axis=[1], keepdims=False)"


def test_convert_attrs_gives_the_parsers_representation():
    op = get_op("relax.nn.conv2d")
    got = op.convert_attrs({"strides": [IntImm(2), IntImm(2)], "padding": 1, "groups": IntImm(1)})
    call, _ = call_of("R.nn.conv2d(img, w, strides=[2, 2], padding=1)")
    assert got == call.attrs
    with pytest.raises(IRError, match="relax.nn.conv2d: attribute 'groups' must be an int"):
        op.convert_attrs({"groups": "one"})
    with pytest.raises(IRError, match="relax.nn.conv2d has no attribute 'stride'"):
        op.convert_attrs({"stride": (1, 1)})
    assert get_op("relax.call_tir").convert_attrs({"x": 1}) == {"x": 1}


def test_round_trip_keeps_every_attribute():
    text = text_of('r = R.nn.max_pool2d(img, pool_size=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1], ceil_mode=True)')
    mod = parse(text)
    again = parse(mod.script())
    a = mod["main"].body.blocks[0].bindings[0].value
    b = again["main"].body.blocks[0].bindings[0].value
    assert a.attrs == b.attrs and a.attrs["ceil_mode"] is True and a.attrs["count_include_pad"] is False


# ------------------------------------------------------------------------------ type rules
@pytest.mark.parametrize("expr, want", [
    ("R.nn.conv2d(img, w)", T((1, 4, 6, 6))),
    ("R.nn.conv2d(img, w, strides=2, padding=1)", T((1, 4, 4, 4))),
    ("R.nn.max_pool2d(img, pool_size=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1])", T((1, 3, 4, 4))),
    ("R.nn.max_pool2d(img, pool_size=[3, 3], strides=[2, 2], ceil_mode=True)", T((1, 3, 4, 4))),
    ("R.nn.adaptive_avg_pool2d(img, output_size=[1, 1])", T((1, 3, 1, 1))),
    ("R.nn.batch_norm(img, c, c, c, c, axis=1)", TupleType([T((1, 3, 8, 8)), T((3,)), T((3,))])),
    ("R.strided_slice(x, [1, 3], [0, 1], [2, 5], [1, 2])", T((2, 2, 4, 2))),
    ("R.take(x, ix, axis=1)", T((2, 2, 4, 5))),
    ("R.broadcast_to(v, R.shape([3, 5]))", T((3, 5))),
    ("R.argmax(x, axis=1)", T((2, 4, 5), "int64")),
    ("R.argmin(x, axis=-1, keepdims=True)", T((2, 3, 4, 1), "int64")),
    ("R.topk(x, k=2, axis=-1)", TupleType([T((2, 3, 4, 2)), T((2, 3, 4, 2), "int32")])),
    ("R.cumsum(x)", T((120,))),
    ("R.one_hot(ix, R.prim_value(T.float32(1.0)), R.prim_value(T.float32(0.0)), depth=5)", T((2, 5))),
    ('R.einsum((z, z), subscripts="ij,kj->ik")', T((4, 4))),
    ("R.repeat(x, 3)", T((360,))),
    ("R.tile(z, [2])", T((4, 10))),
    ("R.arange(0, 10, 3)", T((4,), "int64")),
    ("R.full((2, 3), R.const(1, \"int32\"))", T((2, 3), "int32")),
    ("R.isnan(x)", T((2, 3, 4, 5), "bool")),
    ("R.nn.dropout(x)", TupleType([T((2, 3, 4, 5)), T((2, 3, 4, 5))])),
    ("R.nn.pad(x, pad_width=[0, 0, 0, 0, 1, 1, 2, 2])", T((2, 3, 6, 9))),
    ("R.stack((x, x), axis=1)", T((2, 2, 3, 4, 5))),
    ("R.index_tensor(x, (ix, ix))", T((2, 4, 5))),
])
def test_type_rules(expr, want):
    got = ty_of(expr)
    assert same_type(got, want), f"{expr}: {got!r}"


def test_type_rules_over_symbolic_dims():
    ih, iw, n = PrimVar("ih"), PrimVar("iw"), PrimVar("n")
    got = ty_of("R.nn.conv2d(hw, w, padding=1)")
    assert prove_equal(got.shape[2], ih) and prove_equal(got.shape[3], iw) and got.shape[1].value == 4
    got = ty_of("R.nn.max_pool2d(hw, pool_size=[2, 2], strides=[2, 2])")  # (ih - 2) // 2 + 1
    assert prove_equal(got.shape[2] * 2, ((ih - 2) // 2 + 1) * 2)
    got = ty_of("R.strided_slice(s, (0,), (1,), (3,))")  # TVM: T.min(3, n) - T.min(1, n)
    assert prove_equal(got.shape[0], Sub(Min(IntImm(3), n), Min(IntImm(1), n))) and got.shape[1].value == 4
    got = ty_of("R.reshape(s, R.shape([2, -1]))")  # TVM: (2, n * 2)
    assert got.shape[1] == n * 2 or prove_equal(got.shape[1], n * 2)
    got = ty_of("R.concat((s, s))")
    assert prove_equal(got.shape[0], n * 2)
    got = ty_of("R.matmul(s, R.permute_dims(s))")
    assert prove_equal(got.shape[0], n) and prove_equal(got.shape[1], n)
    got = ty_of("R.split(s, 2)")
    assert isinstance(got, TupleType) and prove_equal(got.fields[0].shape[0] + got.fields[1].shape[0], n)
    got = ty_of("R.repeat(s, 2, axis=0)")
    assert prove_equal(got.shape[0], n * 2)


def test_op_without_a_known_layout_needs_an_annotation():
    # unannotated: the parser leaves the type open (no guess); asking for it is an IRError
    mod = parse(text_of('r = R.nn.conv2d(img, w, data_layout="NHWC")'))
    binding = mod["main"].body.blocks[0].bindings[0]
    assert binding.var.ty is None
    with pytest.raises(IRError, match="relax.nn.conv2d: the type rule supports data_layout='NCHW' only; got 'NHWC'"):
        infer_type(binding.value)
    # annotated: the annotation gives the type
    mod = parse(text_of('r: R.Tensor((1, 4, 6, 6), dtype="float32") = R.nn.conv2d(img, w, data_layout="NHWC")'))
    assert mod["main"].body.blocks[0].bindings[0].var.ty.ndim == 4


def test_type_rules_refuse_ill_typed_calls_with_ir_errors():
    x = Var("x", T((2, 3)))
    for name, args in [("relax.nn.conv2d", [x, x]), ("relax.nn.max_pool2d", [x]), ("relax.take", [x, x]),
                       ("relax.einsum", [x]), ("relax.image.grid_sample", [x, x])]:
        with pytest.raises(IRError, match=re.escape(name)):
            infer_type(Call(get_op(name), args))


# ------------------------------------------------------------------------------ bad input
def _bad(line, match):
    text = text_of(line)
    with pytest.raises(ParseError, match=match) as info:
        parse(text)
    err = info.value
    assert err.line == 3 and err.source_line.strip() == line  # the binding's line
    return err


def test_unknown_op_is_named():
    _bad("r = R.nn.conv4d(img, w)", r"unknown operator 'R.nn.conv4d'")


def test_unknown_and_misspelt_attributes():
    _bad("r = R.nn.conv2d(img, w, stride=[1, 1])", r"R.nn.conv2d: unknown attribute or argument 'stride'")
    _bad("r = R.add(x, x, axis=0)", r"R.add: unknown attribute or argument 'axis' \(its attributes: none\)")


def test_attribute_values_of_the_wrong_type():
    _bad('r = R.nn.softmax(x, axis="a")', r"R.nn.softmax: attribute 'axis' must be an int")
    _bad("r = R.nn.conv2d(img, w, groups=1.5)", r"attribute 'groups' must be an int")
    _bad('r = R.nn.layer_norm(x, v, v, axes=[-1], epsilon="big")', r"attribute 'epsilon' must be a float")
    _bad("r = R.mean(x, axis=[1], keepdims=1)", r"attribute 'keepdims' must be True or False")
    _bad("r = R.astype(x, dtype=3)", r"attribute 'dtype' must be a dtype")


def test_wrong_arity():
    _bad("r = R.nn.conv2d(img)", r"R.nn.conv2d takes 2 arguments; got 1")
    _bad("r = R.exp(x, x)", r"R.exp takes at most 1 arguments; got 2")
    _bad("r = R.strided_slice(x, [1], [0])", r"R.strided_slice takes 4 to 5 arguments; got 3")
    _bad("r = R.nn.layer_norm(x, v, v)", r"R.nn.layer_norm needs the attribute 'axes'")
    _bad("r = R.take(x, ix, 0, axis=0)", r"R.take: 'axis' given twice")


def test_arguments_of_the_wrong_kind():
    _bad("r = R.strided_slice(x, 1, 0, 2)", r"argument 'axes' must be a tuple")
    _bad('r = R.reshape(x, "a")', r"argument 'shape' must be a shape")
    _bad("r = R.clip(x, [0], 6)", r"argument 'min' must be a scalar")


def test_printer_refuses_attributes_outside_the_schema():
    x = Var("x", T((2, 3)))
    with pytest.raises(IRError, match="relax.nn.softmax has no attribute 'dim'"):
        format_expr(Call(get_op("relax.nn.softmax"), [x], {"dim": 1}))


def test_schema_markers():
    assert repr(REQUIRED) == "REQUIRED" and repr(ABSENT) == "ABSENT"


# ------------------------------------------------------------------------------ real models
_ANNOTATION = re.compile(r"^(\s+[A-Za-z_]\w*): .*? = ", re.M)


@pytest.mark.parametrize("name", ["resnet50", "bert_base", "gpt2_small", "llama_small"])
def test_high_level_models_parse_print_back_and_type_check(name):
    """TVM's importer text: parses, prints back byte for byte, and with every binding
    annotation removed our type rules give back exactly TVM's annotations."""
    assert name in list_highlevel_models()
    text = highlevel_model_text(name)
    mod = load_highlevel_model(name)
    assert mod["main"].attrs.get("num_input") == 1
    assert mod.script().rstrip("\n") == text.rstrip("\n")
    bare = _ANNOTATION.sub(r"\1 = ", text)
    assert bare.count(": R.") < text.count(": R.")
    assert parse(bare).script().rstrip("\n") == text.rstrip("\n")


def test_unknown_high_level_model():
    with pytest.raises(KeyError, match="unknown high-level model"):
        highlevel_model_text("alexnet")
