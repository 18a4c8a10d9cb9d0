"""Golden tests of the TVMScript printer, one construct per test.

Expected texts are written by hand in the format Apache TVM 0.27 prints (see the data files
in tests/data/tvm_printed/ for TVM's own output), except where the printer documents a
deliberate difference (TVM's form would not parse back).
"""
import numpy as np
import pytest

from memcore_py.errors import IRError
from memcore_py.ir import (
    BindingBlock,
    Call,
    Constant,
    DataflowBlock,
    DataflowVar,
    DataTypeImm,
    ExternFunc,
    FloatImm,
    FuncType,
    Function,
    GlobalVar,
    If,
    IntImm,
    IRModule,
    MatchCast,
    ObjectType,
    PrimFunc,
    PrimFuncParam,
    PrimType,
    PrimValue,
    PrimVar,
    SeqExpr,
    ShapeExpr,
    ShapeType,
    StringImm,
    TensorType,
    Tuple,
    TupleGetItem,
    TupleType,
    Var,
    VarBinding,
    get_op,
)
from memcore_py.ir.text.printer import format_binding, format_expr, format_prim, format_type, script

T23 = TensorType((2, 3), "float32")
VOID = TupleType(())
HEADER_R = "# from tvm.script import ir as I\n# from tvm.script import relax as R\n\n"
HEADER_TR = (
    "# from tvm.script import ir as I\n# from tvm.script import tirx as T\n"
    "# from tvm.tirx.layout import Axis\n# from tvm.script import relax as R\n\n"
)


def op(name):
    return get_op("relax." + name)


def main_module(bindings, body, params, ret_ty=None, attrs=None, blocks=None, extra=None, pure=True):
    attrs = dict(attrs or {})
    attrs.setdefault("global_symbol", "main")
    if blocks is None:
        blocks = [BindingBlock(bindings)] if bindings else []
    funcs = {"main": Function(params, SeqExpr(blocks, body), ret_ty, attrs, pure)}
    funcs.update(extra or {})
    return IRModule(funcs)


def body_lines(text):
    """The lines of the last function after its 'def' line."""
    lines = text.rstrip("\n").split("\n")
    last_def = max(i for i, line in enumerate(lines) if line.lstrip().startswith("def "))
    return [line.strip() for line in lines[last_def + 1:]]


def test_module_layout_and_header():
    x = Var("x", T23)
    y = Var("y", T23)
    mod = main_module([VarBinding(y, Call(op("add"), [x, x]))], y, [x], T23)
    assert script(mod) == HEADER_R + (
        "@I.ir_module\n"
        "class Module:\n"
        "    @R.function\n"
        '    def main(x: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):\n'
        '        y: R.Tensor((2, 3), dtype="float32") = R.add(x, x)\n'
        "        return y\n"
    )


def test_private_impure_and_func_attr():
    x = Var("x", T23)
    f = Function([x], SeqExpr([], x), T23, {"relax.force_pure": True, "tir_var_upper_bound": {"n": 128}}, is_pure=False)
    text = script(IRModule({"f": f}))
    assert "    @R.function(pure=False, private=True)\n    def f(" in text
    assert '        R.func_attr({"relax.force_pure": True, "tir_var_upper_bound": {"n": 128}})\n' in text


def test_global_symbol_hidden_when_it_is_the_name():
    x = Var("x", T23)
    text = script(main_module([], x, [x], T23, attrs={"global_symbol": "main", "num_input": 1}))
    assert '        R.func_attr({"num_input": 1})\n' in text
    assert "global_symbol" not in text
    assert "    @R.function\n" in text


def test_function_order_prim_funcs_first_main_last():
    x = Var("x", T23)
    sig = [PrimFuncParam("a", "float32", (IntImm(2), IntImm(3)))]
    funcs = {
        "main": Function([x], SeqExpr([], x), T23, {"global_symbol": "main"}),
        "zeta": PrimFunc(sig, private=True),
        "b": Function([Var("x", T23)], SeqExpr([], x), T23, {"global_symbol": "b"}),
        "a": Function([Var("x", T23)], SeqExpr([], x), T23, {"global_symbol": "a"}),
        "add": PrimFunc(sig, private=True),
    }
    defs = [line.split("(")[0].strip() for line in script(IRModule(funcs)).splitlines() if line.strip().startswith("def ")]
    assert defs == ["def add", "def zeta", "def a", "def b", "def main"]


def test_signature_only_prim_func():
    n = PrimVar("n")
    pf = PrimFunc(
        [
            PrimFuncParam("A", "float32", (IntImm(2), n)),
            PrimFuncParam("B", "int32", (IntImm(4, "int32"),)),
            PrimFuncParam("k", "int64"),
        ],
        attrs={"tirx.noalias": True},
        private=True,
    )
    assert script(IRModule({"f": pf})) == (
        "# from typing import TypeVar\n"
        "# from tvm.script import ir as I\n# from tvm.script import tirx as T\n# from tvm.tirx.layout import Axis\n\n"
        'n = TypeVar("n")\n'
        "@I.ir_module\n"
        "class Module:\n"
        "    @T.prim_func(private=True)\n"
        '    def f(A: T.Buffer((T.int64(2), n), "float32"), B: T.Buffer((4,), "int32"), k: T.int64):\n'
        '        T.func_attr({"tirx.noalias": True})\n'
        "        T.evaluate(0)\n"
    )


def test_prim_func_text_printed_unchanged_and_renamed():
    text = (
        "@T.prim_func(private=True, s_tir=True)\n"
        'def add(a: T.Buffer((T.int64(2),), "float32")):\n'
        "    # with T.sblock(\"root\"):\n"
        "    for i in range(T.int64(2)):\n"
        "        a[i] = a[i] + T.float32(1.0)\n"
    )
    pf = PrimFunc([PrimFuncParam("a", "float32", (IntImm(2),))], text=text, private=True)
    out = script(IRModule({"add": pf}))
    assert "\n".join("    " + line for line in text.rstrip("\n").split("\n")) in out
    renamed = script(IRModule({"add2": pf}))
    assert "    def add2(a:" in renamed


def test_direct_dps_call_is_hidden_with_cls_alias():
    x = Var("x", T23)
    alloc = Var("alloc", T23)
    y = Var("y", T23)
    add = GlobalVar("add")
    alloc_call = Call(op("builtin.alloc_tensor"), [ShapeExpr([2, 3]), DataTypeImm("float32"), PrimValue(0), StringImm("global")], ty_args=[T23])
    bindings = [VarBinding(alloc, alloc_call), VarBinding(Var("_", VOID), Call(add, [x, x, alloc])), VarBinding(y, alloc)]
    sig = [PrimFuncParam(p, "float32", (IntImm(2), IntImm(3))) for p in "abc"]
    mod = main_module(bindings, y, [x], T23, attrs={"relax.force_pure": True}, extra={"add": PrimFunc(sig, private=True)})
    assert body_lines(script(mod)) == [
        'R.func_attr({"relax.force_pure": True})',
        "cls = Module",
        'alloc: R.Tensor((2, 3), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("float32"), 0, R.str("global"))',
        "cls.add(x, x, alloc)",
        'y: R.Tensor((2, 3), dtype="float32") = alloc',
        "return y",
    ]


def test_used_void_binding_is_printed_with_its_name():
    x = Var("x", T23)
    c = Var("c", VOID)
    f = Var("f", ObjectType())
    bindings = [
        VarBinding(c, Call(ExternFunc("foo"), [x], ty_args=[VOID])),
        VarBinding(f, Call(ExternFunc("bar"), [c], ty_args=[ObjectType()])),
    ]
    lines = body_lines(script(main_module(bindings, f, [x], ObjectType(), pure=False)))
    assert lines == [
        'c: R.Tuple = R.call_packed("foo", x, ty_args=(R.Tuple,))',
        'f: R.Any = R.call_packed("bar", c, ty_args=(R.Any,))',
        "return f",
    ]


def test_kill_ops_are_statements():
    x = Var("x", T23)
    st = Var("storage", ObjectType())
    t = Var("alloc", T23)
    bindings = [
        VarBinding(st, Call(op("memory.alloc_storage"), [ShapeExpr([24]), PrimValue(0), StringImm("global"), DataTypeImm("float32")])),
        VarBinding(t, Call(op("memory.alloc_tensor"), [st, PrimValue(0), ShapeExpr([2, 3]), DataTypeImm("float32"), PrimValue(0)])),
        VarBinding(Var("_", VOID), Call(op("memory.kill_storage"), [st])),
        VarBinding(Var("_", VOID), Call(op("memory.kill_tensor"), [t])),
        VarBinding(Var("_", VOID), Call(op("vm.kill_object"), [x])),
    ]
    assert body_lines(script(main_module(bindings, x, [x], T23, pure=False))) == [
        'storage: R.Any = R.memory.alloc_storage(R.shape([24]), 0, R.str("global"), R.dtype("float32"))',
        'alloc: R.Tensor((2, 3), dtype="float32") = R.memory.alloc_tensor(storage, 0, R.shape([2, 3]), R.dtype("float32"), 0)',
        "R.memory.kill_storage(storage)",
        "R.memory.kill_tensor(alloc)",
        "R.vm.kill_object(x)",
        "return x",
    ]


def test_dataflow_block_with_outputs():
    x = Var("x", T23)
    lv = DataflowVar("lv", T23)
    gv = Var("gv", T23)
    block = DataflowBlock([VarBinding(lv, Call(op("exp"), [x])), VarBinding(gv, Call(op("add"), [lv, x]))])
    text = script(main_module(None, gv, [x], T23, blocks=[block]))
    assert body_lines(text) == [
        "with R.dataflow():",
        'lv: R.Tensor((2, 3), dtype="float32") = R.exp(x)',
        'gv: R.Tensor((2, 3), dtype="float32") = R.add(lv, x)',
        "R.output(gv)",
        "return gv",
    ]
    assert "        with R.dataflow():\n            lv:" in text


def test_if_else_branch_results():
    x = Var("x", T23)
    c = Var("c", TensorType((), "bool"))
    t = Var("t", T23)
    then = SeqExpr([BindingBlock([VarBinding(t, Call(op("multiply"), [x, x]))])], t)
    other = SeqExpr([], x)
    r = Var("r", T23)
    text = script(main_module([VarBinding(r, If(c, then, other))], r, [x, c], T23))
    assert body_lines(text) == [
        "if c:",
        't: R.Tensor((2, 3), dtype="float32") = R.multiply(x, x)',
        'r: R.Tensor((2, 3), dtype="float32") = t',
        "else:",
        'r: R.Tensor((2, 3), dtype="float32") = x',
        "return r",
    ]


def test_match_cast_and_body_symbolic_declaration():
    y = Var("y", TensorType(None, "float32", 2))
    k, j = PrimVar("k"), PrimVar("j")
    tk = TensorType((k, j), "float32")
    a = Var("a", tk)
    s = Var("s", ShapeType((k * 2, j)))
    bindings = [MatchCast(a, y, tk), VarBinding(s, ShapeExpr([k * 2, j]))]
    lines = body_lines(script(main_module(bindings, a, [y], y.ty)))
    assert lines == [
        "k = T.int64()",
        "j = T.int64()",
        'a: R.Tensor((k, j), dtype="float32") = R.match_cast(y, R.Tensor((k, j), dtype="float32"))',
        "s: R.Shape([k * 2, j]) = R.shape([k * 2, j])",
        "return a",
    ]


def test_signature_symbolic_vars_become_module_typevars():
    n, m = PrimVar("n"), PrimVar("m")
    x = Var("x", TensorType((n, 4), "float32"))
    y = Var("y", TensorType((n * 2, m), "float32"))
    text = script(main_module([], x, [x, y], x.ty))
    assert text.startswith("# from typing import TypeVar\n")
    assert '\nm = TypeVar("m")\nn = TypeVar("n")\n@I.ir_module\n' in text
    assert 'def main(x: R.Tensor((n, 4), dtype="float32"), y: R.Tensor(("n * 2", m), dtype="float32")) -> R.Tensor((n, 4), dtype="float32"):' in text
    assert "T.int64()" not in text


def test_body_symbolic_var_clashing_with_a_typevar_is_renamed():
    """TVM cannot declare ``n = T.int64()`` where ``n`` is a module TypeVar."""
    n_f, n_g = PrimVar("n"), PrimVar("n")
    x = Var("x", TensorType((n_f, 4), "float32"))
    f = Function([x], SeqExpr([], x), x.ty, {"global_symbol": "f"})
    y = Var("y", TensorType(None, "float32", 1))
    tn = TensorType((n_g,), "float32")
    a = Var("a", tn)
    g = Function([y], SeqExpr([BindingBlock([MatchCast(a, y, tn)])], a), y.ty, {"global_symbol": "main"})
    lines = body_lines(script(IRModule({"f": f, "main": g})))
    assert lines == [
        "n_1 = T.int64()",
        'a: R.Tensor((n_1,), dtype="float32") = R.match_cast(y, R.Tensor((n_1,), dtype="float32"))',
        "return a",
    ]


def test_call_tir_family():
    x = Var("x", T23)
    add = GlobalVar("add")
    t2 = TupleType([T23, T23])
    a, t, b = Var("a", T23), Var("t", t2), Var("b", TensorType(None, "float32", 2))
    c, d = Var("c", T23), Var("d", T23)
    bindings = [
        VarBinding(a, Call(op("call_tir"), [add, Tuple([x, x])], ty_args=[T23])),
        VarBinding(t, Call(op("call_tir"), [add, Tuple([a])], ty_args=[t2])),
        VarBinding(b, Call(op("call_tir"), [add, Tuple([x])], ty_args=[T23])),
        VarBinding(c, Call(op("call_tir_inplace"), [add, Tuple([a, x])], {"inplace_indices": (1,)}, [T23])),
        VarBinding(d, Call(op("call_dps_packed"), [ExternFunc("ext"), Tuple([c])], ty_args=[T23])),
    ]
    sig = [PrimFuncParam(p, "float32", (IntImm(2), IntImm(3))) for p in "abc"]
    lines = body_lines(script(main_module(bindings, d, [x], T23, extra={"add": PrimFunc(sig, private=True)})))
    assert lines == [
        "cls = Module",
        'a = R.call_tir(cls.add, (x, x), out_ty=R.Tensor((2, 3), dtype="float32"))',
        't = R.call_tir(cls.add, (a,), out_ty=[R.Tensor((2, 3), dtype="float32"), R.Tensor((2, 3), dtype="float32")])',
        'b: R.Tensor(dtype="float32", ndim=2) = R.call_tir(cls.add, (x,), out_ty=R.Tensor((2, 3), dtype="float32"))',
        'c: R.Tensor((2, 3), dtype="float32") = R.call_tir_inplace(cls.add, (a, x), out_ty=R.Tensor((2, 3), dtype="float32"), inplace_indices=[1])',
        'd = R.call_dps_packed("ext", (c,), out_ty=R.Tensor((2, 3), dtype="float32"))',
        "return d",
    ]


def test_packed_calls():
    x = Var("x", T23)
    a, b, c = Var("a", T23), Var("b", T23), Var("c", ObjectType())
    bindings = [
        VarBinding(a, Call(op("call_pure_packed"), [ExternFunc("f"), x], ty_args=[T23])),
        VarBinding(b, Call(op("call_inplace_packed"), [ExternFunc("g"), a], {"inplace_indices": (0,)}, [T23])),
        VarBinding(c, Call(ExternFunc("h"), [b, PrimValue(IntImm(4, "int32")), PrimValue(FloatImm(1.5, "float32")), StringImm("s"), DataTypeImm("int8")], ty_args=[ObjectType()])),
    ]
    assert body_lines(script(main_module(bindings, x, [x], T23, pure=False)))[:3] == [
        'a: R.Tensor((2, 3), dtype="float32") = R.call_pure_packed("f", x, ty_args=(R.Tensor((2, 3), dtype="float32"),))',
        'b: R.Tensor((2, 3), dtype="float32") = R.call_inplace_packed("g", a, inplace_indices=[0], ty_args=(R.Tensor((2, 3), dtype="float32"),))',
        'c: R.Any = R.call_packed("h", b, T.int32(4), T.float32(1.5), R.str("s"), R.dtype("int8"), ty_args=(R.Any,))',
    ]


def test_vm_ops():
    x = Var("x", T23)
    s, t = Var("s", ObjectType()), Var("t", T23)
    add = GlobalVar("add")
    bindings = [
        VarBinding(s, Call(op("vm.alloc_storage"), [ShapeExpr([24]), PrimValue(0), DataTypeImm("uint8"), StringImm("global")])),
        VarBinding(t, Call(op("vm.alloc_tensor"), [s, PrimValue(0), ShapeExpr([2, 3]), DataTypeImm("float32"), PrimValue(0)])),
        VarBinding(Var("_", VOID), Call(op("vm.call_tir_dyn"), [add, Tuple([x, t])])),
    ]
    sig = [PrimFuncParam(p, "float32", (IntImm(2), IntImm(3))) for p in "ab"]
    assert body_lines(script(main_module(bindings, t, [x], T23, pure=False, extra={"add": PrimFunc(sig, private=True)}))) == [
        "cls = Module",
        's: R.Any = R.vm.alloc_storage(R.shape([24]), 0, R.dtype("uint8"), R.str("global"))',
        't: R.Tensor((2, 3), dtype="float32") = R.vm.alloc_tensor(s, 0, R.shape([2, 3]), R.dtype("float32"), 0)',
        "R.vm.call_tir_dyn(cls.add, (x, t))",
        "return t",
    ]


def test_op_attributes_in_registry_order():
    x = Var("x", TensorType((4, 4), "float32"))
    t2 = TupleType([TensorType((2, 4), "float32")] * 2)
    t = Var("t", t2)
    s = Var("s", TensorType((1, 4), "float32"))
    bindings = [
        VarBinding(t, Call(op("split"), [x], {"axis": 0, "indices_or_sections": 2})),
        VarBinding(s, Call(op("sum"), [x], {"keepdims": True, "axis": (0,)})),
    ]
    lines = body_lines(script(main_module(bindings, s, [x], s.ty)))
    assert lines[0].endswith("= R.split(x, indices_or_sections=2, axis=0)")
    assert lines[1].endswith("= R.sum(x, axis=[0], keepdims=True)")


def test_tuples_and_get_items():
    x = Var("x", T23)
    t = Var("t", TupleType([T23, T23]))
    one = Var("one", TupleType([T23]))
    nest = Var("nest", TupleType([TupleType([T23])]))
    g = Var("g", T23)
    e = Var("e", VOID)
    bindings = [
        VarBinding(t, Tuple([x, x])),
        VarBinding(one, Tuple([x])),
        VarBinding(nest, Tuple([Tuple([x])])),
        VarBinding(g, TupleGetItem(t, 1)),
        VarBinding(e, Tuple([])),
    ]
    body = Tuple([g, t])
    lines = body_lines(script(main_module(bindings, body, [x])))
    assert lines == [
        't: R.Tuple(R.Tensor((2, 3), dtype="float32"), R.Tensor((2, 3), dtype="float32")) = x, x',
        'one: R.Tuple(R.Tensor((2, 3), dtype="float32")) = (x,)',
        'nest: R.Tuple(R.Tuple(R.Tensor((2, 3), dtype="float32"))) = ((x,),)',
        'g: R.Tensor((2, 3), dtype="float32") = t[1]',
        "R.tuple()",
        "return (g, t)",
    ]


def test_constants():
    x = Var("x", T23)
    names = "abcdefg"
    values = [
        Constant(np.array(1.5, "float32")),
        Constant(np.array(-np.inf, "float32")),
        Constant(np.array(np.nan, "float32")),
        Constant(np.array(0.1, "float32")),
        Constant(np.array(True)),
        Constant(np.array([[1, 2], [3, 4]], "int32")),
        Constant(None, TensorType((2, 3), "float32"), meta=("relax.expr.Constant", 0)),
    ]
    bindings = [VarBinding(Var(n, v.ty), v) for n, v in zip(names, values)]
    lines = body_lines(script(main_module(bindings, x, [x], T23)))
    assert [line.split(" = ", 1)[1] for line in lines[:-1]] == [
        'R.const(1.5, "float32")',
        'R.const(float("-inf"), "float32")',
        'R.const(float("nan"), "float32")',
        'R.const(0.10000000149011612, "float32")',
        'R.const(True, "bool")',
        'R.const([[1, 2], [3, 4]], "int32")',
        'metadata["relax.expr.Constant"][0]',
    ]


def test_prim_values():
    x = Var("x", T23)
    n = PrimVar("n")
    xn = Var("xn", TensorType((n,), "float32"))
    p, q, r, s = Var("p", PrimType("int64")), Var("q", PrimType("int32")), Var("r", PrimType("int64")), Var("s", None)
    c = Var("c", ObjectType())
    bindings = [
        VarBinding(p, PrimValue(3)),
        VarBinding(q, PrimValue(IntImm(7, "int32"))),
        VarBinding(r, PrimValue(n + 1)),
        VarBinding(s, PrimValue(5)),
        VarBinding(c, Call(ExternFunc("f"), [PrimValue(0), PrimValue(IntImm(1, "bool")), PrimValue(n * 2)], ty_args=[ObjectType()])),
    ]
    lines = body_lines(script(main_module(bindings, x, [x, xn], T23, pure=False)))
    assert lines == [
        "p: T.int64 = 3",
        "q: T.int32 = 7",
        "r: T.int64 = n + 1",
        "s = R.prim_value(5)",
        'c: R.Any = R.call_packed("f", 0, T.bool(True), n * 2, ty_args=(R.Any,))',
        "return x",
    ]


def test_prim_value_argument_of_a_module_function_is_explicit():
    x = Var("x", T23)
    helper = Function([Var("x", T23), Var("p", PrimType("int64"))], SeqExpr([], x), T23, {})
    y = Var("y", T23)
    mod = main_module([VarBinding(y, Call(GlobalVar("helper"), [x, PrimValue(3)]))], y, [x], T23, extra={"helper": helper})
    assert 'y: R.Tensor((2, 3), dtype="float32") = cls.helper(x, R.prim_value(3))' in script(mod)


def test_types():
    n = PrimVar("n")
    cases = [
        (TensorType((2, 3), "float32"), 'R.Tensor((2, 3), dtype="float32")'),
        (TensorType((), "bool"), 'R.Tensor((), dtype="bool")'),
        (TensorType((n,), "int32"), 'R.Tensor((n,), dtype="int32")'),
        (TensorType((2, 3)), "R.Tensor((2, 3))"),
        (TensorType(None, "float32", 2), 'R.Tensor(dtype="float32", ndim=2)'),
        (TensorType(None, "float32"), 'R.Tensor(dtype="float32")'),
        (TensorType(), "R.Tensor"),
        (TensorType((2, 3), "float32", vdevice="llvm:0:global"), 'R.Tensor((2, 3), dtype="float32", vdevice="llvm:0:global")'),
        (TupleType([]), "R.Tuple"),
        (TupleType([T23, PrimType("int64")]), 'R.Tuple(R.Tensor((2, 3), dtype="float32"), R.Prim("int64"))'),
        (ShapeType((2, n)), "R.Shape([2, n])"),
        (ShapeType(None, 2), "R.Shape(ndim=2)"),
        (ShapeType(None, -1), "R.Shape(ndim=-1)"),
        (PrimType("int64"), "T.int64"),
        (ObjectType(), "R.Any"),
        (FuncType([T23], T23, True), 'R.Callable((R.Tensor((2, 3), dtype="float32"),), R.Tensor((2, 3), dtype="float32"), True)'),
        (FuncType(None, None, False), "R.Callable"),
    ]
    for ty, text in cases:
        assert format_type(ty) == text


def test_prim_expressions_minimal_parentheses():
    n, m = PrimVar("n"), PrimVar("m")
    from memcore_py.ir import Max, Min

    cases = [
        ((n + 1) * 2, "(n + 1) * 2"),
        (n - (m - 1), "n - (m - 1)"),
        (n - m - 1, "n - m - 1"),
        (n // (m * 2), "n // (m * 2)"),
        (4 * (m * n), "4 * (m * n)"),
        (n * m * 4, "n * m * 4"),
        (n % 3, "n % 3"),
        (Min(n, m), "T.min(n, m)"),
        (Max(n - m, IntImm(1)), "T.max(n - m, 1)"),
        (n * -1, "n * -1"),
    ]
    for e, text in cases:
        assert format_prim(e) == text
    assert format_prim(n * 2, tir=True) == "n * T.int64(2)"
    assert format_prim(IntImm(3, "int32"), tir=True) == "3"


def test_duplicate_and_reserved_names_are_renamed():
    x = Var("x", T23)
    a1, a2 = Var("storage", T23), Var("storage", T23)
    r = Var("R", T23)
    bindings = [VarBinding(a1, Call(op("exp"), [x])), VarBinding(a2, Call(op("exp"), [a1])), VarBinding(r, Call(op("exp"), [a2]))]
    lines = body_lines(script(main_module(bindings, r, [x], T23)))
    assert [line.split(":")[0] for line in lines[:3]] == ["storage", "storage_1", "R_1"]
    assert lines[1].endswith("R.exp(storage)") and lines[2].endswith("R.exp(storage_1)")
    assert lines[-1] == "return R_1"


def test_lone_function_and_format_helpers():
    x = Var("x", T23)
    y = Var("y", T23)
    b = VarBinding(y, Call(op("add"), [x, x]))
    f = Function([x], SeqExpr([BindingBlock([b])], y), T23, {"global_symbol": "main"})
    assert script(f) == (
        "# from tvm.script import relax as R\n\n"
        "@R.function\n"
        'def main(x: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):\n'
        '    y: R.Tensor((2, 3), dtype="float32") = R.add(x, x)\n'
        "    return y\n"
    )
    assert format_binding(b) == 'y: R.Tensor((2, 3), dtype="float32") = R.add(x, x)'
    assert format_expr(Call(op("add"), [x, y])) == "R.add(x, y)"


def test_module_attrs_and_sort_option():
    x = Var("x", T23)
    funcs = {"z": Function([x], SeqExpr([], x), T23, {"global_symbol": "z"}), "a": Function([Var("x", T23)], SeqExpr([], x), T23, {"global_symbol": "a"})}
    mod = IRModule(funcs, attrs={"attr": 10})
    text = script(mod, sort_functions=False, module_name="Mod")
    assert "class Mod:\n    I.module_attrs({\"attr\": 10})\n    @R.function\n    def z(" in text


def test_printer_errors():
    with pytest.raises(IRError, match="script\\(\\) takes"):
        script(42)
    with pytest.raises(IRError, match="module_name"):
        script(IRModule({}), module_name="not an identifier")
    x = Var("x", None)
    with pytest.raises(IRError, match="has no type"):
        script(IRModule({"main": Function([x], SeqExpr([], x), T23, {})}))


def test_empty_module_prints_pass_like_tvm():
    from memcore_py import parse

    text = script(IRModule({}))
    assert text == "# from tvm.script import ir as I\n\n@I.ir_module\nclass Module:\n    pass\n"
    assert len(parse(text)) == 0


def test_prim_func_text_follows_changed_attrs_and_privacy():
    """A pass may change a text-backed PrimFunc's attrs or privacy; the printed text says so."""
    from memcore_py import parse

    text = (
        "@T.prim_func(private=True, s_tir=True)\n"
        'def mm(a: T.Buffer((T.int64(2),), "float32"), b: T.Buffer((T.int64(2),), "float32")):\n'
        '    T.func_attr({"tirx.noalias": True})\n'
        "    for i in range(T.int64(2)):\n"
        "        b[i] = a[i]\n"
    )
    pf = PrimFunc([PrimFuncParam("a", "float32", (IntImm(2),)), PrimFuncParam("b", "float32", (IntImm(2),))],
                  {"tirx.noalias": True}, text=text, private=True)
    assert script(IRModule({"mm": pf})).count('T.func_attr({"tirx.noalias": True})') == 1
    changed = PrimFunc(pf.params, {"tirx.noalias": True, "layout_free_buffers": [1]}, text=text, private=False)
    out = script(IRModule({"mm": changed}))
    assert '        T.func_attr({"layout_free_buffers": [1], "tirx.noalias": True})\n' in out
    assert "    @T.prim_func(s_tir=True)\n" in out
    back = parse(out)["mm"]
    assert back.attrs == {"layout_free_buffers": (1,), "tirx.noalias": True} and not back.private
    no_attrs = PrimFunc(pf.params, {}, text=text, private=True)
    assert "T.func_attr" not in script(IRModule({"mm": no_attrs}))
    bare = text.replace('    T.func_attr({"tirx.noalias": True})\n', "")
    added = PrimFunc(pf.params, {"k": 1}, text=bare, private=True)
    assert '    def mm(a: T.Buffer((T.int64(2),), "float32"), b: T.Buffer((T.int64(2),), "float32")):\n        T.func_attr({"k": 1})\n' in script(IRModule({"mm": added}))


def test_attr_values_keep_their_types():
    from memcore_py import parse
    from memcore_py.ir.structural import assert_structural_equal

    x = Var("x", T23)
    attrs = {"a": 1, "b": True, "c": 1.5, "d": "s", "e": (1, 2), "f": {"n": 128}, "g": IntImm(128), "h": None}
    mod = main_module([], x, [x], T23, attrs=attrs)
    text = script(mod)
    assert 'R.func_attr({"a": 1, "b": True, "c": 1.5, "d": "s", "e": [1, 2], "f": {"n": 128}, "g": T.int64(128), "h": None})' in text
    assert_structural_equal(parse(text), mod)
