"""``R.assert_op`` (emitted by TVM's torch importer for ``_assert_*`` nodes): impure, void,
stored as TVM stores it ``(cond, format, *format_args)`` and written with ``format`` as a
keyword after the variadic arguments, as TVM prints it."""
from __future__ import annotations

import pytest

import memcore_py
from memcore_py.errors import ParseError
from memcore_py.ir.expr import Call, StringImm
from memcore_py.ir.well_formed import well_formed
from _helpers import tvm_from_source

TEXT = """# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function(pure=False)
    def main(x: R.Tensor((), dtype="bool"), y: R.Tensor((2,), dtype="float32")) -> R.Tensor((2,), dtype="float32"):
        R.assert_op(x, y, format=R.str("value {}"))
        R.assert_op(x, format=R.str(""))
        return y
"""


def test_parse_print_and_structure():
    mod = memcore_py.parse(TEXT)
    b0, b1 = mod["main"].body.blocks[0].bindings
    assert isinstance(b0.value, Call) and b0.value.op.name == "relax.assert_op" and not b0.value.op.pure
    assert [type(a).__name__ for a in b0.value.args] == ["Var", "StringImm", "Var"]
    assert b0.value.args[1].value == "value {}" and len(b1.value.args) == 2
    assert well_formed(mod)
    assert mod.script().split("class Module:")[1] == TEXT.split("class Module:")[1]


def test_format_must_be_a_string():
    with pytest.raises(ParseError, match="format must be a string"):
        memcore_py.parse(TEXT.replace('format=R.str("")', "format=3"))
    with pytest.raises(ParseError, match="needs a condition"):
        memcore_py.parse(TEXT.replace('R.assert_op(x, format=R.str(""))', "R.assert_op()"))


def test_not_allowed_in_a_dataflow_block():
    text = TEXT.replace('''        R.assert_op(x, y, format=R.str("value {}"))
        R.assert_op(x, format=R.str(""))
        return y''', '''        with R.dataflow():
            R.assert_op(x, format=R.str(""))
            z = R.add(y, y)
            R.output(z)
        return z''')
    assert not well_formed(memcore_py.parse(text))


@pytest.mark.oracle
def test_tvm_reads_our_text_into_its_own_module():
    tvm = pytest.importorskip("tvm")
    ours = memcore_py.parse(TEXT).script()
    tvm.ir.assert_structural_equal(tvm_from_source(ours), tvm_from_source(TEXT))
    assert StringImm("a").value == "a"
