"""Three-way differential suite for the memory passes: memcore's pure path on memcore IR, memcore's
native pass on the ``tvm.IRModule``, and TVM's own pass, on the same random modules.

For every module (500 per run, in batches of 50 seeds) the chain StaticPlanBlockMemory (TVM
and arena mode) -> LowerAllocTensor -> KillAfterLastUse runs three ways:

- *pure*: :mod:`memcore_py.transform` on memcore's reading of TVM's text of the input
  (``parse(m.script())``);
- *native*: :mod:`memcore_py.tvm`'s pass on the ``tvm.IRModule`` itself;
- *TVM*: ``relax.transform.<Pass>()``.

and checks ``from_tvm(native) == pure`` always, and ``native == TVM`` except where a
DIFFERENCES.md entry applies, each by name: ``device-pools``, ``dominating-storage`` and
``duplicate-cross-block-leaf`` (TVM fails its internal check) for StaticPlanBlockMemory
(:func:`~memcore_py.transform.static_plan_block_memory.differences_from_tvm` says which apply);
``kill-scopes`` and ``kill-dataflow`` for KillAfterLastUse, where ``tvm_scoping=True`` must give
TVM's output and the default output is TVM's on functions without nested scopes or dataflow
blocks. Arena mode has no TVM counterpart: pure == native there, and its bytes never exceed TVM
mode's.

The modules (``_module``) cycle through four kinds so that every batch has each: the flat
lowered modules of ``random_lowered_module`` (one function, bounded symbolic sizes, packed
calls, views, tuples); ``random_memory_module`` with its defaults (If, dataflow blocks,
match_cast, several functions, constant / bounded / unbounded symbolic sizes, packed calls,
``call_tir_dyn``, Relax functions as callees, scopes and devices); the same with more symbolic
sizes, control flow and dataflow blocks; and flat modules (no If, no dataflow block) whose
discarding Relax op calls are an op memcore does not model (``R.ewise_fma``). On the last kind
memcore's parser cannot read the input (its typed error names the op), and the native pass,
which reads the op as an opaque op, must equal TVM's. ``random_kill_module`` (If/else with kills, storages, null
values, constants, explicit kills) adds 500 KillAfterLastUse inputs of its own.

``test_generator_covers_the_named_cases`` pins that the seeds used really contain each of those
features and each named StaticPlanBlockMemory difference.
"""
from __future__ import annotations

import re

import pytest

tvm = pytest.importorskip("tvm")
from tvm import relax  # noqa: E402

import memcore_py.tvm as mtvm  # noqa: E402
from memcore_py import parse  # noqa: E402
from memcore_py import transform as mc  # noqa: E402
from memcore_py.errors import ParseError  # noqa: E402
from memcore_py.ir import assert_structural_equal  # noqa: E402
from memcore_py.ir.expr import DataflowBlock, Function, If, SeqExpr  # noqa: E402
from memcore_py.planning.check import collect_planned_tensors, verify_planned  # noqa: E402
from memcore_py.testing import random_lowered_module  # noqa: E402
from memcore_py.testing.lowering_programs import random_kill_module  # noqa: E402
from memcore_py.testing.memory_programs import random_memory_module  # noqa: E402
from memcore_py.transform import PassContext  # noqa: E402
from memcore_py.transform.static_plan_block_memory import (  # noqa: E402
    DIFF_DEVICE_POOLS,
    DIFF_DOMINATING_STORAGE,
    DIFF_DUPLICATE_CROSS_BLOCK_LEAF,
    differences_from_tvm,
)
from _helpers import tvm_from_source  # noqa: E402

pytestmark = pytest.mark.oracle

N_MODULES = 500
BATCH = 50
BATCHES = [range(start, start + BATCH) for start in range(0, N_MODULES, BATCH)]

TVM_SPBM = relax.transform.StaticPlanBlockMemory
TVM_LOWER = relax.transform.LowerAllocTensor
TVM_KILL = relax.transform.KillAfterLastUse

#: An op TVM 0.27 registers and memcore's op table does not; same type as ``R.add(a, b)``.
UNMODELLED_OP = "relax.ewise_fma"
_ADD = re.compile(r"R\.add\((\w+), (\w+)\)")


def _module(seed):
    """``(memcore text, TVM text, kind)`` of the seed's module (module docstring)."""
    kind = seed % 4
    if kind == 0:
        text = random_lowered_module(seed, 20 + (seed * 7) % 80).script()
        return text, text, "lowered"
    if kind == 1:
        text = random_memory_module(seed).script()
        return text, text, "memory"
    if kind == 2:
        text = random_memory_module(seed, p_symbolic=0.8, p_if=0.5, p_dataflow=0.5, p_device=0.2).script()
        return text, text, "memory-dynamic"
    text = random_memory_module(seed, p_if=0.0, p_dataflow=0.0, n_steps=16).script()
    return text, _ADD.sub(r"R.ewise_fma(\1, \2, \2)", text), "unmodelled-op"


def _pure_input(m, kind):
    """memcore's reading of TVM's text of ``m`` (None where it has an op memcore does not
    model: then the parser must say so)."""
    text = m.script()
    if kind != "unmodelled-op" or "R.ewise_fma(" not in text:
        return parse(text)
    with pytest.raises(ParseError, match=UNMODELLED_OP):
        parse(text)
    return None


def _same(native_out, pure_out):
    if pure_out is not None:
        assert_structural_equal(mtvm.from_tvm(native_out), pure_out)


def _has_nested_scope_or_dataflow(mod) -> bool:
    """Whether any Relax function of ``mod`` (memcore IR) has an If, a nested function or
    SeqExpr, or a dataflow block (where KillAfterLastUse's placement is TVM's only with
    ``tvm_scoping=True``)."""
    for _, func in mod.functions.items():
        if not isinstance(func, Function):
            continue
        stack = [func.body]
        while stack:
            seq = stack.pop()
            for blk in seq.blocks:
                if isinstance(blk, DataflowBlock):
                    return True
                for b in blk.bindings:
                    if isinstance(b.value, (If, Function, SeqExpr)):
                        return True
    return False


def _native(memcore_tvm_pass, m, kind):
    """``memcore_tvm_pass(m)``: every kind of module, an op memcore does not model included
    (read as an opaque op, ``memcore_py.ir.op.opaque_op``)."""
    return memcore_tvm_pass(m)


def _kill_three_ways(lowered, pure_lowered, kind):
    """KillAfterLastUse on ``lowered`` (a tvm.IRModule) three ways; ``pure_lowered`` is
    memcore's reading of it (None: not readable, then only native == TVM is checked)."""
    with PassContext(verify=False):  # TVM's placement puts kills in dataflow blocks (kill-dataflow)
        native_tvm_scoping = _native(mtvm.KillAfterLastUse(tvm_scoping=True), lowered, kind)
        pure_tvm_scoping = mc.KillAfterLastUse(tvm_scoping=True)(pure_lowered) if pure_lowered is not None else None
    if native_tvm_scoping is None:
        return
    tvm.ir.assert_structural_equal(native_tvm_scoping, TVM_KILL()(lowered))
    if pure_lowered is None:
        if not _has_nested_scope_or_dataflow(mtvm.from_tvm(lowered)):  # flat: both placements agree
            tvm.ir.assert_structural_equal(mtvm.KillAfterLastUse()(lowered), native_tvm_scoping)
        return
    native = mtvm.KillAfterLastUse()(lowered)
    _same(native_tvm_scoping, pure_tvm_scoping)
    _same(native, mc.KillAfterLastUse()(pure_lowered))
    if not _has_nested_scope_or_dataflow(pure_lowered):
        tvm.ir.assert_structural_equal(native, native_tvm_scoping)


def _lower_three_ways(planned, pure_planned, kind):
    """LowerAllocTensor on ``planned`` three ways; returns TVM's output and memcore's reading
    of it (the next pass's inputs)."""
    theirs = TVM_LOWER()(planned)
    native = _native(mtvm.LowerAllocTensor(), planned, kind)
    if native is not None:
        tvm.ir.assert_structural_equal(native, theirs)
    if pure_planned is None:
        return theirs, None
    _same(native, mc.LowerAllocTensor()(pure_planned))
    return theirs, parse(theirs.script())


def _checked_constant_bytes(mod) -> int:
    """Constant storage bytes of the Relax functions of a planned ``mod`` (memcore IR), after
    the independent checker (:mod:`memcore_py.planning.check`) accepted each function's plan."""
    total = 0
    for name, func in mod.functions.items():
        if not isinstance(func, Function):
            continue
        planned = collect_planned_tensors(func, name)
        verify_planned(planned)
        total += sum(s.nbytes for s in planned.storages if s.nbytes is not None)
    return total


@pytest.mark.parametrize("seeds", BATCHES, ids=lambda r: f"seeds{r.start}-{r.stop - 1}")
def test_memory_passes_three_ways(seeds):
    """StaticPlanBlockMemory (both modes) -> LowerAllocTensor -> KillAfterLastUse, pure ==
    native == TVM on every module of the batch (module docstring)."""
    for seed in seeds:
        _, tvm_text, kind = _module(seed)
        m = tvm_from_source(tvm_text)
        pure_in = _pure_input(m, kind)
        if pure_in is not None:
            assert_structural_equal(mtvm.from_tvm(m), pure_in)  # the bridge reads what the text says
            diffs = differences_from_tvm(pure_in)
        else:
            diffs = differences_from_tvm(parse(_module(seed)[0]))  # the same module with R.add
        assert set(diffs) <= {DIFF_DEVICE_POOLS, DIFF_DOMINATING_STORAGE, DIFF_DUPLICATE_CROSS_BLOCK_LEAF}

        # StaticPlanBlockMemory, TVM mode
        planned = _native(mtvm.StaticPlanBlockMemory(), m, kind)
        pure_planned = mc.StaticPlanBlockMemory()(pure_in) if pure_in is not None else None
        theirs = None
        if DIFF_DUPLICATE_CROSS_BLOCK_LEAF in diffs:
            with pytest.raises(Exception):  # noqa: B017 - TVM's internal check (any of its errors)
                TVM_SPBM()(m)
        else:
            theirs = TVM_SPBM()(m)
        if planned is not None:
            _same(planned, pure_planned)
            if not diffs:
                tvm.ir.assert_structural_equal(planned, theirs)
        else:
            planned = theirs

        # StaticPlanBlockMemory, arena mode
        arena = _native(mtvm.StaticPlanBlockMemory(mode="arena"), m, kind)
        if pure_in is not None:
            pure_arena = mc.StaticPlanBlockMemory(mode="arena")(pure_in)
            _same(arena, pure_arena)
            assert _checked_constant_bytes(pure_arena) <= _checked_constant_bytes(pure_planned), seed

        # LowerAllocTensor and KillAfterLastUse on both plans
        for plan in (planned, arena):
            if plan is not None:
                pure_plan = parse(plan.script()) if pure_in is not None else None
                lowered, pure_lowered = _lower_three_ways(plan, pure_plan, kind)
                _kill_three_ways(lowered, pure_lowered, kind)


@pytest.mark.parametrize("seeds", BATCHES, ids=lambda r: f"seeds{r.start}-{r.stop - 1}")
def test_kill_after_last_use_three_ways(seeds):
    """KillAfterLastUse on ``random_kill_module`` (If/else, storages, null values, constants,
    explicit kills, match_casts), pure == native == TVM (``tvm_scoping=True``)."""
    for seed in seeds:
        m = tvm_from_source(random_kill_module(seed, control_flow=seed % 3 != 0).script())
        _kill_three_ways(m, parse(m.script()), "kill")


#: A tensor type with a symbolic dim (a name where a dim goes).
_SYMBOLIC = re.compile(r"R\.Tensor\(\((?:[^()]*[, (])?[a-z_]\w*[,)]")


def _features(text):
    functions = text.split("@R.function")[1:]
    return {
        "if": "if " in text,
        "dataflow": "R.dataflow()" in text,
        "match_cast": "R.match_cast(" in text,
        "tuple": "R.Tuple(" in text,
        "several functions": text.count("@R.function") > 1,
        "packed call": "R.call_packed(" in text,
        "extern call (call_tir_dyn)": "R.vm.call_tir_dyn(" in text,
        "bounded symbolic": any(_SYMBOLIC.search(f) and "tir_var_upper_bound" in f for f in functions),
        "unbounded symbolic": any(_SYMBOLIC.search(f) and "tir_var_upper_bound" not in f for f in functions),
        "unmodelled op": "R.ewise_fma(" in text,
    }


def test_generator_covers_the_named_cases():
    """The suite's seeds contain every feature the module docstring names and every named
    StaticPlanBlockMemory difference, so that none is tested vacuously."""
    seen_features: dict = {}
    seen_diffs: set = set()
    for seed in range(N_MODULES):
        text, tvm_text, _ = _module(seed)
        for name, present in _features(tvm_text).items():
            seen_features[name] = seen_features.get(name, 0) + int(present)
        seen_diffs.update(differences_from_tvm(parse(text)))
    missing = sorted(name for name, count in seen_features.items() if count == 0)
    assert not missing, f"no module of the suite has: {missing}"
    assert seen_diffs == {DIFF_DEVICE_POOLS, DIFF_DOMINATING_STORAGE, DIFF_DUPLICATE_CROSS_BLOCK_LEAF}


def test_native_passes_accept_an_unmodelled_op():
    """Every native memory pass plans a module with an op memcore does not model as TVM does,
    also where a C scan declines and the function goes through the full conversion (which
    reads the op as an opaque op: its name and TVM's purity)."""
    seen = compared = 0
    for seed in range(3, 4 * 25, 4):
        m = tvm_from_source(_module(seed)[1])
        diffs = differences_from_tvm(parse(_module(seed)[0]))  # the same module with R.add
        if DIFF_DUPLICATE_CROSS_BLOCK_LEAF in diffs:
            continue
        seen += "R.ewise_fma(" in m.script()
        planned = TVM_SPBM()(m)
        ours = mtvm.StaticPlanBlockMemory()(m)
        if not diffs:  # a listed difference (dominating storage, device pools) plans otherwise
            tvm.ir.assert_structural_equal(ours, planned)
            compared += 1
        arena = mtvm.StaticPlanBlockMemory(mode="arena")(m)
        for gv, func in mtvm.from_tvm(arena).functions.items():
            if isinstance(func, Function):
                verify_planned(collect_planned_tensors(func, gv.name))
        lowered, _ = _lower_three_ways(planned, None, "unmodelled-op")  # native == TVM
        _kill_three_ways(lowered, None, "unmodelled-op")  # native == TVM (TVM's placement)
    assert seen >= 10 and compared >= 5, (seen, compared)
