"""StaticPlanBlockMemory's fast paths give the plans of the general ones.

The compiled Init walk handles calls of up to ``MAX_ARGS`` (32) arguments itself and hands
longer ones to the Python walk; symbolic tensor types are sized once per (type, bounds) and
function bounds once per signature and attributes, across calls. Each case is checked
against Apache TVM 0.27's own pass (oracle) or against sizes worked out by hand, and planned
twice, so that the second call runs on the caches the first one filled.
"""
import pytest

import memcore_py
from memcore_py.ir.structural import first_mismatch, structural_equal
from memcore_py.transform.static_plan_block_memory import plan_block_memory, static_plan_block_memory
from _helpers import tvm_from_source

HEADER = """# from tvm.script import ir as I
# from tvm.script import tirx as T
# from tvm.script import relax as R

@I.ir_module
class Module:
    @T.prim_func(private=True)
    def kernel(A0: T.handle):
        T.evaluate(0)

"""


def _alloc(name, shape, dtype="float32"):
    dims = ", ".join(shape)
    return (f'        {name}: R.Tensor(({dims}), dtype="{dtype}") = R.builtin.alloc_tensor('
            f'R.shape([{dims}]), R.dtype("{dtype}"), R.prim_value(0), R.str("global"))')


def wide_call_text(n_args: int) -> str:
    """``main`` allocating ``n_args`` tensors, passing all of them to one call (``n_args``
    arguments), then more allocations that may reuse their storage."""
    lines = [_alloc(f"a{i}", ["16", str(8 * (1 + i % 3))]) for i in range(n_args)]
    lines.append(f"        cls.wide({', '.join(f'a{i}' for i in range(n_args))})")
    for j in range(4):
        lines.append(_alloc(f"b{j}", ["16", "16"]))
        lines.append(f"        cls.kernel(b{j})")
    body = "\n".join(lines)
    params = ", ".join(f"W{i}: T.handle" for i in range(n_args))
    return HEADER + f'''    @T.prim_func(private=True)
    def wide({params}):
        T.evaluate(0)

    @R.function
    def main(x: R.Tensor((16, 16), dtype="float32")) -> R.Tensor((16, 16), dtype="float32"):
        R.func_attr({{"relax.force_pure": True}})
        cls = Module
{body}
        return x
'''


def bounded_text(bound_main: int, bound_other: int) -> str:
    """Two functions with the same symbolic tensor shapes ``(n, 4)`` / ``(n, 8)`` under
    different ``tir_var_upper_bound``s."""
    funcs = []
    for name, bound in (("main", bound_main), ("other", bound_other)):
        lines = []
        for i in range(4):
            w = "4" if i % 2 == 0 else "8"
            lines.append(_alloc(f"a{i}", ["n", w]))
            lines.append(f"        cls.kernel(a{i})")
        body = "\n".join(lines)
        funcs.append(f'''    @R.function
    def {name}(x: R.Tensor(("n", 4), dtype="float32")) -> R.Tensor(("n", 4), dtype="float32"):
        n = T.int64()
        R.func_attr({{"relax.force_pure": True, "tir_var_upper_bound": {{"n": {bound}}}}})
        cls = Module
{body}
        return x
''')
    return HEADER + "\n".join(funcs)


def _storage_bytes(mod, func_name):
    out = []
    for block in mod[func_name].body.blocks:
        for b in block.bindings:
            v = b.value
            if getattr(getattr(v, "op", None), "name", "") == "relax.memory.alloc_storage":
                out.append(v.args[0].values[0].value)
    return out


@pytest.mark.parametrize("n_args", [3, 32, 33, 40])
def test_wide_calls_plan_alike_on_both_walks(n_args):
    """A call of more than 32 arguments takes the Python walk: the plan is the same kind of
    plan (every tensor of the wide call lives until it, so none of them shares a storage;
    the later ones reuse theirs), on the first call and on the cached second one."""
    mod = memcore_py.parse(wide_call_text(n_args))
    first = plan_block_memory(mod, "tvm")
    second = plan_block_memory(mod, "tvm")
    assert structural_equal(first.module, second.module)
    plan = first.plan
    wide = plan.tok_storage[:n_args].tolist()
    assert len(set(wide)) == n_args  # all live at the wide call: no sharing among them
    assert set(plan.tok_storage[n_args:].tolist()) <= set(wide)  # the later ones reuse


def test_bounds_are_read_per_function_and_per_attribute_values():
    """The same symbolic types under two bounds get two sizes. By hand: each tensor is free
    after its call, so the four of a function share one storage grown to the largest,
    (bound, 8) float32: 64 -> 2048 B, 256 -> 8192 B. A module whose only change is the bound
    value plans with the new bound, also after the cached call."""
    for _ in range(2):
        out = static_plan_block_memory(memcore_py.parse(bounded_text(64, 256)))
        assert _storage_bytes(out, "main") == [2048]
        assert _storage_bytes(out, "other") == [8192]
    changed = static_plan_block_memory(memcore_py.parse(bounded_text(128, 256)))
    assert _storage_bytes(changed, "main") == [4096]


def test_bounds_follow_attributes_replaced_on_the_same_signature():
    """A function rebuilt with other attributes (same parameters and return type: the bounds
    cache's signature key) is planned with the new attributes."""
    from memcore_py.ir.construct import function_with_body, module_with_functions

    mod = memcore_py.parse(bounded_text(64, 64))
    assert _storage_bytes(static_plan_block_memory(mod), "main") == [2048]
    gv = mod.get_global_var("main")
    func = mod[gv]
    attrs = dict(func.attrs)
    attrs["tir_var_upper_bound"] = {"n": 32}
    mod2 = module_with_functions(mod, {gv: function_with_body(func, func.body, attrs)})
    assert _storage_bytes(static_plan_block_memory(mod2), "main") == [1024]


@pytest.mark.oracle
@pytest.mark.parametrize("text", [wide_call_text(40), wide_call_text(32), bounded_text(64, 256)],
                         ids=["call-40-args", "call-32-args", "two-bounds"])
def test_wide_calls_and_bounds_reproduce_tvm(text):
    pytest.importorskip("tvm")
    from tvm import relax

    theirs = relax.transform.StaticPlanBlockMemory()(tvm_from_source(text))
    expected = memcore_py.parse(theirs.script())
    mod = memcore_py.parse(text)
    for _ in range(2):  # the second call runs on the caches of the first
        ours = static_plan_block_memory(mod)
        for gv, f in expected.functions.items():
            if type(f).__name__ != "Function":
                continue
            got = ours[gv.name]
            assert structural_equal(got, f), first_mismatch(got, f)
