"""AttachAttrLayoutFreeBuffers: tell each ``call_tir`` PrimFunc which inputs are weights.

Port of TVM 0.27's ``relax.transform.AttachAttrLayoutFreeBuffers()`` (src/relax/transform/
attach_attr_layout_free_buffers.cc; spec §4): ``Sequential([module pass
"_AttachAttrLayoutFreeBuffers", DeadCodeElimination()], name "AttachAttrLayoutFreeBuffers")``.
Layout-free buffers are model weights and Relax constants; a tuning pipeline may then
rewrite their layout ahead of time. TVM's docstring advises CanonicalizeBindings first.

Stage 1 (module pass ``_AttachAttrLayoutFreeBuffers``), per top-level Relax function
---------------------------------------------------------------------------------
- *Layout-free expressions* (a set by object identity, emptied for each top-level function):
  the weight parameters ``params[num_input:]`` of a function whose int attribute
  ``num_input`` is set, and every :class:`~memcore_py.ir.Constant` node the walk visits.
  Only these exact objects count: a weight re-bound ``wa = w`` is not recognised, nor a
  constant bound to a variable. Meeting a nested function with ``num_input`` while the set is
  not empty is an error (TVM: "meet a non-global function with num_input attr").
- Each ``R.call_tir(f, (a0, a1, ...), ...)``, after its arguments are visited: the positions
  ``i`` whose ``ai`` is layout-free form ``layout_free_buffers`` (a tuple of ints, also
  when empty, replacing any previous value). The PrimFunc ``f`` *of the input module* gets
  that attribute (:func:`~memcore_py.ir.text.prim_func_text.with_attrs`, text synced) and is
  added with :meth:`~memcore_py.transform._prim_func_registry.PrimFuncRegistry.add` (TVM
  ``BlockBuilder::AddFunction``), which returns the GlobalVar of an equal function already
  in the module (so call sites with the same set share one copy) or adds it under a fresh
  name from TVM's name-supply rule, which skips names in use (``matmul`` -> ``matmul1``, then
  ``matmul2``; the old ``matmul`` is still in
  the module). The call keeps its attrs, ``ty_args`` and type; its callee becomes the new
  GlobalVar.
- The copy of a *public* PrimFunc keeps the original's ``global_symbol`` (``matmul``), so
  it is public too and DeadCodeElimination keeps every copy: TVM's output, reproduced
  although the copies then share one external symbol.
- Other calls (``call_tir_inplace``, ``call_dps_packed``, lowered calls) are left alone.

Stage 2: :class:`~memcore_py.transform.dead_code_elimination.DeadCodeElimination` removes
the originals no entry function reaches any more (public PrimFuncs survive) and unused pure
bindings of every Relax function.

PrimFunc equality for sharing is :func:`~memcore_py.ir.structural.structural_equal`: same
parameter dtypes and shapes (names positional), same attrs (``layout_free_buffers``
included), same ``private``, and the same text up to the function's own name and
whitespace. For the copies this pass makes that is exactly TVM's structural equality (two
copies of one PrimFunc differ only in the attribute); TVM would also equate an *existing*
function whose TIR differs from a copy only in variable and buffer names, where memcore
adds a new copy instead (DIFFERENCES.md).

Where TVM is unsound (DIFFERENCES.md, "AttachAttrLayoutFreeBuffers keeps tir_vars")
---------------------------------------------------------------------------------
TVM rebuilds the call with exactly two arguments, so a third ``tir_vars`` argument
(``R.call_tir(f, (x,), out_ty, tir_vars=R.shape([n]))``) is dropped and the PrimFunc's
scalar parameters are left without values. memcore keeps it.
``AttachAttrLayoutFreeBuffers(tvm_compat=True)`` drops it as TVM does (for differential
tests only).

Bad input (each a :class:`~memcore_py.errors.PassError` naming the function and binding,
where TVM aborts): a ``call_tir`` callee that is not a GlobalVar, that the module does not
define, or that is not a PrimFunc; an argument list that is not a tuple literal; a
non-integer ``num_input``; a nested function with ``num_input`` as above.

Performance: one new PrimFunc per distinct (callee, layout-free positions) pair; later call
sites reuse it from a dict, so the cost per call site is one rebuilt call.
"""
from __future__ import annotations

from .._compiled import load_compiled
from ..errors import PassError
from ..ir._util import gc_paused
from ..ir.construct import function_with_body, new_binding, new_block, new_call, new_match_cast, new_seq
from ..ir.expr import Call, Constant, Function, GlobalVar, PrimFunc, Tuple, VarBinding
from ..ir.functor import OPAQUE_NON_PRIM_LEAVES, normalize_blocks
from ..ir.module import IRModule
from ..ir.op import get_op
from ..ir.prim import IntImm
from ..ir.text.prim_func_text import with_attrs
from ._lowering_utils import BindingTrackingMutator
from ._prim_func_registry import PrimFuncRegistry
from .dead_code_elimination import DeadCodeElimination, is_flat
from .pass_infra import ModulePass, PassContext, Sequential

__all__ = ["AttachAttrLayoutFreeBuffers", "attach_attr_layout_free_buffers", "layout_free_positions",
           "call_tir_arguments", "num_input_of", "LAYOUT_FREE_ATTR"]

_CALL_TIR = get_op("relax.call_tir")
_ATTR = "layout_free_buffers"
#: the PrimFunc attribute the pass sets
LAYOUT_FREE_ATTR = _ATTR
_NUM_INPUT = "num_input"
#: Leaves the mutator passes over without a visit: all of ExprMutator's but Constant, which
#: it must see (a visited constant is layout-free) and shapes/prim values (harmless).
_OPAQUE = frozenset(OPAQUE_NON_PRIM_LEAVES - {Constant})


def _num_input(func: Function, where: str):
    """The int ``num_input`` attribute of ``func`` or None."""
    return num_input_of(func.attrs, where)


def num_input_of(attrs, where: str):
    """The int ``num_input`` of a function's attributes ``attrs`` (memcore values) or None:
    its parameters from that position on are the weights.

    Raises
    ------
    PassError
        ``num_input`` is not an int.
    """
    v = attrs.get(_NUM_INPUT)
    if v is None:
        return None
    if type(v) is IntImm:
        v = v.value
    if isinstance(v, bool) or not isinstance(v, int):
        raise PassError(f"AttachAttrLayoutFreeBuffers: {where}: attribute 'num_input' must be an int; got {v!r}")
    return v


def layout_free_positions(fields, layout_free, is_constant=None) -> tuple:
    """Positions of ``fields`` whose object is in ``layout_free`` (a weight parameter) or is
    a tensor constant (memcore's :class:`~memcore_py.ir.Constant`, or ``is_constant(field)``
    for another object model): the rule, compiled once
    (``memcore_py/transform/_flat_walks.pyx``) for every path of the pass."""
    return load_compiled("memcore_py.transform._flat_walks").layout_free_positions(fields, layout_free, is_constant)


def call_tir_arguments(copy, args, keep_tir_vars: bool) -> tuple:
    """The arguments of an ``R.call_tir`` the pass rewrites (``args`` its arguments, of either
    object model): the attributed copy ``copy`` as the callee, the argument tuple, and the
    ``tir_vars`` argument unless ``keep_tir_vars`` is False (TVM drops it: DIFFERENCES.md). The
    rule, compiled once (``memcore_py/transform/_flat_walks.pyx``) for every path of the pass."""
    return load_compiled("memcore_py.transform._flat_walks").call_tir_arguments(copy, args, keep_tir_vars)


class _Attacher(BindingTrackingMutator):
    """Stage 1 over every top-level Relax function; owns the registry of added PrimFuncs."""

    pass_name = "AttachAttrLayoutFreeBuffers"
    opaque_leaves = _OPAQUE

    def __init__(self, mod: IRModule, keep_tir_vars: bool, allow_flat: bool = True):
        super().__init__()
        self.allow_flat = allow_flat
        self.mod = mod
        self.keep_tir_vars = keep_tir_vars
        self.registry = PrimFuncRegistry(mod)
        self.copies: dict = {}
        """(callee name, positions) -> GlobalVar of the attributed copy."""
        self.layout_free: set = set()
        """Weight params of the function being visited (by identity)."""
        self.seen_constant = False
        """Whether a Constant was visited in the current top-level function."""

    def run_function(self, gv: GlobalVar, func: Function) -> Function:
        self.func_name = gv.name
        self.layout_free = set()
        self.seen_constant = False
        if self.allow_flat and is_flat(func):
            return self._flat_function(func)
        return self.visit_function(func)

    def _flat_function(self, func: Function) -> Function:
        """The rewrite of a function whose bindings open no scope and hold no nested call
        (:func:`is_flat`): one loop over the bindings, same result as the mutator (no nested
        function can meet a num_input there, no variable is re-typed, so only the call_tir
        bindings change)."""
        k = _num_input(func, f"function {self.func_name!r}")
        if k is not None and k >= 0:
            self.layout_free.update(func.params[k:])
        blocks = func.body.blocks
        new_blocks = None
        walks = load_compiled("memcore_py.transform._flat_walks")

        def slow(b):  # a copy to make, a MatchCast, or input to reject: the Python path
            self._binding = b
            nv = self._rewrite(b.value)
            self._binding = None
            return new_binding(b.var, nv) if type(b) is VarBinding else new_match_cast(b.var, nv, b.ty)

        for bi, blk in enumerate(blocks):
            new_bindings = walks.attach_bindings(tuple(blk.bindings), _CALL_TIR, self.layout_free, self.copies,
                                                 self.keep_tir_vars, slow)
            if new_bindings is not None:
                if new_blocks is None:
                    new_blocks = list(blocks)
                new_blocks[bi] = new_block(type(blk), new_bindings)
        normalized = normalize_blocks(blocks if new_blocks is None else new_blocks)
        if new_blocks is None and len(normalized) == len(blocks):
            return func
        return function_with_body(func, new_seq(normalized, func.body.body, func.body.ty))

    def visit_function(self, func: Function) -> Function:
        k = _num_input(func, f"function {self.func_name!r}")
        if k is not None:
            if self.layout_free or self.seen_constant:
                raise self._fail("met a non-global function with a num_input attr "
                                 "(TVM: 'meet a non-global function with num_input attr')")
            if k >= 0:
                self.layout_free.update(func.params[k:])
        return super().visit_function(func)

    def visit_expr(self, e):
        if type(e) is Constant:
            self.seen_constant = True
            return e
        return super().visit_expr(e)

    def visit_call(self, call: Call):
        new = self.visit_call_default(call)
        if new.op is not _CALL_TIR:
            return new
        return self._rewrite(new)

    def _rewrite(self, new: Call) -> Call:
        """``new`` (a call_tir whose arguments are visited) calling the attributed copy."""
        args = new.args
        if len(args) < 2:
            raise self._fail(f"R.call_tir takes a PrimFunc and an argument tuple; got {len(args)} argument(s)")
        gv, tup = args[0], args[1]
        if type(gv) is not GlobalVar:
            raise self._fail(f"the callee of R.call_tir must be a GlobalVar; got {type(gv).__name__}")
        if type(tup) is not Tuple:
            raise self._fail(f"the arguments of R.call_tir must be a tuple literal; got {type(tup).__name__}")
        positions = layout_free_positions(tup.fields, self.layout_free)
        key = (gv.name, positions)
        new_gv = self.copies.get(key)
        if new_gv is None:
            if gv.name not in self.mod:
                raise self._fail(f"R.call_tir calls {gv.name!r}, which the module does not define")
            func = self.mod[gv.name]
            if type(func) is not PrimFunc:
                raise self._fail(f"R.call_tir calls {gv.name!r}, which is a {type(func).__name__}, not a PrimFunc")
            attrs = dict(func.attrs)
            if not func.private:  # TVM copies the implicit global_symbol of a public PrimFunc
                attrs.setdefault("global_symbol", gv.name)
            attrs[_ATTR] = positions
            copy = with_attrs(func, attrs)
            new_gv = self.copies[key] = self.registry.add(copy, gv.name)
        return new_call(_CALL_TIR, call_tir_arguments(new_gv, args, self.keep_tir_vars), new.attrs, new.ty_args, new.ty)


def attach_attr_layout_free_buffers(mod: IRModule, *, tvm_compat: bool = False) -> IRModule:
    """Stage 1 of the module docstring (TVM's module pass ``_AttachAttrLayoutFreeBuffers``,
    without the DeadCodeElimination that follows it in the Sequential).

    Parameters
    ----------
    mod : IRModule
    tvm_compat : bool, default False
        Drop a ``tir_vars`` argument of rewritten calls, as TVM does.

    Returns
    -------
    IRModule
        The attributed copies are added; the originals stay (stage 2 removes them).

    Raises
    ------
    PassError
        Bad input, see the module docstring.
    """
    return _attach(mod, tvm_compat, True)


def _attach(mod, tvm_compat, allow_flat):
    """:func:`attach_attr_layout_free_buffers`; ``allow_flat=False`` sends every function
    through the general mutator (tests check both paths agree)."""
    if not isinstance(mod, IRModule):
        raise PassError(f"AttachAttrLayoutFreeBuffers expects an IRModule; got {type(mod).__name__}")
    m = _Attacher(mod, keep_tir_vars=not tvm_compat, allow_flat=allow_flat)
    updates = {}
    with gc_paused():
        for gv, func in mod.functions.items():
            if type(func) is Function:
                new = m.run_function(gv, func)
                if new is not func:
                    updates[gv] = new
        return m.registry.module(updates)


class _AttachAttrModulePass(ModulePass):
    """Module pass ``_AttachAttrLayoutFreeBuffers``: :func:`attach_attr_layout_free_buffers`."""

    name = "_AttachAttrLayoutFreeBuffers"

    def __init__(self, *, tvm_compat: bool = False):
        self.tvm_compat = bool(tvm_compat)

    def transform(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return attach_attr_layout_free_buffers(mod, tvm_compat=self.tvm_compat)


class AttachAttrLayoutFreeBuffers(Sequential):
    """``Sequential([_AttachAttrLayoutFreeBuffers, DeadCodeElimination()],
    name="AttachAttrLayoutFreeBuffers")``, as TVM builds it (see the module docstring).

    Parameters
    ----------
    tvm_compat : bool, default False
        Drop ``tir_vars`` arguments as TVM does (unsound; for differential tests).

    Examples
    --------
    >>> mod = AttachAttrLayoutFreeBuffers()(mod)  # doctest: +SKIP
    """

    name = "attach-attr-layout-free-buffers"

    def __init__(self, *, tvm_compat: bool = False):
        self.tvm_compat = bool(tvm_compat)
        super().__init__([_AttachAttrModulePass(tvm_compat=self.tvm_compat), DeadCodeElimination()],
                         name="AttachAttrLayoutFreeBuffers")

    def __repr__(self):
        return "AttachAttrLayoutFreeBuffers(tvm_compat=True)" if self.tvm_compat else "AttachAttrLayoutFreeBuffers()"

