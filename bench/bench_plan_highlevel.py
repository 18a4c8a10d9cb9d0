"""Planning a high-level module without TVM: memcore's ``LowerForPlanning -> ToNonDataflow ->
RemovePurityChecking -> CallTIRRewrite -> StaticPlanBlockMemory`` against TVM's unfused
pipeline (``LegalizeOps, AnnotateTIROpPattern, FoldConstant, RewriteDataflowReshape,
ToNonDataflow, RemovePurityChecking, CallTIRRewrite, StaticPlanBlockMemory``), same run, on
the high-level real models (TVM's torch importer output). Both start from a parsed module;
parsing is not timed. The plans are equal (tests/oracle/test_lower_for_planning_oracle.py);
``extra_info`` records the planned bytes and storages of each side.
"""
from __future__ import annotations

import pytest

import memcore_py
from memcore_py.examples.models import highlevel_model_text, list_highlevel_models
from memcore_py.ir.expr import Call, Function
from memcore_py.transform import CallTIRRewrite, RemovePurityChecking, Sequential, StaticPlanBlockMemory, ToNonDataflow
from memcore_py.transform.lower_for_planning import LowerForPlanning
from _helpers import tvm_from_source


def _tvm():
    try:
        import tvm
        from tvm import relax  # noqa: F401
    except ImportError:
        return None
    return tvm


def _ours_pipeline():
    return Sequential([LowerForPlanning(), ToNonDataflow(), RemovePurityChecking(), CallTIRRewrite(),
                       StaticPlanBlockMemory(mode="tvm")])


def _our_storages(mod):
    return [b.value.args[0].values[0].value for f in mod.functions.values() if isinstance(f, Function)
            for blk in f.body.blocks for b in blk.bindings
            if isinstance(b.value, Call) and getattr(b.value.op, "name", "") == "relax.memory.alloc_storage"]


@pytest.fixture(scope="session")
def highlevel_modules():
    return {}


@pytest.mark.benchmark(group="plan-highlevel")
@pytest.mark.parametrize("model", list_highlevel_models())
def test_plan_highlevel_ours(benchmark, highlevel_modules, model):
    mod = highlevel_modules.setdefault(("ours", model), memcore_py.parse(highlevel_model_text(model)))
    out = benchmark(_ours_pipeline(), mod)
    sizes = _our_storages(out)
    benchmark.extra_info.update(planned_bytes=sum(sizes), storages=len(sizes),
                                n_bindings=sum(len(b.bindings) for b in mod["main"].body.blocks))


@pytest.mark.benchmark(group="plan-highlevel")
@pytest.mark.parametrize("model", list_highlevel_models())
def test_plan_highlevel_tvm(benchmark, highlevel_modules, model):
    tvm = _tvm()
    if tvm is None:
        pytest.skip("apache-tvm is not installed")
    from tvm import relax

    key = ("tvm", model)
    if key not in highlevel_modules:
        highlevel_modules[key] = tvm_from_source(highlevel_model_text(model))
    seq = tvm.transform.Sequential([
        relax.transform.LegalizeOps(), relax.transform.AnnotateTIROpPattern(), relax.transform.FoldConstant(),
        relax.transform.RewriteDataflowReshape(), relax.transform.ToNonDataflow(),
        relax.transform.RemovePurityChecking(), relax.transform.CallTIRRewrite(),
        relax.transform.StaticPlanBlockMemory()])
    out = benchmark.pedantic(seq, args=(highlevel_modules[key],), rounds=3, iterations=1)
    sizes = [int(b.value.args[0].values[0]) for f in out.functions.values() if isinstance(f, relax.Function)
             for blk in f.body.blocks for b in blk.bindings
             if isinstance(b.value, relax.Call) and isinstance(b.value.op, tvm.ir.Op)
             and b.value.op.name == "relax.memory.alloc_storage"]
    benchmark.extra_info.update(planned_bytes=sum(sizes), storages=len(sizes))
