"""memcore as an ExecuTorch memory-planning algorithm.

Design
------
ExecuTorch's ``MemoryPlanningPass`` runs a ``MemoryPlanningAlgorithmSuite``, which calls
each algorithm of its list positionally as ``algo(alignment, specs, graph_module,
graph_signature, extra_padding)`` and keeps the ``MemoryAlgoResult`` with the smallest
``sum(bufsizes)``, writing its ``mem_id`` / ``mem_obj_id`` / ``mem_offset`` back onto the
specs. :class:`MemcoreAlgorithm` is such an algorithm:

1. read the specs into a flat table (:func:`~memcore_py.executorch.specs.read_specs`:
   lifetimes, aligned sizes, arenas, ``storage_base`` chains resolved);
2. plan each arena with the engine and verify it
   (:func:`~memcore_py.executorch.layout.plan_layout`), keeping
   ``graph_module.input_mem_buffer_sizes`` free for control-flow submodules;
3. answer in ExecuTorch's ``MemoryAlgoResult`` (imported here, on call).

It sets nothing on the specs but ``alignment`` (``spec.realign``, as ExecuTorch's own
algorithms do): the suite writes the chosen result back. The per-arena report
(:class:`~memcore_py.executorch.layout.ArenaReport`: bytes, lower bound, reservation) of the
last call on a graph module is left in ``graph_module.meta["memcore_arenas"]``.

What the pass decides, not the algorithm: which specs are planned at all (graph inputs and
outputs with ``alloc_graph_input`` / ``alloc_graph_output``, mutable buffers with
``alloc_mutable_buffers`` / ``share_mutable_buffers``, dynamic unbound tensors never),
submodule planning (the pass calls the algorithm once per ``cond`` branch, ``while`` body
or ``map`` function, then on the parent with the reservation), and the per-device split.
"""
from __future__ import annotations

import numpy as np

from ..planning.arena_options import ARENA_TIME_LIMIT
from .errors import InvalidOptionError
from .layout import plan_layout
from .specs import read_specs

__all__ = ["META_KEY", "MemcoreAlgorithm", "memcore_algorithm", "memory_planning_pass"]

#: ``graph_module.meta`` key holding the tuple of ArenaReport of the last call.
META_KEY = "memcore_arenas"


def _check_int(name, value, low):
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < low:
        raise InvalidOptionError(f"{name} must be an int >= {low}; got {value!r}")
    return int(value)


def _reservations(graph_module):
    reserved = getattr(graph_module, "input_mem_buffer_sizes", None)
    if not reserved:
        return ()
    if not isinstance(reserved, (list, tuple)):
        raise InvalidOptionError(f"graph_module.input_mem_buffer_sizes must be a list of ints; got {reserved!r}")
    return tuple(_check_int(f"graph_module.input_mem_buffer_sizes[{m}]", r, 0) for m, r in enumerate(reserved))


class MemcoreAlgorithm:
    """ExecuTorch memory-planning algorithm backed by memcore's offset packing.

    Parameters
    ----------
    algorithm : str, default="auto"
        Heuristic of :func:`memcore.plan_offsets` (``"auto"`` = best of them).
    time_limit : float or None, default=ARENA_TIME_LIMIT (0.1)
        Seconds of anytime search per arena after the heuristics, spent only while the plan
        is above the max-live lower bound (the search stops there). ``None``: heuristics
        only, fully deterministic; with a budget the result may depend on machine speed when
        the bound is not reached.
    allow_overlapping_allocations : bool, default=True
        As ExecuTorch's ``greedy``: ``False`` asks for a shared-object plan in which every
        tensor starts at the first byte of its ``mem_obj_id`` (aliases excepted).

    Notes
    -----
    Called as ``algo(alignment, specs, graph_module, graph_signature, extra_padding=0,
    **kwargs)``; ``allow_overlapping_allocations`` may also be given per call, as
    ``functools.partial(greedy, allow_overlapping_allocations=False)`` users do.
    ``__name__`` is ``"memcore"``: ``MemoryPlanningAlgorithmSuite`` keys its results by
    name, so two instances in one suite must be told apart (set ``__name__`` on one).
    """

    def __init__(self, *, algorithm="auto", time_limit=ARENA_TIME_LIMIT, allow_overlapping_allocations=True):
        self.algorithm = algorithm
        self.time_limit = time_limit
        self.allow_overlapping_allocations = bool(allow_overlapping_allocations)
        self.__name__ = "memcore"

    def __repr__(self):
        return (f"MemcoreAlgorithm(algorithm={self.algorithm!r}, time_limit={self.time_limit!r}, "
                f"allow_overlapping_allocations={self.allow_overlapping_allocations})")

    def __call__(self, alignment, specs, graph_module, graph_signature, extra_padding=0, **kwargs):
        """Plan ``specs``; return ExecuTorch's ``MemoryAlgoResult``.

        Parameters
        ----------
        alignment : int
            Byte alignment of every offset, ``>= 1``.
        specs : iterable of TensorSpec
            Specs with lifetimes set (a list or a set).
        graph_module : torch.fx.GraphModule or None
            Read for ``input_mem_buffer_sizes`` only; its ``meta`` receives the report.
        graph_signature : ExportGraphSignature or None
            Unused (the pass already chose the specs).
        extra_padding : int, default=0
            Bytes added to every arena in use.
        **kwargs
            ``allow_overlapping_allocations`` (bool) only.

        Returns
        -------
        executorch.exir.memory_planning.MemoryAlgoResult
            ``spec_dict`` (every spec -> mem_id, mem_obj_id, mem_offset) and ``bufsizes``
            (one slot per mem_id up to the highest in use, slot 0 = 0).

        Raises
        ------
        InvalidSpecError, UnsupportedSpecError
            A spec that cannot be planned (the message names it).
        InvalidOptionError
            ``alignment < 1``, ``extra_padding < 0``, a bad reservation, an unknown keyword.
        ExecuTorchPlanningError
            The plan failed its independent check.
        """
        from executorch.exir.memory_planning import MemoryAlgoResult, SpecAllocResult

        allow = kwargs.pop("allow_overlapping_allocations", self.allow_overlapping_allocations)
        if kwargs:
            raise InvalidOptionError(f"unexpected keyword arguments {sorted(kwargs)}")
        alignment = _check_int("alignment", alignment, 1)
        extra_padding = _check_int("extra_padding", extra_padding, 0)
        table = read_specs(specs, alignment)
        layout = plan_layout(table, alignment=alignment, extra_padding=extra_padding,
                             reserved=_reservations(graph_module), algorithm=self.algorithm,
                             time_limit=self.time_limit, shared_objects=not allow)
        result = MemoryAlgoResult({}, list(layout.bufsizes))
        for spec, mem_id, obj, offset in zip(table.specs, table.mem_id.tolist(),
                                             layout.mem_obj_id.tolist(), layout.offset.tolist()):
            result.spec_dict[spec] = SpecAllocResult(mem_id=mem_id, mem_obj_id=obj, mem_offset=offset)
        meta = getattr(graph_module, "meta", None)
        if isinstance(meta, dict):
            meta[META_KEY] = layout.arenas
        return result


def memcore_algorithm(**options) -> MemcoreAlgorithm:
    """memcore's ExecuTorch memory-planning algorithm.

    Parameters
    ----------
    **options
        ``algorithm``, ``time_limit``, ``allow_overlapping_allocations``
        (see :class:`MemcoreAlgorithm`).

    Returns
    -------
    MemcoreAlgorithm
        For ``MemoryPlanningAlgorithmSuite(algo_list=[memcore_algorithm()])``.

    Examples
    --------
    >>> from memcore_py.executorch import memcore_algorithm
    >>> memcore_algorithm(time_limit=None)
    MemcoreAlgorithm(algorithm='auto', time_limit=None, allow_overlapping_allocations=True)
    """
    return MemcoreAlgorithm(**options)


_ALGORITHM_OPTIONS = ("algorithm", "time_limit", "allow_overlapping_allocations")


def memory_planning_pass(**kwargs):
    """An ExecuTorch ``MemoryPlanningPass`` that plans with memcore.

    Parameters
    ----------
    **kwargs
        ``algorithm``, ``time_limit`` and ``allow_overlapping_allocations`` go to
        :func:`memcore_algorithm`; the rest to ``MemoryPlanningPass`` (``alloc_graph_input``,
        ``alloc_graph_output``, ``alloc_mutable_buffers``, ``share_mutable_buffers``,
        ``alignment``, ...).

    Returns
    -------
    executorch.exir.passes.MemoryPlanningPass
        For ``ExecutorchBackendConfig(memory_planning_pass=...)``. Pass a new one to each
        ``to_executorch`` call: ExecuTorch's default config holds a single pass object.
    """
    from executorch.exir.memory_planning import MemoryPlanningAlgorithmSuite
    from executorch.exir.passes import MemoryPlanningPass

    options = {k: kwargs.pop(k) for k in _ALGORITHM_OPTIONS if k in kwargs}
    suite = MemoryPlanningAlgorithmSuite(algo_list=[memcore_algorithm(**options)])
    return MemoryPlanningPass(memory_planning_algo=suite, **kwargs)
