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
from memcore_py.errors import IRError, PassError  # noqa: E402
from memcore_py.ir import structural_equal  # noqa: E402
from memcore_py.transform import StaticPlanBlockMemory  # noqa: E402
from _helpers import tvm_from_source  # noqa: E402

HEAD = "# from tvm.script import ir as I\n# from tvm.script import tirx as T\n# from tvm.script import relax as R\n"


def _module(body: str):
    return tvm_from_source(HEAD + "@I.ir_module\nclass Module:\n" + body)


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
    with pytest.raises(PassError, match=r"storage size in bytes of this float32 tensor exceeds int64; in function 'main', binding b "):
        mtvm.LowerAllocTensor()(m)


def test_a_token_whose_constant_dims_overflow_before_a_zero_dim_is_refused_on_both_paths():
    """TVM multiplies a token's constant dims in int64, wrapping, so ``2**32 * 2**32 * 0`` is
    0 bytes for it; memcore's one fold kernel refuses the product at the overflow, on memcore's
    IR and through the native pass alike (the native sizer declines, the full pass names the
    binding)."""
    text = HEAD + "@I.ir_module\nclass Module:\n" + '''    @R.function(pure=False)
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        b = R.builtin.alloc_tensor(R.shape([4294967296, 4294967296, 0]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _ = R.call_packed("k", x, b, ty_args=(R.Any,))
        return x
'''
    relax.transform.StaticPlanBlockMemory()(tvm_from_source(text))  # TVM plans it (0 bytes)
    message = r"function 'main', binding 'b': the allocated tensor's size: .* exceeds int64"
    with pytest.raises(PassError, match=message):
        StaticPlanBlockMemory()(memcore_py.parse(text))
    with pytest.raises(PassError, match=message):
        mtvm.StaticPlanBlockMemory()(tvm_from_source(text))


def test_a_kill_of_a_symbolic_prim_value_reads_and_plans_as_tvm():
    m = _module('''    @R.function(pure=False)
    def main(x: R.Tensor(("n",), "float32")) -> R.Tensor(("n",), "float32"):
        n = T.int64()
        _ = R.memory.kill_storage(R.prim_value(n))
        return x
''')
    _assert_bridge_round_trips(m)
    _assert_native_equals_tvm(m, "KillAfterLastUse", "StaticPlanBlockMemory", "LowerAllocTensor")


# ------------------------------------------------------------------ issue 32, bridge campaign B1-B7
def _reads_and_builds_as_tvm(text: str) -> None:
    """memcore's parser and ``to_tvm`` read ``text`` as TVM's parser does."""
    theirs = tvm_from_source(text)
    mine = memcore_py.parse(text)
    assert structural_equal(mtvm.from_tvm(theirs), mine)
    back = mtvm.to_tvm(mine)
    assert tvm_ffi.structural_equal(back, theirs), tvm_ffi.get_first_structural_mismatch(back, theirs)


def _bridge_check(m) -> list:
    """``fuzz_bridge.check_bridge(m)`` holds; the DIFFERENCES.md entries it met."""
    from memcore_py.testing import fuzz_bridge

    info: dict = {}
    assert fuzz_bridge.check_bridge(m, info) is None
    return info["listed"]


@pytest.mark.parametrize("ret, body", [
    ('R.Tensor((2, 3), dtype="float32")', "        return x\n"),
    ('R.Tensor(dtype="float32", ndim=1)',
     '        k = T.int64()\n        y = R.match_cast(x, R.Tensor((k,), dtype="float32"))\n        return y\n'),
    ('R.Tuple(R.Tensor(dtype="float32", ndim=1), R.Tensor(("n",), dtype="float32"))',
     '        k = T.int64()\n        y = R.match_cast(x, R.Tensor((k,), dtype="float32"))\n        z = R.add(y, y)\n'
     "        return (z, x)\n"),
])
def test_a_function_without_a_return_annotation_is_built_with_the_type_tvms_parser_derives(ret, body):
    """B1: TVM's parser gives a function written without ``->`` its body's type, with the
    symbolic variables its parameters do not define erased (``Function``'s constructor);
    memcore's parser does the same, and ``to_tvm`` of a function without a return type lets
    TVM's constructor derive it (it raised TVM's InternalError)."""
    shape = '("n",)' if "match_cast" in body else "(2, 3)"
    text = HEAD + f'@I.ir_module\nclass Module:\n    @R.function\n    def main(x: R.Tensor({shape}, dtype="float32")):\n' + body
    _reads_and_builds_as_tvm(text)
    assert memcore_py.parse(text).script() == memcore_py.parse(text.replace("):\n", f") -> {ret}:\n", 1)).script()
    # a function built without a return type (builder, passes) is written the same way
    from memcore_py.ir.expr import Function
    from memcore_py.ir.module import IRModule

    f = memcore_py.parse(text)["main"]
    bare = IRModule({"main": Function(f.params, f.body, None, f.attrs, f.is_pure)})
    assert tvm_ffi.structural_equal(mtvm.to_tvm(bare), tvm_from_source(text))


_ATTR_MAIN = '''    @R.function(pure=False)
    def main(x: R.Tensor(("n", 3), dtype="float32")) -> R.Tensor(("n", 3), dtype="float32"):
        n = T.int64()
        y: R.Tensor((n, 3), dtype="float32") = R.call_packed("f", x, {kw}, ty_args=(R.Tensor((n, 3), dtype="float32"),))
        return y
'''


@pytest.mark.parametrize("kw", [
    'foo=(R.Tensor((2, 3), dtype="float32"),)', 'foo=R.Tensor((n, 3), "float32")', 'foo=R.Tensor(ndim=2)',
    'foo=R.Shape((n,))', 'foo={"a": R.Tuple(R.Tensor((2,), "float32"))}',
    'foo=R.Callable((R.Tensor((2,), "float32"),), R.Object)', "foo=x", "foo=(x, 1)", "foo=n + 1", "foo=n",
    'foo=R.str("a")', "foo=R.shape([n, 2])",
])
def test_a_call_attribute_holding_a_type_or_an_expression_is_read_and_written_back(kw):
    """B2: TVM's parser keeps a keyword's type or expression as a call attribute; from_tvm
    reads it as memcore's parser reads TVM's text of it (in the function's context: its
    variables and symbolic dims), to_tvm writes it back."""
    m = _module(_ATTR_MAIN.format(kw=kw))
    _assert_bridge_round_trips(m)
    _reads_and_builds_as_tvm(m.script())
    _assert_native_equals_tvm(m, "StaticPlanBlockMemory", "KillAfterLastUse")


@pytest.mark.parametrize("kw", ["foo=R.Tensor()", "foo=R.Tuple()", "foo=R.Object()", 'foo=[R.Prim("int64")]'])
def test_a_type_tvm_prints_as_a_bare_name_is_refused_by_from_tvm_and_by_the_parser(kw):
    """B2: TVM prints these types as bare names (``foo=R.Tensor``), which its parser reads
    back as a function: from_tvm refuses the type, memcore's parser the name, and memcore's
    parser refuses the type written with parentheses too (its printer would write it bare)."""
    from memcore_py.errors import ParseError

    m = _module(_ATTR_MAIN.format(kw=kw))
    with pytest.raises(mtvm.TVMConversionError, match="printed by TVM as a bare name"):
        mtvm.from_tvm(m)
    for text in (m.script(), HEAD + "@I.ir_module\nclass Module:\n" + _ATTR_MAIN.format(kw=kw)):
        with pytest.raises(ParseError, match="not an attribute value"):
            memcore_py.parse(text)
    assert _bridge_check(m) == []


def test_a_sinfo_args_attribute_is_a_listed_refusal():
    """B2: TVM 0.27 keeps ``sinfo_args=`` (the keyword before 0.27) as an attribute, memcore's
    parser reads it as the call's ``ty_args``: from_tvm refuses it (DIFFERENCES.md,
    ``sinfo-args-attribute``), whatever its value."""
    m = _module(_ATTR_MAIN.format(kw='sinfo_args=[R.Tensor((2, 3), dtype="float32")]'))
    with pytest.raises(mtvm.TVMConversionError, match="attribute 'sinfo_args'.*ty_args"):
        mtvm.from_tvm(m)
    assert memcore_py.parse(m.script())["main"].body.blocks[0].bindings[0].value.ty_args
    assert "sinfo-args-attribute" in _bridge_check(m)


def test_tvms_escaped_utf8_bytes_read_as_the_string_tvm_holds():
    """B3: TVM prints each byte of a non-ASCII string as ``\\xNN`` (``support::StrEscape``);
    memcore's parser reads a run of them as the UTF-8 text it encodes (TVM's own parser reads
    code points, so TVM's text does not give TVM's module back: DIFFERENCES.md,
    ``utf8-escapes``). memcore's printer writes what TVM reads back as the same string."""
    value = "gl\u00e9 \U0001F600 \t\x01\x7f \\ \""
    m = _module(f'''    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
        R.func_attr({{"note": "\u00e9t\u00e9"}})
        y: R.Tensor((2, 3), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("float32"), 0, R.str({value!r}))
        return y
''')
    assert "\\xC3\\xA9" in m.script()
    mine = mtvm.from_tvm(m)
    assert mine["main"].body.blocks[0].bindings[0].value.args[3].value == value
    _assert_bridge_round_trips(m)
    assert tvm_ffi.structural_equal(tvm_from_source(mine.script()), m)
    assert not tvm_ffi.structural_equal(tvm_from_source(m.script()), m)  # TVM's own text round trip


def test_escaped_bytes_that_are_not_utf8_keep_pythons_meaning():
    from memcore_py.ir.text.lexer import string_value

    assert string_value(r'"gl\xC3\xA9"') == "gl\u00e9"
    assert string_value(r'"\xe9"') == "\u00e9"
    assert string_value(r'"\xC3\xA9\xFF\xF0\x9F\x98\x80"') == "\u00e9\u00ff\U0001F600"
    assert string_value(r'"\\xC3\xA9"') == "\\xC3\u00a9"
    assert string_value(r'"a\x41\x01"') == "aA\x01"


def test_a_non_ascii_prim_func_attribute_reads_as_tvm_holds_it():
    """B3, in a PrimFunc's ``T.func_attr`` (read with Python's parser, then the escapes as
    the Relax part reads them)."""
    m = _module('''    @T.prim_func(private=True)
    def k(A: T.Buffer((T.int64(2),), "float32")):
        T.func_attr({"\u00a0tirx.noalias": True})
        T.evaluate(0)

    @R.function
    def main(x: R.Tensor((2,), dtype="float32")) -> R.Tensor((2,), dtype="float32"):
        return x
''')
    assert "\\xC2\\xA0" in m.script()
    _assert_bridge_round_trips(m)
    assert list(memcore_py.parse(m.script())["k"].attrs) == ["\u00a0tirx.noalias"]


_DUPLICATE_NAMES = '''    @R.function
    def main(x: R.Tensor((4, 4), dtype="float32"), y: R.Tensor((4, 4), dtype="float32")) -> R.Tensor((4, 4), dtype="float32"):
        with R.dataflow():
            lv: R.Tensor((4, 4), dtype="float32") = R.nn.relu(y)
            lv: R.Tensor((4, 4), dtype="float32") = R.negative(lv)
            z: R.Tensor((4, 4), dtype="float32") = R.multiply(x, y)
            w: R.Tensor((4, 4), dtype="float32") = R.add(lv, z)
            R.output(w)
        return w
'''


def test_duplicate_binding_names_differ_by_the_printers_renames_only():
    """B4: two bindings named ``lv``; TVM prints the second ``lv_1``, so the in-place
    PrimFunc DataflowUseInplaceCalls names after its arguments has a buffer ``lv`` from TVM's
    objects and ``lv_1`` from the text (DIFFERENCES.md, ``duplicate-binding-names``); any
    other difference is still one."""
    from memcore_py.ir.expr import PrimFunc
    from memcore_py.ir.module import IRModule
    from memcore_py.testing import fuzz_bridge
    from memcore_py.transform import DataflowUseInplaceCalls

    m = _module(_DUPLICATE_NAMES)
    assert _bridge_check(m) == ["duplicate-binding-names"]
    native = mtvm.from_tvm(mtvm.DataflowUseInplaceCalls(tvm_compat=True)(m))
    text = DataflowUseInplaceCalls(tvm_compat=True)(memcore_py.parse(m.script()))
    assert "lv_1: T.Buffer" in text["add_inplace"].text and "lv: T.Buffer" in native["add_inplace"].text
    assert fuzz_bridge._printer_renames_explain(native, text)
    f = text["add_inplace"]
    for edit in (("lv_1[v_ax0, v_ax1] + ", "lv_1[v_ax0, v_ax1] * "), ("lv_1", "z")):
        changed = PrimFunc(f.params, f.attrs, f.text.replace(*edit), f.private)
        other = IRModule({gv: (changed if gv.name == "add_inplace" else g) for gv, g in text.functions.items()},
                         text.attrs, text.global_infos)
        assert not fuzz_bridge._printer_renames_explain(native, other)


def test_a_return_annotation_the_body_contradicts_is_kept_where_tvms_mutator_rederives_it():
    """B5: TVM's passes rebuild every function, and a rebuilt function whose declared return
    type is not a base of its body's type takes the body's; memcore's passes return the
    functions they leave alone as they are (DIFFERENCES.md, ``unplanned-module-kept``)."""
    from memcore_py.testing import fuzz_bridge

    m = _module('''    @R.function
    def main(x: R.Tensor((8, 8), dtype="float32")) -> R.Tensor((16, 8), dtype="float32"):
        y: R.Tensor((8, 8), dtype="float32") = R.add(x, x)
        return y
''')
    for name, kwargs in fuzz_bridge.BRIDGE_PASSES.items():
        theirs = getattr(relax.transform, name)()(m)
        assert [int(d) for d in theirs["main"].ret_ty.shape.values] == [8, 8]
        ours = getattr(mtvm, name)(**kwargs)(m)
        assert ours.same_as(m)
        assert fuzz_bridge.listed_difference(name, m, ours, None, theirs, None, []) == "unplanned-module-kept"
    assert set(_bridge_check(m)) == {"unplanned-module-kept"}
    planned = _module('''    @R.function(pure=False)
    def main(x: R.Tensor((2, 4), "float32")) -> R.Tensor((2, 4), "float32"):
        a = R.builtin.alloc_tensor(R.shape([2, 4]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _ = R.call_packed("k", x, a, ty_args=(R.Any,))
        b = R.builtin.alloc_tensor(R.shape([2, 4]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _1 = R.call_packed("k", a, b, ty_args=(R.Any,))
        return b
''')
    theirs = relax.transform.StaticPlanBlockMemory()(planned)  # a real rewrite is not explained
    assert fuzz_bridge.listed_difference("StaticPlanBlockMemory", planned, planned, None, theirs, None, []) is None


def test_a_non_finite_float_attribute_is_a_listed_difference_of_tvms_text():
    """B6: TVM prints a float attribute ``inf`` as the string ``"inf"``, which its parser
    and memcore's read as a string; from_tvm reads the float (and writes it back), memcore's
    printer writes ``float("inf")``, which TVM reads back as the float (DIFFERENCES.md,
    ``non-finite-float-attribute``)."""
    from memcore_py.testing import fuzz_bridge

    m = _module('''    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
        R.func_attr({"num_input": 1e400, "b": [-1e400, 2.5]})
        return x
''')
    assert '"num_input": "inf"' in m.script()
    mine = mtvm.from_tvm(m)
    assert mine["main"].attrs["num_input"] == float("inf")
    assert tvm_ffi.structural_equal(tvm_from_source(mine.script()), m)
    assert not tvm_ffi.structural_equal(tvm_from_source(m.script()), m)  # TVM's own text round trip
    assert "non-finite-float-attribute" in _bridge_check(m)
    read = memcore_py.parse(m.script())
    assert fuzz_bridge._non_finite_float_attributes_explain(mine, read)
    other = memcore_py.parse(m.script().replace("2.5", "3.5"))
    assert not fuzz_bridge._non_finite_float_attributes_explain(mine, other)


def test_a_prim_func_parameter_is_read_with_the_name_tvm_prints():
    """B7: TVM's printer renames a parameter named like one of its aliases (``I`` -> ``I_1``)
    or like an earlier one; from_tvm reads the parameters with the printed names, as memcore's
    parser reads them from TVM's text."""
    from memcore_py.tvm.from_tvm import printed_param_names

    assert printed_param_names(["I", "T", "R", "cls", "I_1", "A", "A", "a.b", "x"]) == \
        ["I_1", "T_1", "R_1", "cls_1", "I_1_1", "A", "A_1", "a_b", "x"]
    params = [tvm.tirx.Var(n, "handle") for n in ("A", "I", "I", "cls")]
    f = tvm.tirx.PrimFunc(params, tvm.tirx.Evaluate(0)).with_attr("global_symbol", "k")
    x = relax.Var("x", relax.TensorType((2,), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        bb.emit_func_output(x)
    m = bb.get()
    m["k"] = f
    assert "def k(A: T.handle, I_1: T.handle, I_2: T.handle, cls_1: T.handle)" in m.script()
    assert [p.name for p in mtvm.from_tvm(m)["k"].params] == ["A", "I_1", "I_2", "cls_1"]
    _assert_bridge_round_trips(m)
