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
- :mod:`.graph_plan_memory` — Relay's GraphPlanMemory on a graph-executor graph
  (:mod:`.graph_model`), exact, and its arena mode; :mod:`.graph_memory_plan` (the plan),
  :mod:`.texture` (the 2-D allocator), :mod:`.graph_from_ir` (IR in graph form -> graph).
- :mod:`.peak_report` — per-function memory timelines of both modes and the peak report
  (which tensors are live at the peak); :mod:`.plot` — the timeline plots (extra ``plot``,
  matplotlib imported on first use).
"""
from .allocate import MODES, plan_memory  # noqa: F401
from .arena_options import ARENA_TIME_LIMIT  # noqa: F401
from .check import PlannedStorage, PlannedStorages, collect_planned_tensors, verify_planned  # noqa: F401
from .emission import EmissionSite, emission_sites  # noqa: F401
from .graph_memory_plan import GraphMemoryPlan  # noqa: F401
from .graph_model import GraphError, GraphModel, make_graph  # noqa: F401
from .graph_plan_memory import GRAPH_MODES, graph_plan_memory  # noqa: F401
from .lower_bound import function_lower_bounds, pool_lower_bounds  # noqa: F401
from .memory_plan import MemoryPlan, StoragePlan  # noqa: F401
from .peak_report import format_report, graph_timeline, report, timelines  # noqa: F401
from .plot import PlotDependencyError, plot_offsets, plot_plan  # noqa: F401
