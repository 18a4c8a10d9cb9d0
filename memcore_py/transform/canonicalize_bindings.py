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
    A planning walk records, for every binding in order:

    - its *known value*: the bound value, unwrapped when it is ``t[i]`` of a tuple literal
      known through variables (``t = (a, b); c = t[1]`` knows ``c`` is ``b``), or a tuple
      ``(u[0], ..., u[n-1])`` that re-packs every field of one earlier tuple ``u`` of
      arity n in order (it is ``u``; in practice only when ``u`` is a parameter, since a
      bound ``u`` unwraps to its own value);
    - *trivial bindings*: the known value is a variable and the binding is a VarBinding or a
      match_cast to exactly the value's type;
    - *constant bindings*: the known value is a :class:`~memcore_py.ir.Constant`;
    - dataflow facts: the block each var is defined in, vars defined in dataflow blocks,
      and vars used outside their home dataflow block (any use outside a dataflow block, a
      use in another block, or a free variable of a nested function).

    Then the plan: (a) a Var defined in a dataflow block and never used outside it becomes
    a DataflowVar; (b) uses of a constant-bound var become the constant (the binding stays,
    now unused); (c) each trivial binding ``y = x`` is removed and uses of ``y`` become
    ``x`` (chains collapse to the earliest non-trivial var) — except ``gv = lv`` where
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
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
)
from ..ir.module import IRModule
from ..ir.prim import BinaryOp, IntImm, PrimVar, simplify_const
from ..ir.types import FuncType, PrimType, ShapeType, TensorType, TupleType
from ..ir.functor import OPAQUE_NON_PRIM_LEAVES, ExprMutator, map_functions, normalize_blocks, normalize_function_blocks, value_type, var_uses
from ..ir.prim import substitute
from ..ir.types import substitute_type, type_equal
from .pass_infra import FunctionPass, PassContext

__all__ = ["canonicalize_bindings", "CanonicalizeBindings", "free_vars"]

_VAR_CLASSES = (Var, DataflowVar)
_SCOPE_CLASSES = (If, Function, SeqExpr)
_VAR_CLASS_SET = frozenset(_VAR_CLASSES)
_SIMPLE_ARG = frozenset((Var, DataflowVar, Constant, ShapeExpr, PrimValue, StringImm, DataTypeImm, ExternFunc, GlobalVar))


# ------------------------------------------------------------------------------- helpers
def free_vars(func: Function) -> list:
    """Variables used in ``func`` but bound neither by its params nor by its bindings
    (nested scopes included), in first-use order."""
    bound = set(func.params)
    stack = [func.body]
    while stack:
        e = stack.pop()
        cls = type(e)
        if cls is SeqExpr:
            for blk in e.blocks:
                for b in blk.bindings:
                    bound.add(b.var)
                    if type(b.value) in (If, Function, SeqExpr):
                        stack.append(b.value)
        elif cls is If:
            stack.append(e.true_branch)
            stack.append(e.false_branch)
        elif cls is Function:
            bound.update(e.params)
            stack.append(e.body)
    out = []
    seen = set()
    for v in var_uses(func.body):
        if v not in bound and v not in seen:
            seen.add(v)
            out.append(v)
    return out


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
            k: v[0] for k, v in known.items() if not (type(v[0]) is PrimVar and v[0].name == k)
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
            for name, (pvar, value) in found.items():
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
                    if not (type(value) is PrimVar and value.name == name):
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
class _CanonicalizePlanner:
    """Port of TVM ``CanonicalizePlanner``: one walk that records what stage 2 rewrites.

    ``track_dataflow=False`` (the function has no dataflow block) skips recording uses:
    they only matter for the Var/DataflowVar rules."""

    def __init__(self, track_dataflow=True):
        self.track = track_dataflow
        self.current_block = None
        self.def_block = {}
        self.trivial = {}
        self.known = {}
        self.bound_to_constant = {}
        self.defined_inside_dataflow = {}
        self.used_outside_home = set()

    # -- walk -----------------------------------------------------------------
    def visit_function(self, func, top_level=False):
        saved = self.current_block
        self.current_block = None
        if self.track and not top_level:
            self.used_outside_home.update(free_vars(func))
        self.visit_seq(func.body)
        self.current_block = saved

    def visit_seq(self, seq):
        saved = self.current_block
        self.current_block = None
        track = self.track
        trivial = self.trivial
        known = self.known
        consts = self.bound_to_constant
        def_block = self.def_block
        for blk in seq.blocks:
            self.current_block = blk
            is_df = type(blk) is DataflowBlock
            for b in blk.bindings:
                var = b.var
                value = orig = b.value
                cls = type(value)
                same_type = True
                if type(b) is MatchCast:
                    same_type = type_equal(var.ty, _expr_type(value))
                if cls is TupleGetItem or cls is Tuple:
                    unwrapped = self.unwrap(value)
                    if unwrapped is not None:
                        value = unwrapped
                        cls = type(value)
                if cls is Var or cls is DataflowVar:
                    if same_type:
                        trivial[var] = value
                elif cls is Constant:
                    consts[var] = value
                known[var] = value
                if track:
                    def_block[var] = blk
                    self.visit_expr(orig)
                    if is_df:
                        self.defined_inside_dataflow[var] = None
                elif type(orig) in _SCOPE_CLASSES:
                    self.visit_expr(orig)
            self.current_block = None
        if track:
            self.visit_expr(seq.body)
        self.current_block = saved

    def visit_expr(self, e):
        cls = type(e)
        if cls is Var or cls is DataflowVar:
            self.visit_var_use(e)
            return
        if cls is Call:
            if isinstance(e.op, Var):
                self.visit_var_use(e.op)
            for a in e.args:
                self.visit_expr(a)
        elif cls is Tuple:
            for f in e.fields:
                self.visit_expr(f)
        elif cls is TupleGetItem:
            self.visit_expr(e.tuple_value)
        elif cls is If:
            self.visit_expr(e.cond)
            self.visit_seq(e.true_branch)
            self.visit_seq(e.false_branch)
        elif cls is SeqExpr:
            self.visit_seq(e)
        elif cls is Function:
            self.visit_function(e)

    def visit_var_use(self, var):
        if not self.track:
            return
        blk = self.current_block
        if blk is None or type(blk) is not DataflowBlock:
            self.used_outside_home.add(var)
        else:
            home = self.def_block.get(var, blk)
            if home is not blk and var in self.def_block:
                self.used_outside_home.add(var)

    # -- known values ------------------------------------------------------------
    def _unwrap_var(self, e):
        known = self.known
        while type(e) in _VAR_CLASSES:
            nxt = known.get(e)
            if nxt is None:
                return e
            e = nxt
        return e

    def unwrap(self, e):
        """The known value ``e`` stands for, or None (TVM ``UnwrapKnownValue``)."""
        cls = type(e)
        if cls is TupleGetItem:
            tup = self._unwrap_var(e.tuple_value)
            if type(tup) is Tuple and e.index < len(tup.fields):
                return tup.fields[e.index]
            return None
        if cls is Tuple and e.fields:
            fields = e.fields
            first = self._unwrap_var(fields[0])
            if type(first) is not TupleGetItem:
                return None
            src_ty = _expr_type(first.tuple_value)
            if type(src_ty) is not TupleType or len(src_ty.fields) != len(fields):
                return None
            earlier = self._unwrap_var(first.tuple_value)
            for i, f in enumerate(fields):
                el = self._unwrap_var(f)
                if type(el) is not TupleGetItem or el.index != i:
                    return None
                if self._unwrap_var(el.tuple_value) is not earlier:
                    return None
            return earlier
        return None

    # -- plan ------------------------------------------------------------------------
    def plan(self):
        replace_usage = {}
        replace_binding = {}
        to_remove = set()
        outside = self.used_outside_home
        for var in self.defined_inside_dataflow:
            if type(var) is Var and var not in outside:
                new = DataflowVar(var.name, var.ty)
                replace_binding[var] = new
                replace_usage[var] = new
        trivial = self.trivial
        for bound_var, bound_to in trivial.items():
            while bound_to in trivial:
                bound_to = trivial[bound_to]
            while bound_to in replace_binding:
                bound_to = replace_binding[bound_to]
            if type(bound_var) is DataflowVar or type(bound_to) is not DataflowVar or bound_var not in outside:
                replace_usage[bound_var] = bound_to
            else:
                replace_binding[bound_to] = bound_var
                replace_usage[bound_to] = bound_var
            to_remove.add(bound_var)
        return replace_usage, replace_binding, to_remove, dict(self.bound_to_constant)


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
    planner = _CanonicalizePlanner(track_dataflow=_has_dataflow(func))
    planner.visit_function(func, top_level=True)
    plan = planner.plan()
    if not (plan[0] or plan[1] or plan[2] or plan[3]) and not planner.track:
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
