"""Planning: which storage and offset each planned tensor gets, without touching the IR.

- :mod:`.memory_plan` — :class:`MemoryPlan` / :class:`StoragePlan`, the result every planner
  returns (per tensor: storage, offset; per storage: bytes, dtype, scope, device; totals and
  the lower bound).
- :mod:`.allocate` — StaticPlanBlockMemory's allocation stage (TVM's token reuse, arena
  packing): :func:`plan_memory` on a :class:`~memcore_py.analysis.storage_tokens.TokenProgram`.
- :mod:`.lower_bound` — the max-live bound per (function, scope, device) pool.
- :mod:`.emission` — where each storage is emitted (a binding it must precede).
- :mod:`.check` — an independent checker of planned IR.
- :mod:`.arena_options` — arena defaults shared by the pass and the CLI.
"""
from .allocate import MODES, plan_memory  # noqa: F401
from .arena_options import ARENA_TIME_LIMIT  # noqa: F401
from .check import PlannedStorage, PlannedStorages, collect_planned_tensors, verify_planned  # noqa: F401
from .emission import EmissionSite, emission_sites  # noqa: F401
from .lower_bound import function_lower_bounds, pool_lower_bounds  # noqa: F401
from .memory_plan import MemoryPlan, StoragePlan  # noqa: F401
