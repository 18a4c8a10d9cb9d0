"""What ``memcore plan FILE`` reads: the kind of each input, and models from PyTorch.

Design
------
:func:`input_kind` decides by name alone (no file is opened) how ``FILE`` is read:

=================  =========================================================================
``*.json[.gz]``    graph-executor JSON (:mod:`memcore_py.cli.plan_graph`)
``*.csv``          flat MiniMalloc problem ``id,lower,upper,size`` (:mod:`memcore_py.cli.plan_flat`)
``*.pt2``          ``torch.export.save`` archive (:func:`load_exported_program`)
``*.onnx``         ONNX model (:func:`~memcore_py.frontend.files.import_onnx_file`; the ``onnx`` extra)
``pkg.mod:func``   no such file, and the colon form of an importable callable returning
                   ``(nn.Module, example_inputs)`` (:func:`export_callable`)
anything else      TVMScript text (``-`` = stdin, ``*.gz`` decompressed)
=================  =========================================================================

An ONNX file is loaded with ``onnx.load`` and imported with
:func:`memcore_py.frontend.onnx_model.from_onnx` (initializers kept as parameters, shapes
inferred by ``onnx.shape_inference``; a ``dim_param`` dimension is a shape variable of that
name, which ``--bind`` takes). The two PyTorch forms end in the same place: :func:`import_model` loads or exports the
program, runs ``ep.run_decompositions()`` and imports it with
:func:`memcore_py.frontend.exported_program.from_exported_program` (weights kept as
parameters), giving the high-level module ``memcore plan`` lowers and plans like a TVMScript
text of TVM's importer. Each stage's wall time is recorded (:data:`STAGES`), so that the
report can tell torch's own work (loading or exporting, decomposing) from memcore's.

``--dynamic NAME=INPUT:DIM[:MIN[:MAX]]`` (:func:`parse_dynamic`) makes dimension ``DIM`` of the
example input ``INPUT`` (its position, or the name of its ``forward`` parameter) a
``torch.export.Dim`` named ``NAME``; one name given for several inputs is one symbol (torch
then checks those sizes are equal). torch names the symbol itself (``s77``) and the importer
keeps torch's name, as TVM's does; :func:`export_callable` reports which symbol each
``NAME`` became, so that ``--bind NAME=...`` works.

``--bound NAME=[MIN]:MAX`` (:func:`parse_bound`; ``MIN`` omitted: 0) bounds the symbolic
dimension ``NAME``: an ONNX file's ``dim_param`` (``from_onnx``'s ``dim_bounds``), a ``.pt2``
or ``module:function`` program's symbol (``s77``, or the ``--dynamic`` name;
``from_exported_program``'s ``dim_bounds``), or a TVMScript module's shape variable
(:func:`apply_bounds`: the ``tir_var_lower_bound`` / ``tir_var_upper_bound`` attributes of
every Relax function whose signature has it). A bound is intersected with the range the input
already records (a torch export's range constraints, the text's attributes): it narrows that
range and never widens it.

Every failure of the input is a typed :class:`~memcore_py.errors.MemcoreError`
(:class:`~memcore_py.errors.FrontendError` and its subclasses) naming the file or callable and
what is wrong, and a bad ``--dynamic`` a :class:`~._common.UsageError`. A torch error message
is cut to its first line (torch's messages run to dozens of lines of hints), and what torch
logs or prints to stderr while it fails is dropped (:func:`~memcore_py.frontend.files.quiet`); torch is imported only
for these two kinds.
"""
from __future__ import annotations

import importlib
import os
import re
import sys
import time

from ..errors import FrontendError, InputNotImplementedError
from ..frontend.files import (STAGES, DimBoundsError, import_decomposed, import_onnx_file, import_pt2,
                              load_exported_program, quiet, reason, require_torch_for)
from ._common import UsageError

__all__ = ["input_kind", "InputNotImplementedError", "DynamicDim", "parse_dynamic", "parse_bound", "apply_bounds",
           "load_exported_program", "export_callable", "import_model", "STAGES"]

_CALLABLE = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")


def input_kind(path) -> str:
    """How ``memcore plan`` reads ``path``: ``"graph-json"``, ``"csv"``, ``"pt2"``, ``"onnx"``,
    ``"callable"`` or ``"tvmscript"`` (module docstring; ``None`` = the shipped models is
    ``"tvmscript"``)."""
    if not isinstance(path, str):
        return "tvmscript"
    lower = path.lower()
    if lower.endswith((".json", ".json.gz")):
        return "graph-json"
    if lower.endswith(".csv"):
        return "csv"
    if lower.endswith(".pt2"):
        return "pt2"
    if lower.endswith(".onnx"):
        return "onnx"
    if _CALLABLE.match(path) and not os.path.exists(path):
        return "callable"
    return "tvmscript"


class DynamicDim:
    """One ``--dynamic`` item: dimension ``dim`` of example input ``input`` (an int position
    or a ``forward`` parameter name) is the symbol ``name`` in ``[min, max]`` (None: torch's
    default)."""

    __slots__ = ("name", "input", "dim", "min", "max")

    def __init__(self, name: str, input, dim: int, min=None, max=None):
        self.name, self.input, self.dim, self.min, self.max = name, input, dim, min, max

    def __repr__(self) -> str:
        return f"DynamicDim({self.name!r}, {self.input!r}, {self.dim}, min={self.min}, max={self.max})"


def _dynamic_int(item: str, what: str, text: str, low: int) -> int:
    try:
        value = int(text, 10)
    except ValueError:
        raise UsageError(f"--dynamic {item!r}: {what} must be an integer; got {text!r}") from None
    if value < low:
        raise UsageError(f"--dynamic {item!r}: {what} must be >= {low}; got {value}")
    return value


def parse_dynamic(items) -> list:
    """:class:`DynamicDim` list from ``--dynamic`` arguments ``NAME=INPUT:DIM[:MIN[:MAX]]``.

    Raises
    ------
    UsageError
        A malformed item, a negative dimension, ``MIN > MAX``, or a name given twice with
        different bounds.
    """
    out: list = []
    bounds: dict = {}
    for item in items or ():
        name, eq, rest = item.partition("=")
        name = name.strip()
        parts = [p.strip() for p in rest.split(":")]
        if not eq or not name.isidentifier() or not 2 <= len(parts) <= 4 or not parts[0]:
            raise UsageError(f"--dynamic: expected NAME=INPUT:DIM[:MIN[:MAX]] (e.g. seq=0:1:2:512); got {item!r}")
        source = int(parts[0]) if parts[0].isdigit() else parts[0]
        if isinstance(source, str) and not source.isidentifier():
            raise UsageError(f"--dynamic {item!r}: INPUT must be a position or a forward() argument name; "
                             f"got {parts[0]!r}")
        dim = _dynamic_int(item, "DIM", parts[1], 0)
        lo = _dynamic_int(item, "MIN", parts[2], 0) if len(parts) > 2 and parts[2] else None
        hi = _dynamic_int(item, "MAX", parts[3], 1) if len(parts) > 3 and parts[3] else None
        if lo is not None and hi is not None and lo > hi:
            raise UsageError(f"--dynamic {item!r}: MIN {lo} > MAX {hi}")
        if bounds.setdefault(name, (lo, hi)) != (lo, hi):
            raise UsageError(f"--dynamic: {name!r} given twice with different bounds {bounds[name]} and {(lo, hi)}")
        out.append(DynamicDim(name, source, dim, lo, hi))
    return out


_BOUND_FORM = "expected NAME=MIN:MAX or NAME=:MAX (e.g. seq=1:128)"


def parse_bound(items) -> dict:
    """Symbolic dimension bounds from ``--bound`` arguments: name -> ``(min, max)``.

    Each item is ``NAME=MIN:MAX`` or ``NAME=:MAX`` (``MIN`` 0), or a comma-separated list of
    them; ``0 <= MIN <= MAX``. ``NAME=N`` is refused: it is ``--bind``'s form (evaluate the
    figures at ``N``), and a bound states the range the dimension can take.

    Raises
    ------
    UsageError
        A malformed item, a non-integer or negative value, ``MIN > MAX``, or a name given
        twice.
    """
    out: dict = {}
    for part in option_items(items):
        name, eq, rest = part.partition("=")
        name = name.strip()
        lo_text, colon, hi_text = rest.partition(":")
        lo_text, hi_text = lo_text.strip(), hi_text.strip()
        if not eq or not name.isidentifier() or not colon or not hi_text:
            hint = " (NAME=N is --bind's form)" if eq and name.isidentifier() and not colon else ""
            raise UsageError(f"--bound: {_BOUND_FORM}; got {part!r}{hint}")
        lo = shape_size(lo_text or "0", f"--bound {part!r}: MIN")
        hi = shape_size(hi_text, f"--bound {part!r}: MAX")
        if lo > hi:
            raise UsageError(f"--bound {part!r}: MIN {lo} > MAX {hi}")
        if name in out:
            raise UsageError(f"--bound: {name!r} given twice")
        out[name] = (lo, hi)
    return out


def option_items(items):
    """The stripped items of repeatable ``NAME=...`` options, each argument split at commas."""
    for item in items or ():
        for part in item.split(","):
            yield part.strip()


def shape_size(text: str, what: str) -> int:
    """``text`` as a shape size (a decimal integer >= 0).

    Raises
    ------
    UsageError
        Not an integer, or negative; the message starts with ``what``.
    """
    try:
        value = int(text, 10)
    except ValueError:
        raise UsageError(f"{what} must be an integer; got {text!r}") from None
    if value < 0:
        raise UsageError(f"{what} must be >= 0 (a shape size); got {value}")
    return value


def attr_ints(value) -> dict:
    """A ``tir_var_*_bound`` attribute as ``{name: int}`` (ints or ``IntImm`` values)."""
    return {k: int(getattr(v, "value", v)) for k, v in dict(value or {}).items()}


def apply_bounds(mod, bounds: dict, label: str):
    """``mod`` with ``bounds`` (name -> ``(min, max)``) in the ``tir_var_lower_bound`` /
    ``tir_var_upper_bound`` attributes of every Relax function whose signature has a shape
    variable of that name, each intersected with the function's own bounds.

    Raises
    ------
    UsageError
        A name no function's signature has, or a bound outside a function's own range.
    """
    from ..analysis.arith import ATTR_TIR_VAR_LOWER_BOUND, ATTR_TIR_VAR_UPPER_BOUND, signature_vars
    from ..ir.construct import function_with_body
    from ..ir.expr import Function

    if not bounds:
        return mod
    known: set = set()
    updates = {}
    for gv, func in mod.functions.items():
        if not isinstance(func, Function):
            continue
        names = set(signature_vars(func))
        known |= names
        mine = {n: b for n, b in bounds.items() if n in names}
        if not mine:
            continue
        lower = attr_ints(func.attrs.get(ATTR_TIR_VAR_LOWER_BOUND))
        upper = attr_ints(func.attrs.get(ATTR_TIR_VAR_UPPER_BOUND))
        for name, (lo, hi) in mine.items():
            have_lo, have_hi = lower.get(name, 0), upper.get(name)
            new_lo, new_hi = max(lo, have_lo), hi if have_hi is None else min(hi, have_hi)
            if new_lo > new_hi:
                raise UsageError(f"--bound {name}={lo}:{hi}: {label}: function {gv.name!r} bounds {name!r} to "
                                 f"[{have_lo}, {'inf' if have_hi is None else have_hi}], which it does not meet")
            lower[name], upper[name] = new_lo, new_hi
        attrs = {**func.attrs, ATTR_TIR_VAR_LOWER_BOUND: lower, ATTR_TIR_VAR_UPPER_BOUND: upper}
        updates[gv] = function_with_body(func, func.body, attrs=attrs)
    unknown = sorted(set(bounds) - known)
    if unknown:
        raise UsageError(f"--bound: {', '.join(map(repr, unknown))} is not a shape variable of {label} "
                         f"(its functions have: {', '.join(map(repr, sorted(known))) or 'none'})")
    return mod.with_functions(updates)


def _resolve_callable(spec: str):
    module_name, _, attr = spec.partition(":")
    added = os.getcwd() not in sys.path  # as `python -m`: the current directory is importable
    if added:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # noqa: BLE001 - the user's module may raise anything on import
        raise FrontendError(f"{spec}: cannot import module {module_name!r}: {reason(exc)}") from exc
    finally:
        if added:
            sys.path.remove(os.getcwd())
    target = module
    for part in attr.split("."):
        if not hasattr(target, part):
            raise FrontendError(f"{spec}: module {module_name!r} has no attribute {attr!r}")
        target = getattr(target, part)
    if not callable(target):
        raise FrontendError(f"{spec}: {attr!r} is a {type(target).__name__}, not a callable")
    return target


def _model_and_inputs(torch, spec: str):
    fn = _resolve_callable(spec)
    try:
        result = fn()
    except Exception as exc:  # noqa: BLE001 - the user's function
        raise FrontendError(f"{spec}: calling it raised {reason(exc)}") from exc
    if not (isinstance(result, tuple) and len(result) == 2 and isinstance(result[0], torch.nn.Module)):
        got = type(result).__name__ if not isinstance(result, tuple) else f"a tuple of {len(result)}"
        raise FrontendError(f"{spec}: must return (torch.nn.Module, example_inputs); got {got}")
    model, args = result
    if isinstance(args, torch.Tensor):
        args = (args,)
    if isinstance(args, list):
        args = tuple(args)
    if not isinstance(args, tuple):
        raise FrontendError(f"{spec}: example_inputs must be a tensor or a tuple of them; got {type(args).__name__}")
    return model, args


def _dynamic_shapes(torch, spec: str, model, args, dynamic) -> tuple:
    """``(dynamic_shapes, where)``: for ``torch.export.export``, per example input
    ``{dim: Dim}`` or None (None for all: no ``dynamic``); ``where`` lists ``(name, input
    position, dim)`` for each item."""
    if not dynamic:
        return None, []
    import inspect

    try:
        names = list(inspect.signature(model.forward).parameters)
    except (TypeError, ValueError):
        names = []
    dims: dict = {}
    shapes: list = [None] * len(args)
    where = []
    for d in dynamic:
        pos = d.input if isinstance(d.input, int) else (names.index(d.input) if d.input in names else None)
        if pos is None or pos >= len(args):
            have = ", ".join(f"{i}" + (f" ({names[i]})" if i < len(names) else "") for i in range(len(args)))
            raise UsageError(f"--dynamic {d.name}: {spec} has no example input {d.input!r} (it has: {have or 'none'})")
        arg = args[pos]
        if not isinstance(arg, torch.Tensor) or d.dim >= arg.dim():
            what = f"rank {arg.dim()}" if isinstance(arg, torch.Tensor) else f"a {type(arg).__name__}"
            raise UsageError(f"--dynamic {d.name}: example input {d.input!r} of {spec} has no dimension {d.dim} "
                             f"({what})")
        if d.name not in dims:
            kwargs = {k: v for k, v in (("min", d.min), ("max", d.max)) if v is not None}
            dims[d.name] = torch.export.Dim(d.name, **kwargs)
        shapes[pos] = {**(shapes[pos] or {}), d.dim: dims[d.name]}
        where.append((d.name, pos, d.dim))
    return tuple(shapes), where


def _dynamic_symbols(ep, where) -> dict:
    """``--dynamic`` name -> the shape variable naming that dimension in the imported module.

    torch names each dimension's symbol itself (``s77``) and the importer keeps that name, as
    TVM's does; this maps the user's names back, reading the symbol off the shape of the user
    input placeholder at each ``(name, position, dim)`` of ``where``. A dimension torch
    specialised to a constant, or expressed as a derived expression, has no entry.
    """
    import sympy

    inputs = list(ep.graph_signature.user_inputs)
    shapes = {n.name: getattr(n.meta.get("val"), "shape", None) for n in ep.graph.nodes if n.op == "placeholder"}
    out: dict = {}
    for name, pos, dim in where:
        shape = shapes.get(inputs[pos]) if pos < len(inputs) else None
        expr = getattr(getattr(shape[dim], "node", None), "expr", None) if shape is not None else None
        if isinstance(expr, sympy.Symbol):
            out[name] = str(expr)
    return out


def export_callable(spec: str, dynamic=None, symbols: dict | None = None):
    """``torch.export.export`` of the model ``spec`` (``pkg.module:function``) returns.

    Parameters
    ----------
    spec : str
        ``module:function``; ``function()`` returns ``(nn.Module, example_inputs)``, the
        inputs a tensor or a tuple of them. The current directory is importable.
    dynamic : list of DynamicDim, optional
        Dimensions exported as symbols (:func:`parse_dynamic`).
    symbols : dict, optional
        Filled with each ``dynamic`` name -> the shape variable torch gave that dimension (the
        name ``--bind`` takes): torch names its symbols itself (``s77``).

    Raises
    ------
    FrontendDependencyError
        torch is not installed.
    FrontendError
        The module cannot be imported, the function is missing, raises or returns something
        else, or ``torch.export.export`` rejects the model (its first message line quoted).
    UsageError
        A ``--dynamic`` item naming an input or dimension the example inputs do not have.
    """
    torch = require_torch_for(spec)
    model, args = _model_and_inputs(torch, spec)
    shapes, where = _dynamic_shapes(torch, spec, model, args, dynamic)
    try:
        with quiet():
            ep = torch.export.export(model.eval(), args, dynamic_shapes=shapes)
    except Exception as exc:  # noqa: BLE001 - torch.export raises many kinds (UserError, Unsupported, ...)
        raise FrontendError(f"{spec}: torch.export.export cannot export the model: {reason(exc)}") from exc
    if symbols is not None:
        symbols.update(_dynamic_symbols(ep, where))
    return ep


def import_model(source: str, *, dynamic=None, timings: dict | None = None, symbols: dict | None = None,
                 bounds: dict | None = None):
    """The high-level Relax module of a ``.pt2`` file or a ``module:function`` callable.

    Parameters
    ----------
    source : str
        A ``torch.export.save`` file (``*.pt2``), an ONNX file (``*.onnx``, read by
        :func:`~memcore_py.frontend.files.import_onnx_file`) or ``module:function`` (:func:`input_kind`).
    dynamic : list of DynamicDim, optional
        Only for ``module:function`` (a saved program's dimensions are fixed at export).
    timings : dict, optional
        Filled with stage name (:data:`STAGES`) -> seconds.
    symbols : dict, optional
        Filled as by :func:`export_callable`.
    bounds : dict, optional
        Symbolic dimension name -> ``(min, max)`` (:func:`parse_bound`), the importer's
        ``dim_bounds``; for ``module:function`` a ``--dynamic`` name stands for its symbol.

    Returns
    -------
    IRModule
        :func:`~memcore_py.frontend.exported_program.from_exported_program`'s module (weights
        as parameters, ``num_input`` set).

    Raises
    ------
    FrontendError
        From loading or exporting (:func:`load_exported_program`, :func:`export_callable`),
        decomposing, or importing (an
        :class:`~memcore_py.errors.UnsupportedOperatorError` lists every operator without a
        converter); the message names ``source``.
    FrontendDependencyError
        torch is not installed.
    UsageError
        ``dynamic`` given for a ``.pt2`` or ``.onnx`` file, or naming inputs the model does not have;
        ``bounds`` naming a dimension the model does not have, or outside a recorded range.
    """
    timings = {} if timings is None else timings
    kind = input_kind(source)
    if kind != "callable" and dynamic:
        raise UsageError(f"--dynamic applies to module:function inputs; {source}'s dimensions "
                         + ("are its dim_param names (evaluate them with --bind NAME=N)" if kind == "onnx"
                            else "were fixed when it was exported"))
    if kind not in ("onnx", "pt2", "callable"):
        raise FrontendError(f"{source}: not a .pt2 file or a module:function callable")
    if kind == "callable":
        t0 = time.perf_counter()
        ep = export_callable(source, dynamic, symbols)
        timings["torch.export.export"] = time.perf_counter() - t0
    if bounds and symbols:  # a --dynamic name stands for torch's symbol
        renamed: dict = {}
        given: dict = {}
        for name, bound in bounds.items():
            key = symbols.get(name, name)
            if key in renamed:
                raise UsageError(f"--bound: {given[key]!r} and {name!r} are the same dimension {key!r}, given twice")
            renamed[key], given[key] = bound, name
        bounds = renamed
    try:
        if kind == "onnx":
            return import_onnx_file(source, timings, dim_bounds=bounds)
        if kind == "pt2":
            return import_pt2(source, timings, dim_bounds=bounds)
        return import_decomposed(ep, source, timings, dim_bounds=bounds)
    except DimBoundsError as exc:
        raise UsageError(f"--bound: {exc}") from None
