"""FuseForPlanning: TVM's FuseOps + FuseTIR at the interface level, on signature-only kernels.

Why
---
TVM's default CPU pipeline fuses kernels before planning (``LegalizeOps,
AnnotateTIROpPattern, FoldConstant, FuseOps, FuseTIR, RewriteDataflowReshape, ToNonDataflow,
RemovePurityChecking, CallTIRRewrite, StaticPlanBlockMemory``): a fused kernel's
intermediates live in registers or kernel-local buffers, so only a group's outputs are planned.
To plan with TVM's bytes memcore must group the kernels exactly as FuseOps does and give each
group the interface FuseTIR gives it. Which tensors a fused kernel reads and writes is all
that planning needs, so the fused kernels stay signature-only.

Rewrite of each Relax function (src/relax/transform/fuse_ops.cc, fuse_tir.cc)
------------------------------------------------------------------------------
1. *Graph* (``GraphCreator``): a node per parameter (external, ``kOpaque``) and per top-level
   binding, in order; a binding of a non-dataflow variable is external. A ``call_tir`` node
   has its kernel's ``op_pattern`` attribute (``kOpaque`` without one) and an edge from each
   variable in its argument tuple; a ``TupleGetItem`` node is ``kInjective`` (``kOpaque`` on a
   parameter past ``num_input``); any other value is ``kOpaque`` with an edge from every
   variable it reads; a ``match_cast`` node has no edges.
2. *Partition*: :func:`memcore_py.transform._fuse_partition.partition` (TVM's post-dominator
   fusion, ``max_depth`` nodes per group).
3. *Functions* (``OperatorFusor``, per dataflow block): a group of one binding is kept. A larger
   group's inputs are the values its bindings read and do not define, in order of first use
   (constants included; a tuple read through ``TupleGetItem`` contributes the items read);
   its outputs are its non-dataflow variables in binding order, then the variables read
   by other bindings of the block in order of first use. A group without outputs is dropped.
   The bindings are re-ordered topologically by group dependency as TVM does (each group, at
   its first binding, after the groups it reads), and a group is emitted at its last binding:
   ``y = R.call_tir(cls.fused_<kernels>, (inputs...), out_ty)`` (a tuple of the outputs,
   read back with ``TupleGetItem`` into the original variables, when there are several).
4. *Kernels* (``FuseTIR``): one signature-only PrimFunc per group signature, inputs then
   outputs, named ``fused_`` + the grouped kernels' names (``fused_matmul_add_relu``),
   uniquified; then what FuseTIR runs around its rewrite: ``CanonicalizeBindings`` (inside
   ``ExpandTupleArguments``: ``c = t[0]`` of a tuple literal ``t = (a, b)`` reads ``a``,
   trivial bindings fold) and ``DeadCodeElimination`` (unused bindings and kernels go).

Deliberate differences: the symbolic shape variables FuseTIR appends to a dynamic fused
kernel's arguments are left out (they are not tensors and do not change the plan);
``call_tir_inplace`` kernels are not fused (``kOpaque``; LowerForPlanning never writes them);
identical groups share a kernel when their names and signatures agree (TVM: when their Relax
functions are structurally equal).
"""
from __future__ import annotations

from ..errors import PassError
from ..ir.builder import NameTable
from ..ir.expr import (
    Call,
    DataflowBlock,
    DataflowVar,
    Function,
    GlobalVar,
    MatchCast,
    PrimFunc,
    PrimFuncParam,
    PrimValue,
    SeqExpr,
    ShapeExpr,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
)
from ..ir.construct import function_with_body
from ..ir.functor import var_uses
from ..ir.module import IRModule
from ..ir.op import get_op
from ..ir.prim import IntImm, canonical, free_prim_vars
from ..ir.types import TensorType, TupleType
from ._fuse_partition import K_INJECTIVE, K_OPAQUE, MAX_FUSE_DEPTH, ForwardGraph, partition
from .canonicalize_bindings import canonicalize_bindings
from .dead_code_elimination import dead_code_elimination

__all__ = ["fuse_for_planning", "fuse_with_kernels", "tensor_type_key", "MAX_FUSE_DEPTH"]

_CALL_TIR = get_op("relax.call_tir")


def fuse_for_planning(mod: IRModule, *, max_depth: int = MAX_FUSE_DEPTH) -> IRModule:
    """``mod`` with its kernels grouped and fused as TVM's FuseOps + FuseTIR do (module
    docstring).

    Parameters
    ----------
    mod : IRModule
        Relax functions calling PrimFuncs with ``call_tir``; a PrimFunc's ``op_pattern``
        attribute (TVM's AnnotateTIROpPattern values) drives the grouping.
    max_depth : int, default 256
        TVM's ``relax.FuseOps.max_depth``: the most kernels in one group.

    Raises
    ------
    PassError
        ``mod`` is not an IRModule, ``max_depth`` is not positive, or a ``call_tir`` passes its
        arguments other than as a tuple literal.
    """
    return fuse_with_kernels(mod, max_depth=max_depth)[0]


def fuse_with_kernels(mod: IRModule, *, max_depth: int = MAX_FUSE_DEPTH) -> tuple:
    """:func:`fuse_for_planning`, and what each fused kernel groups.

    Returns
    -------
    tuple of (IRModule, dict)
        The fused module, and per fused kernel (its ``GlobalVar``) the kernels its group
        calls, in binding order (``TupleGetItem`` members are no kernels).

    Raises
    ------
    PassError
        As :func:`fuse_for_planning`.
    """
    if not isinstance(mod, IRModule):
        raise PassError(f"FuseForPlanning expects an IRModule; got {type(mod).__name__}")
    if not isinstance(max_depth, int) or max_depth < 1:
        raise PassError(f"FuseForPlanning: max_depth must be a positive int; got {max_depth!r}")
    fusor = _Fusor(mod, max_depth)
    updates = {}
    for gv, func in mod.functions.items():
        if isinstance(func, Function) and not func.attrs.get("Primitive"):
            fusor.func_name = gv.name
            new = fusor.fuse_function(func)
            if new is not func:
                updates[gv] = new
    if updates:
        mod = mod.with_functions({**updates, **fusor.new_funcs})
    canon = {}  # FuseTIR canonicalizes and removes dead code even when nothing was fused
    for gv, func in mod.functions.items():
        if isinstance(func, Function):
            new = canonicalize_bindings(func, gv.name)
            if new is not func:
                canon[gv] = new
    return dead_code_elimination(mod.with_functions(canon) if canon else mod), dict(fusor.grouped)


class _Fusor:
    def __init__(self, mod: IRModule, max_depth: int):
        self.mod = mod
        self.max_depth = max_depth
        self.names = NameTable()
        for gv in mod.functions:
            self.names.reserve(gv.name)
        self.kernels: dict = {}
        self.new_funcs: dict = {}
        self.grouped: dict = {}  # fused kernel -> the kernels its group calls
        self.func_name = ""

    # -- graph -----------------------------------------------------------------------------
    def _graph(self, func: Function):
        g = ForwardGraph()
        node = {}
        for p in func.params:
            node[p] = g.add_node(K_OPAQUE, True)
        num_input = func.attrs.get("num_input")
        packed = set(func.params[int(num_input):]) if num_input is not None else set()
        for blk in func.body.blocks:
            for b in blk.bindings:
                if type(b) is MatchCast:
                    node[b.var] = g.add_node(K_OPAQUE, False)
                    continue
                value = b.value
                extern = type(b.var) is not DataflowVar
                if type(value) is Call and value.op is _CALL_TIR:
                    pattern, reads = self._kernel_pattern(b), _tuple_vars(value.args[1])
                elif type(value) is Call:
                    pattern, reads = K_OPAQUE, [v for a in value.args for v in _leaf_vars(a)]
                elif type(value) is TupleGetItem:
                    pattern = K_OPAQUE if value.tuple_value in packed else K_INJECTIVE
                    reads = _leaf_vars(value.tuple_value)
                else:
                    pattern, reads = K_OPAQUE, var_uses(value)
                i = node[b.var] = g.add_node(pattern, extern)
                for v in reads:
                    src = node.get(v)
                    if src is not None:
                        g.add_edge(src, i, pattern)
        return g, node

    def _kernel_pattern(self, b) -> int:
        call = b.value
        if len(call.args) < 2 or type(call.args[1]) is not Tuple:
            raise PassError(f"FuseForPlanning: binding '{b.var.name}' in function '{self.func_name}': call_tir "
                            "arguments must be a tuple literal")
        kernel = self.mod.functions.get(call.args[0]) if isinstance(call.args[0], GlobalVar) else None
        if not isinstance(kernel, PrimFunc):
            return K_OPAQUE
        return int(kernel.attrs.get("op_pattern", K_OPAQUE))

    # -- rewrite ---------------------------------------------------------------------------
    def fuse_function(self, func: Function) -> Function:
        g, node = self._graph(func)
        root = partition(g, self.max_depth)
        group_of = {v: root[i] for v, i in node.items()}
        outer = {b.var: b.value for blk in func.body.blocks for b in blk.bindings}
        deps: dict = {}
        blocks, changed = [], False
        for blk in func.body.blocks:
            if type(blk) is not DataflowBlock:
                blocks.append(blk)
                continue
            new = self._fuse_block(blk, group_of, outer, deps)
            changed |= new is not blk
            blocks.append(new)
        if not changed:
            return func
        return function_with_body(func, SeqExpr(blocks, func.body.body))

    def _fuse_block(self, blk, group_of, outer, deps):
        members: dict = {}
        for b in blk.bindings:
            members.setdefault(group_of[b.var], []).append(b)
        if all(len(m) == 1 for m in members.values()):
            return blk
        groups = {gid: _Group(ms, outer) for gid, ms in members.items() if len(ms) > 1}
        for b in blk.bindings:  # boundary: values read by another group are outputs
            cur = group_of[b.var]
            for v in var_uses(b.value):
                prod = group_of.get(v)
                if prod is None or prod == cur:
                    continue
                deps.setdefault(cur, []).append(prod)
                if prod in groups:
                    groups[prod].add_output(v)
        out, pending = [], {}
        for b in _topo_sorted(blk.bindings, group_of, deps):
            grp = groups.get(group_of[b.var])
            if grp is None:
                out.append(b)
                continue
            if not grp.outputs:
                continue  # nothing reads the group: TVM makes no function
            if len(grp.outputs) > 1 and b.var in grp.outputs:
                pending.setdefault(id(grp), []).append(b.var)
            if b is grp.bindings[-1]:
                self._emit(grp, out, pending.get(id(grp), []))
        return DataflowBlock(out)

    def _emit(self, grp, out, pending):
        args = []
        for a in grp.arguments:
            if type(a) is TupleGetItem:  # a tuple item read inside the group, bound first
                item = DataflowVar(self.names.fresh("lv"), a.tuple_value.ty.fields[a.index])
                out.append(VarBinding(item, a))
                a = item
            args.append(a)
        outs = grp.outputs
        out_ty = outs[0].ty if len(outs) == 1 else TupleType([v.ty for v in outs])
        gv = self._fused_kernel(grp.name, args, out_ty)
        self.grouped[gv] = grp.kernels
        call = Call(_CALL_TIR, (gv, Tuple(args)), None, (out_ty,))
        if len(outs) == 1:
            out.append(VarBinding(outs[0], call))
            return
        tup = DataflowVar(self.names.fresh("lv"), out_ty)
        out.append(VarBinding(tup, call))
        order = list(pending) + [v for v in outs if v not in pending]
        for v in order:
            out.append(VarBinding(v, TupleGetItem(tup, outs.index(v))))

    def _fused_kernel(self, name, args, out_ty) -> GlobalVar:
        tensors = [a for a in args if isinstance(a.ty, TensorType)]
        outs = list(out_ty.fields) if isinstance(out_ty, TupleType) else [out_ty]
        key = (name, tuple(tensor_type_key(a.ty) for a in tensors), tuple(tensor_type_key(t) for t in outs))
        gv = self.kernels.get(key)
        if gv is None:
            params = [PrimFuncParam(f"p{i}", a.ty.dtype, a.ty.shape) for i, a in enumerate(tensors)]
            params += [PrimFuncParam(f"out{i}", t.dtype, t.shape) for i, t in enumerate(outs)]
            gv = GlobalVar(self.names.fresh(name))
            self.new_funcs[gv] = PrimFunc(params, {"tirx.noalias": True}, text=None, private=True)
            self.kernels[key] = gv
        return gv


class _Group:
    """One multi-binding group: its bindings, inputs (``arguments``) and outputs, built as
    TVM's ``FunctionCreator`` builds them."""

    def __init__(self, bindings, outer):
        self.bindings = bindings
        self.outer = outer
        self.defined = set()
        self.arguments, self.outputs = [], []
        self.items: dict = {}  # tuple argument -> item indices read, in order
        self.name = "fused"
        self.kernels = []
        for b in bindings:
            v = b.value
            if type(v) is Call and v.op is _CALL_TIR:
                self.name += "_" + v.args[0].name
                self.kernels.append(v.args[0])
                for a in v.args[1].fields:
                    self._use(a)
            elif type(v) is TupleGetItem:
                self._use(v.tuple_value)
                if v.tuple_value in self.items and v.index not in self.items[v.tuple_value]:
                    self.items[v.tuple_value].append(v.index)
            self.defined.add(b.var)
            if type(b.var) is not DataflowVar:
                self.add_output(b.var)
        expanded = []
        for a in self.arguments:
            if a in self.items:
                expanded.extend(TupleGetItem(a, k) for k in self.items[a])
            else:
                expanded.append(a)
        self.arguments = expanded

    def _use(self, e):
        if any(a is e for a in self.arguments) or e in self.defined:
            return
        if isinstance(e, Var) and _inlinable(_bound_value(e, self.outer)):
            return
        if _inlinable(e):
            return
        self.arguments.append(e)
        if isinstance(e, Var) and isinstance(e.ty, TupleType):
            self.items[e] = []

    def add_output(self, v):
        if v not in self.outputs:
            self.outputs.append(v)


def _bound_value(v, outer):
    seen = set()
    value = v
    while isinstance(value, Var) and value not in seen:
        seen.add(value)
        if value not in outer:
            break
        value = outer[value]
    return value


def _inlinable(e) -> bool:
    """A static shape, prim value or tuple of them: TVM inlines it into the fused function."""
    if type(e) is Tuple:
        return all(_inlinable(f) for f in e.fields)
    if type(e) is PrimValue:
        return not free_prim_vars(e.value)
    if type(e) is ShapeExpr:
        return not any(free_prim_vars(d) for d in e.values)
    return False


def _topo_sorted(bindings, group_of, deps) -> list:
    """TVM's ``TopoSortByGroupDep``: groups in order of their first binding, each after the
    groups it reads (depth first, in the order the reads were seen)."""
    per_group: dict = {}
    order = []
    for b in bindings:
        gid = group_of[b.var]
        if gid not in per_group:
            per_group[gid] = []
            order.append(gid)
        per_group[gid].append(b)
    visited, out = set(), []
    for gid in order:
        if gid in visited:
            continue
        visited.add(gid)
        stack = [(gid, iter(deps.get(gid, ())))]
        while stack:
            g, it = stack[-1]
            nxt = next((d for d in it if d not in visited), None)
            if nxt is None:
                stack.pop()
                out.extend(per_group.get(g, ()))
                continue
            visited.add(nxt)
            stack.append((nxt, iter(deps.get(nxt, ()))))
    return out


def _tuple_vars(t) -> list:
    return [v for f in t.fields for v in _leaf_vars(f)]


def _leaf_vars(e) -> list:
    if isinstance(e, Var):
        return [e]
    if type(e) is Tuple:
        return [v for f in e.fields for v in _leaf_vars(f)]
    return []


def tensor_type_key(t: TensorType) -> tuple:
    """A hashable key of a tensor type (dtype, dims; symbolic dims canonical): kernels are
    shared per signature of these."""
    return t.dtype, tuple(d.value if type(d) is IntImm else canonical(d) for d in t.shape)

