"""Oracle: the conditional TIR expressions of TVM's shape arithmetic in memcore, against TVM 0.27.

TVM's default pipeline leaves ``T.if_then_else(s < 0, s + 512, s)`` in the shapes of a model
exported with a dynamic sequence length (negative-index slicing); ``T.Select``, ``T.Cast``,
the comparisons and ``and``/``or``/``not`` come with it. memcore models them
(:mod:`memcore_py.ir.prim`):

1. text and objects: memcore prints a module holding them as TVM prints it, reads TVM's text
   into what :func:`~memcore_py.tvm.from_tvm` reads from the objects, and writes those back
   as TVM's own objects (PrimFunc signatures included); every printing rule (infix or call
   form, parentheses, literals) against TVM's printer;
2. bounds: :func:`~memcore_py.analysis.arith.const_int_bound` and
   :func:`~memcore_py.analysis.arith.int_set` against TVM's analyzer on such dims;
3. StaticPlanBlockMemory: memcore's native pass and its pure pass give TVM's pass's output,
   function by function, with and without ``tir_var_upper_bound`` (and with
   ``relax.memory_plan_dynamic_func_output``);
4. ``tvm.compile`` with memcore's pipeline builds a model with such a shape and TVM's VM runs
   it with TVM's default pipeline's results.
"""
from __future__ import annotations

import numpy as np
import pytest

tvm = pytest.importorskip("tvm")
from tvm import relax, tirx  # noqa: E402

import memcore_py.tvm as mtvm  # noqa: E402
from memcore_py import parse  # noqa: E402
from memcore_py import transform as mc  # noqa: E402
from memcore_py.analysis import arith as A  # noqa: E402
from memcore_py.ir import IRModule, assert_structural_equal  # noqa: E402
from memcore_py.ir import prim as P  # noqa: E402
from memcore_py.tvm._api import tvm_api  # noqa: E402
from memcore_py.tvm.to_tvm import _Writer  # noqa: E402
from _helpers import tvm_from_source  # noqa: E402

pytestmark = pytest.mark.oracle

HEADER = """# from tvm.script import ir as I
# from tvm.script import relax as R
# from tvm.script import tirx as T
"""

#: A module with the conditional nodes in parameter, return and binding types and in shapes.
SOURCE = HEADER + """
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("s", 4), "float32"), m: R.Tensor(("T.if_then_else(s < 0, s + 512, s)",), "float32")) -> R.Tensor((T.Select(s > 2, s, T.int64(3)), 4), "float32"):
        s = T.int64()
        y: R.Tensor((T.if_then_else(s < 0, s + 512, s), 4), "float32") = R.reshape(x, R.shape([T.if_then_else(s < 0, s + 512, s), 4]))
        z = R.zeros(R.shape([T.Cast("int64", T.Cast("int32", s) + 1 < 7), T.Cast("int64", s <= 3 and not s == 5 or s != 1)]), "float32")
        k = R.shape([T.if_then_else(T.And(s >= 0, T.Not(s == 5)), s, T.int64(0)), T.Cast("int64", T.Or(s != 1, s < 2))])
        w = R.zeros(R.shape([T.Select(s > 2, s, T.int64(3)), 4]), "float32")
        return w
"""


def _ordered(text, tvm_mod) -> IRModule:
    """memcore's reading of ``text`` with its functions in ``tvm_mod``'s order."""
    read = parse(text)
    return IRModule({read.get_global_var(gv.name_hint): read[gv.name_hint] for gv in tvm_mod.functions}, read.attrs,
                    read.global_infos)


# ------------------------------------------------------------------------------ text and objects
def test_text_and_objects_round_trip_like_tvm():
    m = tvm_from_source(SOURCE)
    text = m.script()
    read = mtvm.from_tvm(m)
    assert_structural_equal(read, _ordered(text, m))
    tvm.ir.assert_structural_equal(mtvm.to_tvm(read), m)
    assert read.script().rstrip("\n") == text.rstrip("\n")
    assert parse(text).script().rstrip("\n") == text.rstrip("\n")


def _cases(s, n):
    """PrimExprs of the variables ``s`` and ``n`` built with TVM's constructors (no folding),
    one per printing rule."""
    i64, i32, true, false = (lambda v: tirx.IntImm("int64", v)), (lambda v: tirx.IntImm("int32", v)), \
        tirx.IntImm("bool", 1), tirx.IntImm("bool", 0)
    lt, gt = tirx.LT(s, i64(0)), tirx.GT(n, i64(2))

    def ite(c, a, b):
        return tvm.ir.Call(tvm.ir.Op.get("prim.if_then_else"), [c, a, b], ret_ty="int64")

    def int64(e):
        return tirx.Cast("int64", e)

    return {
        "if_then_else": ite(lt, s + i64(512), s),
        "select": tirx.Select(gt, s, i64(3)),
        "select_literal_condition": tirx.Select(true, s, n),
        "if_then_else_literal_condition": ite(false, s, n),
        "nested": ite(lt, ite(gt, s, n), i64(0)),
        "in_arithmetic": ite(lt, s, n) * i64(2) + i64(1),
        "in_min": tirx.Min(tirx.Select(lt, s, n), i64(4)),
        "cast_chain": int64(tirx.Cast("int32", s)),
        "cast_int32_literal": int64(tirx.Cast("int32", s) + i32(1)),
        "compare_int32": int64(tirx.LT(tirx.Cast("int32", s), i32(3))),
        "compare_literals": int64(tirx.LT(i64(1), i64(2))),
        "compare_arithmetic": int64(tirx.LE(s + i64(1), s * i64(2))),
        "and_literal": int64(tirx.And(lt, true)),
        "not_literal": int64(tirx.Not(true)),
        "not_and": int64(tirx.Not(tirx.And(lt, gt))),
        "or_in_and": int64(tirx.And(tirx.Or(lt, gt), lt)),
        "and_in_or": int64(tirx.Or(lt, tirx.And(gt, tirx.NE(s, n)))),
        "and_right": int64(tirx.And(lt, tirx.And(gt, tirx.GE(s, n)))),
        "not_not": int64(tirx.Not(tirx.Not(lt))),
        "not_in_eq": int64(tirx.EQ(tirx.Not(lt), gt)),
        "cast_uint8": int64(tirx.Cast("uint8", s)),
    }


def _shape_module(exprs, s, n):
    """A Relax function of a tensor of shape ``(s, n)`` binding ``R.shape([e])`` for each
    expression."""
    x = relax.Var("x", relax.TensorType((s, n), "float32"))
    bindings = [relax.VarBinding(relax.Var(f"v{i}", relax.ShapeType([e])), relax.ShapeExpr([e]))
                for i, e in enumerate(exprs)]
    body = relax.SeqExpr([relax.BindingBlock(bindings)], bindings[-1].var)
    f = relax.Function([x], body, relax.ShapeType([exprs[-1]]))
    return tvm.IRModule({"main": f})


def test_every_printing_rule_like_tvm():
    """memcore prints each node as TVM does (infix unless TVM's folding would rewrite it,
    parentheses by Python's precedence, literals bare as operands), reads it back from that
    text, and writes back TVM's objects (compared expression by expression: the module is
    built unnormalized, its body has no type)."""
    s, n = tirx.Var("s", "int64"), tirx.Var("n", "int64")
    exprs = list(_cases(s, n).values())
    m = _shape_module(exprs, s, n)
    text = m.script()
    read = mtvm.from_tvm(m)
    assert read.script().rstrip("\n") == text.rstrip("\n")
    assert_structural_equal(parse(text), read)
    back = mtvm.to_tvm(read)["main"].body.blocks[0].bindings
    for b, e in zip(back, exprs):
        tvm.ir.assert_structural_equal(b.value.values[0], e, map_free_vars=True)


def test_comparison_of_comparisons_prints_like_tvm():
    """``EQ(s < 0, n > 2)`` prints ``s < 0 == (n > 2)`` as TVM prints it; Python (and both
    parsers) read that text as a chained comparison, so it is compared as text only."""
    s, n = tirx.Var("s", "int64"), tirx.Var("n", "int64")
    zero, two = tirx.IntImm("int64", 0), tirx.IntImm("int64", 2)
    m = _shape_module([tirx.Cast("int64", tirx.EQ(tirx.LT(s, zero), tirx.GT(n, two)))], s, n)
    assert mtvm.from_tvm(m).script().rstrip("\n") == m.script().rstrip("\n")


def test_legalized_module_round_trips_like_tvm():
    """LegalizeOps writes the conditional dims into PrimFunc signatures (TIR spelling:
    ``s < T.int64(0)``); memcore reads and prints them as TVM does."""
    m = relax.transform.LegalizeOps()(tvm_from_source(MODEL))
    text = m.script()
    read = mtvm.from_tvm(m)
    assert read.script().rstrip("\n") == text.rstrip("\n")
    assert_structural_equal(read, _ordered(text, m))
    tvm.ir.assert_structural_equal(mtvm.to_tvm(read), m)


def test_text_reads_python_boolean_syntax():
    """Comparisons chain, ``not`` binds looser than a comparison and ``and`` tighter than
    ``or``, as in Python (TVM's parser evaluates the text as Python); a literal takes the
    other operand's dtype; ``True`` is a bool literal."""
    m = parse(HEADER + """
@R.function
def main(x: R.Tensor(("s", 4), "float32")) -> R.Shape(ndim=2):
    s = T.int64()
    v = R.shape([T.Cast("int64", 0 <= s < 8), T.Cast("int64", not s == 3 or s > 1 and True)])
    return v
""")
    s = m["main"].params[0].ty.shape[0]
    chained, logic = m["main"].body.blocks[0].bindings[0].value.values
    zero, eight, three, one = P.IntImm(0), P.IntImm(8), P.IntImm(3), P.IntImm(1)
    assert P.prim_equal(chained, P.Cast("int64", P.And(P.LE(zero, s), P.LT(s, eight))))
    want = P.Or(P.Not(P.EQ(s, three)), P.And(P.GT(s, one), P.IntImm(1, "bool")))
    assert P.prim_equal(logic, P.Cast("int64", want))


def test_canonical_form_substitution_and_evaluation():
    """The nodes in memcore's symbolic arithmetic: equal values have one canonical form
    (``0 > s`` is ``s < 0``; a select of equal branches is the branch), a substitution that
    makes a node constant folds it, and a byte total evaluates through them."""
    s, n = P.PrimVar("s"), P.PrimVar("n")
    ite = P.IfThenElse(P.LT(s, P.IntImm(0)), s + 512, s)
    assert P.prove_equal(P.Select(P.GT(P.IntImm(0), s), s + 512, s), P.Select(P.LT(s, P.IntImm(0)), s + 512, s))
    assert not P.prove_equal(ite, P.Select(P.LT(s, P.IntImm(0)), s + 512, s))  # bounded differently
    assert P.prove_equal(P.Select(P.LT(s, n), n, n) * 2, n + n)
    assert P.prove_equal(P.Cast("int64", P.Cast("int32", P.IntImm(2**31))), P.IntImm(-(2**31)))
    assert P.prove_equal(P.Cast("int64", P.Cast("int32", s)) - P.Cast("int64", P.Cast("int32", s)), P.IntImm(0))
    assert list(P.free_prim_vars(P.Cast("int64", P.Not(P.EQ(n, s))) + ite)) == ["n", "s"]
    assert P.substitute(ite, {"s": P.IntImm(-3)}).value == 509
    assert P.prim_equal(P.substitute(ite, {"s": n}), P.IfThenElse(P.LT(n, P.IntImm(0)), n + 512, n))
    total = A.SizePolynomial([4 * ite, 8 * P.Select(P.GT(s, P.IntImm(2)), s, P.IntImm(3))])
    assert (total.bind({"s": -3}).value, total.bind({"s": 5}).value) == (4 * 509 + 8 * 3, 4 * 5 + 8 * 5)


# ------------------------------------------------------------------------------ bounds
_S = P.PrimVar("s")
_N = P.PrimVar("n")
_ITE = P.IfThenElse(P.LT(_S, P.IntImm(0)), _S + 512, _S)
BOUND_DIMS = {
    "if_then_else": _ITE,
    "if_then_else_times_var": _ITE * _N,
    "select": P.Select(P.GT(_S, P.IntImm(2)), _S, P.IntImm(3)),
    "select_of_sums": P.Select(P.LT(_S, P.IntImm(0)), _S + 512, _S),
    "select_with_unbounded": P.Select(P.LT(_S, _N), _S * 2, _N),
    "cast_int32": P.Cast("int64", P.Cast("int32", _S)),
    "cast_comparison": P.Cast("int64", P.LE(_S, P.IntImm(3))),
    "cast_logic": P.Cast("int64", P.Or(P.And(P.GE(_S, _N), P.Not(P.EQ(_S, P.IntImm(5)))), P.NE(_N, P.IntImm(1)))),
    "cast_in_sum": P.Cast("int64", P.Cast("int32", _S) + P.IntImm(1, "int32")) + _N,
    "cast_uint8": P.Cast("int64", P.Cast("uint8", _N)),
}


@pytest.mark.parametrize("bounded", [False, True], ids=["unbounded", "s<=512"])
@pytest.mark.parametrize("name", list(BOUND_DIMS))
def test_bounds_equal_tvm_analyzer(name, bounded):
    """As StaticPlanBlockMemory asks: the constant bound, then (when it is infinite) the
    symbolic maximum; ``n`` stays unbounded."""
    writer = _Writer(tvm_api(), IRModule({}))
    dim = BOUND_DIMS[name]
    te = writer.prim(dim)
    ana, dom, bounds = tvm.sym.Analyzer(), {}, A.VarBounds()
    if bounded:
        sv = writer.prim(_S)
        ana.bind(sv, tvm.ir.Range.from_min_extent(tirx.IntImm("int64", 0), tirx.IntImm("int64", 513)))
        dom[sv] = tvm.sym.IntervalSet(tirx.IntImm("int64", 0), tirx.IntImm("int64", 512))
        bounds.ranges["s"] = (0, 512)
    b = ana.const_int_bound(te)
    assert A.const_int_bound(dim, bounds) == (b.min_value, b.max_value)
    theirs = ana.int_set(te, dom).max_value
    hi = A.int_set(dim, bounds)[1]
    if hi is A.PINF:
        assert str(theirs) == "pos_inf"
    else:
        tvm.ir.assert_structural_equal(writer.prim(hi), theirs)


# ------------------------------------------------------------------------------ StaticPlanBlockMemory
#: dims of the planned allocations, one function each (and each again with bounds)
PLAN_DIMS = (
    "T.if_then_else(s < 0, s + 512, s)",
    "T.if_then_else(s < 0, T.int64(7), T.int64(9))",
    "T.Select(s > 2, s, T.int64(3))",
    "T.Select(s < 0, s + 512, s)",
    'T.Cast("int64", T.Cast("int32", s))',
    'T.Cast("int64", s <= 3)',
    'T.Cast("int64", not s == 3) + s',
    "T.if_then_else(s < 0, s + 512, s) * s",
    "T.min(s, 512)",
)


def _plan_function(name, dim, attrs):
    """A lowered function of three allocations of ``(dim, 4)`` in a chain (the third reuses
    the first's storage)."""
    alloc = f'R.builtin.alloc_tensor(R.shape([{dim}, 4]), R.dtype("float32"), 0, R.str("global"))'
    ty = f'R.Tensor(({dim}, 4), "float32")'
    attr = f"        R.func_attr({attrs})\n" if attrs else ""
    return f"""
    @R.function(pure=False)
    def {name}(x: R.Tensor(("s", 4), "float32")) -> R.Tensor(("s", 4), "float32"):
        s = T.int64()
{attr}        cls = Module
        a: {ty} = {alloc}
        cls.k(x, a)
        b: {ty} = {alloc}
        cls.k(a, b)
        c: {ty} = {alloc}
        cls.k(b, c)
        return x
"""


def _plan_module():
    funcs = []
    for i, dim in enumerate(PLAN_DIMS):
        funcs.append(_plan_function(f"f{i}", dim, None))
        funcs.append(_plan_function(f"f{i}_bounded", dim, '{"tir_var_upper_bound": {"s": 512}}'))
    # Case 2: the returned allocation gets a storage of its upper-bounded size
    ite = PLAN_DIMS[0]
    funcs.append(f"""
    @R.function(pure=False)
    def dynamic_output(x: R.Tensor(("s", 4), "float32")) -> R.Tensor(({ite}, 4), "float32"):
        s = T.int64()
        R.func_attr({{"relax.memory_plan_dynamic_func_output": True, "tir_var_upper_bound": {{"s": 512}}}})
        cls = Module
        a: R.Tensor(({ite}, 4), "float32") = R.builtin.alloc_tensor(R.shape([{ite}, 4]), R.dtype("float32"), 0, R.str("global"))
        cls.k(x, a)
        return a
""")
    text = HEADER + """
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def k(A0: T.handle, A1: T.handle):
        T.evaluate(0)
""" + "".join(funcs)
    return tvm_from_source(text)


@pytest.fixture(scope="module")
def plan_module():
    m = _plan_module()
    return m, relax.transform.StaticPlanBlockMemory()(m)


def _same_functions(ours, theirs):
    for gv, f in theirs.functions.items():
        if isinstance(f, relax.Function):
            tvm.ir.assert_structural_equal(ours[gv.name_hint], f, map_free_vars=True)


def test_native_static_plan_block_memory_equals_tvm(plan_module):
    m, theirs = plan_module
    _same_functions(mtvm.StaticPlanBlockMemory()(m), theirs)


def test_pure_static_plan_block_memory_equals_tvm(plan_module):
    """The pass on memcore's IR, read from TVM's objects and from TVM's text."""
    m, theirs = plan_module
    _same_functions(mtvm.to_tvm(mc.StaticPlanBlockMemory()(mtvm.from_tvm(m))), theirs)
    _same_functions(mtvm.to_tvm(mc.StaticPlanBlockMemory()(_ordered(m.script(), m))), theirs)


def test_storage_sizes_follow_tvm_rules(plan_module):
    """The storages TVM sizes: an if_then_else dim stays symbolic even with a bound (TVM's
    bound of a call is its dtype's range), a Select's bound is the union of its branches',
    a cast to int32 is bounded by int32's range even without bounds."""
    _, theirs = plan_module

    def storage_sizes(name):
        text = theirs[name].script()
        lines = [line for line in text.splitlines() if "alloc_storage" in line]
        return [line.split("R.shape([", 1)[1].split("])", 1)[0] for line in lines]

    assert storage_sizes("f0_bounded") == ["16 * T.if_then_else(s < 0, s + 512, s)"] * 2
    assert storage_sizes("f3_bounded") == ["16384"] * 2  # (512 + 512) * 4 * 4
    assert storage_sizes("f2") == ["16 * T.max(3, s)"] * 2
    assert storage_sizes("f4") == [str(16 * (2**31 - 1))] * 2


# ------------------------------------------------------------------------------ compile and run
MODEL = HEADER + """
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("s", 4), "float32")) -> R.Tensor(("s", 4), "float32"):
        s = T.int64()
        with R.dataflow():
            y = R.reshape(x, R.shape([T.if_then_else(s < 0, s + 512, s), 4]))
            z = R.exp(y)
            w = R.add(z, R.const(1, "float32"))
            v = R.multiply(w, w)
            u = R.reshape(v, R.shape([s, 4]))
            R.output(u)
        return u
"""


def test_compiled_with_memcore_pipeline_runs_like_tvm():
    m = tvm_from_source(MODEL)
    x = np.random.default_rng(3).standard_normal((5, 4)).astype("float32")

    def run(pipeline):
        ex = tvm.compile(m, target="llvm", relax_pipeline=pipeline)
        vm = relax.VirtualMachine(ex, tvm.cpu())
        return vm["main"](tvm.runtime.tensor(x)).numpy()

    want = run("default")
    np.testing.assert_allclose(want, (np.exp(x) + 1) ** 2, rtol=1e-5)
    for mode in ("tvm", "arena"):
        np.testing.assert_array_equal(run(mtvm.pipeline("llvm", mode=mode)), want)
