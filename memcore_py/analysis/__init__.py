"""Analyses: IR in, flat arrays and result objects out (no rewriting, no planning).

- :mod:`.storage_tokens` — StaticPlanBlockMemory's Init phase: the token program
  (:class:`~.storage_tokens.TokenProgram`) and where the allocations sit
  (:class:`~.storage_tokens.AllocationSites`).
- :mod:`.last_usage` — KillAfterLastUse's last-use analysis.
- :mod:`.arith` — TVM's bound and size arithmetic for symbolic shapes.
- :mod:`.dataflow_inplace` — DataflowUseInplaceCalls' analyses of one dataflow block:
  :func:`dataflow_liveness`, :func:`dataflow_aliases`, :func:`inplace_opportunities`
  (TVM's testing entry points, same results and shapes).

Step numberings
---------------
Three numberings of binding positions are in use; each array or field says which it holds.

- **Per block** (``0..len(block.bindings)-1``): the flat-array contract of the engine
  (:mod:`memcore.liveness`: one planning unit = one block, ``-1`` = defined before it,
  ``n_steps`` = live after it), and the positions in
  :class:`~.storage_tokens.AllocationSites` (``tok_index``, ``block_ifs``, ``scope_anchor``,
  :class:`~memcore_py.planning.emission.EmissionSite`) that the SPBM rewriter splices at.
- **Per function** (bindings of all blocks one after another, If branches before the If
  binding itself): :mod:`memcore_py.planning.check` (``PlannedStorage.start`` / ``end``,
  ``n_steps``) and the last-use positions of :mod:`.last_usage`, because TVM keeps one
  allocation pool and one kill scope per function.
- **Module-wide** (visit order over every Relax function, If branches right after the If
  binding's own step, increasing): the token lifetimes and events of
  :class:`~.storage_tokens.TokenProgram` (``tok_start``, ``tok_end``, the event order), so
  one event program covers the whole module; a token never outlives its block, so lifetimes
  of different blocks or functions never overlap.
"""
from .dataflow_inplace import dataflow_aliases, dataflow_liveness, inplace_opportunities  # noqa: F401,E402

__all__ = ["dataflow_aliases", "dataflow_liveness", "inplace_opportunities"]
