"""Which tensors make the peak: per-function memory timelines and the peak report.

Design
------
Everything here is read off what the planner already computed; nothing is re-derived:

- the tensors, their sizes and lifetimes are the planner's tokens
  (:class:`~memcore_py.analysis.storage_tokens.TokenProgram`: ``tok_start``/``tok_end``
  inclusive, ``tok_const`` bytes), the allocation bindings are
  :attr:`~memcore_py.analysis.storage_tokens.AllocationSites.tok_binding`;
- storage and offset per tensor are the :class:`~memcore_py.planning.memory_plan.MemoryPlan`
  of each mode (:func:`~memcore_py.planning.allocate.plan_memory`);
- the live-bytes profile is :func:`memcore.live_profile`, the lower bound
  :func:`~memcore_py.planning.lower_bound.function_lower_bounds`.

A :class:`FunctionTimeline` gathers these for one Relax function, with steps made relative
to the function (step 0 = its first binding; the analysis numbers steps module-wide, an
``If``'s branch bindings right after the ``If`` binding). It is the common input of the peak
report (:func:`report`), the plots (:mod:`memcore_py.planning.plot`) and the annotated text
(``memcore show``). In each mode the storages of a function are stacked in storage order, so
a tensor's *address* is ``base of its storage + offset`` and the stack's height is the bytes
the mode allocates for the function.

The **peak** of a function is the first step where the bytes of its live constant-size
planned tensors are largest (``argmax`` of the profile). With one (scope, device) pool, the
usual case, the peak bytes equal the function's lower bound; with several pools the bound
(a sum of per-pool maxima) can be larger. Liveness does not depend on the mode, so the peak
tensors are the same in both modes; what differs is where each mode put them (storage,
offset) and the bytes each mode allocates. Symbolic-size tensors have no constant size: they
are counted (``n_symbolic``) but neither profiled nor drawn.

Sources accepted by :func:`timelines` and :func:`report`:

- an :class:`~memcore_py.ir.module.IRModule` as StaticPlanBlockMemory takes it (after
  ``CallTIRRewrite``): analysed once, planned in each requested mode;
- a ``PlannedModule`` (:func:`memcore_py.transform.static_plan_block_memory.plan_block_memory`'s
  result, anything with ``.plan`` and ``.tokens``), or a list/tuple of such results made from
  the same module: no re-planning;
- (:func:`report` and the plots) a list of :class:`FunctionTimeline`, e.g. :func:`timelines`'
  result, or ``[graph_timeline(relay_plan, arena_plan)]`` for a graph-executor graph
  (:func:`graph_timeline`: Relay's GraphPlanMemory and its arena mode, modes ``"relay"`` and
  ``"arena"``).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import PlanningError
from ..ir.expr import Call, Function, If, Tuple, Var
from ..ir.module import IRModule
from ..ir.prim import IntImm
from ..ir.text.prim_func_text import format_prim
from ..ir.types import TensorType
from .allocate import MODES, plan_memory
from .arena_options import ARENA_TIME_LIMIT
from .lower_bound import function_lower_bounds

__all__ = [
    "ModePlacement",
    "FunctionTimeline",
    "PeakTensor",
    "ModeTotal",
    "FunctionPeak",
    "PeakReport",
    "timelines",
    "as_timelines",
    "graph_timeline",
    "peak_of",
    "report",
    "format_report",
    "format_bytes",
]


# ---------------------------------------------------------------------------------------------
# Timelines
# ---------------------------------------------------------------------------------------------


@dataclass(eq=False)
class ModePlacement:
    """Where one mode put the constant-size tensors of one function."""

    mode: str
    """``"tvm"`` or ``"arena"``."""
    storage: np.ndarray
    """int64[n]: function-local storage index of each tensor (into ``storage_bytes``)."""
    offset: np.ndarray
    """int64[n]: byte offset of each tensor in its storage (all 0 in TVM mode)."""
    storage_bytes: list
    """Size of each storage of the function holding constant-size tensors, in creation order."""
    storage_base: list
    """Start of each storage in the stacked drawing: the sum of the sizes before it."""
    total_bytes: int | None
    """Bytes of all storages of the function in this mode (None when one is symbolic)."""

    @property
    def address(self) -> np.ndarray:
        """int64[n]: ``storage_base[storage] + offset``, the tensor's place in the stack."""
        base = np.asarray(self.storage_base, dtype=np.int64)
        return (base[self.storage] if self.storage.shape[0] else self.storage) + self.offset

    @property
    def stacked_bytes(self) -> int:
        """Height of the stack of constant-size storages."""
        return int(sum(self.storage_bytes))


@dataclass(eq=False)
class FunctionTimeline:
    """The constant-size planned tensors of one Relax function, with lifetimes, sizes and
    each mode's placement. Tensor arrays are in program order (allocation step)."""

    function: str
    n_steps: int
    """Bindings of the function (branch bindings included): steps ``0 .. n_steps-1``."""
    token: np.ndarray
    """int64[n]: token id (module-wide) of each tensor."""
    start: np.ndarray
    """int64[n]: step of the allocation binding (function-relative)."""
    end: np.ndarray
    """int64[n]: step of the last use, inclusive (function-relative)."""
    size: np.ndarray
    """int64[n]: bytes."""
    names: list
    """Name of each tensor (the allocation's var)."""
    shapes: list
    """Shape of each tensor: a tuple of ints, symbolic dims as text."""
    dtypes: list
    bindings: list
    """One-line text of the binding that writes each tensor (the first call taking it as an
    argument, usually the kernel call); ``""`` when none does."""
    profile: np.ndarray
    """int64[n_steps + 1]: bytes of the live tensors at each step (:func:`memcore.live_profile`)."""
    lower_bound: int | None
    """The function's max-live lower bound (None when it has a symbolic-size tensor)."""
    placements: dict
    """Mode -> :class:`ModePlacement`."""
    n_symbolic: int = 0
    """Planned tensors of symbolic size (not in the arrays)."""
    symbolic_bindings: list = field(default_factory=list, repr=False)
    """Their allocation bindings."""
    binding_steps: list = field(default_factory=list, repr=False)
    """``(binding, step)`` of every binding of the function in step order (for annotation)."""

    @property
    def n_tensors(self) -> int:
        return int(self.size.shape[0])

    @property
    def peak_step(self) -> int:
        """First step where the live bytes are largest (0 without tensors)."""
        return int(np.argmax(self.profile)) if self.n_tensors else 0

    @property
    def peak_bytes(self) -> int:
        return int(self.profile.max()) if self.profile.shape[0] else 0

    def live_at(self, step: int) -> np.ndarray:
        """Indices of the tensors live at ``step`` (``start <= step <= end``)."""
        return np.flatnonzero((self.start <= step) & (step <= self.end))


def _shape(ty) -> tuple:
    if not isinstance(ty, TensorType) or ty.shape is None:
        return ()
    return tuple(d.value if type(d) is IntImm else format_prim(d) for d in ty.shape)


def _walk_function(func: Function):
    """``(binding, function-relative step)`` in the analysis' step order (an ``If`` binding,
    then its true branch, then its false branch), and var -> first call binding taking it."""
    order: list = []
    writer: dict = {}

    def note_args(binding, args):
        for a in args:
            if isinstance(a, Var):
                writer.setdefault(a, binding)
            elif isinstance(a, Tuple):
                note_args(binding, a.fields)

    def seq(s):
        for block in s.blocks:
            for b in block.bindings:
                order.append((b, len(order)))
                v = b.value
                if isinstance(v, Call):
                    note_args(b, v.args)
                elif isinstance(v, If):
                    seq(v.true_branch)
                    seq(v.false_branch)

    seq(func.body)
    return order, writer


def _binding_text(binding) -> str:
    from ..ir.text.printer import format_binding

    return format_binding(binding)


def _placement(plan, mode: str, f: int, toks: np.ndarray) -> ModePlacement:
    local: dict = {}
    sizes: list = []
    for k, s in enumerate(plan.storages):
        if s.func == f and s.const_bytes is not None:
            local[k] = len(sizes)
            sizes.append(s.const_bytes)
    gl = plan.tok_storage[toks]
    storage = np.fromiter((local[k] for k in gl.tolist()), dtype=np.int64, count=gl.shape[0])
    base = np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)])[:-1].tolist() if sizes else []
    total = plan.function_bytes().get(plan.function_names[f]) if plan.function_names else None
    return ModePlacement(mode, storage, np.ascontiguousarray(plan.tok_offset[toks]), sizes, base, total)


def _sources(source, modes, time_limit, alignment):
    """``(StorageTokens, {mode: MemoryPlan})`` of ``source`` (see the module docstring)."""
    from ..analysis.storage_tokens import analyze_storage_tokens

    for m in modes:
        if m not in MODES:
            raise PlanningError(f"planning mode must be one of {MODES}; got {m!r}")
    if isinstance(source, IRModule):
        st = analyze_storage_tokens(source)
        plans = {m: plan_memory(st.program, m, alignment=alignment, time_limit=time_limit, lower_bound=True)
                 for m in dict.fromkeys(modes)}
        return st, plans
    items = list(source) if isinstance(source, (list, tuple)) else [source]
    if not items or not all(hasattr(p, "plan") and hasattr(p, "tokens") for p in items):
        raise PlanningError(
            "expected an IRModule (after CallTIRRewrite), a PlannedModule (plan_block_memory's result) "
            f"or a list of PlannedModules; got {type(source).__name__}"
        )
    st = items[0].tokens
    plans = {}
    for p in items:
        if p.tokens.program.n_tok != st.program.n_tok or p.tokens.program.function_names != st.program.function_names:
            raise PlanningError("the PlannedModules given were not planned from the same module")
        plans[p.plan.mode] = p.plan
    return st, plans


def timelines(source, *, modes=MODES, time_limit=ARENA_TIME_LIMIT, alignment: int = 64,
              functions=None) -> list:
    """The :class:`FunctionTimeline` of every Relax function of ``source``.

    Parameters
    ----------
    source : IRModule, PlannedModule or list of PlannedModule
        See the module docstring. An IRModule is planned in every mode of ``modes``; planned
        modules bring their own mode (``modes`` is then ignored).
    modes : sequence of {"tvm", "arena"}, default ("tvm", "arena")
    time_limit : float or None, default ARENA_TIME_LIMIT
        Arena mode's offset search budget per pool (IRModule source only).
    alignment : int, default 64
        Arena mode's offset alignment (IRModule source only).
    functions : sequence of str, optional
        Only these functions (default: all, in module order).

    Returns
    -------
    list of FunctionTimeline

    Raises
    ------
    PlanningError
        An unknown mode or function name, or a source of the wrong kind.
    PassError
        When the module cannot be planned (StaticPlanBlockMemory's preconditions).
    """
    import memcore

    st, plans = _sources(source, modes, time_limit, alignment)
    program, sites = st.program, st.sites
    names = program.function_names
    if functions is not None:
        unknown = [f for f in functions if f not in names]
        if unknown:
            raise PlanningError(f"no Relax function named {unknown[0]!r}; the module has {names}")
    bounds = function_lower_bounds(program)
    out = []
    first_step = 0
    for f, entry in enumerate(sites.functions):
        order, writer = _walk_function(entry.func)
        n_steps = len(order)
        f0, first_step = first_step, first_step + n_steps
        if functions is not None and entry.gv.name not in functions:
            continue
        toks = np.flatnonzero(program.tok_func == f)
        sym = [sites.tok_binding[t] for t in toks[program.tok_const[toks] < 0].tolist()]
        toks = toks[program.tok_const[toks] >= 0]
        start = program.tok_start[toks] - f0
        end = program.tok_end[toks] - f0
        size = np.ascontiguousarray(program.tok_const[toks])
        allocs = [sites.tok_binding[t] for t in toks.tolist()]
        writes = [writer.get(b.var) for b in allocs]
        profile = memcore.live_profile(start, end, size, n_steps) if n_steps else np.zeros(1, dtype=np.int64)
        out.append(FunctionTimeline(
            function=entry.gv.name,
            n_steps=n_steps,
            token=toks,
            start=start,
            end=end,
            size=size,
            names=[b.var.name for b in allocs],
            shapes=[_shape(b.var.ty) for b in allocs],
            dtypes=[b.var.ty.dtype if isinstance(b.var.ty, TensorType) else "" for b in allocs],
            bindings=["" if w is None else _binding_text(w) for w in writes],
            profile=profile,
            lower_bound=bounds.get(entry.gv.name),
            placements={m: _placement(p, m, f, toks) for m, p in plans.items()},
            n_symbolic=len(sym),
            symbolic_bindings=sym,
            binding_steps=order,
        ))
    return out


def graph_timeline(*plans) -> FunctionTimeline:
    """The :class:`FunctionTimeline` of a graph-executor graph from its
    :class:`~memcore_py.planning.graph_memory_plan.GraphMemoryPlan` (one per mode, ``"relay"``
    and/or ``"arena"``, all of the same graph; :func:`~memcore_py.planning.graph_plan_memory.graph_plan_memory`).

    Tensors are the flat (non-texture) tokens, lifetimes are the planner's node intervals
    shifted by one (step 0 = before the first node: inputs and parameters are live from
    there; step ``n_nodes + 1`` = after the graph). Names are the producing node's name, or
    ``name:k`` for its k-th output; ``bindings`` are ``node N`` (its position in the graph). In
    relay mode the storages are
    Relay's flat storage ids, in arena mode the arenas.

    Raises
    ------
    PlanningError
        No plan, a plan without its graph, two plans of one mode, or plans of different graphs.
    """
    import memcore

    from .graph_plan_memory import _intervals, relay_token_program

    if not plans or any(getattr(p, "graph", None) is None or not hasattr(p, "storage_id") for p in plans):
        raise PlanningError("graph_timeline takes GraphMemoryPlans (graph_plan_memory's results) with their graph")
    g = plans[0].graph
    if any(p.graph is not g for p in plans) or len({p.mode for p in plans}) != len(plans):
        raise PlanningError("graph_timeline takes one plan per mode, all of the same graph")
    prog = relay_token_program(g)
    start, end = _intervals(g, prog)
    toks = np.flatnonzero((prog.entry_tok == np.arange(g.n_entries)) & ~prog.is_texture)
    start, end, size = start[toks] + 1, end[toks] + 1, np.ascontiguousarray(g.entry_bytes[toks])
    n_steps = g.n_nodes + 1
    node_of = g.node_of_entry()[toks]
    n_out = np.diff(g.node_row_ptr)
    names = []
    for e, n in zip(toks.tolist(), node_of.tolist()):
        node = g.node_names[n] if n < len(g.node_names) else f"node{n}"
        names.append(node if n_out[n] == 1 else f"{node}:{e - int(g.node_row_ptr[n])}")
    placements = {}
    for p in plans:
        if p.mode == "arena":
            storage = np.ascontiguousarray(p.arena_of[toks])
            offset = np.ascontiguousarray(p.tok_offset[toks])
            sizes = [int(b) for b in p.arena_bytes]
        else:
            ids, storage = np.unique(p.storage_id[toks], return_inverse=True)
            offset = np.zeros(toks.shape[0], dtype=np.int64)
            sizes = p.relay_storage_bytes[ids].tolist()
        base = np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)])[:-1].tolist() if sizes else []
        placements[p.mode] = ModePlacement(p.mode, storage.astype(np.int64), offset, sizes, base, int(sum(sizes)))
    return FunctionTimeline(
        function=g.name, n_steps=n_steps, token=toks, start=start, end=end, size=size, names=names,
        shapes=[tuple(g.entry_shape[e]) for e in toks.tolist()] if g.entry_shape else [()] * toks.shape[0],
        dtypes=[g.entry_dtype[e] for e in toks.tolist()] if g.entry_dtype else [""] * toks.shape[0],
        bindings=[f"node {n}" for n in node_of.tolist()],
        profile=memcore.live_profile(start, end, size, n_steps), lower_bound=int(plans[0].lower_bound),
        placements=placements,
    )


# ---------------------------------------------------------------------------------------------
# Peak report
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PeakTensor:
    """One tensor live at a function's peak."""

    name: str
    """The allocation's var name."""
    shape: tuple
    dtype: str
    nbytes: int
    binding: str
    """Text of the binding that writes it (see :attr:`FunctionTimeline.bindings`)."""
    start: int
    """Lifetime: allocation step (function-relative) ..."""
    end: int
    """... last-use step, inclusive."""
    placement: dict
    """Mode -> ``(storage index, offset)`` (function-local storage index)."""

    def to_dict(self) -> dict:
        return {
            "name": self.name, "shape": list(self.shape), "dtype": self.dtype, "bytes": self.nbytes,
            "binding": self.binding, "lifetime": [self.start, self.end],
            "placement": {m: {"storage": s, "offset": o} for m, (s, o) in self.placement.items()},
        }


@dataclass(frozen=True)
class ModeTotal:
    """What one mode allocates for a function."""

    mode: str
    bytes: int | None
    """Sum of the function's storage sizes (None when one is symbolic)."""
    n_storages: int
    """Storages holding constant-size tensors."""
    excess: float | None
    """``bytes / lower_bound - 1`` (None when either is unknown or the bound is 0)."""


@dataclass(frozen=True)
class FunctionPeak:
    """The peak of one function: where it is, how big, which tensors make it."""

    function: str
    n_steps: int
    n_tensors: int
    """Constant-size planned tensors of the function."""
    step: int
    """The peak step (first step of maximal live bytes)."""
    peak_bytes: int
    """Bytes of the tensors live at ``step``."""
    lower_bound: int | None
    n_live: int
    """Tensors live at ``step`` (``tensors`` holds the largest ``top`` of them)."""
    tensors: tuple
    """:class:`PeakTensor` live at ``step``, largest first (ties: earlier allocation)."""
    modes: tuple
    """:class:`ModeTotal` per mode, in the order asked."""
    n_symbolic: int = 0

    def to_dict(self) -> dict:
        return {
            "function": self.function, "n_steps": self.n_steps, "n_tensors": self.n_tensors,
            "peak_step": self.step, "peak_bytes": self.peak_bytes, "lower_bound": self.lower_bound,
            "n_live": self.n_live, "n_symbolic": self.n_symbolic,
            "modes": {m.mode: {"bytes": m.bytes, "n_storages": m.n_storages, "excess": m.excess} for m in self.modes},
            "tensors": [t.to_dict() for t in self.tensors],
        }


@dataclass(frozen=True)
class PeakReport:
    """:func:`report`'s result: one :class:`FunctionPeak` per function."""

    functions: tuple
    top: int | None

    def __iter__(self):
        return iter(self.functions)

    def __getitem__(self, name: str) -> FunctionPeak:
        for f in self.functions:
            if f.function == name:
                return f
        raise KeyError(name)

    def to_dict(self) -> dict:
        return {"top": self.top, "functions": [f.to_dict() for f in self.functions]}


def peak_of(tl: FunctionTimeline, top: int | None = 10) -> FunctionPeak:
    """The :class:`FunctionPeak` of one timeline (``top``: most tensors listed; None = all)."""
    step = tl.peak_step
    live = tl.live_at(step) if tl.n_tensors else np.zeros(0, dtype=np.int64)
    order = live[np.lexsort((tl.start[live], -tl.size[live]))]
    if top is not None:
        order = order[:top]
    tensors = tuple(
        PeakTensor(
            name=tl.names[i], shape=tl.shapes[i], dtype=tl.dtypes[i], nbytes=int(tl.size[i]),
            binding=tl.bindings[i], start=int(tl.start[i]), end=int(tl.end[i]),
            placement={m: (int(p.storage[i]), int(p.offset[i])) for m, p in tl.placements.items()},
        )
        for i in order.tolist()
    )
    lb = tl.lower_bound
    modes = tuple(
        ModeTotal(m, p.total_bytes, len(p.storage_bytes),
                  None if p.total_bytes is None or not lb else p.total_bytes / lb - 1.0)
        for m, p in tl.placements.items()
    )
    return FunctionPeak(tl.function, tl.n_steps, tl.n_tensors, step, tl.peak_bytes, lb, int(live.shape[0]),
                        tensors, modes, tl.n_symbolic)


def report(source, *, top: int | None = 10, modes=MODES, functions=None, time_limit=ARENA_TIME_LIMIT,
           alignment: int = 64) -> PeakReport:
    """The tensors live at each function's peak, with each mode's placement and totals.

    Parameters
    ----------
    source : IRModule, PlannedModule, list of PlannedModule, or list of FunctionTimeline
        As :func:`timelines` (an IRModule after ``CallTIRRewrite`` is planned in ``modes``),
        or its result (planned once, shared with :func:`memcore_py.planning.plot.plot_plan`).
    top : int or None, default 10
        Most tensors listed per function (largest first); None lists all live ones.
    modes, functions, time_limit, alignment
        As :func:`timelines`.

    Returns
    -------
    PeakReport
        Iterable of :class:`FunctionPeak`; ``report[name]`` picks a function;
        :meth:`PeakReport.to_dict` is JSON-ready; :func:`format_report` is the text.

    Raises
    ------
    PlanningError
        ``top`` not a non-negative int, or as :func:`timelines`.

    Examples
    --------
    >>> from memcore_py.examples.models import load_model
    >>> rep = report(load_model("resnet50"), top=3, modes=("tvm",))
    >>> [t.name for t in rep["main"].tensors]  # doctest: +SKIP
    ['alloc10', 'alloc9', 'alloc8']
    """
    if top is not None and (isinstance(top, bool) or not isinstance(top, int) or top < 0):
        raise PlanningError(f"top must be a non-negative int or None; got {top!r}")
    tls = as_timelines(source, modes=modes, time_limit=time_limit, alignment=alignment, functions=functions)
    return PeakReport(tuple(peak_of(tl, top) for tl in tls), top)


def as_timelines(source, *, functions=None, **options) -> list:
    """``source`` itself when it is a list of :class:`FunctionTimeline` (only ``functions``
    applies), else :func:`timelines` of it."""
    if isinstance(source, (list, tuple)) and source and all(isinstance(t, FunctionTimeline) for t in source):
        if functions is None:
            return list(source)
        known = [t.function for t in source]
        unknown = [f for f in functions if f not in known]
        if unknown:
            raise PlanningError(f"no timeline of function {unknown[0]!r}; got {known}")
        return [t for t in source if t.function in functions]
    return timelines(source, functions=functions, **options)


# ---------------------------------------------------------------------------------------------
# Text
# ---------------------------------------------------------------------------------------------


def format_bytes(n: int | None) -> str:
    """``12.34 MiB`` style; ``?`` for unknown (symbolic)."""
    if n is None:
        return "?"
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n} B"


def _table(header, rows) -> list:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    right = {i for i, h in enumerate(header) if h in ("bytes", "share", "offset", "storage")}

    def fmt(cells):
        return "  ".join(
            c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths))
        ).rstrip()

    return [fmt(header), fmt(["-" * w for w in widths]), *(fmt(r) for r in rows)]


def format_report(rep: PeakReport, *, max_binding: int = 60) -> str:
    """Plain text of a :class:`PeakReport`: per function a header line (peak step and bytes,
    lower bound, each mode's bytes and excess) and a table of the peak tensors."""
    out = []
    for f in rep.functions:
        modes = "; ".join(
            f"{m.mode} {format_bytes(m.bytes)}" + ("" if m.excess is None else f" ({m.excess:+.1%} over bound)")
            for m in f.modes
        )
        out.append(f"function {f.function}: peak {format_bytes(f.peak_bytes)} at step {f.step} of {f.n_steps}, "
                   f"{f.n_live} of {f.n_tensors} tensors live; lower bound {format_bytes(f.lower_bound)}; {modes}")
        if f.n_symbolic:
            out.append(f"  ({f.n_symbolic} symbolic-size tensors not counted)")
        if not f.tensors:
            out.append("")
            continue
        mode_names = [m.mode for m in f.modes]
        header = ["name", "shape", "dtype", "bytes", "share", "lifetime",
                  *(f"{m} storage+offset" for m in mode_names), "written by"]
        rows = []
        for t in f.tensors:
            binding = t.binding if len(t.binding) <= max_binding else t.binding[:max_binding - 3] + "..."
            rows.append([
                t.name, "(" + ", ".join(str(d) for d in t.shape) + ")", t.dtype, format_bytes(t.nbytes),
                f"{t.nbytes / f.peak_bytes:.1%}" if f.peak_bytes else "-", f"[{t.start}, {t.end}]",
                *(f"s{t.placement[m][0]}+{t.placement[m][1]}" for m in mode_names), binding,
            ])
        out.extend("  " + line for line in _table(header, rows))
        if f.n_live > len(f.tensors):
            rest = f.peak_bytes - sum(t.nbytes for t in f.tensors)
            out.append(f"  ... and {f.n_live - len(f.tensors)} more live tensors ({format_bytes(rest)})")
        out.append("")
    return "\n".join(out).rstrip("\n")
