"""KillAfterLastUse on long element-wise chains: ours against Apache TVM 0.27's pass on the
same program, in the same run.

Workload: :func:`memcore_py.testing.memory_programs.chain_module` (n element-wise ops after
CallTIRRewrite, three bindings each, tensors cycling through four widths; n = 1k, 10k, 100k,
i.e. 3k / 30k / 300k bindings), planned by our StaticPlanBlockMemory (TVM-exact mode) and
lowered by our LowerAllocTensor, once per session. TVM's input is the same program built
with TVM's node constructors (its TVMScript parser is far too slow at these sizes) and run
through TVM's own StaticPlanBlockMemory and LowerAllocTensor. Only KillAfterLastUse is
timed on both sides. ``test_programs_are_the_same`` checks at 1k ops that TVM's output of
the timed pass equals ours structurally.

``extra_info``: bindings before the pass, kill calls inserted; for our runs (when TVM is
installed and benchmarking is on) also the best of several *alternating* calls of our pass
and TVM's (``alternating_ours_s``, ``alternating_tvm_s``, ``alternating_ratio``), the fairer
ratio on a shared machine whose load drifts during the session.

Run: ``pytest bench/bench_kill_after_last_use.py --benchmark-only`` (results: bench/README.md,
"KillAfterLastUse"). With ``--benchmark-disable`` (the CI smoke run) TVM is not run at 100k
ops (building its input and one call take about 30 s there).
"""
import pytest

from memcore_py.testing.memory_programs import chain_module
from memcore_py.transform import KillAfterLastUse, LowerAllocTensor
from memcore_py.transform.static_plan_block_memory import static_plan_block_memory

SIZES = (1_000, 10_000, 100_000)
WIDTH = 1024
KILL_OPS = ("relax.memory.kill_tensor", "relax.memory.kill_storage", "relax.vm.kill_object")


def _tvm():
    try:
        import tvm
        from tvm import relax  # noqa: F401
    except ImportError:
        return None
    return tvm


def _ours_input(n):
    return LowerAllocTensor()(static_plan_block_memory(chain_module(n, width=WIDTH), "tvm"))


def _tvm_chain(n_ops, width=WIDTH, dtype="float32"):
    """TVM's version of ``chain_module`` (same program, built with TVM's constructors from
    a small parsed template)."""
    tvm = _tvm()
    from tvm import relax

    widths = (width, width // 2, width, width * 2)
    lines = "\n".join(
        f'        a{j}: R.Tensor(({w},), dtype="{dtype}") = R.builtin.alloc_tensor(R.shape([{w}]), '
        f'R.dtype("{dtype}"), R.prim_value(0), R.str("global"))\n'
        f"        _{j}: R.Tuple = cls.kernel2(x, a{j})"
        for j, w in enumerate(widths)
    )
    template = tvm.script.from_source(f"""
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def kernel2(A0: T.handle, A1: T.handle):
        T.evaluate(0)

    @T.prim_func(private=True)
    def kernel3(A0: T.handle, A1: T.handle, A2: T.handle):
        T.evaluate(0)

    @R.function(pure=False)
    def main(x: R.Tensor(({width},), dtype="{dtype}")) -> R.Tensor(({width},), dtype="{dtype}"):
        cls = Module
{lines}
        return x
""")
    k2, k3 = template.get_global_var("kernel2"), template.get_global_var("kernel3")
    tb = template["main"].body.blocks[0].bindings
    allocs = [tb[2 * j].value for j in range(4)]
    types = [tb[2 * j].var.ty for j in range(4)]
    void = tb[1].var.ty
    x = template["main"].params[0]
    bindings = []
    prev, prev2 = x, x
    for i in range(n_ops):
        j = i % 4
        a = relax.Var("alloc", types[j])
        c = allocs[j]
        bindings.append(relax.VarBinding(a, relax.Call(c.op, c.args, c.attrs, c.ty_args, ret_ty=types[j])))
        if i % 3 == 2:
            k = relax.Call(k3, [prev, prev2, a], ret_ty=void)
        else:
            k = relax.Call(k2, [prev, a], ret_ty=void)
        bindings.append(relax.VarBinding(relax.Var("_", void), k))
        y = relax.Var("y", types[j])
        bindings.append(relax.VarBinding(y, a))
        prev2, prev = prev, y
    body = relax.SeqExpr([relax.BindingBlock(bindings)], prev)
    func = relax.Function([x], body, types[(n_ops - 1) % 4], is_pure=True)
    func = func.with_attr("global_symbol", "main").with_attr("relax.force_pure", True)
    mod = tvm.IRModule({k2: template[k2], k3: template[k3], "main": func})
    mod = relax.transform.StaticPlanBlockMemory()(mod)
    return relax.transform.LowerAllocTensor()(mod)


def _count_bindings(func):
    return sum(len(b.bindings) for b in func.body.blocks)


def _count_kills_ours(func):
    return sum(1 for blk in func.body.blocks for b in blk.bindings
               if getattr(getattr(b.value, "op", None), "name", "") in KILL_OPS)


@pytest.fixture(scope="session")
def kill_inputs():
    return {}


def _input(cache, n):
    if n not in cache:
        cache[n] = _ours_input(n)
    return cache[n]


@pytest.fixture(scope="session")
def tvm_kill_inputs():
    return None if _tvm() is None else {}


def _alternating(mod, tmod, rounds):
    """Best of ``rounds`` alternating calls of our pass and TVM's (seconds each): the fairer
    ratio on a machine whose load changes during the session."""
    import time

    from tvm import relax

    ours, theirs = KillAfterLastUse(), relax.transform.KillAfterLastUse()
    t_ours, t_tvm = [], []
    for _ in range(rounds):
        t = time.perf_counter()
        ours(mod)
        t_ours.append(time.perf_counter() - t)
        t = time.perf_counter()
        theirs(tmod)
        t_tvm.append(time.perf_counter() - t)
    return min(t_ours), min(t_tvm)


@pytest.mark.benchmark(group="kill-after-last-use")
@pytest.mark.parametrize("n", SIZES)
def test_kill_after_last_use_ours(benchmark, request, kill_inputs, tvm_kill_inputs, n):
    mod = _input(kill_inputs, n)
    out = benchmark(KillAfterLastUse(), mod)
    benchmark.extra_info.update(n_ops=n, n_bindings=_count_bindings(mod["main"]),
                                n_kills=_count_kills_ours(out["main"]))
    if tvm_kill_inputs is not None and not request.config.getoption("benchmark_disable"):
        if n not in tvm_kill_inputs:
            tvm_kill_inputs[n] = _tvm_chain(n)
        ours_s, tvm_s = _alternating(mod, tvm_kill_inputs[n], 2 if n == SIZES[-1] else 5)
        benchmark.extra_info.update(alternating_ours_s=ours_s, alternating_tvm_s=tvm_s,
                                    alternating_ratio=tvm_s / ours_s)


@pytest.mark.benchmark(group="kill-after-last-use")
@pytest.mark.parametrize("n", SIZES)
def test_kill_after_last_use_tvm(benchmark, request, tvm_kill_inputs, n):
    if tvm_kill_inputs is None:
        pytest.skip("apache-tvm is not installed")
    if n == SIZES[-1] and request.config.getoption("benchmark_disable"):
        pytest.skip("TVM at 100k ops only when benchmarking (about 30 s with its input)")
    from tvm import relax

    if n not in tvm_kill_inputs:
        tvm_kill_inputs[n] = _tvm_chain(n)
    tmod = tvm_kill_inputs[n]
    kill = relax.transform.KillAfterLastUse()
    out = benchmark.pedantic(kill, args=(tmod,), rounds=3 if n < SIZES[-1] else 1, iterations=1)
    n_kills = sum(1 for blk in out["main"].body.blocks for b in blk.bindings
                  if isinstance(b.value, relax.Call) and getattr(b.value.op, "name", "") in KILL_OPS)
    benchmark.extra_info.update(n_ops=n, n_bindings=sum(len(b.bindings) for b in tmod["main"].body.blocks),
                                n_kills=n_kills)


def test_programs_are_the_same(kill_inputs):
    """At 1k ops, TVM's KillAfterLastUse output on its input equals ours on ours."""
    if _tvm() is None:
        pytest.skip("apache-tvm is not installed")
    import memcore_py
    from memcore_py.ir.structural import assert_structural_equal
    from tvm import relax

    n = SIZES[0]
    theirs = memcore_py.parse(relax.transform.KillAfterLastUse()(_tvm_chain(n)).script())
    ours = KillAfterLastUse()(_input(kill_inputs, n))
    assert_structural_equal(ours["main"], theirs["main"])
