"""TVMScript parser: the subset Apache TVM 0.27 prints for Relax memory planning -> memcore IR.

Grammar subset
--------------
::

    text      := [TypeVar-line]* (module | relax_func | prim_func)
    module    := "@I.ir_module" ["(" kwargs ")"] NL "class" NAME ":" NL INDENT
                 [I.module_attrs(dict)] [I.module_global_infos(dict)] (relax_func | prim_func)+
    relax_func:= "@R.function" ["(" pure=bool, private=bool ")"] NL
                 "def" NAME "(" [NAME ":" type ("," NAME ":" type)*] ")" ["->" type] ":" NL
                 INDENT [R.func_attr(dict)] [NAME "=" "T.int64()"]* ["cls" "=" NAME] stmt* "return" expr
    stmt      := NAME [":" type] "=" value | call | "with R.dataflow():" block "R.output(" names ")"
               | "if" expr ":" branch "else:" branch
    prim_func := "@T.prim_func" ["(" private=bool, s_tir=bool ")"] "def" NAME "(" params ")" ":" body

Expressions are a Python subset (names, dotted names, calls with keywords, tuples, lists,
dicts, subscripts, numbers, strings, unary ``-``, ``+ - * // %``, the comparisons (chained as
in Python), ``not``, ``and``, ``or``), evaluated on the fly into IR nodes, PrimExprs, types or
plain Python values, then converted where used.

Node mapping (conventions, mirroring TVM 0.27's own IR)
-------------------------------------------------------
==============================================  =============================================
text                                            node
==============================================  =============================================
``x: T = value``                                ``VarBinding(Var("x", T), value)``; the var's
                                                type is the annotation when there is one
``lv = ...`` inside ``with R.dataflow()``       ``DataflowVar`` unless listed in ``R.output``
``cls.add(x, x, alloc)`` (statement)            ``VarBinding(Var("_", R.Tuple()), Call(...))``:
                                                a hidden binding is void, as in TVM
``y = R.match_cast(v, T)``                      ``MatchCast(Var("y", T), v, T)``
``if c: ... r = a  else: ... r = b``            ``VarBinding(Var("r", T), If(c, SeqExpr(.., a),
                                                SeqExpr(.., b)))``; the branch's last assignment
                                                is the branch result (not a binding)
``R.nn.softmax(x, axis=1)``                      ``Call(get_op("relax.nn.softmax"), (x,), attrs={"axis": 1})``;
                                                an op with a schema (every high-level op,
                                                :mod:`~memcore_py.ir.op_schema`): values bound
                                                in its wrapper's signature order or by name,
                                                arguments converted by kind (``(1, 2)`` -> a
                                                ``Tuple`` or a ``ShapeExpr``, ``0`` -> a
                                                ``PrimValue``), every attribute checked,
                                                converted (lists -> tuples, ``padding=1`` ->
                                                ``(1, 1, 1, 1)``) and present (TVM's defaults
                                                filled in); unknown names, wrong kinds, wrong
                                                arity are ParseErrors naming the op. Ops
                                                without a schema: positional args past
                                                ``n_args`` fill ``attr_names`` in order
``R.call_tir(cls.f, (a, b), out_ty=T)``         ``Call(relax.call_tir, (GlobalVar f, Tuple(a, b)),
                                                ty_args=(T,))``; ``out_ty=[T1, T2]`` gives
                                                ``ty_args=(R.Tuple(T1, T2),)``; ``tir_vars=S``
                                                is a third arg; ``out_sinfo`` is accepted
``R.call_tir_inplace(.., inplace_indices=[1])``  same, ``attrs={"inplace_indices": (1,)}``
``R.call_dps_packed("f", (a,), out_ty=T)``      ``Call(relax.call_dps_packed, (ExternFunc f, Tuple))``
``R.call_packed("f", a, ty_args=(T,))``         ``Call(ExternFunc("f"), (a,), ty_args=(T,))``
``R.call_pure_packed("f", a, ty_args=T)``       ``Call(relax.call_pure_packed, (ExternFunc f, a))``
``cls.f(a)`` / ``v(a)``                         ``Call(GlobalVar f, ...)`` / ``Call(v, ...)``
``R.builtin.alloc_tensor(s, d, i[, scope])``    4 args (scope defaults to ``R.str("global")``),
                                                ``ty_args=(T,)`` with T the binding annotation
                                                (else derived from shape and dtype), as
                                                ``CallTIRRewrite`` makes it; an explicit
                                                ``ty_args=`` (TVM prints it) is used as given
``R.memory.alloc_tensor`` / ``R.vm.*``          TVM's defaults filled in (device index ``0``,
                                                scope ``"global"``); bare ``"float32"`` /
                                                ``"global"`` args become ``R.dtype`` / ``R.str``
``R.shape([2, n])``                             ``ShapeExpr((2, n))``
``T.if_then_else(s < 0, s + 512, s)``,          ``IfThenElse``, ``Select``, ``Cast``, ``LT``
``T.Select(c, a, b)``, ``T.Cast("int32", n)``,  ... ``And``/``Or``/``Not`` as written (no
``n <= 3``, ``a and not b``, ``T.LT(1, 2)``     folding); a literal takes the other operand's
                                                dtype, ``True``/``False`` are ``bool``
``0`` / ``n + 1`` / ``T.int32(4)`` as argument  ``PrimValue`` (int literals are int64)
``p: T.int64 = 3``                              ``PrimValue(IntImm(3, "int64"))`` (annotation dtype)
``c = 3`` / ``c = 1.5`` (no Prim annotation)    a scalar ``Constant`` (int32 / float32 / bool), as TVM
``R.const(v, "dtype")``                         ``Constant(numpy array)``; ``float("inf")``,
                                                ``-float("inf")`` and ``"inf"``/``"-inf"``/``"nan"``
``metadata["relax.expr.Constant"][i]``          ``Constant(meta=(key, i))``; data bound from the
                                                ``metadata`` argument when given; the type is the
                                                binding annotation, else ``R.Tensor``; the key
                                                ``"ffi.BigInt"`` (an integer) is refused
``R.str("s")`` / ``R.dtype("f32")``            ``StringImm`` / ``DataTypeImm``
``R.Any`` / ``R.Object`` / ``I.StringType()``   ``ObjectType``
``T.int64`` (annotation), ``R.Prim("int64")``   ``PrimType("int64")``
``R.Tuple`` / ``R.Tuple(A, B)``                 ``TupleType(())`` (void) / ``TupleType((A, B))``
``n = TypeVar("n")`` (module level)             ``n`` is a symbolic var of every function whose
                                                signature uses it (a fresh ``PrimVar`` per function)
``k = T.int64()`` (function body)               ``PrimVar("k")``; string dims ``("n", 4)``
                                                declare their names in signatures
``@R.function`` / ``(private=True)``            ``attrs["global_symbol"] = name`` unless private
``@T.prim_func``                                ``PrimFunc(params, attrs, text, private)``; the text
                                                is the function's lines (decorator to last body
                                                line) dedented; its extent is found by indentation.
                                                The text is read by ``prim_func_text.
                                                read_prim_func`` (TIR rules); a signature-only
                                                form reads back as ``text=None``
==============================================  =============================================

Unannotated bindings get TVM's type: void for statements, ``ty_args[0]`` for the
``call_tir`` family and packed calls, else :func:`memcore_py.ir.infer.infer_type` (a call to a
Relax function defined later in the text gets no type). No normalization is done beyond
TVM's printed form: nested calls stay nested, a branch or function result stays as written.

Error strategy
--------------
Every failure is a :class:`~memcore_py.errors.ParseError` with 1-based ``line``, ``column``
and the offending ``source_line``: the expression parser raises a light internal error
carrying the token index, which the statement loop turns into a ParseError with the column
of that token; node constructors' :class:`~memcore_py.errors.IRError` (bad dtype, tuple index
out of range, ...) and any other exception inside a statement are converted the same way
(chained as ``__cause__``). Expression nesting is limited to ``MAX_DEPTH`` levels and
statement nesting too, so hostile input cannot exhaust the stack; every loop consumes input,
so there is no hang.

Performance
-----------
- Lines are split once; a Relax statement is classified with one regex match that also
  splits ``name: annotation = value`` (the annotation is taken up to the first ``" = "`` and
  validated by parsing it completely, falling back to a token-level split otherwise).
- Annotations are parsed once per distinct text (types are immutable and shared; types with
  symbolic vars are cached per function, since each function has its own PrimVars).
- Values are read through three caches before the general path: a bare name is a scope
  lookup; a call whose arguments are names or integers (``cls.add(x, x, alloc)``,
  ``R.memory.kill_tensor(a)``) is split by a regex without tokenizing; a value text without
  variables (``R.builtin.alloc_tensor(R.shape([2, 3]), ...)``) is parsed once and then
  copied. Otherwise the text is tokenized by one ``findall`` (:mod:`memcore_py.ir._lexer`,
  dotted names are one token) and looked up as a *template*: the tokens with every Relax
  variable replaced by the index of its first occurrence. A template seen before is rebuilt
  by substituting the variables into a copy of its first parse (TVM's output repeats the
  same few line shapes); only new shapes run the recursive-descent evaluator.
- Cached values are copied per use, never shared (passes key nodes by identity); values
  that read symbolic vars are not cached (each function has its own PrimVars).
- The cyclic GC is paused during a parse (millions of acyclic objects would otherwise make
  generational collections quadratic). PrimFunc bodies are never tokenized; function
  extents are found with one regex search over the text.
- Speed against TVM's parser: bench/README.md, "IR text".
"""
from __future__ import annotations

import bisect
import math
import re
import unicodedata

import numpy as np

from ..errors import IRError, ParseError
from ._lexer import string_value, strip_comment, token_columns, tokenize
from ._util import gc_paused
from .construct import new_call, new_tuple, new_tuple_get_item, shallow_copy
from .expr import (
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
    PrimValue,
    SeqExpr,
    ShapeExpr,
    StringImm,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
    BindingBlock,
)
from .functor import value_type
from .infer import erase_to_well_defined, signature_prim_names
from .module import IRModule, VDevice
from .op import Op, get_op, is_registered
from .op_schema import ABSENT, REQUIRED, convert_attr
from .ops import builtin_alloc_implied_type, builtin_alloc_own_type
from .prim_func_text import (
    RESERVED_NAMES,
    DTYPE_NAMES,
    PRIM_CALLS,
    binary_value,
    cast_value,
    compare_value,
    dtype_literal,
    float_value,
    logical_value,
    min_max,
    negated,
    not_value,
    number_prim,
    parameter_spans,
    prim_call,
    read_prim_func,
    select_value,
    type_spelled_bare,
)
from .prim import FloatImm, IntImm, PrimExpr, PrimVar
from .types import VOID, FuncType, ObjectType, PrimType, ShapeType, TensorType, TupleType, Type, refine_annotation, type_contradiction

__all__ = ["parse", "MAX_DEPTH"]

#: Maximum nesting of brackets/calls in one expression, and of statements (``if`` in ``if``).
MAX_DEPTH = 64

_tokenize = tokenize
_OBJECT = ObjectType()

# name [: annotation] = value   (the annotation is validated afterwards). Linear on long
# whitespace runs: the annotation must end in a non-blank, so "[ \t]+=" is tried only where a
# run starts (``(.+?)[ \t]+=`` would rescan a run from each of its positions).
_ASSIGN_RE = re.compile(r"([A-Za-z_][A-Za-z_0-9]*)[ \t]*(?::[ \t]*(.*?[^ \t])[ \t]+=(?!=)[ \t]*|=(?!=)[ \t]*)(.*)\Z", re.S)
#: A character other than printable ASCII and tab (then the line is checked token by token).
_UNUSUAL_CHAR = re.compile(r"[^\t -~]")
_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z_0-9]*\Z")
_END_RES = {}
_SIMPLE_CALL_RE = re.compile(r"([A-Za-z_][A-Za-z_0-9]*(?:\.[A-Za-z_][A-Za-z_0-9]*)+)\(([A-Za-z_0-9 ,]*)\)\Z")
_DECL_RE = re.compile(r"T\.([a-z][a-z0-9_]*)\(\)\Z")
_TYPEVAR_RE = re.compile(r"""([A-Za-z_][A-Za-z_0-9]*)[ \t]*=[ \t]*TypeVar\([ \t]*(["'])([A-Za-z_][A-Za-z_0-9]*)\2[ \t]*\)\Z""")
_CLASS_RE = re.compile(r"class[ \t]+([A-Za-z_][A-Za-z_0-9]*)[ \t]*(?:\([ \t]*\)[ \t]*)?:\Z")  # no two adjacent [ \t]*


def _tok(tok: str) -> str:
    """A token for an error message: quoted, or ``U+00A0 (NO-BREAK SPACE)`` for a character
    that is not printable ASCII (Python source refuses those outside strings, and so do we)."""
    if len(tok) == 1 and not (" " < tok <= "~"):
        name = unicodedata.name(tok, None) or ("a control character" if unicodedata.category(tok) == "Cc" else "unnamed")
        return f"character U+{ord(tok):04X} ({name})"
    return repr(tok)


class _Err(Exception):
    """Internal: an error at token ``pos`` of the expression being parsed."""

    def __init__(self, msg, pos=None):
        super().__init__(msg)
        self.msg = msg
        self.pos = pos


class _Bare:
    """A dotted name used without a call (``R.Tensor``, ``T.int64``)."""

    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name


class _MetaRoot:
    __slots__ = ()


class _MetaKey:
    __slots__ = ("key",)

    def __init__(self, key):
        self.key = key


class _MatchCastPair:
    __slots__ = ("value", "ty")

    def __init__(self, value, ty):
        self.value = value
        self.ty = ty


class _Decl:
    """``T.int64()``: a symbolic var declaration (only valid as a whole statement value)."""

    __slots__ = ("dtype",)

    def __init__(self, dtype):
        self.dtype = dtype


class _ClsRef:
    __slots__ = ()


_META_ROOT = _MetaRoot()
_CLS = _ClsRef()

_BINOP_PREC = {"+": 1, "-": 1, "*": 2, "//": 2, "%": 2}
#: Python's comparison operators (chained as Python chains them: ``a < b < c`` is
#: ``a < b and b < c``), and the tokens after an operand that start a boolean expression.
_COMPARE_TOKENS = frozenset(("<", "<=", ">", ">=", "==", "!="))
_LOGIC_TOKENS = _COMPARE_TOKENS | {"and", "or"}
#: Keywords of boolean expressions, never symbolic variables (in dimension strings too).
_BOOL_KEYWORDS = frozenset(("and", "or", "not", "True", "False"))
_NO_OPERAND = object()


# ------------------------------------------------------------------------------ lines
class _Line:
    """One logical line: ``indent`` columns, ``text`` (comment removed, stripped),
    1-based ``lineno``, and ``col`` (column where ``text`` starts)."""

    __slots__ = ("indent", "text", "lineno", "col", "parts")

    def __init__(self, indent, text, lineno, col, parts=None):
        self.indent = indent
        self.text = text
        self.lineno = lineno
        self.col = col
        #: For a line joined from several physical lines: ``[(offset in text, lineno,
        #: column of that piece)]``, used to report errors on the right physical line.
        self.parts = parts


def _balance(text):
    """Bracket depth change of a line (strings skipped only when needed)."""
    d = text.count("(") - text.count(")") + text.count("[") - text.count("]") + text.count("{") - text.count("}")
    if d == 0 and '"' not in text and "'" not in text:
        return 0
    depth = 0
    for tok in _tokenize(text):
        if len(tok) == 1:
            if tok in "([{":
                depth += 1
            elif tok in ")]}":
                depth -= 1
    return depth


# ------------------------------------------------------------------------------ parser
class _Parser:
    def __init__(self, text, metadata):
        self.text = text
        self.raw = text.split("\n")
        self.has_tabs = "\t" in text
        self.offsets = None
        self.metadata = metadata
        self.typevars = set()
        self.global_type_cache = {}
        # per function
        self.scope = {}
        self.prims = {}
        self.func_type_cache = {}
        self.cls_names = set()
        self.gvars = {}
        self.funcs = {}
        self.func_kinds = {}
        self.sig_mode = False
        self.used_prim = False
        # expression state
        self.toks = ()
        self.pos = 0
        self.depth = 0
        self.ann = None
        self.cur = None  # current _Line (for errors)
        self.seg_col = 1  # column of the segment being tokenized
        self.seg_text = ""
        self.dataflow_outputs = None
        self.log = []
        self.used_var = False
        self.value_cache = {}
        self.templates = {}
        self.op_type_cache = {}

    # ================================================================== errors
    def error(self, msg, line=None, col=None):
        line = line if line is not None else self.cur
        if line is None:
            return ParseError(msg, 0, 0, "")
        lineno = line.lineno
        if col is None:
            col = line.col
        elif line.parts is not None:
            # a joined line: find the physical line the column falls on
            offset = col - line.col
            for start, part_lineno, part_col in reversed(line.parts):
                if offset >= start:
                    lineno = part_lineno
                    col = part_col + offset - start
                    break
        src = self.raw[lineno - 1] if 0 < lineno <= len(self.raw) else ""
        return ParseError(msg, lineno, col, src.rstrip("\r"))

    def _token_col(self, pos):
        """Source column of token ``pos`` of the current segment."""
        cols = token_columns(self.seg_text)
        base = self.seg_col
        if pos is None:
            return base
        if pos < len(cols):
            col = base + cols[pos] - 1
        else:
            col = base + len(self.seg_text.rstrip())
        return col

    def _located(self, exc):
        """Convert an internal error into a ParseError at the current line."""
        if isinstance(exc, ParseError):
            return exc
        if isinstance(exc, _Err):
            err = self.error(exc.msg, col=self._token_col(exc.pos))
            err.__suppress_context__ = True  # the internal exception is noise
            return err
        if isinstance(exc, IRError):
            msg = str(exc)
        elif isinstance(exc, RecursionError):
            msg = "input is nested too deeply"
        else:
            msg = f"cannot parse this line ({type(exc).__name__}: {exc})"
        err = self.error(msg)
        err.__cause__ = exc
        return err

    # ================================================================== lines
    def logical_lines(self, start, end):
        """``_Line`` objects for physical lines ``[start, end)`` (0-based), skipping blank and
        comment lines and joining lines inside open brackets."""
        raw = self.raw
        out = []
        append = out.append
        i = start
        while i < end:
            line = raw[i]
            i += 1
            if "\t" in line:
                line = line.expandtabs(8)
            stripped = line.lstrip(" ")
            if not stripped or stripped[0] == "#":
                continue
            indent = len(line) - len(stripped)
            if "#" in stripped:
                stripped = strip_comment(stripped)
            stripped = stripped.rstrip()
            if not stripped:
                continue
            lineno = i
            parts = None
            if (
                stripped.count("(") != stripped.count(")")
                or stripped.count("[") != stripped.count("]")
                or "{" in stripped
            ):
                depth = _balance(stripped)
                while depth > 0:
                    if i >= end:
                        raise self.error(
                            "unexpected end of input: a bracket opened on this line is never closed",
                            _Line(indent, stripped, lineno, indent + 1),
                        )
                    nxt = raw[i]
                    i += 1
                    if "#" in nxt:
                        nxt = strip_comment(nxt)
                    lead = len(nxt) - len(nxt.lstrip())
                    nxt = nxt.strip()
                    if nxt:
                        if parts is None:
                            parts = [(0, lineno, indent + 1)]
                        parts.append((len(stripped) + 1, i, lead + 1))
                        stripped = stripped + " " + nxt
                        depth += _balance(nxt)
                if depth < 0:
                    raise self.error("unbalanced closing bracket", _Line(indent, stripped, lineno, indent + 1))
            if _UNUSUAL_CHAR.search(stripped) is not None:
                self._check_characters(stripped, lineno, indent + 1, parts)
            append(_Line(indent, stripped, lineno, indent + 1, parts))
        return out

    def _check_characters(self, text, lineno, col, parts):
        """Refuse a character outside strings that Python source refuses: a control
        character or a non-ASCII space such as U+00A0 (where ``text`` has characters other
        than printable ASCII and tabs; rare, so the line is tokenized again here)."""
        cols = token_columns(text)
        for tok, c in zip(_tokenize(text), cols):
            if len(tok) == 1 and not (" " < tok <= "~"):
                line = _Line(0, text, lineno, col, parts)
                raise self.error(f"invalid {_tok(tok)}", line, col + c - 1)

    # ================================================================== tokens / expressions
    def set_segment(self, text, col):
        self.seg_text = text
        self.seg_col = col
        toks = _tokenize(text)
        self.toks = toks
        self.pos = 0
        self.depth = 0
        return toks

    def peek(self):
        pos = self.pos
        toks = self.toks
        return toks[pos] if pos < len(toks) else ""

    def expect(self, tok):
        pos = self.pos
        toks = self.toks
        if pos >= len(toks):
            raise _Err(f"expected {tok!r} but the line ends", pos)
        if toks[pos] != tok:
            raise _Err(f"expected {tok!r}; got {toks[pos]!r}", pos)
        self.pos = pos + 1

    def at_end(self):
        if self.pos != len(self.toks):
            raise _Err(f"unexpected {_tok(self.toks[self.pos])}", self.pos)

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

    def expr(self):
        toks = self.toks
        pos = self.pos
        if pos < len(toks) and toks[pos] == "not":
            return self.logical(_NO_OPERAND)
        v = self.arith_expr()
        pos = self.pos
        if pos < len(toks) and toks[pos] in _LOGIC_TOKENS:
            return self.logical(v)
        return v

    def arith_expr(self):
        """An operand of the comparisons: a unary value and ``+ - * // %``."""
        v = self.unary()
        toks = self.toks
        pos = self.pos
        if pos < len(toks):
            prec = _BINOP_PREC.get(toks[pos])
            if prec is not None:
                return self.binary(v, 1)
        return v

    def logical(self, first):
        """``or`` of ``and`` of ``not`` of comparisons, with Python's precedence
        (:func:`~memcore_py.ir.prim_func_text.logical_value`); ``first`` is the first
        comparison operand when it is already read, else ``_NO_OPERAND``."""
        v = self.and_test(first)
        while self.peek() == "or":
            self.pos += 1
            v = self.bool_op("or", v, self.and_test(_NO_OPERAND), self.pos - 1)
        return v

    def and_test(self, first):
        v = self.not_test(first)
        while self.peek() == "and":
            self.pos += 1
            v = self.bool_op("and", v, self.not_test(_NO_OPERAND), self.pos - 1)
        return v

    def not_test(self, first):
        if first is _NO_OPERAND and self.peek() == "not":
            pos = self.pos
            self.pos += 1
            self.enter(pos)
            inner = self.not_test(_NO_OPERAND)
            self.depth -= 1
            return not_value(inner)
        return self.comparison(first)

    def comparison(self, first):
        a = self.arith_expr() if first is _NO_OPERAND else first
        result = None
        toks = self.toks
        while self.pos < len(toks) and toks[self.pos] in _COMPARE_TOKENS:
            pos = self.pos
            self.pos += 1
            b = self.arith_expr()
            c = compare_value(toks[pos], a, b, lambda x, other: self.as_prim(x, pos, other))
            result = c if result is None else self.bool_op("and", result, c, pos)
            a = b
        return a if result is None else result

    def bool_op(self, op, a, b, pos):
        try:
            return logical_value(op, a, b)
        except ValueError as e:
            raise _Err(str(e), pos) from None

    def binary(self, lhs, min_prec):
        toks = self.toks
        while True:
            pos = self.pos
            if pos >= len(toks):
                return lhs
            op = toks[pos]
            prec = _BINOP_PREC.get(op)
            if prec is None or prec < min_prec:
                return lhs
            self.pos = pos + 1
            rhs = self.unary()
            while True:
                pos = self.pos
                nxt = _BINOP_PREC.get(toks[pos]) if pos < len(toks) else None
                if nxt is None or nxt <= prec:
                    break
                rhs = self.binary(rhs, prec + 1)
            lhs = self.arith(op, lhs, rhs, pos)

    def arith(self, op, a, b, pos):
        try:
            return binary_value(op, a, b, lambda x, other: self.as_prim(x, pos, other))
        except ZeroDivisionError:
            raise _Err("division by zero", pos) from None

    def as_prim(self, v, pos, other=None):
        if isinstance(v, PrimExpr):
            return v
        p = number_prim(v, other)
        if p is not None:
            return p
        t = type(v)
        if t is PrimValue:
            return v.value
        if t is str:
            return self.string_prim(v, pos)
        raise _Err(f"expected a symbolic integer expression; got {_describe(v)}", pos)

    def as_dim(self, v, pos):
        """A shape dimension: an integer symbolic expression."""
        d = self.as_prim(v, pos)
        if not (d.dtype.startswith("int") or d.dtype.startswith("uint")):
            raise _Err(f"a shape dimension must be an integer; got {_describe(v)}", pos)
        return d

    def string_prim(self, s, pos):
        """A string dim (``"n * 2"``): parsed as an expression; its names are declared."""
        saved = (self.toks, self.pos, self.depth, self.seg_text, self.seg_col)
        try:
            toks = _tokenize(s)
            if not toks:
                raise _Err("empty string where a shape dimension was expected", pos)
            self.toks = toks
            self.pos = 0
            declare = self.sig_mode
            for tok in toks:
                if tok in _BOOL_KEYWORDS:
                    continue
                if _NAME_RE.match(tok) and tok not in self.scope and tok not in self.prims:
                    if declare and tok in RESERVED_NAMES:
                        raise _Err(_reserved_prim_message(tok), pos)
                    if declare or tok in self.typevars:
                        self.prims[tok] = PrimVar(tok)
                        self.used_prim = True
            try:
                v = self.expr()
                if self.pos != len(toks):
                    raise _Err(f"unexpected {_tok(toks[self.pos])} in dimension string {s!r}", None)
            except _Err as e:
                raise _Err(f"in dimension string {s!r}: {e.msg}", None) from None
        finally:
            self.toks, self.pos, _, self.seg_text, self.seg_col = saved
            self.depth = saved[2]
        if type(v) is int:
            return IntImm(v, "int64")
        if not isinstance(v, PrimExpr):
            raise _Err(f"dimension string {s!r} is not an integer expression", pos)
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

    # ---------------------------------------------------------------- calls
    def call(self, tok, pos):
        """``tok(...)``: self.pos is at '('."""
        if "." not in tok:
            v = self.scope.get(tok)
            if v is not None:
                self.used_var = True
                args, kwargs = self.call_args()
                if kwargs:
                    raise _Err("keyword arguments are not allowed in a call of a function value", pos)
                return Call(v, [self.as_expr(a, pos) for a in args])
            if tok == "float":
                args, kwargs = self.call_args()
                try:
                    return float_value(args, kwargs)
                except ValueError as e:
                    raise _Err(str(e), pos) from None
            if tok in ("TypeVar",):
                raise _Err("TypeVar(...) is only allowed at module level", pos)
            raise _Err(f"undefined function {tok!r}", pos)
        head = tok[: tok.index(".")]
        if head in self.cls_names:
            gv = self.global_var(tok[len(head) + 1:], pos)
            args, kwargs = self.call_args()
            if kwargs:
                raise _Err("keyword arguments are not allowed in a call of a module function", pos)
            return Call(gv, [self.as_expr(a, pos) for a in args])
        handler = _HANDLERS.get(tok)
        if handler is not None:
            args, kwargs = self.call_args()
            return handler(self, args, kwargs, pos)
        if head == "R":
            opname = "relax." + tok[2:]
            if is_registered(opname):
                args, kwargs = self.call_args()
                return self.op_call(get_op(opname), tok, args, kwargs, pos)
            raise _Err(f"unknown operator {tok!r} (no {opname!r} in the op registry)", pos)
        if head == "T":
            dt = tok[2:]
            if dt in DTYPE_NAMES:
                args, kwargs = self.call_args()
                return self.t_dtype(dt, args, kwargs, pos)
        raise _Err(f"unknown function {tok!r}", pos)

    def t_dtype(self, dt, args, kwargs, pos):
        if not args and not kwargs:
            return _Decl(dt)
        if len(args) != 1 or kwargs:
            raise _Err(f"T.{dt}(...) takes one value", pos)
        try:
            return dtype_literal(dt, args[0])
        except ValueError as e:
            raise _Err(f"{e}; got {_describe(args[0])}", pos) from None

    def schema_call(self, op, tok, args, kwargs, pos):
        """A call of an op with a schema (:mod:`~memcore_py.ir.op_schema`): positional values
        bound in the wrapper's signature order, keywords by name, Relax arguments converted
        by kind, every attribute checked, converted and present (defaults filled)."""
        schema = op.schema
        sig = schema.signature
        if len(args) > len(sig):
            n_attr = len(schema.attrs)
            raise _Err(f"{tok} takes at most {len(schema.args)} arguments" + (f" and {n_attr} attributes" if n_attr else "")
                       + f"; got {len(args)} ({', '.join(sig)})", pos)
        bound = dict(zip(sig, args))
        ty_args = ()
        for k, v in kwargs.items():
            if k in ("ty_args", "sinfo_args"):
                ty_args = self.types_of(v, pos)
            elif k not in sig:
                attrs = ", ".join(a.name for a in schema.attrs) or "none"
                raise _Err(f"{tok}: unknown attribute or argument {k!r} (its attributes: {attrs})", pos)
            elif k in bound:
                raise _Err(f"{tok}: {k!r} given twice", pos)
            else:
                bound[k] = v
        if schema.prepare is not None:
            schema.prepare(bound)
        exprs = []
        for a in schema.args:
            v = bound.get(a.name)
            if v is None:
                if a.default is REQUIRED:
                    lo, hi = op.n_args
                    want = f"{lo}" if lo == hi else f"{lo} to {hi}"
                    given = sum(1 for x in schema.args if bound.get(x.name) is not None)
                    raise _Err(f"{tok} takes {want} arguments; got {given} (missing {a.name!r})", pos)
                if a.default is ABSENT:
                    if any(bound.get(b.name) is not None for b in schema.args[len(exprs) + 1:]):
                        raise _Err(f"{tok}: argument {a.name!r} may only be left out after the last one", pos)
                    continue
                v = a.default
            exprs.append(self.schema_arg(a, v, tok, pos))
        attrs = {}
        for a in schema.attrs:
            if a.name in bound:
                try:
                    attrs[a.name] = convert_attr(op.script_name, a, _attr_value(bound[a.name]))
                except _Err as e:
                    raise _Err(f"{tok}: attribute {a.name!r}: {e.msg}", pos) from None
                except IRError as e:
                    raise _Err(str(e), pos) from None
        try:
            attrs = op.complete_attrs(attrs, exprs)
        except IRError as e:
            raise _Err(str(e).replace(op.name, tok, 1), pos) from None
        return Call(op, exprs, attrs, ty_args)

    def schema_arg(self, a, v, tok, pos):
        """A Relax argument of kind ``a.kind`` from the written value ``v``."""
        kind = a.kind
        if kind == "shape":
            if isinstance(v, (tuple, list)):
                return ShapeExpr([self.as_dim(d, pos) for d in v])
            if type(v) is int:
                return ShapeExpr([IntImm(v)])
            e = self.as_expr(v, pos)
            if not isinstance(e.ty, ShapeType) and e.ty is not None:
                raise _Err(f"{tok}: argument {a.name!r} must be a shape (R.shape([...])); got {_describe(v)}", pos)
            return e
        if kind == "tuple":
            if isinstance(v, (tuple, list)):
                return Tuple([self.as_expr(x, pos) for x in v])
            e = self.as_expr(v, pos)
            if not isinstance(e.ty, TupleType) and e.ty is not None:
                raise _Err(f"{tok}: argument {a.name!r} must be a tuple; got {_describe(v)}", pos)
            return e
        if kind == "prim":
            if isinstance(v, (tuple, list, str)):
                raise _Err(f"{tok}: argument {a.name!r} must be a scalar (PrimValue); got {_describe(v)}", pos)
            if type(v) is bool:  # a scalar argument written True / False: TVM's op builders make it a bool
                return PrimValue(IntImm(int(v), "bool"))
            e = self.as_expr(v, pos)
            if e.ty is not None and not isinstance(e.ty, PrimType):
                raise _Err(f"{tok}: argument {a.name!r} must be a scalar (PrimValue); got {_describe(v)}", pos)
            return e
        e = self.as_expr(v, pos)
        if isinstance(v, (tuple, list)):
            raise _Err(f"{tok}: argument {a.name!r} must be a Relax value, not a list; got {_describe(v)}", pos)
        return e

    def op_call(self, op, tok, args, kwargs, pos):
        if op.schema is not None:
            return self.schema_call(op, tok, args, kwargs, pos)
        lo, hi = op.n_args
        n_attr = len(op.attr_names)
        if hi is not None and len(args) > hi:
            extra = args[hi:]
            args = args[:hi]
            if len(extra) > n_attr:
                raise _Err(
                    f"{tok} takes at most {hi} arguments"
                    + (f" and {n_attr} attributes" if n_attr else "")
                    + f"; got {hi + len(extra)}",
                    pos,
                )
            attrs = {}
            for k, v in zip(op.attr_names, extra):
                attrs[k] = _attr_value(v)
        else:
            attrs = {}
        ty_args = ()
        for k, v in kwargs.items():
            if k in ("ty_args", "sinfo_args"):
                ty_args = self.types_of(v, pos)
            elif k in attrs:
                raise _Err(f"{tok}: attribute {k!r} given twice", pos)
            else:
                attrs[k] = _attr_value(v)
        if len(args) < lo:
            want = f"{lo}" if lo == hi else (f"{lo} to {hi}" if hi is not None else f"at least {lo}")
            raise _Err(f"{tok} takes {want} arguments; got {len(args)}", pos)
        fill = _DEFAULT_ARGS.get(op.name)
        if fill is not None and len(args) < len(fill):
            args = list(args) + [None] * (len(fill) - len(args))
        conv = _ARG_KINDS.get(op.name)
        exprs = []
        as_expr = self.as_expr
        for i, a in enumerate(args):
            if a is None and fill is not None and i < len(fill) and fill[i] is not None:
                exprs.append(fill[i]())
                continue
            kind = conv[i] if conv is not None and i < len(conv) else None
            if kind is not None and type(a) is str:
                exprs.append(DataTypeImm(a) if kind == "dtype" else StringImm(a))
            else:
                exprs.append(as_expr(a, pos))
        if op.name == "relax.builtin.alloc_tensor" and len(exprs) >= 2:
            ty_args = self.alloc_ty_args(exprs, ty_args, pos)
        return Call(op, exprs, attrs, ty_args)

    def alloc_ty_args(self, args, ty_args, pos):
        """``ty_args`` of ``R.builtin.alloc_tensor``: as written, else the binding
        annotation (as CallTIRRewrite makes them), else the shape and dtype arguments'
        tensor. Written or annotated types that contradict those arguments are refused."""
        own = builtin_alloc_own_type(args[0], args[1])
        if ty_args:
            what, why = "its ty_args", type_contradiction(ty_args[0], own)
        else:
            what = "the annotation"
            implied, why = builtin_alloc_implied_type(own, self.ann if self.depth == 0 else None)
            ty_args = (implied,)
        if why is not None:
            raise _Err(f"R.builtin.alloc_tensor: the type given by {what} contradicts its shape and dtype "
                       f"arguments: {why}", pos)
        return ty_args

    def types_of(self, v, pos):
        if isinstance(v, (tuple, list)):
            return tuple(self.as_type(x, pos) for x in v)
        return (self.as_type(v, pos),)

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

    def as_type(self, v, pos):
        if isinstance(v, Type):
            return v
        t = type(v)
        if t is _Bare:
            name = v.name
            if name == "R.Tensor":
                return TensorType()
            if name == "R.Tuple":
                return VOID
            if name == "R.Shape":
                return ShapeType(None, -1)
            if name in ("R.Object", "R.Any"):
                return _OBJECT
            if name == "R.Callable":
                return FuncType(None, None, False)
            if name.startswith("T."):
                return PrimType(name[2:])
        if v is None:
            return VOID
        raise _Err(f"expected a type annotation; got {_describe(v)}", pos)

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

    # ================================================================== annotations
    def parse_type_text(self, text, col):
        """A type annotation from its text (cached by text)."""
        hit = self.global_type_cache.get(text)
        if hit is not None:
            return hit
        hit = self.func_type_cache.get(text)
        if hit is not None:
            return hit
        self.set_segment(text, col)
        self.used_prim = False
        self.ann = None
        v = self.expr()
        self.at_end()
        ty = self.as_type(v, 0)
        if self.used_prim:
            self.func_type_cache[text] = ty
        else:
            self.global_type_cache[text] = ty
        return ty

    # ================================================================== module level
    def parse_module(self):
        raw = self.raw
        n = len(raw)
        i = 0
        result = None
        while i < n:
            line = raw[i]
            stripped = line.strip()
            if not stripped or stripped[0] == "#":
                i += 1
                continue
            lineno = i + 1
            indent = len(line) - len(line.lstrip(" \t"))
            here = _Line(indent, strip_comment(stripped).rstrip(), lineno, indent + 1)
            self.cur = here
            if indent != 0:
                raise self.error("unexpected indentation at module level")
            if result is not None:
                raise self.error("unexpected text after the module")
            m = _TYPEVAR_RE.match(here.text)
            if m is not None:
                if m.group(1) != m.group(3):
                    raise self.error(f"TypeVar binding {m.group(1)!r} must match its declared name {m.group(3)!r}")
                if m.group(1) in RESERVED_NAMES:
                    raise self.error(_reserved_prim_message(m.group(1)))
                self.typevars.add(m.group(1))
                i += 1
                continue
            if here.text.startswith("@"):
                dec = self.decorator(here)
                if dec == "I.ir_module":
                    i, result = self.ir_module(i + 1)
                    continue
                if dec in ("R.function", "T.prim_func"):
                    k = i + 1
                    while k < n and (not raw[k].strip() or raw[k].strip()[0] in "#@"):
                        k += 1
                    end = self.block_end(k + 1, 0)
                    gname, func = self.function(i, end, 0, bare=True)
                    result = IRModule({gname: func})
                    i = end
                    continue
                raise self.error(f"unsupported decorator {here.text!r}; expected @I.ir_module, @R.function or @T.prim_func")
            if here.text.startswith("import ") or here.text.startswith("from "):
                raise self.error("import statements are not supported; the printed header is a comment")
            raise self.error("expected @I.ir_module, @R.function or @T.prim_func")
        if result is None:
            raise ParseError("no module or function found (the text is empty or only comments)", max(n, 1), 1, "")
        return result

    def decorator(self, line):
        """Name of a decorator line (``@R.function(pure=False)`` -> ``"R.function"``)."""
        text = line.text
        m = re.match(r"@[ \t]*([A-Za-z_][A-Za-z_0-9.]*)", text)
        if m is None:
            raise self.error("malformed decorator", line)
        return m.group(1)

    def decorator_kwargs(self, line, allowed):
        text = line.text
        m = re.match(r"@[ \t]*([A-Za-z_][A-Za-z_0-9.]*)", text)
        rest = text[m.end():]
        if not rest.strip():
            return {}
        self.cur = line
        self.set_segment(rest, line.col + m.end())
        if self.peek() != "(":
            raise self.error(f"unexpected {_tok(self.peek())} after the decorator name", line, self._token_col(0))
        try:
            args, kwargs = self.call_args()
            self.at_end()
        except _Err as e:
            raise self._located(e)
        if args:
            raise self.error("decorator arguments must be keywords", line)
        for k, v in kwargs.items():
            if k not in allowed:
                raise self.error(f"unsupported decorator argument {k!r}", line)
            if not isinstance(v, bool):
                raise self.error(f"decorator argument {k!r} must be True or False", line)
        return kwargs

    def block_end(self, i, indent):
        """First physical line index >= i whose indentation is <= ``indent`` (blank and
        comment lines never end a block)."""
        raw = self.raw
        n = len(raw)
        if not self.has_tabs:
            if i >= n:
                return n
            if self.offsets is None:
                offs = [0]
                acc = 0
                for line in raw:
                    acc += len(line) + 1
                    offs.append(acc)
                self.offsets = offs
            pat = _END_RES.get(indent)
            if pat is None:
                pat = _END_RES[indent] = re.compile(r"^ {0,%d}[^ \n#]" % indent, re.M)
            m = pat.search(self.text, self.offsets[i])
            if m is None:
                return n
            return bisect.bisect_right(self.offsets, m.start()) - 1
        while i < n:
            line = raw[i]
            stripped = line.lstrip(" \t")
            if stripped and stripped[0] != "#" and stripped.strip():
                if "\t" in line[: len(line) - len(stripped)]:
                    ind = len(line[: len(line) - len(stripped)].expandtabs(8))
                else:
                    ind = len(line) - len(stripped)
                if ind <= indent:
                    return i
            i += 1
        return n

    def ir_module(self, i):
        raw = self.raw
        n = len(raw)
        # class line
        while i < n and (not raw[i].strip() or raw[i].strip()[0] == "#"):
            i += 1
        if i >= n:
            raise ParseError("unexpected end of input: a class definition was expected after @I.ir_module", n, 1, "")
        line = raw[i]
        text = strip_comment(line.strip()).rstrip()
        here = _Line(0, text, i + 1, 1)
        self.cur = here
        m = _CLASS_RE.match(text)
        if m is None or line[0] in " \t":
            raise self.error("expected 'class Module:' after @I.ir_module")
        class_name = m.group(1)
        end = self.block_end(i + 1, 0)
        # module body items
        items = []  # (start, end, indent)
        j = i + 1
        body_indent = None
        attrs = {}
        global_infos = {}
        while j < end:
            line = raw[j]
            stripped = line.strip()
            if not stripped or stripped[0] == "#":
                j += 1
                continue
            ind = len(line.expandtabs(8)) - len(line.expandtabs(8).lstrip(" "))
            text = strip_comment(stripped).rstrip()
            here = _Line(ind, text, j + 1, ind + 1)
            self.cur = here
            if body_indent is None:
                body_indent = ind
            if ind != body_indent:
                raise self.error(f"unexpected indentation (expected {body_indent} spaces)")
            if text.startswith("@"):
                k = j + 1
                while k < end and (not raw[k].strip() or raw[k].strip()[0] in "#@"):
                    k += 1
                fend = self.block_end(k + 1, body_indent)
                items.append((j, fend))
                j = fend
                continue
            if text.startswith("I.module_attrs(") or text.startswith("I.module_global_infos("):
                lines = self.logical_lines(j, self.block_end(j + 1, body_indent))
                ln = lines[0]
                self.cur = ln
                value = self.eval_line_expr(ln, ln.text, ln.col)
                if ln.text.startswith("I.module_attrs("):
                    attrs = value
                else:
                    global_infos = value
                j = self.block_end(j + 1, body_indent)
                continue
            if text == "pass":
                j += 1
                continue
            if text.startswith("def "):
                raise self.error("a function needs a decorator (@R.function or @T.prim_func)")
            raise self.error("expected a decorated function in the module class")
        # pre-declare every function name (functions may call ones defined later)
        self.cls_names = {class_name}
        decls = []
        for start, fend in items:
            name, kind = self.peek_def(start, fend)
            if name in self.gvars:
                raise self.error(f"duplicate function name {name!r} in the module")
            self.gvars[name] = GlobalVar(name)
            self.func_kinds[name] = kind
            decls.append((start, fend))
        functions = {}
        # PrimFuncs first: Relax calls to them are typed by looking them up
        order = sorted(range(len(decls)), key=lambda k: 0 if self.func_kinds[self._decl_name(decls[k])] == "T" else 1)
        parsed = {}
        for k in order:
            start, fend = decls[k]
            gname, func = self.function(start, fend, body_indent, bare=False)
            parsed[k] = (gname, func)
            self.funcs[gname] = func
        for k in range(len(decls)):
            gname, func = parsed[k]
            functions[self.gvars[gname]] = func
        mod = IRModule(functions, attrs if isinstance(attrs, dict) else {}, global_infos if isinstance(global_infos, dict) else {})
        return end, mod

    def _decl_name(self, decl):
        return self.peek_def(*decl)[0]

    def peek_def(self, start, end):
        """(function name, "R" or "T") of the decorated function at ``start``."""
        raw = self.raw
        j = start
        kind = None
        while j < end:
            s = raw[j].strip()
            if s.startswith("@"):
                dec = self.decorator(_Line(0, s, j + 1, 1))
                if dec == "R.function":
                    kind = "R"
                elif dec == "T.prim_func":
                    kind = "T"
                else:
                    self.cur = _Line(0, s, j + 1, 1)
                    raise self.error(f"unsupported decorator {s!r}")
            elif s and s[0] != "#":
                break
            j += 1
        self.cur = _Line(0, raw[j].strip() if j < len(raw) else "", j + 1, 1)
        m = re.match(r"[ \t]*def[ \t]+([A-Za-z_][A-Za-z_0-9]*)[ \t]*\(", raw[j] if j < len(raw) else "")
        if m is None or kind is None:
            raise self.error("expected 'def name(...)' after the decorator")
        return m.group(1), kind

    # ================================================================== functions
    def function(self, start, end, indent, bare):
        raw = self.raw
        # decorators
        j = start
        decorators = []
        while j < end:
            s = raw[j].strip()
            if s.startswith("@"):
                ind = len(raw[j]) - len(raw[j].lstrip(" \t"))
                decorators.append(_Line(ind, strip_comment(s).rstrip(), j + 1, ind + 1))
            elif s and s[0] != "#":
                break
            j += 1
        if j >= end:
            raise self.error("unexpected end of input: 'def' expected after the decorator", decorators[-1])
        dec = decorators[-1]
        kind = self.decorator(dec)
        if bare and kind == "R.function":
            self.cls_names = set()
        if kind == "T.prim_func":
            return self.prim_func(start, end, decorators)
        if kind != "R.function":
            self.cur = dec
            raise self.error(f"unsupported decorator {dec.text!r}")
        return self.relax_func(j, end, decorators, indent, bare)

    def signature_lines(self, j, end):
        """The logical def line starting at physical line ``j`` and the next physical index."""
        raw = self.raw
        line = raw[j]
        ind = len(line) - len(line.lstrip(" \t"))
        text = strip_comment(line.strip()).rstrip()
        k = j + 1
        depth = _balance(text)
        while depth > 0 and k < end:
            nxt = strip_comment(raw[k].strip()).rstrip()
            k += 1
            if nxt:
                text += " " + nxt
                depth += _balance(nxt)
        here = _Line(ind, text, j + 1, ind + 1)
        if depth != 0:
            self.cur = here
            raise self.error("unbalanced brackets in the function signature")
        return here, k

    def def_header(self, here):
        """Tokens of ``def name(params) -> ret:``; returns (name, [(pname, ann tokens start, end)], ret range)."""
        self.cur = here
        toks = self.set_segment(here.text, here.col)
        if len(toks) < 4 or toks[0] != "def" or toks[2] != "(":
            raise self.error("expected 'def name(...):'", here)
        name = toks[1]
        if not _NAME_RE.match(name):
            raise self.error(f"invalid function name {name!r}", here, self._token_col(1))
        if toks[-1] != ":":
            raise self.error("expected ':' at the end of the function signature", here, self._token_col(len(toks) - 1))
        params, close = parameter_spans(toks)
        if close is None:
            raise self.error("unbalanced brackets in the function signature", here)
        ret = None
        rest = toks[close + 1: -1]
        if rest:
            if rest[0] != "->" or len(rest) < 2:
                raise self.error(f"unexpected {_tok(rest[0])} after the parameter list", here, self._token_col(close + 1))
            ret = (close + 2, len(toks) - 1)
        return name, params, ret

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

    def relax_func(self, j, end, decorators, indent, bare):
        dec = decorators[-1]
        kwargs = self.decorator_kwargs(dec, ("pure", "private", "check_well_formed"))
        here, body_start = self.signature_lines(j, end)
        # fresh per-function state
        self.scope = {}
        self.prims = {}
        self.func_type_cache = {}
        self.log = []
        self.dataflow_outputs = None
        name, params, ret = self.def_header(here)
        if bare:
            self.cls_names = set()
        body_lines = self.logical_lines(body_start, end)
        # prelude: symbolic declarations are visible in the signature (TVM's prelude rule)
        for ln in body_lines:
            m = _ASSIGN_RE.match(ln.text)
            if m is None:
                break
            if m.group(2) is None and _DECL_RE.match(m.group(3)):
                dt = _DECL_RE.match(m.group(3)).group(1)
                if m.group(1) not in self.prims:
                    self.prims[m.group(1)] = PrimVar(m.group(1), dt)
                continue
            if m.group(3) == "T.int64()" or m.group(1) == "cls":
                continue
            break
        toks = self.toks
        param_vars = []
        self.sig_mode = True
        try:
            for a, b in params:
                if b - a < 3 or not _NAME_RE.match(toks[a]) or toks[a + 1] != ":":
                    raise _Err("a parameter must be written 'name: type'", a)
                pname = toks[a]
                if pname in self.scope:
                    raise _Err(f"duplicate parameter name {pname!r}", a)
                ty = self.as_type(self.eval_tokens(toks, a + 2, b), a + 2)
                v = Var(pname, ty)
                self.scope[pname] = v
                param_vars.append(v)
            ret_ty = None
            if ret is not None:
                ret_ty = self.as_type(self.eval_tokens(toks, ret[0], ret[1]), ret[0])
        except _Err as e:
            raise self._located(e)
        except (IRError, ValueError, TypeError) as e:
            raise self._located(e)
        finally:
            self.sig_mode = False
        if not body_lines:
            raise self.error(f"function {name!r} has no body", here)
        body_indent = body_lines[0].indent
        if body_indent <= here.indent:
            raise self.error("expected an indented function body", body_lines[0])
        attrs = {}
        blocks, body = self.seq(body_lines, 0, len(body_lines), body_indent, 1, attrs_out=attrs)
        is_pure = kwargs.get("pure", True)
        if not kwargs.get("private", False) and "global_symbol" not in attrs:
            attrs["global_symbol"] = name
        body_ty = value_type(body)
        if ret_ty is not None:
            ret_ty = refine_annotation(ret_ty, body_ty)
        elif body_ty is not None:  # TVM's Function constructor: the body's type, well-defined in the signature
            ret_ty = erase_to_well_defined(body_ty, signature_prim_names(param_vars))
        func = Function(param_vars, SeqExpr(blocks, body), ret_ty, attrs, is_pure)
        return name, func

    # ---------------------------------------------------------------- statements
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
                    raise self._located(e)
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
                    raise self.error("an 'if' needs an 'else:' branch at the same indentation", lines[j] if j < b else ln)
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
            raise self.error(f"an if branch must end with an assignment to {result_name!r}", lines[b - 1] if b > a else self.cur)
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

    def eval_line_expr(self, ln, text, col):
        self.cur = ln
        try:
            self.set_segment(text, col)
            self.ann = None
            v = self.expr()
            self.at_end()
            return v
        except Exception as e:  # noqa: BLE001
            raise self._located(e)

    def define(self, name, var, ln):
        if name in self.scope:
            raise self.error(f"duplicate definition of {name!r} (a variable of this name is already defined)", ln)
        self.scope[name] = var
        self.log.append(name)

    def assignment_parts(self, ln, m):
        """(annotation type or None, value) of an assignment matched by _ASSIGN_RE."""
        name, ann_text, value_text = m.group(1), m.group(2), m.group(3)
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
            raise self._located(e)

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
                raise self._located(e)
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
                raise self._located(e)
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
                    from .infer import _check_call_args

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
                from .infer import infer_type

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
            from .infer import infer_type

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
            raise self._located(e)
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
                from .infer import join_types

                ty = join_types(t0, t1)
            else:
                ty = t0 or t1
        try:
            value = If(cond, branches[0], branches[1], ty)
        except IRError as e:
            raise self._located(e)
        var = self.new_var(result, ty, ln)
        return VarBinding(var, value)

    # ================================================================== PrimFuncs
    def prim_func(self, start, end, decorators):
        """A PrimFunc: its text (decorator to last non-blank body line, dedented) is read by
        :func:`~memcore_py.ir.prim_func_text.read_prim_func`; its errors are located here."""
        raw = self.raw
        last = end
        while last > start and not raw[last - 1].strip():
            last -= 1
        # the decorator's column with tabs expanded (Python's rule, as for every line below)
        dec = raw[decorators[0].lineno - 1].expandtabs(8)
        base = len(dec) - len(dec.lstrip(" "))
        text_lines = []
        for k in range(start, last):
            line = raw[k].rstrip("\r")
            if not line.strip():
                text_lines.append("")
                continue
            if "\t" in line:
                line = line.expandtabs(8)
            if len(line) - len(line.lstrip(" ")) >= base:
                text_lines.append(line[base:].rstrip())
            else:
                text_lines.append(line.strip())
        for k, line in enumerate(text_lines):
            if not line.isascii():  # names are ASCII, as in the Relax part (strings may hold any text)
                for tok in _tokenize(strip_comment(line)):
                    if tok[0] not in "\"'" and not tok.isascii():
                        raise ParseError(f"non-ASCII name or character {tok!r} is not supported", start + k + 1,
                                         1, raw[start + k].rstrip("\r"))
        try:
            return read_prim_func("\n".join(text_lines) + "\n", self.typevars)
        except ParseError as e:
            lineno = start + max(e.line, 1)
            src = raw[lineno - 1].rstrip("\r") if lineno <= len(raw) else ""
            lead = len(src.expandtabs(8)) - len(src.expandtabs(8).lstrip(" "))
            raise ParseError(e.msg, lineno, max(e.column, 1) + min(lead, base), src) from None


def _reserved_prim_message(name: str) -> str:
    return (f"symbolic var {name!r} has a name the printed text uses itself (a module alias, "
            f"a header name or a Python keyword); rename it")


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


# ------------------------------------------------------------------------------ helpers
def _describe(v) -> str:
    if isinstance(v, (Var, GlobalVar)):
        return f"{type(v).__name__} {v.name!r}"
    if isinstance(v, Expr):
        return type(v).__name__
    if isinstance(v, Type):
        return f"the type {type(v).__name__}"
    if isinstance(v, PrimExpr):
        return f"the symbolic expression {v!r}"
    if type(v) is _Bare:
        return v.name
    if v is _META_ROOT or type(v) is _MetaKey:
        return "an incomplete metadata reference"
    if type(v) is _Decl:
        return f"T.{v.dtype}() (a declaration)"
    if type(v) is _MatchCastPair:
        return "R.match_cast(...) (only valid as a whole binding value)"
    return f"{type(v).__name__} {v!r}"


#: Parser-internal values (a bare name, a half-written reference, ...): never attribute values.
_INTERNAL_VALUES = (_Bare, _MetaRoot, _MetaKey, _Decl, _MatchCastPair, _ClsRef)


#: The metadata key of an integer beyond int64 in TVM's text (not an array: refused).
_META_BIG_INT = "ffi.BigInt"


def _attr_value(v):
    """Attribute values: lists become tuples (recursively); other values as parsed. A value
    that is not an IR value (``foo=R.Any``: a bare name, which TVM's parser keeps as the
    Python function of that name) is refused here, and so is a type that is printed as a
    bare name (``foo=R.Tensor()`` prints ``foo=R.Tensor``), so that what parses can be
    printed and read back (:func:`~memcore_py.ir.prim_func_text.type_spelled_bare`)."""
    t = type(v)
    if t is list or t is tuple:
        return tuple(_attr_value(x) for x in v)
    if t is dict:
        return {k: _attr_value(x) for k, x in v.items()}
    if isinstance(v, _INTERNAL_VALUES) or v is _META_ROOT:
        raise _Err(f"{_describe(v)} is not an attribute value", None)
    if isinstance(v, Type) and type_spelled_bare(v):
        raise _Err(f"the type {v!r} is not an attribute value (TVMScript spells it as a bare name, which reads "
                   "back as a function)", None)
    return v


def _as_array(x):
    if isinstance(x, np.ndarray):
        return x
    try:
        if hasattr(x, "numpy"):
            return np.asarray(x.numpy())
        return np.asarray(x)
    except Exception:  # noqa: BLE001
        return None


def _constant(arr):
    return Constant(arr, TensorType(tuple(int(d) for d in arr.shape), str(arr.dtype)))


_NONFINITE = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan, "+inf": math.inf}


def _const_data(v, dtype, pos):
    if type(v) is str:
        if v in _NONFINITE:
            v = _NONFINITE[v]
        else:
            raise _Err(f"R.const: unsupported value {v!r}", pos)
    if dtype is None:
        if isinstance(v, bool):
            dtype = "bool"
        elif isinstance(v, int):
            dtype = "int32"
        elif isinstance(v, float):
            dtype = "float32"
        else:
            dtype = "float32"
    if dtype not in DTYPE_NAMES or dtype == "handle" or dtype in ("int4", "uint4", "bfloat16", "float8_e4m3fn", "float8_e5m2"):
        raise _Err(f"R.const: unsupported dtype {dtype!r}", pos)

    def fix(x):
        if isinstance(x, list):
            return [fix(y) for y in x]
        if type(x) is str:
            if x in _NONFINITE:
                return _NONFINITE[x]
            raise _Err(f"R.const: unsupported value {x!r}", pos)
        if isinstance(x, (int, float, bool)):
            return x
        raise _Err(f"R.const: values must be numbers; got {_describe(x)}", pos)

    v = fix(v)
    try:
        with np.errstate(all="ignore"):
            arr = np.array(v, dtype=dtype)
    except (ValueError, OverflowError, TypeError) as e:
        raise _Err(f"R.const: {e}", pos) from None
    if arr.dtype == object:
        raise _Err("R.const: ragged nested lists", pos)
    return arr


# ------------------------------------------------------------------------------ cloning
def _clone(e):
    """A fresh copy of a variable-free value. Cached values are never shared between
    bindings (passes key nodes by identity); types, PrimExprs, attrs and arrays are
    immutable and shared. Nodes were validated when first built, so copies are made
    unchecked (:mod:`memcore_py.ir.construct`)."""
    return _CLONE[type(e)](e)


def _clone_call(e):
    op = e.op
    if type(op) is ExternFunc:
        op = shallow_copy(op)
    return new_call(op, tuple([_CLONE[type(a)](a) for a in e.args]), e.attrs, e.ty_args, e.ty)


def _clone_tuple(e):
    return new_tuple(tuple([_clone(f) for f in e.fields]), e.ty)


def _clone_get_item(e):
    return new_tuple_get_item(_clone(e.tuple_value), e.index, e.ty)


#: Bound on cached value templates (a module with endless distinct lines stops caching).
_MAX_TEMPLATES = 50000


def _substitute(e, mapping):
    """A fresh copy of a parsed value with its Relax variables replaced (``mapping``: old
    var -> new var). Tuples and get-items are rebuilt through their constructors, so their
    types follow the new variables (and a get-item index is checked again)."""
    t = type(e)
    if t is Var or t is DataflowVar:
        return mapping.get(e, e)
    if t is Call:
        op = e.op
        top = type(op)
        if top is Var or top is DataflowVar:
            op = mapping.get(op, op)
        elif top is ExternFunc:
            op = shallow_copy(op)
        return new_call(op, tuple([_substitute(a, mapping) for a in e.args]), e.attrs, e.ty_args, e.ty)
    if t is Tuple:
        return Tuple([_substitute(f, mapping) for f in e.fields])
    if t is TupleGetItem:
        return TupleGetItem(_substitute(e.tuple_value, mapping), e.index)
    if t is _MatchCastPair:
        return _MatchCastPair(_substitute(e.value, mapping), e.ty)
    if t is GlobalVar:
        return e
    return _CLONE[t](e)


_CLONE = {
    Call: _clone_call,
    Tuple: _clone_tuple,
    ShapeExpr: shallow_copy,
    PrimValue: shallow_copy,
    StringImm: shallow_copy,
    DataTypeImm: shallow_copy,
    Constant: shallow_copy,
    ExternFunc: shallow_copy,
    GlobalVar: lambda e: e,
    TupleGetItem: _clone_get_item,
}


# ------------------------------------------------------------------------------ handlers
def _no_more(kwargs, tok, pos):
    if kwargs:
        raise _Err(f"{tok}: unexpected keyword argument {next(iter(kwargs))!r}", pos)


#: Interned static TensorTypes (types are immutable; sharing them is the point).
_STATIC_TENSOR_TYPES = {}


def _h_tensor(p, args, kwargs, pos):
    kwargs = dict(kwargs)
    shape = kwargs.pop("shape", None)
    dtype = kwargs.pop("dtype", None)
    vdevice = kwargs.pop("vdevice", None)
    ndim = kwargs.pop("ndim", None)
    _no_more(kwargs, "R.Tensor", pos)
    args = list(args)
    if args and type(args[0]) is str and shape is None:
        if dtype is not None:
            raise _Err("R.Tensor: dtype given twice", pos)
        dtype = args.pop(0)
    elif args:
        shape = args.pop(0) if shape is None else shape
    if args:
        if dtype is None:
            dtype = args.pop(0)
    if args:
        if vdevice is None:
            vdevice = args.pop(0)
    if args:
        if ndim is None:
            ndim = args.pop(0)
    if args:
        raise _Err("R.Tensor takes at most 4 arguments", pos)
    if dtype is not None and type(dtype) is not str:
        raise _Err(f"R.Tensor: dtype must be a string; got {_describe(dtype)}", pos)
    if dtype is not None and dtype not in DTYPE_NAMES:
        from .types import check_dtype

        try:
            check_dtype(dtype)
        except IRError:
            raise _Err(f"R.Tensor: unknown dtype {dtype!r}", pos) from None
    if ndim is None:
        ndim = -1
    if type(ndim) is not int:
        raise _Err(f"R.Tensor: ndim must be an integer; got {_describe(ndim)}", pos)
    if vdevice is not None and type(vdevice) is not str:
        raise _Err(f"R.Tensor: vdevice must be a string; got {_describe(vdevice)}", pos)
    if shape is not None:
        if not isinstance(shape, (tuple, list)):
            raise _Err(f"R.Tensor: shape must be a tuple or list; got {_describe(shape)}", pos)
        if all(type(d) is int for d in shape):
            # static shape: interned, so annotations and ty_args share one object
            key = (tuple(shape), dtype, vdevice, ndim)
            hit = _STATIC_TENSOR_TYPES.get(key)
            if hit is None:
                if ndim not in (-1, len(shape)):
                    raise _Err(f"R.Tensor: ndim={ndim} does not match a shape of rank {len(shape)}", pos)
                hit = TensorType(tuple(IntImm(d) for d in shape), dtype or "", -1, vdevice)
                if len(_STATIC_TENSOR_TYPES) < 100000:
                    _STATIC_TENSOR_TYPES[key] = hit
            return hit
        dims = tuple(p.as_dim(d, pos) for d in shape)
        if ndim not in (-1, len(dims)):
            raise _Err(f"R.Tensor: ndim={ndim} does not match a shape of rank {len(dims)}", pos)
        return TensorType(dims, dtype or "", -1, vdevice)
    if ndim < -1:
        raise _Err(f"R.Tensor: ndim must be >= -1; got {ndim}", pos)
    return TensorType(None, dtype or "", ndim, vdevice)


def _h_tuple_type(p, args, kwargs, pos):
    _no_more(dict(kwargs), "R.Tuple", pos)
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        args = args[0]
    return TupleType([p.as_type(a, pos) for a in args])


def _h_shape_type(p, args, kwargs, pos):
    kwargs = dict(kwargs)
    values = kwargs.pop("values", None)
    ndim = kwargs.pop("ndim", None)
    _no_more(kwargs, "R.Shape", pos)
    args = list(args)
    if args and values is None:
        values = args.pop(0)
    if args and ndim is None:
        ndim = args.pop(0)
    if args:
        raise _Err("R.Shape takes at most 2 arguments", pos)
    if ndim is None:
        ndim = -1
    if type(ndim) is not int or ndim < -1:
        raise _Err(f"R.Shape: ndim must be an integer >= -1; got {_describe(ndim)}", pos)
    if values is not None:
        if not isinstance(values, (list, tuple)):
            raise _Err(f"R.Shape: values must be a list; got {_describe(values)}", pos)
        vals = tuple(p.as_dim(v, pos) for v in values)
        if ndim not in (-1, len(vals)):
            raise _Err(f"R.Shape: ndim={ndim} does not match {len(vals)} values", pos)
        return ShapeType(vals)
    return ShapeType(None, ndim)


def _h_prim_type(p, args, kwargs, pos):
    kwargs = dict(kwargs)
    dtype = kwargs.pop("dtype", None)
    _no_more(kwargs, "R.Prim", pos)
    if args:
        if dtype is not None or len(args) != 1:
            raise _Err("R.Prim takes one dtype", pos)
        dtype = args[0]
    if type(dtype) is not str or dtype not in DTYPE_NAMES:
        raise _Err(f"R.Prim: unknown dtype {dtype!r}", pos)
    return PrimType(dtype)


def _h_object(p, args, kwargs, pos):
    if args or kwargs:
        raise _Err("R.Object()/R.Any() take no arguments", pos)
    return _OBJECT


def _h_callable(p, args, kwargs, pos):
    kwargs = dict(kwargs)
    params = kwargs.pop("params", None)
    ret = kwargs.pop("ret", None)
    purity = kwargs.pop("purity", None)
    kwargs.pop("derive_func", None)
    _no_more(kwargs, "R.Callable", pos)
    args = list(args)
    if args and params is None:
        params = args.pop(0)
    if args and ret is None:
        ret = args.pop(0)
    if args and purity is None:
        purity = args.pop(0)
    if args:
        raise _Err("R.Callable takes at most 3 arguments", pos)
    if params is not None:
        if not isinstance(params, (list, tuple)):
            params = [params]
        params = [p.as_type(x, pos) for x in params]
    ret_ty = p.as_type(ret, pos) if ret is not None else None
    if purity is None:
        purity = params is not None
    if type(purity) is not bool:
        raise _Err("R.Callable: purity must be True or False", pos)
    return FuncType(params, ret_ty, purity)


def _h_string_type(p, args, kwargs, pos):
    if args or kwargs:
        raise _Err("I.StringType() takes no arguments", pos)
    return _OBJECT


def _h_shape(p, args, kwargs, pos):
    if kwargs or len(args) != 1 or not isinstance(args[0], (list, tuple)):
        raise _Err("R.shape takes one list of dimensions", pos)
    return ShapeExpr([p.as_dim(d, pos) for d in args[0]])


def _h_prim_value(p, args, kwargs, pos):
    kwargs = dict(kwargs)
    dtype = kwargs.pop("dtype", None)
    _no_more(kwargs, "R.prim_value", pos)
    if len(args) != 1:
        raise _Err("R.prim_value takes one value", pos)
    v = args[0]
    if type(v) is int:
        if dtype is not None and type(dtype) is str and dtype.startswith("float"):
            return PrimValue(FloatImm(float(v), dtype))
        return PrimValue(IntImm(v, dtype or "int64"))
    if type(v) is bool:
        return PrimValue(IntImm(int(v), "bool"))
    if type(v) is float:
        return PrimValue(FloatImm(v, dtype or "float64"))
    if isinstance(v, PrimExpr):
        return PrimValue(v)
    raise _Err(f"R.prim_value takes a number or a symbolic expression; got {_describe(v)}", pos)


def _h_str(p, args, kwargs, pos):
    if kwargs or len(args) != 1 or type(args[0]) is not str:
        raise _Err("R.str takes one string", pos)
    return StringImm(args[0])


def _h_dtype(p, args, kwargs, pos):
    if kwargs or len(args) != 1 or type(args[0]) is not str:
        raise _Err("R.dtype takes one dtype string", pos)
    return DataTypeImm(args[0])


def _h_const(p, args, kwargs, pos):
    kwargs = dict(kwargs)
    value = kwargs.pop("value", None)
    dtype = kwargs.pop("dtype", None)
    _no_more(kwargs, "R.const", pos)
    args = list(args)
    if args and value is None:
        value = args.pop(0)
    if args and dtype is None:
        dtype = args.pop(0)
    if args or value is None:
        raise _Err("R.const takes a value and an optional dtype", pos)
    if dtype is not None and type(dtype) is not str:
        raise _Err(f"R.const: dtype must be a string; got {_describe(dtype)}", pos)
    return _constant(_const_data(value, dtype, pos))


def _h_tuple(p, args, kwargs, pos):
    if kwargs:
        raise _Err("R.tuple takes no keyword arguments", pos)
    return Tuple([p.as_expr(a, pos) for a in args])


def _h_extern(p, args, kwargs, pos):
    if kwargs or len(args) != 1 or type(args[0]) is not str:
        raise _Err("R.ExternFunc takes one symbol name", pos)
    return ExternFunc(args[0])


def _h_match_cast(p, args, kwargs, pos):
    if kwargs or len(args) != 2:
        raise _Err("R.match_cast takes a value and a type", pos)
    return _MatchCastPair(args[0], p.as_type(args[1], pos))


def _callee_symbol(v, pos, tok):
    if type(v) is str:
        return ExternFunc(v)
    if isinstance(v, (ExternFunc, GlobalVar, Var)):
        return v
    raise _Err(f"{tok}: the callee must be a function name string; got {_describe(v)}", pos)


def _h_call_packed(p, args, kwargs, pos):
    kwargs = dict(kwargs)
    if not args:
        raise _Err("R.call_packed needs a function name", pos)
    fn = args[0]
    if type(fn) is not str:
        raise _Err(f"R.call_packed: the function name must be a string; got {_describe(fn)}", pos)
    ty_args = ()
    for k in ("ty_args", "sinfo_args"):
        if k in kwargs:
            ty_args = p.types_of(kwargs.pop(k), pos)
    kwargs.pop("attrs_type_key", None)
    attrs = {k: _attr_value(v) for k, v in kwargs.items()}
    return Call(ExternFunc(fn), [p.as_expr(a, pos) for a in args[1:]], attrs, ty_args)


def _dps_args(p, v, pos, tok):
    if isinstance(v, (tuple, list)):
        return Tuple([p.as_expr(x, pos) for x in v])
    if isinstance(v, Expr):
        return v
    raise _Err(f"{tok}: the arguments must be a tuple; got {_describe(v)}", pos)


def _out_type(p, v, pos, tok):
    if isinstance(v, list):
        return TupleType([p.as_type(x, pos) for x in v])
    if v is None:
        raise _Err(f"{tok} needs out_ty=...", pos)
    return p.as_type(v, pos)


def _make_dps_handler(opname, tok, attr_names, callee_is_symbol):
    def handler(p, args, kwargs, pos):
        kwargs = dict(kwargs)
        args = list(args)
        if not args:
            raise _Err(f"{tok} needs a callee", pos)
        callee = args.pop(0)
        callee = _callee_symbol(callee, pos, tok) if callee_is_symbol else callee
        if not isinstance(callee, Expr):
            raise _Err(f"{tok}: the callee must be a module function (cls.f); got {_describe(callee)}", pos)
        call_args = kwargs.pop("args", None)
        if args:
            if call_args is not None:
                raise _Err(f"{tok}: args given twice", pos)
            call_args = args.pop(0)
        if call_args is None:
            raise _Err(f"{tok} takes (callee, args, out_ty=...)", pos)
        out = None
        for k in ("out_ty", "out_sinfo"):
            if k in kwargs:
                out = kwargs.pop(k)
        if args and out is None:
            out = args.pop(0)
        tir_vars = kwargs.pop("tir_vars", None)
        if args and tir_vars is None:
            tir_vars = args.pop(0)
        attrs = {}
        for name in attr_names:
            if name in kwargs:
                attrs[name] = _attr_value(kwargs.pop(name))
            elif args:
                attrs[name] = _attr_value(args.pop(0))
        if args:
            raise _Err(f"{tok}: too many arguments", pos)
        _no_more(kwargs, tok, pos)
        if "inplace_indices" in attrs:
            v = attrs["inplace_indices"]
            attrs["inplace_indices"] = (v,) if type(v) is int else v
        call_args_expr = _dps_args(p, call_args, pos, tok)
        exprs = [callee, call_args_expr]
        if tir_vars is not None:
            exprs.append(p.as_expr(tir_vars, pos) if not isinstance(tir_vars, (list, tuple)) else ShapeExpr([p.as_prim(d, pos) for d in tir_vars]))
        return Call(get_op(opname), exprs, attrs, (_out_type(p, out, pos, tok),))

    return handler


def _make_packed_op_handler(opname, tok, attr_names):
    def handler(p, args, kwargs, pos):
        kwargs = dict(kwargs)
        if not args:
            raise _Err(f"{tok} needs a function name", pos)
        callee = _callee_symbol(args[0], pos, tok)
        ty_args = ()
        for k in ("ty_args", "sinfo_args"):
            if k in kwargs:
                ty_args = p.types_of(kwargs.pop(k), pos)
        attrs = {}
        for name in attr_names:
            if name in kwargs:
                v = _attr_value(kwargs.pop(name))
                attrs[name] = (v,) if name == "inplace_indices" and type(v) is int else v
        _no_more(kwargs, tok, pos)
        return Call(get_op(opname), [callee] + [p.as_expr(a, pos) for a in args[1:]], attrs, ty_args)

    return handler


_MISSING = object()


def _arg_key(a):
    """A hashable key of a call argument that determines its part in the call's type: a
    variable by its (interned, per-function) type object, literal shapes, tuples and scalars
    by value; None when the argument cannot be keyed (nested calls, constants)."""
    t = type(a)
    if t is Var or t is DataflowVar:
        return ("v", id(a.ty)) if a.ty is not None else None
    if t is PrimValue:
        v = a.value
        return ("p", v.value, v.dtype) if type(v) is IntImm else None
    if t is ShapeExpr:
        vals = a.values
        return ("s",) + tuple(d.value for d in vals) if all(type(d) is IntImm for d in vals) else None
    if t is Tuple:
        keys = tuple(_arg_key(f) for f in a.fields)
        return None if None in keys else ("t",) + keys
    return None


def _op_type_key(call):
    """The key under which the type of a schema op's call is cached within one parse: the op,
    its arguments' keys and its attributes (None when something cannot be keyed). Calls with
    equal keys have equal types (the type rule reads nothing else)."""
    keys = tuple(_arg_key(a) for a in call.args)
    if None in keys:
        return None
    attrs = []
    for k, v in call.attrs.items():
        if type(v) not in (int, float, bool, str, tuple, type(None)):
            return None
        attrs.append((k, v))
    key = (call.op, keys, tuple(attrs))
    try:
        hash(key)
    except TypeError:  # an unhashable attribute value
        return None
    return key


def _h_call_tir_dyn(p, args, kwargs, pos):
    if kwargs or len(args) != 2:
        raise _Err("R.vm.call_tir_dyn takes (callee, args)", pos)
    callee = args[0]
    if not isinstance(callee, Expr):
        raise _Err(f"R.vm.call_tir_dyn: the callee must be a module function; got {_describe(callee)}", pos)
    return Call(get_op("relax.vm.call_tir_dyn"), [callee, _dps_args(p, args[1], pos, "R.vm.call_tir_dyn")])


def _h_assert_op(p, args, kwargs, pos):
    """``R.assert_op(cond, *format_args, format=R.str("..."))`` -> ``(cond, format, *format_args)``."""
    kwargs = dict(kwargs)
    if not args:
        raise _Err("R.assert_op needs a condition", pos)
    fmt = kwargs.pop("format", "")
    _no_more(kwargs, "R.assert_op", pos)
    if isinstance(fmt, str):
        fmt = StringImm(fmt)
    if not isinstance(fmt, StringImm):
        raise _Err(f"R.assert_op: format must be a string (R.str(...)); got {_describe(fmt)}", pos)
    return Call(get_op("relax.assert_op"), [p.as_expr(args[0], pos), fmt] + [p.as_expr(a, pos) for a in args[1:]])


def _h_min_max(name):
    def handler(p, args, kwargs, pos):
        if kwargs or len(args) != 2:
            raise _Err(f"{name} takes two values", pos)
        return min_max(name, args[0], args[1], lambda v, other: p.as_prim(v, pos, other))

    return handler


def _h_prim_call(name):
    def handler(p, args, kwargs, pos):
        if kwargs or len(args) != 2:
            raise _Err(f"{name} takes two values", pos)
        return prim_call(name, args[0], args[1], lambda v, other: p.as_prim(v, pos, other))

    return handler


def _h_not(p, args, kwargs, pos):
    if kwargs or len(args) != 1:
        raise _Err("T.Not takes one value", pos)
    return not_value(p.as_prim(args[0], pos))


def _h_cast(p, args, kwargs, pos):
    if kwargs or len(args) != 2:
        raise _Err("T.Cast takes a dtype and a value", pos)
    try:
        return cast_value(args[0], args[1], lambda v, other: p.as_prim(v, pos, other))
    except ValueError as e:
        raise _Err(str(e), pos) from None


def _h_select(name):
    def handler(p, args, kwargs, pos):
        if kwargs or len(args) != 3:
            raise _Err(f"{name} takes a condition and two values", pos)
        return select_value(name, *args, lambda v, other: p.as_prim(v, pos, other))

    return handler


def _h_vdevice(p, args, kwargs, pos):
    kwargs = dict(kwargs)
    args = list(args)
    target = kwargs.pop("target", args.pop(0) if args else None)
    vid = kwargs.pop("vdevice_id", args.pop(0) if args else 0)
    scope = kwargs.pop("memory_scope", args.pop(0) if args else "global")
    if args or kwargs:
        raise _Err("I.vdevice takes (target, vdevice_id, memory_scope)", pos)
    if type(vid) is not int or type(scope) is not str:
        raise _Err("I.vdevice: vdevice_id must be an int and memory_scope a string", pos)
    return VDevice(target, vid, scope)


def _h_module_dict(p, args, kwargs, pos):
    if kwargs or len(args) != 1 or not isinstance(args[0], dict):
        raise _Err("takes one dict", pos)
    return {k: _attr_value(v) for k, v in args[0].items()}


def _h_func_attr(p, args, kwargs, pos):
    if kwargs or len(args) != 1 or not isinstance(args[0], dict):
        raise _Err("takes one dict", pos)
    return {k: _attr_value(v) for k, v in args[0].items()}


def _h_not_here(name):
    def handler(p, args, kwargs, pos):
        raise _Err(f"{name}(...) is only valid as a statement of its own", pos)

    return handler


def _h_attention(p, args, kwargs, pos):
    """``R.nn.attention(query, key, value, bias=None, scale=None, causal_mask=None,
    window_size=None)``: TVM's wrapper builds ``relax.nn.attention_bias`` (four arguments) when
    a bias is given, else ``relax.nn.attention`` (three)."""
    args, kwargs = list(args), dict(kwargs)
    if len(args) > 3:
        if "bias" in kwargs:
            raise _Err("R.nn.attention: 'bias' given twice", pos)
        bias = args.pop(3)
    else:
        bias = kwargs.pop("bias", None)
    if bias is None:
        return p.op_call(get_op("relax.nn.attention"), "R.nn.attention", args, kwargs, pos)
    return p.op_call(get_op("relax.nn.attention_bias"), "R.nn.attention", args[:3] + [bias] + args[3:], kwargs, pos)


def _prim_value0():
    return PrimValue(IntImm(0))


def _global_scope():
    return StringImm("global")


#: Default values TVM's op wrappers fill in for trailing arguments.
_DEFAULT_ARGS = {
    "relax.builtin.alloc_tensor": (None, None, None, _global_scope),
    "relax.memory.alloc_tensor": (None, None, None, None, _prim_value0),
    "relax.vm.alloc_storage": (None, None, None, _global_scope),
    "relax.vm.alloc_tensor": (None, None, None, None, _prim_value0),
}

#: Which positional args are dtype / string (scope) when written as a bare string.
_ARG_KINDS = {
    "relax.builtin.alloc_tensor": (None, "dtype", None, "str"),
    "relax.memory.alloc_storage": (None, None, "str", "dtype"),
    "relax.memory.alloc_tensor": (None, None, None, "dtype", None),
    "relax.vm.alloc_storage": (None, None, "dtype", "str"),
    "relax.vm.alloc_tensor": (None, None, None, "dtype", None),
    "relax.memory.view": (None, None, "dtype", None),
}

#: Ops whose result type is their ``ty_args`` (used for unannotated bindings).
_TY_ARG_RESULT_OPS = frozenset(
    {
        "relax.call_tir", "relax.call_tir_inplace", "relax.call_tir_with_grad", "relax.call_dps_packed",
        "relax.call_pure_packed", "relax.call_inplace_packed", "relax.builtin.alloc_tensor",
    }
)

_HANDLERS = {
    "R.Tensor": _h_tensor,
    "R.Tuple": _h_tuple_type,
    "R.Shape": _h_shape_type,
    "R.Prim": _h_prim_type,
    "R.Object": _h_object,
    "R.Any": _h_object,
    "R.Callable": _h_callable,
    "I.StringType": _h_string_type,
    "R.shape": _h_shape,
    "R.prim_value": _h_prim_value,
    "R.str": _h_str,
    "R.dtype": _h_dtype,
    "R.const": _h_const,
    "R.tuple": _h_tuple,
    "R.ExternFunc": _h_extern,
    "R.match_cast": _h_match_cast,
    "R.call_packed": _h_call_packed,
    "R.call_tir": _make_dps_handler("relax.call_tir", "R.call_tir", (), False),
    "R.call_tir_inplace": _make_dps_handler("relax.call_tir_inplace", "R.call_tir_inplace", ("inplace_indices",), False),
    "R.call_tir_with_grad": _make_dps_handler(
        "relax.call_tir_with_grad", "R.call_tir_with_grad", ("te_grad_name", "te_grad_kwargs"), False
    ),
    "R.call_dps_packed": _make_dps_handler("relax.call_dps_packed", "R.call_dps_packed", (), True),
    "R.call_pure_packed": _make_packed_op_handler("relax.call_pure_packed", "R.call_pure_packed", ()),
    "R.call_inplace_packed": _make_packed_op_handler(
        "relax.call_inplace_packed", "R.call_inplace_packed", ("inplace_indices",)
    ),
    "R.vm.call_tir_dyn": _h_call_tir_dyn,
    "R.nn.attention": _h_attention,
    "R.assert_op": _h_assert_op,
    "T.min": _h_min_max("T.min"),
    "T.max": _h_min_max("T.max"),
    **{name: _h_prim_call(name) for name in PRIM_CALLS},
    "T.Not": _h_not,
    "T.Cast": _h_cast,
    "T.Select": _h_select("T.Select"),
    "T.if_then_else": _h_select("T.if_then_else"),
    "I.vdevice": _h_vdevice,
    "I.module_attrs": _h_module_dict,
    "I.module_global_infos": _h_module_dict,
    "R.func_attr": _h_func_attr,
    "R.output": _h_not_here("R.output"),
    "R.dataflow": _h_not_here("R.dataflow"),
}


# ------------------------------------------------------------------------------ API
def parse(text, metadata=None) -> IRModule:
    """Parse TVMScript (as Apache TVM 0.27 prints it) into an :class:`IRModule`.

    Parameters
    ----------
    text : str
        An ``@I.ir_module`` class, or a single ``@R.function`` / ``@T.prim_func`` (wrapped
        into a module under the function's name). UTF-8 ``bytes`` are accepted too.
    metadata : dict, optional
        ``{"relax.expr.Constant": [array, ...]}`` (any key): ``metadata[key][i]`` references
        in the text become constants with that data (and ``Constant.meta == (key, i)``).
        References to keys not given, or whose entry is None, stay references
        (``Constant.data`` None). TVM 0.27 prints tensor constants as
        ``metadata["ir.GenericConst"][i]``, numbered in order of appearance.

    Returns
    -------
    IRModule

    Raises
    ------
    ParseError
        For any malformed or unsupported input, with ``line``, ``column`` (1-based) and
        ``source_line`` set; see the module docstring for the accepted subset.

    Examples
    --------
    >>> mod = parse('''
    ... @R.function
    ... def main(x: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
    ...     y: R.Tensor((2, 3), dtype="float32") = R.add(x, x)
    ...     return y
    ... ''')
    >>> [gv.name for gv in mod.functions]
    ['main']
    """
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as e:
            before = bytes(text[: e.start])
            line = before.count(b"\n") + 1
            col = e.start - (before.rfind(b"\n") + 1) + 1
            raise ParseError(f"the text is not valid UTF-8 ({e.reason})", line, col, "") from None
    if not isinstance(text, str):
        raise ParseError(f"parse() takes TVMScript text (str); got {type(text).__name__}", 0, 0, "")
    if metadata is not None and not isinstance(metadata, dict):
        raise ParseError(f"metadata must be a dict of key -> list of arrays; got {type(metadata).__name__}", 0, 0, "")
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    p = _Parser(text, metadata)
    # Pause the cyclic GC: a parse allocates millions of acyclic objects and generational
    # collections would make it quadratic in the module size.
    with gc_paused():
        try:
            return p.parse_module()
        except ParseError:
            raise
        except Exception as e:  # noqa: BLE001 - the contract: only ParseError escapes
            raise p._located(e) from e
