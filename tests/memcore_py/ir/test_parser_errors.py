"""Bad input: every failure is a ParseError with line, column and the offending source line;
never another exception, never a hang."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memcore_py import parse
from memcore_py.errors import IRError, MemcoreError, ParseError
from memcore_py.ir.text.parser import MAX_DEPTH

from _helpers import TVM_PRINTED_DIR as DATA

GOOD = (DATA / "6_1_chain_planned.txt").read_text()

HEAD = '@R.function\ndef main(x: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):\n'


def fn(*body):
    return HEAD + "".join("    " + line + "\n" for line in body)


def check(text, match, line=None, column=None, **kw):
    with pytest.raises(ParseError, match=match) as info:
        parse(text, **kw)
    err = info.value
    assert isinstance(err, IRError) and isinstance(err, MemcoreError) and isinstance(err, ValueError)
    assert err.line >= 1 and err.column >= 1, (err.line, err.column)
    if line is not None:
        assert err.line == line
    if column is not None:
        assert err.column == column
    lines = text.split("\n") if isinstance(text, str) else []
    if lines and err.line <= len(lines):
        assert err.source_line == lines[err.line - 1].rstrip("\r")
    return err


# ------------------------------------------------------------------------------ truncated text
def test_truncated_in_an_open_bracket():
    cut = GOOD[: GOOD.index("R.shape([24])") + 9]
    err = check(cut, "never closed")
    assert "R.memory.alloc_storage(R.shape(" in err.source_line


def test_truncated_after_a_decorator_or_a_def():
    check("@I.ir_module\n", "class")
    check("@R.function\n", "def")
    check(HEAD, "no body")
    check(fn('y: R.Tensor((2, 3), dtype="float32") = R.add(x, x)'), "no 'return'")


def test_truncated_module_everywhere_raises_parse_error_or_parses():
    step = max(1, len(GOOD) // 150)
    for n in range(0, len(GOOD), step):
        try:
            parse(GOOD[:n])
        except ParseError as err:
            assert err.line >= 0 and err.column >= 0


def test_empty_or_comment_only_text():
    for text in ("", "   \n\n", "# just a comment\n"):
        with pytest.raises(ParseError, match="no module or function"):
            parse(text)


# ------------------------------------------------------------------------------ unknown names
def test_unknown_operator():
    err = check(fn("y = R.frobnicate(x)", "return y"), "unknown operator 'R.frobnicate'", line=3, column=9)
    assert "relax.frobnicate" in str(err)


def test_undefined_variable():
    check(fn("y = R.add(x, zz)", "return y"), "undefined variable 'zz'", line=3, column=18)
    check(fn("return q"), "undefined variable 'q'", line=3)
    check(HEAD.replace("(2, 3)", "(n, 3)", 1) + "    return x\n", "undefined variable 'n'", line=2)


def test_undefined_module_function():
    text = GOOD.replace("cls.add(x, x, alloc)", "cls.nosuch(x, x, alloc)")
    check(text, "no function 'nosuch'")


def test_undefined_decorator_and_top_level_garbage():
    check("@R.fun\ndef f():\n    return x\n", "unsupported decorator")
    check("x = 1\n", "expected @I.ir_module")
    check("import tvm\n", "import statements")


# ------------------------------------------------------------------------------ malformed shapes
def test_malformed_shapes():
    check(fn('y: R.Tensor((2, "3 +"), dtype="float32") = x', "return y"), "dimension string")
    check(fn("y = R.shape([2, 3.5])", "return x"), "must be an integer")
    check(fn('y: R.Tensor((2, 3), dtype="complex64") = x', "return y"), "unknown dtype")
    check(fn('y: R.Tensor((2, 3), dtype="float32", ndim=3) = x', "return y"), "ndim=3")
    check(fn("y = R.shape(2, 3)", "return x"), "R.shape takes one list")
    check(fn('y: R.Tensor([2, [3]], dtype="float32") = x', "return y"), "symbolic integer")


# ------------------------------------------------------------------------------ argument counts
def test_wrong_argument_counts_use_the_registry():
    check(fn("y = R.add(x)", "return y"), r"R.add takes 2 arguments; got 1", line=3, column=9)
    check(fn("y = R.exp(x, x, x)", "return y"), "R.exp takes at most 1 arguments")
    check(fn("R.memory.kill_tensor()", "return x"), "R.memory.kill_tensor takes 1 arguments; got 0")
    check(fn('y = R.builtin.alloc_tensor(R.shape([2, 3]))', "return y"), "takes 3 to 4 arguments; got 1")
    check(fn("y = R.match_cast(x)", "return y"), "R.match_cast takes a value and a type")
    check(fn('y = R.call_tir(x)', "return y"), "R.call_tir takes")


# ------------------------------------------------------------------------------ duplicates
def test_duplicate_names():
    check(fn("y = R.add(x, x)", "y = R.add(x, x)", "return y"), "duplicate definition of 'y'", line=4)
    check(HEAD.replace("x: R.Tensor((2, 3), dtype=\"float32\")", "x: R.Tensor, x: R.Tensor") + "    return x\n", "duplicate parameter")
    two = GOOD.replace("def multiply(", "def add(")
    check(two, "duplicate function name 'add'")
    check(fn("y = x", "with R.dataflow():", "    z = R.add(y, y)", "    R.output(z, z)", "return z"), "listed twice")


# ------------------------------------------------------------------------------ deep nesting
def test_deeply_nested_expression():
    deep = "(" * 5000 + "x" + ")" * 5000
    check(fn(f"y = {deep}", "return y"), f"nested deeper than {MAX_DEPTH}")
    deep_list = "R.shape(" + "[" * 3000 + "]" * 3000 + ")"
    check(fn(f"y = {deep_list}", "return x"), "nested deeper")


def test_deeply_nested_statements():
    body = []
    for k in range(200):
        body.append("    " * k + "if c:")
    text = '@R.function\ndef main(c: R.Tensor((), dtype="bool")):\n' + "".join("    " + line + "\n" for line in body)
    with pytest.raises(ParseError):
        parse(text)
    lines = []
    for k in range(MAX_DEPTH + 5):
        lines.append("    " * (k + 1) + "if c:")
    inner = "    " * (MAX_DEPTH + 6) + "r = c"
    tail = []
    for k in reversed(range(MAX_DEPTH + 5)):
        tail.append("    " * (k + 2) + "r = c")
        tail.append("    " * (k + 1) + "else:")
        tail.append("    " * (k + 2) + "r = c")
    text = '@R.function\ndef main(c: R.Tensor((), dtype="bool")):\n' + "\n".join(lines + [inner] + tail) + "\n    return r\n"
    check(text, "nested deeper than")


# ------------------------------------------------------------------------------ garbage
def test_garbage_bytes():
    check(fn("y = R.add(x, \x00x)", "return y"), r"invalid character U\+0000 \(a control character\)", column=18)
    check(fn("y = R.add(x, x) $", "return y"), "unexpected '\\$'")
    check("\x00\x01\x02", "expected @I.ir_module")
    check(fn('y = R.str("abc', "return x"), "never closed|unterminated|unexpected")
    with pytest.raises(ParseError, match="not valid UTF-8") as info:
        parse(b"@R.function\n\xff\xfe")
    assert info.value.line == 2
    with pytest.raises(ParseError, match="takes TVMScript text"):
        parse(12345)


def test_other_structural_errors():
    check(fn("if x:", "    y = x", "return y"), "needs an 'else:'")
    check(fn("else:", "return x"), "without a matching 'if'")
    check(fn("with R.dataflow():", "    y = R.add(x, x)", "return y"), "must end with R.output")
    check(fn("R.output(x)", "return x"), "outside a dataflow block")
    check(fn("y = x", 'R.func_attr({"a": 1})', "return y"), "must come first", line=4)
    check(fn("return x", "y = x"), "statement after 'return'")
    check(fn("y = x", "    return y"), "unexpected indentation")
    check(fn("with R.dataflow():", "    y = R.add(x, x)", "    R.output(q)", "return x"), "not defined in this dataflow block")
    check(fn('y: R.Tensor((2, 3), dtype="float32") = metadata["k"][0]', "return y"), "out of range", metadata={"k": []})


# ------------------------------------------------------------------------------ fuzzing
_CORPUS = [p.read_text() for p in sorted(DATA.glob("*.txt"))]
_SNIPPETS = [
    "(", ")", "[", "]", ",", ":", "=", ".", "#", '"', "'", " ", "\n", "\t", "\x00", "é", "R.", "T.", "cls.",
    "def ", "if c:", "else:", "with R.dataflow():", "return ", "    ", "R.add(", "metadata[", "-", "1e", "@",
]


@st.composite
def _mutated(draw):
    text = draw(st.sampled_from(_CORPUS))
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.integers(0, 4))
        i = draw(st.integers(0, len(text)))
        if kind == 0:  # delete a span
            j = min(len(text), i + draw(st.integers(1, 40)))
            text = text[:i] + text[j:]
        elif kind == 1:  # insert
            text = text[:i] + draw(st.sampled_from(_SNIPPETS)) + text[i:]
        elif kind == 2:  # replace one character
            text = text[:i] + draw(st.characters()) + text[i + 1:]
        elif kind == 3:  # truncate
            text = text[:i]
        else:  # duplicate a line
            lines = text.split("\n")
            k = draw(st.integers(0, len(lines) - 1))
            lines.insert(draw(st.integers(0, len(lines))), lines[k])
            text = "\n".join(lines)
    return text


@settings(max_examples=300, deadline=2000, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(_mutated())
def test_mutated_text_parses_or_raises_parse_error(text):
    try:
        parse(text)
    except ParseError as err:
        assert err.line >= 0 and err.column >= 0
        assert isinstance(err.msg, str) and err.msg
