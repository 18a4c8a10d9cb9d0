"""memcore_py/ir/_block_emit.pyx: the compiled steps of ``BlockBuilder.emit`` and
``NameTable.fresh`` (the builder's behaviour itself is tested in test_builder.py)."""
import gc

import pytest

from memcore_py._compiled import load_compiled
from memcore_py.errors import IRError
from memcore_py.ir import Call, Var
from memcore_py.ir.builder import BlockBuilder
from memcore_py.ir.expr import DataflowVar, ShapeExpr, Tuple, VarBinding
from memcore_py.ir.op import get_op
from memcore_py.ir.types import TensorType

EMIT = load_compiled("memcore_py.ir._block_emit")
ADD = get_op("relax.add")


def _x(name="x"):
    return Var(name, TensorType((2, 3), "float32"))


def _typed(op, args):
    return Call(op, args, None, (), TensorType((2, 3), "float32"))


def test_normal_calls_are_typed_calls_of_leaves():
    x = _x()
    assert EMIT.is_normal_call(_typed(ADD, [x, x]))
    assert not EMIT.is_normal_call(Call(ADD, [x, x]))  # untyped: normalize_anf types it
    assert not EMIT.is_normal_call(_typed(ADD, [_typed(ADD, [x, x]), x]))
    assert not EMIT.is_normal_call(x)
    concat = get_op("relax.concat")
    assert EMIT.is_normal_call(_typed(concat, [Tuple([x, x])]))
    assert not EMIT.is_normal_call(_typed(concat, [Tuple([x, _typed(ADD, [x, x])])]))


def test_fresh_names_follow_tvms_name_supply():
    counter = {}
    names = [EMIT.fresh_name(counter, h) for h in ("x1", "x", "x", "a.b", "", "", "lv", "lv")]
    assert names == ["x1", "x", "x2", "a_b", "v", "v1", "lv", "lv1"]
    with pytest.raises(IRError, match="name hint must be a str"):
        EMIT.fresh_name({}, 3)
    assert EMIT.sanitized_hint("a.b.c") == "a_b_c"


def test_emit_binds_a_var_of_the_values_type():
    bb = BlockBuilder()
    x = _x()
    with bb.function("main", [x]):
        with bb.dataflow():
            call = _typed(ADD, [x, x])
            lv = EMIT.emit(bb, call, "")
            named = EMIT.emit(bb, Call(ADD, [lv, x]), "sum")  # untyped: typed first
            nested = EMIT.emit(bb, Call(ADD, [Call(ADD, [x, x]), x]), "")
            out = bb.emit_output(nested)
        bb.emit_func_output(out)
    assert type(lv) is DataflowVar and lv.name == "lv" and lv.ty is call.ty
    assert named.name == "sum" and named.ty.dtype == "float32"
    assert nested.name == "lv2"  # its inner call was bound first, as lv1
    assert not gc.is_tracked(lv)
    bindings = bb.get()["main"].body.blocks[0].bindings
    assert [b.var.name for b in bindings] == ["lv", "sum", "lv1", "lv2", "gv"]
    assert type(bindings[0]) is VarBinding and bindings[0].value is call


def test_emit_refuses_what_it_cannot_bind():
    bb = BlockBuilder()
    with pytest.raises(IRError, match="outside a function"):
        EMIT.emit(bb, ShapeExpr([1]), "")
    with bb.function("main", []):
        with pytest.raises(IRError, match="must be a Relax Expr"):
            EMIT.emit(bb, 3, "")
        with pytest.raises(IRError, match="name hint must be a str"):
            EMIT.emit(bb, ShapeExpr([1]), 3)
        bb.emit_func_output(ShapeExpr([1]))
