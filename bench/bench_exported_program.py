"""torch.export import: memcore's ``from_exported_program`` against Apache TVM 0.27's
``relax.frontend.torch.from_exported_program`` on the same ExportedProgram, same run.

Workloads: the four real models of tools/make_models.py at full size (ResNet-50, BERT-base,
GPT-2, the Llama-style decoder: the models whose TVM import ships in
``memcore_py/examples/models/highlevel/``) and the ``torch.export.Dim`` attention program of
:mod:`memcore_py.testing.torch_programs` (``seq`` in [2, 512]). Each is exported and
decomposed (``run_decompositions()``) once per session, outside the timings (that step is
torch's, the same for both importers, and recorded as ``decomposition_s``); both importers
then run with ``run_ep_decomposition=False`` and ``keep_params_as_input=True``. TVM's time
includes its ``params`` attribute (the weights as ``tvm.runtime.Tensor``, by DLPack), which
memcore leaves out; memcore's module is checked structurally equal to TVM's (``params``
dropped) once per workload.

``extra_info``: ``n_bindings``, ``n_nodes`` (FX call nodes), ``decomposition_s``,
``best_seconds``, and for memcore's runs with TVM installed and benchmarking on, the best of
alternating calls of both importers (``alternating_ours_s``, ``alternating_tvm_s``,
``alternating_ratio`` = TVM / ours). With ``--benchmark-disable`` (the CI smoke run) only the
Llama decoder and the dynamic program run.
"""
from __future__ import annotations

import importlib.util
import time
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from _passes_common import best_alternating  # noqa: E402
from _passes_common import tvm_or_none as _tvm  # noqa: E402

from memcore_py.frontend.exported_program import from_exported_program  # noqa: E402
from memcore_py.testing.torch_programs import export_program, torch_programs  # noqa: E402

REAL = ("resnet50", "bert_base", "gpt2_small", "llama_small")
WORKLOADS = REAL + ("causal_attention_dynamic",)
SMOKE = ("llama_small", "causal_attention_dynamic")
_CACHE: dict = {}


def _make_models():
    path = Path(__file__).resolve().parents[1] / "tools" / "make_models.py"
    spec = importlib.util.spec_from_file_location("_memcore_make_models", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def workload(name):
    """(decomposed ExportedProgram, FX call-node count, decomposition seconds), built once."""
    if name not in _CACHE:
        if name in REAL:
            ctor, inputs = _make_models().MODELS[name]
            ep = torch.export.export(ctor().eval(), inputs())
        else:
            model, args, dynamic = torch_programs()[name]
            ep = export_program(model, args, dynamic)
        t = time.perf_counter()
        ep = ep.run_decompositions()
        decomposition_s = time.perf_counter() - t
        n_nodes = sum(n.op == "call_function" for n in ep.graph.nodes)
        _CACHE[name] = (ep, n_nodes, decomposition_s)
    return _CACHE[name]


def _ours(ep):
    return from_exported_program(ep, keep_params_as_input=True, run_ep_decomposition=False)


def _theirs(ep):
    from tvm.relax.frontend.torch import from_exported_program as tvm_from_exported_program

    return tvm_from_exported_program(ep, keep_params_as_input=True, run_ep_decomposition=False)


def _timed(fn, times):
    def run(*args):
        t = time.perf_counter()
        out = fn(*args)
        times.append(time.perf_counter() - t)
        return out

    return run


def _bindings(mod):
    return sum(len(blk.bindings) for blk in mod["main"].body.blocks)


def _record(benchmark, name, mod, times):
    _, n_nodes, decomposition_s = workload(name)
    benchmark.extra_info.update(n_bindings=_bindings(mod), n_nodes=n_nodes,
                                decomposition_s=round(decomposition_s, 3), best_seconds=min(times))


def _check_against_tvm(tvm, mod, ep):
    from memcore_py.tvm import to_tvm

    expected = _theirs(ep)
    expected["main"] = expected["main"].without_attr("params")
    tvm.ir.assert_structural_equal(to_tvm(mod), expected)


def _alternating(ep, rounds):
    return best_alternating(lambda: _ours(ep), lambda: _theirs(ep), rounds)


def _smoke_skip(request, name):
    benchmarking = not request.config.getoption("benchmark_disable")
    if not benchmarking and name not in SMOKE:
        pytest.skip("smoke run: the Llama decoder and the dynamic program (exports take seconds a model)")
    return benchmarking


@pytest.mark.benchmark(group="exported-program-import")
@pytest.mark.parametrize("name", WORKLOADS)
def test_import_ours(benchmark, request, name):
    benchmarking = _smoke_skip(request, name)
    ep = workload(name)[0]
    times = []
    mod = benchmark.pedantic(_timed(_ours, times), args=(ep,), rounds=5, iterations=1)
    _record(benchmark, name, mod, times)
    tvm = _tvm()
    if tvm is not None:
        _check_against_tvm(tvm, mod, ep)
        if benchmarking:
            ours_s, tvm_s = _alternating(ep, 5)
            benchmark.extra_info.update(alternating_ours_s=ours_s, alternating_tvm_s=tvm_s,
                                        alternating_ratio=tvm_s / ours_s)


@pytest.mark.benchmark(group="exported-program-import")
@pytest.mark.parametrize("name", WORKLOADS)
def test_import_tvm(benchmark, request, name):
    if _tvm() is None:
        pytest.skip("apache-tvm is not installed")
    _smoke_skip(request, name)
    ep = workload(name)[0]
    times = []
    mod = benchmark.pedantic(_timed(_theirs, times), args=(ep,), rounds=3, iterations=1)
    _record(benchmark, name, mod, times)
