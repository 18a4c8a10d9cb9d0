"""The TVM writer of the PrimFuncs memcore's passes write: a
:class:`~memcore_py.transform.legalize_elementwise.TirKernel` built as TVM objects.

Design
------
The legalization rule of DataflowUseInplaceCalls is written once, as a ``TirKernel``
(:mod:`memcore_py.transform.legalize_elementwise`); its text is one writer of it
(``kernel_text``), this module is the other. It makes the objects TVM's script parser makes
of that text, node by node through TVM's FFI constructors (the ones TVM's Python node
classes call: ``tirx`` buffers, loads and stores, ``s_tir`` blocks, loops), with no parse; a
node asked for twice within one function (a dim, a constant, a region read and written) is
made once. A buffer parameter is a buffer variable of the parser's defaults (scope
``global``, element offset ``T.int64(0)``, alignment 64, offset factor 1, no layout); the
root block is implicit, as ``# with T.sblock("root")`` is in the text, and owns the
allocated buffers; ``T.grid`` and ``range`` are serial loops from 0; ``T.axis.remap`` /
``T.axis.spatial`` bind data-parallel block variables to the loops; a read or write region
is one element per index; the function carries the parser's attributes ``s_tir`` and
``tirx.noalias``.

Every symbolic variable of the kernel is a variable of this PrimFunc alone (the parser makes
them per function too). What the builder cannot build (a TVM without one of these
constructors) raises :class:`~memcore_py.errors.TVMConversionError`; the caller then writes
the text through TVM's parser instead (:meth:`memcore_py.tvm.to_tvm._Writer.prim_func`).
tests/oracle/test_tvm_tir_writer.py compares every kernel shape with the parse of its text.
"""
from __future__ import annotations

import operator

from ._api import TVMConversionError
from ..ir.prim import Add, FloorDiv, FloorMod, IntImm, Max, Min, Mul, PrimVar, Sub

__all__ = ["kernel_prim_func"]

_PRIM_BINARY = {Add: "Add", Sub: "Sub", Mul: "Mul", FloorDiv: "FloorDiv", FloorMod: "FloorMod", Min: "Min",
                Max: "Max"}
#: the kernel's operators as the parser evaluates them: infix operators and ``T.max`` through
#: TIR's arithmetic (which folds ``x + 0`` to ``x``), ``T.Div`` the node itself
_OPERATORS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv}


class _Builder:
    """One PrimFunc's objects: its symbolic variables and buffers by name, and the TVM nodes
    of its dims (a dim object converted once, wherever it occurs). Nodes are made by TVM's
    FFI constructors, which TVM's Python node classes call with these same arguments."""

    def __init__(self, api, kernel):
        import tvm.s_tir
        import tvm.tirx
        from tvm.script import tirx as script_tirx

        self.tirx = tvm.tirx
        self.ffi = tvm.tirx._ffi_api
        self.s_ffi = tvm.s_tir._ffi_api
        self.ir_ffi = api.ir_ffi
        self.prim_ffi = api.prim_ffi if api.prim_ffi is not None else tvm.tirx
        self.script_max = script_tirx.max
        self.api = api
        self.kernel = kernel
        self.vars: dict = {}
        self.buffers: dict = {}
        self.ints: dict = {}
        self.types: dict = {}
        self.dims: dict = {}  # id(dim) -> (dim, its TVM node)

    def int64(self, value: int):
        return self.int_imm("int64", value)

    def int_imm(self, dtype: str, value: int):
        r = self.ints.get((dtype, value))
        if r is None:
            r = self.ints[(dtype, value)] = self.ir_ffi.IntImm(dtype, value, None)
        return r

    def prim_type(self, dtype: str):
        r = self.types.get(dtype)
        if r is None:
            r = self.types[dtype] = self.api.PrimType(dtype)
        return r

    def var(self, name: str, dtype: str):
        return self.ir_ffi.Var(name, self.prim_type(dtype), None)

    def prim(self, e):
        t = type(e)
        if t is IntImm:
            return self.int_imm(e.dtype, e.value)
        if t is PrimVar:
            r = self.vars.get(e.name)
            if r is None:
                r = self.vars[e.name] = self.var(e.name, e.dtype)
            return r
        hit = self.dims.get(id(e))
        if hit is not None:
            return hit[1]
        name = _PRIM_BINARY.get(t)
        if name is None:
            raise TVMConversionError(f"symbolic expression {e!r} in a PrimFunc shape")
        r = getattr(self.prim_ffi, name)(self.prim(e.a), self.prim(e.b), None)
        self.dims[id(e)] = (e, r)
        return r

    def buffer(self, name: str, shape, dtype: str):
        dims = [self.prim(d) for d in shape]
        ty = self.ffi.BufferType("global", dtype, dims, [], self.int64(0), 64, 1, None, (), None)
        b = self.buffers[name] = self.ffi.BufferVar(name, ty, None)
        return b

    def index(self, index, bvars):
        return [bvars[i] if i >= 0 else self.int64(0) for i in index]

    def value(self, e, bvars):
        kind = e[0]
        if kind == "load":
            return self.ffi.BufferLoad(self.buffers[e[1]], self.index(e[2], bvars), None)
        if kind == "imm":
            return self.scalar(e[1], e[2])
        if kind == "T.sigmoid":
            return self.tirx.sigmoid(self.value(e[1], bvars))
        if kind == "T.Div":
            return self.tirx.Div(self.value(e[1], bvars), self.value(e[2], bvars))
        if kind == "T.max":
            return self.script_max(self.value(e[1], bvars), self.value(e[2], bvars))
        op = _OPERATORS.get(kind)
        if op is None:
            raise TVMConversionError(f"kernel expression {kind!r}")
        return op(self.value(e[1], bvars), self.value(e[2], bvars))

    def scalar(self, value, dtype: str):
        if dtype.startswith(("float", "bfloat")):
            return self.api.FloatImm(dtype, float(value))
        if dtype == "bool":
            return self.api.IntImm("bool", 1 if bool(value) else 0)
        return self.api.IntImm(dtype, int(value))

    def region(self, name: str, index, bvars, regions: dict):
        """The one-element region of buffer ``name`` at ``index``; ``regions``: the block's
        regions and ranges made so far (a region read and written, a range used by several
        regions, is one node)."""
        r = regions.get((name, index))
        if r is None:
            ranges = []
            for i in index:
                rng = regions.get(i)
                if rng is None:
                    rng = regions[i] = self.ir_ffi.Range_from_min_extent(bvars[i] if i >= 0 else self.int64(0),
                                                                         self.int64(1), None)
                ranges.append(rng)
            r = regions[(name, index)] = self.ffi.BufferRegion(self.buffers[name], ranges)
        return r

    def block(self, block, true):
        ffi, s_ffi = self.ffi, self.s_ffi
        dims = [self.prim(d) for d in block.dims]
        dtypes = [d.dtype for d in block.dims]
        r = len(dims)
        loops = [self.var(f"{block.loop_prefix}{k}", t) for k, t in enumerate(dtypes)]
        rng = self.ir_ffi.Range
        if r == 0:
            bvars = [self.var("vi", "int64")]
            iter_vars = [ffi.IterVar(rng(self.int64(0), self.int64(1), None), bvars[0], 0, "", None)]
            bindings = [self.int64(0)]
        else:
            bvars = [self.var(f"v_{block.loop_prefix}{k}", t) for k, t in enumerate(dtypes)]
            iter_vars = [ffi.IterVar(rng(self.int_imm(t, 0), d, None), v, 0, "", None)
                         for t, d, v in zip(dtypes, dims, bvars)]
            bindings = loops
        buf, index = block.write
        store = ffi.BufferStore(self.buffers[buf], self.value(block.value, bvars), self.index(index, bvars), None)
        regions: dict = {}
        reads = [self.region(b, i, bvars, regions) for b, i in block.reads]
        writes = [self.region(buf, index, bvars, regions)]
        sblock = s_ffi.SBlock(iter_vars, reads, writes, block.name, store, None, [], [], {}, None)
        body = s_ffi.SBlockRealize(bindings, true, sblock, None)
        serial = self.tirx.ForKind.SERIAL
        for loop, t, d in zip(reversed(loops), reversed(dtypes), reversed(dims)):
            body = ffi.For(loop, self.int_imm(t, 0), d, serial, body, None, None, None, None)
        return body

    def prim_func(self, attrs):
        ffi, s_ffi = self.ffi, self.s_ffi
        params = []
        for p in self.kernel.params:
            if p.shape is None:
                params.append(self.prim(PrimVar(p.name, p.dtype)))
            else:
                params.append(self.buffer(p.name, p.shape, p.dtype))
        allocs = [self.buffer(name, shape, dtype) for name, shape, dtype in self.kernel.allocs]
        true = self.tirx.const(True, "bool")  # the predicate SBlockRealize is given for ``True``
        nests = [self.block(b, true) for b in self.kernel.blocks]
        body = nests[0] if len(nests) == 1 else ffi.SeqStmt(nests, None)
        root = s_ffi.SBlockRealize([], true, s_ffi.SBlock([], [], [], "root", body, None, allocs, [], {}, None), None)
        return ffi.PrimFunc(params, root, self.api.Type.missing(), self.api.ir.make_node("ir.DictAttrs", **attrs), None)


def kernel_prim_func(api, kernel, attrs: dict):
    """The ``tvm.tirx.PrimFunc`` of ``kernel`` with the function attributes ``attrs`` (TVM
    values; ``s_tir`` is added as the parser adds it).

    Raises
    ------
    TVMConversionError
        A part of the kernel this builder does not write (module docstring).
    """
    try:
        return _Builder(api, kernel).prim_func({"s_tir": True, **attrs})
    except (AttributeError, TypeError) as exc:  # a TVM whose constructors differ
        raise TVMConversionError(f"the PrimFunc could not be built as TVM objects: {exc}") from exc
