"""An operator TVM has and memcore does not model, read through the bridge as an opaque op
(``memcore_py.ir.op.opaque_op``): its name and TVM's purity, nothing else; the native and
pure memory passes then plan it as TVM does (``test_three_way.py``,
``test_native_passes_accept_an_unmodelled_op``)."""
from __future__ import annotations

import pytest

tvm = pytest.importorskip("tvm")

import memcore_py.tvm as mtvm  # noqa: E402
from memcore_py.errors import IRError  # noqa: E402
from memcore_py.ir.op import get_op, is_opaque, is_registered, opaque_op  # noqa: E402
from memcore_py.tvm import TVMConversionError  # noqa: E402
from _helpers import tvm_from_source  # noqa: E402

pytestmark = pytest.mark.oracle

HEAD = "# from tvm.script import ir as I\n# from tvm.script import relax as R\n@I.ir_module\nclass Module:\n"


def _module(body: str):
    return tvm_from_source(HEAD + body)


def test_an_unmodelled_op_reads_as_an_opaque_op_with_tvms_purity_and_type():
    m = _module("""    @R.function(pure=False)
    def main(x: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
        y: R.Tensor((2, 3), dtype="float32") = R.ewise_fma(x, x, x)
        z: R.Tensor((2, 3), dtype="float32") = R.add(y, x)
        return z
""")
    assert not is_registered("relax.ewise_fma")
    ours = mtvm.from_tvm(m)
    (b0, b1) = ours["main"].body.blocks[0].bindings
    op = b0.value.op
    assert is_opaque(op) and op.name == "relax.ewise_fma" and op.pure
    assert not op.shares_storage and op.kill_role is None and op.type_rule is None
    assert op is opaque_op("relax.ewise_fma", pure=True)  # one object per operator
    assert not is_opaque(b1.value.op) and b1.value.op is get_op("relax.add")
    assert str(b0.value.ty) == str(b0.var.ty)  # TVM's type, carried by the call
    assert "R.ewise_fma(x, x, x)" in ours.script()
    tvm.ir.assert_structural_equal(mtvm.to_tvm(ours), m)


def test_an_impure_unmodelled_op_is_impure():
    m = _module("""    @R.function(pure=False)
    def main(x: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
        _: R.Tuple = R.print(x, format="x: {}")
        return x
""")
    ours = mtvm.from_tvm(m)
    op = ours["main"].body.blocks[0].bindings[0].value.op
    assert is_opaque(op) and not op.pure
    tvm.ir.assert_structural_equal(mtvm.to_tvm(ours), m)


def test_an_unmodelled_op_with_attributes_is_a_typed_refusal():
    m = _module("""    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
        y: R.Tensor((2, 3), dtype="float32") = R.ccl.allreduce(x, "sum", True)
        return y
""")
    with pytest.raises(TVMConversionError, match="relax.ccl.allreduce"):
        mtvm.from_tvm(m)


def test_a_registered_op_is_not_opaque():
    with pytest.raises(IRError, match="is registered"):
        opaque_op("relax.add", pure=True)
    assert not is_opaque(get_op("relax.add"))
