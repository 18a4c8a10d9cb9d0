"""The analyses of DataflowUseInplaceCalls: liveness, aliases and in-place opportunities
of one dataflow block, with TVM 0.27's exact results (spec §3.3–§3.5).

Design
------
Three public functions, each the counterpart of one of TVM's testing entry points
(``tvm.relax.testing.transform.dataflow_liveness_analysis``, ``dataflow_alias_analysis``,
``dataflow_inplace_analysis``), returning the same shapes:

- :func:`dataflow_liveness` — ``{var: (start, end)}``. The block is turned into the engine's
  flat-array contract (``def_pos``, CSR uses, ``is_output``) and
  :func:`memcore.live_intervals` computes the intervals: TVM's sentinels are the contract's
  (``-1`` = defined before the block, ``len(bindings)`` = live after it; a non-dataflow
  ``Var`` is "live after the block"). TVM's two special cases are kept: a
  ``TupleGetItem`` value is not a use of its tuple, and a function literal uses only its free
  variables.
- :func:`dataflow_aliases` — ``({var: set of ids}, {tuple id: [set of ids per field]})``.
  Abstract memory locations numbered from 0 in TVM's order of creation; ``-1`` = unknown
  (defined outside the block). Views (ops registered ``view_memory``) take their input's
  set; calls of non-ops and ``call_pure_packed`` are "mystery calls" whose result may alias
  any argument.
- :func:`inplace_opportunities` — ``(size_matches, exact_matches)``, lists of
  ``(binding index, [argument indices])``: the arguments of a supported op call (ops
  registered ``inplace``) big enough (resp. exactly shaped) to hold the result, dead after
  the call, without a live alias and disjoint from the other operands. The argument lists
  are in TVM's order (its ``std::unordered_set<int>`` iterates ``{0, 1}`` as ``[1, 0]``), so
  ``exact[k][1][0]`` is the index the pass picks.

Symbolic sizes: ``numel(arg) >= numel(result)`` is proved when the difference's canonical
polynomial has only non-negative coefficients over plain shape variables (which are
non-negative, as TVM's block builder assumes for a function's shape variables); a dim pair
is equal when :func:`~memcore_py.ir.prim.prove_equal` says so. Anything not provable is
"no match", as in TVM.

With ``tvm_tuple_capture=False`` (what the pass uses unless asked for TVM's behaviour; see
DIFFERENCES.md, ``tuple-capture``) a live tuple also protects the values captured in its
fields, and ``t[i]`` counts as a use of ``t``: TVM checks only the candidate's own tuple
components and does not count get-items, so ``t = (a, a); b = multiply(a, a);
q = concat(t)`` makes ``multiply`` overwrite ``a`` while ``t`` still holds it.
``tvm_tuple_capture=True`` (the default of :func:`inplace_opportunities`, like TVM's testing
entry point) reproduces TVM.

With ``tvm_constant_memory=False`` (also the pass's default; DIFFERENCES.md,
``constant-views``) a Constant's memory is outside the block (alias set ``{-1}``, as for a
parameter), so no view of a constant is written in place: TVM gives a Constant a fresh
location, and ``v = R.expand_dims(c); w = R.add(v, eps)`` then adds into ``v``, which TVM's
lowering (``RewriteDataflowReshape``, then a storage-sharing reshape) makes a view of ``c``:
every run of the compiled function adds ``eps`` into the constant again (a BatchNorm's
running variance after ``DecomposeOpsForInference``). ``tvm_constant_memory=True`` (the
default of :func:`inplace_opportunities`) reproduces TVM.

Which blocks the pass searches at all is :func:`inplace_candidate_blocks`' answer over a
function's binding table (read from memcore IR or from TVM's objects): the dataflow blocks
that bind a call of an op registered ``inplace``.

The per-binding loops (collecting uses, the alias analyzer, the candidate search) are the
compiled helper ``memcore_py/analysis/_inplace_walk.pyx``; this module validates the
arguments, supplies TVM's special cases of "used vars" and shapes the results.
"""
from __future__ import annotations

from memcore import live_intervals

from .._compiled import load_compiled
from ..errors import IRError
from ..ir.expr import Call, DataflowBlock, Function, Tuple, TupleGetItem, Var
from ..ir.functor import var_uses
from ..ir.prim import IntImm, Mul

__all__ = ["dataflow_liveness", "dataflow_aliases", "inplace_opportunities", "inplace_candidate_blocks"]

def _check_block(block, what):
    if not isinstance(block, DataflowBlock):
        raise IRError(f"{what} takes a DataflowBlock; got {type(block).__name__}")


def _bound_vars(expr):
    """Variables bound inside ``expr`` (params and binding vars of nested scopes)."""
    out = set()
    stack = [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, Function):
            out.update(e.params)
            stack.append(e.body)
        elif hasattr(e, "blocks"):  # SeqExpr
            for blk in e.blocks:
                for b in blk.bindings:
                    out.add(b.var)
                    stack.append(b.value)
            stack.append(e.body)
        elif hasattr(e, "true_branch"):
            stack.extend((e.true_branch, e.false_branch))
        elif isinstance(e, Call):
            stack.extend(e.args)
        elif isinstance(e, Tuple):
            stack.extend(e.fields)
        elif isinstance(e, TupleGetItem):
            stack.append(e.tuple_value)
    return out


def _used_vars(value, tuple_get_item_is_use=False):
    """TVM's "used vars" of a binding value (§3.3): every variable in it, but none for a
    TupleGetItem (unless ``tuple_get_item_is_use``) and only the free ones for a function
    literal."""
    cls = type(value)
    if cls is TupleGetItem and not tuple_get_item_is_use:
        return []
    uses = var_uses(value)
    if isinstance(value, Function):
        bound = _bound_vars(value)
        return [v for v in uses if v not in bound]
    return uses


# ---------------------------------------------------------------------------- liveness
def dataflow_liveness(block, *, tuple_get_item_is_use: bool = False) -> dict:
    """Live range of every variable defined or used in a dataflow block (spec §3.3).

    Parameters
    ----------
    block : DataflowBlock
    tuple_get_item_is_use : bool, default False
        False: TVM's rule, ``t[i]`` is not a use of ``t``. True: it is (the sound liveness
        DataflowUseInplaceCalls uses by default, so a tuple read later protects its fields).

    Returns
    -------
    dict of Var -> (int, int)
        ``(start, end)``: ``start`` is the index of the defining binding, ``-1`` for a value
        from outside the block; ``end`` the last binding using it, ``len(block.bindings)``
        for a non-dataflow ``Var`` (live after the block), ``start`` for an unused
        DataflowVar. Equal to TVM's ``dataflow_liveness_analysis``.

    Raises
    ------
    IRError
        ``block`` is not a DataflowBlock.
    """
    _check_block(block, "dataflow_liveness")
    order, _index, start, end = _intervals(block, tuple_get_item_is_use)
    return {v: (s, e) for v, s, e in zip(order, start.tolist(), end.tolist())}


def _intervals(block, tuple_get_item_is_use: bool):
    """``(order, index, start, end)``: the block's variables in order of first appearance,
    their positions, and their live intervals from :func:`memcore.live_intervals`."""
    walk = load_compiled("memcore_py.analysis._inplace_walk")
    bindings = block.bindings
    order, index, def_pos, use_ptr, use_pos, is_output = walk.collect_uses(
        bindings if type(bindings) is list else list(bindings), bool(tuple_get_item_is_use), _used_vars)
    start, end = live_intervals(def_pos, use_ptr, use_pos, is_output, len(bindings))
    return order, index, start, end


# ---------------------------------------------------------------------------- aliases
def _check_inputs(inputs, what):
    inputs = list(inputs or ())
    for i, v in enumerate(inputs):
        if not isinstance(v, Var):
            raise IRError(f"{what}: inputs[{i}] must be a Var; got {type(v).__name__}")
    return inputs


def dataflow_aliases(block, inputs=()):
    """Which abstract memory locations each variable of a dataflow block may refer to
    (spec §3.4).

    Parameters
    ----------
    block : DataflowBlock
    inputs : sequence of Var, optional
        Values assumed fresh and unaliased (TVM's tests pass the function's params; the
        pass passes none). Each gets a fresh id, a tuple-typed one also its components.

    Returns
    -------
    alias_sets : dict of Var -> set of int
        For every input and every variable bound in the block. ``-1`` = unknown.
    tuple_map : dict of int -> list of set of int
        For ids that are tuples: the id set of each field.

    Raises
    ------
    IRError
        ``block`` is not a DataflowBlock or an input is not a Var.
    """
    _check_block(block, "dataflow_aliases")
    inputs = _check_inputs(inputs, "dataflow_aliases")
    return load_compiled("memcore_py.analysis._inplace_walk").AliasAnalyzer().run(list(block.bindings), inputs)


# ---------------------------------------------------------------------------- opportunities
def element_count(shape):
    """The number of elements of a tensor of ``shape``: the product of its dims (a
    PrimExpr; ``IntImm(1)`` for a 0-d tensor)."""
    out = IntImm(1)
    for d in shape:
        out = Mul(out, d)
    return out


def inplace_opportunities(block, inputs=(), *, tvm_tuple_capture: bool = True, tvm_constant_memory: bool = True):
    """The bindings of a dataflow block whose op call may be computed in place of one of its
    arguments (spec §3.5).

    Parameters
    ----------
    block : DataflowBlock
    inputs : sequence of Var, optional
        As for :func:`dataflow_aliases`.
    tvm_tuple_capture : bool, default True
        True: TVM's rule (a value captured in a live tuple is not protected). False: the
        sound rule DataflowUseInplaceCalls uses by default (module docstring).
    tvm_constant_memory : bool, default True
        True: TVM's rule (a Constant is fresh memory the block may overwrite, through a view
        of it). False: the sound rule DataflowUseInplaceCalls uses by default (a Constant's
        memory is outside the block, like a parameter's; module docstring).

    Returns
    -------
    size_matches : list of (int, list of int)
        ``(binding index, argument indices)`` for every supported call with at least one
        argument that is large enough, dead after the call, without a live alias and
        disjoint from the other operands.
    exact_matches : list of (int, list of int)
        The same restricted to arguments whose shape equals the result's exactly; bindings
        without one are left out. Argument indices in TVM's order (descending).

    Raises
    ------
    IRError
        ``block`` is not a DataflowBlock or an input is not a Var.
    """
    _check_block(block, "inplace_opportunities")
    inputs = _check_inputs(inputs, "inplace_opportunities")
    walk = load_compiled("memcore_py.analysis._inplace_walk")
    bindings = list(block.bindings)
    order, index, start, end = _intervals(block, not tvm_tuple_capture)
    alias, tuples = walk.AliasAnalyzer(not tvm_constant_memory).run(bindings, inputs)
    return walk.find_opportunities(bindings, order, index, start, end, alias, tuples, not tvm_tuple_capture)


def inplace_candidate_blocks(table) -> set:
    """The blocks of ``table`` in which DataflowUseInplaceCalls may rewrite a binding: the
    dataflow blocks that bind a call of an op registered ``inplace`` (the callee property
    ``CALLEE_INPLACE``, :func:`~memcore_py.analysis.storage_tokens.callee_flags`); every
    dataflow block when the table cannot say where each such call is (one nested in another
    expression or bound by a ``MatchCast``, ``BindingTable.binding_calls``). Calls outside
    dataflow blocks are never rewritten.

    Parameters
    ----------
    table : BindingTable
        The functions to ask about, read with the callee properties (either reader).

    Returns
    -------
    set of int
        Block ids; empty when the pass has nothing to do in these functions.

    Raises
    ------
    TypeError
        ``table`` is not a ``BindingTable``.
    """
    binding_table = load_compiled("memcore_py.analysis._binding_table")
    if not isinstance(table, binding_table.BindingTable):
        raise TypeError(f"inplace_candidate_blocks: expected a BindingTable, got {type(table).__name__}")
    dataflow = table.block_is_dataflow
    sites = table.binding_calls(binding_table.CALLEE_INPLACE)
    if sites is None:
        return {block for block, is_dataflow in enumerate(dataflow) if is_dataflow}
    return {block for block, _pos in sites if dataflow[block]}
