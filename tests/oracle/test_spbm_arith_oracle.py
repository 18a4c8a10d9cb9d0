"""The symbolic arithmetic StaticPlanBlockMemory relies on, against TVM 0.27's analyzer.

- :func:`memcore_py.analysis.arith.const_int_bound` vs ``Analyzer.const_int_bound`` and
  :func:`~memcore_py.analysis.arith.int_set` vs ``Analyzer.int_set`` (the printed bound
  expressions must be identical) on random shape-like expressions under the bounds TVM's pass
  binds (``[lower or 0, upper]`` with an upper bound; non-negative marks);
- :func:`~memcore_py.analysis.arith.size_class_key` vs ``Analyzer.can_prove_equal`` on pairs of
  tensor sizes built the way the pass builds them (the reuse test for symbolic sizes).
"""
import random

import pytest

tvm = pytest.importorskip("tvm")
from tvm import tirx  # noqa: E402
import tvm.sym as tsym  # noqa: E402

from memcore_py.analysis import arith as A  # noqa: E402
from memcore_py.ir import prim as P  # noqa: E402
from memcore_py.ir.text.printer import format_prim  # noqa: E402

pytestmark = pytest.mark.oracle

NAMES = ("n", "m", "k")
_OPS = {"+": (tirx.Add, P.Add), "-": (tirx.Sub, P.Sub), "*": (tirx.Mul, P.Mul), "//": (tirx.FloorDiv, P.FloorDiv),
        "%": (tirx.FloorMod, P.FloorMod), "min": (tirx.Min, P.Min), "max": (tirx.Max, P.Max)}


def _rand_expr(rng, depth):
    """Shape-like expressions: sums and products of vars and positive constants, division
    and remainder by constants, min/max; no degenerate forms such as ``n - n``."""
    if depth == 0 or rng.random() < 0.3:
        return ("v", rng.choice(NAMES)) if rng.random() < 0.65 else ("c", rng.randint(1, 9))
    op = rng.choice(["+", "+", "-", "*", "*", "//", "%", "min", "max"])
    a, b = _rand_expr(rng, depth - 1), _rand_expr(rng, depth - 1)
    if op in ("//", "%", "-", "min", "max"):
        b = ("c", rng.randint(1, 5))
    if op in ("//", "%") and a[0] not in ("v", "*"):
        a = ("v", rng.choice(NAMES))
    if a[0] == "c":  # TVM's operators fold constant operands; keep a variable in every op
        a = ("v", rng.choice(NAMES))
    return (op, a, b)


def _build(t, tvm_vars):
    """The same tree on both sides (no constant folding: TVM's node constructors)."""
    if t[0] == "v":
        return tvm_vars[t[1]], P.PrimVar(t[1])
    if t[0] == "c":
        return tirx.IntImm("int64", t[1]), P.IntImm(t[1])
    (ta, oa), (tb, ob) = _build(t[1], tvm_vars), _build(t[2], tvm_vars)
    tcls, ocls = _OPS[t[0]]
    return tcls(ta, tb), ocls(oa, ob)


def _bounds(rng, tvm_vars):
    ana = tsym.Analyzer()
    dom = {}
    bounds = A.VarBounds()
    for name in NAMES:
        r = rng.random()
        v = tvm_vars[name]
        if r < 0.4:
            lo = rng.choice((0, 0, 1))
            hi = lo + rng.randint(2, 40)
            ana.bind(v, tvm.ir.Range.from_min_extent(tirx.IntImm("int64", lo), tirx.IntImm("int64", hi - lo + 1)))
            dom[v] = tsym.IntervalSet(tirx.IntImm("int64", lo), tirx.IntImm("int64", hi))
            bounds.ranges[name] = (lo, hi)
        elif r < 0.8:
            ana.update(v, tsym.ConstIntBound(0, tsym.ConstIntBound.POS_INF))
            bounds.non_negative.add(name)
    return ana, dom, bounds


def _text(x, tvm_vars):
    if x is A.PINF:
        return "pos_inf"
    if x is A.NINF:
        return "neg_inf"
    return str(_to_tvm(x, tvm_vars))


def _to_tvm(e, tvm_vars):
    if isinstance(e, P.IntImm):
        return tirx.IntImm("int64", e.value)
    if isinstance(e, P.PrimVar):
        return tvm_vars[e.name]
    for tcls, ocls in _OPS.values():
        if type(e) is ocls:
            return tcls(_to_tvm(e.a, tvm_vars), _to_tvm(e.b, tvm_vars))
    raise AssertionError(e)


@pytest.mark.parametrize("seed", range(int(__import__("os").environ.get("SPBM_ARITH_SEEDS", "4"))))
def test_bounds_match_tvm(seed):
    rng = random.Random(seed)
    checked = 0
    for _ in range(400):
        tvm_vars = {n: tirx.Var(n, "int64") for n in NAMES}
        ana, dom, bounds = _bounds(rng, tvm_vars)
        te, oe = _build(_rand_expr(rng, 3), tvm_vars)
        b = ana.const_int_bound(te)
        assert A.const_int_bound(oe, bounds) == (b.min_value, b.max_value), (te, bounds)
        if b.max_value != tsym.ConstIntBound.POS_INF:
            continue  # the pass only asks int_set when the constant bound is infinite
        try:
            ours = A.int_set(oe, bounds)
        except A.UnsupportedBound:
            assert "Select" in str(ana.int_set(te, dom)), te
            continue
        theirs = ana.int_set(te, dom)
        assert _text(ours[1], tvm_vars) == str(theirs.max_value), (te, bounds)
        checked += 1
    assert checked > 50


def _size(rng, tvm_vars):
    """A tensor size as the pass builds it: elem * (non-constant dims left to right)."""
    dims = []
    for _ in range(rng.randint(1, 4)):
        r = rng.random()
        if r < 0.35:
            dims.append(("c", rng.choice((2, 3, 4))))
        elif r < 0.8:
            dims.append(("v", rng.choice(NAMES)))
        elif r < 0.9:
            dims.append(("*", ("c", 2), ("v", rng.choice(NAMES))))
        else:
            dims.append(("+", ("v", rng.choice(NAMES)), ("c", 1)))
    shape = [_build(d, tvm_vars)[1] for d in dims]
    nbytes, const = A.tensor_bytes(shape, rng.choice(("float32", "float16", "int8")))
    return nbytes, const


def test_size_reuse_classes_match_can_prove_equal():
    rng = random.Random(7)
    tvm_vars = {n: tirx.Var(n, "int64") for n in NAMES}
    ana = tsym.Analyzer()
    sizes = [s for s in (_size(rng, tvm_vars) for _ in range(160)) if s[1] < 0]
    agree_equal = 0
    for i in range(len(sizes)):
        for j in range(i + 1, min(len(sizes), i + 25)):
            a, b = sizes[i][0], sizes[j][0]
            ours = A.size_class_key(a) == A.size_class_key(b)
            theirs = bool(ana.can_prove_equal(_to_tvm(a, tvm_vars), _to_tvm(b, tvm_vars)))
            assert ours == theirs, (format_prim(a), format_prim(b), theirs)
            agree_equal += ours
    assert agree_equal > 10
