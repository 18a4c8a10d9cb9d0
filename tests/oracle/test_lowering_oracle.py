"""Differential tests of the lowering passes against Apache TVM 0.27 (seeded random programs).

(a) High-level dataflow programs (``random_highlevel_module``) are legalized by TVM's
    LegalizeOps (we do not implement it); the legalized text is the common input of our
    ToNonDataflow + RemovePurityChecking + CallTIRRewrite and TVM's.
(b) Post-CallTIRRewrite programs (``random_lowered_module``) are planned by TVM's
    StaticPlanBlockMemory; its printed output is the common input of our LowerAllocTensor +
    KillAfterLastUse and TVM's. These functions have no control flow, so our default output
    must be TVM's exactly.
(k) Post-planning programs with control flow, tuples, objects, constants, null values and
    existing kills (``random_kill_module``): ``KillAfterLastUse(tvm_scoping=True)`` must be
    TVM's output exactly, and the default output may differ from it only by added kill
    calls (DIFFERENCES.md ``kill-scopes``), staying well-formed.
(f) The same programs without control flow (our fused fast path): the default output must
    be TVM's exactly.

Exactness is checked structurally and on variable names: TVM's passes run on its own IR,
ours on our reading of TVM's printed text (the generators make unique names, so the
printer renames nothing), and the names of every binding, in order, must be TVM's.
Several random functions share one module so TVM's per-module costs are paid once.
"""
import pytest

tvm = pytest.importorskip("tvm")
from tvm import relax  # noqa: E402

import memcore_py  # noqa: E402
from memcore_py.ir.expr import DataflowVar, Function, If  # noqa: E402
from memcore_py.ir.structural import assert_structural_equal  # noqa: E402
from memcore_py.ir.well_formed import well_formed_report  # noqa: E402
from memcore_py.testing import random_lowered_module  # noqa: E402
from memcore_py.testing.lowering_programs import (  # noqa: E402
    batch_modules,
    random_highlevel_module,
    random_kill_module,
)
from memcore_py.transform import (  # noqa: E402
    CallTIRRewrite,
    KillAfterLastUse,
    LowerAllocTensor,
    RemovePurityChecking,
    Sequential,
    ToNonDataflow,
)

from _helpers import is_kill, strip_kills, tvm_from_source  # noqa: E402

pytestmark = pytest.mark.oracle

# 362 random functions per run (TVM's parser dominates the cost of (b) and (k)).
N_A, FUNCS_A = 30, 5      # 150 high-level functions
N_B, FUNCS_B = 12, 5      # 60 planned functions
N_K, FUNCS_K = 24, 5      # 120 post-planning functions with control flow
N_F, FUNCS_F = 8, 4       # 32 flat post-planning functions


# ----------------------------------------------------------------------- helpers
def _tvm(mod, passes):
    if isinstance(mod, str):
        mod = tvm_from_source(mod)
    for p in passes:
        mod = p(mod)
    return mod


def _tvm_names(mod):
    out = {}
    for gv, f in mod.functions.items():
        if isinstance(f, relax.Function):
            names = []

            def seq(s, names=names):
                for blk in s.blocks:
                    for b in blk.bindings:
                        if isinstance(b.value, relax.If):
                            seq(b.value.true_branch)
                            seq(b.value.false_branch)
                        names.append((b.var.name, isinstance(b.var, relax.DataflowVar)))

            seq(f.body)
            out[gv.name_hint] = names
    return out


def _our_names(mod):
    out = {}
    for gv, f in mod.functions.items():
        if isinstance(f, Function):
            names = []

            def seq(s, names=names):
                for blk in s.blocks:
                    for b in blk.bindings:
                        if isinstance(b.value, If):
                            seq(b.value.true_branch)
                            seq(b.value.false_branch)
                        names.append((b.var.name, isinstance(b.var, DataflowVar)))

            seq(f.body)
            out[gv.name] = names
    return out


def _assert_same_as_tvm(ours, tvm_mod):
    assert_structural_equal(ours, memcore_py.parse(tvm_mod.script()))
    assert _our_names(ours) == _tvm_names(tvm_mod)


def _n_kills(func):
    n = 0
    stack = [func.body]
    while stack:
        s = stack.pop()
        for blk in s.blocks:
            for b in blk.bindings:
                n += is_kill(b)
                if isinstance(b.value, If):
                    stack += [b.value.true_branch, b.value.false_branch]
    return n


# ----------------------------------------------------------------------- (a)
@pytest.mark.parametrize("seed", range(N_A))
def test_legalized_programs_lowered_like_tvm(seed):
    mod = random_highlevel_module(seed, n_functions=FUNCS_A, n_ops=8)
    legalized = _tvm(mod.script(), [relax.transform.LegalizeOps()])
    legalized_text = legalized.script()
    expected = _tvm(legalized, [relax.transform.ToNonDataflow(), relax.transform.RemovePurityChecking(),
                                relax.transform.CallTIRRewrite()])
    ours = Sequential([ToNonDataflow(), RemovePurityChecking(), CallTIRRewrite()])(memcore_py.parse(legalized_text))
    _assert_same_as_tvm(ours, expected)


# ----------------------------------------------------------------------- (b)
@pytest.mark.parametrize("seed", range(N_B))
def test_planned_programs_lowered_and_killed_like_tvm(seed):
    mod = batch_modules([random_lowered_module(seed * FUNCS_B + i, 30) for i in range(FUNCS_B)])
    planned_tvm = _tvm(mod.script(), [relax.transform.StaticPlanBlockMemory()])
    expected = _tvm(planned_tvm, [relax.transform.LowerAllocTensor(), relax.transform.KillAfterLastUse()])
    planned = memcore_py.parse(planned_tvm.script())
    ours = Sequential([LowerAllocTensor(), KillAfterLastUse()])(planned)
    _assert_same_as_tvm(ours, expected)


# ----------------------------------------------------------------------- (k)
@pytest.mark.parametrize("seed", range(N_K))
def test_kill_after_last_use_with_control_flow(seed):
    text = random_kill_module(seed, n_functions=FUNCS_K, n_steps=14).script()
    expected = _tvm(text, [relax.transform.LowerAllocTensor(), relax.transform.KillAfterLastUse()])
    lowered = LowerAllocTensor()(memcore_py.parse(text))
    _assert_same_as_tvm(KillAfterLastUse(tvm_scoping=True)(lowered), expected)

    ours = KillAfterLastUse()(lowered)
    assert well_formed_report(ours) == []
    tvm_like = memcore_py.parse(expected.script())
    for gv, func in ours.functions.items():
        if isinstance(func, Function):
            assert_structural_equal(strip_kills(func), strip_kills(tvm_like[gv.name]))
            assert _n_kills(func) >= _n_kills(tvm_like[gv.name])


# ----------------------------------------------------------------------- (f)
@pytest.mark.parametrize("seed", range(N_F))
def test_kill_after_last_use_flat_programs(seed):
    text = random_kill_module(1000 + seed, n_functions=FUNCS_F, n_steps=20, control_flow=False).script()
    expected = _tvm(text, [relax.transform.LowerAllocTensor(), relax.transform.KillAfterLastUse()])
    ours = Sequential([LowerAllocTensor(), KillAfterLastUse()])(memcore_py.parse(text))
    _assert_same_as_tvm(ours, expected)
