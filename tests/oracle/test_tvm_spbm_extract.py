"""The native StaticPlanBlockMemory by extraction (memcore_py/tvm/spbm_extract.py) against the
full conversion (both modes) and TVM's StaticPlanBlockMemory (TVM mode), on real models,
dynamic shapes and random modules, and the cases where it must decline."""
from __future__ import annotations

import random

import pytest

tvm = pytest.importorskip("tvm")

from _helpers import dynamic_model_text, tvm_from_source  # noqa: E402
from tvm import relax, tirx  # noqa: E402

import memcore_py.tvm as mtvm  # noqa: E402
from memcore_py.examples.models import list_models, model_text  # noqa: E402
from memcore_py.testing import random_lowered_module  # noqa: E402
from memcore_py.testing.memory_programs import random_memory_module  # noqa: E402
from memcore_py.transform import StaticPlanBlockMemory as MemcoreStaticPlanBlockMemory  # noqa: E402
from memcore_py.transform import ToNonDataflow  # noqa: E402
from memcore_py.transform.static_plan_block_memory import differences_from_tvm  # noqa: E402
from memcore_py.tvm._api import tvm_api  # noqa: E402
from memcore_py.tvm.passes import apply_memcore_pass  # noqa: E402
from memcore_py.tvm.spbm_extract import static_plan_block_memory_extracted  # noqa: E402

TVM_SPBM = relax.transform.StaticPlanBlockMemory
MODES = ("tvm", "arena")


def _extracted(mod, mode):
    return static_plan_block_memory_extracted(tvm_api(), mod, mode, 64, None, True)


def _full(mod, mode):
    """The full conversion's StaticPlanBlockMemory (read everything, plan, write back)."""
    return apply_memcore_pass(MemcoreStaticPlanBlockMemory(mode=mode, time_limit=None), mod)


def _check(mod, mode, *, like_tvm=None):
    """The extraction's output equals the full conversion's and the native pass's (and, in TVM
    mode, TVM's own when ``like_tvm``, by default when memcore documents no difference from
    TVM on ``mod``); returns it (None when it declined)."""
    out = _extracted(mod, mode)
    full = _full(mod, mode)
    tvm.ir.assert_structural_equal(mtvm.StaticPlanBlockMemory(mode=mode, time_limit=None)(mod), full)
    if out is not None:
        tvm.ir.assert_structural_equal(out, full)
        assert out.script() == full.script()  # the same names too (storage, storage1, ..., *_raw)
        if mode == "tvm":
            if like_tvm is None:
                like_tvm = not differences_from_tvm(mtvm.from_tvm(mod))
            if like_tvm:
                tvm.ir.assert_structural_equal(out, TVM_SPBM()(mod))
    return out


CASES = list_models() + [f"{m}:{k}" for m in ("bert_base", "gpt2_small", "llama_small") for k in ("bounded", "unbounded")]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", CASES)
def test_real_models_by_extraction(case, mode):
    name, _, kind = case.partition(":")
    mod = tvm_from_source(model_text(name) if not kind else dynamic_model_text(name, kind == "bounded"))
    out = _check(mod, mode)
    assert out is not None  # static, bounded and unbounded: planned by the extraction
    for gv, f in mod.functions.items():  # PrimFuncs are carried as they are
        if isinstance(f, tvm.tirx.PrimFunc):
            assert out[gv.name_hint].same_as(f)


def _random(seed):
    """A random post-CallTIRRewrite module as TVM parses it: memcore's random lowered
    programs (tuples, get-items, packed calls, the packed reshape; symbolic sizes 40 % of the
    time), or several-function memory programs (If, dataflow blocks, local scopes, devices,
    symbolic sizes: each sometimes), after ToNonDataflow."""
    if seed % 3 == 2:
        opts = {} if seed % 2 else {"p_if": 0.0, "p_dataflow": 0.0, "p_symbolic": 0.0}
        mod = ToNonDataflow()(random_memory_module(seed, 3, 10, **opts))
    else:
        mod = random_lowered_module(seed, 20 + seed % 60)
    return tvm_from_source(mod.script())


@pytest.mark.no_verify
@pytest.mark.parametrize("mode", MODES)
def test_random_modules_by_extraction_equal_the_full_conversion(mode):
    declined, case_2 = [], 0
    for seed in range(90):
        mod = _random(seed)
        if _check(mod, mode, like_tvm=False) is None:
            declined.append(seed)
        else:
            case_2 += "relax.memory_plan_dynamic_func_output" in mod.script()
    # every module is extracted, the Case-2 functions (relax.memory_plan_dynamic_func_output) included
    assert not declined and case_2 >= 2, (declined, case_2)


def _module(text):
    parsed = tvm_from_source(text)
    return parsed if isinstance(parsed, tvm.IRModule) else tvm.IRModule({"main": parsed})


MODULE = """# from tvm.script import ir as I
# from tvm.script import relax as R
# from tvm.script import tirx as T

@I.ir_module
class Module:
    @T.prim_func(private=True)
    def k1(A0: T.handle, A1: T.handle):
        T.evaluate(0)

    @T.prim_func(private=True)
    def k2(A0: T.handle, A1: T.handle, A2: T.handle):
        T.evaluate(0)

"""


def _with_main(m, main):
    """``m`` with ``main`` replaced (the PrimFuncs keep their GlobalVars, which main calls)."""
    return tvm.IRModule({gv: (main if gv.name_hint == "main" else f) for gv, f in m.functions.items()})


def _alloc(shape, dtype="float32", scope="global"):
    return f'R.builtin.alloc_tensor(R.shape({list(shape)}), R.dtype("{dtype}"), R.prim_value(0), R.str("{scope}"))'


def _fn(name, body, params='x: R.Tensor((4,), dtype="float32")', ret='R.Tensor((4,), dtype="float32")', attrs=""):
    head = f"    @R.function(pure=False)\n    def {name}({params}) -> {ret}:\n        cls = Module\n"
    if attrs:
        head += f"        R.func_attr({attrs})\n"
    return head + "".join(f"        {line}\n" for line in body.strip("\n").split("\n")) + "\n"


#: three allocations in a chain, the last one returned: the first two are planned
CHAIN = f"""a = {_alloc([4])}
_ = cls.k1(x, a)
b = {_alloc([4])}
_1 = cls.k1(a, b)
c = {_alloc([4])}
_2 = cls.k1(b, c)
return c"""


def test_storages_are_named_across_functions_and_reused_within_each():
    """The storage names continue from one function to the next in the module's function
    order (``main`` first here, as written), as TVM's pass names them."""
    m = _module(MODULE + _fn("main", CHAIN) + _fn("helper", CHAIN))
    for mode in MODES:
        out = _check(m, mode)
        assert out is not None
    out, theirs = _extracted(m, "tvm"), TVM_SPBM()(m)
    for name in ("main", "helper"):
        assert out[name].script() == theirs[name].script()
    assert "storage1" in out["main"].script() and "storage2" in out["helper"].script()


def test_tuples_get_items_packed_calls_and_the_packed_reshape_carry_tokens():
    body = f"""a = {_alloc([4])}
b = {_alloc([2, 2])}
_ = cls.k2(x, a, b)
t = (a, b)
u = t[1]
r = R.call_packed("vm.builtin.reshape", u, R.shape([4]), ty_args=(R.Tensor((4,), dtype="float32"),))
c = {_alloc([4])}
_1 = R.call_packed("my_kernel", t, c, ty_args=(R.Tuple,))
d = {_alloc([4])}
_2 = cls.k2(r, c, d)
e = {_alloc([4])}
_3 = cls.k1(d, e)
return e"""
    m = _module(MODULE + _fn("main", body))
    for mode in MODES:
        assert _check(m, mode) is not None


def test_an_escaping_or_unplanned_allocation_stays_and_a_use_elsewhere_discards():
    # a: returned inside a tuple; b: passed to a Relax op (escapes); c, d planned
    body = f"""a = {_alloc([4])}
_ = cls.k1(x, a)
b = {_alloc([4])}
_1 = cls.k1(a, b)
s = R.add(b, x)
c = {_alloc([4])}
_2 = cls.k1(s, c)
d = {_alloc([4])}
_3 = cls.k1(c, d)
return (a, d)"""
    m = _module(MODULE + _fn("main", body, ret='R.Tuple(R.Tensor((4,), dtype="float32"), R.Tensor((4,), dtype="float32"))'))
    for mode in MODES:
        out = _check(m, mode)
        assert out is not None
    assert _extracted(m, "tvm")["main"].script().count("R.builtin.alloc_tensor") == 3  # a, b and d


def test_a_match_cast_carries_its_value_tokens():
    body = f"""a = {_alloc([4])}
_ = cls.k1(x, a)
b = R.match_cast(a, R.Tensor((4,), dtype="float32"))
c = {_alloc([4])}
_1 = cls.k1(b, c)
d = {_alloc([4])}
_2 = cls.k1(c, d)
return d"""
    m = _module(MODULE + _fn("main", body))
    for mode in MODES:
        assert _check(m, mode) is not None


def test_blocks_plan_as_one_function():
    # a token used in the next block is discarded; a storage is reused across blocks
    ty = relax.TensorType((4,), "float32")
    m = _module(MODULE + _fn("main", f"""a = {_alloc([4])}
_ = cls.k1(x, a)
return a"""))
    k1 = m.get_global_var("k1")
    x = relax.Var("x", ty)
    template = m["main"].body.blocks[0].bindings[0].value
    void = m["main"].body.blocks[0].bindings[1].var.ty

    def alloc(var):  # a call object each (TVM's pass keys its tokens by call)
        return relax.VarBinding(var, relax.Call(template.op, template.args, template.attrs, template.ty_args, ret_ty=ty))

    def call(*args):
        return relax.VarBinding(relax.Var("_", void), relax.Call(k1, list(args), ret_ty=void))

    a, b, c, d = (relax.Var(n, ty) for n in "abcd")
    blocks = [relax.BindingBlock([alloc(a), call(x, a), alloc(b), call(a, b)]),
              relax.BindingBlock([alloc(c), call(b, c), alloc(d), call(c, d)])]
    body = relax.BlockBuilder().normalize(relax.SeqExpr(blocks, d))
    m2 = tvm.IRModule({k1: m[k1], "main": relax.Function([x], body, ty, is_pure=False)})
    for mode in MODES:
        assert _check(m2, mode) is not None


def test_arena_mode_of_mixed_dtypes_and_offsets():
    # three dtypes with chained lifetimes: TVM mode keeps a storage per dtype, the arena shares
    body = f"""a = {_alloc([64])}
_ = cls.k1(x, a)
b = {_alloc([256], "int8")}
_1 = cls.k1(a, b)
c = {_alloc([128], "float16")}
_2 = cls.k1(b, c)
d = {_alloc([64])}
_3 = cls.k1(c, d)
return d"""
    m = _module(MODULE + _fn("main", body))
    out = _check(m, "arena")
    assert out is not None
    text = out["main"].script()
    assert "_raw" in text and "R.memory.ensure_zero_offset" in text and 'R.dtype("uint8")' in text, text
    # without views: the tensors are allocated at their offsets directly
    plain = static_plan_block_memory_extracted(tvm_api(), m, "arena", 64, None, False)
    tvm.ir.assert_structural_equal(plain, apply_memcore_pass(
        MemcoreStaticPlanBlockMemory(mode="arena", time_limit=None, zero_offset_views=False), m))
    assert "ensure_zero_offset" not in plain["main"].script()


def test_nothing_planned_returns_the_module():
    m = _module(MODULE + _fn("main", f"""a = {_alloc([4])}
_ = cls.k1(x, a)
return a"""))
    for mode in MODES:
        assert _extracted(m, mode).same_as(m)


def test_a_body_without_a_type_takes_its_results():
    # TVM's constructors leave a SeqExpr untyped; its result's type is the body's
    m = _module(MODULE + _fn("main", CHAIN))
    f = m["main"]
    untyped = relax.SeqExpr(f.body.blocks, f.body.body)
    assert untyped.ty.is_missing()
    m2 = _with_main(m, relax.Function(f.params, untyped, f.ret_ty, False, f.attrs))
    for mode in MODES:
        out = _check(m2, mode)
        assert out is not None and not out["main"].body.ty.is_missing()


#: Allocations planned inside If branches and dataflow blocks: the extraction writes them, each
#: storage at the full rewriter's emission site (in the branch; before the If when both branches
#: use it; a DataflowVar in the dataflow block)
def _pair(src, a, b, n, indent):
    """Two allocations ``a`` and ``b`` written by kernels in a chain from ``src``."""
    lines = [f"{a} = {_alloc([4])}", f"_{n} = cls.k1({src}, {a})", f"{b} = {_alloc([4])}", f"_{n + 1} = cls.k1({a}, {b})"]
    return "\n".join(" " * indent + line for line in lines)


INSIDE = {
    "if": f"""c = R.const(True, "bool")
if c:
{_pair("x", "a", "b", 0, 4)}
    r = b
else:
    r = x
return r""",
    "dataflow": f"""with R.dataflow():
{_pair("x", "a", "b", 0, 4)}
    R.output(b)
return b""",
    "if_both_branches": f"""c = R.const(True, "bool")
if c:
{_pair("x", "a", "b", 0, 4)}
    r = b
else:
{_pair("x", "d", "e", 2, 4)}
    r = e
return r""",
    "nested_if_in_dataflow_function": f"""c = R.const(True, "bool")
with R.dataflow():
    y = R.add(x, x)
    R.output(y)
if c:
    if c:
{_pair("y", "a", "b", 0, 8)}
        r0 = b
    else:
        r0 = y
    r = r0
else:
    r = x
return r""",
}

#: the same structures with nothing planned inside them: the extraction plans and writes
HANDLED = {
    "if": f"""c = R.const(True, "bool")
p = {_alloc([4])}
_0 = cls.k1(x, p)
q = {_alloc([4])}
_2 = cls.k1(p, q)
if c:
    a = {_alloc([4])}
    _ = cls.k1(q, a)
    r = a
else:
    r = x
return r""",
    "dataflow": f"""with R.dataflow():
    a = R.add(x, x)
    R.output(a)
p = {_alloc([4])}
_0 = cls.k1(a, p)
b = {_alloc([4])}
_ = cls.k1(p, b)
return b""",
}


@pytest.mark.parametrize("case", sorted(INSIDE))
def test_allocations_planned_inside_a_branch_or_dataflow_block_are_written_by_the_extraction(case):
    m = _module(MODULE + _fn("main", INSIDE[case]))
    for mode in MODES:
        out = _check(m, mode)  # equal to the full conversion (names included) and, in TVM mode, to TVM
        assert out is not None
        assert "R.memory.alloc_storage" in out["main"].script()


@pytest.mark.parametrize("case", sorted(HANDLED))
def test_functions_with_if_or_dataflow_blocks_are_planned_by_the_extraction(case):
    m = _module(MODULE + _fn("main", HANDLED[case]))
    for mode in MODES:
        out = _check(m, mode)
        assert out is not None and "R.memory.alloc_storage" in out["main"].script()



def test_a_nested_call_is_read_as_the_full_conversion_reads_it():
    # TVMScript normalizes nested calls away: built with TVM's constructors
    m = _module(MODULE + _fn("main", f"""a = {_alloc([4])}
_ = cls.k1(x, a)
return a"""))
    f = m["main"]
    b0, b1 = f.body.blocks[0].bindings
    add = relax.Call(tvm.ir.Op.get("relax.add"), [f.params[0], f.params[0]], None, None, None, f.params[0].ty)
    nested = relax.VarBinding(b1.var, relax.Call(b1.value.op, [add, b0.var], ret_ty=b1.var.ty))
    m2 = _with_main(m, relax.Function(f.params, relax.SeqExpr([relax.BindingBlock([b0, nested])], f.body.body, ),
                                      f.ret_ty, False, f.attrs))
    for mode in MODES:  # read, not declined: a escapes (returned), so nothing is planned
        assert _extracted(m2, mode).same_as(m2)


SYMBOLIC = """n = T.int64()
y = R.match_cast(x, R.Tensor((n,), dtype="float32"))
a = R.builtin.alloc_tensor(R.shape([n]), R.dtype("float32"), R.prim_value(0), R.str("global"))
_ = cls.k1(y, a)
b = R.builtin.alloc_tensor(R.shape([n]), R.dtype("float32"), R.prim_value(0), R.str("global"))
_1 = cls.k1(a, b)
c = R.builtin.alloc_tensor(R.shape([2, n]), R.dtype("float32"), R.prim_value(0), R.str("global"))
_2 = cls.k1(b, c)
d = R.builtin.alloc_tensor(R.shape([2, n]), R.dtype("float32"), R.prim_value(0), R.str("global"))
_3 = cls.k1(c, d)
return x"""


@pytest.mark.parametrize("attrs", ["", '{"tir_var_upper_bound": {"n": 16}}', '{"tir_non_negative_var": ["n"]}'])
def test_symbolic_sizes_bounded_or_not_are_planned_by_extraction(attrs):
    m = _module(MODULE + _fn("main", SYMBOLIC, attrs=attrs))
    for mode in MODES:
        assert _check(m, mode) is not None


def test_symbolic_sizes_looked_up_by_structure_across_modules_are_written_in_each_functions_variables():
    """Sizes of unbounded functions are memoised by the dims' structure with their variables
    by name (``_spbm_extract.named_dims``): modules read later, whose variables are other
    objects, hit the memo; their storages' sizes are still written in their own variables
    (TVM's output, and no variable of an earlier module)."""
    from memcore_py.ir.memo import MEMO
    from memcore_py.tvm import spbm_extract

    MEMO.clear()
    other = (SYMBOLIC.replace("n = T.int64()", "k = T.int64()").replace("(n,)", "(k,)").replace("[n]", "[k]")
             .replace("[2, n]", "[2, k]"))
    texts = [MODULE + _fn("main", SYMBOLIC) + _fn("helper", other) for _ in range(3)]
    outs = []
    for k, text in enumerate(texts):
        m = _module(text)
        out = _check(m, "tvm", like_tvm=True)
        assert out is not None
        if k == 0:
            held = len(spbm_extract._TOKEN_SIZES)
            assert held >= 2  # n and 2 * n (k and 2 * k: other names, other keys)
        outs.append(out)
    assert len(spbm_extract._TOKEN_SIZES) == held  # every later size was found
    for m_out in outs:  # each function defines its variable (match_cast): a foreign one would be free
        for gv, f in m_out.functions.items():
            if isinstance(f, relax.Function):
                assert not relax.analysis.free_symbolic_vars(f), gv


def test_dims_keyed_by_name_only_when_each_name_is_one_variable():
    from memcore_py.tvm import _spbm_extract
    from memcore_py.tvm.compat import fast_layout

    layout = fast_layout(tvm_api())
    array = tvm_api().Array
    three = tirx.IntImm("int64", 3)
    n1, n2, m = tirx.Var("n", "int64"), tirx.Var("n", "int64"), tirx.Var("m", "int64")
    same = array([n1 * 4, m, three])
    key, names = _spbm_extract.named_dims(layout, same.__chandle__())
    assert names == {"n": n1.__chandle__(), "m": m.__chandle__()}
    again = array([tirx.Var("n", "int64") * 4, tirx.Var("m", "int64"), tirx.IntImm("int64", 3)])
    assert _spbm_extract.named_dims(layout, again.__chandle__())[0] == key  # other objects, one key
    other = array([n1 * 4, m + 1, three])  # held: the call reads it at its address
    assert _spbm_extract.named_dims(layout, other.__chandle__())[0] != key
    two_ns = array([n1, n2])
    assert _spbm_extract.named_dims(layout, two_ns.__chandle__()) is None  # two variables named n
    ops = [array([n1 * 4]), array([n1 + 4]), array([n1 - 4]), array([tirx.floordiv(n1, 4)]), array([n1 * 5]),
           array([tirx.IntImm("int64", 4) * n1])]
    keys = [_spbm_extract.named_dims(layout, d.__chandle__())[0] for d in ops]
    assert len(set(keys)) == len(keys)  # the op, the operands' values and order all count
    cast = array([tirx.Cast("int64", m)])
    assert _spbm_extract.named_dims(layout, cast.__chandle__()) is None
    with pytest.raises(ValueError, match="not an ffi.Array"):
        _spbm_extract.named_dims(layout, n1.__chandle__())


#: composite symbolic dims, each written in several bindings (a new PrimExpr object each time),
#: over the two variables of the signature (what the bounds name); with both bounded every size
#: is constant, with only ``n`` bounded (``m`` non-negative) the ``m`` dims are not
COMPOSITE = """n = T.int64()
m = T.int64()
a = R.builtin.alloc_tensor(R.shape([n * 4, 8]), R.dtype("float32"), R.prim_value(0), R.str("global"))
_ = cls.k1(x, a)
b = R.builtin.alloc_tensor(R.shape([n * 4, 8]), R.dtype("float32"), R.prim_value(0), R.str("global"))
_1 = cls.k1(a, b)
c = R.builtin.alloc_tensor(R.shape([(n - 1) // 2 + 1, n * 4]), R.dtype("float16"), R.prim_value(0), R.str("global"))
_2 = cls.k1(b, c)
d = R.builtin.alloc_tensor(R.shape([(n - 1) // 2 + 1, n * 4]), R.dtype("float16"), R.prim_value(0), R.str("global"))
_3 = cls.k1(c, d)
e = R.builtin.alloc_tensor(R.shape([n, m * 2]), R.dtype("float32"), R.prim_value(0), R.str("global"))
_4 = cls.k1(d, e)
f = R.builtin.alloc_tensor(R.shape([n * m, 3]), R.dtype("float32"), R.prim_value(0), R.str("global"))
_5 = cls.k1(e, f)
g = R.builtin.alloc_tensor(R.shape([n * 4, 8]), R.dtype("float32"), R.prim_value(0), R.str("global"))
_6 = cls.k1(f, g)
return x"""


@pytest.mark.parametrize("attrs", ['{"tir_var_upper_bound": {"n": 16, "m": 32}}',
                                   '{"tir_var_upper_bound": {"n": 16}, "tir_non_negative_var": ["m"]}',
                                   '{"tir_var_upper_bound": {"n": 16, "m": 32}, "tir_var_lower_bound": {"n": 2}}'])
def test_composite_symbolic_dims_are_bounded_as_the_full_pass_bounds_them(attrs):
    m = _module(MODULE + _fn("main", COMPOSITE, params='x: R.Tensor(("n", "m"), dtype="float32")',
                              ret='R.Tensor(("n", "m"), dtype="float32")', attrs=attrs))
    for mode in MODES:
        assert _check(m, mode) is not None



#: the same composite dims written again in each binding's annotation: the type's dims are other
#: PrimExpr objects than the shape argument's, structurally equal to them
ANNOTATED = """n = T.int64()
m = T.int64()
a: R.Tensor((n * 4, 8), dtype="float32") = R.builtin.alloc_tensor(R.shape([n * 4, 8]), R.dtype("float32"), R.prim_value(0), R.str("global"))
_ = cls.k1(x, a)
b: R.Tensor((n * 4, 8), dtype="float32") = R.builtin.alloc_tensor(R.shape([n * 4, 8]), R.dtype("float32"), R.prim_value(0), R.str("global"))
_1 = cls.k1(a, b)
c: R.Tensor((n + m, 2), dtype="float16") = R.builtin.alloc_tensor(R.shape([n + m, 2]), R.dtype("float16"), R.prim_value(0), R.str("global"))
_2 = cls.k1(b, c)
d: R.Tensor((n + m, 2), dtype="float16") = R.builtin.alloc_tensor(R.shape([n + m, 2]), R.dtype("float16"), R.prim_value(0), R.str("global"))
_3 = cls.k1(c, d)
return x"""


@pytest.mark.parametrize("attrs", ["", '{"tir_var_upper_bound": {"n": 16, "m": 32}}'])
def test_annotated_composite_dims_equal_to_the_shapes_are_planned_by_extraction(attrs):
    m = _module(MODULE + _fn("main", ANNOTATED, params='x: R.Tensor(("n", "m"), dtype="float32")',
                              ret='R.Tensor(("n", "m"), dtype="float32")', attrs=attrs))
    main = m["main"]
    first = main.body.blocks[0].bindings[0]
    assert not first.var.ty.shape.values[0].same_as(first.value.args[0].values[0])  # other objects
    for mode in MODES:
        assert _check(m, mode) is not None


def _random_dim(rng, depth):
    """A shape-like dim over ``n`` and ``m`` in TVMScript: sums, products, differences,
    division and remainder by constants, min/max, and now and then a cast or a select (which
    the compiled sizer leaves to the full pass's rule)."""
    if depth == 0 or rng.random() < 0.3:
        return rng.choice(("n", "m")) if rng.random() < 0.7 else f"T.int64({rng.randint(1, 9)})"
    a, b = _random_dim(rng, depth - 1), _random_dim(rng, depth - 1)
    kind = rng.choice(("+", "*", "*", "-", "//", "%", "min", "max", "cast", "select"))
    c = rng.randint(1, 6)
    if kind == "-":  # never negative: the pass refuses a negative dim
        return f"T.max({a} - T.int64({c}), T.int64(0))"
    if kind in ("//", "%"):
        return f"({a} {kind} {c})"
    if kind in ("min", "max"):
        return f"T.{kind}({a}, {b})"
    if kind == "cast":
        return f'T.Cast("int64", T.Cast("int32", {a}))'
    if kind == "select":
        return f"T.Select(n < m, {a}, {b})"
    return f"({a} {kind} {b})"


@pytest.mark.parametrize("seed", range(6))
def test_random_composite_dims_are_bounded_as_tvm_bounds_them(seed):
    # every distinct dim is bounded by the compiled bound kernel or, when the kernel finds no
    # constant bound (``m`` only non-negative), by the full pass's rule; a cast or a select
    # sizes its allocation whole: the plan equals the full conversion's and TVM's
    rng = random.Random(seed)
    lines, prev = [], "x"
    for k in range(10):
        dims = ", ".join(_random_dim(rng, 3) for _ in range(rng.randint(1, 2)))
        lines += [f'a{k} = R.builtin.alloc_tensor(R.shape([{dims}]), R.dtype("float32"), R.prim_value(0), '
                  'R.str("global"))', f"_{k} = cls.k1({prev}, a{k})"]
        prev = f"a{k}"
    attrs = ('{"tir_var_upper_bound": {"n": 16, "m": 32}}',
             '{"tir_var_upper_bound": {"n": 16, "m": 32}, "tir_var_lower_bound": {"n": 2, "m": 1}}',
             '{"tir_var_upper_bound": {"n": 16}, "tir_non_negative_var": ["m"]}')[seed % 3]
    m = _module(MODULE + _fn("main", "n = T.int64()\nm = T.int64()\n" + "\n".join(lines) + "\nreturn x",
                              params='x: R.Tensor(("n", "m"), dtype="float32")',
                              ret='R.Tensor(("n", "m"), dtype="float32")', attrs=attrs))
    for mode in MODES:
        _check(m, mode, like_tvm=(mode == "tvm"))


def test_a_bound_memcore_does_not_support_declines_and_the_full_pass_reports_it():
    # n * m with n bounded and m of unknown sign: TVM's bound is a T.Select, which memcore
    # refuses; the dim's bound is not constant, the whole size declines, the full pass says why
    from memcore_py.errors import PassError

    m = _module(MODULE + _fn("main", COMPOSITE, params='x: R.Tensor(("n", "m"), dtype="float32")',
                              ret='R.Tensor(("n", "m"), dtype="float32")', attrs='{"tir_var_upper_bound": {"n": 16}}'))
    assert _extracted(m, "tvm") is None
    with pytest.raises(PassError, match=r"binding 'f': the upper bound of shape .* needs a sign condition"):
        mtvm.StaticPlanBlockMemory()(m)


def test_a_malformed_bound_declines():
    from memcore_py.errors import PassError

    m = _module(MODULE + _fn("main", SYMBOLIC, attrs='{"tir_var_upper_bound": {"n": "many"}}'))
    assert _extracted(m, "tvm") is None
    with pytest.raises(PassError, match="tir_var_upper_bound"):  # the full conversion reports it
        mtvm.StaticPlanBlockMemory()(m)


#: "Case 2": a planned allocation ``a``, the returned ``b`` of a symbolic shape (its own storage
#: under the attribute) and the returned ``c`` of a constant one (never a storage of its own)
CASE_2 = f"""n = T.int64()
a = R.builtin.alloc_tensor(R.shape([n]), R.dtype("float32"), R.prim_value(0), R.str("global"))
_ = cls.k1(x, a)
b = R.builtin.alloc_tensor(R.shape([2, n]), R.dtype("float32"), R.prim_value(0), R.str("global"))
_1 = cls.k1(a, b)
c = {_alloc([4])}
_2 = cls.k1(b, c)
return (b, c)"""
CASE_2_PARAMS = 'x: R.Tensor(("n",), dtype="float32")'
CASE_2_RET = 'R.Tuple(R.Tensor((2, "n"), dtype="float32"), R.Tensor((4,), dtype="float32"))'


@pytest.mark.parametrize("attrs, storage_bytes", [
    ('{"relax.memory_plan_dynamic_func_output": True}', "2 * n * 4"),
    ('{"relax.memory_plan_dynamic_func_output": True, "tir_var_upper_bound": {"n": 16}}', "128"),
])
def test_case_2_allocations_are_planned_by_extraction(attrs, storage_bytes):
    """With ``relax.memory_plan_dynamic_func_output`` an unplanned allocation of a symbolic
    shape gets a storage of its upper-bounded size right before it (named after the planned
    ones emitted so far, across the functions), and the functions lose the attribute: the full
    pass's and TVM's output, written on TVM's objects."""
    m = _module(MODULE + _fn("main", CASE_2, params=CASE_2_PARAMS, ret=CASE_2_RET, attrs=attrs)
                + _fn("helper", CASE_2, params=CASE_2_PARAMS, ret=CASE_2_RET, attrs=attrs))
    for mode in MODES:
        out = _check(m, mode)
        assert out is not None
        text = out.script()
        assert "relax.memory_plan_dynamic_func_output" not in text
        assert text.count("R.builtin.alloc_tensor(R.shape([4])") == 2  # c, of a constant shape, as it was
        # per function: a's storage, then b's of the upper-bounded size
        assert text.count(f"R.memory.alloc_storage(R.shape([{storage_bytes}])") == 2
        assert "R.memory.alloc_tensor(storage1, 0, R.shape([2, n])" in text
        assert "R.memory.alloc_tensor(storage3, 0, R.shape([2, n])" in text


def test_a_false_case_2_attribute_plans_nothing_more_and_is_kept():
    """``relax.memory_plan_dynamic_func_output`` false: the returned ``b`` keeps its
    ``R.builtin.alloc_tensor`` and the function its attribute, as in TVM (which removes it only
    where it is true), on both paths."""
    attrs = '{"relax.memory_plan_dynamic_func_output": False}'
    m = _module(MODULE + _fn("main", CASE_2, params=CASE_2_PARAMS, ret=CASE_2_RET, attrs=attrs))
    out = _check(m, "tvm", like_tvm=True)
    assert out is not None
    text = out.script()
    assert "relax.memory_plan_dynamic_func_output" in text
    assert "R.builtin.alloc_tensor(R.shape([2, n])" in text
    assert text.count("R.memory.alloc_storage") == 1  # a's storage only


def test_a_malformed_allocation_declines_and_the_full_conversion_reports_it():
    from memcore_py.errors import PassError

    m = _module(MODULE + _fn("main", CHAIN))
    f = m["main"]
    bindings = list(f.body.blocks[0].bindings)
    good = bindings[0].value  # the dtype argument no longer the type's (TVMScript refuses to write it)
    int32 = tvm_from_source(MODULE + _fn("main", f"""a = {_alloc([4], "int32")}
return x"""))["main"].body.blocks[0].bindings[0].value.args[1]
    bindings[0] = relax.VarBinding(bindings[0].var, relax.Call(good.op, [good.args[0], int32, good.args[2], good.args[3]],
                                                               good.attrs, good.ty_args, ret_ty=good.ty))
    m2 = _with_main(m, relax.Function(f.params, relax.SeqExpr([relax.BindingBlock(bindings)], f.body.body),
                                      f.ret_ty, False, f.attrs))
    assert _extracted(m2, "tvm") is None
    with pytest.raises(PassError, match="dtype argument 'int32' must equal"):
        mtvm.StaticPlanBlockMemory()(m2)


def test_a_module_with_global_infos_declines():
    m = _module(MODULE + _fn("main", CHAIN))
    with_infos = tvm.IRModule(m.functions, global_infos={"vdevice": [relax.VDevice("llvm", 0, "global")]})
    assert _extracted(with_infos, "tvm") is None
    tvm.ir.assert_structural_equal(mtvm.StaticPlanBlockMemory()(with_infos), _full(with_infos, "tvm"))


def test_an_op_memcore_does_not_model_passes_through_and_discards_its_arguments():
    # the extraction reads only variables and kinds of callees: a call of an op memcore does
    # not model stays TVM's own object and its arguments escape, TVM's rule for any other call
    # (the full conversion reads it as an opaque op and plans as TVM)
    from memcore_py.ir.op import is_registered

    name = next(n for n in ("relax.nn.gelu_tanh", "relax.image.resize2d", "relax.nn.nll_loss", "relax.unique",
                            "relax.image.resize3d", "relax.reverse_sequence")
                if not is_registered(n))
    m = _module(MODULE + _fn("main", CHAIN))
    f = m["main"]
    bindings = list(f.body.blocks[0].bindings)
    ty = relax.TensorType((4,), "float32")
    g = relax.Var("g", ty)
    bindings.insert(4, relax.VarBinding(g, relax.Call(tvm.ir.Op.get(name), [bindings[2].var], None, None, None, ty)))
    body = relax.BlockBuilder().normalize(relax.SeqExpr([relax.BindingBlock(bindings)], f.body.body))
    m2 = _with_main(m, relax.Function(f.params, body, f.ret_ty, False, f.attrs))
    out = _extracted(m2, "tvm")
    tvm.ir.assert_structural_equal(out, TVM_SPBM()(m2))
    assert any(b.same_as(bindings[4]) for b in out["main"].body.blocks[0].bindings)  # the unmodelled call, as it was
    tvm.ir.assert_structural_equal(_full(m2, "tvm"), out)


def test_the_compiled_parts_reject_bad_arguments():
    from memcore_py._compiled import load_compiled
    from memcore_py.tvm import _ffi_writer, _spbm_extract, _table_reader
    from memcore_py.tvm._extraction import extern_flags, module_callees, module_entries, op_flags

    api = tvm_api()
    m = _module(MODULE + _fn("main", CHAIN))
    layout, entries = module_entries(api, m)
    table = load_compiled("memcore_py.analysis._binding_table").BindingTable()
    reader = _table_reader.TVMReader(table, layout, op_flags(api), {}, extern_flags)
    prim = next(e.func for e in entries if e.kind == 0)
    assert reader.read_function(prim, "k1") is None  # a PrimFunc: not a Relax function
    table = load_compiled("memcore_py.analysis._binding_table").BindingTable()
    reader = _table_reader.TVMReader(table, layout, op_flags(api), {}, extern_flags)
    main = next(e.func for e in entries if e.kind == 1)
    assert reader.read_function(main, "main") is None  # a call of a GlobalVar it was not given
    table = load_compiled("memcore_py.analysis._binding_table").BindingTable()
    uses = load_compiled("memcore_py.analysis._binding_table").CALLEE_USES_ARGS
    reader = _table_reader.TVMReader(table, layout, op_flags(api), module_callees(entries, uses), extern_flags)
    first = reader.read_function(main, "main").first_block
    arrays = table.block_refs()
    keep = _ffi_writer.Keep()
    def planned(**changes):
        tables = dict(tok_block=[0], tok_index=[0], tok_binding=[0], tok_storage=[0], tok_offset_imm=None,
                      storage_first=[0], storage_shape=[1], storage_dtype=[0], storage_dataflow=[False], zero=1, any_ty=1,
                      op_alloc_storage=1, op_alloc_tensor=1, op_ensure_zero_offset=1, views=False)
        tables.update(changes)
        return _spbm_extract.PlannedModule(**tables)

    bindings = arrays[first]
    with pytest.raises(ValueError, match="not a bindings array"):
        _spbm_extract.rewrite_block(layout, keep, planned(), 0, [], [], {}, {}, False)
    with pytest.raises(ValueError, match="one token per position"):
        _spbm_extract.rewrite_block(layout, keep, planned(), bindings, [0], [], {}, {}, False)
    with pytest.raises(IndexError, match="rewrite_block"):  # the binding there is not the token's
        _spbm_extract.rewrite_block(layout, keep, planned(), bindings, [0], [0], {}, {}, False)
    with pytest.raises(IndexError, match="rewrite_block"):  # a position past the block
        _spbm_extract.rewrite_block(layout, keep, planned(), bindings, [99], [0], {}, {}, False)
    with pytest.raises(IndexError, match="emit_storage"):
        _spbm_extract.emit_storage(layout, keep, planned(), 1)
    with pytest.raises(ValueError, match="one entry per token"):
        planned(tok_index=[0, 1])
    with pytest.raises(ValueError, match="one entry per storage"):
        planned(storage_shape=[])
