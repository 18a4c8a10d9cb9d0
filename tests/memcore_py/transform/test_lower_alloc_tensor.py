"""LowerAllocTensor (spec §5, §7.5).

Expected modules are TVM 0.27.0.post1's output for the same input (obtained in the venv).
"""
import pytest

from memcore_py.errors import PassError
from memcore_py.ir.expr import (
    BindingBlock,
    Call,
    DataTypeImm,
    Function,
    PrimValue,
    SeqExpr,
    ShapeExpr,
    StringImm,
    Var,
    VarBinding,
)
from memcore_py.ir.module import IRModule
from memcore_py.ir.op import get_op
from memcore_py.ir.prim import IntImm, Mul, PrimVar
from memcore_py.ir.types import ShapeType, TensorType
from memcore_py.testing.lowering_programs import assert_pass_output, module_from_text
from memcore_py.transform import LowerAllocTensor
from memcore_py.transform.lower_alloc_tensor import lower_alloc_tensor, storage_bytes_expr

T23 = 'R.Tensor((2, 3), dtype="float32")'


def test_basic():
    """TVM's own test: a (16, 32) float32 tensor gets a 2048-byte uint8 storage."""
    before = """
    @I.ir_module
    class Module:
        @R.function
        def main():
            x = R.builtin.alloc_tensor(R.shape([16, 32]), "float32", 0)
            return x
    """
    expected = """
    @I.ir_module
    class Module:
        @R.function
        def main() -> R.Tensor((16, 32), dtype="float32"):
            storage: R.Any = R.memory.alloc_storage(R.shape([2048]), 0, R.str("global"), R.dtype("uint8"))
            x: R.Tensor((16, 32), dtype="float32") = R.memory.alloc_tensor(storage, 0, R.shape([16, 32]), R.dtype("float32"), 0)
            return x
    """
    assert_pass_output(LowerAllocTensor(), before, expected)


def test_sizes_shapes_dtypes_scopes_devices():
    """Byte sizes are built left to right with TIR constant folding (``4 * n * 4``;
    ``1 * n`` is ``n`` for 1-byte dtypes; a zero dim gives 0); the scope and the device
    index are passed through."""
    before = """
    @I.ir_module
    class Module:
        @R.function
        def main(x: R.Tensor(("n", "m"), "float32")):
            n = T.int64()
            m = T.int64()
            a = R.builtin.alloc_tensor(R.shape([n, 4]), "float32", 0)
            b = R.builtin.alloc_tensor(R.shape([2, n, m]), "float16", 0, "global.texture")
            c = R.builtin.alloc_tensor(R.shape([n, 4]), "bool", 0)
            d = R.builtin.alloc_tensor(R.shape([1, 1]), "int4", 0)
            e = R.builtin.alloc_tensor(R.shape([]), "float32", 0)
            f = R.builtin.alloc_tensor(R.shape([n * 2, 3]), "float32", 0)
            g = R.builtin.alloc_tensor(R.shape([0, n]), "int8", 0)
            h = R.builtin.alloc_tensor(R.shape([n]), "int8", 1)
            return (a, b, c, d, e, f, g, h)
    """
    ta = 'R.Tensor((n, 4), dtype="float32")'
    tb = 'R.Tensor((2, n, m), dtype="float16")'
    tc = 'R.Tensor((n, 4), dtype="bool")'
    td = 'R.Tensor((1, 1), dtype="int4")'
    te = 'R.Tensor((), dtype="float32")'
    tf = 'R.Tensor((n * 2, 3), dtype="float32")'
    tg = 'R.Tensor((0, n), dtype="int8")'
    th = 'R.Tensor((n,), dtype="int8")'
    expected = f"""
    @I.ir_module
    class Module:
        @R.function
        def main(x: R.Tensor(("n", "m"), dtype="float32")) -> R.Tuple({ta}, {tb}, {tc}, {td}, {te}, R.Tensor(("n * 2", 3), dtype="float32"), {tg}, {th}):
            n = T.int64()
            m = T.int64()
            storage: R.Any = R.memory.alloc_storage(R.shape([4 * n * 4]), 0, R.str("global"), R.dtype("uint8"))
            a: {ta} = R.memory.alloc_tensor(storage, 0, R.shape([n, 4]), R.dtype("float32"), 0)
            storage1: R.Any = R.memory.alloc_storage(R.shape([4 * n * m]), 0, R.str("global.texture"), R.dtype("uint8"))
            b: {tb} = R.memory.alloc_tensor(storage1, 0, R.shape([2, n, m]), R.dtype("float16"), 0)
            storage2: R.Any = R.memory.alloc_storage(R.shape([n * 4]), 0, R.str("global"), R.dtype("uint8"))
            c: {tc} = R.memory.alloc_tensor(storage2, 0, R.shape([n, 4]), R.dtype("bool"), 0)
            storage3: R.Any = R.memory.alloc_storage(R.shape([1]), 0, R.str("global"), R.dtype("uint8"))
            d: {td} = R.memory.alloc_tensor(storage3, 0, R.shape([1, 1]), R.dtype("int4"), 0)
            storage4: R.Any = R.memory.alloc_storage(R.shape([4]), 0, R.str("global"), R.dtype("uint8"))
            e: {te} = R.memory.alloc_tensor(storage4, 0, R.shape([]), R.dtype("float32"), 0)
            storage5: R.Any = R.memory.alloc_storage(R.shape([4 * (n * 2) * 3]), 0, R.str("global"), R.dtype("uint8"))
            f: {tf} = R.memory.alloc_tensor(storage5, 0, R.shape([n * 2, 3]), R.dtype("float32"), 0)
            storage6: R.Any = R.memory.alloc_storage(R.shape([0]), 0, R.str("global"), R.dtype("uint8"))
            g: {tg} = R.memory.alloc_tensor(storage6, 0, R.shape([0, n]), R.dtype("int8"), 0)
            storage7: R.Any = R.memory.alloc_storage(R.shape([n]), 1, R.str("global"), R.dtype("uint8"))
            h: {th} = R.memory.alloc_tensor(storage7, 0, R.shape([n]), R.dtype("int8"), 1)
            return (a, b, c, d, e, f, g, h)
    """
    assert_pass_output(LowerAllocTensor(), before, expected)


def test_storage_bytes_expr_folding():
    n = PrimVar("n")
    assert storage_bytes_expr((IntImm(2), IntImm(3)), "float32").value == 24
    e = storage_bytes_expr((n, IntImm(4)), "float32")
    assert isinstance(e, Mul) and isinstance(e.a, Mul) and e.a.b is n and e.b.value == 4
    assert storage_bytes_expr((n,), "uint8") is n
    assert storage_bytes_expr((IntImm(0), n), "int8").value == 0


def test_storage_in_a_dataflow_block_is_a_dataflow_var():
    before = """
    @I.ir_module
    class Module:
        @R.function
        def main(x: R.Tensor((2, 3), "float32")):
            with R.dataflow():
                a = R.builtin.alloc_tensor(R.shape([2, 3]), "float32", 0)
                b = R.add(a, x)
                R.output(b)
            return b
    """
    expected = f"""
    @I.ir_module
    class Module:
        @R.function
        def main(x: {T23}) -> {T23}:
            with R.dataflow():
                storage: R.Any = R.memory.alloc_storage(R.shape([24]), 0, R.str("global"), R.dtype("uint8"))
                a: {T23} = R.memory.alloc_tensor(storage, 0, R.shape([2, 3]), R.dtype("float32"), 0)
                b: {T23} = R.add(a, x)
                R.output(b)
            return b
    """
    after = assert_pass_output(LowerAllocTensor(), before, expected)
    storage = after["main"].body.blocks[0].bindings[0].var
    assert type(storage).__name__ == "DataflowVar"


def test_storage_names_restart_and_may_repeat_planned_ones():
    """A fresh name table per function: after StaticPlanBlockMemory's ``storage`` and
    ``storage1``, the new storages are again ``storage`` and ``storage1`` (TVM's IR holds
    the duplicates; its printer shows ``storage_1``, ``storage1_1``)."""
    before = """
    @I.ir_module
    class Module:
        @R.function
        def main(x: R.Tensor((2, 3), "float32")):
            storage = R.memory.alloc_storage(R.shape([24]), 0, "global", "float32")
            a = R.memory.alloc_tensor(storage, 0, R.shape([2, 3]), "float32")
            storage1 = R.memory.alloc_storage(R.shape([24]), 0, "global", "float32")
            b = R.memory.alloc_tensor(storage1, 0, R.shape([2, 3]), "float32")
            c = R.builtin.alloc_tensor(R.shape([2, 3]), "float32", 0)
            d = R.builtin.alloc_tensor(R.shape([2, 3]), "float32", 0)
            return (a, b, c, d)
    """
    expected = f"""
    @I.ir_module
    class Module:
        @R.function
        def main(x: {T23}) -> R.Tuple({T23}, {T23}, {T23}, {T23}):
            storage: R.Any = R.memory.alloc_storage(R.shape([24]), 0, R.str("global"), R.dtype("float32"))
            a: {T23} = R.memory.alloc_tensor(storage, 0, R.shape([2, 3]), R.dtype("float32"), 0)
            storage1: R.Any = R.memory.alloc_storage(R.shape([24]), 0, R.str("global"), R.dtype("float32"))
            b: {T23} = R.memory.alloc_tensor(storage1, 0, R.shape([2, 3]), R.dtype("float32"), 0)
            storage_1: R.Any = R.memory.alloc_storage(R.shape([24]), 0, R.str("global"), R.dtype("uint8"))
            c: {T23} = R.memory.alloc_tensor(storage_1, 0, R.shape([2, 3]), R.dtype("float32"), 0)
            storage1_1: R.Any = R.memory.alloc_storage(R.shape([24]), 0, R.str("global"), R.dtype("uint8"))
            d: {T23} = R.memory.alloc_tensor(storage1_1, 0, R.shape([2, 3]), R.dtype("float32"), 0)
            return (a, b, c, d)
    """
    after = assert_pass_output(LowerAllocTensor(), before, expected)
    names = [b.var.name for b in after["main"].body.blocks[0].bindings]
    assert names == ["storage", "a", "storage1", "b", "storage", "c", "storage1", "d"]


def test_if_branch_and_names_per_function():
    before = """
    @I.ir_module
    class Module:
        @R.function
        def f1(x: R.Tensor((2, 3), "float32"), c: R.Tensor((), "bool")):
            if c:
                a = R.builtin.alloc_tensor(R.shape([2, 3]), "float32", 0)
                r = a
            else:
                r = x
            b = R.builtin.alloc_tensor(R.shape([2, 3]), "float32", 0)
            return (r, b)

        @R.function
        def f2(x: R.Tensor((2, 3), "float32")):
            a = R.builtin.alloc_tensor(R.shape([2, 3]), "float32", 0)
            return a
    """
    expected = f"""
    @I.ir_module
    class Module:
        @R.function
        def f1(x: {T23}, c: R.Tensor((), dtype="bool")) -> R.Tuple({T23}, {T23}):
            if c:
                storage: R.Any = R.memory.alloc_storage(R.shape([24]), 0, R.str("global"), R.dtype("uint8"))
                a: {T23} = R.memory.alloc_tensor(storage, 0, R.shape([2, 3]), R.dtype("float32"), 0)
                r: {T23} = a
            else:
                r: {T23} = x
            storage1: R.Any = R.memory.alloc_storage(R.shape([24]), 0, R.str("global"), R.dtype("uint8"))
            b: {T23} = R.memory.alloc_tensor(storage1, 0, R.shape([2, 3]), R.dtype("float32"), 0)
            return (r, b)

        @R.function
        def f2(x: {T23}) -> {T23}:
            storage: R.Any = R.memory.alloc_storage(R.shape([24]), 0, R.str("global"), R.dtype("uint8"))
            a: {T23} = R.memory.alloc_tensor(storage, 0, R.shape([2, 3]), R.dtype("float32"), 0)
            return a
    """
    assert_pass_output(LowerAllocTensor(), before, expected)


def _func_with_alloc(args, ty=TensorType((2, 3), "float32"), params=()):  # noqa: B008 - types are immutable
    a = Var("a", ty)
    call = Call(get_op("relax.builtin.alloc_tensor"), args)
    return Function(list(params), SeqExpr([BindingBlock([VarBinding(a, call)])], a), ty, is_pure=False)


def test_shape_variable_with_known_values():
    """A shape held by a variable whose type knows its values (TVM's lowering accepts it;
    its ``builtin.alloc_tensor`` inference no longer lets such input be built)."""
    sh = Var("sh", ShapeType((IntImm(2), IntImm(3))))
    func = _func_with_alloc([sh, DataTypeImm("float32"), PrimValue(IntImm(0)), StringImm("global")], params=[sh])
    out = lower_alloc_tensor(func, "f")
    storage_b, alloc_b = out.body.blocks[0].bindings
    assert storage_b.value.args[0].values[0].value == 24
    assert alloc_b.value.op is get_op("relax.memory.alloc_tensor") and alloc_b.value.args[2] is sh


@pytest.mark.parametrize("args, message", [
    ([ShapeExpr([2, 3]), DataTypeImm("float32"), PrimValue(IntImm(0))], "must have 4 arguments"),
    ([ShapeExpr([2, 3]), StringImm("float32"), PrimValue(IntImm(0)), StringImm("global")], "dtype argument"),
    ([ShapeExpr([2, 3]), DataTypeImm("float32"), StringImm("0"), StringImm("global")], "device argument"),
    ([ShapeExpr([2, 3]), DataTypeImm("float32"), PrimValue(IntImm(0)), DataTypeImm("global")], "storage scope"),
])
def test_malformed_alloc_raises_naming_function_and_binding(args, message):
    func = _func_with_alloc(args)
    with pytest.raises(PassError, match=rf"{message}.*function 'f', binding a = "):
        LowerAllocTensor()(IRModule({"f": func}))


def test_unknown_shape_raises():
    sh = Var("sh", ShapeType(None, 2))
    func = _func_with_alloc([sh, DataTypeImm("float32"), PrimValue(IntImm(0)), StringImm("global")], params=[sh])
    with pytest.raises(PassError, match="known values"):
        lower_alloc_tensor(func, "f")


def test_function_without_allocations_is_unchanged():
    mod = module_from_text("""
    @I.ir_module
    class Module:
        @R.function
        def main(x: R.Tensor((2, 3), "float32")):
            a = R.add(x, x)
            return a
    """)
    assert LowerAllocTensor()(mod) is mod
    assert LowerAllocTensor.name == "lower-alloc-tensor"


def _sliced_and_full_visit(monkeypatch, text):
    """``(module, the function lowered as the pass lowers it, the same with every block
    taking the full visit)`` for the ``main`` of ``text``."""
    from memcore_py.transform import lower_alloc_tensor as module

    mod = module_from_text(text)
    fast = lower_alloc_tensor(mod["main"], "main")
    monkeypatch.setattr(module, "is_flat_block", lambda blk: False)
    return mod, fast, lower_alloc_tensor(mod["main"], "main")


def test_flat_function_equals_the_full_visit(monkeypatch):
    """A flat function keeps its bindings without the mutator's visit until a variable is
    remapped (an allocation bound with a less precise type gets a fresh variable, TVM's
    ReEmitBinding; its later uses must be rewritten): same module as the full visit."""
    from memcore_py.ir import assert_structural_equal

    text = """
    @I.ir_module
    class Module:
        @T.prim_func(private=True)
        def k(A: T.handle, B: T.handle):
            T.evaluate(0)

        @R.function
        def main(x: R.Tensor((2, 3), dtype="float32")) -> R.Tensor(dtype="float32", ndim=2):
            R.func_attr({"relax.force_pure": True})
            cls = Module
            a: R.Tensor((2, 3), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("float32"), R.prim_value(0), R.str("global"))
            cls.k(x, a)
            b: R.Tensor(dtype="float32", ndim=2) = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("float32"), R.prim_value(0), R.str("global"))
            cls.k(a, b)
            c: R.Tensor(dtype="float32", ndim=2) = b
            return c
    """
    mod, fast, slow = _sliced_and_full_visit(monkeypatch, text)
    assert_structural_equal(fast, slow)
    assert fast.body.blocks[0].bindings[-1].value is not mod["main"].body.blocks[0].bindings[-1].value  # remapped use


def test_flat_blocks_of_a_function_with_an_if_equal_the_full_visit(monkeypatch):
    """In a function with an If, the flat blocks (the branches', the one after the If) are
    rebuilt from slices and the block holding the If is visited: the same function as the
    full visit, storages named in the same order, no allocation left unlowered."""
    from memcore_py.ir import assert_structural_equal

    alloc = 'R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("float32"), R.prim_value(0), R.str("global"))'
    text = f"""
    @I.ir_module
    class Module:
        @T.prim_func(private=True)
        def k(A: T.handle, B: T.handle):
            T.evaluate(0)

        @R.function
        def main(x: R.Tensor((2, 3), dtype="float32"), c: R.Tensor((), dtype="bool")) -> R.Tensor((2, 3), dtype="float32"):
            R.func_attr({{"relax.force_pure": True}})
            cls = Module
            a: R.Tensor((2, 3), dtype="float32") = {alloc}
            cls.k(x, a)
            if c:
                b: R.Tensor((2, 3), dtype="float32") = {alloc}
                cls.k(a, b)
                r: R.Tensor((2, 3), dtype="float32") = b
            else:
                r: R.Tensor((2, 3), dtype="float32") = a
            d: R.Tensor((2, 3), dtype="float32") = {alloc}
            cls.k(r, d)
            return d
    """
    _mod, fast, slow = _sliced_and_full_visit(monkeypatch, text)
    assert_structural_equal(fast, slow)
    names = [b.var.name for blk in fast.body.blocks for b in blk.bindings if b.var.name.startswith("storage")]
    assert names == [b.var.name for blk in slow.body.blocks for b in blk.bindings if b.var.name.startswith("storage")]
    assert len(names) == 2  # the If's block and the block after it; the branch's storage is nested
    branch = next(b.value.true_branch for blk in fast.body.blocks for b in blk.bindings if hasattr(b.value, "true_branch"))
    values = [b.value for seq in (fast.body, branch) for blk in seq.blocks for b in blk.bindings]
    ops = [getattr(getattr(v, "op", None), "name", None) for v in values]
    assert "relax.builtin.alloc_tensor" not in ops and ops.count("relax.memory.alloc_storage") == 3
