"""ExprVisitor / ExprMutator / post_order_visit."""
import sys

import pytest

from memcore_py.errors import IRError
from memcore_py.ir import (
    BlockBuilder,
    Call,
    DataflowVar,
    ExprMutator,
    ExprVisitor,
    GlobalVar,
    If,
    TensorType,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
    get_op,
    post_order_visit,
    structural_equal,
    well_formed_report,
)
from memcore_py.ir import Function
from memcore_py.ir.functor import normalize_function_blocks
from memcore_py.testing import random_lowered_module, random_module

ADD = get_op("relax.add")
MUL = get_op("relax.multiply")
EXP = get_op("relax.exp")
F32 = TensorType((2, 3), "float32")


def sample():
    bb = BlockBuilder()
    x = Var("x", F32)
    c = Var("c", TensorType((), "bool"))
    with bb.function("main", [x, c]):
        with bb.dataflow():
            a = bb.emit(Call(ADD, [x, x]), "a")
            b = bb.emit(Call(MUL, [a, x]), "b")
            out = bb.emit_output(b, "out")
        t = bb.emit(Tuple([out, x]), "t")
        g = bb.emit(TupleGetItem(t, 0), "g")
        with bb.if_then_else(c, "r") as br:
            with br.then_branch():
                br.output(bb.emit(Call(EXP, [g]), "e"))
            with br.else_branch():
                br.output(g)
        bb.emit_func_output(br.var)
    return bb.get()


class Recorder(ExprVisitor):
    def __init__(self):
        super().__init__()
        self.defs, self.uses, self.calls, self.positions = [], [], [], []

    def visit_var_def(self, var):
        self.defs.append(var.name)

    def visit_var_(self, var):
        self.uses.append(var.name)

    def visit_call_(self, call):
        self.calls.append(call.op.name)
        self.positions.append((self.block_index, self.binding_index))
        super().visit_call_(call)


def test_visitor_sees_definitions_uses_and_calls_in_order():
    r = Recorder()
    r.visit_module(sample())
    assert r.defs == ["x", "c", "a", "b", "out", "t", "g", "e", "r"]
    # ... the then-branch result `e` and the else-branch result `g` are uses too.
    assert r.uses == ["x", "x", "a", "x", "b", "out", "x", "t", "c", "g", "e", "g", "r"]
    assert r.calls == ["relax.add", "relax.multiply", "relax.exp"]
    assert r.positions == [(0, 0), (0, 1), (0, 0)]  # exp: binding 0 of the then-branch's block 0


def test_visitor_dataflow_var_hook_defaults_to_var_hook():
    seen = []

    class V(ExprVisitor):
        def visit_dataflow_var_(self, var):
            seen.append(var.name)

    V().visit_module(sample())
    assert seen == ["a", "b"]  # the DataflowVars used by multiply and by `out = b`


def test_visitor_block_hooks():
    kinds = []

    class V(ExprVisitor):
        def visit_dataflow_block_(self, block):
            kinds.append("df")
            super().visit_dataflow_block_(block)

        def visit_binding_block_(self, block):
            kinds.append("plain")
            super().visit_binding_block_(block)

    V().visit_module(sample())
    assert kinds == ["df", "plain", "plain"]  # the then-branch has a plain block


def test_post_order_visit():
    mod = sample()
    seen = []
    post_order_visit(mod["main"].body, lambda e: seen.append(type(e).__name__))
    assert seen[:4] == ["Var", "Var", "Call", "DataflowVar"]
    assert seen[-1] == "SeqExpr"
    assert "If" in seen and "Tuple" in seen and "TupleGetItem" in seen


def test_visitor_rejects_unknown_nodes():
    with pytest.raises(IRError, match="cannot visit int"):
        ExprVisitor().visit_expr(3)
    with pytest.raises(IRError, match="cannot visit str"):
        ExprMutator().visit_expr("x")


def test_identity_mutator_returns_same_objects():
    """On normalized IR the identity mutator returns its input; on any IR it only normalizes
    blocks (as every TVM mutator does), so a second run returns the first run's output."""
    mod = sample()
    assert ExprMutator().visit_module(mod) is mod
    for seed in range(5):
        lm = random_lowered_module(seed, 120)
        assert ExprMutator().visit_module(lm) is lm
        m = random_module(seed, 120)
        once = ExprMutator().visit_module(m)
        assert ExprMutator().visit_module(once) is once
        for gv, func in m.functions.items():
            if isinstance(func, Function):
                assert structural_equal(once[gv.name], normalize_function_blocks(func))


class MulToAdd(ExprMutator):
    def visit_call(self, call):
        call = super().visit_call(call)
        if call.op is MUL:
            return Call(ADD, call.args, ty=call.ty)
        return call


def test_mutator_rebuilds_only_the_changed_path():
    mod = sample()
    new = MulToAdd().visit_module(mod)
    assert new is not mod
    old_f, new_f = mod["main"], new["main"]
    old_df, old_plain = old_f.body.blocks
    new_df, new_plain = new_f.body.blocks
    assert new_df is not old_df and new_plain is old_plain  # the plain block is untouched
    assert new_df.bindings[0] is old_df.bindings[0]  # the add binding is reused
    assert new_df.bindings[1].value.op is ADD
    assert new_df.bindings[1].var is old_df.bindings[1].var  # same type: same var
    assert well_formed_report(new) == []


F16 = TensorType((2, 3), "float16")


class AddToCast(ExprMutator):
    """Changes a value's type: the var must be replaced and its uses follow."""

    def visit_call(self, call):
        call = super().visit_call(call)
        if call.op is ADD and call.args[0].name == "x":
            return Call(get_op("relax.astype"), [call.args[0]], {"dtype": "float16"}, ty=F16)
        if call.op is MUL:
            return Call(MUL, [call.args[0], call.args[0]], ty=F16)
        return call


def test_mutator_remaps_vars_whose_type_changed():
    mod = sample()
    new = AddToCast().visit_module(mod)
    df = new["main"].body.blocks[0]
    a, b = df.bindings[0].var, df.bindings[1].var
    assert isinstance(a, DataflowVar) and a.ty.dtype == "float16"
    assert a is not mod["main"].body.blocks[0].bindings[0].var
    assert df.bindings[1].value.args == (a, a)
    assert b.ty.dtype == "float16"
    assert df.bindings[2].value is b  # `out = b` follows the new b
    assert df.bindings[2].var.ty.dtype == "float16"  # rebound with its value's type


class InsertBefore(ExprMutator):
    """Emits an extra binding before every exp, through the ``out`` list."""

    def visit_binding(self, b, out):
        value = b.value
        if isinstance(value, Call) and value.op is EXP:
            arg = self.visit_expr(value.args[0])
            pre = (DataflowVar if self.in_dataflow else Var)("pre", arg.ty)
            out.append(VarBinding(pre, Call(ADD, [arg, arg], ty=arg.ty)))
            out.append(self.rebind(b, Call(EXP, [pre], ty=value.ty)))
            return
        super().visit_binding(b, out)


def test_mutator_can_emit_extra_bindings_inside_branches():
    mod = sample()
    new = InsertBefore().visit_module(mod)
    iff = new["main"].body.blocks[1].bindings[-1].value
    assert isinstance(iff, If)
    names = [b.var.name for b in iff.true_branch.blocks[0].bindings]
    assert names == ["pre", "e"]
    assert iff.false_branch is mod["main"].body.blocks[1].bindings[-1].value.false_branch
    assert well_formed_report(new) == []


class RenameGlobal(ExprMutator):
    def visit_call(self, call):
        call = super().visit_call(call)
        op = call.op
        if isinstance(op, GlobalVar) and not op.name.endswith("_x"):
            return Call(GlobalVar(op.name + "_x"), call.args, call.attrs, call.ty_args, call.ty)
        return call


def test_mutator_on_random_lowered_module_with_global_rename():
    mod = random_lowered_module(2, 200)
    new = RenameGlobal().visit_module(mod)
    names = {b.value.op.name for blk in new["main"].body.blocks for b in blk.bindings
             if isinstance(b.value, Call) and isinstance(b.value.op, GlobalVar)}
    assert names and all(n.endswith("_x") for n in names)


def test_mutator_normalizes_blocks_it_visits():
    """Empty blocks are dropped and adjacent blocks of one kind merged (TVM NormalizeBlocks)."""
    from memcore_py.ir import BindingBlock, Function, SeqExpr, VarBinding as VB

    x = Var("x", F32)
    a, b = Var("a", F32), Var("b", F32)
    blocks = [BindingBlock([VB(a, Call(ADD, [x, x], ty=F32))]), BindingBlock([]),
              BindingBlock([VB(b, Call(ADD, [a, a], ty=F32))])]
    func = Function([x], SeqExpr(blocks, b), F32)
    out = ExprMutator().visit_function(func)
    assert len(out.body.blocks) == 1
    assert [bd.var for bd in out.body.blocks[0].bindings] == [a, b]


def test_visitor_and_mutator_do_not_recurse_per_binding():
    bb = BlockBuilder()
    x = Var("x", F32)
    with bb.function("main", [x]):
        v = x
        for _ in range(3000):
            v = bb.emit(Call(ADD, [v, x]))
        bb.emit_func_output(v)
    mod = bb.get()
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(150)
    try:
        r = Recorder()
        r.visit_module(mod)
        assert len(r.calls) == 3000
        new = MulToAdd().visit_module(mod)
        assert new is mod
    finally:
        sys.setrecursionlimit(old)


def test_normal_groups_plans_tvms_normalize_blocks():
    """Empty blocks go; adjacent blocks of one kind merge, also across an emptied block; normal
    blocks are one group each; nothing in, nothing out."""
    from memcore_py.ir.functor import normal_groups

    assert normal_groups([]) == []
    assert normal_groups([("df", 2), ("plain", 1), ("df", 3)]) == [[0], [1], [2]]
    assert normal_groups([("df", 2), ("plain", 0), ("df", 3)]) == [[0, 2]]
    assert normal_groups([("plain", 0), ("df", 1), ("df", 1), ("plain", 2)]) == [[1, 2], [3]]
    assert normal_groups([("df", 0), ("plain", 0)]) == []
