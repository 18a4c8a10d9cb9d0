"""Oracle: the modules memcore's TVM-native passes write can be compiled by TVM.

``tvm.ir.assert_structural_equal`` does not look at a GlobalVar's type, yet relax's
normalizer rejects a call of a GlobalVar that has none. So:

1. every GlobalVar of the native pass's output (the new PrimFunc copies included) has the
   type TVM's own pass gives it, on random programs;
2. a torch-free model through memcore's DataflowUseInplaceCalls builds with
   ``tvm.compile(target="llvm")`` and TVM's VM gives the outputs of TVM's own pass's module;
3. AttachAttrLayoutFreeBuffers' copy of a legalized embedding lookup (``take``) is TVM's
   copy, body included (TVM's script parser reads that body's region extent back as int32).
"""
from __future__ import annotations

import numpy as np
import pytest

tvm = pytest.importorskip("tvm")
from tvm import relax  # noqa: E402

import memcore_py.tvm as mtvm  # noqa: E402
from memcore_py.testing.inplace_programs import random_inplace_program  # noqa: E402
from memcore_py.testing.layout_free_programs import random_layout_free_program  # noqa: E402
from _helpers import tvm_from_source  # noqa: E402

pytestmark = pytest.mark.oracle

SHAPE = (4, 8)


def assert_global_var_types_equal(ours, theirs):
    """Same GlobalVar names, and each GlobalVar typed as TVM's (its function's type)."""
    mine = {g.name_hint: g for g in ours.get_global_vars()}
    want = {g.name_hint: g for g in theirs.get_global_vars()}
    assert sorted(mine) == sorted(want)
    for name, g in want.items():
        try:
            tvm.ir.assert_structural_equal(mine[name].ty, g.ty)
        except ValueError as exc:
            raise AssertionError(f"GlobalVar {name!r} has type {mine[name].ty}; TVM's has {g.ty}") from exc


def added_names(out, m) -> set:
    return {g.name_hint for g in out.get_global_vars()} - {g.name_hint for g in m.get_global_vars()}


# ------------------------------------------------------------------------------ GlobalVar types
@pytest.mark.parametrize("seed", [0, 1, 4, 8])
@pytest.mark.parametrize("tvm_compat", [False, True])
def test_inplace_copies_have_the_global_var_types_tvm_gives(seed, tvm_compat):
    m = tvm_from_source(random_inplace_program(seed))
    ours = mtvm.DataflowUseInplaceCalls(tvm_compat=tvm_compat)(m)
    theirs = relax.transform.DataflowUseInplaceCalls()(m)
    assert added_names(ours, m)  # the program makes in-place copies
    assert_global_var_types_equal(ours, theirs)


@pytest.mark.parametrize("seed", [0, 2, 5, 9])
@pytest.mark.parametrize("tvm_compat", [False, True])
def test_layout_free_copies_have_the_global_var_types_tvm_gives(seed, tvm_compat):
    m = tvm_from_source(random_layout_free_program(seed))
    ours = mtvm.AttachAttrLayoutFreeBuffers(tvm_compat=tvm_compat)(m)
    theirs = relax.transform.AttachAttrLayoutFreeBuffers()(m)
    assert added_names(ours, m)  # the program makes layout-free copies
    assert_global_var_types_equal(ours, theirs)


# ------------------------------------------------------------------------------ VM execution
def elementwise_module():
    """``relu(x * y) + x`` in high-level Relax: the relu and the add can run in place."""
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType(SHAPE, "float32"))
    y = relax.Var("y", relax.TensorType(SHAPE, "float32"))
    with bb.function("main", [x, y]):
        with bb.dataflow():
            h = bb.emit(relax.op.nn.relu(relax.op.multiply(x, y)))
            out = bb.emit_output(relax.op.add(h, x))
        bb.emit_func_output(out)
    return bb.get()


def run_on_vm(mod, inputs):
    ex = tvm.compile(mod, target="llvm")
    vm = relax.VirtualMachine(ex, tvm.cpu())
    return vm["main"](*[tvm.runtime.tensor(a) for a in inputs]).numpy()


def test_inplace_output_compiles_and_runs_like_tvms():
    m = elementwise_module()
    ours = mtvm.DataflowUseInplaceCalls()(m)
    theirs = relax.transform.DataflowUseInplaceCalls()(m)
    assert added_names(ours, m) == added_names(theirs, m) == {"relu_inplace", "add_inplace"}
    rng = np.random.default_rng(3)
    inputs = [rng.standard_normal(SHAPE).astype("float32") for _ in range(2)]
    want = run_on_vm(theirs, inputs)
    got = run_on_vm(ours, inputs)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, np.maximum(inputs[0] * inputs[1], 0) + inputs[0])


# ------------------------------------------------------------------------------ layout-free copies
def embedding_module():
    """``matmul(take(emb, ids), w)`` with ``num_input=1`` (``emb`` and ``w`` are weights),
    legalized: the PrimFuncs have real bodies."""
    bb = relax.BlockBuilder()
    ids = relax.Var("ids", relax.TensorType((8,), "int32"))
    emb = relax.Var("emb", relax.TensorType((100, 16), "float32"))
    w = relax.Var("w", relax.TensorType((16, 16), "float32"))
    with bb.function("main", [ids, emb, w], attrs={"num_input": 1}):
        with bb.dataflow():
            h = bb.emit(relax.op.take(emb, ids, axis=0, mode="fast"))
            out = bb.emit_output(relax.op.matmul(h, w))
        bb.emit_func_output(out)
    return relax.transform.LegalizeOps()(bb.get())


def test_layout_free_copy_of_an_embedding_lookup_is_tvms_copy():
    m = embedding_module()
    ours = mtvm.AttachAttrLayoutFreeBuffers()(m)
    theirs = relax.transform.AttachAttrLayoutFreeBuffers()(m)
    assert {"take1", "matmul1"} <= added_names(ours, m)
    tvm.ir.assert_structural_equal(ours, theirs)
    assert_global_var_types_equal(ours, theirs)
