"""The bridge on modules TVM accepts that memcore misread or refused untyped (issue 32's
U4, U5, F1, F3, F4 and item 7): each reproduction is a case here.

The contract checked: ``from_tvm(m)`` equals memcore's reading of TVM's text of ``m``,
``to_tvm(from_tvm(m))`` equals ``m``, the native passes equal TVM's own, and what memcore
does not model is a typed error naming it (DIFFERENCES.md lists each).
"""
from __future__ import annotations

import pytest

tvm = pytest.importorskip("tvm")
import tvm_ffi  # noqa: E402  (after the importorskip above)
from tvm import relax  # noqa: E402

import memcore_py  # noqa: E402
import memcore_py.tvm as mtvm  # noqa: E402
from memcore_py.errors import IRError  # noqa: E402
from memcore_py.ir import structural_equal  # noqa: E402

HEAD = "# from tvm.script import ir as I\n# from tvm.script import tirx as T\n# from tvm.script import relax as R\n"


def _module(body: str):
    return tvm.script.from_source(HEAD + "@I.ir_module\nclass Module:\n" + body)


def _assert_bridge_round_trips(m) -> None:
    mine = mtvm.from_tvm(m)
    assert structural_equal(mine, memcore_py.parse(m.script())), "from_tvm(m) differs from reading m's text"
    back = mtvm.to_tvm(mine)
    assert tvm_ffi.structural_equal(back, m), tvm_ffi.get_first_structural_mismatch(back, m)


def _assert_native_equals_tvm(m, *names: str) -> None:
    for name in names:
        theirs = getattr(relax.transform, name)()(m)
        ours = getattr(mtvm, name)()(m)
        tvm.ir.assert_structural_equal(ours, theirs, map_free_vars=True)


@pytest.mark.parametrize("annotation", ['R.Tensor((2, 3))', 'R.Tensor((2, 3), dtype="")', "R.Tensor(ndim=2)"])
def test_a_tensor_without_dtype_reads_as_an_unknown_dtype(annotation):
    m = _module(f'''    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32"), y: {annotation}) -> R.Tensor((2, 3), dtype="float32"):
        z = R.add(x, x)
        return z
''')
    assert m["main"].params[1].ty.dtype is None  # TVM's reading: no dtype at all
    _assert_bridge_round_trips(m)
    assert mtvm.from_tvm(m)["main"].params[1].ty.dtype == ""
    _assert_native_equals_tvm(relax.transform.ToNonDataflow()(m), "StaticPlanBlockMemory", "KillAfterLastUse")


def test_void_dtype_is_kept_apart_from_an_unknown_dtype():
    m = _module('''    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="void"):
        y = R.add(x, x)
        return y
''')
    _assert_bridge_round_trips(m)
    assert mtvm.from_tvm(m)["main"].ret_ty.dtype == "void"
    assert 'dtype="void"' in memcore_py.parse(m.script()).script()


def test_alloc_tensor_under_a_weaker_annotation_writes_back_without_ty_args():
    m = _module('''    @R.function(pure=False)
    def main(x: R.Tensor(("n", "m"), "float16")) -> R.Tensor(("n", "m"), "float16"):
        n = T.int64()
        m = T.int64()
        alloc: R.Tensor((n, m), dtype="float16") = R.builtin.alloc_tensor(R.shape([n, 256]), R.dtype("float16"), 0, R.str("global"))
        _ = R.call_packed("k", x, alloc, ty_args=(R.Any,))
        return alloc
''')
    assert len(m["main"].body.blocks[0].bindings[0].value.ty_args) == 0
    _assert_bridge_round_trips(m)
    _assert_native_equals_tvm(m, "StaticPlanBlockMemory", "LowerAllocTensor", "KillAfterLastUse")


@pytest.mark.parametrize("dtype", ["uint1", "int3", "float8_e8m0fnu", "int128", "uint1x8"])
def test_dtypes_of_tvms_grammar_are_read_sized_and_lowered_as_tvm(dtype):
    m = _module(f'''    @R.function(pure=False)
    def main(x: R.Tensor((8,), "{dtype}")) -> R.Tensor((8,), "{dtype}"):
        a = R.builtin.alloc_tensor(R.shape([8]), R.dtype("{dtype}"), R.prim_value(0), R.str("global"))
        _ = R.call_packed("k", x, a, ty_args=(R.Any,))
        b = R.builtin.alloc_tensor(R.shape([8]), R.dtype("{dtype}"), R.prim_value(0), R.str("global"))
        _1 = R.call_packed("k", a, b, ty_args=(R.Any,))
        return b
''')
    _assert_bridge_round_trips(m)
    _assert_native_equals_tvm(m, "StaticPlanBlockMemory")
    planned = relax.transform.StaticPlanBlockMemory()(m)
    _assert_native_equals_tvm(planned, "LowerAllocTensor")


def test_an_unknown_dtype_name_is_a_typed_error():
    from memcore_py.ir.types import check_dtype, dtype_bytes

    for bad in ("int0", "int256", "voidx2", "int32x0", "intx4", "float32x70000"):
        with pytest.raises(IRError, match="dtype must be one of"):
            check_dtype(bad)
    assert dtype_bytes("void") == 0 and dtype_bytes("uint1x8") == 1 and dtype_bytes("int3") == 1


def test_a_tuple_nested_beyond_the_recursion_limit_is_a_typed_refusal_and_the_c_passes_run():
    x = relax.Var("x", relax.TensorType((2, 3), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        t = x
        for _ in range(3000):
            t = relax.Tuple([t])
        bb.emit_func_output(bb.emit(t))
    m = bb.get()
    with pytest.raises(mtvm.TVMConversionError, match="nested too deeply.*function 'main'|function 'main'.*nested too deeply"):
        mtvm.from_tvm(m)
    _assert_native_equals_tvm(m, "KillAfterLastUse", "StaticPlanBlockMemory")


@pytest.mark.parametrize("ret", ['R.Tensor((2, 4, 4), "float32")', 'R.Tensor(ndim=3, dtype="float32")', 'R.Tensor((2, 4), "float16")'])
def test_a_rebuilt_function_takes_its_bodys_type_where_the_declaration_is_not_below_it(ret):
    """TVM's mutator keeps a changed function's declared return type only when the body's
    type is a base of it; else the function takes the body's type (its symbolic variables
    that the parameters do not define erased). Both the pass on TVM's objects and the pure
    pass on memcore IR do the same."""
    m = _module(f'''    @R.function(pure=False)
    def main(x: R.Tensor((2, 4), "float32")) -> {ret}:
        a = R.builtin.alloc_tensor(R.shape([2, 4]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _ = R.call_packed("k", x, a, ty_args=(R.Any,))
        b = R.builtin.alloc_tensor(R.shape([2, 4]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _1 = R.call_packed("k", a, b, ty_args=(R.Any,))
        return b
''')
    theirs = relax.transform.StaticPlanBlockMemory()(m)
    assert [int(d) for d in theirs["main"].ret_ty.shape.values] == [2, 4]
    _assert_native_equals_tvm(m, "StaticPlanBlockMemory", "KillAfterLastUse")
    _assert_native_equals_tvm(theirs, "LowerAllocTensor")
    from memcore_py.transform import StaticPlanBlockMemory

    pure = mtvm.to_tvm(StaticPlanBlockMemory()(mtvm.from_tvm(m)))
    tvm.ir.assert_structural_equal(pure, theirs, map_free_vars=True)


def test_an_attribute_holding_a_function_is_a_typed_refusal_and_the_c_passes_run():
    """The old ``sinfo_args=`` keyword: TVM's parser keeps it as a call attribute whose value
    is a Python function; memcore's IR has no such attribute value (DIFFERENCES.md)."""
    m = _module('''    @R.function(pure=False)
    def main(x: R.Tensor((8,), "float32")) -> R.Tensor((8,), "float32"):
        _ = R.call_packed("k", x, sinfo_args=(R.Object,))
        return x
''')
    with pytest.raises(mtvm.TVMConversionError, match="attribute 'sinfo_args'"):
        mtvm.from_tvm(m)
    for name in ("KillAfterLastUse", "StaticPlanBlockMemory", "LowerAllocTensor"):
        # TVM's structural equality cannot hash a function value: compare the printed modules
        assert getattr(mtvm, name)()(m).script() == getattr(relax.transform, name)()(m).script()


def test_an_allocation_of_2_to_the_64_bytes_is_refused_where_tvm_wraps_it_to_zero():
    m = _module('''    @R.function(pure=False)
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        b = R.builtin.alloc_tensor(R.shape([4611686018427387904, 1]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _ = R.call_packed("k", x, b, ty_args=(R.Any,))
        return x
''')
    lowered = relax.transform.LowerAllocTensor()(m)
    assert "R.shape([0])" in lowered.script()  # TVM's size wraps around
    with pytest.raises(IRError, match="must fit in int64"):
        mtvm.LowerAllocTensor()(m)


def test_a_kill_of_a_symbolic_prim_value_reads_and_plans_as_tvm():
    m = _module('''    @R.function(pure=False)
    def main(x: R.Tensor(("n",), "float32")) -> R.Tensor(("n",), "float32"):
        n = T.int64()
        _ = R.memory.kill_storage(R.prim_value(n))
        return x
''')
    _assert_bridge_round_trips(m)
    _assert_native_equals_tvm(m, "KillAfterLastUse", "StaticPlanBlockMemory", "LowerAllocTensor")
