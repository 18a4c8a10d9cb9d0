"""The binding table, memcore's IR reader and StaticPlanBlockMemory's Init rule kernel: what
the reader records (items in visit order, If branches after their binding, callee
properties), the reading and rule errors (each naming the function and the binding, raised
in visit order whichever side finds them) and the kernel's token program on hand-checked
cases."""
from functools import partial

import pytest

from memcore_py import parse
from memcore_py._compiled import load_compiled
from memcore_py.analysis import storage_tokens as stk
from memcore_py.errors import PassError
from memcore_py.ir.expr import (
    BindingBlock,
    Call,
    DataTypeImm,
    Function,
    GlobalVar,
    MatchCast,
    PrimValue,
    SeqExpr,
    ShapeExpr,
    StringImm,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
)
from memcore_py.ir.module import IRModule
from memcore_py.ir.op import get_op
from memcore_py.ir.prim import IntImm
from memcore_py.ir.types import TensorType

TABLE = load_compiled("memcore_py.analysis._binding_table")
READER = load_compiled("memcore_py.analysis._ir_reader")

# codes of _binding_table.pxd
X_LEAF, X_VAR, X_TUPLE, X_GET_ITEM, X_CALL, X_IF = range(6)
I_BINDING, I_MATCH_CAST, I_RESULT = range(3)

IF_MODULE = """
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def k(A: T.handle, B: T.handle):
        T.evaluate(0)

    @R.function
    def main(x: R.Tensor((4,), "float32"), c: R.Tensor((), "bool")) -> R.Tensor((4,), "float32"):
        R.func_attr({"relax.force_pure": True})
        cls = Module
        a: R.Tensor((4,), "float32") = R.builtin.alloc_tensor(R.shape([4]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _: R.Tuple = cls.k(x, a)
        if c:
            b: R.Tensor((4,), "float32") = R.builtin.alloc_tensor(R.shape([4]), R.dtype("float32"), R.prim_value(0), R.str("global"))
            _1: R.Tuple = cls.k(a, b)
            r: R.Tensor((4,), "float32") = b
        else:
            r: R.Tensor((4,), "float32") = x
        t: R.Tuple(R.Tensor((4,), "float32"), R.Tensor((4,), "float32")) = (a, r)
        u: R.Tensor((4,), "float32") = t[1]
        return u
"""


def _read(mod):
    table = TABLE.BindingTable()
    prim = frozenset(gv.name for gv, f in mod.functions.items() if not isinstance(f, Function))
    reader = READER.IRReader(table, partial(stk.callee_flags, prim), PassError, "StaticPlanBlockMemory")
    for gv, f in mod.functions.items():
        if isinstance(f, Function):
            reader.read_function(gv.name, f.body)
    return table


def test_reader_records_items_in_visit_order_with_branches_after_their_if():
    table = _read(parse(IF_MODULE))
    kinds_blocks = [(kind, block, pos) for kind, _var, _x, block, pos, _outer in table.items()]
    # main's block 0: a, _, the If; then its branches (the parser makes each branch's last
    # binding its result: block 1 = b, _1, result b; the else branch has no block, result x);
    # t, u; main's result. A result's block is the last block read before it.
    assert kinds_blocks == [
        (I_BINDING, 0, 0), (I_BINDING, 0, 1), (I_BINDING, 0, 2),
        (I_BINDING, 1, 0), (I_BINDING, 1, 1), (I_RESULT, 1, -1),
        (I_RESULT, 1, -1),
        (I_BINDING, 0, 3), (I_BINDING, 0, 4), (I_RESULT, 1, -1),
    ]
    exprs = table.exprs()
    value_kinds = [exprs[x][0] for _k, _v, x, _b, _p, _o in table.items()]
    assert value_kinds == [X_CALL, X_CALL, X_IF, X_CALL, X_CALL, X_VAR, X_VAR, X_TUPLE, X_GET_ITEM, X_VAR]
    if_expr = exprs[table.items()[2][2]]
    assert (if_expr[2], if_expr[3]) == (1, 2)  # then / else scope ids
    assert table.scope_parent == [-1, 0, 0] and table.scope_blocks == [[0], [1], []]
    assert table.block_ifs == {0: [(2, (1, 2))]}
    # the allocation records no arguments; the kernel call records its two variables
    alloc, call = exprs[table.items()[0][2]], exprs[table.items()[1][2]]
    assert alloc[4] == [] and [exprs[k][0] for k in call[4]] == [X_VAR, X_VAR]


def test_binding_calls_finds_the_allocation_bindings_or_none_when_one_is_elsewhere():
    # a in main's block 0, b in the then branch's block 1 (items in visit order)
    table = _read(parse(IF_MODULE))
    assert table.binding_calls(TABLE.CALLEE_ALLOCATES) == [(0, 0), (1, 0)]
    assert table.binding_calls(TABLE.CALLEE_SHARES) == []
    # an allocation nested in a call's arguments or matched is not a binding's value
    x = Var("x", TensorType((4,), "float32"))
    a, alloc = _alloc("a")
    _b, nested = _alloc("b")
    out = Var("o", None)
    table = _read(_module([VarBinding(a, alloc), lambda k: VarBinding(out, Call(k, [x, nested]))], x, params=[x]))
    assert table.binding_calls(TABLE.CALLEE_ALLOCATES) is None
    table = _read(_module([MatchCast(a, alloc, a.ty)], a))
    assert table.binding_calls(TABLE.CALLEE_ALLOCATES) is None


def test_kernel_program_of_the_if_module():
    """a: used by k(x, a) in block 0, then by k(a, b) inside the branch (another block: a is
    discarded); b: used in its branch, then flows into the If's result (discarded)."""
    st = stk.analyze_storage_tokens(parse(IF_MODULE))
    assert st.program.n_tok == 0
    assert [u.binding.var.name for u in st.sites.unplanned_allocs] == ["a", "b"]


def _alloc(name, n=4):
    ty = TensorType((n,), "float32")
    call = Call(get_op("relax.builtin.alloc_tensor"),
                [ShapeExpr([IntImm(n)]), DataTypeImm("float32"), PrimValue(IntImm(0)), StringImm("global")], ty=ty)
    return Var(name, ty), call


def _module(bindings, body, params=()):
    mod = parse("""
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def k(A: T.handle, B: T.handle):
        T.evaluate(0)
""")
    functions = dict(mod.functions)
    gv = next(g for g in functions if g.name == "k")
    bindings = [b(gv) if callable(b) else b for b in bindings]
    main = Function(list(params), SeqExpr([BindingBlock(bindings)], body), body.ty)
    functions[GlobalVar("main")] = main
    return IRModule(functions)


def test_tuple_index_out_of_range_is_an_error_naming_the_binding():
    a, alloc = _alloc("a")
    t = Var("t", None)
    w = Var("w", None)
    mod = _module([VarBinding(a, alloc), VarBinding(t, Tuple([a])), VarBinding(w, TupleGetItem(t, 3))], a)
    with pytest.raises(PassError, match=r"function 'main', binding 'w': tuple index 3 applied to a value"):
        stk.analyze_storage_tokens(mod)


def test_get_item_of_a_token_is_an_error():
    a, alloc = _alloc("a")
    w = Var("w", None)
    mod = _module([VarBinding(a, alloc), VarBinding(w, TupleGetItem(a, 0))], a)
    with pytest.raises(PassError, match=r"binding 'w': tuple index 0 applied to a value that is not a tuple"):
        stk.analyze_storage_tokens(mod)


def test_nested_allocation_is_an_error():
    x = Var("x", TensorType((4,), "float32"))
    _a, alloc = _alloc("a")
    out = Var("o", None)
    mod = _module([lambda k: VarBinding(out, Call(k, [x, alloc]))], x, params=[x])
    with pytest.raises(PassError, match=r"binding 'o': R.builtin.alloc_tensor must be bound directly"):
        stk.analyze_storage_tokens(mod)


def test_matched_allocation_is_an_error():
    a, alloc = _alloc("a")
    mod = _module([MatchCast(a, alloc, a.ty)], a)
    with pytest.raises(PassError, match=r"binding 'a': R.builtin.alloc_tensor must be bound directly"):
        stk.analyze_storage_tokens(mod)


@pytest.mark.parametrize("what, value, match", [
    ("seq", lambda x: SeqExpr([], x), "a SeqExpr may only be a function body or an If branch"),
    ("function", lambda x: Function([], SeqExpr([], x), x.ty),
     "nested functions are not supported by StaticPlanBlockMemory"),
])
def test_reading_errors_name_the_function(what, value, match):
    x = Var("x", TensorType((4,), "float32"))
    v = Var("v", None)
    mod = _module([VarBinding(v, value(x))], x, params=[x])
    with pytest.raises(PassError, match=f"function 'main': {match}"):
        stk.analyze_storage_tokens(mod)


def test_errors_come_in_visit_order():
    """A rule error (the bad index) before a reading error (the nested SeqExpr) is the one
    reported, and the reading error is reported when nothing comes before it."""
    a, alloc = _alloc("a")
    t, w, v = Var("t", None), Var("w", None), Var("v", None)
    bad_index = [VarBinding(a, alloc), VarBinding(t, Tuple([a])), VarBinding(w, TupleGetItem(t, 5))]
    nested = VarBinding(v, SeqExpr([], a))
    with pytest.raises(PassError, match="tuple index 5"):
        stk.analyze_storage_tokens(_module(bad_index + [nested], a))
    with pytest.raises(PassError, match="a SeqExpr may only be"):
        stk.analyze_storage_tokens(_module([nested] + bad_index, a))


def test_shared_and_used_tokens_give_the_hand_counted_program():
    """a = alloc; v = reshape(a); k(x, v) uses a once at step 2; b = alloc; k(a, b) uses a and
    b at step 4; the result x carries nothing: both planned, a with 2 uses, b with 1."""
    x = Var("x", TensorType((4,), "float32"))
    a, alloc_a = _alloc("a")
    b, alloc_b = _alloc("b")
    v = Var("v", TensorType((4,), "float32"))
    reshape = Call(get_op("relax.reshape"), [a, ShapeExpr([IntImm(4)])], ty=v.ty)
    u1, u2 = Var("u1", None), Var("u2", None)
    mod = _module([VarBinding(a, alloc_a), VarBinding(v, reshape), lambda k: VarBinding(u1, Call(k, [x, v])),
                   VarBinding(b, alloc_b), lambda k: VarBinding(u2, Call(k, [a, b]))], x, params=[x])
    p = stk.analyze_storage_tokens(mod).program
    assert p.tok_start.tolist() == [0, 3] and p.tok_end.tolist() == [4, 4] and p.tok_refs.tolist() == [2, 1]
    assert p.ev_kind.tolist() == [0, 1, 0, 1, 1] and p.ev_tok.tolist() == [0, 0, 1, 0, 1]
