"""Oracle: the dynamic-shape arithmetic of memcore's torch import against TVM 0.27.

TVM's reshape constructor resolves a ``-1`` as ``Analyzer.Simplify(floordiv(old_prod,
new_prod))`` (``s * 256 // (s * 32)`` is ``8``); memcore ports that simplification
(:mod:`memcore_py.ir.simplify`). Three checks against TVM itself:

- generated programs of views, reshapes (``-1`` anywhere, or every dim explicit from
  ``x.shape``), flattens and transposes over inputs with one to three ``torch.export.Dim``
  dims (with bounds) import structurally equal to TVM's ``from_exported_program``;
- generated quotients of dim products (the expressions a reshape ``-1`` builds) simplify to
  the tree TVM's ``Analyzer.simplify`` writes;
- generated remainders ``(x * c1) % c2`` and ``(x * c1 + y) % c2`` (the trees the two ported
  rewrite rules match, and their neighbours) simplify as TVM's analyzer does, fresh and
  with variable bounds.
"""
import random

import pytest

torch = pytest.importorskip("torch")
tvm = pytest.importorskip("tvm")

import tvm_ffi  # noqa: E402
from tvm import sym as tsym  # noqa: E402
from tvm import tirx  # noqa: E402
from tvm.relax.frontend.torch import from_exported_program as tvm_from_exported_program  # noqa: E402

from memcore_py.ir.prim_arith import POS_INF, VarBounds, fold_floordiv, fold_mul  # noqa: E402
from memcore_py.ir.simplify import canonical_simplify, simplify  # noqa: E402
from memcore_py.frontend.exported_program import from_exported_program  # noqa: E402
from memcore_py.ir.prim import Add, FloorDiv, FloorMod, IntImm, Mul, PrimVar, Sub  # noqa: E402
from memcore_py.tvm import to_tvm  # noqa: E402

pytestmark = pytest.mark.oracle

#: Symbolic input dims: name, example value (distinct primes, so that torch keeps them apart
#: and never specialises them), bounds.
_SYMS = [("seq", 7, 2, 512), ("batch", 5, 2, 64), ("hw", 3, 2, 96)]
#: Static dims, each divisible by several split factors.
_STATIC = [256, 64, 48, 32, 12]


# ------------------------------------------------------------------------------ program generator
# A dim is tracked as (constant, sorted tuple of symbolic names): constant * product of syms.
def _mul(d, e):
    return (d[0] * e[0], tuple(sorted(d[1] + e[1])))


def _spell(target, dims):
    """How forward() writes one target dim: an int, ("dim", p) = x.shape[p], ("mul", p, q) =
    x.shape[p] * x.shape[q], or None when neither fits (it must be the -1)."""
    if not target[1]:
        return target[0]
    for p, d in enumerate(dims):
        if d == target:
            return ("dim", p)
    for p in range(len(dims)):
        for q in range(p + 1, len(dims)):
            if _mul(dims[p], dims[q]) == target:
                return ("mul", p, q)
    return None


def _reshape_step(r, dims, target, method):
    """An op writing ``target`` with one -1 (where a dim cannot be spelt, else anywhere) or,
    when every dim can be spelt, sometimes none."""
    spelt = [_spell(t, dims) for t in target]
    missing = [i for i, s in enumerate(spelt) if s is None]
    if len(missing) > 1:
        return None
    if missing:
        minus = missing[0]
    else:
        minus = r.choice(list(range(len(target))) + [None])
    spec = [-1 if i == minus else s for i, s in enumerate(spelt)]
    return (method, spec)


def _random_program(r, n_sym):
    """(ops, input shape spec, target dims) of one generated program: 3 to 5 shape ops."""
    syms = _SYMS[:n_sym]
    dims = [(1, (name,)) for name, *_ in syms] + [(c, ()) for c in r.sample(_STATIC, 2)]
    r.shuffle(dims)
    in_dims = list(dims)
    ops, transposed = [], False
    while len(ops) < r.randint(3, 5):
        kind = r.choice(["split", "split", "merge", "flatten", "transpose"])
        method = "reshape" if transposed or r.random() < 0.5 else "view"
        if kind == "split":
            cands = [(i, k) for i, d in enumerate(dims) for k in (2, 4, 8, 16, 32) if d[0] % k == 0 and d[0] > k]
            if not cands or len(dims) >= 6:
                continue
            i, k = r.choice(cands)
            target = dims[:i] + [(dims[i][0] // k, dims[i][1]), (k, ())] + dims[i + 1:]
            if r.random() < 0.5:  # the factor first: (k, rest)
                target[i], target[i + 1] = (k, ()), (dims[i][0] // k, dims[i][1])
        elif kind in ("merge", "flatten"):
            if len(dims) < 3:
                continue
            i = r.randrange(len(dims) - 1)
            j = i + 1 if kind == "merge" else r.randrange(i + 1, len(dims))
            merged = dims[i]
            for d in dims[i + 1:j + 1]:
                merged = _mul(merged, d)
            target = dims[:i] + [merged] + dims[j + 1:]
            if kind == "flatten":
                ops.append(("flatten", i, j))
                dims = target
                continue
        else:
            if len(dims) < 2:
                continue
            i, j = r.sample(range(len(dims)), 2)
            ops.append(("transpose", i, j))
            dims[i], dims[j] = dims[j], dims[i]
            transposed = True
            continue
        step = _reshape_step(r, dims, target, method)
        if step is None:
            continue
        ops.append(step)
        dims = target
    return ops, in_dims


class _Program(torch.nn.Module):
    def __init__(self, ops):
        super().__init__()
        self.ops = ops

    def forward(self, x):
        for op in self.ops:
            if op[0] == "transpose":
                x = x.transpose(op[1], op[2])
            elif op[0] == "flatten":
                x = x.flatten(op[1], op[2])
            else:
                shape = []
                for s in op[1]:
                    if isinstance(s, int):
                        shape.append(s)
                    elif s[0] == "dim":
                        shape.append(x.shape[s[1]])
                    else:
                        shape.append(x.shape[s[1]] * x.shape[s[2]])
                x = x.view(*shape) if op[0] == "view" else x.reshape(*shape)
            x = x * 2.0
        return x


def _export(ops, in_dims, n_sym):
    values = {name: v for name, v, *_ in _SYMS}
    shape = [values[d[1][0]] if d[1] else d[0] for d in in_dims]
    dyn = {}
    for i, d in enumerate(in_dims):
        if d[1]:
            name, _v, lo, hi = next(s for s in _SYMS if s[0] == d[1][0])
            dyn[i] = torch.export.Dim(name, min=lo, max=hi)
    return torch.export.export(_Program(ops).eval(), (torch.randn(*shape),), dynamic_shapes=({**dyn},))


def _assert_import_matches_tvm(ep, **kwargs):
    """memcore's import of ``ep`` converted to TVM equals TVM's (its ``params`` attribute, the
    weights, dropped as in test_exported_program_oracle.py)."""
    expected = tvm_from_exported_program(ep, keep_params_as_input=True, **kwargs)
    main = expected["main"]
    if main.attrs is not None and "params" in main.attrs:
        expected["main"] = main.without_attr("params")
    ours = from_exported_program(ep, keep_params_as_input=True, **kwargs)
    tvm.ir.assert_structural_equal(to_tvm(ours), expected)
    return ours


@pytest.mark.parametrize("n_sym", [1, 2, 3])
def test_generated_views_reshapes_flattens_match_tvm(n_sym):
    r = random.Random(20260 + n_sym)
    for _ in range(4):
        ops, in_dims = _random_program(r, n_sym)
        ep = _export(ops, in_dims, n_sym)
        try:
            _assert_import_matches_tvm(ep)
        except ValueError as exc:
            raise AssertionError(f"program {ops} on {in_dims}: {str(exc).splitlines()[0]}") from exc


def test_split_heads_view_matches_tvm():
    """The pattern of attention layers (and of ``findings/trial_dyn_reshape_bytes.py``):
    ``view(1, s, -1, 32)`` after a linear layer, heads transposed and merged back."""

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.q = torch.nn.Linear(256, 256)

        def forward(self, x):
            h = self.q(x).view(1, x.shape[1], -1, 32).transpose(1, 2)
            return (h * 2.0).transpose(1, 2).reshape(1, x.shape[1], 256)

    seq = torch.export.Dim("seq", min=2, max=256)
    ep = torch.export.export(M().eval(), (torch.randn(1, 64, 256),), dynamic_shapes=({1: seq},))
    for decompose in (True, False):
        ours = _assert_import_matches_tvm(ep, run_ep_decomposition=decompose)
        dims = [b.var.ty.shape for b in ours["main"].body.blocks[0].bindings if getattr(b.var.ty, "shape", None)]
        assert any(len(d) == 4 and type(d[2]) is IntImm and d[2].value == 8 for d in dims)


# ------------------------------------------------------------------------------ arithmetic oracle
def _to_tvm_prim(e, names):
    t = type(e)
    if t is IntImm:
        return tirx.IntImm(e.dtype, e.value)
    if t is PrimVar:
        return names.setdefault(e.name, tirx.Var(e.name, e.dtype))
    ctor = {Add: tirx.Add, Sub: tirx.Sub, Mul: tirx.Mul, FloorDiv: tirx.FloorDiv, FloorMod: tirx.FloorMod}[t]
    return ctor(_to_tvm_prim(e.a, names), _to_tvm_prim(e.b, names))


def _random_dim(r, names, nested=True):
    k = r.random()
    if k < 0.35:
        return IntImm(r.choice([1, 2, 3, 4, 8, 12, 16, 32, 64, 256, 768]))
    if k < 0.75 or not nested:
        return PrimVar(r.choice(names))
    if k < 0.9:  # a flattened dim
        return fold_mul(_random_dim(r, names, False), _random_dim(r, names, False))
    # a dim an earlier reshape resolved
    return simplify(fold_floordiv(fold_mul(_random_dim(r, names, False), IntImm(r.choice([8, 64]))),
                                  IntImm(r.choice([2, 4, 8]))))


def _product(dims):
    p = IntImm(1)
    for d in dims:
        p = fold_mul(p, d)
    return p


def test_generated_dim_quotients_simplify_as_tvm():
    r = random.Random(7)
    ana = tsym.Analyzer()
    bad = []
    for _ in range(600):
        names = ["s", "a", "b"][: r.randint(1, 3)]
        old = [_random_dim(r, names) for _ in range(r.randint(1, 4))]
        if r.random() < 0.6 and len(old) > 1:  # the new shape keeps some old dims
            new = r.sample(old, r.randint(1, len(old) - 1)) + [IntImm(r.choice([1, 2, 4]))]
        else:
            new = [_random_dim(r, names) for _ in range(r.randint(0, 3))]
        quotient = fold_floordiv(_product(old), _product(new))
        tvm_names = {}
        want = ana.simplify(_to_tvm_prim(quotient, tvm_names))
        got = _to_tvm_prim(simplify(quotient), tvm_names)
        if not tvm_ffi.structural_equal(got, want):
            bad.append(f"{quotient!r}: TVM {want}, memcore {got}")
    assert not bad, "\n".join(bad[:10])


# ------------------------------------------------------------------------------ rewrite rules
#: Constants of the remainder families: both signs, factors and multiples of each other, so
#: that ``c2 % c1 == 0``, ``c1 % c2 == 0``, ``c1 > c2`` and neither all occur.
_CONSTS = [-6, -4, -3, -2, -1, 1, 2, 3, 4, 5, 6, 8, 12, 16]
_OFFSETS = [-5, -1, 0, 1, 2, 3, 7]


def _remainder_family():
    """Trees the ported rewrite rules match (``floormod(x * c1, c2)``, ``floormod(x * c1 + y,
    c2)``), trees next to them they must leave to the canonical simplifier, and the rule's
    result under an outer node. Floor division of a sum by a constant and remainders of a sum
    by a negative divisor (but for the boundary cases of rule 2) are left out: TVM's rewrite
    rules for them are not ported."""
    s, a = PrimVar("s"), PrimVar("a")
    for c1 in _CONSTS:
        for c2 in _CONSTS:
            rem = FloorMod(Mul(s, IntImm(c1)), IntImm(c2))
            yield rem
            yield FloorMod(Mul(Mul(s, a), IntImm(c1)), IntImm(c2))
            yield Add(rem, s)
            yield Mul(rem, IntImm(3))
            yield FloorMod(rem, IntImm(4))
            if c2 > 0:
                yield FloorDiv(Mul(s, IntImm(c1)), IntImm(c2))
                yield FloorMod(Add(Mul(s, IntImm(c1)), a), IntImm(c2))
                for c3 in _OFFSETS:
                    yield FloorMod(Add(Mul(s, IntImm(c1)), IntImm(c3)), IntImm(c2))
    for c1, c2 in ((2, -4), (4, -8), (2, -2)):  # rule 2 needs a positive divisor
        yield FloorMod(Add(Mul(s, IntImm(c1)), IntImm(1)), IntImm(c2))
        yield FloorMod(Add(Mul(s, IntImm(c1)), a), IntImm(c2))


#: Variable bounds of the three analyzers: fresh (TVM's reshape ``-1``), shape vars known to
#: be non-negative, finite ranges (``a`` in ``[0, 1]`` proves ``a // c1 == 0`` for ``c1 >= 2``).
_BOUNDS = {
    "fresh": {},
    "non_negative": {"s": (0, None), "a": (0, None)},
    "ranges": {"s": (1, 64), "a": (0, 1)},
}


@pytest.mark.parametrize("bounds_name", list(_BOUNDS))
def test_remainders_of_scaled_vars_simplify_as_tvm(bounds_name):
    spec = _BOUNDS[bounds_name]
    bounds = VarBounds(ranges={k: v for k, v in spec.items() if v[1] is not None},
                       non_negative={k for k, v in spec.items() if v[1] is None})
    bad, n_rewritten = [], 0
    for expr in _remainder_family():
        names = {}
        ana = tsym.Analyzer()
        tvm_expr = _to_tvm_prim(expr, names)
        for name, (lo, hi) in spec.items():
            if name in names:
                ana.update(names[name], tsym.ConstIntBound(lo, POS_INF if hi is None else hi), True)
        want = ana.simplify(tvm_expr)
        if not tvm_ffi.structural_equal(ana.canonical_simplify(tvm_expr), want):
            n_rewritten += 1
        got = _to_tvm_prim(simplify(expr, bounds), names)
        if not tvm_ffi.structural_equal(got, want):
            bad.append(f"{expr!r}: TVM {want}, memcore {got}")
    assert not bad, f"{len(bad)} differ:\n" + "\n".join(bad[:10])
    assert n_rewritten > 100  # the family exercises TVM's rewrite step, not only canonical


def test_quotients_of_remainders_canonicalize_as_tvm():
    """``((s * c1) % c2 * k) // d`` for both signs of ``c1`` and ``k``: the remainder's split
    has a negative upper factor or scale, where TVM keeps the quotient rather than fold it to 0."""
    s = PrimVar("s")
    bad, n = [], 0
    for c1 in (-3, -2, -1, 1, 2, 3, 4):
        for c2 in (2, 3, 4, 5, 6, 8, 12):
            for k in (1, -1, 3):
                for d in (2, 3, 4, 6):
                    rem = FloorMod(Mul(s, IntImm(c1)), IntImm(c2))
                    expr = FloorDiv(Mul(rem, IntImm(k)) if k != 1 else rem, IntImm(d))
                    names = {}
                    want = tsym.Analyzer().canonical_simplify(_to_tvm_prim(expr, names))
                    got = _to_tvm_prim(canonical_simplify(expr), names)
                    n += 1
                    if not tvm_ffi.structural_equal(got, want):
                        bad.append(f"{expr!r}: TVM {want}, memcore {got}")
    assert n == 588 and not bad, f"{len(bad)} differ:\n" + "\n".join(bad[:10])
