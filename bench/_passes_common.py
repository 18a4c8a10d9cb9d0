"""Shared by the benches: chain sizes and TVM's version of
:func:`memcore_py.testing.memory_programs.chain_module`, and the alternating same-run timer.

Not a benchmark file itself (pytest collects ``bench_*.py`` only).
"""
import time
from _helpers import tvm_from_source

#: Element-wise ops per chain (three bindings each).
SIZES = (1_000, 10_000, 100_000)
#: Base tensor width of the chains.
WIDTH = 1024


def tvm_or_none():
    """The ``tvm`` module, or None when apache-tvm (with relax) is not installed."""
    try:
        import tvm
        from tvm import relax  # noqa: F401
    except ImportError:
        return None
    return tvm


def tvm_chain_module(n_ops: int, width: int = WIDTH, dtype: str = "float32"):
    """TVM's version of :func:`chain_module` (same names, types, calls and attributes), built
    with TVM's node constructors from a small parsed template."""
    tvm = tvm_or_none()
    from tvm import relax

    widths = (width, width // 2, width, width * 2)
    lines = "\n".join(
        f'        a{j}: R.Tensor(({w},), dtype="{dtype}") = R.builtin.alloc_tensor(R.shape([{w}]), '
        f'R.dtype("{dtype}"), R.prim_value(0), R.str("global"))\n'
        f"        _{j}: R.Tuple = cls.kernel2(x, a{j})"
        for j, w in enumerate(widths)
    )
    template = tvm_from_source(f"""
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
    return tvm.IRModule({k2: template[k2], k3: template[k3], "main": func})


def best_alternating(ours, theirs, rounds: int):
    """Best seconds of ``ours()`` and ``theirs()`` run alternately ``rounds`` times, the fairer
    same-run comparison when the machine's load drifts (``theirs`` None: not measured, None)."""
    best_o = best_t = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        ours()
        best_o = min(best_o, time.perf_counter() - t0)
        if theirs is not None:
            t0 = time.perf_counter()
            theirs()
            best_t = min(best_t, time.perf_counter() - t0)
    return best_o, (best_t if theirs is not None else None)
