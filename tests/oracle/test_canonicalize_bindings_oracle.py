"""Oracle: memcore's CanonicalizeBindings against Apache TVM 0.27's on random programs.

Each program is a random Relax function mixing what the planning rules tell apart
(``memcore_py/analysis/_canonical_rules.pyx``): rebinding chains, get-items of tuple literals
(whose fields are variables, constants or shapes) known through variables, tuples that re-pack
every field of a parameter tuple in order (and ones that do not: a missing field, a swapped
order), constants, match_casts to the value's own type and to another, dataflow blocks whose
outputs rebind dataflow variables, and ``If`` branches with their own rebindings. The same text
is parsed by memcore and by TVM; memcore's pass output, converted to TVM objects, must be
structurally equal to TVM's pass output.
"""
from __future__ import annotations

import random

import pytest

tvm = pytest.importorskip("tvm")

from tvm import relax  # noqa: E402

import memcore_py  # noqa: E402
from memcore_py.transform import CanonicalizeBindings  # noqa: E402
from memcore_py.tvm import to_tvm  # noqa: E402

from _helpers import tvm_from_source  # noqa: E402

pytestmark = pytest.mark.oracle

T4 = 'R.Tensor((4,), dtype="float32")'
PAIR = f"R.Tuple({T4}, {T4})"


class _Program:
    """A random function body, statement by statement (text lines at one indent)."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.n = 0
        self.tensors = ["x", "y"]        # tensor-typed variables in scope
        self.pairs = ["p"]                # variables of type PAIR in scope
        self.lines = []

    def fresh(self):
        self.n += 1
        return f"v{self.n}"

    def statement(self, out, tensors, pairs, allow_scope):
        rng = self.rng
        kind = rng.choice(["add", "add", "rebind", "rebind", "tuple", "get", "get", "repack", "const",
                           "const_tuple", "cast_same", "cast_other", "shape_tuple"]
                          + (["if"] if allow_scope else []))
        v = self.fresh()
        if kind == "add":
            out.append(f"{v}: {T4} = R.add({rng.choice(tensors)}, {rng.choice(tensors)})")
            tensors.append(v)
        elif kind == "rebind":
            src = rng.choice(tensors + pairs)
            out.append(f"{v} = {src}")
            (tensors if src in tensors else pairs).append(v)
        elif kind == "tuple":
            out.append(f"{v}: {PAIR} = ({rng.choice(tensors)}, {rng.choice(tensors)})")
            pairs.append(v)
        elif kind == "get":
            out.append(f"{v}: {T4} = {rng.choice(pairs)}[{rng.randrange(2)}]")
            tensors.append(v)
        elif kind == "repack":
            src = rng.choice(pairs)
            a, b = self.fresh(), self.fresh()
            first, second = rng.choice([(0, 1), (0, 1), (1, 0), (0, 0)])
            out.append(f"{a}: {T4} = {src}[{first}]")
            out.append(f"{b}: {T4} = {src}[{second}]")
            out.append(f"{v}: {PAIR} = ({a}, {b})")
            tensors.extend([a, b])
            pairs.append(v)
        elif kind == "const":
            out.append(f'{v}: {T4} = R.const([1.0, 2.0, 3.0, 4.0], "float32")')
            tensors.append(v)
        elif kind == "const_tuple":
            t = self.fresh()
            out.append(f'{t}: {PAIR} = (R.const([1.0, 2.0, 3.0, 4.0], "float32"), {rng.choice(tensors)})')
            out.append(f"{v}: {T4} = {t}[{rng.randrange(2)}]")
            pairs.append(t)
            tensors.append(v)
        elif kind == "shape_tuple":
            t = self.fresh()
            out.append(f"{t}: R.Tuple(R.Shape([4]), {T4}) = (R.shape([4]), {rng.choice(tensors)})")
            out.append(f"{v}: {T4} = {t}[1]")
            tensors.append(v)
        elif kind == "cast_same":
            out.append(f"{v}: {T4} = R.match_cast({rng.choice(tensors)}, {T4})")
            tensors.append(v)
        elif kind == "cast_other":
            out.append(f'{v}: R.Tensor(dtype="float32", ndim=1) = R.match_cast({rng.choice(tensors)}, '
                       'R.Tensor(dtype="float32", ndim=1))')
        elif kind == "if":
            out.append("if c:")
            then_lines, else_lines = [], []
            for branch in (then_lines, else_lines):
                bt, bp = list(tensors), list(pairs)
                for _ in range(rng.randrange(1, 4)):
                    self.statement(branch, bt, bp, False)
                r = self.fresh()
                branch.append(f"{r}: {T4} = {rng.choice(bt[len(tensors) - 1:])}")
                branch.append(f"{v} = {r}")
            out.extend("    " + line for line in then_lines)
            out.append("else:")
            out.extend("    " + line for line in else_lines)
            tensors.append(v)

    def text(self):
        rng = self.rng
        body = []
        tensors, pairs = list(self.tensors), list(self.pairs)
        for _ in range(rng.randrange(3, 7)):
            self.statement(body, tensors, pairs, True)
        if rng.random() < 0.6:
            # a dataflow block: its outputs rebind dataflow variables, or are used after it
            df, dt, dp = [], list(tensors), list(pairs)
            for _ in range(rng.randrange(2, 6)):
                self.statement(df, dt, dp, False)
            outs = rng.sample(dt[len(tensors):] or dt, k=min(2, len(dt[len(tensors):] or dt)))
            gvs = []
            for o in outs:
                g = self.fresh()
                df.append(f"{g} = {o}" if rng.random() < 0.5 else f"{g}: {T4} = R.add({o}, {o})")
                gvs.append(g)
            df.append(f"R.output({', '.join(gvs)})")
            body.append("with R.dataflow():")
            body.extend("    " + line for line in df)
            tensors.extend(gvs)
        for _ in range(rng.randrange(1, 4)):
            self.statement(body, tensors, pairs, False)
        ret = self.fresh()
        body.append(f"{ret} = ({rng.choice(tensors)}, {rng.choice(pairs)})")
        body.append(f"return {ret}")
        lines = "\n".join("        " + line for line in body)
        return f"""
@I.ir_module
class Module:
    @R.function
    def main(x: {T4}, y: {T4}, p: {PAIR}, c: R.Tensor((), dtype="bool")):
{lines}
"""


def _program(seed):
    return _Program(random.Random(seed)).text()


@pytest.mark.parametrize("seeds", [range(0, 60), range(60, 120), range(120, 180)],
                         ids=["seeds0-59", "seeds60-119", "seeds120-179"])
def test_canonicalize_bindings_equals_tvm_on_random_programs(seeds):
    checked = 0
    for seed in seeds:
        text = _program(seed)
        tvm_mod = tvm_from_source(text)
        expected = relax.transform.CanonicalizeBindings()(tvm_mod)
        got = to_tvm(CanonicalizeBindings()(memcore_py.parse(text)))
        try:
            tvm.ir.assert_structural_equal(got["main"], expected["main"], map_free_vars=True)
        except ValueError as exc:
            raise AssertionError(f"seed {seed}:\n{text}") from exc
        checked += 1
    assert checked == len(seeds)


def _plan_counts(func):
    """How many trivial rebindings, constant bindings and exact re-packs the kernel plans."""
    from memcore_py._compiled import load_compiled
    from memcore_py.errors import PassError

    rules = load_compiled("memcore_py.analysis._canonical_rules")
    table = load_compiled("memcore_py.analysis._binding_table").BindingTable()
    load_compiled("memcore_py.analysis._ir_reader").IRReader(
        table, lambda callee: 0, PassError, "test", nested_scopes=True).read_function("main", func.body)
    plan = rules.canonical_plan(table, 0)
    trivial, constants, in_dataflow, outside = plan.objects()
    repacks = sum(plan.repack(v) == rules.REPACKS["exact"] for v in range(plan.n_vars))
    swapped = sum(1 for v in in_dataflow if v in outside)
    return len(trivial), len(constants), repacks, swapped


def test_random_programs_exercise_every_planning_rule():
    """The generator reaches each rule of the kernel: rebindings, constants (direct and
    through a tuple's field), exact re-packs, dataflow variables used after their block."""
    totals = [0, 0, 0, 0]
    for seed in range(180):
        counts = _plan_counts(memcore_py.parse(_program(seed))["main"])
        totals = [t + (c > 0) for t, c in zip(totals, counts)]
    trivial, constants, repacks, swapped = totals
    assert trivial > 150 and constants > 100 and repacks > 20 and swapped > 30, totals
