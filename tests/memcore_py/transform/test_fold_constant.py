"""FoldConstant's rule (memcore_py.transform.fold_constant), alone and as LowerForPlanning
applies it: each program is lowered by memcore and by TVM's LegalizeOps + FoldConstant +
RewriteDataflowReshape, and the kernels left (input and output types, binding order) must
be TVM's."""
from __future__ import annotations

import pytest

import memcore_py
from memcore_py.ir.expr import Call, Constant, Function, Tuple
from memcore_py.ir.prim import IntImm
from memcore_py.ir.text.prim_func_text import format_prim
from memcore_py.ir.types import TensorType, TupleType
from memcore_py.transform.fold_constant import (MAX_FOLD_ELEMENTS, folded_constant, folds, should_be_folded,
                                                static_shape)
from memcore_py.transform.lower_for_planning import lower_for_planning
from _helpers import tvm_call_tir_bindings, tvm_from_source


def _t(*dims, dtype="float32"):
    return TensorType(tuple(IntImm(d) if isinstance(d, int) else d for d in dims), dtype)


def _c(*dims):
    return Constant(None, _t(*dims), meta=("relax.expr.Constant", 0))


def test_creation_kernels_fold_up_to_max_fold_elements():
    assert MAX_FOLD_ELEMENTS == 1024
    assert should_be_folded(False, _t(32, 32))
    assert not should_be_folded(False, _t(32, 33))
    assert should_be_folded(True, _t(64, 64))  # a kernel with inputs: any size
    assert should_be_folded(False, _t(0, 4096))  # a zero dim: TVM folds
    assert should_be_folded(False, TupleType([_t(64, 64)]))  # tuple outputs: no size check


def test_folds_needs_constant_inputs_and_static_outputs():
    from memcore_py.ir.expr import DataflowVar
    from memcore_py.ir.prim import PrimVar

    assert folds([_c(4), _c(4)], _t(4))
    assert not folds([_c(4), DataflowVar("v", _t(4))], _t(4))
    assert not folds([_c(4)], _t(PrimVar("s", "int64"), 4))
    assert static_shape(_t(2, 3)) == (2, 3) and static_shape(_t(PrimVar("s", "int64"))) is None
    assert not folds([], _t(64, 64)) and folds([], _t(8, 8))


def test_folded_constant_of_a_tuple_numbers_its_fields():
    value, nxt = folded_constant(TupleType([_t(2), _t(3)]), 5)
    assert type(value) is Tuple and nxt == 7
    assert [f.meta for f in value.fields] == [("relax.expr.Constant", 5), ("relax.expr.Constant", 6)]
    assert all(f.data is None for f in value.fields)


def _program(params: str, pre: str, body: str, ret: str) -> str:
    lines = "".join(f"            {ln.strip()}\n" for ln in body.strip().split("\n"))
    pre_lines = "".join(f"        {ln.strip()}\n" for ln in pre.strip().split("\n") if ln.strip())
    return ("# from typing import TypeVar\n# from tvm.script import ir as I\n# from tvm.script import relax as R\n\n"
            's = TypeVar("s")\n@I.ir_module\nclass Module:\n    @R.function\n'
            f"    def main({params}):\n{pre_lines}        with R.dataflow():\n{lines}"
            f"            R.output({ret})\n        return {ret}\n").replace("'", '"')


X = "x: R.Tensor((4, 8), 'float32')"
#: ``(params, bindings before the dataflow block, dataflow bindings, output)``.
CASES = {
    "creation_at_limit": (X, "", "a = R.zeros(R.shape([32, 32]), 'float32')\nb = R.exp(a)\nc = R.sum(b)\n"
                          "y = R.add(x, c)", "y"),
    "creation_over_limit": (X, "", "a = R.zeros(R.shape([32, 33]), 'float32')\nb = R.exp(a)\nc = R.sum(b)\n"
                            "y = R.add(x, c)", "y"),
    "large_kernel_of_a_constant": (X, "", "c = R.full(R.shape([]), R.const(1.0, 'float32'), 'float32')\n"
                                   "d = R.broadcast_to(c, R.shape([64, 64]))\ne = R.sum(d)\ny = R.add(x, e)", "y"),
    "non_dataflow_var_bound_to_a_constant": (X, "c = R.const(2.0, 'float32')", "d = R.exp(c)\ny = R.add(x, d)", "y"),
    "folded_scalar_stays_an_input": (X, "", "e = R.full(R.shape([]), R.const(1.0, 'float32'), 'float32')\n"
                                     "y = R.add(x, e)\nz = R.multiply(y, R.const(3.0, 'float32'))", "z"),
    "index_tensor_never_folds": (X, "", "i = R.arange(0, 2, 1, 'int64')\n"
                                 "k = R.index_tensor(R.const([[1.0, 2.0], [3.0, 4.0]], 'float32'), (i, i))\n"
                                 "m = R.sum(k)\ny = R.add(x, m)", "y"),
    "tuple_output_folds_its_items_do_not": (X, "", "f = R.full(R.shape([4, 8]), R.const(1.0, 'float32'), 'float32')\n"
                                            "t = R.split(f, 2, axis=1)\nt0 = t[0]\nt1 = t[1]\n"
                                            "c = R.concat((t1, t0), axis=1)\ny = R.add(x, c)", "y"),
    "causal_mask_where": (X, "", "r = R.arange(0, 8, 1, 'int64')\nq = R.arange(0, 4, 1, 'int64')\n"
                          "q2 = R.expand_dims(q, axis=[1])\nm = R.less_equal(r, q2)\n"
                          "w = R.where(m, R.const(0.0, 'float32'), R.const(-1e9, 'float32'))\ny = R.add(x, w)", "y"),
    "position_ids_cast": ("x: R.Tensor((8, 4), 'float32'), e: R.Tensor((16, 4), 'float32')", "",
                          "p = R.arange(0, 8, 1, 'int64')\nq = R.astype(p, 'int32')\n"
                          "t = R.take(e, q, axis=0)\ny = R.add(x, t)", "y"),
    "symbolic_output_not_folded": ("x: R.Tensor((s, 8), 'float32')", "",
                                   "f = R.full(R.shape([s, 8]), R.const(1.0, 'float32'), 'float32')\n"
                                   "y = R.add(x, f)", "y"),
}


def _memcore_kernels(mod) -> list:
    out = []
    for f in mod.functions.values():
        if isinstance(f, Function):
            for blk in f.body.blocks:
                for b in blk.bindings:
                    v = b.value
                    if type(v) is Call and getattr(v.op, "name", "") == "relax.call_tir":
                        out.append((tuple(_mc_type(a.ty) for a in v.args[1].fields), _mc_type(v.ty_args[0])))
    return out


def _mc_type(t):
    if isinstance(t, TupleType):
        return tuple(_mc_type(f) for f in t.fields)
    return t.dtype, tuple(d.value if type(d) is IntImm else format_prim(d, tir=True) for d in t.shape)


def _tvm_kernels(tvm, mod) -> list:
    from tvm import relax

    def ty(t):
        if isinstance(t, relax.TupleType):
            return tuple(ty(f) for f in t.fields)
        return str(t.dtype), tuple(int(d) if isinstance(d, tvm.tirx.IntImm) else str(d) for d in t.shape.values)

    return [(tuple(ty(a.ty) for a in v.args[1].fields), ty(v.ty)) for _b, v in tvm_call_tir_bindings(mod)]


@pytest.mark.parametrize("case", sorted(CASES))
def test_lowering_folds_what_tvms_fold_constant_folds(case):
    tvm = pytest.importorskip("tvm")
    from tvm import relax

    text = _program(*CASES[case])
    t = relax.transform
    theirs = tvm.transform.Sequential([t.LegalizeOps(), t.FoldConstant(), t.RewriteDataflowReshape()])(
        tvm_from_source(text))
    ours = lower_for_planning(memcore_py.parse(text))
    assert _memcore_kernels(ours) == _tvm_kernels(tvm, theirs)


def test_folded_kernels_leave_constants_of_their_type():
    """What a folded kernel becomes: its uses read a data-less Constant of its type; the
    binding itself is gone (unused after folding, as TVM's RemoveAllUnused drops it)."""
    out = lower_for_planning(memcore_py.parse(_program(*CASES["folded_scalar_stays_an_input"])))
    (blk,) = out["main"].body.blocks
    b = {x.var.name: x.value for x in blk.bindings}
    assert "e" not in b
    x, e = b["y"].args[1].fields
    assert x.name == "x" and type(e) is Constant and e.data is None and e.ty.ndim == 0
