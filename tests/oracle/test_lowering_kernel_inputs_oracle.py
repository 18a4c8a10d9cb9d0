"""Oracle: the tensors each kernel of LowerForPlanning reads are the ones TVM's kernel reads.

A kernel's tensor inputs decide which tensors stay live, hence the plan. The cases are the ops
whose legalization reads an argument for its shape only (``collapse_sum_like``'s target,
``eye_like``'s and ``full_like``'s input; a ``collapse_sum_like`` that keeps the shape is
a copy, which TVM's RewriteDataflowReshape makes a view), bakes 0-d constants into the kernel (the scale and
zero point of ``quantize``/``dequantize``), or is written by TVM's default pipeline's
``DispatchSortScan`` rather than by ``LegalizeOps`` (``sort``, ``argsort``, ``topk``,
``cumsum``, ``cumprod``), and ``nn.batch_flatten``, which TVM's RewriteDataflowReshape makes a
view as it does ``reshape``.

TVM's side runs ``DispatchSortScan`` (under an ``llvm`` target, as TVM's default CPU build
does; it leaves the other ops alone) and then its passes:

- kernel inputs: ``LegalizeOps``; every ``call_tir`` must have memcore's kernel name, the same
  arguments (variables by name, constants as such) and as many tensor parameters before the
  outputs as memcore's signature-only PrimFunc;
- plans: each op inside a small program, planned by TVM's unfused and fused pipelines
  (:func:`oracle.test_lower_for_planning_oracle.tvm_unfused_plan`,
  :func:`oracle.test_fused_planning_oracle.tvm_fused`) and by memcore's
  (:func:`~oracle.test_lower_for_planning_oracle.memcore_plan`,
  :func:`~oracle.test_fused_planning_oracle.memcore_fused`).
"""
from __future__ import annotations

import pytest

tvm = pytest.importorskip("tvm")
from tvm import relax  # noqa: E402

import memcore_py  # noqa: E402
from memcore_py.ir.expr import Call, Function, Var  # noqa: E402
from memcore_py.ir.types import TupleType  # noqa: E402
from memcore_py.transform.lower_for_planning import LowerForPlanning  # noqa: E402
from _helpers import tvm_call_tir_bindings, tvm_from_source  # noqa: E402
from oracle.test_fused_planning_oracle import compare, memcore_fused, single_op_text, tvm_fused  # noqa: E402
from oracle.test_lower_for_planning_oracle import memcore_plan, tvm_unfused_plan  # noqa: E402

pytestmark = pytest.mark.oracle

X = "x: R.Tensor((4, 8), 'float32')"
XS = "x: R.Tensor((s, 8), 'float32')"
I8 = "x: R.Tensor((4, 8), 'int8')"
Q = ", sc: R.Tensor((8,), 'float32'), z: R.Tensor((8,), 'int8')"
HALF, ZERO = "R.const(0.5, 'float32')", "R.const(0, 'int8')"

#: One op per case: ``(parameters, expression)`` of ``main``; ``s`` is a symbolic dim.
KERNEL_CASES = {
    "collapse_sum_like": (X + ", y: R.Tensor((8,), 'float32')", "R.collapse_sum_like(x, y)"),
    "collapse_sum_like_same": (X + ", y: R.Tensor((4, 8), 'float32')", "R.collapse_sum_like(x, y)"),
    "collapse_sum_like_dyn": (XS + ", y: R.Tensor((1, 8), 'float32')", "R.collapse_sum_like(x, y)"),
    "eye_like": ("x: R.Tensor((64, 64), 'float32')", "R.eye_like(x, 0)"),
    "eye_like_dyn": ("x: R.Tensor((s, s), 'float32')", "R.eye_like(x, 1)"),
    "full_like_tensor_fill": (X + ", f: R.Tensor((), 'float32')", "R.full_like(x, f)"),
    "full_like_const_fill": ("x: R.Tensor((64, 64), 'float32')", "R.full_like(x, R.const(2.0, 'float32'))"),
    "quantize_const": (X, f"R.quantize(x, {HALF}, {ZERO}, axis=-1, out_dtype='int8')"),
    "quantize_const_scale": (X + ", z: R.Tensor((), 'int8')", f"R.quantize(x, {HALF}, z, axis=-1, out_dtype='int8')"),
    "quantize_const_zero_point": (X + ", sc: R.Tensor((), 'float32')",
                                  f"R.quantize(x, sc, {ZERO}, axis=-1, out_dtype='int8')"),
    "quantize_tensors": (X + Q, "R.quantize(x, sc, z, axis=1, out_dtype='int8')"),
    "dequantize_const": (I8, f"R.dequantize(x, {HALF}, {ZERO}, axis=-1, out_dtype='float32')"),
    "dequantize_tensors": (I8 + Q, "R.dequantize(x, sc, z, axis=1, out_dtype='float32')"),
    "sort": (X, "R.sort(x, axis=-1, descending=False)"),
    "sort_dyn": (XS, "R.sort(x, axis=0, descending=True)"),
    "argsort": (X, "R.argsort(x, axis=-1, descending=False, dtype='int32')"),
    "topk_both": (X, "R.topk(x, k=2, axis=-1, ret_type='both', largest=True, dtype='int32')"),
    "topk_values": (X, "R.topk(x, k=2, axis=-1, ret_type='values', largest=True, dtype='int32')"),
    "topk_indices": (X, "R.topk(x, k=2, axis=-1, ret_type='indices', largest=False, dtype='int64')"),
    "cumsum": (X, "R.cumsum(x, axis=1)"),
    "cumprod": (X, "R.cumprod(x, axis=1)"),
    "cumprod_dyn": (XS, "R.cumprod(x, axis=0)"),
    "batch_flatten": ("x: R.Tensor((2, 3, 4), 'float32')", "R.nn.batch_flatten(x)"),
}

#: Each op inside a program where its inputs' liveness shows in the plan: ``(parameters,
#: bindings)`` of ``main``, whose last binding is the output ``gv``.
COLLAPSE = ["t = R.exp(y)", "u = R.exp(x)", "lv = R.collapse_sum_like(u, t)", "w = R.exp(u)", "gv = R.add(lv, w)"]
PLAN_CASES = {
    # a copy (RewriteDataflowReshape makes it a view) when the target has the input's shape
    "collapse_sum_like": (X + ", y: R.Tensor((4, 8), 'float32')", COLLAPSE),
    "collapse_sum_like_dyn": (XS + ", y: R.Tensor((s, 8), 'float32')", COLLAPSE),
    "collapse_sum_like_rows": (X + ", y: R.Tensor((8,), 'float32')", COLLAPSE[:3] + ["gv = R.add(lv, t)"]),
    "collapse_sum_like_unit": ("x: R.Tensor((1, 8), 'float32'), y: R.Tensor((8,), 'float32')",
                               COLLAPSE[:3] + ["gv = R.add(lv, t)"]),
    "eye_like": ("x: R.Tensor((64, 64), 'float32')",
                 ["t = R.exp(x)", "lv = R.eye_like(t, 0)", "w = R.exp(x)", "gv = R.add(lv, w)"]),
    "full_like_tensor_fill": (X + ", f: R.Tensor((), 'float32')",
                              ["t = R.exp(x)", "lv = R.full_like(t, f)", "w = R.exp(x)", "gv = R.add(lv, w)"]),
    "quantize_const": (X, ["t = R.exp(x)", f"lv = R.quantize(t, {HALF}, {ZERO}, axis=-1, out_dtype='int8')",
                           f"w = R.dequantize(lv, {HALF}, {ZERO}, axis=-1, out_dtype='float32')",
                           "gv = R.add(w, x)"]),
    "sort": (X, ["t = R.exp(x)", "lv = R.sort(t, axis=-1, descending=False)", "w = R.exp(lv)",
                 "gv = R.add(w, lv)"]),
    "argsort": (X, ["t = R.exp(x)", "lv = R.argsort(t, axis=-1, descending=True, dtype='int64')",
                    "w = R.astype(lv, 'float32')", "gv = R.add(w, t)"]),
    "topk": (X, ["t = R.exp(x)", "lv = R.topk(t, k=8, axis=-1, ret_type='values', largest=True, dtype='int32')",
                 "w = R.exp(lv)", "gv = R.add(w, lv)"]),
    "cumprod": (XS, ["t = R.exp(x)", "lv = R.cumprod(t, axis=1)", "w = R.exp(lv)", "gv = R.add(w, lv)"]),
    "batch_flatten": ("x: R.Tensor((2, 3, 4), 'float32')",
                      ["t = R.exp(x)", "lv = R.nn.batch_flatten(t)", "w = R.exp(lv)", "gv = R.add(w, lv)"]),
    "batch_flatten_dyn": ("x: R.Tensor((s, 3, 4), 'float32')",
                          ["t = R.exp(x)", "lv = R.nn.batch_flatten(t)", "w = R.exp(lv)", "gv = R.add(w, lv)"]),
}


def program_text(params: str, bindings: list) -> str:
    """TVMScript of a module whose ``main`` binds ``bindings`` in a dataflow block."""
    body = "".join(f"            {line}\n" for line in bindings)
    return ("# from typing import TypeVar\n# from tvm.script import ir as I\n# from tvm.script import relax as R\n\n"
            's = TypeVar("s")\n@I.ir_module\nclass Module:\n    @R.function\n'
            f"    def main({params}):\n        with R.dataflow():\n{body}"
            "            R.output(gv)\n        return gv\n").replace("'", '"')


def dispatch_sort_scan(mod):
    """TVM's ``DispatchSortScan`` on ``mod``, under the ``llvm`` target of TVM's CPU build."""
    with tvm.target.Target("llvm"):
        return relax.backend.DispatchSortScan()(mod)


def _n_outputs(ty) -> int:
    return len(ty.fields) if isinstance(ty, (relax.TupleType, TupleType)) else 1


def tvm_kernel_inputs(text: str) -> list:
    """``(kernel name, arguments, tensor parameters before the outputs)`` of every
    ``call_tir`` TVM's DispatchSortScan and LegalizeOps write for ``text``."""
    low = relax.transform.LegalizeOps()(dispatch_sort_scan(tvm_from_source(text)))
    out = []
    for _, call in tvm_call_tir_bindings(low):
        gv, args = call.args[0], call.args[1].fields
        names = [a.name if isinstance(a, relax.Var) else "const" for a in args]
        out.append((gv.name_hint, names, len(low[gv].params) - _n_outputs(call.ty)))
    return out


def memcore_kernel_inputs(text: str) -> list:
    """:func:`tvm_kernel_inputs` of memcore's ``LowerForPlanning()`` on ``text``."""
    low = LowerForPlanning()(memcore_py.parse(text))
    out = []
    for func in low.functions.values():
        if not isinstance(func, Function):
            continue
        for blk in func.body.blocks:
            for b in blk.bindings:
                call = b.value
                if type(call) is Call and getattr(call.op, "name", "") == "relax.call_tir":
                    gv, args = call.args[0], call.args[1].fields
                    names = [a.name if isinstance(a, Var) else "const" for a in args]
                    out.append((gv.name, names, len(low.functions[gv].params) - _n_outputs(call.ty_args[0])))
    return out


@pytest.mark.parametrize("case", sorted(KERNEL_CASES))
def test_kernel_inputs_are_tvms(case):
    text = single_op_text(*KERNEL_CASES[case])
    theirs = tvm_kernel_inputs(text)
    assert len(theirs) == 1, theirs
    assert memcore_kernel_inputs(text) == theirs


def test_batch_flatten_of_a_dataflow_var_is_a_view_as_in_tvm():
    text = program_text(*PLAN_CASES["batch_flatten"])
    seq = tvm.transform.Sequential([relax.transform.LegalizeOps(), relax.transform.AnnotateTIROpPattern(),
                                    relax.transform.FoldConstant(), relax.transform.RewriteDataflowReshape()])
    theirs = seq(tvm_from_source(text))
    lv = next(b.value for b in theirs["main"].body.blocks[0].bindings if b.var.name == "lv")
    ours = LowerForPlanning()(memcore_py.parse(text))
    func = next(f for f in ours.functions.values() if isinstance(f, Function))
    mine = next(b.value for b in func.body.blocks[0].bindings if b.var.name == "lv")
    assert lv.op.name == "relax.reshape"
    assert mine.op.name == lv.op.name and mine.args[0].name == lv.args[0].name


@pytest.mark.parametrize("case", sorted(PLAN_CASES))
def test_unfused_plan_is_tvms(case):
    text = program_text(*PLAN_CASES[case])
    assert memcore_plan(memcore_py.parse(text)) == tvm_unfused_plan(dispatch_sort_scan(tvm_from_source(text)))


@pytest.mark.parametrize("case", sorted(PLAN_CASES))
def test_fused_plan_is_tvms(case):
    text = program_text(*PLAN_CASES[case])
    compare(case, memcore_fused(memcore_py.parse(text)), tvm_fused(dispatch_sort_scan(tvm_from_source(text))))
