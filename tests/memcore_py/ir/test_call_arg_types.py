"""Calls of Relax functions are checked against the callee's parameter types, as TVM's
normalizer checks them ("Argument 0 type mismatch"): a provably wrong argument (kind, dtype,
rank, a different constant dim; TVM's kFailL0) or a wrong count is refused; what cannot be
disproved (symbolic dims, R.Object, unknown rank) is accepted."""
from __future__ import annotations

import pytest

import memcore_py
from memcore_py.errors import ParseError
from _helpers import tvm_from_source

TEXT = """# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function(private=True)
    def helper(a: R.Tensor(({dims}), dtype="float32")) -> R.Tensor(dtype="float32"):
        return a

    @R.function
    def main(w: R.Tensor(({arg}), dtype="{dtype}")):
        cls = Module
        m = cls.helper({args})
        return m
"""

CASES = [  # (param dims, arg dims, arg dtype, args, accepted)
    ("2, 3", "2, 3", "float32", "w", True),
    ('"n", 3', "2, 3", "float32", "w", True),  # symbolic: binds n = 2
    ("2, 3", "3,", "float32", "w", False),  # rank
    ("2, 3", "2, 4", "float32", "w", False),  # constant dim
    ("2, 3", "2, 3", "int32", "w", False),  # dtype
    ("2, 3", "2, 3", "float32", "w, w", False),  # arity
]


@pytest.mark.parametrize("dims, arg, dtype, args, ok", CASES)
def test_call_arguments_are_checked(dims, arg, dtype, args, ok):
    text = TEXT.format(dims=dims, arg=arg, dtype=dtype, args=args)
    if ok:
        memcore_py.parse(text)
    else:
        with pytest.raises(ParseError, match=r"call to 'helper'.*(argument 0 type mismatch|takes 1 arguments)"):
            memcore_py.parse(text)


@pytest.mark.oracle
@pytest.mark.parametrize("dims, arg, dtype, args, ok", CASES)
def test_tvm_agrees(dims, arg, dtype, args, ok):
    pytest.importorskip("tvm")
    text = TEXT.format(dims=dims, arg=arg, dtype=dtype, args=args)
    if ok:
        tvm_from_source(text)
    else:
        with pytest.raises(Exception):  # noqa: B017 - TVM's parser raises errors of its own kinds
            tvm_from_source(text)
