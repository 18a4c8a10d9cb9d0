"""The TVM writer of the PrimFuncs memcore's passes write: a
:class:`~memcore_py.transform.legalize_elementwise.TirKernel` built as TVM objects.

Design
------
The legalization rule of DataflowUseInplaceCalls is written once, as a ``TirKernel``
(:mod:`memcore_py.transform.legalize_elementwise`); its text is one writer of it
(``kernel_text``), this module is the other. It makes the objects TVM's script parser makes
of that text, node by node through TVM's constructors (``tirx`` buffers, loads and stores,
``s_tir`` blocks, loops), with no parse: a buffer parameter is a buffer variable of the
parser's defaults (scope ``global``, element offset ``T.int64(0)``, alignment 64, offset
factor 1, no layout); the root block is implicit, as ``# with T.sblock("root")`` is in the
text, and owns the allocated buffers; ``T.grid`` and ``range`` are serial loops from 0;
``T.axis.remap`` / ``T.axis.spatial`` bind data-parallel block variables to the loops; a
read or write region is one element per index; the function carries the parser's attributes
``s_tir`` and ``tirx.noalias``.

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
    """One PrimFunc's objects: its symbolic variables and buffers by name."""

    def __init__(self, api, kernel):
        import tvm.s_tir
        import tvm.tirx
        from tvm.script import tirx as script_tirx

        self.tirx = tvm.tirx
        self.s_tir = tvm.s_tir
        self.ffi = tvm.tirx._ffi_api
        self.script_max = script_tirx.max
        self.api = api
        self.kernel = kernel
        self.vars: dict = {}
        self.buffers: dict = {}
        self.ints: dict = {}

    def int64(self, value: int):
        r = self.ints.get(value)
        if r is None:
            r = self.ints[value] = self.api.IntImm("int64", value)
        return r

    def prim(self, e):
        t = type(e)
        if t is IntImm:
            return self.api.IntImm(e.dtype, e.value)
        if t is PrimVar:
            r = self.vars.get(e.name)
            if r is None:
                r = self.vars[e.name] = self.tirx.Var(e.name, e.dtype)
            return r
        name = _PRIM_BINARY.get(t)
        if name is None:
            raise TVMConversionError(f"symbolic expression {e!r} in a PrimFunc shape")
        return getattr(self.tirx, name)(self.prim(e.a), self.prim(e.b))

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
            return self.tirx.BufferLoad(self.buffers[e[1]], self.index(e[2], bvars))
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

    def region(self, name: str, index, bvars):
        one = self.int64(1)
        rng = self.api.tvm.ir.Range.from_min_extent
        return self.tirx.BufferRegion(self.buffers[name], [rng(i, one) for i in self.index(index, bvars)])

    def block(self, block):
        tirx, s_tir = self.tirx, self.s_tir
        dims = [self.prim(d) for d in block.dims]
        dtypes = [d.dtype for d in block.dims]
        r = len(dims)
        loops = [tirx.Var(f"{block.loop_prefix}{k}", t) for k, t in enumerate(dtypes)]
        rng = self.api.tvm.ir.Range
        if r == 0:
            bvars = [tirx.Var("vi", "int64")]
            iter_vars = [tirx.IterVar(rng(self.int64(0), self.int64(1)), bvars[0], 0)]
            bindings = [self.int64(0)]
        else:
            bvars = [tirx.Var(f"v_{block.loop_prefix}{k}", t) for k, t in enumerate(dtypes)]
            iter_vars = [tirx.IterVar(rng(self.api.IntImm(t, 0), d), v, 0) for t, d, v in zip(dtypes, dims, bvars)]
            bindings = loops
        buf, index = block.write
        store = tirx.BufferStore(self.buffers[buf], self.value(block.value, bvars), self.index(index, bvars))
        reads = [self.region(b, i, bvars) for b, i in block.reads]
        writes = [self.region(buf, index, bvars)]
        body = s_tir.SBlockRealize(bindings, True, s_tir.SBlock(iter_vars, reads, writes, block.name, store))
        for loop, t, d in zip(reversed(loops), reversed(dtypes), reversed(dims)):
            body = tirx.For(loop, self.api.IntImm(t, 0), d, tirx.ForKind.SERIAL, body)
        return body

    def prim_func(self, attrs):
        tirx, s_tir = self.tirx, self.s_tir
        params = []
        for p in self.kernel.params:
            if p.shape is None:
                params.append(self.prim(PrimVar(p.name, p.dtype)))
            else:
                params.append(self.buffer(p.name, p.shape, p.dtype))
        allocs = [self.buffer(name, shape, dtype) for name, shape, dtype in self.kernel.allocs]
        nests = [self.block(b) for b in self.kernel.blocks]
        body = nests[0] if len(nests) == 1 else tirx.SeqStmt(nests)
        root = s_tir.SBlockRealize([], True, s_tir.SBlock([], [], [], "root", body, alloc_buffers=allocs))
        return tirx.PrimFunc(params, root, None, self.api.ir.make_node("ir.DictAttrs", **attrs))


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
