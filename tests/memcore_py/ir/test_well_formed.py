"""well_formed / well_formed_report: one violation per test, with the exact message."""
import pytest

from memcore_py.errors import IRError, WellFormedError
from memcore_py.ir import (
    BindingBlock,
    Call,
    DataflowBlock,
    DataTypeImm,
    PrimValue,
    ShapeType,
    StringImm,
    DataflowVar,
    ExternFunc,
    Function,
    GlobalVar,
    If,
    IRModule,
    MatchCast,
    PrimFunc,
    PrimFuncParam,
    PrimVar,
    SeqExpr,
    ShapeExpr,
    TensorType,
    Tuple,
    Var,
    VarBinding,
    get_op,
    well_formed,
    well_formed_report,
)
from memcore_py.ir.infer import VOID
from _helpers import tvm_from_source

F32 = TensorType((2, 3), "float32")
ADD = get_op("relax.add")
KILL = get_op("relax.memory.kill_tensor")
BOOL = TensorType((), "bool")


def v(name, ty=F32):
    return Var(name, ty)


def add(a, b):
    return Call(ADD, [a, b], ty=F32)


def func(blocks, body, params, **kw):
    return Function(params, SeqExpr(blocks, body), ret_ty=kw.pop("ret_ty", None), **kw)


def report(f, **funcs):
    mod = IRModule({"main": f, **funcs})
    return well_formed_report(mod)


def test_well_formed_function():
    x, a = v("x"), v("a")
    f = func([BindingBlock([VarBinding(a, add(x, x))])], a, [x])
    assert well_formed(f) and well_formed(IRModule({"main": f}))
    assert well_formed_report(f) == []


def test_use_before_definition_message():
    x = v("x")
    bs = [VarBinding(v(f"lv{i}"), add(x, x)) for i in range(10)]
    bs[5] = VarBinding(bs[5].var, add(bs[9].var, x))
    f = func([BindingBlock(bs)], bs[9].var, [x])
    assert report(f) == [
        "Var 'lv9' is used at binding 5 before its definition at binding 9 in function 'main', block 0"
    ]


def test_use_before_definition_in_a_later_block():
    x, a, b = v("x"), v("a"), v("b")
    f = func([BindingBlock([VarBinding(a, add(b, x))]), BindingBlock([VarBinding(b, add(x, x))])], a, [x])
    assert report(f) == [
        "Var 'b' is used at block 0, binding 0 before its definition at block 1, binding 0 in function 'main'"
    ]


def test_undefined_var():
    x, a = v("x"), v("a")
    f = func([BindingBlock([VarBinding(a, add(v("ghost"), x))])], a, [x])
    assert report(f) == ["Var 'ghost' is not defined at binding 0 in function 'main', block 0"]


def test_var_bound_twice_and_param_rebound():
    x, a = v("x"), v("a")
    f = func([BindingBlock([VarBinding(a, add(x, x)), VarBinding(a, add(x, x)), VarBinding(x, add(a, a))])], a, [x])
    assert report(f) == [
        "Var 'a' is defined more than once: binding 1 ('a') in function 'main', block 0",
        "Var 'x' is defined more than once: binding 2 ('x') in function 'main', block 0",
    ]


def test_var_shared_between_functions():
    x, a = v("x"), v("a")
    f = func([BindingBlock([VarBinding(a, add(x, x))])], a, [x])
    problems = report(f, other=f)
    assert "Var 'x' is defined more than once (also defined in function 'main')" in problems[0]
    assert len(problems) == 2


def test_dataflow_var_outside_dataflow_block():
    x, d = v("x"), DataflowVar("d", F32)
    f = func([BindingBlock([VarBinding(d, add(x, x))])], x, [x])
    assert report(f) == ["DataflowVar 'd' is bound outside a dataflow block: binding 0 ('d') in function 'main', block 0"]


def test_dataflow_var_used_after_its_block():
    x, d, a = v("x"), DataflowVar("d", F32), v("a")
    f = func([DataflowBlock([VarBinding(d, add(x, x))]), BindingBlock([VarBinding(a, add(d, x))])], a, [x])
    assert report(f) == [
        "DataflowVar 'd' (bound in block 0) is used outside its dataflow block at binding 0 in function 'main', block 1"
    ]


def test_function_result_references_dataflow_var():
    x, d = v("x"), DataflowVar("d", F32)
    f = func([DataflowBlock([VarBinding(d, add(x, x))])], Tuple([d, x]), [x])
    assert report(f) == [
        "the result of a SeqExpr references DataflowVar 'd' in function 'main'; "
        "return it through a Var bound in the block (R.output)"
    ]


def test_dataflow_var_param():
    d = DataflowVar("d", F32)
    f = func([], d, [d])
    assert "parameter 'd' of function 'main' is a DataflowVar; params must be Vars" in report(f)


def test_if_branch_var_not_visible_after_if():
    x, c, t, r, a = v("x"), v("c", BOOL), v("t"), v("r"), v("a")
    iff = If(c, SeqExpr([BindingBlock([VarBinding(t, add(x, x))])], t), SeqExpr([], x))
    f = func([BindingBlock([VarBinding(r, iff), VarBinding(a, add(t, r))])], a, [x, c])
    assert report(f) == [
        "Var 't' is bound inside an If branch (in the then branch of block 0, binding 0) and used outside it "
        "at binding 1 in function 'main', block 0"
    ]


def test_if_branch_can_use_outer_vars_and_not_in_dataflow():
    x, c, r = v("x"), v("c", BOOL), DataflowVar("r", F32)
    iff = If(c, SeqExpr([], x), SeqExpr([], x))
    f = func([DataflowBlock([VarBinding(r, iff)])], x, [x, c])
    assert report(f) == ["If is not allowed in a dataflow block: binding 0 ('r') in function 'main', block 0"]


def test_unknown_global_var_and_call_tir_targets():
    x, a, b, c = v("x"), v("a"), v("b"), v("c")
    call_tir = get_op("relax.call_tir")
    prim = PrimFunc([PrimFuncParam("p", "float32", (2, 3)), PrimFuncParam("q", "float32", (2, 3))])
    y = v("y")
    other = func([], y, [y])
    f = func([BindingBlock([
        VarBinding(a, Call(call_tir, [GlobalVar("prim"), Tuple([x])], ty_args=[F32], ty=F32)),
        VarBinding(b, Call(call_tir, [GlobalVar("other"), Tuple([x])], ty_args=[F32], ty=F32)),
        VarBinding(c, Call(GlobalVar("nope"), [x], ty=F32)),
    ])], c, [x])
    assert report(f, prim=prim, other=other) == [
        "relax.call_tir must call a PrimFunc GlobalVar; got GlobalVar 'other' of a Relax function "
        "at binding 1 in function 'main', block 0",
        "GlobalVar 'nope' does not name a function of the module at binding 2 in function 'main', block 0",
    ]


def test_symbolic_vars_defined_by_signature_or_match_cast():
    n, k, u = PrimVar("n"), PrimVar("k"), PrimVar("u")
    x = v("x", TensorType((n, 4), "float32"))
    m = v("m", TensorType((k, 4), "float32"))
    s1 = Var("s1", ShapeType((n, k)))
    s2 = Var("s2", ShapeType((u,)))
    f = func([BindingBlock([
        MatchCast(m, x, m.ty),
        VarBinding(s1, ShapeExpr([n, k])),
        VarBinding(s2, ShapeExpr([u])),
    ])], x, [x])
    assert report(f) == [
        "symbolic var 'u' in R.shape([...]) at binding 2 in function 'main', block 0 is not defined; "
        "define it in the function signature or an earlier match_cast",
        "symbolic var 'u' in the type of binding 2 ('s2') in function 'main', block 0 is not defined; "
        "define it in the function signature or an earlier match_cast",
    ]


def test_compound_dim_does_not_define():
    n = PrimVar("n")
    x = v("x", TensorType(None, "float32", 1))
    m = v("m", TensorType((n * 2,), "float32"))
    f = func([BindingBlock([MatchCast(m, x, m.ty)])], x, [x])
    problems = report(f)
    assert len(problems) == 1 and "symbolic var 'n' in the match_cast type of binding 0 ('m')" in problems[0]


def test_impure_calls():
    x, a, k = v("x"), v("a"), v("_", VOID)
    packed = Call(ExternFunc("f"), [x], ty_args=[F32], ty=F32)
    df_impure = func([DataflowBlock([VarBinding(DataflowVar("p", F32), packed)])], x, [x], is_pure=False)
    assert report(df_impure) == [
        'impure call R.call_packed("f") is not allowed in a dataflow block at binding 0 in function \'main\', block 0'
    ]
    pure_with_kill = func([BindingBlock([VarBinding(a, add(x, x)), VarBinding(k, Call(KILL, [a], ty=VOID))])], x, [x])
    assert report(pure_with_kill) == [
        "function 'main' is pure but makes an impure call relax.memory.kill_tensor at binding 1 in function 'main', "
        "block 0; declare it @R.function(pure=False) or set the 'relax.force_pure' attribute"
    ]
    forced = func([BindingBlock([VarBinding(a, add(x, x)), VarBinding(k, Call(KILL, [a], ty=VOID))])], x, [x],
                  attrs={"relax.force_pure": True})
    assert report(forced) == []


def test_allocations_and_primfunc_calls_are_pure_like_tvm():
    x = v("x")
    alloc = Call(get_op("relax.builtin.alloc_tensor"),
                 [ShapeExpr([2, 3]), DataTypeImm("float32"), PrimValue(0), StringImm("global")], ty=F32)
    al = DataflowVar("al", F32)
    prim = PrimFunc([PrimFuncParam("p", "float32", (2, 3)), PrimFuncParam("q", "float32", (2, 3))])
    dps = VarBinding(v("_", VOID), Call(GlobalVar("prim"), [x, x], ty=VOID))
    f = func([DataflowBlock([VarBinding(al, alloc)]), BindingBlock([dps])], x, [x])
    assert report(f, prim=prim) == []


def test_call_to_impure_relax_function():
    y = v("y")
    impure = func([], y, [y], is_pure=False)
    x, a = v("x"), v("a")
    f = func([BindingBlock([VarBinding(a, Call(GlobalVar("g"), [x], ty=F32))])], a, [x])
    assert "function 'main' is pure but makes an impure call to 'g'" in report(f, g=impure)[0]


def test_argument_count_and_missing_types():
    x, a, b = v("x"), v("a"), Var("b")
    f = func([BindingBlock([VarBinding(a, Call(ADD, [x], ty=F32)), VarBinding(b, add(x, x))])], a, [x, Var("p")])
    assert report(f) == [
        "parameter 'p' of function 'main' has no type",
        "relax.add takes 2 arguments; got 1 at binding 0 in function 'main', block 0",
        "Var 'b' has no type: binding 1 ('b') in function 'main', block 0",
    ]


def test_raise_error_lists_every_problem():
    x, a = v("x"), v("a")
    f = func([BindingBlock([VarBinding(a, add(v("g1"), v("g2")))])], a, [x])
    assert not well_formed(f)
    with pytest.raises(WellFormedError, match=r"2 well-formedness problem\(s\):\n  Var 'g1' is not defined"):
        well_formed(f, raise_error=True)


def test_bad_input():
    with pytest.raises(IRError, match="expects an IRModule or Function; got int"):
        well_formed(3)


def test_primfuncs_are_not_checked_beyond_references():
    prim = PrimFunc([PrimFuncParam("p", "float32", (PrimVar("n"),))])
    assert well_formed(IRModule({"prim": prim}))


@pytest.mark.oracle
def test_tvm_rejects_what_we_reject(tvm):
    from tvm.relax.analysis import _ffi_api

    import memcore_py

    cases = {
        "undefined symbolic var": """
@R.function
def main(x: R.Tensor((2, 3), "float32")):
    n = T.int64()
    s = R.shape([n])
    return x
""",
        "impure in dataflow": """
@R.function(pure=False)
def main(x: R.Tensor((2, 3), "float32")):
    with R.dataflow():
        y = R.call_packed("f", x, sinfo_args=R.Tensor((2, 3), "float32"))
        R.output(y)
    return y
""",
        "kill in pure function": """
@R.function
def main(x: R.Tensor((2, 3), "float32")):
    y = R.add(x, x)
    _ = R.memory.kill_tensor(y)
    return x
""",
        "ok": """
@R.function
def main(x: R.Tensor((2, 3), "float32")):
    with R.dataflow():
        y = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("float32"), 0, R.str("global"))
        R.output(y)
    return y
""",
    }
    for name, src in cases.items():
        f = tvm_from_source(src, check_well_formed=False)
        try:
            _ffi_api.well_formed(f, True)
            tvm_ok = True
        except Exception:
            tvm_ok = False
        ours = well_formed(memcore_py.parse(src))
        assert ours == tvm_ok == (name == "ok"), name
