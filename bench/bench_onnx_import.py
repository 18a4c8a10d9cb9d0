"""ONNX import: memcore's ``from_onnx`` against Apache TVM 0.27's ``relax.frontend.onnx.from_onnx``
on the same ModelProto, same run, with the planned bytes of the imported module.

Workloads: the four real models of tools/make_models.py at full size (ResNet-50, BERT-base,
GPT-2, the Llama-style decoder), exported once per session with ``torch.onnx.export``
(torch 2.13's default path, which needs ``onnxscript``) outside the timings, and loaded with
``onnx.load``. Both times are the whole import from the loaded ModelProto: memcore's
includes its own ``onnx.shape_inference`` run (on a weight-free copy of the graph); TVM's
``from_onnx(..., keep_params_in_input=True)`` infers types itself and includes its
``onnx.checker.check_model`` run and its ``params`` attribute (every weight copied into a
``tvm.runtime.Tensor``), which memcore leaves out (it reads an initializer's data only where
a converter needs the value). memcore's module is checked structurally equal to TVM's (``params``
dropped) once per workload, except the Llama decoder, whose ``Expand`` with an initializer
shape TVM reads at run time (tests/oracle/test_onnx_oracle.py).

``extra_info``: ``n_bindings``, ``n_nodes`` (ONNX nodes), ``export_s``, ``best_seconds``,
``planned_bytes`` (memcore's StaticPlanBlockMemory on the import, TVM's rules:
LowerForPlanning -> ToNonDataflow -> RemovePurityChecking -> CallTIRRewrite ->
StaticPlanBlockMemory) and, with TVM installed and benchmarking on, the best of alternating
calls of both importers (``alternating_ours_s``, ``alternating_tvm_s``, ``alternating_ratio``
= TVM / ours). With ``--benchmark-disable`` (the CI smoke run) only ResNet-50 runs.
"""
from __future__ import annotations

import logging
import tempfile
import time
import warnings

import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxscript")
torch = pytest.importorskip("torch")

from _passes_common import best_alternating  # noqa: E402
from _passes_common import tvm_or_none as _tvm  # noqa: E402
from bench_exported_program import _make_models, _timed  # noqa: E402
from bench_plan_highlevel import _our_storages, _ours_pipeline  # noqa: E402

from memcore_py.frontend.onnx_model import from_onnx  # noqa: E402

WORKLOADS = ("resnet50", "bert_base", "gpt2_small", "llama_small")
SMOKE = ("resnet50",)
#: TVM reads an initializer-shaped Expand at run time (documented difference).
NOT_EQUAL = {"llama_small"}
_CACHE: dict = {}
_DIR = tempfile.TemporaryDirectory(prefix="memcore-bench-onnx-")


def workload(name):
    """(ModelProto, export seconds), exported once per session."""
    if name not in _CACHE:
        ctor, inputs = _make_models().MODELS[name]
        path = f"{_DIR.name}/{name}.onnx"
        t = time.perf_counter()
        logging.disable(logging.CRITICAL)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                torch.onnx.export(ctor().eval(), inputs(), dynamo=True, verbose=False).save(path)
        finally:
            logging.disable(logging.NOTSET)
        _CACHE[name] = (onnx.load(path), time.perf_counter() - t)
    return _CACHE[name]


def _ours(model):
    return from_onnx(model, keep_params_as_input=True)


def _theirs(model):
    from tvm.relax.frontend.onnx import from_onnx as tvm_from_onnx

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return tvm_from_onnx(model, keep_params_in_input=True)


def _planned_bytes(mod) -> int:
    return sum(_our_storages(_ours_pipeline()(mod)))


def _record(benchmark, name, mod, times):
    model, export_s = workload(name)
    benchmark.extra_info.update(n_bindings=sum(len(blk.bindings) for blk in mod["main"].body.blocks),
                                n_nodes=len(model.graph.node), export_s=round(export_s, 2),
                                best_seconds=min(times))


def _alternating(model, rounds):
    return best_alternating(lambda: _ours(model), lambda: _theirs(model), rounds)


def _smoke_skip(request, name):
    benchmarking = not request.config.getoption("benchmark_disable")
    if not benchmarking and name not in SMOKE:
        pytest.skip("smoke run: ResNet-50 only (each export takes 10 s and writes hundreds of MB)")
    return benchmarking


@pytest.mark.benchmark(group="onnx-import")
@pytest.mark.parametrize("name", WORKLOADS)
def test_import_ours(benchmark, request, name):
    benchmarking = _smoke_skip(request, name)
    model = workload(name)[0]
    times = []
    mod = benchmark.pedantic(_timed(_ours, times), args=(model,), rounds=5, iterations=1)
    _record(benchmark, name, mod, times)
    benchmark.extra_info["planned_bytes"] = _planned_bytes(mod)
    tvm = _tvm()
    if tvm is not None:
        if name not in NOT_EQUAL:
            from memcore_py.tvm import to_tvm

            expected = _theirs(model)
            expected["main"] = expected["main"].without_attr("params")
            tvm.ir.assert_structural_equal(to_tvm(mod), expected)
        if benchmarking:
            ours_s, tvm_s = _alternating(model, 3)
            benchmark.extra_info.update(alternating_ours_s=ours_s, alternating_tvm_s=tvm_s,
                                        alternating_ratio=tvm_s / ours_s)


@pytest.mark.benchmark(group="onnx-import")
@pytest.mark.parametrize("name", WORKLOADS)
def test_import_tvm(benchmark, request, name):
    if _tvm() is None:
        pytest.skip("apache-tvm is not installed")
    _smoke_skip(request, name)
    model = workload(name)[0]
    times = []
    mod = benchmark.pedantic(_timed(_theirs, times), args=(model,), rounds=3, iterations=1)
    _record(benchmark, name, mod, times)
