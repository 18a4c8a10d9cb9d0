"""The compiled flat path of KillAfterLastUse (``memcore_py/transform/_kill_walk.pyx``).

Its oracles: the general path of the same pass (CanonicalizeBindings +
``collect_last_usage`` + the kill inserter, which shares no code with the compiled walk) on
random and real programs, names included, and Apache TVM 0.27's own KillAfterLastUse on
long random flat programs (many kills of every kind per function, names past ``_9``).
Each differential test also checks that the compiled path was really taken.
"""
import pytest

import memcore_py
from memcore_py.examples.models import list_models, model_text
from memcore_py.ir.builder import NameTable
from memcore_py.ir.expr import Call, DataflowBlock, Function, If, SeqExpr
from memcore_py.ir.structural import assert_structural_equal
from memcore_py.testing import random_lowered_module
from memcore_py.testing.lowering_programs import batch_modules, module_from_text, random_kill_module
from memcore_py.transform import KillAfterLastUse, LowerAllocTensor, StaticPlanBlockMemory
from memcore_py.transform._kill_walk import HasMatchCast, NotFlat, kill_flat
from memcore_py.transform.canonicalize_bindings import canonicalize_tir_variables
from memcore_py.transform.kill_after_last_use import _kill_after_last_use, _kill_flat

from _helpers import is_kill


def _names(func):
    return [b.var.name for blk in func.body.blocks for b in blk.bindings]


def _compiled(func, name):
    """The compiled path's output (staged after a match_cast, as the pass does)."""
    out = _kill_flat(func, name)
    assert out is not None, f"{name} did not take the compiled path"
    return out


def _assert_compiled_equals_general(mod):
    """Every Relax function of ``mod`` takes the compiled path and gives the general path's
    output; returns how many kills were inserted in all."""
    n_kills = 0
    for gv, func in mod.functions.items():
        if not isinstance(func, Function):
            continue
        fast = _compiled(func, gv.name)
        general = _kill_after_last_use(func, gv.name, False, allow_fast=False)
        assert_structural_equal(fast, general)
        assert _names(fast) == _names(general)
        n_kills += sum(is_kill(b) for blk in fast.body.blocks for b in blk.bindings)
    return n_kills


# ----------------------------------------------------------------------- differential
@pytest.mark.parametrize("seed", range(40))
def test_compiled_equals_general_path_on_random_flat_programs(seed):
    """Planned random programs and flat post-planning programs mixing every construct the
    pass distinguishes (storages, views, tuples, get-items, match_casts, constants, objects,
    null values, existing kills)."""
    mods = [LowerAllocTensor()(random_lowered_module(100 + seed, 40 + 5 * seed)),
            LowerAllocTensor()(random_kill_module(200 + seed, 3, 10 + seed, control_flow=False))]
    assert sum(_assert_compiled_equals_general(m) for m in mods) > 0


@pytest.mark.parametrize("name", list_models())
def test_compiled_equals_general_path_on_real_models(name):
    """The benchmark workload: every shipped model, planned and lowered."""
    mod = LowerAllocTensor()(StaticPlanBlockMemory()(memcore_py.parse(model_text(name))))
    assert _assert_compiled_equals_general(mod) > 10


def test_kill_names_follow_the_name_table_past_ten():
    """The k-th kill is named what a fresh NameTable's k-th ``fresh("_")`` returns."""
    from memcore_py.testing.lowering_programs import elementwise_chain

    func = LowerAllocTensor()(elementwise_chain(30))["main"]
    out = kill_flat(func)
    kills = [b.var.name for b in out.body.blocks[0].bindings if is_kill(b)]
    table = NameTable()
    assert len(kills) > 20
    assert kills == [table.fresh("_") for _ in kills]


def test_input_is_not_modified():
    func = LowerAllocTensor()(random_kill_module(7, 1, 30, control_flow=False))["kill_case0"]
    blocks, result = func.body.blocks, func.body.body
    bindings = [(b, b.var, b.value) for blk in blocks for b in blk.bindings]
    out = _compiled(func, "kill_case0")
    assert out is not func and func.body.blocks is blocks and func.body.body is result
    assert [(b, b.var, b.value) for blk in func.body.blocks for b in blk.bindings] == bindings


def test_more_variables_than_bindings():
    """The variable table is sized from the binding count; parameters and uses can outnumber
    the bindings many times (the table grows). 70 parameters packed into tuples and read by
    packed calls: the output equals the general path's and kills the tuple and the tensor."""
    params = ", ".join(f"p{i}: R.Tensor((2, 3), \"float32\")" for i in range(70))
    fields = ", ".join(f"p{i}" for i in range(70))
    text = f"""
    @I.ir_module
    class Module:
        @R.function(pure=False)
        def main({params}):
            t = ({fields})
            a = R.call_packed("f", t, ty_args=(R.Tensor((2, 3), "float32"),))
            b = R.call_packed("g", a, t, ty_args=(R.Tensor((2, 3), "float32"),))
            return b
    """
    func = module_from_text(text)["main"]
    out = _compiled(func, "main")
    assert_structural_equal(out, _kill_after_last_use(func, "main", False, allow_fast=False))
    kills = [(b.value.op.name, b.value.args[0].name) for b in out.body.blocks[0].bindings if is_kill(b)]
    # both last used by b: tensors first, then objects
    assert kills == [("relax.memory.kill_tensor", "a"), ("relax.vm.kill_object", "t")]


# ----------------------------------------------------------------------- fallbacks
HEAD = """
    @I.ir_module
    class Module:
        @R.function(pure=False)
        def main(x: R.Tensor((2, 3), "float32"), c: R.Tensor((), "bool")):
"""


def _main(body):
    return module_from_text(HEAD + body)["main"]


def test_if_is_not_flat():
    func = _main("""
            if c:
                r = R.add(x, x)
            else:
                r = R.multiply(x, x)
            return r
    """)
    assert any(isinstance(b.value, If) for blk in func.body.blocks for b in blk.bindings)
    with pytest.raises(NotFlat):
        kill_flat(func)


def test_dataflow_block_is_not_flat():
    text = """
    @I.ir_module
    class Module:
        @R.function
        def main(x: R.Tensor((2, 3), "float32")):
            with R.dataflow():
                y = R.add(x, x)
                R.output(y)
            return y
    """
    func = module_from_text(text)["main"]
    assert isinstance(func.body.blocks[0], DataflowBlock)
    with pytest.raises(NotFlat):
        kill_flat(func)


def test_nested_function_is_not_flat():
    """Built directly (a local function bound in the body)."""
    from memcore_py.ir.expr import BindingBlock, Var, VarBinding
    from memcore_py.ir.types import TensorType

    t = TensorType((2, 3), "float32")
    x, y = Var("x", t), Var("y", t)
    inner = Function([y], SeqExpr([], y))
    f = Var("inner", inner.ty)
    z = Var("z", t)
    body = SeqExpr([BindingBlock([VarBinding(f, inner), VarBinding(z, Call(f, [x], ty=t))])], z)
    with pytest.raises(NotFlat):
        kill_flat(Function([x], body, is_pure=False))


@pytest.mark.parametrize("body", [
    """
            _ = R.memory.kill_tensor(R.prim_value(1))
            return x
    """,
    """
            k = R.const(1, "float32")
            _ = R.memory.kill_tensor(k)
            return x
    """,
], ids=["non-variable", "constant-bound-variable"])
def test_kill_of_a_non_variable_goes_to_the_general_path(body):
    with pytest.raises(NotFlat):
        kill_flat(_main(body))


def test_match_cast_needs_the_staged_call():
    func = _main("""
            a = R.add(x, x)
            b = R.match_cast(a, R.Tensor((2, 3), "float32"))
            d = R.multiply(b, b)
            return d
    """)
    with pytest.raises(HasMatchCast):
        kill_flat(func)
    out = kill_flat(canonicalize_tir_variables(func, "main"), staged=True)
    assert_structural_equal(out, _kill_after_last_use(func, "main", False, allow_fast=False))


def test_pass_falls_back_for_control_flow():
    """A module mixing flat and non-flat functions: the pass output equals the general path
    function by function."""
    mod = LowerAllocTensor()(random_kill_module(5, 4, 16, control_flow=True))
    out = KillAfterLastUse()(mod)
    n_general = 0
    for gv, func in mod.functions.items():
        if isinstance(func, Function):
            assert_structural_equal(out[gv], _kill_after_last_use(func, gv.name, False, allow_fast=False))
            n_general += any(isinstance(b.value, (If, SeqExpr)) for blk in func.body.blocks for b in blk.bindings)
    assert n_general > 0


# ----------------------------------------------------------------------- TVM oracle
@pytest.mark.oracle
@pytest.mark.parametrize("seed", range(6))
def test_compiled_path_equals_tvm_on_long_flat_programs(seed):
    """Long flat programs (80 steps: dozens of kills of every kind per function, kill names
    past ``_9``) through TVM's LowerAllocTensor + KillAfterLastUse and ours: same structure
    and the same binding names."""
    tvm = pytest.importorskip("tvm")
    from tvm import relax

    mod = batch_modules([random_kill_module(3000 + 4 * seed + i, 1, 80, control_flow=False) for i in range(4)])
    text = mod.script()
    theirs = relax.transform.KillAfterLastUse()(relax.transform.LowerAllocTensor()(tvm.script.from_source(text)))
    lowered = LowerAllocTensor()(memcore_py.parse(text))
    for gv, func in lowered.functions.items():
        if isinstance(func, Function):
            _compiled(func, gv.name)  # the compiled path applies
    ours = KillAfterLastUse()(lowered)
    assert_structural_equal(ours, memcore_py.parse(theirs.script()))
    n_long = 0
    for gv, func in theirs.functions.items():
        if isinstance(func, relax.Function):
            tvm_names = [b.var.name for blk in func.body.blocks for b in blk.bindings]
            assert _names(ours[gv.name_hint]) == tvm_names
            n_long += "_10" in tvm_names
    assert n_long > 0
