"""The op table: one registration per op declares every property passes read."""
import pytest

import memcore_py.ir.op as op_module
from memcore_py.errors import IRError
from memcore_py.ir import (
    Call,
    DataflowBlock,
    DataflowVar,
    ExternFunc,
    Function,
    GlobalVar,
    SeqExpr,
    TensorType,
    TupleType,
    Var,
    VarBinding,
    get_op,
    infer_type,
    list_ops,
    register_op,
    shares_storage,
    well_formed_report,
)
from memcore_py.ir.op import RESHAPE_PACKED, Op, is_registered
from memcore_py.ir.ops import SHARES_STORAGE_OPS, VIEW_MEMORY_OPS

F32 = TensorType((2, 3), "float32")

#: TVM ``IsInplaceMemoryOp`` (src/relax/transform/static_plan_block_memory.cc).
TVM_INPLACE_MEMORY_OPS = {"relax.reshape", "relax.memory.view", "relax.memory.ensure_zero_offset"}
#: TVM ``IsViewMemoryOp`` ``kViewOps`` (src/relax/transform/dataflow_inplace.cc).
TVM_VIEW_MEMORY_OPS = {
    "relax.expand_dims", "relax.squeeze", "relax.reshape", "relax.permute_dims",
    "relax.flatten", "relax.nn.batch_flatten", "relax.memory.view", "relax.memory.ensure_zero_offset",
}
#: Ops DataflowUseInplaceCalls rewrites (spec §3.2).
TVM_INPLACE_OPS = {"relax.add", "relax.subtract", "relax.multiply", "relax.divide", "relax.nn.silu", "relax.nn.relu"}


@pytest.fixture
def scratch_registry(monkeypatch):
    """Ops registered inside the test go to a copy of the registry, dropped afterwards."""
    monkeypatch.setattr(op_module, "_REGISTRY", dict(op_module._REGISTRY))


def test_unknown_op_is_an_error_naming_it():
    with pytest.raises(IRError, match="unknown operator 'relax.no_such_op'"):
        get_op("relax.no_such_op")
    assert not is_registered("relax.no_such_op")


def test_ops_are_singletons_and_immutable():
    assert get_op("relax.add") is get_op("relax.add")
    with pytest.raises(AttributeError, match="Op is immutable"):
        get_op("relax.add").pure = False


def test_shares_storage_set_is_tvm_is_inplace_memory_op():
    assert {op.name for op in SHARES_STORAGE_OPS} == TVM_INPLACE_MEMORY_OPS
    assert {n for n in list_ops() if get_op(n).shares_storage} == TVM_INPLACE_MEMORY_OPS


def test_view_memory_set_is_tvm_is_view_memory_op():
    assert {op.name for op in VIEW_MEMORY_OPS} == TVM_VIEW_MEMORY_OPS
    assert SHARES_STORAGE_OPS <= VIEW_MEMORY_OPS


def test_inplace_set_is_tvm_supported_ops_and_each_has_its_legalized_name():
    assert {n for n in list_ops() if get_op(n).inplace} == TVM_INPLACE_OPS
    assert get_op("relax.add").legalize == "add"
    assert get_op("relax.nn.relu").legalize == "relu"


def test_impure_ops_are_the_kills_call_tir_dyn_and_assert_op():
    impure = {n for n in list_ops() if not get_op(n).pure}
    assert impure == {"relax.memory.kill_storage", "relax.memory.kill_tensor", "relax.vm.kill_object",
                      "relax.vm.call_tir_dyn", "relax.assert_op"}


def test_shares_storage_predicate():
    for name in TVM_INPLACE_MEMORY_OPS:
        assert shares_storage(get_op(name))
    assert shares_storage(ExternFunc(RESHAPE_PACKED)) and RESHAPE_PACKED == "vm.builtin.reshape"
    assert not shares_storage(get_op("relax.expand_dims"))  # may alias, but not guaranteed
    assert not shares_storage(get_op("relax.add"))
    assert not shares_storage(ExternFunc("vm.builtin.copy"))
    assert not shares_storage(GlobalVar(RESHAPE_PACKED))
    assert not shares_storage(None)


@pytest.mark.parametrize("name", list_ops())
def test_every_registered_op_has_a_type_rule_infer_type_reaches(name):
    op = get_op(name)
    assert callable(op.type_rule)
    lo = op.n_args[0]
    x = Var("x", F32)
    c = Call(op, [x] * lo, ty_args=(F32,))
    try:
        got = infer_type(c)
    except IRError as exc:  # the rule ran and rejected these arguments: fine
        assert "no type rule" not in str(exc)
    else:
        assert got is not None


def test_one_registration_gives_every_property(scratch_registry):
    seen = []

    def rule(call, arg_types):
        seen.append((call, arg_types))
        return arg_types[0]

    op = register_op(
        "relax.test_view", type_rule=rule, pure=True, shares_storage=True, view_memory=True,
        attr_names=("axis",), n_args=(1, 1),
    )
    assert get_op("relax.test_view") is op and "relax.test_view" in list_ops()
    assert (op.pure, op.shares_storage, op.view_memory, op.inplace, op.legalize) == (True, True, True, False, None)
    assert op.attr_names == ("axis",) and op.n_args == (1, 1) and op.script_name == "R.test_view"
    assert shares_storage(op)
    x = Var("x", F32)
    c = Call(op, [x])
    assert infer_type(c) is F32 and seen == [(c, [F32])]
    with pytest.raises(IRError, match="relax.test_view takes 1 arguments; got 2"):
        infer_type(Call(op, [x, x]))


def test_well_formed_reads_purity_and_arity_from_the_registration(scratch_registry):
    op = register_op("relax.test_effect", type_rule=lambda call, ts: ts[0], pure=False, n_args=(1, 1))
    x = Var("x", F32)
    a, b = DataflowVar("a", F32), Var("b", F32)
    block = DataflowBlock([VarBinding(a, Call(op, [x], ty=F32)), VarBinding(b, Call(op, [x, x], ty=F32))])
    f = Function([x], SeqExpr([block], b), F32, {}, False)
    assert well_formed_report(f) == [
        "impure call relax.test_effect is not allowed in a dataflow block at binding 0 in function 'main', block 0",
        "relax.test_effect takes 1 arguments; got 2 at binding 1 in function 'main', block 0",
        "impure call relax.test_effect is not allowed in a dataflow block at binding 1 in function 'main', block 0",
    ]


def test_op_without_type_rule_cannot_be_inferred(scratch_registry):
    op = register_op("relax.test_untyped", n_args=(0, 0))
    with pytest.raises(IRError, match="no type rule for operator 'relax.test_untyped'"):
        infer_type(Call(op, []))


def test_registering_again(scratch_registry):
    rule = get_op("relax.add").type_rule
    assert register_op("relax.add", type_rule=rule, inplace=True, legalize="add", n_args=(2, 2)) is get_op("relax.add")
    with pytest.raises(IRError, match="'relax.add' is already registered with different properties: pure"):
        register_op("relax.add", type_rule=rule, pure=False, inplace=True, legalize="add", n_args=(2, 2))


@pytest.mark.parametrize(
    "props, message",
    [
        (dict(inplace=True), "relax.test_bad is registered inplace=True, which needs its legalize name; got None"),
        (dict(shares_storage=True), "shares_storage=True, which implies view_memory=True"),
        (dict(n_args=(2, 1)), r"the n_args of relax.test_bad must be \(min, max\) with 0 <= min <= max; got \(2, 1\)"),
        (dict(type_rule="reshape"), "the type_rule of relax.test_bad must be callable or None; got 'reshape'"),
        (dict(legalize=3), "the legalize name of relax.test_bad must be a str or None; got 3"),
        (dict(view=True), "unexpected keyword argument 'view'"),
    ],
)
def test_inconsistent_registration_is_rejected(scratch_registry, props, message):
    with pytest.raises((IRError, TypeError), match=message):
        register_op("relax.test_bad", **props)
    assert not is_registered("relax.test_bad")


def test_tuple_result_rule_and_op_repr():
    x = Var("x", TensorType((4, 3), "float32"))
    split = Call(get_op("relax.split"), [x], {"indices_or_sections": 2, "axis": 0})
    assert isinstance(infer_type(split), TupleType)
    assert repr(get_op("relax.split")) == "Op('relax.split')" and isinstance(get_op("relax.split"), Op)


def test_kill_roles_are_declared_in_the_op_table():
    """KillAfterLastUse's op rules (TVM CollectLastUsage) come from ``Op.kill_role``."""
    from memcore_py.ir.op import KILL_KINDS, kill_op, ops_with_kill_role

    names = lambda ops: [o.name for o in ops]  # noqa: E731
    assert names(ops_with_kill_role("storage")) == ["relax.memory.alloc_storage", "relax.vm.alloc_storage"]
    assert names(ops_with_kill_role("no_register")) == ["relax.null_value"]
    assert [kill_op(k).name for k in range(3)] == ["relax.memory.kill_tensor", "relax.memory.kill_storage",
                                                   "relax.vm.kill_object"]
    assert [kill_op(k).kill_role for k in range(3)] == list(KILL_KINDS)
    assert get_op("relax.builtin.alloc_tensor").kill_role is None


def test_kill_role_errors():
    from memcore_py.ir.op import kill_op, ops_with_kill_role

    with pytest.raises(IRError, match="kill_role of relax.test_bad_role must be None or one of"):
        Op("relax.test_bad_role", kill_role="free")
    with pytest.raises(IRError, match="kill roles must be among"):
        ops_with_kill_role("free")
    with pytest.raises(IRError, match="a kill kind must be 0"):
        kill_op(3)
