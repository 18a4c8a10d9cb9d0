"""StaticPlanBlockMemory's shortcuts for small modules give the results of the general path.

- A module where nothing is planned (every allocation escapes) skips the engine and the
  rewrite: the plan is the one both planners build for no tokens, and the module comes back
  unchanged (the same object), unless the Case-2 attribute asks for output storages.
"""
import pytest

import memcore_py
from memcore_py.analysis.storage_tokens import analyze_storage_tokens
from memcore_py.planning.allocate import arena_plan, plan_memory, tvm_plan
from memcore_py.testing.memory_programs import chain_module
from memcore_py.transform.static_plan_block_memory import StaticPlanBlockMemory, plan_block_memory

_ESCAPING_DYNAMIC = """# from tvm.script import ir as I
# from tvm.script import tirx as T
# from tvm.script import relax as R

@I.ir_module
class Module:
    @T.prim_func(private=True)
    def k(A0: T.handle, A1: T.handle):
        T.evaluate(0)

    @R.function(pure=False)
    def main(x: R.Tensor(("n",), dtype="float32")) -> R.Tensor(("n",), dtype="float32"):
        n = T.int64()
        R.func_attr({"relax.memory_plan_dynamic_func_output": True, "tir_var_upper_bound": {"n": 20}})
        cls = Module
        a: R.Tensor((n,), dtype="float32") = R.builtin.alloc_tensor(R.shape([n]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        cls.k(x, a)
        return a
"""


def _plan_fields(plan):
    return (plan.mode, plan.storages, plan.tok_storage.tolist(), plan.tok_storage.dtype,
            plan.tok_offset.tolist(), plan.tok_offset.dtype, plan.tvm_bytes, plan.planned_bytes,
            plan.lower_bound, plan.function_names, plan.function_lower_bounds)


_NO_ALLOCATION = """# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        return x

    @R.function
    def other(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        return x
"""


@pytest.mark.parametrize("mod", [chain_module(1), memcore_py.parse(_NO_ALLOCATION)],
                         ids=["returned-allocation", "no-allocation"])
def test_no_tokens_plan_equals_the_planners(mod):
    program = analyze_storage_tokens(mod).program
    assert program.n_tok == 0
    assert _plan_fields(plan_memory(program, "tvm")) == _plan_fields(tvm_plan(program))
    want = tvm_plan(program)
    want.lower_bound, want.function_lower_bounds = 0, {name: 0 for name in program.function_names}
    assert _plan_fields(plan_memory(program, "tvm", lower_bound=True)) == _plan_fields(want)
    assert _plan_fields(plan_memory(program, "arena", time_limit=None)) == _plan_fields(arena_plan(program))
    with pytest.raises(ValueError, match="planning mode"):
        plan_memory(program, "bogus")


@pytest.mark.parametrize("mode", ["tvm", "arena"])
def test_nothing_planned_returns_the_module_itself(mode):
    mod = chain_module(1)
    assert StaticPlanBlockMemory(mode=mode)(mod) is mod
    planned = plan_block_memory(mod, mode)
    assert planned.module is mod and planned.plan.n_storage == 0 and planned.plan.n_tok == 0


@pytest.mark.parametrize("mode", ["tvm", "arena"])
def test_nothing_planned_with_the_case_2_attribute_still_rewrites(mode):
    mod = memcore_py.parse(_ESCAPING_DYNAMIC)
    assert analyze_storage_tokens(mod).program.n_tok == 0
    out = StaticPlanBlockMemory(mode=mode)(mod).script()
    assert "relax.memory_plan_dynamic_func_output" not in out
    assert 'R.memory.alloc_storage(R.shape([80]), 0, R.str("global"), R.dtype("float32"))' in out
    assert "R.memory.alloc_tensor(storage, 0, R.shape([n])" in out
