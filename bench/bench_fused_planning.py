"""Fused lowering for planning: memcore's ``LowerForPlanning(fuse=True)`` against TVM's
``LegalizeOps, AnnotateTIROpPattern, FoldConstant, FuseOps, FuseTIR,
RewriteDataflowReshape`` (the fusing half of TVM's default CPU pipeline), same run, on the
four high-level real models (TVM's torch importer output) and, when torch is installed, the
torch models of :mod:`memcore_py.testing.torch_models` (imported by memcore and by TVM;
importing is not timed, nor is parsing).

Each side's ``extra_info`` records the kernels left after fusion and the bytes planned by the
rest of the pipeline (``ToNonDataflow, RemovePurityChecking, CallTIRRewrite,
StaticPlanBlockMemory``, run once after timing): the two are equal on every model
(tests/oracle/test_fused_planning_oracle.py); the memcore side also records TVM's bytes when
TVM is installed, the difference, and the bytes of memcore's unfused plan of the same module
(what planning without fusion would over- or under-estimate).
"""
from __future__ import annotations

import pytest

from _passes_common import tvm_or_none

import memcore_py
from memcore_py.examples.models import highlevel_model_text, list_highlevel_models
from memcore_py.ir.expr import Call, Function
from memcore_py.ir.prim import IntImm
from memcore_py.transform import CallTIRRewrite, RemovePurityChecking, Sequential, StaticPlanBlockMemory, ToNonDataflow
from memcore_py.transform.lower_for_planning import LowerForPlanning
from _helpers import tvm_from_source

TORCH = ("resnet18", "resnet50", "mobilenet_v2", "vit", "bert", "gpt2", "llama", "lstm", "bert_dynamic",
         "gpt2_dynamic", "llama_dynamic")
MODELS = list_highlevel_models() + [f"torch:{n}" for n in TORCH]


def _modules(cache, model):
    """(memcore module, TVM module or None) of ``model``, cached for the session."""
    if model in cache:
        return cache[model]
    tvm = tvm_or_none()
    if not model.startswith("torch:"):
        text = highlevel_model_text(model)
        cache[model] = memcore_py.parse(text), tvm_from_source(text) if tvm else None
        return cache[model]
    torch = pytest.importorskip("torch")
    from memcore_py.frontend.exported_program import from_exported_program
    from memcore_py.testing.torch_models import torch_model

    net, args, dynamic = torch_model(model.split(":", 1)[1])
    ep = torch.export.export(net, args, dynamic_shapes=dynamic).run_decompositions()
    theirs = None
    if tvm is not None:
        from tvm.relax.frontend.torch import from_exported_program as tvm_import

        theirs = tvm_import(ep, keep_params_as_input=True)
        if theirs["main"].attrs is not None and "params" in theirs["main"].attrs:
            theirs["main"] = theirs["main"].without_attr("params")
    cache[model] = from_exported_program(ep, keep_params_as_input=True), theirs
    return cache[model]


def _our_facts(fused) -> tuple:
    kernels = sum(1 for f in fused.functions.values() if isinstance(f, Function) for blk in f.body.blocks
                  for b in blk.bindings if type(b.value) is Call and b.value.op.name == "relax.call_tir")
    planned = Sequential([ToNonDataflow(), RemovePurityChecking(), CallTIRRewrite(),
                          StaticPlanBlockMemory(mode="tvm")])(fused)
    sizes = [b.value.args[0].values[0] for f in planned.functions.values() if isinstance(f, Function)
             for blk in f.body.blocks for b in blk.bindings
             if type(b.value) is Call and getattr(b.value.op, "name", "") == "relax.memory.alloc_storage"]
    return kernels, sum(s.value for s in sizes if type(s) is IntImm), sum(type(s) is not IntImm for s in sizes)


def _tvm_passes(tvm):
    t = tvm.relax.transform
    return tvm.transform.Sequential([t.LegalizeOps(), t.AnnotateTIROpPattern(), t.FoldConstant(), t.FuseOps(),
                                     t.FuseTIR(), t.RewriteDataflowReshape()])


def _tvm_facts(tvm, fused) -> tuple:
    relax = tvm.relax
    kernels = sum(1 for f in fused.functions.values() if isinstance(f, relax.Function) for blk in f.body.blocks
                  for b in blk.bindings if isinstance(b.value, relax.Call) and isinstance(b.value.op, tvm.ir.Op)
                  and b.value.op.name == "relax.call_tir")
    t = relax.transform
    planned = tvm.transform.Sequential([t.ToNonDataflow(), t.RemovePurityChecking(), t.CallTIRRewrite(),
                                        t.StaticPlanBlockMemory()])(fused)
    sizes = [b.value.args[0].values[0] for f in planned.functions.values() if isinstance(f, relax.Function)
             for blk in f.body.blocks for b in blk.bindings
             if isinstance(b.value, relax.Call) and isinstance(b.value.op, tvm.ir.Op)
             and b.value.op.name == "relax.memory.alloc_storage"]
    static = [int(s) for s in sizes if isinstance(s, tvm.tirx.IntImm)]
    return kernels, sum(static), len(sizes) - len(static)


@pytest.fixture(scope="session")
def fused_modules():
    return {}


@pytest.mark.benchmark(group="fused-lowering")
@pytest.mark.parametrize("model", MODELS)
def test_fused_lowering_ours(benchmark, fused_modules, model):
    ours, theirs = _modules(fused_modules, model)
    fused = benchmark(LowerForPlanning(fuse=True), ours)
    kernels, planned, symbolic = _our_facts(fused)
    _, unfused, _ = _our_facts(LowerForPlanning()(ours))
    info = dict(kernels=kernels, planned_bytes=planned, symbolic_storages=symbolic, unfused_planned_bytes=unfused)
    tvm = tvm_or_none()
    if tvm is not None:
        t_kernels, t_planned, _ = _tvm_facts(tvm, _tvm_passes(tvm)(theirs))
        info.update(tvm_kernels=t_kernels, tvm_planned_bytes=t_planned,
                    bytes_diff_pct=round(100.0 * (planned - t_planned) / t_planned, 3))
    benchmark.extra_info.update(info)


@pytest.mark.benchmark(group="fused-lowering")
@pytest.mark.parametrize("model", MODELS)
def test_fused_lowering_tvm(benchmark, fused_modules, model):
    tvm = tvm_or_none()
    if tvm is None:
        pytest.skip("apache-tvm is not installed")
    _, theirs = _modules(fused_modules, model)
    fused = benchmark.pedantic(_tvm_passes(tvm), args=(theirs,), rounds=3, iterations=1)
    kernels, planned, symbolic = _tvm_facts(tvm, fused)
    benchmark.extra_info.update(kernels=kernels, planned_bytes=planned, symbolic_storages=symbolic)
