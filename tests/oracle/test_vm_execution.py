"""End to end on Apache TVM's VM: programs planned by memcore compute what unplanned ones do.

For each small Relax program (real PrimFunc bodies):

1. TVM lowers it to the module StaticPlanBlockMemory expects (``LegalizeOps →
   RewriteDataflowReshape → ToNonDataflow → RemovePurityChecking → CallTIRRewrite``) and
   prints it;
2. memcore parses TVM's text and plans it with ``StaticPlanBlockMemory`` in ``tvm`` or
   ``arena`` mode (optionally also running memcore's ``LowerAllocTensor`` and
   ``KillAfterLastUse``), and prints the result;
3. TVM parses memcore's text and builds it with the rest of its default pipeline, *without*
   its own StaticPlanBlockMemory (and without the passes memcore already ran), for llvm;
4. the VM runs it on random inputs; the outputs must equal those of the unplanned module
   built by TVM.

Arena mode puts tensors at non-zero offsets of one storage. TVM's VM gives such a tensor a
non-zero ``byte_offset`` and TVM's legalized PrimFuncs reject that, so arena mode binds each one
through ``R.memory.ensure_zero_offset`` (a zero-copy view on CPU for 64-byte aligned offsets);
these runs show that the planned offsets and those views are right.
"""
import numpy as np
import pytest

tvm = pytest.importorskip("tvm")
from tvm import relax  # noqa: E402
from tvm.script import ir as I  # noqa: E402
from tvm.script import relax as R  # noqa: E402
from tvm.script import tirx as T  # noqa: E402

import memcore_py  # noqa: E402
from memcore_py.planning.check import collect_planned_tensors, verify_planned  # noqa: E402
from memcore_py.transform import KillAfterLastUse, LowerAllocTensor, Sequential, StaticPlanBlockMemory  # noqa: E402
from _helpers import tvm_from_source  # noqa: E402

pytestmark = pytest.mark.oracle


# ---------------------------------------------------------------------------------------------
# Programs
# ---------------------------------------------------------------------------------------------


@I.ir_module
class Chain:
    """Spec §6.1: y = x+x; z = y*y; w = z+x; v = w*z."""

    @R.function
    def main(x: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32"):
        with R.dataflow():
            y = R.add(x, x)
            z = R.multiply(y, y)
            w = R.add(z, x)
            v = R.multiply(w, z)
            R.output(v)
        return v


@I.ir_module
class Mlp:
    @R.function
    def main(
        x: R.Tensor((8, 16), "float32"),
        w1: R.Tensor((16, 32), "float32"),
        b1: R.Tensor((32,), "float32"),
        w2: R.Tensor((32, 10), "float32"),
    ) -> R.Tensor((8, 10), "float32"):
        with R.dataflow():
            h = R.matmul(x, w1)
            h1 = R.add(h, b1)
            h2 = R.nn.relu(h1)
            o = R.matmul(h2, w2)
            p = R.nn.softmax(o, axis=-1)
            R.output(p)
        return p


@I.ir_module
class Views:
    """Reshapes alias their input's storage; sizes differ so arena offsets are non-trivial."""

    @R.function
    def main(x: R.Tensor((4, 8), "float32"), w: R.Tensor((8, 8), "float32")) -> R.Tensor((4, 8), "float32"):
        with R.dataflow():
            y = R.matmul(x, w)
            z = R.add(y, x)
            a = R.multiply(z, z)
            b = R.reshape(a, R.shape([8, 4]))
            c = R.nn.relu(b)
            d = R.reshape(c, R.shape([4, 8]))
            big = R.concat([d, d, d, d], axis=1)
            s = R.sum(big, axis=[1], keepdims=True)
            e = R.subtract(d, s)
            f = R.subtract(e, y)
            R.output(f)
        return f


@I.ir_module
class MixedDtypes:
    """float32 and int32 intermediates (separate TVM pools), two outputs in a tuple."""

    @R.function
    def main(x: R.Tensor((16,), "float32"), k: R.Tensor((16,), "int32")):
        with R.dataflow():
            a = R.multiply(x, x)
            i = R.astype(a, "int32")
            j = R.add(i, k)
            m = R.multiply(j, k)
            f = R.astype(m, "float32")
            g = R.add(f, a)
            h = R.exp(R.negative(g))
            out = (h, j)
            R.output(out)
        return out


@I.ir_module
class Dynamic:
    """A symbolic batch with an upper bound: sizes become constants for planning."""

    @R.function
    def main(x: R.Tensor(("n", 8), "float32"), w: R.Tensor((8, 8), "float32")) -> R.Tensor(("n", 8), "float32"):
        n = T.int64()  # noqa: F841 - TVMScript declares the shape variable
        R.func_attr({"tir_var_upper_bound": {"n": 16}})
        with R.dataflow():
            y = R.matmul(x, w)
            z = R.nn.relu(y)
            u = R.multiply(z, y)
            v = R.add(u, x)
            r = R.nn.relu(v)
            R.output(r)
        return r


PROGRAMS = {
    "chain": (Chain, lambda rng: [rng.standard_normal((2, 3))]),
    "mlp": (Mlp, lambda rng: [rng.standard_normal(s) for s in ((8, 16), (16, 32), (32,), (32, 10))]),
    "views": (Views, lambda rng: [rng.standard_normal((4, 8)), rng.standard_normal((8, 8))]),
    "mixed_dtypes": (MixedDtypes, lambda rng: [rng.standard_normal(16), rng.integers(-5, 5, 16).astype("int32")]),
    "dynamic": (Dynamic, lambda rng: [rng.standard_normal((11, 8)), rng.standard_normal((8, 8))]),
}


# ---------------------------------------------------------------------------------------------
# TVM side
# ---------------------------------------------------------------------------------------------


def tvm_lower(mod):
    """TVM's default_build_pipeline up to (not including) StaticPlanBlockMemory."""
    seq = tvm.transform.Sequential([
        relax.transform.LegalizeOps(),
        relax.transform.RewriteDataflowReshape(),
        relax.transform.ToNonDataflow(),
        relax.transform.RemovePurityChecking(),
        relax.transform.CallTIRRewrite(),
    ])
    return seq(mod)


def finalize(lower_alloc_and_kill: bool):
    """TVM's default_build_pipeline after StaticPlanBlockMemory (RewriteCUDAGraph is a no-op
    on CPU); LowerAllocTensor and KillAfterLastUse only when memcore has not run them."""
    passes = [relax.transform.LowerAllocTensor(), relax.transform.KillAfterLastUse()] if lower_alloc_and_kill else []
    passes += [
        relax.transform.LowerRuntimeBuiltin(),
        relax.transform.ComputePrimValue(),
        relax.transform.VMShapeLower(),
        relax.transform.AttachGlobalSymbol(),
    ]
    return tvm.transform.Sequential(passes)


def run_on_vm(mod, inputs, lower_alloc_and_kill=True):
    ex = relax.build(mod, target="llvm", relax_pipeline=finalize(lower_alloc_and_kill))
    vm = relax.VirtualMachine(ex, tvm.cpu())
    out = vm["main"](*[tvm.runtime.tensor(a) for a in inputs])
    if isinstance(out, (tvm.runtime.Tensor,)):
        return [out.numpy()]
    return [o.numpy() for o in out]


def has_nonzero_offset(plan) -> bool:
    return any(int(s.offset.max(initial=0)) > 0 for s in plan.storages)


def make_inputs(name):
    rng = np.random.default_rng(sum(map(ord, name)))
    return [a if a.dtype == np.int32 else a.astype("float32") for a in PROGRAMS[name][1](rng)]


@pytest.fixture(scope="module")
def lowered():
    """name -> (TVM's text of the lowered module, outputs of the unplanned module)."""
    cache = {}

    def get(name):
        if name not in cache:
            mod = tvm_lower(PROGRAMS[name][0])
            cache[name] = (mod.script(), run_on_vm(mod, make_inputs(name)))
        return cache[name]

    return get


# ---------------------------------------------------------------------------------------------
# Tests
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("ours_lower", [False, True], ids=["tvm-lowering", "memcore-lowering"])
@pytest.mark.parametrize("mode", ["tvm", "arena"])
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_planned_module_runs_like_unplanned(lowered, name, mode, ours_lower):
    text, expected = lowered(name)
    mod = memcore_py.parse(text)
    planned = StaticPlanBlockMemory(mode=mode)(mod)
    plan = collect_planned_tensors(planned["main"], "main")
    verify_planned(plan)
    assert plan.n_planned > 0
    if has_nonzero_offset(plan):
        assert "R.memory.ensure_zero_offset" in planned.script()
    if ours_lower:
        planned = Sequential([LowerAllocTensor(), KillAfterLastUse()])(planned)
    back = tvm_from_source(planned.script())
    got = run_on_vm(back, make_inputs(name), lower_alloc_and_kill=not ours_lower)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-6)


def test_some_program_puts_tensors_at_non_zero_offsets(lowered):
    """The arena runs above are not all trivially at offset 0."""
    plans = [collect_planned_tensors(StaticPlanBlockMemory(mode="arena")(memcore_py.parse(lowered(n)[0]))["main"])
             for n in PROGRAMS]
    assert sum(has_nonzero_offset(p) for p in plans) >= 2


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_arena_plans_the_same_tensors_in_no_more_bytes_than_tvm_mode(lowered, name):
    text, _ = lowered(name)
    mod = memcore_py.parse(text)
    tvm_plan = collect_planned_tensors(StaticPlanBlockMemory(mode="tvm")(mod)["main"], "main")
    arena_plan = collect_planned_tensors(StaticPlanBlockMemory(mode="arena")(mod)["main"], "main")
    assert arena_plan.total_bytes <= tvm_plan.total_bytes
    assert arena_plan.n_planned == tvm_plan.n_planned
    assert arena_plan.n_unplanned == tvm_plan.n_unplanned
