"""Shared machinery of the lowering passes (CallTIRRewrite, ToNonDataflow,
RemovePurityChecking, LowerAllocTensor, CanonicalizeBindings, KillAfterLastUse).

What lives here, and why it is not the general ``ExprMutator``
-------------------------------------------------------------
These passes run on every binding of functions with 10^5..10^6 bindings, so they share a
lean mutator (:class:`LeanMutator`) that dispatches on the exact node class and returns
the *same* node whenever nothing below it changed (so untouched bindings are reused, not
copied). It reproduces the parts of TVM's ``ExprMutator`` + ``Normalizer`` behaviour that
are visible in the output of these passes:

- every SeqExpr the mutator visits comes out with empty blocks dropped and adjacent
  blocks of the same kind merged (TVM ``NormalizeBlocks``, applied to every SeqExpr an
  ``ExprMutator`` visits, even when nothing else changed);
- when a binding's value changes to one of a different type, the binding variable is
  replaced by a new one of the new type and later uses follow it (TVM ``ReEmitBinding`` /
  ``WithStructInfo``); see :meth:`LeanMutator.rebind`.

Also here: structural type equality (fast, no var mapping: types within one function
share their symbolic variables by name), the void type of kill calls and DPS calls,
:class:`PassError` messages that name function and binding, and validation-free node
constructors for hot loops.
"""
from __future__ import annotations

from ..errors import PassError
from ..ir._util import gc_paused
from ..ir.expr import (
    BindingBlock,
    Call,
    Constant,
    DataflowBlock,
    DataflowVar,
    DataTypeImm,
    ExternFunc,
    Function,
    GlobalVar,
    If,
    MatchCast,
    PrimValue,
    SeqExpr,
    ShapeExpr,
    StringImm,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
)
from ..ir.prim import BinaryOp, FloatImm, IntImm, PrimVar
from ..ir.types import FuncType, ObjectType, PrimType, ShapeType, TensorType, TupleType

__all__ = [
    "VOID",
    "normalize_blocks",
    "type_equal",
    "prim_equal",
    "LeanMutator",
    "BindingTrackingMutator",
    "binding_error",
    "describe_binding",
    "gc_paused",
    "map_functions",
    "fast_var",
    "fast_call",
    "fast_binding",
    "fast_block",
    "normalize_function_blocks",
    "value_type",
]

#: Type of calls that return nothing: kill ops and direct DPS calls to PrimFuncs (``R.Tuple()``).
VOID = TupleType(())

_LEAF_CLASSES = (Constant, ShapeExpr, PrimValue, StringImm, DataTypeImm, ExternFunc, GlobalVar)
_LEAF_SET = frozenset(_LEAF_CLASSES)
_SCOPE_CLASSES = (If, Function, SeqExpr)


def normalize_blocks(blocks):
    """Drop empty blocks and merge adjacent blocks of the same kind (TVM ``NormalizeBlocks``).

    Returns the input sequence itself (as a tuple) when nothing needs to change."""
    blocks = tuple(blocks)
    changed = False
    prev_type = None
    for b in blocks:
        if not b.bindings or type(b) is prev_type:
            changed = True
            break
        prev_type = type(b)
    if not changed:
        return blocks
    out = []
    pending = None  # (class, [bindings]) of the block being merged
    for b in blocks:
        if not b.bindings:
            continue
        cls = type(b)
        if pending is not None and pending[0] is cls:
            pending[1].extend(b.bindings)
            pending[2] = None
        else:
            if pending is not None:
                out.append(pending[2] if pending[2] is not None else pending[0](pending[1]))
            pending = [cls, list(b.bindings), b]
    if pending is not None:
        out.append(pending[2] if pending[2] is not None else pending[0](pending[1]))
    return tuple(out)


# ------------------------------------------------------------------------------- equality
def prim_equal(a, b) -> bool:
    """Structural equality of two PrimExpr trees (variables compared by name and dtype)."""
    if a is b:
        return True
    ta = type(a)
    if ta is not type(b):
        return False
    if ta is IntImm or ta is FloatImm:
        return a.value == b.value and a.dtype == b.dtype
    if ta is PrimVar:
        return a.name == b.name and a.dtype == b.dtype
    if isinstance(a, BinaryOp):
        return prim_equal(a.a, b.a) and prim_equal(a.b, b.b)
    return False


def _dims_equal(a, b) -> bool:
    if a is b:
        return True
    if a is None or b is None or len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if not prim_equal(x, y):
            return False
    return True


def type_equal(a, b) -> bool:
    """Structural equality of two types (TVM ``StructuralEqual`` on struct info, within one
    function: symbolic variables are compared by name)."""
    if a is b:
        return True
    if a is None or b is None:
        return False
    ta = type(a)
    if ta is not type(b):
        return False
    if ta is TensorType:
        return (a.dtype == b.dtype and a.ndim == b.ndim and a.vdevice == b.vdevice
                and _dims_equal(a.shape, b.shape))
    if ta is TupleType:
        fa, fb = a.fields, b.fields
        return len(fa) == len(fb) and all(type_equal(x, y) for x, y in zip(fa, fb))
    if ta is ObjectType:
        return True
    if ta is ShapeType:
        return a.ndim == b.ndim and _dims_equal(a.values, b.values)
    if ta is PrimType:
        if a.dtype != b.dtype:
            return False
        if a.value is None or b.value is None:
            return a.value is None and b.value is None
        return prim_equal(a.value, b.value)
    if ta is FuncType:
        if a.purity != b.purity or not type_equal(a.ret, b.ret):
            return False
        if a.params is None or b.params is None:
            return a.params is None and b.params is None
        return len(a.params) == len(b.params) and all(type_equal(x, y) for x, y in zip(a.params, b.params))
    return False


# ------------------------------------------------------------------------------- errors
def describe_binding(binding) -> str:
    """``'y = R.add(x, x)'``-style one-line description of a binding for error messages
    (always ``<var name> = <value>``, also for a void binding the printer would hide)."""
    try:
        from ..ir.printer import format_expr

        value = format_expr(binding.value)
    except Exception:  # the printer is optional here; fall back to repr
        value = repr(binding.value)
    if type(binding) is MatchCast:
        value = f"R.match_cast({value}, ...)"
    return f"{binding.var.name} = {value}"


def binding_error(pass_name: str, func_name: str, binding, what: str) -> PassError:
    """A :class:`PassError` naming the pass, the function and the offending binding."""
    return PassError(f"{pass_name}: {what}; in function {func_name!r}, binding {describe_binding(binding)}")


# ------------------------------------------------------------------------------- mutator
class LeanMutator:
    """A small, fast Relax mutator (TVM ``ExprMutator`` semantics where they show).

    Subclasses override :meth:`visit_var_use`, :meth:`visit_call`, :meth:`visit_binding`,
    :meth:`visit_block` or :meth:`visit_seq` and call the base versions. Conventions:

    - ``self.var_remap`` maps an old Var to the Expr its uses become;
      :meth:`visit_var_def` gives the Var a binding defines in the output;
    - :meth:`visit_binding` appends the resulting binding(s) to ``out`` (a list), so a
      subclass can drop a binding or emit extra bindings before/after it;
    - ``self.in_dataflow`` tells whether the block being rebuilt is a DataflowBlock (new
      variables emitted there must be DataflowVars, as TVM's builder makes them);
    - ``self.func_name`` names the top-level function for error messages.
    """

    def __init__(self):
        self.var_remap: dict = {}
        self.in_dataflow = False
        self.func_name = "?"

    # -- entry points --------------------------------------------------------------
    def visit_function(self, func: Function) -> Function:
        """Rewrite a (top-level or nested) Relax function; returns ``func`` if unchanged."""
        new_params = [self.visit_param(p) for p in func.params]
        saved = self.in_dataflow
        self.in_dataflow = False
        body = self.visit_seq(func.body)
        self.in_dataflow = saved
        params_same = all(n is o for n, o in zip(new_params, func.params))
        if body is func.body and params_same:
            return func
        return Function(new_params, body, func.ret_ty, func.attrs, func.is_pure)

    def visit_param(self, param: Var) -> Var:
        return param

    def visit_var_def(self, var: Var) -> Var:
        """The variable a binding of ``var`` defines in the output (default: ``var``)."""
        return var

    # -- expressions ----------------------------------------------------------------
    def visit_expr(self, e):
        cls = type(e)
        if cls is Var or cls is DataflowVar:
            return self.visit_var_use(e)
        if cls is Call:
            return self.visit_call(e)
        if cls is Tuple:
            fields = e.fields
            new = [self.visit_expr(f) for f in fields]
            for n, o in zip(new, fields):
                if n is not o:
                    return Tuple(new)
            return e
        if cls is TupleGetItem:
            tv = self.visit_expr(e.tuple_value)
            if tv is e.tuple_value:
                return e
            return TupleGetItem(tv, e.index)
        if cls in _LEAF_SET:
            return e
        if cls is If:
            return self.visit_if(e)
        if cls is SeqExpr:
            return self.visit_seq(e)
        if cls is Function:
            return self.visit_function(e)
        return e

    def visit_var_use(self, var):
        return self.var_remap.get(var, var)

    def visit_call(self, call: Call):
        return self.visit_call_default(call)

    def visit_call_default(self, call: Call):
        args = call.args
        new_args = None
        for i, a in enumerate(args):
            ca = type(a)
            if ca is Var or ca is DataflowVar:
                n = self.visit_var_use(a)
            elif ca in _LEAF_SET:
                continue
            else:
                n = self.visit_expr(a)
            if n is not a:
                if new_args is None:
                    new_args = list(args)
                new_args[i] = n
        op = call.op
        new_op = self.visit_expr(op) if isinstance(op, Var) else op
        if new_args is None and new_op is op:
            return call
        return Call(new_op, args if new_args is None else new_args, call.attrs, call.ty_args, call.ty)

    def visit_if(self, e: If):
        cond = self.visit_expr(e.cond)
        saved = self.in_dataflow
        self.in_dataflow = False
        tb = self.visit_seq(e.true_branch)
        fb = self.visit_seq(e.false_branch)
        self.in_dataflow = saved
        if cond is e.cond and tb is e.true_branch and fb is e.false_branch:
            return e
        return If(cond, tb, fb, e.ty)

    # -- scopes ---------------------------------------------------------------------
    def visit_seq(self, seq: SeqExpr) -> SeqExpr:
        blocks = seq.blocks
        new_blocks = []
        changed = False
        for blk in blocks:
            nb = self.visit_block(blk)
            new_blocks.extend(nb)
            if len(nb) != 1 or nb[0] is not blk:
                changed = True
        saved = self.in_dataflow
        self.in_dataflow = False
        body = self.visit_expr(seq.body)
        self.in_dataflow = saved
        normalized = normalize_blocks(new_blocks)
        if len(normalized) != len(new_blocks):
            changed = True
        if not changed and body is seq.body:
            return seq
        return SeqExpr(normalized, body)

    def visit_block(self, blk):
        """Rewrite one block; returns a list of blocks (usually one)."""
        saved = self.in_dataflow
        is_df = type(blk) is DataflowBlock
        self.in_dataflow = is_df
        out = []
        bindings = blk.bindings
        changed = False
        for b in bindings:
            n = len(out)
            self.visit_binding(b, out)
            if not changed and (len(out) != n + 1 or out[n] is not b):
                changed = True
        self.in_dataflow = saved
        if not changed:
            return [blk]
        return [(DataflowBlock if is_df else BindingBlock)(out)]

    # -- bindings -------------------------------------------------------------------
    def visit_binding(self, b, out: list) -> None:
        value = self.visit_expr(b.value)
        out.append(self.rebind(b, value))

    def rebind(self, b, value):
        """The binding ``b`` with its value replaced by ``value``: ``b`` itself if nothing
        changed; a new binding otherwise. For a VarBinding whose new value has a known type
        that differs from the var's (TVM ``ReEmitBinding``), a fresh var of the new type
        (same name and kind) is made and later uses are remapped to it."""
        var = b.var
        new_var = self.visit_var_def(var)
        if value is b.value and new_var is var:
            return b
        if type(b) is MatchCast:
            return MatchCast(new_var, value, b.ty)
        vty = value_type(value)
        if vty is not None and not type_equal(vty, new_var.ty):
            fresh = type(new_var)(new_var.name, vty)
            self.var_remap[var] = fresh
            new_var = fresh
        return VarBinding(new_var, value)


class BindingTrackingMutator(LeanMutator):
    """A :class:`LeanMutator` that keeps, while a binding's value is rewritten, the binding
    (``self._binding``) and the list its result goes to (``self._out``, so the rewrite can
    emit bindings before it); both are None outside a binding. :meth:`_fail` makes the
    :class:`PassError` of pass ``pass_name``, naming the binding when there is one."""

    pass_name = "?"

    def __init__(self):
        super().__init__()
        self._out = None
        self._binding = None

    def visit_binding(self, b, out):
        saved = self._out, self._binding
        self._out, self._binding = out, b
        try:
            value = self.visit_expr(b.value)
        finally:
            self._out, self._binding = saved
        out.append(self.rebind(b, value))

    def _fail(self, what):
        if self._binding is None:
            return PassError(f"{self.pass_name}: {what}; in function {self.func_name!r}")
        return binding_error(self.pass_name, self.func_name, self._binding, what)


def value_type(value):
    """The type of a bound value when it is known without inference (None otherwise)."""
    cls = type(value)
    if cls is Var or cls is DataflowVar or cls is Constant:
        return value.ty
    if cls is Tuple:
        tys = []
        for f in value.fields:
            t = value_type(f)
            if t is None:
                return None
            tys.append(t)
        return TupleType(tys)
    if cls is TupleGetItem:
        tt = value_type(value.tuple_value)
        if type(tt) is TupleType and value.index < len(tt.fields):
            return tt.fields[value.index]
        return value.ty
    return value.ty


def map_functions(mod, fn):
    """Apply ``fn(func, name) -> Function`` to every Relax function of ``mod`` (in module
    order) and return the new module (``mod`` itself if nothing changed). PrimFuncs are kept
    as they are. (TVM 0.27's function passes do not skip ``Codegen`` / ``Primitive``
    functions either; checked in the venv.)"""
    updates = {}
    with gc_paused():
        for gv, func in mod.functions.items():
            if type(func) is Function:
                new = fn(func, gv.name)
                if new is not func:
                    updates[gv] = new
    return mod.with_functions(updates) if updates else mod


def normalize_function_blocks(func: Function) -> Function:
    """``func`` with every SeqExpr's blocks normalized (:func:`normalize_blocks`) and
    nothing else changed: what any TVM mutator does to a function it has nothing else to
    do to. Only binding values that open scopes (If, nested Function) are visited."""

    def seq(s):
        blocks = s.blocks
        new_blocks = None
        for k, blk in enumerate(blocks):
            new_bindings = None
            for i, b in enumerate(blk.bindings):
                v = b.value
                if type(v) in _SCOPE_CLASSES:
                    nv = expr(v)
                    if nv is not v:
                        if new_bindings is None:
                            new_bindings = list(blk.bindings)
                        new_bindings[i] = MatchCast(b.var, nv, b.ty) if type(b) is MatchCast else VarBinding(b.var, nv)
            if new_bindings is not None:
                if new_blocks is None:
                    new_blocks = list(blocks)
                new_blocks[k] = type(blk)(new_bindings)
        cur = blocks if new_blocks is None else new_blocks
        normalized = normalize_blocks(cur)
        if new_blocks is None and len(normalized) == len(blocks):
            return s
        return SeqExpr(normalized, s.body)

    def expr(e):
        cls = type(e)
        if cls is SeqExpr:
            return seq(e)
        if cls is If:
            tb, fb = seq(e.true_branch), seq(e.false_branch)
            if tb is e.true_branch and fb is e.false_branch:
                return e
            return If(e.cond, tb, fb, e.ty)
        if cls is Function:
            body = seq(e.body)
            if body is e.body:
                return e
            return Function(e.params, body, e.ret_ty, e.attrs, e.is_pure)
        return e

    return expr(func)


# ------------------------------------------------------------------------------- fast nodes
# Hot loops build ~10^5 nodes whose fields are known to be valid (kill calls, calls with
# substituted arguments). These constructors set the slots directly, skipping the
# validation of the public constructors; tests/memcore_py/transform check that they build
# nodes identical to the public constructors' (so a change of the data model is caught).
_new = object.__new__
_setf = object.__setattr__
_EMPTY_ATTRS = Call(None).attrs


def fast_var(cls, name, ty):
    """``cls(name, ty)`` for ``cls`` Var or DataflowVar, without validation."""
    v = _new(cls)
    _setf(v, "name", name)
    _setf(v, "ty", ty)
    return v


def fast_call(op, args: tuple, attrs, ty_args: tuple, ty):
    """``Call(op, args, attrs, ty_args, ty)`` without validation (``args``, ``ty_args``
    tuples; ``attrs`` a dict, possibly empty)."""
    c = _new(Call)
    _setf(c, "op", op)
    _setf(c, "args", args)
    _setf(c, "attrs", attrs if attrs else _EMPTY_ATTRS)
    _setf(c, "ty_args", ty_args)
    _setf(c, "ty", ty)
    return c


def fast_block(cls, bindings):
    """``cls(bindings)`` (BindingBlock or DataflowBlock) without validation."""
    blk = _new(cls)
    _setf(blk, "bindings", tuple(bindings))
    return blk


def fast_binding(var, value):
    """``VarBinding(var, value)`` without validation."""
    b = _new(VarBinding)
    _setf(b, "var", var)
    _setf(b, "value", value)
    return b
