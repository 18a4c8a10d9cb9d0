"""Oracle: the compiled reader of TVM objects (memcore_py.tvm._ffi_reader) against the
Python-API reader it speeds up, on TVM 0.27's own objects.

``from_tvm`` reads most bindings straight from TVM's memory (C ABI + reflection offsets) and
hands the rest to the Python reader. Both must give the same module: every real model (lowered
and high-level, static and with a symbolic sequence length) and random programs are read with
the compiled reader and with the Python reader alone (``layout=None``), and the two results
must be structurally equal -- and equal to memcore's parse of TVM's text. The compiled path
must also actually be taken (a reader that declined every binding would pass the equality).
"""
from __future__ import annotations

import pytest

tvm = pytest.importorskip("tvm")
from tvm import relax  # noqa: E402

from memcore_py import parse  # noqa: E402
from memcore_py.examples.models import highlevel_model_text, list_highlevel_models, list_models, model_text  # noqa: E402
from memcore_py.ir import assert_structural_equal  # noqa: E402
from memcore_py.testing import random_lowered_module  # noqa: E402
from memcore_py.tvm import _ffi_reader  # noqa: E402
from memcore_py.tvm._api import tvm_api  # noqa: E402
from memcore_py.tvm.from_tvm import _layout, _Reader  # noqa: E402
from _helpers import tvm_from_source  # noqa: E402

pytestmark = pytest.mark.oracle


def read(tmod, compiled: bool, record=None):
    """``from_tvm``'s reader with or without the compiled path; also returns how many
    bindings went to the Python reader."""
    r = _Reader(tvm_api(), tmod, record=record)
    if not compiled:
        r.layout = None
    slow = r.binding
    count = [0]

    def counted(bd):
        count[0] += 1
        return slow(bd)

    r.binding = counted
    return r.module(tmod), count[0]


def bindings_of(mod) -> int:
    return sum(len(blk.bindings) for f in mod.functions.values() if hasattr(f, "body") for blk in f.body.blocks)


def test_layout_passes_its_abi_self_check():
    layout = _layout(tvm_api())
    assert layout is not None and layout.ok


def _dynamic_texts():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    from bench_small_and_dynamic import SEQUENCE_LENGTH, dynamic_text

    for name in sorted(SEQUENCE_LENGTH):
        yield f"{name}-bounded", dynamic_text(name, 1024)
        yield f"{name}-unbounded", dynamic_text(name, None)


CASES = [(f"lowered-{n}", lambda n=n: model_text(n)) for n in list_models()]
CASES += [(f"highlevel-{n}", lambda n=n: highlevel_model_text(n)) for n in list_highlevel_models()]


@pytest.mark.parametrize("key,text", CASES, ids=[k for k, _ in CASES])
def test_compiled_reader_equals_python_reader(key, text):
    tmod = tvm_from_source(text())
    fast, declined = read(tmod, compiled=True, record={})
    slow, everything = read(tmod, compiled=False)
    assert_structural_equal(fast, slow)
    assert everything == bindings_of(slow)
    if key.startswith("lowered-"):  # lowered models: nearly every binding is read compiled
        assert declined <= 0.1 * everything, f"{declined} of {everything} bindings declined"


def test_compiled_reader_on_dynamic_shapes():
    for key, text in _dynamic_texts():
        tmod = tvm_from_source(text)
        fast, declined = read(tmod, compiled=True, record={})
        slow, everything = read(tmod, compiled=False)
        assert_structural_equal(fast, slow)
        assert_structural_equal(fast, parse(tmod.script()))
        assert declined <= 0.1 * everything, f"{key}: {declined} of {everything} bindings declined"


@pytest.mark.parametrize("seed", range(12))
def test_compiled_reader_on_random_programs(seed):
    from memcore_py.tvm import to_tvm

    tmod = to_tvm(random_lowered_module(seed))
    fast, _ = read(tmod, compiled=True)
    slow, _ = read(tmod, compiled=False)
    assert_structural_equal(fast, slow)


def test_record_maps_compiled_bindings_to_their_tvm_objects():
    """The native passes write unchanged nodes back as the TVM objects they were read from:
    the compiled path must record binding, variable and value like the Python path."""
    tmod = tvm_from_source(model_text("resnet50"))
    record = {}
    mod, _ = read(tmod, compiled=True, record=record)
    tf = tmod["main"]
    f = mod["main"]
    for blk, tblk in zip(f.body.blocks, tf.body.blocks):
        for b, tb in zip(blk.bindings, tblk.bindings):  # records hold object addresses
            assert record[b] == tb.__chandle__()
            assert record[b.var] == tb.var.__chandle__()
            assert record[b.value] == tb.value.__chandle__()
    for p, tp in zip(f.params, tf.params):
        assert record[p] == tp.__chandle__()


def test_long_and_short_names_and_big_dims():
    """Names stored inline (<= 7 bytes) and as string objects, and dims up to int64's range."""
    big = 2**62
    x = relax.Var("x", relax.TensorType((big, 1), "float32"))
    long_name = "a_variable_name_longer_than_seven_bytes"
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        y = bb.emit(relax.op.add(x, x), name_hint=long_name)
        z = bb.emit(relax.op.multiply(y, y), name_hint="z")
        bb.emit_func_output(z)
    tmod = bb.get()
    fast, _ = read(tmod, compiled=True)
    slow, _ = read(tmod, compiled=False)
    assert_structural_equal(fast, slow)
    names = [b.var.name for b in fast["main"].body.blocks[0].bindings]
    assert names == [long_name, "z"]
    assert fast["main"].params[0].ty.shape[0].value == big


def test_read_dims_declines_what_it_cannot_read():
    """A dim whose variable was never read (``n * 2``) is not read by the compiled path: None,
    not a guess; once the Python reader has read ``n``, the compiled path reads the same dims,
    composite ones included; a node kind it does not read (``truncdiv``) still declines."""
    n = tvm.tirx.Var("n", "int64")
    shape = relax.ShapeExpr([n * 2, 3])
    r = _Reader(tvm_api(), tvm.IRModule({}))
    assert _ffi_reader.read_dims(r.layout, shape.values.__chandle__(), r.ints, r.prims) is None
    dims = r.prims_of(shape.values)  # the Python reader reads it
    from memcore_py.ir.prim import IntImm, Mul, PrimVar

    d0 = dims[0]
    assert type(d0) is Mul and type(d0.a) is PrimVar and d0.a.name == "n"
    assert type(d0.b) is IntImm and d0.b.value == 2 and dims[1].value == 3
    again = _ffi_reader.read_dims(r.layout, shape.values.__chandle__(), r.ints, r.prims)
    assert again is not None and [str(d) for d in again] == [str(d) for d in dims]
    assert type(again[0]) is Mul and again[0].a is d0.a
    other = relax.ShapeExpr([tvm.tirx.truncdiv(n, 2)])
    assert _ffi_reader.read_dims(r.layout, other.values.__chandle__(), r.ints, r.prims) is None


@pytest.mark.parametrize("name", [name for name, _node in _ffi_reader.BINARY_PRIM_NODES])
def test_compiled_reader_reads_every_binary_prim_expr_as_the_python_reader(name):
    n, m = tvm.tirx.Var("n", "int64"), tvm.tirx.Var("m", "int64")
    node = getattr(tvm_api().prim, name)
    shape = relax.ShapeExpr([node(n, node(m, tvm.tirx.IntImm("int64", 3))), n])
    r = _Reader(tvm_api(), tvm.IRModule({}))
    slow = r.prims_of(shape.values)
    fast = _ffi_reader.read_dims(r.layout, shape.values.__chandle__(), r.ints, r.prims)
    assert fast is not None and fast is not slow
    assert [str(d) for d in fast] == [str(d) for d in slow]
    assert type(fast[0]) is type(slow[0]) and type(fast[0].b) is type(slow[0].b)


def test_native_pass_node_map_is_not_tracked_by_the_gc():
    """The node map a native pass hands to the next one holds only untracked objects (the
    collector's pass over them cost a fifth of a native pass); the output module itself is
    the user's and stays tracked."""
    import gc

    from memcore_py.transform import StaticPlanBlockMemory
    from memcore_py.tvm.passes import _HANDOFF, apply_memcore_pass

    tmod = tvm_from_source(model_text("resnet50"))
    out = apply_memcore_pass(StaticPlanBlockMemory(), tmod)  # the full conversion (a native pass chain's)
    assert _HANDOFF.tvm_mod.__chandle__() == out.__chandle__() and gc.is_tracked(out)
    tracked = [k for k, v in _HANDOFF.reuse.items() if gc.is_tracked(k) or gc.is_tracked(v)]
    assert not tracked, f"{len(tracked)} of {len(_HANDOFF.reuse)} entries still tracked"


def test_function_added_in_place_between_native_passes_is_read():
    """The hand-over keys on the module's function map: adding a function in place copies the
    map, so the next native pass reads the module again and sees the new function."""
    import memcore_py.tvm as mtvm
    from memcore_py.transform import StaticPlanBlockMemory
    from memcore_py.tvm.passes import _HANDOFF, apply_memcore_pass

    tmod = tvm_from_source(model_text("resnet50"))
    planned = apply_memcore_pass(StaticPlanBlockMemory(), tmod)  # the full conversion: handed over
    assert _HANDOFF.holds(planned)
    planned[tvm.ir.GlobalVar("extra")] = tmod["main"]  # the unplanned function, under a new name
    ours = mtvm.KillAfterLastUse()(planned)
    theirs = relax.transform.KillAfterLastUse()(planned)
    assert "extra" in [gv.name_hint for gv in ours.functions]
    tvm.ir.assert_structural_equal(ours["extra"], theirs["extra"])


ATTRS_FUNCTION_TEXT = ("# from tvm.script import relax as R\n\n@R.function\n"
                       "def main(x: R.Tensor((4,), dtype=\"float32\")) -> R.Tensor((4,), dtype=\"float32\"):\n"
                       "    return x\n")

ATTR_CASES = [
    {},
    {"relax.force_pure": True},
    {"global_symbol": "main", "relax.force_pure": False},
    {"n": -(1 << 40), "x": 0.25, "s": "", "global_symbol": "a_rather_long_symbol_name_of_32_b"},
    {"a": 1, "b": 2, "c": 3, "d": 4, "e": 5},  # five entries: TVM's dense map layout
    {"tir_var_upper_bound": {"n": 1024}},  # a nested map
    {"tir_var_upper_bound": {f"s{i}": 1 << (i + 3) for i in range(6)}, "global_symbol": "main",
     "tir_var_lower_bound": {"s0": 1}, "num_input": 1, "relax.force_pure": True},  # dense, nested, dense
    {"k": [1, 2]},  # an array value
    {"tir_var_upper_bound": {"n": "int32"}},  # replaced below by an int32 IntImm
]


def _readable(value, depth=0) -> bool:
    """Whether the compiled reader reads ``value`` (as the Python reader gives it)."""
    if type(value) in (bool, int, float, str):
        return True
    return type(value) is dict and depth < 2 and all(_readable(v, depth + 1) for v in value.values())


@pytest.mark.parametrize("attrs", ATTR_CASES, ids=[str(i) for i in range(len(ATTR_CASES))])
def test_compiled_attrs_read_equals_python_read_or_declines(attrs):
    from memcore_py.tvm.values import dict_attrs_from_tvm

    api = tvm_api()
    layout = _layout(api)
    if attrs.get("tir_var_upper_bound") == {"n": "int32"}:
        attrs = {"tir_var_upper_bound": {"n": api.IntImm("int32", 7)}}
    func = tvm_from_source(ATTRS_FUNCTION_TEXT)
    if attrs:
        func = func.with_attrs(attrs)
    mod = tvm.IRModule({"main": func}, attrs=api.ir.make_node("ir.DictAttrs", **attrs) if attrs else None)
    tf = mod["main"]
    for got, tvm_attrs in ((_ffi_reader.function_attrs(layout, tf.__chandle__()), tf.attrs),
                           (_ffi_reader.module_attrs(layout, mod.__chandle__()), mod.attrs)):
        expected = dict_attrs_from_tvm(tvm_attrs, "f")
        if got is not None:  # read as the Python API reads it, in its order, with its types
            assert got == expected and list(got) == list(expected)
            assert [type(v) for v in got.values()] == [type(v) for v in expected.values()]
            for k, v in got.items():
                if type(v) is dict:
                    assert list(v) == list(expected[k])
                    assert [type(x) for x in v.values()] == [type(x) for x in expected[k].values()]
        else:  # declined: a value it does not read (an array, an IntImm of another dtype)
            assert not all(_readable(v) for v in expected.values())
    # from_tvm gives the Python reader's module either way
    assert_structural_equal(read(mod, compiled=True)[0], read(mod, compiled=False)[0])


@pytest.mark.parametrize("key,text", CASES[:3] + [("one-function", lambda: ATTRS_FUNCTION_TEXT)],
                         ids=[k for k, _ in CASES[:3]] + ["one-function"])
def test_module_functions_read_compiled_equal_the_python_api(key, text):
    """The compiled read of a module's function map (TVM's dense layout past 4 entries, the
    small one below) gives every (GlobalVar, function) pair the Python API gives, in its
    order."""
    tmod = tvm_from_source(text())
    if isinstance(tmod, relax.Function):
        tmod = tvm.IRModule({"main": tmod})
    got = [(e.kind, e.name, e.gvar, e.func)
           for e in _ffi_reader.module_functions(_layout(tvm_api()), tmod.__chandle__())]
    want = [(1 if isinstance(f, relax.Function) else 0, str(gv.name_hint), gv.__chandle__(), f.__chandle__())
            for gv, f in tmod.functions.items()]
    assert got == want


def test_call_arguments_and_params_decline_what_they_cannot_read():
    """The compiled readers of call arguments and parameters return None for a position out of
    range, a binding that is not a call's, or an object of the wrong class at the address;
    the writer of a rebuilt call refuses a binding that is not a call's (ValueError)."""
    from memcore_py.tvm import _ffi_writer

    text = ("# from tvm.script import relax as R\n\n@R.function\n"
            "def f(x: R.Tensor((4,), \"float32\")) -> R.Tensor((4,), \"float32\"):\n"
            "    y: R.Tensor((4,), \"float32\") = R.add(x, x)\n    z: R.Tensor((4,), \"float32\") = y\n    return z\n")
    f = tvm_from_source(text)
    layout = _layout(tvm_api())
    bindings = f.body.blocks[0].bindings
    arr = bindings.__chandle__()
    got = _ffi_reader.call_arguments(layout, arr, [0])[0]
    assert got.binding == bindings[0].__chandle__() and got.args == [a.__chandle__() for a in bindings[0].value.args]
    assert got.tuple_fields is None and got.constant_fields == []
    for positions in ([2], [-1], [1]):  # out of range, out of range, a rebinding (no call)
        assert _ffi_reader.call_arguments(layout, arr, positions) is None
    assert _ffi_reader.call_arguments(layout, f.__chandle__(), [0]) is None  # not an Array
    assert _ffi_reader.function_params(layout, f.__chandle__()) == [p.__chandle__() for p in f.params]
    assert _ffi_reader.function_params(layout, arr) is None
    keep = _ffi_writer.Keep()
    with pytest.raises(ValueError, match="binding_with_call_args"):
        _ffi_writer.binding_with_call_args(layout, keep, bindings[1].__chandle__(), [])
    with pytest.raises(ValueError, match="function_with_body"):
        _ffi_writer.function_with_body(layout, keep, arr, [], bindings[1].value.__chandle__())
    body = f.body.body.__chandle__()
    with pytest.raises(ValueError, match=r"function_with_body: blocks\[0\] is 0"):
        _ffi_writer.function_with_body(layout, keep, f.__chandle__(), [0], body)
    with pytest.raises(TypeError, match=r"function_with_body: blocks\[1\] must be an object address"):
        _ffi_writer.function_with_body(layout, keep, f.__chandle__(), [f.body.blocks[0].__chandle__(), "b"], body)


@pytest.mark.parametrize("name", list_models()[:2])
def test_planned_module_read_again_is_read_compiled_entirely(name):
    """After TVM's own memory passes, every storage, allocation and kill binding (storages
    are typed ``R.Object``, a new type object per binding) is read compiled once the ops and
    leaves have been seen; and the compiled read equals the Python read."""
    rt = relax.transform
    tmod = rt.KillAfterLastUse()(rt.LowerAllocTensor()(rt.StaticPlanBlockMemory()(
        tvm_from_source(model_text(name)))))
    read(tmod, compiled=True, record={})
    r = _Reader(tvm_api(), tmod, record={})
    slow, declined = r.binding, []
    r.binding = lambda bd: declined.append(bd) or slow(bd)
    fast = r.module(tmod)
    memory_ops = [bd for bd in declined if isinstance(bd.value, relax.Call) and isinstance(bd.value.op, tvm.ir.Op)
                  and bd.value.op.name.startswith(("relax.memory.", "relax.vm."))]
    assert memory_ops == []
    assert len(declined) < 5  # a tuple or a call with a constant argument: read by the Python API
    assert_structural_equal(fast, read(tmod, compiled=False)[0])


def _signature_cases():
    from tvm import tirx

    n, m, k = (tirx.Var(c, "int64") for c in "nmk")
    tensor = relax.TensorType
    api = tvm_api()
    return [
        ([tensor((n, 4), "float32"), tensor((m * 2, n + k), "float16")], tensor((k,), "float32")),
        ([relax.TupleType([tensor((n,), "float32"), relax.ShapeType([m, 3])])], relax.ShapeType(None, 2)),
        ([tensor(None, "float32", None, 2)], relax.AnyType()),
        ([relax.FuncType([tensor((k, n), "float32")], tensor((m,), "float32"))],
         tensor((tirx.floordiv(n, 2) + tirx.max(m, k),), "float32")),
        ([api.PrimType("int64"), tensor((n, n, m), "int8")], tensor((tirx.min(m - n, k * 3),), "int8")),
        ([tensor((tirx.Var("n", "int64"), n), "float32")], tensor((n,), "float32")),  # two vars named n
    ]


@pytest.mark.parametrize("case", range(6))
def test_signature_var_names_equal_tvms_tir_vars_in_type(case):
    params_ty, ret_ty = _signature_cases()[case]
    params = [relax.Var(f"p{i}", t) for i, t in enumerate(params_ty)]
    func = relax.Function(params, relax.SeqExpr([], params[0]), ret_ty)
    want = [str(v.name) for v in relax.analysis.tir_vars_in_type(func.ty)]
    assert _ffi_reader.signature_var_names(_layout(tvm_api()), func.__chandle__()) == want


def test_signature_var_names_decline_what_they_do_not_read():
    from tvm import tirx

    layout = _layout(tvm_api())
    shape = relax.Var("s", relax.ShapeType(None, 2))
    x = relax.Var("x", relax.TensorType(shape, "float32"))  # a shape given by a variable
    func = relax.Function([shape, x], relax.SeqExpr([], x), relax.AnyType())
    assert _ffi_reader.signature_var_names(layout, func.__chandle__()) is None
    n = tirx.Var("n", "int64")
    y = relax.Var("y", relax.TensorType((tirx.Select(n > 0, n, tirx.IntImm("int64", 1)),), "float32"))  # not a binary node
    func = relax.Function([y], relax.SeqExpr([], y), relax.AnyType())
    assert _ffi_reader.signature_var_names(layout, func.__chandle__()) is None
    assert _ffi_reader.signature_var_names(layout, y.__chandle__()) is None  # not a function
