"""DataflowUseInplaceCalls and its analyses, from spec §3, §6.4 and the §7.3 checklist.

Expected values are worked out by hand from the spec's rules (written in the comments), not
taken from the code under test; tests/oracle/test_dataflow_inplace_oracle.py compares the
same functions with Apache TVM on random programs.
"""
from __future__ import annotations

import pytest

import memcore_py
from memcore_py.analysis.dataflow_inplace import dataflow_aliases, dataflow_liveness, inplace_opportunities
from memcore_py.errors import IRError, PassError
from memcore_py.ir import structural_equal
from memcore_py.ir.well_formed import well_formed
from memcore_py.ir.expr import Call, PrimFunc
from memcore_py.transform.dataflow_use_inplace_calls import DataflowUseInplaceCalls, dataflow_use_inplace_calls

HEADER = """# from tvm.script import ir as I
# from tvm.script import relax as R
# from tvm.script import tirx as T

@I.ir_module
class Module:
"""


def module(body: str, params: str = 'x: R.Tensor((2, 3), dtype="float32"), y: R.Tensor((2, 3), dtype="float32")',
           extra: str = "", ret: str | None = None):
    lines = [ln for ln in body.strip().split("\n")]
    outs = lines[-1]
    assert outs.strip().startswith("R.output(")
    ret = ret or outs.strip()[len("R.output("):-1]
    text = HEADER + extra + f"    @R.function\n    def main({params}):\n        cls = Module\n        with R.dataflow():\n"
    text += "".join(f"            {ln.strip()}\n" for ln in lines)
    text += f"        return {ret if ',' not in ret else '(' + ret + ')'}\n"
    return memcore_py.parse(text)


def block_of(mod):
    return mod["main"].body.blocks[0]


def by_name(d):
    return {k.name: v for k, v in d.items()}


def calls_in(mod):
    return {b.var.name: b.value for b in block_of(mod).bindings}


# ----------------------------------------------------------------------------- §3.3 liveness
def test_liveness_ranges_follow_spec_example():
    # x is a param (non-dataflow var): (-1, len); y used last by q (2); z and q last used by p
    # (3); p and n are outputs (non-dataflow): (i, len).
    mod = module("""
        y = R.add(x, x)
        z = R.add(y, y)
        q = R.multiply(z, y)
        p = R.add(z, q)
        n = R.multiply(p, p)
        R.output(p, n)
    """, params='x: R.Tensor((2, 3), dtype="float32")')
    assert by_name(dataflow_liveness(block_of(mod))) == {
        "x": (-1, 5), "y": (0, 2), "z": (1, 3), "q": (2, 3), "p": (3, 5), "n": (4, 5)}


def test_liveness_get_item_is_not_a_use_unless_asked():
    mod = module("""
        a = R.add(x, x)
        t = (a, a)
        b = t[0]
        c = R.add(b, b)
        R.output(c)
    """, params='x: R.Tensor((2, 3), dtype="float32")')
    tvm_rule = by_name(dataflow_liveness(block_of(mod)))
    assert tvm_rule["t"] == (1, 1)  # t[0] does not keep t alive (TVM's deliberate hack)
    assert tvm_rule["a"] == (0, 1)
    sound = by_name(dataflow_liveness(block_of(mod), tuple_get_item_is_use=True))
    assert sound["t"] == (1, 2)


def test_liveness_unused_dataflow_var_is_its_definition():
    mod = module("""
        a = R.add(x, x)
        b = R.add(x, x)
        R.output(b)
    """, params='x: R.Tensor((2, 3), dtype="float32")')
    assert by_name(dataflow_liveness(block_of(mod)))["a"] == (0, 0)


# ----------------------------------------------------------------------------- §3.4 aliases
def test_alias_basic_var_to_var_and_fresh_op_results():
    # inputs x, y -> 0, 1; a = add -> fresh 2; b = a -> {2}; c = exp(b) -> fresh 3
    mod = module("""
        a = R.add(x, y)
        b = a
        c = R.exp(b)
        R.output(c)
    """)
    f = mod["main"]
    sets, tuples = dataflow_aliases(block_of(mod), f.params)
    assert by_name(sets) == {"x": {0}, "y": {1}, "a": {2}, "b": {2}, "c": {3}}
    assert tuples == {}


def test_alias_tuple_literal_and_get_items():
    # t = (x, y): fresh tuple id 2 with components [{0}, {1}]; t[1] -> {1}
    mod = module("""
        t = (x, y)
        u = t[1]
        R.output(u)
    """)
    sets, tuples = dataflow_aliases(block_of(mod), mod["main"].params)
    assert by_name(sets)["t"] == {2} and by_name(sets)["u"] == {1}
    assert tuples == {2: [{0}, {1}]}


def test_alias_split_is_a_fresh_tuple_with_fresh_components():
    # x -> 0, split -> tuple 1 with components {2}, {3}
    mod = module("""
        s = R.split(x, indices_or_sections=[1], axis=0)
        a = s[0]
        R.output(a)
    """, params='x: R.Tensor((2, 3), dtype="float32")')
    sets, tuples = dataflow_aliases(block_of(mod), mod["main"].params)
    assert by_name(sets) == {"x": {0}, "s": {1}, "a": {2}}
    assert tuples == {1: [{2}, {3}]}


def test_alias_call_tir_single_and_tuple_results():
    extra = """    @T.prim_func(private=True)
    def f(A: T.Buffer((T.int64(2), T.int64(3)), "float32"), B: T.Buffer((T.int64(2), T.int64(3)), "float32"), C: T.Buffer((T.int64(2), T.int64(3)), "float32")):
        T.evaluate(0)
"""
    mod = module("""
        a = R.call_tir(cls.f, (x,), out_ty=R.Tensor((2, 3), dtype="float32"))
        b = R.call_tir(cls.f, (x,), out_ty=[R.Tensor((2, 3), dtype="float32"), R.Tensor((2, 3), dtype="float32")])
        R.output(a, b)
    """, params='x: R.Tensor((2, 3), dtype="float32")', extra=extra)
    sets, tuples = dataflow_aliases(block_of(mod), mod["main"].params)
    assert by_name(sets) == {"x": {0}, "a": {1}, "b": {2}}
    assert tuples == {2: [{3}, {4}]}


def test_alias_mystery_calls_may_alias_every_argument():
    # inputs x 0, y 1. p = call_pure_packed("f", x, y): R = 2, result {2} U {0} U {1}.
    # q = helper(p): R = 3, result {3, 0, 1, 2}.
    extra = """    @R.function(private=True)
    def helper(a: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
        return a
"""
    mod = module("""
        p = R.call_pure_packed("test.f", x, y, ty_args=(R.Tensor((2, 3), dtype="float32"),))
        q = cls.helper(p)
        R.output(q)
    """, extra=extra)
    sets, _tuples = dataflow_aliases(block_of(mod), mod["main"].params)
    assert by_name(sets)["p"] == {0, 1, 2}
    assert by_name(sets)["q"] == {0, 1, 2, 3}


def test_alias_external_values_are_unknown():
    # no inputs: x is external -> {-1}; t = (x, const): tuple id 0, components [{-1}, {1}]
    mod = module("""
        a = x
        t = (x, R.const(1.0, "float32"))
        R.output(a, t)
    """, params='x: R.Tensor((2, 3), dtype="float32")')
    sets, tuples = dataflow_aliases(block_of(mod))
    assert by_name(sets) == {"a": {-1}, "t": {0}}
    assert tuples == {0: [{-1}, {1}]}


def test_alias_bad_input_is_a_typed_error():
    mod = module("""
        a = R.add(x, y)
        R.output(a)
    """)
    with pytest.raises(IRError, match="DataflowBlock"):
        dataflow_aliases(mod["main"].body)
    with pytest.raises(IRError, match=r"inputs\[0\] must be a Var"):
        dataflow_aliases(block_of(mod), ["x"])


# ----------------------------------------------------------------------------- §3.5 opportunities
def test_inplace_candidates_simple_case():
    # With x, y as fresh inputs:
    #  0 a = add(x, y): x and y are live after (used later) -> no candidate
    #  1 b = add(a, y): a dead after 1 (both exact); y live -> [0]? y is used at 4 -> only a
    #  2 c = exp(b): not supported
    #  3 d = multiply(b, c): b, c dead -> both -> TVM order [1, 0]
    #  4 e = subtract(d, y): y is the param, live to the end (non-dataflow) -> d only
    mod = module("""
        a = R.add(x, y)
        b = R.add(a, x)
        c = R.exp(b)
        d = R.multiply(b, c)
        e = R.subtract(d, y)
        R.output(e)
    """)
    size, exact = inplace_opportunities(block_of(mod), mod["main"].params)
    assert size == exact == [(1, [0]), (3, [1, 0]), (4, [0])]


def test_inplace_size_match_is_not_exact_for_broadcast_operand():
    # r (1, 3) + a (2, 3) -> result (2, 3): r is too small; a fits exactly
    mod = module("""
        a = R.add(x, x)
        r = R.add(y, y)
        b = R.add(r, a)
        R.output(b)
    """, params='x: R.Tensor((2, 3), dtype="float32"), y: R.Tensor((1, 3), dtype="float32")')
    size, exact = inplace_opportunities(block_of(mod), mod["main"].params)
    assert exact == [(2, [1])] and size == [(2, [1])]


_VIEWS = {  # a view of a (2, 3) tensor, as TVM's IsViewMemoryOp lists them
    "expand_dims": ("R.expand_dims({}, axis=[0])", "(1, 2, 3)"),
    "squeeze": ("R.squeeze(R.expand_dims({}, axis=[0]), axis=[0])", "(2, 3)"),
    "reshape": ("R.reshape({}, R.shape([3, 2]))", "(3, 2)"),
    "permute_dims": ("R.permute_dims({}, axes=[1, 0])", "(3, 2)"),
    "flatten": ("R.flatten({})", "(6,)"),
    "batch_flatten": ("R.nn.batch_flatten({})", "(2, 3)"),
}


@pytest.mark.parametrize("view", sorted(_VIEWS))
def test_inplace_two_views_of_one_value_are_never_targets(view):
    # v1 and v2 share a's memory ids (views alias their input), so neither may be
    # overwritten while the other is an operand (InplaceArgDisjointFromOtherCallArgs).
    expr, _shape = _VIEWS[view]
    mod = module(f"""
        a = R.add(x, x)
        v1 = {expr.format("a")}
        v2 = {expr.format("a")}
        b = R.multiply(v1, v2)
        R.output(b)
    """, params='x: R.Tensor((2, 3), dtype="float32")')
    sets, _ = dataflow_aliases(block_of(mod))
    named = by_name(sets)
    assert named["v2"] == named["a"] == named[[k for k in named if k.startswith("v1") or k == "v1"][0]]
    _size, exact = inplace_opportunities(block_of(mod))
    assert [i for i, _ in exact] == []
    assert _ops(dataflow_use_inplace_calls(mod))["b"] == "relax.multiply"


# ----------------------------------------------------------------------------- the pass
def _ops(mod):
    out = {}
    for name, v in calls_in(mod).items():
        if isinstance(v, Call):
            op = getattr(v.op, "name", None)
            if op == "relax.call_tir_inplace":
                out[name] = (v.args[0].name, tuple(v.attrs["inplace_indices"]))
            else:
                out[name] = op
    return out


def test_spec_6_4_worked_example():
    mod = module("""
        a = R.add(x, y)
        b = R.multiply(a, a)
        c = R.exp(b)
        d = R.add(b, c)
        e = R.nn.relu(d)
        f = R.add(e, x)
        g = R.subtract(x, f)
        R.output(g)
    """)
    out = dataflow_use_inplace_calls(mod)
    assert _ops(out) == {
        "a": "relax.add",
        "b": ("multiply_inplace", (1,)),
        "c": "relax.exp",
        "d": ("add_inplace", (1,)),
        "e": ("relu_inplace", (0,)),
        "f": ("add_inplace1", (0,)),
        "g": ("subtract_inplace", (1,)),
    }
    prim = {gv.name: f for gv, f in out.items() if isinstance(f, PrimFunc)}
    assert sorted(prim) == ["add_inplace", "add_inplace1", "multiply_inplace", "relu_inplace", "subtract_inplace"]
    for f in prim.values():
        assert f.private and f.attrs == {"tirx.noalias": True}
    relu = prim["relu_inplace"]
    assert [p.name for p in relu.params] == ["d"]  # the output buffer is the input, not a param
    assert "d[v_i0, v_i1] = T.max(d[v_i0, v_i1], T.float32(0.0))" in relu.text
    assert len(prim["add_inplace"].params) == 2
    # printing and reading back gives the same module
    assert structural_equal(memcore_py.parse(out.script()), out)


def test_insert_inplace_calls_broadcasting_and_repeated_operand():
    # (2, 3) + (1, 3) with the (2, 3) operand dead -> index 0; subtract(r, r) -> index 1
    mod = module("""
        a = R.add(x, x)
        b = R.add(a, y)
        r = R.nn.relu(b)
        s = R.subtract(r, r)
        R.output(s)
    """, params='x: R.Tensor((2, 3), dtype="float32"), y: R.Tensor((1, 3), dtype="float32")')
    ops = _ops(dataflow_use_inplace_calls(mod))
    assert ops["b"] == ("add_inplace", (0,))
    assert ops["r"] == ("relu_inplace", (0,))
    assert ops["s"] == ("subtract_inplace", (1,))


def test_dynamic_shapes_exact_and_mismatch():
    ok = module("""
        a = R.add(x, x)
        b = R.add(a, x)
        c = R.subtract(b, b)
        R.output(c)
    """, params='x: R.Tensor(("a", "b"), dtype="float32")')
    ops = _ops(dataflow_use_inplace_calls(ok))
    assert ops["b"] == ("add_inplace", (0,)) and ops["c"] == ("subtract_inplace", (1,))
    # (a, b) vs (c, d): not provably equal -> the result has no shape -> unchanged
    mismatch = module("""
        p = R.add(x, x)
        q = R.add(z, z)
        s = R.add(p, q)
        R.output(s)
    """, params='x: R.Tensor(("a", "b"), dtype="float32"), z: R.Tensor(("c", "d"), dtype="float32")')
    assert _ops(dataflow_use_inplace_calls(mismatch))["s"] == "relax.add"


def test_non_dataflow_blocks_are_left_alone():
    text = HEADER + """    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32")):
        a = R.add(x, x)
        b = R.add(a, a)
        return b
"""
    mod = memcore_py.parse(text)
    assert dataflow_use_inplace_calls(mod) is mod


def test_sound_tuple_capture_vs_tvm_compat():
    # t holds a; q reads t after b = multiply(a, a): overwriting a would change q.
    mod = module("""
        a = R.add(x, x)
        t = (a, a)
        b = R.multiply(a, a)
        q = R.concat(t, axis=0)
        R.output(b, q)
    """, params='x: R.Tensor((2, 3), dtype="float32")')
    assert _ops(dataflow_use_inplace_calls(mod))["b"] == "relax.multiply"
    assert _ops(DataflowUseInplaceCalls(tvm_compat=True)(mod))["b"] == ("multiply_inplace", (1,))


def test_view_of_a_constant_is_not_overwritten():
    # v is a view of the constant (TVM's lowering makes expand_dims share its storage): adding
    # into v would add into the constant at every run. A fresh tensor (a) is still reused.
    mod = module("""
        v = R.expand_dims(R.const(1.0, "float32"), axis=[0])
        w = R.add(v, R.const(1e-5, "float32"))
        a = R.multiply(x, x)
        b = R.add(a, w)
        R.output(b)
    """, params='x: R.Tensor((2, 3), dtype="float32")')
    ops = _ops(dataflow_use_inplace_calls(mod))
    assert ops["w"] == "relax.add"
    assert ops["b"] == ("add_inplace", (0,))
    assert _ops(DataflowUseInplaceCalls(tvm_compat=True)(mod))["w"][1] == (0,)  # TVM writes into v


def test_leading_scalar_constant_does_not_crash():
    # TVM folds the constant, so the PrimFunc has one input: the index is 0, not 1.
    mod = module("""
        a = R.add(x, x)
        b = R.add(R.const(1.0, "float32"), a)
        R.output(b)
    """, params='x: R.Tensor((2, 3), dtype="float32")')
    out = dataflow_use_inplace_calls(mod)
    b = calls_in(out)["b"]
    assert b.op.name == "relax.call_tir_inplace" and tuple(b.attrs["inplace_indices"]) == (0,)
    assert [a.name for a in b.args[1].fields] == ["a"]
    f = out[b.args[0].name]
    assert "a[v_ax0, v_ax1] = T.float32(1.0) + a[v_ax0, v_ax1]" in f.text


@pytest.mark.no_verify  # the compat run produces TVM's dangling GlobalVar on purpose
def test_existing_equal_prim_func_is_kept():
    # The module already holds the legalization of add(a, a) (as memcore writes it) under
    # the name 'add', used by call_tir: TVM deletes it (dangling 'add'); we keep it.
    from memcore_py.transform.legalize_elementwise import ElementwiseCall, Operand, prim_func_text
    from memcore_py.ir.prim import IntImm

    s = (IntImm(2), IntImm(3))
    legal = prim_func_text(ElementwiseCall("relax.add", "float32", s, (Operand(s, "a"), Operand(s, "a_1"))), "add")
    extra = "\n".join("    " + ln if ln else ln for ln in legal.rstrip("\n").split("\n")) + "\n"
    mod = module("""
        a = R.add(x, x)
        u = R.call_tir(cls.add, (x, x), out_ty=R.Tensor((2, 3), dtype="float32"))
        b = R.add(a, a)
        R.output(b, u)
    """, params='x: R.Tensor((2, 3), dtype="float32")', extra=extra)
    out = dataflow_use_inplace_calls(mod)
    assert "add" in out and calls_in(out)["b"].args[0].name == "add_inplace"
    assert well_formed(out)
    compat = DataflowUseInplaceCalls(tvm_compat=True)(mod)
    assert "add" not in compat  # TVM's behaviour: the caller 'u' now names a missing function


def test_match_cast_binding_is_rewritten_and_keeps_its_type():
    mod = module("""
        a = R.add(x, x)
        b = R.match_cast(R.nn.relu(a), R.Tensor((2, 3), dtype="float32"))
        R.output(b)
    """, params='x: R.Tensor((2, 3), dtype="float32")')
    out = dataflow_use_inplace_calls(mod)
    assert _ops(out)["b"] == ("relu_inplace", (0,))


def test_repeated_structure_shares_prim_funcs_and_names_follow_legalizations():
    # Two relu of the same shape share relu_inplace; a relu of another shape gets relu1_inplace.
    mod = module("""
        a = R.add(x, x)
        b = R.nn.relu(a)
        c = R.nn.relu(b)
        d = R.add(y, y)
        e = R.nn.relu(d)
        R.output(c, e)
    """, params='x: R.Tensor((2, 3), dtype="float32"), y: R.Tensor((4,), dtype="float32")')
    ops = _ops(dataflow_use_inplace_calls(mod))
    assert ops["b"] == ops["c"] == ("relu_inplace", (0,))
    assert ops["e"] == ("relu1_inplace", (0,))


def test_bad_input_is_a_typed_error():
    with pytest.raises(PassError, match="IRModule"):
        DataflowUseInplaceCalls()("not a module")


def test_spec_6_4_equals_tvm_recorded_output_text_for_text():
    """TVM 0.27's own output of §6.4, recorded in tests/data/tvm_printed (no TVM needed):
    equal as memcore compares PrimFuncs, i.e. their TIR text too, buffer names included
    (``add_inplace1`` keeps the names ``b, c`` of the legalization it was derived from)."""
    from _helpers import TVM_PRINTED_DIR

    src = memcore_py.parse((TVM_PRINTED_DIR / "6_4_inplace_source.txt").read_text())
    want = memcore_py.parse((TVM_PRINTED_DIR / "6_4_inplace_after.txt").read_text())
    assert structural_equal(dataflow_use_inplace_calls(src), want)


def test_analyses_and_emitter_refuse_bad_input():
    from memcore_py.ir.prim import IntImm
    from memcore_py.transform.legalize_elementwise import ElementwiseCall, Operand, prim_func_text

    mod = module("""
        a = R.add(x, y)
        R.output(a)
    """)
    for f in (dataflow_liveness, inplace_opportunities):
        with pytest.raises(IRError, match="DataflowBlock"):
            f(mod["main"].body)
    with pytest.raises(IRError, match=r"inputs\[0\] must be a Var"):
        inplace_opportunities(block_of(mod), [3])
    s = (IntImm(2), IntImm(3))
    add = ElementwiseCall("relax.add", "float32", s, (Operand(s, "a"), Operand((IntImm(3),), "b")))
    with pytest.raises(PassError, match="no elementwise legalization for relax.exp"):
        prim_func_text(ElementwiseCall("relax.exp", "float32", s, (Operand(s, "a"),)), "f")
    with pytest.raises(PassError, match="cannot hold the result"):
        prim_func_text(add, "f", 1)  # the (3,) operand is smaller than the (2, 3) result
    with pytest.raises(PassError, match="not an operand index"):
        prim_func_text(add, "f", 2)


def test_inplace_sizes_beyond_int64_are_compared_exactly():
    # numel = 2**80 does not fit a C integer: the exact (polynomial) comparison decides.
    big = 'R.Tensor((1099511627776, 1099511627776), dtype="float32")'
    mod = module("""
        a = R.add(x, x)
        b = R.multiply(a, a)
        c = R.add(b, y)
        R.output(c)
    """, params=f"x: {big}, y: R.Tensor((1099511627776,), dtype=\"float32\")")
    size, exact = inplace_opportunities(block_of(mod), mod["main"].params)
    # b (dead after c) holds c exactly; y is a live parameter; a dies at b: both operands.
    assert size == exact == [(1, [1, 0]), (2, [0])]


def test_liveness_reads_variables_inside_tuple_and_shape_arguments():
    # concat((a, b)) uses a and b through its tuple argument; reshape's shape holds none.
    # x, y (parameters) and d (the output) are non-dataflow Vars: live after the block (4).
    mod = module("""
        a = R.add(x, y)
        b = R.multiply(x, y)
        c = R.concat((a, b), axis=0)
        d = R.reshape(c, R.shape([12]))
        R.output(d)
    """)
    live = by_name(dataflow_liveness(block_of(mod)))
    assert live == {"x": (-1, 4), "y": (-1, 4), "a": (0, 2), "b": (1, 2), "c": (2, 3), "d": (3, 4)}


# ------------------------------------------------------- symbolic vars no buffer shape binds
# TVM 0.27's bb.call_te gives the legalized PrimFunc a scalar parameter for each symbolic
# variable used in a buffer shape that is not itself a dim (n and m of (n * m,)), and appends
# the caller's variables to the call's argument tuple; the in-place copy keeps both. Expected
# modules: TVM 0.27's DataflowUseInplaceCalls output, as it printed it.
_PRODUCT_DIM_SOURCE = HEADER + """    @R.function
    def main(x: R.Tensor(("n", "m"), dtype="float32"), y: R.Tensor(("n * m",), dtype="float32")):
        n = T.int64()
        m = T.int64()
        with R.dataflow():
            a = R.add(y, y)
            b = R.multiply(a, y)
            R.output(b)
        return b
"""

_PRODUCT_DIM_TVM = """# from typing import TypeVar
# from tvm.script import ir as I
# from tvm.script import tirx as T
# from tvm.script import relax as R

m = TypeVar("m")
n = TypeVar("n")
@I.ir_module
class Module:
    @T.prim_func(private=True, s_tir=True)
    def multiply_inplace(a: T.Buffer(("n * m",), "float32"), y: T.Buffer((n * m,), "float32"), n: T.int64, m: T.int64):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        for ax0 in range(n * m):
            with T.sblock("T_multiply"):
                v_ax0 = T.axis.spatial(n * m, ax0)
                T.reads(a[v_ax0], y[v_ax0])
                T.writes(a[v_ax0])
                a[v_ax0] = a[v_ax0] * y[v_ax0]

    @R.function
    def main(x: R.Tensor((n, m), dtype="float32"), y: R.Tensor(("n * m",), dtype="float32")) -> R.Tensor(("n * m",), dtype="float32"):
        cls = Module
        with R.dataflow():
            a: R.Tensor((n * m,), dtype="float32") = R.add(y, y)
            b: R.Tensor((n * m,), dtype="float32") = R.call_tir_inplace(cls.multiply_inplace, (a, y, n, m), out_ty=R.Tensor((n * m,), dtype="float32"), inplace_indices=[0])
            R.output(b)
        return b
"""

_DIM_TIMES_VAR_SOURCE = HEADER + """    @R.function
    def main(x: R.Tensor(("k", "n"), dtype="float32"), y: R.Tensor(("k", "n * k"), dtype="float32")):
        k = T.int64()
        n = T.int64()
        with R.dataflow():
            a = R.subtract(y, y)
            b = R.nn.relu(a)
            R.output(b)
        return b
"""

_DIM_TIMES_VAR_TVM = """# from typing import TypeVar
# from tvm.script import ir as I
# from tvm.script import tirx as T
# from tvm.script import relax as R

k = TypeVar("k")
n = TypeVar("n")
@I.ir_module
class Module:
    @T.prim_func(private=True, s_tir=True)
    def relu_inplace(a: T.Buffer((k, "n * k"), "float32"), n: T.int64):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        for i0, i1 in T.grid(k, n * k):
            with T.sblock("compute"):
                v_i0, v_i1 = T.axis.remap("SS", [i0, i1])
                T.reads(a[v_i0, v_i1])
                T.writes(a[v_i0, v_i1])
                a[v_i0, v_i1] = T.max(a[v_i0, v_i1], T.float32(0.0))

    @R.function
    def main(x: R.Tensor((k, n), dtype="float32"), y: R.Tensor((k, "n * k"), dtype="float32")) -> R.Tensor((k, "n * k"), dtype="float32"):
        cls = Module
        with R.dataflow():
            a: R.Tensor((k, n * k), dtype="float32") = R.subtract(y, y)
            b: R.Tensor((k, n * k), dtype="float32") = R.call_tir_inplace(cls.relu_inplace, (a, n), out_ty=R.Tensor((k, n * k), dtype="float32"), inplace_indices=[0])
            R.output(b)
        return b
"""


@pytest.mark.parametrize("source, tvm_output", [(_PRODUCT_DIM_SOURCE, _PRODUCT_DIM_TVM),
                                                (_DIM_TIMES_VAR_SOURCE, _DIM_TIMES_VAR_TVM)],
                         ids=["product-dim", "dim-times-bound-var"])
def test_symbolic_vars_no_buffer_dim_binds_become_scalar_params_passed_by_the_call(source, tvm_output):
    """n and m of (n * m,) (and n of (k, n * k), k being a dim) are scalar parameters after
    the buffers, and the call passes the caller's variables after the tensors; without them
    the PrimFunc uses variables it is never given (TVM refuses to build it). The signature is
    written as TVM prints it (an expression dim quoted where TVM quotes it), so the texts
    match too."""
    want = memcore_py.parse(tvm_output)
    for tvm_compat in (True, False):  # no tuple here: the sound default makes the same rewrite
        out = dataflow_use_inplace_calls(memcore_py.parse(source), tvm_compat=tvm_compat)
        assert structural_equal(out, want)
    (inplace,) = [f for gv, f in out.functions.items() if gv.name.endswith("_inplace")]
    assert not inplace.params[-1].is_buffer
    assert well_formed(out)


# ----------------------------------------------------------------------- the blocks searched
def test_candidate_blocks_are_the_dataflow_blocks_binding_an_inplace_op():
    from memcore_py.transform.dataflow_use_inplace_calls import candidate_blocks

    with_add = module("z = R.add(x, y)\nR.output(z)")
    func = with_add["main"]
    assert candidate_blocks(func, "main") == {id(func.body.blocks[0].bindings)}
    # a dataflow block of no in-place op: nothing to search, the module comes back as it is
    no_inplace = module("z = R.exp(x)\nR.output(z)")
    assert candidate_blocks(no_inplace["main"], "main") == set()
    assert dataflow_use_inplace_calls(no_inplace) is no_inplace
    # an in-place op outside any dataflow block is never rewritten
    outside = memcore_py.parse(HEADER + '    @R.function\n    def main(x: R.Tensor((2, 3), dtype="float32")):\n'
                               '        z = R.add(x, x)\n        return z\n')
    assert candidate_blocks(outside["main"], "main") == set()
    assert dataflow_use_inplace_calls(outside) is outside


def test_inplace_candidate_blocks_rejects_what_is_not_a_table():
    from memcore_py.analysis.dataflow_inplace import inplace_candidate_blocks

    with pytest.raises(TypeError, match="BindingTable"):
        inplace_candidate_blocks(None)
    with pytest.raises(TypeError, match="BindingTable"):
        inplace_candidate_blocks([1, 2])
