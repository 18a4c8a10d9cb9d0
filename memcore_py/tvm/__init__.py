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
  the object back untouched. An op memcore does not model is read as an opaque op
  (:func:`memcore_py.ir.op.opaque_op`: its name and TVM's purity; refused when it has
  attributes); anything else memcore does not model raises :class:`TVMConversionError` (an
  :class:`~memcore_py.errors.IRError`) naming it.
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
Two designs were measured on bert_base (850 bindings, 28 PrimFuncs) against TVM's own
StaticPlanBlockMemory + KillAfterLastUse on the ``tvm.IRModule``:

1. *Extraction + write-back through TVM's mutator*: read only what planning needs and
   rewrite with ``relax.PyExprMutator``. Both floors were a fraction of TVM's two passes:
   write-back (a no-op ``visit_call_`` over every call, the walk in C++) and extraction (FFI
   reads only: every binding's var, its type handle and the call's op and arguments, no
   memcore node built). But memcore's planner and kill analysis run on memcore IR
   (``analysis.storage_tokens``, ``analysis.last_usage``); extraction would need a second
   front-end for both over TVM objects, a copy of their logic (tokens, aliases, escapes,
   canonicalized bindings) that would have to stay TVM-exact on its own.
2. *Full conversion* (chosen): :func:`from_tvm` builds the memcore module (a large share
   of it FFI field reads: through the Python API every field read and every
   ``tvm_ffi.Array`` element is a call, the FFI's get-item being cheaper than its Python
   iterator), the memcore pass runs unchanged, and the result is written back by *reuse*:
   :func:`from_tvm` records which TVM object every memcore node came from, and the writer
   returns that object for every node the pass kept (memcore passes are functional and keep
   unchanged nodes identical). Only new bindings are built with TVM's FFI constructors,
   which after StaticPlanBlockMemory cost less than the mutator's floor. One code path for
   planning (TVM-exact by the same tests), and the conversion is the public
   :func:`from_tvm` / :func:`to_tvm` pair.

Where the time goes (bench/bench_tvm_bridge.py; figures in bench/README.md, "TVM bridge"):
the Python API's per-field reads and per-constructor calls. The compiled reader
(:mod:`memcore_py.tvm._ffi_reader`, TVM's objects read from memory, which also makes the
extraction floor above moot) and the compiled writer (:mod:`memcore_py.tvm._ffi_writer`,
TVM's constructors called through the tvm_ffi C API) take both out, so the native
StaticPlanBlockMemory + KillAfterLastUse, conversion included, beat TVM's two passes on the
static real models, with bounded and unbounded symbolic shapes and on long chains (where
TVM's own time varies between processes). Consecutive native passes convert once (the
second takes the first one's written module, :class:`~memcore_py.tvm.passes._Handoff`), so
the three memory passes in one ``Sequential`` read the module once.

3. *Extraction for LowerAllocTensor* (:mod:`memcore_py.tvm.lower_alloc_extract`, used when
   the pass is not handed a module): that pass changes only the allocation bindings of a
   flat function, so a C scan finds them and the blocks are rebuilt around them from the old
   bindings' addresses; allocations of constant shape are lowered in C, the others read,
   lowered by memcore's own lowerer and written. A lone call does not pay for the full
   read, which costs more than TVM's whole visit.
4. *Extraction for the analyses too* (:mod:`memcore_py.tvm.kill_extract`,
   :mod:`memcore_py.tvm.spbm_extract`). The objection in 1. was a second copy of the token
   and kill analyses. There is none: a reader of TVM's objects (:mod:`._table_reader`) fills
   the *same* binding table as the reader of memcore's IR, and the passes' rule kernels
   (StaticPlanBlockMemory's ``InitRules`` in ``_storage_walk.pyx``, KillAfterLastUse's
   ``kill_rules`` in ``_kill_rules.pyx``) run unchanged on it; memcore's planner and its
   symbolic-size arithmetic too. The tests compare the two
   paths and TVM on every shipped model and on random modules. Reading and writing every
   binding cost more than the analysis and the plan on a small module, and a large share of
   the time on the real models: without them the native StaticPlanBlockMemory costs less
   than TVM's on small modules too, and the memory passes on the real models much less than
   by full conversion.

5. *The high-level passes on TVM's objects*: AttachAttrLayoutFreeBuffers reads its ``call_tir``
   bindings with the same table reader and rewrites them there, its copies TVM's own PrimFuncs
   with the attribute set (:mod:`memcore_py.tvm.attach_extract`); DataflowUseInplaceCalls
   returns a module with nothing to rewrite as it is (:mod:`memcore_py.tvm.inplace_extract`).

The full conversion stays the path of everything the extractions decline, of
DataflowUseInplaceCalls' rewrites, and of :func:`from_tvm` / :func:`to_tvm` themselves.
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
