"""Random post-CallTIRRewrite modules for testing memory planning against Apache TVM.

Design
------
:func:`random_memory_module` builds, from a seed, a module in the form
StaticPlanBlockMemory receives: ``R.builtin.alloc_tensor`` bindings followed by direct DPS
calls (to signature-only PrimFuncs with ``T.handle`` parameters, ``R.call_packed`` kernels,
``R.vm.call_tir_dyn``), and everything that moves storage tokens around or makes them
escape (spec §1.3):

- rebindings ``y = a``, tuples, nested tuples, get-items, ``R.match_cast``;
- in-place memory ops: ``R.reshape``, ``R.memory.view``, ``R.memory.ensure_zero_offset`` and
  the ``vm.builtin.reshape`` packed call;
- discarding uses: Relax ops (``R.add``, ``R.shape_of``), calls of a Relax function, ``If``
  conditions and branch results, uses in another block (later blocks, If branches), returned
  values (a tensor, a tuple, a nested tuple);
- allocations that are never used; several dtypes (float32/float16/int32/int8/uint8/bool),
  storage scopes (``global``/``local``) and device indices (0/1); static shapes and shapes
  over signature vars ``n``/``m`` with and without ``tir_var_upper_bound`` /
  ``tir_var_lower_bound`` / ``tir_non_negative_var``; the
  ``relax.memory_plan_dynamic_func_output`` attribute; dataflow and plain blocks; several
  functions per module.

Every function is ``@R.function(pure=False)`` (TVM accepts impure calls in its dataflow blocks
then). Types are written exactly as TVM infers them, so TVM's parser keeps every binding as
generated. Determinism: the same arguments always give a structurally equal module with the
same names.
"""
from __future__ import annotations

import random

from ..ir.builder import NameTable
from ..ir.expr import (
    BindingBlock,
    Call,
    DataflowBlock,
    DataflowVar,
    DataTypeImm,
    ExternFunc,
    Function,
    GlobalVar,
    If,
    MatchCast,
    PrimFunc,
    PrimFuncParam,
    PrimValue,
    SeqExpr,
    ShapeExpr,
    StringImm,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
)
from ..ir.module import IRModule
from ..ir.op import get_op
from ..ir.prim import Add, IntImm, Mul, PrimVar
from ..ir.types import VOID, ShapeType, TensorType, TupleType

__all__ = ["random_memory_module", "chain_module", "DTYPES"]

DTYPES = ("float32", "float32", "float32", "float16", "int32", "int8", "uint8", "bool")
_STATIC_SHAPES = ((2, 4), (4, 2), (8,), (4, 4), (16,), (2, 3), (3, 5), (64,), (1,), (2, 2, 2), (128,), (6,))
_ALLOC = get_op("relax.builtin.alloc_tensor")


def _c(v):
    return IntImm(v)


class _Fn:
    """State for building one function."""

    def __init__(self, gen, name):
        self.gen = gen
        self.rng = gen.rng
        self.name = name
        self.blocks: list = []
        self.bindings: list = []
        self.in_dataflow = False
        # visible values: list of Var (tensor or tuple typed); dataflow-local ones are dropped
        # when the block ends
        self.pool: list = []
        self.block_local: list = []


class _Gen:
    def __init__(self, seed, n_functions, n_steps, options):
        self.rng = random.Random(seed)
        self.n_functions = n_functions
        self.n_steps = n_steps
        self.opt = options
        self.names = NameTable()
        self.funcs: dict = {}
        self.kernels: dict = {}
        self.helper = None

    # ------------------------------------------------------------------ module pieces
    def kernel(self, arity):
        gv = self.kernels.get(arity)
        if gv is None:
            params = [PrimFuncParam(f"A{i}", "handle", None) for i in range(arity)]
            gv = GlobalVar(f"kernel{arity}")
            self.kernels[arity] = gv
            self.funcs[gv] = PrimFunc(params, None, None, private=True)
        return gv

    def helper_func(self):
        if self.helper is None:
            ty = TensorType(None, "float32", 2)
            p = Var("h", ty)
            gv = GlobalVar("helper")
            self.funcs[gv] = Function([p], SeqExpr([], p), ty, {"global_symbol": "helper"}, is_pure=False)
            self.helper = gv
        return self.helper

    # ------------------------------------------------------------------ types
    def shape_pool(self, rng, sym):
        shapes = [tuple(_c(d) for d in s) for s in rng.sample(_STATIC_SHAPES, 4)]
        if sym:
            n = sym[0]
            shapes.append((n, _c(4)))
            shapes.append((_c(2), n))
            if rng.random() < 0.5:
                shapes.append((Mul(n, _c(2)),))
            if rng.random() < 0.3:
                shapes.append((Add(n, _c(1)), _c(2)))
            if len(sym) > 1:
                m = sym[1]
                shapes.append((n, m))
                if rng.random() < 0.5:
                    shapes.append((m, n))
                if rng.random() < 0.4:
                    shapes.append((n, m, _c(2)))
        return shapes

    # ------------------------------------------------------------------ build
    def build(self):
        for i in range(self.n_functions):
            self.function(f"func{i}" if i else "main")
        return IRModule(self.funcs)

    def function(self, name):
        rng = self.rng
        sym = []
        attrs = {}
        if rng.random() < self.opt.get("p_symbolic", 0.4):
            sym.append(PrimVar("n"))
            if rng.random() < 0.4:
                sym.append(PrimVar("m"))
            r = rng.random()
            if r < 0.35:
                attrs["tir_var_upper_bound"] = {"n": rng.choice((4, 16, 128))}
                if rng.random() < 0.3:
                    attrs["tir_var_lower_bound"] = {"n": rng.choice((0, 1, 2))}
            elif r < 0.5:
                attrs["tir_var_lower_bound"] = {"n": rng.choice((0, 1))}
            elif r < 0.6:
                attrs["tir_non_negative_var"] = [v.name for v in sym]
            if rng.random() < 0.2:
                attrs["relax.memory_plan_dynamic_func_output"] = True
        shapes = self.shape_pool(rng, sym)
        dtypes = rng.sample(DTYPES, 3)
        self.types = [TensorType(s, rng.choice(dtypes)) for s in shapes]
        fn = _Fn(self, name)
        self.fn = fn
        params = []
        x_shape = (sym[0], _c(4)) if sym else shapes[0]
        if len(sym) > 1:
            x_shape = (sym[0], sym[1])
        x = Var("x", TensorType(x_shape, "float32"))
        params.append(x)
        fn.pool.append(x)
        use_if = rng.random() < self.opt.get("p_if", 0.3)
        cond = None
        if use_if:
            cond = Var("cond", TensorType((), "bool"))
            params.append(cond)
        self.cond = cond
        n_blocks = rng.choice((1, 1, 2, 3))
        steps = self.n_steps
        # Block kinds alternate: TVM's normalizer merges adjacent blocks of the same kind.
        dataflow = rng.random() < self.opt.get("p_dataflow", 0.3)
        for _ in range(n_blocks):
            self.block(fn, dataflow, max(2, steps // n_blocks))
            dataflow = not dataflow
        body = self.result(fn)
        ret_ty = body.ty
        seq = SeqExpr(fn.blocks, body)
        gv = GlobalVar(name)
        attrs["global_symbol"] = name
        self.funcs[gv] = Function(params, seq, ret_ty, attrs, is_pure=False)

    def result(self, fn):
        rng = self.rng
        cands = [v for v in fn.pool]
        r = rng.random()
        if r < 0.3 or len(cands) < 2:
            return cands[-1]
        picks = [cands[-1 - rng.randrange(min(len(cands), 4))] for _ in range(rng.choice((2, 3)))]
        if rng.random() < 0.3 and len(picks) >= 2:
            return Tuple([Tuple(picks[:2]), picks[-1]])
        return Tuple(picks)

    # ------------------------------------------------------------------ blocks and steps
    def new_var(self, fn, hint, ty, output=False):
        name = self.names.fresh(hint)
        cls = DataflowVar if fn.in_dataflow and not output else Var
        return cls(name, ty)

    def emit(self, fn, value, hint, ty=None, output=False, match_ty=None):
        if ty is None:
            ty = value.ty
        var = self.new_var(fn, hint, ty, output)
        if match_ty is not None:
            fn.bindings.append(MatchCast(var, value, match_ty))
        else:
            fn.bindings.append(VarBinding(var, value))
        if isinstance(var, DataflowVar):
            fn.block_local.append(var)
        return var

    def block(self, fn, dataflow, n_steps):
        fn.bindings = []
        fn.in_dataflow = dataflow
        fn.block_local = []
        start_pool = len(fn.pool)
        for _ in range(n_steps):
            self.step(fn)
        if dataflow:
            # re-export a few block values through output vars
            local = fn.pool[start_pool:]
            for v in local[-2:]:
                if isinstance(v, DataflowVar):
                    out = self.emit(fn, v, "gv", output=True)
                    fn.pool.append(out)
            fn.pool = [v for v in fn.pool if not isinstance(v, DataflowVar)]
        if fn.bindings:
            cls = DataflowBlock if dataflow else BindingBlock
            if fn.blocks and type(fn.blocks[-1]) is cls:
                # an empty block in between: merge, as TVM's normalizer would
                fn.blocks[-1] = cls(fn.blocks[-1].bindings + tuple(fn.bindings))
            else:
                fn.blocks.append(cls(fn.bindings))
        fn.bindings = []
        fn.in_dataflow = False

    def pick(self, fn, pred=None):
        cands = [v for v in fn.pool if pred is None or pred(v)]
        if not cands:
            return None
        k = len(cands)
        return cands[k - 1 - min(int(self.rng.expovariate(0.5)), k - 1)]

    def alloc(self, fn, ty=None, hint="alloc"):
        rng = self.rng
        if ty is None:
            ty = rng.choice(self.types)
        scope = "local" if rng.random() < self.opt.get("p_local", 0.1) else "global"
        dev = 1 if rng.random() < self.opt.get("p_device", 0.05) else 0
        call = Call(_ALLOC, [ShapeExpr(ty.shape), DataTypeImm(ty.dtype), PrimValue(_c(dev)), StringImm(scope)],
                    ty_args=(ty,), ty=ty)
        return self.emit(fn, call, hint, ty)

    def step(self, fn):
        rng = self.rng
        r = rng.random()
        tensors = lambda v: isinstance(v.ty, TensorType)  # noqa: E731
        if r < 0.40:
            # DPS call with 1 or 2 outputs
            n_in = rng.choice((1, 1, 2, 3))
            ins = [self.pick(fn) for _ in range(n_in)]
            outs = [self.alloc(fn)]
            if rng.random() < 0.15:
                outs.append(self.alloc(fn))
            self.call(fn, ins + outs)
            for o in outs:
                if rng.random() < 0.3:
                    fn.pool.append(self.emit(fn, o, "y"))
                else:
                    fn.pool.append(o)
            if len(outs) == 2 and rng.random() < 0.5:
                fn.pool.append(self.emit(fn, Tuple(outs), "t"))
        elif r < 0.46:
            self.alloc(fn, hint="unused")
        elif r < 0.53:
            a, b = self.pick(fn), self.pick(fn)
            if a is b and rng.random() < 0.8:
                b = self.pick(fn, lambda v: v is not a) or b
            t = self.emit(fn, Tuple([a, b]), "t")
            if rng.random() < 0.4:
                c = self.pick(fn)
                t = self.emit(fn, Tuple([t, c]), "nt")
            fn.pool.append(t)
        elif r < 0.60:
            t = self.pick(fn, lambda v: isinstance(v.ty, TupleType) and v.ty.fields)
            if t is not None:
                i = rng.randrange(len(t.ty.fields))
                fn.pool.append(self.emit(fn, TupleGetItem(t, i), "g"))
        elif r < 0.68:
            a = self.pick(fn, lambda v: tensors(v) and all(type(d) is IntImm for d in v.ty.shape))
            if a is not None:
                numel = 1
                for d in a.ty.shape:
                    numel *= d.value
                new_ty = TensorType((_c(numel),), a.ty.dtype)
                kind = rng.random()
                if kind < 0.35:
                    v = Call(get_op("relax.reshape"), [a, ShapeExpr([_c(numel)])], ty=new_ty)
                elif kind < 0.6 and not fn.in_dataflow:
                    v = Call(
                        ExternFunc("vm.builtin.reshape"), [a, ShapeExpr([_c(numel)])], ty_args=(new_ty,), ty=new_ty
                    )
                elif kind < 0.85:
                    v = Call(get_op("relax.memory.view"), [a, ShapeExpr([_c(numel)]), DataTypeImm(a.ty.dtype),
                                                           PrimValue(_c(0))], ty=new_ty)
                else:
                    v = Call(get_op("relax.memory.ensure_zero_offset"), [a], ty=a.ty)
                    new_ty = a.ty
                fn.pool.append(self.emit(fn, v, "lv", new_ty))
        elif r < 0.73:
            a = self.pick(fn, tensors)
            if a is not None:
                fn.pool.append(self.emit(fn, a, "m", match_ty=a.ty))
        elif r < 0.78:
            a = self.pick(fn, tensors)
            if a is not None:
                self.discard_use(fn, a)
        elif r < 0.86 and not fn.in_dataflow and self.cond is not None:
            self.if_(fn)
        elif r < 0.92:
            a = self.pick(fn)
            fn.pool.append(self.emit(fn, a, "y"))
        else:
            # packed call on existing values only
            ins = [self.pick(fn) for _ in range(rng.choice((1, 2)))]
            self.call(fn, ins, packed=True)

    def call(self, fn, args, packed=None):
        rng = self.rng
        r = rng.random()
        if fn.in_dataflow:
            # TVM rejects impure calls (packed, call_tir_dyn) inside dataflow blocks
            packed, r = False, 1.0
        if packed or (packed is None and r < 0.2):
            if rng.random() < 0.3 and len(args) >= 2:
                args = [Tuple(args[:2])] + args[2:]
            v = Call(ExternFunc("memcore.kernel"), args, ty_args=(VOID,), ty=VOID)
        elif packed is None and r < 0.3 and not any(isinstance(a.ty, TupleType) for a in args):
            dims = [d for a in args if isinstance(a.ty, TensorType) for d in a.ty.shape if type(d) is PrimVar][:1]
            inner = list(args) + ([ShapeExpr(dims)] if dims else [])
            v = Call(get_op("relax.vm.call_tir_dyn"), [self.kernel(len(args)), Tuple(inner)], ty=VOID)
        else:
            v = Call(self.kernel(len(args)), args, ty=VOID)
        self.emit(fn, v, "_", VOID)

    def discard_use(self, fn, a):
        rng = self.rng
        ty = a.ty
        r = rng.random()
        if r < 0.4 and ty.dtype in ("float32", "float16", "int32"):
            self.emit(fn, Call(get_op("relax.add"), [a, a], ty=ty), "s", ty)
        elif r < 0.7 and ty.dtype == "float32" and len(ty.shape) == 2 and not fn.in_dataflow:
            helper = self.helper_func()
            out_ty = TensorType(None, "float32", 2)
            self.emit(fn, Call(helper, [a], ty=out_ty), "h", out_ty)
        else:
            self.emit(fn, Call(get_op("relax.shape_of"), [a], ty=ShapeType(ty.shape)), "s", ShapeType(ty.shape))

    def if_(self, fn):
        rng = self.rng
        cond = self.cond
        if rng.random() < 0.3:
            # a planned-looking bool scalar used as the condition: discarded
            ct = TensorType((), "bool")
            c = self.alloc(fn, ct, "c")
            self.call(fn, [self.pick(fn), c])
            cond = c
        outer_pool = list(fn.pool)
        saved_bindings = fn.bindings
        res_ty = None
        branches = []
        result_outer = self.pick(fn, lambda v: isinstance(v.ty, TensorType))
        for _ in range(2):
            fn.bindings = []
            fn.pool = list(outer_pool)
            for _ in range(rng.choice((1, 2, 3))):
                self.step_branch(fn)
            res = result_outer
            if rng.random() < 0.4:
                res = self.alloc(fn, result_outer.ty, "r")
                self.call(fn, [self.pick(fn), res])
            blocks = [BindingBlock(fn.bindings)] if fn.bindings else []
            branches.append(SeqExpr(blocks, res))
            res_ty = result_outer.ty
        fn.bindings = saved_bindings
        fn.pool = outer_pool
        v = self.emit(fn, If(cond, branches[0], branches[1], res_ty), "r", res_ty)
        fn.pool.append(v)

    def step_branch(self, fn):
        rng = self.rng
        ins = [self.pick(fn) for _ in range(rng.choice((1, 2)))]
        o = self.alloc(fn)
        self.call(fn, ins + [o])
        fn.pool.append(o)


def random_memory_module(seed: int, n_functions: int = 3, n_steps: int = 12, **options) -> IRModule:
    """A random post-CallTIRRewrite module (see the module docstring).

    Parameters
    ----------
    seed : int
    n_functions : int
        Relax functions (``main``, ``func1``, ...), plus shared PrimFunc kernels and maybe a
        ``helper`` Relax function.
    n_steps : int
        Program steps per function (each 1-6 bindings).
    **options
        Probabilities ``p_symbolic`` (0.4), ``p_if`` (0.3), ``p_dataflow`` (0.3),
        ``p_local`` (0.1), ``p_device`` (0.05).
    """
    return _Gen(seed, n_functions, n_steps, options).build()


def chain_module(n_ops: int, width: int = 1024, dtype: str = "float32") -> IRModule:
    """``main`` with ``n_ops`` element-wise ops after CallTIRRewrite: per op
    ``alloc = R.builtin.alloc_tensor(...)``, ``kernel(prev, alloc)``, ``y = alloc``
    (3 bindings per op); the last result is returned. Shapes cycle over a few widths so that
    storage reuse has something to choose."""
    names = NameTable()
    k2 = GlobalVar("kernel2")
    k3 = GlobalVar("kernel3")
    funcs = {
        k2: PrimFunc([PrimFuncParam("A0", "handle", None), PrimFuncParam("A1", "handle", None)], None, None, True),
        k3: PrimFunc([PrimFuncParam(f"A{i}", "handle", None) for i in range(3)], None, None, True),
    }
    x_ty = TensorType((_c(width),), dtype)
    x = Var("x", x_ty)
    bindings = []
    widths = (width, width // 2, width, width * 2)
    types = [TensorType((_c(w),), dtype) for w in widths]
    prev, prev2 = x, x
    zero = PrimValue(_c(0))
    scope = StringImm("global")
    dt = DataTypeImm(dtype)
    for i in range(n_ops):
        ty = types[i % len(types)]
        a = Var(names.fresh("alloc"), ty)
        bindings.append(VarBinding(a, Call(_ALLOC, [ShapeExpr(ty.shape), dt, zero, scope], ty_args=(ty,), ty=ty)))
        if i % 3 == 2:
            call = Call(k3, [prev, prev2, a], ty=VOID)
        else:
            call = Call(k2, [prev, a], ty=VOID)
        bindings.append(VarBinding(Var(names.fresh("_"), VOID), call))
        y = Var(names.fresh("y"), ty)
        bindings.append(VarBinding(y, a))
        prev2, prev = prev, y
    gv = GlobalVar("main")
    funcs[gv] = Function([x], SeqExpr([BindingBlock(bindings)], prev), prev.ty,
                         {"global_symbol": "main", "relax.force_pure": True})
    return IRModule(funcs)
