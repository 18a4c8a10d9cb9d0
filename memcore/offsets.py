"""Offset packing: put every buffer at a byte offset inside one arena.

Given inclusive live intervals ``[start, end]`` and sizes (the contract of
:mod:`memcore.liveness`), choose ``offset[i]`` so that two buffers that are live at a common
step and both non-empty never share a byte, and the arena ``max(offset + size)`` is small.
This is the dynamic storage allocation problem (NP-hard); the load bound
``max_live_bytes`` is what every plan is measured against.

Design
------
Stage 1, *heuristics* (the compiled kernels in ``memcore/_offsets.pyx``). Every heuristic is
"take the buffers in a priority order and place each one by a rule":

- the **order** is a stable radix sort by one or more integer keys (ties by index);
- the **rule** is best fit (smallest gap between the already placed buffers it conflicts
  with, TFLite's ``GreedyBySizeAssignment``) or first fit (lowest such gap);
- the **conflicting placed buffers** come, in offset order, from a *sweep* over starts
  for start order (the live buffers are pairwise disjoint, so the rule is an ordinary
  allocator: sorted live offsets, a heap of ends, free gaps sorted by size) or from a
  *levelled bucket index over time* for any other order: about O(n x conflicts) instead
  of the naive O(n^2). Small inputs run every heuristic; see ``auto`` for large ones.
  Validation aside, stage 1 is one kernel call (``_offsets._py_heuristics``: time
  compression, the lower bound and the heuristics in turn on one scratch block): no
  per-heuristic numpy work arrays, which dominated on the few hundred tensors of a model.
  A heuristic stops as soon as it can no longer be ``auto``'s answer (its first top above
  the bound when a later heuristic may still reach it, else above the best arena so far).

Stage 2, *search* (only with ``time_limit``), anytime and never worse than stage 1:

- **dfs** (small problems): a complete depth-first search that builds the packing from
  the bottom up, in the spirit of MiniMalloc (Moffitt, ASPLOS 2023) but with its own
  branching: time is cut into sections; each node fills the section with the lowest
  *usable* level (the lowest offset any unplaced buffer covering it can still take) with
  one of the buffers that can sit exactly there, or declares that point empty; a section
  whose usable level plus the sizes still to place over it exceeds the target height
  prunes the node. Randomised restarts (Luby schedule) with six branching rules (three
  candidate orders x two fail-first section tie-breaks), on the problem and on its
  time-mirrored copy, alternating between the lower bound and heights between the bound
  and the best plan found.
- **ils** (larger problems): iterated greedy, re-placing the buffers in locally shuffled
  copies of the best order found so far.

Both stop as soon as a plan reaches the lower bound.
"""

import math
import time
from dataclasses import dataclass, field

import numpy as np

from . import _offsets
from ._errors import InvalidArrayError
from ._validate import as_aligned_interval_arrays, as_int_scalar

__all__ = ["OffsetPlan", "plan_offsets", "ALGORITHMS", "HEURISTICS"]

# Order codes of the kernel (memcore/_offsets.pyx, the ORD_* enum).
_ORD_SIZE, _ORD_START, _ORD_LIFETIME, _ORD_AREA, _ORD_BREADTH, _ORD_CONFLICT = range(6)

#: heuristic name -> (order code, first fit?, sweep?)
_HEURISTIC_SPEC = {
    "greedy_size": (_ORD_SIZE, False, False),
    "greedy_start": (_ORD_START, False, True),
    "greedy_lifetime": (_ORD_LIFETIME, False, False),
    "greedy_area": (_ORD_AREA, False, False),
    "greedy_breadth": (_ORD_BREADTH, False, False),
    "greedy_conflict": (_ORD_CONFLICT, False, False),
    "first_fit": (_ORD_SIZE, True, False),
}

#: The deterministic heuristics, in the order ``auto`` runs them on more than
#: :data:`_SIZE_FIRST_MAX_N` buffers (cheapest first: the start sweep needs no index; then the
#: orders most often optimal on real models).
HEURISTICS = (
    "greedy_start",
    "greedy_breadth",
    "greedy_conflict",
    "greedy_size",
    "first_fit",
    "greedy_lifetime",
    "greedy_area",
)

#: Every valid ``algorithm`` argument.
ALGORITHMS = ("auto",) + HEURISTICS

#: ``auto`` on at most this many buffers runs :data:`_AUTO_SMALL` instead: size order first.
#: On the shipped models' pools (49-269 buffers) the size-ordered best fit costs less than
#: the start sweep and reaches the bound wherever ``greedy_breadth`` does (llama static and
#: bounded, bert bounded, where the sweep misses it), for less than breadth costs (it needs no
#: range maximum), so ``auto`` stops earlier there. Above a few hundred buffers its O(n x C)
#: bucket queries cost more than the sweep, the more so the larger the pool, and a failed size
#: run before a breadth run that reaches the bound is pure loss (bench/README.md, "Small
#: modules and dynamic shapes", has the measurements).
_SIZE_FIRST_MAX_N = 320
_AUTO_SMALL = ("greedy_size", "greedy_start") + tuple(
    name for name in HEURISTICS if name not in ("greedy_size", "greedy_start"))

#: ``auto`` on more buffers than this runs only the heuristics of ``_AUTO_LARGE``: the
#: size-ordered ones cost O(n x C) bucket queries (C = placed buffers each conflicts with),
#: seconds per heuristic at a million buffers, while the start sweep stays near-linear.
_AUTO_FULL_MAX_N = 200_000
_AUTO_LARGE = ("greedy_start",)


def _auto_order(n: int) -> tuple:
    """The heuristics ``algorithm="auto"`` runs on ``n`` buffers, in its order."""
    if n <= _SIZE_FIRST_MAX_N:
        return _AUTO_SMALL
    return HEURISTICS if n <= _AUTO_FULL_MAX_N else _AUTO_LARGE


#: The kernel's arguments for each sequence of heuristics that plan_offsets runs.
_SPECS = {
    names: tuple(_HEURISTIC_SPEC[name] for name in names)
    for names in [HEURISTICS, _AUTO_SMALL, _AUTO_LARGE] + [(name,) for name in HEURISTICS]
}

#: The DFS is used while the sum of the buffers' spans (in sections) stays below this: one
#: search node costs about that many operations.
_DFS_MAX_COVER = 400_000
#: Nodes of the first DFS restart; later ones get Luby multiples of it.
_DFS_BASE_NODES = 2000
#: Cost of one iterated-greedy step relative to the start sweep that produced its order.
_ILS_SWEEP_COST_FACTOR = 10.0


@dataclass(frozen=True, eq=False)
class OffsetPlan:
    """An offset assignment for every buffer, with its quality.

    Returned by :func:`plan_offsets`; read-only. Compared by identity (the generated
    equality would compare the offset arrays elementwise).
    """

    offset: np.ndarray = field(repr=False)
    """ndarray of shape (n,), dtype=int64: byte offset of each buffer (a multiple of the
    alignment; 0 for empty buffers). Read-only."""
    arena_bytes: int
    """Bytes the arena needs: ``max(offset + aligned size)`` over non-empty buffers (0 if
    none)."""
    lower_bound: int
    """``max_live_bytes(start, end, size, alignment=alignment)``: no plan can be smaller."""
    algorithm: str
    """The algorithm whose plan this is: a heuristic name, ``"dfs"`` or ``"ils"``."""

    @property
    def gap(self):
        """Relative distance to the lower bound: ``arena_bytes / lower_bound - 1`` (0.0 when
        the lower bound is 0)."""
        if self.lower_bound == 0:
            return 0.0
        return (self.arena_bytes - self.lower_bound) / self.lower_bound


# -------------------------------------------------------------------------------------------
# Validation
# -------------------------------------------------------------------------------------------


def _check_algorithm(algorithm):
    if not isinstance(algorithm, str) or algorithm not in ALGORITHMS:
        valid = ", ".join(repr(a) for a in ALGORITHMS)
        raise InvalidArrayError(f"algorithm must be one of {valid}; got {algorithm!r}")
    return algorithm


def _check_time_limit(time_limit):
    if time_limit is None:
        return None
    if isinstance(time_limit, (bool, np.bool_)) or not isinstance(
        time_limit, (int, float, np.integer, np.floating)
    ):
        raise InvalidArrayError(
            "time_limit must be None or a positive finite number of seconds; "
            f"got {type(time_limit).__name__} {time_limit!r}"
        )
    try:
        value = float(time_limit)
    except OverflowError:  # an int beyond float range (10**400): not finite either
        value = math.inf
    if not (math.isfinite(value) and value > 0):
        raise InvalidArrayError(
            "time_limit must be None or a positive finite number of seconds; "
            f"got {time_limit!r}"
        )
    return value


# -------------------------------------------------------------------------------------------
# The problem in kernel form
# -------------------------------------------------------------------------------------------


class _Problem:
    """Validated arrays plus what the search needs: sizes in alignment units, time points."""

    def __init__(self, start, end, aligned_size, alignment):
        self.start = start
        self.end = end
        self.alignment = alignment
        self.units = aligned_size // alignment if alignment > 1 else aligned_size
        self.n = start.shape[0]
        # time compressed to points 0..n_points-1, every intersection preserved (a shift
        # when the step range is small, else the ranks of the distinct values)
        self.s, self.e, self.n_points = _offsets._py_compress(start, end)

    def place(self, order, first_fit, sweep=False):
        """Offsets in units of the buffers of ``order``, placed one by one."""
        return _offsets._py_place(
            self.s, self.e, self.units, order, self.n_points, first_fit, sweep
        )

    def arena(self, offset_units):
        """Arena in units of a plan."""
        live = self.units > 0
        if not live.any():
            return 0
        return int((offset_units[live] + self.units[live]).max())


# -------------------------------------------------------------------------------------------
# Stage 2: anytime search
# -------------------------------------------------------------------------------------------


def _luby(i):
    """The i-th term (1-based) of the Luby restart sequence 1 1 2 1 1 2 4 1 ..."""
    k = 1
    while (1 << k) - 1 < i:
        k += 1
    while i != (1 << k) - 1:
        i -= (1 << (k - 1)) - 1
        k = 1
        while (1 << k) - 1 < i:
            k += 1
    return 1 << (k - 1)


def _sections(prob, live):
    """Section span (first, last) of each live buffer: sections are the elementary time
    intervals between consecutive start and end + 1 points."""
    s, e = prob.s[live], prob.e[live]
    bounds = np.unique(np.concatenate([s, e + 1]))
    first = np.searchsorted(bounds, s).astype(np.int64)
    last = (np.searchsorted(bounds, e + 1) - 1).astype(np.int64)
    return first, last


def _search_dfs(prob, best, best_arena, lb, deadline):
    """Restarted DFS; returns an improved (offset, arena) in units, or None.

    Heights are in units of g = gcd of the sizes (every arena is a multiple of it). Two
    solvers see the same problem, one with time mirrored (a packing of one is a packing
    of the other, but the searches differ). Restarts cycle over (plain, mirrored) x (the
    lower bound, an improvement target: halfway between it and the best plan, or just
    below the best plan), with the branching rule, randomisation and a Luby node budget
    changing from round to round.
    """
    live = np.flatnonzero(prob.units > 0)
    if live.shape[0] > _DFS_MAX_COVER:  # every buffer covers at least one section
        return None
    first, last = _sections(prob, live)
    if int((last - first).sum()) + live.shape[0] > _DFS_MAX_COVER:
        return None
    g = int(np.gcd.reduce(prob.units[live]))
    units = prob.units[live] // g
    n_sec = int(last.max()) + 1
    solvers = (
        _offsets._DfsSolver(first, last, units),
        _offsets._DfsSolver(n_sec - 1 - last, n_sec - 1 - first, units),
    )
    target_lb = -(-lb // g)
    found = None
    lb_impossible = False
    k = -1
    while best_arena > lb and _offsets._py_monotonic() < deadline:
        k += 1
        solver = solvers[k % 2]
        aim_lb = (k // 2) % 2 == 0
        round_ = k // 4
        best_g = best_arena // g  # best_arena is a multiple of g
        if aim_lb and not lb_impossible:
            height = target_lb
        elif round_ % 2 == 0:
            height = (target_lb + best_g) // 2
        else:
            height = best_g - 1
        height = max(height, target_lb)
        if height >= best_g:
            continue
        rule = round_ % 6
        seed = 0 if round_ < 6 else k
        status, off = solver.run(height, deadline, rule, seed, _DFS_BASE_NODES * _luby(round_ + 1))
        if status == 1:
            offset = np.zeros(prob.n, dtype=np.int64)
            offset[live] = off * g
            found = (offset, prob.arena(offset))
            best_arena = found[1]
        elif status == 0 and height == target_lb:
            lb_impossible = True
    return found


def _search_ils(prob, order, first_fit, best_arena, lb, deadline, cost, seed=0):
    """Iterated greedy; returns an improved (offset, arena) in units, or None.

    Each step re-places the buffers in a copy of the current order whose priorities were
    jittered by up to a random fraction (0.1-5 %) of the number of buffers, and keeps it
    when the arena does not grow (sideways moves let it cross plateaus).
    """
    rng = np.random.default_rng(seed)
    m = order.shape[0]
    if m < 2:
        return None
    current, current_arena = order, best_arena
    found = None
    last_cost = cost  # seconds per step, from the heuristic's own run at first
    rank = np.arange(m, dtype=np.float64)
    while best_arena > lb:
        now = time.perf_counter()
        if _offsets._py_monotonic() + last_cost > deadline:
            break
        width = max(2.0, m * rng.uniform(0.001, 0.05))
        trial = current[np.argsort(rank + rng.uniform(0.0, width, m), kind="stable")]
        offset = prob.place(trial, first_fit)
        arena = prob.arena(offset)
        last_cost = time.perf_counter() - now
        if arena <= current_arena:
            current, current_arena = trial, arena
        if arena < best_arena:
            best_arena = arena
            found = (offset, arena)
    return found


# -------------------------------------------------------------------------------------------
# Public API
# -------------------------------------------------------------------------------------------


def plan_offsets(start, end, size, *, alignment=1, algorithm="auto", time_limit=None, check=True):
    """Assign every buffer a byte offset in one arena so that live buffers never overlap.

    Parameters
    ----------
    start, end : ndarray of shape (n,), dtype=int64
        Inclusive live intervals (contract of :mod:`memcore.liveness`: ``start`` may be -1,
        ``end`` may be ``n_steps``; any int64 with ``start <= end`` is accepted). Any integer
        array-like is converted losslessly.
    size : ndarray of shape (n,), dtype=int64
        Bytes of each buffer, ``>= 0``. Sizes are rounded up to ``alignment`` for packing.
    alignment : int, default=1
        Every offset is a multiple of it (``>= 1``).
    algorithm : str, default="auto"
        ``"auto"`` or one of the heuristics below (:data:`ALGORITHMS`).
    time_limit : float or None, default=None
        Seconds (from the call) for an anytime search that starts from the heuristic's plan
        and keeps the best plan found; the result is never worse than without it. ``None``:
        no search.
    check : bool, default=True
        Validate the arrays. ``False`` is for internal callers that build them (memcore_py's
        planning layer): C-contiguous int64 arrays of one length, ``start <= end``, sizes
        ``>= 0`` whose aligned sum fits in int64, ``alignment`` an int ``>= 1``.

    Returns
    -------
    OffsetPlan
        ``offset`` (int64, shape (n,), read-only), ``arena_bytes``, ``lower_bound``
        (= ``max_live_bytes(start, end, size, alignment=alignment)``), ``algorithm`` (the
        heuristic that won for ``"auto"``, ``"dfs"`` or ``"ils"`` when the search improved
        the plan) and ``gap``.

    Raises
    ------
    InvalidArrayError
        Wrong dtype/shape/length, ``end < start``, a negative size, ``alignment < 1``, a
        rounded size total that does not fit in int64, an unknown ``algorithm`` (the message
        lists the valid names) or a ``time_limit`` that is not a positive finite number.
        ``InvalidArrayError`` is a ``ValueError``.

    Notes
    -----
    Two buffers *conflict* iff their inclusive intervals intersect and both sizes are > 0;
    empty buffers get offset 0. Every heuristic places the non-empty buffers one by one in a
    priority order (ties always go to the lower buffer index; sizes are the aligned sizes):

    ``greedy_size``
        Size descending, best fit: TFLite's ``GreedyBySizeAssignment`` / Pisarchyk & Lee's
        "greedy by size for offset calculation". Best fit = walk the placed buffers that
        conflict with the new one in offset order, starting from offset 0; take the
        smallest gap that is large enough (the lowest on ties), else go right above the
        highest of them.
    ``greedy_start``
        Start ascending, then size descending; best fit.
    ``greedy_lifetime``
        ``end - start`` descending, then size descending; best fit.
    ``greedy_area``
        ``size * (end - start + 1)`` descending (exact, 128-bit), then size; best fit.
    ``greedy_breadth``
        Pisarchyk & Lee's "greedy by breadth": steps by live bytes descending (earlier step
        first on ties), each step's buffers by size descending, each buffer at its first
        step in that order. Equivalently: by the largest live-bytes over its lifetime
        descending, the first step reaching it ascending, size descending. Best fit.
    ``greedy_conflict``
        Number of other non-empty buffers it conflicts with descending, then size; best
        fit.
    ``first_fit``
        Size descending, first fit (the lowest gap that is large enough).
    ``auto``
        Runs the heuristics in the order of :data:`HEURISTICS` (cheapest first; on at most
        320 buffers ``greedy_size`` then ``greedy_start`` first, cheaper there) and keeps
        the first plan with the smallest arena, stopping as soon as one equals the lower
        bound. (A heuristic is cut short once it can no longer be that plan: at its first
        buffer placed above the bound, or above the best arena so far; the result is the
        same.) Above 200 000 buffers it runs only ``greedy_start``, the one whose cost stays
        near-linear (a million buffers in well under a second); on random workloads its
        gap is about twice ``first_fit``'s, so pass ``algorithm="first_fit"`` (seconds at
        that scale) when memory matters more than planning time.

    Complexity: orders are O(n) radix sorts (``greedy_breadth`` adds an O(n log n) range
    maximum). Start order uses a sweep (a free-gap allocator over the live buffers):
    O(n log L) searches plus O(n * L) memmove, L the buffers live at a time. Other orders
    use the bucket index: about O(n * E) for E the entries in the buckets a query visits
    (about twice the placed buffers it conflicts with), the conflicting ones coalesced into
    their union before the runs are merged.

    With ``time_limit`` the search runs after the heuristic until the deadline or the lower
    bound: the DFS described in the module docstring when the sum of spans (in time
    sections) is at most 400 000, else iterated greedy. The deadline is checked every 1024
    DFS nodes and before each iterated-greedy step (a step that would not finish in time
    is not started), so the call returns close to ``time_limit`` seconds after it began,
    or later only when the heuristic alone takes longer. The result can depend on how much
    the search could explore, i.e. on the machine's speed.

    Examples
    --------
    TFLite GPU's ``ComplexRecords`` test vector:

    >>> from memcore import plan_offsets
    >>> size = [32, 32, 8, 16, 8, 64, 8, 8, 16]
    >>> start = [0, 1, 2, 3, 4, 5, 6, 7, 8]
    >>> end = [1, 4, 5, 5, 5, 7, 8, 8, 9]
    >>> plan = plan_offsets(start, end, size, algorithm="greedy_size")
    >>> plan.offset.tolist(), plan.arena_bytes, plan.lower_bound
    ([0, 32, 80, 64, 88, 0, 64, 72, 0], 96, 96)
    >>> plan_offsets(start, end, size, alignment=64).arena_bytes
    256
    """
    t0 = _offsets._py_monotonic()
    # Step 1. Validate once, at the boundary (the same checks as max_live_bytes).
    if check:
        start, end, size = as_aligned_interval_arrays(start, end, size, alignment)
        alignment = as_int_scalar("alignment", alignment, low=1)
    algorithm = _check_algorithm(algorithm)
    time_limit = _check_time_limit(time_limit)
    offset, arena, lower, winner = _pack(start, end, size, alignment, algorithm, time_limit, t0)
    offset.flags.writeable = False
    return OffsetPlan(offset=offset, arena_bytes=arena, lower_bound=lower, algorithm=winner)


def pack_trusted(start, end, size, alignment, time_limit):
    """:func:`plan_offsets` ``(..., algorithm="auto", check=False)`` as a plain tuple
    ``(offset, arena_bytes, lower_bound, algorithm)``, ``offset`` writable.

    For internal callers that built the arrays (``check=False``'s contract); ``time_limit``
    is still checked. memcore_py's arena planner calls it once per pool of a pass: the
    :class:`OffsetPlan` record and the read-only flag cost a fifth of a small pool's packing.
    """
    t0 = _offsets._py_monotonic()
    return _pack(start, end, size, alignment, "auto", _check_time_limit(time_limit), t0)


def _pack(start, end, size, alignment, algorithm, time_limit, t0):
    """Steps 2-3 of :func:`plan_offsets` on checked arguments (``t0``: the call's start on
    the search's clock). Returns ``(offset, arena, lower, winner)``."""
    # Step 2. Heuristics, with the time compression and the bound: one kernel call (the
    # kernel rounds the sizes up to the alignment; validated ones are already rounded).
    if algorithm == "auto":
        names = _auto_order(start.shape[0])
    else:
        names = (algorithm,)
    offset, arena, order, k, cost, lower = _offsets._py_heuristics(
        start, end, size, alignment, _SPECS[names]
    )
    winner = names[k]

    # Step 3. Anytime search until the deadline, in alignment units.
    if time_limit is not None and arena > lower:
        aligned = (size + (alignment - 1)) // alignment * alignment if alignment > 1 else size
        prob = _Problem(start, end, aligned, alignment)
        lb_units, offset, arena = lower // alignment, offset // alignment, arena // alignment
        deadline = t0 + time_limit
        found = _search_dfs(prob, offset, arena, lb_units, deadline)
        if found is not None:
            offset, arena = found
            winner = "dfs"
        if arena > lb_units and _offsets._py_monotonic() < deadline:
            _, first_fit, sweep = _HEURISTIC_SPEC.get(winner, (0, False, False))
            # A jittered order is no longer sorted by start: its steps use the bucket
            # index, about ten times the sweep's cost. Skip a step that would overrun.
            cost *= _ILS_SWEEP_COST_FACTOR if sweep else 1.0
            found = _search_ils(prob, order, first_fit, arena, lb_units, deadline, cost)
            if found is not None:
                offset, arena = found
                winner = "ils"
        offset, arena = offset * alignment, arena * alignment

    return offset, arena, lower, winner
