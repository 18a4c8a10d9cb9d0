"""KillAfterLastUse (spec §2, §6.1, §6.2, §6.5, §7.2).

Every expected module is what TVM 0.27.0.post1 prints for the same input (obtained in the
venv), except the tests named ``..._ours`` / marked "documented difference": those check
our behaviour where DIFFERENCES.md says we deliberately differ, next to a test showing
that ``tvm_scoping=True`` reproduces TVM there. PrimFuncs are signature stubs; the pass
never looks inside them.
"""
import pytest

from memcore_py.analysis.last_usage import OUTPUT, collect_last_usage
from memcore_py.errors import PassError
from memcore_py.ir.expr import Call, DataflowBlock, Function, SeqExpr
from memcore_py.ir.structural import assert_structural_equal, structural_equal
from memcore_py.ir.well_formed import well_formed_report
from memcore_py.testing import random_lowered_module
from memcore_py.testing.lowering_programs import (
    assert_pass_output,
    elementwise_chain,
    module_from_text,
    random_kill_module,
)
from memcore_py.transform import KillAfterLastUse, LowerAllocTensor, PassContext, Sequential
from memcore_py.transform.kill_after_last_use import _kill_with_rebindings
from memcore_py.transform.kill_after_last_use import kill_after_last_use

from _helpers import strip_kills

STUBS = """
        @T.prim_func(private=True)
        def add(a: T.Buffer((2, 3), "float32"), b: T.Buffer((2, 3), "float32"), c: T.Buffer((2, 3), "float32")):
            T.evaluate(0)

        @T.prim_func(private=True)
        def multiply(a: T.Buffer((2, 3), "float32"), b: T.Buffer((2, 3), "float32"), c: T.Buffer((2, 3), "float32")):
            T.evaluate(0)
"""

T23 = 'R.Tensor((2, 3), dtype="float32")'
T4 = 'R.Tensor((4,), dtype="float32")'


def _kill_names(func):
    names = []
    stack = [func.body]
    while stack:
        s = stack.pop()
        for blk in s.blocks:
            for b in blk.bindings:
                if isinstance(b.value, Call) and getattr(b.value.op, "name", "").endswith(("kill_tensor", "kill_storage", "kill_object")):
                    names.append(b.var.name)
    return names


# ----------------------------------------------------------------------- spec examples
def test_spec_6_1_chain_lowered_and_killed():
    """§6.1: after StaticPlanBlockMemory, LowerAllocTensor + KillAfterLastUse remove the
    ``y = alloc`` re-bindings, kill each storage right after its last tensor is carved and
    each tensor after its last reader; the result is never killed."""
    before = f"""
    @I.ir_module
    class Module:{STUBS}
        @R.function
        def main(x: {T23}) -> {T23}:
            R.func_attr({{"relax.force_pure": True}})
            cls = Module
            storage: R.Any = R.memory.alloc_storage(R.shape([24]), 0, R.str("global"), R.dtype("float32"))
            alloc: {T23} = R.memory.alloc_tensor(storage, 0, R.shape([2, 3]), R.dtype("float32"), 0)
            cls.add(x, x, alloc)
            y: {T23} = alloc
            storage1: R.Any = R.memory.alloc_storage(R.shape([24]), 0, R.str("global"), R.dtype("float32"))
            alloc1: {T23} = R.memory.alloc_tensor(storage1, 0, R.shape([2, 3]), R.dtype("float32"), 0)
            cls.multiply(y, y, alloc1)
            z: {T23} = alloc1
            alloc2: {T23} = R.memory.alloc_tensor(storage, 0, R.shape([2, 3]), R.dtype("float32"), 0)
            cls.add(z, x, alloc2)
            w: {T23} = alloc2
            alloc3: {T23} = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("float32"), 0, R.str("global"))
            cls.multiply(w, z, alloc3)
            v: {T23} = alloc3
            return v
    """
    expected = f"""
    @I.ir_module
    class Module:{STUBS}
        @R.function
        def main(x: {T23}) -> {T23}:
            R.func_attr({{"relax.force_pure": True}})
            cls = Module
            storage: R.Any = R.memory.alloc_storage(R.shape([24]), 0, R.str("global"), R.dtype("float32"))
            alloc: {T23} = R.memory.alloc_tensor(storage, 0, R.shape([2, 3]), R.dtype("float32"), 0)
            cls.add(x, x, alloc)
            storage1: R.Any = R.memory.alloc_storage(R.shape([24]), 0, R.str("global"), R.dtype("float32"))
            alloc1: {T23} = R.memory.alloc_tensor(storage1, 0, R.shape([2, 3]), R.dtype("float32"), 0)
            R.memory.kill_storage(storage1)
            cls.multiply(alloc, alloc, alloc1)
            R.memory.kill_tensor(alloc)
            alloc2: {T23} = R.memory.alloc_tensor(storage, 0, R.shape([2, 3]), R.dtype("float32"), 0)
            R.memory.kill_storage(storage)
            cls.add(alloc1, x, alloc2)
            storage_1: R.Any = R.memory.alloc_storage(R.shape([24]), 0, R.str("global"), R.dtype("uint8"))
            alloc3: {T23} = R.memory.alloc_tensor(storage_1, 0, R.shape([2, 3]), R.dtype("float32"), 0)
            R.memory.kill_storage(storage_1)
            cls.multiply(alloc2, alloc1, alloc3)
            R.memory.kill_tensor(alloc1)
            R.memory.kill_tensor(alloc2)
            return alloc3
    """
    after = assert_pass_output(Sequential([LowerAllocTensor(), KillAfterLastUse()]), before, expected)
    # TVM's IR names, not just its structure: the kill vars are "_", "_1", ... from a
    # fresh name table (repeating any "_" already there); LowerAllocTensor's new storage
    # is named "storage" again (TVM's printer shows it as storage_1).
    names = [b.var.name for b in after["main"].body.blocks[0].bindings]
    assert _kill_names(after["main"]) == ["_", "_1", "_2", "_3", "_4", "_5"]
    assert [n for n in names if n.startswith("storage")] == ["storage", "storage1", "storage"]


def test_spec_6_2_tuple_result_tail():
    """§6.2: the returned tuple ``out = (alloc5, alloc2)`` is bound, then both members are
    killed (the tuple keeps them alive); ``t`` is unused after canonicalization (``b``/``c``
    read ``alloc1``/``alloc2``) and is never killed."""
    ty = 'R.Tensor((2, 4), dtype="float32")'
    tt = f"R.Tuple({ty}, {ty})"
    prims = """
        @T.prim_func(private=True)
        def split(a: T.Buffer((4, 4), "float32"), b: T.Buffer((2, 4), "float32"), c: T.Buffer((2, 4), "float32")):
            T.evaluate(0)

        @T.prim_func(private=True)
        def add(a: T.Buffer((2, 4), "float32"), b: T.Buffer((2, 4), "float32"), c: T.Buffer((2, 4), "float32")):
            T.evaluate(0)

        @T.prim_func(private=True)
        def tir_exp(a: T.Buffer((4, 4), "float32"), b: T.Buffer((4, 4), "float32")):
            T.evaluate(0)

        @T.prim_func(private=True)
        def tir_exp1(a: T.Buffer((2, 4), "float32"), b: T.Buffer((2, 4), "float32")):
            T.evaluate(0)
    """
    before = f"""
    @I.ir_module
    class Module:{prims}
        @R.function
        def main(x: R.Tensor((4, 4), dtype="float32")) -> {tt}:
            R.func_attr({{"relax.force_pure": True}})
            cls = Module
            storage: R.Any = R.memory.alloc_storage(R.shape([64]), 0, R.str("global"), R.dtype("float32"))
            alloc: R.Tensor((4, 4), dtype="float32") = R.memory.alloc_tensor(storage, 0, R.shape([4, 4]), R.dtype("float32"), 0)
            cls.tir_exp(x, alloc)
            a: R.Tensor((4, 4), dtype="float32") = alloc
            storage1: R.Any = R.memory.alloc_storage(R.shape([32]), 0, R.str("global"), R.dtype("float32"))
            alloc1: {ty} = R.memory.alloc_tensor(storage1, 0, R.shape([2, 4]), R.dtype("float32"), 0)
            alloc2: {ty} = R.builtin.alloc_tensor(R.shape([2, 4]), R.dtype("float32"), 0, R.str("global"))
            cls.split(a, alloc1, alloc2)
            t: {tt} = alloc1, alloc2
            b: {ty} = t[0]
            c: {ty} = t[1]
            alloc3: {ty} = R.memory.alloc_tensor(storage, 0, R.shape([2, 4]), R.dtype("float32"), 0)
            cls.add(b, c, alloc3)
            d: {ty} = alloc3
            alloc4: {ty} = R.memory.alloc_tensor(storage1, 0, R.shape([2, 4]), R.dtype("float32"), 0)
            cls.tir_exp1(d, alloc4)
            e: {ty} = alloc4
            alloc5: {ty} = R.builtin.alloc_tensor(R.shape([2, 4]), R.dtype("float32"), 0, R.str("global"))
            cls.tir_exp1(e, alloc5)
            f: {ty} = alloc5
            out: {tt} = f, c
            return out
    """
    expected = f"""
    @I.ir_module
    class Module:{prims}
        @R.function
        def main(x: R.Tensor((4, 4), dtype="float32")) -> {tt}:
            R.func_attr({{"relax.force_pure": True}})
            cls = Module
            storage: R.Any = R.memory.alloc_storage(R.shape([64]), 0, R.str("global"), R.dtype("float32"))
            alloc: R.Tensor((4, 4), dtype="float32") = R.memory.alloc_tensor(storage, 0, R.shape([4, 4]), R.dtype("float32"), 0)
            cls.tir_exp(x, alloc)
            storage1: R.Any = R.memory.alloc_storage(R.shape([32]), 0, R.str("global"), R.dtype("float32"))
            alloc1: {ty} = R.memory.alloc_tensor(storage1, 0, R.shape([2, 4]), R.dtype("float32"), 0)
            storage_1: R.Any = R.memory.alloc_storage(R.shape([32]), 0, R.str("global"), R.dtype("uint8"))
            alloc2: {ty} = R.memory.alloc_tensor(storage_1, 0, R.shape([2, 4]), R.dtype("float32"), 0)
            R.memory.kill_storage(storage_1)
            cls.split(alloc, alloc1, alloc2)
            R.memory.kill_tensor(alloc)
            t: {tt} = alloc1, alloc2
            alloc3: {ty} = R.memory.alloc_tensor(storage, 0, R.shape([2, 4]), R.dtype("float32"), 0)
            R.memory.kill_storage(storage)
            cls.add(alloc1, alloc2, alloc3)
            R.memory.kill_tensor(alloc1)
            alloc4: {ty} = R.memory.alloc_tensor(storage1, 0, R.shape([2, 4]), R.dtype("float32"), 0)
            R.memory.kill_storage(storage1)
            cls.tir_exp1(alloc3, alloc4)
            R.memory.kill_tensor(alloc3)
            storage1_1: R.Any = R.memory.alloc_storage(R.shape([32]), 0, R.str("global"), R.dtype("uint8"))
            alloc5: {ty} = R.memory.alloc_tensor(storage1_1, 0, R.shape([2, 4]), R.dtype("float32"), 0)
            R.memory.kill_storage(storage1_1)
            cls.tir_exp1(alloc4, alloc5)
            R.memory.kill_tensor(alloc4)
            out: {tt} = alloc5, alloc2
            R.memory.kill_tensor(alloc2)
            R.memory.kill_tensor(alloc5)
            return out
    """
    assert_pass_output(Sequential([LowerAllocTensor(), KillAfterLastUse()]), before, expected)


# ----------------------------------------------------------------------- TVM's own tests (§7.2)
def test_storage_killed_right_after_the_tensor_carved_from_it():
    before = """
    @I.ir_module
    class Module:
        @R.function(pure=False)
        def main(x: R.Tensor((16, 32), "float32")):
            storage = R.memory.alloc_storage(R.shape([2048]), 0, "global", "uint8")
            y = R.memory.alloc_tensor(storage, 0, R.shape([16, 32]), "float32")
            _dummy = R.call_packed("add_tensors", [x, y], ty_args=(R.Tuple,))
            z = R.add(x, y)
            return z
    """
    expected = """
    @I.ir_module
    class Module:
        @R.function(pure=False)
        def main(x: R.Tensor((16, 32), dtype="float32")) -> R.Tensor((16, 32), dtype="float32"):
            storage: R.Any = R.memory.alloc_storage(R.shape([2048]), 0, R.str("global"), R.dtype("uint8"))
            y: R.Tensor((16, 32), dtype="float32") = R.memory.alloc_tensor(storage, 0, R.shape([16, 32]), R.dtype("float32"), 0)
            R.memory.kill_storage(storage)
            R.call_packed("add_tensors", (x, y), ty_args=(R.Tuple,))
            z: R.Tensor((16, 32), dtype="float32") = R.add(x, y)
            R.memory.kill_tensor(y)
            return z
    """
    assert_pass_output(KillAfterLastUse(), before, expected)


def test_trivial_rebinding_removed_and_source_killed_after_last_alias_use():
    before = """
    @I.ir_module
    class Module:
        @R.function(pure=False)
        def main(w: R.Tensor((16, 32), "float32")):
            x = R.add(w, R.const(1, "float32"))
            y = x
            z = R.add(y, R.const(1, "float32"))
            return z
    """
    expected = """
    @I.ir_module
    class Module:
        @R.function(pure=False)
        def main(w: R.Tensor((16, 32), dtype="float32")) -> R.Tensor((16, 32), dtype="float32"):
            x: R.Tensor((16, 32), dtype="float32") = R.add(w, R.const(1.0, "float32"))
            z: R.Tensor((16, 32), dtype="float32") = R.add(x, R.const(1.0, "float32"))
            R.memory.kill_tensor(x)
            return z
    """
    assert_pass_output(KillAfterLastUse(), before, expected)


def test_match_cast_to_a_weaker_type_is_kept_and_both_killed():
    """The cast drops the dtype, so it is not trivial: ``x`` dies at the cast, ``y`` at ``z``."""
    before = """
    @I.ir_module
    class Module:
        @R.function(pure=False)
        def main(w: R.Tensor((16, 32), "float32")) -> R.Tensor((16, 32)):
            x: R.Tensor((16, 32), "float32") = R.add(w, R.const(1, "float32"))
            y: R.Tensor((16, 32)) = R.match_cast(x, R.Tensor((16, 32)))
            z: R.Tensor((16, 32)) = R.add(y, R.const(1, "float32"))
            return z
    """
    expected = """
    @I.ir_module
    class Module:
        @R.function(pure=False)
        def main(w: R.Tensor((16, 32), dtype="float32")) -> R.Tensor((16, 32)):
            x: R.Tensor((16, 32), dtype="float32") = R.add(w, R.const(1.0, "float32"))
            y: R.Tensor((16, 32)) = R.match_cast(x, R.Tensor((16, 32)))
            R.memory.kill_tensor(x)
            z: R.Tensor((16, 32)) = R.add(y, R.const(1.0, "float32"))
            R.memory.kill_tensor(y)
            return z
    """
    assert_pass_output(KillAfterLastUse(), before, expected)


# ----------------------------------------------------------------------- what gets killed
def test_null_value_is_never_killed():
    """A value bound to ``R.null_value()`` has no VM register (TVM 0.27.0.post1 skips it)."""
    before = """
    @I.ir_module
    class Module:
        @R.function(pure=False)
        def main(x: R.Tensor((16, 32), "float32")):
            storage = R.memory.alloc_storage(R.shape([2048]), 0, "global", "uint8")
            y = R.memory.alloc_tensor(storage, 0, R.shape([16, 32]), "float32")
            shape_heap: R.Object = R.null_value()
            _dummy = R.call_packed("use_shape_heap", shape_heap, ty_args=(R.Tuple,))
            z = R.add(x, y)
            return z
    """
    expected = """
    @I.ir_module
    class Module:
        @R.function(pure=False)
        def main(x: R.Tensor((16, 32), dtype="float32")) -> R.Tensor((16, 32), dtype="float32"):
            storage: R.Any = R.memory.alloc_storage(R.shape([2048]), 0, R.str("global"), R.dtype("uint8"))
            y: R.Tensor((16, 32), dtype="float32") = R.memory.alloc_tensor(storage, 0, R.shape([16, 32]), R.dtype("float32"), 0)
            R.memory.kill_storage(storage)
            shape_heap: R.Any = R.null_value()
            R.call_packed("use_shape_heap", shape_heap, ty_args=(R.Tuple,))
            z: R.Tensor((16, 32), dtype="float32") = R.add(x, y)
            R.memory.kill_tensor(y)
            return z
    """
    assert_pass_output(KillAfterLastUse(), before, expected)


def test_kill_kinds_without_control_flow():
    """§6.5 without If: tensors get kill_tensor (also a tuple member after the tuple), a
    packed call's tuple result kill_object; the get-item of a known tuple reads the field;
    constants are inlined and never killed; shapes, prim values, unused values and results
    are never killed."""
    before = """
    @I.ir_module
    class Module:
        @R.function(pure=False)
        def main(x: R.Tensor((4,), "float32")):
            a = R.add(x, x)
            b = R.add(a, a)
            d = R.add(x, b)
            e = R.add(d, d)
            tup = (e, d)
            g = tup[0]
            h = R.add(g, R.const(1.0, "float32"))
            s = R.shape_of(h)
            p = R.prim_value(3)
            k = R.const(2.0, "float32")
            pk = R.call_packed("f", h, p, k, ty_args=(R.Tuple(R.Tensor((4,), "float32"), R.Object),))
            q = pk[0]
            m = R.add(q, k)
            unused = R.add(m, m)
            return (m, s)
    """
    expected = f"""
    @I.ir_module
    class Module:
        @R.function(pure=False)
        def main(x: {T4}) -> R.Tuple({T4}, R.Shape([4])):
            a: {T4} = R.add(x, x)
            b: {T4} = R.add(a, a)
            R.memory.kill_tensor(a)
            d: {T4} = R.add(x, b)
            R.memory.kill_tensor(b)
            e: {T4} = R.add(d, d)
            tup: R.Tuple({T4}, {T4}) = e, d
            R.memory.kill_tensor(d)
            h: {T4} = R.add(e, R.const(1.0, "float32"))
            R.memory.kill_tensor(e)
            s: R.Shape([4]) = R.shape_of(h)
            p: T.int64 = 3
            k: R.Tensor((), dtype="float32") = R.const(2.0, "float32")
            pk: R.Tuple({T4}, R.Any) = R.call_packed("f", h, p, R.const(2.0, "float32"), ty_args=(R.Tuple({T4}, R.Any),))
            R.memory.kill_tensor(h)
            q: {T4} = pk[0]
            R.vm.kill_object(pk)
            m: {T4} = R.add(q, R.const(2.0, "float32"))
            R.memory.kill_tensor(q)
            unused: {T4} = R.add(m, m)
            return (m, s)
    """
    assert_pass_output(KillAfterLastUse(), before, expected)


def test_group_order_tensors_then_storage_then_objects():
    """Several kills after one binding: all kill_tensor, then kill_storage (memory and vm
    storages alike), then kill_object, each group in binding order."""
    before = """
    @I.ir_module
    class Module:
        @R.function(pure=False)
        def main(x: R.Tensor((2, 3), "float32")):
            s1 = R.memory.alloc_storage(R.shape([24]), 0, "global", "float32")
            o = R.call_packed("make_obj", ty_args=(R.Object,))
            t1 = R.memory.alloc_tensor(s1, 0, R.shape([2, 3]), "float32")
            s2 = R.vm.alloc_storage(R.shape([24]), 0, "float32")
            t2 = R.memory.alloc_tensor(s2, 0, R.shape([2, 3]), "float32")
            r = R.call_packed("consume", o, t2, t1, s2, s1, x, ty_args=(R.Tensor((2, 3), "float32"),))
            return r
    """
    expected = f"""
    @I.ir_module
    class Module:
        @R.function(pure=False)
        def main(x: {T23}) -> {T23}:
            s1: R.Any = R.memory.alloc_storage(R.shape([24]), 0, R.str("global"), R.dtype("float32"))
            o: R.Any = R.call_packed("make_obj", ty_args=(R.Any,))
            t1: {T23} = R.memory.alloc_tensor(s1, 0, R.shape([2, 3]), R.dtype("float32"), 0)
            s2: R.Any = R.vm.alloc_storage(R.shape([24]), 0, R.dtype("float32"), R.str("global"))
            t2: {T23} = R.memory.alloc_tensor(s2, 0, R.shape([2, 3]), R.dtype("float32"), 0)
            r: {T23} = R.call_packed("consume", o, t2, t1, s2, s1, x, ty_args=({T23},))
            R.memory.kill_tensor(t1)
            R.memory.kill_tensor(t2)
            R.memory.kill_storage(s1)
            R.memory.kill_storage(s2)
            R.vm.kill_object(o)
            return r
    """
    assert_pass_output(KillAfterLastUse(), before, expected)


def test_already_killed_value_is_not_killed_again():
    before = """
    @I.ir_module
    class Module:
        @R.function(pure=False)
        def main(x: R.Tensor((2, 3), "float32")):
            a = R.add(x, x)
            b = R.add(a, a)
            _k = R.memory.kill_tensor(a)
            c = R.add(b, b)
            return c
    """
    expected = f"""
    @I.ir_module
    class Module:
        @R.function(pure=False)
        def main(x: {T23}) -> {T23}:
            a: {T23} = R.add(x, x)
            b: {T23} = R.add(a, a)
            R.memory.kill_tensor(a)
            c: {T23} = R.add(b, b)
            R.memory.kill_tensor(b)
            return c
    """
    assert_pass_output(KillAfterLastUse(), before, expected)


def test_second_run_adds_nothing():
    before = """
    @I.ir_module
    class Module:
        @R.function(pure=False)
        def main(x: R.Tensor((2, 3), "float32")):
            a = R.add(x, x)
            b = R.add(a, a)
            c = R.add(b, b)
            t = (a, c)
            u = R.call_packed("f", t, ty_args=(R.Tensor((2, 3), "float32"),))
            return u
    """
    expected = f"""
    @I.ir_module
    class Module:
        @R.function(pure=False)
        def main(x: {T23}) -> {T23}:
            a: {T23} = R.add(x, x)
            b: {T23} = R.add(a, a)
            c: {T23} = R.add(b, b)
            R.memory.kill_tensor(b)
            t: R.Tuple({T23}, {T23}) = a, c
            R.memory.kill_tensor(a)
            R.memory.kill_tensor(c)
            u: {T23} = R.call_packed("f", t, ty_args=({T23},))
            R.vm.kill_object(t)
            return u
    """
    once = assert_pass_output(KillAfterLastUse(), before, expected)
    assert_structural_equal(KillAfterLastUse()(once), module_from_text(expected))


def test_returned_tuple_keeps_members_alive_members_killed():
    before = """
    @I.ir_module
    class Module:
        @R.function(pure=False)
        def main(x: R.Tensor((2, 3), "float32")):
            a = R.add(x, x)
            b = R.add(a, a)
            t = (a, b)
            return t
    """
    expected = f"""
    @I.ir_module
    class Module:
        @R.function(pure=False)
        def main(x: {T23}) -> R.Tuple({T23}, {T23}):
            a: {T23} = R.add(x, x)
            b: {T23} = R.add(a, a)
            t: R.Tuple({T23}, {T23}) = a, b
            R.memory.kill_tensor(a)
            R.memory.kill_tensor(b)
            return t
    """
    assert_pass_output(KillAfterLastUse(), before, expected)


def test_repacked_parameter_tuple_is_the_parameter():
    """``(p[0], p[1])`` re-packs every field of the parameter ``p``: it *is* ``p``."""
    before = """
    @I.ir_module
    class Module:
        @R.function(pure=False)
        def main(p: R.Tuple(R.Tensor((2, 3), "float32"), R.Tensor((2, 3), "float32"))):
            a = p[0]
            b = p[1]
            c = (a, b)
            d = R.call_packed("f", c, ty_args=(R.Tensor((2, 3), "float32"),))
            return d
    """
    expected = f"""
    @I.ir_module
    class Module:
        @R.function(pure=False)
        def main(p: R.Tuple({T23}, {T23})) -> {T23}:
            a: {T23} = p[0]
            b: {T23} = p[1]
            d: {T23} = R.call_packed("f", p, ty_args=({T23},))
            return d
    """
    assert_pass_output(KillAfterLastUse(), before, expected)


def test_repacked_call_result_stays_a_new_tuple():
    """The same re-packing of a *bound* tuple is not a copy (it unwraps to the call)."""
    before = """
    @I.ir_module
    class Module:
        @R.function(pure=False)
        def main(x: R.Tensor((2, 3), "float32")):
            p = R.call_packed("f", x, ty_args=(R.Tuple(R.Tensor((2, 3), "float32"), R.Tensor((2, 3), "float32")),))
            a = p[0]
            b = p[1]
            c = (a, b)
            d = R.call_packed("g", c, ty_args=(R.Tensor((2, 3), "float32"),))
            return d
    """
    expected = f"""
    @I.ir_module
    class Module:
        @R.function(pure=False)
        def main(x: {T23}) -> {T23}:
            p: R.Tuple({T23}, {T23}) = R.call_packed("f", x, ty_args=(R.Tuple({T23}, {T23}),))
            a: {T23} = p[0]
            b: {T23} = p[1]
            R.vm.kill_object(p)
            c: R.Tuple({T23}, {T23}) = a, b
            R.memory.kill_tensor(a)
            R.memory.kill_tensor(b)
            d: {T23} = R.call_packed("g", c, ty_args=({T23},))
            R.vm.kill_object(c)
            return d
    """
    assert_pass_output(KillAfterLastUse(), before, expected)


def test_function_value_is_never_killed():
    before = """
    @I.ir_module
    class Module:
        @R.function(pure=False)
        def main(x: R.Tensor((2, 3), "float32")):
            f = R.call_packed("get_f", ty_args=(R.Callable((R.Tensor((2, 3), "float32"),), R.Tensor((2, 3), "float32")),))
            a = R.add(x, x)
            b = f(a)
            c = R.add(b, b)
            return c
    """
    expected = f"""
    @I.ir_module
    class Module:
        @R.function(pure=False)
        def main(x: {T23}) -> {T23}:
            f: R.Callable(({T23},), {T23}, True) = R.call_packed("get_f", ty_args=(R.Callable(({T23},), {T23}, True),))
            a: {T23} = R.add(x, x)
            b: {T23} = f(a)
            R.memory.kill_tensor(a)
            c: {T23} = R.add(b, b)
            R.memory.kill_tensor(b)
            return c
    """
    assert_pass_output(KillAfterLastUse(), before, expected)


def test_view_does_not_extend_its_source():
    """Storage aliasing is not tracked: ``alloc`` dies right after ``vm.builtin.reshape``."""
    before = """
    @I.ir_module
    class Module:
        @R.function(pure=False)
        def main(x: R.Tensor((2, 3), "float32")):
            storage = R.memory.alloc_storage(R.shape([24]), 0, "global", "float32")
            alloc = R.memory.alloc_tensor(storage, 0, R.shape([2, 3]), "float32")
            lv = R.call_packed("vm.builtin.reshape", alloc, R.shape([6]), ty_args=(R.Tensor((6,), "float32"),))
            out = R.call_packed("use", lv, ty_args=(R.Tensor((6,), "float32"),))
            return out
    """
    t6 = 'R.Tensor((6,), dtype="float32")'
    expected = f"""
    @I.ir_module
    class Module:
        @R.function(pure=False)
        def main(x: {T23}) -> {t6}:
            storage: R.Any = R.memory.alloc_storage(R.shape([24]), 0, R.str("global"), R.dtype("float32"))
            alloc: {T23} = R.memory.alloc_tensor(storage, 0, R.shape([2, 3]), R.dtype("float32"), 0)
            R.memory.kill_storage(storage)
            lv: {t6} = R.call_packed("vm.builtin.reshape", alloc, R.shape([6]), ty_args=({t6},))
            R.memory.kill_tensor(alloc)
            out: {t6} = R.call_packed("use", lv, ty_args=({t6},))
            R.memory.kill_tensor(lv)
            return out
    """
    assert_pass_output(KillAfterLastUse(), before, expected)


def test_match_cast_of_constant():
    """A match_cast of a constant to its own type is trivial (uses read the constant); to
    another type it is kept, killed like any tensor, and reads the inlined constant."""
    before = """
    @I.ir_module
    class Module:
        @R.function(pure=False)
        def main(x: R.Tensor((16, 32), "float32")):
            k = R.const(1.0, "float32")
            kk = R.match_cast(k, R.Tensor((), "float32"))
            km = R.match_cast(k, R.Tensor(ndim=0))
            _j = R.call_packed("use", kk, km, ty_args=(R.Tuple,))
            return x
    """
    expected = """
    @I.ir_module
    class Module:
        @R.function(pure=False)
        def main(x: R.Tensor((16, 32), dtype="float32")) -> R.Tensor((16, 32), dtype="float32"):
            k: R.Tensor((), dtype="float32") = R.const(1.0, "float32")
            km: R.Tensor(ndim=0) = R.match_cast(R.const(1.0, "float32"), R.Tensor(ndim=0))
            R.call_packed("use", R.const(1.0, "float32"), km, ty_args=(R.Tuple,))
            R.memory.kill_tensor(km)
            return x
    """
    assert_pass_output(KillAfterLastUse(), before, expected)


# ----------------------------------------------------------------------- control flow
IF_BEFORE = """
@I.ir_module
class Module:
    @R.function(pure=False)
    def main(x: R.Tensor((4,), "float32"), c: R.Tensor((), "bool")):
        a = R.add(x, x)
        b = R.add(a, a)
        if c:
            t = R.multiply(b, b)
            u = R.multiply(t, t)
            r = u
        else:
            v = R.add(x, x)
            r = v
        d = R.add(r, b)
        e = R.add(d, d)
        tup = (e, d)
        g = tup[0]
        h = R.add(g, R.const(1.0, "float32"))
        s = R.shape_of(h)
        return (h, s)
"""


def _if_expected(after_if_kills: bool) -> str:
    k = (lambda line: line) if after_if_kills else (lambda line: "")
    return f"""
    @I.ir_module
    class Module:
        @R.function(pure=False)
        def main(x: {T4}, c: R.Tensor((), dtype="bool")) -> R.Tuple({T4}, R.Shape([4])):
            a: {T4} = R.add(x, x)
            b: {T4} = R.add(a, a)
            R.memory.kill_tensor(a)
            if c:
                t: {T4} = R.multiply(b, b)
                u: {T4} = R.multiply(t, t)
                R.memory.kill_tensor(t)
                r: {T4} = u
            else:
                v: {T4} = R.add(x, x)
                r: {T4} = v
            d: {T4} = R.add(r, b)
            {k("R.memory.kill_tensor(b)")}
            {k("R.memory.kill_tensor(r)")}
            e: {T4} = R.add(d, d)
            tup: R.Tuple({T4}, {T4}) = e, d
            {k("R.memory.kill_tensor(d)")}
            h: {T4} = R.add(e, R.const(1.0, "float32"))
            {k("R.memory.kill_tensor(e)")}
            s: R.Shape([4]) = R.shape_of(h)
            return (h, s)
    """


def test_if_kills_inside_branch_and_after_the_if_ours():
    """Documented difference (DIFFERENCES.md, KillAfterLastUse scopes): kills continue
    after the If — ``b`` and the If's own result ``r`` after ``d``, then ``d``, ``e`` —
    where TVM kills nothing more in the function. Inside the branch both agree."""
    assert_pass_output(KillAfterLastUse(), IF_BEFORE, _if_expected(after_if_kills=True))


def test_if_tvm_scoping_reproduces_tvm():
    """§6.5, TVM's actual output: nothing is killed after the first If."""
    assert_pass_output(KillAfterLastUse(tvm_scoping=True), IF_BEFORE, _if_expected(after_if_kills=False))


NESTED_IF = """
@I.ir_module
class Module:
    @R.function(pure=False)
    def main(x: R.Tensor((4,), "float32"), c: R.Tensor((), "bool")):
        a = R.add(x, x)
        if c:
            b = R.add(a, x)
            if c:
                d = R.add(b, b)
                e = R.add(d, d)
                r1 = e
            else:
                r1 = b
            f = R.add(r1, a)
            r = f
        else:
            r = x
        g = R.add(r, r)
        return g
"""


def _nested_expected(ours: bool) -> str:
    k = (lambda line: line) if ours else (lambda line: "")
    return f"""
    @I.ir_module
    class Module:
        @R.function(pure=False)
        def main(x: {T4}, c: R.Tensor((), dtype="bool")) -> {T4}:
            a: {T4} = R.add(x, x)
            if c:
                b: {T4} = R.add(a, x)
                if c:
                    d: {T4} = R.add(b, b)
                    e: {T4} = R.add(d, d)
                    R.memory.kill_tensor(d)
                    r1: {T4} = e
                else:
                    r1: {T4} = b
                {k("R.memory.kill_tensor(b)")}
                f: {T4} = R.add(r1, a)
                {k("R.memory.kill_tensor(r1)")}
                r: {T4} = f
            else:
                r: {T4} = x
            {k("R.memory.kill_tensor(a)")}
            g: {T4} = R.add(r, r)
            {k("R.memory.kill_tensor(r)")}
            return g
    """


def test_nested_if_ours():
    """Documented difference: a branch variable used inside a nested If (``b``) dies after
    that If; an outer variable used only inside a branch (``a``) dies after the outer If."""
    assert_pass_output(KillAfterLastUse(), NESTED_IF, _nested_expected(ours=True))


def test_nested_if_tvm_scoping_reproduces_tvm():
    assert_pass_output(KillAfterLastUse(tvm_scoping=True), NESTED_IF, _nested_expected(ours=False))


DATAFLOW = """
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4,), "float32")):
        R.func_attr({"relax.force_pure": True})
        a = R.add(x, x)
        with R.dataflow():
            b = R.add(a, a)
            c = R.add(b, b)
            d = R.add(c, x)
            R.output(d)
        e = R.add(d, d)
        with R.dataflow():
            f = R.add(e, e)
            R.output(f)
        return f
"""


def test_dataflow_blocks_get_no_kills_ours():
    """Documented difference (DIFFERENCES.md, KillAfterLastUse dataflow): kill calls are
    impure, so none goes inside a dataflow block: ``a`` (last read in the block) is killed
    right after it; DataflowVars ``b``, ``c`` cannot be named outside and are not killed."""
    expected = f"""
    @I.ir_module
    class Module:
        @R.function
        def main(x: {T4}) -> {T4}:
            R.func_attr({{"relax.force_pure": True}})
            a: {T4} = R.add(x, x)
            with R.dataflow():
                b: {T4} = R.add(a, a)
                c: {T4} = R.add(b, b)
                d: {T4} = R.add(c, x)
                R.output(d)
            R.memory.kill_tensor(a)
            e: {T4} = R.add(d, d)
            R.memory.kill_tensor(d)
            with R.dataflow():
                f: {T4} = R.add(e, e)
                R.output(f)
            R.memory.kill_tensor(e)
            return f
    """
    after = assert_pass_output(KillAfterLastUse(), DATAFLOW, expected)
    assert well_formed_report(after) == []


@pytest.mark.no_verify(reason="TVM's output is ill-formed (kills inside dataflow blocks) and is reproduced on purpose")
def test_dataflow_tvm_scoping_reproduces_tvm_ill_formed_output():
    """TVM 0.27 puts the kills inside the dataflow blocks (TVM issue #17340)."""
    expected = f"""
    @I.ir_module
    class Module:
        @R.function
        def main(x: {T4}) -> {T4}:
            R.func_attr({{"relax.force_pure": True}})
            a: {T4} = R.add(x, x)
            with R.dataflow():
                b: {T4} = R.add(a, a)
                R.memory.kill_tensor(a)
                c: {T4} = R.add(b, b)
                R.memory.kill_tensor(b)
                d: {T4} = R.add(c, x)
                R.memory.kill_tensor(c)
                R.output(d)
            e: {T4} = R.add(d, d)
            R.memory.kill_tensor(d)
            with R.dataflow():
                f: {T4} = R.add(e, e)
                R.memory.kill_tensor(e)
                R.output(f)
            return f
    """
    after = KillAfterLastUse(tvm_scoping=True)(module_from_text(DATAFLOW))
    main = after["main"]
    blocks = main.body.blocks
    assert isinstance(blocks[1], DataflowBlock) and len(blocks[1].bindings) == 6
    assert structural_equal(after, _parse_unchecked(expected))
    assert well_formed_report(after)  # impure calls inside a dataflow block


def _parse_unchecked(text):
    return module_from_text(text)


# ----------------------------------------------------------------------- names, functions, errors
def test_kill_names_restart_in_every_function():
    before = """
    @I.ir_module
    class Module:
        @R.function(pure=False)
        def f1(x: R.Tensor((2, 3), "float32")):
            a = R.add(x, x)
            b = R.add(a, a)
            c = R.add(b, b)
            return c

        @R.function(pure=False)
        def f2(x: R.Tensor((2, 3), "float32")):
            a = R.add(x, x)
            b = R.add(a, a)
            return b
    """
    after = KillAfterLastUse()(module_from_text(before))
    assert _kill_names(after["f1"]) == ["_", "_1"]
    assert _kill_names(after["f2"]) == ["_"]


def test_codegen_and_primitive_functions_are_processed_too():
    """TVM 0.27's function pass does not skip them (checked in the venv)."""
    before = """
    @I.ir_module
    class Module:
        @R.function(pure=False)
        def main(x: R.Tensor((2, 3), "float32")):
            R.func_attr({"Codegen": "ext"})
            a = R.add(x, x)
            b = R.add(a, a)
            return b

        @R.function(pure=False)
        def p(x: R.Tensor((2, 3), "float32")):
            R.func_attr({"Primitive": True})
            a = R.add(x, x)
            b = R.add(a, a)
            return b
    """
    after = KillAfterLastUse()(module_from_text(before))
    assert _kill_names(after["main"]) == ["_"] and _kill_names(after["p"]) == ["_"]


def test_kill_of_a_non_variable_raises_naming_function_and_binding():
    before = """
    @I.ir_module
    class Module:
        @R.function(pure=False)
        def main(x: R.Tensor((2, 3), "float32")):
            a = R.add(x, x)
            k = R.memory.kill_tensor(R.prim_value(1))
            return a
    """
    mod = module_from_text(before)
    with pytest.raises(PassError, match=r"kill_tensor must be applied to a variable.*function 'main', binding k = "):
        KillAfterLastUse()(mod)


def test_kill_with_two_arguments_raises():
    """Built directly: the parser already refuses ``R.memory.kill_tensor(x, x)``."""
    from memcore_py.ir.expr import BindingBlock, Var, VarBinding
    from memcore_py.ir.op import get_op
    from memcore_py.ir.types import TensorType, TupleType

    x = Var("x", TensorType((2, 3), "float32"))
    k = Var("k", TupleType([]))
    body = SeqExpr([BindingBlock([VarBinding(k, Call(get_op("relax.memory.kill_tensor"), [x, x]))])], x)
    func = Function([x], body, is_pure=False)
    with pytest.raises(PassError, match=r"exactly one argument; got 2.*function 'f', binding k = "):
        kill_after_last_use(func, "f")


def test_pass_object():
    assert KillAfterLastUse.name == "kill-after-last-use"
    assert repr(KillAfterLastUse()) == "KillAfterLastUse()"
    assert repr(KillAfterLastUse(tvm_scoping=True)) == "KillAfterLastUse(tvm_scoping=True)"


# ----------------------------------------------------------------------- analysis API
def test_collect_last_usage_result():
    mod = module_from_text("""
    @I.ir_module
    class Module:
        @R.function(pure=False)
        def main(x: R.Tensor((2, 3), "float32")):
            s = R.memory.alloc_storage(R.shape([24]), 0, "global", "float32")
            t = R.memory.alloc_tensor(s, 0, R.shape([2, 3]), "float32")
            u = R.add(t, x)
            v = R.add(u, u)
            return v
    """)
    func = mod["main"]
    s, t, u, v = (b.var for b in func.body.blocks[0].bindings)
    usage = collect_last_usage(func, func_name="main")
    assert usage.last_use == {t: u, s: t, u: v, v: OUTPUT}  # params are no scope's variables
    assert usage.kills_after[t].storage == [s]
    assert usage.kills_after[u].tensors == [t]
    assert usage.kills_after[v].tensors == [u]
    assert v not in usage.kills_after or not usage.kills_after[v].objects
    assert usage.killed == set() and usage.deferred == {}


def test_collect_last_usage_rejects_non_function():
    with pytest.raises(PassError, match="Function or SeqExpr"):
        collect_last_usage(42)


# ----------------------------------------------------------------------- properties
@pytest.mark.parametrize("seed", range(12))
def test_rebinding_rule_equals_canonicalize_bindings(seed):
    """The kernel's rebinding rule (``y = x`` dropped, without CanonicalizeBindings) gives
    exactly CanonicalizeBindings + the kernel (structure and every binding's name), on planned
    programs and on flat programs mixing every construct the pass distinguishes."""
    from memcore_py.transform.kill_after_last_use import _kill_after_last_use

    mods = [LowerAllocTensor()(random_lowered_module(seed, 60)),
            LowerAllocTensor()(random_kill_module(seed, 3, 20, control_flow=False))]
    for mod in mods:
        for gv, func in mod.functions.items():
            if not isinstance(func, Function):
                continue
            fast = _kill_with_rebindings(func, gv.name, False)
            assert fast is not None
            general = _kill_after_last_use(func, gv.name, False, allow_fast=False)
            assert_structural_equal(fast, general)
            assert [b.var.name for b in fast.body.blocks[0].bindings] == \
                [b.var.name for b in general.body.blocks[0].bindings]


def test_elementwise_chain_equals_the_general_path():
    func = LowerAllocTensor()(elementwise_chain(40))["main"]
    from memcore_py.transform.kill_after_last_use import _kill_after_last_use

    assert_structural_equal(_kill_with_rebindings(func, "main", False), _kill_after_last_use(func, "main", False, allow_fast=False))


@pytest.mark.parametrize("seed", range(10))
def test_ours_differs_from_tvm_scoping_only_by_added_kills(seed):
    """On random post-planning functions (with If/else): removing all kill calls from our
    output and from the TVM-scoped output gives the same function, we kill at least what
    TVM kills, and our output is well-formed."""
    mod = LowerAllocTensor()(random_kill_module(seed, 2, 14))
    ours = KillAfterLastUse()(mod)
    tvm_like = KillAfterLastUse(tvm_scoping=True)(mod)
    assert well_formed_report(ours) == []
    for gv in mod.functions:
        if isinstance(mod[gv], Function):
            assert_structural_equal(strip_kills(ours[gv]), strip_kills(tvm_like[gv]))
            assert len(_kill_names(ours[gv])) >= len(_kill_names(tvm_like[gv]))


def test_verify_context_accepts_output():
    mod = LowerAllocTensor()(random_kill_module(3, 2, 12))
    with PassContext(verify=True):
        KillAfterLastUse()(mod)


def test_function_level_entry_point():
    func = LowerAllocTensor()(elementwise_chain(3))["main"]
    out = kill_after_last_use(func, "main")
    assert _kill_names(out) == ["_", "_1", "_2", "_3", "_4"]


def test_void_value_is_never_killed():
    """A ``R.Tuple()`` value (a DPS call's result) is never killed: TVM's normalizer turns
    each use of it into an empty tuple literal (TVM's output reads ``R.tuple()`` where we
    keep ``v``), so for TVM it has no use. Fast and general paths agree."""
    before = """
    @I.ir_module
    class Module:
        @R.function(pure=False)
        def main(x: R.Tensor((2, 3), "float32")):
            a = R.add(x, x)
            v: R.Tuple = R.call_packed("dps", a, ty_args=(R.Tuple,))
            u = R.call_packed("use", v, a, ty_args=(R.Tensor((2, 3), "float32"),))
            return u
    """
    from memcore_py.transform.kill_after_last_use import _kill_after_last_use

    mod = module_from_text(before)
    fast = _kill_with_rebindings(mod["main"], "main", False)
    general = _kill_after_last_use(mod["main"], "main", False, allow_fast=False)
    assert_structural_equal(fast, general)
    kills = [(b.value.op.name, b.value.args[0].name) for b in fast.body.blocks[0].bindings if b.var.name.startswith("_")]
    assert kills == [("relax.memory.kill_tensor", "a")]


def test_kill_after_last_use_empty_tuple():
    """``t: R.Tuple = R.tuple()`` used in a returned tuple is never killed, whichever path
    runs: an empty tuple holds no register (TVM reads ``R.tuple()`` at every use of ``t``,
    so its pass kills nothing here either)."""
    before = f"""
    @I.ir_module
    class Module:
        @R.function(pure=False)
        def main(x: {T23}) -> R.Tuple(R.Tuple, {T23}):
            t: R.Tuple = R.tuple()
            u: R.Tuple(R.Tuple, {T23}) = (t, x)
            return u
    """
    from memcore_py.transform.kill_after_last_use import _kill_after_last_use

    mod = module_from_text(before)
    fast = _kill_with_rebindings(mod["main"], "main", False)
    general = _kill_after_last_use(mod["main"], "main", False, allow_fast=False)
    assert_structural_equal(fast, general)
    assert _kill_names(fast) == []
    assert_structural_equal(KillAfterLastUse()(mod), mod)
