"""Programs for testing and benchmarking the lowering passes (CallTIRRewrite,
ToNonDataflow, RemovePurityChecking, LowerAllocTensor, KillAfterLastUse).

- :func:`elementwise_chain` — a post-StaticPlanBlockMemory function of ``n_ops``
  element-wise DPS calls, built directly with the builder in exactly the form TVM's
  pipeline produces (``storage`` / ``alloc`` / ``_ = f(...)`` / ``y = alloc``, two storages
  used alternately, the output left as ``R.builtin.alloc_tensor``): 3 bindings per op plus
  two storages. The KillAfterLastUse benchmark workload.
- :func:`random_highlevel_module` — seeded dataflow programs of high-level Relax ops
  (element-wise, split/concat tuples, reshape, permute, sum, packed calls, constants) for the
  LegalizeOps -> ToNonDataflow -> RemovePurityChecking -> CallTIRRewrite oracle.
- :func:`random_kill_module` — seeded post-planning functions mixing everything
  KillAfterLastUse distinguishes: storages, planned and unplanned tensors, trivial
  re-bindings, match_casts, tuples and get-items, packed calls returning objects and
  tuples, constants, shapes, prim values, null values, existing kills, If/else.
- :func:`batch_modules` — several random modules as one (functions renamed).
- :func:`module_from_text`, :func:`assert_pass_output` — pass tests on inline TVMScript.

All generators are deterministic per seed (names included) and return
:class:`~memcore_py.ir.IRModule` objects whose printed text TVM 0.27 parses.
"""
from __future__ import annotations

import random

import numpy as np

from ..ir.builder import BlockBuilder
from ..ir.expr import (
    Call,
    Constant,
    Function,
    DataTypeImm,
    ExternFunc,
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
from ..ir.types import ObjectType, TensorType, TupleType, dtype_bytes

__all__ = [
    "elementwise_chain",
    "random_highlevel_module",
    "random_kill_module",
    "batch_modules",
    "module_from_text",
    "assert_pass_output",
]

#: Import comments TVM prints before a module; prepended by :func:`module_from_text`.
TVMSCRIPT_HEADER = (
    "# from tvm.script import ir as I\n# from tvm.script import relax as R\n# from tvm.script import tirx as T\n\n"
)


def module_from_text(text: str) -> IRModule:
    """Parse a TVMScript module written inline in a test (dedented; TVM's import comment
    header added when missing)."""
    import textwrap

    from .. import parse

    text = textwrap.dedent(text).strip("\n") + "\n"
    if not text.lstrip().startswith("#"):
        text = TVMSCRIPT_HEADER + text
    return parse(text)


def assert_pass_output(pass_, before, expected) -> IRModule:
    """Run ``pass_`` on ``before`` and assert the result is structurally equal to
    ``expected`` (both TVMScript text or IRModules); returns the result."""
    from ..ir.structural import assert_structural_equal

    if isinstance(before, str):
        before = module_from_text(before)
    if isinstance(expected, str):
        expected = module_from_text(expected)
    after = pass_(before)
    assert_structural_equal(after, expected)
    return after


def _op(name):
    return get_op(name)


def _i(v):
    return PrimValue(IntImm(v))


def _prim_func(name, n_in, n_out, ty: TensorType):
    params = [PrimFuncParam(f"p{i}", ty.dtype, ty.shape) for i in range(n_in + n_out)]
    return PrimFunc(params, attrs={"tirx.noalias": True}, text=None, private=True)


def _alloc_storage(nbytes, dtype, scope="global"):
    return Call(_op("relax.memory.alloc_storage"), [ShapeExpr([nbytes]), _i(0), StringImm(scope), DataTypeImm(dtype)])


def _mem_alloc_tensor(storage, ty: TensorType):
    return Call(_op("relax.memory.alloc_tensor"),
                [storage, _i(0), ShapeExpr(ty.shape), DataTypeImm(ty.dtype), _i(0)])


def _builtin_alloc_tensor(ty: TensorType, scope="global"):
    return Call(_op("relax.builtin.alloc_tensor"),
                [ShapeExpr(ty.shape), DataTypeImm(ty.dtype), _i(0), StringImm(scope)], ty_args=(ty,))


def elementwise_chain(n_ops: int, shape=(2, 3), dtype: str = "float32") -> IRModule:
    """``y_i = f(y_{i-1}, y_{i-2})`` for ``i < n_ops`` after CallTIRRewrite and
    StaticPlanBlockMemory, as one function ``main(x)`` (see the module docstring).

    Each op reads the two previous results (the first ones read ``x``), so three tensors
    are live at once and the planned form cycles through three storages; the last op's
    output is returned and stays an unplanned ``R.builtin.alloc_tensor``. The function has
    ``relax.force_pure`` (as after RemovePurityChecking). Bindings: ``3 * n_ops + 3``
    (``3 * n_ops + min(n_ops - 1, 3)`` exactly).
    """
    if n_ops < 1:
        raise ValueError(f"n_ops must be >= 1; got {n_ops}")
    ty = TensorType(shape, dtype)
    nbytes = dtype_bytes(dtype)
    for d in shape:
        nbytes *= d
    bb = BlockBuilder()
    add = bb.add_func(_prim_func("add", 2, 1, ty), "add")
    x = Var("x", ty)
    with bb.function("main", [x], attrs={"relax.force_pure": True}):
        storages = []
        prev2, prev1 = x, x
        for i in range(n_ops):
            if i == n_ops - 1:
                alloc = bb.emit(_builtin_alloc_tensor(ty), "alloc")
            else:
                k = i % 3
                if len(storages) <= k:
                    storages.append(bb.emit(_alloc_storage(nbytes, dtype), "storage"))
                alloc = bb.emit(_mem_alloc_tensor(storages[k], ty), "alloc")
            bb.emit(Call(add, [prev1, prev2, alloc]), "_")
            y = bb.emit(alloc, "y")
            prev2, prev1 = prev1, y
        bb.emit_func_output(prev1)
    return bb.get()


# ------------------------------------------------------------------------ high level
_UNARY = ("exp", "sigmoid", "tanh", "negative", "nn.relu")
_BINARY = ("add", "multiply", "subtract", "maximum")


def random_highlevel_module(seed: int, n_functions: int = 3, n_ops: int = 8) -> IRModule:
    """Seeded high-level Relax programs for the LegalizeOps -> ToNonDataflow ->
    RemovePurityChecking -> CallTIRRewrite oracle.

    Each of ``n_functions`` functions ``f0, f1, ...`` takes two tensors (static, or with a
    symbolic first dim ``n``) and a bool ``cond``, may bind a few values before its
    dataflow block, then has ``n_ops`` (about) steps in a dataflow block — element-wise
    unary and binary ops (also with a scalar ``R.const``), ``split`` (tuple outputs and
    get-items), ``concat``, ``reshape``, ``permute_dims``, ``sum``, ``astype``,
    ``R.call_pure_packed`` — with one or two block outputs, and sometimes an If/else on
    ``cond`` after the block and a call to an earlier function. Only ops TVM's
    LegalizeOps lowers to ``call_tir`` (or leaves as packed calls) are used; not
    ``matmul``, which TVM 0.27 prints as ``out_dtype="void"`` and cannot read back.
    """
    rng = random.Random(seed)
    bb = BlockBuilder()
    funcs = []
    for fi in range(n_functions):
        dtype = rng.choice(("float32", "float32", "float16"))
        symbolic = rng.random() < 0.3
        rows = PrimVar("n") if symbolic else IntImm(rng.choice((2, 4)))
        cols = rng.choice((4, 8))
        t = TensorType((rows, IntImm(cols)), dtype)
        x, y = Var("x", t), Var("y", t)
        cond = Var("cond", TensorType((), "bool"))
        name = f"f{fi}"
        with bb.function(name, [x, y, cond]) as frame:
            pool = [x, y]
            if rng.random() < 0.4:
                pool.append(bb.emit(Call(_op("relax.add"), [x, y]), "pre"))
            with bb.dataflow():
                for _ in range(n_ops):
                    pool.append(_highlevel_step(bb, rng, pool, t, symbolic))
                n_out = 1 if rng.random() < 0.6 else 2
                outs = [bb.emit_output(v, f"out{k}") for k, v in enumerate(_same_typed(pool, t)[-n_out:])]
            res = outs[-1]
            if rng.random() < 0.35:
                with bb.if_then_else(cond, "r") as br:
                    with br.then_branch():
                        br.output(bb.emit(Call(_op("relax.multiply"), [res, res]), "m"))
                    with br.else_branch():
                        br.output(outs[0])
                res = br.var
            if funcs and rng.random() < 0.4:
                gv, ft = rng.choice(funcs)
                if _types_match(ft, t):
                    res = bb.emit(Call(gv, [res, x, cond]), "sub")
            bb.emit_func_output(res if n_out == 1 or rng.random() < 0.5 else (res, outs[0]))
        funcs.append((frame.gv, t))
    return bb.get()


def _types_match(a: TensorType, b: TensorType) -> bool:
    from ..ir.types import type_equal

    return type_equal(a, b)


def _same_typed(pool, t):
    return [v for v in pool if isinstance(v.ty, TensorType) and _types_match(v.ty, t)]


def _highlevel_step(bb, rng, pool, t, symbolic):
    same = _same_typed(pool, t)
    a = rng.choice(same[-4:])
    r = rng.random()
    if r < 0.25:
        return bb.emit(Call(_op("relax." + rng.choice(_UNARY)), [a]), "lv")
    if r < 0.5:
        b = rng.choice(same[-4:]) if rng.random() < 0.7 else Constant(np.array(1.5, dtype=t.dtype))
        return bb.emit(Call(_op("relax." + rng.choice(_BINARY)), [a, b]), "lv")
    if r < 0.6:
        tup = bb.emit(Call(_op("relax.split"), [a], {"indices_or_sections": 2, "axis": 1}), "parts")
        p0 = bb.emit(TupleGetItem(tup, 0), "p")
        p1 = bb.emit(TupleGetItem(tup, 1), "p")
        both = bb.emit(Call(_op("relax.concat"), [Tuple([p1, p0])], {"axis": 1}), "lv")
        return both
    if r < 0.68 and not symbolic:
        rows, cols = t.shape[0].value, t.shape[1].value
        flat = bb.emit(Call(_op("relax.reshape"), [a, ShapeExpr([rows * cols])]), "flat")
        return bb.emit(Call(_op("relax.reshape"), [flat, ShapeExpr([rows, cols])]), "lv")
    if r < 0.74:
        pt = bb.emit(Call(_op("relax.permute_dims"), [a], {"axes": [1, 0]}), "pt")
        return bb.emit(Call(_op("relax.permute_dims"), [pt], {"axes": [1, 0]}), "lv")
    if r < 0.8:
        s = bb.emit(Call(_op("relax.sum"), [a], {"axis": [1], "keepdims": True}), "s")
        return bb.emit(Call(_op("relax.add"), [a, s]), "lv")
    if r < 0.92:
        other = "float16" if t.dtype != "float16" else "float32"
        c = bb.emit(Call(_op("relax.astype"), [a], {"dtype": other}), "c")
        return bb.emit(Call(_op("relax.astype"), [c], {"dtype": t.dtype}), "lv")
    return bb.emit(
        Call(_op("relax.call_pure_packed"), [ExternFunc("test.kernel", ObjectType()), a], ty_args=(t,)), "lv"
    )


# ------------------------------------------------------------------------ post-planning
def random_kill_module(seed: int, n_functions: int = 3, n_steps: int = 14, control_flow: bool = True) -> IRModule:
    """Seeded post-planning functions (the input of LowerAllocTensor + KillAfterLastUse)
    mixing what KillAfterLastUse distinguishes.

    Each impure function ``kill_case0, kill_case1, ...`` (params: a (2, 3) float32 tensor ``x`` and a bool
    ``c``) runs ``n_steps`` (about) random steps: a storage and tensors carved from it,
    unplanned ``R.builtin.alloc_tensor``, direct DPS calls to a PrimFunc and to packed
    kernels, trivial re-bindings (chains too) and match_casts (to the same and to a weaker
    type), tuples and get-items, packed calls returning an object or a tuple,
    ``vm.builtin.reshape`` views, constants (also bound and re-bound), shapes, prim values,
    ``R.null_value()``, an explicit kill of a dead tensor, Relax op calls, and If/else
    blocks whose branches allocate, compute and use outer values (unless
    ``control_flow=False``). The result is a tensor or a tuple of tensors.
    """
    rng = random.Random(seed)
    bb = BlockBuilder()
    ty = TensorType((2, 3), "float32")
    kern = bb.add_func(_prim_func("kern", 2, 1, ty), "kern")
    for fi in range(n_functions):
        x = Var("x", ty)
        c = Var("c", TensorType((), "bool"))
        with bb.function(f"kill_case{fi}", [x, c], pure=False):
            st = _KillGen(bb, rng, kern, ty, x, c)
            st.run(n_steps, allow_if=control_flow)
            live = st.live()
            if len(live) >= 2 and rng.random() < 0.4:
                bb.emit_func_output((live[-1], live[0]))
            else:
                bb.emit_func_output(live[-1])
    return bb.get()


class _KillGen:
    def __init__(self, bb, rng, kern, ty, x, c):
        self.bb, self.rng, self.kern, self.ty, self.c = bb, rng, kern, ty, c
        self.tensors = [x]      # (2, 3) float32 values in scope
        self.storages = []
        self.objects = []
        self.tuples = []
        self.dead = set()
        self.kills_ok = True

    def live(self):
        return [t for t in self.tensors if t not in self.dead]

    def pick(self):
        live = self.live()
        return live[-1 - min(int(self.rng.expovariate(0.5)), len(live) - 1)]

    def new_tensor(self):
        bb, rng, ty = self.bb, self.rng, self.ty
        if self.storages and rng.random() < 0.7:
            return bb.emit(_mem_alloc_tensor(rng.choice(self.storages), ty), "alloc")
        if rng.random() < 0.5:
            s = bb.emit(_alloc_storage(24, "float32"), "storage")
            self.storages.append(s)
            return bb.emit(_mem_alloc_tensor(s, ty), "alloc")
        return bb.emit(_builtin_alloc_tensor(ty), "alloc")

    def dps(self):
        bb, rng = self.bb, self.rng
        out = self.new_tensor()
        a, b = self.pick(), self.pick()
        if rng.random() < 0.7:
            bb.emit(Call(self.kern, [a, b, out]), "_")
        else:
            bb.emit(Call(ExternFunc("test.dps_kernel"), [a, out], ty_args=(ObjectType(),)), "_")
        if rng.random() < 0.75:
            y = bb.emit(out, "y")
            if rng.random() < 0.2:
                y = bb.emit(y, "y")
            self.tensors.append(y)
        else:
            self.tensors.append(out)

    def step(self, allow_if):
        bb, rng, ty = self.bb, self.rng, self.ty
        r = rng.random()
        if r < 0.35:
            self.dps()
        elif r < 0.42:
            a = self.pick()
            if rng.random() < 0.5:
                self.tensors.append(bb.match_cast(a, ty, "mc"))
            else:
                self.objects.append(bb.match_cast(a, TensorType(None, "float32", 2), "mcw"))
        elif r < 0.5:
            t = bb.emit(Tuple([self.pick(), self.pick()]), "tup")
            self.tuples.append(t)
            if rng.random() < 0.7:
                self.tensors.append(bb.emit(TupleGetItem(t, rng.randrange(2)), "g"))
        elif r < 0.56:
            o = bb.emit(Call(ExternFunc("test.make_obj"), [self.pick()], ty_args=(ObjectType(),)), "o")
            self.objects.append(o)
        elif r < 0.61:
            pt = bb.emit(Call(ExternFunc("test.make_pair"), [self.pick()], ty_args=(TupleType([ty, ty]),)), "pt")
            self.tuples.append(pt)
            self.tensors.append(bb.emit(TupleGetItem(pt, rng.randrange(2)), "q"))
        elif r < 0.65:
            v = bb.emit(Call(ExternFunc("vm.builtin.reshape"), [self.pick(), ShapeExpr([6])],
                             ty_args=(TensorType((6,), "float32"),)), "view")
            back = bb.emit(Call(ExternFunc("vm.builtin.reshape"), [v, ShapeExpr([2, 3])], ty_args=(ty,)), "back")
            self.tensors.append(back)
        elif r < 0.69:
            k = bb.emit(Constant(np.array(rng.choice((1.0, 2.0)), dtype="float32")), "k")
            if rng.random() < 0.3:
                k = bb.emit(k, "kk")
            self.objects.append(k)
        elif r < 0.72:
            s = bb.emit(ShapeExpr([2, 3]), "s")
            p = bb.emit(PrimValue(IntImm(rng.randrange(5))), "p")
            nv = bb.emit(Call(_op("relax.null_value"), []), "nv")
            self.objects.extend([s, p, nv])
        elif r < 0.76:
            self.tensors.append(bb.emit(Call(_op("relax.add"), [self.pick(), self.pick()]), "added"))
        elif r < 0.8 and self.kills_ok and len(self.live()) > 3:
            victim = self.live()[-3]
            if victim not in self.tensors[:1]:
                bb.emit(Call(_op("relax.memory.kill_tensor"), [victim]), "_")
                self.dead.add(victim)
        elif r < 0.9 and (self.objects or self.tuples):
            args = [self.pick()] + [rng.choice(self.objects + self.tuples)]
            out = bb.emit(Call(ExternFunc("test.consume"), args, ty_args=(ty,)), "u")
            self.tensors.append(out)
        elif allow_if and r < 0.97:
            self.branch()
        else:
            self.dps()

    def branch(self):
        bb, rng = self.bb, self.rng
        outer = self.pick()
        with bb.if_then_else(self.c, "r") as br:
            self.kills_ok = False
            for which in (br.then_branch, br.else_branch):
                with which():
                    saved = (
                        list(self.tensors),
                        list(self.storages),
                        list(self.objects),
                        list(self.tuples),
                        set(self.dead),
                    )
                    for _ in range(rng.randint(0, 3)):
                        self.step(allow_if=False)
                    res = self.pick() if rng.random() < 0.8 else outer
                    br.output(res)
                    self.tensors, self.storages, self.objects, self.tuples, self.dead = saved
            self.kills_ok = True
        self.tensors.append(br.var)

    def run(self, n_steps, allow_if):
        for _ in range(n_steps):
            self.step(allow_if)


def batch_modules(mods) -> IRModule:
    """One module holding the functions of all ``mods``, each renamed ``<name>_<k>`` (k the
    module's index) with calls and ``call_tir`` callees following; identical PrimFuncs
    (same name, signature and text) are kept once. Lets a differential test pay TVM's
    per-module costs (parsing PrimFuncs above all) once for several random programs."""
    from ..ir.functor import ExprMutator

    funcs = {}
    shared_prims = {}  # identical PrimFuncs (same name, signature, text) are kept once
    for k, mod in enumerate(mods):
        rename = {}
        for gv, func in mod.functions.items():
            if isinstance(func, PrimFunc):
                key = (gv.name, tuple((p.name, p.dtype, repr(p.shape)) for p in func.params),
                       func.text, func.private, repr(sorted(func.attrs.items())))
                if key not in shared_prims:
                    shared_prims[key] = GlobalVar(f"{gv.name}_{k}", gv.ty)
                rename[gv] = shared_prims[key]
            else:
                rename[gv] = GlobalVar(f"{gv.name}_{k}", gv.ty)

        class _Renamer(ExprMutator):  # used in this iteration only: ``rename`` is this iteration's
            def visit_call(self, call):
                call = self.visit_call_default(call)
                op = rename.get(call.op, call.op) if isinstance(call.op, GlobalVar) else call.op  # noqa: B023
                args = tuple(rename.get(a, a) if isinstance(a, GlobalVar) else a for a in call.args)  # noqa: B023
                if op is call.op and all(x is y for x, y in zip(args, call.args)):
                    return call
                return Call(op, args, call.attrs, call.ty_args, call.ty)

        r = _Renamer()
        for gv, func in mod.functions.items():
            if hasattr(func, "body"):
                func = r.visit_function(func)
                if "global_symbol" in func.attrs:
                    attrs = dict(func.attrs)
                    attrs["global_symbol"] = rename[gv].name
                    func = Function(func.params, func.body, func.ret_ty, attrs, func.is_pure)
            if rename[gv] not in funcs:
                funcs[rename[gv]] = func
    return IRModule(funcs)
