"""Expression atoms: literals, brackets, subscripts, names and call arguments, and conversions.

Design
------
The expression evaluator is a recursive descent over one segment's tokens
(:mod:`memcore_py.ir.text.parse_core`) that builds values on the fly, with no syntax tree.
This module holds its atoms (:meth:`_Expressions.unary`: numbers, strings, ``( )``,
``[ ]``, ``{ }``, unary ``-``, names, subscripts, calls of a function value), the
``metadata["key"][i]`` references, call arguments, and the conversions of an evaluated value
to a Relax expression (:meth:`_Expressions.as_expr`, :meth:`_Expressions.as_binding_value`).
The operators above the atoms are :mod:`memcore_py.ir.text.parse_prim`; a dotted call
``name(...)`` is dispatched by :mod:`memcore_py.ir.text.parse_calls`. Nesting is limited to
:data:`~memcore_py.ir.text.parse_core.MAX_DEPTH` levels (:meth:`_Expressions.enter`).
"""
from __future__ import annotations

import numpy as np

from ..expr import Call, Constant, Expr, PrimValue, StringImm, Tuple, TupleGetItem, Var
from ..prim import FloatImm, IntImm, PrimExpr, PrimVar
from ..types import PrimType, TensorType
from .lexer import string_value
from .parse_core import _NAME_RE, MAX_DEPTH, _Err, _tok
from .parse_values import _CLS, _META_BIG_INT, _META_ROOT, _Bare, _MetaKey, _constant, _describe
from .prim_func_text import DTYPE_NAMES, negated


class _Expressions:
    """Atoms, call arguments and conversions of the evaluator (a mixin of the parser)."""

    def tuple_expr(self):
        """expr (',' expr)* [','] -> value, or a Python tuple if there are commas."""
        v = self.expr()
        toks = self.toks
        if self.pos < len(toks) and toks[self.pos] == ",":
            items = [v]
            while self.pos < len(toks) and toks[self.pos] == ",":
                self.pos += 1
                if self.pos >= len(toks) or toks[self.pos] in (")", "]", "}", ":", "="):
                    break
                items.append(self.expr())
            return tuple(items)
        return v

    def unary(self):
        toks = self.toks
        pos = self.pos
        if pos >= len(toks):
            raise _Err("unexpected end of line: an expression was expected", pos)
        tok = toks[pos]
        c = tok[0]
        self.pos = pos + 1
        if c.isalpha() or c == "_":
            if pos + 1 < len(toks) and toks[pos + 1] == "(":
                v = self.call(tok, pos)
            else:
                v = self.name(tok, pos)
        elif c.isdigit() or (c == "." and len(tok) > 1):
            if "." in tok or "e" in tok or "E" in tok:
                v = float(tok)
            else:
                v = int(tok)
        elif c == '"' or c == "'":
            if len(tok) < 2 or tok[-1] != c:
                raise _Err("unterminated string", pos)
            v = string_value(tok)
        elif c == "(":
            self.enter(pos)
            if self.peek() == ")":
                self.pos += 1
                v = ()
            else:
                v = self.tuple_expr()
                if self.peek() != ")":
                    raise _Err(f"expected ')'; got {self.peek() or 'end of line'!r}", self.pos)
                self.pos += 1
                # (x) is x; (x,) is a tuple (tuple_expr returned a tuple)
            self.depth -= 1
        elif c == "[":
            self.enter(pos)
            items = []
            while self.peek() != "]":
                items.append(self.expr())
                nxt = self.peek()
                if nxt == ",":
                    self.pos += 1
                elif nxt != "]":
                    raise _Err(f"expected ',' or ']'; got {nxt or 'end of line'!r}", self.pos)
            self.pos += 1
            self.depth -= 1
            v = items
        elif c == "{":
            self.enter(pos)
            d = {}
            while self.peek() != "}":
                kpos = self.pos
                k = self.expr()
                self.expect(":")
                if not isinstance(k, (str, int)):
                    raise _Err(f"dictionary keys must be strings or ints; got {_describe(k)}", kpos)
                d[k] = self.expr()
                nxt = self.peek()
                if nxt == ",":
                    self.pos += 1
                elif nxt != "}":
                    raise _Err(f"expected ',' or '}}'; got {nxt or 'end of line'!r}", self.pos)
            self.pos += 1
            self.depth -= 1
            v = d
        elif c == "-" and len(tok) == 1:
            self.enter(pos)
            inner = self.unary()
            self.depth -= 1
            v = negated(inner)
            if v is None:
                raise _Err(f"cannot negate {_describe(inner)}", pos)
            return v
        elif c == "+" and len(tok) == 1:
            return self.unary()
        else:
            raise _Err(f"unexpected {_tok(tok)}", pos)
        # postfix: subscripts, calls on values
        while self.pos < len(toks):
            nxt = toks[self.pos]
            if nxt == "[":
                v = self.subscript(v)
            elif nxt == "(" and isinstance(v, Var):
                spos = self.pos
                args, kwargs = self.call_args()
                if kwargs:
                    raise _Err("keyword arguments are not allowed in a call of a function value", spos)
                v = Call(v, [self.as_expr(a, spos) for a in args])
            else:
                break
        return v

    def enter(self, pos):
        d = self.depth + 1
        if d > MAX_DEPTH:
            raise _Err(f"expression nested deeper than {MAX_DEPTH} levels", pos)
        self.depth = d

    def subscript(self, v):
        pos = self.pos
        self.enter(pos)
        self.pos += 1
        idx = self.expr()
        self.expect("]")
        self.depth -= 1
        if v is _META_ROOT:
            if not isinstance(idx, str):
                raise _Err("metadata[...] takes a string key", pos + 1)
            return _MetaKey(idx)
        if type(v) is _MetaKey:
            if type(idx) is not int or idx < 0:
                raise _Err("metadata[key][...] takes a non-negative integer index", pos + 1)
            return self.meta_constant(v.key, idx, pos)
        if type(idx) is not int or idx < 0:
            raise _Err(f"a tuple index must be a non-negative integer; got {_describe(idx)}", pos + 1)
        if isinstance(v, Expr):
            return TupleGetItem(v, idx)
        if isinstance(v, (tuple, list)):
            if idx >= len(v):
                raise _Err(f"index {idx} is out of range", pos + 1)
            return v[idx]
        raise _Err(f"cannot subscript {_describe(v)}", pos)

    def meta_constant(self, key, idx, pos):
        if key == _META_BIG_INT:
            raise _Err(f"metadata[{key!r}][{idx}] is an integer beyond int64 (TVM's ffi.BigInt, its value omitted "
                       "from the text), which memcore does not model", pos)
        data = None
        md = self.metadata
        if md is not None and key in md:
            arrs = md[key]
            try:
                n = len(arrs)
            except TypeError:
                raise _Err(f"metadata[{key!r}] must be a sequence of arrays", pos) from None
            if idx >= n:
                raise _Err(f"metadata[{key!r}][{idx}] is out of range (the metadata has {n} entries)", pos)
            if arrs[idx] is not None:  # None: leave this reference unbound
                data = _as_array(arrs[idx])
                if data is None:
                    raise _Err(f"metadata[{key!r}][{idx}] is not an array", pos)
        if data is not None:
            ty = TensorType(tuple(int(d) for d in data.shape), str(data.dtype))
        elif self.depth == 0 and isinstance(self.ann, TensorType):
            ty = self.ann
        else:
            ty = TensorType()
        return Constant(data, ty, meta=(key, idx))

    def call_args(self):
        """Parse ``( args, kw=args )`` starting at '('; returns (args, kwargs)."""
        pos = self.pos
        self.enter(pos)
        self.pos = pos + 1
        toks = self.toks
        n = len(toks)
        args = []
        kwargs = None
        while True:
            p = self.pos
            if p >= n:
                raise _Err("unexpected end of line: ')' expected", p)
            tok = toks[p]
            if tok == ")":
                self.pos = p + 1
                break
            if p + 1 < n and toks[p + 1] == "=" and _NAME_RE.match(tok):
                self.pos = p + 2
                if kwargs is None:
                    kwargs = {}
                if tok in kwargs:
                    raise _Err(f"keyword argument {tok!r} repeated", p)
                kwargs[tok] = self.expr()
            else:
                if kwargs:
                    raise _Err("positional argument after keyword arguments", p)
                # fast path: a plain name followed by ',' or ')'
                if p + 1 < n and toks[p + 1] in (",", ")") and (tok[0].isalpha() or tok[0] == "_") and "." not in tok:
                    v = self.scope.get(tok)
                    if v is not None:
                        self.pos = p + 1
                        self.used_var = True
                        args.append(v)
                    else:
                        args.append(self.expr())
                else:
                    args.append(self.expr())
            p = self.pos
            if p < n and toks[p] == ",":
                self.pos = p + 1
            elif p >= n or toks[p] != ")":
                raise _Err(f"expected ',' or ')'; got {toks[p] if p < n else 'end of line'!r}", p)
        self.depth -= 1
        return args, kwargs or {}

    # ---------------------------------------------------------------- names
    def name(self, tok, pos):
        if "." in tok:
            head, _, rest = tok.partition(".")
            if head in self.cls_names:
                return self.global_var(rest, pos)
            if head in self.scope or head in self.prims:
                raise _Err(f"attribute access on {head!r} is not supported", pos)
            return self.bare(tok, pos)
        v = self.scope.get(tok)
        if v is not None:
            self.used_var = True
            return v
        v = self.prims.get(tok)
        if v is not None:
            self.used_prim = True
            return v
        if tok in self.typevars:
            v = PrimVar(tok)
            self.prims[tok] = v
            self.used_prim = True
            return v
        if tok == "True":
            return True
        if tok == "False":
            return False
        if tok == "None":
            return None
        if tok == "metadata":
            return _META_ROOT
        if tok in self.cls_names:
            return _CLS
        raise _Err(f"undefined variable {tok!r}", pos)

    def global_var(self, name, pos):
        gv = self.gvars.get(name)
        if gv is None:
            raise _Err(f"the module has no function {name!r}", pos)
        return gv

    def bare(self, name, pos):
        """A dotted name used as a value (no call)."""
        if name in ("R.Tensor", "R.Tuple", "R.Shape", "R.Object", "R.Any", "R.Callable"):
            return _Bare(name)
        if name.startswith("T."):
            dt = name[2:]
            if dt in DTYPE_NAMES:
                return _Bare(name)
        raise _Err(f"unknown name {name!r}", pos)

    # ---------------------------------------------------------------- conversions
    def as_expr(self, v, pos):
        t = type(v)
        if isinstance(v, Expr):
            return v
        if t is int:
            return PrimValue(IntImm(v))
        if t is bool:
            return PrimValue(IntImm(int(v)))
        if t is float:
            return PrimValue(FloatImm(v, "float64"))
        if t is str:
            return StringImm(v)
        if t is tuple or t is list:
            return Tuple([self.as_expr(x, pos) for x in v])
        if isinstance(v, PrimExpr):
            return PrimValue(v)
        raise _Err(f"expected a Relax expression; got {_describe(v)}", pos)

    def as_binding_value(self, v, pos):
        """A binding's value: numbers are constants unless annotated as Prim."""
        t = type(v)
        ann = self.ann
        if t is int or t is float or t is bool:
            if type(ann) is PrimType:
                dt = ann.dtype
                if dt.startswith("float") or dt == "bfloat16":
                    return PrimValue(FloatImm(float(v), dt))
                return PrimValue(IntImm(int(v), dt))
            if t is bool:
                return _constant(np.array(v, dtype="bool"))
            if t is int:
                if not -(2**31) <= v < 2**31:
                    raise _Err(f"integer constant {v} does not fit in int32; use R.const(v, \"int64\")", pos)
                return _constant(np.array(v, dtype="int32"))
            return _constant(np.array(v, dtype="float32"))
        if isinstance(v, PrimExpr):
            if type(ann) is PrimType and type(v) is IntImm and v.dtype != ann.dtype and v.dtype == "int64":
                return PrimValue(IntImm(v.value, ann.dtype))
            return PrimValue(v)
        if t is tuple:
            return Tuple([self.as_expr(x, pos) for x in v])
        return self.as_expr(v, pos)

    # ---------------------------------------------------------------- whole expressions
    def eval_tokens(self, toks, a, b, ann=None):
        """Evaluate tokens ``toks[a:b]`` of the current segment as one expression."""
        full = self.toks
        self.toks = toks[:b]
        self.pos = a
        self.depth = 0
        self.ann = ann
        v = self.tuple_expr()
        if self.pos != b:
            raise _Err(f"unexpected {_tok(toks[self.pos])}", self.pos)
        self.toks = full
        return v

    def eval_line_expr(self, ln, text, col):
        self.cur = ln
        try:
            self.set_segment(text, col)
            self.ann = None
            v = self.expr()
            self.at_end()
            return v
        except Exception as e:  # noqa: BLE001
            raise self._located(e)  # noqa: B904 - _located sets the chain itself (the internal cause, or none)


def _as_array(x):
    if isinstance(x, np.ndarray):
        return x
    try:
        if hasattr(x, "numpy"):
            return np.asarray(x.numpy())
        return np.asarray(x)
    except Exception:  # noqa: BLE001
        return None
