"""Bytes against a swept dimension: :func:`plot_sweep` (the ``plot`` extra, matplotlib).

Design
------
One panel; per model, a line for each planned mode (TVM mode, arena) and a dashed line for the
max-live lower bound, against the values of the one dimension the sweep varied. Variants whose
figures are missing (an error, or a total still symbolic) leave a gap. The byte axis and the
file writing are those of the plan timelines (:mod:`memcore_py.planning.plot`).
"""
from __future__ import annotations

from ..errors import PlanningError

__all__ = ["plot_sweep"]


def plot_sweep(results, dim: str, *, out=None, dpi: int = 120):
    """Draw ``results`` (a :class:`~memcore_py.sweep.SweepResults`) against the dimension
    ``dim``; saved to ``out`` (``.png``/``.svg``/``.pdf``) when given. Returns the figure.

    Raises
    ------
    PlanningError
        No result binds ``dim``, or ``out`` cannot be written.
    PlotDependencyError
        matplotlib is missing.
    """
    import os

    from ..planning.plot import _OUT_FORMATS, _bytes_axis, _matplotlib, _save

    if out is not None and os.path.splitext(os.fspath(out))[1].lower() not in _OUT_FORMATS:
        raise PlanningError(f"plot file {os.fspath(out)!r} must end in one of {', '.join(_OUT_FORMATS)}")
    series: dict = {}
    for r in results:
        if dim not in r.bind:
            continue
        x = r.bind[dim]
        for label, value in ((f"{r.model} tvm", r.tvm_bytes), (f"{r.model} arena", r.arena_bytes),
                             (f"{r.model} lower bound", r.lower_bound)):
            if value is not None and not (label.endswith("tvm") and r.mode == "arena"):
                series.setdefault(label, {})[x] = value
    if not series:
        raise PlanningError(f"no planned result binds {dim!r}: nothing to draw")
    Figure = _matplotlib()
    fig = Figure(figsize=(8, 4.5))
    ax = fig.add_subplot(1, 1, 1)
    top = 0
    for label, points in sorted(series.items()):
        xs = sorted(points)
        ys = [points[x] for x in xs]
        top = max(top, max(ys))
        ax.plot(xs, ys, "--" if label.endswith("lower bound") else "-", marker="o", markersize=3, label=label)
    _bytes_axis(ax, top)
    ax.set_xlabel(dim)
    ax.set_ylabel("bytes")
    ax.set_title(f"planned bytes against {dim}")
    ax.legend(fontsize="small")
    fig.tight_layout()
    _save(fig, out, dpi)
    return fig
