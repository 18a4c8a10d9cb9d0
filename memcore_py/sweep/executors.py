"""Where a sweep's batches run: in this process, or on a local process pool.

Design
------
Planning one variant takes milliseconds, so one task per variant would cost more in
scheduling than in planning: the variants are cut into *batches* (:func:`batches`), each the
variants of one plan (a model and options; they differ in ``bind``), so that a worker reads,
lowers and plans that model once per batch (:class:`~.worker.Worker`). A batch is a list of
plain-data triples and its answer a list of
dicts (:func:`~.worker.plan_batch`), so any executor can carry it.

- ``"serial"``: every batch in this process, one :class:`~.worker.Worker` for all of them.
- ``"process"``: a :class:`concurrent.futures.ProcessPoolExecutor` with the ``spawn`` start
  method (safe with threads and with torch); ``jobs`` workers, ``os.cpu_count()`` by
  default. The workers ignore Ctrl-C; in the calling process it cancels the batches not
  started and ends the workers before the ``KeyboardInterrupt`` reaches the caller.

- ``"ray"`` (the ``ray`` extra): each batch a Ray task (``ray.remote`` of the same
  :func:`~.worker.plan_batch`). When ``ray.init(address=...)`` was called the batches run on
  that cluster; otherwise a local Ray is started with ``jobs`` CPUs for the call and shut down
  after it. No scheduler or transport of memcore's own: Ray places the tasks and carries the
  batches (plain data) and their answers. On a cluster every node needs memcore installed, and a
  ``.pt2`` / ``.onnx`` model is read by the worker at its path (a TVMScript model travels in
  the batch). Ctrl-C cancels the tasks not finished.
"""
from __future__ import annotations

import os

from .variant import SweepError

__all__ = ["EXECUTORS", "batches", "run_batches"]

EXECUTORS = ("serial", "process", "ray")


def batches(items, jobs: int) -> list:
    """``items`` (``(index, ModelSource, options)``) cut into batches: one per plan (the
    variants of one model and options that differ only in ``bind`` share a worker's plan,
    :class:`~.worker.Worker`), a plan's variants split only when they are more than a
    ``jobs``-th of all, so that every worker has a share."""
    groups: dict = {}
    for item in items:
        options = item[2]
        key = (item[1].digest, options["fuse"], options["mode"], options["time_limit"])
        groups.setdefault(key, []).append(item)
    target = max(1, -(-len(items) // max(1, jobs)))
    out = []
    for group in groups.values():
        for start in range(0, len(group), target):
            out.append(group[start:start + target])
    out.sort(key=len, reverse=True)  # the longest first: the pool's workers finish together
    return out


def run_batches(batch_list, executor: str, jobs: int | None, progress=None) -> list:
    """The answers of every batch (result dicts), in no particular order; ``progress(n)`` is
    called with the number of variants of each finished batch."""
    from .worker import plan_batch

    if executor not in EXECUTORS:
        raise SweepError(f"executor must be one of {', '.join(EXECUTORS)}; got {executor!r}")
    if executor == "ray" and batch_list:
        return _run_on_ray(batch_list, jobs, progress)
    if executor == "serial" or not batch_list:
        from .worker import Worker

        worker = Worker()  # one worker for every batch: each model is read once
        out = []
        for batch in batch_list:
            out.extend(plan_batch(batch, worker))
            if progress is not None:
                progress(len(batch))
        return out
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool

    workers = min(jobs or os.cpu_count() or 1, len(batch_list))
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                               initializer=_ignore_interrupts)
    out = []
    try:
        futures = {pool.submit(plan_batch, batch): len(batch) for batch in batch_list}
        for future in as_completed(futures):
            out.extend(future.result())
            if progress is not None:
                progress(futures[future])
    except BrokenProcessPool as exc:
        pool.shutdown(wait=True, cancel_futures=True)
        raise SweepError(f"the process pool stopped: a worker ended abruptly ({exc}); a program run from stdin or "
                         "an interactive session cannot start 'spawn' workers: run it from a file, or use "
                         "executor='serial'") from None
    except BaseException:
        _stop(pool)
        raise
    pool.shutdown(wait=True)
    return out


def _ignore_interrupts() -> None:
    """A worker's initializer: Ctrl-C is the calling process's to handle (it stops the pool)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _stop(pool) -> None:
    """Cancel the batches not started and end the workers now (a batch being planned is not
    waited for)."""
    for process in list(getattr(pool, "_processes", {}).values()):
        process.terminate()
    pool.shutdown(wait=True, cancel_futures=True)


def _run_on_ray(batch_list, jobs: int | None, progress) -> list:
    """The batches as Ray tasks (module docstring)."""
    from .worker import plan_batch

    try:
        import ray
    except ImportError:
        raise SweepError("executor='ray' needs Ray: pip install \"memcore[ray]\" (or use executor='process')") from None
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=jobs or os.cpu_count() or 1, include_dashboard=False, log_to_driver=False,
                 configure_logging=False)
    out: list = []
    pending: list = []
    try:
        task = ray.remote(plan_batch)
        sizes = {}
        for batch in batch_list:
            ref = task.remote(batch)
            sizes[ref] = len(batch)
            pending.append(ref)
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for ref in done:
                out.extend(ray.get(ref))
                if progress is not None:
                    progress(sizes[ref])
    except BaseException:
        for ref in pending:
            ray.cancel(ref, force=True)
        raise
    finally:
        if started:
            ray.shutdown()
    return out
