"""LowerForPlanning, case by case from its rules (the oracle test compares whole models with
TVM's unfused pipeline)."""
from __future__ import annotations

import pytest

import memcore_py
from memcore_py.errors import PassError
from memcore_py.ir.expr import Call, Constant, PrimFunc
from memcore_py.transform.lower_for_planning import MAX_FOLD_ELEMENTS, lower_for_planning

HEADER = """# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32"), w: R.Tensor((3, 4), dtype="float32")):
        with R.dataflow():
"""


def lowered(body: str, ret: str):
    text = HEADER + "".join(f"            {ln.strip()}\n" for ln in body.strip().split("\n"))
    text += f"            R.output({ret})\n        return {ret}\n"
    out = lower_for_planning(memcore_py.parse(text))
    return out, {b.var.name: b.value for b in out["main"].body.blocks[0].bindings}


def test_ops_become_call_tir_of_signature_only_kernels():
    out, b = lowered("""
        a = R.matmul(x, w)
        c = R.permute_dims(a, axes=[1, 0])
        d = R.astype(c, dtype="float16")
        e = R.exp(d)
    """, "e")
    assert b["a"].op.name == "relax.call_tir" and [v.name for v in b["a"].args[1].fields] == ["x", "w"]
    assert [b[n].args[0].name for n in "acde"] == ["matmul", "transpose", "cast", "tir_exp"]
    k = out["matmul"]
    assert isinstance(k, PrimFunc) and k.text is None and k.private
    assert [(p.dtype, tuple(d.value for d in p.shape)) for p in k.params] == [
        ("float32", (2, 3)), ("float32", (3, 4)), ("float32", (2, 4))]


def test_reshape_inside_the_block_is_a_view_but_an_output_gets_a_kernel():
    _, b = lowered("""
        a = R.reshape(x, R.shape([3, 2]))
        c = R.reshape(a, R.shape([6]))
    """, "c")
    assert b["a"].op.name == "relax.reshape"  # DataflowVar: view of x
    assert b["c"].op.name == "relax.call_tir"  # output var: its own allocation


def test_unit_dim_moves_are_views_real_transposes_are_not():
    _, b = lowered("""
        a = R.expand_dims(x, axis=[0])
        c = R.permute_dims(a, axes=[1, 0, 2])
        d = R.permute_dims(c, axes=[2, 1, 0])
        e = R.broadcast_to(d, R.shape([1, 3, 1, 2]))
        f = R.broadcast_to(e, R.shape([4, 3, 1, 2]))
    """, "f")
    # a: (1, 2, 3); c: (2, 1, 3) moves only the unit dim; d: (3, 1, 2) swaps 2 and 3
    assert [b[n].op.name for n in "acdef"] == [
        "relax.reshape", "relax.reshape", "relax.call_tir", "relax.reshape", "relax.call_tir"]


def test_scalar_constants_are_folded_and_shape_only_ops_read_nothing():
    _, b = lowered("""
        a = R.add(x, R.const(1.0, "float32"))
        c = R.multiply(R.const(2.0, "float32"), a)
        d = R.zeros_like(c)
        e = R.concat((a, c, d), axis=0)
    """, "e")
    assert [v.name for v in b["a"].args[1].fields] == ["x"]
    assert [v.name for v in b["c"].args[1].fields] == ["a"]
    # zeros_like reads no input: TVM's FoldConstant evaluates its kernel (6 elements), the
    # constant replaces d where it is used, and d's binding, now unused, is removed
    # (FoldConstant ends with RemoveAllUnused)
    assert "d" not in b
    fields = b["e"].args[1].fields
    assert [getattr(v, "name", None) for v in fields] == ["a", "c", None]
    assert type(fields[2]) is Constant and fields[2].data is None and fields[2].ty.shape[0].value == 2


def test_kernels_of_constants_fold_as_tvms_fold_constant():
    """A kernel whose inputs are all constants becomes a constant (any size); one without
    inputs only up to MAX_FOLD_ELEMENTS output elements (TVM's ShouldBeFolded)."""
    _, b = lowered("""
        a = R.zeros(R.shape([32, 32]), dtype="float32")
        c = R.zeros(R.shape([33, 32]), dtype="float32")
        d = R.exp(a)
        e = R.concat((d, c), axis=0)
    """, "e")
    assert MAX_FOLD_ELEMENTS == 32 * 32
    assert "a" not in b and "d" not in b  # folded, and their bindings unused after folding
    assert b["c"].op.name == "relax.call_tir" and b["e"].op.name == "relax.call_tir"
    d, c = b["e"].args[1].fields
    assert type(d) is Constant and [x.value for x in d.ty.shape] == [32, 32] and c.name == "c"


def test_kernels_are_shared_per_signature_and_named_apart():
    out, b = lowered("""
        a = R.exp(x)
        c = R.exp(a)
        d = R.exp(w)
        t = (c, d)
    """, "t")
    assert b["a"].args[0] is b["c"].args[0]
    assert b["d"].args[0].name == "tir_exp1"
    assert isinstance(out["tir_exp1"], PrimFunc)


def test_tuple_results_and_bad_input():
    _, b = lowered("""
        s = R.split(x, indices_or_sections=[1], axis=0)
        a = s[0]
    """, "a")
    assert b["s"].op.name == "relax.call_tir" and len(b["s"].ty_args[0].fields) == 2
    with pytest.raises(PassError, match="IRModule"):
        lower_for_planning("text")


def test_calls_that_are_already_kernels_are_kept():
    text = """# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32")):
        a = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        return a
"""
    mod = memcore_py.parse(text)
    assert lower_for_planning(mod) is mod
    assert isinstance(Call, type)


def test_high_level_detection():
    from memcore_py.examples.models import list_highlevel_models, list_models, load_highlevel_model, load_model
    from memcore_py.transform.lower_for_planning import has_high_level_calls

    assert not any(has_high_level_calls(load_model(n)) for n in list_models())  # lowered: R.reshape views only
    assert all(has_high_level_calls(load_highlevel_model(n)) for n in list_highlevel_models())


def test_high_level_detection_refuses_a_non_module():
    from memcore_py.transform.lower_for_planning import has_high_level_calls

    with pytest.raises(PassError, match="IRModule"):
        has_high_level_calls("text")
