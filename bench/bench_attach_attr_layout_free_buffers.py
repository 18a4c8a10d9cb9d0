"""AttachAttrLayoutFreeBuffers (with its DeadCodeElimination): ours against Apache TVM 0.27's
pass on the same modules, same run.

Workloads:

- the high-level real models (``memcore_py.examples.models.highlevel``: ResNet-50, BERT-base,
  GPT-2, a Llama-style decoder) legalized by TVM's ``LegalizeOps`` (the pass's real input:
  call_tir to real TIR, weights as parameters after ``num_input``), read by each side from
  TVM's text of the legalized module;
- synthetic dataflow chains of 30k / 300k ``call_tir`` bindings
  (:func:`memcore_py.testing.layout_free_programs.call_tir_chain`: matmul, add and relu in
  turn, 16 weights, every 10th result unused so DCE removes 10% of the bindings). TVM's
  input is built with its node constructors from a parsed template (its parser is too slow
  at these sizes).

``extra_info``: bindings in the input and output, PrimFuncs in the input and output, and
for our runs when TVM is installed and benchmarking is on, the best of alternating calls of
ours and TVM's (``alternating_ours_s``, ``alternating_tvm_s``, ``alternating_ratio``). With
``--benchmark-disable`` (the CI smoke run) TVM runs on one real model only and the
synthetic chains are cut to 3k bindings.
"""
from __future__ import annotations

import time

import pytest

import memcore_py
from memcore_py.examples.models import highlevel_model_text, list_highlevel_models
from memcore_py.ir.expr import Function, PrimFunc
from memcore_py.testing.layout_free_programs import call_tir_chain
from memcore_py.transform.attach_attr_layout_free_buffers import AttachAttrLayoutFreeBuffers
from _helpers import tvm_from_source

SIZES = (30_000, 300_000)
SMOKE_SIZE = 3_000


def _tvm():
    try:
        import tvm
        from tvm import relax  # noqa: F401
    except ImportError:
        return None
    return tvm


def _counts(mod, prefix):
    """Bindings and PrimFuncs of a memcore or TVM module, as extra_info keys."""
    funcs = list(mod.functions.values())
    if isinstance(mod, memcore_py.ir.IRModule):
        relax_funcs = [f for f in funcs if isinstance(f, Function)]
        prims = sum(isinstance(f, PrimFunc) for f in funcs)
    else:
        from tvm import relax, tirx

        relax_funcs = [f for f in funcs if isinstance(f, relax.Function)]
        prims = sum(isinstance(f, tirx.PrimFunc) for f in funcs)
    bindings = sum(len(blk.bindings) for f in relax_funcs for blk in f.body.blocks)
    return {f"{prefix}_bindings": bindings, f"{prefix}_prim_funcs": prims}


def tvm_call_tir_chain(n: int):
    """TVM's module of ``call_tir_chain(n)``: the PrimFuncs and the first three bindings come
    from TVM's parser, the rest is built with TVM's node constructors (same names, calls
    and types)."""
    tvm = _tvm()
    from tvm import relax

    template = tvm_from_source(call_tir_chain(3, dead_every=0))
    main = template["main"]
    params = list(main.params)
    x, weights = params[0], params[1:]
    first = main.body.blocks[0].bindings
    protos = [b.value for b in first[:3]]  # matmul, add, relu calls
    ty = first[0].var.ty
    bindings, prev = [], x
    dead_every = 10
    for i in range(n):
        kind = i % 3
        proto = protos[kind]
        fields = [prev] if kind == 2 else [prev, weights[i % len(weights)]]
        call = relax.Call(proto.op, [proto.args[0], relax.Tuple(fields)], proto.attrs, proto.ty_args)
        v = relax.DataflowVar(f"lv{i}", ty)
        bindings.append(relax.VarBinding(v, call))
        if not (i % dead_every == dead_every - 1):
            prev = v
    gv = relax.Var("gv", ty)
    bindings.append(relax.VarBinding(gv, prev))
    body = relax.SeqExpr([relax.DataflowBlock(bindings)], gv)
    func = relax.Function(params, body, main.ret_ty, main.is_pure, main.attrs)
    funcs = {g: f for g, f in template.functions.items() if g.name_hint != "main"}
    funcs[template.get_global_var("main")] = func
    return tvm.IRModule(funcs)


@pytest.fixture(scope="session")
def attach_inputs():
    return {}


def _inputs(cache, key, tvm_needed):
    """[ours, TVM's or None] for a model name or a chain size."""
    if key not in cache:
        if isinstance(key, str):
            tvm = _tvm()
            if tvm is None:
                pytest.skip("the legalized models need apache-tvm (LegalizeOps)")
            from tvm import relax

            legal = relax.transform.LegalizeOps()(tvm_from_source(highlevel_model_text(key)))
            text = legal.script()
            cache[key] = [memcore_py.parse(text), tvm_from_source(text)]
        else:
            cache[key] = [memcore_py.parse(call_tir_chain(key)), None]
    entry = cache[key]
    if tvm_needed and entry[1] is None:
        entry[1] = tvm_call_tir_chain(key)
    return entry


def _alternating(mod, tmod, rounds):
    from tvm import relax

    ours, theirs = AttachAttrLayoutFreeBuffers(), relax.transform.AttachAttrLayoutFreeBuffers()
    t_ours, t_tvm = [], []
    for _ in range(rounds):
        t = time.perf_counter()
        ours(mod)
        t_ours.append(time.perf_counter() - t)
        t = time.perf_counter()
        theirs(tmod)
        t_tvm.append(time.perf_counter() - t)
    return min(t_ours), min(t_tvm)


def _record_alternating(benchmark, mod, tmod, rounds):
    ours_s, tvm_s = _alternating(mod, tmod, rounds)
    benchmark.extra_info.update(alternating_ours_s=ours_s, alternating_tvm_s=tvm_s, alternating_ratio=tvm_s / ours_s)




@pytest.mark.benchmark(group="attach-attr-layout-free-buffers-models")
@pytest.mark.parametrize("model", list_highlevel_models())
def test_attach_model_ours(benchmark, request, attach_inputs, model):
    benchmarking = not request.config.getoption("benchmark_disable")
    if not benchmarking and model != list_highlevel_models()[0]:
        pytest.skip("smoke run: one model (LegalizeOps and TVM's parser take seconds a model)")
    mod, tmod = _inputs(attach_inputs, model, True)
    out = benchmark(AttachAttrLayoutFreeBuffers(), mod)
    benchmark.extra_info.update(**_counts(mod, "input"), **_counts(out, "output"))
    if benchmarking:
        _record_alternating(benchmark, mod, tmod, 15)


@pytest.mark.benchmark(group="attach-attr-layout-free-buffers-models")
@pytest.mark.parametrize("model", list_highlevel_models())
def test_attach_model_tvm(benchmark, request, attach_inputs, model):
    if _tvm() is None:
        pytest.skip("apache-tvm is not installed")
    if request.config.getoption("benchmark_disable") and model != list_highlevel_models()[0]:
        pytest.skip("smoke run: one model")
    from tvm import relax

    tmod = _inputs(attach_inputs, model, True)[1]
    out = benchmark(relax.transform.AttachAttrLayoutFreeBuffers(), tmod)
    benchmark.extra_info.update(**_counts(tmod, "input"), **_counts(out, "output"))


def _size(request, n):
    return n if not request.config.getoption("benchmark_disable") else min(n, SMOKE_SIZE)


@pytest.mark.benchmark(group="attach-attr-layout-free-buffers-synthetic")
@pytest.mark.parametrize("n", SIZES)
def test_attach_synthetic_ours(benchmark, request, attach_inputs, n):
    n = _size(request, n)
    mod = _inputs(attach_inputs, n, False)[0]
    out = benchmark.pedantic(AttachAttrLayoutFreeBuffers(), args=(mod,), rounds=3, iterations=1)
    counts = _counts(out, "output")
    benchmark.extra_info.update(**_counts(mod, "input"), **counts)
    assert counts["output_prim_funcs"] == 3 and counts["output_bindings"] < _counts(mod, "input")["input_bindings"]
    if _tvm() is not None and not request.config.getoption("benchmark_disable") and n <= SIZES[0]:
        _record_alternating(benchmark, mod, _inputs(attach_inputs, n, True)[1], 2)


@pytest.mark.benchmark(group="attach-attr-layout-free-buffers-synthetic")
@pytest.mark.parametrize("n", SIZES)
def test_attach_synthetic_tvm(benchmark, request, attach_inputs, n):
    if _tvm() is None:
        pytest.skip("apache-tvm is not installed")
    if n > SIZES[0]:
        pytest.skip("TVM's pass grows quadratically here (0.37 s at 3k, 44 s at 30k bindings): "
                    "300k would take over an hour")
    n = _size(request, n)
    from tvm import relax

    tmod = _inputs(attach_inputs, n, True)[1]
    out = benchmark.pedantic(relax.transform.AttachAttrLayoutFreeBuffers(), args=(tmod,), rounds=1, iterations=1)
    benchmark.extra_info.update(**_counts(tmod, "input"), **_counts(out, "output"))


def test_synthetic_chains_are_the_same_program():
    """At 60 bindings TVM's pass on its chain equals ours on our chain (the timings above
    compare the same work)."""
    tvm = _tvm()
    if tvm is None:
        pytest.skip("apache-tvm is not installed")
    from tvm import relax

    ours = AttachAttrLayoutFreeBuffers()(memcore_py.parse(call_tir_chain(60)))
    theirs = relax.transform.AttachAttrLayoutFreeBuffers()(tvm_call_tir_chain(60))
    tvm.ir.assert_structural_equal(tvm_from_source(ours.script()), theirs)
