"""KillAfterLastUse without CanonicalizeBindings: the rule kernel's rebinding rule
(``memcore_py/analysis/_kill_rules.pyx``, rule 6: ``y = x``, known tuple fields and constants
read through) on the functions that need nothing more of CanonicalizeBindings.

Its oracles: CanonicalizeBindings' own code followed by the same kernel without the rule, on
random and real programs, names included, and Apache TVM 0.27's own KillAfterLastUse on long
random flat programs (many kills of every kind per function, names past ``_9``). Each
differential test also checks that the rebinding path was really taken.
"""
import pytest

import memcore_py
from memcore_py.analysis.last_usage import function_edits
from memcore_py.examples.models import list_models, model_text
from memcore_py.ir.builder import NameTable
from memcore_py.errors import PassError
from memcore_py.ir.expr import Call, DataflowBlock, Function, If, SeqExpr
from memcore_py.ir.structural import assert_structural_equal
from memcore_py.testing import random_lowered_module
from memcore_py.testing.lowering_programs import batch_modules, module_from_text, random_kill_module
from memcore_py.transform import KillAfterLastUse, LowerAllocTensor, StaticPlanBlockMemory
from memcore_py.transform.canonicalize_bindings import canonicalize_bindings
from memcore_py.transform.kill_after_last_use import _kill_after_last_use, _kill_with_rebindings

from _helpers import is_kill, tvm_from_source


def _names(func):
    return [b.var.name for blk in func.body.blocks for b in blk.bindings]


def _compiled(func, name):
    """The rebinding path's output (staged after a match_cast, as the pass does)."""
    out = _kill_with_rebindings(func, name, False)
    assert out is not None, f"{name} did not take the rebinding path"
    return out


def _canonicalized(func, name):
    return _kill_after_last_use(func, name, False, allow_fast=False)


def _assert_compiled_equals_general(mod):
    """Every Relax function of ``mod`` takes the rebinding path and gives CanonicalizeBindings'
    path's output; returns how many kills were inserted in all."""
    n_kills = 0
    for gv, func in mod.functions.items():
        if not isinstance(func, Function):
            continue
        fast = _compiled(func, gv.name)
        general = _canonicalized(func, gv.name)
        assert_structural_equal(fast, general)
        assert _names(fast) == _names(general)
        n_kills += sum(is_kill(b) for blk in fast.body.blocks for b in blk.bindings)
    return n_kills


# ----------------------------------------------------------------------- differential
@pytest.mark.parametrize("seed", range(40))
def test_rebinding_rule_equals_canonicalize_bindings_on_random_flat_programs(seed):
    """Planned random programs and flat post-planning programs mixing every construct the
    pass distinguishes (storages, views, tuples, get-items, match_casts, constants, objects,
    null values, existing kills)."""
    mods = [LowerAllocTensor()(random_lowered_module(100 + seed, 40 + 5 * seed)),
            LowerAllocTensor()(random_kill_module(200 + seed, 3, 10 + seed, control_flow=False))]
    assert sum(_assert_compiled_equals_general(m) for m in mods) > 0


@pytest.mark.parametrize("name", list_models())
def test_rebinding_rule_equals_canonicalize_bindings_on_real_models(name):
    """The benchmark workload: every shipped model, planned and lowered."""
    mod = LowerAllocTensor()(StaticPlanBlockMemory()(memcore_py.parse(model_text(name))))
    assert _assert_compiled_equals_general(mod) > 10


def test_kill_names_follow_the_name_table_past_ten():
    """The k-th kill is named what a fresh NameTable's k-th ``fresh("_")`` returns."""
    from memcore_py.testing.lowering_programs import elementwise_chain

    func = LowerAllocTensor()(elementwise_chain(30))["main"]
    out = _compiled(func, "main")
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
    """Parameters and uses can outnumber the bindings many times (the table's variable ids
    grow). 70 parameters packed into tuples and read by
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
    assert_structural_equal(out, _canonicalized(func, "main"))
    kills = [(b.value.op.name, b.value.args[0].name) for b in out.body.blocks[0].bindings if is_kill(b)]
    # both last used by b: tensors first, then objects
    assert kills == [("relax.memory.kill_tensor", "a"), ("relax.vm.kill_object", "t")]


# ----------------------------------------------------------------------- scopes and fallbacks
HEAD = """
    @I.ir_module
    class Module:
        @R.function(pure=False)
        def main(x: R.Tensor((2, 3), "float32"), c: R.Tensor((), "bool")):
"""


def _main(body):
    return module_from_text(HEAD + body)["main"]


def test_a_chain_of_rebindings_reads_its_first_variable_in_both_passes():
    """``y = a; z = y; w = z``: the kill kernel's rebinding rule and CanonicalizeBindings end the
    chain at ``a`` with one rule (``chain_end``, ``_canonical_rules.pxd``). The kernel maps every
    link to ``a``, both outputs read ``a`` for ``w`` and ``z`` and are equal, and ``a`` is
    killed after its last use through the chain."""
    func = _main("""
            a = R.add(x, x)
            y = a
            z = y
            w = z
            b = R.add(w, z)
            return b
""")
    a, y, z, w = [binding.var for binding in func.body.blocks[0].bindings][:4]
    edits, _ = function_edits(func.body, "main", rebind=True)
    assert not edits.needs_canonical
    assert edits.subst == {id(y): id(a), id(z): id(a), id(w): id(a)}
    for out in (_compiled(func, "main"), _canonicalized(func, "main"), canonicalize_bindings(func, "main")):
        add = [binding for binding in out.body.blocks[0].bindings if binding.var.name == "b"][0]
        assert add.value.args[0] is a and add.value.args[1] is a
        assert [binding.var.name for binding in out.body.blocks[0].bindings if not is_kill(binding)] == ["a", "b"]
    out = _compiled(func, "main")
    assert_structural_equal(out, _canonicalized(func, "main"))
    kills = [(binding.value.op.name, binding.value.args[0].name) for binding in out.body.blocks[0].bindings
             if is_kill(binding)]
    assert kills == [("relax.memory.kill_tensor", "a")]


def test_if_takes_the_rebinding_path():
    """An If is scopes in the table, not a reason for CanonicalizeBindings: the rebinding path
    runs and gives its output; ``a`` (read in both branches) is killed after the If."""
    func = _main("""
            a = R.add(x, x)
            y = a
            if c:
                r = R.add(y, x)
            else:
                r = R.multiply(a, x)
            s = R.add(r, x)
            return s
    """)
    out = _compiled(func, "main")
    assert_structural_equal(out, _canonicalized(func, "main"))
    kills = [(b.value.op.name, b.value.args[0].name) for blk in out.body.blocks for b in blk.bindings if is_kill(b)]
    assert ("relax.memory.kill_tensor", "a") in kills


def test_a_rebinding_in_a_branch_takes_canonicalize_bindings():
    func = _main("""
            a = R.add(x, x)
            if c:
                y = a
                r = R.add(y, x)
            else:
                r = R.multiply(a, x)
            return r
    """)
    assert _kill_with_rebindings(func, "main", False) is None
    out = _kill_after_last_use(func, "main", False, allow_fast=True)
    assert_structural_equal(out, _canonicalized(func, "main"))
    then = next(b.value.true_branch for blk in out.body.blocks for b in blk.bindings if isinstance(b.value, If))
    assert "y" not in [b.var.name for blk in then.blocks for b in blk.bindings]  # the rebinding is gone


def test_a_dataflow_block_canonicalize_bindings_keeps_takes_the_rebinding_path():
    """An importer's dataflow block (locals are DataflowVars, the output is read after the
    block): the kill of the output is deferred past the block, as on CanonicalizeBindings' path."""
    text = """
    @I.ir_module
    class Module:
        @R.function
        def main(x: R.Tensor((2, 3), "float32")):
            with R.dataflow():
                lv = R.add(x, x)
                y = R.multiply(lv, x)
                R.output(y)
            z = R.add(y, x)
            return z
    """
    func = module_from_text(text)["main"]
    assert isinstance(func.body.blocks[0], DataflowBlock)
    out = _compiled(func, "main")
    assert_structural_equal(out, _canonicalized(func, "main"))
    assert isinstance(out.body.blocks[0], DataflowBlock)
    assert [b.var.name for b in out.body.blocks[0].bindings] == ["lv", "y"]  # no kill inside
    y = func.body.blocks[0].bindings[1].var
    assert any(is_kill(b) and b.value.args[0] is y for b in out.body.blocks[1].bindings)


@pytest.mark.parametrize("body", [
    # y is not read after its block: CanonicalizeBindings makes it a DataflowVar
    "lv = R.add(x, x)\n                y = R.multiply(lv, x)\n                R.output(y)\n            return x",
    # the output rebinds a DataflowVar: CanonicalizeBindings folds lv into y
    "lv = R.add(x, x)\n                y = lv\n                R.output(y)\n            return y",
])
def test_a_dataflow_block_canonicalize_bindings_changes_takes_its_path(body):
    text = f"""
    @I.ir_module
    class Module:
        @R.function
        def main(x: R.Tensor((2, 3), "float32")):
            with R.dataflow():
                {body}
    """
    func = module_from_text(text)["main"]
    assert isinstance(func.body.blocks[0], DataflowBlock)
    assert _kill_with_rebindings(func, "main", False) is None
    assert_structural_equal(_kill_after_last_use(func, "main", False, allow_fast=True), _canonicalized(func, "main"))


def test_nested_function_is_read_as_a_scope():
    """Built directly (a local function bound in the body): its body is a scope of its own."""
    from memcore_py.ir.expr import BindingBlock, Var, VarBinding
    from memcore_py.ir.types import TensorType

    t = TensorType((2, 3), "float32")
    x, y = Var("x", t), Var("y", t)
    inner = Function([y], SeqExpr([], y))
    f = Var("inner", inner.ty)
    z = Var("z", t)
    body = SeqExpr([BindingBlock([VarBinding(f, inner), VarBinding(z, Call(f, [x], ty=t))])], z)
    func = Function([x], body, is_pure=False)
    assert_structural_equal(_compiled(func, "main"), _canonicalized(func, "main"))


@pytest.mark.parametrize("body, message", [
    ("""
            _ = R.memory.kill_tensor(R.prim_value(1))
            return x
    """, "must be applied to a variable"),
    ("""
            k = R.const(1, "float32")
            _ = R.memory.kill_tensor(k)
            return x
    """, "must be applied to a variable"),
], ids=["non-variable", "constant-bound-variable"])
def test_a_malformed_kill_is_reported_naming_the_binding(body, message):
    with pytest.raises(PassError, match=message) as info:
        KillAfterLastUse()(module_from_text(HEAD + body))
    assert "'main'" in str(info.value) and "binding" in str(info.value)


def test_match_cast_after_the_symbolic_stage():
    func = _main("""
            a = R.add(x, x)
            b = R.match_cast(a, R.Tensor((2, 3), "float32"))
            d = R.multiply(b, b)
            return d
    """)
    assert_structural_equal(_compiled(func, "main"), _canonicalized(func, "main"))


def test_pass_output_with_control_flow():
    """A module mixing flat functions and functions with scopes: the pass output equals
    CanonicalizeBindings' path function by function."""
    mod = LowerAllocTensor()(random_kill_module(5, 4, 16, control_flow=True))
    out = KillAfterLastUse()(mod)
    n_scopes = 0
    for gv, func in mod.functions.items():
        if isinstance(func, Function):
            assert_structural_equal(out[gv], _canonicalized(func, gv.name))
            n_scopes += any(isinstance(b.value, (If, SeqExpr)) for blk in func.body.blocks for b in blk.bindings)
    assert n_scopes > 0


# ----------------------------------------------------------------------- TVM oracle
@pytest.mark.oracle
@pytest.mark.parametrize("seed", range(6))
def test_rebinding_path_equals_tvm_on_long_flat_programs(seed):
    """Long flat programs (80 steps: dozens of kills of every kind per function, kill names
    past ``_9``) through TVM's LowerAllocTensor + KillAfterLastUse and ours: same structure
    and the same binding names."""
    pytest.importorskip("tvm")
    from tvm import relax

    mod = batch_modules([random_kill_module(3000 + 4 * seed + i, 1, 80, control_flow=False) for i in range(4)])
    text = mod.script()
    theirs = relax.transform.KillAfterLastUse()(relax.transform.LowerAllocTensor()(tvm_from_source(text)))
    lowered = LowerAllocTensor()(memcore_py.parse(text))
    for gv, func in lowered.functions.items():
        if isinstance(func, Function):
            _compiled(func, gv.name)  # the rebinding path applies
    ours = KillAfterLastUse()(lowered)
    assert_structural_equal(ours, memcore_py.parse(theirs.script()))
    n_long = 0
    for gv, func in theirs.functions.items():
        if isinstance(func, relax.Function):
            tvm_names = [b.var.name for blk in func.body.blocks for b in blk.bindings]
            assert _names(ours[gv.name_hint]) == tvm_names
            n_long += "_10" in tvm_names
    assert n_long > 0
