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


CAST = """# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32")):
        y = R.add(x, x)
        z = R.match_cast(y, R.Tensor((2, 3), dtype="float32"))
        w = R.match_cast(y, R.Tensor(dtype="float32", ndim=2))
        return w
"""


def test_the_match_casts_are_listed_and_only_they_take_a_same_type_fact():
    func = memcore_py.parse(CAST)["main"]
    table, _reader = read_function_table(func.body, "main", "SomePass")
    casts = table.match_cast_refs()
    assert [item for item, _ref in casts] == [1, 2]  # the items after y's binding
    b = func.body.blocks[0].bindings
    assert [ref for _item, ref in casts] == [id(b[1]), id(b[2])]  # memcore IR: the object's address
    table.set_same_type(2, True)  # a reader of TVM's objects records TVM's answer so
    for bad in (0, 3, -1, 99):  # a VarBinding, the result, out of range
        with pytest.raises(ValueError, match=f"item {bad} is not a MatchCast"):
            table.set_same_type(bad, True)
