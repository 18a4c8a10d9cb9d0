"""memcore_py.ir.construct builds the same nodes as the checked constructors.

Every function of ``construct.__all__`` is compared, slot by slot (every ``__slots__`` entry
of the class and its bases), with what the checked constructor builds from the same parts.
A slot added to a node class and set by its constructor but not by the unchecked function
shows up here as a missing slot; a new function without a case here fails
:func:`test_every_function_is_covered`.
"""
import pytest

from memcore_py.ir import (
    BindingBlock,
    Call,
    DataflowBlock,
    DataflowVar,
    ExternFunc,
    Function,
    GlobalVar,
    If,
    IntImm,
    IRModule,
    MatchCast,
    PrimExpr,
    PrimFunc,
    PrimFuncParam,
    PrimValue,
    PrimVar,
    SeqExpr,
    ShapeExpr,
    ShapeType,
    StringImm,
    TensorType,
    Tuple,
    TupleGetItem,
    Type,
    Var,
    VarBinding,
    get_op,
)
from memcore_py.ir import construct
from memcore_py.ir.expr import Node

T23 = TensorType((2, 3), "float32")
T4 = TensorType((4,), "int32")
N = PrimVar("n")


def slot_names(cls):
    names = []
    for k in reversed(cls.__mro__):
        for name in getattr(k, "__slots__", ()):
            if name not in names:
                names.append(name)
    return names


def assert_same_fields(got, want, path="node"):
    """``got`` and ``want`` are of one class and every slot holds the same value: the same
    object, or (for nodes, types and PrimExprs built fresh by each side) equal fields."""
    assert type(got) is type(want), f"{path}: {type(got).__name__} != {type(want).__name__}"
    for name in slot_names(type(want)):
        assert hasattr(want, name), f"{path}.{name}: not set by the checked constructor"
        assert hasattr(got, name), f"{path}.{name}: not set by the unchecked function"
        _assert_same(getattr(got, name), getattr(want, name), f"{path}.{name}")


def _assert_same(x, y, path):
    if x is y:
        return
    if isinstance(y, (Node, Type, PrimExpr, IRModule)):
        assert_same_fields(x, y, path)
    elif type(y) in (tuple, list):
        assert type(x) is type(y) and len(x) == len(y), f"{path}: {x!r} != {y!r}"
        for i, (a, b) in enumerate(zip(x, y)):
            _assert_same(a, b, f"{path}[{i}]")
    elif type(y) is dict:
        assert type(x) is dict and list(x) == list(y), f"{path}: keys {list(x)} != {list(y)}"
        for k in y:
            _assert_same(x[k], y[k], f"{path}[{k!r}]")
    else:
        assert type(x) is type(y) and x == y, f"{path}: {x!r} != {y!r}"


def parts():
    x, y = Var("x", T23), Var("y", T23)
    add = Call(get_op("relax.add"), [x, y], ty=T23)
    bind = VarBinding(Var("z", T23), add)
    seq = SeqExpr([BindingBlock([bind])], bind.var)
    return x, y, add, bind, seq


def function_and_module():
    x, _, _, bind, seq = parts()
    f = Function([x], seq, T23, {"global_symbol": "main"})
    prim = PrimFunc([PrimFuncParam("a", "float32", (2, 3))], {"tirx.noalias": True}, private=True)
    return f, IRModule({"main": f, "k": prim}, {"m": 1}, {"vdevice": ()})


def _cases():
    x, y, add, bind, seq = parts()
    cond = Var("c", TensorType((), "bool"))
    tup = Tuple([x, y])
    f, mod = function_and_module()
    other_seq = SeqExpr([], x)  # the body's type is T23, as before
    new_ty_seq = SeqExpr([], Var("w", T4))
    return {
        "new_var": [
            (lambda: construct.new_var(Var, "x", T23), lambda: Var("x", T23)),
            (lambda: construct.new_var(DataflowVar, "lv", None), lambda: DataflowVar("lv")),
        ],
        "new_call": [
            (lambda: construct.new_call(add.op, (x, y), {"axis": 0}, (T23,), T23),
             lambda: Call(add.op, [x, y], {"axis": 0}, [T23], T23)),
            (lambda: construct.new_call(add.op, (x,)), lambda: Call(add.op, [x])),
            (lambda: construct.new_call(add.op, (x,), {}), lambda: Call(add.op, (x,), {})),
        ],
        "new_binding": [(lambda: construct.new_binding(bind.var, add), lambda: VarBinding(bind.var, add))],
        "new_match_cast": [(lambda: construct.new_match_cast(bind.var, x, T23), lambda: MatchCast(bind.var, x, T23))],
        "new_block": [
            (lambda: construct.new_block(BindingBlock, [bind]), lambda: BindingBlock([bind])),
            (lambda: construct.new_block(DataflowBlock, (bind,)), lambda: DataflowBlock((bind,))),
        ],
        "new_seq": [
            (lambda: construct.new_seq([BindingBlock([bind])], bind.var), lambda: SeqExpr([BindingBlock([bind])], bind.var)),
            (lambda: construct.new_seq((), x, T4), lambda: SeqExpr((), x, T4)),
        ],
        "new_if": [
            (lambda: construct.new_if(cond, seq, seq), lambda: If(cond, seq, seq)),
            (lambda: construct.new_if(cond, seq, seq, T4), lambda: If(cond, seq, seq, T4)),
        ],
        "new_tuple": [(lambda: construct.new_tuple((x, y), tup.ty), lambda: Tuple([x, y]))],
        "new_tuple_get_item": [(lambda: construct.new_tuple_get_item(tup, 1, T23), lambda: TupleGetItem(tup, 1))],
        "new_shape_type": [(lambda: construct.new_shape_type((IntImm(2), N)), lambda: ShapeType((IntImm(2), N)))],
        "new_tensor_type": [
            (lambda: construct.new_tensor_type((IntImm(2), N), "float16"), lambda: TensorType((IntImm(2), N), "float16")),
            (lambda: construct.new_tensor_type((), "bool"), lambda: TensorType((), "bool")),
        ],
        "new_shape_expr": [
            (lambda: construct.new_shape_expr((IntImm(2), N)), lambda: ShapeExpr((IntImm(2), N))),
            (lambda: construct.new_shape_expr((N,), ShapeType((N,))), lambda: ShapeExpr((N,))),
        ],
        "new_function": [
            (lambda: construct.new_function((x,), seq, T23, {"a": 1}, False, Function([x], seq, T23, {"a": 1}, False).ty),
             lambda: Function([x], seq, T23, {"a": 1}, False)),
        ],
        "function_with_body": [
            (lambda: construct.function_with_body(f, other_seq), lambda: Function(f.params, other_seq, f.ret_ty, f.attrs, f.is_pure)),
            # a body whose type is not a base of the declared one: the body's type (TVM's mutator)
            (lambda: construct.function_with_body(f, new_ty_seq, {"b": 2}),
             lambda: Function(f.params, new_ty_seq, new_ty_seq.ty, {"b": 2}, f.is_pure)),
        ],
        "shallow_copy": [
            (lambda n=n: construct.shallow_copy(n), lambda n=n: n)
            for n in (add, tup, bind, x, ExternFunc("vm.builtin.f"), StringImm("s"), PrimValue(IntImm(1)),
                      ShapeExpr([2, N]), TupleGetItem(tup, 0), GlobalVar("g"), f, mod["k"])
        ],
        "module_with_functions": [
            (lambda: construct.module_with_functions(mod, {mod.get_global_var("main"): construct.shallow_copy(f)}),
             lambda: mod.with_functions({mod.get_global_var("main"): f})),
        ],
    }


CASES = _cases()


def test_every_function_is_covered():
    assert set(CASES) == set(construct.__all__) - {"EMPTY_ATTRS"}


@pytest.mark.parametrize(
    "name, index",
    [(name, i) for name, cases in CASES.items() for i in range(len(cases))],
    ids=lambda v: str(v),
)
def test_unchecked_builds_what_the_checked_constructor_builds(name, index):
    unchecked, checked = CASES[name][index]
    got, want = unchecked(), checked()
    if name != "module_with_functions":
        assert got is not want
    assert_same_fields(got, want)


def test_shallow_copy_is_a_distinct_node():
    _, _, add, _, _ = parts()
    copy = construct.shallow_copy(add)
    assert copy is not add and copy.args is add.args


def test_empty_attrs_is_what_a_call_without_attrs_holds():
    x = Var("x", T23)
    assert Call(get_op("relax.add"), [x, x]).attrs is construct.EMPTY_ATTRS
    assert construct.new_call(get_op("relax.add"), (x, x), {}).attrs is construct.EMPTY_ATTRS
    assert construct.EMPTY_ATTRS == {}


def test_module_with_functions_replaces_without_revalidating():
    f, mod = function_and_module()
    gv = mod.get_global_var("main")
    g = construct.shallow_copy(f)
    new = construct.module_with_functions(mod, {gv: g})
    assert new["main"] is g and mod["main"] is f and new.get_global_var("main") is gv
    assert list(new.functions) == list(mod.functions) and new.attrs == mod.attrs and new.attrs is not mod.attrs
