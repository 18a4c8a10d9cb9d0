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

import pytest

tvm = pytest.importorskip("tvm")

from tvm import relax  # noqa: E402

import memcore_py  # noqa: E402
from memcore_py.testing.binding_programs import PAIR, T4, RandomBindings  # noqa: E402
from memcore_py.transform import CanonicalizeBindings  # noqa: E402
from memcore_py.tvm import to_tvm  # noqa: E402

from _helpers import tvm_from_source  # noqa: E402

pytestmark = pytest.mark.oracle

class _Program(RandomBindings):
    """What CanonicalizeBindings tells apart, besides the common kinds."""

    KINDS = RandomBindings.KINDS + ("rebind", "get", "repack", "const", "const_tuple", "cast_other", "shape_tuple")

    def kind_repack(self, out, v, tensors, pairs, in_dataflow):
        src = self.rng.choice(pairs)
        a, b = self.fresh(), self.fresh()
        first, second = self.rng.choice([(0, 1), (0, 1), (1, 0), (0, 0)])
        out.append(f"{a}: {T4} = {src}[{first}]")
        out.append(f"{b}: {T4} = {src}[{second}]")
        out.append(f"{v}: {PAIR} = ({a}, {b})")
        tensors.extend([a, b])
        pairs.append(v)

    def kind_const(self, out, v, tensors, pairs, in_dataflow):
        out.append(f'{v}: {T4} = R.const([1.0, 2.0, 3.0, 4.0], "float32")')
        tensors.append(v)

    def kind_const_tuple(self, out, v, tensors, pairs, in_dataflow):
        t = self.fresh()
        out.append(f'{t}: {PAIR} = (R.const([1.0, 2.0, 3.0, 4.0], "float32"), {self.rng.choice(tensors)})')
        out.append(f"{v}: {T4} = {t}[{self.rng.randrange(2)}]")
        pairs.append(t)
        tensors.append(v)

    def kind_shape_tuple(self, out, v, tensors, pairs, in_dataflow):
        t = self.fresh()
        out.append(f"{t}: R.Tuple(R.Shape([4]), {T4}) = (R.shape([4]), {self.rng.choice(tensors)})")
        out.append(f"{v}: {T4} = {t}[1]")
        tensors.append(v)

    def kind_cast_other(self, out, v, tensors, pairs, in_dataflow):
        out.append(f'{v}: R.Tensor(dtype="float32", ndim=1) = R.match_cast({self.rng.choice(tensors)}, '
                   'R.Tensor(dtype="float32", ndim=1))')

    def dataflow_output(self, out, name):
        """A rebinding of ``name`` (a DataflowVar the rewrite swaps) or a new value."""
        g = self.fresh()
        out.append(f"{g} = {name}" if self.rng.random() < 0.5 else f"{g}: {T4} = R.add({name}, {name})")
        return g

    def text(self):
        body = self.body(params_pairs=("p",), dataflow_probability=0.6)
        return f"""
@I.ir_module
class Module:
    @R.function
    def main(x: {T4}, y: {T4}, p: {PAIR}, c: R.Tensor((), dtype="bool")):
{self.indent(body)}
"""


def _program(seed):
    return _Program(seed).text()


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
