"""The TVM compatibility gate (memcore_py/tvm/compat.py): on an unsupported TVM version, a
layout that does not build, a layout that fails its self-check, or a forced portable path,
the native passes warn (once; not when forced) and still give TVM's own output without
taking a fast path; on the supported version they take it."""
from __future__ import annotations

import dataclasses
import warnings

import pytest

tvm = pytest.importorskip("tvm")

from tvm import relax  # noqa: E402

import memcore_py.tvm as mtvm  # noqa: E402
from memcore_py.examples.models import model_text  # noqa: E402
from memcore_py.tvm import _ffi_reader, compat, passes  # noqa: E402
from memcore_py.tvm._api import tvm_api  # noqa: E402
from _helpers import tvm_from_source  # noqa: E402

pytestmark = pytest.mark.oracle

MODEL = "llama_small"  # the smallest shipped model
EXTRACTIONS = ("static_plan_block_memory_extracted", "lower_alloc_tensor_extracted", "kill_after_last_use_extracted")

#: (class, field) of every field offset the compiled readers use (``_ffi_reader.Layout``)
LAYOUT_FIELDS = [
    ("Var", "name"), ("Var", "ty"), ("VarBinding", "var"), ("VarBinding", "value"), ("Call", "op"),
    ("Call", "args"), ("Call", "attrs"), ("Call", "ty_args"), ("ShapeExpr", "values"), ("IntImm", "value"),
    ("GenericConst", "value"), ("StringImm", "value"), ("TensorType", "shape"), ("TensorType", "dtype"),
    ("TensorType", "vdevice"), ("TensorType", "ndim"), ("ShapeType", "values"), ("ShapeType", "ndim"),
    ("TupleType", "fields"), ("DictAttrs", "__dict__"), ("Function", "attrs"), ("IRModule", "attrs"),
    ("IRModule", "global_infos"), ("IRModule", "functions"), ("GlobalVar", "name_hint"), ("Function", "body"),
    ("Tuple", "fields"), ("TupleGetItem", "tuple_value"), ("MatchCast", "value"), ("TupleGetItem", "index"),
    ("PrimType", "dtype"), ("ExternFunc", "global_symbol"), ("Function", "params"), ("Function", "ret_ty"),
    ("Function", "is_pure"), ("SeqExpr", "blocks"), ("SeqExpr", "body"), ("BindingBlock", "bindings"),
]


@pytest.fixture(autouse=True)
def fresh_gate(monkeypatch):
    """Each test decides anew (no forced portable path), and leaves no decision behind for
    other test files: the reset runs before the monkeypatches are undone and again after."""
    monkeypatch.delenv(compat.PORTABLE_ENV, raising=False)
    compat.reset()
    yield
    compat.reset()


@pytest.fixture(scope="module")
def inputs():
    """The model before StaticPlanBlockMemory, before LowerAllocTensor and before
    KillAfterLastUse (each made by TVM's own passes)."""
    mod = tvm_from_source(model_text(MODEL))
    planned = relax.transform.StaticPlanBlockMemory()(mod)
    lowered = relax.transform.LowerAllocTensor()(planned)
    return mod, planned, lowered


def _forbidden(*_args, **_kwargs):
    raise AssertionError("a fast path ran")


def _forbid_extractions(monkeypatch):
    """Make every extraction fail the pass that calls it."""
    for name in EXTRACTIONS:
        monkeypatch.setattr(passes, name, _forbidden)


def _forbid_fast_paths(monkeypatch):
    """Make every extraction and every construction of the compiled reader's layout fail the
    pass: all C reads of TVM objects go through a ``Layout``."""
    _forbid_extractions(monkeypatch)
    monkeypatch.setattr(_ffi_reader, "Layout", _forbidden)


def _assert_like_tvm(inputs):
    """memcore's three memory passes give exactly TVM's output on the model."""
    mod, planned, lowered = inputs
    tvm.ir.assert_structural_equal(mtvm.StaticPlanBlockMemory()(mod), relax.transform.StaticPlanBlockMemory()(mod))
    tvm.ir.assert_structural_equal(mtvm.LowerAllocTensor()(planned), relax.transform.LowerAllocTensor()(planned))
    tvm_kill = relax.transform.KillAfterLastUse()(lowered)
    tvm.ir.assert_structural_equal(mtvm.KillAfterLastUse(tvm_scoping=True)(lowered), tvm_kill)
    tvm.ir.assert_structural_equal(mtvm.KillAfterLastUse()(lowered), tvm_kill)


def _shift_offset(monkeypatch, cls, field, by):
    """Make TVM's reflection report ``cls.field`` ``by`` bytes off its real offset."""
    info = cls.__tvm_ffi_type_info__
    while not any(f.name == field for f in info.fields):
        info = info.parent_type_info
    monkeypatch.setattr(info, "fields",
                        [dataclasses.replace(f, offset=f.offset + by) if f.name == field else f for f in info.fields])


@pytest.mark.parametrize("version", ["0.27.0.post1", "0.27.0", "0.27.0.post2", "0.27.0+cu128"])
def test_a_release_of_the_supported_version_is_supported(version):
    assert compat.is_supported(version)


@pytest.mark.parametrize("version", ["0.27.1", "0.28.0", "0.26.0.post1", "0.27.0rc1", "0.28.dev0", "0.27", ""])
def test_other_versions_and_prereleases_are_not_supported(version):
    assert not compat.is_supported(version)


def test_unsupported_version_warns_once_and_runs_the_portable_path_like_tvm(monkeypatch, inputs):
    monkeypatch.setattr(tvm, "__version__", "0.28.0")
    _forbid_fast_paths(monkeypatch)
    mod = inputs[0]
    with pytest.warns(compat.TVMVersionWarning, match=r"TVM 0\.28\.0 .*0\.27\.0\.post1.*portable path"):
        out = mtvm.StaticPlanBlockMemory()(mod)
    tvm.ir.assert_structural_equal(out, relax.transform.StaticPlanBlockMemory()(mod))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # warned once: the next passes are silent
        _assert_like_tvm(inputs)
    assert compat.fast_layout(tvm_api()) is None


def test_layout_that_does_not_build_warns_and_runs_the_portable_path_like_tvm(monkeypatch, inputs):
    def renamed_field(_api):
        raise KeyError("ty")

    _forbid_extractions(monkeypatch)
    monkeypatch.setattr(_ffi_reader, "Layout", renamed_field)
    with pytest.warns(compat.TVMLayoutWarning, match="raised KeyError: 'ty'.*portable path"):
        _assert_like_tvm(inputs)
    assert compat.fast_layout(tvm_api()) is None


def test_layout_failing_its_self_check_warns_and_runs_the_portable_path_like_tvm(monkeypatch, inputs):
    _shift_offset(monkeypatch, tvm_api().TensorType, "vdevice", 8)
    _forbid_extractions(monkeypatch)
    with pytest.warns(compat.TVMLayoutWarning, match=r"self-check failed: TensorType\.vdevice"):
        _assert_like_tvm(inputs)
    assert compat.fast_layout(tvm_api()) is None


@pytest.mark.parametrize("cls, field", LAYOUT_FIELDS, ids=[f"{c}.{f}" for c, f in LAYOUT_FIELDS])
@pytest.mark.parametrize("by", [8, -8])
def test_layout_self_check_rejects_a_wrong_offset_of_every_field(monkeypatch, cls, field, by):
    api = tvm_api()
    assert _ffi_reader.Layout(api).ok
    _shift_offset(monkeypatch, getattr(api, cls), field, by)
    layout = _ffi_reader.Layout(api)
    assert not layout.ok
    assert "does not read what TVM's API reads" in layout.failure


BINARY = [name for name, _node in _ffi_reader.BINARY_PRIM_NODES]


@pytest.mark.parametrize("field", ["a", "b"])
@pytest.mark.parametrize("by", [8, -8])
def test_layout_self_check_rejects_a_wrong_offset_of_the_binary_prim_exprs(monkeypatch, field, by):
    """The seven binary PrimExprs' operands: all shifted alike, the self-check reads wrong
    operands; one class shifted alone, the layout refuses to build."""
    api = tvm_api()
    assert _ffi_reader.Layout(api).ok
    for name in BINARY:
        _shift_offset(monkeypatch, getattr(api.prim, name), field, by)
    layout = _ffi_reader.Layout(api)
    assert not layout.ok
    assert "does not read what TVM's API reads" in layout.failure


@pytest.mark.parametrize("name", BINARY[1:])
def test_layout_refuses_binary_prim_exprs_whose_operands_sit_apart(monkeypatch, name):
    api = tvm_api()
    _shift_offset(monkeypatch, getattr(api.prim, name), "a", 8)
    with pytest.raises(RuntimeError, match=f"{name}'s operands are not at Add's offsets"):
        _ffi_reader.Layout(api)


def test_forced_portable_path_is_silent_and_like_tvm(monkeypatch, inputs):
    monkeypatch.setenv(compat.PORTABLE_ENV, "1")
    _forbid_fast_paths(monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _assert_like_tvm(inputs)


def test_supported_version_takes_the_fast_paths_without_warning(monkeypatch, inputs):
    calls = {}

    def spy(name):
        real = getattr(passes, name)

        def extraction(*args):
            out = real(*args)
            calls[name] = out is not None
            return out
        return extraction

    for name in EXTRACTIONS:
        monkeypatch.setattr(passes, name, spy(name))
    assert compat.is_supported(tvm.__version__)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _assert_like_tvm(inputs)
    assert calls == dict.fromkeys(EXTRACTIONS, True)  # each ran, and none declined
    assert compat.fast_layout(tvm_api()) is not None
