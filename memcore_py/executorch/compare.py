"""Lower a torch program with ExecuTorch's greedy and with memcore; report both plans.

Design
------
:func:`compare_with_greedy` brings the program to ExecuTorch's edge dialect once, then lowers
two copies with ``to_executorch``: one with ExecuTorch's default ``MemoryPlanningPass``
(greedy), one with :func:`~memcore_py.executorch.memory_planning_pass`, every method with a
pass of its own (``ExecutorchBackendConfig(memory_planning_pass={method: pass})``). It reads
each method's ``non_const_buffer_sizes`` from both programs, and the lower bound from the
report memcore's algorithm leaves on the method's graph
(``graph_module.meta["memcore_arenas"]``): the max-live bytes of the planned tensors plus
the space reserved for control-flow submodules. Whole-pipeline numbers, so each algorithm's
submodule plans feed its own parent plan.
"""
from __future__ import annotations

import copy
import time
from dataclasses import asdict, dataclass

from ..planning.arena_options import ARENA_TIME_LIMIT
from .algorithm import META_KEY, memory_planning_pass

__all__ = ["MemIdComparison", "Comparison", "compare_with_greedy"]


@dataclass(frozen=True)
class MemIdComparison:
    """One arena of one method.

    Attributes
    ----------
    method : str
    mem_id : int
    greedy_bytes, memcore_bytes : int
        The arena's size in each lowered program.
    lower_bound : int or None
        ``reserved`` + max-live bytes of the tensors memcore planned in it (None: memcore
        planned nothing there, e.g. the shared-state arena of ``share_mutable_buffers``).
    reserved : int
        Bytes kept for control-flow submodules at the start of the arena.
    """

    method: str
    mem_id: int
    greedy_bytes: int
    memcore_bytes: int
    lower_bound: int | None
    reserved: int

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Comparison:
    """Rows for every method and mem_id, and the stage times in seconds
    (``to_edge``, ``greedy``, ``memcore``: each ``to_executorch`` whole)."""

    rows: tuple
    seconds: dict
    greedy_program: object
    memcore_program: object


def _sizes(program):
    return {plan.name: list(plan.non_const_buffer_sizes) for plan in program.executorch_program.execution_plan}


def compare_with_greedy(programs, *, algorithm="auto", time_limit=ARENA_TIME_LIMIT, **pass_kwargs) -> Comparison:
    """Lower ``programs`` with greedy and with memcore; compare their arenas.

    Parameters
    ----------
    programs : torch.export.ExportedProgram or dict of str to ExportedProgram
        One program (method ``forward``) or one per method.
    algorithm, time_limit
        memcore's options (:class:`~memcore_py.executorch.MemcoreAlgorithm`).
    **pass_kwargs
        ``MemoryPlanningPass`` options for both lowerings (``alloc_graph_input``,
        ``share_mutable_buffers``, ...).

    Returns
    -------
    Comparison
        The two ``ExecutorchProgramManager`` objects are kept (``.buffer`` is the ``.pte``).
    """
    from executorch.exir import ExecutorchBackendConfig, to_edge
    from executorch.exir.passes import MemoryPlanningPass

    methods = list(programs) if isinstance(programs, dict) else ["forward"]
    t0 = time.perf_counter()
    edge = to_edge(programs)
    seconds = {"to_edge": time.perf_counter() - t0}
    lowered = {}
    for label in ("greedy", "memcore"):
        if label == "greedy":
            passes = {m: MemoryPlanningPass(**pass_kwargs) for m in methods}
        else:
            passes = {m: memory_planning_pass(algorithm=algorithm, time_limit=time_limit, **pass_kwargs)
                      for m in methods}
        t0 = time.perf_counter()
        lowered[label] = copy.deepcopy(edge).to_executorch(ExecutorchBackendConfig(memory_planning_pass=passes))
        seconds[label] = time.perf_counter() - t0
    greedy_sizes, memcore_sizes = _sizes(lowered["greedy"]), _sizes(lowered["memcore"])
    rows = []
    for method in methods:
        arenas = lowered["memcore"].exported_program(method).graph_module.meta.get(META_KEY, ())
        by_id = {a.mem_id: a for a in arenas}
        ours, theirs = memcore_sizes[method], greedy_sizes[method]
        for mem_id in range(1, max(len(ours), len(theirs))):
            report = by_id.get(mem_id)
            rows.append(MemIdComparison(
                method=method, mem_id=mem_id,
                greedy_bytes=int(theirs[mem_id]) if mem_id < len(theirs) else 0,
                memcore_bytes=int(ours[mem_id]) if mem_id < len(ours) else 0,
                lower_bound=None if report is None else report.reserved + report.lower_bound,
                reserved=0 if report is None else report.reserved))
    return Comparison(rows=tuple(rows), seconds=seconds, greedy_program=lowered["greedy"],
                      memcore_program=lowered["memcore"])
