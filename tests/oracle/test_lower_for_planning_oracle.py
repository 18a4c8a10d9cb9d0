"""LowerForPlanning: planning a high-level module without TVM gives TVM's unfused plan.

On the four high-level real models (ResNet-50, BERT-base, GPT-2, Llama as TVM's torch
importer prints them), ``LowerForPlanning -> ToNonDataflow -> RemovePurityChecking ->
CallTIRRewrite -> StaticPlanBlockMemory`` (memcore only) and TVM's unfused pipeline
(``LegalizeOps, AnnotateTIROpPattern, FoldConstant, RewriteDataflowReshape, ToNonDataflow,
RemovePurityChecking, CallTIRRewrite, StaticPlanBlockMemory``) on the same text must make the
same storages (same sizes, in the same order), place the same tensors in them (each planned
tensor, in binding order, in the same storage with the same dtype), and leave the same number of
allocations unplanned. :func:`tvm_unfused_plan` and :func:`memcore_plan` are shared with
tests/oracle/test_plan_imported_oracle.py.
"""
from __future__ import annotations

import pytest

tvm = pytest.importorskip("tvm")
from tvm import relax  # noqa: E402

import memcore_py  # noqa: E402
from memcore_py.examples.models import highlevel_model_text, list_highlevel_models  # noqa: E402
from memcore_py.transform import CallTIRRewrite, RemovePurityChecking, Sequential, StaticPlanBlockMemory, ToNonDataflow  # noqa: E402
from memcore_py.transform.lower_for_planning import LowerForPlanning  # noqa: E402
from _helpers import tvm_from_source  # noqa: E402

pytestmark = pytest.mark.oracle

_COUNTED = ("relax.memory.alloc_storage", "relax.memory.alloc_tensor", "relax.builtin.alloc_tensor")


def _plan_summary(mod, *, is_function, is_call, op_name, shape_value, var_key):
    """Per Relax function: storage sizes in order, the count of each allocation op, and for
    every planned tensor (``memory.alloc_tensor`` in binding order) the index of the storage
    it is placed in and its dtype (which tensors share a storage)."""
    out = {}
    for gv, f in mod.functions.items():
        if not is_function(f):
            continue
        sizes, counts, storages, placed = [], dict.fromkeys(_COUNTED, 0), {}, []
        for blk in f.body.blocks:
            for b in blk.bindings:
                v = b.value
                if not (is_call(v) and op_name(v) in counts):
                    continue
                counts[op_name(v)] += 1
                if op_name(v) == "relax.memory.alloc_storage":
                    storages[var_key(b.var)] = len(sizes)
                    sizes.append(shape_value(v.args[0]))
                elif op_name(v) == "relax.memory.alloc_tensor":
                    placed.append((storages.get(var_key(v.args[0])), str(v.args[3].value)))
        out[gv.name_hint if hasattr(gv, "name_hint") else gv.name] = (sizes, counts, placed)
    return out


def tvm_unfused_plan(mod):
    """TVM's unfused pipeline on a ``tvm.IRModule`` (module docstring), summarised."""
    seq = tvm.transform.Sequential([
        relax.transform.LegalizeOps(), relax.transform.AnnotateTIROpPattern(), relax.transform.FoldConstant(),
        relax.transform.RewriteDataflowReshape(), relax.transform.ToNonDataflow(),
        relax.transform.RemovePurityChecking(), relax.transform.CallTIRRewrite(),
        relax.transform.StaticPlanBlockMemory()])
    out = seq(mod)

    def size(s):
        v = s.values[0]
        return int(v) if isinstance(v, tvm.tirx.IntImm) else str(v)

    return _plan_summary(
        out, is_function=lambda f: isinstance(f, relax.Function),
        is_call=lambda v: isinstance(v, relax.Call) and isinstance(v.op, tvm.ir.Op),
        op_name=lambda v: v.op.name, shape_value=size, var_key=lambda v: v.name)


def memcore_plan(mod):
    """memcore's LowerForPlanning path on a memcore IRModule (module docstring), summarised."""
    from memcore_py.ir.expr import Call, Function
    from memcore_py.ir.text.prim_func_text import format_prim
    from memcore_py.ir.prim import IntImm

    seq = Sequential([LowerForPlanning(), ToNonDataflow(), RemovePurityChecking(), CallTIRRewrite(),
                      StaticPlanBlockMemory(mode="tvm")])
    out = seq(mod)

    def size(s):
        v = s.values[0]
        return v.value if type(v) is IntImm else format_prim(v, tir=True)  # as str() of TVM's

    return _plan_summary(
        out, is_function=lambda f: isinstance(f, Function),
        is_call=lambda v: isinstance(v, Call) and hasattr(v.op, "name"),
        op_name=lambda v: v.op.name, shape_value=size, var_key=lambda v: v.name)


def _tvm_summary(text):
    return tvm_unfused_plan(tvm_from_source(text))


def _our_summary(text):
    return memcore_plan(memcore_py.parse(text))


@pytest.mark.parametrize("model", list_highlevel_models())
def test_plan_without_tvm_equals_tvm_unfused_pipeline(model):
    text = highlevel_model_text(model)
    ours, theirs = _our_summary(text), _tvm_summary(text)
    assert ours == theirs
    assert sum(len(sizes) for sizes, _, _ in ours.values()) > 0
