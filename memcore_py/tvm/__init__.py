"""memcore inside a TVM user's pipeline: an in-memory bridge to Apache TVM 0.27 objects and
memcore's memory passes as ``tvm.transform.Pass`` objects.

Public API
----------
- :func:`from_tvm` ``(tvm.IRModule) -> memcore IRModule`` and :func:`to_tvm`
  ``(memcore IRModule) -> tvm.IRModule``: object-by-object conversion through TVM's Python
  API and FFI constructors, no TVMScript text. ``to_tvm(from_tvm(m))`` is structurally equal
  to ``m`` (``tvm.ir.assert_structural_equal``) and ``from_tvm(m)`` to
  ``memcore_py.parse(m.script())``. PrimFuncs stay TVM objects: memcore's
  :class:`~memcore_py.ir.PrimFunc` carries the TVM object as ``source`` and reads its
  signature (params, attrs, text) only when asked (``PrimFunc.lazy``); ``to_tvm`` writes
  the object back untouched. What memcore does not model raises
  :class:`TVMConversionError` (an :class:`~memcore_py.errors.IRError`) naming it.
- :func:`StaticPlanBlockMemory` ``(mode="tvm" | "arena", ...)``, :func:`KillAfterLastUse`,
  :func:`LowerAllocTensor`, :func:`DataflowUseInplaceCalls`,
  :func:`AttachAttrLayoutFreeBuffers`: TVM module passes running memcore's passes.
- :func:`pipeline` ``(target, mode)``: TVM 0.27's default Relax build pipeline with those
  three swapped in, for ``tvm.compile(mod, target, relax_pipeline=pipeline(target, "arena"))``.

TVM is imported lazily (:mod:`memcore_py.tvm._api`), only by this package; importing
``memcore_py.tvm`` needs no TVM, calling it does.

TVM compatibility (:mod:`memcore_py.tvm.compat`): the compiled fast paths (the extractions
and the compiled reader, which read TVM's objects in memory) run only on a supported TVM
(``compat.SUPPORTED_TVM``) whose object layout passes a self-check. Otherwise the bridge warns
once (:class:`TVMVersionWarning` or :class:`TVMLayoutWarning`) and runs every pass on the
portable path: the full conversion through TVM's Python API. ``MEMCORE_TVM_PORTABLE=1`` forces
the portable path.

Design: full conversion with write-back by reuse; extraction for the memory passes
----------------------------------------------------------------------------------
Two designs were measured (same run, bert_base: 850 bindings, 28 PrimFuncs; TVM's own
StaticPlanBlockMemory + KillAfterLastUse on the ``tvm.IRModule`` take 8.2 ms):

1. *Extraction + write-back through TVM's mutator*: read only what planning needs and
   rewrite with ``relax.PyExprMutator``. Write-back floor (a no-op ``visit_call_`` over
   every call, the walk in C++): 1.2 ms. Extraction floor (FFI reads only: every binding's
   var, its type handle and the call's op and arguments, no memcore node built): 1.5-2.2 ms.
   But memcore's planner and kill analysis run on memcore IR (``analysis.storage_tokens``,
   ``analysis.last_usage``); extraction would need a second front-end for both over TVM
   objects, a copy of their logic (tokens, aliases, escapes, canonicalized bindings) that
   would have to stay TVM-exact on its own.
2. *Full conversion* (chosen): :func:`from_tvm` builds the memcore module (10.5 ms cold on
   bert_base, of which ~4 ms are FFI field reads: ~0.1-0.2 us per field, and a
   ``tvm_ffi.Array`` element costs ~0.25 us through the FFI's get-item, ~0.7 us through its
   Python iterator), the memcore pass runs unchanged, and the result is written back by
   *reuse*: :func:`from_tvm` records which TVM object every memcore node came from, and
   the writer returns that object for every node the pass kept (memcore passes are
   functional and keep unchanged nodes identical). Only new bindings are built with TVM's
   FFI constructors: 1.8 ms after StaticPlanBlockMemory on bert_base, less than the
   mutator's floor. One code path for planning (TVM-exact by the same tests), and the
   conversion is the public :func:`from_tvm` / :func:`to_tvm` pair.

Where the time goes (bench/bench_tvm_bridge.py, same run): the compiled reader
(:mod:`memcore_py.tvm._ffi_reader`, TVM's objects read from memory; the extraction floor
above no longer applies) and the compiled writer (:mod:`memcore_py.tvm._ffi_writer`, TVM's
constructors called through the tvm_ffi C API) brought the native StaticPlanBlockMemory +
KillAfterLastUse, conversion included, to 2.6-3.5x TVM's two passes on the static real
models, 3.4-4.6x with bounded and 4.1-6.2x with unbounded symbolic shapes, 4.8-7.8x on a
30k-binding chain (TVM's own time there varies between processes) and 8-9.5x at 300k. Consecutive native passes convert once (the second takes the first one's
written module, :class:`~memcore_py.tvm.passes._Handoff`): the three memory passes in one
``Sequential`` are 2.6-5.6x TVM's three on the real models.

3. *Extraction for LowerAllocTensor* (:mod:`memcore_py.tvm.lower_alloc_extract`, used when
   the pass is not handed a module): that pass changes only the allocation bindings of a
   flat function, so a C scan finds them and the blocks are rebuilt around them from the old
   bindings' addresses; allocations of constant shape are lowered in C, the others read,
   lowered by memcore's own lowerer and written. A lone call on a real model went from
   0.5-0.8x TVM's pass (the full read costs more than TVM's whole visit) to 4-25x, and on a
   20-binding module from 103 to 17 us (TVM 72 us on that VM).
4. *Extraction for the analyses too* (stop 25: :mod:`memcore_py.tvm.kill_extract`,
   :mod:`memcore_py.tvm.spbm_extract`). The objection in 1. was a second copy of the token
   and kill analyses. It is avoided where it matters: the C walks over TVM's objects fill the
   *same* tables as memcore's compiled walks (``VarTable`` / ``kill_schedule`` declared in
   ``_kill_walk.pxd``; ``InitWalk`` in ``_storage_walk.pxd``, decoded by the same
   ``walk_program`` into the same ``TokenProgram``), memcore's planner and its symbolic-size
   arithmetic run unchanged, and only the binding-level rules are restated, for flat
   functions alone (anything else declines to the full conversion). The tests compare the two
   paths and TVM on every shipped model and on random modules. What it bought on a 20-binding
   module: StaticPlanBlockMemory 149 -> 46 us (TVM 89), KillAfterLastUse 107 -> 26 us; on the
   real models SPBM + KillAfterLastUse went from 2.6-6.2x TVM's to 8.6-21x, the three memory
   passes from 2.7-6x to 9.7-17x.

The full conversion stays the path of everything the extractions decline, of the passes that
change more than a few bindings (DataflowUseInplaceCalls, AttachAttrLayoutFreeBuffers), and of
:func:`from_tvm` / :func:`to_tvm` themselves.
"""
from ._api import TVMConversionError  # noqa: F401
from .compat import TVMLayoutWarning, TVMVersionWarning  # noqa: F401
from .from_tvm import from_tvm  # noqa: F401
from .passes import (  # noqa: F401
    AttachAttrLayoutFreeBuffers,
    DataflowUseInplaceCalls,
    KillAfterLastUse,
    LowerAllocTensor,
    StaticPlanBlockMemory,
    pipeline,
)
from .to_tvm import to_tvm  # noqa: F401

__all__ = [
    "from_tvm",
    "to_tvm",
    "StaticPlanBlockMemory",
    "KillAfterLastUse",
    "LowerAllocTensor",
    "DataflowUseInplaceCalls",
    "AttachAttrLayoutFreeBuffers",
    "pipeline",
    "TVMConversionError",
    "TVMVersionWarning",
    "TVMLayoutWarning",
]
