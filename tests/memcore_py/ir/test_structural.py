"""structural_equal / assert_structural_equal: TVM semantics, one-field differences, messages."""
import numpy as np
import pytest

import memcore_py
from memcore_py.ir import (
    BindingBlock,
    BlockBuilder,
    Call,
    Constant,
    DataflowBlock,
    DataflowVar,
    DataTypeImm,
    ExternFunc,
    FuncType,
    Function,
    GlobalVar,
    If,
    IntImm,
    IRModule,
    MatchCast,
    ObjectType,
    PrimFunc,
    PrimFuncParam,
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
    VarBinding,
    assert_structural_equal,
    get_op,
    structural_equal,
)
from memcore_py.ir.text.prim_func_text import normalized_text
from memcore_py.ir.structural import first_mismatch
from memcore_py.testing import random_lowered_module, random_module
from _helpers import tvm_from_source

ADD = get_op("relax.add")


def T(shape, dtype="float32"):
    return TensorType(shape, dtype)


# ----------------------------------------------------------------------------- a base module
_PRIM_TEXT = "@T.prim_func(private=True)\ndef prim(a: T.handle, b: T.handle):\n    T.evaluate(0)"


def make(**change):
    """A module touching every node kind; ``change`` alters exactly one field."""
    c = dict(change)
    n = PrimVar(c.get("sym", "n"))
    x = Var(c.get("param_name", "x"), T((n, 4), c.get("param_dtype", "float32")))
    cond = Var("cond", TensorType((), "bool"))
    a = DataflowVar("a", T((n, 4)))
    gv = Var("gv", T((n, 4)))
    k = PrimVar("k")
    mc = Var("mc", c.get("mc_ty", T((k, 4))))
    tup = Var("tup", TupleType([T((n, 4)), T((n, 4))]))
    item = Var("item", T((n, 4)))
    shp = Var("shp", ShapeType((n, c.get("shape_dim", 4))))
    pk = Var("pk", ObjectType())
    alloc = Var("alloc", T((2, 3)))
    r = Var("r", T((n, 4)))
    then_v = Var("t", T((n, 4)))
    const = Constant(np.array(c.get("const", 1.5), dtype="float32"))
    df = DataflowBlock([
        VarBinding(a, Call(get_op(c.get("op", "relax.add")), [x, const if c.get("const_arg", True) else x])),
        VarBinding(gv, a),
    ])
    alloc_call = Call(
        get_op("relax.builtin.alloc_tensor"),
        [ShapeExpr([2, 3]), DataTypeImm(c.get("alloc_dtype", "float32")), PrimValue(0), StringImm(c.get("scope", "global"))],
        ty_args=(T((2, 3)),),
    )
    branch_then = SeqExpr([BindingBlock([VarBinding(then_v, Call(ADD, [gv, gv]))])], then_v)
    branch_else = SeqExpr([], gv if not c.get("else_x") else x)
    plain = BindingBlock([
        MatchCast(mc, gv, c.get("mc_ty", T((k, 4)))),
        VarBinding(tup, Tuple([gv, gv] if not c.get("tuple_swap") else [gv, mc])),
        VarBinding(item, TupleGetItem(tup, c.get("index", 0))),
        VarBinding(shp, ShapeExpr([n, c.get("shape_dim", 4)])),
        VarBinding(pk, Call(ExternFunc(c.get("symbol", "f")), [item], attrs=c.get("call_attrs"), ty_args=c.get("ty_args", ()))),
        VarBinding(alloc, alloc_call),
        VarBinding(Var("_", TupleType([])), Call(GlobalVar(c.get("callee", "prim")), [item, alloc])),
        VarBinding(r, If(cond, branch_then, branch_else)),
    ])
    attrs = {"global_symbol": "main", "relax.force_pure": True, "tir_var_upper_bound": {"n": c.get("bound", 16)}}
    func = Function([x, cond], SeqExpr([df, plain], c.get("result", r) if "result" not in c else c["result"]),
                    ret_ty=T((n, 4)), attrs=attrs, is_pure=c.get("pure", True))
    prim = PrimFunc(
        [PrimFuncParam("a", "float32", (n, 4)), PrimFuncParam("b", "float32", (2, c.get("prim_dim", 3)))],
        {"tirx.noalias": True},
        text=c.get("prim_text", _PRIM_TEXT),
        private=True,
    )
    return IRModule({"prim": prim, "main": func})


def test_equal_to_independent_copy():
    from memcore_py.ir import well_formed_report

    assert well_formed_report(make()) == []
    assert structural_equal(make(), make())
    assert_structural_equal(make(), make())


def test_names_of_params_and_symbolic_vars_do_not_matter():
    # TVM: f(x: ("n", 4)) == f(y: ("m", 4)) -- definitions are matched by position.
    assert structural_equal(make(param_name="inp", sym="m"), make())
    assert structural_equal(make(param_name="inp", sym="m"), make(), map_free_vars=False)


ONE_FIELD_CHANGES = [
    dict(param_dtype="float16"),
    dict(op="relax.multiply"),
    dict(const=2.5),
    dict(const_arg=False),
    dict(alloc_dtype="int32"),
    dict(scope="local"),
    dict(else_x=True),
    dict(mc_ty=T((PrimVar("k"), 8))),
    dict(tuple_swap=True),
    dict(index=1),
    dict(shape_dim=5),
    dict(symbol="g"),
    dict(call_attrs={"k": 1}),
    dict(ty_args=(ObjectType(),)),
    dict(callee="prim2"),
    dict(bound=32),
    dict(pure=False),
    dict(prim_dim=4),
    dict(prim_text="@T.prim_func(private=True)\ndef prim(a: T.handle, b: T.handle):\n    T.evaluate(1)"),
]


@pytest.mark.parametrize("change", ONE_FIELD_CHANGES, ids=lambda c: next(iter(c)))
def test_each_single_field_difference_is_detected(change):
    a, b = make(), make(**change)
    assert not structural_equal(a, b)
    assert not structural_equal(b, a)
    with pytest.raises(AssertionError, match="structural mismatch at"):
        assert_structural_equal(a, b)


def test_result_difference():
    base = make()
    func = base["main"]
    other = Function(func.params, SeqExpr(func.body.blocks, func.params[0]), func.ret_ty, func.attrs)
    assert not structural_equal(func, other)


def test_prim_text_whitespace_and_name_are_normalized():
    text = "@T.prim_func(private=True)\ndef prim(a: T.handle, b: T.handle):\n    T.evaluate(0)"
    other = "@T.prim_func(private=True)\ndef   renamed(a: T.handle,   b: T.handle):\n\n        T.evaluate(0)\n"
    assert normalized_text(text) == normalized_text(other)
    assert structural_equal(make(prim_text=text), make(prim_text=other))
    assert normalized_text(None) is None


def test_prim_exprs_are_compared_as_written():
    m, n = PrimVar("m"), PrimVar("n")
    assert not structural_equal(4 * (m * n), (n * m) * 4, map_free_vars=False)
    assert structural_equal(4 * (m * n), 4 * (m * n), map_free_vars=False)
    assert not structural_equal(n + 1, 1 + n)
    assert not structural_equal(IntImm(4), IntImm(4, "int32"))


def test_symbolic_vars_must_be_consistent():
    # f(x: (n, n)) != f(x: (n, m)): the second use of n must map to n.
    def f(d1, d2):
        x = Var("x", T((PrimVar(d1), PrimVar(d2))))
        return Function([x], SeqExpr([], x), ret_ty=x.ty)

    assert structural_equal(f("n", "m"), f("a", "b"))
    assert not structural_equal(f("n", "n"), f("n", "m"))
    assert not structural_equal(f("n", "m"), f("n", "n"))


def test_free_vars():
    a, b = Var("a", T((2,))), Var("b", T((2,)))
    assert structural_equal(Call(ADD, [a, a]), Call(ADD, [b, b]), map_free_vars=True)
    assert not structural_equal(Call(ADD, [a, a]), Call(ADD, [b, b]), map_free_vars=False)
    assert not structural_equal(Call(ADD, [a, b]), Call(ADD, [b, b]))
    assert structural_equal(Call(ADD, [a, b]), Call(ADD, [a, b]), map_free_vars=False)
    n, m = PrimVar("n"), PrimVar("m")
    assert structural_equal(T((n,)), T((m,)), map_free_vars=True)
    assert not structural_equal(T((n,)), T((m,)), map_free_vars=False)
    assert structural_equal(T((n,)), T((PrimVar("n"),)), map_free_vars=False)  # same name, same var


def test_var_annotation_and_kind_matter():
    x = Var("x", T((2, 3)))

    def f(var):
        return Function([x], SeqExpr([BindingBlock([VarBinding(var, Call(ADD, [x, x]))])], x), ret_ty=x.ty)

    assert not structural_equal(f(Var("y", T((2, 3)))), f(Var("y", TensorType(None, "float32", 2))))
    d = DataflowVar("y", T((2, 3)))
    g1 = Function([x], SeqExpr([DataflowBlock([VarBinding(d, Call(ADD, [x, x]))])], x), ret_ty=x.ty)
    g2 = Function([x], SeqExpr([BindingBlock([VarBinding(Var("y", T((2, 3))), Call(ADD, [x, x]))])], x), ret_ty=x.ty)
    assert not structural_equal(g1, g2)


def test_types():
    assert structural_equal(TupleType([T((2,)), ShapeType((1, 2))]), TupleType([T((2,)), ShapeType((1, 2))]))
    assert not structural_equal(ShapeType(None, 2), ShapeType(None, 3))
    assert not structural_equal(PrimType("int64"), PrimType("int32"))
    assert not structural_equal(FuncType([T((2,))], T((2,))), FuncType([T((2,))], T((2,)), purity=False))
    assert not structural_equal(TensorType((2,), "float32", vdevice="cuda:0"), TensorType((2,), "float32"))
    assert not structural_equal(ObjectType(), T((2,)))


def test_constants_by_value_or_metadata_reference():
    c1 = Constant(np.arange(6, dtype="float32").reshape(2, 3))
    c2 = Constant(np.arange(6, dtype="float32").reshape(2, 3))
    assert structural_equal(c1, c2)
    assert not structural_equal(c1, Constant(np.arange(6, dtype="float32").reshape(3, 2)))
    assert not structural_equal(c1, Constant(np.arange(6, dtype="int32").reshape(2, 3)))
    m1 = Constant(meta=("relax.expr.Constant", 0), ty=T((2, 3)))
    assert structural_equal(m1, Constant(meta=("relax.expr.Constant", 0), ty=T((2, 3))))
    assert not structural_equal(m1, Constant(meta=("relax.expr.Constant", 1), ty=T((2, 3))))
    assert not structural_equal(m1, c1)


def test_attrs_values_compared_recursively_and_strictly():
    def call(attrs):
        return Call(ADD, [], attrs=attrs)

    assert structural_equal(call({"a": [1, (2, 3)], "b": {"c": "x"}}), call({"a": (1, [2, 3]), "b": {"c": "x"}}))
    assert not structural_equal(call({"a": 1}), call({"a": True}))
    assert not structural_equal(call({"a": 1}), call({"a": 1.0}))
    assert not structural_equal(call({"a": [1, 2]}), call({"a": [1, 2, 3]}))
    assert not structural_equal(call({"a": 1}), call({"b": 1}))


def test_module_order_does_not_matter_but_names_do():
    mod = make()
    rev = IRModule(dict(reversed(list(mod.functions.items()))))
    assert structural_equal(mod, rev)
    renamed = IRModule({"prim": mod["prim"], "main2": mod["main"]})
    assert not structural_equal(mod, renamed)
    assert not structural_equal(mod, IRModule(dict(mod.functions), attrs={"a": 1}))


def test_bindings_and_blocks_directly():
    x = Var("x", T((2,)))
    b1 = VarBinding(Var("a", T((2,))), Call(ADD, [x, x]))
    b2 = VarBinding(Var("b", T((2,))), Call(ADD, [x, x]))
    assert structural_equal(b1, b2)
    assert structural_equal(BindingBlock([b1]), BindingBlock([b2]))
    assert not structural_equal(BindingBlock([b1]), DataflowBlock([b2]))
    assert not structural_equal(BindingBlock([b1]), BindingBlock([b1, b2]))
    assert not structural_equal(b1, x)
    assert structural_equal([T((2,)), x], [T((2,)), Var("z", T((2,)))])


def test_mismatch_path_names_function_block_binding_and_field():
    a, b = make(), make(scope="local")
    path, reason, lhs, rhs = first_mismatch(a, b)
    assert path == ["function 'main'", "block 1", "binding 5 ('alloc')", "value", "args[3]"]
    assert reason == "StringImm 'global' vs 'local'"
    assert (lhs.value, rhs.value) == ("global", "local")


def test_assert_message_has_path_both_sides_and_diff():
    with pytest.raises(AssertionError) as info:
        assert_structural_equal(make(), make(scope="local"))
    msg = str(info.value)
    first = msg.splitlines()[0]
    assert first == ("structural mismatch at function 'main' > block 1 > binding 5 ('alloc') > value > args[3]: "
                     "StringImm 'global' vs 'local'")
    assert "  lhs: StringImm('global')" in msg and "  rhs: StringImm('local')" in msg
    assert "--- lhs" in msg and "+++ rhs" in msg
    assert any(line.startswith("-") and 'R.str("global")' in line for line in msg.splitlines())
    assert any(line.startswith("+") and 'R.str("local")' in line for line in msg.splitlines())


def test_assert_message_for_missing_function_and_binding_count():
    mod = make()
    with pytest.raises(AssertionError, match=r"functions only in lhs: \['prim'\]; only in rhs: \[\]"):
        assert_structural_equal(mod, IRModule({"main": mod["main"]}))
    x = Var("x", T((2,)))
    blk1 = BindingBlock([VarBinding(Var("a", T((2,))), x)])
    blk2 = BindingBlock([VarBinding(Var("a", T((2,))), x), VarBinding(Var("b", T((2,))), x)])
    with pytest.raises(AssertionError, match=r"1 vs 2 bindings \(first unmatched binds 'b'\)"):
        assert_structural_equal(blk1, blk2)


def test_random_modules_equal_to_rebuilt_copies_and_not_to_other_seeds():
    for seed in range(5):
        assert structural_equal(random_module(seed, 80), random_module(seed, 80))
        assert structural_equal(random_lowered_module(seed, 80), random_lowered_module(seed, 80))
        assert not structural_equal(random_module(seed, 80), random_module(seed + 100, 80))


def test_printed_and_parsed_module_is_equal():
    mod = random_module(3, 150)
    assert_structural_equal(mod, memcore_py.parse(mod.script()))


def test_deep_function_does_not_recurse_per_binding():
    bb = BlockBuilder()
    x = Var("x", T((2,)))
    with bb.function("main", [x]):
        v = x
        for _ in range(5000):
            v = bb.emit(Call(ADD, [v, x]))
        bb.emit_func_output(v)
    import sys

    old = sys.getrecursionlimit()
    sys.setrecursionlimit(200)
    try:
        assert structural_equal(bb.get(), bb.get())
    finally:
        sys.setrecursionlimit(old)


@pytest.mark.oracle
def test_agrees_with_tvm_on_parsed_pairs():
    pytest.importorskip("tvm")
    import tvm_ffi

    base = dict(prim_text=None)
    pairs = [(make(**base), make(**base)), (make(**base), make(scope="local", **base)),
             (make(**base), make(sym="m", param_name="q", **base)), (make(**base), make(bound=32, **base)),
             (make(**base), make(index=1, **base))]
    for a, b in pairs:
        ta = tvm_from_source(a.script())
        tb = tvm_from_source(b.script())
        assert tvm_ffi.structural_equal(ta, tb) == structural_equal(a, b)
