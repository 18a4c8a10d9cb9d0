"""Structural equality of IR objects, with the path to the first difference.

Design
------
The semantics follow Apache TVM's ``tvm.ir.structural_equal`` (checked against 0.27):

- Definitions are matched by position, not by name: function params, binding vars and the
  symbolic (PrimVar) dims first seen in the function signature or in a ``match_cast`` type.
  ``f(x: R.Tensor(("n", 4)))`` equals ``f(y: R.Tensor(("m", 4)))``.
- A use must refer to the matching definition. A *free* var (used, never defined in what is
  compared) is mapped to the other side's var at the same position when ``map_free_vars``,
  else it must be the same var (Relax vars: the same object; PrimVars: the same name, since
  memcore identifies symbolic vars by name within a function).
- PrimExpr trees are compared as written, not canonically: ``4 * (m * n)`` differs from
  ``(n * m) * 4`` (as in TVM; use :func:`~memcore_py.ir.prim.prove_equal` for arithmetic).
- Types are compared everywhere they are written: var annotations, ``match_cast`` types,
  return types, ``ty_args``. The type of a call itself is derived, so it is not compared.
- Attribute dicts are compared key by key, values recursively (ints, floats, strings,
  lists, dicts, PrimExprs, types); ``1`` and ``True`` differ.
- Modules are compared by function name (order does not matter), plus ``attrs`` and
  ``global_infos``. PrimFuncs: signature (buffer dtypes and shapes; param names are
  positional), attrs, ``private`` and the opaque text with whitespace normalized and the
  function's own name removed (:func:`~memcore_py.ir.text.prim_func_text.normalized_text`).
- Constants: same dtype, shape and values, or (without data) the same metadata reference.

The walk is iterative over bindings (a function of 100k bindings never recurses per
binding); recursion only follows expression nesting and If branches. Type pairs that
compared equal are cached per function, so interned types cost one dict lookup.
On the first difference an internal exception unwinds and each level adds its place to
the path, which costs nothing while things are equal.
"""
from __future__ import annotations

import difflib

import numpy as np

from ._util import gc_paused
from .expr import (
    Binding,
    BindingBlock,
    Call,
    Constant,
    DataflowVar,
    DataTypeImm,
    Expr,
    ExternFunc,
    Function,
    GlobalVar,
    If,
    MatchCast,
    PrimFunc,
    PrimFuncParam,
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
from .op import Op
from .prim import BinaryOp, FloatImm, IntImm, PrimExpr, PrimVar
from .text.prim_func_text import normalized_text
from .text.printer import format_binding, format_expr, format_type, script
from .types import FuncType, ObjectType, PrimType, ShapeType, TensorType, TupleType, Type

__all__ = ["structural_equal", "assert_structural_equal", "first_mismatch"]


class _Mismatch(Exception):
    """Internal: raised at the first difference; ``path`` grows while it unwinds."""

    def __init__(self, reason, lhs, rhs):
        super().__init__(reason)
        self.reason = reason
        self.lhs = lhs
        self.rhs = rhs
        self.path = []  # innermost first


def _pairwise(compare, xs, ys, label):
    """``compare(xs[i], ys[i])`` for each i (lengths already checked); a mismatch gets
    ``label.format(i)`` appended to its path."""
    for i in range(len(xs)):
        try:
            compare(xs[i], ys[i])
        except _Mismatch as m:
            m.path.append(label.format(i))
            raise


class _Comparer:
    __slots__ = ("map_free", "var_l2r", "var_r2l", "prim_l2r", "prim_r2l", "defining", "type_ok", "_expr_table")

    def __init__(self, map_free_vars: bool):
        self.map_free = map_free_vars
        self.var_l2r = {}
        self.var_r2l = {}
        self.prim_l2r = {}
        self.prim_r2l = {}
        self.defining = False
        self.type_ok = {}
        self._expr_table = {
            Var: self._var_use,
            DataflowVar: self._var_use,
            Call: self._call,
            Tuple: self._tuple,
            TupleGetItem: self._tuple_get_item,
            Constant: self._constant,
            ShapeExpr: self._shape_expr,
            PrimValue: self._prim_value,
            StringImm: self._value_imm,
            DataTypeImm: self._value_imm,
            GlobalVar: self._global_var,
            ExternFunc: self._extern_func,
            If: self._if,
            SeqExpr: self._seq_expr,
            Function: self._function,
            PrimFunc: self._prim_func,
        }

    # ------------------------------------------------------------------ scoping
    def reset_function_scope(self):
        self.prim_l2r = {}
        self.prim_r2l = {}
        self.type_ok = {}

    # ------------------------------------------------------------------ PrimExpr
    def prim(self, a, b):
        ta = type(a)
        if ta is not type(b):
            raise _Mismatch(f"{_kind(a)} vs {_kind(b)}", a, b)
        if ta is IntImm or ta is FloatImm:
            if a.value != b.value or a.dtype != b.dtype:
                raise _Mismatch(f"literal {_prim_str(a)} vs {_prim_str(b)}", a, b)
            return
        if ta is PrimVar:
            na, nb = a.name, b.name
            mapped = self.prim_l2r.get(na)
            if mapped is not None:
                if mapped != nb:
                    raise _Mismatch(f"symbolic var {na!r} corresponds to {mapped!r}, not {nb!r}", a, b)
                return
            if nb in self.prim_r2l:
                raise _Mismatch(f"symbolic var {nb!r} corresponds to {self.prim_r2l[nb]!r}, not {na!r}", a, b)
            if not (self.defining or self.map_free) and na != nb:
                raise _Mismatch(f"free symbolic vars {na!r} vs {nb!r}", a, b)
            if a.dtype != b.dtype:
                raise _Mismatch(f"symbolic var dtype {a.dtype} vs {b.dtype}", a, b)
            self.prim_l2r[na] = nb
            self.prim_r2l[nb] = na
            return
        if isinstance(a, BinaryOp):
            try:
                self.prim(a.a, b.a)
            except _Mismatch as m:
                m.path.append("a")
                raise
            try:
                self.prim(a.b, b.b)
            except _Mismatch as m:
                m.path.append("b")
                raise
            return
        if a.operands:  # not, cast, select, if_then_else
            if a.dtype != b.dtype:
                raise _Mismatch(f"{ta.__name__} dtype {a.dtype} vs {b.dtype}", a, b)
            for i, (x, y) in enumerate(zip(a.operands, b.operands)):
                try:
                    self.prim(x, y)
                except _Mismatch as m:
                    m.path.append(f"operands[{i}]")
                    raise
            return
        raise _Mismatch(f"unsupported PrimExpr {type(a).__name__}", a, b)

    def prim_seq(self, a, b, what):
        if a is None or b is None:
            if a is not b:
                raise _Mismatch(f"{what}: {_opt(a)} vs {_opt(b)}", a, b)
            return
        if len(a) != len(b):
            raise _Mismatch(f"{what} of length {len(a)} vs {len(b)}", a, b)
        prim = self.prim
        for i in range(len(a)):
            x, y = a[i], b[i]
            if type(x) is IntImm and type(y) is IntImm and x.value == y.value and x.dtype == y.dtype:
                continue  # fast path: equal literal dims
            try:
                prim(x, y)
            except _Mismatch as m:
                m.path.append(f"{what}[{i}]")
                raise

    # ------------------------------------------------------------------ types
    def type(self, a, b):
        if a is None or b is None:
            if a is not b:
                raise _Mismatch(f"type {_opt(a)} vs {_opt(b)}", a, b)
            return
        if self.type_ok.get(id(a)) is b:
            return
        ta = type(a)
        if ta is not type(b):
            raise _Mismatch(f"{ta.__name__} vs {type(b).__name__}", a, b)
        if ta is TensorType:
            if a.dtype != b.dtype:
                raise _Mismatch(f"dtype {a.dtype or '(unknown)'!r} vs {b.dtype or '(unknown)'!r}", a, b)
            if a.ndim != b.ndim:
                raise _Mismatch(f"ndim {a.ndim} vs {b.ndim}", a, b)
            if a.vdevice != b.vdevice:
                raise _Mismatch(f"vdevice {a.vdevice!r} vs {b.vdevice!r}", a, b)
            self.prim_seq(a.shape, b.shape, "shape")
        elif ta is TupleType:
            if len(a.fields) != len(b.fields):
                raise _Mismatch(f"tuple of {len(a.fields)} vs {len(b.fields)} fields", a, b)
            _pairwise(self.type, a.fields, b.fields, "fields[{}]")
        elif ta is ShapeType:
            if a.ndim != b.ndim:
                raise _Mismatch(f"shape ndim {a.ndim} vs {b.ndim}", a, b)
            self.prim_seq(a.values, b.values, "values")
        elif ta is PrimType:
            if a.dtype != b.dtype:
                raise _Mismatch(f"prim dtype {a.dtype} vs {b.dtype}", a, b)
            if a.value is None or b.value is None:
                if a.value is not b.value:
                    raise _Mismatch(f"prim value {_opt(a.value)} vs {_opt(b.value)}", a, b)
            else:
                try:
                    self.prim(a.value, b.value)
                except _Mismatch as m:
                    m.path.append("value")
                    raise
        elif ta is FuncType:
            if a.purity != b.purity:
                raise _Mismatch(f"function purity {a.purity} vs {b.purity}", a, b)
            if (a.params is None) != (b.params is None) or (a.params is not None and len(a.params) != len(b.params)):
                raise _Mismatch("function params differ", a, b)
            _pairwise(self.type, a.params or (), b.params or (), "params[{}]")
            try:
                self.type(a.ret, b.ret)
            except _Mismatch as m:
                m.path.append("ret")
                raise
        elif ta is ObjectType:
            pass
        else:
            raise _Mismatch(f"unsupported type {ta.__name__}", a, b)
        self.type_ok[id(a)] = b  # a (kept alive by the IR) was found equal to b

    def def_type(self, a, b):
        """Compare types where first-seen PrimVars are definitions."""
        saved = self.defining
        self.defining = True
        try:
            self.type(a, b)
        finally:
            self.defining = saved

    # ------------------------------------------------------------------ vars
    def var_def(self, a, b):
        if type(a) is not type(b):
            raise _Mismatch(f"{type(a).__name__} {a.name!r} vs {type(b).__name__} {b.name!r}", a, b)
        var_l2r, var_r2l = self.var_l2r, self.var_r2l
        if a in var_l2r or b in var_r2l:
            if var_l2r.get(a) is b and var_r2l.get(b) is a:
                return
            raise _Mismatch(f"var {a.name!r} / {b.name!r} is defined twice", a, b)
        ta, tb = a.ty, b.ty
        if ta is not None and tb is not None and self.type_ok.get(id(ta)) is tb:
            pass  # fast path: this pair of type objects compared equal before
        else:
            try:
                self.type(ta, tb)
            except _Mismatch as m:
                m.path.append(f"type of {a.name!r}")
                raise
        var_l2r[a] = b
        var_r2l[b] = a

    def _var_use(self, a, b):
        if type(a) is not type(b):
            raise _Mismatch(f"{type(a).__name__} {a.name!r} vs {_kind(b)}", a, b)
        mapped = self.var_l2r.get(a)
        if mapped is not None:
            if mapped is not b:
                raise _Mismatch(f"var {a.name!r} corresponds to {mapped.name!r}, not {b.name!r}", a, b)
            return
        other = self.var_r2l.get(b)
        if other is not None:
            raise _Mismatch(f"var {b.name!r} corresponds to {other.name!r}, not {a.name!r}", a, b)
        if not self.map_free:
            if a is not b:
                raise _Mismatch(f"free vars {a.name!r} and {b.name!r} are different vars (map_free_vars=False)", a, b)
            return
        try:
            self.type(a.ty, b.ty)
        except _Mismatch as m:
            m.path.append(f"type of free var {a.name!r}")
            raise
        self.var_l2r[a] = b
        self.var_r2l[b] = a

    # ------------------------------------------------------------------ expressions
    def expr(self, a, b):
        ta = type(a)
        if ta is not type(b):
            raise _Mismatch(f"{_kind(a)} vs {_kind(b)}", a, b)
        fn = self._expr_table.get(ta)
        if fn is None:
            raise _Mismatch(f"unsupported expression {ta.__name__}", a, b)
        fn(a, b)

    def _call(self, a, b):
        oa, ob = a.op, b.op
        if oa is not ob:
            to = type(oa)
            if to is not type(ob):
                raise _Mismatch(f"callee {_callee(oa)} vs {_callee(ob)}", oa, ob)
            if to is Op:
                raise _Mismatch(f"op {oa.name} vs {ob.name}", oa, ob)
            try:
                self.expr(oa, ob)
            except _Mismatch as m:
                m.path.append("op")
                raise
        args_a, args_b = a.args, b.args
        if len(args_a) != len(args_b):
            raise _Mismatch(f"{_callee(oa)} with {len(args_a)} vs {len(args_b)} arguments", a, b)
        expr = self.expr
        var_l2r = self.var_l2r
        for i in range(len(args_a)):
            x, y = args_a[i], args_b[i]
            tx = type(x)
            if (tx is Var or tx is DataflowVar) and type(y) is tx and var_l2r.get(x) is y:
                continue  # fast path: a use of matching definitions
            try:
                expr(x, y)
            except _Mismatch as m:
                m.path.append(f"args[{i}]")
                raise
        if a.attrs or b.attrs:
            try:
                self.attrs(a.attrs, b.attrs)
            except _Mismatch as m:
                m.path.append("attrs")
                raise
        if a.ty_args or b.ty_args:
            if len(a.ty_args) != len(b.ty_args):
                raise _Mismatch(f"{len(a.ty_args)} vs {len(b.ty_args)} ty_args", a, b)
            _pairwise(self.type, a.ty_args, b.ty_args, "ty_args[{}]")

    def _tuple(self, a, b):
        fa, fb = a.fields, b.fields
        if len(fa) != len(fb):
            raise _Mismatch(f"tuple of {len(fa)} vs {len(fb)} fields", a, b)
        _pairwise(self.expr, fa, fb, "fields[{}]")

    def _tuple_get_item(self, a, b):
        if a.index != b.index:
            raise _Mismatch(f"tuple index {a.index} vs {b.index}", a, b)
        try:
            self.expr(a.tuple_value, b.tuple_value)
        except _Mismatch as m:
            m.path.append("tuple_value")
            raise

    def _constant(self, a, b):
        if a.data is not None and b.data is not None:
            da, db = a.data, b.data
            if da.dtype != db.dtype or da.shape != db.shape:
                raise _Mismatch(f"constant {da.dtype}{list(da.shape)} vs {db.dtype}{list(db.shape)}", a, b)
            if not np.array_equal(da, db, equal_nan=da.dtype.kind in "fc"):
                raise _Mismatch("constant values differ", a, b)
        elif a.meta is not None and b.meta is not None and a.data is None and b.data is None:
            if tuple(a.meta) != tuple(b.meta):
                raise _Mismatch(f"constant metadata {a.meta} vs {b.meta}", a, b)
        else:
            raise _Mismatch("constant with data vs constant given only as a metadata reference", a, b)
        self.type(a.ty, b.ty)

    def _shape_expr(self, a, b):
        self.prim_seq(a.values, b.values, "values")

    def _prim_value(self, a, b):
        try:
            self.prim(a.value, b.value)
        except _Mismatch as m:
            m.path.append("value")
            raise

    def _value_imm(self, a, b):
        if a.value != b.value:
            raise _Mismatch(f"{type(a).__name__} {a.value!r} vs {b.value!r}", a, b)

    def _global_var(self, a, b):
        if a.name != b.name:
            raise _Mismatch(f"GlobalVar {a.name!r} vs {b.name!r}", a, b)

    def _extern_func(self, a, b):
        if a.global_symbol != b.global_symbol:
            raise _Mismatch(f"ExternFunc {a.global_symbol!r} vs {b.global_symbol!r}", a, b)

    def _if(self, a, b):
        for field in ("cond", "true_branch", "false_branch"):
            try:
                self.expr(getattr(a, field), getattr(b, field))
            except _Mismatch as m:
                m.path.append(field)
                raise

    def _seq_expr(self, a, b):
        ba, bb = a.blocks, b.blocks
        if len(ba) != len(bb):
            raise _Mismatch(f"{len(ba)} vs {len(bb)} blocks", a, b)
        _pairwise(self.block, ba, bb, "block {}")
        try:
            self.expr(a.body, b.body)
        except _Mismatch as m:
            m.path.append("body")
            raise

    def block(self, a, b):
        if type(a) is not type(b):
            raise _Mismatch(f"{type(a).__name__} vs {type(b).__name__}", a, b)
        xs, ys = a.bindings, b.bindings
        n = min(len(xs), len(ys))
        binding = self.binding
        for i in range(n):
            try:
                binding(xs[i], ys[i])
            except _Mismatch as m:
                m.path.append(f"binding {i} ({xs[i].var.name!r})")
                raise
        if len(xs) != len(ys):
            extra = xs[n] if len(xs) > n else ys[n]
            raise _Mismatch(
                f"{len(xs)} vs {len(ys)} bindings (first unmatched binds {extra.var.name!r})",
                xs[n] if len(xs) > n else None,
                ys[n] if len(ys) > n else None,
            )

    def binding(self, a, b):
        ta = type(a)
        if ta is not type(b):
            raise _Mismatch(f"{ta.__name__} vs {type(b).__name__}", a, b)
        va, vb = a.value, b.value
        tv = type(va)
        try:
            if tv is not type(vb):
                raise _Mismatch(f"{_kind(va)} vs {_kind(vb)}", va, vb)
            fn = self._expr_table.get(tv)
            if fn is None:
                raise _Mismatch(f"unsupported expression {tv.__name__}", va, vb)
            fn(va, vb)
        except _Mismatch as m:
            m.path.append("value")
            raise
        if ta is MatchCast:
            try:
                self.def_type(a.ty, b.ty)
            except _Mismatch as m:
                m.path.append("match_cast type")
                raise
        try:
            self.var_def(a.var, b.var)
        except _Mismatch as m:
            m.path.append("var")
            raise

    def _function(self, a, b):
        pa, pb = a.params, b.params
        if len(pa) != len(pb):
            raise _Mismatch(f"{len(pa)} vs {len(pb)} params", a, b)
        saved = self.defining
        self.defining = True
        try:
            for i in range(len(pa)):
                try:
                    self.var_def(pa[i], pb[i])
                except _Mismatch as m:
                    m.path.append(f"params[{i}]")
                    raise
        finally:
            self.defining = saved
        try:
            self.type(_ret_ty(a), _ret_ty(b))
        except _Mismatch as m:
            m.path.append("return type")
            raise
        if a.is_pure != b.is_pure:
            raise _Mismatch(f"pure={a.is_pure} vs pure={b.is_pure}", a, b)
        try:
            self.attrs(a.attrs, b.attrs)
        except _Mismatch as m:
            m.path.append("attrs")
            raise
        self._seq_expr(a.body, b.body)

    def _prim_func(self, a, b):
        if len(a.params) != len(b.params):
            raise _Mismatch(f"{len(a.params)} vs {len(b.params)} params", a, b)
        saved = self.defining
        self.defining = True
        try:
            for i, (x, y) in enumerate(zip(a.params, b.params)):
                try:
                    self.prim_param(x, y)
                except _Mismatch as m:
                    m.path.append(f"params[{i}] ({x.name!r})")
                    raise
        finally:
            self.defining = saved
        if a.private != b.private:
            raise _Mismatch(f"private={a.private} vs private={b.private}", a, b)
        try:
            self.attrs(a.attrs, b.attrs)
        except _Mismatch as m:
            m.path.append("attrs")
            raise
        self._prim_text(a, b)

    def _prim_text(self, a, b):
        """Texts of two PrimFuncs whose attrs and ``private`` are equal. Two copies whose texts
        are unwritten (:meth:`PrimFunc.lazy_text`) and whose bases agree in attrs and
        ``private`` are compared through their bases: the same edit of the decorator and the
        attribute line makes equal bases equal copies, and leaves different bodies different
        (bases that differ only in how they spell the same attrs count as different). Two
        functions read from objects that can compare their bodies (``PrimFunc.source_body``,
        a TVM PrimFunc's) are compared that way, without texts."""
        base_a, base_b = a.unwritten_base(), b.unwritten_base()
        if base_a is not None and base_b is not None and base_a.private == base_b.private:
            try:
                self.attrs(base_a.attrs, base_b.attrs)
            except _Mismatch:
                pass
            else:
                return self._prim_text(base_a, base_b)
        body_a, body_b = a.source_body(), b.source_body()
        if body_a is not None and body_b is not None and base_a is None and base_b is None:
            if not body_a.equal(body_b):  # the objects they were read from, compared without texts
                raise _Mismatch("PrimFunc body differs", a, b)
            return
        if a.text is not b.text and normalized_text(a.text) != normalized_text(b.text):
            raise _Mismatch("PrimFunc text differs", a.text, b.text)

    def prim_param(self, a: PrimFuncParam, b: PrimFuncParam):
        if a.dtype != b.dtype:
            raise _Mismatch(f"dtype {a.dtype} vs {b.dtype}", a, b)
        if a.is_buffer != b.is_buffer:
            raise _Mismatch("buffer vs scalar parameter", a, b)
        if a.is_buffer:
            self.prim_seq(a.shape, b.shape, "shape")

    # ------------------------------------------------------------------ attrs
    def attrs(self, a, b):
        if a is b:
            return
        if len(a) != len(b) or a.keys() != b.keys():
            missing = sorted(set(a) ^ set(b), key=str)
            raise _Mismatch(f"attribute keys differ: {missing}", a, b)
        for k in a:
            try:
                self.attr_value(a[k], b[k])
            except _Mismatch as m:
                m.path.append(f"[{k!r}]")
                raise

    def attr_value(self, a, b):
        if isinstance(a, dict) and isinstance(b, dict):
            self.attrs(a, b)
        elif isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
            if len(a) != len(b):
                raise _Mismatch(f"list of {len(a)} vs {len(b)} items", a, b)
            _pairwise(self.attr_value, a, b, "[{}]")
        elif isinstance(a, PrimExpr) and isinstance(b, PrimExpr):
            self.prim(a, b)
        elif isinstance(a, Type) and isinstance(b, Type):
            self.type(a, b)
        elif isinstance(a, Expr) and isinstance(b, Expr):
            self.expr(a, b)
        elif isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
            if not (
                isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype == b.dtype and np.array_equal(a, b)
            ):
                raise _Mismatch("array attribute differs", a, b)
        elif type(a) is not type(b) or a != b:
            raise _Mismatch(f"{a!r} vs {b!r}", a, b)

    # ------------------------------------------------------------------ modules
    def module(self, a: IRModule, b: IRModule):
        names_a = [gv.name for gv in a.functions]
        names_b = {gv.name for gv in b.functions}
        if set(names_a) != names_b:
            only_a = sorted(set(names_a) - names_b)
            only_b = sorted(names_b - set(names_a))
            raise _Mismatch(f"functions only in lhs: {only_a}; only in rhs: {only_b}", a, b)
        for name in names_a:
            fa, fb = a[name], b[name]
            try:
                self.top_function(fa, fb)
            except _Mismatch as m:
                m.path.append(f"function {name!r}")
                raise
        try:
            self.attrs(a.attrs, b.attrs)
        except _Mismatch as m:
            m.path.append("module attrs")
            raise
        try:
            self.attr_value(a.global_infos, b.global_infos)
        except _Mismatch as m:
            m.path.append("global_infos")
            raise

    def top_function(self, fa, fb):
        if fa is fb:
            return
        if type(fa) is not type(fb):
            raise _Mismatch(f"{type(fa).__name__} vs {type(fb).__name__}", fa, fb)
        self.var_l2r = {}
        self.var_r2l = {}
        self.reset_function_scope()
        self.expr(fa, fb)


def _ret_ty(f):
    return f.ret_ty if f.ret_ty is not None else f.body.ty


def _kind(x):
    if isinstance(x, (Var, GlobalVar)):
        return f"{type(x).__name__} {x.name!r}"
    if isinstance(x, PrimVar):
        return f"PrimVar {x.name!r}"
    if isinstance(x, (IntImm, FloatImm)):
        return f"{type(x).__name__} {x.value!r}"
    if isinstance(x, Call):
        return f"Call to {_callee(x.op)}"
    return type(x).__name__


def _callee(op):
    if isinstance(op, Op):
        return op.name
    if isinstance(op, ExternFunc):
        return f"ExternFunc {op.global_symbol!r}"
    if isinstance(op, (Var, GlobalVar)):
        return f"{type(op).__name__} {op.name!r}"
    return type(op).__name__


def _prim_str(x):
    return f"{x.value}" if x.dtype in ("int64", "float32") else f"{x.value} ({x.dtype})"


def _opt(x):
    return "None" if x is None else type(x).__name__


def _compare(a, b, map_free_vars):
    with gc_paused():
        _compare_items(a, b, map_free_vars)


def _compare_items(a, b, map_free_vars):
    c = _Comparer(map_free_vars)
    if isinstance(a, IRModule) or isinstance(b, IRModule):
        if not (isinstance(a, IRModule) and isinstance(b, IRModule)):
            raise _Mismatch(f"{type(a).__name__} vs {type(b).__name__}", a, b)
        c.module(a, b)
    elif isinstance(a, (Function, PrimFunc)) or isinstance(b, (Function, PrimFunc)):
        c.top_function(a, b)
    elif isinstance(a, Expr) and isinstance(b, Expr):
        c.expr(a, b)
    elif isinstance(a, Type) and isinstance(b, Type):
        c.type(a, b)
    elif isinstance(a, PrimExpr) and isinstance(b, PrimExpr):
        c.prim(a, b)
    elif isinstance(a, (VarBinding, MatchCast)) and isinstance(b, (VarBinding, MatchCast)):
        c.binding(a, b)
    elif isinstance(a, BindingBlock) and isinstance(b, BindingBlock):
        c.block(a, b)
    elif isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        if len(a) != len(b):
            raise _Mismatch(f"{len(a)} vs {len(b)} items", a, b)
        for i, (x, y) in enumerate(zip(a, b)):
            try:
                _compare_items(x, y, map_free_vars)
            except _Mismatch as m:
                m.path.append(f"[{i}]")
                raise
    else:
        raise _Mismatch(f"cannot compare {type(a).__name__} with {type(b).__name__}", a, b)


def structural_equal(a, b, map_free_vars: bool = True) -> bool:
    """Whether ``a`` and ``b`` are structurally equal (TVM semantics; see the module doc).

    Parameters
    ----------
    a, b : IRModule, Function, PrimFunc, Expr, Type, PrimExpr, Binding or BindingBlock
    map_free_vars : bool, default True
        Map vars that are used but not defined in ``a``/``b`` to each other by position.

    Returns
    -------
    bool
    """
    return first_mismatch(a, b, map_free_vars) is None


def first_mismatch(a, b, map_free_vars: bool = True):
    """None when equal, else ``(path, reason, lhs_node, rhs_node)`` of the first difference;
    ``path`` is a list of steps from the outside in (``["function 'main'", "block 0",
    "binding 5 ('lv3')", "value", "args[1]"]``)."""
    try:
        _compare(a, b, map_free_vars)
    except _Mismatch as m:
        return list(reversed(m.path)), m.reason, m.lhs, m.rhs
    return None


def assert_structural_equal(a, b, map_free_vars: bool = True) -> None:
    """Raise :class:`AssertionError` unless ``a`` and ``b`` are structurally equal.

    The message gives the path to the first difference (function, block, binding, field),
    both sides of it, and a unified diff of the two sides printed as TVMScript (with
    :func:`memcore_py.ir.text.printer.script`; ``repr`` for what the printer cannot print).
    """
    found = first_mismatch(a, b, map_free_vars)
    if found is None:
        return
    path, reason, lhs, rhs = found
    where = " > ".join(path) if path else "(top level)"
    lines = [
        f"structural mismatch at {where}: {reason}",
        f"  lhs: {_short(lhs)}",
        f"  rhs: {_short(rhs)}",
    ]
    diff = _text_diff(a, b)
    if diff:
        lines.append(diff)
    raise AssertionError("\n".join(lines))


def _short(x, limit=200):
    try:
        text = repr(x)
    except Exception:  # pragma: no cover
        text = object.__repr__(x)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _to_text(x) -> str:
    """One side of a mismatch as the printer writes it (a module or function as script, a
    binding, expression or type in its one-line form), else its ``repr``."""
    try:
        if isinstance(x, Type):
            return format_type(x)
        if isinstance(x, Binding):
            return format_binding(x)
        if isinstance(x, Expr) and not isinstance(x, (Function, PrimFunc)):
            return format_expr(x)
        return script(x)
    except Exception:  # noqa: BLE001 - the diff is a courtesy; printing may fail on bad IR
        return repr(x)


_MAX_DIFF_LINES = 120


def _text_diff(a, b) -> str:
    try:
        ta, tb = _to_text(a).splitlines(), _to_text(b).splitlines()
    except Exception as exc:  # the diff is a courtesy; never hide the mismatch itself
        return f"(no text diff: {type(exc).__name__}: {exc})"
    if ta == tb:
        return "(both sides print the same text; the difference is not visible in the printed form)"
    if len(ta) + len(tb) > 20000:
        # difflib is quadratic in the worst case; show the first differing region only.
        i = 0
        while i < min(len(ta), len(tb)) and ta[i] == tb[i]:
            i += 1
        lo = max(0, i - 3)
        ta, tb = ta[lo: i + 20], tb[lo: i + 20]
    out = list(difflib.unified_diff(ta, tb, "lhs", "rhs", lineterm="", n=3))
    if len(out) > _MAX_DIFF_LINES:
        out = out[:_MAX_DIFF_LINES] + [f"... ({len(out) - _MAX_DIFF_LINES} more diff lines)"]
    return "\n".join(out)
