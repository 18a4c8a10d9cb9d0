"""ToNonDataflow. Expected modules are TVM 0.27.0.post1's output for the same input."""
from memcore_py.ir.expr import (
    BindingBlock,
    Call,
    DataflowBlock,
    DataflowVar,
    Function,
    SeqExpr,
    Var,
    VarBinding,
)
from memcore_py.ir.op import get_op
from memcore_py.ir.types import FuncType, TensorType
from memcore_py.testing.lowering_programs import assert_pass_output, module_from_text
from memcore_py.transform import ToNonDataflow
from memcore_py.transform.to_non_dataflow import to_non_dataflow

T4 = 'R.Tensor((4,), dtype="float32")'


def test_blocks_become_one_binding_block():
    """Dataflow blocks become binding blocks and, with the surrounding binding blocks,
    one block (TVM's mutator merges adjacent blocks of the same kind)."""
    before = """
    @I.ir_module
    class Module:
        @R.function
        def main(x: R.Tensor((4,), "float32")):
            a = R.add(x, x)
            with R.dataflow():
                b = R.add(a, a)
                c = R.add(b, b)
                d = R.add(c, x)
                R.output(d)
            e = R.add(d, d)
            with R.dataflow():
                f = R.add(e, e)
                g = R.multiply(f, f)
                R.output(g)
            return g
    """
    expected = f"""
    @I.ir_module
    class Module:
        @R.function
        def main(x: {T4}) -> {T4}:
            a: {T4} = R.add(x, x)
            b: {T4} = R.add(a, a)
            c: {T4} = R.add(b, b)
            d: {T4} = R.add(c, x)
            e: {T4} = R.add(d, d)
            f: {T4} = R.add(e, e)
            g: {T4} = R.multiply(f, f)
            return g
    """
    after = assert_pass_output(ToNonDataflow(), before, expected)
    blocks = after["main"].body.blocks
    assert len(blocks) == 1 and type(blocks[0]) is BindingBlock
    assert all(type(b.var) is Var for b in blocks[0].bindings)


def test_dataflow_vars_in_tuples_and_get_items():
    before = """
    @I.ir_module
    class Module:
        @R.function
        def main(x: R.Tensor((4,), "float32")):
            with R.dataflow():
                b = R.add(x, x)
                t = (b, x)
                c = t[0]
                R.output(c)
            return c
    """
    expected = f"""
    @I.ir_module
    class Module:
        @R.function
        def main(x: {T4}) -> {T4}:
            b: {T4} = R.add(x, x)
            t: R.Tuple({T4}, {T4}) = b, x
            c: {T4} = t[0]
            return c
    """
    assert_pass_output(ToNonDataflow(), before, expected)


def test_if_after_a_dataflow_block():
    before = """
    @I.ir_module
    class Module:
        @R.function
        def main(x: R.Tensor((4,), "float32"), c: R.Tensor((), "bool")):
            with R.dataflow():
                b = R.add(x, x)
                R.output(b)
            if c:
                d = R.add(b, b)
                r = d
            else:
                r = x
            return r
    """
    expected = f"""
    @I.ir_module
    class Module:
        @R.function
        def main(x: {T4}, c: R.Tensor((), dtype="bool")) -> {T4}:
            b: {T4} = R.add(x, x)
            if c:
                d: {T4} = R.add(b, b)
                r: {T4} = d
            else:
                r: {T4} = x
            return r
    """
    assert_pass_output(ToNonDataflow(), before, expected)


def test_function_without_dataflow_is_unchanged():
    mod = module_from_text("""
    @I.ir_module
    class Module:
        @R.function
        def main(x: R.Tensor((4,), "float32")):
            a = R.add(x, x)
            return a
    """)
    assert ToNonDataflow()(mod) is mod
    assert ToNonDataflow.name == "to-non-dataflow"


def test_nested_function_body_is_converted():
    """Built directly (the parser reads no nested functions): the inner function's
    dataflow block and DataflowVars are converted too."""
    ty = TensorType((4,), "float32")
    add = get_op("relax.add")
    a = Var("a", ty)
    lv = DataflowVar("lv", ty)
    gv = Var("gv", ty)
    inner = Function([a], SeqExpr([DataflowBlock([VarBinding(lv, Call(add, [a, a], ty=ty)),
                                                  VarBinding(gv, Call(add, [lv, lv], ty=ty))])], gv), ty)
    x = Var("x", ty)
    f = Var("f", FuncType([ty], ty))
    y = Var("y", ty)
    outer = Function([x], SeqExpr([BindingBlock([VarBinding(f, inner), VarBinding(y, Call(f, [x], ty=ty))])], y), ty)
    out = to_non_dataflow(outer)
    new_inner = out.body.blocks[0].bindings[0].value
    block = new_inner.body.blocks[0]
    assert type(block) is BindingBlock
    lv2, gv2 = (b.var for b in block.bindings)
    assert type(lv2) is Var and lv2.name == "lv" and lv2.ty is ty
    assert block.bindings[1].value.args == (lv2, lv2)
