"""read_function_table: one function of memcore IR read into the binding table, for the passes
that read it whole; what the reader cannot read is the asking pass's PassError."""
from __future__ import annotations

import pytest

import memcore_py
from memcore_py.analysis.function_table import read_function_table
from memcore_py.errors import PassError

TEXT = """# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32")):
        with R.dataflow():
            z = R.add(x, x)
            R.output(z)
        return z
"""


def test_a_function_is_read_with_or_without_the_callee_flags():
    from memcore_py._compiled import load_compiled

    func = memcore_py.parse(TEXT)["main"]
    inplace = load_compiled("memcore_py.analysis._binding_table").CALLEE_INPLACE
    table, reader = read_function_table(func.body, "main", "SomePass")
    assert table.n_functions == 1 and table.block_is_dataflow == [True]
    assert table.binding_calls(inplace) == []  # no callee property given
    table, _reader = read_function_table(func.body, "main", "SomePass", with_callee_flags=True)
    assert table.binding_calls(inplace) == [(0, 0)]  # R.add: computed in place


def test_what_the_reader_cannot_read_is_a_pass_error_naming_the_function():
    with pytest.raises(PassError, match="function 'f': the body must be a SeqExpr"):
        read_function_table(memcore_py.ir.Tuple(()), "f", "SomePass")
