"""The independent plan checker follows a tuple's fields through aliases (issue 32, V1).

A get-item of a tuple reached through a rebinding (``t = (a, b); u = t; u[1]``) or through an
outer tuple reads only the indexed field; before, it read every field, so the checker
extended ``a``'s lifetime and refused a right plan that reuses ``a``'s bytes.
"""
from __future__ import annotations

import pytest

import memcore_py
from memcore import PlanError
from memcore_py.planning.check import collect_planned_tensors, verify_planned

TEXT = """
# from tvm.script import ir as I
# from tvm.script import tirx as T
# from tvm.script import relax as R
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def k2(A: T.handle, B: T.handle):
        T.evaluate(0)

    @R.function(pure=False)
    def main(x: R.Tensor((8,), dtype="float32")) -> R.Tensor((8,), dtype="float32"):
        cls = Module
        s0: R.Object = R.memory.alloc_storage(R.shape([32]), R.prim_value(0), R.str("global"), R.dtype("uint8"))
        s1: R.Object = R.memory.alloc_storage(R.shape([32]), R.prim_value(0), R.str("global"), R.dtype("uint8"))
        a: R.Tensor((8,), dtype="float32") = R.memory.alloc_tensor(s0, R.prim_value(0), R.shape([8]), R.dtype("float32"))
        _: R.Tuple = cls.k2(x, a)
        b: R.Tensor((8,), dtype="float32") = R.memory.alloc_tensor(s1, R.prim_value(0), R.shape([8]), R.dtype("float32"))
        _1: R.Tuple = cls.k2(a, b)
        t: R.Tuple(R.Tensor((8,), dtype="float32"), R.Tensor((8,), dtype="float32")) = (a, b)
        {ALIAS}
        g: R.Tensor((8,), dtype="float32") = {ITEM}
        c: R.Tensor((8,), dtype="float32") = R.memory.alloc_tensor(s0, R.prim_value(0), R.shape([8]), R.dtype("float32"))
        _2: R.Tuple = cls.k2(g, c)
        return c
"""

T_TY = 'R.Tuple(R.Tensor((8,), dtype="float32"), R.Tensor((8,), dtype="float32"))'
ALIASES = {
    "rebinding": (f"u: {T_TY} = t", "u[{i}]"),
    "match_cast": (f"u = R.match_cast(t, {T_TY})", "u[{i}]"),
    "outer tuple": (f'u: R.Tuple(R.Tensor((8,), dtype="float32"), {T_TY}) = (x, t)', "u[1][{i}]"),
    "item of a rebound outer tuple": (
        f'o: R.Tuple(R.Tensor((8,), dtype="float32"), {T_TY}) = (x, t)\n        u: {T_TY} = o[1]', "u[{i}]"),
}


def _planned(alias: str, index: int):
    line, item = ALIASES[alias]
    mod = memcore_py.parse(TEXT.replace("{ALIAS}", line).replace("{ITEM}", item.format(i=index)))
    return collect_planned_tensors(mod["main"], "main")


@pytest.mark.parametrize("alias", sorted(ALIASES))
def test_item_of_an_aliased_tuple_reads_only_its_field(alias):
    """``g`` is ``b``: ``a`` is dead after ``_1``, so ``c`` may take its bytes."""
    verify_planned(_planned(alias, 1))


@pytest.mark.parametrize("alias", sorted(ALIASES))
def test_item_naming_the_reused_tensor_is_still_refused(alias):
    """``g`` is ``a``, read together with ``c`` which sits in ``a``'s bytes: refused."""
    with pytest.raises(PlanError, match="overlap"):
        verify_planned(_planned(alias, 0))
