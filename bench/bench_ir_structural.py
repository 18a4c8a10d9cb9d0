"""Structural equality: memcore's ``structural_equal`` on 1k/10k/100k-binding modules, against
Apache TVM 0.27's ``tvm_ffi.structural_equal`` on the same modules in the same run.

Workloads (two independently built, equal modules per size; built once per session):

- ``lowered``: :func:`memcore_py.testing.random_lowered_module` (seed 0): one function in the
  form StaticPlanBlockMemory receives (alloc_tensor + DPS calls to PrimFuncs, packed calls,
  views, tuples), plus its signature-only PrimFuncs.
- ``mixed``: :func:`memcore_py.testing.random_module` (seed 0): dataflow blocks, If, tuples,
  match_cast, call_tir, several functions (memcore only).

TVM baseline: the ``lowered`` modules converted to TVM objects. TVM's TVMScript parser
needs ~30 s at 10k bindings and grows faster than linearly, so the modules are rebuilt
with TVM's own ``relax.BlockBuilder`` from our IR (:func:`to_tvm`; PrimFuncs through TVM's
parser) instead; at 1k the converted module is checked to be structurally equal (in TVM) to
TVM's parse of our printed text, so both routes give the same TVM module.

``extra_info``: ``n_bindings``, ``bindings_per_s`` and ``best_seconds`` from the fastest
round (or the single run under ``--benchmark-disable``), and ``equal`` (the result).

Run: ``python -m pytest bench/bench_ir_structural.py --benchmark-only`` (results in
bench/README.md, "IR structural equality").
"""
import time

import pytest

from memcore_py.ir import structural_equal
from memcore_py.testing import count_bindings, random_lowered_module, random_module
from _helpers import tvm_from_source

SIZES = [1_000, 10_000, 100_000]
WORKLOADS = {"lowered": random_lowered_module, "mixed": random_module}

_CACHE = {}


def pair(workload: str, n: int):
    """Two independently built, structurally equal modules (cached per session)."""
    key = (workload, n)
    if key not in _CACHE:
        gen = WORKLOADS[workload]
        _CACHE[key] = (gen(0, n), gen(0, n))
    return _CACHE[key]


def _timed(fn, times):
    def run(*args):
        t0 = time.perf_counter()
        out = fn(*args)
        times.append(time.perf_counter() - t0)
        return out

    return run


def _rounds(n):
    return 3 if n >= 100_000 else (5 if n >= 10_000 else 20)


def _record(benchmark, n_bindings, times, equal):
    best = min(times)
    benchmark.extra_info.update(
        n_bindings=n_bindings, bindings_per_s=round(n_bindings / best), best_seconds=best, equal=bool(equal)
    )


@pytest.mark.benchmark(group="ir-structural-equal")
@pytest.mark.parametrize("n", SIZES, ids=lambda n: f"{n // 1000}k")
@pytest.mark.parametrize("workload", list(WORKLOADS))
def test_memcore_structural_equal(benchmark, workload, n):
    a, b = pair(workload, n)
    assert a is not b
    times = []
    equal = benchmark.pedantic(_timed(structural_equal, times), args=(a, b), rounds=_rounds(n), iterations=1)
    assert equal
    _record(benchmark, count_bindings(a), times, equal)


# ----------------------------------------------------------------------------------- TVM
def to_tvm(mod):
    """The same module as TVM objects: PrimFuncs via TVM's parser, Relax functions rebuilt
    binding by binding with ``tvm.relax.BlockBuilder`` (covers what ``random_lowered_module``
    makes: alloc_tensor, DPS and packed calls, reshape, tuples, get-items, rebindings)."""
    import tvm
    from tvm import relax

    from memcore_py import ir as M
    from memcore_py.ir.text.printer import script

    prims = M.IRModule({gv: f for gv, f in mod.functions.items() if isinstance(f, M.PrimFunc)})
    tmod = tvm_from_source(script(prims)) if len(prims) else tvm.IRModule({})
    gvs = {gv.name_hint: gv for gv in tmod.get_global_vars()}
    bb = relax.BlockBuilder(tmod)
    sym = {}
    vmap = {}

    def dim(d):
        if isinstance(d, M.IntImm):
            return d.value
        if isinstance(d, M.PrimVar):
            return sym.setdefault(d.name, tvm.tirx.Var(d.name, "int64"))
        raise NotImplementedError(f"to_tvm: dim {d!r}")

    def ty(t):
        if isinstance(t, M.TensorType):
            return relax.TensorType([dim(d) for d in t.shape], t.dtype)
        if isinstance(t, M.TupleType):
            return relax.TupleType([ty(f) for f in t.fields])
        if isinstance(t, M.ObjectType):
            return relax.ObjectType()
        raise NotImplementedError(f"to_tvm: type {t!r}")

    def expr(e):
        c = type(e)
        if c is M.Var:
            return vmap[e]
        if c is M.Tuple:
            return relax.Tuple([expr(f) for f in e.fields])
        if c is M.TupleGetItem:
            return relax.TupleGetItem(expr(e.tuple_value), e.index)
        if c is M.ShapeExpr:
            return relax.ShapeExpr([dim(d) for d in e.values])
        if c is M.Call:
            op = e.op
            if isinstance(op, M.GlobalVar):
                return relax.Call(gvs[op.name], [expr(a) for a in e.args])
            if isinstance(op, M.ExternFunc):
                return relax.Call(relax.ExternFunc(op.global_symbol), [expr(a) for a in e.args],
                                  ty_args=[ty(t) for t in e.ty_args])
            if op.name == "relax.builtin.alloc_tensor":
                shape, dtype, dev, scope = e.args
                return relax.op.builtin.alloc_tensor(expr(shape), dtype.value, dev.value.value, scope.value)
            if op.name == "relax.reshape":
                return relax.op.reshape(expr(e.args[0]), expr(e.args[1]))
        raise NotImplementedError(f"to_tvm: {e!r}")

    for gv, f in mod.functions.items():
        if not isinstance(f, M.Function):
            continue
        params = [vmap.setdefault(p, relax.Var(p.name, ty(p.ty))) for p in f.params]
        attrs = {k: v for k, v in f.attrs.items() if k != "global_symbol"}
        with bb.function(gv.name, params, attrs=attrs):
            for block in f.body.blocks:
                for b in block.bindings:
                    vmap[b.var] = bb.emit(expr(b.value), b.var.name)
            bb.emit_func_output(expr(f.body.body))
    return bb.get()


def tvm_pair(n):
    key = ("tvm", n)
    if key not in _CACHE:
        a, b = pair("lowered", n)
        _CACHE[key] = (to_tvm(a), to_tvm(b))
    return _CACHE[key]


@pytest.mark.benchmark(group="ir-structural-equal")
@pytest.mark.parametrize("n", SIZES, ids=lambda n: f"{n // 1000}k")
def test_tvm_structural_equal(benchmark, n):
    pytest.importorskip("tvm", reason="apache-tvm not installed (the baseline needs it)")
    import tvm_ffi

    ta, tb = tvm_pair(n)
    if n == SIZES[0]:
        from memcore_py.ir.text.printer import script

        parsed = tvm_from_source(script(pair("lowered", n)[0]))
        assert tvm_ffi.structural_equal(ta, parsed), "to_tvm and TVM's parser disagree"
    times = []
    equal = benchmark.pedantic(_timed(tvm_ffi.structural_equal, times), args=(ta, tb), rounds=_rounds(n),
                               iterations=1)
    assert equal
    _record(benchmark, count_bindings(pair("lowered", n)[0]), times, equal)
