"""Parser tests: the node mapping conventions (see memcore_py/ir/text/parser.py) on TVM's own
printed text (tests/data/tvm_printed/) and on small hand-written inputs."""
import math

import numpy as np
import pytest

from memcore_py import parse
from memcore_py.ir import (
    Call,
    Constant,
    DataflowBlock,
    DataflowVar,
    DataTypeImm,
    ExternFunc,
    FloatImm,
    FuncType,
    Function,
    GlobalVar,
    If,
    MatchCast,
    Mul,
    ObjectType,
    PrimFunc,
    PrimType,
    PrimValue,
    PrimVar,
    SeqExpr,
    ShapeExpr,
    ShapeType,
    StringImm,
    TensorType,
    Tuple,
    TupleGetItem,
    TupleType,
    Var,
    get_op,
)
from memcore_py.ir.structural import assert_structural_equal

from _helpers import TVM_PRINTED_DIR as DATA
T23 = TensorType((2, 3), "float32")


def data(name):
    return (DATA / f"{name}.txt").read_text()


def bindings(func):
    return [b for block in func.body.blocks for b in block.bindings]


def by_name(func):
    return {b.var.name: b for b in bindings(func)}


def relax_fn(body, params='x: R.Tensor((2, 3), dtype="float32")', ret=' -> R.Tensor((2, 3), dtype="float32")', deco="@R.function"):
    lines = "\n".join("    " + line for line in body.strip("\n").split("\n"))
    return f"{deco}\ndef main({params}){ret}:\n{lines}\n"


@pytest.mark.parametrize("path", sorted(DATA.glob("*.txt")), ids=lambda p: p.stem)
def test_every_tvm_printed_file_parses(path):
    mod = parse(path.read_text())
    assert "main" in mod


# ------------------------------------------------------------------------------ lowered forms
def test_call_tir_rewrite_output_mapping():
    mod = parse(data("6_1_chain_lowered"))
    main = mod["main"]
    assert main.attrs == {"global_symbol": "main", "relax.force_pure": True}
    b = by_name(main)
    alloc = b["alloc"]
    assert alloc.value.op is get_op("relax.builtin.alloc_tensor")
    shape, dtype, dev, scope = alloc.value.args
    assert isinstance(shape, ShapeExpr) and [d.value for d in shape.values] == [2, 3]
    assert isinstance(dtype, DataTypeImm) and dtype.value == "float32"
    assert isinstance(dev, PrimValue) and dev.value.value == 0 and dev.value.dtype == "int64"
    assert isinstance(scope, StringImm) and scope.value == "global"
    # TVM prints ty_args=(R.Tensor(...),): kept, and equal to the binding annotation
    assert alloc.value.ty_args == (alloc.var.ty,)
    dps = bindings(main)[1]
    assert dps.var.name == "_" and dps.var.ty == dps.var.ty and isinstance(dps.var.ty, TupleType) and dps.var.ty.fields == ()
    assert isinstance(dps.value.op, GlobalVar) and dps.value.op.name == "add"
    assert dps.value.op is mod.get_global_var("add")
    assert [a.name for a in dps.value.args] == ["x", "x", "alloc"]
    assert b["y"].value is alloc.var


def test_alloc_tensor_ty_args_derived_when_not_printed():
    mod = parse(relax_fn('a: R.Tensor((2, 3), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("float32"), 0)\nreturn a'))
    (b,) = bindings(mod["main"])
    assert b.value.ty_args == (b.var.ty,)
    assert b.value.args[3].value == "global"  # TVM's default scope
    mod = parse(relax_fn('a = R.builtin.alloc_tensor(R.shape([2, 3]), "float32", 0, "local")\nreturn a'))
    (b,) = bindings(mod["main"])
    assert isinstance(b.value.args[1], DataTypeImm) and isinstance(b.value.args[3], StringImm)
    assert_structural_equal(b.value.ty_args[0], T23)
    assert_structural_equal(b.var.ty, T23)


def test_planned_and_killed_forms():
    main = parse(data("6_1_chain_killed"))["main"]
    b = bindings(main)
    storage = b[0]
    assert storage.var.name == "storage" and isinstance(storage.var.ty, ObjectType)
    assert storage.value.op is get_op("relax.memory.alloc_storage")
    assert [type(a) for a in storage.value.args] == [ShapeExpr, PrimValue, StringImm, DataTypeImm]
    kills = [x for x in b if isinstance(x.value, Call) and getattr(x.value.op, "name", "").startswith("relax.memory.kill")]
    assert len(kills) == 6
    assert all(k.var.name == "_" and k.var.ty.fields == () for k in kills)
    assert main.body.body.name == "alloc3"
    names = [x.var.name for x in b]
    assert "storage_1" in names  # TVM's printer renamed the second 'storage'


def test_dataflow_blocks_and_call_tir_inplace():
    mod = parse(data("6_4_inplace_after"))
    main = mod["main"]
    (block,) = main.body.blocks
    assert isinstance(block, DataflowBlock)
    kinds = {b.var.name: type(b.var) for b in block.bindings}
    assert kinds["g"] is Var and all(kinds[n] is DataflowVar for n in "abcdef")
    b = by_name(main)["b"].value
    assert b.op is get_op("relax.call_tir_inplace")
    gv, args = b.args
    assert gv is mod.get_global_var("multiply_inplace")
    assert isinstance(args, Tuple) and [a.name for a in args.fields] == ["a", "a"]
    assert b.attrs == {"inplace_indices": (1,)}
    assert_structural_equal(b.ty_args[0], T23)
    assert isinstance(mod["relu_inplace"], PrimFunc) and mod["relu_inplace"].private


def test_call_tir_unannotated_binding_gets_out_type():
    main = parse(data("x_call_tir_dataflow"))["main"]
    b = by_name(main)
    a = b["a"]
    assert a.value.op is get_op("relax.call_tir") and len(a.value.args) == 2
    assert a.var.ty is a.value.ty_args[0]
    t = b["t"]
    assert isinstance(t.value.ty_args[0], TupleType) and len(t.value.ty_args[0].fields) == 2
    assert t.var.ty is t.value.ty_args[0]
    c = b["c"].value
    assert c.op is get_op("relax.call_dps_packed") and isinstance(c.args[0], ExternFunc) and c.args[0].global_symbol == "my_ext"
    assert b["f"].value.attrs == {"axis": (0,), "keepdims": True}
    assert b["g"].value.attrs == {"dtype": "float16"}


def test_if_branches():
    main = parse(data("6_5_kill_if_after"))["main"]
    r = by_name(main)["r"]
    assert isinstance(r.value, If)
    then, other = r.value.true_branch, r.value.false_branch
    assert isinstance(then, SeqExpr) and then.body.name == "u"
    assert [x.var.name for x in bindings(Function([], then))] == ["t", "u", "_"]
    assert other.body.name == "r_else"
    assert_structural_equal(r.var.ty, T23)
    assert r.value.cond.name == "c"


def test_if_branch_tuple_result_and_scoping():
    text = relax_fn(
        "if c:\n    y: R.Tensor((2, 3), dtype=\"float32\") = x\n    r = y, y\nelse:\n    r = x, x\nreturn r",
        params='x: R.Tensor((2, 3), dtype="float32"), c: R.Tensor((), dtype="bool")',
        ret="",
    )
    r = bindings(parse(text)["main"])[0]
    assert isinstance(r.value.true_branch.body, Tuple)
    assert_structural_equal(r.var.ty, TupleType([T23, T23]))
    with pytest.raises(Exception, match="undefined variable 'y'"):
        parse(text.replace("return r", "return y"))


def test_match_cast_symbolic_vars_and_prim_values():
    main = parse(data("x_if_match_cast"))["main"]
    b = by_name(main)
    a = b["a"]
    assert isinstance(a, MatchCast)
    k, j = a.ty.shape
    assert isinstance(k, PrimVar) and k.name == "k" and j.name == "j"
    assert a.var.ty is a.ty
    n = main.params[0].ty.shape[0]
    assert isinstance(n, PrimVar) and n.name == "n"
    s = b["s"]
    assert isinstance(s.value, ShapeExpr) and isinstance(s.value.values[0], Mul)
    assert s.value.values[0].a is k and s.value.values[1] is n  # one PrimVar per name per function
    p = b["p"]
    assert isinstance(p.value, PrimValue) and isinstance(p.var.ty, PrimType) and p.var.ty.dtype == "int64"
    g, h = b["g"], b["h"]
    assert isinstance(g.value, TupleGetItem) and g.value.index == 1 and isinstance(h.value, TupleGetItem)


def test_typevars_are_per_function_prim_vars():
    mod = parse(data("6_3_dynamic_lowered"))
    n_main = mod["main"].params[0].ty.shape[0]
    assert isinstance(n_main, PrimVar) and n_main.name == "n"
    prim = mod["tir_exp"]
    assert prim.params[0].shape[0].name == "n" and prim.params[0].shape[0] is not n_main
    assert prim.params[0].shape[1].dtype == "int64" and prim.params[0].shape[1].value == 4
    assert mod["main"].attrs["tir_var_upper_bound"] == {"n": 128}


def test_string_dims_and_body_declarations():
    text = relax_fn(
        'n = T.int64()\ny: R.Tensor((n * 2, 4), dtype="float32") = R.concat((x, x), axis=0)\nreturn y',
        params='x: R.Tensor(("n", 4), dtype="float32")',
        ret=' -> R.Tensor(("n * 2", 4), dtype="float32")',
    )
    main = parse(text)["main"]
    n = main.params[0].ty.shape[0]
    assert isinstance(n, PrimVar)
    ret = main.ret_ty.shape[0]
    assert isinstance(ret, Mul) and ret.a is n and ret.b.value == 2
    y = bindings(main)[0]
    assert y.var.ty.shape[0].a is n


def test_constants_and_non_finite_forms():
    main = parse(data("x_constants"))["main"]
    consts = [a for b in bindings(main) for a in ([b.value] + list(getattr(b.value, "args", ()))) if isinstance(a, Constant)]
    values = [c.data.item() for c in consts if c.data is not None and c.data.ndim == 0]
    assert values[0] == 1.0 and values[1] == -math.inf and math.isnan(values[2])
    assert consts[0].data.dtype == np.float32
    for form in ('R.const("-inf", "float32")', 'R.const(float("-inf"), "float32")', 'R.const(-float("inf"), "float32")'):
        mod = parse(relax_fn(f"y: R.Tensor((), dtype=\"float32\") = {form}\nreturn y", ret=""))
        c = bindings(mod["main"])[0].value
        assert c.data.item() == -math.inf and c.data.dtype == np.float32
    c = bindings(parse(relax_fn('y = R.const([[1, 2], [3, 4]], "int32")\nreturn y', ret=""))["main"])[0].value
    assert c.data.tolist() == [[1, 2], [3, 4]] and c.data.dtype == np.int32


def test_bare_numbers_are_constants_unless_annotated_prim():
    b = by_name(parse(relax_fn("a = 7\nb = 1.5\nc = True\nd: T.int32 = 7\ne: T.float32 = 2\nreturn x"))["main"])
    assert isinstance(b["a"].value, Constant) and b["a"].value.data.dtype == np.int32  # as TVM: R.const(7)
    assert b["b"].value.data.dtype == np.float32 and b["c"].value.data.dtype == np.bool_
    assert isinstance(b["d"].value, PrimValue) and b["d"].value.value.dtype == "int32"
    assert isinstance(b["e"].value.value, FloatImm) and b["e"].value.value.dtype == "float32"


def test_metadata_references():
    text = relax_fn(
        'c: R.Tensor((2, 3), dtype="float32") = metadata["relax.expr.Constant"][0]\n'
        'y: R.Tensor((2, 3), dtype="float32") = R.add(x, metadata["ir.GenericConst"][1])\nreturn y'
    )
    b = by_name(parse(text)["main"])
    c = b["c"].value
    assert c.data is None and c.meta == ("relax.expr.Constant", 0) and c.ty is b["c"].var.ty
    inner = b["y"].value.args[1]
    assert inner.meta == ("ir.GenericConst", 1) and isinstance(inner.ty, TensorType) and inner.ty.ndim == -1
    arr = np.arange(6, dtype="float32").reshape(2, 3)
    b = by_name(parse(text, metadata={"relax.expr.Constant": [arr], "ir.GenericConst": [arr, arr * 2]})["main"])
    assert b["c"].value.data is arr and b["c"].value.meta == ("relax.expr.Constant", 0)
    inner = b["y"].value.args[1]
    assert inner.data.tolist() == (arr * 2).tolist()
    assert_structural_equal(inner.ty, T23)


def test_packed_calls_and_vm_ops():
    main = parse(data("x_lowered_vm"))["main"]
    b = by_name(main)
    assert not main.is_pure
    t = b["t"].value
    assert t.op is get_op("relax.vm.alloc_tensor") and len(t.args) == 5
    u = b["u"].value
    assert isinstance(u.op, ExternFunc) and u.op.global_symbol == "vm.builtin.reshape"
    assert_structural_equal(u.ty_args[0], TensorType((3, 2), "float32"))
    pure = b["b"].value
    assert pure.op is get_op("relax.call_pure_packed") and pure.args[0].global_symbol == "my_pure"
    ip = b["ip"].value
    assert ip.op is get_op("relax.call_inplace_packed") and ip.attrs == {"inplace_indices": (0,)}
    pk = b["pk"].value
    assert [type(a) for a in pk.args] == [Var, PrimValue, PrimValue, StringImm, DataTypeImm]
    assert isinstance(b["nv"].value, Call) and b["nv"].value.op is get_op("relax.null_value")
    statements = [x for x in bindings(main) if x.var.name == "_"]
    assert [s.value.op.name for s in statements] == [
        "relax.vm.call_tir_dyn", "relax.memory.kill_tensor", "relax.memory.kill_storage", "relax.vm.kill_object"
    ]
    dyn = statements[0].value
    assert isinstance(dyn.args[0], GlobalVar) and isinstance(dyn.args[1], Tuple)


def test_functions_privacy_calls_and_types():
    mod = parse(data("x_functions"))
    assert mod.attrs == {"attr": 10}
    helper = mod["helper"]
    assert "global_symbol" not in helper.attrs
    assert mod["main"].attrs["global_symbol"] == "main"
    other = mod["other"]
    assert other.attrs["tir_non_negative_var"] == ("n",) and other.attrs["num_input"] == 1
    f = other.params[1]
    assert isinstance(f.ty, FuncType) and f.ty.purity and len(f.ty.params) == 1
    y = bindings(other)[0]
    assert y.value.op is f
    main = mod["main"]
    assert isinstance(main.params[1].ty, ObjectType) and main.params[2].ty.ndim == 2
    t = bindings(main)[0]
    assert t.value.op is mod.get_global_var("helper")
    assert isinstance(t.value.args[1], PrimValue)
    assert isinstance(t.var.ty.fields[1], PrimType)
    st = by_name(main)["st"]
    assert isinstance(st.var.ty, ObjectType) and isinstance(st.value, StringImm)  # I.StringType()


def test_prim_func_signature_attrs_and_text():
    text = data("6_1_chain_lowered")
    add = parse(text)["add"]
    assert add.private
    assert add.attrs == {"tirx.noalias": True}
    assert [(p.name, p.dtype, [d.value for d in p.shape]) for p in add.params] == [
        ("x", "float32", [2, 3]), ("x_1", "float32", [2, 3]), ("T_add", "float32", [2, 3])
    ]
    assert all(d.dtype == "int64" for p in add.params for d in p.shape)
    lines = text.split("\n")
    start = next(i for i, line in enumerate(lines) if "def add(" in line) - 1
    end = next(i for i in range(start + 2, len(lines)) if lines[i].strip() == "")
    expected = "\n".join(line[4:] for line in lines[start:end]) + "\n"
    assert add.text == expected
    assert add.text.startswith("@T.prim_func(private=True, s_tir=True)\ndef add(")


def test_prim_func_extent_by_indentation_and_scalar_params():
    text = """
@I.ir_module
class Module:
    @T.prim_func
    def f(a: T.handle, n: T.int64, b: T.Buffer((n, 4), "int32", offset_factor=1)):
        T.func_attr({"global_symbol": "f", "k": [1, 2]})
# a comment at column 0 does not end the function
        for i in range(n):

            b[i, 0] = 0
    @R.function(private=True)
    def g(x: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
        return x
"""
    mod = parse(text)
    f = mod["f"]
    assert not f.private
    assert [(p.name, p.dtype, p.shape) for p in f.params[:2]] == [("a", "handle", None), ("n", "int64", None)]
    assert f.params[2].dtype == "int32" and f.params[2].shape[0].name == "n" and f.params[2].shape[1].dtype == "int32"
    assert f.attrs == {"global_symbol": "f", "k": (1, 2)}
    assert f.text.split("\n")[-2] == "        b[i, 0] = 0" and "# a comment at column 0" in f.text
    assert "global_symbol" not in mod["g"].attrs


def test_signature_only_prim_func_text_reads_back_as_none():
    text = """
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def f(A: T.Buffer((T.int64(2),), "float32")):
        T.evaluate(0)
"""
    assert parse(text)["f"].text is None
    assert parse(text.replace("T.evaluate(0)", "T.evaluate(1)"))["f"].text is not None


def test_bare_function_is_wrapped_in_a_module():
    mod = parse(relax_fn('y: R.Tensor((2, 3), dtype="float32") = R.add(x, x)\nreturn y'))
    assert [gv.name for gv in mod.functions] == ["main"]
    assert mod["main"].attrs == {"global_symbol": "main"}
    prim = parse('@T.prim_func\ndef k(A: T.Buffer((4,), "float32")):\n    T.evaluate(0)\n')
    assert isinstance(prim["k"], PrimFunc)


def test_unannotated_types_follow_tvm():
    text = relax_fn(
        "a = R.add(x, x)\n"
        "t = (a, x)\n"
        "g = t[1]\n"
        "s = R.shape([2, 3])\n"
        "p = R.prim_value(1)\n"
        'k = R.call_packed("f", x, ty_args=R.Tensor((2, 3), "float32"))\n'
        'o = R.call_packed("g", x)\n'
        "R.memory.kill_tensor(a)\n"
        "return g",
        deco="@R.function(pure=False)",
    )
    b = bindings(parse(text)["main"])
    types = {x.var.name: x.var.ty for x in b}
    assert_structural_equal(types["a"], T23)
    assert_structural_equal(types["t"], TupleType([T23, T23]))
    assert_structural_equal(types["g"], T23)
    assert_structural_equal(types["s"], ShapeType((2, 3)))
    assert isinstance(types["p"], PrimType) and types["p"].value is None
    assert_structural_equal(types["k"], T23)
    assert isinstance(types["o"], ObjectType)
    assert b[-1].var.name == "_" and b[-1].var.ty.fields == ()


def test_global_infos_vdevice():
    text = """
@I.ir_module
class Module:
    I.module_global_infos({"vdevice": [I.vdevice({"kind": "llvm", "keys": ["cpu"]}, 0, "global")]})
    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32", vdevice="llvm:0:global")) -> R.Tensor((2, 3), dtype="float32", vdevice="llvm:0:global"):
        return x
"""
    mod = parse(text)
    (vd,) = mod.global_infos["vdevice"]
    assert vd.memory_scope == "global" and vd.vdevice_id == 0 and vd.target["kind"] == "llvm"
    assert mod["main"].params[0].ty.vdevice == "llvm:0:global"


def test_real_models_parse():
    from memcore_py.examples.models import list_models, model_text

    for name in list_models():
        mod = parse(model_text(name))
        main = mod["main"]
        allocs = [b for b in bindings(main) if isinstance(b.value, Call) and b.value.op is get_op("relax.builtin.alloc_tensor")]
        assert allocs and all(b.value.ty_args == (b.var.ty,) for b in allocs)


def test_crlf_bytes_and_tabs():
    text = relax_fn('y: R.Tensor((2, 3), dtype="float32") = R.add(x, x)\nreturn y')
    ref = parse(text)
    assert_structural_equal(parse(text.replace("\n", "\r\n")), ref)
    assert_structural_equal(parse(text.encode()), ref)
    assert_structural_equal(parse(text.replace("    ", "\t")), ref)


def test_multi_line_expressions_and_comments():
    text = relax_fn(
        "y: R.Tensor((2, 3), dtype=\"float32\") = R.add(  # a comment\n"
        "    x,\n"
        "    x,  # another\n"
        ")\n"
        "# a full-line comment\n"
        "return y"
    )
    (b,) = bindings(parse(text)["main"])
    assert b.value.op is get_op("relax.add") and len(b.value.args) == 2


def test_empty_dataflow_block_and_r_output():
    text = relax_fn("with R.dataflow():\n    a = R.add(x, x)\n    R.output()\nreturn x")
    (block,) = parse(text)["main"].body.blocks
    assert isinstance(block, DataflowBlock) and isinstance(block.bindings[0].var, DataflowVar)


def test_annotation_with_spaced_keyword_falls_back_to_token_split():
    text = relax_fn('y: R.Tensor((2, 3), dtype = "float32") = R.add(x, x)\nreturn y')
    (b,) = bindings(parse(text)["main"])
    assert_structural_equal(b.var.ty, T23)


def test_parsed_types_are_shared():
    main = parse(data("6_1_chain_lowered"))["main"]
    tys = {id(b.var.ty) for b in bindings(main) if isinstance(b.var.ty, TensorType)}
    assert len(tys) == 1
