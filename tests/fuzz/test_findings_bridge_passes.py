"""Regression tests for the bridge campaign's findings on the memory passes (issue 32, B8 and
B10 in FUZZING.md): memcore's native pass on TVM's objects and memcore's pass on TVM's text
must agree, and each must agree with TVM's own pass (the oracle) on what it reads.

- B8, DataflowUseInplaceCalls: a binding name repeated in one function (TVM's IR allows it;
  its printer renames the repeats ``v_1``, ``v_2`` ...). The in-place PrimFuncs are named after
  their call's arguments, so their buffers differ by those renames between the two paths
  (DIFFERENCES.md, the bridge, ``duplicate-binding-names``): per PrimFunc, and in a text
  whose own function name is not its module name.
- B10, KillAfterLastUse: a function whose declared return type is not a base of its body's
  type gets the body's type when the pass rebuilds it; TVM's type of a prim value holds no
  value, so neither does that return type.
"""
from __future__ import annotations

import pytest

tvm = pytest.importorskip("tvm")
from tvm import relax  # noqa: E402  (after the importorskip above)

import memcore_py  # noqa: E402
import memcore_py.tvm as mtvm  # noqa: E402
from memcore_py import transform  # noqa: E402
from memcore_py.ir import structural_equal  # noqa: E402
from memcore_py.ir.expr import PrimFunc  # noqa: E402
from memcore_py.ir.module import IRModule  # noqa: E402
from memcore_py.testing import fuzz_bridge  # noqa: E402
from _helpers import tvm_from_source  # noqa: E402

pytestmark = pytest.mark.oracle

HEAD = "# from tvm.script import ir as I\n# from tvm.script import tirx as T\n# from tvm.script import relax as R\n"


def _module(body: str):
    return tvm_from_source(HEAD + "@I.ir_module\nclass Module:\n" + body)


def _bridge_listed(m) -> list:
    """``fuzz_bridge.check_bridge(m)`` holds; the DIFFERENCES.md entries it met."""
    info: dict = {}
    assert fuzz_bridge.check_bridge(m, info) is None
    return info["listed"]


def _both_paths_equal_tvm(name: str, m):
    """memcore's pass ``name`` on ``m``'s objects equals TVM's on ``m``, and memcore's on
    ``m``'s text equals TVM's on TVM's reading of that text; returns (native output read
    back with ``from_tvm``, memcore's output on the text)."""
    kwargs = fuzz_bridge.BRIDGE_PASSES[name]
    native = getattr(mtvm, name)(**kwargs)(m)
    assert fuzz_bridge._module_mismatch(native, getattr(relax.transform, name)()(m)) is None
    text = m.script()
    on_text = getattr(transform, name)(**kwargs)(memcore_py.parse(text))
    theirs_on_text = getattr(relax.transform, name)()(tvm_from_source(text))
    assert fuzz_bridge._module_mismatch(mtvm.to_tvm(on_text), theirs_on_text) is None
    return mtvm.from_tvm(native), on_text


# ------------------------------------------------------------------------------ B8
#: One name bound six times: TVM's text says ``v``, ``v_1`` ... ``v_6``; the in-place
#: PrimFuncs' buffers are ``v`` from the objects and ``v_1``, ``v_3``, ``v_4`` from the text.
_REBOUND = '''    @R.function
    def main(x: R.Tensor((3,), dtype="int32"), y: R.Tensor((3,), dtype="int32"), w: R.Tensor((), dtype="int32")):
        with R.dataflow():
            v = R.nn.relu(y)
            v = R.multiply(y, R.const(3, "int32"))
            v = R.nn.relu(v)
            v = R.nn.relu(v)
            v = R.multiply(w, v)
            v = R.add(x, v)
            v = R.add(v, v)
            out = R.nn.relu(v)
            R.output(out)
        return out
'''

#: Two in-place subtractions: TVM names the second PrimFunc ``subtract_inplace1`` in the
#: module and in its text; memcore's text of it says ``def subtract_inplace``.
_TWO_SUBTRACTIONS = '''    @R.function
    def main(x: R.Tensor((2, 8), "float32"), y: R.Tensor((2, 8), "float32")) -> R.Tensor((2, 8), "float32"):
        with R.dataflow():
            p = R.add(x, y)
            p = R.add(y, x)
            a = R.subtract(p, x)
            b = R.subtract(x, a)
            R.output(b)
        return b
'''


@pytest.mark.parametrize("body", [_REBOUND, _TWO_SUBTRACTIONS], ids=["one-name-rebound", "two-subtractions"])
def test_inplace_buffers_differ_by_the_printers_renames_only(body):
    """Both paths equal TVM's pass on what they read; their outputs differ by the renames of
    TVM's printer only, which the checker recognises (``duplicate-binding-names``)."""
    m = _module(body)
    native, on_text = _both_paths_equal_tvm("DataflowUseInplaceCalls", m)
    assert not structural_equal(native, on_text)
    assert fuzz_bridge._printer_renames_explain(native, on_text)
    assert _bridge_listed(m) == ["duplicate-binding-names"]


def test_a_prim_func_differing_beyond_the_renames_is_still_a_difference():
    """A changed operator, a name that is not the native name plus ``_<n>``, or two names
    merged into one are not renames."""
    native, on_text = _both_paths_equal_tvm("DataflowUseInplaceCalls", _module(_TWO_SUBTRACTIONS))
    f = on_text["subtract_inplace1"]
    for edit in (("] - ", "] + "), ("p_1", "q"), ("p_1", "x")):
        changed = PrimFunc(f.params, f.attrs, f.text.replace(*edit), f.private)
        functions = {gv: (changed if gv.name == "subtract_inplace1" else g) for gv, g in on_text.functions.items()}
        other = IRModule(functions, on_text.attrs, on_text.global_infos)
        assert not fuzz_bridge._printer_renames_explain(native, other), edit


# ------------------------------------------------------------------------------ B10
@pytest.mark.parametrize("ret", ['R.Tensor((), dtype="float32")', 'R.Tensor((2,), dtype="float32")'])
def test_a_return_type_kill_after_last_use_rederives_holds_no_prim_value(ret):
    """The body ``(0,)`` contradicts the declared return type, so the pass gives the function
    the body's type: ``R.Tuple(T.int64)`` in TVM, without the value ``0`` memcore's type of
    the literal holds; the pass on the text equals TVM's output read back."""
    m = _module(f'''    @R.function
    def main(x: R.Tensor((2,), "float32")) -> {ret}:
        t = (x, x)
        g = t[1]
        return (0,)
''')
    theirs = relax.transform.KillAfterLastUse()(m)
    assert theirs["main"].ret_ty.script() == "T.Tuple(T.int64)"
    native, on_text = _both_paths_equal_tvm("KillAfterLastUse", m)
    assert structural_equal(on_text, mtvm.from_tvm(theirs))
    assert structural_equal(native, on_text)
    assert on_text["main"].ret_ty.fields[0].value is None
    _bridge_listed(m)  # other passes leave the function alone: a listed difference, not this one
