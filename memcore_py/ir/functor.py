"""Visitors and mutators over Relax functions (TVM ``ExprVisitor`` / ``ExprMutator``).

Design
------
Dispatch is a dict from node class to a bound method, built once per instance, so a
subclass overrides ``visit_call_`` (and friends) and the table picks the override up.
Method names follow TVM's Python ``PyExprVisitor`` (trailing underscore per node kind), so
code reads like its C++/Python counterpart.

Bindings are visited by a loop in :meth:`ExprVisitor.visit_block` — never by recursion —
so a function with 300k bindings costs no stack; recursion only follows expression nesting
(shallow in A-normal form) and If branches.

Hooks, in the order a binding is visited::

    visit_block(block)                       # -> visit_binding_block_ / visit_dataflow_block_
      visit_binding(b)                       # -> visit_var_binding_ / visit_match_cast_
        visit_expr(b.value)                  # -> visit_call_, visit_tuple_, visit_var_ (a use), ...
        visit_var_def(b.var)                 # the definition

:class:`ExprMutator` returns new nodes and rebuilds only what changed: every ``visit_*``
returns the very same object when nothing below it changed, so an identity mutator returns
the input function (``is``). Bindings are re-emitted through a
:class:`~memcore_py.ir.builder.BlockBuilder` (``self.builder``), so a subclass may emit extra
bindings before or after the current one (``self.builder.emit(...)``), exactly as with TVM's
``builder_``. When a binding's new value has a different type than its var, a new var of the
new type is made (same name and class) and later uses are remapped (``self.var_remap``).
"""
from __future__ import annotations

from ..errors import IRError
from .builder import BlockBuilder
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

__all__ = ["ExprVisitor", "ExprMutator", "post_order_visit"]

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


class ExprMutator:
    """Rewrite a Relax function; unchanged parts come back as the same objects.

    Parameters
    ----------
    mod : IRModule, optional
        Context for the builder (type inference of calls to module functions, ``add_func``).
    builder : BlockBuilder, optional
        Share a builder (and so a :class:`~memcore_py.ir.builder.NameTable`) across
        functions; by default one is made from ``mod``.

    Notes
    -----
    Override ``visit_call_`` etc. to rewrite expressions, or ``visit_var_binding_`` /
    ``visit_match_cast_`` to rewrite whole bindings: emit any number of bindings with
    ``self.builder`` and return nothing. The default re-emits the binding
    (:meth:`reemit_binding`). A rewritten Call gets its type re-inferred when an argument's
    type changed.
    """

    def __init__(self, mod: IRModule | None = None, builder: BlockBuilder | None = None):
        self._table = _dispatch_table(self)
        self.builder = builder if builder is not None else BlockBuilder(mod)
        self.var_remap: dict[Var, Var] = {}
        """Old var -> the var that replaces it (uses are rewritten through this map)."""

    # ------------------------------------------------------------------ entry points
    def visit_module(self, mod: IRModule) -> IRModule:
        """Mutate every Relax function of ``mod``; the same module object when nothing changed."""
        updates = {}
        for gv, func in mod.functions.items():
            new = self.visit_expr(func)
            if new is not func:
                updates[gv] = new
        return mod.with_functions(updates) if updates else mod

    def visit_expr(self, expr):
        fn = self._table.get(type(expr))
        if fn is None:
            raise IRError(f"{type(self).__name__} cannot visit {type(expr).__name__} {expr!r}")
        return fn(expr)

    # ------------------------------------------------------------------ functions and scopes
    def visit_function_(self, func: Function):
        params = [self.visit_var_def(p) for p in func.params]
        with self.builder.function_scope(f"function with {len(params)} params"):
            body = self.visit_seq_expr_(func.body)
        if body is func.body and all(p is q for p, q in zip(params, func.params)):
            return func
        return Function(params, body, func.ret_ty, func.attrs, func.is_pure)

    def visit_prim_func_(self, func: PrimFunc):
        return func

    def visit_with_new_scope(self, seq: SeqExpr):
        """Visit an If branch (a SeqExpr) in a fresh builder scope."""
        with self.builder.new_scope("branch"):
            return self.visit_seq_expr_(seq)

    def visit_seq_expr_(self, seq: SeqExpr):
        blocks = []
        changed = False
        for block in seq.blocks:
            new = self.visit_block(block)
            if new is not block:
                changed = True
            if new.bindings:
                blocks.append(new)
        # Bindings a subclass emits while rewriting the body go into a trailing block.
        bb = self.builder
        bb.begin_block(False)
        body = self.visit_expr(seq.body)
        tail = bb.end_block()
        if tail.bindings:
            blocks.append(tail)
            changed = True
        if not changed and body is seq.body:
            return seq
        return SeqExpr(blocks, body)

    def visit_block(self, block: BindingBlock):
        if isinstance(block, DataflowBlock):
            return self.visit_dataflow_block_(block)
        return self.visit_binding_block_(block)

    def visit_binding_block_(self, block: BindingBlock):
        return self._visit_bindings(block, False)

    def visit_dataflow_block_(self, block: DataflowBlock):
        return self._visit_bindings(block, True)

    def _visit_bindings(self, block, dataflow: bool):
        bb = self.builder
        bb.begin_block(dataflow)
        visit_binding = self.visit_binding
        for binding in block.bindings:
            visit_binding(binding)
        new = bb.end_block()
        old_b, new_b = block.bindings, new.bindings
        if len(old_b) == len(new_b) and all(x is y for x, y in zip(old_b, new_b)):
            return block
        return new

    # ------------------------------------------------------------------ bindings
    def visit_binding(self, binding) -> None:
        if type(binding) is MatchCast:
            self.visit_match_cast_(binding)
        else:
            self.visit_var_binding_(binding)

    def visit_var_binding_(self, binding: VarBinding) -> None:
        self.reemit_binding(binding, self.visit_expr(binding.value))

    def visit_match_cast_(self, binding: MatchCast) -> None:
        value = self.visit_expr(binding.value)
        var = self.visit_var_def(binding.var)
        if value is binding.value and var is binding.var:
            self.builder.emit_normalized(binding)
        else:
            self.builder.emit_normalized(MatchCast(var, value, binding.ty))

    def reemit_binding(self, binding: VarBinding, new_value) -> Var:
        """Emit ``binding`` with value ``new_value``: the original binding object when nothing
        changed, else a new binding (with a new var when the value's type changed)."""
        var = self.visit_var_def(binding.var)
        if new_value is binding.value and var is binding.var:
            self.builder.emit_normalized(binding)
            return var
        if new_value.ty is None:
            new_value = self.builder.normalize(new_value)
        new_ty = new_value.ty
        if new_ty is not None and var.ty is not new_ty and not _same_type(var.ty, new_ty):
            new_var = type(var)(var.name, new_ty)
            self.var_remap[binding.var] = new_var
            var = new_var
        self.builder.emit_normalized(VarBinding(var, new_value))
        return var

    def visit_var_def(self, var: Var) -> Var:
        """A definition; return the var to define instead (default: the remapped var, or the
        same var)."""
        return self.var_remap.get(var, var)

    # ------------------------------------------------------------------ expressions
    def visit_var_(self, var: Var):
        return self.var_remap.get(var, var)

    def visit_dataflow_var_(self, var: DataflowVar):
        return self.visit_var_(var)

    def visit_call_(self, call: Call):
        op = call.op
        new_op = self.visit_expr(op) if isinstance(op, (Var, GlobalVar, ExternFunc)) else op
        args = call.args
        visit = self.visit_expr
        new_args = [visit(a) for a in args]
        if new_op is op and all(x is y for x, y in zip(new_args, args)):
            return call
        ty = call.ty
        if any(x.ty is not y.ty for x, y in zip(new_args, args)) or new_op is not op:
            ty = _retype_call(call, new_op, new_args, self.builder)
        return Call(new_op, new_args, call.attrs, call.ty_args, ty)

    def visit_tuple_(self, tup: Tuple):
        fields = [self.visit_expr(f) for f in tup.fields]
        if all(x is y for x, y in zip(fields, tup.fields)):
            return tup
        return Tuple(fields)

    def visit_tuple_getitem_(self, expr: TupleGetItem):
        value = self.visit_expr(expr.tuple_value)
        if value is expr.tuple_value:
            return expr
        return TupleGetItem(value, expr.index)

    def visit_if_(self, expr: If):
        cond = self.visit_expr(expr.cond)
        then_b = self.visit_with_new_scope(expr.true_branch)
        else_b = self.visit_with_new_scope(expr.false_branch)
        if cond is expr.cond and then_b is expr.true_branch and else_b is expr.false_branch:
            return expr
        from .infer import join_types

        ty = join_types(then_b.ty, else_b.ty) if then_b.ty is not None and else_b.ty is not None else expr.ty
        return If(cond, then_b, else_b, ty)

    def _leaf(self, expr):
        return expr

    visit_global_var_ = _leaf
    visit_extern_func_ = _leaf
    visit_constant_ = _leaf
    visit_shape_expr_ = _leaf
    visit_prim_value_ = _leaf
    visit_string_imm_ = _leaf
    visit_data_type_imm_ = _leaf


def _same_type(a, b) -> bool:
    if a is None or b is None:
        return a is b
    from .structural import structural_equal

    return structural_equal(a, b, map_free_vars=False)


def _retype_call(call, new_op, new_args, builder):
    from .infer import infer_type

    probe = Call(new_op, new_args, call.attrs, call.ty_args)
    try:
        return infer_type(probe, builder)
    except IRError:
        # No rule for this callee (or the rule rejects the new argument types): keep the
        # type the call had, which its binding var is annotated with anyway.
        return call.ty
