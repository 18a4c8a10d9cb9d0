"""Planning many variants with one call: :func:`plan_many`.

Design
------
A sweep plans a list of :class:`Variant` s (a model and the options of one plan) and returns one
:class:`SweepResult` per variant, in input order. Its modules have one job each:

- :mod:`.variant`: what is planned and answered; a variant's model is resolved once, in the
  calling process, into plain data with a digest of its content (its identity);
- :mod:`.worker`: planning a batch in one process, each model read and lowered once;
- :mod:`.executors`: where the batches run (``"serial"``, a local ``"process"`` pool, ``"ray"``:
  a Ray cluster, or a local Ray);
- :mod:`.cache`: results on disk by identity, so that re-running a sweep plans only what
  changed.

Results do not depend on the executor (the variants' default ``time_limit=None`` keeps arena
mode deterministic); per-variant failures are values (``error``), never a failed sweep.
"""
from __future__ import annotations

import json
import os

from .. import __version__
from .executors import EXECUTORS, batches, run_batches
from .variant import MODES, SweepError, SweepResult, Variant, bind_text, key_prefix, model_source

__all__ = ["plan_many", "Variant", "SweepResult", "SweepResults", "SweepError", "MODES", "EXECUTORS"]

#: The columns of :meth:`SweepResults.to_table`, in order.
COLUMNS = ("index", "model", "bind", "mode", "fuse", "tvm_bytes", "arena_bytes", "lower_bound", "seconds",
           "cached", "error")


class SweepResults(tuple):
    """The results of :func:`plan_many`, in the variants' order (a tuple of
    :class:`SweepResult`), with their table and JSON forms."""

    def to_json(self) -> str:
        """A JSON document: ``{"memcore": version, "results": [result, ...]}``."""
        return json.dumps({"memcore": __version__, "results": [r.to_dict() for r in self]}, indent=1)

    def to_table(self) -> str:
        """A plain-text table, one row per variant (:data:`COLUMNS`; a symbolic total as its
        expression)."""
        rows = [COLUMNS]
        for r in self:
            cells = []
            for c in COLUMNS:
                v = getattr(r, c)
                if c == "bind":
                    v = ",".join(f"{k}={x}" for k, x in v.items()) or "-"
                elif c in ("tvm_bytes", "arena_bytes") and v is None:
                    v = getattr(r, c.replace("bytes", "expr")) or "-"
                elif c == "seconds":
                    v = f"{v * 1e3:.2f} ms"
                elif v is None:
                    v = "-"
                cells.append(str(v))
            rows.append(tuple(cells))
        widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
        return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows) + "\n"


def plan_many(variants, *, executor: str = "process", jobs: int | None = None, cache=None,
              progress=None) -> SweepResults:
    """Plan every variant; one :class:`SweepResult` per variant, in input order.

    Parameters
    ----------
    variants : iterable of Variant
    executor : {"process", "serial", "ray"}
        Where the batches run (:mod:`memcore_py.sweep.executors`).
    jobs : int, optional
        Workers of the process pool, or CPUs of a local Ray started for the call (default: the
        machine's cores).
    cache : path, optional
        A result cache (:class:`~memcore_py.sweep.cache.ResultCache`, an SQLite file):
        variants found there are not planned (``cached=True``); new results are stored.
    progress : callable, optional
        Called with the number of variants done after each batch (and after the cache look-up).

    Returns
    -------
    SweepResults

    Raises
    ------
    SweepError
        An argument is not of the accepted kind (not a :class:`Variant`, an unknown executor,
        ``jobs`` not a positive int, a cache file that is not one), or ``executor="ray"``
        without Ray installed.

    Notes
    -----
    What fails for one variant, including a model file that cannot be read, is its ``error``.
    """
    from ..errors import MemcoreError
    from .cache import ResultCache

    variants = list(variants)
    for k, v in enumerate(variants):
        if not isinstance(v, Variant):
            raise SweepError(f"variant {k}: expected a memcore_py.sweep.Variant; got {type(v).__name__}")
    if executor not in EXECUTORS:
        raise SweepError(f"executor must be one of {', '.join(EXECUTORS)}; got {executor!r}")
    if jobs is not None and (isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1):
        raise SweepError(f"jobs must be an int >= 1; got {jobs!r}")
    results: list = [None] * len(variants)
    sources: dict = {}
    todo, keys, prefixes = [], {}, {}
    for k, v in enumerate(variants):
        model = v.model
        ident = model if isinstance(model, str) else os.fspath(model) if isinstance(model, os.PathLike) else id(model)
        options = v.options()
        source = sources.get(ident)
        if source is None:  # each model resolved once (its failure too)
            try:
                source = model_source(model)
            except MemcoreError as exc:
                source = f"{type(exc).__name__}: {exc}"
            sources[ident] = source
        if type(source) is str:
            label = os.fspath(model) if isinstance(model, (str, os.PathLike)) else type(model).__name__
            results[k] = SweepResult(k, label, options["bind"], v.mode, v.fuse, error=source)
            continue
        plan_key = (ident, v.mode, v.fuse, v.time_limit)
        prefix = prefixes.get(plan_key)
        if prefix is None:
            prefix = prefixes[plan_key] = key_prefix(source, options, __version__)
        keys[k] = prefix + bind_text(options["bind"])
        todo.append((k, source, options))
    store = ResultCache(cache) if cache is not None else None
    try:
        if store is not None:
            found = store.get_many(keys.values())
            rest = []
            for item in todo:
                hit = found.get(keys[item[0]])
                if hit is None:
                    rest.append(item)
                else:
                    k, source, options = item  # the figures are the fields after fuse (cache.FIGURES)
                    results[k] = SweepResult(k, source.label, options["bind"], options["mode"], options["fuse"],
                                             *hit, None, True)
            if progress is not None:
                progress(len(todo) - len(rest))
            todo = rest
        planned = run_batches(batches(todo, jobs or 1), executor, jobs, progress)
        for r in planned:
            results[r["index"]] = SweepResult(**r)
        if store is not None:
            store.put_many((keys[r["index"]], r) for r in planned)
    finally:
        if store is not None:
            store.close()
    return SweepResults(results)
