"""DeadCodeElimination (spec §4.3; TVM 0.27 dead_code_elimination.cc + RemoveAllUnused).

Expected modules follow TVM's rules as the spec and TVM's source state them: entries are the
functions with external linkage (and named extra entries); unreachable functions go; a
VarBinding goes when its variable is unused and its value has no impure call; MatchCast
bindings stay; empty blocks disappear. Differential tests against TVM: tests/oracle/
test_attach_attr_oracle.py.
"""
import pytest

from memcore_py.errors import PassError
from memcore_py.ir.expr import Call
from memcore_py.ir.op import get_op
from memcore_py.testing.lowering_programs import assert_pass_output, module_from_text
from memcore_py.transform.dead_code_elimination import (
    DeadCodeElimination,
    dead_code_elimination,
    entry_function_names,
    is_impure_call,
    remove_all_unused,
    remove_unreachable_functions,
)

T4 = 'R.Tensor((4,), dtype="float32")'
PF = '''
        @T.prim_func(private=True, s_tir=True)
        def pf(A: T.Buffer((T.int64(4),), "float32"), B: T.Buffer((T.int64(4),), "float32")):
            for i in range(T.int64(4)):
                with T.sblock("B"):
                    vi = T.axis.spatial(T.int64(4), i)
                    B[vi] = A[vi]
'''


def mod_text(*funcs):
    return "@I.ir_module(s_tir=True)\nclass Module:\n" + "\n".join(funcs)


def fn(name, body, *, private=False, pure=True, params=None):
    deco = []
    if not pure:
        deco.append("pure=False")
    if private:
        deco.append("private=True")
    d = "@R.function" + (f"({', '.join(deco)})" if deco else "")
    params = params or f"x: {T4}"
    lines = "\n".join("            " + line for line in body.strip("\n").split("\n"))
    return f"""
        {d}
        def {name}({params}) -> {T4}:
            cls = Module
{lines}
"""


def test_unused_pure_bindings_removed_in_dataflow_block():
    """Unused dataflow vars and unused dataflow *outputs* go; what feeds the result stays."""
    before = mod_text(fn("main", """
with R.dataflow():
    a = R.add(x, x)
    dead = R.multiply(a, a)
    out2 = R.multiply(x, x)
    gv = R.add(a, x)
    R.output(gv, out2)
return gv"""))
    expected = mod_text(fn("main", """
with R.dataflow():
    a = R.add(x, x)
    gv = R.add(a, x)
    R.output(gv)
return gv"""))
    assert_pass_output(DeadCodeElimination(), before, expected)


def test_chain_of_unused_removed_to_fixpoint():
    before = mod_text(fn("main", """
a = R.add(x, x)
b = R.multiply(a, a)
c = (a, b)
d = c[0]
return x"""))
    expected = mod_text(fn("main", "return x"))
    assert_pass_output(DeadCodeElimination(), before, expected)


def test_impure_calls_and_match_cast_kept():
    """call_packed (ExternFunc), R.memory.kill_tensor (an impure op), a PrimFunc called directly and an impure
    function are kept; a call of a pure function and call_pure_packed go; a match_cast stays
    and keeps its value alive."""
    before = mod_text(
        PF,
        fn("helper", "return x", private=True),
        fn("ihelper", "return x", private=True, pure=False),
        fn("main", f"""
a = cls.helper(x)
b = cls.ihelper(x)
c = R.call_packed("foo", x, sinfo_args=({T4},))
d = cls.pf(x, x)
e = R.call_pure_packed("foo", x, sinfo_args=({T4},))
f = R.add(x, x)
m = R.match_cast(f, {T4})
g = R.memory.kill_tensor(b)
return x""", pure=False))
    after = DeadCodeElimination()(module_from_text(before))
    assert [gv.name for gv in after.functions] == ["pf", "ihelper", "main"]
    kept = [b.var.name for b in after["main"].body.blocks[0].bindings]
    assert kept == ["b", "c", "d", "f", "m", "g"]


def test_unreachable_private_functions_removed_public_kept():
    before = mod_text(
        PF,
        fn("unused_private", "return x", private=True),
        fn("unused_public", "return x"),
        fn("main", "return x"))
    after = DeadCodeElimination()(module_from_text(before))
    assert [gv.name for gv in after.functions] == ["unused_public", "main"]


def test_function_reachable_only_through_removed_binding_goes():
    """Stage 3: a private function whose only caller binding was removed goes too."""
    before = mod_text(
        fn("helper", "return x", private=True),
        fn("main", """
a = cls.helper(x)
return x"""))
    after = DeadCodeElimination()(module_from_text(before))
    assert [gv.name for gv in after.functions] == ["main"]


def test_entry_functions_argument():
    before = module_from_text(mod_text(fn("helper", "return x", private=True), fn("main", "return x")))
    after = DeadCodeElimination(entry_functions=["helper"])(before)
    assert [gv.name for gv in after.functions] == ["helper", "main"]
    with pytest.raises(PassError, match="entry function 'nope' is not in the module"):
        DeadCodeElimination(entry_functions=["nope"])(before)
    with pytest.raises(PassError, match="must be str"):
        entry_function_names(before, [3])


def test_unchanged_module_is_same_object():
    mod = module_from_text(mod_text(fn("main", """
a = R.add(x, x)
return a""")))
    assert dead_code_elimination(mod) is mod


def test_if_branch_uses_and_empty_blocks():
    """A var read inside an If branch is read by the If's binding; an unused If of pure
    branches goes as a whole, and a block left empty disappears."""
    before = mod_text(fn("main", """
a = R.add(x, x)
c = R.const(True, "bool")
if c:
    t = R.multiply(a, a)
    r = t
else:
    r = a
with R.dataflow():
    dead = R.add(x, x)
    R.output(dead)
return r""", params=f"x: {T4}"))
    after = DeadCodeElimination()(module_from_text(before))
    f = after["main"]
    assert len(f.body.blocks) == 1
    names = [b.var.name for b in f.body.blocks[0].bindings]
    assert names == ["a", "c", "r"]
    unused_if = mod_text(fn("main", """
c = R.const(True, "bool")
if c:
    t = R.multiply(x, x)
    r = t
else:
    r = x
return x"""))
    after = DeadCodeElimination()(module_from_text(unused_if))
    assert after["main"].body.blocks == ()


def test_helpers_directly():
    mod = module_from_text(mod_text(PF, fn("helper", "return x", private=True), fn("main", """
a = cls.helper(x)
return a""")))
    assert entry_function_names(mod) == ["main"]
    assert [gv.name for gv in remove_unreachable_functions(mod, ["main"]).functions] == ["helper", "main"]
    call = mod["main"].body.blocks[0].bindings[0].value
    assert not is_impure_call(call, mod)
    assert is_impure_call(call)  # unresolved GlobalVar without a function type: impure
    kill = Call(get_op("relax.memory.kill_tensor"), (mod["main"].params[0],))
    assert is_impure_call(kill)
    assert remove_all_unused(mod["main"], mod) is mod["main"]
    with pytest.raises(PassError, match="expects a Relax Function"):
        remove_all_unused(mod["pf"])
    with pytest.raises(PassError, match="expects an IRModule"):
        dead_code_elimination(None)


def test_unused_bindings_kernel_refuses_bad_input():
    """The kernel's wrapper checks its arguments before its nogil loops read them."""
    from memcore_py._compiled import load_compiled

    rules = load_compiled("memcore_py.analysis._dce_rules")
    table = load_compiled("memcore_py.analysis._binding_table").BindingTable()
    with pytest.raises(IndexError, match="last function"):
        rules.unused_bindings(table, 0, b"")
    mod = module_from_text(mod_text(fn("main", """
a = R.add(x, x)
return x""")))
    reader = load_compiled("memcore_py.analysis._ir_reader").IRReader(
        table, lambda callee: 0, PassError, "test", nested_scopes=True)
    reader.read_function("main", mod["main"].body)
    with pytest.raises(ValueError, match="impurity flags"):
        rules.unused_bindings(table, 0, b"")
    assert [v.name for v in rules.unused_bindings(table, 0, bytes(len(reader.callees)))] == ["a"]


def test_unused_binding_sites_kernel_refuses_bad_input_and_answers_block_and_position():
    """The sites entry (any object model's table) checks what the variables entry checks, and
    names the removed binding by its block and position."""
    from memcore_py._compiled import load_compiled

    rules = load_compiled("memcore_py.analysis._dce_rules")
    table = load_compiled("memcore_py.analysis._binding_table").BindingTable()
    with pytest.raises(IndexError, match="last function"):
        rules.unused_binding_sites(table, 0, b"")
    mod = module_from_text(mod_text(fn("main", """
b = R.multiply(x, x)
a = R.add(x, x)
return b""")))
    reader = load_compiled("memcore_py.analysis._ir_reader").IRReader(
        table, lambda callee: 0, PassError, "test", nested_scopes=True)
    reader.read_function("main", mod["main"].body)
    with pytest.raises(IndexError, match="last function"):
        rules.unused_binding_sites(table, 1, bytes(len(reader.callees)))
    with pytest.raises(ValueError, match="impurity flags"):
        rules.unused_binding_sites(table, 0, b"\x00" * (len(reader.callees) + 1))
    assert rules.unused_binding_sites(table, 0, bytes(len(reader.callees))) == [(0, 1)]
    assert rules.unused_binding_sites(table, 0, b"\x01" * len(reader.callees)) == []  # impure calls stay
