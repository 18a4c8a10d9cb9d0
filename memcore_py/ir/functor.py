"""Visitors and the mutator base over Relax functions (TVM ``ExprVisitor`` / ``ExprMutator``).

Design
------
:class:`ExprVisitor` dispatches through a dict from node class to a bound method, built once
per instance, so a subclass overrides ``visit_call_`` (and friends) and the table picks the
override up. Method names follow TVM's Python ``PyExprVisitor`` (trailing underscore per node
kind). Bindings are visited by a loop in :meth:`ExprVisitor.visit_block` — never by
recursion — so a function with 300k bindings costs no stack.

:class:`ExprMutator` is the one mutator base every pass subclasses. Passes run it on every
binding of functions with 10^5..10^6 bindings, so it dispatches on the exact node class and
returns the *same* node whenever nothing below it changed (untouched bindings are reused, not
copied; an identity mutator returns its input). It reproduces the parts of TVM's
``ExprMutator`` + ``Normalizer`` behaviour that are visible in the output of passes:

- every SeqExpr the mutator visits comes out with empty blocks dropped and adjacent blocks of
  the same kind merged (TVM ``NormalizeBlocks``, applied to every SeqExpr an ``ExprMutator``
  visits, even when nothing else changed; :func:`normalize_blocks`);
- when a binding's value changes to one of a different type, the binding variable is replaced
  by a new one of the new type and later uses follow it (TVM ``ReEmitBinding`` /
  ``WithStructInfo``; :meth:`ExprMutator.rebind`).

A subclass emits extra bindings by appending to the ``out`` list of :meth:`ExprMutator.visit_binding`
(no builder object is involved); fresh names come from a :class:`~memcore_py.ir.builder.NameTable`
the pass owns. :func:`map_functions` applies a function rewrite to every Relax function of a
module.
"""
from __future__ import annotations

from ..errors import IRError
from ._util import gc_paused
from .construct import function_with_body, module_with_functions
from .infer import rebuilt_ret_ty
from .expr import (
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
    PrimFunc,
    PrimValue,
    SeqExpr,
    ShapeExpr,
    StringImm,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
)
from .module import IRModule
from .types import TupleType, type_equal

__all__ = [
    "ExprVisitor",
    "ExprMutator",
    "OPAQUE_NON_PRIM_LEAVES",
    "post_order_visit",
    "normalize_blocks",
    "normal_groups",
    "normalize_function_blocks",
    "value_type",
    "map_functions",
    "var_uses",
]

_LEAF_CLASSES = (Constant, ShapeExpr, PrimValue, StringImm, DataTypeImm, ExternFunc, GlobalVar)
_LEAF_SET = frozenset(_LEAF_CLASSES)
#: Leaves that hold no symbolic variable (what a prim-substituting mutator may skip).
OPAQUE_NON_PRIM_LEAVES = frozenset(_LEAF_SET - {ShapeExpr, PrimValue})
_SCOPE_CLASSES = (If, Function, SeqExpr)

_VISIT_NAMES = {
    Var: "visit_var_",
    DataflowVar: "visit_dataflow_var_",
    GlobalVar: "visit_global_var_",
    ExternFunc: "visit_extern_func_",
    Constant: "visit_constant_",
    ShapeExpr: "visit_shape_expr_",
    PrimValue: "visit_prim_value_",
    StringImm: "visit_string_imm_",
    DataTypeImm: "visit_data_type_imm_",
    Call: "visit_call_",
    Tuple: "visit_tuple_",
    TupleGetItem: "visit_tuple_getitem_",
    If: "visit_if_",
    SeqExpr: "visit_seq_expr_",
    Function: "visit_function_",
    PrimFunc: "visit_prim_func_",
}


def _dispatch_table(obj):
    return {cls: getattr(obj, name) for cls, name in _VISIT_NAMES.items()}


class ExprVisitor:
    """Read-only walk over a Relax expression, function or module.

    Override the ``visit_*_`` methods for the node kinds of interest and call the base
    method to keep walking. ``visit_var_def`` sees every definition (params, binding vars);
    ``visit_var_`` / ``visit_dataflow_var_`` see every use.

    Attributes
    ----------
    block_index, binding_index : int
        Position of the binding being visited within the current SeqExpr (-1 outside).
    """

    def __init__(self):
        self._table = _dispatch_table(self)
        self.block_index = -1
        self.binding_index = -1

    # ------------------------------------------------------------------ entry points
    def visit_module(self, mod: IRModule) -> None:
        """Visit every function of ``mod`` in order (PrimFuncs through ``visit_prim_func_``)."""
        for _gv, func in mod.functions.items():
            self.visit_expr(func)

    def visit_expr(self, expr) -> None:
        fn = self._table.get(type(expr))
        if fn is None:
            raise IRError(f"{type(self).__name__} cannot visit {type(expr).__name__} {expr!r}")
        fn(expr)

    # ------------------------------------------------------------------ blocks and bindings
    def visit_block(self, block: BindingBlock) -> None:
        if isinstance(block, DataflowBlock):
            self.visit_dataflow_block_(block)
        else:
            self.visit_binding_block_(block)

    def visit_binding_block_(self, block: BindingBlock) -> None:
        self._visit_bindings(block)

    def visit_dataflow_block_(self, block: DataflowBlock) -> None:
        self._visit_bindings(block)

    def _visit_bindings(self, block) -> None:
        visit_binding = self.visit_binding
        for i, binding in enumerate(block.bindings):
            self.binding_index = i
            visit_binding(binding)

    def visit_binding(self, binding) -> None:
        if type(binding) is MatchCast:
            self.visit_match_cast_(binding)
        else:
            self.visit_var_binding_(binding)

    def visit_var_binding_(self, binding: VarBinding) -> None:
        self.visit_expr(binding.value)
        self.visit_var_def(binding.var)

    def visit_match_cast_(self, binding: MatchCast) -> None:
        self.visit_expr(binding.value)
        self.visit_var_def(binding.var)

    def visit_var_def(self, var: Var) -> None:
        """A definition (param or binding var). Default: nothing."""

    # ------------------------------------------------------------------ expressions
    def visit_function_(self, func: Function) -> None:
        for p in func.params:
            self.visit_var_def(p)
        self.visit_expr(func.body)

    def visit_prim_func_(self, func: PrimFunc) -> None:
        """PrimFuncs are opaque. Default: nothing."""

    def visit_seq_expr_(self, seq: SeqExpr) -> None:
        saved = self.block_index, self.binding_index
        for i, block in enumerate(seq.blocks):
            self.block_index = i
            self.visit_block(block)
        self.block_index, self.binding_index = -1, -1
        self.visit_expr(seq.body)
        self.block_index, self.binding_index = saved

    def visit_if_(self, expr: If) -> None:
        self.visit_expr(expr.cond)
        self.visit_expr(expr.true_branch)
        self.visit_expr(expr.false_branch)

    def visit_call_(self, call: Call) -> None:
        op = call.op
        if isinstance(op, (Var, GlobalVar, ExternFunc)):
            self.visit_expr(op)
        for a in call.args:
            self.visit_expr(a)

    def visit_tuple_(self, tup: Tuple) -> None:
        for f in tup.fields:
            self.visit_expr(f)

    def visit_tuple_getitem_(self, expr: TupleGetItem) -> None:
        self.visit_expr(expr.tuple_value)

    def visit_var_(self, var: Var) -> None:
        """A use of a Var. Default: nothing."""

    def visit_dataflow_var_(self, var: DataflowVar) -> None:
        """A use of a DataflowVar. Default: :meth:`visit_var_`."""
        self.visit_var_(var)

    def visit_global_var_(self, gv: GlobalVar) -> None:
        pass

    def visit_extern_func_(self, func: ExternFunc) -> None:
        pass

    def visit_constant_(self, const: Constant) -> None:
        pass

    def visit_shape_expr_(self, shape: ShapeExpr) -> None:
        pass

    def visit_prim_value_(self, value: PrimValue) -> None:
        pass

    def visit_string_imm_(self, value: StringImm) -> None:
        pass

    def visit_data_type_imm_(self, value: DataTypeImm) -> None:
        pass


class _PostOrder(ExprVisitor):
    def __init__(self, fn):
        super().__init__()
        self._fn = fn

    def visit_expr(self, expr) -> None:
        super().visit_expr(expr)
        self._fn(expr)


def post_order_visit(expr, fn) -> None:
    """Call ``fn(node)`` on every expression under ``expr`` (including binding values, vars
    at their uses, branches and ``expr`` itself), children before parents.

    Binding vars are not passed at their definitions; use an :class:`ExprVisitor` with
    ``visit_var_def`` for those.
    """
    _PostOrder(fn).visit_expr(expr)


def blocks_are_normal(kinds_and_sizes) -> bool:
    """Whether blocks given as ``(kind, number of bindings)`` pairs, in order, are in TVM's
    normal form: no empty block and no two adjacent blocks of one kind (what
    :func:`normalize_blocks` leaves as it is)."""
    prev = None
    for kind, size in kinds_and_sizes:
        if not size or kind == prev:
            return False
        prev = kind
    return True


def normal_groups(kinds_and_sizes) -> list:
    """TVM ``NormalizeBlocks`` as a plan over blocks given as ``(kind, number of bindings)``
    pairs, in order: the blocks it makes, each the list of the indices of the input blocks whose
    bindings it holds, in order. Empty blocks are dropped; adjacent blocks of one kind (once the
    empty ones between them are gone) are merged. Normal blocks give one group each."""
    groups = []
    prev = None
    for i, (kind, size) in enumerate(kinds_and_sizes):
        if not size:
            continue
        if groups and kind == prev:
            groups[-1].append(i)
        else:
            groups.append([i])
            prev = kind
    return groups


def normalize_blocks(blocks):
    """Drop empty blocks and merge adjacent blocks of the same kind (TVM ``NormalizeBlocks``,
    planned by :func:`normal_groups`).

    Returns the input sequence itself (as a tuple) when nothing needs to change."""
    blocks = tuple(blocks)
    if blocks_are_normal((type(b), len(b.bindings)) for b in blocks):
        return blocks
    out = []
    for group in normal_groups((type(b), len(b.bindings)) for b in blocks):
        first = blocks[group[0]]
        out.append(first if len(group) == 1 else type(first)([x for i in group for x in blocks[i].bindings]))
    return tuple(out)


class ExprMutator:
    """Rewrite a Relax function; unchanged parts come back as the same objects (TVM
    ``ExprMutator`` + ``Normalizer`` semantics where they show in the output of passes).

    Subclasses override :meth:`visit_var_use`, :meth:`visit_call`, :meth:`visit_binding`,
    :meth:`visit_block` or :meth:`visit_seq` and call the base versions. Conventions:

    - ``self.var_remap`` maps an old Var to the Expr its uses become;
      :meth:`visit_var_def` gives the Var a binding defines in the output;
    - :meth:`visit_binding` appends the resulting binding(s) to ``out`` (a list), so a
      subclass can drop a binding or emit extra bindings before/after it;
    - ``self.in_dataflow`` tells whether the block being rebuilt is a DataflowBlock (new
      variables emitted there must be DataflowVars, as TVM's builder makes them);
    - ``self.func_name`` names the top-level function for error messages;
    - call arguments whose class is in :attr:`opaque_leaves` (constants, shapes, prim
      values, strings, dtypes, extern and global functions) are kept without a visit, for
      speed; a mutator that rewrites shapes or prim values (a symbolic-var substitution)
      must set ``opaque_leaves = OPAQUE_NON_PRIM_LEAVES`` so its :meth:`visit_expr` sees them.
    """

    #: Classes of call arguments :meth:`visit_call_default` returns unvisited.
    opaque_leaves = _LEAF_SET

    def __init__(self):
        self.var_remap: dict = {}
        self.in_dataflow = False
        self.func_name = "?"

    # -- entry points --------------------------------------------------------------
    def visit_module(self, mod: IRModule) -> IRModule:
        """Rewrite every Relax function of ``mod`` (``func_name`` set to each one's name);
        the same module object when nothing changed."""
        def visit(func, name):
            self.func_name = name
            return self.visit_function(func)

        return map_functions(mod, visit)

    def visit_function(self, func: Function) -> Function:
        """Rewrite a (top-level or nested) Relax function; returns ``func`` if unchanged."""
        new_params = [self.visit_param(p) for p in func.params]
        saved = self.in_dataflow
        self.in_dataflow = False
        body = self.visit_seq(func.body)
        self.in_dataflow = saved
        params_same = all(n is o for n, o in zip(new_params, func.params))
        if params_same:
            # the attrs dict is shared (the TVM bridge then writes back the DictAttrs it read)
            return func if body is func.body else function_with_body(func, body)
        return Function(new_params, body, rebuilt_ret_ty(func.ret_ty, new_params, body.ty), func.attrs, func.is_pure)

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
        if cls is PrimFunc:
            return e
        raise IRError(f"{type(self).__name__} cannot visit {cls.__name__} {e!r}")

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
            elif ca in self.opaque_leaves:
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
        # The cached type is not carried over: it may depend on the old arguments (a shape
        # whose symbolic vars were substituted); None = "not known without inference".
        return Call(new_op, args if new_args is None else new_args, call.attrs, call.ty_args)

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
    functions either; checked in the venv.) ``fn`` must return a valid :class:`Function`
    (passes build theirs from checked parts): the new module is assembled without
    validating every function again (``construct.module_with_functions``), which was the
    largest part of a pass call's fixed cost on small modules."""
    updates = {}
    with gc_paused():
        for gv, func in mod.functions.items():
            if type(func) is Function:
                new = fn(func, gv.name)
                if new is not func:
                    if type(new) is not Function:
                        raise IRError(
                            f"a function pass returned {type(new).__name__} for {gv.name!r}; expected a Function"
                        )
                    updates[gv] = new
    return module_with_functions(mod, updates) if updates else mod


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
            return Function(e.params, body, rebuilt_ret_ty(e.ret_ty, e.params, body.ty), e.attrs, e.is_pure)
        return e

    return expr(func)


def var_uses(expr, out: list | None = None, *, nested: bool = True) -> list:
    """Every occurrence of a Relax variable in ``expr``, in visit order (the one walk over
    variable uses that analyses and passes share).

    Parameters
    ----------
    expr : Expr
    out : list, optional
        Appended to and returned.
    nested : bool, default True
        Also the occurrences inside the scopes ``expr`` opens (If branches with their binding
        values, nested functions). With False only the occurrences evaluated by ``expr``
        itself: an If's condition, a SeqExpr's result.
    """
    if out is None:
        out = []
    stack = [expr]
    while stack:
        e = stack.pop()
        cls = type(e)
        if cls is Var or cls is DataflowVar:
            out.append(e)
        elif cls is Call:
            stack.extend(reversed(e.args))
            if isinstance(e.op, Var):
                stack.append(e.op)
        elif cls is Tuple:
            stack.extend(reversed(e.fields))
        elif cls is TupleGetItem:
            stack.append(e.tuple_value)
        elif cls is If:
            if nested:
                stack.append(e.false_branch)
                stack.append(e.true_branch)
            stack.append(e.cond)
        elif cls is SeqExpr:
            stack.append(e.body)
            if nested:
                for blk in reversed(e.blocks):
                    for b in reversed(blk.bindings):
                        stack.append(b.value)
        elif cls is Function and nested:
            stack.append(e.body)
    return out

