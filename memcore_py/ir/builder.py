"""BlockBuilder: build Relax functions binding by binding, with TVM's names.

Design
------
:class:`BlockBuilder` is the one way new bindings enter the IR, for hand-written modules,
random programs and passes (:class:`~memcore_py.ir.functor.ExprMutator` re-emits through it).
It keeps a stack of *scopes*; a scope is a function body or an If branch under construction,
holding finished blocks and one open block (a :class:`BindingBlock` or a
:class:`DataflowBlock`)::

    bb = BlockBuilder()
    x = Var("x", TensorType((2, 3), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            lv = bb.emit(Call(get_op("relax.add"), [x, x]))      # DataflowVar 'lv'
            gv = bb.emit_output(lv)                              # Var 'gv' = lv
        bb.emit_func_output(gv)
    mod = bb.get()

``emit`` infers the type of the value (:func:`~memcore_py.ir.infer.infer_type`) and brings
nested non-leaf arguments into A-normal form first (``add(mul(x, x), x)`` emits the ``mul``
as its own binding), as TVM's normalizer does. Misuse (emitting outside a function,
``emit_output`` outside a dataflow block, leaving a function without ``emit_func_output``,
``get()`` with an open function, ...) raises :class:`~memcore_py.errors.IRError`.

Names
-----
All names come from one :class:`NameTable` per builder, shared by variables and functions,
which reproduces TVM's ``NameSupply::FreshName`` exactly (checked against TVM 0.27):

1. ``.`` in a hint becomes ``_``; an empty hint becomes ``lv`` in a dataflow block and
   ``gv`` elsewhere (``emit``), ``v`` for :meth:`NameTable.fresh` itself.
2. A hint never handed out before is returned unchanged.
3. Otherwise the hint keeps a counter (starting at 0); the counter is incremented and
   ``hint + str(counter)`` tried until a name not handed out before appears. Every name
   handed out, suffixed or not, is remembered, and the counter is kept for the next request.

So ``storage, storage1, storage2``; ``_, _1, _2``; ``alloc, alloc1``; after ``lv`` and ``lv1``
were handed out, ``lv`` gives ``lv2``; ``x1`` then ``x, x`` gives ``x, x2``. There is no
separator (TVM's supply is used without ``add_underscore``), and the table only knows names
it handed out: params and pre-existing names are *not* reserved, as in TVM (its printer, not
the supply, renames clashing names ``x_1`` on output). Function names added with
:meth:`BlockBuilder.add_func` draw from the same table and additionally skip names already
in the module (``main`` -> ``main1``), like TVM's ``BlockBuilder.add_func``.

If/else
-------
:meth:`BlockBuilder.if_then_else` opens a two-branch context; each branch is a new scope
whose result is given with ``output``; on exit the ``If`` is bound in the enclosing block::

    with bb.if_then_else(cond, "r") as br:
        with br.then_branch():
            br.output(bb.emit(mul(x, x)))
        with br.else_branch():
            br.output(x)
    r = br.var

A branch result that is not a leaf is first bound to ``<hint>_then`` / ``<hint>_else`` (the
names TVM's parser gives such bindings).
"""
from __future__ import annotations

from contextlib import contextmanager

from ..errors import IRError
from .expr import (
    BaseFunc,
    Binding,
    BindingBlock,
    Call,
    Constant,
    DataflowBlock,
    DataflowVar,
    DataTypeImm,
    Expr,
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
from .._compiled import load_compiled
from .module import IRModule
from .infer import erase_to_well_defined, signature_prim_names
from .text.prim_func_text import normalized_text
from .types import Type

__all__ = ["NameTable", "BlockBuilder", "IfBuilder", "is_leaf"]

_LEAF_TYPES = (Var, GlobalVar, ExternFunc, Constant, ShapeExpr, PrimValue, StringImm, DataTypeImm)
#: The compiled steps of :meth:`BlockBuilder.emit` and :meth:`NameTable.fresh` (``_block_emit.pyx``).
_BLOCK_EMIT = "memcore_py.ir._block_emit"


def is_leaf(expr) -> bool:
    """True for expressions TVM's normal form allows as call arguments and SeqExpr bodies:
    variables, literals, and tuples of those (recursively)."""
    if isinstance(expr, _LEAF_TYPES):
        return True
    if isinstance(expr, Tuple):
        return all(is_leaf(f) for f in expr.fields)
    return False


class NameTable:
    """Unique names in the style of TVM's ``NameSupply`` (see the module docstring).

    Invariants: every name returned by :meth:`fresh` is distinct from every other name it
    returned (and from names passed to :meth:`reserve`); the same sequence of hints always
    gives the same sequence of names.

    Examples
    --------
    >>> t = NameTable()
    >>> [t.fresh("storage") for _ in range(3)]
    ['storage', 'storage1', 'storage2']
    >>> t.fresh("_"), t.fresh("_")
    ('_', '_1')
    """

    __slots__ = ("_counter", "_fresh_name")

    def __init__(self):
        self._counter: dict[str, int] = {}
        """Every name handed out -> the last suffix number tried for it as a hint."""
        self._fresh_name = load_compiled(_BLOCK_EMIT).fresh_name
        """The compiled step of :meth:`fresh` (:func:`memcore_py.ir._block_emit.fresh_name`)."""

    def fresh(self, hint: str = "") -> str:
        """A name not handed out before: ``hint`` itself, else ``hint`` + the next free counter."""
        return self._fresh_name(self._counter, hint)

    def reserve(self, name: str) -> bool:
        """Mark ``name`` as taken. Returns False if it was taken already."""
        name = load_compiled(_BLOCK_EMIT).sanitized_hint(name)
        if name in self._counter:
            return False
        self._counter[name] = 0
        return True

    def __contains__(self, name) -> bool:
        return name in self._counter

    def __len__(self) -> int:
        return len(self._counter)


class _Scope:
    """A function body or If branch under construction."""

    __slots__ = ("blocks", "bindings", "is_dataflow", "kind", "name")

    def __init__(self, kind: str, name: str):
        self.kind = kind
        """'function' or 'branch'."""
        self.name = name
        """Function name or branch description, for error messages."""
        self.blocks: list[BindingBlock] = []
        """Finished, non-empty blocks in order."""
        self.bindings: list[Binding] | None = []
        """Bindings of the open block; None when no block is open."""
        self.is_dataflow = False
        """Whether the open block is a dataflow block."""

    def close_block(self):
        if self.bindings:
            cls = DataflowBlock if self.is_dataflow else BindingBlock
            self.blocks.append(cls(self.bindings))
        self.bindings = None
        self.is_dataflow = False


class _FunctionFrame:
    __slots__ = ("name", "params", "attrs", "pure", "private", "ret_ty", "output_emitted", "gv")

    def __init__(self, name, params, attrs, pure, private, ret_ty):
        self.name = name
        self.params = params
        self.attrs = attrs
        self.pure = pure
        self.private = private
        self.ret_ty = ret_ty
        self.output_emitted = False
        self.gv = None


class BlockBuilder:
    """Builds an :class:`IRModule` function by function, binding by binding.

    Parameters
    ----------
    mod : IRModule, optional
        Context module: its functions are kept (in order) and later ones are added after
        them; calls to its functions can be type-inferred. Its names are not put in the
        :class:`NameTable` (as in TVM), but :meth:`add_func` avoids them.
    name_table : NameTable, optional
        Share a table between builders; by default each builder has its own.

    Notes
    -----
    The builder never mutates ``mod``; :meth:`get` returns a new module each time.
    """

    def __init__(self, mod: IRModule | None = None, name_table: NameTable | None = None):
        if mod is not None and not isinstance(mod, IRModule):
            raise IRError(f"BlockBuilder context must be an IRModule or None; got {type(mod).__name__}")
        self.name_table = name_table if name_table is not None else NameTable()
        self._functions: dict[GlobalVar, BaseFunc] = dict(mod.functions) if mod is not None else {}
        self._by_name: dict[str, GlobalVar] = {gv.name: gv for gv in self._functions}
        self._attrs = dict(mod.attrs) if mod is not None else {}
        self._global_infos = dict(mod.global_infos) if mod is not None else {}
        self._scopes: list[_Scope] = []
        self._func: _FunctionFrame | None = None
        self._bound: dict[Var, Expr] = {}
        self._fingerprints = None  # fingerprint -> [GlobalVar], built on first add_func
        self._block_emit = load_compiled(_BLOCK_EMIT)

    # ------------------------------------------------------------------ module level
    def get(self) -> IRModule:
        """The module built so far.

        Raises
        ------
        IRError
            If a function is still open (``get`` inside ``with bb.function(...)``).
        """
        if self._func is not None:
            raise IRError(f"function {self._func.name!r} is still open; call get() after its with-block")
        return IRModule(dict(self._functions), self._attrs, self._global_infos)

    def lookup_function(self, gv):
        """The function bound to ``gv`` (a GlobalVar or name) or None."""
        if isinstance(gv, GlobalVar):
            gv = self._by_name.get(gv.name)
        elif isinstance(gv, str):
            gv = self._by_name.get(gv)
        return self._functions.get(gv) if gv is not None else None

    def add_func(self, func: BaseFunc, name: str) -> GlobalVar:
        """Add ``func`` under a unique name derived from ``name``; return its GlobalVar.

        A function structurally equal to one already in the module is not added twice: the
        existing GlobalVar is returned (TVM's ``BlockBuilder.add_func`` does the same).
        """
        if not isinstance(func, BaseFunc):
            raise IRError(f"add_func expects a Function or PrimFunc; got {type(func).__name__}")
        existing = self._find_equal_function(func)
        if existing is not None:
            return existing
        gv = GlobalVar(self._unique_func_name(name), func.ty)
        self._functions[gv] = func
        self._by_name[gv.name] = gv
        if self._fingerprints is not None:
            self._fingerprints.setdefault(_func_fingerprint(func), []).append(gv)
        return gv

    def update_func(self, gv: GlobalVar, func: BaseFunc) -> None:
        """Replace the function bound to ``gv`` (same name, same position)."""
        if not isinstance(func, BaseFunc):
            raise IRError(f"update_func expects a Function or PrimFunc; got {type(func).__name__}")
        key = self._by_name.get(gv.name if isinstance(gv, GlobalVar) else gv)
        if key is None:
            raise IRError(f"update_func: the module has no function named {getattr(gv, 'name', gv)!r}")
        self._functions[key] = func
        self._fingerprints = None

    def remove_func(self, gv) -> None:
        """Remove the function bound to ``gv`` (a GlobalVar or name)."""
        key = self._by_name.pop(gv.name if isinstance(gv, GlobalVar) else gv, None)
        if key is None:
            raise IRError(f"remove_func: the module has no function named {getattr(gv, 'name', gv)!r}")
        del self._functions[key]
        self._fingerprints = None

    def _unique_func_name(self, hint: str) -> str:
        while True:
            name = self.name_table.fresh(hint)
            if name not in self._by_name:
                return name

    def _find_equal_function(self, func):
        from .structural import structural_equal

        index = self._fingerprints
        if index is None:
            index = self._fingerprints = {}
            for gv, other in self._functions.items():
                index.setdefault(_func_fingerprint(other), []).append(gv)
        key = _func_fingerprint(func)
        for gv in index.get(key, ()):
            other = self._functions.get(gv)
            if other is not None and type(other) is type(func) and structural_equal(other, func):
                return gv
        return None

    # ------------------------------------------------------------------ functions
    @contextmanager
    def function(self, name: str, params=(), attrs=None, pure: bool = True, private: bool = False,
                 ret_ty: Type | None = None):
        """Context for building one Relax function; end it with :meth:`emit_func_output`.

        Parameters
        ----------
        name : str
            Name hint of the function's GlobalVar (made unique in the module).
        params : sequence of Var
        attrs : dict, optional
            Function attributes. Unless ``private``, ``{"global_symbol": name}`` is added
            (TVM does the same; the printer hides it when it equals the function name).
        pure : bool
            ``@R.function(pure=False)`` when False.
        private : bool
            ``@R.function(private=True)``: no ``global_symbol``.
        ret_ty : Type, optional
            Declared return type; default the type of the output.
        """
        if self._func is not None:
            raise IRError(
                f"cannot open function {name!r} inside function {self._func.name!r}; nested functions are not supported"
            )
        params = list(params)
        seen = set()
        for i, p in enumerate(params):
            if not isinstance(p, Var):
                raise IRError(f"parameter {i} of function {name!r} must be a Var; got {type(p).__name__}")
            if isinstance(p, DataflowVar):
                raise IRError(f"parameter {p.name!r} of function {name!r} must be a Var, not a DataflowVar")
            if p in seen:
                raise IRError(f"parameter {p.name!r} appears twice in function {name!r}")
            seen.add(p)
        attrs = dict(attrs) if attrs else {}
        if not private:
            attrs.setdefault("global_symbol", name)
        frame = _FunctionFrame(name, params, attrs, pure, private, ret_ty)
        self._func = frame
        scope = _Scope("function", name)
        self._scopes = [scope]
        self._open_block(scope, False)
        try:
            yield frame
        except BaseException:
            self._func = None
            self._scopes = []
            raise
        if not frame.output_emitted:
            self._func = None
            self._scopes = []
            raise IRError(f"function {name!r} ended without emit_func_output(...)")
        self._func = None
        self._scopes = []

    def emit_func_output(self, output, name_hint: str = "") -> None:
        """End the current function with result ``output`` (an Expr, or a list/tuple of
        Exprs made into a Tuple). A non-leaf result is bound first (hint ``gv``)."""
        frame = self._func
        if frame is None:
            raise IRError("emit_func_output called outside a function; use `with bb.function(...)`")
        if frame.output_emitted:
            raise IRError(f"emit_func_output called twice in function {frame.name!r}")
        if len(self._scopes) != 1:
            raise IRError(f"emit_func_output in function {frame.name!r} while an If branch is open")
        scope = self._scopes[0]
        if scope.is_dataflow:
            raise IRError(f"emit_func_output in function {frame.name!r} inside a dataflow block; "
                          "leave the `with bb.dataflow()` first")
        if isinstance(output, (list, tuple)):
            output = Tuple([self._as_leaf(o, "gv") for o in output])
        output = self._check_value(output, "function output")
        if not is_leaf(output):
            output = self.emit(output, name_hint or "gv")
        scope.close_block()
        body = SeqExpr(scope.blocks, output)
        ret_ty = frame.ret_ty
        if ret_ty is None and output.ty is not None:
            ret_ty = erase_to_well_defined(output.ty, signature_prim_names(frame.params))
        func = Function(frame.params, body, ret_ty, frame.attrs, frame.pure)
        frame.gv = self.add_func(func, frame.name)
        frame.output_emitted = True

    # ------------------------------------------------------------------ blocks
    @contextmanager
    def dataflow(self):
        """Context for a dataflow block; values leave it through :meth:`emit_output`."""
        scope = self._scope("dataflow()")
        if scope.is_dataflow:
            raise IRError("dataflow blocks cannot be nested")
        scope.close_block()
        self._open_block(scope, True)
        try:
            yield
        finally:
            if self._scopes and self._scopes[-1] is scope and scope.is_dataflow:
                scope.close_block()
                self._open_block(scope, False)

    def begin_block(self, dataflow: bool = False) -> None:
        """Close the open block of the current scope and open a new one (for mutators)."""
        scope = self._scope("begin_block()")
        scope.close_block()
        self._open_block(scope, dataflow)

    def end_block(self) -> BindingBlock:
        """Close the open block and return it (possibly empty), opening a plain block after it.
        The returned block is *not* kept in the scope (the caller places it)."""
        scope = self._scope("end_block()")
        cls = DataflowBlock if scope.is_dataflow else BindingBlock
        block = cls(scope.bindings)
        scope.bindings = []
        scope.is_dataflow = False
        return block

    @contextmanager
    def new_scope(self, description: str = "scope"):
        """A fresh scope (used for If branches by mutators): emitted blocks are collected
        and returned through the yielded list, not added to the enclosing scope."""
        scope = _Scope("branch", description)
        self._open_block(scope, False)
        self._scopes.append(scope)
        out: list[BindingBlock] = []
        try:
            yield out
        finally:
            if self._scopes and self._scopes[-1] is scope:
                self._scopes.pop()
        scope.close_block()
        out.extend(scope.blocks)

    @contextmanager
    def function_scope(self, description: str = "function"):
        """A top-level scope for re-emitting an existing function's body (mutators)."""
        saved = self._scopes
        scope = _Scope("function", description)
        self._open_block(scope, False)
        self._scopes = [scope]
        out: list[BindingBlock] = []
        try:
            yield out
        finally:
            self._scopes = saved
        scope.close_block()
        out.extend(scope.blocks)

    @staticmethod
    def _open_block(scope: _Scope, dataflow: bool):
        scope.bindings = []
        scope.is_dataflow = dataflow

    def _scope(self, what: str) -> _Scope:
        if not self._scopes:
            raise IRError(f"{what} called outside a function; use `with bb.function(name, params):` first")
        return self._scopes[-1]

    # ------------------------------------------------------------------ emission
    def emit(self, value: Expr, name_hint: str = "") -> Var:
        """Bind ``value`` to a new variable in the open block and return it.

        The variable is a :class:`DataflowVar` inside a dataflow block, else a :class:`Var`;
        its type is the (inferred) type of ``value``. Empty ``name_hint`` means ``lv``
        (dataflow) or ``gv``. The step is compiled: :func:`memcore_py.ir._block_emit.emit`.
        """
        return self._block_emit.emit(self, value, name_hint)

    def match_cast(self, value: Expr, ty: Type, name_hint: str = "") -> Var:
        """Emit ``var = R.match_cast(value, ty)``; the new var has type ``ty``."""
        scope = self._scope("match_cast")
        if not isinstance(ty, Type):
            raise IRError(f"match_cast type must be a Type; got {type(ty).__name__}")
        value = self.normalize_anf(self._check_value(value, "match_cast value"))
        dataflow = scope.is_dataflow
        name = self.name_table.fresh(name_hint or ("lv" if dataflow else "gv"))
        var = (DataflowVar if dataflow else Var)(name, ty)
        scope.bindings.append(MatchCast(var, value, ty))
        self._bound[var] = value
        return var

    def emit_output(self, value: Expr, name_hint: str = "") -> Var:
        """Inside a dataflow block: bind ``value`` to a (non-dataflow) Var visible after the
        block and return it; default name ``gv``."""
        scope = self._scope("emit_output")
        if not scope.is_dataflow:
            raise IRError("emit_output called outside a dataflow block; use `with bb.dataflow():`")
        value = self.normalize_anf(self._check_value(value, "output value"))
        var = Var(self.name_table.fresh(name_hint or "gv"), value.ty)
        scope.bindings.append(VarBinding(var, value))
        self._bound[var] = value
        return var

    def emit_normalized(self, binding: Binding) -> Var:
        """Append an existing binding unchanged (its var and value are trusted as given)."""
        scope = self._scope("emit_normalized")
        if not isinstance(binding, Binding):
            raise IRError(f"emit_normalized expects a VarBinding or MatchCast; got {type(binding).__name__}")
        if isinstance(binding.var, DataflowVar) and not scope.is_dataflow:
            raise IRError(f"DataflowVar {binding.var.name!r} cannot be bound outside a dataflow block")
        scope.bindings.append(binding)
        self._bound[binding.var] = binding.value
        return binding.var

    def lookup_binding(self, var: Var):
        """The value ``var`` was bound to by this builder, or None."""
        return self._bound.get(var)

    # ------------------------------------------------------------------ If
    def if_then_else(self, cond: Expr, name_hint: str = "") -> "IfBuilder":
        """Context manager building ``var = If(cond, then, else)``; see the module docstring."""
        scope = self._scope("if_then_else")
        if scope.is_dataflow:
            raise IRError("If is not allowed inside a dataflow block; emit it after the `with bb.dataflow()`")
        cond = self._check_value(cond, "If condition")
        if not is_leaf(cond):
            cond = self.emit(cond)
        # The If var's name is fixed now, so branch results can be named after it.
        return IfBuilder(self, cond, self.name_table.fresh(name_hint or "gv"))

    def _bind_named(self, value: Expr, name: str) -> Var:
        """Bind ``value`` to a new Var named exactly ``name`` (already taken from the table)."""
        scope = self._scope("emit")
        value = self.normalize_anf(value)
        var = (DataflowVar if scope.is_dataflow else Var)(name, value.ty)
        scope.bindings.append(VarBinding(var, value))
        self._bound[var] = value
        return var

    # ------------------------------------------------------------------ normalization
    def normalize(self, expr: Expr) -> Expr:
        """``expr`` with missing types filled in (a new node where one was missing)."""
        return _fill_types(expr, self)

    def normalize_anf(self, expr: Expr) -> Expr:
        """Emit non-leaf call arguments / tuple fields as their own bindings, fill types."""
        if self._block_emit.is_normal_call(expr):  # a typed call of leaves (and typed tuples of leaves)
            return expr
        if isinstance(expr, Call):
            args = expr.args
            new_args = [self._as_leaf(a) for a in args]
            if any(n is not o for n, o in zip(new_args, args)):
                expr = Call(expr.op, new_args, expr.attrs, expr.ty_args, expr.ty)
        elif isinstance(expr, Tuple):
            fields = expr.fields
            new_fields = [self._as_leaf(f) for f in fields]
            if any(n is not o for n, o in zip(new_fields, fields)):
                expr = Tuple(new_fields)
        elif isinstance(expr, TupleGetItem):
            tv = self._as_leaf(expr.tuple_value)
            if tv is not expr.tuple_value:
                expr = TupleGetItem(tv, expr.index)
        if expr.ty is None:
            expr = _fill_types(expr, self)
        return expr

    def _as_leaf(self, expr, hint: str = ""):
        expr = self._check_value(expr, "argument")
        if isinstance(expr, _LEAF_TYPES):
            return expr
        if isinstance(expr, Tuple):
            fields = [self._as_leaf(f) for f in expr.fields]
            if all(n is o for n, o in zip(fields, expr.fields)) and expr.ty is not None:
                return expr
            return Tuple(fields)
        return self.emit(expr, hint)

    @staticmethod
    def _check_value(value, what):
        if not isinstance(value, Expr):
            raise IRError(f"{what} must be a Relax Expr; got {type(value).__name__} {value!r}")
        if isinstance(value, BaseFunc):
            raise IRError(f"{what} must not be a function; add it with add_func and use its GlobalVar")
        return value


class IfBuilder:
    """Two-branch builder returned by :meth:`BlockBuilder.if_then_else`.

    Attributes
    ----------
    name : str
        The If variable's name, taken from the name table when the If was opened (branch
        results that need a binding are named ``<name>_then`` / ``<name>_else``).
    var : Var or None
        The variable bound to the If, set when the ``with`` block exits.
    """

    def __init__(self, bb: BlockBuilder, cond: Expr, name: str):
        self._bb = bb
        self._cond = cond
        self.name = name
        self._branches: dict[str, SeqExpr] = {}
        self._active: str | None = None
        self._output = None
        self.var: Var | None = None

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            return False
        for which in ("then", "else"):
            if which not in self._branches:
                raise IRError(f"If {self.name!r} has no {which} branch; use `with br.{which}_branch():`")
        then_b, else_b = self._branches["then"], self._branches["else"]
        from .infer import join_types

        value = If(self._cond, then_b, else_b, join_types(then_b.ty, else_b.ty))
        self.var = self._bb._bind_named(value, self.name)
        return False

    @contextmanager
    def _branch(self, which: str):
        if self._active is not None:
            raise IRError(f"the {which} branch cannot start inside the {self._active} branch")
        if which in self._branches:
            raise IRError(f"the {which} branch of If {self.name!r} was already built")
        bb = self._bb
        self._active = which
        self._output = None
        try:
            with bb.new_scope(f"{which} branch") as blocks:
                yield self
                if self._output is None:
                    raise IRError(f"the {which} branch of If {self.name!r} has no result; call br.output(value)")
                out = self._output
                if not is_leaf(out):
                    out = bb.emit(out, f"{self.name}_{which}")
            self._branches[which] = SeqExpr(blocks, out)
        finally:
            self._active = None

    def then_branch(self):
        """Context for the then-branch (a new scope)."""
        return self._branch("then")

    def else_branch(self):
        """Context for the else-branch (a new scope)."""
        return self._branch("else")

    def output(self, value: Expr) -> None:
        """Set the result of the open branch."""
        if self._active is None:
            raise IRError("br.output(...) must be called inside then_branch() or else_branch()")
        if not isinstance(value, Expr):
            raise IRError(f"branch result must be a Relax Expr; got {type(value).__name__}")
        self._output = value


# ---------------------------------------------------------------------------- helpers
def _fill_types(expr: Expr, ctx) -> Expr:
    """Return ``expr`` with its type (and its sub-expressions' types) filled in."""
    from .infer import infer_type

    if expr.ty is not None:
        return expr
    if isinstance(expr, Call):
        args = [_fill_types(a, ctx) for a in expr.args]
        if any(n is not o for n, o in zip(args, expr.args)):
            expr = Call(expr.op, args, expr.attrs, expr.ty_args)
        return Call(expr.op, expr.args, expr.attrs, expr.ty_args, infer_type(expr, ctx))
    if isinstance(expr, Tuple):
        return Tuple([_fill_types(f, ctx) for f in expr.fields])
    if isinstance(expr, TupleGetItem):
        return TupleGetItem(_fill_types(expr.tuple_value, ctx), expr.index)
    if isinstance(expr, If):
        from .infer import join_types

        return If(expr.cond, expr.true_branch, expr.false_branch, join_types(expr.true_branch.ty, expr.false_branch.ty))
    if isinstance(expr, (Var, GlobalVar, ExternFunc)):
        ty = infer_type(expr, ctx)
        if isinstance(expr, GlobalVar):
            return GlobalVar(expr.name, ty)
        raise IRError(f"{type(expr).__name__} {getattr(expr, 'name', expr)!r} has no type")
    raise IRError(f"cannot infer the type of {expr!r}")


def _func_fingerprint(func):
    """A cheap key equal for structurally equal functions (symbolic dims as '?')."""
    if isinstance(func, PrimFunc):
        from .prim import IntImm

        sig = tuple(
            (p.dtype, None if p.shape is None else tuple(d.value if isinstance(d, IntImm) else "?" for d in p.shape))
            for p in func.params
        )
        return ("prim", sig, func.private, normalized_text(func.text))
    if isinstance(func, Function):
        return ("relax", len(func.params), sum(len(b.bindings) for b in func.body.blocks))
    return (type(func).__name__,)
