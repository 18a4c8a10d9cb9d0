"""DataflowUseInplaceCalls and its analyses against Apache TVM 0.27.0.post1.

1. 320 random high-level dataflow programs (:func:`memcore_py.testing.inplace_programs.
   random_inplace_program`: broadcasting, scalar constants, views, tuples, split, call_tir,
   mystery calls, float16/float32/int32, symbolic shapes), read by both parsers:
   - the three analyses equal TVM's testing entry points (liveness, alias sets and tuple
     maps, size and exact candidate sets);
   - ``DataflowUseInplaceCalls(tvm_compat=True)`` gives TVM's module (our text read by TVM's
     parser, structurally equal to TVM's output read back from its text), PrimFuncs
     included, i.e. the in-place TIR is TVM's;
   - the native pass on TVM's module (in-place PrimFuncs built as TVM objects) gives TVM's
     module too;
   - the default (sound) pass makes a subset of TVM's rewrites, never crashes where TVM
     does (a leading scalar constant), and its output is read by TVM's parser.
2. The legalized TIR memcore writes equals TVM's ``LegalizeOps`` PrimFunc on a matrix of
   ops, dtypes, broadcast patterns, folded constants and symbolic shapes; on the same
   matrix, the TVM objects the bridge builds from each kernel (legalization and every
   in-place variant) equal TVM's parse of its text, names included.
3. A sample of executable programs, rewritten by our pass, builds and runs on TVM's VM with
   the original's results; the in-place PrimFuncs really write their input buffer.
"""
from __future__ import annotations

import os

import numpy as np
import pytest

tvm = pytest.importorskip("tvm")
from tvm import relax  # noqa: E402

import memcore_py  # noqa: E402
from memcore_py.analysis.dataflow_inplace import dataflow_aliases, dataflow_liveness, inplace_opportunities  # noqa: E402
from memcore_py.ir.prim import IntImm, PrimVar  # noqa: E402
from memcore_py.testing.inplace_programs import random_inplace_program  # noqa: E402
from memcore_py.transform.dataflow_use_inplace_calls import dataflow_use_inplace_calls  # noqa: E402
from memcore_py.transform.legalize_elementwise import ElementwiseCall, Operand, prim_func, prim_func_text  # noqa: E402
from memcore_py.tvm import DataflowUseInplaceCalls as NativeInplace  # noqa: E402
from _helpers import tvm_from_source  # noqa: E402

pytestmark = pytest.mark.oracle

N_PROGRAMS = 320
_LEADING_CONST_CRASH = "In-place index"


def _tvm_testing():
    os.environ.setdefault("PYTEST_CURRENT_TEST", "oracle")  # silences TVM's "testing only" warning
    from tvm.relax.testing import transform as t

    return t


def _assert_same_module(ours, theirs):
    """Function by function: TVM's in-memory output shares TIR vars between the PrimFuncs it
    derived from one legalization, which a whole-module comparison would map twice."""
    names = sorted(gv.name_hint for gv in theirs.functions)
    assert sorted(gv.name_hint for gv in ours.functions) == names
    for name in names:
        tvm.ir.assert_structural_equal(ours[name], theirs[name], map_free_vars=True)


def _chosen(mod) -> set:
    blk = mod["main"].body.blocks[0]
    return {b.var.name for b in blk.bindings
            if getattr(getattr(b.value, "op", None), "name", None) == "relax.call_tir_inplace"}


@pytest.fixture(scope="module")
def programs():
    """(seed, text, tvm module, memcore module) for programs both parsers read."""
    out = []
    seed = 0
    while len(out) < N_PROGRAMS:
        text = random_inplace_program(seed)
        seed += 1
        try:
            tm = tvm_from_source(text)
        except Exception:  # noqa: BLE001 - TVM refuses a few generated programs (counted below)
            continue
        out.append((seed - 1, text, tm, memcore_py.parse(text)))
    assert seed < 2 * N_PROGRAMS, f"TVM refused {seed - N_PROGRAMS} of {seed} generated programs"
    return out


def test_analyses_equal_tvm(programs):
    t = _tvm_testing()
    for seed, _text, tm, mm in programs:
        tf, mf = tm["main"], mm["main"]
        tb, mb = tf.body.blocks[0], mf.body.blocks[0]
        assert {k.name: v for k, v in t.dataflow_liveness_analysis(tb).items()} == \
            {k.name: v for k, v in dataflow_liveness(mb).items()}, seed
        ta, tt = t.dataflow_alias_analysis(tb, list(tf.params))
        ma, mt = dataflow_aliases(mb, list(mf.params))
        assert {k.name: v for k, v in ta.items()} == {k.name: v for k, v in ma.items()}, seed
        assert dict(tt) == mt, seed
        ts, te = t.dataflow_inplace_analysis(tb, list(tf.params), tm)
        ms, me = inplace_opportunities(mb, list(mf.params))
        assert ts == [(i, set(c)) for i, c in ms], seed
        assert te == [(i, set(c)) for i, c in me], seed


def test_pass_equals_tvm_and_sound_mode_is_a_subset(programs):
    compared = crashed = fewer = 0
    for seed, _text, tm, mm in programs:
        ours_sound = dataflow_use_inplace_calls(mm)
        if seed % 8 == 0:
            tvm_from_source(ours_sound.script())  # TVM reads what we print
        try:
            theirs = relax.transform.DataflowUseInplaceCalls()(tm)
        except Exception as e:  # noqa: BLE001 - TVM's documented crash (leading-scalar)
            assert _LEADING_CONST_CRASH in str(e), (seed, str(e)[:300])
            crashed += 1
            continue
        ours = dataflow_use_inplace_calls(mm, tvm_compat=True)
        _assert_same_module(tvm_from_source(ours.script()), theirs)
        # the native pass builds its in-place PrimFuncs as TVM objects (no parse)
        _assert_same_module(NativeInplace(tvm_compat=True)(tm), theirs)
        compared += 1
        sound, compat = _chosen(ours_sound), _chosen(ours)
        assert sound <= compat, seed
        fewer += sound != compat
    assert compared >= 280 and crashed >= 1, (compared, crashed)


# ----------------------------------------------------------------------------- TIR equality
def _case_matrix():
    n, m = PrimVar("n"), PrimVar("m")
    i = IntImm
    s23, s13, s3 = (i(2), i(3)), (i(1), i(3)), (i(3),)
    cases = []
    for op in ("relax.add", "relax.subtract", "relax.multiply", "relax.divide"):
        for dt in ("float32", "float16", "int32", "int64"):
            cases.append(ElementwiseCall(op, dt, s23, (Operand(s23, "x"), Operand(s23, "y"))))
        cases.append(ElementwiseCall(op, "float32", s23, (Operand(s23, "x"), Operand(s13, "r"))))
        cases.append(ElementwiseCall(op, "float32", s23, (Operand(s3, "w"), Operand(s23, "x"))))
        cases.append(ElementwiseCall(op, "float32", s23, (Operand(s23, "x"), Operand(None, value=0.25))))
        cases.append(ElementwiseCall(op, "int32", s23, (Operand(None, value=7), Operand(s23, "x"))))
        cases.append(ElementwiseCall(op, "float16", (n, m), (Operand((n, m), "x"), Operand((i(1), m), "r"))))
        cases.append(ElementwiseCall(op, "float64", (), (Operand((), "x"), Operand((), "y"))))
    for op in ("relax.nn.relu", "relax.nn.silu"):
        for dt, shape in (("float32", s23), ("float16", (n, i(3))), ("bfloat16", (i(4),)), ("float64", ())):
            cases.append(ElementwiseCall(op, dt, shape, (Operand(shape, "x"),)))
    cases.append(ElementwiseCall("relax.nn.relu", "int32", (i(2), i(1), i(3)), (Operand((i(2), i(1), i(3)), "x"),)))
    return cases


def _relax_type(dims, dtype):
    return relax.TensorType([tvm.tirx.IntImm("int64", d.value) if isinstance(d, IntImm) else _SYM[d.name]
                             for d in dims], dtype)


_SYM = {}


@pytest.mark.parametrize("call", _case_matrix(), ids=lambda c: f"{c.op.split('.')[-1]}-{c.dtype}-{len(c.shape)}d")
def test_legalized_tir_equals_tvm_legalize_ops(call):
    """Our legalization text, read by TVM, equals the PrimFunc TVM's LegalizeOps makes."""
    _SYM.setdefault("n", tvm.tirx.Var("n", "int64"))
    _SYM.setdefault("m", tvm.tirx.Var("m", "int64"))
    bb = relax.BlockBuilder()
    params, args = [], []
    for o in call.operands:
        if o.is_buffer:
            v = relax.Var(o.name, _relax_type(o.shape, call.dtype))
            params.append(v)
            args.append(v)
        else:
            args.append(relax.const(np.array(o.value, dtype=call.dtype), call.dtype))
    op = getattr(relax.op, call.op.split(".", 1)[1].replace("nn.", "")) if "nn." not in call.op \
        else getattr(relax.op.nn, call.op.split(".")[-1])
    with bb.function("main", params):
        with bb.dataflow():
            out = bb.emit_output(op(*args))
        bb.emit_func_output(out)
    legal = relax.transform.LegalizeOps()(bb.get())
    (theirs,) = [f for gv, f in legal.functions.items() if gv.name_hint != "main"]
    header = "# from typing import TypeVar\n# from tvm.script import tirx as T\n"
    header += 'n = TypeVar("n")\nm = TypeVar("m")\n'
    ours = tvm_from_source(header + prim_func_text(call, "f"))
    tvm.ir.assert_structural_equal(ours, theirs, map_free_vars=True)


@pytest.mark.parametrize("call", _case_matrix(), ids=lambda c: f"{c.op.split('.')[-1]}-{c.dtype}-{len(c.shape)}d")
def test_kernel_built_as_tvm_objects_equals_the_parse_of_its_text(call):
    """The bridge's second writer of a kernel (:mod:`memcore_py.tvm.tir_writer`) makes what
    TVM's parser makes of the first one's text: structurally and as printed."""
    from memcore_py.tvm._api import tvm_api
    from memcore_py.tvm.tir_writer import kernel_prim_func

    header = '# from typing import TypeVar\n# from tvm.script import tirx as T\nn = TypeVar("n")\nm = TypeVar("m")\n'
    indices = [None] + [k for k, o in enumerate(call.operands) if o.is_buffer and len(o.shape) == len(call.shape)
                        and all(a is b or isinstance(a, IntImm) and isinstance(b, IntImm) and a.value == b.value
                                for a, b in zip(o.shape, call.shape))]
    assert len(indices) >= 2
    for index in indices:
        f = prim_func(call, "f", index)
        parsed = tvm_from_source(header + f.text)
        built = kernel_prim_func(tvm_api(), f.source, {"tirx.noalias": True})
        tvm.ir.assert_structural_equal(built, parsed)
        assert built.script() == parsed.script()


def test_kernel_the_builder_cannot_build_is_a_typed_error_and_the_text_is_parsed_instead():
    """A kernel expression the TVM builder does not know raises TVMConversionError naming it;
    the bridge then hands TVM the function's text, which TVM parses."""
    import dataclasses

    from memcore_py.ir import IRModule, PrimFunc
    from memcore_py.tvm import to_tvm
    from memcore_py.tvm._api import TVMConversionError, tvm_api
    from memcore_py.tvm.tir_writer import kernel_prim_func

    call = _case_matrix()[0]
    f = prim_func(call, "f", 0)
    block = dataclasses.replace(f.source.blocks[0], value=("T.unknown", ("imm", 1, call.dtype)))
    odd = dataclasses.replace(f.source, blocks=(block,))
    with pytest.raises(TVMConversionError, match="T.unknown"):
        kernel_prim_func(tvm_api(), odd, {"tirx.noalias": True})
    g = PrimFunc.lazy(type(object.__getattribute__(f, "_load"))(odd, lambda: f.text), odd)
    out = to_tvm(IRModule({"f": g}))
    header = "# from tvm.script import tirx as T\n"
    tvm.ir.assert_structural_equal(out["f"], tvm_from_source(header + f.text))


# ----------------------------------------------------------------------------- execution
def _run(mod, inputs):
    ex = tvm.compile(mod, target="llvm")
    vm = relax.VirtualMachine(ex, tvm.cpu())
    out = vm["main"](*[tvm.runtime.tensor(a) for a in inputs])
    flat = out if isinstance(out, (list, tuple)) or hasattr(out, "__len__") and not hasattr(out, "numpy") else [out]
    return [np.array(o.numpy()) for o in flat]


@pytest.mark.slow
def test_rewritten_programs_run_on_tvm_vm_with_the_original_results():
    rng = np.random.default_rng(0)
    ran = rewritten = 0
    seed = 0
    while ran < 6:
        text = random_inplace_program(10_000 + seed, 10, executable=True)
        seed += 1
        if "n," in text or '"n"' in text or '"m"' in text:
            continue  # fixed shapes for the inputs below
        mm = memcore_py.parse(text)
        out = dataflow_use_inplace_calls(mm)
        if not _chosen(out):
            continue
        f = mm["main"]
        inputs = [rng.uniform(0.5, 2.0, size=[d.value for d in p.ty.shape]).astype(p.ty.dtype) for p in f.params]
        want = _run(tvm_from_source(text), inputs)
        got = _run(tvm_from_source(out.script()), inputs)
        for w, g in zip(want, got):
            np.testing.assert_array_equal(g, w)
        ran += 1
        rewritten += len(_chosen(out))
    assert rewritten >= ran


def test_inplace_prim_func_writes_its_input():
    s = (IntImm(2), IntImm(3))
    call = ElementwiseCall("relax.subtract", "float32", s, (Operand(s, "a"), Operand(s, "b")))
    text = prim_func_text(call, "f", 1).replace("private=True, ", "")  # public: callable by name
    mod = tvm_from_source("# from tvm.script import ir as I\n# from tvm.script import tirx as T\n"
                                 "@I.ir_module(s_tir=True)\nclass Module:\n"
                                 + "".join("    " + ln + "\n" for ln in text.splitlines()))
    lib = tvm.compile(mod, target="llvm")["f"]
    a = np.arange(6, dtype="float32").reshape(2, 3)
    b = np.full((2, 3), 10.0, dtype="float32")
    ta, tb = tvm.runtime.tensor(a), tvm.runtime.tensor(b)
    lib(ta, tb)
    np.testing.assert_array_equal(tb.numpy(), a - b)  # written into the second operand
    np.testing.assert_array_equal(ta.numpy(), a)


# ----------------------------------------------------------------------------- real models
@pytest.mark.parametrize("model", __import__("memcore_py.examples.models", fromlist=["x"]).list_highlevel_models())
def test_real_models_equal_tvm(model):
    """The high-level modules TVM's torch importer printed (ResNet-50, BERT, GPT-2, Llama):
    TVM's pass and ours give the same module; the sound default makes the same rewrites
    (none of them holds a value captured in a live tuple)."""
    from memcore_py.examples.models import highlevel_model_text
    from memcore_py.ir import structural_equal

    text = highlevel_model_text(model)
    mm = memcore_py.parse(text)
    theirs = relax.transform.DataflowUseInplaceCalls()(tvm_from_source(text))
    ours = dataflow_use_inplace_calls(mm, tvm_compat=True)
    _assert_same_module(tvm_from_source(ours.script()), theirs)
    assert structural_equal(dataflow_use_inplace_calls(mm), ours)
    assert _n_inplace(ours) > 0


def _n_inplace(mod):
    return sum(1 for f in mod.functions.values() if hasattr(f, "body") for blk in f.body.blocks for b in blk.bindings
               if getattr(getattr(b.value, "op", None), "name", None) == "relax.call_tir_inplace")


# ------------------------------------------------- symbolic vars no buffer dim binds (issue 27)
def _symbolic_program(shape, other=None, second="R.multiply(a, y)"):
    def q(s):
        return "(" + ", ".join(f'"{d}"' for d in s) + ("," if len(s) == 1 else "") + ")"

    return f'''# from tvm.script import ir as I
# from tvm.script import relax as R
# from tvm.script import tirx as T

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", "m", "k"), dtype="float32"), y: R.Tensor({q(other or shape)}, dtype="float32"), z: R.Tensor({q(shape)}, dtype="float32")):
        n = T.int64()
        m = T.int64()
        k = T.int64()
        with R.dataflow():
            a = R.add(z, z)
            b = {second}
            R.output(b)
        return b
'''


#: Shapes whose scalar parameters TVM orders the same way on every run (at most two, the
#: first symbolic variable used being one of them; see unbound_tir_vars).
_SYMBOLIC_CASES = {
    "product": (("n*m",),),
    "product-and-dim": (("n*m", "k"),),
    "dim-times-bound-var": (("k", "n*k"),),
    "bound-var-first-in-product": (("n*k", "k"),),
    "two-exprs": (("n*m", "n+1"),),
    "commuted-operand": (("m*n",), ("n*m",)),
    "broadcast-constant": (("n*m",), ("1",)),
    "relu": (("n*m",), None, "R.nn.relu(a)"),
    "silu": (("n*m", "k"), None, "R.nn.silu(a)"),
}


@pytest.mark.parametrize("case", list(_SYMBOLIC_CASES))
def test_symbolic_vars_as_scalar_params_equal_tvm(case):
    """TVM passes the symbolic variables no buffer dim binds as scalar arguments (appended to
    the call's tuple, parameters after the buffers): the native pass, the pure pass read by
    TVM's parser, and the pure pass against TVM's output read by memcore (texts included)."""
    from memcore_py.ir import structural_equal
    from memcore_py.tvm import DataflowUseInplaceCalls, from_tvm

    text = _symbolic_program(*_SYMBOLIC_CASES[case])
    tm = tvm_from_source(text)
    theirs = relax.transform.DataflowUseInplaceCalls()(tm)
    assert "T.int64)" in theirs.script()  # TVM's in-place function has scalar parameters
    tvm.ir.assert_structural_equal(DataflowUseInplaceCalls(tvm_compat=True)(tm), theirs)
    ours = dataflow_use_inplace_calls(memcore_py.parse(text), tvm_compat=True)
    _assert_same_module(tvm_from_source(ours.script()), theirs)
    assert structural_equal(ours, from_tvm(theirs))


@pytest.mark.slow
def test_symbolic_scalar_params_build_and_run_bit_identical_to_tvm():
    """Without the scalar parameters TVM refuses to build the in-place PrimFunc ("variables
    (n, m) are used, but are not passed in as API arguments"); with them our output runs
    on the VM with TVM's results."""
    from memcore_py.tvm import DataflowUseInplaceCalls

    tm = tvm_from_source(_symbolic_program(("n*m",)))
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal(s).astype("float32") for s in ((3, 4, 5), (12,), (12,))]
    want = _run(relax.transform.DataflowUseInplaceCalls()(tm), inputs)
    got = _run(DataflowUseInplaceCalls(tvm_compat=True)(tm), inputs)
    for w, g in zip(want, got):
        np.testing.assert_array_equal(g, w)
