"""memcore_py.ir.text.prim_func_text: reading, writing and editing the text of a PrimFunc.

One test per public function (and per rule it documents); bad input is a ParseError (reading)
or an IRError (writing) with a message that says what is wrong and where.
"""
import ast
from pathlib import Path

import numpy as np
import pytest

from memcore_py import parse
from memcore_py.errors import IRError, ParseError
from memcore_py.ir import FloatImm, IntImm, IRModule, Mul, PrimExpr, PrimFunc, PrimFuncParam, PrimVar, Sub, TensorType, Var
from memcore_py.ir.text import prim_func_text as pft
from memcore_py.ir.module import VDevice
from memcore_py.ir.text.printer import script
from memcore_py.ir.structural import assert_structural_equal

ADD_TEXT = (
    "@T.prim_func(private=True, s_tir=True)\n"
    'def add(A: T.Buffer((T.int64(2), 3), "float32"), n: T.int64, B: T.Buffer(("n * 2", n), "float16"), h: T.handle):\n'
    '    T.func_attr({"tirx.noalias": True, "layout_free_buffers": [1], "ub": {"n": T.int64(128)}})\n'
    "    for i in range(T.int64(2)):\n"
    "        A[i, 0] = T.float32(0)\n"
)


def sig_func(attrs=None, private=True, shape=(4,)):
    return PrimFunc([PrimFuncParam("A", "float32", shape)], attrs, private=private)


def read_error(text, match, line, column=None, **kw):
    with pytest.raises(ParseError, match=match) as info:
        pft.read_prim_func(text, **kw)
    err = info.value
    assert err.line == line, (err.line, err.column, err.msg)
    if column is not None:
        assert err.column == column, (err.column, err.msg)
    assert err.source_line == text.split("\n")[line - 1]
    return err


# ------------------------------------------------------------------------------ read_prim_func
def test_read_prim_func_signature_attrs_and_text():
    name, f = pft.read_prim_func(ADD_TEXT)
    assert name == "add" and f.private and f.text == ADD_TEXT
    a, n, b, h = f.params
    # TIR rules: a bare int dim is int32, T.int64(2) is int64
    assert [(d.value, d.dtype) for d in a.shape] == [(2, "int64"), (3, "int32")] and a.dtype == "float32"
    assert (n.name, n.dtype, n.shape) == ("n", "int64", None)
    assert (h.dtype, h.shape) == ("handle", None)
    # the scalar parameter n is the PrimVar of the dims that use it; a string dim is parsed
    dim0, dim1 = b.shape
    assert isinstance(dim0, Mul) and isinstance(dim0.a, PrimVar) and dim0.a is dim1
    assert dim0.b.value == 2 and dim0.b.dtype == "int64"  # an int next to n takes n's dtype
    # lists become tuples; T.int64(128) stays an IntImm
    assert list(f.attrs) == ["tirx.noalias", "layout_free_buffers", "ub"]
    assert f.attrs["tirx.noalias"] is True and f.attrs["layout_free_buffers"] == (1,)
    ub = f.attrs["ub"]["n"]
    assert (type(ub), ub.value, ub.dtype) == (IntImm, 128, "int64")


def test_read_prim_func_signature_only_form_reads_back_without_text():
    f = sig_func({"tirx.noalias": True, "k": (1, 2)})
    text = pft.signature_only_text("kernel", f)
    name, back = pft.read_prim_func(text)
    assert name == "kernel" and back.text is None
    assert_structural_equal(IRModule({"kernel": back}), IRModule({"kernel": f}))
    # any other body keeps the text
    assert pft.read_prim_func(text.replace("T.evaluate(0)", "T.evaluate(1)"))[1].text is not None
    assert pft.read_prim_func(text.replace("@T.prim_func(private=True)", "@T.prim_func(private=True, s_tir=True)"))[1].text


def test_read_prim_func_repeated_texts_give_equal_fresh_nodes():
    _, f1 = pft.read_prim_func(ADD_TEXT)
    _, f2 = pft.read_prim_func(ADD_TEXT)  # decorator, annotations and attrs now come from the caches
    assert_structural_equal(IRModule({"add": f1}), IRModule({"add": f2}))
    assert f1.attrs is not f2.attrs and f1.attrs["ub"] is not f2.attrs["ub"]
    assert f1.params[2].shape[1] is not f2.params[2].shape[1]  # symbolic vars are per function


def test_read_prim_func_typevars_are_the_only_free_names_allowed():
    text = '@T.prim_func\ndef f(A: T.Buffer((m, 4), "float32")):\n    T.evaluate(0)\n'
    assert pft.read_prim_func(text)[1].params[0].shape[0].name == "m"  # None: any free name
    assert pft.read_prim_func(text, typevars={"m"})[1].params[0].shape[0].name == "m"
    read_error(text, "undefined variable 'm'", 2, 20, typevars=set())


def test_read_prim_func_multi_line_signature_and_attrs():
    text = (
        "# leading comment\n"
        "@T.prim_func\n"
        "def f(\n"
        '    A: T.Buffer((4,), "float32"),  # a comment\n'
        '    B: T.Buffer((4,), "float32"),\n'
        "):\n"
        "    k = T.int64()\n"
        "    T.func_attr({\n"
        '        "a": [1,  # one\n'
        "              2],\n"
        "    })\n"
        "    B[0] = A[0]\n"
    )
    name, f = pft.read_prim_func(text)
    assert name == "f" and [p.name for p in f.params] == ["A", "B"] and f.attrs == {"a": (1, 2)}


@pytest.mark.parametrize(
    "text, match, line, column",
    [
        ("", "empty", 1, 1),
        ("def f():\n    pass\n", "must start with its @T.prim_func decorator", 1, 1),
        ("@T.prim_func\nx = 1\n", "expected 'def name", 2, 1),
        ('@T.prim_func\ndef f(A: T.Buffer((4,), "float32"):\n    T.evaluate(0)\n', "unbalanced brackets", 2, 1),
        ('@R.function\ndef f(A: T.Buffer((4,), "float32")):\n    T.evaluate(0)\n', "unsupported decorator @R.function", 1, 2),
        ('@T.prim_func(private=1)\ndef f(A: T.Buffer((4,), "float32")):\n    T.evaluate(0)\n', "'private' must be True or False", 1, 22),
        ('@T.prim_func(True)\ndef f(A: T.Buffer((4,), "float32")):\n    T.evaluate(0)\n', "must be keywords", 1, 14),
        ('@T.prim_func(inline=True)\ndef f(A: T.Buffer((4,), "float32")):\n    T.evaluate(0)\n', "unsupported decorator argument 'inline'", 1, 21),
        ("@T.prim_func\ndef f(A):\n    T.evaluate(0)\n", "parameter 'A' must be written 'name: type'", 2, 7),
        ('@T.prim_func\ndef f(A: T.Buffer((4,), "float32") = None):\n    T.evaluate(0)\n', "no defaults", 2, 1),
        ("@T.prim_func\ndef f(A: R.Tensor):\n    T.evaluate(0)\n", "unsupported PrimFunc parameter type R.Tensor", 2, 10),
        ('@T.prim_func\ndef f(A: T.Buffer((4,), "f32"), A: T.int64):\n    T.evaluate(0)\n', "duplicate parameter name 'A'", 2, 33),
        ('@T.prim_func\ndef f(A: T.Buffer((2.5,), "float32")):\n    T.evaluate(0)\n', "shape dimension must be an integer", 2, 10),
        ('@T.prim_func\ndef f(A: T.Buffer((4 // 0,), "float32")):\n    T.evaluate(0)\n', "division by zero", 2, 20),
        ('@T.prim_func\ndef f(A: T.Buffer(("n *",), "float32")):\n    T.evaluate(0)\n', "dimension string 'n \\*' is not an expression", 2, 10),
        ('@T.prim_func\ndef f(A: T.Buffer((4,), 3)):\n    T.evaluate(0)\n', "dtype must be a string", 2, 10),
        ('@T.prim_func\ndef f(A: T.Buffer(dtype="float32")):\n    T.evaluate(0)\n', "T.Buffer needs a shape", 2, 10),
        ('@T.prim_func\ndef f(A: T.Buffer((4,) "float32")):\n    T.evaluate(0)\n', "invalid syntax", 2, None),
        ('@T.prim_func\ndef f(A: T.Buffer((4,), "float32")):\n', "PrimFunc 'f' has no body", 2, 1),
        ('@T.prim_func\ndef f(A: T.Buffer((4,), "float32")):\n# only a comment\n', "has no body", 2, 1),
        ('@T.prim_func\ndef f(A: T.Buffer((4,), "float32")):\n    T.func_attr([1])\n', "T.func_attr\\(...\\) takes a dict", 3, 5),
        ('@T.prim_func\ndef f(A: T.Buffer((4,), "float32")):\n    T.func_attr({"a": q})\n', "undefined variable 'q'", 3, 23),
        ('@T.prim_func\ndef f(A: T.Buffer((4,), "float32")):\n    T.func_attr({"a": T.int64})\n', "T.int64 is a type", 3, 23),
        ('@T.prim_func\ndef f(A: T.Buffer((4,), "float32")):\n    T.func_attr({"a": 1}, 2)\n', "takes one dict", 3, 5),
        ('@T.prim_func\ndef f(A: T.Buffer((4,), "float32")):\n    T.func_attr({"a": 1)\n', "invalid syntax", 3, None),
    ],
)
def test_read_prim_func_errors_name_the_problem_and_the_place(text, match, line, column):
    read_error(text, match, line, column, typevars=set())


def test_read_prim_func_takes_text():
    with pytest.raises(ParseError, match="must be a str; got bytes"):
        pft.read_prim_func(b"@T.prim_func")


def test_parser_locates_prim_func_errors_in_the_module():
    text = (
        '@I.ir_module\nclass Module:\n    @T.prim_func\n'
        '    def f(A: T.Buffer((q, 4), "float32")):\n        T.evaluate(0)\n'
    )
    with pytest.raises(ParseError, match="undefined variable 'q'") as info:
        parse(text)
    assert (info.value.line, info.value.column) == (4, 24)
    assert info.value.source_line == '    def f(A: T.Buffer((q, 4), "float32")):'
    # a module TypeVar may be used
    mod = parse('q = TypeVar("q")\n' + text)
    assert mod["f"].params[0].shape[0].name == "q"


# ------------------------------------------------------------------------------ parse_attr_dict
def test_parse_attr_dict_values():
    attrs = pft.parse_attr_dict(
        '{"a": 1, "b": -2, "c": 1.5, "d": "s", "e": None, "f": [1, [2, 3]], "g": {"x": T.int64(5)},'
        ' "h": T.float32(0.5), "i": T.bool(True), "j": T.int32(-3), "k": float("-inf"), "l": True, 7: (1,)}'
    )
    assert attrs["f"] == (1, (2, 3)) and attrs[7] == (1,) and attrs["e"] is None and attrs["l"] is True
    assert (type(attrs["g"]["x"]), attrs["g"]["x"].value, attrs["g"]["x"].dtype) == (IntImm, 5, "int64")
    assert (type(attrs["h"]), attrs["h"].dtype) == (FloatImm, "float32")
    assert (attrs["i"].dtype, attrs["i"].value) == ("bool", 1) and (attrs["j"].dtype, attrs["j"].value) == ("int32", -3)
    assert attrs["k"] == float("-inf")


@pytest.mark.parametrize(
    "text, match",
    [
        ("[1, 2]", "expected a dict; got tuple"),
        ('{"a": n}', "undefined variable 'n'"),
        ('{"a": 1', "invalid syntax"),
        ('{1.5: 1}', "keys must be strings or ints"),
        ('{"a": R.str("x")}', "unknown function 'R.str'"),
        ('{"a": b"x"}', "unsupported literal"),
        ('{"a": lambda: 1}', "unsupported expression"),
        ('{"a": T.int64(1.5)}', "takes an integer literal"),
        ('{**x}', "'\\*\\*' in a dict"),
    ],
)
def test_parse_attr_dict_errors(text, match):
    with pytest.raises(ParseError, match=match):
        pft.parse_attr_dict(text)


# ------------------------------------------------------------------------------ signature_only_text
def test_signature_only_text_golden():
    n = PrimVar("n")
    f = PrimFunc(
        [PrimFuncParam("A", "float32", (IntImm(2), IntImm(3, "int32"), n, n * 2)), PrimFuncParam("n", "int64"),
         PrimFuncParam("a.b", "handle")],
        {"tirx.noalias": True, "ub": {"n": IntImm(64)}},
    )
    assert pft.signature_only_text("my.kernel", f) == (
        "@T.prim_func\n"
        'def my_kernel(A: T.Buffer((T.int64(2), 3, n, "n * T.int64(2)"), "float32"), n: T.int64, a_b: T.handle):\n'
        '    T.func_attr({"tirx.noalias": True, "ub": {"n": T.int64(64)}})\n'
        "    T.evaluate(0)\n"
    )
    assert pft.signature_only_text("k", sig_func(None, private=True)) == (
        '@T.prim_func(private=True)\ndef k(A: T.Buffer((T.int64(4),), "float32")):\n    T.evaluate(0)\n'
    )


def test_signature_only_text_rejects_values_without_a_spelling():
    with pytest.raises(IRError, match="unsupported attribute value .* of type TensorType"):
        pft.signature_only_text("k", sig_func({"t": TensorType((2,), "float32")}))


# ------------------------------------------------------------------------------ synced_text
BODY_TEXT = (
    "@T.prim_func(private=True, s_tir=True)\n"
    'def f(A: T.Buffer((4,), "float32")):\n'
    "    n = T.int64()\n"
    '    T.func_attr({"tirx.noalias": True})\n'
    "    A[0] = T.float32(1)\n"
)


def test_synced_text_unchanged_is_the_same_object():
    assert pft.synced_text(BODY_TEXT, {"tirx.noalias": True}, True) is BODY_TEXT
    # another spelling of the same attrs is kept as written
    text = BODY_TEXT.replace('{"tirx.noalias": True}', "{'tirx.noalias' : True}")
    assert pft.synced_text(text, {"tirx.noalias": True}, True) is text


def test_synced_text_changes_private_and_attrs():
    out = pft.synced_text(BODY_TEXT, {"tirx.noalias": True, "layout_free_buffers": (0,)}, False)
    assert out.split("\n")[0] == "@T.prim_func(s_tir=True)"
    assert out.split("\n")[3] == '    T.func_attr({"layout_free_buffers": [0], "tirx.noalias": True})'
    assert out.split("\n")[4] == "    A[0] = T.float32(1)"
    removed = pft.synced_text(BODY_TEXT, {}, True)
    assert "T.func_attr" not in removed and removed.count("\n") == BODY_TEXT.count("\n") - 1
    bare = BODY_TEXT.replace('    T.func_attr({"tirx.noalias": True})\n', "").replace("(private=True, s_tir=True)", "")
    added = pft.synced_text(bare, {"k": 1}, True)
    assert added.split("\n")[:3] == ["@T.prim_func(private=True)", 'def f(A: T.Buffer((4,), "float32")):', '    T.func_attr({"k": 1})']
    # 1, True and IntImm(1) are different attr values
    assert '"tirx.noalias": 1' in pft.synced_text(BODY_TEXT, {"tirx.noalias": 1}, True)


def test_synced_text_leaves_a_multi_line_attr_dict_as_read():
    text = '@T.prim_func\ndef f(A: T.Buffer((4,), "float32")):\n    T.func_attr({\n        "a": 1})\n    A[0] = 0\n'
    assert pft.synced_text(text, {"b": 2}, False) is text


# ------------------------------------------------------------------------------ with_attrs
def test_with_attrs_copies_with_synced_text():
    _, f = pft.read_prim_func(BODY_TEXT)
    g = pft.with_attrs(f, {**f.attrs, "layout_free_buffers": (0,)})
    assert g is not f and g.params is f.params and g.private and f.attrs == {"tirx.noalias": True}
    assert g.text == pft.synced_text(BODY_TEXT, g.attrs, True)
    _, back = pft.read_prim_func(g.text)
    assert back.attrs == g.attrs
    # the printer prints the synced text unchanged
    printed = script(IRModule({"f": g}))
    assert '        T.func_attr({"layout_free_buffers": [0], "tirx.noalias": True})\n' in printed
    assert parse(printed)["f"].attrs == g.attrs
    public = pft.with_attrs(f, {}, private=False)
    assert not public.private and public.text.startswith("@T.prim_func(s_tir=True)\n") and "T.func_attr" not in public.text


def test_with_attrs_writes_the_text_when_first_read():
    _, f = pft.read_prim_func(BODY_TEXT)
    attrs = {**f.attrs, "layout_free_buffers": (0,)}
    g = pft.with_attrs(f, attrs)
    attrs["layout_free_buffers"] = (1,)  # the caller's dict changing afterwards changes nothing
    assert object.__getattribute__(g, "_load") is not None  # unwritten yet
    assert g.reference_text() is BODY_TEXT  # scans for references read the base, not the copy
    assert g.attrs == {"tirx.noalias": True, "layout_free_buffers": (0,)}
    assert g.text == pft.synced_text(BODY_TEXT, {"tirx.noalias": True, "layout_free_buffers": (0,)}, True)
    assert object.__getattribute__(g, "_load") is None and g.reference_text() is g.text
    # a copy of a copy: references still come from the first text while both are unwritten
    h = pft.with_attrs(pft.with_attrs(f, {"a": 1}), {"b": 2})
    assert h.reference_text() is BODY_TEXT and h.text == pft.synced_text(BODY_TEXT, {"b": 2}, True)


def test_lazy_text_checks_its_arguments():
    _, f = pft.read_prim_func(BODY_TEXT)
    with pytest.raises(IRError, match="needs a callable; got str"):
        PrimFunc.lazy_text(f.params, {}, True, "text", f)
    with pytest.raises(IRError, match="the PrimFunc the text derives from; got NoneType"):
        PrimFunc.lazy_text(f.params, {}, True, lambda: BODY_TEXT, None)
    with pytest.raises(IRError, match="parameter 0 must be a PrimFuncParam"):
        PrimFunc.lazy_text([1], {}, True, lambda: BODY_TEXT, f)


def test_with_attrs_of_a_signature_only_prim_func():
    g = pft.with_attrs(sig_func({"a": 1}), {"b": 2})
    assert g.text is None and g.attrs == {"b": 2}


def test_with_attrs_checks_its_arguments():
    with pytest.raises(IRError, match="takes a PrimFunc; got Var"):
        pft.with_attrs(Var("x"), {})
    with pytest.raises(IRError, match="attrs must be a dict; got list"):
        pft.with_attrs(sig_func(), [("a", 1)])


# ------------------------------------------------------------------------------ renamed_text / normalized_text
def test_renamed_text():
    out = pft.renamed_text(BODY_TEXT, "g")
    assert out.split("\n")[1] == 'def g(A: T.Buffer((4,), "float32")):' and out.split("\n")[2:] == BODY_TEXT.split("\n")[2:]
    assert pft.renamed_text(BODY_TEXT, "f") is BODY_TEXT
    assert pft.renamed_text(BODY_TEXT, "a.b").split("\n")[1].startswith("def a_b(")
    assert pft.renamed_text("no def here", "g") == "no def here"


def test_normalized_text():
    other = BODY_TEXT.replace("def f(", "def   renamed(").replace("    A[0]", "\n\n        A[0]")
    assert pft.normalized_text(BODY_TEXT) == pft.normalized_text(other)
    assert pft.normalized_text(BODY_TEXT) != pft.normalized_text(BODY_TEXT.replace("1)", "2)"))
    assert pft.normalized_text(None) is None


# ------------------------------------------------------------------------------ signature_typevars
def test_signature_typevars():
    text = '@T.prim_func\ndef f(A: T.Buffer((n, "m * T.int64(2)", 4), "float32", offset_factor=k), B: T.Buffer((n,), "int8")):\n    T.evaluate(0)\n'
    assert pft.signature_typevars(text) == ["n", "m", "k"]
    assert pft.signature_typevars(ADD_TEXT) == ["n"]  # the scalar parameter n, used in a dim
    assert pft.signature_typevars("@T.prim_func\n") == []


def test_parameter_spans():
    toks = ["def", "f", "(", "a", ":", "T.Buffer", "(", "(", "2", ",", "3", ")", ",", '"f"', ")", ",", "n", ":", "T.int64", ")", ":"]
    assert pft.parameter_spans(toks) == ([(3, 15), (16, 19)], 19)
    assert pft.parameter_spans(["def", "f", "(", ")", ":"]) == ([], 3)
    assert pft.parameter_spans(["def", "f", "(", "a", ":", "T.int64", ",", ")", ":"]) == ([(3, 6)], 7)
    assert pft.parameter_spans(["def", "f", "(", "a", ":", "(", "x"])[1] is None


# ------------------------------------------------------------------------------ value rules
def test_number_prim_and_negated():
    n32 = PrimVar("k", "int32")
    assert (pft.number_prim(3).value, pft.number_prim(3).dtype) == (3, "int64")
    assert pft.number_prim(3, n32).dtype == "int32" and pft.number_prim(3, None, "int32").dtype == "int32"
    assert (pft.number_prim(True).value, pft.number_prim(True).dtype) == (1, "bool")
    assert pft.number_prim(1.5).dtype == "float64" and pft.number_prim(1.5, None, "int32", "float32").dtype == "float32"
    assert pft.number_prim("3") is None and pft.number_prim(None) is None
    assert pft.negated(3) == -3 and pft.negated(1.5) == -1.5
    neg = pft.negated(IntImm(4, "int32"))
    assert (type(neg), neg.value, neg.dtype) == (IntImm, -4, "int32")
    sub = pft.negated(n32)
    assert isinstance(sub, Sub) and sub.a.value == 0 and sub.a.dtype == "int32" and sub.b is n32
    assert pft.negated("x") is None and pft.negated(True) is None


def test_binary_value_and_min_max():
    n = PrimVar("n")

    def as_prim(v, other):
        return pft.number_prim(v, other, "int32") if not isinstance(v, PrimExpr) else v

    assert pft.binary_value("//", 7, 2, as_prim) == 3 and pft.binary_value("%", 7.0, 2, as_prim) == 1.0
    with pytest.raises(ZeroDivisionError):
        pft.binary_value("%", 1, 0, as_prim)
    e = pft.binary_value("*", 2, n, as_prim)
    assert isinstance(e, Mul) and e.a.dtype == "int64" and e.b is n  # 2 takes n's dtype
    m = pft.min_max("T.min", n, 4, as_prim)
    assert type(m).__name__ == "Min" and m.a is n and (m.b.value, m.b.dtype) == (4, "int64")
    assert type(pft.min_max("T.max", 4, n, as_prim)).__name__ == "Max"


def test_dtype_literal_and_float_value():
    assert (pft.dtype_literal("int64", 5).value, pft.dtype_literal("int64", 5).dtype) == (5, "int64")
    assert pft.dtype_literal("int8", IntImm(3)).dtype == "int8"
    assert pft.dtype_literal("float16", "-inf").value == float("-inf")
    assert pft.dtype_literal("bool", 2).value == 1
    for dtype, value, match in [("float32", "x", "takes a number"), ("bool", 1.5, "True or False"),
                                ("handle", 0, "not a value"), ("int32", 1.5, "integer literal")]:
        with pytest.raises(ValueError, match=match):
            pft.dtype_literal(dtype, value)
    assert pft.float_value(["inf"], {}) == float("inf") and pft.float_value([2], {}) == 2.0
    with pytest.raises(ValueError, match="takes one number or string"):
        pft.float_value([1, 2], {})
    with pytest.raises(ValueError, match="is not a number"):
        pft.float_value(["x"], {})


# ------------------------------------------------------------------------------ spelling
def test_format_prim_tir_and_relax_spelling():
    n, m = PrimVar("n"), PrimVar("m")
    assert pft.format_prim(IntImm(4)) == "4" and pft.format_prim(IntImm(4), tir=True) == "T.int64(4)"
    assert pft.format_prim(IntImm(4, "int32")) == "T.int32(4)" and pft.format_prim(IntImm(4, "int32"), tir=True) == "4"
    assert pft.format_prim(IntImm(1, "bool")) == "T.bool(True)"
    assert pft.format_prim(FloatImm(float("inf"), "float32")) == 'T.float32(float("inf"))'
    assert pft.format_prim((n + m) * 2) == "(n + m) * 2"
    assert pft.format_prim(n - (m - 1)) == "n - (m - 1)"
    assert pft.format_prim(Sub(n, m), rename={"n": "n_1"}) == "n_1 - m"
    with pytest.raises(IRError, match="cannot write PrimExpr"):
        pft.format_prim(object())


def test_format_attr_value_and_dict():
    assert pft.format_attr_value([1, (True, None), {"b": 1.5, "a": "x"}]) == '[1, [True, None], {"a": "x", "b": 1.5}]'
    assert pft.format_attr_value(IntImm(128)) == "T.int64(128)" and pft.format_attr_value(PrimVar("n") + 1) == "n + 1"
    assert pft.format_attr_value(np.int32(3)) == "3"
    assert pft.format_attr_value(VDevice("llvm", 1, "global")) == 'I.vdevice("llvm", 1, "global")'
    assert pft.format_attr_dict({"b": 1, "a": 2, "global_symbol": "f"}, skip=("global_symbol",)) == '{"a": 2, "b": 1}'
    t = TensorType((2,), "float32")
    assert pft.format_attr_value(t, lambda v: "TYPE" if v is t else None) == "TYPE"
    with pytest.raises(IRError, match="unsupported attribute value"):
        pft.format_attr_value(t, lambda v: None)


def test_literals_and_identifiers():
    assert pft.str_literal('a"b\n') == '"a\\"b\\n"'
    assert pft.float_literal(1.0) == "1.0" and pft.float_literal(float("nan")) == 'float("nan")'
    assert pft.float_literal(float("-inf")) == 'float("-inf")'
    assert [pft.identifier(s) for s in ("x", "a.b", "", "1x", "é")] == ["x", "a_b", "v", "v1x", "_"]
    assert "int64" in pft.DTYPE_NAMES and "handle" in pft.DTYPE_NAMES


# ------------------------------------------------------------------------------ layering
def _imports(path):
    tree = ast.parse(Path(path).read_text())
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            out.add("." * node.level + (node.module or ""))
            out.update("." * node.level + a.name for a in node.names if node.module is None)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return out


def test_printer_and_parser_do_not_import_each_other():
    text = Path(pft.__file__).parent
    parser = sorted(p.stem for p in text.glob("parse*.py"))  # parser.py and the parse_*.py it is split into
    assert "parser" in parser and len(parser) > 1
    parser_names = {f".{m}" for m in parser} | {f"memcore_py.ir.text.{m}" for m in parser}
    assert not parser_names & _imports(text / "printer.py")
    for m in parser:
        assert not {".printer", "memcore_py.ir.text.printer"} & _imports(text / f"{m}.py"), m
    assert not ({".printer"} | parser_names) & _imports(text / "prim_func_text.py")
