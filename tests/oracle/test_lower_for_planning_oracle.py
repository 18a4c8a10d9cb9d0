"""LowerForPlanning: planning a high-level module without TVM gives TVM's unfused plan.

On the four high-level real models (ResNet-50, BERT-base, GPT-2, Llama as TVM's torch
importer prints them), ``LowerForPlanning -> ToNonDataflow -> RemovePurityChecking ->
CallTIRRewrite -> StaticPlanBlockMemory`` (memcore only) and TVM's unfused pipeline
(``LegalizeOps, AnnotateTIROpPattern, FoldConstant, RewriteDataflowReshape, ToNonDataflow,
RemovePurityChecking, CallTIRRewrite, StaticPlanBlockMemory``) on the same text must make the
same storages (same sizes, in the same order), place the same number of tensors in them, and
leave the same number of allocations unplanned.
"""
from __future__ import annotations

import pytest

tvm = pytest.importorskip("tvm")
from tvm import relax  # noqa: E402

import memcore_py  # noqa: E402
from memcore_py.examples.models import highlevel_model_text, list_highlevel_models  # noqa: E402
from memcore_py.transform import CallTIRRewrite, RemovePurityChecking, Sequential, StaticPlanBlockMemory, ToNonDataflow  # noqa: E402
from memcore_py.transform.lower_for_planning import LowerForPlanning  # noqa: E402

pytestmark = pytest.mark.oracle

_COUNTED = ("relax.memory.alloc_storage", "relax.memory.alloc_tensor", "relax.builtin.alloc_tensor")


def _plan_summary(mod, *, is_function, is_call, op_name, shape_value):
    """Per Relax function: storage sizes in order, and the count of each allocation op."""
    out = {}
    for gv, f in mod.functions.items():
        if not is_function(f):
            continue
        sizes, counts = [], dict.fromkeys(_COUNTED, 0)
        for blk in f.body.blocks:
            for b in blk.bindings:
                v = b.value
                if is_call(v) and op_name(v) in counts:
                    counts[op_name(v)] += 1
                    if op_name(v) == "relax.memory.alloc_storage":
                        sizes.append(shape_value(v.args[0]))
        out[gv.name_hint if hasattr(gv, "name_hint") else gv.name] = (sizes, counts)
    return out


def _tvm_summary(text):
    seq = tvm.transform.Sequential([
        relax.transform.LegalizeOps(), relax.transform.AnnotateTIROpPattern(), relax.transform.FoldConstant(),
        relax.transform.RewriteDataflowReshape(), relax.transform.ToNonDataflow(),
        relax.transform.RemovePurityChecking(), relax.transform.CallTIRRewrite(),
        relax.transform.StaticPlanBlockMemory()])
    out = seq(tvm.script.from_source(text))
    return _plan_summary(
        out, is_function=lambda f: isinstance(f, relax.Function),
        is_call=lambda v: isinstance(v, relax.Call) and isinstance(v.op, tvm.ir.Op),
        op_name=lambda v: v.op.name, shape_value=lambda s: int(s.values[0]))


def _our_summary(text):
    from memcore_py.ir.expr import Call, Function

    seq = Sequential([LowerForPlanning(), ToNonDataflow(), RemovePurityChecking(), CallTIRRewrite(),
                      StaticPlanBlockMemory(mode="tvm")])
    out = seq(memcore_py.parse(text))
    return _plan_summary(
        out, is_function=lambda f: isinstance(f, Function),
        is_call=lambda v: isinstance(v, Call) and hasattr(v.op, "name"),
        op_name=lambda v: v.op.name, shape_value=lambda s: s.values[0].value)


@pytest.mark.parametrize("model", list_highlevel_models())
def test_plan_without_tvm_equals_tvm_unfused_pipeline(model):
    text = highlevel_model_text(model)
    ours, theirs = _our_summary(text), _tvm_summary(text)
    assert ours == theirs
    assert sum(len(sizes) for sizes, _ in ours.values()) > 0
