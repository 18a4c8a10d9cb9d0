"""memcore as ExecuTorch's memory planner.

Public API
----------
- :func:`memcore_algorithm` ``(**options)``: an algorithm for ExecuTorch's
  ``MemoryPlanningAlgorithmSuite(algo_list=[...])``, called as ExecuTorch calls ``greedy``:
  ``(alignment, specs, graph_module, graph_signature, extra_padding=0, **kwargs) ->
  MemoryAlgoResult``.
- :func:`memory_planning_pass` ``(**kwargs)``: a ``MemoryPlanningPass`` using it, for
  ``ExecutorchBackendConfig(memory_planning_pass=memory_planning_pass())``.
- :func:`compare_with_greedy` ``(programs, **options)``: lower a program (or one per method)
  with ExecuTorch's greedy and with memcore; per method and mem_id both arenas and the lower
  bound (``memcore plan FILE --executorch`` prints it).

ExecuTorch is imported only when these are called; importing this package needs neither
ExecuTorch nor torch.

Example::

    import torch
    from executorch.exir import ExecutorchBackendConfig, to_edge
    from memcore_py.executorch import memory_planning_pass

    edge = to_edge(torch.export.export(model, args))
    program = edge.to_executorch(ExecutorchBackendConfig(memory_planning_pass=memory_planning_pass()))
    open("model.pte", "wb").write(program.buffer)

Design
------
ExecuTorch's specs become one flat problem per ``mem_id`` (:mod:`.specs`), packed by
:func:`memcore.plan_offsets` and checked by :func:`memcore.verify_offsets` (:mod:`.layout`),
and the answer goes back as ExecuTorch's ``MemoryAlgoResult`` (:mod:`.algorithm`). What the
algorithm honours, as ExecuTorch's ``greedy`` does: ``mem_id`` (None = 1, pre-set kept, one
arena each), ``alignment`` (``spec.realign``), ``extra_padding``, ``storage_base`` aliases
(chains; placed at their base's offset plus ``storage_base_offset``), the
``input_mem_buffer_sizes`` reservation of control-flow submodules, and
``allow_overlapping_allocations=False`` (a shared-object plan). Specs it cannot plan raise
:class:`InvalidSpecError` or :class:`UnsupportedSpecError` naming the spec. ``mem_obj_id``:
two specs sharing a byte share an id (ExecuTorch's Verifier requires it).

Multi-method programs: every method is planned on its own, its activations in mem_id 1 and,
with ``share_mutable_buffers``, the shared state in mem_id 2 at the same offset in every
method (ExecuTorch's ``run_multimethod``). ExecuTorch's C++ ``Module`` with
``share_memory_arenas`` already gives all methods one buffer per mem_id sized to the largest
method's need, so an arena shared across methods is not built here: it would need the same
bytes.

ExecuTorch's own tests (``executorch/exir/tests/test_memory_planning.py`` in the 1.5.1 wheel,
45 tests) with ``greedy`` replaced by this algorithm: the 29 that reach the algorithm pass
(``tests/executorch/test_executorch_own_suite.py`` lists them and says why the other 16 never
call it: ``naive`` parametrizations, Verifier-only tests, and lowerings through ExecuTorch's
default config, whose pass was built with the original greedy at import). All but one are
algorithm-agnostic; ``TestMisc::test_multiple_pools_1`` pins greedy's exact offsets, which
memcore's plan of that program happens to match.
"""
from .algorithm import META_KEY, MemcoreAlgorithm, memcore_algorithm, memory_planning_pass
from .compare import Comparison, MemIdComparison, compare_with_greedy
from .errors import ExecuTorchPlanningError, InvalidOptionError, InvalidSpecError, UnsupportedSpecError
from .layout import ArenaReport

__all__ = [
    "memcore_algorithm",
    "memory_planning_pass",
    "compare_with_greedy",
    "Comparison",
    "MemIdComparison",
    "MemcoreAlgorithm",
    "ArenaReport",
    "META_KEY",
    "ExecuTorchPlanningError",
    "InvalidSpecError",
    "UnsupportedSpecError",
    "InvalidOptionError",
]
