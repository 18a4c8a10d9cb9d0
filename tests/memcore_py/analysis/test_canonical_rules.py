"""CanonicalizeBindings' planning kernel (``memcore_py/analysis/_canonical_rules.pyx``) on small
functions whose plan is worked out by hand from TVM's ``CanonicalizePlanner`` rules."""
import pytest

import memcore_py
from memcore_py._compiled import load_compiled
from memcore_py.errors import PassError

T4 = 'R.Tensor((4,), dtype="float32")'
PAIR = f"R.Tuple({T4}, {T4})"
RULES = load_compiled("memcore_py.analysis._canonical_rules")


def _plan(body, params=f"x: {T4}, y: {T4}, p: {PAIR}"):
    text = f"""
@I.ir_module
class Module:
    @R.function
    def main({params}):
{body}
"""
    func = memcore_py.parse(text)["main"]
    table = load_compiled("memcore_py.analysis._binding_table").BindingTable()
    load_compiled("memcore_py.analysis._ir_reader").IRReader(
        table, lambda callee: 0, PassError, "test", nested_scopes=True).read_function("main", func.body)
    plan = RULES.canonical_plan(table, 0)
    trivial, constants, in_dataflow, outside = plan.objects()
    names = lambda objs: {v.name for v in objs}  # noqa: E731
    return ({a.name: b.name for a, b in trivial.items()}, names(constants), [v.name for v in in_dataflow],
            names(outside), plan)


def _lines(*lines):
    return "\n".join("        " + line for line in lines)


def test_a_chain_of_rebindings_is_trivial_link_by_link_and_ends_at_its_first_variable():
    trivial, constants, _, _, plan = _plan(_lines(
        f"a: {T4} = R.add(x, y)", "b = a", "c = b", "d = c", "return d"))
    assert trivial == {"b": "a", "c": "a", "d": "a"} and not constants
    # each binding rebinds the one before it: three distinct links, one of them to ``a``
    rebound = {v for v in range(plan.n_vars) if plan.rebinds(v) >= 0}
    targets = {plan.rebinds(v) for v in rebound}
    assert len(rebound) == 3 and len(targets) == 3 and len(targets - rebound) == 1


def test_exact_rebindings_ask_the_trivial_rule_of_the_value_not_the_known_value():
    """UnusedTrivialBindingRemover's candidates (``exact_rebindings``): a VarBinding of a variable
    and a match_cast of one to its own type; not a get-item whose known value is a variable (the
    planner's trivial binding), not a match_cast to another type."""
    body = _lines(
        "u = x",
        f"a: {T4} = R.match_cast(y, {T4})",
        'b: R.Tensor(dtype="float32", ndim=1) = R.match_cast(y, R.Tensor(dtype="float32", ndim=1))',
        f"t: {PAIR} = (x, y)",
        f"c: {T4} = t[1]",
        "return (u, a, b, c)")
    func = memcore_py.parse(f"""
@I.ir_module
class Module:
    @R.function
    def main(x: {T4}, y: {T4}):
{body}
""")["main"]
    table = load_compiled("memcore_py.analysis._binding_table").BindingTable()
    load_compiled("memcore_py.analysis._ir_reader").IRReader(
        table, lambda callee: 0, PassError, "test", nested_scopes=True).read_function("main", func.body)
    bindings = table.block_bindings
    assert [bindings[block][pos].var.name for block, pos in RULES.exact_rebindings(table, 0)] == ["u", "a"]
    trivial, *_ = RULES.canonical_plan(table, 0).objects()
    assert {v.name: w.name for v, w in trivial.items()} == {"u": "x", "a": "y", "c": "y"}
    with pytest.raises(IndexError, match="no function 1"):
        RULES.exact_rebindings(table, 1)


def test_a_get_item_of_a_tuple_literal_known_through_a_variable_is_its_field():
    trivial, *_ = _plan(_lines(f"t: {PAIR} = (x, y)", "u = t", f"c: {T4} = u[1]", "return c"))
    assert trivial == {"u": "t", "c": "y"}


def test_a_constant_read_through_a_tuple_field_is_a_constant_binding():
    trivial, constants, *_ = _plan(_lines(
        f't: {PAIR} = (R.const([1.0, 2.0, 3.0, 4.0], "float32"), x)', f"c: {T4} = t[0]",
        f'k: {T4} = R.const([1.0, 2.0, 3.0, 4.0], "float32")', "return (c, k)"))
    assert constants == {"c", "k"} and not trivial


def test_a_get_item_of_a_shape_field_is_neither():
    trivial, constants, *_ = _plan(_lines(
        f"t: R.Tuple(R.Shape([4]), {T4}) = (R.shape([4]), x)", "s: R.Shape([4]) = t[0]", "return s"))
    assert not trivial and not constants


@pytest.mark.parametrize("order, repacked", [((0, 1), True), ((1, 0), False), ((0, 0), False)])
def test_a_tuple_re_packing_every_field_of_a_parameter_in_order_is_that_parameter(order, repacked):
    trivial, _, _, _, plan = _plan(_lines(
        f"g: {T4} = p[{order[0]}]", f"h: {T4} = p[{order[1]}]", f"r: {PAIR} = (g, h)", "return r"))
    assert (trivial.get("r") == "p") is repacked
    assert RULES.REPACKS["exact" if repacked else "none"] in {plan.repack(v) for v in range(plan.n_vars)}


def test_a_re_pack_of_fewer_fields_than_the_source_has_is_not_the_source():
    three = f"R.Tuple({T4}, {T4}, {T4})"
    trivial, *_ = _plan(_lines(f"g: {T4} = q[0]", f"h: {T4} = q[1]", f"r: {PAIR} = (g, h)", "return r"),
                        params=f"q: {three}")
    assert "r" not in trivial


def test_a_match_cast_is_trivial_only_to_its_values_own_type():
    trivial, *_ = _plan(_lines(
        f"a: {T4} = R.match_cast(x, {T4})",
        'b: R.Tensor(dtype="float32", ndim=1) = R.match_cast(y, R.Tensor(dtype="float32", ndim=1))',
        "return (a, b)"))
    assert trivial == {"a": "x"}


def test_dataflow_facts():
    _, _, in_dataflow, outside, _ = _plan(_lines(
        "with R.dataflow():",
        f"    lv: {T4} = R.add(x, y)",
        f"    lv2: {T4} = R.add(lv, lv)",
        f"    gv: {T4} = R.add(lv2, x)",
        "    R.output(gv)",
        f"z: {T4} = R.add(gv, gv)",
        "return z"))
    assert in_dataflow == ["lv", "lv2", "gv"]
    assert {"gv", "z"} <= outside and not {"lv", "lv2"} & outside


def test_the_plan_of_another_than_the_last_function_read_is_refused():
    table = load_compiled("memcore_py.analysis._binding_table").BindingTable()
    with pytest.raises(IndexError, match="last function"):
        RULES.canonical_plan(table, 0)
