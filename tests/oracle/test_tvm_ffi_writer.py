"""Oracle: the compiled writer of TVM objects (memcore_py.tvm._ffi_writer) against the
Python-API writer it speeds up, on TVM 0.27's own objects.

``to_tvm`` builds the bindings of every block through tvm_ffi's C API and hands the rest to
the Python writer. Both must give the same ``tvm.IRModule`` (``tvm.ir.structural_equal``):
on every real model, on random programs, and on the write-backs of the native passes (where
most bindings are reused by address and only the pass's new ones are built). The compiled
path must actually be taken, a constructor TVM refuses must raise a typed error with TVM's
message, and the objects a ``Keep`` owns must be released with it.
"""
from __future__ import annotations

import gc

import pytest

tvm = pytest.importorskip("tvm")

from memcore_py import parse  # noqa: E402
from memcore_py.examples.models import list_models, model_text  # noqa: E402
from memcore_py.ir.memo import MEMO  # noqa: E402
from memcore_py.testing import random_lowered_module  # noqa: E402
from memcore_py.transform import KillAfterLastUse, StaticPlanBlockMemory  # noqa: E402
from memcore_py.tvm import TVMConversionError, _ffi_writer  # noqa: E402
from memcore_py.tvm._api import tvm_api  # noqa: E402
from memcore_py.tvm.from_tvm import _Reader  # noqa: E402
from memcore_py.tvm.to_tvm import _Writer  # noqa: E402
from _helpers import tvm_from_source  # noqa: E402

pytestmark = pytest.mark.oracle


class _Counting(_Writer):
    """The writer with a count of the bindings the Python API wrote."""

    def __init__(self, *args, compiled=True, **kwargs):
        super().__init__(*args, **kwargs)
        self.compiled_blocks = compiled
        self.declined = 0

    def binding_addr(self, bd):
        self.declined += 1
        return super().binding_addr(bd)


def write(mod, compiled, reuse=None, keep=None):
    w = _Counting(tvm_api(), mod, reuse, {} if reuse is not None else None, keep, compiled=compiled)
    return w.module(mod), w


def n_bindings(mod):
    return sum(len(b.bindings) for f in mod.functions.values() if hasattr(f, "body") for b in f.body.blocks)


@pytest.mark.parametrize("name", list_models())
def test_compiled_writer_equals_python_writer_on_real_models(name):
    mod = parse(model_text(name))
    fast, w = write(mod, compiled=True)
    slow, _ = write(mod, compiled=False)
    tvm.ir.assert_structural_equal(fast, slow)
    tvm.ir.assert_structural_equal(fast, tvm_from_source(model_text(name)))
    assert w.declined < n_bindings(mod) / 2, f"{w.declined} of {n_bindings(mod)} bindings declined"


@pytest.mark.parametrize("seed", range(12))
def test_compiled_writer_on_random_programs(seed):
    mod = random_lowered_module(seed)
    fast, _ = write(mod, compiled=True)
    slow, _ = write(mod, compiled=False)
    tvm.ir.assert_structural_equal(fast, slow)


@pytest.mark.parametrize("name", list_models())
def test_compiled_write_back_of_native_passes(name):
    """The native passes' write-back: old bindings reused by address, new ones built here
    (StaticPlanBlockMemory's storages and allocations, KillAfterLastUse's kills)."""
    tmod = tvm_from_source(model_text(name))
    outs = []
    for compiled in (True, False):
        keep = _ffi_writer.Keep()
        keep.hold(tmod)
        reuse = {}
        mod = _Reader(tvm_api(), tmod, record=reuse).module(tmod)
        planned = KillAfterLastUse()(StaticPlanBlockMemory()(mod))
        out, w = write(planned, compiled, reuse, keep)
        if compiled:
            new = n_bindings(planned) - sum(1 for f in planned.functions.values() if hasattr(f, "body")
                                            for b in f.body.blocks for bd in b.bindings if bd in reuse)
            assert new > 0 and w.declined < new, f"{w.declined} of {new} new bindings declined"
        outs.append(out)
    tvm.ir.assert_structural_equal(outs[0], outs[1])
    tvm.ir.assert_structural_equal(outs[0], tvm.relax.transform.KillAfterLastUse()(
        tvm.relax.transform.StaticPlanBlockMemory()(tmod)))


def test_refused_constructor_raises_typed_error_with_tvms_message():
    """A call argument that is not an expression (a type's address standing for a leaf) makes
    TVM's ``ir.Call`` constructor refuse: a TVMConversionError carrying TVM's message."""
    from memcore_py.ir.expr import DataTypeImm

    mod = parse(model_text("resnet50"))
    w = _Writer(tvm_api(), mod)
    w.leaf_addrs[(DataTypeImm, "float32")] = w.ty_addr(None)  # the missing type: not an Expr
    with pytest.raises(TVMConversionError, match="TVM refused a call: .*Expr"):
        w.module(mod)


def test_object_at_rejects_what_is_not_an_address():
    _ffi_writer.init(tvm_api())
    with pytest.raises(Exception, match="object address"):
        _ffi_writer.object_at(0)
    x = tvm.relax.Var("x", tvm.relax.TensorType((2,), "float32"))
    assert _ffi_writer.object_at(x.__chandle__()).same_as(x)


def test_keep_releases_what_it_owns():
    """Objects built by the compiled writer are released with their Keep: after ``to_tvm``
    a built binding is referenced by its block and the test's wrapper only."""
    from memcore_py.tvm import to_tvm

    planned = KillAfterLastUse()(StaticPlanBlockMemory()(parse(model_text("resnet50"))))
    out = to_tvm(planned)
    gc.collect()
    b = next(b for b in out["main"].body.blocks[0].bindings if type(b.value).__name__ == "Call")
    assert _use_count(b.__chandle__()) == 2  # a reference leaked by a Keep would make 3
    assert _use_count(b.value.__chandle__()) == 2  # the binding's and the temporary wrapper's


def _use_count(address: int) -> int:
    """The strong reference count of the TVM object at ``address`` (header word, low 32 bits)."""
    import ctypes

    return ctypes.c_uint64.from_address(address).value & 0xFFFFFFFF


def test_converters_are_freed_when_the_pass_returns(monkeypatch):
    """Reader and writer hold no reference cycle: once a native pass that converted the module
    returns, its node map is referenced by the hand-off alone (a cycle would keep the map, and
    every TVM object its Keep owns, alive until the cyclic collector ran). The extractions are
    turned off, so that both passes convert."""
    import sys

    import memcore_py.tvm as mtvm
    from memcore_py.tvm import passes
    from memcore_py.tvm.passes import _HANDOFF

    monkeypatch.setattr(passes, "_extracting", lambda _api, _mod: False)
    tmod = tvm_from_source(model_text("resnet50"))
    was = gc.isenabled()
    gc.disable()
    try:
        mtvm.KillAfterLastUse()(mtvm.StaticPlanBlockMemory()(tmod))
        counts = sys.getrefcount(_HANDOFF.reuse), sys.getrefcount(_HANDOFF.keep)
        assert counts == (2, 2)  # the hand-off's and getrefcount's argument
    finally:
        if was:
            gc.enable()


def test_constant_shapes_and_types_are_shared_across_conversions_symbolic_ones_are_not():
    """A shape or tensor type whose dims are all integers is written once and shared by every
    conversion (it holds nothing of one module); one with a symbolic dim belongs to its module."""
    text = """
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, 8), dtype="float32"), y: R.Tensor(("n", 8), dtype="float32")) -> R.Shape:
        n = T.int64()
        s: R.Shape([4, 8]) = R.shape([4, 8])
        t: R.Shape([n, 8]) = R.shape([n, 8])
        return s
"""
    mod = parse(text)
    first, second = write(mod, compiled=True)[0], write(mod, compiled=True)[0]
    tvm.ir.assert_structural_equal(first, tvm_from_source(text))
    a, b = first["main"], second["main"]
    bind_a, bind_b = a.body.blocks[0].bindings, b.body.blocks[0].bindings
    assert bind_a[0].value.same_as(bind_b[0].value)  # R.shape([4, 8])
    assert a.params[0].ty.same_as(b.params[0].ty)  # R.Tensor((4, 8))
    assert not bind_a[1].value.same_as(bind_b[1].value)  # R.shape([n, 8]): n is this module's
    assert not a.params[1].ty.same_as(b.params[1].ty)


_ATTRS_TEXT = """
# from tvm.script import ir as I
# from tvm.script import relax as R
# from tvm.script import tirx as T

@I.ir_module
class Module:
    @T.prim_func(private=True)
    def add(A: T.handle, B: T.handle):
        T.evaluate(0)

    @R.function
    def main(x: R.Tensor((8,), dtype="float32")) -> R.Tensor((8,), dtype="float32"):
        R.func_attr({"relax.force_pure": True, "ATTR"})
        cls = Module
        a: R.Tensor((8,), dtype="float32") = R.builtin.alloc_tensor(R.shape([8]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        cls.add(x, a)
        b: R.Tensor((8,), dtype="float32") = R.builtin.alloc_tensor(R.shape([8]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        cls.add(a, b)
        return b
"""


@pytest.mark.parametrize("extra", ["", ', "relax.memory_plan_dynamic_func_output": True'])
def test_native_pass_writes_back_the_dict_attrs_it_read_unless_they_changed(extra):
    """A function rebuilt with the attrs it was read with gets the DictAttrs object it had;
    one whose attrs the pass changed (SPBM drops the Case-2 attribute) gets new ones, as TVM's.
    Its parameters' Array is written back the same way."""
    from memcore_py.tvm import StaticPlanBlockMemory as NativeSPBM

    tmod = tvm_from_source(_ATTRS_TEXT.replace(', "ATTR"', extra))
    out = NativeSPBM()(tmod)
    tvm.ir.assert_structural_equal(out, tvm.relax.transform.StaticPlanBlockMemory()(tmod))
    assert not out["main"].same_as(tmod["main"])  # the body changed
    assert out["main"].attrs.same_as(tmod["main"].attrs) == (extra == "")
    assert out["main"].params.same_as(tmod["main"].params)  # the parameters' Array, written back


def test_shared_tables_dropped_between_conversions_drop_their_addresses(monkeypatch):
    """The addresses of shared leaves, ops and types are dropped with the objects they point
    to: with the shared tables cleared before every conversion and nothing else holding the
    objects, repeated native passes still write TVM's plan (a stale address would point to a
    freed object)."""
    import importlib

    from memcore_py.tvm import KillAfterLastUse as NativeKALU
    from memcore_py.tvm import StaticPlanBlockMemory as NativeSPBM

    passes = importlib.import_module("memcore_py.tvm.passes")
    text = model_text("resnet50")
    expected = tvm.relax.transform.KillAfterLastUse()(tvm.relax.transform.StaticPlanBlockMemory()(
        tvm_from_source(text)))
    out = NativeSPBM()(tvm_from_source(text))  # fills the shared tables
    passes._HANDOFF.take(out)  # the hand-off holds the last module written: release it
    del out
    monkeypatch.setattr(MEMO, "max_entries", 0)  # every memo group is emptied at each trim
    for _ in range(3):
        out = NativeKALU()(NativeSPBM()(tvm_from_source(text)))
        tvm.ir.assert_structural_equal(out, expected)
        passes._HANDOFF.take(out)
        del out
        gc.collect()
