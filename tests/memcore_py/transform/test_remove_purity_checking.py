"""RemovePurityChecking. Expected modules are TVM 0.27.0.post1's output for the same input."""
import pytest

from memcore_py.ir.expr import BindingBlock, Call, ExternFunc, Function, SeqExpr, Var, VarBinding
from memcore_py.ir.op import get_op
from memcore_py.ir.types import FuncType, TensorType
from memcore_py.testing.lowering_programs import assert_pass_output, module_from_text
from memcore_py.transform import RemovePurityChecking
from memcore_py.transform.remove_purity_checking import ATTR_FORCE_PURE, remove_purity_checking

T = 'R.Tensor((16, 32), dtype="float32")'


def test_pure_call_unwrapped_and_function_forced_pure():
    before = """
    @I.ir_module
    class Module:
        @R.function
        def main(x: R.Tensor((16, 32), "float32")):
            y = R.call_pure_packed("my_f", x, R.prim_value(1), ty_args=(R.Tensor((16, 32), "float32"),))
            z = R.add(y, y)
            return z
    """
    expected = f"""
    @I.ir_module
    class Module:
        @R.function
        def main(x: {T}) -> {T}:
            R.func_attr({{"relax.force_pure": True}})
            y: {T} = R.call_packed("my_f", x, 1, ty_args=({T},))
            z: {T} = R.add(y, y)
            return z
    """
    after = assert_pass_output(RemovePurityChecking(), before, expected)
    call = after["main"].body.blocks[0].bindings[0].value
    assert isinstance(call.op, ExternFunc) and call.op.global_symbol == "my_f"


def test_impure_function_keeps_its_attributes_but_calls_are_unwrapped():
    before = """
    @I.ir_module
    class Module:
        @R.function(pure=False)
        def main(x: R.Tensor((16, 32), "float32")):
            y = R.call_pure_packed("my_f", x, ty_args=(R.Tensor((16, 32), "float32"),))
            return y
    """
    expected = f"""
    @I.ir_module
    class Module:
        @R.function(pure=False)
        def main(x: {T}) -> {T}:
            y: {T} = R.call_packed("my_f", x, ty_args=({T},))
            return y
    """
    after = assert_pass_output(RemovePurityChecking(), before, expected)
    assert ATTR_FORCE_PURE not in after["main"].attrs


def test_already_forced_function():
    before = """
    @I.ir_module
    class Module:
        @R.function
        def main(x: R.Tensor((16, 32), "float32")):
            R.func_attr({"relax.force_pure": True})
            return x
    """
    expected = f"""
    @I.ir_module
    class Module:
        @R.function
        def main(x: {T}) -> {T}:
            R.func_attr({{"relax.force_pure": True}})
            return x
    """
    assert_pass_output(RemovePurityChecking(), before, expected)


@pytest.mark.no_verify(reason="a dataflow block fed to RemovePurityChecking without ToNonDataflow first: the unwrapped call_packed is impure inside it, as in TVM")
def test_tuple_result_in_dataflow_block():
    before = """
    @I.ir_module
    class Module:
        @R.function
        def main(x: R.Tensor((16, 32), "float32")):
            with R.dataflow():
                y = R.call_pure_packed("my_f", x, ty_args=(R.Tuple(R.Tensor((16, 32), "float32"), R.Tensor((16, 32), "float32")),))
                z = y[0]
                R.output(z)
            return z
    """
    expected = f"""
    @I.ir_module
    class Module:
        @R.function
        def main(x: {T}) -> {T}:
            R.func_attr({{"relax.force_pure": True}})
            with R.dataflow():
                y: R.Tuple({T}, {T}) = R.call_packed("my_f", x, ty_args=(R.Tuple({T}, {T}),))
                z: {T} = y[0]
                R.output(z)
            return z
    """
    assert_pass_output(RemovePurityChecking(), before, expected)


def test_every_function_and_existing_attributes():
    before = """
    @I.ir_module
    class Module:
        @R.function
        def f(x: R.Tensor((16, 32), "float32")):
            y = R.call_pure_packed("my_f", x, ty_args=(R.Tensor((16, 32), "float32"),))
            return y

        @R.function(private=True)
        def g(x: R.Tensor((16, 32), "float32")):
            R.func_attr({"num_input": 1})
            return x
    """
    expected = f"""
    @I.ir_module
    class Module:
        @R.function
        def f(x: {T}) -> {T}:
            R.func_attr({{"relax.force_pure": True}})
            y: {T} = R.call_packed("my_f", x, ty_args=({T},))
            return y

        @R.function(private=True)
        def g(x: {T}) -> {T}:
            R.func_attr({{"num_input": 1, "relax.force_pure": True}})
            return x
    """
    assert_pass_output(RemovePurityChecking(), before, expected)
    assert RemovePurityChecking.name == "remove-purity-checking"


def test_nested_function_is_forced_pure_too():
    """Built directly (the parser reads no nested functions)."""
    ty = TensorType((16, 32), "float32")
    a = Var("a", ty)
    b = Var("b", ty)
    inner_call = Call(get_op("relax.call_pure_packed"), [ExternFunc("my_g"), a], ty_args=(ty,), ty=ty)
    inner = Function([a], SeqExpr([BindingBlock([VarBinding(b, inner_call)])], b), ty)
    x = Var("x", ty)
    f = Var("f", FuncType([ty], ty))
    z = Var("z", ty)
    outer = Function([x], SeqExpr([BindingBlock([VarBinding(f, inner), VarBinding(z, Call(f, [x], ty=ty))])], z), ty)
    out = remove_purity_checking(outer)
    assert out.attrs == {ATTR_FORCE_PURE: True}
    new_inner = out.body.blocks[0].bindings[0].value
    assert new_inner.attrs == {ATTR_FORCE_PURE: True}
    call = new_inner.body.blocks[0].bindings[0].value
    assert isinstance(call.op, ExternFunc) and call.args == (a,) and call.ty_args == (ty,)


def test_module_level_pass_on_unchanged_impure_module():
    mod = module_from_text("""
    @I.ir_module
    class Module:
        @R.function(pure=False)
        def main(x: R.Tensor((16, 32), "float32")):
            return x
    """)
    assert RemovePurityChecking()(mod) is mod
