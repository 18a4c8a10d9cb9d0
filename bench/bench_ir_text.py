"""TVMScript text: memcore's printer and parser on 1k/10k/100k-binding functions, against
Apache TVM 0.27's own parser and printer in the same run (when ``tvm`` is installed).

Workload: one function in the form TVM's ``CallTIRRewrite`` leaves it, the input of
StaticPlanBlockMemory: per op ``alloc = R.builtin.alloc_tensor(...)``, a hidden DPS call
``cls.f(a, b, alloc)`` and a rebinding ``y = alloc`` (3 bindings), cycling through four
tensor types and two PrimFuncs; each op reads the two previous results. Built directly with
IR constructors (deterministic, about 1 s for 100k bindings).

Every benchmark records ``n_bindings``, ``bindings_per_s`` (from the fastest round, or
from the single run under ``--benchmark-disable``) and ``text_bytes`` in ``extra_info``.
TVM's parser needs ~23 s for the 10k module (~440 bindings/s), so its baseline runs on the
1k module only; TVM's printer is measured on the module TVM parsed.

Run: ``pytest bench/bench_ir_text.py --benchmark-only`` (results: bench/README.md,
"IR text").
"""
import time

import pytest

from memcore_py import parse
from memcore_py.ir import (
    BindingBlock,
    Call,
    DataTypeImm,
    Function,
    GlobalVar,
    IntImm,
    IRModule,
    PrimFunc,
    PrimFuncParam,
    PrimValue,
    SeqExpr,
    ShapeExpr,
    StringImm,
    TensorType,
    TupleType,
    Var,
    VarBinding,
    get_op,
)
from memcore_py.ir.text.printer import script
from _helpers import tvm_from_source

SIZES = [1_000, 10_000, 100_000]
TVM_SIZES = [1_000]
_VOID = TupleType(())
_TYPES = [
    TensorType(s, d) for s, d in (((2, 3), "float32"), ((4, 8), "float32"), ((16,), "int32"), ((2, 3), "float16"))
]


def lowered_chain(n_bindings: int) -> IRModule:
    """An after-CallTIRRewrite function with ``n_bindings`` bindings (a multiple of 3)."""
    alloc_op = get_op("relax.builtin.alloc_tensor")
    funcs = {}
    gvs = []
    for k, ty in enumerate(_TYPES):
        for name in (f"add{k}", f"mul{k}"):
            params = [PrimFuncParam(p, ty.dtype, ty.shape) for p in ("a", "b", "out")]
            funcs[name] = PrimFunc(params, {"tirx.noalias": True}, private=True)
        gvs.append((GlobalVar(f"add{k}"), GlobalVar(f"mul{k}")))
    params = [Var(f"x{k}", ty) for k, ty in enumerate(_TYPES)]
    prev = {k: [p, p] for k, p in enumerate(params)}
    bindings = []
    i = 0
    last = params[0]
    while len(bindings) + 3 <= n_bindings:
        k = i % len(_TYPES)
        ty = _TYPES[k]
        alloc = Var("alloc" if i == 0 else f"alloc{i}", ty)
        args = [
            ShapeExpr([d.value for d in ty.shape]),
            DataTypeImm(ty.dtype),
            PrimValue(IntImm(0)),
            StringImm("global"),
        ]
        bindings.append(VarBinding(alloc, Call(alloc_op, args, ty_args=(ty,))))
        a, b = prev[k]
        bindings.append(VarBinding(Var("_", _VOID), Call(gvs[k][i % 2], [a, b, alloc])))
        y = Var(f"y{i}", ty)
        bindings.append(VarBinding(y, alloc))
        prev[k] = [b, y]
        last = y
        i += 1
    body = SeqExpr([BindingBlock(bindings)], last)
    main = Function(params, body, last.ty, {"global_symbol": "main", "relax.force_pure": True})
    funcs["main"] = main
    return IRModule(funcs)


def _tvm():
    try:
        import tvm
    except ImportError:
        return None
    return tvm


_CACHE = {}


def workload(n):
    """(module, text, n_bindings), built once per size."""
    if n not in _CACHE:
        mod = lowered_chain(n - n % 3)
        text = script(mod)
        _CACHE[n] = (mod, text, len(mod["main"].body.blocks[0].bindings))
    return _CACHE[n]


def _timed(fn, times):
    def run(*args):
        t0 = time.perf_counter()
        out = fn(*args)
        times.append(time.perf_counter() - t0)
        return out

    return run


def _record(benchmark, n_bindings, times, text):
    best = min(times)
    benchmark.extra_info.update(
        n_bindings=n_bindings,
        bindings_per_s=round(n_bindings / best),
        best_seconds=best,
        text_bytes=len(text),
    )


def _rounds(n):
    return 3 if n >= 100_000 else 5


@pytest.mark.benchmark(group="ir-text-print")
@pytest.mark.parametrize("n", SIZES, ids=lambda n: f"{n // 1000}k")
def test_memcore_print(benchmark, n):
    mod, text, nb = workload(n)
    times = []
    out = benchmark.pedantic(_timed(script, times), args=(mod,), rounds=_rounds(n), iterations=1)
    assert out == text
    _record(benchmark, nb, times, text)


@pytest.mark.benchmark(group="ir-text-parse")
@pytest.mark.parametrize("n", SIZES, ids=lambda n: f"{n // 1000}k")
def test_memcore_parse(benchmark, n):
    mod, text, nb = workload(n)
    times = []
    out = benchmark.pedantic(_timed(parse, times), args=(text,), rounds=_rounds(n), iterations=1)
    assert len(out["main"].body.blocks[0].bindings) == nb
    _record(benchmark, nb, times, text)


@pytest.mark.benchmark(group="ir-text-parse")
@pytest.mark.parametrize("n", TVM_SIZES, ids=lambda n: f"{n // 1000}k")
def test_tvm_parse(benchmark, n):
    tvm = _tvm()
    if tvm is None:
        pytest.skip("apache-tvm not installed")
    _, text, nb = workload(n)
    times = []
    out = benchmark.pedantic(_timed(tvm.script.from_source, times), args=(text,), rounds=3, iterations=1)
    _CACHE[("tvm", n)] = out
    _record(benchmark, nb, times, text)


@pytest.mark.benchmark(group="ir-text-print")
@pytest.mark.parametrize("n", TVM_SIZES, ids=lambda n: f"{n // 1000}k")
def test_tvm_print(benchmark, n):
    tvm = _tvm()
    if tvm is None:
        pytest.skip("apache-tvm not installed")
    _, text, nb = workload(n)
    tvm_mod = _CACHE.get(("tvm", n))
    if tvm_mod is None:
        tvm_mod = _CACHE[("tvm", n)] = tvm_from_source(text)
    times = []
    out = benchmark.pedantic(_timed(tvm_mod.script, times), rounds=5, iterations=1)
    _record(benchmark, nb, times, out)
