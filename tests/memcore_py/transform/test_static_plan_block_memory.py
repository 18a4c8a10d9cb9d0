"""StaticPlanBlockMemory: TVM's worked examples and acceptance scenarios, one per test.

Each test writes a post-CallTIRRewrite module (``before``) in TVMScript and the module the pass
must produce (``expected``): Apache TVM 0.27.0.post1's own output for the same input, except
in the tests of the documented differences (DIFFERENCES.md), whose expected text is written
by hand. The kernels ``k1``/``k2``/``k3`` are signature-only PrimFuncs; planning does not look
inside them. Arena mode, bad input and the pipeline with LowerAllocTensor/KillAfterLastUse
follow.
"""
import re

import numpy as np
import pytest

import memcore
import memcore_py
from memcore_py.errors import PassError
from memcore_py.ir import (
    BindingBlock,
    Call,
    DataTypeImm,
    Function,
    GlobalVar,
    IRModule,
    ObjectType,
    PrimValue,
    SeqExpr,
    ShapeExpr,
    StringImm,
    TensorType,
    Var,
    VarBinding,
    get_op,
)
from memcore_py.ir.structural import assert_structural_equal
from memcore_py.ir.well_formed import well_formed_report
from memcore_py.planning.check import collect_planned_tensors, verify_planned
from memcore_py.testing.memory_programs import chain_module, random_memory_module
from memcore_py.transform import KillAfterLastUse, LowerAllocTensor, PassContext, Sequential, StaticPlanBlockMemory
from memcore_py.transform.static_plan_block_memory import (
    DIFF_DEVICE_POOLS,
    DIFF_DOMINATING_STORAGE,
    differences_from_tvm,
    plan_statistics,
    static_plan_block_memory,
)

_HEADER = """
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def k1(A: T.handle):
        T.evaluate(0)

    @T.prim_func(private=True)
    def k2(A: T.handle, B: T.handle):
        T.evaluate(0)

    @T.prim_func(private=True)
    def k3(A: T.handle, B: T.handle, C: T.handle):
        T.evaluate(0)
"""


def _check(before, expected, mode="tvm"):
    mod = memcore_py.parse(before)
    out = StaticPlanBlockMemory(mode)(mod)
    assert_structural_equal(out, memcore_py.parse(expected))
    assert well_formed_report(out) == []
    return out


def test_spec_6_1_chain():
    """Spec §6.1: add/multiply chain; the third tensor takes the first storage, the returned one stays unplanned."""
    before = _HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
        cls = Module
        alloc: R.Tensor((2, 3), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _: R.Tuple = cls.k3(x, x, alloc)
        y: R.Tensor((2, 3), dtype="float32") = alloc
        alloc1: R.Tensor((2, 3), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _1: R.Tuple = cls.k3(y, y, alloc1)
        z: R.Tensor((2, 3), dtype="float32") = alloc1
        alloc2: R.Tensor((2, 3), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _2: R.Tuple = cls.k3(z, x, alloc2)
        w: R.Tensor((2, 3), dtype="float32") = alloc2
        alloc3: R.Tensor((2, 3), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _3: R.Tuple = cls.k3(w, z, alloc3)
        v: R.Tensor((2, 3), dtype="float32") = alloc3
        return v
"""
    # expected: TVM 0.27.0.post1's output
    expected = _HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
        cls = Module
        storage: R.Any = R.memory.alloc_storage(R.shape([24]), 0, R.str("global"), R.dtype("float32"))
        alloc: R.Tensor((2, 3), dtype="float32") = R.memory.alloc_tensor(storage, 0, R.shape([2, 3]), R.dtype("float32"), 0)
        cls.k3(x, x, alloc)
        y: R.Tensor((2, 3), dtype="float32") = alloc
        storage1: R.Any = R.memory.alloc_storage(R.shape([24]), 0, R.str("global"), R.dtype("float32"))
        alloc1: R.Tensor((2, 3), dtype="float32") = R.memory.alloc_tensor(storage1, 0, R.shape([2, 3]), R.dtype("float32"), 0)
        cls.k3(y, y, alloc1)
        z: R.Tensor((2, 3), dtype="float32") = alloc1
        alloc2: R.Tensor((2, 3), dtype="float32") = R.memory.alloc_tensor(storage, 0, R.shape([2, 3]), R.dtype("float32"), 0)
        cls.k3(z, x, alloc2)
        w: R.Tensor((2, 3), dtype="float32") = alloc2
        alloc3: R.Tensor((2, 3), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("float32"), 0, R.str("global"))
        cls.k3(w, z, alloc3)
        v: R.Tensor((2, 3), dtype="float32") = alloc3
        return v
"""
    _check(before, expected)


def test_spec_6_2_tuple():
    """Spec §6.2: a split into a tuple whose second field is returned; 32-byte tensors reuse the 64-byte storage."""
    before = _HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor((4, 4), dtype="float32")) -> R.Tuple(R.Tensor((2, 4), dtype="float32"), R.Tensor((2, 4), dtype="float32")):
        cls = Module
        alloc: R.Tensor((4, 4), dtype="float32") = R.builtin.alloc_tensor(R.shape([4, 4]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _: R.Tuple = cls.k2(x, alloc)
        a: R.Tensor((4, 4), dtype="float32") = alloc
        alloc1: R.Tensor((2, 4), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 4]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        alloc2: R.Tensor((2, 4), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 4]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _1: R.Tuple = cls.k3(a, alloc1, alloc2)
        t: R.Tuple(R.Tensor((2, 4), dtype="float32"), R.Tensor((2, 4), dtype="float32")) = (alloc1, alloc2)
        b: R.Tensor((2, 4), dtype="float32") = t[0]
        c: R.Tensor((2, 4), dtype="float32") = t[1]
        alloc3: R.Tensor((2, 4), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 4]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _2: R.Tuple = cls.k3(b, c, alloc3)
        d: R.Tensor((2, 4), dtype="float32") = alloc3
        alloc4: R.Tensor((2, 4), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 4]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _3: R.Tuple = cls.k2(d, alloc4)
        e: R.Tensor((2, 4), dtype="float32") = alloc4
        alloc5: R.Tensor((2, 4), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 4]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _4: R.Tuple = cls.k2(e, alloc5)
        f: R.Tensor((2, 4), dtype="float32") = alloc5
        out: R.Tuple(R.Tensor((2, 4), dtype="float32"), R.Tensor((2, 4), dtype="float32")) = (f, c)
        return out
"""
    # expected: TVM 0.27.0.post1's output
    expected = _HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor((4, 4), dtype="float32")) -> R.Tuple(R.Tensor((2, 4), dtype="float32"), R.Tensor((2, 4), dtype="float32")):
        cls = Module
        storage: R.Any = R.memory.alloc_storage(R.shape([64]), 0, R.str("global"), R.dtype("float32"))
        alloc: R.Tensor((4, 4), dtype="float32") = R.memory.alloc_tensor(storage, 0, R.shape([4, 4]), R.dtype("float32"), 0)
        cls.k2(x, alloc)
        a: R.Tensor((4, 4), dtype="float32") = alloc
        storage1: R.Any = R.memory.alloc_storage(R.shape([32]), 0, R.str("global"), R.dtype("float32"))
        alloc1: R.Tensor((2, 4), dtype="float32") = R.memory.alloc_tensor(storage1, 0, R.shape([2, 4]), R.dtype("float32"), 0)
        alloc2: R.Tensor((2, 4), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 4]), R.dtype("float32"), 0, R.str("global"))
        cls.k3(a, alloc1, alloc2)
        t: R.Tuple(R.Tensor((2, 4), dtype="float32"), R.Tensor((2, 4), dtype="float32")) = alloc1, alloc2
        b: R.Tensor((2, 4), dtype="float32") = t[0]
        c: R.Tensor((2, 4), dtype="float32") = t[1]
        alloc3: R.Tensor((2, 4), dtype="float32") = R.memory.alloc_tensor(storage, 0, R.shape([2, 4]), R.dtype("float32"), 0)
        cls.k3(b, c, alloc3)
        d: R.Tensor((2, 4), dtype="float32") = alloc3
        alloc4: R.Tensor((2, 4), dtype="float32") = R.memory.alloc_tensor(storage1, 0, R.shape([2, 4]), R.dtype("float32"), 0)
        cls.k2(d, alloc4)
        e: R.Tensor((2, 4), dtype="float32") = alloc4
        alloc5: R.Tensor((2, 4), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 4]), R.dtype("float32"), 0, R.str("global"))
        cls.k2(e, alloc5)
        f: R.Tensor((2, 4), dtype="float32") = alloc5
        out: R.Tuple(R.Tensor((2, 4), dtype="float32"), R.Tensor((2, 4), dtype="float32")) = f, c
        return out
"""
    _check(before, expected)


def test_spec_6_3_dynamic():
    """Spec §6.3: n <= 128 gives 2048-byte storages for (n, 4) and 512 * m for (n, m); outputs unplanned."""
    before = _HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor(("n", 4), dtype="float32"), y: R.Tensor(("n", "m"), dtype="float32")) -> R.Tuple(R.Tensor(("n", 4), dtype="float32"), R.Tensor(("n", "m"), dtype="float32")):
        n = T.int64()
        m = T.int64()
        R.func_attr({"tir_var_upper_bound": {"n": 128}})
        cls = Module
        alloc: R.Tensor((n, 4), dtype="float32") = R.builtin.alloc_tensor(R.shape([n, 4]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _: R.Tuple = cls.k2(x, alloc)
        a: R.Tensor((n, 4), dtype="float32") = alloc
        alloc1: R.Tensor((n, 4), dtype="float32") = R.builtin.alloc_tensor(R.shape([n, 4]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _1: R.Tuple = cls.k2(a, alloc1)
        b: R.Tensor((n, 4), dtype="float32") = alloc1
        alloc2: R.Tensor((n, 4), dtype="float32") = R.builtin.alloc_tensor(R.shape([n, 4]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _2: R.Tuple = cls.k2(b, alloc2)
        c: R.Tensor((n, 4), dtype="float32") = alloc2
        alloc3: R.Tensor((n, m), dtype="float32") = R.builtin.alloc_tensor(R.shape([n, m]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _3: R.Tuple = cls.k2(y, alloc3)
        d: R.Tensor((n, m), dtype="float32") = alloc3
        alloc4: R.Tensor((n, m), dtype="float32") = R.builtin.alloc_tensor(R.shape([n, m]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _4: R.Tuple = cls.k2(d, alloc4)
        e: R.Tensor((n, m), dtype="float32") = alloc4
        alloc5: R.Tensor((n, m), dtype="float32") = R.builtin.alloc_tensor(R.shape([n, m]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _5: R.Tuple = cls.k2(e, alloc5)
        f: R.Tensor((n, m), dtype="float32") = alloc5
        return (c, f)
"""
    # expected: TVM 0.27.0.post1's output
    expected = 'm = TypeVar("m")\nn = TypeVar("n")\n' + _HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor((n, 4), dtype="float32"), y: R.Tensor((n, m), dtype="float32")) -> R.Tuple(R.Tensor((n, 4), dtype="float32"), R.Tensor((n, m), dtype="float32")):
        R.func_attr({"tir_var_upper_bound": {"n": 128}})
        cls = Module
        storage: R.Any = R.memory.alloc_storage(R.shape([2048]), 0, R.str("global"), R.dtype("float32"))
        alloc: R.Tensor((n, 4), dtype="float32") = R.memory.alloc_tensor(storage, 0, R.shape([n, 4]), R.dtype("float32"), 0)
        cls.k2(x, alloc)
        a: R.Tensor((n, 4), dtype="float32") = alloc
        storage1: R.Any = R.memory.alloc_storage(R.shape([2048]), 0, R.str("global"), R.dtype("float32"))
        alloc1: R.Tensor((n, 4), dtype="float32") = R.memory.alloc_tensor(storage1, 0, R.shape([n, 4]), R.dtype("float32"), 0)
        cls.k2(a, alloc1)
        b: R.Tensor((n, 4), dtype="float32") = alloc1
        alloc2: R.Tensor((n, 4), dtype="float32") = R.builtin.alloc_tensor(R.shape([n, 4]), R.dtype("float32"), 0, R.str("global"))
        cls.k2(b, alloc2)
        c: R.Tensor((n, 4), dtype="float32") = alloc2
        storage2: R.Any = R.memory.alloc_storage(R.shape([512 * m]), 0, R.str("global"), R.dtype("float32"))
        alloc3: R.Tensor((n, m), dtype="float32") = R.memory.alloc_tensor(storage2, 0, R.shape([n, m]), R.dtype("float32"), 0)
        cls.k2(y, alloc3)
        d: R.Tensor((n, m), dtype="float32") = alloc3
        storage3: R.Any = R.memory.alloc_storage(R.shape([512 * m]), 0, R.str("global"), R.dtype("float32"))
        alloc4: R.Tensor((n, m), dtype="float32") = R.memory.alloc_tensor(storage3, 0, R.shape([n, m]), R.dtype("float32"), 0)
        cls.k2(d, alloc4)
        e: R.Tensor((n, m), dtype="float32") = alloc4
        alloc5: R.Tensor((n, m), dtype="float32") = R.builtin.alloc_tensor(R.shape([n, m]), R.dtype("float32"), 0, R.str("global"))
        cls.k2(e, alloc5)
        f: R.Tensor((n, m), dtype="float32") = alloc5
        return (c, f)
"""
    _check(before, expected)


def test_spec_6_3_dynamic_output():
    """Spec §6.3 with relax.memory_plan_dynamic_func_output: the outputs get storages of 2048 and 128 * m * 4 bytes."""
    before = _HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor(("n", 4), dtype="float32"), y: R.Tensor(("n", "m"), dtype="float32")) -> R.Tuple(R.Tensor(("n", 4), dtype="float32"), R.Tensor(("n", "m"), dtype="float32")):
        n = T.int64()
        m = T.int64()
        R.func_attr({"relax.memory_plan_dynamic_func_output": True, "tir_var_upper_bound": {"n": 128}})
        cls = Module
        alloc: R.Tensor((n, 4), dtype="float32") = R.builtin.alloc_tensor(R.shape([n, 4]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _: R.Tuple = cls.k2(x, alloc)
        a: R.Tensor((n, 4), dtype="float32") = alloc
        alloc1: R.Tensor((n, 4), dtype="float32") = R.builtin.alloc_tensor(R.shape([n, 4]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _1: R.Tuple = cls.k2(a, alloc1)
        b: R.Tensor((n, 4), dtype="float32") = alloc1
        alloc2: R.Tensor((n, 4), dtype="float32") = R.builtin.alloc_tensor(R.shape([n, 4]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _2: R.Tuple = cls.k2(b, alloc2)
        c: R.Tensor((n, 4), dtype="float32") = alloc2
        alloc3: R.Tensor((n, m), dtype="float32") = R.builtin.alloc_tensor(R.shape([n, m]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _3: R.Tuple = cls.k2(y, alloc3)
        d: R.Tensor((n, m), dtype="float32") = alloc3
        alloc4: R.Tensor((n, m), dtype="float32") = R.builtin.alloc_tensor(R.shape([n, m]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _4: R.Tuple = cls.k2(d, alloc4)
        e: R.Tensor((n, m), dtype="float32") = alloc4
        alloc5: R.Tensor((n, m), dtype="float32") = R.builtin.alloc_tensor(R.shape([n, m]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _5: R.Tuple = cls.k2(e, alloc5)
        f: R.Tensor((n, m), dtype="float32") = alloc5
        return (c, f)
"""
    # expected: TVM 0.27.0.post1's output
    expected = 'm = TypeVar("m")\nn = TypeVar("n")\n' + _HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor((n, 4), dtype="float32"), y: R.Tensor((n, m), dtype="float32")) -> R.Tuple(R.Tensor((n, 4), dtype="float32"), R.Tensor((n, m), dtype="float32")):
        R.func_attr({"tir_var_upper_bound": {"n": 128}})
        cls = Module
        storage: R.Any = R.memory.alloc_storage(R.shape([2048]), 0, R.str("global"), R.dtype("float32"))
        alloc: R.Tensor((n, 4), dtype="float32") = R.memory.alloc_tensor(storage, 0, R.shape([n, 4]), R.dtype("float32"), 0)
        cls.k2(x, alloc)
        a: R.Tensor((n, 4), dtype="float32") = alloc
        storage1: R.Any = R.memory.alloc_storage(R.shape([2048]), 0, R.str("global"), R.dtype("float32"))
        alloc1: R.Tensor((n, 4), dtype="float32") = R.memory.alloc_tensor(storage1, 0, R.shape([n, 4]), R.dtype("float32"), 0)
        cls.k2(a, alloc1)
        b: R.Tensor((n, 4), dtype="float32") = alloc1
        storage2: R.Any = R.memory.alloc_storage(R.shape([2048]), 0, R.str("global"), R.dtype("float32"))
        alloc2: R.Tensor((n, 4), dtype="float32") = R.memory.alloc_tensor(storage2, 0, R.shape([n, 4]), R.dtype("float32"), 0)
        cls.k2(b, alloc2)
        c: R.Tensor((n, 4), dtype="float32") = alloc2
        storage3: R.Any = R.memory.alloc_storage(R.shape([512 * m]), 0, R.str("global"), R.dtype("float32"))
        alloc3: R.Tensor((n, m), dtype="float32") = R.memory.alloc_tensor(storage3, 0, R.shape([n, m]), R.dtype("float32"), 0)
        cls.k2(y, alloc3)
        d: R.Tensor((n, m), dtype="float32") = alloc3
        storage4: R.Any = R.memory.alloc_storage(R.shape([512 * m]), 0, R.str("global"), R.dtype("float32"))
        alloc4: R.Tensor((n, m), dtype="float32") = R.memory.alloc_tensor(storage4, 0, R.shape([n, m]), R.dtype("float32"), 0)
        cls.k2(d, alloc4)
        e: R.Tensor((n, m), dtype="float32") = alloc4
        storage5: R.Any = R.memory.alloc_storage(R.shape([128 * m * 4]), 0, R.str("global"), R.dtype("float32"))
        alloc5: R.Tensor((n, m), dtype="float32") = R.memory.alloc_tensor(storage5, 0, R.shape([n, m]), R.dtype("float32"), 0)
        cls.k2(e, alloc5)
        f: R.Tensor((n, m), dtype="float32") = alloc5
        return (c, f)
"""
    _check(before, expected)


def test_basic():
    """A chain with a reshape view: the reshape keeps the first storage alive until its reader; the 40-byte output of the third call takes the 32-byte storage freed last (smaller block, enlarged to 40); the returned tensor stays unplanned."""
    before = _HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor((2, 4), dtype="float32")) -> R.Tensor((10,), dtype="float32"):
        cls = Module
        alloc: R.Tensor((2, 4), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 4]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _: R.Tuple = cls.k2(x, alloc)
        lv: R.Tensor((8,), dtype="float32") = R.reshape(alloc, R.shape([8]))
        alloc1: R.Tensor((8,), dtype="float32") = R.builtin.alloc_tensor(R.shape([8]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _1: R.Tuple = cls.k2(lv, alloc1)
        alloc2: R.Tensor((8,), dtype="float32") = R.builtin.alloc_tensor(R.shape([8]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _2: R.Tuple = cls.k2(alloc1, alloc2)
        alloc3: R.Tensor((10,), dtype="float32") = R.builtin.alloc_tensor(R.shape([10]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _3: R.Tuple = cls.k2(alloc2, alloc3)
        alloc4: R.Tensor((10,), dtype="float32") = R.builtin.alloc_tensor(R.shape([10]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _4: R.Tuple = cls.k2(alloc3, alloc4)
        return alloc4
"""
    # expected: TVM 0.27.0.post1's output
    expected = _HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor((2, 4), dtype="float32")) -> R.Tensor((10,), dtype="float32"):
        cls = Module
        storage: R.Any = R.memory.alloc_storage(R.shape([32]), 0, R.str("global"), R.dtype("float32"))
        alloc: R.Tensor((2, 4), dtype="float32") = R.memory.alloc_tensor(storage, 0, R.shape([2, 4]), R.dtype("float32"), 0)
        cls.k2(x, alloc)
        lv: R.Tensor((8,), dtype="float32") = R.reshape(alloc, R.shape([8]))
        storage1: R.Any = R.memory.alloc_storage(R.shape([40]), 0, R.str("global"), R.dtype("float32"))
        alloc1: R.Tensor((8,), dtype="float32") = R.memory.alloc_tensor(storage1, 0, R.shape([8]), R.dtype("float32"), 0)
        cls.k2(lv, alloc1)
        alloc2: R.Tensor((8,), dtype="float32") = R.memory.alloc_tensor(storage, 0, R.shape([8]), R.dtype("float32"), 0)
        cls.k2(alloc1, alloc2)
        alloc3: R.Tensor((10,), dtype="float32") = R.memory.alloc_tensor(storage1, 0, R.shape([10]), R.dtype("float32"), 0)
        cls.k2(alloc2, alloc3)
        alloc4: R.Tensor((10,), dtype="float32") = R.builtin.alloc_tensor(R.shape([10]), R.dtype("float32"), 0, R.str("global"))
        cls.k2(alloc3, alloc4)
        return alloc4
"""
    _check(before, expected)


def test_different_dtype():
    """float32 and int32 tensors of the same byte size never share a storage."""
    before = _HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor((2, 3), dtype="float32"), y: R.Tensor((2, 3), dtype="int32")) -> R.Tensor((2, 3), dtype="float32"):
        cls = Module
        a: R.Tensor((2, 3), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _: R.Tuple = cls.k2(x, a)
        b: R.Tensor((2, 3), dtype="int32") = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("int32"), R.prim_value(0), R.str("global"))
        _1: R.Tuple = cls.k2(y, b)
        c: R.Tensor((2, 3), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _2: R.Tuple = cls.k3(a, b, c)
        return c
"""
    # expected: TVM 0.27.0.post1's output
    expected = _HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor((2, 3), dtype="float32"), y: R.Tensor((2, 3), dtype="int32")) -> R.Tensor((2, 3), dtype="float32"):
        cls = Module
        storage: R.Any = R.memory.alloc_storage(R.shape([24]), 0, R.str("global"), R.dtype("float32"))
        a: R.Tensor((2, 3), dtype="float32") = R.memory.alloc_tensor(storage, 0, R.shape([2, 3]), R.dtype("float32"), 0)
        cls.k2(x, a)
        storage1: R.Any = R.memory.alloc_storage(R.shape([24]), 0, R.str("global"), R.dtype("int32"))
        b: R.Tensor((2, 3), dtype="int32") = R.memory.alloc_tensor(storage1, 0, R.shape([2, 3]), R.dtype("int32"), 0)
        cls.k2(y, b)
        c: R.Tensor((2, 3), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("float32"), 0, R.str("global"))
        cls.k3(a, b, c)
        return c
"""
    _check(before, expected)


def test_dtype_bool():
    """A (2, 3) bool tensor takes 6 bytes (one byte per element) in a bool storage."""
    before = _HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="bool"):
        cls = Module
        mask: R.Tensor((2, 3), dtype="bool") = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("bool"), R.prim_value(0), R.str("global"))
        _: R.Tuple = cls.k2(x, mask)
        out: R.Tensor((2, 3), dtype="bool") = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("bool"), R.prim_value(0), R.str("global"))
        _1: R.Tuple = cls.k2(mask, out)
        return out
"""
    # expected: TVM 0.27.0.post1's output
    expected = _HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="bool"):
        cls = Module
        storage: R.Any = R.memory.alloc_storage(R.shape([6]), 0, R.str("global"), R.dtype("bool"))
        mask: R.Tensor((2, 3), dtype="bool") = R.memory.alloc_tensor(storage, 0, R.shape([2, 3]), R.dtype("bool"), 0)
        cls.k2(x, mask)
        out: R.Tensor((2, 3), dtype="bool") = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("bool"), 0, R.str("global"))
        cls.k2(mask, out)
        return out
"""
    _check(before, expected)


def test_same_dtype():
    """Same-size float32 tensors alternate between two storages once each one is dead."""
    before = _HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor((4, 4), dtype="float32")) -> R.Tensor((4, 4), dtype="float32"):
        cls = Module
        a: R.Tensor((4, 4), dtype="float32") = R.builtin.alloc_tensor(R.shape([4, 4]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _: R.Tuple = cls.k2(x, a)
        b: R.Tensor((4, 4), dtype="float32") = R.builtin.alloc_tensor(R.shape([4, 4]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _1: R.Tuple = cls.k2(a, b)
        c: R.Tensor((4, 4), dtype="float32") = R.builtin.alloc_tensor(R.shape([4, 4]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _2: R.Tuple = cls.k2(b, c)
        d: R.Tensor((4, 4), dtype="float32") = R.builtin.alloc_tensor(R.shape([4, 4]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _3: R.Tuple = cls.k2(c, d)
        return d
"""
    # expected: TVM 0.27.0.post1's output
    expected = _HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor((4, 4), dtype="float32")) -> R.Tensor((4, 4), dtype="float32"):
        cls = Module
        storage: R.Any = R.memory.alloc_storage(R.shape([64]), 0, R.str("global"), R.dtype("float32"))
        a: R.Tensor((4, 4), dtype="float32") = R.memory.alloc_tensor(storage, 0, R.shape([4, 4]), R.dtype("float32"), 0)
        cls.k2(x, a)
        storage1: R.Any = R.memory.alloc_storage(R.shape([64]), 0, R.str("global"), R.dtype("float32"))
        b: R.Tensor((4, 4), dtype="float32") = R.memory.alloc_tensor(storage1, 0, R.shape([4, 4]), R.dtype("float32"), 0)
        cls.k2(a, b)
        c: R.Tensor((4, 4), dtype="float32") = R.memory.alloc_tensor(storage, 0, R.shape([4, 4]), R.dtype("float32"), 0)
        cls.k2(b, c)
        d: R.Tensor((4, 4), dtype="float32") = R.builtin.alloc_tensor(R.shape([4, 4]), R.dtype("float32"), 0, R.str("global"))
        cls.k2(c, d)
        return d
"""
    _check(before, expected)


def test_if_cond():
    """A tensor used as an If condition, and tensors flowing out of the branches, are not planned."""
    before = _HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
        cls = Module
        flag: R.Tensor((), dtype="bool") = R.builtin.alloc_tensor(R.shape([]), R.dtype("bool"), R.prim_value(0), R.str("global"))
        _: R.Tuple = cls.k2(x, flag)
        if flag:
            t: R.Tensor((2, 3), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("float32"), R.prim_value(0), R.str("global"))
            _1: R.Tuple = cls.k2(x, t)
            r: R.Tensor((2, 3), dtype="float32") = t
        else:
            e: R.Tensor((2, 3), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("float32"), R.prim_value(0), R.str("global"))
            _2: R.Tuple = cls.k2(x, e)
            r: R.Tensor((2, 3), dtype="float32") = e
        return r
"""
    # expected: TVM 0.27.0.post1's output
    expected = _HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
        cls = Module
        flag: R.Tensor((), dtype="bool") = R.builtin.alloc_tensor(R.shape([]), R.dtype("bool"), 0, R.str("global"))
        cls.k2(x, flag)
        if flag:
            t: R.Tensor((2, 3), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("float32"), 0, R.str("global"))
            cls.k2(x, t)
            r: R.Tensor((2, 3), dtype="float32") = t
        else:
            e: R.Tensor((2, 3), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("float32"), 0, R.str("global"))
            cls.k2(x, e)
            r: R.Tensor((2, 3), dtype="float32") = e
        return r
"""
    _check(before, expected)


def test_if_then_else():
    """A tensor returned by both branches of an If is not planned."""
    before = _HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor((2, 3), dtype="float32"), c: R.Tensor((), dtype="bool")) -> R.Tensor((2, 3), dtype="float32"):
        cls = Module
        a: R.Tensor((2, 3), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _: R.Tuple = cls.k2(x, a)
        if c:
            r: R.Tensor((2, 3), dtype="float32") = a
        else:
            r: R.Tensor((2, 3), dtype="float32") = a
        return x
"""
    # expected: TVM 0.27.0.post1's output
    expected = _HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor((2, 3), dtype="float32"), c: R.Tensor((), dtype="bool")) -> R.Tensor((2, 3), dtype="float32"):
        cls = Module
        a: R.Tensor((2, 3), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("float32"), 0, R.str("global"))
        cls.k2(x, a)
        if c:
            r: R.Tensor((2, 3), dtype="float32") = a
        else:
            r: R.Tensor((2, 3), dtype="float32") = a
        return x
"""
    _check(before, expected)


def test_cross_block_use():
    """A tensor read inside If branches (another block) is not planned; nor are the branch results."""
    before = _HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor((2, 3), dtype="float32"), c: R.Tensor((), dtype="bool")) -> R.Tensor((2, 3), dtype="float32"):
        cls = Module
        a: R.Tensor((2, 3), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _: R.Tuple = cls.k2(x, a)
        if c:
            b: R.Tensor((2, 3), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("float32"), R.prim_value(0), R.str("global"))
            _1: R.Tuple = cls.k2(a, b)
            r: R.Tensor((2, 3), dtype="float32") = b
        else:
            d: R.Tensor((2, 3), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("float32"), R.prim_value(0), R.str("global"))
            _2: R.Tuple = cls.k3(a, x, d)
            r: R.Tensor((2, 3), dtype="float32") = d
        return r
"""
    # expected: TVM 0.27.0.post1's output
    expected = _HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor((2, 3), dtype="float32"), c: R.Tensor((), dtype="bool")) -> R.Tensor((2, 3), dtype="float32"):
        cls = Module
        a: R.Tensor((2, 3), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("float32"), 0, R.str("global"))
        cls.k2(x, a)
        if c:
            b: R.Tensor((2, 3), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("float32"), 0, R.str("global"))
            cls.k2(a, b)
            r: R.Tensor((2, 3), dtype="float32") = b
        else:
            d: R.Tensor((2, 3), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("float32"), 0, R.str("global"))
            cls.k3(a, x, d)
            r: R.Tensor((2, 3), dtype="float32") = d
        return r
"""
    _check(before, expected)


def test_nested_tuple():
    """Tokens flow through nested tuples and get-items: z1 needs a fourth storage while y1 is still read, z2 takes the storage freed first (y2), z3 the next one (y3)."""
    before = _HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
        cls = Module
        y1: R.Tensor((2, 3), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _: R.Tuple = cls.k2(x, y1)
        y2: R.Tensor((2, 3), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _1: R.Tuple = cls.k2(x, y2)
        y3: R.Tensor((2, 3), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _2: R.Tuple = cls.k2(x, y3)
        t: R.Tuple(R.Tensor((2, 3), dtype="float32"), R.Tensor((2, 3), dtype="float32")) = (y1, y2)
        nt: R.Tuple(R.Tuple(R.Tensor((2, 3), dtype="float32"), R.Tensor((2, 3), dtype="float32")), R.Tensor((2, 3), dtype="float32")) = (t, y3)
        inner: R.Tuple(R.Tensor((2, 3), dtype="float32"), R.Tensor((2, 3), dtype="float32")) = nt[0]
        first: R.Tensor((2, 3), dtype="float32") = inner[0]
        second: R.Tensor((2, 3), dtype="float32") = inner[1]
        third: R.Tensor((2, 3), dtype="float32") = nt[1]
        z1: R.Tensor((2, 3), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _3: R.Tuple = cls.k3(second, third, z1)
        z2: R.Tensor((2, 3), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _4: R.Tuple = cls.k3(first, z1, z2)
        z3: R.Tensor((2, 3), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _5: R.Tuple = cls.k2(z2, z3)
        return x
"""
    # expected: TVM 0.27.0.post1's output
    expected = _HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
        cls = Module
        storage: R.Any = R.memory.alloc_storage(R.shape([24]), 0, R.str("global"), R.dtype("float32"))
        y1: R.Tensor((2, 3), dtype="float32") = R.memory.alloc_tensor(storage, 0, R.shape([2, 3]), R.dtype("float32"), 0)
        cls.k2(x, y1)
        storage1: R.Any = R.memory.alloc_storage(R.shape([24]), 0, R.str("global"), R.dtype("float32"))
        y2: R.Tensor((2, 3), dtype="float32") = R.memory.alloc_tensor(storage1, 0, R.shape([2, 3]), R.dtype("float32"), 0)
        cls.k2(x, y2)
        storage2: R.Any = R.memory.alloc_storage(R.shape([24]), 0, R.str("global"), R.dtype("float32"))
        y3: R.Tensor((2, 3), dtype="float32") = R.memory.alloc_tensor(storage2, 0, R.shape([2, 3]), R.dtype("float32"), 0)
        cls.k2(x, y3)
        t: R.Tuple(R.Tensor((2, 3), dtype="float32"), R.Tensor((2, 3), dtype="float32")) = y1, y2
        nt: R.Tuple(R.Tuple(R.Tensor((2, 3), dtype="float32"), R.Tensor((2, 3), dtype="float32")), R.Tensor((2, 3), dtype="float32")) = t, y3
        inner: R.Tuple(R.Tensor((2, 3), dtype="float32"), R.Tensor((2, 3), dtype="float32")) = nt[0]
        first: R.Tensor((2, 3), dtype="float32") = inner[0]
        second: R.Tensor((2, 3), dtype="float32") = inner[1]
        third: R.Tensor((2, 3), dtype="float32") = nt[1]
        storage3: R.Any = R.memory.alloc_storage(R.shape([24]), 0, R.str("global"), R.dtype("float32"))
        z1: R.Tensor((2, 3), dtype="float32") = R.memory.alloc_tensor(storage3, 0, R.shape([2, 3]), R.dtype("float32"), 0)
        cls.k3(second, third, z1)
        z2: R.Tensor((2, 3), dtype="float32") = R.memory.alloc_tensor(storage1, 0, R.shape([2, 3]), R.dtype("float32"), 0)
        cls.k3(first, z1, z2)
        z3: R.Tensor((2, 3), dtype="float32") = R.memory.alloc_tensor(storage2, 0, R.shape([2, 3]), R.dtype("float32"), 0)
        cls.k2(z2, z3)
        return x
"""
    _check(before, expected)


def test_call_func_other_than_primfunc():
    """A tensor passed to a Relax op (R.add) is not planned."""
    before = _HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
        cls = Module
        a: R.Tensor((2, 3), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _: R.Tuple = cls.k2(x, a)
        s: R.Tensor((2, 3), dtype="float32") = R.add(a, x)
        return s
"""
    # expected: TVM 0.27.0.post1's output
    expected = _HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
        cls = Module
        a: R.Tensor((2, 3), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("float32"), 0, R.str("global"))
        cls.k2(x, a)
        s: R.Tensor((2, 3), dtype="float32") = R.add(a, x)
        return s
"""
    _check(before, expected)


def test_call_packed_external_func():
    """R.call_packed arguments count as uses; the first tensor is planned, the returned one is not."""
    before = _HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
        a: R.Tensor((2, 3), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _: R.Tuple = R.call_packed("ext.fill", x, a, sinfo_args=(R.Tuple(),))
        b: R.Tensor((2, 3), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _1: R.Tuple = R.call_packed("ext.fill", a, b, sinfo_args=(R.Tuple(),))
        return b
"""
    # expected: TVM 0.27.0.post1's output
    expected = _HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
        storage: R.Any = R.memory.alloc_storage(R.shape([24]), 0, R.str("global"), R.dtype("float32"))
        a: R.Tensor((2, 3), dtype="float32") = R.memory.alloc_tensor(storage, 0, R.shape([2, 3]), R.dtype("float32"), 0)
        R.call_packed("ext.fill", x, a, attrs_type_key="ir.DictAttrs", sinfo_args=[R.Tuple])
        b: R.Tensor((2, 3), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("float32"), 0, R.str("global"))
        R.call_packed("ext.fill", a, b, attrs_type_key="ir.DictAttrs", sinfo_args=[R.Tuple])
        return b
"""
    _check(before, expected)


def test_symbolic_shape():
    """Without bounds a (m, n) float32 tensor takes a symbolic 4 * (m * n) storage, reused by equal sizes."""
    before = _HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor(("m", "n"), dtype="float32")) -> R.Tensor(("m", "n"), dtype="float32"):
        m = T.int64()
        n = T.int64()
        cls = Module
        a: R.Tensor((m, n), dtype="float32") = R.builtin.alloc_tensor(R.shape([m, n]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _: R.Tuple = cls.k2(x, a)
        b: R.Tensor((m, n), dtype="float32") = R.builtin.alloc_tensor(R.shape([m, n]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _1: R.Tuple = cls.k2(a, b)
        c: R.Tensor((m, n), dtype="float32") = R.builtin.alloc_tensor(R.shape([m, n]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _2: R.Tuple = cls.k2(b, c)
        d: R.Tensor((m, n), dtype="float32") = R.builtin.alloc_tensor(R.shape([m, n]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _3: R.Tuple = cls.k2(c, d)
        return d
"""
    # expected: TVM 0.27.0.post1's output
    expected = 'm = TypeVar("m")\nn = TypeVar("n")\n' + _HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor((m, n), dtype="float32")) -> R.Tensor((m, n), dtype="float32"):
        cls = Module
        storage: R.Any = R.memory.alloc_storage(R.shape([4 * (m * n)]), 0, R.str("global"), R.dtype("float32"))
        a: R.Tensor((m, n), dtype="float32") = R.memory.alloc_tensor(storage, 0, R.shape([m, n]), R.dtype("float32"), 0)
        cls.k2(x, a)
        storage1: R.Any = R.memory.alloc_storage(R.shape([4 * (m * n)]), 0, R.str("global"), R.dtype("float32"))
        b: R.Tensor((m, n), dtype="float32") = R.memory.alloc_tensor(storage1, 0, R.shape([m, n]), R.dtype("float32"), 0)
        cls.k2(a, b)
        c: R.Tensor((m, n), dtype="float32") = R.memory.alloc_tensor(storage, 0, R.shape([m, n]), R.dtype("float32"), 0)
        cls.k2(b, c)
        d: R.Tensor((m, n), dtype="float32") = R.builtin.alloc_tensor(R.shape([m, n]), R.dtype("float32"), 0, R.str("global"))
        cls.k2(c, d)
        return d
"""
    _check(before, expected)


def test_zero_reference():
    """Allocations never used still get their own storage (never reused)."""
    before = _HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
        unused: R.Tensor((2, 3), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        unused2: R.Tensor((2, 3), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        return x
"""
    # expected: TVM 0.27.0.post1's output
    expected = _HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
        storage: R.Any = R.memory.alloc_storage(R.shape([24]), 0, R.str("global"), R.dtype("float32"))
        unused: R.Tensor((2, 3), dtype="float32") = R.memory.alloc_tensor(storage, 0, R.shape([2, 3]), R.dtype("float32"), 0)
        storage1: R.Any = R.memory.alloc_storage(R.shape([24]), 0, R.str("global"), R.dtype("float32"))
        unused2: R.Tensor((2, 3), dtype="float32") = R.memory.alloc_tensor(storage1, 0, R.shape([2, 3]), R.dtype("float32"), 0)
        return x
"""
    _check(before, expected)


def test_reshape_param():
    """Reshapes of parameters carry no token; only the returned output is allocated, unplanned: unchanged."""
    before = _HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor((2, 3), dtype="float32"), y: R.Tensor((3, 2), dtype="float32")) -> R.Tensor((6,), dtype="float32"):
        cls = Module
        lx: R.Tensor((6,), dtype="float32") = R.reshape(x, R.shape([6]))
        ly: R.Tensor((6,), dtype="float32") = R.reshape(y, R.shape([6]))
        out: R.Tensor((6,), dtype="float32") = R.builtin.alloc_tensor(R.shape([6]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _: R.Tuple = cls.k3(lx, ly, out)
        return out
"""
    # expected: TVM 0.27.0.post1's output
    expected = _HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor((2, 3), dtype="float32"), y: R.Tensor((3, 2), dtype="float32")) -> R.Tensor((6,), dtype="float32"):
        cls = Module
        lx: R.Tensor((6,), dtype="float32") = R.reshape(x, R.shape([6]))
        ly: R.Tensor((6,), dtype="float32") = R.reshape(y, R.shape([6]))
        out: R.Tensor((6,), dtype="float32") = R.builtin.alloc_tensor(R.shape([6]), R.dtype("float32"), 0, R.str("global"))
        cls.k3(lx, ly, out)
        return out
"""
    _check(before, expected)


def test_multiple_functions():
    """Each function is planned on its own; storage names continue across functions."""
    before = _HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor((2, 4), dtype="float32")) -> R.Tensor((2, 4), dtype="float32"):
        cls = Module
        a: R.Tensor((2, 4), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 4]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _: R.Tuple = cls.k2(x, a)
        b: R.Tensor((2, 4), dtype="int32") = R.builtin.alloc_tensor(R.shape([2, 4]), R.dtype("int32"), R.prim_value(0), R.str("global"))
        _1: R.Tuple = cls.k2(a, b)
        c: R.Tensor((2, 4), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 4]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _2: R.Tuple = cls.k2(b, c)
        return c

    @R.function(pure=False)
    def second(x: R.Tensor((8,), dtype="float32")) -> R.Tensor((8,), dtype="float32"):
        cls = Module
        p: R.Tensor((8,), dtype="float32") = R.builtin.alloc_tensor(R.shape([8]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _: R.Tuple = cls.k2(x, p)
        q: R.Tensor((8,), dtype="float32") = R.builtin.alloc_tensor(R.shape([8]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _1: R.Tuple = cls.k2(p, q)
        r: R.Tensor((8,), dtype="float32") = R.builtin.alloc_tensor(R.shape([8]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _2: R.Tuple = cls.k2(q, r)
        s: R.Tensor((8,), dtype="float32") = R.builtin.alloc_tensor(R.shape([8]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _3: R.Tuple = cls.k2(r, s)
        return s
"""
    # expected: TVM 0.27.0.post1's output
    expected = _HEADER + """
    @R.function(pure=False)
    def second(x: R.Tensor((8,), dtype="float32")) -> R.Tensor((8,), dtype="float32"):
        cls = Module
        storage2: R.Any = R.memory.alloc_storage(R.shape([32]), 0, R.str("global"), R.dtype("float32"))
        p: R.Tensor((8,), dtype="float32") = R.memory.alloc_tensor(storage2, 0, R.shape([8]), R.dtype("float32"), 0)
        cls.k2(x, p)
        storage3: R.Any = R.memory.alloc_storage(R.shape([32]), 0, R.str("global"), R.dtype("float32"))
        q: R.Tensor((8,), dtype="float32") = R.memory.alloc_tensor(storage3, 0, R.shape([8]), R.dtype("float32"), 0)
        cls.k2(p, q)
        r: R.Tensor((8,), dtype="float32") = R.memory.alloc_tensor(storage2, 0, R.shape([8]), R.dtype("float32"), 0)
        cls.k2(q, r)
        s: R.Tensor((8,), dtype="float32") = R.builtin.alloc_tensor(R.shape([8]), R.dtype("float32"), 0, R.str("global"))
        cls.k2(r, s)
        return s

    @R.function(pure=False)
    def main(x: R.Tensor((2, 4), dtype="float32")) -> R.Tensor((2, 4), dtype="float32"):
        cls = Module
        storage: R.Any = R.memory.alloc_storage(R.shape([32]), 0, R.str("global"), R.dtype("float32"))
        a: R.Tensor((2, 4), dtype="float32") = R.memory.alloc_tensor(storage, 0, R.shape([2, 4]), R.dtype("float32"), 0)
        cls.k2(x, a)
        storage1: R.Any = R.memory.alloc_storage(R.shape([32]), 0, R.str("global"), R.dtype("int32"))
        b: R.Tensor((2, 4), dtype="int32") = R.memory.alloc_tensor(storage1, 0, R.shape([2, 4]), R.dtype("int32"), 0)
        cls.k2(a, b)
        c: R.Tensor((2, 4), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 4]), R.dtype("float32"), 0, R.str("global"))
        cls.k2(b, c)
        return c
"""
    _check(before, expected)


def test_tir_var_upper_bound():
    """With n <= 4, (2, n) / (2*n,) / (2*n + 2,) float32 tensors take 32 and 40 byte storages, as in test_basic."""
    before = _HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor((2, "n"), dtype="float32")) -> R.Tensor(("2 * n + 2",), dtype="float32"):
        n = T.int64()
        R.func_attr({"tir_var_upper_bound": {"n": 4}})
        cls = Module
        alloc: R.Tensor((2, n), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, n]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _: R.Tuple = cls.k2(x, alloc)
        lv: R.Tensor((2 * n,), dtype="float32") = R.reshape(alloc, R.shape([2 * n]))
        alloc1: R.Tensor((2 * n,), dtype="float32") = R.builtin.alloc_tensor(R.shape([2 * n]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _1: R.Tuple = cls.k2(lv, alloc1)
        alloc2: R.Tensor((2 * n,), dtype="float32") = R.builtin.alloc_tensor(R.shape([2 * n]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _2: R.Tuple = cls.k2(alloc1, alloc2)
        alloc3: R.Tensor((2 * n + 2,), dtype="float32") = R.builtin.alloc_tensor(R.shape([2 * n + 2]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _3: R.Tuple = cls.k2(alloc2, alloc3)
        alloc4: R.Tensor((2 * n + 2,), dtype="float32") = R.builtin.alloc_tensor(R.shape([2 * n + 2]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _4: R.Tuple = cls.k2(alloc3, alloc4)
        return alloc4
"""
    # expected: TVM 0.27.0.post1's output
    expected = 'n = TypeVar("n")\n' + _HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor((2, n), dtype="float32")) -> R.Tensor(("2 * n + 2",), dtype="float32"):
        R.func_attr({"tir_var_upper_bound": {"n": 4}})
        cls = Module
        storage: R.Any = R.memory.alloc_storage(R.shape([32]), 0, R.str("global"), R.dtype("float32"))
        alloc: R.Tensor((2, n), dtype="float32") = R.memory.alloc_tensor(storage, 0, R.shape([2, n]), R.dtype("float32"), 0)
        cls.k2(x, alloc)
        lv: R.Tensor((2 * n,), dtype="float32") = R.reshape(alloc, R.shape([2 * n]))
        storage1: R.Any = R.memory.alloc_storage(R.shape([40]), 0, R.str("global"), R.dtype("float32"))
        alloc1: R.Tensor((2 * n,), dtype="float32") = R.memory.alloc_tensor(storage1, 0, R.shape([2 * n]), R.dtype("float32"), 0)
        cls.k2(lv, alloc1)
        alloc2: R.Tensor((2 * n,), dtype="float32") = R.memory.alloc_tensor(storage, 0, R.shape([2 * n]), R.dtype("float32"), 0)
        cls.k2(alloc1, alloc2)
        alloc3: R.Tensor((2 * n + 2,), dtype="float32") = R.memory.alloc_tensor(storage1, 0, R.shape([2 * n + 2]), R.dtype("float32"), 0)
        cls.k2(alloc2, alloc3)
        alloc4: R.Tensor((2 * n + 2,), dtype="float32") = R.builtin.alloc_tensor(R.shape([2 * n + 2]), R.dtype("float32"), 0, R.str("global"))
        cls.k2(alloc3, alloc4)
        return alloc4
"""
    _check(before, expected)


def test_lower_bound_only():
    """A lower bound alone keeps sizes symbolic: 8 * n and 4 * (2 * n) are proven equal and share a storage; 4 * (2 * n + 2) does not."""
    before = _HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor((2, "n"), dtype="float32")) -> R.Tensor(("2 * n + 2",), dtype="float32"):
        n = T.int64()
        R.func_attr({"tir_var_lower_bound": {"n": 2}})
        cls = Module
        alloc: R.Tensor((2, n), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, n]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _: R.Tuple = cls.k2(x, alloc)
        lv: R.Tensor((2 * n,), dtype="float32") = R.reshape(alloc, R.shape([2 * n]))
        alloc1: R.Tensor((2 * n,), dtype="float32") = R.builtin.alloc_tensor(R.shape([2 * n]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _1: R.Tuple = cls.k2(lv, alloc1)
        alloc2: R.Tensor((2 * n,), dtype="float32") = R.builtin.alloc_tensor(R.shape([2 * n]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _2: R.Tuple = cls.k2(alloc1, alloc2)
        alloc3: R.Tensor((2 * n + 2,), dtype="float32") = R.builtin.alloc_tensor(R.shape([2 * n + 2]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _3: R.Tuple = cls.k2(alloc2, alloc3)
        alloc4: R.Tensor((2 * n + 2,), dtype="float32") = R.builtin.alloc_tensor(R.shape([2 * n + 2]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _4: R.Tuple = cls.k2(alloc3, alloc4)
        return alloc4
"""
    # expected: TVM 0.27.0.post1's output
    expected = 'n = TypeVar("n")\n' + _HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor((2, n), dtype="float32")) -> R.Tensor(("2 * n + 2",), dtype="float32"):
        R.func_attr({"tir_var_lower_bound": {"n": 2}})
        cls = Module
        storage: R.Any = R.memory.alloc_storage(R.shape([8 * n]), 0, R.str("global"), R.dtype("float32"))
        alloc: R.Tensor((2, n), dtype="float32") = R.memory.alloc_tensor(storage, 0, R.shape([2, n]), R.dtype("float32"), 0)
        cls.k2(x, alloc)
        lv: R.Tensor((2 * n,), dtype="float32") = R.reshape(alloc, R.shape([2 * n]))
        storage1: R.Any = R.memory.alloc_storage(R.shape([4 * (2 * n)]), 0, R.str("global"), R.dtype("float32"))
        alloc1: R.Tensor((2 * n,), dtype="float32") = R.memory.alloc_tensor(storage1, 0, R.shape([2 * n]), R.dtype("float32"), 0)
        cls.k2(lv, alloc1)
        alloc2: R.Tensor((2 * n,), dtype="float32") = R.memory.alloc_tensor(storage, 0, R.shape([2 * n]), R.dtype("float32"), 0)
        cls.k2(alloc1, alloc2)
        storage2: R.Any = R.memory.alloc_storage(R.shape([4 * (2 * n + 2)]), 0, R.str("global"), R.dtype("float32"))
        alloc3: R.Tensor((2 * n + 2,), dtype="float32") = R.memory.alloc_tensor(storage2, 0, R.shape([2 * n + 2]), R.dtype("float32"), 0)
        cls.k2(alloc2, alloc3)
        alloc4: R.Tensor((2 * n + 2,), dtype="float32") = R.builtin.alloc_tensor(R.shape([2 * n + 2]), R.dtype("float32"), 0, R.str("global"))
        cls.k2(alloc3, alloc4)
        return alloc4
"""
    _check(before, expected)


def test_upper_and_lower_bounds():
    """An upper and a lower bound together behave like the upper bound alone."""
    before = _HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor((2, "n"), dtype="float32")) -> R.Tensor(("2 * n + 2",), dtype="float32"):
        n = T.int64()
        R.func_attr({"tir_var_upper_bound": {"n": 4}, "tir_var_lower_bound": {"n": 2}})
        cls = Module
        alloc: R.Tensor((2, n), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, n]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _: R.Tuple = cls.k2(x, alloc)
        lv: R.Tensor((2 * n,), dtype="float32") = R.reshape(alloc, R.shape([2 * n]))
        alloc1: R.Tensor((2 * n,), dtype="float32") = R.builtin.alloc_tensor(R.shape([2 * n]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _1: R.Tuple = cls.k2(lv, alloc1)
        alloc2: R.Tensor((2 * n,), dtype="float32") = R.builtin.alloc_tensor(R.shape([2 * n]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _2: R.Tuple = cls.k2(alloc1, alloc2)
        alloc3: R.Tensor((2 * n + 2,), dtype="float32") = R.builtin.alloc_tensor(R.shape([2 * n + 2]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _3: R.Tuple = cls.k2(alloc2, alloc3)
        alloc4: R.Tensor((2 * n + 2,), dtype="float32") = R.builtin.alloc_tensor(R.shape([2 * n + 2]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _4: R.Tuple = cls.k2(alloc3, alloc4)
        return alloc4
"""
    # expected: TVM 0.27.0.post1's output
    expected = 'n = TypeVar("n")\n' + _HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor((2, n), dtype="float32")) -> R.Tensor(("2 * n + 2",), dtype="float32"):
        R.func_attr({"tir_var_lower_bound": {"n": 2}, "tir_var_upper_bound": {"n": 4}})
        cls = Module
        storage: R.Any = R.memory.alloc_storage(R.shape([32]), 0, R.str("global"), R.dtype("float32"))
        alloc: R.Tensor((2, n), dtype="float32") = R.memory.alloc_tensor(storage, 0, R.shape([2, n]), R.dtype("float32"), 0)
        cls.k2(x, alloc)
        lv: R.Tensor((2 * n,), dtype="float32") = R.reshape(alloc, R.shape([2 * n]))
        storage1: R.Any = R.memory.alloc_storage(R.shape([40]), 0, R.str("global"), R.dtype("float32"))
        alloc1: R.Tensor((2 * n,), dtype="float32") = R.memory.alloc_tensor(storage1, 0, R.shape([2 * n]), R.dtype("float32"), 0)
        cls.k2(lv, alloc1)
        alloc2: R.Tensor((2 * n,), dtype="float32") = R.memory.alloc_tensor(storage, 0, R.shape([2 * n]), R.dtype("float32"), 0)
        cls.k2(alloc1, alloc2)
        alloc3: R.Tensor((2 * n + 2,), dtype="float32") = R.memory.alloc_tensor(storage1, 0, R.shape([2 * n + 2]), R.dtype("float32"), 0)
        cls.k2(alloc2, alloc3)
        alloc4: R.Tensor((2 * n + 2,), dtype="float32") = R.builtin.alloc_tensor(R.shape([2 * n + 2]), R.dtype("float32"), 0, R.str("global"))
        cls.k2(alloc3, alloc4)
        return alloc4
"""
    _check(before, expected)


def test_tir_var_decreasing_monotone():
    """Dims are bounded independently: (n, m, max(n - m, 1)) with n <= 20, m <= 5 takes 20 * 5 * 20 * 4 = 8000 bytes."""
    before = _HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor(("n", "m", "T.max(n - m, 1)"), dtype="float32")) -> R.Tensor(("n", "m", "T.max(n - m, 1)"), dtype="float32"):
        n = T.int64()
        m = T.int64()
        R.func_attr({"tir_var_upper_bound": {"m": 5, "n": 20}})
        cls = Module
        a: R.Tensor((n, m, T.max(n - m, 1)), dtype="float32") = R.builtin.alloc_tensor(R.shape([n, m, T.max(n - m, 1)]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _: R.Tuple = cls.k2(x, a)
        b: R.Tensor((n, m, T.max(n - m, 1)), dtype="float32") = R.builtin.alloc_tensor(R.shape([n, m, T.max(n - m, 1)]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _1: R.Tuple = cls.k2(a, b)
        c: R.Tensor((n, m, T.max(n - m, 1)), dtype="float32") = R.builtin.alloc_tensor(R.shape([n, m, T.max(n - m, 1)]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _2: R.Tuple = cls.k2(b, c)
        return c
"""
    # expected: TVM 0.27.0.post1's output
    expected = 'm = TypeVar("m")\nn = TypeVar("n")\n' + _HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor((n, m, "T.max(n - m, 1)"), dtype="float32")) -> R.Tensor((n, m, "T.max(n - m, 1)"), dtype="float32"):
        R.func_attr({"tir_var_upper_bound": {"m": 5, "n": 20}})
        cls = Module
        storage: R.Any = R.memory.alloc_storage(R.shape([8000]), 0, R.str("global"), R.dtype("float32"))
        a: R.Tensor((n, m, T.max(n - m, 1)), dtype="float32") = R.memory.alloc_tensor(storage, 0, R.shape([n, m, T.max(n - m, 1)]), R.dtype("float32"), 0)
        cls.k2(x, a)
        storage1: R.Any = R.memory.alloc_storage(R.shape([8000]), 0, R.str("global"), R.dtype("float32"))
        b: R.Tensor((n, m, T.max(n - m, 1)), dtype="float32") = R.memory.alloc_tensor(storage1, 0, R.shape([n, m, T.max(n - m, 1)]), R.dtype("float32"), 0)
        cls.k2(a, b)
        c: R.Tensor((n, m, T.max(n - m, 1)), dtype="float32") = R.builtin.alloc_tensor(R.shape([n, m, T.max(n - m, 1)]), R.dtype("float32"), 0, R.str("global"))
        cls.k2(b, c)
        return c
"""
    _check(before, expected)


def test_call_tir_dyn():
    """Leaves of R.vm.call_tir_dyn's argument tuple count as uses; n <= 20 gives 80-byte storages."""
    before = _HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor(("n",), dtype="float32")) -> R.Tensor(("n",), dtype="float32"):
        n = T.int64()
        R.func_attr({"tir_var_upper_bound": {"n": 20}})
        cls = Module
        a: R.Tensor((n,), dtype="float32") = R.builtin.alloc_tensor(R.shape([n]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _: R.Tuple = R.vm.call_tir_dyn(cls.k3, (x, a, R.shape([n])))
        b: R.Tensor((n,), dtype="float32") = R.builtin.alloc_tensor(R.shape([n]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _1: R.Tuple = R.vm.call_tir_dyn(cls.k3, (a, b, R.shape([n])))
        c: R.Tensor((n,), dtype="float32") = R.builtin.alloc_tensor(R.shape([n]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _2: R.Tuple = R.vm.call_tir_dyn(cls.k3, (b, c, R.shape([n])))
        return c
"""
    # expected: TVM 0.27.0.post1's output
    expected = 'n = TypeVar("n")\n' + _HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor((n,), dtype="float32")) -> R.Tensor((n,), dtype="float32"):
        R.func_attr({"tir_var_upper_bound": {"n": 20}})
        cls = Module
        storage: R.Any = R.memory.alloc_storage(R.shape([80]), 0, R.str("global"), R.dtype("float32"))
        a: R.Tensor((n,), dtype="float32") = R.memory.alloc_tensor(storage, 0, R.shape([n]), R.dtype("float32"), 0)
        R.vm.call_tir_dyn(cls.k3, (x, a, R.shape([n])))
        storage1: R.Any = R.memory.alloc_storage(R.shape([80]), 0, R.str("global"), R.dtype("float32"))
        b: R.Tensor((n,), dtype="float32") = R.memory.alloc_tensor(storage1, 0, R.shape([n]), R.dtype("float32"), 0)
        R.vm.call_tir_dyn(cls.k3, (a, b, R.shape([n])))
        c: R.Tensor((n,), dtype="float32") = R.builtin.alloc_tensor(R.shape([n]), R.dtype("float32"), 0, R.str("global"))
        R.vm.call_tir_dyn(cls.k3, (b, c, R.shape([n])))
        return c
"""
    _check(before, expected)


def test_call_tir_dyn_plan_dynamic_func_output():
    """With relax.memory_plan_dynamic_func_output the unplanned output also gets an 80-byte storage, and the attribute is removed."""
    before = _HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor(("n",), dtype="float32")) -> R.Tensor(("n",), dtype="float32"):
        n = T.int64()
        R.func_attr({"relax.memory_plan_dynamic_func_output": True, "tir_var_upper_bound": {"n": 20}})
        cls = Module
        a: R.Tensor((n,), dtype="float32") = R.builtin.alloc_tensor(R.shape([n]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _: R.Tuple = R.vm.call_tir_dyn(cls.k3, (x, a, R.shape([n])))
        b: R.Tensor((n,), dtype="float32") = R.builtin.alloc_tensor(R.shape([n]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _1: R.Tuple = R.vm.call_tir_dyn(cls.k3, (a, b, R.shape([n])))
        c: R.Tensor((n,), dtype="float32") = R.builtin.alloc_tensor(R.shape([n]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _2: R.Tuple = R.vm.call_tir_dyn(cls.k3, (b, c, R.shape([n])))
        return c
"""
    # expected: TVM 0.27.0.post1's output
    expected = 'n = TypeVar("n")\n' + _HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor((n,), dtype="float32")) -> R.Tensor((n,), dtype="float32"):
        R.func_attr({"tir_var_upper_bound": {"n": 20}})
        cls = Module
        storage: R.Any = R.memory.alloc_storage(R.shape([80]), 0, R.str("global"), R.dtype("float32"))
        a: R.Tensor((n,), dtype="float32") = R.memory.alloc_tensor(storage, 0, R.shape([n]), R.dtype("float32"), 0)
        R.vm.call_tir_dyn(cls.k3, (x, a, R.shape([n])))
        storage1: R.Any = R.memory.alloc_storage(R.shape([80]), 0, R.str("global"), R.dtype("float32"))
        b: R.Tensor((n,), dtype="float32") = R.memory.alloc_tensor(storage1, 0, R.shape([n]), R.dtype("float32"), 0)
        R.vm.call_tir_dyn(cls.k3, (a, b, R.shape([n])))
        storage2: R.Any = R.memory.alloc_storage(R.shape([80]), 0, R.str("global"), R.dtype("float32"))
        c: R.Tensor((n,), dtype="float32") = R.memory.alloc_tensor(storage2, 0, R.shape([n]), R.dtype("float32"), 0)
        R.vm.call_tir_dyn(cls.k3, (b, c, R.shape([n])))
        return c
"""
    _check(before, expected)


def test_call_tir_dyn_plan_partially_dynamic():
    """(n, m) with only n <= 20: planned storages of 80 * m bytes, reused; the output's own storage is 20 * m * 4."""
    before = _HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor(("n", "m"), dtype="float32")) -> R.Tensor(("n", "m"), dtype="float32"):
        n = T.int64()
        m = T.int64()
        R.func_attr({"relax.memory_plan_dynamic_func_output": True, "tir_var_upper_bound": {"n": 20}})
        cls = Module
        a: R.Tensor((n, m), dtype="float32") = R.builtin.alloc_tensor(R.shape([n, m]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _: R.Tuple = R.vm.call_tir_dyn(cls.k3, (x, a, R.shape([n, m])))
        b: R.Tensor((n, m), dtype="float32") = R.builtin.alloc_tensor(R.shape([n, m]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _1: R.Tuple = R.vm.call_tir_dyn(cls.k3, (a, b, R.shape([n, m])))
        c: R.Tensor((n, m), dtype="float32") = R.builtin.alloc_tensor(R.shape([n, m]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _2: R.Tuple = R.vm.call_tir_dyn(cls.k3, (b, c, R.shape([n, m])))
        d: R.Tensor((n, m), dtype="float32") = R.builtin.alloc_tensor(R.shape([n, m]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _3: R.Tuple = R.vm.call_tir_dyn(cls.k3, (c, d, R.shape([n, m])))
        return d
"""
    # expected: TVM 0.27.0.post1's output
    expected = 'm = TypeVar("m")\nn = TypeVar("n")\n' + _HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor((n, m), dtype="float32")) -> R.Tensor((n, m), dtype="float32"):
        R.func_attr({"tir_var_upper_bound": {"n": 20}})
        cls = Module
        storage: R.Any = R.memory.alloc_storage(R.shape([80 * m]), 0, R.str("global"), R.dtype("float32"))
        a: R.Tensor((n, m), dtype="float32") = R.memory.alloc_tensor(storage, 0, R.shape([n, m]), R.dtype("float32"), 0)
        R.vm.call_tir_dyn(cls.k3, (x, a, R.shape([n, m])))
        storage1: R.Any = R.memory.alloc_storage(R.shape([80 * m]), 0, R.str("global"), R.dtype("float32"))
        b: R.Tensor((n, m), dtype="float32") = R.memory.alloc_tensor(storage1, 0, R.shape([n, m]), R.dtype("float32"), 0)
        R.vm.call_tir_dyn(cls.k3, (a, b, R.shape([n, m])))
        c: R.Tensor((n, m), dtype="float32") = R.memory.alloc_tensor(storage, 0, R.shape([n, m]), R.dtype("float32"), 0)
        R.vm.call_tir_dyn(cls.k3, (b, c, R.shape([n, m])))
        storage2: R.Any = R.memory.alloc_storage(R.shape([20 * m * 4]), 0, R.str("global"), R.dtype("float32"))
        d: R.Tensor((n, m), dtype="float32") = R.memory.alloc_tensor(storage2, 0, R.shape([n, m]), R.dtype("float32"), 0)
        R.vm.call_tir_dyn(cls.k3, (c, d, R.shape([n, m])))
        return d
"""
    _check(before, expected)


def test_function_independence():
    """Tokens never cross functions: the second function gets its own 40-byte storage (named storage1)."""
    before = _HEADER + """
    @R.function(pure=False)
    def first(x: R.Tensor((10,), dtype="float32")) -> R.Tensor((10,), dtype="float32"):
        cls = Module
        a: R.Tensor((10,), dtype="float32") = R.builtin.alloc_tensor(R.shape([10]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _: R.Tuple = cls.k2(x, a)
        b: R.Tensor((10,), dtype="float32") = R.builtin.alloc_tensor(R.shape([10]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _1: R.Tuple = cls.k2(a, b)
        return b

    @R.function(pure=False)
    def second(x: R.Tensor((10,), dtype="float32")) -> R.Tensor((10,), dtype="float32"):
        cls = Module
        a: R.Tensor((10,), dtype="float32") = R.builtin.alloc_tensor(R.shape([10]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _: R.Tuple = cls.k2(x, a)
        b: R.Tensor((10,), dtype="float32") = R.builtin.alloc_tensor(R.shape([10]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _1: R.Tuple = cls.k2(a, b)
        return b
"""
    # expected: TVM 0.27.0.post1's output
    expected = _HEADER + """
    @R.function(pure=False)
    def first(x: R.Tensor((10,), dtype="float32")) -> R.Tensor((10,), dtype="float32"):
        cls = Module
        storage: R.Any = R.memory.alloc_storage(R.shape([40]), 0, R.str("global"), R.dtype("float32"))
        a: R.Tensor((10,), dtype="float32") = R.memory.alloc_tensor(storage, 0, R.shape([10]), R.dtype("float32"), 0)
        cls.k2(x, a)
        b: R.Tensor((10,), dtype="float32") = R.builtin.alloc_tensor(R.shape([10]), R.dtype("float32"), 0, R.str("global"))
        cls.k2(a, b)
        return b

    @R.function(pure=False)
    def second(x: R.Tensor((10,), dtype="float32")) -> R.Tensor((10,), dtype="float32"):
        cls = Module
        storage1: R.Any = R.memory.alloc_storage(R.shape([40]), 0, R.str("global"), R.dtype("float32"))
        a: R.Tensor((10,), dtype="float32") = R.memory.alloc_tensor(storage1, 0, R.shape([10]), R.dtype("float32"), 0)
        cls.k2(x, a)
        b: R.Tensor((10,), dtype="float32") = R.builtin.alloc_tensor(R.shape([10]), R.dtype("float32"), 0, R.str("global"))
        cls.k2(a, b)
        return b
"""
    _check(before, expected)


def test_add():
    """A uint8 workspace with vocab_size non-negative and batch_size <= 32 takes 32 * vocab_size * 4 * 2 + 4194304 bytes; the output reached through vm.builtin.reshape gets a Case-2 storage of 32 * vocab_size * 4 bytes."""
    before = _HEADER + """
    @R.function(pure=False)
    def main(probs: R.Tensor(("batch_size", "vocab_size"), dtype="float32")) -> R.Tensor(("batch_size", "vocab_size"), dtype="float32"):
        batch_size = T.int64()
        vocab_size = T.int64()
        R.func_attr({"relax.memory_plan_dynamic_func_output": True, "tir_non_negative_var": ["vocab_size"], "tir_var_upper_bound": {"batch_size": 32}})
        cls = Module
        workspace: R.Tensor((2 * (batch_size * vocab_size * 4) + 4194304,), dtype="uint8") = R.builtin.alloc_tensor(R.shape([2 * (batch_size * vocab_size * 4) + 4194304]), R.dtype("uint8"), R.prim_value(0), R.str("global"))
        flat: R.Tensor((batch_size * vocab_size,), dtype="float32") = R.call_packed("vm.builtin.reshape", probs, R.shape([batch_size * vocab_size]), sinfo_args=(R.Tensor((batch_size * vocab_size,), dtype="float32"),))
        out: R.Tensor((batch_size * vocab_size,), dtype="float32") = R.builtin.alloc_tensor(R.shape([batch_size * vocab_size]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _: R.Tuple = R.call_packed("tvm.contrib.thrust.sum_scan", flat, out, workspace, sinfo_args=(R.Tuple(),))
        res: R.Tensor((batch_size, vocab_size), dtype="float32") = R.call_packed("vm.builtin.reshape", out, R.shape([batch_size, vocab_size]), sinfo_args=(R.Tensor((batch_size, vocab_size), dtype="float32"),))
        return res
"""
    # expected: TVM 0.27.0.post1's output
    expected = 'batch_size = TypeVar("batch_size")\nvocab_size = TypeVar("vocab_size")\n' + _HEADER + """
    @R.function(pure=False)
    def main(probs: R.Tensor((batch_size, vocab_size), dtype="float32")) -> R.Tensor((batch_size, vocab_size), dtype="float32"):
        R.func_attr({"tir_non_negative_var": ["vocab_size"], "tir_var_upper_bound": {"batch_size": 32}})
        storage: R.Any = R.memory.alloc_storage(R.shape([32 * vocab_size * 4 * 2 + 4194304]), 0, R.str("global"), R.dtype("uint8"))
        workspace: R.Tensor((2 * (batch_size * vocab_size * 4) + 4194304,), dtype="uint8") = R.memory.alloc_tensor(storage, 0, R.shape([2 * (batch_size * vocab_size * 4) + 4194304]), R.dtype("uint8"), 0)
        flat: R.Tensor((batch_size * vocab_size,), dtype="float32") = R.call_packed("vm.builtin.reshape", probs, R.shape([batch_size * vocab_size]), attrs_type_key="ir.DictAttrs", sinfo_args=[R.Tensor((batch_size * vocab_size,), dtype="float32")])
        storage1: R.Any = R.memory.alloc_storage(R.shape([32 * vocab_size * 4]), 0, R.str("global"), R.dtype("float32"))
        out: R.Tensor((batch_size * vocab_size,), dtype="float32") = R.memory.alloc_tensor(storage1, 0, R.shape([batch_size * vocab_size]), R.dtype("float32"), 0)
        R.call_packed("tvm.contrib.thrust.sum_scan", flat, out, workspace, attrs_type_key="ir.DictAttrs", sinfo_args=[R.Tuple])
        res: R.Tensor((batch_size, vocab_size), dtype="float32") = R.call_packed("vm.builtin.reshape", out, R.shape([batch_size, vocab_size]), attrs_type_key="ir.DictAttrs", sinfo_args=[R.Tensor((batch_size, vocab_size), dtype="float32")])
        return res
"""
    _check(before, expected)


def test_view():
    """R.memory.view and R.memory.ensure_zero_offset alias the 1024-byte storage; the next tensor needs a new 512-byte storage."""
    before = _HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor((256,), dtype="float32")) -> R.Tensor((128,), dtype="float32"):
        cls = Module
        buf: R.Tensor((256,), dtype="float32") = R.builtin.alloc_tensor(R.shape([256]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _: R.Tuple = cls.k2(x, buf)
        half: R.Tensor((128,), dtype="float32") = R.memory.view(buf, R.shape([128]), R.dtype("float32"), R.prim_value(0))
        flat: R.Tensor((128,), dtype="float32") = R.memory.ensure_zero_offset(half)
        tmp: R.Tensor((128,), dtype="float32") = R.builtin.alloc_tensor(R.shape([128]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _1: R.Tuple = cls.k2(flat, tmp)
        out: R.Tensor((128,), dtype="float32") = R.builtin.alloc_tensor(R.shape([128]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _2: R.Tuple = cls.k2(tmp, out)
        return out
"""
    # expected: TVM 0.27.0.post1's output
    expected = _HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor((256,), dtype="float32")) -> R.Tensor((128,), dtype="float32"):
        cls = Module
        storage: R.Any = R.memory.alloc_storage(R.shape([1024]), 0, R.str("global"), R.dtype("float32"))
        buf: R.Tensor((256,), dtype="float32") = R.memory.alloc_tensor(storage, 0, R.shape([256]), R.dtype("float32"), 0)
        cls.k2(x, buf)
        half: R.Tensor((128,), dtype="float32") = R.memory.view(buf, R.shape([128]), R.dtype("float32"), 0)
        flat: R.Tensor((128,), dtype="float32") = R.memory.ensure_zero_offset(half)
        storage1: R.Any = R.memory.alloc_storage(R.shape([512]), 0, R.str("global"), R.dtype("float32"))
        tmp: R.Tensor((128,), dtype="float32") = R.memory.alloc_tensor(storage1, 0, R.shape([128]), R.dtype("float32"), 0)
        cls.k2(flat, tmp)
        out: R.Tensor((128,), dtype="float32") = R.builtin.alloc_tensor(R.shape([128]), R.dtype("float32"), 0, R.str("global"))
        cls.k2(tmp, out)
        return out
"""
    _check(before, expected)


def test_builtin_reshape_preserves_storage_liveness():
    """The vm.builtin.reshape packed call aliases its input: exactly two storages."""
    before = _HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor((2, 8), dtype="float32")) -> R.Tensor((16,), dtype="float32"):
        cls = Module
        a: R.Tensor((2, 8), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 8]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _: R.Tuple = cls.k2(x, a)
        flat: R.Tensor((16,), dtype="float32") = R.call_packed("vm.builtin.reshape", a, R.shape([16]), sinfo_args=(R.Tensor((16,), dtype="float32"),))
        b: R.Tensor((16,), dtype="float32") = R.builtin.alloc_tensor(R.shape([16]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _1: R.Tuple = cls.k2(x, b)
        c: R.Tensor((16,), dtype="float32") = R.builtin.alloc_tensor(R.shape([16]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _2: R.Tuple = cls.k3(flat, b, c)
        return c
"""
    # expected: TVM 0.27.0.post1's output
    expected = _HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor((2, 8), dtype="float32")) -> R.Tensor((16,), dtype="float32"):
        cls = Module
        storage: R.Any = R.memory.alloc_storage(R.shape([64]), 0, R.str("global"), R.dtype("float32"))
        a: R.Tensor((2, 8), dtype="float32") = R.memory.alloc_tensor(storage, 0, R.shape([2, 8]), R.dtype("float32"), 0)
        cls.k2(x, a)
        flat: R.Tensor((16,), dtype="float32") = R.call_packed("vm.builtin.reshape", a, R.shape([16]), attrs_type_key="ir.DictAttrs", sinfo_args=[R.Tensor((16,), dtype="float32")])
        storage1: R.Any = R.memory.alloc_storage(R.shape([64]), 0, R.str("global"), R.dtype("float32"))
        b: R.Tensor((16,), dtype="float32") = R.memory.alloc_tensor(storage1, 0, R.shape([16]), R.dtype("float32"), 0)
        cls.k2(x, b)
        c: R.Tensor((16,), dtype="float32") = R.builtin.alloc_tensor(R.shape([16]), R.dtype("float32"), 0, R.str("global"))
        cls.k3(flat, b, c)
        return c
"""
    _check(before, expected)


def test_with_dataflow():
    """A dataflow block whose only allocation is returned: unchanged."""
    before = _HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
        cls = Module
        with R.dataflow():
            out = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("float32"), R.prim_value(0), R.str("global"))
            _ = cls.k2(x, out)
            gv: R.Tensor((2, 3), dtype="float32") = out
            R.output(gv)
        return gv
"""
    # expected: TVM 0.27.0.post1's output
    expected = _HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
        cls = Module
        with R.dataflow():
            out: R.Tensor((2, 3), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("float32"), 0, R.str("global"))
            cls.k2(x, out)
            gv: R.Tensor((2, 3), dtype="float32") = out
            R.output(gv)
        return gv
"""
    _check(before, expected)


def test_match_cast_alias():
    """Spec §1.9 D: a match_cast aliases its input (b cannot take a's storage while a2 is read), and returning a match_cast of d leaves d unplanned."""
    before = _HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        cls = Module
        a: R.Tensor((4,), dtype="float32") = R.builtin.alloc_tensor(R.shape([4]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _: R.Tuple = cls.k2(x, a)
        a2: R.Tensor((4,), dtype="float32") = R.match_cast(a, R.Tensor((4,), dtype="float32"))
        b: R.Tensor((4,), dtype="float32") = R.builtin.alloc_tensor(R.shape([4]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _1: R.Tuple = cls.k2(a2, b)
        c: R.Tensor((4,), dtype="float32") = R.builtin.alloc_tensor(R.shape([4]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _2: R.Tuple = cls.k2(b, c)
        d: R.Tensor((4,), dtype="float32") = R.builtin.alloc_tensor(R.shape([4]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _3: R.Tuple = cls.k2(c, d)
        e: R.Tensor((4,), dtype="float32") = R.match_cast(d, R.Tensor((4,), dtype="float32"))
        return e
"""
    # expected: TVM 0.27.0.post1's output
    expected = _HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        cls = Module
        storage: R.Any = R.memory.alloc_storage(R.shape([16]), 0, R.str("global"), R.dtype("float32"))
        a: R.Tensor((4,), dtype="float32") = R.memory.alloc_tensor(storage, 0, R.shape([4]), R.dtype("float32"), 0)
        cls.k2(x, a)
        a2: R.Tensor((4,), dtype="float32") = R.match_cast(a, R.Tensor((4,), dtype="float32"))
        storage1: R.Any = R.memory.alloc_storage(R.shape([16]), 0, R.str("global"), R.dtype("float32"))
        b: R.Tensor((4,), dtype="float32") = R.memory.alloc_tensor(storage1, 0, R.shape([4]), R.dtype("float32"), 0)
        cls.k2(a2, b)
        c: R.Tensor((4,), dtype="float32") = R.memory.alloc_tensor(storage, 0, R.shape([4]), R.dtype("float32"), 0)
        cls.k2(b, c)
        d: R.Tensor((4,), dtype="float32") = R.builtin.alloc_tensor(R.shape([4]), R.dtype("float32"), 0, R.str("global"))
        cls.k2(c, d)
        e: R.Tensor((4,), dtype="float32") = R.match_cast(d, R.Tensor((4,), dtype="float32"))
        return e
"""
    _check(before, expected)


def test_scope_and_size_window():
    """Storage scopes never mix; a 4-byte request cannot take a free 80-byte storage (more than 16x) but a 20-byte one can."""
    before = _HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        cls = Module
        big: R.Tensor((20,), dtype="float32") = R.builtin.alloc_tensor(R.shape([20]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _: R.Tuple = cls.k2(x, big)
        loc: R.Tensor((4,), dtype="float32") = R.builtin.alloc_tensor(R.shape([4]), R.dtype("float32"), R.prim_value(0), R.str("local"))
        _1: R.Tuple = cls.k2(big, loc)
        small: R.Tensor((1,), dtype="float32") = R.builtin.alloc_tensor(R.shape([1]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _2: R.Tuple = cls.k2(loc, small)
        mid: R.Tensor((5,), dtype="float32") = R.builtin.alloc_tensor(R.shape([5]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _3: R.Tuple = cls.k2(small, mid)
        out: R.Tensor((4,), dtype="float32") = R.builtin.alloc_tensor(R.shape([4]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _4: R.Tuple = cls.k2(mid, out)
        return out
"""
    # expected: TVM 0.27.0.post1's output
    expected = _HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        cls = Module
        storage: R.Any = R.memory.alloc_storage(R.shape([80]), 0, R.str("global"), R.dtype("float32"))
        big: R.Tensor((20,), dtype="float32") = R.memory.alloc_tensor(storage, 0, R.shape([20]), R.dtype("float32"), 0)
        cls.k2(x, big)
        storage1: R.Any = R.memory.alloc_storage(R.shape([16]), 0, R.str("local"), R.dtype("float32"))
        loc: R.Tensor((4,), dtype="float32") = R.memory.alloc_tensor(storage1, 0, R.shape([4]), R.dtype("float32"), 0)
        cls.k2(big, loc)
        storage2: R.Any = R.memory.alloc_storage(R.shape([4]), 0, R.str("global"), R.dtype("float32"))
        small: R.Tensor((1,), dtype="float32") = R.memory.alloc_tensor(storage2, 0, R.shape([1]), R.dtype("float32"), 0)
        cls.k2(loc, small)
        mid: R.Tensor((5,), dtype="float32") = R.memory.alloc_tensor(storage, 0, R.shape([5]), R.dtype("float32"), 0)
        cls.k2(small, mid)
        out: R.Tensor((4,), dtype="float32") = R.builtin.alloc_tensor(R.shape([4]), R.dtype("float32"), 0, R.str("global"))
        cls.k2(mid, out)
        return out
"""
    _check(before, expected)


def test_if_branch_storage_reuse():
    """DIFFERENCES.md dominating-storage: TVM emits the storage in the then branch and reuses it in the else branch (ill-formed); ours is emitted before the If."""
    before = _HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor((2, 3), dtype="float32"), c: R.Tensor((), dtype="bool")) -> R.Tensor((2, 3), dtype="float32"):
        cls = Module
        a: R.Tensor((2, 3), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _: R.Tuple = cls.k2(x, a)
        if c:
            b: R.Tensor((2, 3), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("float32"), R.prim_value(0), R.str("global"))
            _1: R.Tuple = cls.k2(a, b)
            r: R.Tensor((2, 3), dtype="float32") = x
        else:
            d: R.Tensor((2, 3), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("float32"), R.prim_value(0), R.str("global"))
            _2: R.Tuple = cls.k2(a, d)
            r: R.Tensor((2, 3), dtype="float32") = x
        return r
"""
    # expected: hand-written (TVM's output is ill-formed or shares devices here)
    expected = _HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor((2, 3), dtype="float32"), c: R.Tensor((), dtype="bool")) -> R.Tensor((2, 3), dtype="float32"):
        cls = Module
        a: R.Tensor((2, 3), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("float32"), 0, R.str("global"))
        cls.k2(x, a)
        storage: R.Any = R.memory.alloc_storage(R.shape([24]), 0, R.str("global"), R.dtype("float32"))
        if c:
            b: R.Tensor((2, 3), dtype="float32") = R.memory.alloc_tensor(storage, 0, R.shape([2, 3]), R.dtype("float32"), 0)
            cls.k2(a, b)
            r: R.Tensor((2, 3), dtype="float32") = x
        else:
            d: R.Tensor((2, 3), dtype="float32") = R.memory.alloc_tensor(storage, 0, R.shape([2, 3]), R.dtype("float32"), 0)
            cls.k2(a, d)
            r: R.Tensor((2, 3), dtype="float32") = x
        return r
"""
    _check(before, expected)


def test_dataflow_storage_used_after_block():
    """DIFFERENCES.md dominating-storage: a storage emitted in a dataflow block and reused after it is a block output (a plain Var), not a DataflowVar."""
    before = _HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor((2, 4), dtype="float32")) -> R.Tensor((2, 4), dtype="float32"):
        cls = Module
        with R.dataflow():
            a1 = R.builtin.alloc_tensor(R.shape([2, 4]), R.dtype("float32"), R.prim_value(0), R.str("global"))
            _ = cls.k2(x, a1)
            a2 = R.builtin.alloc_tensor(R.shape([2, 4]), R.dtype("float32"), R.prim_value(0), R.str("global"))
            _1 = cls.k2(a1, a2)
            gv: R.Tensor((2, 4), dtype="float32") = a2
            R.output(gv)
        a3: R.Tensor((2, 4), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 4]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _2: R.Tuple = cls.k2(gv, a3)
        a4: R.Tensor((2, 4), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 4]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _3: R.Tuple = cls.k2(a3, a4)
        return a4
"""
    # expected: hand-written (TVM's output is ill-formed or shares devices here)
    expected = _HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor((2, 4), dtype="float32")) -> R.Tensor((2, 4), dtype="float32"):
        cls = Module
        with R.dataflow():
            storage: R.Any = R.memory.alloc_storage(R.shape([32]), 0, R.str("global"), R.dtype("float32"))
            a1: R.Tensor((2, 4), dtype="float32") = R.memory.alloc_tensor(storage, 0, R.shape([2, 4]), R.dtype("float32"), 0)
            cls.k2(x, a1)
            a2: R.Tensor((2, 4), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 4]), R.dtype("float32"), 0, R.str("global"))
            cls.k2(a1, a2)
            gv: R.Tensor((2, 4), dtype="float32") = a2
            R.output(storage, gv)
        a3: R.Tensor((2, 4), dtype="float32") = R.memory.alloc_tensor(storage, 0, R.shape([2, 4]), R.dtype("float32"), 0)
        cls.k2(gv, a3)
        a4: R.Tensor((2, 4), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 4]), R.dtype("float32"), 0, R.str("global"))
        cls.k2(a3, a4)
        return a4
"""
    _check(before, expected)


def test_device_pools():
    """DIFFERENCES.md device-pools: a device-1 tensor does not reuse a device-0 storage (TVM reuses it)."""
    before = _HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor((2, 4), dtype="float32")) -> R.Tensor((2, 4), dtype="float32"):
        cls = Module
        a: R.Tensor((2, 4), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 4]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _: R.Tuple = cls.k2(x, a)
        b: R.Tensor((2, 4), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 4]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _1: R.Tuple = cls.k2(a, b)
        c: R.Tensor((2, 4), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 4]), R.dtype("float32"), R.prim_value(1), R.str("global"))
        _2: R.Tuple = cls.k2(b, c)
        d: R.Tensor((2, 4), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 4]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _3: R.Tuple = cls.k2(c, d)
        return d
"""
    # expected: hand-written (TVM's output is ill-formed or shares devices here)
    expected = _HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor((2, 4), dtype="float32")) -> R.Tensor((2, 4), dtype="float32"):
        cls = Module
        storage: R.Any = R.memory.alloc_storage(R.shape([32]), 0, R.str("global"), R.dtype("float32"))
        a: R.Tensor((2, 4), dtype="float32") = R.memory.alloc_tensor(storage, 0, R.shape([2, 4]), R.dtype("float32"), 0)
        cls.k2(x, a)
        storage1: R.Any = R.memory.alloc_storage(R.shape([32]), 0, R.str("global"), R.dtype("float32"))
        b: R.Tensor((2, 4), dtype="float32") = R.memory.alloc_tensor(storage1, 0, R.shape([2, 4]), R.dtype("float32"), 0)
        cls.k2(a, b)
        storage2: R.Any = R.memory.alloc_storage(R.shape([32]), 1, R.str("global"), R.dtype("float32"))
        c: R.Tensor((2, 4), dtype="float32") = R.memory.alloc_tensor(storage2, 0, R.shape([2, 4]), R.dtype("float32"), 1)
        cls.k2(b, c)
        d: R.Tensor((2, 4), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 4]), R.dtype("float32"), 0, R.str("global"))
        cls.k2(c, d)
        return d
"""
    _check(before, expected)


# ---------------------------------------------------------------------------------------------
# Pipeline, differences, tracing
# ---------------------------------------------------------------------------------------------


def test_spec_6_1_lowered_with_kill_after_last_use():
    """Spec §6.1: SPBM then LowerAllocTensor and KillAfterLastUse give TVM's lowered module."""
    before = _HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
        cls = Module
        alloc: R.Tensor((2, 3), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _: R.Tuple = cls.k3(x, x, alloc)
        y: R.Tensor((2, 3), dtype="float32") = alloc
        alloc1: R.Tensor((2, 3), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _1: R.Tuple = cls.k3(y, y, alloc1)
        z: R.Tensor((2, 3), dtype="float32") = alloc1
        alloc2: R.Tensor((2, 3), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _2: R.Tuple = cls.k3(z, x, alloc2)
        w: R.Tensor((2, 3), dtype="float32") = alloc2
        alloc3: R.Tensor((2, 3), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _3: R.Tuple = cls.k3(w, z, alloc3)
        v: R.Tensor((2, 3), dtype="float32") = alloc3
        return v
"""
    # expected: TVM 0.27.0.post1's StaticPlanBlockMemory + LowerAllocTensor + KillAfterLastUse
    expected = _HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
        cls = Module
        storage: R.Any = R.memory.alloc_storage(R.shape([24]), 0, R.str("global"), R.dtype("float32"))
        alloc: R.Tensor((2, 3), dtype="float32") = R.memory.alloc_tensor(storage, 0, R.shape([2, 3]), R.dtype("float32"), 0)
        cls.k3(x, x, alloc)
        storage1: R.Any = R.memory.alloc_storage(R.shape([24]), 0, R.str("global"), R.dtype("float32"))
        alloc1: R.Tensor((2, 3), dtype="float32") = R.memory.alloc_tensor(storage1, 0, R.shape([2, 3]), R.dtype("float32"), 0)
        R.memory.kill_storage(storage1)
        cls.k3(alloc, alloc, alloc1)
        R.memory.kill_tensor(alloc)
        alloc2: R.Tensor((2, 3), dtype="float32") = R.memory.alloc_tensor(storage, 0, R.shape([2, 3]), R.dtype("float32"), 0)
        R.memory.kill_storage(storage)
        cls.k3(alloc1, x, alloc2)
        storage_1: R.Any = R.memory.alloc_storage(R.shape([24]), 0, R.str("global"), R.dtype("uint8"))
        alloc3: R.Tensor((2, 3), dtype="float32") = R.memory.alloc_tensor(storage_1, 0, R.shape([2, 3]), R.dtype("float32"), 0)
        R.memory.kill_storage(storage_1)
        cls.k3(alloc2, alloc1, alloc3)
        R.memory.kill_tensor(alloc1)
        R.memory.kill_tensor(alloc2)
        return alloc3
"""
    out = Sequential([StaticPlanBlockMemory(), LowerAllocTensor(), KillAfterLastUse()])(memcore_py.parse(before))
    assert_structural_equal(out, memcore_py.parse(expected))


def test_differences_from_tvm_names_each_case():
    """differences_from_tvm reports exactly the documented difference that applies."""
    device = memcore_py.parse(_HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor((8,), dtype="float32")) -> R.Tensor((8,), dtype="float32"):
        cls = Module
        a: R.Tensor((8,), dtype="float32") = R.builtin.alloc_tensor(R.shape([8]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _: R.Tuple = cls.k2(x, a)
        b: R.Tensor((8,), dtype="float32") = R.builtin.alloc_tensor(R.shape([8]), R.dtype("float32"), R.prim_value(1), R.str("global"))
        _1: R.Tuple = cls.k2(a, b)
        c: R.Tensor((8,), dtype="float32") = R.builtin.alloc_tensor(R.shape([8]), R.dtype("float32"), R.prim_value(1), R.str("global"))
        _2: R.Tuple = cls.k2(b, c)
        return c
""")
    assert differences_from_tvm(device) == []  # b never meets a free storage of device 0
    assert differences_from_tvm(random_memory_module(1, n_functions=1, p_if=0, p_device=0, p_dataflow=0)) == []
    found = {}
    for seed in range(40):
        for d in differences_from_tvm(random_memory_module(seed)):
            found[d] = found.get(d, 0) + 1
    assert DIFF_DEVICE_POOLS in found and DIFF_DOMINATING_STORAGE in found


def test_trace_notes():
    """PassContext(trace=True) gets one note per function."""
    mod = memcore_py.parse(_HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor((8,), dtype="float32")) -> R.Tensor((8,), dtype="float32"):
        cls = Module
        a: R.Tensor((8,), dtype="float32") = R.builtin.alloc_tensor(R.shape([8]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _: R.Tuple = cls.k2(x, a)
        return x
""")
    ctx = PassContext(trace=True)
    StaticPlanBlockMemory()(mod, ctx)
    assert ctx.notes == [("static-plan-block-memory", "function 'main': 1 allocations planned into 1 storages (tvm mode)")]


def test_input_module_not_mutated_and_identity_when_nothing_planned():
    """The pass is functional; a module with nothing to plan comes back as the same object."""
    mod = memcore_py.parse(_HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor((8,), dtype="float32")) -> R.Tensor((8,), dtype="float32"):
        cls = Module
        out: R.Tensor((8,), dtype="float32") = R.builtin.alloc_tensor(R.shape([8]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _: R.Tuple = cls.k2(x, out)
        return out
""")
    text = mod.script()
    assert StaticPlanBlockMemory()(mod) is mod
    assert StaticPlanBlockMemory("arena")(mod) is mod
    planned = random_memory_module(3)
    text = planned.script()
    StaticPlanBlockMemory()(planned)
    assert planned.script() == text


# ---------------------------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------------------------

_BOUNDED = _HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor(("n",), dtype="float32")) -> R.Tensor(("n",), dtype="float32"):
        n = T.int64()
        R.func_attr(ATTR)
        cls = Module
        a: R.Tensor((n,), dtype="float32") = R.builtin.alloc_tensor(R.shape([n]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _: R.Tuple = cls.k2(x, a)
        return x
"""


@pytest.mark.parametrize("attr", ['"tir_var_upper_bound": {"n": [4]}', '"tir_var_lower_bound": {"n": [4]}',
                                  '"tir_var_upper_bound": [4]', '"tir_non_negative_var": "n"'])
def test_invalid_tir_var_bound_attribute(attr):
    """Bounds of the wrong type are a PassError naming the function and the attribute."""
    mod = memcore_py.parse(_BOUNDED.replace("ATTR", "{" + attr + "}"))
    with pytest.raises(PassError, match=r"function 'main': attribute 'tir_"):
        StaticPlanBlockMemory()(mod)


def _alloc_module(var_ty, dtype="float32", shape=(4,)):
    x = Var("x", TensorType((4,), "float32"))
    call = Call(get_op("relax.builtin.alloc_tensor"),
                [ShapeExpr(shape), DataTypeImm(dtype), PrimValue(0), StringImm("global")])
    a = Var("a", var_ty)
    body = SeqExpr([BindingBlock([VarBinding(a, call)])], x)
    return IRModule({GlobalVar("main"): Function([x], body, x.ty, {"global_symbol": "main"})})


@pytest.mark.parametrize("ty, match", [
    (ObjectType(), "must have a tensor type"),
    (TensorType(None, "float32", 1), "must have a known shape"),
    (TensorType((4,), ""), "must have a known dtype"),
    (TensorType((4,), "int32"), "must equal the tensor type's dtype"),
])
def test_malformed_alloc_tensor_is_a_pass_error(ty, match):
    """A builtin.alloc_tensor TVM would reject with an internal check is a PassError naming
    the function and the binding."""
    with pytest.raises(PassError, match=f"function 'main', binding 'a'.*{match}"):
        StaticPlanBlockMemory()(_alloc_module(ty))


def test_upper_bound_needing_select_is_a_pass_error():
    """(n * m,) with n <= 20 and m of unknown sign: TVM's bound is a T.Select; rejected clearly."""
    mod = memcore_py.parse(_HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor(("n", "m"), dtype="float32")) -> R.Tensor(("n", "m"), dtype="float32"):
        n = T.int64()
        m = T.int64()
        R.func_attr({"tir_var_upper_bound": {"n": 20}})
        cls = Module
        a: R.Tensor((n * m,), dtype="float32") = R.builtin.alloc_tensor(R.shape([n * m]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _: R.Tuple = cls.k2(x, a)
        return x
""")
    with pytest.raises(PassError, match="tir_non_negative_var"):
        StaticPlanBlockMemory()(mod)


@pytest.mark.parametrize("kwargs", [{"mode": "best"}, {"alignment": 0}, {"alignment": 2.5}, {"time_limit": -1},
                                    {"time_limit": "1s"}])
def test_bad_options(kwargs):
    with pytest.raises(PassError, match="mode must be one of|alignment must be an int|time_limit must be"):
        StaticPlanBlockMemory(**kwargs)


def test_not_a_module():
    with pytest.raises(PassError, match="expects an IRModule"):
        StaticPlanBlockMemory()("main")
# ---------------------------------------------------------------------------------------------
# Arena mode
# ---------------------------------------------------------------------------------------------


def _arena_checks(mod, alignment=64):
    """Arena mode: well-formed, every pool's offsets verified independently, no more bytes than
    TVM mode, lifetimes respected (planning.report re-derives them from the output IR)."""
    tvm_out = StaticPlanBlockMemory()(mod)
    arena_out = StaticPlanBlockMemory("arena", alignment=alignment)(mod)
    assert well_formed_report(arena_out) == []
    tvm_stats = plan_statistics(mod, "tvm")
    arena_stats = plan_statistics(mod, "arena", alignment=alignment)
    assert arena_stats["planned_bytes"] <= tvm_stats["planned_bytes"]
    assert arena_stats["lower_bound"] <= arena_stats["planned_bytes"]
    for gv, func in arena_out.functions.items():
        if isinstance(func, Function):
            planned = collect_planned_tensors(func, gv.name)
            verify_planned(planned)
            for s in planned.storages:
                if s.is_static and s.n_tensors:
                    end = np.minimum(s.end, planned.n_steps)
                    memcore.verify_offsets(s.start, end, s.size, s.offset, s.nbytes)
    return tvm_out, arena_out, tvm_stats, arena_stats


def test_arena_packs_a_pool_into_one_storage():
    """Sizes outside TVM's 16x reuse window get separate TVM storages; the arena puts the
    tensors into one storage with offsets, reaching those at a non-zero offset through
    R.memory.ensure_zero_offset (TVM's kernels require byte_offset 0)."""
    before = _HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor((1024,), dtype="float32")) -> R.Tensor((1024,), dtype="float32"):
        cls = Module
        a: R.Tensor((1024,), dtype="float32") = R.builtin.alloc_tensor(R.shape([1024]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _: R.Tuple = cls.k2(x, a)
        b: R.Tensor((32,), dtype="float32") = R.builtin.alloc_tensor(R.shape([32]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _1: R.Tuple = cls.k2(a, b)
        c: R.Tensor((1024,), dtype="float32") = R.builtin.alloc_tensor(R.shape([1024]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _2: R.Tuple = cls.k2(b, c)
        d: R.Tensor((16,), dtype="int32") = R.builtin.alloc_tensor(R.shape([16]), R.dtype("int32"), R.prim_value(0), R.str("global"))
        _3: R.Tuple = cls.k2(c, d)
        out: R.Tensor((1024,), dtype="float32") = R.builtin.alloc_tensor(R.shape([1024]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _4: R.Tuple = cls.k2(d, out)
        return out
"""
    expected = _HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor((1024,), dtype="float32")) -> R.Tensor((1024,), dtype="float32"):
        cls = Module
        storage: R.Any = R.memory.alloc_storage(R.shape([4224]), 0, R.str("global"), R.dtype("uint8"))
        a: R.Tensor((1024,), dtype="float32") = R.memory.alloc_tensor(storage, 0, R.shape([1024]), R.dtype("float32"), 0)
        cls.k2(x, a)
        b_raw: R.Tensor((32,), dtype="float32") = R.memory.alloc_tensor(storage, 4096, R.shape([32]), R.dtype("float32"), 0)
        b: R.Tensor((32,), dtype="float32") = R.memory.ensure_zero_offset(b_raw)
        cls.k2(a, b)
        c: R.Tensor((1024,), dtype="float32") = R.memory.alloc_tensor(storage, 0, R.shape([1024]), R.dtype("float32"), 0)
        cls.k2(b, c)
        d_raw: R.Tensor((16,), dtype="int32") = R.memory.alloc_tensor(storage, 4096, R.shape([16]), R.dtype("int32"), 0)
        d: R.Tensor((16,), dtype="int32") = R.memory.ensure_zero_offset(d_raw)
        cls.k2(c, d)
        out: R.Tensor((1024,), dtype="float32") = R.builtin.alloc_tensor(R.shape([1024]), R.dtype("float32"), 0, R.str("global"))
        cls.k2(d, out)
        return out
"""
    mod = memcore_py.parse(before)
    _check(before, expected, mode="arena")
    _, _, tvm_stats, arena_stats = _arena_checks(mod)
    assert tvm_stats["planned_bytes"] == 4096 + 128 + 64  # c reuses a's storage; b and d cannot
    assert arena_stats["planned_bytes"] == 4224 == arena_stats["lower_bound"]


def test_arena_falls_back_when_alignment_costs_bytes():
    """Tiny tensors: 64-byte aligned offsets would exceed TVM's storages, so the pool keeps the
    TVM-mode plan (the output equals TVM mode's); with alignment=1 the arena wins."""
    mod = memcore_py.parse(_HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
        cls = Module
        a: R.Tensor((2, 3), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _: R.Tuple = cls.k2(x, a)
        b: R.Tensor((2, 3), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _1: R.Tuple = cls.k2(a, b)
        c: R.Tensor((2, 3), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _2: R.Tuple = cls.k2(b, c)
        return c
""")
    tvm_out, arena_out, tvm_stats, arena_stats = _arena_checks(mod)
    assert_structural_equal(arena_out, tvm_out)
    assert arena_stats["planned_bytes"] == tvm_stats["planned_bytes"] == 48
    _, arena1, _, stats1 = _arena_checks(mod, alignment=1)
    assert stats1["planned_bytes"] == 48 and stats1["n_storage"] == 1


def test_arena_across_blocks_and_if_branches():
    """One arena per (function, scope, device) pool serves a dataflow block, a plain block and
    both If branches; its storage is emitted where it dominates every use."""
    mod = memcore_py.parse(_HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor((256,), dtype="float32"), c: R.Tensor((), dtype="bool")) -> R.Tensor((256,), dtype="float32"):
        cls = Module
        with R.dataflow():
            a = R.builtin.alloc_tensor(R.shape([256]), R.dtype("float32"), R.prim_value(0), R.str("global"))
            _ = cls.k2(x, a)
            b = R.builtin.alloc_tensor(R.shape([16]), R.dtype("float32"), R.prim_value(0), R.str("global"))
            _1 = cls.k2(a, b)
            gv: R.Tensor((256,), dtype="float32") = x
            R.output(gv)
        if c:
            t = R.builtin.alloc_tensor(R.shape([256]), R.dtype("float32"), R.prim_value(0), R.str("global"))
            _2 = cls.k2(x, t)
            t2 = R.builtin.alloc_tensor(R.shape([4]), R.dtype("float32"), R.prim_value(0), R.str("global"))
            _3 = cls.k2(t, t2)
            r: R.Tensor((256,), dtype="float32") = x
        else:
            e = R.builtin.alloc_tensor(R.shape([128]), R.dtype("float32"), R.prim_value(0), R.str("global"))
            _4 = cls.k2(x, e)
            r: R.Tensor((256,), dtype="float32") = x
        return r
""")
    _, arena_out, tvm_stats, arena_stats = _arena_checks(mod)
    text = arena_out.script()
    assert text.count("R.memory.alloc_storage") == 1
    assert arena_stats["planned_bytes"] == 1024 + 64 == arena_stats["lower_bound"]
    assert arena_stats["planned_bytes"] <= tvm_stats["planned_bytes"]


def test_arena_keeps_symbolic_sizes_on_tvm_storages():
    """Symbolic-size tensors stay on TVM-mode storages next to the arena."""
    mod = memcore_py.parse(_HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor(("n",), dtype="float32")) -> R.Tensor(("n",), dtype="float32"):
        n = T.int64()
        cls = Module
        a: R.Tensor((n,), dtype="float32") = R.builtin.alloc_tensor(R.shape([n]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _: R.Tuple = cls.k2(x, a)
        b: R.Tensor((n,), dtype="float32") = R.builtin.alloc_tensor(R.shape([n]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _1: R.Tuple = cls.k2(a, b)
        c: R.Tensor((1024,), dtype="float32") = R.builtin.alloc_tensor(R.shape([1024]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _2: R.Tuple = cls.k2(b, c)
        d: R.Tensor((64,), dtype="float32") = R.builtin.alloc_tensor(R.shape([64]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _3: R.Tuple = cls.k2(c, d)
        return x
""")
    _, arena_out, _, stats = _arena_checks(mod)
    text = arena_out.script()
    assert text.count("R.shape([4 * n])") == 2
    assert "R.shape([4352])" in text
    assert stats["n_storage"] == 3


def test_arena_devices_and_scopes_get_separate_arenas():
    """Pools are per (scope, device): local-scope and device-1 tensors get arenas of their own
    (and each arena holds its two tensors one after the other)."""
    lines = []
    for i, (scope, dev, n) in enumerate([("global", 0, 512), ("local", 0, 512), ("global", 1, 512),
                                         ("global", 0, 64), ("local", 0, 64), ("global", 1, 64)]):
        prev = "x" if i == 0 else f"a{i - 1}"
        lines.append(f'        a{i}: R.Tensor(({n},), dtype="float32") = R.builtin.alloc_tensor(R.shape([{n}]), '
                     f'R.dtype("float32"), R.prim_value({dev}), R.str("{scope}"))')
        lines.append(f"        _{i}: R.Tuple = cls.k2({prev}, a{i})")
    mod = memcore_py.parse(_HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor((512,), dtype="float32")) -> R.Tensor((512,), dtype="float32"):
        cls = Module
""" + "\n".join(lines) + "\n        return x\n")
    _, arena_out, _, stats = _arena_checks(mod)
    text = arena_out.script()
    assert text.count("R.memory.alloc_storage") == 3
    assert 'R.str("local")' in text and 'R.shape([2048]), 1, R.str("global")' in text


@pytest.mark.parametrize("seed", range(12))
def test_arena_random_modules(seed):
    """Random modules: arena output is well-formed, verified, and never bigger than TVM mode."""
    _arena_checks(random_memory_module(seed, n_functions=3, n_steps=16))


def test_arena_chain_close_to_lower_bound():
    """A long element-wise chain: the arena is at most TVM mode and at least the lower bound."""
    mod = chain_module(300, width=256)
    _, _, tvm_stats, arena_stats = _arena_checks(mod)
    assert arena_stats["lower_bound"] <= arena_stats["planned_bytes"] <= tvm_stats["planned_bytes"]


def test_arena_time_limit_search_never_worse():
    """With a search time limit the arena is never larger than with the heuristics alone."""
    mod = random_memory_module(7, n_functions=2, n_steps=20)
    fast = plan_statistics(mod, "arena")
    searched = plan_statistics(mod, "arena", time_limit=0.05)
    assert searched["planned_bytes"] <= fast["planned_bytes"]
    _arena_checks(mod)


def test_arena_without_zero_offset_views():
    """zero_offset_views=False: the offset tensors are bound directly (for runtimes whose kernels
    accept a byte_offset); same storages and offsets."""
    mod = chain_module(40, width=256)
    out = StaticPlanBlockMemory("arena", zero_offset_views=False)(mod)
    text = out.script()
    assert "ensure_zero_offset" not in text and "_raw" not in text
    with_views = StaticPlanBlockMemory("arena")(mod).script()
    n_offset = len(re.findall(r"R\.memory\.alloc_tensor\(storage\w*, [1-9]", text))
    assert n_offset > 0
    assert with_views.count("R.memory.ensure_zero_offset") == n_offset


def test_plain_function_matches_pass():
    """The plain function and the Pass class give the same module."""
    mod = random_memory_module(5)
    assert_structural_equal(static_plan_block_memory(mod, "arena"), StaticPlanBlockMemory("arena")(mod))


def test_unlowered_calls_discard_their_arguments():
    """Before CallTIRRewrite / RemovePurityChecking: tensors passed to R.call_tir or
    R.call_pure_packed are not planned (those calls may keep them); the module is unchanged."""
    before = _HEADER + """
    @R.function(pure=False)
    def main(x: R.Tensor((8,), dtype="float32")) -> R.Tensor((8,), dtype="float32"):
        cls = Module
        a: R.Tensor((8,), dtype="float32") = R.builtin.alloc_tensor(R.shape([8]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _: R.Tuple = cls.k2(x, a)
        b = R.call_tir(cls.k2, (a,), out_sinfo=R.Tensor((8,), dtype="float32"))
        c: R.Tensor((8,), dtype="float32") = R.builtin.alloc_tensor(R.shape([8]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _1: R.Tuple = cls.k2(b, c)
        d = R.call_pure_packed("ext.copy", c, sinfo_args=(R.Tensor((8,), dtype="float32"),))
        return d
"""
    mod = memcore_py.parse(before)
    assert StaticPlanBlockMemory()(mod) is mod


def test_verify_context_accepts_output():
    """PassContext(verify=True) runs the well-formedness check after the pass: it passes, also
    on the documented differences."""
    with PassContext(verify=True):
        for seed in range(6):
            StaticPlanBlockMemory()(random_memory_module(seed))
            StaticPlanBlockMemory("arena")(random_memory_module(seed))
