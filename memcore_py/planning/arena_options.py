"""Defaults of arena-mode planning, shared by the pass, the report and the CLI."""

#: Arena mode's default budget (seconds per pool) for :func:`memcore.plan_offsets`'s anytime
#: search. The search runs only when the best heuristic is above the max-live lower bound, and
#: stops as soon as it reaches it (every shipped real model does within a few ms), so the
#: budget is spent in full only on pools whose optimum is above the bound; there the result
#: may depend on machine speed. ``time_limit=None`` means heuristics only (fully
#: deterministic).
ARENA_TIME_LIMIT = 0.1
