"""CanonicalizeBindings: fold trivial bindings, known tuple accesses and constant bindings.

Port of TVM ``CanonicalizeBindings`` (src/relax/transform/canonicalize_bindings.cc) — the
parts KillAfterLastUse relies on (it runs this first, and its effects are visible in the
output). Two stages, each over a whole function:

Stage 1, symbolic variables (TVM ``CanonicalizeTIRVariables``)
    A ``v = R.match_cast(value, T)`` whose pattern ``T`` has a bare symbolic variable where
    ``value``'s type has a known dim (``R.Tensor((n,))`` matched against a (16,) tensor)
    makes that variable known (``n = 16``); later shapes, prim values, call ``ty_args``,
    match_cast patterns and binding types have it substituted. Two match_casts that give
    one variable provably different values raise :class:`~memcore_py.errors.PassError`.
    Known values are scoped (If branches and nested functions restore them on exit).
    Substituted expressions are constant-folded; TVM's full arithmetic simplifier is not
    reproduced (a non-constant substituted dim keeps its written form).

Stage 2, bindings (TVM ``CanonicalizePlanner`` + ``BindingCanonicalizer``)
    The planning rules (each binding's *known value*, *trivial bindings* ``y = x``,
    *constant bindings*, and the dataflow facts: variables bound in dataflow blocks and
    variables used outside their home block) live in one compiled kernel over the binding
    table, :mod:`memcore_py.analysis._canonical_rules`, whose docstring states them;
    KillAfterLastUse's rebinding rule reads the same kernel.

    Then the plan (:func:`_plan`): (a) a Var defined in a dataflow block and never used outside it becomes
    a DataflowVar; (b) uses of a constant-bound var become the constant (the binding stays,
    now unused); (c) each trivial binding ``y = x`` is removed and uses of ``y`` become
    ``x`` (chains collapse to the earliest non-trivial var, the kernel's rule) — except ``gv = lv`` where
    ``gv`` is a Var used outside the block and ``lv`` a DataflowVar: then ``lv``'s binding
    defines ``gv`` instead and uses of ``lv`` become ``gv`` (a DataflowVar may never
    escape its block). Finally, in each dataflow block, a DataflowVar used only as the
    value of one output binding (``gv = R.match_cast(lv, T)`` with a different ``T``, the
    case (c) leaves) is folded into that output binding.

Every SeqExpr comes out with empty blocks dropped and adjacent same-kind blocks merged, and
a binding whose value's type changed gets a fresh variable of the new type (TVM's mutator
does both). When stage 1 changes a branch of an If, each branch whose result type is not
the If's type (with the outer substitutions) ends with ``then_branch_with_dyn`` /
``else_branch_with_dyn = R.match_cast(<result>, <If type>)``, as in TVM.

Example::

    before:  x = R.add(w, w); y = x; t = (x, y); z = t[1]; return R.add(z, z)
    after:   x = R.add(w, w); t = (x, x); gv = R.add(x, x); return gv    (y, z removed)
"""
from __future__ import annotations

from .._compiled import load_compiled
from ..analysis.function_table import read_function_table
from ..errors import PassError
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
    Var,
    VarBinding,
)
from ..ir.module import IRModule
from ..ir.prim import PrimVar, simplify_const
from ..ir.types import PrimType, ShapeType, TensorType, TupleType
from ..ir.functor import (
    OPAQUE_NON_PRIM_LEAVES,
    ExprMutator,
    map_functions,
    normalize_blocks,
    normalize_function_blocks,
    value_type,
    var_uses,
)
from ..ir.prim import substitute
from ..ir.types import substitute_type, type_equal
from .pass_infra import FunctionPass, PassContext

__all__ = ["canonicalize_bindings", "CanonicalizeBindings", "match_cast_substitutes"]

_VAR_CLASSES = (Var, DataflowVar)
_SCOPE_CLASSES = (If, Function, SeqExpr)
_VAR_CLASS_SET = frozenset(_VAR_CLASSES)
_SIMPLE_ARG = frozenset(
    (Var, DataflowVar, Constant, ShapeExpr, PrimValue, StringImm, DataTypeImm, ExternFunc, GlobalVar)
)


# ------------------------------------------------------------------------------- helpers
def _expr_type(e):
    """Type of a bound value as TVM's ``GetStructInfo`` would report it (None if unknown)."""
    return value_type(e)


# ----------------------------------------------------------------- stage 1: symbolic vars
def _infer_symbolic_map(pattern, value_ty, out):
    """Bind bare symbolic vars of ``pattern`` to the matching parts of ``value_ty`` (TVM
    ``InferSymbolicVarMap``): first binding of a name wins."""
    if pattern is None or value_ty is None:
        return
    cls = type(pattern)
    if cls is TensorType and type(value_ty) is TensorType:
        if pattern.shape is not None and value_ty.shape is not None and len(pattern.shape) == len(value_ty.shape):
            for p, v in zip(pattern.shape, value_ty.shape):
                if type(p) is PrimVar and p.name not in out:
                    out[p.name] = (p, v)
    elif cls is ShapeType and type(value_ty) is ShapeType:
        if pattern.values is not None and value_ty.values is not None and len(pattern.values) == len(value_ty.values):
            for p, v in zip(pattern.values, value_ty.values):
                if type(p) is PrimVar and p.name not in out:
                    out[p.name] = (p, v)
    elif cls is PrimType and type(value_ty) is PrimType:
        if type(pattern.value) is PrimVar and value_ty.value is not None and pattern.value.name not in out:
            out[pattern.value.name] = (pattern.value, value_ty.value)
    elif cls is TupleType and type(value_ty) is TupleType and len(pattern.fields) == len(value_ty.fields):
        for p, v in zip(pattern.fields, value_ty.fields):
            _infer_symbolic_map(p, v, out)


def _is_itself(name: str, value) -> bool:
    """Whether the value ``value`` the symbolic stage infers for the variable ``name`` is that
    variable (no substitution)."""
    return type(value) is PrimVar and value.name == name


def match_cast_substitutes(pattern, value_ty) -> bool:
    """Whether ``R.match_cast(<a value of type value_ty>, pattern)`` can make the symbolic stage
    substitute a variable: a bare symbolic variable of ``pattern`` matches a part of
    ``value_ty`` that is not that variable (:func:`_infer_symbolic_map`). When no match_cast of
    a function can, the stage substitutes nothing there. Asked of match_casts read from TVM's
    objects, whose function the stage does not walk."""
    found: dict = {}
    _infer_symbolic_map(pattern, value_ty, found)
    return any(not _is_itself(name, value) for name, (_pvar, value) in found.items())


def _provably_different(a, b) -> bool:
    """True when ``a - b`` folds to a nonzero constant."""
    try:
        diff = simplify_const(a - b)
    except Exception:  # pragma: no cover - non-integer expressions
        return False
    return diff is not None and diff != 0


class _SymbolicVarCanonicalizer(ExprMutator):
    """Port of TVM ``SymbolicVarCanonicalizer`` (stage 1)."""

    opaque_leaves = OPAQUE_NON_PRIM_LEAVES  # shapes and prim values in call args are substituted

    def __init__(self, func_name):
        super().__init__()
        self.func_name = func_name
        self.known: dict = {}
        """symbolic var name -> (PrimExpr value, defining MatchCast)."""
        self._values: dict = {}
        """symbolic var name -> PrimExpr value (the substitution)."""

    def _set_known(self, known):
        self.known = known
        self._values = {
            k: v[0] for k, v in known.items() if not _is_itself(k, v[0])
        }

    def visit_function(self, func):
        saved = dict(self.known)
        out = super().visit_function(func)
        self._set_known(saved)
        return out

    def visit_if(self, e):
        cond = self.visit_expr(e.cond)
        saved = dict(self.known)
        tb = self.visit_seq(e.true_branch)
        self._set_known(dict(saved))
        fb = self.visit_seq(e.false_branch)
        self._set_known(saved)
        if cond is e.cond and tb is e.true_branch and fb is e.false_branch:
            return e
        # A branch whose variables were substituted may now have a more precise type than
        # the If; TVM restores the If's type (with the outer substitutions only) by ending
        # each branch whose type differs with a match_cast to it.
        ty = substitute_type(e.ty, self._values)
        if ty is not None:
            tb = _cast_branch(tb, ty, "then_branch_with_dyn")
            fb = _cast_branch(fb, ty, "else_branch_with_dyn")
        return If(cond, tb, fb, ty)

    def visit_var_def(self, var):
        if not self._values:
            return var
        ty = substitute_type(var.ty, self._values)
        if ty is var.ty:
            return var
        new = type(var)(var.name, ty)
        self.var_remap[var] = new
        return new

    def visit_expr(self, e):
        cls = type(e)
        if self._values:
            if cls is ShapeExpr:
                vals = tuple(substitute(d, self._values) for d in e.values)
                if all(a is b for a, b in zip(vals, e.values)):
                    return e
                return ShapeExpr(vals)
            if cls is PrimValue:
                v = substitute(e.value, self._values)
                return e if v is e.value else PrimValue(v)
        return super().visit_expr(e)

    def visit_call(self, call):
        out = self.visit_call_default(call)
        if self._values and out.ty_args:
            tys = tuple(substitute_type(t, self._values) for t in out.ty_args)
            if any(a is not b for a, b in zip(tys, out.ty_args)):
                out = Call(out.op, out.args, out.attrs, tys, substitute_type(out.ty, self._values))
        return out

    def visit_binding(self, b, out):
        if type(b) is MatchCast:
            found = {}
            _infer_symbolic_map(b.ty, _expr_type(b.value), found)
            for name, (_pvar, value) in found.items():
                prev = self.known.get(name)
                if prev is not None:
                    if _provably_different(prev[0], value):
                        raise PassError(
                            "canonicalize-bindings: match_cast statements must be consistent; the "
                            f"definition of {prev[1].var.name!r} implies that {name} is {prev[0]!r}, "
                            f"while the later definition of {b.var.name!r} implies that {name} is "
                            f"{value!r}; in function {self.func_name!r}"
                        )
                else:
                    self.known[name] = (value, b)
                    if not _is_itself(name, value):
                        self._values[name] = value
            value = self.visit_expr(b.value)
            new_ty = substitute_type(b.ty, self._values)
            var = self.visit_var_def(b.var)
            if value is b.value and new_ty is b.ty and var is b.var:
                out.append(b)
            else:
                out.append(MatchCast(var, value, new_ty))
            return
        super().visit_binding(b, out)


def _cast_branch(seq, ty, name):
    """``seq`` ending in ``name = R.match_cast(<result>, ty)`` unless its type is ``ty``."""
    if type_equal(ty, value_type(seq.body)):
        return seq
    var = Var(name, ty)
    blocks = normalize_blocks(tuple(seq.blocks) + (BindingBlock([MatchCast(var, seq.body, ty)]),))
    return SeqExpr(blocks, var)


def _has_match_cast(func) -> bool:
    stack = [func.body]
    while stack:
        e = stack.pop()
        cls = type(e)
        if cls is SeqExpr:
            for blk in e.blocks:
                for b in blk.bindings:
                    if type(b) is MatchCast:
                        return True
                    v = b.value
                    if type(v) in (If, Function, SeqExpr):
                        stack.append(v)
        elif cls is If:
            stack.append(e.true_branch)
            stack.append(e.false_branch)
        elif cls is Function:
            stack.append(e.body)
    return False


# ----------------------------------------------------------------- stage 2: planning
def _plan(func, name):
    """Stage 2's plan of ``func``: ``(replace_usage, replace_binding, to_remove, constants)``.

    The planning rules (known values, trivial and constant bindings, dataflow facts, where a
    chain of trivial bindings ends) are the compiled kernel's
    (:mod:`memcore_py.analysis._canonical_rules`), over the binding table of ``func``; this
    function only turns them into the rewrite's maps (TVM ``CanonicalizePlanner``'s last step),
    with the Var/DataflowVar exchange."""
    table, _reader = read_function_table(func.body, name, "CanonicalizeBindings")
    chain_ends, constants, in_dataflow, outside = load_compiled("memcore_py.analysis._canonical_rules").canonical_plan(
        table, 0).objects()
    replace_usage = {}
    replace_binding = {}
    to_remove = set()
    for var in in_dataflow:
        if type(var) is Var and var not in outside:
            new = DataflowVar(var.name, var.ty)
            replace_binding[var] = new
            replace_usage[var] = new
    for bound_var, bound_to in chain_ends.items():
        while bound_to in replace_binding:
            bound_to = replace_binding[bound_to]
        if type(bound_var) is DataflowVar or type(bound_to) is not DataflowVar or bound_var not in outside:
            replace_usage[bound_var] = bound_to
        else:
            replace_binding[bound_to] = bound_var
            replace_usage[bound_to] = bound_var
        to_remove.add(bound_var)
    return replace_usage, replace_binding, to_remove, constants


# ----------------------------------------------------------------- stage 2: rewrite
class _BindingCanonicalizer(ExprMutator):
    """Port of TVM ``BindingCanonicalizer``: applies the plan."""

    def __init__(self, plan):
        super().__init__()
        self.replace_usage, self.replace_binding, self.to_remove, self.inline_constant = plan
        # Final replacement of every replaced use: follow the usage chain, then inline a
        # constant (TVM does the same at each use).
        ru, consts = self.replace_usage, self.inline_constant
        repl = {}
        for v in list(ru) + list(consts):
            r = v
            while r in ru:
                r = ru[r]
            repl[v] = consts.get(r, r)
        self.repl = repl

    def visit_binding(self, b, out):
        if b.var in self.to_remove:
            return
        super().visit_binding(b, out)

    def visit_var_def(self, var):
        rb = self.replace_binding
        while var in rb:
            var = rb[var]
        return var

    def visit_var_use(self, var):
        r = self.repl.get(var, var)
        if type(r) is Constant:
            return r
        return self.var_remap.get(r, r)

    def visit_block(self, blk):
        if type(blk) is DataflowBlock or self.replace_binding:
            blocks = super().visit_block(blk)
            if type(blk) is DataflowBlock:
                return [_fold_dataflow_outputs(b) if type(b) is DataflowBlock else b for b in blocks]
            return blocks
        # Fast path for ordinary blocks: a binding none of whose arguments is replaced is
        # kept as it is without visiting it.
        to_remove = self.to_remove
        repl = self.repl
        simple = _SIMPLE_ARG
        out = []
        changed = False
        for b in blk.bindings:
            var = b.var
            if var in to_remove:
                changed = True
                continue
            value = b.value
            if type(value) is Call and not self.var_remap and type(value.op) not in _VAR_CLASS_SET:
                for a in value.args:
                    if a in repl or type(a) not in simple:
                        break
                else:
                    out.append(b)
                    continue
            n = len(out)
            self.visit_binding(b, out)
            if len(out) != n + 1 or out[n] is not b:
                changed = True
        if not changed:
            return [blk]
        return [BindingBlock(out)]


def _fold_dataflow_outputs(block):
    """Remove DataflowVars that only feed one output binding (TVM's special case in
    ``BindingCanonicalizer::VisitBindingBlock_(DataflowBlockNode)``)."""
    bindings = block.bindings
    disqualified = set()
    output_vars = set()
    candidates = {}
    for b in reversed(bindings):
        var, value = b.var, b.value
        if type(var) is DataflowVar:
            for v in var_uses(value):
                if type(v) is DataflowVar:
                    disqualified.add(v)
            if var not in disqualified and var in output_vars:
                candidates[var] = value
        else:
            if type(value) is DataflowVar:
                if value in output_vars:
                    disqualified.add(value)
                output_vars.add(value)
            else:
                for v in var_uses(value):
                    if type(v) is DataflowVar:
                        disqualified.add(v)
    if not candidates:
        return block
    new_bindings = []
    for b in bindings:
        var, value = b.var, b.value
        if type(var) is DataflowVar and var in candidates:
            continue
        if type(var) is not DataflowVar and type(value) is DataflowVar and value in candidates:
            if type(b) is MatchCast:
                new_bindings.append(MatchCast(var, candidates[value], b.ty))
            else:
                new_bindings.append(VarBinding(var, candidates[value]))
        else:
            new_bindings.append(b)
    return DataflowBlock(new_bindings)


# ----------------------------------------------------------------- entry points
def canonicalize_tir_variables(func: Function, name: str = "?") -> Function:
    """Stage 1 alone (TVM ``CanonicalizeTIRVariables``)."""
    if not _has_match_cast(func):
        # No symbolic var can become known: the mutator would only normalize blocks.
        return _normalize_only(func)
    return _SymbolicVarCanonicalizer(name).visit_function(func)


def canonicalize_relax_bindings(func: Function, name: str = "?") -> Function:
    """Stage 2 alone (TVM ``CanonicalizeRelaxBindings``)."""
    plan = _plan(func, name)
    if not (plan[0] or plan[1] or plan[2] or plan[3]) and not _has_dataflow(func):
        return _normalize_only(func)
    m = _BindingCanonicalizer(plan)
    m.func_name = name
    return m.visit_function(func)


def _has_dataflow(func) -> bool:
    stack = [func.body]
    while stack:
        e = stack.pop()
        cls = type(e)
        if cls is SeqExpr:
            for blk in e.blocks:
                if type(blk) is DataflowBlock:
                    return True
                for b in blk.bindings:
                    if type(b.value) in _SCOPE_CLASSES:
                        stack.append(b.value)
        elif cls is If:
            stack.append(e.true_branch)
            stack.append(e.false_branch)
        elif cls is Function:
            stack.append(e.body)
    return False


def canonicalize_bindings(func: Function, name: str = "?") -> Function:
    """Both stages (TVM ``CanonicalizeBindings``); see the module docstring."""
    func = canonicalize_tir_variables(func, name)
    return canonicalize_relax_bindings(func, name)


def _normalize_only(func):
    return normalize_function_blocks(func)


class CanonicalizeBindings(FunctionPass):
    """Function pass: :func:`canonicalize_bindings` on every Relax function."""

    name = "canonicalize-bindings"

    def transform_function(self, func: Function, mod: IRModule, ctx: PassContext) -> Function:
        return canonicalize_bindings(func)

    def transform(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return map_functions(mod, canonicalize_bindings)
