"""Random modules for AttachAttrLayoutFreeBuffers and DeadCodeElimination, as TVMScript text.

Design
------
:func:`random_layout_free_program` writes a module that TVM 0.27's parser and memcore's both
read, exercising what the two passes look at:

- PrimFuncs with real TIR bodies (element-wise add/multiply, matmul, a unary, a 0-d scale,
  and with ``tir_vars=True`` a function taking a scalar ``n``), each private or public; now
  and then an existing copy that already carries a ``layout_free_buffers`` attribute;
- Relax functions, public and private, with or without ``num_input`` (so weights are
  ``params[num_input:]``), bodies in a dataflow block or a plain block, made of
  ``R.call_tir`` calls whose arguments mix inputs, weights, earlier results, re-bound
  weights (``wa = w``, not layout-free) and scalar constants; pure op calls, tuples and
  get-items, ``match_cast``, calls of private helper functions; results that nobody reads
  (so DeadCodeElimination has bindings and functions to remove) and several call sites of
  one PrimFunc with equal and with different layout-free positions.

All tensors are ``(8, 8)`` float32 (0-d for the scale operand), so every choice of argument
is well typed. The same seed always gives the same text. Benchmarks use
:func:`call_tir_chain`, a long dataflow chain of ``call_tir`` with weights.
"""
from __future__ import annotations

import random

__all__ = ["random_layout_free_program", "call_tir_chain", "HEADER"]

#: The import comments TVM's printer writes (``tvm.script.from_source`` needs them).
HEADER = "# from tvm.script import ir as I\n# from tvm.script import tirx as T\n# from tvm.script import relax as R\n\n"

_N = 8
_TT = f'R.Tensor(({_N}, {_N}), dtype="float32")'
_BUF = f'T.Buffer((T.int64({_N}), T.int64({_N})), "float32")'
_GRID = f"T.grid(T.int64({_N}), T.int64({_N}))"

# name -> (number of tensor inputs, whether input 1 is 0-d, whether it takes a scalar n, body)
_KERNELS = {
    "add": (2, False, False, "C[vi, vj] = A[vi, vj] + B[vi, vj]"),
    "multiply": (2, False, False, "C[vi, vj] = A[vi, vj] * B[vi, vj]"),
    "relu": (1, False, False, "C[vi, vj] = T.max(A[vi, vj], T.float32(0.0))"),
    "scale": (2, True, False, "C[vi, vj] = A[vi, vj] * B[()]"),
    "matmul": (2, False, False, None),
    "shift": (2, False, True, 'C[vi, vj] = A[vi, vj] + B[vi, vj] + T.Cast("float32", n)'),
}


def _prim_func(name: str, kernel: str, public: bool, attrs: str = "") -> str:
    n_in, zero_d, scalar, body = _KERNELS[kernel]
    params = [f"A: {_BUF}"]
    if n_in == 2:
        params.append('B: T.Buffer((), "float32")' if zero_d else f"B: {_BUF}")
    params.append(f"C: {_BUF}")
    if scalar:
        params.append("n: T.int64")
    deco = "@T.prim_func(s_tir=True)" if public else "@T.prim_func(private=True, s_tir=True)"
    lines = [f"    {deco}", f"    def {name}({', '.join(params)}):"]
    if attrs:
        lines.append(f"        T.func_attr({attrs})")
    if body is None:  # matmul
        lines += [
            f"        for i, j, k in T.grid(T.int64({_N}), T.int64({_N}), T.int64({_N})):",
            '            with T.sblock("C"):',
            '                vi, vj, vk = T.axis.remap("SSR", [i, j, k])',
            "                with T.init():",
            "                    C[vi, vj] = T.float32(0.0)",
            "                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]",
        ]
    else:
        lines += [
            f"        for i, j in {_GRID}:",
            '            with T.sblock("C"):',
            '                vi, vj = T.axis.remap("SS", [i, j])',
            f"                {body}",
        ]
    return "\n".join(lines) + "\n"


class _Function:
    """One Relax function under construction."""

    def __init__(self, rng, name, n_params, num_input, public, dataflow, kernels, helpers, tir_vars):
        self.rng = rng
        self.name = name
        self.params = [f"{name[0]}p{i}" for i in range(n_params)]
        self.num_input = num_input
        self.public = public
        self.dataflow = dataflow
        self.kernels = kernels  # [(prim func name, kernel kind)]
        self.helpers = helpers  # names of private helper Relax functions (1 tensor param)
        self.tir_vars = tir_vars
        self.tensors = list(self.params)  # names of (8, 8) tensors in scope
        self.lines: list[str] = []
        self.k = 0

    def fresh(self, hint="v"):
        self.k += 1
        return f"{hint}{self.k}"

    def pick(self):
        rng = self.rng
        weights = self.params[self.num_input:] if self.num_input is not None else []
        if weights and rng.random() < 0.4:
            return rng.choice(weights)
        return rng.choice(self.tensors)

    def emit(self, text):
        self.lines.append(text)

    def call_tir(self):
        rng = self.rng
        pf, kind = rng.choice(self.kernels)
        n_in, zero_d, scalar, _ = _KERNELS[kind]
        args = [self.pick()]
        if n_in == 2:
            args.append(f"R.const({rng.choice(['0.5', '2.0', '-1.0'])}, \"float32\")" if zero_d else self.pick())
        extra = f", tir_vars=R.shape([{rng.randint(0, 9)}])" if scalar else ""
        v = self.fresh("lv")
        tup = f"({args[0]},)" if len(args) == 1 else f"({', '.join(args)})"
        self.emit(f"{v} = R.call_tir(cls.{pf}, {tup}, out_ty={_TT}{extra})")
        self.tensors.append(v)

    def statement(self):
        rng = self.rng
        r = rng.random()
        if r < 0.55:
            self.call_tir()
        elif r < 0.65:
            v = self.fresh("a")
            self.emit(f"{v} = R.add({self.pick()}, {self.pick()})")
            self.tensors.append(v)
        elif r < 0.72:
            weights = self.params[self.num_input:] if self.num_input is not None else self.params
            v = self.fresh("wa")
            self.emit(f"{v} = {rng.choice(weights or self.params)}")
            self.tensors.append(v)
        elif r < 0.79:
            t, g = self.fresh("t"), self.fresh("g")
            self.emit(f"{t} = ({self.pick()}, {self.pick()})")
            self.emit(f"{g} = {t}[{rng.randint(0, 1)}]")
            self.tensors.append(g)
        elif r < 0.85:
            v = self.fresh("m")
            self.emit(f"{v} = R.match_cast({self.pick()}, {_TT})")
            self.tensors.append(v)
        elif r < 0.93 and self.helpers:
            v = self.fresh("h")
            self.emit(f"{v}: {_TT} = cls.{rng.choice(self.helpers)}({self.pick()})")
            self.tensors.append(v)
        else:
            c = self.fresh("c")
            self.emit(f"{c} = R.const(1.0, \"float32\")")
            v = self.fresh("s")
            pf = next((p for p, kind in self.kernels if kind == "scale"), None)
            if pf is None:
                self.call_tir()
                return
            self.emit(f"{v} = R.call_tir(cls.{pf}, ({self.pick()}, {c}), out_ty={_TT})")
            self.tensors.append(v)

    def text(self, n_statements) -> str:
        rng = self.rng
        for _ in range(n_statements):
            self.statement()
        produced = [t for t in self.tensors if t not in self.params]
        ret = rng.choice(produced) if produced else self.params[0]
        deco = "@R.function" if self.public else "@R.function(private=True)"
        params = ", ".join(f"{p}: {_TT}" for p in self.params)
        out = [f"    {deco}", f"    def {self.name}({params}) -> {_TT}:"]
        if self.num_input is not None:
            out.append(f'        R.func_attr({{"num_input": {self.num_input}}})')
        out.append("        cls = Module")
        if self.dataflow:
            outputs = [ret] + [t for t in produced if t != ret and rng.random() < 0.15]
            out.append("        with R.dataflow():")
            out += [f"            {line}" for line in self.lines]
            out.append(f"            R.output({', '.join(outputs)})")
        else:
            out += [f"        {line}" for line in self.lines]
        out.append(f"        return {ret}")
        return "\n".join(out) + "\n"


def random_layout_free_program(seed: int, *, tir_vars: bool = False) -> str:
    """A random module (TVMScript text with TVM's import header); see the module docstring.

    Parameters
    ----------
    seed : int
    tir_vars : bool, default False
        Also use a PrimFunc with a scalar parameter, called with ``tir_vars=R.shape([k])``
        (TVM drops that argument; memcore keeps it).
    """
    rng = random.Random(seed)
    kinds = ["add", "multiply", "relu", "scale", "matmul"] + (["shift"] if tir_vars else [])
    chosen = rng.sample(kinds, rng.randint(2, 3))
    if tir_vars and "shift" not in chosen:
        chosen.append("shift")
    kernels = [(k, k) for k in chosen]
    parts = []
    for name, kind in kernels:
        parts.append(_prim_func(name, kind, public=rng.random() < 0.2))
    if rng.random() < 0.3:  # an existing attributed copy that a call site may share
        kind = rng.choice(chosen)
        n_in = _KERNELS[kind][0]
        lf = rng.choice([[], [0]] + ([[1], [0, 1]] if n_in == 2 else []))
        parts.append(_prim_func(f"{kind}_lf", kind, public=False, attrs=f'{{"layout_free_buffers": {lf}}}'))
    helpers = []
    for h in range(rng.randint(0, 1)):
        name = f"helper{h}"
        f = _Function(rng, name, 1, None, False, False, kernels, [], tir_vars)
        parts.append(f.text(rng.randint(1, 3)))
        helpers.append(name)
    if rng.random() < 0.2:  # a private function nobody calls
        f = _Function(rng, "orphan", 2, rng.choice([None, 1]), False, rng.random() < 0.5, kernels, [], tir_vars)
        parts.append(f.text(rng.randint(1, 3)))
    for i in range(rng.choice((1, 1, 2, 2, 3))):
        n_params = rng.randint(1, 4)
        num_input = rng.choice([None] + list(range(n_params + 1)))
        public = i == 0 or rng.random() < 0.5
        f = _Function(rng, "main" if i == 0 else f"fn{i}", n_params, num_input, public,
                      rng.random() < 0.6, kernels, helpers, tir_vars)
        parts.append(f.text(rng.randint(2, 12)))
    rng.shuffle(parts)
    return HEADER + "@I.ir_module(s_tir=True)\nclass Module:\n" + "\n".join(parts)


def call_tir_chain(n_bindings: int, *, n_weights: int = 16, dead_every: int = 10) -> str:
    """A module whose ``main`` is one dataflow block of ``n_bindings`` ``call_tir`` calls of
    three PrimFuncs (matmul, add, relu), each reading the previous result and, for the binary
    ones, one of ``n_weights`` weights (``num_input=1``); every ``dead_every``-th result is
    never read (DeadCodeElimination removes it). For benchmarks."""
    if n_bindings < 1:
        raise ValueError(f"n_bindings must be >= 1; got {n_bindings}")
    parts = [_prim_func(k, k, public=False) for k in ("matmul", "add", "relu")]
    params = ["x"] + [f"w{i}" for i in range(n_weights)]
    lines = []
    prev = "x"
    kinds = ("matmul", "add", "relu")
    for i in range(n_bindings):
        kind = kinds[i % 3]
        args = f"({prev},)" if kind == "relu" else f"({prev}, w{i % n_weights})"
        v = f"lv{i}"
        lines.append(f"            {v} = R.call_tir(cls.{kind}, {args}, out_ty={_TT})")
        if not (dead_every and i % dead_every == dead_every - 1):
            prev = v
    lines.append(f"            gv = {prev}")
    head = [
        "    @R.function",
        f"    def main({', '.join(f'{p}: {_TT}' for p in params)}) -> {_TT}:",
        '        R.func_attr({"num_input": 1})',
        "        cls = Module",
        "        with R.dataflow():",
    ]
    tail = ["            R.output(gv)", "        return gv"]
    parts.append("\n".join(head + lines + tail) + "\n")
    return HEADER + "@I.ir_module(s_tir=True)\nclass Module:\n" + "\n".join(parts)
