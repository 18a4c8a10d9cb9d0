"""BlockBuilder and NameTable: TVM's names, emission, scopes, misuse errors."""
import random

import pytest

from memcore_py.errors import IRError
from memcore_py.ir import (
    BindingBlock,
    BlockBuilder,
    Call,
    DataflowBlock,
    DataflowVar,
    Function,
    GlobalVar,
    If,
    IRModule,
    MatchCast,
    NameTable,
    PrimFunc,
    PrimFuncParam,
    PrimVar,
    SeqExpr,
    ShapeExpr,
    TensorType,
    Tuple,
    TupleGetItem,
    TupleType,
    Var,
    VarBinding,
    get_op,
    structural_equal,
    well_formed_report,
)

F32 = TensorType((2, 3), "float32")
ADD = get_op("relax.add")
MUL = get_op("relax.multiply")


def add(a, b):
    return Call(ADD, [a, b])


# ------------------------------------------------------------------------------- NameTable
# Expected names recorded from TVM 0.27's BlockBuilder.get_unique_name on the same sequence.
TVM_SEQUENCE = [
    ("storage", "storage"), ("storage", "storage1"), ("storage", "storage2"),
    ("_", "_"), ("_", "_1"), ("_", "_2"), ("alloc", "alloc"), ("alloc", "alloc1"),
    ("lv", "lv"), ("lv1", "lv1"), ("lv", "lv2"), ("x1", "x1"), ("x", "x"), ("x", "x2"),
    ("a_1", "a_1"), ("a", "a"), ("a", "a1"), ("", "v"), ("", "v1"), ("lv0", "lv0"),
    ("lv0", "lv01"), ("9", "9"), ("9", "91"), ("storage1", "storage11"), ("storage1", "storage12"),
    ("a1", "a11"), ("a", "a2"), ("b2", "b2"), ("b", "b"), ("b", "b1"), ("b", "b3"),
    ("gv", "gv"), ("gv", "gv1"), ("9a", "9a"), ("a-b", "a-b"), ("a.b", "a_b"),
]


def test_name_table_reproduces_tvm_sequence():
    t = NameTable()
    assert [t.fresh(h) for h, _ in TVM_SEQUENCE] == [want for _, want in TVM_SEQUENCE]


def test_name_table_names_are_unique_and_deterministic():
    rng = random.Random(0)
    hints = [rng.choice(["a", "a1", "a11", "b", "_", "", "lv", "lv2"]) for _ in range(500)]
    first = [NameTable().fresh(h) for h in hints[:1]]
    t1, t2 = NameTable(), NameTable()
    names1 = [t1.fresh(h) for h in hints]
    names2 = [t2.fresh(h) for h in hints]
    assert names1 == names2
    assert len(set(names1)) == len(names1)
    assert first == [hints[0] or "v"]


def test_name_table_reserve_and_contains():
    t = NameTable()
    assert t.reserve("x")
    assert not t.reserve("x")
    assert "x" in t and "y" not in t
    assert t.fresh("x") == "x1"
    assert len(t) == 2


def test_name_table_rejects_non_str():
    with pytest.raises(IRError, match="name hint must be a str"):
        NameTable().fresh(3)


@pytest.mark.oracle
def test_name_table_matches_tvm_on_random_hints(tvm):
    from tvm import relax

    rng = random.Random(1)
    hints = [rng.choice(["s", "s1", "s11", "s2", "_", "_1", "", "x.y", "t"]) for _ in range(300)]
    bb = relax.BlockBuilder()
    want = [str(bb.get_unique_name(h)) for h in hints]
    t = NameTable()
    assert [t.fresh(h) for h in hints] == want


# ------------------------------------------------------------------------------- emission
def _simple_module(param_name="x"):
    bb = BlockBuilder()
    x = Var(param_name, F32)
    with bb.function("main", [x]):
        with bb.dataflow():
            lv = bb.emit(add(x, x))
            lv1 = bb.emit(Call(MUL, [lv, x]))
            gv = bb.emit_output(lv1)
        y = bb.emit(add(gv, gv))
        bb.emit_func_output(y)
    return bb.get()


def test_emit_names_vars_and_blocks_like_tvm():
    mod = _simple_module()
    func = mod["main"]
    df, plain = func.body.blocks
    assert isinstance(df, DataflowBlock) and isinstance(plain, BindingBlock)
    assert [b.var.name for b in df.bindings] == ["lv", "lv1", "gv"]
    assert [type(b.var) for b in df.bindings] == [DataflowVar, DataflowVar, Var]
    assert [b.var.name for b in plain.bindings] == ["gv1"]
    assert func.body.body is plain.bindings[0].var
    assert func.attrs == {"global_symbol": "main"}
    assert well_formed_report(mod) == []


def test_emit_infers_types():
    mod = _simple_module()
    for block in mod["main"].body.blocks:
        for b in block.bindings:
            assert structural_equal(b.var.ty, F32)
    assert structural_equal(mod["main"].ret_ty, F32)


def test_two_builds_are_structurally_equal_even_with_other_names():
    assert structural_equal(_simple_module("x"), _simple_module("inp"))


def test_emit_normalizes_nested_calls_to_anf():
    bb = BlockBuilder()
    x = Var("x", F32)
    with bb.function("main", [x]):
        y = bb.emit(add(Call(MUL, [x, x]), x), "y")
        bb.emit_func_output(y)
    bindings = bb.get()["main"].body.blocks[0].bindings
    assert [b.var.name for b in bindings] == ["gv", "y"]
    assert bindings[1].value.args[0] is bindings[0].var


def test_emit_func_output_binds_non_leaf_and_accepts_tuples():
    bb = BlockBuilder()
    x = Var("x", F32)
    with bb.function("f", [x]):
        bb.emit_func_output(add(x, x))
    with bb.function("g", [Var("y", F32)]) as frame:
        y = frame.params[0]
        bb.emit_func_output([y, y])
    mod = bb.get()
    f = mod["f"]
    assert f.body.body is f.body.blocks[0].bindings[0].var
    g = mod["g"]
    assert isinstance(g.body.body, Tuple) and g.body.blocks == ()
    assert isinstance(g.ret_ty, TupleType)


def test_match_cast_defines_symbolic_var():
    bb = BlockBuilder()
    x = Var("x", TensorType(ndim=1, dtype="float32"))
    n = PrimVar("n")
    with bb.function("main", [x]):
        y = bb.match_cast(x, TensorType((n,), "float32"), "y")
        z = bb.emit(ShapeExpr([n]), "z")
        bb.emit_func_output(z)
    mod = bb.get()
    b0 = mod["main"].body.blocks[0].bindings[0]
    assert isinstance(b0, MatchCast) and b0.var is y
    assert well_formed_report(mod) == []
    # The return type mentions n, which the signature does not define: erased to a rank.
    assert mod["main"].ret_ty.values is None and mod["main"].ret_ty.ndim == 1


def test_emit_normalized_keeps_binding_object():
    bb = BlockBuilder()
    x = Var("x", F32)
    v = Var("v", F32)
    binding = VarBinding(v, add(x, x))
    with bb.function("main", [x]):
        assert bb.emit_normalized(binding) is v
        assert bb.lookup_binding(v) is binding.value
        bb.emit_func_output(v)
    assert bb.get()["main"].body.blocks[0].bindings[0] is binding


def test_if_then_else_builds_branches():
    bb = BlockBuilder()
    x = Var("x", F32)
    c = Var("c", TensorType((), "bool"))
    with bb.function("main", [x, c]):
        with bb.if_then_else(c, "r") as br:
            with br.then_branch():
                t = bb.emit(add(x, x))
                br.output(Call(MUL, [t, t]))
            with br.else_branch():
                br.output(x)
        out = bb.emit(add(br.var, x))
        bb.emit_func_output(out)
    mod = bb.get()
    if_binding = mod["main"].body.blocks[0].bindings[0]
    assert isinstance(if_binding.value, If) and if_binding.var.name == "r"
    then_b = if_binding.value.true_branch
    assert [b.var.name for b in then_b.blocks[0].bindings] == ["gv", "r_then"]
    assert if_binding.value.false_branch.body is x and if_binding.value.false_branch.blocks == ()
    assert structural_equal(if_binding.var.ty, F32)
    assert well_formed_report(mod) == []


def test_if_branches_with_different_shapes_join_types():
    bb = BlockBuilder()
    x = Var("x", F32)
    y = Var("y", TensorType((4, 3), "float32"))
    c = Var("c", TensorType((), "bool"))
    with bb.function("main", [x, y, c]):
        with bb.if_then_else(c) as br:
            with br.then_branch():
                br.output(x)
            with br.else_branch():
                br.output(y)
        bb.emit_func_output(br.var)
    ty = br.var.ty
    assert ty.shape is None and ty.ndim == 2 and ty.dtype == "float32"


# ------------------------------------------------------------------------------- functions
def test_add_func_uniquifies_and_deduplicates():
    bb = BlockBuilder()
    p1 = PrimFunc([PrimFuncParam("a", "float32", (4,))], private=True)
    p2 = PrimFunc([PrimFuncParam("a", "float32", (4,))], private=True)
    p3 = PrimFunc([PrimFuncParam("a", "float32", (8,))], private=True)
    g1 = bb.add_func(p1, "exp")
    assert bb.add_func(p2, "other") is g1  # structurally equal: shared
    g3 = bb.add_func(p3, "exp")
    assert (g1.name, g3.name) == ("exp", "exp1")
    assert [gv.name for gv in bb.get().functions] == ["exp", "exp1"]


def test_function_names_share_the_name_table_like_tvm():
    # TVM: a var named "main" emitted first makes the function "main1".
    bb = BlockBuilder()
    x = Var("x", F32)
    with bb.function("main", [x]):
        v = bb.emit(add(x, x), "main")
        bb.emit_func_output(v)
    mod = bb.get()
    assert [gv.name for gv in mod.functions] == ["main1"]
    assert mod["main1"].attrs["global_symbol"] == "main"


def test_add_func_avoids_names_in_context_module():
    x = Var("x", F32)
    f = Function([x], SeqExpr([], x))
    bb = BlockBuilder(IRModule({"main": f}))
    y = Var("y", F32)
    g = Function([y], SeqExpr([BindingBlock([VarBinding(Var("z", F32), add(y, y))])], y))
    assert bb.add_func(g, "main").name == "main1"
    assert bb.name_table.fresh("main") == "main2"


def test_update_and_remove_func():
    bb = BlockBuilder()
    gv = bb.add_func(PrimFunc([PrimFuncParam("a", "float32", (4,))]), "f")
    new = PrimFunc([PrimFuncParam("a", "float32", (5,))])
    bb.update_func(gv, new)
    assert bb.get()["f"] is new
    bb.remove_func("f")
    assert len(bb.get()) == 0
    with pytest.raises(IRError, match="no function named 'f'"):
        bb.remove_func(gv)
    with pytest.raises(IRError, match="no function named 'g'"):
        bb.update_func(GlobalVar("g"), new)


def test_private_function_has_no_global_symbol():
    bb = BlockBuilder()
    x = Var("x", F32)
    with bb.function("f", [x], private=True, pure=False):
        bb.emit_func_output(x)
    f = bb.get()["f"]
    assert f.attrs == {} and not f.is_pure


def test_call_to_module_function_is_typed():
    bb = BlockBuilder()
    x = Var("x", F32)
    with bb.function("helper", [x]) as helper:
        bb.emit_func_output(bb.emit(add(x, x)))
    y = Var("y", F32)
    with bb.function("main", [y]):
        r = bb.emit(Call(helper.gv, [y]))
        bb.emit_func_output(r)
    assert structural_equal(r.ty, F32)


def test_tuple_and_get_item():
    bb = BlockBuilder()
    x = Var("x", F32)
    with bb.function("main", [x]):
        t = bb.emit(Tuple([x, Tuple([x, x])]))
        inner = bb.emit(TupleGetItem(t, 1))
        e = bb.emit(TupleGetItem(inner, 0))
        bb.emit_func_output(e)
    assert isinstance(t.ty, TupleType) and isinstance(inner.ty, TupleType)
    assert structural_equal(e.ty, F32)


# ------------------------------------------------------------------------------- misuse
def test_emit_outside_function():
    with pytest.raises(IRError, match="emit called outside a function"):
        BlockBuilder().emit(Var("x", F32))


def test_emit_output_outside_dataflow():
    bb = BlockBuilder()
    x = Var("x", F32)
    with pytest.raises(IRError, match="emit_output called outside a dataflow block"):
        with bb.function("main", [x]):
            bb.emit_output(x)


def test_function_without_output():
    bb = BlockBuilder()
    with pytest.raises(IRError, match="ended without emit_func_output"):
        with bb.function("main", [Var("x", F32)]):
            pass
    # The builder is usable again afterwards.
    x = Var("x", F32)
    with bb.function("main", [x]):
        bb.emit_func_output(x)
    assert "main" in bb.get()


def test_get_inside_open_function():
    bb = BlockBuilder()
    with pytest.raises(IRError, match="function 'main' is still open"):
        with bb.function("main", [Var("x", F32)]):
            bb.get()


def test_emit_func_output_twice_and_outside():
    bb = BlockBuilder()
    with pytest.raises(IRError, match="outside a function"):
        bb.emit_func_output(Var("x", F32))
    x = Var("x", F32)
    with pytest.raises(IRError, match="called twice"):
        with bb.function("main", [x]):
            bb.emit_func_output(x)
            bb.emit_func_output(x)


def test_emit_func_output_inside_dataflow():
    bb = BlockBuilder()
    x = Var("x", F32)
    with pytest.raises(IRError, match="inside a dataflow block"):
        with bb.function("main", [x]):
            with bb.dataflow():
                bb.emit_func_output(x)


def test_nested_function_and_nested_dataflow_rejected():
    bb = BlockBuilder()
    x = Var("x", F32)
    with pytest.raises(IRError, match="nested functions are not supported"):
        with bb.function("f", [x]):
            with bb.function("g", [x]):
                pass
    bb = BlockBuilder()
    with pytest.raises(IRError, match="dataflow blocks cannot be nested"):
        with bb.function("f", [x]):
            with bb.dataflow():
                with bb.dataflow():
                    pass


def test_bad_params():
    bb = BlockBuilder()
    x = Var("x", F32)
    with pytest.raises(IRError, match="appears twice"):
        with bb.function("f", [x, x]):
            pass
    with pytest.raises(IRError, match="must be a Var, not a DataflowVar"):
        with bb.function("f", [DataflowVar("d", F32)]):
            pass
    with pytest.raises(IRError, match="must be a Var; got int"):
        with bb.function("f", [3]):
            pass


def test_bad_values():
    bb = BlockBuilder()
    x = Var("x", F32)
    with bb.function("f", [x]):
        with pytest.raises(IRError, match="must be a Relax Expr; got int"):
            bb.emit(3)
        with pytest.raises(IRError, match="match_cast type must be a Type"):
            bb.match_cast(x, "float32")
        with pytest.raises(IRError, match="expects a VarBinding or MatchCast"):
            bb.emit_normalized(x)
        with pytest.raises(IRError, match="DataflowVar 'd' cannot be bound outside"):
            bb.emit_normalized(VarBinding(DataflowVar("d", F32), x))
        with pytest.raises(IRError, match="add_func expects a Function or PrimFunc"):
            bb.add_func(x, "g")
        bb.emit_func_output(x)
    with pytest.raises(IRError, match="context must be an IRModule"):
        BlockBuilder(mod=3)


def test_if_misuse():
    bb = BlockBuilder()
    x = Var("x", F32)
    c = Var("c", TensorType((), "bool"))
    with bb.function("f", [x, c]):
        with pytest.raises(IRError, match="has no else branch"):
            with bb.if_then_else(c, "r") as br:
                with br.then_branch():
                    br.output(x)
        with pytest.raises(IRError, match="has no result"):
            with bb.if_then_else(c, "r") as br:
                with br.then_branch():
                    pass
        with pytest.raises(IRError, match="must be called inside then_branch"):
            bb.if_then_else(c).output(x)
        with bb.dataflow():
            with pytest.raises(IRError, match="If is not allowed inside a dataflow block"):
                bb.if_then_else(c)
        bb.emit_func_output(x)


def test_if_default_name_and_branch_result_names_follow_it():
    bb = BlockBuilder()
    x = Var("x", F32)
    c = Var("c", TensorType((), "bool"))
    with bb.function("main", [x, c]):
        bb.emit(add(x, x), "gv")  # takes "gv": the If becomes gv1
        with bb.if_then_else(c) as br:
            with br.then_branch():
                br.output(add(x, x))
            with br.else_branch():
                br.output(Call(MUL, [x, x]))
        bb.emit_func_output(br.var)
    iff = br.var
    assert (br.name, iff.name) == ("gv1", "gv1")
    value = bb.get()["main"].body.blocks[0].bindings[1].value
    assert value.true_branch.body.name == "gv1_then" and value.false_branch.body.name == "gv1_else"
