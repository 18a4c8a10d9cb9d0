"""Well-formedness of Relax modules (TVM ``relax.analysis.well_formed``, where it matters).

Design
------
One walk per Relax function, iterative over bindings, with a scope (the set of vars
visible at the current binding) and a symbolic scope (PrimVar names defined so far). A
first, cheap pass records where every var is defined, so a use before its definition can
say where the definition is. Every problem found is collected (the walk does not stop at
the first); :func:`well_formed_report` returns them as messages naming the function, the
block and the binding, e.g.::

    Var 'lv3' is used at binding 5 before its definition at binding 9 in function 'main', block 0

Checks
------
1. Vars are defined before use: params, earlier bindings of the function; a DataflowVar
   only inside its own dataflow block; vars bound inside an If branch only inside it.
2. Each var is bound once (params included, across the whole module).
3. DataflowVars are bound only in DataflowBlocks and are not function params; a SeqExpr
   body (function result, branch result) does not reference a DataflowVar.
4. Every GlobalVar refers to a function of the module; the callee (``args[0]``) of an op
   registered ``calls_prim_func`` (``call_tir``, ``call_tir_inplace``,
   ``call_tir_with_grad``) is a GlobalVar of a PrimFunc.
5. Symbolic vars used in types, shapes and prim values are defined by the function
   signature or an earlier ``match_cast`` (a bare dim defines; a compound dim such as
   ``n * 2`` only uses).
6. Impure calls (ops registered ``pure=False``, ``R.call_packed``, calls to impure Relax
   functions) are not in DataflowBlocks, and not in a pure function unless it has the
   ``relax.force_pure`` attribute. Like TVM 0.27, direct calls to PrimFuncs are not treated
   as impure, and allocations are pure.
7. Op calls have an argument count within the op's ``n_args``; If is not inside a
   dataflow block; binding vars and params have types.
8. A VarBinding's var type does not contradict the type of its value where that type is
   known without inference (:func:`~memcore_py.ir.functor.value_type`: vars, tuples,
   constants, typed calls), by TVM's rule (:func:`~memcore_py.ir.types.type_contradiction`).
9. Sizes are real: no tensor type (of a param, a binding, a match_cast pattern, the return
   type, or the result of an allocation op) has a negative constant dim or constant dims
   whose byte size overflows int64 (:func:`~memcore_py.ir.types.tensor_size_problem`).
"""
from __future__ import annotations

from ..errors import IRError, WellFormedError
from ._util import gc_paused
from .expr import (
    BaseFunc,
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
)
from .infer import infer_type
from .module import IRModule
from .op import Op
from .prim import PrimVar
from .functor import value_type
from .types import FuncType, PrimType, ShapeType, TensorType, TupleType, type_contradiction, type_size_problem

__all__ = ["well_formed", "well_formed_report"]

_ATTR_FORCE_PURE = "relax.force_pure"
#: Ops whose result is a new tensor of the shape and dtype in their arguments (check 9).
_ALLOCATION_OPS = frozenset({"relax.builtin.alloc_tensor", "relax.memory.alloc_tensor", "relax.vm.alloc_tensor"})


def well_formed(mod, *, raise_error: bool = False) -> bool:
    """Whether ``mod`` (an IRModule or a single Function) is well-formed.

    Parameters
    ----------
    mod : IRModule or Function
    raise_error : bool, default False
        Raise instead of returning False.

    Returns
    -------
    bool

    Raises
    ------
    WellFormedError
        With ``raise_error``, listing every problem (one per line).
    IRError
        ``mod`` is neither an IRModule nor a Function.
    """
    problems = well_formed_report(mod)
    if problems and raise_error:
        raise WellFormedError(f"{len(problems)} well-formedness problem(s):\n  " + "\n  ".join(problems))
    return not problems


def well_formed_report(mod) -> list[str]:
    """Every well-formedness problem of ``mod`` (IRModule or Function), as messages; empty
    when well-formed."""
    if isinstance(mod, Function):
        mod = IRModule({"main": mod})
    elif not isinstance(mod, IRModule):
        raise IRError(f"well_formed expects an IRModule or Function; got {type(mod).__name__}")
    checker = _Checker(mod)
    with gc_paused():
        for gv, func in mod.functions.items():
            if isinstance(func, Function):
                checker.check_function(gv.name, func)
    return checker.problems


class _Checker:
    def __init__(self, mod: IRModule):
        self.mod = mod
        self.problems: list[str] = []
        self.defined_in_module: dict[Var, str] = {}
        """Var -> name of the function that defines it (duplicates across functions)."""
        # per function
        self.func_name = ""
        self.func: Function | None = None
        self.scope: set[Var] = set()
        self.prim_scope: set[str] = set()
        self.def_site: dict[Var, tuple] = {}
        self.where = ""
        self.in_dataflow = False
        self.position = ()

    # ------------------------------------------------------------------ reporting
    def report(self, msg: str) -> None:
        self.problems.append(msg)

    def loc(self) -> str:
        return self.where

    # ------------------------------------------------------------------ functions
    def check_function(self, name: str, func: Function) -> None:
        self.func_name = name
        self.func = func
        self.scope = set()
        self.prim_scope = set()
        self.def_site = {}
        self._collect_defs(func.body, ())
        where_fn = f"in function {name!r}"
        self.where = where_fn
        seen_params = set()
        # Step 1. Signature: params define vars and (bare) symbolic dims.
        for p in func.params:
            if p in seen_params:
                self.report(f"parameter {p.name!r} appears more than once in function {name!r}")
                continue
            seen_params.add(p)
            if isinstance(p, DataflowVar):
                self.report(f"parameter {p.name!r} of function {name!r} is a DataflowVar; params must be Vars")
            if p.ty is None:
                self.report(f"parameter {p.name!r} of function {name!r} has no type")
            else:
                self._define_prims(p.ty)
            self._define_var(p, f"parameter {p.name!r} of function {name!r}")
        for p in func.params:
            if p.ty is not None:
                self._check_type_prims(p.ty, f"the type of parameter {p.name!r} {where_fn}")
                self._check_size(p.ty, f"the type of parameter {p.name!r} {where_fn}")
        if func.ret_ty is not None:
            self._check_type_prims(func.ret_ty, f"the return type {where_fn}")
            self._check_size(func.ret_ty, f"the return type {where_fn}")
        # Step 2. Body.
        self._check_seq(func.body, ("function",))

    def _collect_defs(self, seq: SeqExpr, prefix: tuple) -> None:
        stack = [(seq, prefix)]
        while stack:
            s, pre = stack.pop()
            for bi, block in enumerate(s.blocks):
                for i, b in enumerate(block.bindings):
                    self.def_site.setdefault(b.var, pre + (bi, i))
                    v = b.value
                    if isinstance(v, If):
                        stack.append((v.true_branch, pre + (bi, i, "then")))
                        stack.append((v.false_branch, pre + (bi, i, "else")))

    # ------------------------------------------------------------------ sequences
    def _check_seq(self, seq: SeqExpr, context: tuple) -> None:
        defined_here: list[Var] = []
        fname = self.func_name
        ctx_text = _context_text(context)
        for bi, block in enumerate(seq.blocks):
            is_df = isinstance(block, DataflowBlock)
            self.in_dataflow = is_df
            block_vars: list[Var] = []
            for i, b in enumerate(block.bindings):
                self.position = (bi, i)
                self.where = f"in function {fname!r}, block {bi}{ctx_text}"
                self._check_binding(b, bi, i, is_df, context)
                block_vars.append(b.var)
            # DataflowVars do not outlive their block.
            for v in block_vars:
                if isinstance(v, DataflowVar):
                    self.scope.discard(v)
                else:
                    defined_here.append(v)
            self.in_dataflow = False
        self.where = f"in function {fname!r}{ctx_text}"
        self.position = ("body",)
        body = seq.body
        flagged = set()
        for v in _vars_in(body):
            if isinstance(v, DataflowVar) and v not in flagged:
                flagged.add(v)
                self.report(
                    f"the result of a SeqExpr references DataflowVar {v.name!r} {self.where}; "
                    f"return it through a Var bound in the block (R.output)"
                )
        self._check_uses(body, skip=flagged)
        if context != ("function",):
            # Vars bound inside an If branch are not visible after it.
            for v in defined_here:
                self.scope.discard(v)

    def _check_binding(self, b, bi: int, i: int, is_df: bool, context: tuple) -> None:
        var = b.var
        value = b.value
        here = f"binding {i} ({var.name!r})"
        # Uses first (a binding cannot use its own var).
        if isinstance(value, If):
            if is_df:
                self.report(f"If is not allowed in a dataflow block: {here} {self.where}")
            self._check_uses(value.cond)
            saved_where, saved_pos, saved_df = self.where, self.position, self.in_dataflow
            self._check_seq(value.true_branch, context + (bi, i, "then"))
            self._check_seq(value.false_branch, context + (bi, i, "else"))
            self.where, self.position, self.in_dataflow = saved_where, saved_pos, saved_df
        elif isinstance(value, Function):
            self.report(f"nested functions are not supported: {here} {self.where}")
        else:
            self._check_uses(value)
        if isinstance(b, MatchCast):
            self._define_prims(b.ty)
            self._check_type_prims(b.ty, f"the match_cast type of {here} {self.where}")
            self._check_size(b.ty, f"the match_cast type of {here} {self.where}")
        # The definition.
        if isinstance(var, DataflowVar) and not is_df:
            self.report(f"DataflowVar {var.name!r} is bound outside a dataflow block: {here} {self.where}")
        if var.ty is None:
            self.report(f"Var {var.name!r} has no type: {here} {self.where}")
        else:
            if not isinstance(b, MatchCast):
                self._check_type_prims(var.ty, f"the type of {here} {self.where}")
                why = type_contradiction(var.ty, value_type(value))
                if why is not None:
                    self.report(f"the type of {here} contradicts its value: {why} {self.where}")
            self._check_size(var.ty, f"the type of {here} {self.where}")
        if (type(value) is Call and type(value.op) is Op and value.op.name in _ALLOCATION_OPS
                and not (type(var.ty) is TensorType and var.ty.shape is not None)):  # else var.ty's check covers it
            self._check_allocation(value, f"the allocation of {here} {self.where}")
        self._define_var(var, f"{here} {self.where}")

    def _define_var(self, var: Var, where: str) -> None:
        if var in self.scope or var in self.defined_in_module:
            owner = self.defined_in_module.get(var, self.func_name)
            also = "" if owner == self.func_name else f" (also defined in function {owner!r})"
            self.report(f"Var {var.name!r} is defined more than once{also}: {where}")
        self.scope.add(var)
        self.defined_in_module.setdefault(var, self.func_name)

    # ------------------------------------------------------------------ uses
    def _check_uses(self, expr, skip=()) -> None:
        stack = [expr]
        while stack:
            e = stack.pop()
            t = type(e)
            if t is Var or t is DataflowVar:
                if e not in self.scope and e not in skip:
                    self._undefined(e)
            elif t is Call:
                self._check_call(e)
                op = e.op
                if isinstance(op, (Var, GlobalVar, ExternFunc)):
                    stack.append(op)
                stack.extend(reversed(e.args))
            elif t is Tuple:
                stack.extend(reversed(e.fields))
            elif t is TupleGetItem:
                stack.append(e.tuple_value)
            elif t is GlobalVar:
                if e.name not in self.mod:
                    self.report(f"GlobalVar {e.name!r} does not name a function of the module {self._at()}")
            elif t is ShapeExpr:
                for v in e.values:
                    self._check_prim(v, f"R.shape([...]) {self._at()}")
            elif t is PrimValue:
                self._check_prim(e.value, f"R.prim_value(...) {self._at()}")
            elif t is If:
                self.report(f"If must be the value of a binding, not nested in an expression {self._at()}")
            elif t is SeqExpr:
                self.report(f"SeqExpr must be a function body or If branch, not nested in an expression {self._at()}")
            elif isinstance(e, BaseFunc):
                self.report(f"a function value is nested in an expression {self._at()}")
            elif t in (Constant, StringImm, DataTypeImm, ExternFunc):
                pass

    def _at(self) -> str:
        pos = self.position
        if pos and pos[0] == "body":
            return f"in the result {self.where}"
        if len(pos) == 2:
            return f"at binding {pos[1]} {self.where}"
        return self.where

    def _undefined(self, v: Var) -> None:
        site = self.def_site.get(v)
        pos = self.position
        if site is not None:
            cur_block, cur_binding = (pos if len(pos) == 2 else (None, None))
            site_ctx = site[:-2]
            if (
                len(site) == 2
                and cur_block is not None
                and (site[0], site[1]) > (cur_block, cur_binding)
                and not self._in_branch()
            ):
                if site[0] == cur_block:
                    self.report(
                        f"Var {v.name!r} is used at binding {cur_binding} before its definition at binding "
                        f"{site[1]} in function {self.func_name!r}, block {cur_block}"
                    )
                else:
                    self.report(
                        f"Var {v.name!r} is used at block {cur_block}, binding {cur_binding} before its definition "
                        f"at block {site[0]}, binding {site[1]} in function {self.func_name!r}"
                    )
                return
            if isinstance(v, DataflowVar) and not site_ctx:
                self.report(
                    f"DataflowVar {v.name!r} (bound in block {site[0]}) is used outside its dataflow block "
                    f"{self._at()}"
                )
                return
            if site_ctx:
                self.report(
                    f"Var {v.name!r} is bound inside an If branch "
                    f"({_context_text(('function',) + site_ctx).strip(' ,')}) and used outside it {self._at()}"
                )
                return
            self.report(f"Var {v.name!r} is used before its definition {self._at()}")
            return
        owner = self.defined_in_module.get(v)
        if owner is not None and owner != self.func_name:
            self.report(f"Var {v.name!r} belongs to function {owner!r} and is used {self._at()}")
            return
        self.report(f"Var {v.name!r} is not defined {self._at()}")

    def _in_branch(self) -> bool:
        return ", in the " in self.where

    def _check_call(self, call: Call) -> None:
        op = call.op
        impure = False
        if isinstance(op, Op):
            problem = op.n_args_error(len(call.args))
            if problem is not None:
                self.report(f"{problem} {self._at()}")
            if op.calls_prim_func and call.args:
                callee = call.args[0]
                target = self.mod[callee.name] if isinstance(callee, GlobalVar) and callee.name in self.mod else None
                if not isinstance(target, PrimFunc):
                    what = (
                        f"GlobalVar {callee.name!r} of a Relax function" if isinstance(target, Function)
                        else f"{type(callee).__name__} {getattr(callee, 'name', '')!r}".replace(" ''", "")
                    )
                    if not (isinstance(callee, GlobalVar) and target is None):  # missing gv reported once
                        self.report(f"{op.name} must call a PrimFunc GlobalVar; got {what} {self._at()}")
            impure = not op.pure
        elif isinstance(op, ExternFunc):
            impure = True
        elif isinstance(op, GlobalVar):
            target = self.mod[op.name] if op.name in self.mod else None
            impure = isinstance(target, Function) and not target.is_pure
        elif isinstance(op, Var):
            impure = isinstance(op.ty, FuncType) and not op.ty.purity
        if impure:
            what = _callee_text(call)
            if self.in_dataflow:
                self.report(f"impure call {what} is not allowed in a dataflow block {self._at()}")
            elif self.func.is_pure and not self.func.attrs.get(_ATTR_FORCE_PURE):
                self.report(
                    f"function {self.func_name!r} is pure but makes an impure call {what} {self._at()}; "
                    f"declare it @R.function(pure=False) or set the {_ATTR_FORCE_PURE!r} attribute"
                )

    # ------------------------------------------------------------------ sizes
    def _check_size(self, ty, what: str) -> None:
        why = type_size_problem(ty)
        if why is not None:
            self.report(f"{what}: {why}")

    def _check_allocation(self, call: Call, what: str) -> None:
        try:
            ty = infer_type(call, self.mod)
        except IRError:
            return  # a malformed call is reported by the call checks
        self._check_size(ty, what)

    # ------------------------------------------------------------------ symbolic vars
    def _define_prims(self, ty) -> None:
        for d in _bare_dims(ty):
            self.prim_scope.add(d.name)

    def _check_type_prims(self, ty, what: str) -> None:
        for name in _type_prim_names(ty):
            if name not in self.prim_scope:
                self.report(
                    f"symbolic var {name!r} in {what} is not defined; define it in the function "
                    f"signature or an earlier match_cast"
                )

    def _check_prim(self, expr, what: str) -> None:
        for name in _prim_names(expr):
            if name not in self.prim_scope:
                self.report(
                    f"symbolic var {name!r} in {what} is not defined; define it in the function "
                    f"signature or an earlier match_cast"
                )


def _context_text(context: tuple) -> str:
    if context == ("function",) or not context:
        return ""
    parts = []
    rest = context[1:]
    for k in range(0, len(rest), 3):
        bi, i, which = rest[k: k + 3]
        parts.append(f", in the {which} branch of block {bi}, binding {i}")
    return "".join(parts)


def _callee_text(call: Call) -> str:
    op = call.op
    if isinstance(op, Op):
        return op.name
    if isinstance(op, ExternFunc):
        return f'R.call_packed("{op.global_symbol}")'
    return f"to {getattr(op, 'name', type(op).__name__)!r}"


def _vars_in(expr):
    stack = [expr]
    while stack:
        e = stack.pop()
        t = type(e)
        if t is Var or t is DataflowVar:
            yield e
        elif t is Tuple:
            stack.extend(e.fields)
        elif t is TupleGetItem:
            stack.append(e.tuple_value)
        elif t is Call:
            stack.extend(e.args)


def _prim_names(expr):
    stack = [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, PrimVar):
            yield e.name
        else:
            stack.extend(e.operands)


def _iter_type_dims(ty):
    stack = [ty]
    while stack:
        t = stack.pop()
        if isinstance(t, TensorType):
            if t.shape is not None:
                yield from t.shape
        elif isinstance(t, ShapeType):
            if t.values is not None:
                yield from t.values
        elif isinstance(t, PrimType):
            if t.value is not None:
                yield t.value
        elif isinstance(t, TupleType):
            stack.extend(t.fields)
        elif isinstance(t, FuncType):
            stack.extend(t.params or ())
            stack.append(t.ret)


def _bare_dims(ty):
    return [d for d in _iter_type_dims(ty) if isinstance(d, PrimVar)]


def _type_prim_names(ty):
    out = []
    for d in _iter_type_dims(ty):
        out.extend(_prim_names(d))
    return out
