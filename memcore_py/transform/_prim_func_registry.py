"""Add PrimFuncs to a module the way TVM's ``BlockBuilder::AddFunction`` does, with an index
that makes the structural-dedup lookup cheap. Shared by the passes that add PrimFuncs
(AttachAttrLayoutFreeBuffers; DataflowUseInplaceCalls may use it too).

API
---
``reg = PrimFuncRegistry(mod)``
    A registry over the functions of ``mod`` (never mutated).
``reg.add(func, hint, key=None) -> GlobalVar``
    If the module, or an earlier ``add``, holds a PrimFunc structurally equal to ``func``
    (:func:`~memcore_py.ir.structural.structural_equal`: parameter dtypes and shapes, attrs,
    ``private``, text up to the function's name and whitespace), its GlobalVar; otherwise
    ``func`` is added under ``hint`` made unique by a
    :class:`~memcore_py.ir.builder.NameTable` (TVM's ``NameSupply``: ``matmul``, ``matmul1``,
    ``matmul2``, ... skipping every name already in the module), exactly the names
    :meth:`~memcore_py.ir.builder.BlockBuilder.add_func` gives. ``key`` is the caller's
    structure key of a function it wrote (DataflowUseInplaceCalls passes
    :func:`~.legalize_elementwise.structure_key`): two keyed functions are equal exactly
    when their keys are, so their texts are never compared; a keyed function is still
    compared structurally with the module's own functions.
``reg.module(updates=None) -> IRModule``
    ``mod`` with ``updates`` (GlobalVar -> function, replacing functions of ``mod``) applied
    and the added PrimFuncs appended in the order they were added.

Why not ``BlockBuilder.add_func`` itself: it fingerprints every function of the module by
its whole normalized text on the first call. Functions with different attributes or
signatures can never be equal, so this registry buckets PrimFuncs by ``private``, parameter
count and attribute names, then compares attribute values and parameter signatures, and
reads texts only when all of those agree; a pass that adds one copy per distinct attribute
list (most of them unlike anything in the module) then never normalizes the module's texts.
"""
from __future__ import annotations

from ..errors import PassError
from ..ir.builder import NameTable
from ..ir.expr import GlobalVar, PrimFunc
from ..ir.module import IRModule
from ..ir.prim import IntImm
from ..ir.structural import structural_equal

__all__ = ["GlobalNames", "PrimFuncRegistry"]


def _canon(v):
    """A hashable form of an attribute value, equal for values structural equality equates
    (lists and tuples alike; ``1``, ``True`` and ``IntImm(1)`` apart)."""
    if isinstance(v, (list, tuple)):
        return ("seq",) + tuple(_canon(x) for x in v)
    if isinstance(v, dict):
        return ("dict",) + tuple(sorted(((repr(k), _canon(x)) for k, x in v.items())))
    if isinstance(v, IntImm):
        return ("IntImm", v.value, v.dtype)
    try:
        hash(v)
    except TypeError:
        return (type(v).__name__, repr(v))
    return (type(v).__name__, v)


def _coarse(func: PrimFunc):
    """A first, cheap key: ``private``, the parameter count and the attribute names."""
    return (func.private, len(func.params), tuple(sorted(map(str, func.attrs))))


def _signature(params) -> tuple:
    """Parameter dtypes and shapes (symbolic dims, matched by position, as '?')."""
    return tuple((p.dtype, None if p.shape is None else tuple(d.value if type(d) is IntImm else "?" for d in p.shape))
                 for p in params)


def _bucket(func: PrimFunc, sig=None):
    """Equal for structurally equal PrimFuncs; ``sig``: :func:`_signature` of its params if
    known."""
    return (func.private, _canon(func.attrs), _signature(func.params) if sig is None else sig)


class GlobalNames:
    """Fresh names for functions added to a module, as TVM's ``NameSupply`` gives them
    (``BlockBuilder::AddFunction``): ``hint``, ``hint1``, ``hint2``, ... per hint, skipping
    every name already taken (the module's, and the ones handed out).

    Parameters
    ----------
    taken : iterable of str
        The names of the module's functions.
    """

    def __init__(self, taken):
        self.names = NameTable()
        self.taken = set(taken)

    def fresh(self, hint: str) -> str:
        """The next free name for ``hint`` (taken from then on)."""
        name = self.names.fresh(hint)
        while name in self.taken:
            name = self.names.fresh(hint)
        self.taken.add(name)
        return name


class PrimFuncRegistry:
    """See the module docstring.

    Parameters
    ----------
    mod : IRModule
        The module the PrimFuncs are added to (not mutated).
    """

    def __init__(self, mod: IRModule):
        if not isinstance(mod, IRModule):
            raise PassError(f"PrimFuncRegistry expects an IRModule; got {type(mod).__name__}")
        self.mod = mod
        self.names = GlobalNames(gv.name for gv in mod.functions)
        self.added: dict = {}
        """GlobalVar -> PrimFunc, in the order :meth:`add` added them."""
        self._index = None  # coarse key -> [(GlobalVar, PrimFunc)] not yet in a group
        self._groups: dict = {}  # coarse key -> {bucket -> [(GlobalVar, PrimFunc)]}
        self._keys: dict = {}  # GlobalVar -> the caller's structure key (added functions only)
        self._signatures: dict = {}  # id(params) -> (params, signature); params kept alive

    def _build_index(self):
        index = {}
        for gv, f in self.mod.functions.items():
            if type(f) is PrimFunc:
                index.setdefault(_coarse(f), []).append((gv, f))
        return index

    def _group(self, coarse) -> dict:
        """bucket -> [(GlobalVar, PrimFunc)] of the functions whose coarse key is ``coarse``
        (their fine keys computed once, when the group is first asked for)."""
        group = self._groups.get(coarse)
        if group is None:
            group = self._groups[coarse] = {}
            for gv, f in self._index.pop(coarse, ()):
                group.setdefault(_bucket(f), []).append((gv, f))
        return group

    def add(self, func: PrimFunc, hint: str, key=None) -> GlobalVar:
        """The GlobalVar of a function equal to ``func`` (added under a fresh name from
        ``hint`` when there is none); ``key``: see the module docstring."""
        if type(func) is not PrimFunc:
            raise PassError(f"PrimFuncRegistry.add expects a PrimFunc; got {type(func).__name__}")
        if self._index is None:
            self._index = self._build_index()
        params = func.params  # copies of one function share its params tuple: one signature
        hit = self._signatures.get(id(params))
        if hit is None or hit[0] is not params:
            hit = self._signatures[id(params)] = (params, _signature(params))
        candidates = self._group(_coarse(func)).setdefault(_bucket(func, hit[1]), [])
        for gv, other in candidates:
            other_key = self._keys.get(gv)
            if key is not None and other_key is not None:
                if other_key == key:
                    return gv
            elif structural_equal(other, func):
                return gv
        gv = GlobalVar(self.names.fresh(hint), func.ty)
        candidates.append((gv, func))
        self.added[gv] = func
        if key is not None:
            self._keys[gv] = key
        return gv

    def module(self, updates=None) -> IRModule:
        """``mod`` with ``updates`` applied and the added PrimFuncs appended."""
        merged = dict(updates or {})
        merged.update(self.added)
        return self.mod.with_functions(merged) if merged else self.mod
