"""Relax statements: a body's statements, bindings, dataflow blocks and ``if``/``else``.

Design
------
:meth:`_Statements.seq` reads a function body or an ``if`` branch statement by statement
(``return``, ``with R.dataflow():``, ``if``/``else``, ``R.func_attr``, bindings). A binding
is classified with one regex match that also splits ``name: annotation = value``
(:data:`_ASSIGN_RE`; a wrong split falls back to a token-level one), and its value is read
through the fast paths before the general evaluator: a bare name, a cached variable-free
value, a call whose arguments are names or integers (:meth:`_Statements.fast_call`), a
template of a line shape seen before (:meth:`_Statements.template_key`,
:mod:`memcore_py.ir.text.parse_cache`). An unannotated binding gets TVM's type
(:meth:`_Statements.derive_type`).
"""
from __future__ import annotations

import re

from ...errors import IRError, ParseError
from ..expr import (BindingBlock, Call, DataflowBlock, DataflowVar, ExternFunc, Function, GlobalVar,
    If, MatchCast, PrimValue, SeqExpr, Var, VarBinding)
from ..op import Op, get_op, is_registered
from ..prim import IntImm, PrimVar
from ..types import VOID, FuncType, PrimType, TupleType, refine_annotation, type_contradiction
from .parse_cache import _CLONE, _MAX_TEMPLATES, _MISSING, _clone, _op_type_key, _substitute
from .parse_calls import _HANDLERS
from .parse_core import _NAME_RE, MAX_DEPTH, _Err, _reserved_prim_message, _tok
from .parse_values import _MatchCastPair
from .prim_func_text import DTYPE_NAMES, RESERVED_NAMES


# name [: annotation] = value   (the annotation is validated afterwards). Linear on long
# whitespace runs: the annotation must end in a non-blank, so "[ \t]+=" is tried only where a
# run starts (``(.+?)[ \t]+=`` would rescan a run from each of its positions).
_ASSIGN_RE = re.compile(
    r"([A-Za-z_][A-Za-z_0-9]*)[ \t]*(?::[ \t]*(.*?[^ \t])[ \t]+=(?!=)[ \t]*|=(?!=)[ \t]*)(.*)\Z", re.S
)
_SIMPLE_CALL_RE = re.compile(r"([A-Za-z_][A-Za-z_0-9]*(?:\.[A-Za-z_][A-Za-z_0-9]*)+)\(([A-Za-z_0-9 ,]*)\)\Z")
_DECL_RE = re.compile(r"T\.([a-z][a-z0-9_]*)\(\)\Z")


class _Statements:
    """Statements, bindings, dataflow blocks and ``if`` (a mixin of the parser)."""

    def seq(self, lines, a, b, indent, level, attrs_out=None, result_name=None):
        """Parse statements ``lines[a:b]`` (all at ``indent``) into (blocks, body).

        In a function body the last statement is ``return``; in an If branch
        (``result_name`` given) it is ``result_name [: T] = value`` and the result is
        ``(blocks, value, annotation)``."""
        if level > MAX_DEPTH:
            raise self.error(f"statements nested deeper than {MAX_DEPTH} levels", lines[a])
        blocks = []
        cur = []
        i = a
        body = None
        prelude = attrs_out is not None
        while i < b:
            ln = lines[i]
            self.cur = ln
            if ln.indent != indent:
                if ln.indent > indent:
                    raise self.error("unexpected indentation", ln)
                raise self.error("unexpected dedent", ln)
            text = ln.text
            if body is not None:
                raise self.error("statement after 'return'", ln)
            c = text[0]
            if c == "r" and (text.startswith("return ") or text == "return"):
                if result_name is not None:
                    raise self.error("'return' inside an if branch is not supported", ln)
                if text == "return":
                    raise self.error("'return' needs a value", ln)
                try:
                    self.set_segment(text[7:], ln.col + 7)
                    self.ann = None
                    v = self.tuple_expr()
                    self.at_end()
                    body = self.as_binding_value(v, 0) if type(v) is tuple else self.as_expr(v, 0)
                except Exception as e:  # noqa: BLE001 - converted to ParseError
                    raise self._located(e)  # noqa: B904 - _located sets the chain itself (the internal cause, or none)
                i += 1
                continue
            if c == "w" and text.startswith("with "):
                if result_name is not None:
                    raise self.error("dataflow blocks inside an if branch are not supported", ln)
                if text.replace(" ", "") != "withR.dataflow():":
                    raise self.error("only 'with R.dataflow():' is supported", ln)
                j = i + 1
                while j < b and lines[j].indent > indent:
                    j += 1
                if cur:
                    blocks.append(BindingBlock(cur))
                    cur = []
                blocks.append(self.dataflow(lines, i, j, level))
                i = j
                prelude = False
                continue
            if c == "i" and text.startswith("if ") and text.endswith(":"):
                j = i + 1
                while j < b and lines[j].indent > indent:
                    j += 1
                if j >= b or lines[j].text != "else:" or lines[j].indent != indent:
                    raise self.error(
                        "an 'if' needs an 'else:' branch at the same indentation", lines[j] if j < b else ln
                    )
                k = j + 1
                while k < b and lines[k].indent > indent:
                    k += 1
                if self.dataflow_outputs is not None:
                    raise self.error("'if' inside a dataflow block is not supported", ln)
                cur.append(self.if_stmt(lines, i, j, k, level))
                i = k
                prelude = False
                continue
            if c == "e" and text == "else:":
                raise self.error("'else:' without a matching 'if'", ln)
            if prelude and text.startswith("R.func_attr("):
                try:
                    v = self.eval_line_expr(ln, text, ln.col)
                except ParseError:
                    raise
                if not isinstance(v, dict):
                    raise self.error("R.func_attr(...) takes a dict", ln)
                attrs_out.update(v)
                i += 1
                continue
            if text.startswith("R.output("):
                raise self.error("R.output(...) outside a dataflow block", ln)
            if text.startswith("R.func_attr("):
                raise self.error("R.func_attr(...) must come first in the function body", ln)
            # the If result line of a branch
            if result_name is not None and i == b - 1:
                m = _ASSIGN_RE.match(text)
                if m is None or m.group(1) != result_name:
                    raise self.error(f"the last statement of an if branch must assign {result_name!r}", ln)
                ann, value = self.assignment_parts(ln, m)
                if cur:
                    blocks.append(BindingBlock(cur))
                return blocks, value, ann
            binding = self.statement(ln, text)
            if binding is not None:
                cur.append(binding)
                prelude = False
            i += 1
        if cur:
            blocks.append(BindingBlock(cur))
        if result_name is not None:
            raise self.error(
                f"an if branch must end with an assignment to {result_name!r}", lines[b - 1] if b > a else self.cur
            )
        if body is None:
            raise self.error("the function has no 'return' statement", lines[b - 1] if b > a else self.cur)
        return blocks, body

    def template_key(self, toks):
        """The tokens with each Relax variable replaced by the index of its first
        occurrence (keyword names excluded), and those variables in order. Two values
        with the same key parse to the same tree up to the variables."""
        scope = self.scope
        key = []
        found = []
        index = {}
        n = len(toks)
        for i, t in enumerate(toks):
            v = scope.get(t)
            if v is None or (i + 1 < n and toks[i + 1] == "="):
                key.append(t)
            else:
                k = index.get(v)
                if k is None:
                    k = index[v] = len(found)
                    found.append(v)
                key.append(k)
        return tuple(key), found

    def fast_call(self, text):
        """``cls.f(a, b)`` / ``R.op(x, 0)``: a call whose arguments are variable names or
        integers, without tokenizing. None when the text is anything else or has an
        error (the general path then parses it and reports the error precisely)."""
        m = _SIMPLE_CALL_RE.match(text)
        if m is None:
            return None
        tok = m.group(1)
        inner = m.group(2)
        args = []
        if inner.strip():
            scope = self.scope
            for part in inner.split(","):
                part = part.strip()
                v = scope.get(part)
                if v is None:
                    if part.isdigit():
                        v = int(part)
                    else:
                        return None
                args.append(v)
        head, _, rest = tok.partition(".")
        try:
            if head in self.cls_names:
                gv = self.gvars.get(rest)
                if gv is None or "." in rest:
                    return None
                return Call(gv, [a if type(a) is not int else PrimValue(IntImm(a)) for a in args])
            if head != "R":
                return None
            handler = _HANDLERS.get(tok)
            if handler is not None:
                return handler(self, args, {}, 0)
            opname = "relax." + rest
            if not is_registered(opname):
                return None
            return self.op_call(get_op(opname), tok, args, {}, 0)
        except (_Err, IRError):
            return None

    def define(self, name, var, ln):
        if name in self.scope:
            raise self.error(f"duplicate definition of {name!r} (a variable of this name is already defined)", ln)
        self.scope[name] = var
        self.log.append(name)

    def assignment_parts(self, ln, m):
        """(annotation type or None, value) of an assignment matched by _ASSIGN_RE."""
        ann_text, value_text = m.group(2), m.group(3)
        try:
            ann = None
            if ann_text is not None:
                ann = self.global_type_cache.get(ann_text)
                if ann is None:
                    ann = self.annotation(ln, m)
                    if ann is _SPLIT_FAILED:
                        return self.assignment_by_tokens(ln)
            self.ann = ann
            if _NAME_RE.match(value_text):
                v = self.scope.get(value_text)
                if v is None:
                    self.set_segment(value_text, ln.col + m.start(3))
                    v = self.name(value_text, 0)
                return ann, self.as_binding_value(v, 0)
            key = (value_text, ann)
            hit = self.value_cache.get(key)
            if hit is not None:
                return ann, _clone(hit)
            v = self.fast_call(value_text)
            if v is not None:
                return ann, v
            toks = self.set_segment(value_text, ln.col + m.start(3))
            tkey, new_vars = self.template_key(toks)
            tkey = (tkey, ann)
            hit = self.templates.get(tkey)
            if hit is not None:
                return ann, _substitute(hit[0], dict(zip(hit[1], new_vars)))
            self.depth = 0
            self.used_var = False
            self.used_prim = False
            v = self.tuple_expr()
            if self.pos != len(self.toks):
                raise _Err(f"unexpected {_tok(self.toks[self.pos])}", self.pos)
            value = v if type(v) is _MatchCastPair else self.as_binding_value(v, 0)
            if not self.used_prim:
                if not self.used_var and type(value) in _CLONE:
                    self.value_cache[key] = value
                elif len(self.templates) < _MAX_TEMPLATES:
                    self.templates[tkey] = (value, new_vars)
            return ann, value
        except Exception as e:  # noqa: BLE001
            raise self._located(e)  # noqa: B904 - _located sets the chain itself (the internal cause, or none)

    def annotation(self, ln, m):
        text = m.group(2)
        try:
            return self.parse_type_text(text, ln.col + m.start(2))
        except (_Err, IRError):  # a wrong split can cut a node's operands (``not s`` of ``not s == 5``)
            return _SPLIT_FAILED

    def assignment_by_tokens(self, ln):
        """Split ``name: ann = value`` at the top-level '=' token (slow, exact path)."""
        toks = self.set_segment(ln.text, ln.col)
        depth = 0
        eq = None
        for k in range(2, len(toks)):
            t = toks[k]
            if t in ("(", "[", "{"):
                depth += 1
            elif t in (")", "]", "}"):
                depth -= 1
            elif t == "=" and depth == 0:
                eq = k
                break
        if eq is None or eq == 2:
            raise _Err("expected 'name: type = value'", 2)
        ty = self.as_type(self.eval_tokens(toks, 2, eq), 2)
        self.ann = ty
        v = self.eval_tokens(toks, eq + 1, len(toks), ann=ty)
        if type(v) is _MatchCastPair:
            return ty, v
        return ty, self.as_binding_value(v, eq + 1)

    def statement(self, ln, text):
        """One binding statement (or declaration); returns a Binding or None."""
        m = _ASSIGN_RE.match(text)
        if m is None:
            # expression statement: a void binding
            try:
                self.ann = None
                value = self.fast_call(text)
                if value is None:
                    self.set_segment(text, ln.col)
                    self.ann = None
                    v = self.expr()
                    self.at_end()
                    value = self.as_expr(v, 0)
            except Exception as e:  # noqa: BLE001
                raise self._located(e)  # noqa: B904 - _located sets the chain itself (the internal cause, or none)
            try:
                ty = value.ty if type(value) is Call and value.ty is not None else self.derive_type(value)
            except IRError as e:
                raise self.error(str(e), ln) from None
            if ty is not None and not (type(ty) is TupleType and not ty.fields):
                # TVM: "Non-void relax expressions must be bound to a variable"
                raise self.error("a non-void expression is used as a statement; bind it to a variable", ln)
            var = self.new_var("_", VOID)
            return VarBinding(var, value)
        name = m.group(1)
        value_text = m.group(3)
        if m.group(2) is None:
            dm = _DECL_RE.match(value_text)
            if dm is not None:
                self.declare_prim(name, dm.group(1), ln)
                return None
            if name in self.cls_names or value_text in self.cls_names:
                if value_text not in self.cls_names:
                    raise self.error(f"{name!r} is the module class name", ln)
                self.cls_names = self.cls_names | {name}
                return None
        ann, value = self.assignment_parts(ln, m)
        if type(value) is _MatchCastPair:
            var = self.new_var(name, value.ty, ln)
            try:
                return MatchCast(var, self.as_expr(value.value, 0), value.ty)
            except Exception as e:  # noqa: BLE001
                raise self._located(e)  # noqa: B904 - _located sets the chain itself (the internal cause, or none)
        try:
            derived = self.derive_type(value)
        except IRError as e:
            raise self.error(str(e), ln) from None
        if ann is None:
            ty = derived
        else:
            why = type_contradiction(ann, derived)
            if why is not None:
                raise self.error(f"the annotation of {name!r} contradicts its value: {why}", ln)
            ty = refine_annotation(ann, derived)
        var = self.new_var(name, ty, ln)
        return VarBinding(var, value)

    def new_var(self, name, ty, ln=None):
        outs = self.dataflow_outputs
        if outs is not None and name not in outs:
            var = DataflowVar(name, ty)
        else:
            var = Var(name, ty)
        if name != "_" or ln is not None:
            self.define(name, var, ln or self.cur)
        return var

    def declare_prim(self, name, dtype, ln):
        if name in RESERVED_NAMES:
            raise self.error(_reserved_prim_message(name), ln)
        if dtype not in DTYPE_NAMES or dtype == "handle":
            raise self.error(f"unknown symbolic var dtype T.{dtype}()", ln)
        if name in self.scope:
            raise self.error(f"{name!r} is already a Relax variable", ln)
        old = self.prims.get(name)
        if old is not None:
            if old.dtype != dtype:
                raise self.error(f"symbolic var {name!r} redeclared with dtype {dtype} (was {old.dtype})", ln)
            return
        self.prims[name] = PrimVar(name, dtype)

    def derive_type(self, value):
        t = type(value)
        if t is Call:
            op = value.op
            if type(op) is GlobalVar:
                kind = self.func_kinds.get(op.name)
                if kind == "T":
                    return VOID
                f = self.funcs.get(op.name)
                if isinstance(f, Function):
                    from ..infer import _check_call_args

                    _check_call_args(op.name, f, [getattr(a, "ty", None) for a in value.args])
                    return f.ty.ret
                return None
            if value.ty_args and hasattr(op, "name") and op.name in _TY_ARG_RESULT_OPS:
                return value.ty_args[0] if len(value.ty_args) == 1 else TupleType(value.ty_args)
            key = _op_type_key(value) if type(op) is Op and op.schema is not None else None
            if key is not None:
                hit = self.op_type_cache.get(key, _MISSING)
                if hit is not _MISSING:
                    return hit
            try:
                from ..infer import infer_type

                ty = infer_type(value, _Lookup(self.funcs))
            except Exception:  # noqa: BLE001 - unknown: TVM would infer; we leave it open
                ty = None
            if key is not None:
                self.op_type_cache[key] = ty
            return ty
        if t is PrimValue:
            return PrimType(value.value.dtype)
        if t is ExternFunc:
            return FuncType(None, None, False)
        ty = value.ty
        if ty is not None:
            return ty
        try:
            from ..infer import infer_type

            return infer_type(value, _Lookup(self.funcs))
        except Exception:  # noqa: BLE001
            return None

    # ---------------------------------------------------------------- dataflow / if
    def dataflow(self, lines, i, j, level):
        """``with R.dataflow():`` at lines[i]; its statements are lines[i+1:j]."""
        ln = lines[i]
        if j == i + 1:
            raise self.error("empty dataflow block (R.output(...) expected)", ln)
        inner = lines[i + 1].indent
        last = lines[j - 1]
        if last.indent != inner or not last.text.startswith("R.output("):
            raise self.error("a dataflow block must end with R.output(...)", last)
        outs = self.output_names(last)
        saved_outs = self.dataflow_outputs
        self.dataflow_outputs = outs
        mark = len(self.log)
        bindings = []
        try:
            for k in range(i + 1, j - 1):
                s = lines[k]
                self.cur = s
                if s.indent != inner:
                    raise self.error("unexpected indentation", s)
                t = s.text
                if t.startswith("if ") or t.startswith("with ") or t == "else:":
                    raise self.error(f"{t.split()[0]!r} is not allowed inside a dataflow block", s)
                if t.startswith("R.output("):
                    raise self.error("R.output(...) must be the last statement of the dataflow block", s)
                if t.startswith("return"):
                    raise self.error("'return' inside a dataflow block", s)
                b = self.statement(s, t)
                if b is not None:
                    bindings.append(b)
        finally:
            self.dataflow_outputs = saved_outs
        # outputs must be defined in the block; DataflowVars go out of scope
        defined = set(self.log[mark:])
        self.cur = last
        for name in outs:
            if name not in defined:
                raise self.error(f"R.output({name}): {name!r} is not defined in this dataflow block", last)
        for name in self.log[mark:]:
            v = self.scope.get(name)
            if type(v) is DataflowVar:
                del self.scope[name]
        return DataflowBlock(bindings)

    def output_names(self, ln):
        self.cur = ln
        toks = self.set_segment(ln.text, ln.col)
        if len(toks) < 3 or toks[0] != "R.output" or toks[1] != "(" or toks[-1] != ")":
            raise self.error("malformed R.output(...)", ln)
        names = []
        k = 2
        while k < len(toks) - 1:
            t = toks[k]
            if not _NAME_RE.match(t):
                raise self.error(f"R.output(...) takes variable names; got {t!r}", ln, self._token_col(k))
            if t in names:
                raise self.error(f"{t!r} is listed twice in R.output(...)", ln, self._token_col(k))
            names.append(t)
            k += 1
            if k < len(toks) - 1:
                if toks[k] != ",":
                    raise self.error(f"expected ','; got {toks[k]!r}", ln, self._token_col(k))
                k += 1
        return frozenset(names)

    def if_stmt(self, lines, i, j, k, level):
        """``if`` at lines[i], ``else:`` at lines[j], end at k."""
        ln = lines[i]
        self.cur = ln
        try:
            self.set_segment(ln.text[3:-1], ln.col + 3)
            self.ann = None
            v = self.expr()
            self.at_end()
            cond = self.as_expr(v, 0)
        except Exception as e:  # noqa: BLE001
            raise self._located(e)  # noqa: B904 - _located sets the chain itself (the internal cause, or none)
        if i + 1 >= j:
            raise self.error("empty 'if' branch", ln)
        if j + 1 >= k:
            raise self.error("empty 'else' branch", lines[j])
        last = lines[j - 1]
        m = _ASSIGN_RE.match(last.text)
        if m is None or last.indent != lines[i + 1].indent:
            raise self.error("an if branch must end with an assignment of the if's result", last)
        result = m.group(1)
        branches = []
        anns = []
        for lo, hi in ((i + 1, j), (j + 1, k)):
            mark = len(self.log)
            try:
                blocks, value, ann = self.seq(lines, lo, hi, lines[lo].indent, level + 1, result_name=result)
            finally:
                for name in self.log[mark:]:
                    self.scope.pop(name, None)
                del self.log[mark:]
            if type(value) is _MatchCastPair:
                raise self.error("R.match_cast as an if branch result is not supported", lines[hi - 1])
            branches.append(SeqExpr(blocks, value))
            anns.append(ann)
        self.cur = ln
        ty = anns[0] if anns[0] is not None else anns[1]
        if ty is None:
            t0, t1 = branches[0].body.ty, branches[1].body.ty
            if t0 is not None and t1 is not None:
                from ..infer import join_types

                ty = join_types(t0, t1)
            else:
                ty = t0 or t1
        try:
            value = If(cond, branches[0], branches[1], ty)
        except IRError as e:
            raise self._located(e)  # noqa: B904 - _located sets the chain itself (the internal cause, or none)
        var = self.new_var(result, ty, ln)
        return VarBinding(var, value)


class _SplitFailed:
    __slots__ = ()


_SPLIT_FAILED = _SplitFailed()


class _Lookup:
    """Function lookup for :func:`memcore_py.ir.infer.infer_type`."""

    __slots__ = ("funcs",)

    def __init__(self, funcs):
        self.funcs = funcs

    def lookup_function(self, gv):
        return self.funcs.get(gv.name)


#: Ops whose result type is their ``ty_args`` (used for unannotated bindings).
_TY_ARG_RESULT_OPS = frozenset(
    {
        "relax.call_tir", "relax.call_tir_inplace", "relax.call_tir_with_grad", "relax.call_dps_packed",
        "relax.call_pure_packed", "relax.call_inplace_packed", "relax.builtin.alloc_tensor",
    }
)
