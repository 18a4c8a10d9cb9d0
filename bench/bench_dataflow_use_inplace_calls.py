"""DataflowUseInplaceCalls: ours against Apache TVM 0.27's pass on the same modules, same run.

Workloads:

- the high-level real models (``memcore_py.examples.models.highlevel``: ResNet-50, BERT-base,
  GPT-2, a Llama-style decoder as TVM's torch importer prints them), parsed once by each
  side;
- synthetic dataflow chains of 3k / 30k / 300k bindings on (64, 64) float32 (add, relu,
  multiply, exp, subtract, silu in turn, a weight operand on most binary ops): most bindings
  are rewritten, so this measures the rewrite, the TIR sharing and the analyses together.
  TVM's input is built with its BlockBuilder (its parser is too slow at these sizes).

``extra_info``: bindings, in-place calls made, PrimFuncs in the output and, for our runs when
TVM is installed and benchmarking is on, the best of several alternating calls of ours and
TVM's (``alternating_ours_s``, ``alternating_tvm_s``, ``alternating_ratio``). With
``--benchmark-disable`` (the CI smoke run) TVM is run on the real models and at 3k only.
"""
from __future__ import annotations

import time

import pytest

import memcore_py
from memcore_py.examples.models import highlevel_model_text, list_highlevel_models
from memcore_py.ir import Call, DataflowBlock, DataflowVar, Function, IRModule, SeqExpr, TensorType, Var, VarBinding
from memcore_py.ir.expr import PrimFunc
from memcore_py.ir.op import get_op
from memcore_py.transform.dataflow_use_inplace_calls import dataflow_use_inplace_calls
from _helpers import tvm_from_source

SIZES = (3_000, 30_000, 300_000)
WIDTH = 64
_OPS = (("add", 2), ("nn.relu", 1), ("multiply", 2), ("exp", 1), ("subtract", 2), ("nn.silu", 1))


def _tvm():
    try:
        import tvm
        from tvm import relax  # noqa: F401
    except ImportError:
        return None
    return tvm


def synthetic_chain(n: int) -> IRModule:
    """Our version of the synthetic chain (module docstring)."""
    t = TensorType((WIDTH, WIDTH), "float32")
    x, w = Var("x", t), Var("w", t)
    bindings, prev = [], x
    for i in range(n):
        name, k = _OPS[i % len(_OPS)]
        args = (prev, w) if k == 2 and i % 4 else ((prev, prev) if k == 2 else (prev,))
        v = (Var if i == n - 1 else DataflowVar)(f"v{i}", t)
        bindings.append(VarBinding(v, Call(get_op("relax." + name), args)))
        prev = v
    f = Function([x, w], SeqExpr([DataflowBlock(bindings)], prev), t, {"global_symbol": "main"})
    return IRModule({"main": f})


def tvm_synthetic_chain(n: int):
    """TVM's version of :func:`synthetic_chain` (same ops, operands and names)."""
    from tvm import relax

    t = relax.TensorType((WIDTH, WIDTH), "float32")
    x, w = relax.Var("x", t), relax.Var("w", t)
    bb = relax.BlockBuilder()
    with bb.function("main", [x, w]):
        with bb.dataflow():
            prev = x
            for i in range(n):
                name, k = _OPS[i % len(_OPS)]
                op = getattr(relax.op.nn, name[3:]) if name.startswith("nn.") else getattr(relax.op, name)
                args = (prev, w) if k == 2 and i % 4 else ((prev, prev) if k == 2 else (prev,))
                emit = bb.emit_output if i == n - 1 else bb.emit
                prev = emit(op(*args), name_hint=f"v{i}")
        bb.emit_func_output(prev)
    return bb.get()


def _inplace_calls(mod) -> int:
    return sum(1 for f in mod.functions.values() if isinstance(f, Function)
               for blk in f.body.blocks for b in blk.bindings
               if isinstance(b.value, Call) and getattr(b.value.op, "name", "") == "relax.call_tir_inplace")


def _n_bindings(mod) -> int:
    return sum(len(blk.bindings) for f in mod.functions.values() if isinstance(f, Function) for blk in f.body.blocks)


def _alternating(mod, tmod, rounds):
    from tvm import relax

    theirs = relax.transform.DataflowUseInplaceCalls()
    t_ours, t_tvm = [], []
    for _ in range(rounds):
        t = time.perf_counter()
        dataflow_use_inplace_calls(mod)
        t_ours.append(time.perf_counter() - t)
        t = time.perf_counter()
        theirs(tmod)
        t_tvm.append(time.perf_counter() - t)
    return min(t_ours), min(t_tvm)


@pytest.fixture(scope="session")
def inplace_inputs():
    return {}


def _inputs(cache, key, tvm_needed):
    if key not in cache:
        if isinstance(key, str):
            text = highlevel_model_text(key)
            cache[key] = [memcore_py.parse(text), None, text]
        else:
            cache[key] = [synthetic_chain(key), None, None]
    entry = cache[key]
    if tvm_needed and entry[1] is None:
        _tvm()
        entry[1] = tvm_from_source(entry[2]) if isinstance(key, str) else tvm_synthetic_chain(key)
    return entry


def _record(benchmark, out, mod):
    benchmark.extra_info.update(
        n_bindings=_n_bindings(mod), inplace_calls=_inplace_calls(out),
        prim_funcs=sum(1 for f in out.functions.values() if isinstance(f, PrimFunc)))


@pytest.mark.benchmark(group="dataflow-use-inplace-calls-models")
@pytest.mark.parametrize("model", list_highlevel_models())
def test_inplace_model_ours(benchmark, request, inplace_inputs, model):
    benchmarking = not request.config.getoption("benchmark_disable")
    mod, _tmod, _ = _inputs(inplace_inputs, model, False)
    out = benchmark(dataflow_use_inplace_calls, mod)
    _record(benchmark, out, mod)
    if _tvm() is not None and benchmarking:
        tmod = _inputs(inplace_inputs, model, True)[1]
        ours_s, tvm_s = _alternating(mod, tmod, 15)
        benchmark.extra_info.update(alternating_ours_s=ours_s, alternating_tvm_s=tvm_s,
                                    alternating_ratio=tvm_s / ours_s)


@pytest.mark.benchmark(group="dataflow-use-inplace-calls-models")
@pytest.mark.parametrize("model", list_highlevel_models())
def test_inplace_model_tvm(benchmark, inplace_inputs, model):
    if _tvm() is None:
        pytest.skip("apache-tvm is not installed")
    from tvm import relax

    tmod = _inputs(inplace_inputs, model, True)[1]
    out = benchmark(relax.transform.DataflowUseInplaceCalls(), tmod)
    benchmark.extra_info.update(n_functions=len(out.functions))


@pytest.mark.benchmark(group="dataflow-use-inplace-calls-synthetic")
@pytest.mark.parametrize("n", SIZES)
def test_inplace_synthetic_ours(benchmark, request, inplace_inputs, n):
    benchmarking = not request.config.getoption("benchmark_disable")
    mod = _inputs(inplace_inputs, n, False)[0]
    out = benchmark.pedantic(dataflow_use_inplace_calls, args=(mod,), rounds=3 if n < SIZES[-1] else 1, iterations=1)
    _record(benchmark, out, mod)
    assert _inplace_calls(out) > n // 2
    if _tvm() is not None and benchmarking and n < SIZES[-1]:
        tmod = _inputs(inplace_inputs, n, True)[1]
        ours_s, tvm_s = _alternating(mod, tmod, 2)
        benchmark.extra_info.update(alternating_ours_s=ours_s, alternating_tvm_s=tvm_s,
                                    alternating_ratio=tvm_s / ours_s)


@pytest.mark.benchmark(group="dataflow-use-inplace-calls-synthetic")
@pytest.mark.parametrize("n", SIZES)
def test_inplace_synthetic_tvm(benchmark, request, inplace_inputs, n):
    if _tvm() is None:
        pytest.skip("apache-tvm is not installed")
    if n > SIZES[0] and request.config.getoption("benchmark_disable"):
        pytest.skip("TVM above 3k bindings only when benchmarking (12 s at 30k, minutes at 300k)")
    from tvm import relax

    tmod = _inputs(inplace_inputs, n, True)[1]
    out = benchmark.pedantic(relax.transform.DataflowUseInplaceCalls(), args=(tmod,), rounds=1, iterations=1)
    benchmark.extra_info.update(n_functions=len(out.functions))


def test_synthetic_chains_are_the_same_program():
    """At 60 bindings, TVM's pass on its chain equals ours on our chain (so the timings above
    compare the same work)."""
    tvm = _tvm()
    if tvm is None:
        pytest.skip("apache-tvm is not installed")
    from tvm import relax

    ours = dataflow_use_inplace_calls(synthetic_chain(60), tvm_compat=True)
    theirs = relax.transform.DataflowUseInplaceCalls()(tvm_synthetic_chain(60))
    parsed = tvm_from_source(ours.script())
    names = sorted(gv.name_hint for gv in theirs.functions)
    assert sorted(gv.name_hint for gv in parsed.functions) == names
    for name in names:
        tvm.ir.assert_structural_equal(parsed[name], theirs[name], map_free_vars=True)
