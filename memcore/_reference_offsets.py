"""Pure-Python references of the offset-packing heuristics of :func:`memcore.plan_offsets`.

Used by tests and benchmarks only (``memcore._reference`` re-exports them); the package
never falls back to them. Each greedy is written the obvious way: build the priority order
with ``sorted`` and an explicit key tuple, then place the buffers one by one, scanning
*every* placed buffer for time conflicts (O(n^2)). The compiled kernels must return exactly
the same offsets.

The rules (the contract the kernels implement; see :mod:`memcore.offsets`):

- Sizes are rounded up to ``alignment`` first; every key below uses the rounded size.
- Buffers of size 0 conflict with nothing, take no part in any order and get offset 0.
- Two buffers conflict iff their inclusive intervals intersect and both sizes are > 0.
- Orders (ties always end with the buffer index, ascending):

  ========================  ===================================================
  ``size``                  size desc
  ``start``                 start asc, size desc
  ``lifetime``              (end - start) desc, size desc
  ``area``                  size * (end - start + 1) desc, size desc
  ``breadth``               B desc, t_B asc, size desc, where B is the largest
                            load (live bytes) over the buffer's lifetime and
                            t_B the first step reaching it
  ``conflict``              number of other non-empty buffers it conflicts
                            with desc, size desc
  ========================  ===================================================

- Placement: walk the conflicting placed buffers in offset order with ``prev`` = the
  highest top seen so far (starting at 0); each ``offset - prev`` is a gap. *Best fit* takes
  the smallest gap that is ``>= size`` (the lowest on ties), *first fit* the lowest such gap;
  when none fits the buffer goes at ``prev`` after the walk (on top of all conflicts).
"""

__all__ = [
    "ORDERS",
    "priority_order",
    "place_in_order",
    "greedy",
    "HEURISTICS",
    "reference_plan",
]

#: heuristic name -> (order name, placement rule)
HEURISTICS = {
    "greedy_size": ("size", "best"),
    "greedy_start": ("start", "best"),
    "greedy_lifetime": ("lifetime", "best"),
    "greedy_area": ("area", "best"),
    "greedy_breadth": ("breadth", "best"),
    "greedy_conflict": ("conflict", "best"),
    "first_fit": ("size", "first"),
}

ORDERS = ("size", "start", "lifetime", "area", "breadth", "conflict")


def _round_up(value, alignment):
    return -(-int(value) // alignment) * alignment


def _breadth_keys(start, end, size):
    """For each buffer: (largest load over its lifetime, first step reaching it)."""
    n = len(start)
    # The load only rises at a start, so its maximum over [s, e] is first reached at s or
    # at some later start inside the interval.
    times = sorted({start[i] for i in range(n) if size[i] > 0})
    load = {
        t: sum(size[j] for j in range(n) if size[j] > 0 and start[j] <= t <= end[j])
        for t in times
    }
    keys = []
    for i in range(n):
        best, best_t = -1, None
        for t in times:
            if start[i] <= t <= end[i] and load[t] > best:
                best, best_t = load[t], t
        keys.append((best, best_t))
    return keys


def priority_order(order, start, end, size):
    """Buffer indices with size > 0, sorted by the named order (sizes already rounded)."""
    n = len(start)
    live = [i for i in range(n) if size[i] > 0]
    if order == "size":
        key = lambda i: (-size[i], i)  # noqa: E731
    elif order == "start":
        key = lambda i: (start[i], -size[i], i)  # noqa: E731
    elif order == "lifetime":
        key = lambda i: (-(end[i] - start[i]), -size[i], i)  # noqa: E731
    elif order == "area":
        key = lambda i: (-size[i] * (end[i] - start[i] + 1), -size[i], i)  # noqa: E731
    elif order == "breadth":
        bk = _breadth_keys(start, end, size)
        key = lambda i: (-bk[i][0], bk[i][1], -size[i], i)  # noqa: E731
    elif order == "conflict":
        degree = [
            sum(1 for j in live if j != i and start[j] <= end[i] and start[i] <= end[j])
            for i in range(n)
        ]
        key = lambda i: (-degree[i], -size[i], i)  # noqa: E731
    else:
        raise ValueError(f"unknown order {order!r}")
    return sorted(live, key=key)


def place_in_order(order, start, end, size, rule="best"):
    """Place the buffers of ``order`` one by one; returns offsets (0 for the others)."""
    offset = [0] * len(start)
    placed = []
    for b in order:
        conflicts = sorted(
            (offset[p], offset[p] + size[p])
            for p in placed
            if start[p] <= end[b] and start[b] <= end[p]
        )
        prev, best, best_gap = 0, None, None
        for off, top in conflicts:
            gap = off - prev
            if gap >= size[b] and (best_gap is None or gap < best_gap):
                best, best_gap = prev, gap
                if rule == "first":
                    break
            prev = max(prev, top)
        offset[b] = prev if best is None else best
        placed.append(b)
    return offset


def greedy(name, start, end, size, *, alignment=1):
    """Reference of ``plan_offsets(..., algorithm=name)`` for one heuristic.

    Returns
    -------
    (offsets, arena_bytes) : (list of int, int)
    """
    order_name, rule = HEURISTICS[name]
    start = [int(x) for x in start]
    end = [int(x) for x in end]
    size = [_round_up(x, alignment) for x in size]
    order = priority_order(order_name, start, end, size)
    offset = place_in_order(order, start, end, size, rule)
    arena = max((offset[i] + size[i] for i in range(len(size)) if size[i] > 0), default=0)
    return offset, arena


def reference_plan(start, end, size, *, alignment=1, algorithm="greedy_size"):
    """Alias of :func:`greedy` with the keyword spelling of ``plan_offsets``."""
    return greedy(algorithm, start, end, size, alignment=alignment)
