"""The type of a prim value holds no value, as TVM 0.27's (issue 32, the open finding after
B8-B13).

TVM 0.27's ``PrimType`` has a dtype only: ``(0,)`` is an ``R.Tuple(T.int64)`` and TVM's
parser refuses ``R.Prim(value=...)``. memcore's type of ``R.prim_value(0)`` held the value
(``PrimType("int64", 0)``), so a type memcore derived from a value (a tuple binding, a
function without a return annotation) differed from the type ``from_tvm`` reads off TVM's
objects, and the bridge fuzzer's check 2 ("from_tvm vs text") failed on such modules
without any mutation.

For each module: ``from_tvm(m)`` equals ``memcore_py.parse(m.script())`` (memcore's
structural equality), ``to_tvm`` of both equals ``m``, memcore's printed text reads back in
TVM equal to ``m``, and ``fuzz_bridge.check_bridge(m)`` holds.
"""
from __future__ import annotations

import pytest

tvm = pytest.importorskip("tvm")
import tvm_ffi  # noqa: E402  (after the importorskip above)

import memcore_py  # noqa: E402
import memcore_py.tvm as mtvm  # noqa: E402
from memcore_py.errors import MemcoreError  # noqa: E402
from memcore_py.ir import structural_equal  # noqa: E402
from memcore_py.ir.functor import value_type  # noqa: E402
from memcore_py.ir.types import PrimType, TupleType  # noqa: E402
from _helpers import tvm_from_source  # noqa: E402

HEAD = "# from tvm.script import ir as I\n# from tvm.script import tirx as T\n# from tvm.script import relax as R\n"


def _module_text(body: str) -> str:
    return HEAD + "@I.ir_module\nclass Module:\n" + body


def _prim_types(ty):
    """Every PrimType in ``ty`` (through tuples)."""
    if isinstance(ty, PrimType):
        yield ty
    elif isinstance(ty, TupleType):
        for f in ty.fields:
            yield from _prim_types(f)


def _assert_as_tvm(text: str):
    """``text`` read by TVM and by memcore gives the same module, both ways; memcore's
    module (and its printed text) carries no prim value in any binding's or return type."""
    from memcore_py.testing import fuzz_bridge

    m = tvm_from_source(text)
    mine = mtvm.from_tvm(m)
    for source in (text, m.script()):
        parsed = memcore_py.parse(source)
        assert structural_equal(mine, parsed), "from_tvm(m) differs from memcore's reading of the text"
        back = mtvm.to_tvm(parsed)
        assert tvm_ffi.structural_equal(back, m), tvm_ffi.get_first_structural_mismatch(back, m)
        again = tvm_from_source(parsed.script())
        assert tvm_ffi.structural_equal(again, m), tvm_ffi.get_first_structural_mismatch(again, m)
    parsed = memcore_py.parse(text)
    for name, f in _relax_functions(parsed):
        types = [f.ret_ty, value_type(f.body.body)]
        types += [b.var.ty for blk in f.body.blocks for b in blk.bindings]
        assert all(p.value is None for t in types for p in _prim_types(t)), name
    assert fuzz_bridge.check_bridge(m) is None
    return m, parsed


def _relax_functions(mod):
    from memcore_py.ir.expr import Function

    return [(name, f) for name, f in mod.items() if isinstance(f, Function)]


_MAIN = '''    @R.function
    def main(a: R.Tensor(("n",), "float32")):
        n = T.int64()
'''


@pytest.mark.parametrize("body", [
    # the function's type derived from its body (no return annotation)
    "        return (0,)\n",
    "        return (a, (R.prim_value(T.int64(7)), R.prim_value(T.float32(1.5))))\n",
    # a tuple binding: its type derived from its fields
    "        t = (a, 4)\n        return t\n",
    "        t = (a, R.prim_value(4))\n        u = t[1]\n        return (t, u)\n",
    # a symbolic value: the dims its value mentions leave the type with the value
    "        t = (R.prim_value(n + 1), R.shape([n]))\n        return t\n",
    # a prim value bound alone, then used in a tuple
    "        p = R.prim_value(3)\n        return (p, p)\n",
])
def test_a_derived_type_of_a_prim_value_reads_as_tvms(body):
    _assert_as_tvm(_module_text(_MAIN + body))


def test_the_type_of_a_tuple_of_prim_values_holds_no_value():
    _, mod = _assert_as_tvm(_module_text(_MAIN + "        t = (a, 4)\n        return (0,)\n"))
    f = mod["main"]
    t = f.body.blocks[0].bindings[0].var.ty
    assert isinstance(t.fields[1], PrimType) and t.fields[1].dtype == "int64" and t.fields[1].value is None
    assert f.ret_ty.fields[0].value is None
    assert "R.Tuple(T.int64)" in tvm_from_source(mod.script()).script()


@pytest.mark.parametrize("call", [
    'R.builtin.alloc_tensor(R.shape([8]), R.dtype("float32"), R.prim_value(0), R.str("global"))',
    'R.eye(R.prim_value(3), R.prim_value(4), R.prim_value(0), dtype="float32")',
    'R.arange(R.prim_value(0), R.prim_value(6), R.prim_value(2), dtype="int64")',
    'R.call_packed("ext", a, R.prim_value(2), (R.prim_value(1), a), ty_args=(R.Tensor((8,), dtype="float32"),))',
    "cls.helper(R.prim_value(5), (a, R.prim_value(6)))",
])
def test_a_prim_value_in_a_call_argument_reads_as_tvms(call):
    pure = "(pure=False)" if "call_packed" in call or "alloc_tensor" in call else ""
    text = _module_text(f'''    @R.function
    def helper(p: T.int64, q: R.Tuple(R.Tensor((8,), "float32"), R.Prim("int64"))):
        return (p, q)

    @R.function{pure}
    def main(a: R.Tensor((8,), "float32")):
        cls = Module
        y = {call}
        return (y, 1)
''')
    _assert_as_tvm(text)


@pytest.mark.parametrize("ann", ['R.Prim(value=3)', 'R.Prim("int64", value=3)', 'R.Tuple(R.Prim(value="n"))'])
def test_a_prim_type_with_a_value_is_refused_as_by_tvm(ann):
    """TVM 0.27's parser has no ``R.Prim(value=...)`` ("Prim() got an unexpected keyword
    argument 'value'"); memcore's parser refuses it too, with a typed error."""
    text = _module_text(f'''    @R.function
    def main(a: R.Tensor(("n",), "float32")):
        n = T.int64()
        x: {ann} = R.prim_value(3)
        return x
''')
    with pytest.raises(Exception, match="value"):
        tvm_from_source(text)
    with pytest.raises(MemcoreError):
        memcore_py.parse(text)


def test_a_prim_valued_var_as_an_op_argument_gives_an_unknown_shape():
    """TVM 0.27 types ``R.eye(n, n)`` for ``n = R.prim_value(3)`` with the Relax var ``n``
    itself as the dims (``R.Tensor((n, n))``); memcore's dims cannot name a Relax var and its
    type of ``n`` holds no value, so the shape is unknown and the rank kept (before: the
    value's dims, or a shape of ``None`` dims for a parameter)."""
    mod = memcore_py.parse(_module_text('''    @R.function
    def main(k: T.int64):
        n = R.prim_value(3)
        y = R.eye(n, k, dtype="float32")
        z = R.arange(R.prim_value(0), n, R.prim_value(1), dtype="int64")
        w = R.hamming_window(k, R.prim_value(1), R.prim_value(T.float32(0.5)), R.prim_value(T.float32(0.5)), dtype="float32")
        return (y, z, w)
'''))
    y, z, w = (b.var.ty for b in mod["main"].body.blocks[0].bindings[1:])
    assert (y.shape, y.ndim, y.dtype) == (None, 2, "float32")
    assert (z.shape, z.ndim, z.dtype) == (None, 1, "int64")
    assert (w.shape, w.ndim, w.dtype) == (None, 1, "float32")
