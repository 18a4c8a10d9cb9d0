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
  copied. Otherwise the text is tokenized by one ``findall`` (:mod:`memcore_py.ir.text.lexer`,
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

Modules
-------
``parse`` and the module and function structure (decorators, ``class``, ``def``
signatures, PrimFunc extents) are here; ``_Parser`` is assembled from one mixin per job:

- :mod:`~memcore_py.ir.text.parse_core`: source lines, errors located in the source, the
  token stream, ``MAX_DEPTH``;
- :mod:`~memcore_py.ir.text.parse_values`: the parser-internal values and attribute values;
- :mod:`~memcore_py.ir.text.parse_expr`: expression atoms and conversions to Relax;
- :mod:`~memcore_py.ir.text.parse_prim`: the operator layers, PrimExpr operands, ``T.*`` calls;
- :mod:`~memcore_py.ir.text.parse_types`: type annotations;
- :mod:`~memcore_py.ir.text.parse_calls`: call dispatch, op calls and the Relax handlers;
- :mod:`~memcore_py.ir.text.parse_stmts`: statements, bindings, dataflow blocks, ``if``;
- :mod:`~memcore_py.ir.text.parse_cache`: copies and templates of cached values.
"""
from __future__ import annotations

import bisect
import re

from ...errors import IRError, ParseError
from .._util import gc_paused
from ..expr import Function, GlobalVar, SeqExpr, Var
from ..functor import value_type
from ..infer import erase_to_well_defined, signature_prim_names
from ..module import IRModule
from ..prim import PrimVar
from ..types import refine_annotation
from .lexer import strip_comment, tokenize as _tokenize
from .parse_calls import _Calls
from .parse_core import _NAME_RE, MAX_DEPTH, _Err, _Line, _balance, _reserved_prim_message, _SourceReader, _tok
from .parse_expr import _Expressions
from .parse_prim import _PrimExprs
from .parse_stmts import _ASSIGN_RE, _DECL_RE, _Statements
from .parse_types import _Annotations
from .prim_func_text import RESERVED_NAMES, parameter_spans, read_prim_func

__all__ = ["parse", "MAX_DEPTH"]


_END_RES = {}
_TYPEVAR_RE = re.compile(
    r"""([A-Za-z_][A-Za-z_0-9]*)[ \t]*=[ \t]*TypeVar\([ \t]*(["'])([A-Za-z_][A-Za-z_0-9]*)\2[ \t]*\)\Z"""
)
_CLASS_RE = re.compile(r"class[ \t]+([A-Za-z_][A-Za-z_0-9]*)[ \t]*(?:\([ \t]*\)[ \t]*)?:\Z")  # no two adjacent [ \t]*


# ------------------------------------------------------------------------------ parser
class _Parser(_Statements, _Calls, _Annotations, _Expressions, _PrimExprs, _SourceReader):
    """The parser of one text: its state, and the module and function structure."""

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
                raise self.error(
                    f"unsupported decorator {here.text!r}; expected @I.ir_module, @R.function or @T.prim_func"
                )
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
            raise self._located(e)  # noqa: B904 - _located sets the chain itself (the internal cause, or none)
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
        mod = IRModule(
            functions, attrs if isinstance(attrs, dict) else {}, global_infos if isinstance(global_infos, dict) else {}
        )
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
                raise self.error(
                    f"unexpected {_tok(rest[0])} after the parameter list", here, self._token_col(close + 1)
                )
            ret = (close + 2, len(toks) - 1)
        return name, params, ret

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
            raise self._located(e)  # noqa: B904 - _located sets the chain itself (the internal cause, or none)
        except (IRError, ValueError, TypeError) as e:
            raise self._located(e)  # noqa: B904 - _located sets the chain itself (the internal cause, or none)
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

    # ================================================================== PrimFuncs
    def prim_func(self, start, end, decorators):
        """A PrimFunc: its text (decorator to last non-blank body line, dedented) is read by
        :func:`~memcore_py.ir.text.prim_func_text.read_prim_func`; its errors are located here."""
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
