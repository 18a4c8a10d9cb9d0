"""Random high-level dataflow programs for DataflowUseInplaceCalls' differential tests.

:func:`random_inplace_program` writes the TVMScript text of a module whose ``main`` has one
dataflow block mixing what the pass and its analyses must get right: the six in-place
capable ops (add, subtract, multiply, divide, nn.relu, nn.silu) and a non-capable one
(exp), broadcasting operands ((1, k) rows and (k,) vectors), scalar constants on either
side, view ops (expand_dims, permute_dims, reshape, flatten, squeeze), tuple literals and
get-items, ``split``, ``call_tir`` (single and tuple results), mystery calls (a Relax
function and ``call_pure_packed``), values used several times, outputs, and several dtypes
and symbolic shapes (``(n, 3)``, ``(n, m)``). The text is read by both memcore's and TVM's
parsers, so the same program feeds both passes.

``executable=True`` leaves out the constructs that need kernels the VM cannot run
(``call_tir`` to signature-only PrimFuncs, packed calls), so the module can be built with
``tvm.compile`` and run; the result is the same function of the inputs before and after the
pass.
"""
from __future__ import annotations

import random

__all__ = ["random_inplace_program"]

_HEADER = """# from tvm.script import ir as I
# from tvm.script import relax as R
# from tvm.script import tirx as T

@I.ir_module
class Module:
"""
_BINARY = ("add", "subtract", "multiply", "divide")


def _shape_text(dims) -> str:
    return "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"


def _tensor(dims, dtype, quote=False) -> str:
    if quote:  # a signature declares its symbolic dims as strings
        dims = [d if d.isdigit() else f'"{d}"' for d in dims]
    return f'R.Tensor({_shape_text(dims)}, dtype="{dtype}")'


def _broadcast(a, b):
    """Result dims of broadcasting ``a`` and ``b`` (tuples of dim strings), or None."""
    out = []
    for i in range(1, max(len(a), len(b)) + 1):
        x = a[-i] if i <= len(a) else None
        y = b[-i] if i <= len(b) else None
        if x is None or x == "1":
            out.append(y if y is not None else x)
        elif y is None or y == "1" or y == x:
            out.append(x)
        else:
            return None
    return tuple(reversed(out))


class _Gen:
    def __init__(self, rng: random.Random, n_bindings: int, executable: bool):
        self.rng = rng
        self.n = n_bindings
        self.exe = executable
        self.lines: list = []
        self.values: list = []  # (name, dims or None for a tuple, dtype, tuple field dims)
        self.k = 0
        self.prim_funcs: dict = {}

    def name(self, base="v"):
        self.k += 1
        return f"{base}{self.k}"

    def tensors(self, dtype=None, known=True):
        return [v for v in self.values if v[1] is not None and (dtype is None or v[2] == dtype)
                and (not known or v[1] != "?")]

    def emit(self, value_text, dims, dtype, fields=None, base="v"):
        nm = self.name(base)
        self.lines.append(f"            {nm} = {value_text}")
        self.values.append((nm, dims, dtype, fields))
        return nm

    def step(self):
        rng = self.rng
        kinds = ["binary"] * 6 + ["unary"] * 3 + ["exp", "view", "tuple", "getitem", "const"]
        if not self.exe:
            kinds += ["call_tir", "mystery", "packed"]
        kinds.append("split")
        kind = rng.choice(kinds)
        ts = self.tensors()
        if not ts:
            return
        a = rng.choice(ts)
        if kind in ("binary", "const"):
            if kind == "const" or rng.random() < 0.15:
                c = "1.5" if a[2].startswith("float") else "3"
                const = f'R.const({c}, "{a[2]}")'
                op = rng.choice(_BINARY)
                args = f"{a[0]}, {const}" if rng.random() < 0.8 else f"{const}, {a[0]}"
                self.emit(f"R.{op}({args})", a[1], a[2])
                return
            partners = [b for b in self.tensors(a[2]) if _broadcast(a[1], b[1]) is not None]
            b = rng.choice(partners)
            if rng.random() < 0.25:
                b = a
            x, y = (a, b) if rng.random() < 0.5 else (b, a)
            self.emit(f"R.{rng.choice(_BINARY)}({x[0]}, {y[0]})", _broadcast(x[1], y[1]), a[2])
        elif kind == "unary":
            ops = ["nn.relu"] + (["nn.silu"] if a[2].startswith("float") else [])
            self.emit(f"R.{rng.choice(ops)}({a[0]})", a[1], a[2])
        elif kind == "exp" and a[2].startswith("float"):
            self.emit(f"R.exp({a[0]})", a[1], a[2])
        elif kind == "view":
            dims = a[1]
            choices = ["expand_dims"]
            if len(dims) == 2:
                choices += ["permute_dims", "flatten"]
                if all(d.isdigit() for d in dims):
                    choices.append("reshape")
            if len(dims) >= 1 and dims[0] == "1":
                choices.append("squeeze")
            op = rng.choice(choices)
            if op == "expand_dims":
                self.emit(f"R.expand_dims({a[0]}, axis=[0])", ("1",) + dims, a[2])
            elif op == "permute_dims":
                self.emit(f"R.permute_dims({a[0]}, axes=[1, 0])", (dims[1], dims[0]), a[2])
            elif op == "flatten":
                d = dims[0] if dims[1] == "1" else (dims[1] if dims[0] == "1" else None)
                if d is None:
                    if all(x.isdigit() for x in dims):
                        d = str(int(dims[0]) * int(dims[1]))
                    else:
                        return
                self.emit(f"R.flatten({a[0]})", (d,), a[2])
            elif op == "reshape":
                total = int(dims[0]) * int(dims[1])
                self.emit(f"R.reshape({a[0]}, R.shape([{total}]))", (str(total),), a[2])
            else:
                self.emit(f"R.squeeze({a[0]}, axis=[0])", dims[1:], a[2])
        elif kind == "tuple":
            fs = [rng.choice(ts) for _ in range(rng.randint(1, 3))]
            nm = self.name("t")
            self.lines.append(f"            {nm} = ({', '.join(f[0] for f in fs)}{',' if len(fs) == 1 else ''})")
            self.values.append((nm, None, None, [(f[1], f[2]) for f in fs]))
        elif kind == "getitem":
            tups = [v for v in self.values if v[1] is None]
            if not tups:
                return
            t = rng.choice(tups)
            i = rng.randrange(len(t[3]))
            dims, dtype = t[3][i]
            self.emit(f"{t[0]}[{i}]", dims, dtype)
        elif kind == "split":
            dims = a[1]
            if not dims or not dims[0].isdigit() or int(dims[0]) < 2:
                return
            d0 = int(dims[0])
            nm = self.name("s")
            self.lines.append(f"            {nm} = R.split({a[0]}, indices_or_sections=[1], axis=0)")
            self.values.append((nm, None, None, [(("1",) + dims[1:], a[2]), ((str(d0 - 1),) + dims[1:], a[2])]))
        elif kind == "call_tir":
            if not all(d.isdigit() for d in a[1]):
                return
            key = (a[1], a[2])
            pf = self.prim_funcs.setdefault(key, f"tir_f{len(self.prim_funcs)}")
            ty = _tensor(a[1], a[2])
            if self.rng.random() < 0.3:
                self.lines.append(
                    f"            {self.name('c')} = R.call_tir(cls.{pf}_pair, ({a[0]},), out_ty=[{ty}, {ty}])")
                nm = f"c{self.k}"
                self.values.append((nm, None, None, [(a[1], a[2]), (a[1], a[2])]))
            else:
                self.emit(f"R.call_tir(cls.{pf}, ({a[0]},), out_ty={ty})", a[1], a[2], base="c")
        elif kind == "mystery" and len(a[1]) == 2:
            self.emit(f"cls.helper_{a[2]}({a[0]})", "?", a[2], base="m")
        elif kind == "packed":
            self.emit(f'R.call_pure_packed("test.mystery", {a[0]}, ty_args=({_tensor(a[1], a[2])},))', a[1], a[2],
                      base="m")

    def prim_func_texts(self) -> list:
        out = []
        for (dims, dtype), name in self.prim_funcs.items():
            buf = f'T.Buffer({_shape_text(tuple(f"T.int64({d})" for d in dims))}, "{dtype}")'
            out.append(f"    @T.prim_func(private=True)\n    def {name}(A: {buf}, B: {buf}):\n        T.evaluate(0)\n")
            out.append(f"    @T.prim_func(private=True)\n    def {name}_pair(A: {buf}, B: {buf}, C: {buf}):\n"
                       "        T.evaluate(0)\n")
        return out


def random_inplace_program(seed: int, n_bindings: int = 12, *, executable: bool = False) -> str:
    """TVMScript text of a random module for DataflowUseInplaceCalls (module docstring).

    Parameters
    ----------
    seed : int
        The same seed always gives the same text.
    n_bindings : int, default 12
        Attempted bindings in the dataflow block (a few attempts add nothing).
    executable : bool, default False
        Only constructs TVM's VM can run (no call_tir, no packed or Relax-function calls).

    Returns
    -------
    str
        Text accepted by ``memcore_py.parse`` and ``tvm.script.from_source``.
    """
    rng = random.Random(seed)
    dtype = rng.choice(["float32", "float32", "float16", "int32"] if not executable else ["float32", "float64"])
    style = rng.choice(["static", "static", "sym1", "sym2"])
    base = {"static": rng.choice([("2", "3"), ("4", "3"), ("3", "3")]), "sym1": ("n", "3"), "sym2": ("n", "m")}[style]
    g = _Gen(rng, n_bindings, executable)
    params = [("x", base), ("y", base), ("r", ("1", base[1])), ("w", (base[1],))]
    sig = ", ".join(f"{p}: {_tensor(d, dtype, quote=True)}" for p, d in params)
    for p, d in params:
        g.values.append((p, d, dtype, None))
    for _ in range(n_bindings):
        g.step()
    # outputs: the last value and one random earlier one (kept live past the block)
    defined = [v for v in g.values if v[0] not in dict(params)]
    if not defined:
        g.emit("R.add(x, y)", base, dtype)
        defined = [g.values[-1]]
    outs = [defined[-1][0]]
    if len(defined) > 2 and rng.random() < 0.5:
        extra = rng.choice(defined[:-1])[0]
        if extra not in outs:
            outs.append(extra)
    body = [f"    @R.function\n    def main({sig}):"]
    body.append("        cls = Module")
    body.append("        with R.dataflow():")
    body.extend(g.lines)
    body.append(f"            R.output({', '.join(outs)})")
    ret = outs[0] if len(outs) == 1 else "(" + ", ".join(outs) + ")"
    body.append(f"        return {ret}")
    helpers = []
    if not executable:
        for dt in sorted({dtype}):
            helpers.append(
                f'    @R.function(private=True)\n    def helper_{dt}(a: R.Tensor(dtype="{dt}", ndim=2)) -> '
                f'R.Tensor(dtype="{dt}", ndim=2):\n        return a\n')
    return _HEADER + "\n".join(g.prim_func_texts() + helpers + ["\n".join(body)]) + "\n"
