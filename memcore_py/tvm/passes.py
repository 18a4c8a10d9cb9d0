"""memcore's memory passes as ``tvm.transform.Pass`` objects, and TVM's default build
pipeline with them swapped in.

Each native pass is a TVM module pass (``tvm.transform.module_pass``) that converts the
``tvm.IRModule`` with :func:`~memcore_py.tvm.from_tvm` (recording which memcore node came from
which TVM object), runs the memcore pass of the same name (:mod:`memcore_py.transform`), and
writes the result back with :func:`~memcore_py.tvm.to_tvm.to_tvm_reusing`: every node the
memcore pass kept is written back as the TVM object it was read from, so only what the pass
changed is rebuilt. PrimFuncs are never read or rebuilt (they are carried as TVM objects).

StaticPlanBlockMemory, LowerAllocTensor and KillAfterLastUse, when they are not handed the
module of the native pass before them, run by extraction instead (:mod:`.spbm_extract`: the
tokens are read and the plan written on TVM's objects in C, only allocations of symbolic shapes
are read into memcore's IR to be sized; :mod:`.lower_alloc_extract`: only the allocation
bindings are read and rewritten; :mod:`.kill_extract`: the kills are computed and spliced in
on TVM's objects in C, nothing is converted); the rest of each block is kept by address.
DataflowUseInplaceCalls returns a module with nothing to rewrite as it is, found by the same
table reader (:mod:`.inplace_extract`); AttachAttrLayoutFreeBuffers rewrites its ``call_tir``
bindings on TVM's objects (:mod:`.attach_extract`). The full conversion remains for what an
extraction declines, and for DataflowUseInplaceCalls' rewrites (whose in-place PrimFuncs are
built as TVM objects from their kernels, :mod:`.tir_writer`), and is the only path when the
compatibility gate (:mod:`.compat`: an unsupported TVM version, a layout that fails its
self-check, or ``MEMCORE_TVM_PORTABLE=1``) turns the compiled fast paths off: then no
extraction runs and the full conversion reads through TVM's Python API alone.

The node map (:class:`~memcore_py.tvm._node_map.NodeMap`, C arrays rather than a dict) holds
addresses, not Python wrappers of TVM objects (a wrapper costs more than the rest of a
binding's conversion); one :class:`~memcore_py.tvm._ffi_writer.Keep` per chain
of native passes owns what they point to: the module first read and every object written
since.
"""
from __future__ import annotations

from ..ir._util import gc_paused
from ..transform import KillAfterLastUse as _KillAfterLastUse
from ..transform import LowerAllocTensor as _LowerAllocTensor
from ..transform import StaticPlanBlockMemory as _StaticPlanBlockMemory
from . import _ffi_writer, compat
from ._node_map import NodeMap
from ._api import tvm_api
from .from_tvm import _Reader
from .attach_extract import attach_attr_extracted
from .inplace_extract import module_without_inplace_calls
from .kill_extract import kill_after_last_use_extracted
from .lower_alloc_extract import lower_alloc_tensor_extracted
from .spbm_extract import static_plan_block_memory_extracted
from .to_tvm import to_tvm_reusing

__all__ = [
    "StaticPlanBlockMemory",
    "KillAfterLastUse",
    "LowerAllocTensor",
    "DataflowUseInplaceCalls",
    "AttachAttrLayoutFreeBuffers",
    "pipeline",
    "apply_memcore_pass",
]


class _Handoff:
    """The last module a native pass wrote, with its memcore form and node map, so that the
    next native pass given exactly that module skips reading it (a pipeline's consecutive
    memcore passes convert once). Valid only while the ``tvm.IRModule`` is the same object
    holding the same function map: the handoff keeps a reference to that ``Map``, so a
    module changed in place (``mod[gv] = f``, ``mod.update``) copies it on write and gets a
    map at another address, and is read again. Holds one module alive; not thread-safe."""

    __slots__ = ("tvm_mod", "functions", "mod", "reuse", "keep")

    def __init__(self):
        self.tvm_mod = None

    def holds(self, tvm_mod) -> bool:
        """Whether :meth:`take` would hand ``tvm_mod`` over (nothing is taken)."""
        last = self.tvm_mod
        return (last is not None and last.__chandle__() == tvm_mod.__chandle__()
                and tvm_mod.functions.__chandle__() == self.functions.__chandle__())

    def take(self, tvm_mod):
        """``(memcore module, reuse map, its Keep)`` when ``tvm_mod`` is the module last
        written."""
        last = self.tvm_mod
        if last is None or last.__chandle__() != tvm_mod.__chandle__():
            return None
        if tvm_mod.functions.__chandle__() != self.functions.__chandle__():
            return None
        self.tvm_mod = self.functions = None  # the reuse map is handed over (the next write extends it)
        handed = self.mod, self.reuse, self.keep
        self.mod = self.reuse = self.keep = None
        return handed

    def give(self, tvm_mod, mod, reuse, keep):
        self.tvm_mod = tvm_mod
        self.functions = tvm_mod.functions  # held: an in-place change must copy it (take)
        self.mod = mod
        self.reuse = reuse
        self.keep = keep


_HANDOFF = _Handoff()


def apply_memcore_pass(memcore_pass, tvm_mod):
    """Run ``memcore_pass`` (a :class:`memcore_py.transform.Pass`) on a ``tvm.IRModule``:
    convert, transform, write back (module docstring). Returns a new ``tvm.IRModule``.

    When ``tvm_mod`` is the unchanged output of the previous native pass, its memcore form is
    taken from that pass instead of being read again (:class:`_Handoff`)."""
    with gc_paused():  # acyclic IR: the collector's passes over the heap would cost more than the work
        return _apply(memcore_pass, tvm_mod)


def _apply(memcore_pass, tvm_mod):
    api = tvm_api()
    handed = _HANDOFF.take(tvm_mod)
    if handed is None:
        reuse = NodeMap()
        keep = _ffi_writer.Keep()
        keep.hold(tvm_mod)  # the addresses read point into it
        mod = _Reader(api, tvm_mod, record=reuse).module(tvm_mod)
    else:
        mod, reuse, keep = handed
    out = memcore_pass(mod)
    # the write records into the map it reuses from: a node written once is reused where it
    # occurs again, and the map is ready for the next pass without a merge
    tvm_out = to_tvm_reusing(out, reuse, keep, record=reuse)
    _HANDOFF.give(tvm_out, out, reuse, keep)
    return tvm_out


def _extracting(api, tvm_mod) -> bool:
    """Whether a pass runs by extraction: the compatibility gate is open
    (:func:`~.compat.fast_layout`) and ``tvm_mod`` is not the module the last native pass
    wrote (its memcore form is handed over instead)."""
    return compat.fast_layout(api) is not None and not _HANDOFF.holds(tvm_mod)


def _module_pass(memcore_pass, name: str):
    api = tvm_api()

    def transform(mod, _ctx):
        return apply_memcore_pass(memcore_pass, mod)

    return api.tvm.transform.module_pass(transform, opt_level=0, name=name)


def StaticPlanBlockMemory(mode: str = "tvm", **options):  # noqa: N802 - TVM's pass name
    """memcore's StaticPlanBlockMemory as a ``tvm.transform.Pass``.

    Parameters
    ----------
    mode : {"tvm", "arena"}, default "tvm"
        ``"tvm"``: TVM's plan (memcore's documented fixes aside, DIFFERENCES.md);
        ``"arena"``: one offset-packed storage per (function, scope, device) pool.
    **options
        ``alignment``, ``time_limit``, ``zero_offset_views``: as
        :class:`memcore_py.transform.StaticPlanBlockMemory`.

    Returns
    -------
    tvm.transform.Pass
        A module pass named ``"memcore.StaticPlanBlockMemory"``.
    """
    spbm = _StaticPlanBlockMemory(mode=mode, **options)
    api = tvm_api()

    def transform(tvm_mod, _ctx):
        # by extraction (.spbm_extract) unless the module was just written by a native pass
        # (its memcore form is then handed over and nothing is read), the gate is closed or
        # the extraction declines
        if _extracting(api, tvm_mod):
            with gc_paused():
                out = static_plan_block_memory_extracted(api, tvm_mod, spbm.mode, spbm.alignment, spbm.time_limit,
                                                         spbm.zero_offset_views)
            if out is not None:
                return out
        return apply_memcore_pass(spbm, tvm_mod)

    return api.tvm.transform.module_pass(transform, opt_level=0, name="memcore.StaticPlanBlockMemory")


def _kill_after_last_use(tvm_mod, tvm_scoping):
    """The native KillAfterLastUse: on TVM's objects (:mod:`.kill_extract`) unless the module was
    just written by a native pass (then its memcore form is handed over and nothing is read),
    the compatibility gate is closed or the native path declines it."""
    api = tvm_api()
    if _extracting(api, tvm_mod):
        with gc_paused():
            out = kill_after_last_use_extracted(api, tvm_mod, tvm_scoping)
        if out is not None:
            return out
    return apply_memcore_pass(_KILL_AFTER_LAST_USE[tvm_scoping], tvm_mod)


_KILL_AFTER_LAST_USE = {False: _KillAfterLastUse(), True: _KillAfterLastUse(tvm_scoping=True)}


def KillAfterLastUse(tvm_scoping: bool = False):  # noqa: N802 - TVM's pass name
    """memcore's KillAfterLastUse as a ``tvm.transform.Pass`` (``tvm_scoping`` as
    :class:`memcore_py.transform.KillAfterLastUse`: True reproduces TVM's placement in nested
    scopes and dataflow blocks, for differential tests), on TVM's objects when it can
    (:mod:`.kill_extract`)."""
    tvm_scoping = bool(tvm_scoping)
    return tvm_api().tvm.transform.module_pass(lambda mod, _ctx: _kill_after_last_use(mod, tvm_scoping),
                                               opt_level=0, name="memcore.KillAfterLastUse")


def _lower_alloc_tensor(tvm_mod, _ctx):
    """The native LowerAllocTensor: by extraction (:mod:`.lower_alloc_extract`) unless the
    module was just written by a native pass (then its memcore form is handed over and
    nothing is read), the compatibility gate is closed or the extraction declines it."""
    api = tvm_api()
    if _extracting(api, tvm_mod):
        with gc_paused():
            out = lower_alloc_tensor_extracted(api, tvm_mod)
        if out is not None:
            return out
    return apply_memcore_pass(_LowerAllocTensor(), tvm_mod)


def LowerAllocTensor():  # noqa: N802 - TVM's pass name
    """memcore's LowerAllocTensor as a ``tvm.transform.Pass`` (by extraction when it can:
    :mod:`.lower_alloc_extract`)."""
    return tvm_api().tvm.transform.module_pass(_lower_alloc_tensor, opt_level=0, name="memcore.LowerAllocTensor")


def DataflowUseInplaceCalls(tvm_compat: bool = False):  # noqa: N802 - TVM's pass name
    """memcore's DataflowUseInplaceCalls as a ``tvm.transform.Pass`` (``tvm_compat`` as
    :class:`memcore_py.transform.DataflowUseInplaceCalls`). A module with no call to rewrite
    is returned as it is, found without converting it (:mod:`.inplace_extract`); otherwise
    the full conversion runs the pass, and the in-place PrimFuncs it adds are built as TVM
    objects from their kernels (:mod:`.tir_writer`)."""
    from ..transform import DataflowUseInplaceCalls as _Pass

    inplace = _Pass(tvm_compat=tvm_compat)
    api = tvm_api()

    def transform(tvm_mod, _ctx):
        if _extracting(api, tvm_mod):
            with gc_paused():
                out = module_without_inplace_calls(api, tvm_mod)
            if out is not None:
                return out
        return apply_memcore_pass(inplace, tvm_mod)

    return api.tvm.transform.module_pass(transform, opt_level=0, name="memcore.DataflowUseInplaceCalls")


def AttachAttrLayoutFreeBuffers(tvm_compat: bool = False):  # noqa: N802 - TVM's pass name
    """memcore's AttachAttrLayoutFreeBuffers as a ``tvm.transform.Pass`` (``tvm_compat`` as
    :class:`memcore_py.transform.AttachAttrLayoutFreeBuffers`), on TVM's objects when it can
    (:mod:`.attach_extract`: the copies are TVM's PrimFuncs with the attribute set)."""
    from ..transform import AttachAttrLayoutFreeBuffers as _Pass

    attach = _Pass(tvm_compat=tvm_compat)
    api = tvm_api()

    def transform(tvm_mod, _ctx):
        if _extracting(api, tvm_mod):
            with gc_paused():
                out = attach_attr_extracted(api, tvm_mod, keep_tir_vars=not attach.tvm_compat)
            if out is not None:
                return out
        return apply_memcore_pass(attach, tvm_mod)

    return api.tvm.transform.module_pass(transform, opt_level=0, name="memcore.AttachAttrLayoutFreeBuffers")


#: TVM passes replaced by memcore's in :func:`pipeline`, by TVM pass name.
SWAPPED = ("StaticPlanBlockMemory", "LowerAllocTensor", "KillAfterLastUse")


def _swap(passes, mode, options):
    memcore = {
        "StaticPlanBlockMemory": lambda: StaticPlanBlockMemory(mode=mode, **options),
        "LowerAllocTensor": LowerAllocTensor,
        "KillAfterLastUse": KillAfterLastUse,
    }
    out, seen = [], set()
    for p in passes:
        name = p.info.name
        make = memcore.get(name)
        if make is not None:
            seen.add(name)
            out.append(make())
        else:
            out.append(p)
    missing = [n for n in SWAPPED if n not in seen]
    if missing:
        from ..errors import PassError

        raise PassError(f"TVM's default pipeline has no {missing} pass to replace; this is TVM "
                        f"{compat.tvm_version(tvm_api())}, memcore supports {', '.join(compat.SUPPORTED_TVM)}")
    return out


def _default_build_passes(api):
    """The passes of TVM's own ``relax.pipeline.default_build_pipeline`` (what
    ``tvm.compile(..., relax_pipeline="default")`` runs on a CPU target), in its order.

    TVM builds that pipeline's ``Sequential`` inside the pipeline function, so its pass list
    cannot be read off the object: it is recorded by running the pipeline once on an empty
    module under a pass instrument (the passes the ``Sequential`` runs directly, not those
    they run inside themselves), and each pass is made again by its name from
    ``tvm.relax.transform`` or ``tvm.relax.backend`` (the default pipeline's passes take no
    arguments).

    Raises
    ------
    PassError
        A pass of TVM's pipeline that cannot be made by its name.
    """
    tvm = api.tvm
    names = _recorded_pass_names(tvm, tvm.relax.pipeline.default_build_pipeline())
    passes = []
    for name in names:
        make = getattr(tvm.relax.transform, name, None) or getattr(tvm.relax.backend, name, None)
        if make is None:
            from ..errors import PassError

            raise PassError(
                f"TVM's default pipeline runs a pass {name!r} that memcore cannot make by its name; "
                f"this is TVM {compat.tvm_version(api)}, memcore supports {', '.join(compat.SUPPORTED_TVM)}"
            )
        passes.append(make())
    return passes


def _recorded_pass_names(tvm, pipeline_pass) -> list:
    """The names of the passes the ``Sequential`` inside ``pipeline_pass`` runs, in order,
    recorded on an empty module (depth 2: the pipeline pass, its ``Sequential``, its passes)."""
    names = []

    @tvm.instrument.pass_instrument
    class _Recorder:
        def __init__(self):
            self.depth = 0

        def run_before_pass(self, _mod, info):
            if self.depth == 2:
                names.append(info.name)
            self.depth += 1

        def run_after_pass(self, _mod, _info):
            self.depth -= 1

    with tvm.transform.PassContext(instruments=[_Recorder()]):
        pipeline_pass(tvm.IRModule())
    return names


def pipeline(target, mode: str = "tvm", **options):
    """TVM's own default Relax build pipeline for ``target``, with memcore's
    StaticPlanBlockMemory (in ``mode``), LowerAllocTensor and KillAfterLastUse in place of
    TVM's.

    The pipeline is the one ``tvm.compile(mod, target)`` would pick: for a GPU target,
    ``tvm.relax.get_default_pipeline(target)`` (library dispatch, legalization, dataflow
    lowering and finalization passes of the target's backend) when the backend has them
    (TVM 0.27's CUDA backend lacks ``dataflow_lower_passes``; ``tvm.compile`` then falls back
    as this does); otherwise TVM's ``default_build_pipeline``. Every other pass is TVM's own.

    Parameters
    ----------
    target : str or tvm.target.Target
    mode : {"tvm", "arena"}, default "tvm"
    **options
        Passed to :func:`StaticPlanBlockMemory`.

    Returns
    -------
    tvm.transform.Pass
        For ``tvm.compile(mod, target=target, relax_pipeline=pipeline(target, "arena"))``.
    """
    api = tvm_api()
    tvm = api.tvm
    target = tvm.target.Target(target) if isinstance(target, str) else target
    _StaticPlanBlockMemory(mode=mode, **options)  # validate the options now, not at compile time
    passes = None
    if "gpu" in target.keys:
        rp = tvm.relax.pipeline
        try:
            passes = (rp.library_dispatch_passes(target) + rp.legalize_passes(target)
                      + rp.dataflow_lower_passes(target) + rp.finalize_passes(target))
        except (ValueError, AttributeError):  # tvm.compile falls back the same way
            passes = None
    passes = _swap(passes if passes is not None else _default_build_passes(api), mode, options)

    def run(mod, _ctx):
        with target:
            return tvm.transform.Sequential(passes)(mod)

    return tvm.transform.module_pass(run, opt_level=0, name=f"memcore.pipeline[{mode}]")
