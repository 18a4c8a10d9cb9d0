"""Random, well-formed Relax modules for tests and benchmarks.

Design
------
A generator is a seeded :class:`random.Random` driving a
:class:`~memcore_py.ir.BlockBuilder`. It keeps a *pool* of the tensor values in scope (var,
type, whether it is a DataflowVar) and repeatedly picks a *step* — a small, typed program
fragment (an element-wise op, a DPS call, an If, ...) whose operands come from the pool and
whose results go back into it. Every step has a fixed binding cost, and steps are only
picked when they fit in the remaining budget, so the module has exactly ``n_bindings``
bindings (counted over all Relax functions, If branches included; :func:`count_bindings`).

Only forms that TVM 0.27 prints for these passes' inputs and outputs are produced (spec §6):
dataflow and plain blocks, ``R.output``, If/else with a bool condition parameter, tuples,
nested tuples, get-items, ``R.match_cast`` (also to a new symbolic var), element-wise ops
with scalar ``R.const`` operands, ``R.reshape``, ``R.permute_dims``, ``R.matmul``,
``R.split``, ``R.concat``, ``R.sum``, ``R.astype``, ``R.shape_of``, ``R.call_tir`` to
signature-only PrimFuncs, ``R.call_packed`` with ``sinfo_args``, ``R.builtin.alloc_tensor``
followed by a direct DPS call (the post-CallTIRRewrite form), calls between Relax
functions. Dtypes float32, float16, int32, int8 and bool; storage scopes "global" and
"local"; symbolic dims ``n``/``m`` declared by the function signature.

Determinism: the same ``(seed, n_bindings, options)`` always gives a structurally equal
module with the same names; nothing depends on hash order or the clock.
"""
from __future__ import annotations

import random

import numpy as np

from ..errors import IRError
from ..ir._util import gc_paused
from ..ir.builder import BlockBuilder
from ..ir.expr import (
    Call,
    Constant,
    DataflowVar,
    DataTypeImm,
    ExternFunc,
    Function,
    GlobalVar,
    PrimFunc,
    PrimFuncParam,
    PrimValue,
    ShapeExpr,
    StringImm,
    Tuple,
    TupleGetItem,
    Var,
)
from ..ir.module import IRModule
from ..ir.op import get_op
from ..ir.prim import IntImm, PrimVar
from ..ir.types import ObjectType, TensorType, TupleType

__all__ = ["random_module", "random_lowered_module", "count_bindings", "FEATURES", "module_features"]

FLOAT_DTYPES = ("float32", "float16")
INT_DTYPES = ("int32", "int8")
SCOPES = ("global", "local")

#: Construct names reported by :func:`module_features` (coverage checks in tests).
FEATURES = (
    "dataflow_block", "binding_block", "tuple", "nested_tuple", "get_item", "match_cast",
    "match_cast_new_sym", "if", "call_packed", "call_tir", "alloc_tensor", "dps_call",
    "relax_call", "symbolic_dim", "const", "reshape", "split", "concat", "matmul",
    "permute_dims", "sum", "astype", "shape_of", "scope_local", "float32", "float16",
    "int32", "int8", "bool",
)

_WINDOW = 48
_BINARY_ANY = ("add", "subtract", "multiply", "maximum", "minimum")
_BINARY_FLOAT = ("divide",)
_UNARY_FLOAT = ("exp", "tanh", "sigmoid", "negative", "nn.relu", "sqrt")
_UNARY_INT = ("negative", "abs")
_COMPARE = ("less", "greater", "equal")


def count_bindings(mod: IRModule) -> int:
    """Bindings in all Relax functions of ``mod``, counting those inside If branches."""
    from ..ir.expr import If

    total = 0
    for func in mod.functions.values():
        if not isinstance(func, Function):
            continue
        stack = [func.body]
        while stack:
            seq = stack.pop()
            for block in seq.blocks:
                total += len(block.bindings)
                for b in block.bindings:
                    if isinstance(b.value, If):
                        stack.append(b.value.true_branch)
                        stack.append(b.value.false_branch)
    return total


class _Entry:
    __slots__ = ("var", "ty", "df")

    def __init__(self, var, ty, df):
        self.var = var
        self.ty = ty
        self.df = df


def _op(name):
    return get_op(f"relax.{name}")


def _static_shape(ty):
    """The shape as a tuple of ints when every dim is a literal, else None."""
    if not isinstance(ty, TensorType) or ty.shape is None:
        return None
    out = []
    for d in ty.shape:
        if type(d) is not IntImm:
            return None
        out.append(d.value)
    return tuple(out)


def _dim_key(d):
    if type(d) is IntImm:
        return d.value
    if type(d) is PrimVar:
        return d.name
    from ..ir.prim import canonical

    return canonical(d)


def _type_key(ty):
    """Hashable key equal for tensor types of the same dtype and (provably) same shape."""
    if not isinstance(ty, TensorType) or ty.shape is None:
        return None
    return (ty.dtype, tuple(_dim_key(d) for d in ty.shape))


def _numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


class _Gen:
    """One module under construction (see the module docstring)."""

    def __init__(self, seed: int, lowered: bool):
        self.rng = random.Random(seed)
        self.bb = BlockBuilder()
        self.lowered = lowered
        self.pool: list[_Entry] = []
        self.tuples: list[_Entry] = []
        self.in_dataflow = False
        self.impure_ok = False
        self.helpers: list[tuple[GlobalVar, list]] = []
        self.n_sym = 0
        self.cond = None
        self.sym = ()
        self.params_pool: list[_Entry] = []

    # ------------------------------------------------------------------ utilities
    def choice(self, seq):
        return seq[self.rng.randrange(len(seq))]

    def add(self, var, df=None):
        e = _Entry(var, var.ty, isinstance(var, DataflowVar) if df is None else df)
        if isinstance(var.ty, TensorType):
            if var.ty.shape is not None and var.ty.dtype:  # values of unknown shape are not reused
                self.pool.append(e)
        elif isinstance(var.ty, TupleType):
            self.tuples.append(e)
        return var

    def tensors(self, pred=None):
        """Candidate operands: the params and the most recent values (a bounded window, so
        generation stays linear in the number of bindings)."""
        window = self.pool[-_WINDOW:]
        if len(self.pool) > _WINDOW:
            window = self.params_pool + window
        return [e for e in window if pred is None or pred(e.ty)]

    def pick(self, pred=None):
        cands = self.tensors(pred)
        if not cands:
            return None
        # Prefer recent values: programs look like chains with some long-range uses.
        k = len(cands)
        i = k - 1 - min(int(self.rng.expovariate(0.3)), k - 1)
        return cands[i]

    def emit(self, value, hint=""):
        return self.add(self.bb.emit(value, hint))

    def prim_func(self, name, in_types, out_types):
        params = []
        for i, t in enumerate(in_types):
            params.append(PrimFuncParam(f"A{i}" if len(in_types) > 1 else "A", t.dtype, t.shape))
        for i, t in enumerate(out_types):
            params.append(PrimFuncParam(f"out{i}" if len(out_types) > 1 else "out", t.dtype, t.shape))
        return self.bb.add_func(PrimFunc(params, {"tirx.noalias": True}, None, private=True), name)

    def new_param_type(self, allow_sym=True):
        rng = self.rng
        dtype = self.choice(("float32", "float32", "float16", "int32", "int8"))
        rank = self.choice((1, 2, 2, 3))
        dims = [self.choice((1, 2, 3, 4, 8)) for _ in range(rank)]
        shape = [IntImm(d) for d in dims]
        if allow_sym and self.sym and rng.random() < 0.4:
            shape[0] = self.choice(self.sym)
        return TensorType(tuple(shape), dtype)

    # ------------------------------------------------------------------ steps (cost 1)
    def step_binary(self):
        a = self.pick()
        if a is None:
            return False
        t = a.ty
        floats = t.dtype in FLOAT_DTYPES
        if t.dtype == "bool":
            return False
        ops = _BINARY_ANY + (_BINARY_FLOAT if floats else ())
        same = [e for e in self.tensors(lambda u: _same_tensor_type(u, t))]
        r = self.rng.random()
        if r < 0.2:
            value = 1.5 if floats else 2
            b = Constant(np.array(value, dtype=t.dtype))
        else:
            b = self.choice(same).var
        self.emit(Call(_op(self.choice(ops)), [a.var, b]))
        return True

    def step_unary(self):
        a = self.pick(lambda u: u.dtype != "bool")
        if a is None:
            return False
        ops = _UNARY_FLOAT if a.ty.dtype in FLOAT_DTYPES else _UNARY_INT
        self.emit(Call(_op(self.choice(ops)), [a.var]))
        return True

    def step_compare(self):
        a = self.pick(lambda u: u.dtype != "bool")
        if a is None:
            return False
        b = self.choice(self.tensors(lambda u: _same_tensor_type(u, a.ty)))
        self.emit(Call(_op(self.choice(_COMPARE)), [a.var, b.var]))
        return True

    def step_astype(self):
        a = self.pick()
        if a is None:
            return False
        dtype = self.choice(tuple(d for d in FLOAT_DTYPES + INT_DTYPES if d != a.ty.dtype))
        self.emit(Call(_op("astype"), [a.var], {"dtype": dtype}))
        return True

    def step_reshape(self):
        a = self.pick(lambda u: u.shape is not None and u.ndim >= 1)
        if a is None:
            return False
        shape = a.ty.shape
        static = _static_shape(a.ty)
        if static is not None:
            n = _numel(static)
            if n % 2 == 0 and n > 2 and self.rng.random() < 0.5:
                new = [2, n // 2]
            else:
                new = [n]
        else:
            total = shape[0]
            for d in shape[1:]:
                total = total * d
            new = [total]
        self.emit(Call(_op("reshape"), [a.var, ShapeExpr(new)]))
        return True

    def step_permute(self):
        a = self.pick(lambda u: u.shape is not None and u.ndim >= 2)
        if a is None:
            return False
        axes = list(range(a.ty.ndim))
        self.rng.shuffle(axes)
        self.emit(Call(_op("permute_dims"), [a.var], {"axes": axes}))
        return True

    def step_matmul(self):
        def ok2(u):
            return u.dtype in FLOAT_DTYPES and _static_shape(u) is not None and u.ndim == 2
        cands = self.tensors(ok2)
        pairs = [(a, b) for a in cands[-12:] for b in cands[-12:]
                 if a.ty.dtype == b.ty.dtype and a.ty.shape[1].value == b.ty.shape[0].value]
        if not pairs:
            return False
        a, b = self.choice(pairs)
        self.emit(Call(_op("matmul"), [a.var, b.var], {"out_dtype": None}))
        return True

    def step_sum(self):
        a = self.pick(lambda u: u.shape is not None and u.ndim >= 2 and u.dtype != "bool")
        if a is None:
            return False
        axis = self.rng.randrange(a.ty.ndim)
        op = "mean" if a.ty.dtype in FLOAT_DTYPES and self.rng.random() < 0.5 else "sum"
        self.emit(Call(_op(op), [a.var], {"axis": [axis], "keepdims": self.rng.random() < 0.5}))
        return True

    def step_split(self):
        def ok(u):
            s = _static_shape(u)
            return s is not None and len(s) >= 1 and s[-1] % 2 == 0
        a = self.pick(ok)
        if a is None:
            return False
        axis = a.ty.ndim - 1
        self.emit(Call(_op("split"), [a.var], {"indices_or_sections": 2, "axis": axis}))
        return True

    def step_concat(self):
        a = self.pick(lambda u: _static_shape(u) is not None and u.ndim >= 1)
        if a is None:
            return False
        b = self.choice(self.tensors(lambda u: _same_tensor_type(u, a.ty)))
        self.emit(Call(_op("concat"), [Tuple([a.var, b.var])], {"axis": 0}))
        return True

    def step_tuple(self):
        if len(self.pool) < 2:
            return False
        a, b = self.pick(), self.pick()
        fields = [a.var, b.var]
        if self.tuples and self.rng.random() < 0.3:
            fields.append(self.choice(self.tuples[-_WINDOW:]).var)  # nested tuple
        self.emit(Tuple(fields))
        return True

    def step_get_item(self):
        if not self.tuples:
            return False
        t = self.choice(self.tuples[-_WINDOW:])
        i = self.rng.randrange(len(t.ty.fields))
        self.emit(TupleGetItem(t.var, i))
        return True

    def step_match_cast(self):
        a = self.pick(lambda u: u.shape is not None)
        if a is None:
            return False
        t = a.ty
        if self.rng.random() < 0.3 and _static_shape(t) is not None and t.ndim >= 1:
            # Forget the first dim into a new symbolic var: defined by this match_cast.
            name = f"k{self.n_sym}"
            self.n_sym += 1
            new = TensorType((PrimVar(name),) + tuple(t.shape[1:]), t.dtype)
        else:
            new = TensorType(t.shape, t.dtype)
        self.add(self.bb.match_cast(a.var, new))
        return True

    def step_shape_of(self):
        a = self.pick(lambda u: u.shape is not None)
        if a is None:
            return False
        self.bb.emit(Call(_op("shape_of"), [a.var]))
        return True

    def step_call_tir(self):
        a = self.pick(lambda u: _static_shape(u) is not None and u.dtype != "bool")
        if a is None:
            return False
        out = TensorType(a.ty.shape, a.ty.dtype)
        gv = self.prim_func(self.choice(("exp", "relu", "add_one", "scale")), [a.ty], [out])
        self.emit(Call(_op("call_tir"), [gv, Tuple([a.var])], ty_args=[out]))
        return True

    def step_relax_call(self):
        if not self.helpers:
            return False
        gv, param_types = self.choice(self.helpers)
        args = []
        for t in param_types:
            cands = self.tensors(lambda u, t=t: _same_tensor_type(u, t))
            if not cands:
                return False
            args.append(self.choice(cands).var)
        self.emit(Call(gv, args))
        return True

    # ------------------------------------------------------------------ impure steps
    def step_call_packed(self):
        a = self.pick()
        if a is None:
            return False
        self.emit(Call(ExternFunc("memcore.test.identity"), [a.var], ty_args=[a.ty]))
        return True

    def step_dps(self, budget):
        """alloc + direct PrimFunc call [+ rebinding]: 2 or 3 bindings."""
        a = self.pick(lambda u: _static_shape(u) is not None and u.dtype != "bool")
        if a is None or budget < 2:
            return 0
        out = TensorType(a.ty.shape, a.ty.dtype)
        gv = self.prim_func(self.choice(("exp", "relu", "log", "tanh")), [a.ty], [out])
        scope = "local" if self.rng.random() < 0.15 else "global"
        alloc = self.bb.emit(_alloc_tensor(out, scope), "alloc")
        from ..ir.infer import VOID

        self.bb.emit(Call(gv, [a.var, alloc], ty=VOID), "_")
        if budget >= 3 and self.rng.random() < 0.7:
            self.emit(alloc, self.choice(("y", "z", "w", "v")))
            return 3
        self.add(alloc)
        return 2

    # ------------------------------------------------------------------ If
    def step_if(self, budget):
        if self.cond is None or budget < 2:
            return 0
        a = self.pick(lambda u: u.dtype in FLOAT_DTYPES)
        if a is None:
            return 0
        k_then = self.rng.randint(1, min(3, budget - 1))
        k_else = self.rng.randint(0, min(2, budget - 1 - k_then))
        bb = self.bb
        with bb.if_then_else(self.cond, "r") as br:
            with br.then_branch():
                br.output(self._chain(a.var, k_then))
            with br.else_branch():
                br.output(self._chain(a.var, k_else))
        self.add(br.var)
        return 1 + k_then + k_else

    def _chain(self, x, k):
        for _ in range(k):
            op = self.choice(("add", "multiply", "exp", "negative"))
            args = [x, x] if op in ("add", "multiply") else [x]
            x = self.bb.emit(Call(_op(op), args))
        return x


_PURE_STEPS = (
    ("binary", 6), ("unary", 3), ("compare", 1), ("astype", 1), ("reshape", 2), ("permute", 1),
    ("sum", 1), ("matmul", 2), ("split", 1), ("concat", 1), ("tuple", 2), ("get_item", 2), ("match_cast", 1),
    ("shape_of", 1), ("call_tir", 2), ("relax_call", 1),
)


def _same_tensor_type(u, t):
    k = _type_key(u)
    return k is not None and k == _type_key(t)


def _alloc_tensor(t: TensorType, scope: str = "global") -> Call:
    return Call(
        get_op("relax.builtin.alloc_tensor"),
        [ShapeExpr(t.shape), DataTypeImm(t.dtype), PrimValue(IntImm(0)), StringImm(scope)],
        ty_args=(t,),
    )


def _weighted(rng, items):
    total = sum(w for _, w in items)
    r = rng.random() * total
    for name, w in items:
        r -= w
        if r < 0:
            return name
    return items[-1][0]


def _run_pure_step(g: _Gen) -> bool:
    for _ in range(8):
        name = _weighted(g.rng, _PURE_STEPS)
        if getattr(g, f"step_{name}")():
            return True
    if g.step_unary():  # always possible: params are never bool
        return True
    raise AssertionError("internal error: random_ir found no applicable step")


def _function(g: _Gen, name: str, budget: int, *, main: bool):
    """Emit one Relax function spending exactly ``budget`` bindings; returns its GlobalVar
    and param types."""
    rng = g.rng
    bb = g.bb
    g.pool, g.tuples = [], []
    g.sym = (PrimVar("n"), PrimVar("m")) if rng.random() < 0.6 else ()
    g.n_sym = 0
    params = []
    n_params = rng.randint(1, 3)
    for i in range(n_params):
        t = g.new_param_type(allow_sym=main)
        p = Var(("x", "y", "w")[i], t)
        params.append(p)
    # Symbolic vars used anywhere must be defined by the signature: drop unused ones.
    used = {d.name for p in params for d in p.ty.shape if isinstance(d, PrimVar)}
    g.sym = tuple(s for s in g.sym if s.name in used)
    if main:
        # A second tensor of each helper's param types, so calls to helpers always type-check.
        for _gv, ptypes in g.helpers:
            for t in ptypes:
                if not any(_same_tensor_type(p.ty, t) for p in params):
                    params.append(Var(f"h{len(params)}", t))
        g.cond = Var("cond", TensorType((), "bool"))
        params.append(g.cond)
    else:
        g.cond = None
    impure = main and rng.random() < 0.9
    g.impure_ok = impure
    attrs = {}
    pure = True
    if impure:
        if rng.random() < 0.5:
            pure = False
        else:
            attrs["relax.force_pure"] = True
    with bb.function(name, params, attrs=attrs, pure=pure) as frame:
        for p in params:
            if p is not g.cond:
                g.add(p, df=False)
        g.params_pool = list(g.pool)
        while budget > 0:
            r = rng.random()
            if budget >= 3 and r < 0.25:
                # A dataflow block of pure steps, closed with 1-2 outputs.
                n_out = 1 if budget < 5 or rng.random() < 0.6 else 2
                n_steps = rng.randint(1, min(12, budget - n_out))
                with bb.dataflow():
                    g.in_dataflow = True
                    start = len(g.pool)
                    for _ in range(n_steps):
                        _run_pure_step(g)
                    block_kept = g.pool[start:]
                    made = [e for e in block_kept if e.df] or g.tensors()
                    outs = []
                    for _ in range(n_out):
                        src = g.choice(made) if made else g.pick()
                        outs.append(bb.emit_output(src.var))
                    g.in_dataflow = False
                del g.pool[start:]  # DataflowVars die with their block; the outputs follow
                g.pool.extend(e for e in block_kept if not e.df)
                g.tuples = [e for e in g.tuples[-_WINDOW:] if not e.df]
                for o in outs:
                    g.add(o, df=False)
                budget -= n_steps + n_out
                continue
            if g.impure_ok and r < 0.35:
                used = g.step_dps(budget)
                if used:
                    budget -= used
                    continue
            if g.impure_ok and r < 0.42:
                if g.step_call_packed():
                    budget -= 1
                    continue
            if r < 0.5:
                used = g.step_if(budget)
                if used:
                    budget -= used
                    continue
            _run_pure_step(g)
            budget -= 1
        results = [e.var for e in g.pool[-_WINDOW:] if not e.df and not isinstance(e.var, DataflowVar)]
        out = results[-1]
        if len(results) > 1 and rng.random() < 0.3:
            out = (results[-1], results[max(0, len(results) - 3)])
        bb.emit_func_output(out)
    return frame.gv, [p.ty for p in params if p is not g.cond]


def random_module(seed: int, n_bindings: int = 100) -> IRModule:
    """A random well-formed module with exactly ``n_bindings`` bindings.

    Parameters
    ----------
    seed : int
        Same seed (and size), same module.
    n_bindings : int, default 100
        Total bindings over all Relax functions (If branches included); ``>= 1``.

    Returns
    -------
    IRModule
        ``main`` (the bulk; params ``x``, ``y``, ..., ``cond``), up to two helper Relax
        functions it calls, and the signature-only PrimFuncs they use.

    Raises
    ------
    IRError
        ``n_bindings < 1`` or not an int.
    """
    _check_size(n_bindings)
    with gc_paused():
        return _random_module(seed, n_bindings)


def _random_module(seed, n_bindings):
    g = _Gen(seed, lowered=False)
    rng = g.rng
    n_helpers = 0 if n_bindings < 12 else rng.randint(1, 2)
    spent = 0
    for h in range(n_helpers):
        hb = rng.randint(2, max(2, min(40, n_bindings // 6)))
        gv, ptypes = _function(g, f"helper{h}" if h else "helper", hb, main=False)
        g.helpers.append((gv, ptypes))
        spent += hb
    _function(g, "main", n_bindings - spent, main=True)
    return g.bb.get()


def _check_size(n_bindings):
    if isinstance(n_bindings, bool) or not isinstance(n_bindings, int) or n_bindings < 1:
        raise IRError(f"n_bindings must be an int >= 1; got {n_bindings!r}")


# ---------------------------------------------------------------------------- lowered form
def random_lowered_module(seed: int, n_bindings: int = 100) -> IRModule:
    """A random module in the form StaticPlanBlockMemory receives (after LegalizeOps,
    ToNonDataflow, RemovePurityChecking and CallTIRRewrite), with exactly ``n_bindings``
    bindings in its one function ``main``.

    Contents: one plain binding block; ``R.builtin.alloc_tensor`` (float32/float16/int32/
    int8/bool, scopes "global"/"local", static shapes and shapes over the signature's ``n``
    with a ``tir_var_upper_bound``) followed by direct DPS calls to signature-only PrimFuncs
    (one or two outputs) or ``R.call_packed`` kernels, ``y = alloc`` rebindings, view ops
    (``R.reshape``, ``R.call_packed("vm.builtin.reshape", ...)``), tuples and get-items, and
    a tensor or tuple result. The function has ``relax.force_pure``, as after
    RemovePurityChecking.
    """
    _check_size(n_bindings)
    with gc_paused():
        return _random_lowered_module(seed, n_bindings)


def _random_lowered_module(seed, n_bindings):
    rng = random.Random(seed)
    bb = BlockBuilder()
    from ..ir.infer import VOID

    symbolic = rng.random() < 0.4
    n = PrimVar("n")
    dtype0 = rng.choice(("float32", "float32", "float16", "int32"))
    width = rng.choice((4, 8, 16))
    shape0 = (n, IntImm(width)) if symbolic else (IntImm(rng.choice((2, 4, 8))), IntImm(width))
    x = Var("x", TensorType(shape0, dtype0))
    attrs = {"relax.force_pure": True}
    if symbolic:
        attrs["tir_var_upper_bound"] = {"n": rng.choice((16, 128, 1024))}
    pool: list = [x]
    tuples: list = []
    names = ("lv", "y", "z", "a", "b", "c")

    def pick(pred=lambda t: True):
        window = pool[-_WINDOW:] if len(pool) <= _WINDOW else [x] + pool[-_WINDOW:]
        cands = [v for v in window if pred(v.ty)]
        if not cands:
            return None
        k = len(cands)
        return cands[k - 1 - min(int(rng.expovariate(0.4)), k - 1)]

    def static(t):
        return _static_shape(t) is not None

    with bb.function("main", [x], attrs=attrs):
        budget = n_bindings
        while budget > 0:
            r = rng.random()
            if budget >= 2 and r < 0.55:
                a = pick()
                t = a.ty
                dtype = rng.choice((t.dtype, t.dtype, "float32", "int8", "bool")) if r < 0.1 else t.dtype
                two = budget >= 4 and static(t) and t.shape[-1].value % 2 == 0 and rng.random() < 0.15
                scope = "local" if rng.random() < 0.1 else "global"
                if two:
                    half = TensorType(t.shape[:-1] + (IntImm(t.shape[-1].value // 2),), t.dtype)
                    o1 = bb.emit(_alloc_tensor(half, scope), "alloc")
                    o2 = bb.emit(_alloc_tensor(half, scope), "alloc")
                    gv = _lowered_prim(bb, "split", [t], [half, half])
                    bb.emit(Call(gv, [a, o1, o2], ty=VOID), "_")
                    tup = bb.emit(Tuple([o1, o2]), "t")
                    tuples.append(tup)
                    pool.extend([o1, o2])
                    budget -= 4
                    continue
                out = TensorType(t.shape, dtype)
                o = bb.emit(_alloc_tensor(out, scope), "alloc")
                if static(t) and rng.random() < 0.8:
                    b = pick(lambda u, t=t: u.dtype == t.dtype and static(u) and _same_tensor_type(u, t))
                    ins = [a] if b is None or rng.random() < 0.5 else [a, b]
                    gv = _lowered_prim(bb, rng.choice(("exp", "add", "multiply", "relu")) if len(ins) == 1
                                       else rng.choice(("add", "multiply", "subtract")), [v.ty for v in ins], [out])
                    bb.emit(Call(gv, ins + [o], ty=VOID), "_")
                else:
                    bb.emit(Call(ExternFunc("memcore.test.kernel"), [a, o], ty_args=[ObjectType()]), "_")
                budget -= 2
                if budget >= 1 and rng.random() < 0.6:
                    pool.append(bb.emit(o, rng.choice(names[1:])))
                    budget -= 1
                else:
                    pool.append(o)
                continue
            if r < 0.65:
                a = pick(static)
                if a is not None:
                    n_el = _numel(_static_shape(a.ty))
                    if rng.random() < 0.5:
                        pool.append(bb.emit(Call(get_op("relax.reshape"), [a, ShapeExpr([n_el])]), "lv"))
                    else:
                        new = TensorType((IntImm(n_el),), a.ty.dtype)
                        pool.append(bb.emit(Call(ExternFunc("vm.builtin.reshape"), [a, ShapeExpr([n_el])],
                                                 ty_args=[new]), "lv"))
                    budget -= 1
                    continue
            if r < 0.75 and len(pool) >= 2:
                tuples.append(bb.emit(Tuple([pick(), pick()]), "t"))
                budget -= 1
                continue
            if r < 0.85 and tuples:
                t = rng.choice(tuples[-_WINDOW:])
                pool.append(bb.emit(TupleGetItem(t, rng.randrange(len(t.ty.fields))), "lv"))
                budget -= 1
                continue
            a = pick()
            pool.append(bb.emit(Call(ExternFunc("memcore.test.identity"), [a], ty_args=[a.ty]), "lv"))
            budget -= 1
        results = [v for v in pool[-_WINDOW:] if v is not x] or [x]
        out = results[-1]
        if len(results) > 2 and rng.random() < 0.4:
            out = (results[-1], results[-3])
        bb.emit_func_output(out)
    return bb.get()


def _lowered_prim(bb, name, in_types, out_types):
    params = [PrimFuncParam(f"A{i}", t.dtype, t.shape) for i, t in enumerate(in_types)]
    params += [PrimFuncParam(f"out{i}", t.dtype, t.shape) for i, t in enumerate(out_types)]
    return bb.add_func(PrimFunc(params, {"tirx.noalias": True}, None, private=True), name)


# ---------------------------------------------------------------------------- coverage
def module_features(mod: IRModule) -> set:
    """Which of :data:`FEATURES` occur in ``mod`` (for coverage tests)."""
    from ..ir.expr import DataflowBlock
    from ..ir.functor import ExprVisitor

    found = set()
    prim_gvs = {gv.name for gv, f in mod.functions.items() if isinstance(f, PrimFunc)}
    relax_gvs = {gv.name for gv, f in mod.functions.items() if isinstance(f, Function)}

    def note_type(t):
        if isinstance(t, TensorType):
            if t.dtype in FEATURES:
                found.add(t.dtype)
            if t.shape is not None and any(not isinstance(d, IntImm) for d in t.shape):
                found.add("symbolic_dim")
        elif isinstance(t, TupleType):
            for f in t.fields:
                note_type(f)

    class V(ExprVisitor):
        def visit_block(self, block):
            found.add("dataflow_block" if isinstance(block, DataflowBlock) else "binding_block")
            super().visit_block(block)

        def visit_match_cast_(self, b):
            found.add("match_cast")
            if b.ty.shape is not None and any(isinstance(d, PrimVar) and d.name.startswith("k") for d in b.ty.shape):
                found.add("match_cast_new_sym")
            super().visit_match_cast_(b)

        def visit_var_def(self, var):
            note_type(var.ty)

        def visit_if_(self, e):
            found.add("if")
            super().visit_if_(e)

        def visit_tuple_(self, t):
            found.add("tuple")
            if any(isinstance(f.ty, TupleType) for f in t.fields):
                found.add("nested_tuple")
            super().visit_tuple_(t)

        def visit_tuple_getitem_(self, e):
            found.add("get_item")
            super().visit_tuple_getitem_(e)

        def visit_constant_(self, c):
            found.add("const")

        def visit_call_(self, c):
            op = c.op
            if isinstance(op, ExternFunc):
                found.add("call_packed")
            elif isinstance(op, GlobalVar):
                if op.name in prim_gvs:
                    found.add("dps_call")
                elif op.name in relax_gvs:
                    found.add("relax_call")
            else:
                short = op.name[len("relax."):]
                table = {"call_tir": "call_tir", "builtin.alloc_tensor": "alloc_tensor", "reshape": "reshape",
                         "split": "split", "concat": "concat", "matmul": "matmul", "permute_dims": "permute_dims",
                         "sum": "sum", "mean": "sum", "astype": "astype", "shape_of": "shape_of"}
                if short in table:
                    found.add(table[short])
                if short == "builtin.alloc_tensor" and isinstance(c.args[3], StringImm) and c.args[3].value == "local":
                    found.add("scope_local")
            super().visit_call_(c)

    V().visit_module(mod)
    return found
