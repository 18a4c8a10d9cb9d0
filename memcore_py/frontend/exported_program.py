"""Import a ``torch.export`` ExportedProgram as a high-level Relax :class:`~memcore_py.ir.IRModule`.

Design
------
:func:`from_exported_program` produces the module TVM 0.27's
``tvm.relax.frontend.torch.from_exported_program`` produces for the same program: same ops,
attributes, binding order, variable names, types and function attributes, so that memcore's
passes and TVM's can each take the other's output (``memcore_py.tvm.to_tvm`` converts it).
Only torch is needed, imported when the function is called.

The import follows TVM's importer step by step:

1. ``ep.run_decompositions()`` (unless ``run_ep_decomposition=False``), giving functional
   core ATen;
2. one Relax parameter per input spec, named ``spec.arg.name`` (``x``, ``p_fc_weight``,
   ``b_bn_running_mean``), user inputs first, then parameters, buffers and constant tensors
   in the order of the graph signature. A ``torch.export.Dim`` dimension is an int64
   :class:`~memcore_py.ir.prim.PrimVar` named after the export's sympy symbol (``s27``); a
   derived ``symbol * k`` / ``symbol + k`` is that expression. ``ep.range_constraints``
   become the function attributes ``tir_var_lower_bound`` (every symbol) and
   ``tir_var_upper_bound`` (finite upper bounds only), each range narrowed by
   ``dim_bounds`` when given;
3. a ``main`` function with one dataflow block (none, and ``main`` impure, when the graph
   calls ``_assert_async``, as in TVM); every ``call_function`` node is converted by
   :data:`~._aten_ops.CONVERTERS` (TVM's mapping; targets without a converter are all listed
   in one :class:`~memcore_py.errors.UnsupportedOperatorError` before anything is built);
4. the output is the tuple of the user outputs (mutated buffers that functionalisation
   prepends are dropped), bound to ``gv`` with ``R.output``;
5. buffers and constant tensors (and, with ``keep_params_as_input=False``, the parameters
   too) are not parameters of ``main``: they are constants holding the tensor's data, which
   is what TVM's ``BindParams`` makes of them. With ``keep_params_as_input=True`` the
   attribute ``num_input`` is the number of user inputs.

Differences from TVM (tests/oracle/test_exported_program_oracle.py checks each):

- TVM also attaches the weight arrays as the function attribute ``params`` (a list of
  ``tvm.runtime.Tensor``); memcore leaves it out (its IR keeps no runtime arrays in
  attributes and its passes never read it). :func:`exported_program_params` returns the same
  arrays, in the same order, as numpy arrays;
- without decomposition only: TVM reads ``aten.batch_norm`` with the decomposed op's
  argument positions (its momentum is the training flag, its epsilon the momentum, training
  True); memcore reads the op's schema;
- ``scaled_dot_product_attention`` with a ``scale`` other than ``1/sqrt(head_dim)`` (not
  decomposed): TVM drops the scale, memcore refuses it with a :class:`FrontendError`
  (DIFFERENCES.md "Stock-model torch converters");
- targets TVM converts but memcore does not (no converter) are an
  :class:`~memcore_py.errors.UnsupportedOperatorError`; ``aten.relu6`` left undecomposed
  becomes ``R.clip(x, 0, 6)``, as TVM writes it (TVM has no ``relax.nn.relu6`` op).
"""
from __future__ import annotations

import math

from ..errors import FrontendDependencyError, FrontendError, IRError, UnsupportedOperatorError
from ..ir._util import gc_paused
from ..ir.expr import Expr, Tuple, Var
from ..ir.prim import IntImm, PrimVar
from ._aten_context import AtenContext, target_name, torch_dtype_name
from ._aten_ops import CONVERTERS
from ._aten_scalar import ASSERT_TARGETS
from ._dim_bounds import dim_bound_range

__all__ = ["from_exported_program", "exported_program_params", "unsupported_operators", "require_torch"]


def require_torch():
    """The ``torch`` module, or a :class:`~memcore_py.errors.FrontendDependencyError` naming the
    ``torch`` extra when it is not installed."""
    try:
        import torch
        import torch.export  # noqa: F401
        import torch.fx  # noqa: F401
    except ImportError as exc:
        raise FrontendDependencyError(
            'importing a torch.export program needs PyTorch: install the torch extra with '
            'pip install "memcore[torch]" (or pip install torch)') from exc
    return torch


def _check_program(torch, ep):
    if not isinstance(ep, torch.export.ExportedProgram):
        raise FrontendError(f"from_exported_program expects a torch.export.ExportedProgram; got {type(ep).__name__}")


def from_exported_program(ep, *, keep_params_as_input: bool = True, run_ep_decomposition: bool = True,
                          dim_bounds: dict | None = None):
    """The high-level Relax module of a ``torch.export`` program, as TVM 0.27 imports it.

    Parameters
    ----------
    ep : torch.export.ExportedProgram
        The exported program (``torch.export.export(model.eval(), args, dynamic_shapes=...)``).
    keep_params_as_input : bool
        Parameters stay function parameters after the user inputs (``num_input`` attribute
        set); False binds them as constants, as TVM does. The default is True (TVM's is
        False): memory planning wants the weights as inputs.
    run_ep_decomposition : bool
        Run ``ep.run_decompositions()`` first (TVM's default). Decomposing an already
        decomposed program changes nothing.
    dim_bounds : dict, optional
        Symbol name (``s77``, as the module names the dimension) -> ``(lower, upper)``
        (``upper`` None: unbounded), as ``from_onnx``'s ``dim_bounds``. Each range is
        intersected with the one ``ep.range_constraints`` records for that symbol (the
        program is valid only there), so a bound can narrow a recorded range but never widen
        it; the result becomes ``tir_var_lower_bound`` / ``tir_var_upper_bound``.

    Returns
    -------
    IRModule
        One function ``main``; its ``params`` attribute is left out (module docstring).

    Raises
    ------
    FrontendDependencyError
        torch is not installed (an :class:`ImportError`).
    UnsupportedOperatorError
        The graph calls ATen operators without a converter; ``.ops`` maps each to the nodes
        calling it.
    FrontendError
        Anything else the importer cannot represent (an input kind, dtype or output it does
        not know, an argument a converter does not accept), naming the node; a
        ``dim_bounds`` name that is not a symbol of the inputs' shapes, a bound that is not
        ``0 <= lower <= upper`` ints, or one outside the recorded range.

    Examples
    --------
    >>> import torch                                                       # doctest: +SKIP
    >>> ep = torch.export.export(torch.nn.Linear(4, 2).eval(), (torch.randn(3, 4),))  # doctest: +SKIP
    >>> mod = from_exported_program(ep)                                    # doctest: +SKIP
    >>> [p.name for p in mod["main"].params]                               # doctest: +SKIP
    ['input', 'p_weight', 'p_bias']
    """
    torch = require_torch()
    _check_program(torch, ep)
    if run_ep_decomposition:
        ep = ep.run_decompositions()
    nodes = list(ep.graph.nodes)
    targets = {n: target_name(n) for n in nodes if n.op == "call_function"}
    _raise_unsupported(nodes, targets)
    ctx = AtenContext(torch)
    symbols: dict = {}
    bounds = _range_constraints(ep, symbols)
    user_vars, param_vars, bound_values = _inputs(ctx, ep, symbols, keep_params_as_input)
    if dim_bounds:
        bounds = _narrowed(bounds, dim_bounds, symbols)
    attrs = {"num_input": len(user_vars)} if keep_params_as_input else {}
    if bounds:
        attrs["tir_var_lower_bound"] = {name: lo for name, (lo, _) in bounds.items()}
        upper = {name: hi for name, (_, hi) in bounds.items() if hi is not None}
        if upper:
            attrs["tir_var_upper_bound"] = upper
    by_name = {v.name: v for v in user_vars + param_vars}
    by_name.update(bound_values)
    bb = ctx.bb
    # the IR built here is acyclic; the collector's passes over torch's large live heap
    # would otherwise cost as much as the import itself
    # an assertion has a side effect: TVM then builds an impure main without a dataflow block
    pure = not any(t in ASSERT_TARGETS for t in targets.values())
    with gc_paused(), bb.function("main", user_vars + param_vars, attrs=attrs, pure=pure):
        if pure:
            with bb.dataflow():
                outputs = _user_outputs(torch, ep, _translate(ctx, nodes, by_name, targets))
                gv = bb.emit_output(Tuple(list(outputs)))
            bb.emit_func_output(gv)
        else:
            outputs = _user_outputs(torch, ep, _translate(ctx, nodes, by_name, targets))
            bb.emit_func_output(Tuple(list(outputs)))
    return bb.get()


def unsupported_operators(ep) -> dict:
    """The ATen targets of ``ep``'s graph (as it is, not decomposed) without a converter:
    ``{"aten.cumsum.default": ("cumsum",), ...}`` (target -> calling node names)."""
    torch = require_torch()
    _check_program(torch, ep)
    return _missing({n: target_name(n) for n in ep.graph.nodes if n.op == "call_function"})


def exported_program_params(ep) -> dict:
    """The weight arrays TVM attaches as the ``params`` attribute (module docstring): name of
    each parameter (``spec.arg.name``, the Relax parameter's name) -> numpy array, in the
    order of ``ep.named_parameters()``."""
    torch = require_torch()
    _check_program(torch, ep)
    names = {s.target: s.arg.name for s in ep.graph_signature.input_specs}
    return {names.get(k, k): _to_numpy(v, k) for k, v in ep.named_parameters()}


# ------------------------------------------------------------------------------------ checks
def _missing(targets: dict) -> dict:
    """``targets``: call node -> :func:`target_name`."""
    out: dict = {}
    for node, target in targets.items():
        if target not in CONVERTERS:
            out.setdefault(str(node.target), []).append(node.name)
    return {k: tuple(v) for k, v in out.items()}


def _raise_unsupported(nodes, targets: dict) -> None:
    missing = _missing(targets)
    for node in nodes:
        if node.op not in ("placeholder", "call_function", "output"):  # get_attr: torch.cond branches
            key = f"{node.op} node"
            missing[key] = missing.get(key, ()) + (node.name,)
    if missing:
        listed = "; ".join(f"{op} (nodes {', '.join(names)})" for op, names in missing.items())
        raise UnsupportedOperatorError(
            f"the exported program uses {len(missing)} operator(s) memcore's importer cannot convert: {listed}",
            missing)


# ------------------------------------------------------------------------------------ inputs
def _symbol_expr(symbol, symbols: dict):
    """TVM's ``_process_derived_symbol``: (name, derived PrimExpr or None)."""
    import sympy

    if isinstance(symbol, sympy.Symbol):
        return str(symbol), None
    if not isinstance(symbol, (sympy.Add, sympy.Mul)):
        return str(symbol), None
    expr = None
    for arg in symbol.args:
        if isinstance(arg, sympy.Integer):
            term = IntImm(int(arg))
        elif isinstance(arg, sympy.Symbol):
            term = symbols.setdefault(str(arg), PrimVar(str(arg), "int64"))
        else:
            term = _symbol_expr(arg, symbols)[1]
        if term is None:
            return str(symbol), None
        if expr is None:
            expr = term
        elif isinstance(symbol, sympy.Mul):
            expr = expr * term
        else:
            expr = expr + term
    return str(symbol), expr


def _range_constraints(ep, symbols: dict) -> dict:
    out = {}
    for symbol, vr in getattr(ep, "range_constraints", {}).items():
        try:
            lower = int(vr.lower)
            upper = None if math.isinf(float(vr.upper)) else int(vr.upper)
        except (OverflowError, AttributeError, TypeError):
            continue
        name, derived = _symbol_expr(symbol, symbols)
        if derived is None:
            out[name] = (lower, upper)
    return out


def _narrowed(ranges: dict, dim_bounds: dict, symbols: dict) -> dict:
    """``ranges`` (symbol -> ``(lower, upper or None)``) with each ``dim_bounds`` range
    intersected in."""
    unknown = sorted(set(dim_bounds) - set(ranges) - set(symbols))
    if unknown:
        have = ", ".join(map(repr, sorted(set(ranges) | set(symbols)))) or "none"
        raise FrontendError(f"dim_bounds names {', '.join(map(repr, unknown))}, which no input has as a symbolic "
                            f"dimension (they have: {have})")
    out = dict(ranges)
    for name, bound in dim_bounds.items():
        lo, hi = dim_bound_range(name, bound)
        have_lo, have_hi = ranges.get(name, (0, None))
        lo = max(lo, have_lo)
        hi = have_hi if hi is None else (hi if have_hi is None else min(hi, have_hi))
        if hi is not None and lo > hi:
            recorded = f"[{have_lo}, {'inf' if have_hi is None else have_hi}]"
            raise FrontendError(f"dim_bounds[{name!r}] = {bound!r} does not meet the range {recorded} the program "
                                "was exported with")
        out[name] = (lo, hi)
    return out


def _relax_shape(torch, shape, symbols: dict) -> list:
    dims = []
    for s in shape:
        if isinstance(s, torch.SymInt):
            expr = s.node.expr if hasattr(s.node, "expr") else s.node
            name, derived = _symbol_expr(expr, symbols)
            dims.append(derived if derived is not None else symbols.setdefault(name, PrimVar(name, "int64")))
        else:
            dims.append(int(s))
    return dims


def _to_numpy(tensor, name: str):
    import torch

    t = tensor.detach().cpu()
    if t.layout != torch.strided:
        t = t.to_dense()
    try:
        return t.contiguous().numpy()
    except (TypeError, RuntimeError) as exc:
        raise FrontendError(f"tensor {name!r} of dtype {t.dtype} cannot be converted to a numpy array: {exc}") from exc


def _inputs(ctx, ep, symbols: dict, keep_params_as_input: bool):
    """(user input Vars, parameter Vars, {name: Constant} of the bound inputs)."""
    torch = ctx.torch
    kinds = torch.export.graph_signature.InputKind
    buffers = dict(ep.named_buffers())
    constants = dict(ep.constants)
    placeholders = {n.name: n for n in ep.graph.nodes if n.op == "placeholder"}
    users, params, bound = [], [], {}
    dtypes: dict = {}  # torch dtype -> Relax dtype, of the tensors seen
    state_dict = ep.state_dict
    for spec in ep.graph_signature.input_specs:
        name = spec.arg.name
        where = f"input {name!r}"
        if spec.kind is kinds.USER_INPUT:
            node = placeholders.get(name)
            meta = None if node is None else node.meta.get("tensor_meta", node.meta.get("val"))
            if meta is None or not hasattr(meta, "shape"):
                raise FrontendError(f"{where}: only tensor inputs are supported (no shape and dtype recorded)")
            ty = ctx.tensor_type(_relax_shape(torch, meta.shape, symbols), torch_dtype_name(meta.dtype, where))
            users.append(Var(name, ty))
            continue
        if spec.kind is kinds.PARAMETER:
            tensor = state_dict[spec.target]
            bind = not keep_params_as_input
        elif spec.kind is kinds.BUFFER:
            tensor = buffers[spec.target]
            bind = True
        elif spec.kind is kinds.CONSTANT_TENSOR:
            tensor = constants[spec.target]
            bind = True
        else:
            raise FrontendError(f"{where}: input kind {spec.kind.name} is not supported "
                                "(tensor user inputs, parameters, buffers and constant tensors are)")
        dtype = dtypes.get(tensor.dtype)
        if dtype is None:
            dtype = dtypes[tensor.dtype] = torch_dtype_name(tensor.dtype, where)
        if bind:
            bound[name] = ctx.const(_to_numpy(tensor, spec.target), dtype)
        else:
            params.append(Var(name, ctx.tensor_type([int(d) for d in tensor.shape], dtype)))
    return users, params, bound


# ------------------------------------------------------------------------------------ graph
def _translate(ctx, nodes, inputs: dict, targets: dict) -> tuple:
    env = ctx.env
    for node in nodes:
        if node.op == "placeholder":
            if node.name not in inputs:
                raise FrontendError(f"placeholder {node.name!r} has no input spec in the graph signature")
            env[node] = inputs[node.name]
        elif node.op == "call_function":
            ctx.node = node
            try:
                env[node] = CONVERTERS[targets[node]](ctx, node)
            except FrontendError:
                raise
            except (IRError, KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
                raise FrontendError(f"node {node.name!r} ({node.target}): cannot convert: "
                                    f"{type(exc).__name__}: {exc}") from exc
            ctx.node = None
        elif node.op == "output":
            if len(node.args) != 1:
                raise FrontendError(f"output node {node.name!r} must have one argument; got {len(node.args)}")
            return _flatten_outputs(ctx, ctx.value(node.args[0]))
    raise FrontendError("the exported graph has no output node")


def _flatten_outputs(ctx, value) -> tuple:
    out = []

    def visit(v):
        if isinstance(v, Expr):
            out.append(v)
        elif isinstance(v, (list, tuple)):
            for x in v:
                visit(x)
        elif v is None:
            out.append(ctx.call("null_value"))
        else:
            raise FrontendError(f"unsupported output value of type {type(v).__name__} ({v!r}); "
                                "outputs must be tensors or tuples of tensors")

    visit(value)
    if not out:
        raise FrontendError("the exported graph produced no outputs")
    return tuple(out)


def _user_outputs(torch, ep, outputs: tuple) -> tuple:
    kinds = torch.export.graph_signature.OutputKind
    specs = ep.graph_signature.output_specs
    if len(specs) != len(outputs):
        return outputs
    user = tuple(o for o, s in zip(outputs, specs) if s.kind in (kinds.USER_OUTPUT, kinds.LOSS_OUTPUT))
    return user or outputs
