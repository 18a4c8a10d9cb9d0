"""Where TVM users are: small modules (fixed cost per call), the shipped real models static and
with a bounded / unbounded dynamic sequence length, TVM mode and arena mode, against Apache
TVM's own passes in the same run.

Workloads
---------
- ``small``: :func:`memcore_py.testing.memory_programs.chain_module` with 7 ops = 21 bindings
  (the fixed cost of a pass call), planned / killed by memcore and by TVM (the same module
  printed and parsed by TVM).
- real models (``memcore_py.examples.models``): ``static`` is the shipped text;
  ``bounded`` / ``unbounded`` (the transformer models) rewrite it with
  :func:`dynamic_text`: the sequence length becomes a symbolic ``n`` in every Relax shape
  (``R.Tensor`` annotations and ``R.shape`` values; PrimFunc signatures untouched),
  ``bounded`` adds ``R.func_attr({"tir_var_upper_bound": {"n": 1024}})``. TVM's parser
  accepts them, and memcore's plan is structurally equal to TVM's on every one (checked
  once when the bench was written; ``tests/oracle`` covers the rules).
- ``per-binding``: an element-wise chain of 300 ops (900 bindings) with constant shapes
  ``(128, w)``, symbolic ``(n, w)`` and bounded symbolic shapes: memcore's and TVM's time per
  binding and the symbolic / constant ratio of each.

The SPBM benchmarks also make the **pure-pass check** of issue 12's targets: each pass alone,
back to back, timed with ``time.thread_time`` (this thread's CPU time, blind to the other
processes of a shared machine), best of ``PURE_ROUNDS`` (``SMALL_PURE_ROUNDS`` on the
21-binding module), memcore and TVM in the same test on
the same module text: ``pure_memcore_seconds``, ``pure_tvm_seconds``,
``pure_speedup_vs_tvm``; in arena mode also ``pure_tvm_mode_seconds`` (memcore's TVM mode
measured alongside), ``arena_vs_tvm_mode`` and ``greedy_at_lower_bound`` (the offset
heuristics alone reach the max-live bound of every pool, so arena mode runs no search).

Every memcore benchmark measures TVM's pass on the same module in the same process,
interleaved with memcore's (best of ``ROUNDS`` each), and records in ``extra_info``:
``n_bindings``, ``planned_bytes`` (this mode; an expression string when symbolic),
``tvm_mode_bytes``, ``lower_bound`` (None when the plan is symbolic), ``memcore_seconds``,
``tvm_seconds`` and ``speedup_vs_tvm`` (interleaved: each call finds the other system's
data in the CPU caches, as in a real pipeline), and the same measured back to back
(``memcore_warm_seconds``, ``tvm_warm_seconds``, ``speedup_vs_tvm_warm``; memcore's walk
over Python IR objects is 1.5-3x faster with warm caches, TVM's C++ much less). TVM modules are
parsed lazily, once per session
(TVM's parser needs seconds per real model).

Run: ``python -m pytest bench/bench_small_and_dynamic.py --benchmark-only`` (smoke:
``--benchmark-disable``). Results: bench/README.md, "Small modules and dynamic shapes".
"""
from __future__ import annotations

import re
import time

import pytest

from _passes_common import best_alternating
from memcore_py.examples.models import list_models, model_text
from _helpers import tvm_from_source

#: Sequence length of each shipped transformer model (made symbolic by ``dynamic_text``).
SEQUENCE_LENGTH = {"bert_base": 128, "gpt2_small": 128, "llama_small": 128, "vit_b16": 197}
#: Upper bound of the ``bounded`` variants.
UPPER_BOUND = 1024
#: Interleaved rounds of memcore vs TVM (best of each).
ROUNDS = 7
#: Back-to-back calls of each pass in the pure-pass check (best of each, time.thread_time);
#: more on the 21-binding module, whose ~50 us calls are within the noise of 21 rounds.
PURE_ROUNDS = 21
SMALL_PURE_ROUNDS = 201
VARIANTS = [(m, "static") for m in list_models()] + [
    (m, kind) for m in list_models() if m in SEQUENCE_LENGTH for kind in ("bounded", "unbounded")
]


def dynamic_text(name: str, upper_bound: int | None = None) -> str:
    """Model ``name``'s text with its sequence length replaced by a symbolic ``n`` in every
    Relax shape, bounded by ``upper_bound`` (``tir_var_upper_bound``) when given."""
    text = model_text(name)
    seq = SEQUENCE_LENGTH[name]
    i = text.index("@R.function")
    head, rel = text[:i], text[i:]
    literal = re.compile(r"(?<![\w.])%d(?![\w.])" % seq)
    rel = re.sub(r"R\.Tensor\(\([^)]*\)|R\.shape\(\[[^\]]*\]\)", lambda m: literal.sub("n", m.group(0)), rel)
    # the signature defines n (quoted), the body declares it
    d = rel.index("def main(")
    e = rel.index(":\n", rel.index(") -> ", d))
    sig = re.sub(r"(?<=[(, ])n(?=[,)])", '"n"', rel[d:e])
    rel = rel[:d] + sig + ":\n" + " " * 8 + "n = T.int64()\n" + rel[e + 2:]
    if upper_bound is not None:
        rel = rel.replace("R.func_attr({", 'R.func_attr({"tir_var_upper_bound": {"n": %d}, ' % upper_bound, 1)
    return head + rel


def chain_text(n_ops: int, dim: str, bound: int | None = None) -> str:
    """A post-CallTIRRewrite element-wise chain of ``n_ops`` ops (3 bindings each) on tensors
    ``(dim, w)`` for w cycling over 4 widths; ``dim`` is ``"128"`` or ``"n"``."""
    widths = (256, 128, 256, 512)
    attrs = '"relax.force_pure": True' + (f', "tir_var_upper_bound": {{"n": {bound}}}' if bound else "")
    lines = []
    prev = "x"
    for i in range(n_ops):
        w = widths[i % 4]
        lines.append(f'        a{i}: R.Tensor(({dim}, {w}), dtype="float32") = R.builtin.alloc_tensor('
                     f'R.shape([{dim}, {w}]), R.dtype("float32"), R.prim_value(0), R.str("global"))')
        lines.append(f"        cls.kernel(x, {prev}, a{i})")
        lines.append(f'        y{i}: R.Tensor(({dim}, {w}), dtype="float32") = a{i}')
        prev = f"y{i}"
    sig_dim = '"n"' if dim == "n" else dim
    decl = "        n = T.int64()\n" if dim == "n" else ""
    body = "\n".join(lines)
    return f'''# from tvm.script import ir as I
# from tvm.script import tirx as T
# from tvm.script import relax as R

@I.ir_module
class Module:
    @T.prim_func(private=True)
    def kernel(A0: T.handle, A1: T.handle, A2: T.handle):
        T.evaluate(0)

    @R.function
    def main(x: R.Tensor(({sig_dim}, 256), dtype="float32")) -> R.Tensor(({sig_dim}, 256), dtype="float32"):
{decl}        R.func_attr({{{attrs}}})
        cls = Module
{body}
        return x
'''


def _tvm():
    try:
        import tvm
        from tvm import relax  # noqa: F401
    except ImportError:
        return None
    return tvm


def _best_interleaved(ours, theirs, rounds=ROUNDS):
    """Best seconds of ``ours()`` and ``theirs()`` (None: not measured), run alternately."""
    return best_alternating(ours, theirs, rounds)


def _count_bindings(mod) -> int:
    from memcore_py.testing.random_ir import count_bindings

    return count_bindings(mod)


class _Case:
    """One module in both systems (TVM's parsed on first use) and its planned forms."""

    def __init__(self, text: str):
        import memcore_py
        from memcore_py.transform import LowerAllocTensor, StaticPlanBlockMemory
        from memcore_py.transform.static_plan_block_memory import plan_statistics

        self.text = text
        self.mod = memcore_py.parse(text)
        self.lowered = LowerAllocTensor()(StaticPlanBlockMemory()(self.mod))
        self.n_bindings = _count_bindings(self.mod)
        self.stats = {mode: plan_statistics(self.mod, mode) for mode in ("tvm", "arena")}
        self._tvm = None

    def tvm_modules(self):
        """(TVM's module, TVM's planned + lowered module), or None without TVM."""
        tvm = _tvm()
        if tvm is None:
            return None
        if self._tvm is None:
            from tvm import relax

            tmod = tvm_from_source(self.text)
            lowered = relax.transform.LowerAllocTensor()(relax.transform.StaticPlanBlockMemory()(tmod))
            self._tvm = (tmod, lowered)
        return self._tvm

    def planned_bytes(self, mode: str):
        """Constant bytes of ``mode``'s plan, or its symbolic total as text."""
        from memcore_py.analysis.arith import SizePolynomial
        from memcore_py.analysis.storage_tokens import analyze_storage_tokens
        from memcore_py.planning.allocate import plan_memory

        plan = plan_memory(analyze_storage_tokens(self.mod).program, mode)
        poly = SizePolynomial([s.nbytes for s in plan.storages])
        return poly.value if poly.value is not None else str(poly)


_CASES: dict = {}


def _case(key, make_text):
    if key not in _CASES:
        _CASES[key] = _Case(make_text())
    return _CASES[key]


def _model_case(name, kind):
    def text():
        if kind == "static":
            return model_text(name)
        return dynamic_text(name, UPPER_BOUND if kind == "bounded" else None)

    return _case((name, kind), text)


def _small_case():
    def text():
        from memcore_py.testing.memory_programs import chain_module

        return chain_module(7).script()

    return _case("small", text)


def _record(benchmark, case, ours_s, tvm_s, mode=None):
    info = {
        "n_bindings": case.n_bindings,
        "n_planned": case.stats["tvm"]["n_planned"],
        "tvm_mode_bytes": case.planned_bytes("tvm"),
        # the max-live bound of the constant-size tensors; not a bound of a symbolic plan
        "lower_bound": case.stats["tvm"]["lower_bound"] if isinstance(case.planned_bytes("tvm"), int) else None,
        "memcore_seconds": ours_s,
        "memcore_us_per_binding": ours_s / case.n_bindings * 1e6,
    }
    if mode is not None:
        info["planned_bytes"] = case.planned_bytes(mode)
    if tvm_s is not None:
        info["tvm_seconds"] = tvm_s
        info["tvm_us_per_binding"] = tvm_s / case.n_bindings * 1e6
        info["speedup_vs_tvm"] = tvm_s / ours_s
    benchmark.extra_info.update(info)


def _versus_tvm(benchmark, case, ours, arg, tvm_pass_name, tvm_index, mode=None):
    """Benchmark ``ours(arg)``, then time it against TVM's pass ``tvm_pass_name`` on TVM's
    module ``tvm_index`` (0: as parsed, 1: planned and lowered), interleaved; record both."""
    benchmark(ours, arg)
    tmods = case.tvm_modules()
    theirs = None
    if tmods is not None:
        tvm_pass = getattr(_tvm().relax.transform, tvm_pass_name)()
        theirs = lambda: tvm_pass(tmods[tvm_index])  # noqa: E731
    ours_s, tvm_s = _best_interleaved(lambda: ours(arg), theirs)
    _record(benchmark, case, ours_s, tvm_s, mode)
    # warm: each system run back to back (its data stays in the CPU caches); memcore's
    # interpreted walk over Python IR objects loses more than TVM's C++ when interleaved
    warm_o = _best_interleaved(lambda: ours(arg), None)[0]
    benchmark.extra_info["memcore_warm_seconds"] = warm_o
    if theirs is not None:
        warm_t = _best_interleaved(theirs, None)[0]
        benchmark.extra_info["tvm_warm_seconds"] = warm_t
        benchmark.extra_info["speedup_vs_tvm_warm"] = warm_t / warm_o


def _best_thread_time(fn, rounds=PURE_ROUNDS):
    """Best ``time.thread_time`` seconds of ``rounds`` back-to-back calls of ``fn()`` (the
    result is dropped inside the timed region, as in the other timings)."""
    best = float("inf")
    for _ in range(rounds):
        t0 = time.thread_time()
        fn()
        best = min(best, time.thread_time() - t0)
    return best


def _pure_pass_check(benchmark, case, mode, rounds=PURE_ROUNDS):
    """Issue 12's same-run pure-pass check (module docstring), into ``extra_info``."""
    from memcore_py.transform import StaticPlanBlockMemory
    from memcore_py.transform.static_plan_block_memory import plan_statistics

    ours = StaticPlanBlockMemory(mode=mode)
    info = {"pure_rounds": rounds, "pure_memcore_seconds": _best_thread_time(lambda: ours(case.mod), rounds)}
    if mode == "arena":
        tvm_mode = StaticPlanBlockMemory(mode="tvm")
        info["pure_tvm_mode_seconds"] = _best_thread_time(lambda: tvm_mode(case.mod), rounds)
        # measured again after TVM mode, so that both see the same machine state
        info["pure_memcore_seconds"] = min(info["pure_memcore_seconds"],
                                           _best_thread_time(lambda: ours(case.mod), rounds))
        info["arena_vs_tvm_mode"] = info["pure_memcore_seconds"] / info["pure_tvm_mode_seconds"]
        heuristics = plan_statistics(case.mod, "arena", time_limit=None)
        info["greedy_at_lower_bound"] = heuristics["planned_bytes"] == heuristics["lower_bound"]
    tmods = case.tvm_modules()
    if tmods is not None:
        tvm_pass = _tvm().relax.transform.StaticPlanBlockMemory()
        info["pure_tvm_seconds"] = _best_thread_time(lambda: tvm_pass(tmods[0]), rounds)
        info["pure_speedup_vs_tvm"] = info["pure_tvm_seconds"] / info["pure_memcore_seconds"]
    benchmark.extra_info.update(info)


def _spbm(benchmark, case, mode, pure_rounds=PURE_ROUNDS):
    from memcore_py.transform import StaticPlanBlockMemory

    _versus_tvm(benchmark, case, StaticPlanBlockMemory(mode=mode), case.mod, "StaticPlanBlockMemory", 0, mode)
    _pure_pass_check(benchmark, case, mode, pure_rounds)


def _kill(benchmark, case):
    """KillAfterLastUse on the planned and lowered module; ``extra_info["kill_path"]`` says
    whether every Relax function took the kernel's rebinding rule alone or some needed
    CanonicalizeBindings first."""
    from memcore_py.transform import KillAfterLastUse
    from memcore_py.transform.kill_after_last_use import _kill_with_rebindings

    _versus_tvm(benchmark, case, KillAfterLastUse(), case.lowered, "KillAfterLastUse", 1)
    flat = all(_kill_with_rebindings(f, gv.name, False) is not None for gv, f in case.lowered.functions.items()
               if type(f).__name__ == "Function")
    path = "rebinding rule" if flat else "CanonicalizeBindings"
    benchmark.extra_info["kill_path"] = path


# ---------------------------------------------------------------------------------------
# Fixed cost: a 21-binding module
# ---------------------------------------------------------------------------------------
@pytest.mark.benchmark(group="small-module-fixed-cost")
@pytest.mark.parametrize("mode", ["tvm", "arena"])
def test_small_spbm(benchmark, mode):
    _spbm(benchmark, _small_case(), mode, SMALL_PURE_ROUNDS)


@pytest.mark.benchmark(group="small-module-fixed-cost")
def test_small_kill_after_last_use(benchmark):
    _kill(benchmark, _small_case())


# ---------------------------------------------------------------------------------------
# Real models: static, bounded and unbounded dynamic
# ---------------------------------------------------------------------------------------
@pytest.mark.benchmark(group="real-models-dynamic-spbm")
@pytest.mark.parametrize("mode", ["tvm", "arena"])
@pytest.mark.parametrize("name, kind", VARIANTS, ids=[f"{m}-{k}" for m, k in VARIANTS])
def test_real_spbm(benchmark, name, kind, mode):
    _spbm(benchmark, _model_case(name, kind), mode)


@pytest.mark.benchmark(group="real-models-dynamic-kill-after-last-use")
@pytest.mark.parametrize("name, kind", VARIANTS, ids=[f"{m}-{k}" for m, k in VARIANTS])
def test_real_kill_after_last_use(benchmark, name, kind):
    _kill(benchmark, _model_case(name, kind))


# ---------------------------------------------------------------------------------------
# Per binding: symbolic vs constant sizes
# ---------------------------------------------------------------------------------------
PER_BINDING_OPS = 300
SHAPE_KINDS = {"constant": ("128", None), "symbolic": ("n", None), "bounded": ("n", UPPER_BOUND)}


@pytest.mark.benchmark(group="per-binding-symbolic-vs-constant")
@pytest.mark.parametrize("shape", list(SHAPE_KINDS))
def test_per_binding_spbm(benchmark, shape):
    """``extra_info["vs_constant"]``: memcore's (and ``tvm_vs_constant``: TVM's) time per
    binding relative to the constant-shape chain's, measured in the same test."""
    dim, bound = SHAPE_KINDS[shape]
    case = _case(("chain", shape), lambda: chain_text(PER_BINDING_OPS, dim, bound))
    _spbm(benchmark, case, "tvm")
    if shape != "constant":
        from memcore_py.transform import StaticPlanBlockMemory

        const = _case(("chain", "constant"), lambda: chain_text(PER_BINDING_OPS, "128"))
        ours = StaticPlanBlockMemory()
        ours_sym, ours_const = _best_interleaved(lambda: ours(case.mod), lambda: ours(const.mod))
        benchmark.extra_info["vs_constant"] = ours_sym / ours_const
        tvm = _tvm()
        if tvm is not None:
            tvm_pass = tvm.relax.transform.StaticPlanBlockMemory()
            sym_t, const_t = case.tvm_modules()[0], const.tvm_modules()[0]
            tvm_sym, tvm_const = _best_interleaved(lambda: tvm_pass(sym_t), lambda: tvm_pass(const_t))
            benchmark.extra_info["tvm_vs_constant"] = tvm_sym / tvm_const
