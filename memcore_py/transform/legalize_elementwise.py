"""TIR text of TVM's legalization of the in-place capable element-wise ops, and of its
in-place variant (what DataflowUseInplaceCalls adds to the module).

Design
------
DataflowUseInplaceCalls (spec §3.6) legalizes the chosen call with TVM's ``FLegalize``
(``topi.add`` / ``subtract`` / ``multiply`` / ``divide``, ``topi.nn.relu``, ``silu`` through
``bb.call_te``) and then replaces the PrimFunc's output buffer by the chosen input buffer.
memcore keeps PrimFuncs as text, so this module *writes* that TIR directly, in the form TVM
0.27 prints it (``T.sblock`` blocks, ``T.axis.remap``, ``tirx.noalias``), from a small
description of the call (:class:`ElementwiseCall`): op, dtype, result shape and the
operands (a buffer with its shape and name, or a scalar constant folded into the
expression, as TVM's ``_try_convert_to_scalar_const`` does for binary ops). Nothing else
of TE or TOPI is needed, because these six ops are one loop nest each (two for ``silu``:
``sigmoid`` into a ``compute`` buffer, then the product):

- loops ``ax0, ax1, ...`` (``i0, ...`` for ``relu`` and the ``sigmoid`` of ``silu``) over
  the result shape, ``T.grid`` for rank >= 2, ``range`` for rank 1, none for rank 0 (then
  ``vi = T.axis.spatial(T.int64(1), T.int64(0))`` and ``[()]`` indexing);
- broadcasting as TOPI's ``InputIndexFromBroadcast``: operand dims aligned to the right, a
  dim equal to the result dim is indexed by its block var, a constant 1 by
  ``T.int64(0)``, missing leading dims are dropped;
- an integer constant folded into an ``add``/``multiply`` is written on the right
  (``x + 7`` for ``add(7, x)``), as TIR's expression constructor does; float ones stay;
- block names ``T_add``, ``T_subtract``, ``T_multiply``, ``T_divide``, ``compute``; integer
  division is ``T.Div``; scalars spelled as TVM prints them (``T.float32(0.5)`` with
  17 significant digits, bare int32 literals).

With ``inplace_index=None`` the text is the legalization itself (output buffer ``T_add``,
``compute``, ``T_multiply`` as last parameter); with an index it is the in-place variant,
whose output buffer is that operand's buffer and which has no output parameter.
The oracle tests parse both with TVM and compare them structurally with TVM's
``LegalizeOps`` / ``DataflowUseInplaceCalls`` PrimFuncs.

:func:`structure_key` gives a key equal for two calls exactly when TVM's structural
equality would find their PrimFuncs equal (names do not matter, symbolic variables are
numbered by first appearance), which the pass uses to share functions as TVM's
``BlockBuilder.AddFunction`` does; the text is the same function of the key, so equal keys
mean equal text up to names (``canonical=True`` writes that name-free text).

The rule is written once, as a :class:`TirKernel` (parameters, allocated buffers and loop
nests, each store's value an expression tree); :func:`kernel_text` writes its text, and the
TVM bridge builds the same function as TVM objects from it
(:mod:`memcore_py.tvm.tir_writer`), so TVM's parser is not needed to hand the function to
TVM. The PrimFunc :func:`prim_func` returns carries its kernel as ``source``.

A pass writing many kernels passes one :class:`KernelFacts` to all of them: what they ask of
the same dims and calls (free variables, canonical forms, texts, buffer names) is then
computed once. :func:`legalization_params` gives a legalization's parameters without its loop
nest, for a function that is only named and compared (:func:`signature_prim_func`).
"""
from __future__ import annotations

import functools
import keyword
import math
from dataclasses import dataclass

import numpy as np

from ..errors import PassError
from ..ir.expr import Constant, PrimFunc, PrimFuncParam
from ..ir.types import TensorType
from ..ir.prim import BinaryOp, IntImm, PrimVar, free_prim_vars, prove_equal, simplify_const
from ..ir.prim import canonical as canonical_form
from ..ir.text.prim_func_text import format_prim

__all__ = ["ElementwiseCall", "KernelFacts", "Operand", "TirBlock", "TirKernel", "folded_operand",
           "kernel_and_text", "kernel_prim_func", "kernel_text", "legalization_params", "prim_func", "prim_func_text",
           "signature_prim_func", "structure_key", "SUPPORTED"]

_BINARY = {"relax.add": ("+", "T_add"), "relax.subtract": ("-", "T_subtract"),
           "relax.multiply": ("*", "T_multiply"), "relax.divide": ("/", "T_divide")}
_UNARY = ("relax.nn.relu", "relax.nn.silu")
#: Ops whose legalization this module writes.
SUPPORTED = frozenset(_BINARY) | frozenset(_UNARY)
_INDENT = "    "


@dataclass(frozen=True)
class Operand:
    """One operand of the legalized call: a buffer (``shape`` a tuple of PrimExpr, ``name``
    its preferred TIR name) or a folded scalar constant (``value`` a Python number,
    ``shape`` None)."""

    shape: tuple | None
    name: str = "A"
    value: object = None

    @property
    def is_buffer(self) -> bool:
        return self.shape is not None


@dataclass(frozen=True)
class ElementwiseCall:
    """What the legalized PrimFunc depends on: ``op`` (a name in :data:`SUPPORTED`),
    ``dtype``, the result ``shape`` and the ``operands`` in the op's argument order."""

    op: str
    dtype: str
    shape: tuple
    operands: tuple


@dataclass(frozen=True)
class TirBlock:
    """One loop nest over ``dims`` and the block inside it storing ``value``.

    ``reads`` is a tuple of ``(buffer name, index)`` and ``write`` one such pair; an index is
    a tuple with, per buffer dim, the position of the block variable indexing it or ``-1``
    for a constant ``0`` (``()`` for a rank-0 buffer). ``value`` is an expression tree:
    ``("load", buffer, index)``, ``("imm", value, dtype)``, ``(op, a, b)`` for the infix
    ``op`` in ``+ - * /``, or ``(call, *args)`` for ``T.Div``, ``T.max``, ``T.sigmoid``.
    Loops are named ``{loop_prefix}{k}``, block variables ``v_{loop}`` (``vi`` for rank 0)."""

    name: str
    loop_prefix: str
    dims: tuple
    reads: tuple
    write: tuple
    value: tuple


@dataclass(frozen=True)
class TirKernel:
    """A legalized element-wise PrimFunc as data: ``params`` (:class:`PrimFuncParam`,
    buffers and scalars in signature order), ``allocs`` (``(name, dims, dtype)`` of the
    buffers the root block allocates), ``blocks`` (:class:`TirBlock`, in order) and the
    element ``dtype``. Private, attribute ``tirx.noalias``."""

    params: tuple
    allocs: tuple
    blocks: tuple
    dtype: str


def scalar_text(value, dtype: str) -> str:
    """A scalar as TVM prints it in TIR: ``T.float32(0.5)``, bare int32, ``T.int64(2)``.

    Raises
    ------
    NotImplementedError
        A non-finite float (TVM prints it through a string form memcore does not write).
    """
    if dtype.startswith(("float", "bfloat")):
        v = float(value)
        if not math.isfinite(v):
            raise NotImplementedError(f"folding the non-finite scalar constant {v} ({dtype}) into TIR")
        s = "%.17g" % v
        if not any(c in s for c in ".e"):
            s += ".0"
        return f"T.{dtype}({s})"
    if dtype == "bool":
        return "T.bool(True)" if bool(value) else "T.bool(False)"
    v = int(value)
    return str(v) if dtype == "int32" else f"T.{dtype}({v})"


def _dims(shape, rename) -> list:
    return [format_prim(d, tir=True, rename=rename) for d in shape]


def _shape_tuple(dims) -> str:
    if not dims:
        return "()"
    return "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"


def _buffer_decl(name, dims, dtype) -> str:
    return f'{name}: T.Buffer({_shape_tuple(dims)}, "{dtype}")'


def _same_dim(d, o, facts=None) -> bool:
    """Whether two dims are provably equal (constants and variables compared without the
    prover: a variable is provably equal only to itself, a variable of the same name).
    ``facts``: a :class:`KernelFacts` keeping each dim's canonical form for the caller's next
    questions."""
    if d is o:
        return True
    td, to = type(d), type(o)
    if td is IntImm:
        if to is IntImm:
            return d.value == o.value
        if to is PrimVar:
            return False
    elif td is PrimVar:
        if to is PrimVar:
            return d.name == o.name
        if to is IntImm:
            return False
    if _same_tree(d, o):
        return True
    if facts is None:
        return prove_equal(d, o)
    return facts.canonical(d) == facts.canonical(o)


class KernelFacts:
    """What the kernels of one pass call ask repeatedly, each answer computed once: per dim
    object its free variables (:func:`~memcore_py.ir.prim.free_prim_vars`), its canonical
    form (:func:`~memcore_py.ir.prim.canonical`) and its TIR text under a renaming of those
    variables (:func:`~memcore_py.ir.text.prim_func_text.format_prim`); per call its buffer names
    and input parameters (:func:`_operands`, shared by the legalization and the in-place
    variants). One belongs to a pass call: the objects asked about are immutable and kept
    alive here, so an ``id`` names one of them; the dicts it returns are shared and must not
    be changed."""

    __slots__ = ("_canon", "_operands", "_text", "_vars")

    def __init__(self):
        self._vars: dict = {}  # id(dim) -> (dim, {name: PrimVar})
        self._canon: dict = {}  # id(dim) -> (dim, canonical form)
        self._text: dict = {}  # (id(dim), names written for its variables) -> (dim, text)
        self._operands: dict = {}  # (id(call), canonical) -> (call, _operands(call, canonical))

    def operands(self, call, canonical: bool):
        hit = self._operands.get((id(call), canonical))
        if hit is None:
            hit = self._operands[(id(call), canonical)] = (call, _operands(call, canonical, self))
        return hit[1]

    def free_vars(self, d) -> dict:
        hit = self._vars.get(id(d))
        if hit is None:
            hit = self._vars[id(d)] = (d, free_prim_vars(d))
        return hit[1]

    def canonical(self, d):
        hit = self._canon.get(id(d))
        if hit is None:
            hit = self._canon[id(d)] = (d, canonical_form(d))
        return hit[1]

    def tir_text(self, d, rename: dict) -> str:
        """``format_prim(d, tir=True, rename=rename)`` (``rename`` covering ``d``'s variables)."""
        key = (id(d), tuple(rename[v] for v in self.free_vars(d)))
        hit = self._text.get(key)
        if hit is None:
            hit = self._text[key] = (d, format_prim(d, tir=True, rename=rename))
        return hit[1]


def _same_tree(d, o) -> bool:
    """Whether two dims are written alike (the same operators over the same variables and
    constants): equal without the prover. False proves nothing."""
    if d is o:
        return True
    t = type(d)
    if t is not type(o):
        return False
    if t is IntImm:
        return d.value == o.value
    if t is PrimVar:
        return d.name == o.name
    if not isinstance(d, BinaryOp):
        return False
    return _same_tree(d.a, o.a) and _same_tree(d.b, o.b)


def _index(operand_shape, out_shape, facts=None) -> tuple:
    """TOPI's broadcast index of an operand inside the result's loop nest (see
    :class:`TirBlock`)."""
    r, k = len(out_shape), len(operand_shape)
    if k == 0:
        return ()
    if operand_shape is out_shape:
        return tuple(range(r))
    idx = []
    for i in range(r - k, r):
        d, o = operand_shape[i - (r - k)], out_shape[i]
        if _same_dim(d, o, facts):
            idx.append(i)
        elif (d.value if type(d) is IntImm else simplify_const(d)) == 1:
            idx.append(-1)
        else:  # not reachable for a result type Relax inferred; kept explicit
            idx.append(i)
    return tuple(idx)


def _index_text(index, bvars) -> str:
    if not index:
        return "[()]"
    return "[" + ", ".join(bvars[i] if i >= 0 else "T.int64(0)" for i in index) + "]"


def _expr_text(e, bvars) -> str:
    kind = e[0]
    if kind == "load":
        return e[1] + _index_text(e[2], bvars)
    if kind == "imm":
        return scalar_text(e[1], e[2])
    if kind in ("+", "-", "*", "/"):
        return f"{_expr_text(e[1], bvars)} {kind} {_expr_text(e[2], bvars)}"
    return f"{kind}({', '.join(_expr_text(a, bvars) for a in e[1:])})"


def _block_text(lines, block: TirBlock, dims):
    """One loop nest and its block (``dims`` the loop extents as text)."""
    ind = _INDENT
    r = len(dims)
    loops = [f"{block.loop_prefix}{k}" for k in range(r)]
    bvars = [f"v_{lv}" for lv in loops]
    if r == 1:
        lines.append(f"{ind}for {loops[0]} in range({dims[0]}):")
        ind += _INDENT
    elif r > 1:
        lines.append(f"{ind}for {', '.join(loops)} in T.grid({', '.join(dims)}):")
        ind += _INDENT
    lines.append(f'{ind}with T.sblock("{block.name}"):')
    ind += _INDENT
    if r == 0:
        lines.append(f"{ind}vi = T.axis.spatial(T.int64(1), T.int64(0))")
    elif r == 1:
        lines.append(f"{ind}{bvars[0]} = T.axis.spatial({dims[0]}, {loops[0]})")
    else:
        lines.append(f'{ind}{", ".join(bvars)} = T.axis.remap("{"S" * r}", [{", ".join(loops)}])')
    target = block.write[0] + _index_text(block.write[1], bvars)
    lines.append(f"{ind}T.reads({', '.join(b + _index_text(i, bvars) for b, i in block.reads)})")
    lines.append(f"{ind}T.writes({target})")
    lines.append(f"{ind}{target} = {_expr_text(block.value, bvars)}")


@functools.lru_cache(maxsize=None)
def _loop_names(rank: int) -> frozenset:
    """The loop and block variable names of a rank-``rank`` loop nest."""
    return frozenset(f"{p}{k}" for p in ("ax", "v_ax", "i", "v_i") for k in range(rank))


def _unique_names(call: ElementwiseCall, reserved: set, canonical: bool) -> list:
    names, used = [], set(reserved)
    for k, o in enumerate(call.operands):
        if not o.is_buffer:
            names.append(None)
            continue
        base = f"p{k}" if canonical else (o.name if o.name.isidentifier() else "A")
        if keyword.iskeyword(base) or base in ("T", "True", "False", "None"):
            base = base + "_1"
        name, j = base, 0
        while name in used:
            j += 1
            name = f"{base}_{j}"
        used.add(name)
        names.append(name)
    return names


def prim_func(call: ElementwiseCall, func_name: str, inplace_index=None, *, facts=None) -> PrimFunc:
    """The PrimFunc node of :func:`prim_func_text` (private, ``tirx.noalias``): its
    signature from the kernel (no parsing), its :class:`TirKernel` as ``source``, and its
    text written when first read. ``facts``: the caller's :class:`KernelFacts` (None: one for
    this call)."""
    kernel, text_of = kernel_and_text(call, func_name, inplace_index, facts=facts)
    return kernel_prim_func(kernel, text_of)


def kernel_and_text(call: ElementwiseCall, func_name: str, inplace_index=None, *, facts=None):
    """``(TirKernel, text_of)``: the kernel of :func:`prim_func` and a function writing its
    text named ``func_name``."""
    kernel, rename = _kernel(call, inplace_index, False, facts)
    return kernel, lambda: kernel_text(kernel, func_name, rename)


def legalization_params(call: ElementwiseCall, *, facts=None) -> tuple:
    """The parameters of the legalization of ``call`` (``prim_func(call, name).params``),
    found without writing its loop nest."""
    return _signature(call, None, False, facts)[1]


class _KernelLoad:
    """``PrimFunc.lazy`` loader of a kernel's function: the signature at once, the text
    (``text_of()``) when it is first read. ``params``: the signature when there is no kernel
    (``kernel`` None), else the kernel's."""

    __slots__ = ("kernel", "params", "text_of")

    def __init__(self, kernel, text_of, params=None):
        self.kernel = kernel
        self.text_of = text_of
        self.params = kernel.params if params is None else params

    def __call__(self):
        return self.params, {"tirx.noalias": True}, PrimFunc.TEXT_LATER, True

    def text(self, _params, _attrs, _private):
        return self.text_of()


def kernel_prim_func(kernel: TirKernel, text_of) -> PrimFunc:
    """The private ``tirx.noalias`` PrimFunc of ``kernel`` (its ``source``) whose text is
    ``text_of()``, called when the text is first read (a function handed to TVM as objects is
    never printed)."""
    return PrimFunc.lazy(_KernelLoad(kernel, text_of), kernel)


def signature_prim_func(params, text_of) -> PrimFunc:
    """The private ``tirx.noalias`` PrimFunc with parameters ``params`` and the text
    ``text_of()`` (called when first read), without a kernel (no ``source``): a function that
    is compared and named but never written to TVM."""
    return PrimFunc.lazy(_KernelLoad(None, text_of, tuple(params)), None)


def prim_func_text(call: ElementwiseCall, func_name: str, inplace_index=None, *, canonical: bool = False) -> str:
    """The TVMScript text of the legalized PrimFunc of ``call`` (``inplace_index`` None) or
    of its in-place variant writing operand ``inplace_index``.

    Parameters
    ----------
    call : ElementwiseCall
    func_name : str
        Name after ``def``.
    inplace_index : int or None
        Index into ``call.operands`` (a buffer operand whose shape is the result's).
    canonical : bool, default False
        Name buffers ``p0, p1, ...`` and symbolic variables ``s0, s1, ...`` (for
        :func:`structure_key`).

    Raises
    ------
    PassError
        An op outside :data:`SUPPORTED`, or an ``inplace_index`` that is not a buffer
        operand of the result's shape.
    """
    kernel, rename = _kernel(call, inplace_index, canonical)
    return kernel_text(kernel, func_name, rename)


def kernel_text(kernel: TirKernel, func_name: str, rename=None) -> str:
    """The TVMScript text of ``kernel`` named ``func_name`` (``rename``: symbolic variable
    -> the name to write, as :func:`~memcore_py.ir.text.prim_func_text.format_prim` takes it)."""
    shape_text = {}  # shapes are often one shared tuple: format once

    def dims_of(shape):
        dims = shape_text.get(id(shape))
        if dims is None:
            dims = shape_text[id(shape)] = _dims(shape, rename)
        return dims

    params = [_buffer_decl(p.name, dims_of(p.shape), p.dtype) if p.shape is not None else f"{p.name}: T.{p.dtype}"
              for p in kernel.params]
    lines = ["@T.prim_func(private=True, s_tir=True)", f"def {func_name}({', '.join(params)}):",
             f'{_INDENT}T.func_attr({{"tirx.noalias": True}})', f'{_INDENT}# with T.sblock("root"):']
    for name, shape, dtype in kernel.allocs:
        alloc = f"{name} = T.sblock_alloc_buffer({_shape_tuple(dims_of(shape))}"
        lines.append(f"{_INDENT}{alloc})" if dtype == "float32" else f'{_INDENT}{alloc}, "{dtype}")')
    for block in kernel.blocks:
        _block_text(lines, block, dims_of(block.dims))
    return "\n".join(lines) + "\n"


def _operands(call: ElementwiseCall, canonical: bool, facts):
    """``(names, inputs, rename, block_name)`` of ``call``'s PrimFuncs (the legalization and
    every in-place variant share them): each operand's buffer name (None for a folded
    constant), the input buffer parameters, the names the symbolic variables are written
    with (None: their own) and the block name."""
    sym: dict = {}  # symbolic variable -> canonical name, by first appearance
    for shape in (call.shape, *(o.shape for o in call.operands if o.is_buffer)):
        for d in shape:
            if type(d) is not IntImm:
                for v in facts.free_vars(d):
                    sym.setdefault(v, f"s{len(sym)}")
    rename = sym if canonical else None
    block_name = _BINARY[call.op][1] if call.op in _BINARY else "compute"
    reserved = {"compute", "T_multiply", block_name, "vi"} | sym.keys() | set((rename or {}).values())
    reserved |= _loop_names(len(call.shape))
    names = _unique_names(call, reserved, canonical)
    dtype = call.dtype
    inputs = tuple(PrimFuncParam(n, dtype, o.shape) for n, o in zip(names, call.operands) if n is not None)
    return names, inputs, rename, block_name


def _signature(call: ElementwiseCall, inplace_index, canonical: bool, facts=None):
    """``(names, params, rename, block_name, out_name, facts)`` of the legalization of
    ``call`` (in place of ``inplace_index``): :func:`_operands`, the parameters, the output
    buffer's name, and the :class:`KernelFacts` (``facts``, or a new one)."""
    if call.op not in SUPPORTED:
        raise PassError(f"no elementwise legalization for {call.op}")
    if facts is None:
        facts = KernelFacts()
    names, params, rename, block_name = facts.operands(call, canonical)
    if inplace_index is not None:
        r = len(call.shape)
        if type(inplace_index) is not int or not 0 <= inplace_index < len(call.operands):
            raise PassError(f"{call.op}: in-place index {inplace_index!r} is not an operand index "
                            f"(0..{len(call.operands) - 1})")
        o = call.operands[inplace_index]
        if not o.is_buffer or len(o.shape) != r or not all(_same_dim(a, b, facts) for a, b in zip(o.shape, call.shape)):
            raise PassError(f"operand {inplace_index} cannot hold the result of {call.op} in place")
        out_name = names[inplace_index]
    else:
        out_name = "T_multiply" if call.op == "relax.nn.silu" else block_name
        params += (PrimFuncParam(out_name, call.dtype, call.shape),)
    return names, params, rename, block_name, out_name, facts


def _kernel(call: ElementwiseCall, inplace_index, canonical: bool, facts=None):
    """``(TirKernel, rename)``: the legalization of ``call`` (in place of ``inplace_index``)
    and the names its symbolic variables are written with (None: their own). ``facts``: a
    :class:`KernelFacts` kept across calls (None: one for this call)."""
    names, params, rename, block_name, out_name, facts = _signature(call, inplace_index, canonical, facts)
    dtype = call.dtype
    shape = call.shape
    out = (out_name, _index(shape, shape))
    index = [None if n is None else _index(o.shape, shape, facts) for n, o in zip(names, call.operands)]
    allocs = ()
    if call.op in _BINARY:
        sym_op = _BINARY[call.op][0]
        is_float = dtype.startswith(("float", "bfloat"))
        terms = [("load", n, i) if n is not None else ("imm", o.value, dtype)
                 for n, o, i in zip(names, call.operands, index)]
        if call.op == "relax.divide" and not is_float:
            value = ("T.Div", terms[0], terms[1])
        else:
            if not is_float and sym_op in "+*" and not call.operands[0].is_buffer:
                terms.reverse()  # TIR's constructor moves an integer constant to the right
            value = (sym_op, terms[0], terms[1])
        reads = tuple((n, i) for n, i in zip(names, index) if n is not None)
        blocks = (TirBlock(block_name, "ax", shape, reads, out, value),)
    elif call.op == "relax.nn.relu":
        x = ("load", names[0], index[0])
        blocks = (TirBlock("compute", "i", shape, (x[1:],), out, ("T.max", x, ("imm", 0, dtype))),)
    else:  # silu: sigmoid into an intermediate buffer, then the product
        x = ("load", names[0], index[0])
        comp = ("load", "compute", _index(shape, shape))
        allocs = (("compute", shape, dtype),)
        blocks = (TirBlock("compute", "i", shape, (x[1:],), comp[1:], ("T.sigmoid", x)),
                  TirBlock("T_multiply", "ax", shape, (x[1:], comp[1:]), out, ("*", x, comp)))
    return TirKernel(params, allocs, blocks, dtype), rename


def structure_key(call: ElementwiseCall, inplace_index=None, *, facts=None) -> tuple:
    """A key equal for two calls exactly when their PrimFuncs (legalized, or in place of
    ``inplace_index``) are structurally equal, i.e. when :func:`prim_func_text` writes the
    same text up to names: op, dtype, dims (symbolic variables numbered by first
    appearance, expressions compared as written, as TVM's structural equality does),
    folded constants and the index. ``facts``: the caller's :class:`KernelFacts`."""
    rename: dict = {}
    if facts is None:
        facts = KernelFacts()

    def dims(shape):
        out = []
        for d in shape:
            if type(d) is IntImm:
                out.append(d.value)
            else:
                for v in facts.free_vars(d):
                    rename.setdefault(v, f"s{len(rename)}")
                out.append(facts.tir_text(d, rename))
        return tuple(out)

    out_dims = dims(call.shape)
    ops = tuple(dims(o.shape) if o.is_buffer else ("const", repr(o.value)) for o in call.operands)
    return call.op, call.dtype, out_dims, ops, inplace_index


def folded_operand(args) -> int:
    """The operand TVM's binary legalization folds into the kernel as a literal
    (``_try_convert_to_scalar_const``): ``args[1]`` if it is a 0-d Constant, else ``args[0]``
    if it is one; -1 when none is (or the call does not have two operands)."""
    if len(args) != 2:
        return -1
    for k in (1, 0):
        a = args[k]
        t = getattr(a, "ty", None)
        if type(a) is Constant and isinstance(t, TensorType) and t.ndim == 0:
            return k
    return -1


def scalar_of(data) -> object:
    """The Python value of a 0-d numpy array (what TVM folds into the TIR)."""
    return np.asarray(data)[()].item()

