"""memcore's TVM-native passes (memcore_py.tvm, conversion included) against TVM's own
StaticPlanBlockMemory + KillAfterLastUse on the same ``tvm.IRModule``, in the same run.

Per workload (the shipped real models; BERT, GPT-2 and Llama with a symbolic sequence length,
bounded and unbounded; synthetic chains of 30k and 300k bindings,
``_passes_common.tvm_chain_module``), one group with three benchmarks:

- ``tvm``: TVM 0.27's ``StaticPlanBlockMemory`` then ``KillAfterLastUse`` on the TVM module;
- ``native-<mode>``: ``memcore_py.tvm.StaticPlanBlockMemory(mode)`` then
  ``memcore_py.tvm.KillAfterLastUse()`` on the same TVM module: each pass converts the
  module from TVM and writes its result back (what a TVM user pays);
- ``pure-<mode>``: memcore's own two passes on the memcore module (no conversion).

``extra_info``: bindings, planned bytes (TVM's plan, memcore's TVM mode and arena mode), the
max-live lower bound, and each benchmark's ratio to TVM's time measured here. On the real
models, two more groups: memcore's three native memory passes (StaticPlanBlockMemory,
LowerAllocTensor, KillAfterLastUse) in one ``Sequential`` against TVM's three, and each native
pass alone against TVM's (StaticPlanBlockMemory in both modes, ``extra_info["path"]``: by
extraction or by the full conversion). A separate group times one pass call on a 20-binding
module (the fixed cost per call).

Unseen models (issue 27, ``_unseen_models``): torch.cond (static, dynamic batch), a convnet
with symbolic H and W, BERT with dynamic batch and sequence (bounded and unbounded), a
cross-attention block with three symbolic dims, transformers' Qwen2 decoder with a 2-D mask,
ViT and DeiT, each exported by ``torch.export`` and imported by TVM's frontend. Per (model,
pass) one group ``tvm-bridge:unseen:<model>:<pass>`` for each of the five native passes:
TVM's pass and memcore's on the module the pass gets in TVM's pipeline; ``extra_info``:
``speedup_vs_tvm`` (TVM's best / memcore's, same run), ``equal_to_tvm`` (and
``equal_to_tvm_exact_mode``), planned bytes for StaticPlanBlockMemory, and ``error`` when a
pass raises (shown as a warning, not a failure).

Run: ``pytest bench/bench_tvm_bridge.py --benchmark-only`` (results: bench/README.md,
"TVM bridge"). Needs apache-tvm; skipped without it.
"""
from __future__ import annotations

import importlib.util
import time
import warnings

import pytest

from _passes_common import tvm_chain_module, tvm_or_none

tvm = tvm_or_none()
pytestmark = pytest.mark.skipif(tvm is None, reason="apache-tvm is not installed")

from memcore_py.examples.models import list_models, model_text  # noqa: E402
from _helpers import tvm_from_source  # noqa: E402

CHAINS = {"chain_30k": 10_000, "chain_300k": 100_000}  # element-wise ops, three bindings each
#: The transformer models with a symbolic sequence length ``n``, bounded (``n <= 1024``,
#: ``tir_var_upper_bound``) and unbounded (bench_small_and_dynamic.dynamic_text).
DYNAMIC = [f"{m}:{kind}" for m in ("bert_base", "gpt2_small", "llama_small") for kind in ("bounded", "unbounded")]
WORKLOADS = list_models() + DYNAMIC + list(CHAINS)
MODES = ("tvm", "arena")


def _best(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _n_bindings(mod) -> int:
    from memcore_py.testing import count_bindings

    return count_bindings(mod)


def _planned_bytes(mod):
    """Sum of the ``R.memory.alloc_storage`` sizes of a planned memcore module: an int, or the
    symbolic total as text (``96*n*n + 55300*n + 9440256``)."""
    from memcore_py.analysis.arith import SizePolynomial
    from memcore_py.ir.expr import Call, ShapeExpr

    sizes = []
    for f in mod.functions.values():
        for blk in getattr(getattr(f, "body", None), "blocks", ()):
            for b in blk.bindings:
                v = b.value
                if type(v) is Call and getattr(v.op, "name", "") == "relax.memory.alloc_storage" \
                        and type(v.args[0]) is ShapeExpr:
                    sizes.append(v.args[0].values[0])
    poly = SizePolynomial(sizes)
    return poly.value if poly.value is not None else str(poly)


def _workload_text(name: str) -> str:
    if ":" in name:
        from bench_small_and_dynamic import UPPER_BOUND, dynamic_text

        model, kind = name.split(":")
        return dynamic_text(model, UPPER_BOUND if kind == "bounded" else None)
    return model_text(name)


@pytest.fixture(scope="session")
def workloads():
    """name -> {"tvm": tvm.IRModule, "mod": memcore IRModule, facts...}, built once."""
    import memcore_py.tvm as mtvm
    from memcore_py.transform import StaticPlanBlockMemory
    from memcore_py.transform.static_plan_block_memory import plan_statistics

    out = {}
    for name in WORKLOADS:
        tmod = tvm_from_source(_workload_text(name)) if name not in CHAINS else tvm_chain_module(CHAINS[name])
        mod = mtvm.from_tvm(tmod)
        stats = plan_statistics(mod, "arena")
        out[name] = {
            "tvm": tmod,
            "mod": mod,
            "facts": {
                "n_bindings": _n_bindings(mod),
                "tvm_bytes": _planned_bytes(mtvm.from_tvm(tvm.relax.transform.StaticPlanBlockMemory()(tmod))),
                "memcore_tvm_mode_bytes": _planned_bytes(StaticPlanBlockMemory()(mod)),
                "memcore_arena_bytes": _planned_bytes(StaticPlanBlockMemory(mode="arena")(mod)),
                "lower_bound": stats["lower_bound"] if isinstance(stats["lower_bound"], int) else None,
            },
        }
    return out


def _tvm_passes():
    from tvm import relax

    return tvm.transform.Sequential([relax.transform.StaticPlanBlockMemory(), relax.transform.KillAfterLastUse()])


def _record(benchmark, w, tvm_seconds, label):
    benchmark.extra_info.update(w["facts"])
    benchmark.extra_info["variant"] = label
    benchmark.extra_info["tvm_seconds_same_run"] = tvm_seconds
    stats = getattr(benchmark, "stats", None)
    if stats is not None and tvm_seconds:
        benchmark.extra_info["ratio_to_tvm"] = stats.stats.min / tvm_seconds


def _rounds(name):
    return 1 if name == "chain_300k" else 5


@pytest.mark.parametrize("name", WORKLOADS)
def test_tvm_spbm_kill(benchmark, workloads, name):
    w = workloads[name]
    seq = _tvm_passes()
    benchmark.group = f"tvm-bridge:{name}"
    benchmark.pedantic(seq, args=(w["tvm"],), rounds=_rounds(name), iterations=1, warmup_rounds=0)
    _record(benchmark, w, None, "tvm")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", WORKLOADS)
def test_native_spbm_kill(benchmark, workloads, name, mode):
    import memcore_py.tvm as mtvm

    w = workloads[name]
    seq = tvm.transform.Sequential([mtvm.StaticPlanBlockMemory(mode=mode), mtvm.KillAfterLastUse()])
    tvm_seconds = _best(lambda: _tvm_passes()(w["tvm"]), _rounds(name))
    benchmark.group = f"tvm-bridge:{name}"
    out = benchmark.pedantic(seq, args=(w["tvm"],), rounds=_rounds(name), iterations=1, warmup_rounds=0)
    _record(benchmark, w, tvm_seconds, f"native-{mode}")
    benchmark.extra_info["native_planned_bytes"] = _planned_bytes(mtvm.from_tvm(out))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", WORKLOADS)
def test_pure_memcore_spbm_kill(benchmark, workloads, name, mode):
    from memcore_py.transform import KillAfterLastUse, StaticPlanBlockMemory

    w = workloads[name]
    spbm, kill = StaticPlanBlockMemory(mode=mode), KillAfterLastUse()
    tvm_seconds = _best(lambda: _tvm_passes()(w["tvm"]), _rounds(name))
    benchmark.group = f"tvm-bridge:{name}"
    benchmark.pedantic(lambda m: kill(spbm(m)), args=(w["mod"],), rounds=_rounds(name), iterations=1, warmup_rounds=0)
    _record(benchmark, w, tvm_seconds, f"pure-{mode}")


# ------------------------------------------------------------------------------ the three passes
MODEL_WORKLOADS = list_models() + DYNAMIC  # real models: the chains are covered above


def _record_speedup(benchmark, extra, tvm_seconds):
    extra["tvm_seconds_same_run"] = tvm_seconds
    if not benchmark.disabled and benchmark.stats is not None:
        extra["speedup_vs_tvm"] = round(tvm_seconds / benchmark.stats.stats.min, 2)
    benchmark.extra_info.update(extra)


@pytest.mark.parametrize("name", MODEL_WORKLOADS)
def test_native_memory_passes(benchmark, workloads, name):
    """StaticPlanBlockMemory, LowerAllocTensor and KillAfterLastUse, memcore's native passes
    in one TVM ``Sequential`` (one read; the module handed from pass to pass) on a real model,
    against TVM's three in the same run; the outputs are checked equal."""
    import memcore_py.tvm as mtvm
    from tvm import relax

    rt = relax.transform
    w = workloads[name]
    theirs = tvm.transform.Sequential([rt.StaticPlanBlockMemory(), rt.LowerAllocTensor(), rt.KillAfterLastUse()])
    ours = tvm.transform.Sequential([mtvm.StaticPlanBlockMemory(), mtvm.LowerAllocTensor(), mtvm.KillAfterLastUse()])
    tvm.ir.assert_structural_equal(ours(w["tvm"]), theirs(w["tvm"]))
    tvm_seconds = _best(lambda: theirs(w["tvm"]), _rounds(name))
    benchmark.group = f"tvm-bridge:three-passes:{name}"
    benchmark.pedantic(ours, args=(w["tvm"],), rounds=_rounds(name), iterations=1, warmup_rounds=0)
    _record_speedup(benchmark, dict(n_bindings=w["facts"]["n_bindings"], variant="native-three-passes"), tvm_seconds)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", MODEL_WORKLOADS)
def test_native_static_plan_block_memory(benchmark, workloads, name, mode):
    """The native StaticPlanBlockMemory alone on a real model (a lone pass call in a TVM
    pipeline: by extraction where it can, ``extra_info["path"]``) against TVM's
    StaticPlanBlockMemory on the same module, same run; the output is checked equal to the
    full conversion's (and, in TVM mode, to TVM's)."""
    import memcore_py.tvm as mtvm
    from memcore_py.transform import StaticPlanBlockMemory
    from memcore_py.tvm._api import tvm_api
    from memcore_py.tvm.passes import apply_memcore_pass
    from memcore_py.tvm.spbm_extract import static_plan_block_memory_extracted
    from tvm import relax

    w = workloads[name]
    theirs, ours = relax.transform.StaticPlanBlockMemory(), mtvm.StaticPlanBlockMemory(mode=mode)
    out = ours(w["tvm"])
    tvm.ir.assert_structural_equal(out, apply_memcore_pass(StaticPlanBlockMemory(mode=mode), w["tvm"]))
    if mode == "tvm":
        tvm.ir.assert_structural_equal(out, theirs(w["tvm"]))
    extracted = static_plan_block_memory_extracted(tvm_api(), w["tvm"], mode, 64, None, True) is not None
    tvm_seconds = _best(lambda: theirs(w["tvm"]), _rounds(name))
    benchmark.group = f"tvm-bridge:static-plan-block-memory:{name}"
    benchmark.pedantic(ours, args=(w["tvm"],), rounds=_rounds(name), iterations=1, warmup_rounds=0)
    _record_speedup(benchmark, dict(n_bindings=w["facts"]["n_bindings"], variant=f"native-SPBM-{mode}",
                                    path="extraction" if extracted else "full conversion"), tvm_seconds)


@pytest.mark.parametrize("name", MODEL_WORKLOADS)
def test_native_lower_alloc_tensor(benchmark, workloads, name):
    """The native LowerAllocTensor alone on TVM's planned module (a lone pass call in a TVM
    pipeline: the module is read from TVM and written back) against TVM's LowerAllocTensor on
    the same module, same run; the outputs are checked equal."""
    import memcore_py.tvm as mtvm
    from tvm import relax

    rt = relax.transform
    w = workloads[name]
    planned = rt.StaticPlanBlockMemory()(w["tvm"])
    theirs, ours = rt.LowerAllocTensor(), mtvm.LowerAllocTensor()
    tvm.ir.assert_structural_equal(ours(planned), theirs(planned))
    tvm_seconds = _best(lambda: theirs(planned), _rounds(name))
    benchmark.group = f"tvm-bridge:lower-alloc-tensor:{name}"
    benchmark.pedantic(ours, args=(planned,), rounds=_rounds(name), iterations=1, warmup_rounds=0)
    _record_speedup(benchmark, dict(n_bindings=w["facts"]["n_bindings"], variant="native-LowerAllocTensor"),
                    tvm_seconds)


@pytest.mark.parametrize("name", MODEL_WORKLOADS)
def test_native_kill_after_last_use(benchmark, workloads, name):
    """The native KillAfterLastUse alone on TVM's planned and lowered module (a lone pass call
    in a TVM pipeline: by extraction, nothing converted) against TVM's KillAfterLastUse on the
    same module, same run; the outputs are checked equal."""
    import memcore_py.tvm as mtvm
    from tvm import relax

    rt = relax.transform
    w = workloads[name]
    lowered = rt.LowerAllocTensor()(rt.StaticPlanBlockMemory()(w["tvm"]))
    theirs, ours = rt.KillAfterLastUse(), mtvm.KillAfterLastUse()
    tvm.ir.assert_structural_equal(ours(lowered), theirs(lowered))
    tvm_seconds = _best(lambda: theirs(lowered), _rounds(name))
    benchmark.group = f"tvm-bridge:kill-after-last-use:{name}"
    benchmark.pedantic(ours, args=(lowered,), rounds=_rounds(name), iterations=1, warmup_rounds=0)
    _record_speedup(benchmark, dict(n_bindings=w["facts"]["n_bindings"], variant="native-KillAfterLastUse"),
                    tvm_seconds)


# ------------------------------------------------------------------------------ fixed cost
SMALL_OPS = 7  # 21 bindings


@pytest.fixture(scope="session")
def small_module():
    return tvm_chain_module(SMALL_OPS, width=64)


def test_fixed_cost_tvm_spbm(benchmark, small_module):
    from tvm import relax

    benchmark.group = "tvm-bridge:fixed-cost-20-bindings"
    benchmark(relax.transform.StaticPlanBlockMemory(), small_module)
    benchmark.extra_info["n_bindings"] = 3 * SMALL_OPS


@pytest.mark.parametrize("mode", MODES)
def test_fixed_cost_native_spbm(benchmark, small_module, mode):
    import memcore_py.tvm as mtvm
    from tvm import relax

    tvm_seconds = _best(lambda: relax.transform.StaticPlanBlockMemory()(small_module), 50)
    benchmark.group = "tvm-bridge:fixed-cost-20-bindings"
    benchmark(mtvm.StaticPlanBlockMemory(mode=mode), small_module)
    _record_speedup(benchmark, dict(n_bindings=3 * SMALL_OPS, variant=f"native-{mode}"), tvm_seconds)


@pytest.mark.parametrize("pass_name", ["LowerAllocTensor", "KillAfterLastUse"])
def test_fixed_cost_native_lowering(benchmark, small_module, pass_name):
    """The other two native passes on the 20-binding module, each on the output of TVM's
    passes before it (as a lone pass call in a TVM pipeline: nothing handed over), against
    TVM's pass of the same name in the same run (``extra_info``)."""
    import memcore_py.tvm as mtvm
    from tvm import relax

    rt = relax.transform
    module = rt.StaticPlanBlockMemory()(small_module)
    if pass_name == "KillAfterLastUse":
        module = rt.LowerAllocTensor()(module)
    tvm_seconds = _best(lambda: getattr(rt, pass_name)()(module), 50)
    native = getattr(mtvm, pass_name)()
    benchmark.group = "tvm-bridge:fixed-cost-20-bindings"
    benchmark(native, module)
    _record_speedup(benchmark, dict(n_bindings=3 * SMALL_OPS, variant=f"native-{pass_name}"), tvm_seconds)


def test_fixed_cost_native_memory_passes(benchmark, small_module):
    """StaticPlanBlockMemory, LowerAllocTensor and KillAfterLastUse in one TVM ``Sequential``
    on the 20-binding module, memcore's native passes (one read, the module handed from pass to
    pass) against TVM's three in the same run (``extra_info``)."""
    import memcore_py.tvm as mtvm
    import tvm
    from tvm import relax

    rt = relax.transform
    theirs = tvm.transform.Sequential([rt.StaticPlanBlockMemory(), rt.LowerAllocTensor(), rt.KillAfterLastUse()])
    ours = tvm.transform.Sequential([mtvm.StaticPlanBlockMemory(), mtvm.LowerAllocTensor(), mtvm.KillAfterLastUse()])
    tvm.ir.assert_structural_equal(ours(small_module), theirs(small_module))
    tvm_seconds = _best(lambda: theirs(small_module), 50)
    benchmark.group = "tvm-bridge:fixed-cost-20-bindings"
    benchmark(ours, small_module)
    _record_speedup(benchmark, dict(n_bindings=3 * SMALL_OPS, variant="native-three-passes"), tvm_seconds)


# ------------------------------------------------------------------------------ to_tvm
WRITE_WORKLOADS = list_models()  # TVM parses a 30k-binding text in minutes: models only


@pytest.mark.parametrize("name", WRITE_WORKLOADS)
def test_to_tvm(benchmark, workloads, name):
    """``to_tvm`` of a whole module (the compiled writer), against, in the same run, the
    Python-API writer it replaced (``_Writer.compiled_blocks = False``) and TVM's parser on
    the module's text (the way in before the bridge). ``extra_info``: both baselines'
    seconds and the ratios."""
    from _passes_common import best_alternating

    import memcore_py.tvm as mtvm
    from memcore_py.tvm._api import tvm_api
    from memcore_py.tvm.to_tvm import _Writer

    w = workloads[name]
    mod = w["mod"]
    rounds = 1 if getattr(benchmark, "disabled", False) else _rounds(name)

    def python_writer():
        writer = _Writer(tvm_api(), mod)
        writer.compiled_blocks = False
        return writer.module(mod)

    _, python_seconds = best_alternating(lambda: mtvm.to_tvm(mod), python_writer, rounds)
    text = mod.script()
    parser_seconds = _best(lambda: tvm.script.from_source(text), rounds if rounds < 3 else 3)
    benchmark.group = f"tvm-bridge:to_tvm:{name}"
    out = benchmark.pedantic(mtvm.to_tvm, args=(mod,), rounds=rounds, iterations=1, warmup_rounds=0)
    tvm.ir.assert_structural_equal(out, python_writer())
    best = getattr(getattr(benchmark, "stats", None), "stats", None)
    benchmark.extra_info.update(n_bindings=w["facts"]["n_bindings"], python_writer_seconds=python_seconds,
                                tvm_parser_seconds=parser_seconds)
    if best is not None:
        benchmark.extra_info.update(speedup_vs_python_writer=python_seconds / best.min,
                                    speedup_vs_tvm_parser=parser_seconds / best.min)


# ------------------------------------------------------------------------------ unseen models
#: Issue 27: models memcore's tests never saw (``_unseen_models``: torch.cond, a convnet with
#: symbolic H and W, BERT with dynamic batch and sequence bounded and unbounded, a
#: cross-attention block with three symbolic dims, transformers' Qwen2 decoder with a 2-D mask,
#: ViT and DeiT), exported by torch.export and imported by TVM's frontend, each of the five
#: native passes against TVM's on the module the pass gets in TVM's pipeline.
from _unseen_models import PASSES as UNSEEN_PASSES  # noqa: E402
from _unseen_models import WORKLOADS as UNSEEN_WORKLOADS  # noqa: E402

UNSEEN_ROUNDS = 10

#: pass name -> (memcore's native pass as a user gets it, its TVM-exact variant or None when
#: the default is TVM-exact). The first is timed; both outputs are compared with TVM's.
_UNSEEN_NATIVE = {
    "DataflowUseInplaceCalls": (lambda m: m.DataflowUseInplaceCalls(),
                                lambda m: m.DataflowUseInplaceCalls(tvm_compat=True)),
    "AttachAttrLayoutFreeBuffers": (lambda m: m.AttachAttrLayoutFreeBuffers(),
                                    lambda m: m.AttachAttrLayoutFreeBuffers(tvm_compat=True)),
    "StaticPlanBlockMemory": (lambda m: m.StaticPlanBlockMemory(), None),
    "LowerAllocTensor": (lambda m: m.LowerAllocTensor(), None),
    "KillAfterLastUse": (lambda m: m.KillAfterLastUse(), lambda m: m.KillAfterLastUse(tvm_scoping=True)),
}


@pytest.fixture(scope="session")
def unseen_models():
    """Workload name -> {pass name -> TVM input module}, each model exported and imported once,
    on first use (an ``:unbounded`` workload reuses its bounded sibling's import)."""
    import _unseen_models as um

    cache, high = {}, {}

    def get(name):
        if name not in cache:
            if importlib.util.find_spec("torch") is None:
                pytest.skip("torch is not installed")
            need = um.needs(name)
            if need is not None and not um.has(need):
                pytest.skip(f"{name} needs {need}")
            base = name.replace(":unbounded", ":bounded")
            if base not in high:
                high[base] = um.export_and_import(base)[0]
            mod = um.without_upper_bound(high[base]) if name != base else high[base]
            cache[name] = um.pass_inputs(mod)
        return cache[name]

    return get


def _same(a, b) -> bool:
    try:
        tvm.ir.assert_structural_equal(a, b)
    except ValueError:
        return False
    return True


def _unseen_bindings(mod) -> int:
    from tvm import relax

    return sum(len(blk.bindings) for f in mod.functions.values() if isinstance(f, relax.Function)
               for blk in f.body.blocks)


def _unseen_rounds(benchmark) -> int:
    return 1 if benchmark.disabled else UNSEEN_ROUNDS


def _finding(benchmark, name, pass_name, who, exc):
    """Record (``extra_info["error"]``) and show a pass that raised on an unseen model: a
    finding to report, not a failure of the bench."""
    msg = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
    benchmark.extra_info["error"] = msg
    print(f"\n[issue 27] {who} {pass_name} raised on {name}: {msg}")
    warnings.warn(f"[issue 27] {who} {pass_name} raised on {name}: {msg}", stacklevel=2)


@pytest.mark.parametrize("pass_name", UNSEEN_PASSES)
@pytest.mark.parametrize("name", UNSEEN_WORKLOADS)
def test_unseen_tvm(benchmark, unseen_models, name, pass_name):
    """TVM's pass on an unseen model's module (the group's reference)."""
    from tvm import relax

    x = unseen_models(name)[pass_name]
    theirs = getattr(relax.transform, pass_name)()
    benchmark.group = f"tvm-bridge:unseen:{name}:{pass_name}"
    benchmark.extra_info.update(n_bindings=_unseen_bindings(x), variant="tvm")
    try:
        theirs(x)
    except Exception as exc:  # noqa: BLE001 - a finding, recorded
        _finding(benchmark, name, pass_name, "TVM's", exc)
        return
    rounds = _unseen_rounds(benchmark)
    benchmark.pedantic(theirs, args=(x,), rounds=rounds, iterations=1, warmup_rounds=0)


@pytest.mark.parametrize("pass_name", UNSEEN_PASSES)
@pytest.mark.parametrize("name", UNSEEN_WORKLOADS)
def test_unseen_native(benchmark, unseen_models, name, pass_name):
    """memcore's native pass on an unseen model's module, conversion included, against TVM's
    pass on the same module in the same run (``speedup_vs_tvm``). ``equal_to_tvm``: the
    output is structurally TVM's; ``equal_to_tvm_exact_mode``: the same for the pass's
    TVM-exact variant (``tvm_compat=True``, ``tvm_scoping=True``) where the default is not
    TVM-exact. StaticPlanBlockMemory also records the planned bytes (TVM's, memcore's TVM
    mode and arena mode); it and LowerAllocTensor record ``path`` (by extraction or by the
    full conversion)."""
    import memcore_py.tvm as mtvm
    from tvm import relax

    x = unseen_models(name)[pass_name]
    theirs = getattr(relax.transform, pass_name)()
    make, make_exact = _UNSEEN_NATIVE[pass_name]
    ours = make(mtvm)
    benchmark.group = f"tvm-bridge:unseen:{name}:{pass_name}"
    extra = dict(n_bindings=_unseen_bindings(x), variant=f"native-{pass_name}")
    benchmark.extra_info.update(extra)
    try:
        reference = theirs(x)
    except Exception as exc:  # noqa: BLE001
        _finding(benchmark, name, pass_name, "TVM's", exc)
        return
    try:
        out = ours(x)
    except Exception as exc:  # noqa: BLE001 - a finding, recorded and shown
        _finding(benchmark, name, pass_name, "memcore's native", exc)
        return
    extra["equal_to_tvm"] = _same(out, reference)
    if make_exact is not None:
        try:
            extra["equal_to_tvm_exact_mode"] = _same(make_exact(mtvm)(x), reference)
        except Exception as exc:  # noqa: BLE001
            extra["equal_to_tvm_exact_mode"] = f"{type(exc).__name__}: {exc}".splitlines()[0][:200]
    if pass_name in ("StaticPlanBlockMemory", "LowerAllocTensor"):
        from memcore_py.tvm._api import tvm_api

        if pass_name == "StaticPlanBlockMemory":
            from memcore_py.tvm.spbm_extract import static_plan_block_memory_extracted

            extracted = static_plan_block_memory_extracted(tvm_api(), x, "tvm", 64, None, True) is not None
            try:
                extra.update(tvm_planned_bytes=_planned_bytes(mtvm.from_tvm(reference)),
                             native_planned_bytes=_planned_bytes(mtvm.from_tvm(out)),
                             native_arena_bytes=_planned_bytes(
                                 mtvm.from_tvm(mtvm.StaticPlanBlockMemory(mode="arena")(x))))
            except Exception as exc:  # noqa: BLE001
                extra["planned_bytes_error"] = f"{type(exc).__name__}: {exc}".splitlines()[0][:200]
        else:
            from memcore_py.tvm.lower_alloc_extract import lower_alloc_tensor_extracted

            extracted = lower_alloc_tensor_extracted(tvm_api(), x) is not None
        extra["path"] = "extraction" if extracted else "full conversion"
    rounds = _unseen_rounds(benchmark)
    tvm_seconds = _best(lambda: theirs(x), rounds)
    benchmark.pedantic(ours, args=(x,), rounds=rounds, iterations=1, warmup_rounds=0)
    _record_speedup(benchmark, extra, tvm_seconds)


# ------------------------------------------------------------------------------ dead bindings
#: AttachAttrLayoutFreeBuffers' second stage (DeadCodeElimination) on TVM's objects: modules
#: with bindings nothing reads, as a user's module before DeadCodeElimination has run. A chain
#: of ``call_tir`` with every 10th result unused (``bench_attach_attr_layout_free_buffers``'s
#: ``tvm_call_tir_chain``, normalized), and 60 random programs (``random_layout_free_program``: several
#: functions, dataflow and plain blocks, dead results, unreachable helpers) timed as one.
DEAD_CHAINS = (3_000,)
DEAD_SMOKE_CHAIN = 300


def _dead_binding_input(name: str, smoke: bool):
    """The TVM module(s) of a dead-binding workload: a list of modules."""
    if name == "random_programs":
        from memcore_py.testing.layout_free_programs import random_layout_free_program

        return [tvm_from_source(random_layout_free_program(seed)) for seed in range(10 if smoke else 60)]
    from bench_attach_attr_layout_free_buffers import tvm_call_tir_chain
    from tvm import relax

    # normalized (typed) as a module built by TVM's BlockBuilder or parser is
    return [relax.transform.Normalize()(tvm_call_tir_chain(DEAD_SMOKE_CHAIN if smoke else int(name.split("_")[1])))]


def _same_functions(got, want) -> bool:
    """The two modules define the same names, each function structurally equal (GlobalVars
    free: TVM shares variables between the copies of one function across functions)."""
    if sorted(g.name_hint for g in got.functions) != sorted(g.name_hint for g in want.functions):
        return False
    try:
        for g in want.functions:
            tvm.ir.assert_structural_equal(got[g.name_hint], want[g.name_hint], map_free_vars=True)
    except ValueError:
        return False
    return True


@pytest.mark.parametrize("name", ["random_programs"] + [f"chain_{n}" for n in DEAD_CHAINS])
def test_native_attach_attr_with_dead_bindings(benchmark, name):
    """memcore's native AttachAttrLayoutFreeBuffers (TVM-exact variant) against TVM's on
    modules with dead bindings, same run: ``speedup_vs_tvm``, ``equal_to_tvm``, ``path``
    (on TVM's objects, or the full conversion for how many of the modules)."""
    import memcore_py.tvm as mtvm
    from memcore_py.tvm._api import tvm_api
    from memcore_py.tvm.attach_extract import attach_attr_extracted
    from tvm import relax

    mods = _dead_binding_input(name, benchmark.disabled)
    ours, theirs = mtvm.AttachAttrLayoutFreeBuffers(tvm_compat=True), relax.transform.AttachAttrLayoutFreeBuffers()
    wants = [theirs(m) for m in mods]
    gots = [ours(m) for m in mods]
    equal = all(_same_functions(got, want) for got, want in zip(gots, wants))
    assert equal, f"{name}: the native pass's output differs from TVM's"
    declined = sum(attach_attr_extracted(tvm_api(), m, keep_tir_vars=False) is None for m in mods)
    removed = sum(_unseen_bindings(m) - _unseen_bindings(w) for m, w in zip(mods, wants))
    extra = dict(n_modules=len(mods), n_bindings=sum(_unseen_bindings(m) for m in mods), bindings_removed=removed,
                 equal_to_tvm=equal, path=f"native on {len(mods) - declined}, full conversion on {declined}")
    benchmark.group = f"tvm-bridge:attach-dead-bindings:{name}"
    benchmark.extra_info.update(extra)

    def run(p):
        for m in mods:
            p(m)

    rounds = 1 if benchmark.disabled else 10
    tvm_seconds = _best(lambda: run(theirs), rounds)
    benchmark.pedantic(run, args=(ours,), rounds=rounds, iterations=1, warmup_rounds=0)
    _record_speedup(benchmark, extra, tvm_seconds)


# ------------------------------------------------------------------ KillAfterLastUse on dataflow blocks
def _dataflow_kill_input(name: str):
    """A shipped model after TVM's StaticPlanBlockMemory and LowerAllocTensor with its pure runs
    put in dataflow blocks by TVM's ConvertToDataflow: KillAfterLastUse called on a module with
    dataflow blocks, as a user may call it outside TVM's pipeline."""
    from tvm import relax

    rt = relax.transform
    return rt.ConvertToDataflow(1)(rt.LowerAllocTensor()(rt.StaticPlanBlockMemory()(tvm_from_source(model_text(name)))))


@pytest.mark.parametrize("name", list_models())
def test_native_kill_on_dataflow_blocks(benchmark, name):
    """memcore's native KillAfterLastUse (TVM's placement, ``tvm_scoping=True``) against TVM's on
    a module with dataflow blocks, same run: ``speedup_vs_tvm``, ``equal_to_tvm``, ``path`` (on
    TVM's objects, or the full conversion)."""
    import memcore_py.tvm as mtvm
    from memcore_py.transform import PassContext
    from memcore_py.tvm._api import tvm_api
    from memcore_py.tvm.kill_extract import kill_after_last_use_extracted
    from tvm import relax

    mod = _dataflow_kill_input(name)
    ours, theirs = mtvm.KillAfterLastUse(tvm_scoping=True), relax.transform.KillAfterLastUse()
    with PassContext(verify=False):  # TVM's placement puts kills in dataflow blocks
        equal = _same_functions(ours(mod), theirs(mod))
    assert equal, f"{name}: the native pass's output differs from TVM's"
    native = kill_after_last_use_extracted(tvm_api(), mod, tvm_scoping=True) is not None
    extra = dict(n_bindings=_unseen_bindings(mod), equal_to_tvm=equal,
                 path="on TVM's objects" if native else "full conversion")
    benchmark.group = f"tvm-bridge:kill-dataflow:{name}"
    benchmark.extra_info.update(extra)
    rounds = 1 if benchmark.disabled else 30
    tvm_seconds = _best(lambda: theirs(mod), rounds)
    benchmark.pedantic(ours, args=(mod,), rounds=rounds, iterations=1, warmup_rounds=0)
    _record_speedup(benchmark, extra, tvm_seconds)
