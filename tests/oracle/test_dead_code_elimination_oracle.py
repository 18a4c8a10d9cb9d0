"""Oracle: memcore's DeadCodeElimination against Apache TVM 0.27's on random programs.

Each program mixes what the unused-binding rule (``memcore_py/analysis/_dce_rules.pyx``) tells
apart: chains of pure bindings nobody reads (dead through several links), bindings read only by
dead ones, impure packed calls (kept with what they read), calls of a private pure function and
of an impure one, tuples and get-items, match_casts (never removed), ``If`` branches with their
own dead bindings and a result read by the ``If``'s variable, and dataflow blocks. The same text
is parsed by memcore and by TVM; memcore's pass output, converted to TVM objects, must be
structurally equal to TVM's.
"""
from __future__ import annotations

import pytest

tvm = pytest.importorskip("tvm")

from tvm import relax  # noqa: E402

import memcore_py  # noqa: E402
from memcore_py.testing.binding_programs import T4, RandomBindings  # noqa: E402
from memcore_py.transform import DeadCodeElimination  # noqa: E402
from memcore_py.tvm import to_tvm  # noqa: E402

from _helpers import tvm_from_source  # noqa: E402

pytestmark = pytest.mark.oracle

class _Program(RandomBindings):
    """What DeadCodeElimination tells apart, besides the common kinds: calls of a pure and of an
    impure private function, impure packed calls (none in a dataflow block)."""

    KINDS = RandomBindings.KINDS + ("add", "pure_call")
    IMPURE_KINDS = ("packed", "impure_call")

    def kinds(self, allow_scope, in_dataflow):
        return super().kinds(allow_scope and not in_dataflow, in_dataflow) + (
            [] if in_dataflow else list(self.IMPURE_KINDS))

    def kind_pure_call(self, out, v, tensors, pairs, in_dataflow):
        out.append(f"{v}: {T4} = Module.double({self.rng.choice(tensors)})")
        tensors.append(v)

    def kind_impure_call(self, out, v, tensors, pairs, in_dataflow):
        out.append(f"{v}: {T4} = Module.noisy({self.rng.choice(tensors)})")
        tensors.append(v)

    def kind_packed(self, out, v, tensors, pairs, in_dataflow):
        out.append(f'{v}: {T4} = R.call_packed("ext.f", {self.rng.choice(tensors)}, ty_args=({T4},))')
        tensors.append(v)

    def branch_result(self, tensors, n_outer):
        return f"R.add({self.rng.choice(tensors)}, {self.rng.choice(tensors)})"

    def text(self):
        body = self.body()
        return f"""
@I.ir_module
class Module:
    @R.function(private=True)
    def double(a: {T4}) -> {T4}:
        b: {T4} = R.add(a, a)
        return b

    @R.function(private=True, pure=False)
    def noisy(a: {T4}) -> {T4}:
        b: {T4} = R.call_packed("ext.g", a, ty_args=({T4},))
        return b

    @R.function(private=True)
    def unused(a: {T4}) -> {T4}:
        return a

    @R.function(pure=False)
    def main(x: {T4}, y: {T4}, c: R.Tensor((), dtype="bool")):
{self.indent(body)}
"""


def _program(seed):
    return _Program(seed).text()


@pytest.mark.parametrize("seeds", [range(0, 80), range(80, 160)], ids=["seeds0-79", "seeds80-159"])
def test_dead_code_elimination_equals_tvm_on_random_programs(seeds):
    removed = 0
    for seed in seeds:
        text = _program(seed)
        expected = relax.transform.DeadCodeElimination()(tvm_from_source(text))
        before = memcore_py.parse(text)
        after = DeadCodeElimination()(before)
        got = to_tvm(after)
        try:
            tvm.ir.assert_structural_equal(got, expected)
        except ValueError as exc:
            raise AssertionError(f"seed {seed}:\n{text}") from exc
        n_before = sum(len(b.bindings) for b in before["main"].body.blocks)
        n_after = sum(len(b.bindings) for b in after["main"].body.blocks)
        removed += n_after < n_before
    assert removed > len(seeds) // 2  # most programs lose bindings: the rule is exercised
