"""Memory timeline plots: where every tensor sits, when, and how far the plan is from the bound.

Design
------
One picture per (function, mode), modes side by side on a shared byte axis: each tensor is a
rectangle spanning its lifetime on x (a tensor live at steps ``[start, end]`` covers
``[start, end + 1)``) and its bytes on y, at its *address*: the storages of the function
stacked in storage order, plus the tensor's offset in its storage
(:attr:`~memcore_py.planning.peak_report.ModePlacement.address`). So the height of the
drawing is what the mode allocates; over it go the live-bytes profile (a step line), the
max-live lower bound (a dashed line) and the allocated total (a dotted line). The data are
:func:`~memcore_py.planning.peak_report.timelines`' (nothing is re-planned or re-derived
here); flat problems (``start, end, size, offset`` arrays, e.g. a MiniMalloc CSV planned with
:func:`memcore.plan_offsets`) are drawn the same way by :func:`plot_offsets`.

Scale: up to ``max_artists`` tensors are one :class:`~matplotlib.collections.PolyCollection`
(one path per tensor, one artist in all). Above it, tensors are rasterised into an occupancy
image (at most ``_RASTER_W x _RASTER_H`` cells; each tensor fills its cells, O(n + covered
cells)) drawn with one ``imshow``: a tensor thinner than a cell still colours at least one
cell. Either way the figure holds a
handful of artists, whatever the number of tensors.

matplotlib (the ``plot`` extra) is imported on first use; without it every entry point raises
:class:`PlotDependencyError`. Figures are built with :class:`matplotlib.figure.Figure`
directly (no pyplot, no global state, no GUI backend); ``out=`` saves in the format of the
file's suffix (``.png``, ``.svg``, ``.pdf``).
"""
from __future__ import annotations

import os

import numpy as np

from ..errors import MemcoreError, PlanningError
from .allocate import MODES
from .arena_options import ARENA_TIME_LIMIT
from .peak_report import FunctionTimeline, as_timelines, format_bytes

__all__ = ["PlotDependencyError", "plot_plan", "plot_offsets", "COLOR_BY", "MAX_ARTISTS"]

#: What the rectangles' colour tells apart.
COLOR_BY = ("storage", "dtype", "tensor")
#: Default number of tensors above which a panel is rasterised instead of one path per tensor.
MAX_ARTISTS = 2000
#: Raster size (cells) of a rasterised panel: x (steps) and y (bytes).
_RASTER_W, _RASTER_H = 1600, 900
#: Tensors whose names are written in their rectangle when a panel has at most this many.
_LABEL_MAX = 24
#: Most profile segments drawn; a longer profile is drawn as its per-bin maximum.
_PROFILE_BINS = 4000
_OUT_FORMATS = (".png", ".svg", ".pdf")


class PlotDependencyError(MemcoreError, ImportError):
    """matplotlib is not installed (the ``plot`` extra)."""


def _matplotlib():
    try:
        import matplotlib  # noqa: F401
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise PlotDependencyError(
            'plotting needs matplotlib: install the plot extra with pip install "memcore[plot]"'
        ) from exc
    return Figure


def _palette(n: int) -> np.ndarray:
    """``n`` (at most 20) RGBA colours of tab20, the ten dark ones first."""
    from matplotlib import colormaps

    cmap = colormaps["tab20"]
    return np.asarray([cmap(i) for i in (*range(0, 20, 2), *range(1, 20, 2))[:max(min(n, 20), 1)]])


def _categories(values) -> np.ndarray:
    """Dense id per value, in order of first appearance."""
    ids: dict = {}
    return np.fromiter((ids.setdefault(v, len(ids)) for v in values), dtype=np.int64, count=len(values))


def _bytes_axis(ax, top: float) -> None:
    """Byte ticks at multiples of a power of two (round in KiB/MiB), labelled in binary units."""
    from matplotlib.ticker import FuncFormatter, MaxNLocator, MultipleLocator

    ax.yaxis.set_major_locator(MultipleLocator(2.0 ** max(int(np.floor(np.log2(max(top, 1.0) / 5))), 0)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: format_bytes(int(v)) if v >= 0 else ""))
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))


def _raster(ax, x0, x1, y0, y1, cat, colors, xlim, ylim) -> None:
    """Occupancy image of the rectangles ``[x0, x1) x [y0, y1)`` (one imshow): each cell
    takes the colour of the last tensor covering it, in program order."""
    (xa, xb), (ya, yb) = xlim, ylim
    w = int(min(_RASTER_W, max(1, np.ceil(xb - xa))))
    h = _RASTER_H
    sx = w / max(xb - xa, 1e-12)
    sy = h / max(yb - ya, 1e-12)
    cx0 = np.clip(np.floor((x0 - xa) * sx), 0, w - 1).astype(np.int64)
    cx1 = np.maximum(np.clip(np.ceil((x1 - xa) * sx), 0, w).astype(np.int64), cx0 + 1)
    cy0 = np.clip(np.floor((y0 - ya) * sy), 0, h - 1).astype(np.int64)
    cy1 = np.maximum(np.clip(np.ceil((y1 - ya) * sy), 0, h).astype(np.int64), cy0 + 1)
    cells = np.full((h, w), -1, dtype=np.int16)
    for a, b, c, d, k in zip(cy0.tolist(), cy1.tolist(), cx0.tolist(), cx1.tolist(), (cat % len(colors)).tolist()):
        cells[a:b, c:d] = k
    rgba = np.vstack([np.round(colors * 255), [[255, 255, 255, 0]]]).astype(np.uint8)
    image = rgba[cells]  # -1: the transparent last row
    ax.imshow(image, origin="lower", extent=(xa, xb, ya, yb), aspect="auto", interpolation="nearest",
              zorder=1)


def _panel_top(y, size, profile, lower_bound, total) -> float:
    """Highest byte a panel shows (tensors, lines)."""
    return max(float((y + size).max()) if size.shape[0] else 0.0, float(total or 0), float(lower_bound or 0),
               float(profile.max()) if profile is not None and profile.shape[0] else 0.0, 1.0)


def _draw(ax, *, start, end, y, size, cat, names, n_steps, profile, lower_bound, total, max_artists,
          title, top=None) -> None:
    """One panel: tensors, live-bytes profile, lower bound and allocated total (``top``: the
    byte axis' extent before headroom, shared by a row; default this panel's)."""
    from matplotlib.collections import PolyCollection

    n = int(size.shape[0])
    x0 = start.astype(np.float64)
    x1 = end.astype(np.float64) + 1.0
    y0 = y.astype(np.float64)
    y1 = y0 + size.astype(np.float64)
    colors = _palette(min(int(cat.max()) + 1, 20) if n else 1)
    lo = float(min(x0.min(), 0.0)) if n else 0.0
    hi = float(max(x1.max(), n_steps)) if n else float(max(n_steps, 1))
    if top is None:
        top = _panel_top(y, size, profile, lower_bound, total)
    if n and n > max_artists:
        _raster(ax, x0, x1, y0, y1, cat, colors, (lo, hi), (0.0, top))
    elif n:
        verts = np.empty((n, 4, 2), dtype=np.float64)
        verts[:, 0] = np.column_stack((x0, y0))
        verts[:, 1] = np.column_stack((x1, y0))
        verts[:, 2] = np.column_stack((x1, y1))
        verts[:, 3] = np.column_stack((x0, y1))
        ax.add_collection(PolyCollection(verts, facecolors=colors[cat % len(colors)], edgecolors="0.25",
                                         linewidths=0.4 if n <= 200 else 0.0, zorder=1))
        if n <= _LABEL_MAX and names is not None:
            for i in range(n):
                if y1[i] - y0[i] >= 0.04 * top:
                    ax.text((x0[i] + x1[i]) / 2, (y0[i] + y1[i]) / 2, names[i], ha="center", va="center",
                            fontsize=7, clip_on=True, zorder=3)
    if profile is not None and profile.shape[0]:
        # a step line as one Line2D (``stairs`` makes a patch whose limits cost O(n) Python);
        # a long profile is drawn as its maximum over bins of ``k`` steps
        k = -(-profile.shape[0] // _PROFILE_BINS)
        edges = np.arange(0, profile.shape[0] + k, k, dtype=np.float64)[: -(-profile.shape[0] // k) + 1]
        edges[-1] = profile.shape[0]
        values = np.maximum.reduceat(profile, np.arange(0, profile.shape[0], k)).astype(np.float64)
        ax.plot(np.repeat(edges, 2)[1:-1], np.repeat(values, 2), color="black", linewidth=1.0, zorder=4,
                label="live bytes" if k == 1 else f"live bytes (max per {k} steps)")
    if lower_bound is not None:
        ax.axhline(lower_bound, color="tab:red", linestyle="--", linewidth=1.2, zorder=5,
                   label=f"lower bound {format_bytes(lower_bound)}")
    if total is not None:
        ax.axhline(total, color="0.3", linestyle=":", linewidth=1.2, zorder=5,
                   label=f"allocated {format_bytes(total)}")
    ax.set_xlim(lo, hi)
    ax.set_ylim(0, top * 1.22)  # headroom for the legend
    ax.set_xlabel("step")
    ax.set_ylabel("address (bytes)")
    ax.set_title(title, fontsize=9)
    _bytes_axis(ax, top)
    ax.legend(loc="upper left", fontsize=7, framealpha=0.8, ncols=3)


def _check_common(color_by, max_artists, out) -> None:
    if color_by not in COLOR_BY:
        raise PlanningError(f"color_by must be one of {COLOR_BY}; got {color_by!r}")
    if isinstance(max_artists, bool) or not isinstance(max_artists, int) or max_artists < 0:
        raise PlanningError(f"max_artists must be a non-negative int; got {max_artists!r}")
    if out is not None and os.path.splitext(os.fspath(out))[1].lower() not in _OUT_FORMATS:
        raise PlanningError(f"plot file {os.fspath(out)!r} must end in one of {', '.join(_OUT_FORMATS)}")


def _save(fig, out, dpi) -> None:
    if out is None:
        return
    try:
        fig.savefig(os.fspath(out), dpi=dpi)
    except OSError as exc:
        raise PlanningError(f"cannot write plot {os.fspath(out)!r}: {exc.strerror or exc}") from exc


def _title(tl: FunctionTimeline, mode: str) -> str:
    p = tl.placements[mode]
    lb = tl.lower_bound
    text = f"{tl.function} | {mode}: {format_bytes(p.total_bytes)}"
    if p.total_bytes is not None and lb:
        text += f" ({p.total_bytes / lb - 1:+.1%} over bound)"
    n_st = len(p.storage_bytes)
    text += f", {tl.n_tensors} tensors, {n_st} storage{'s' if n_st != 1 else ''}"
    if tl.n_symbolic:
        text += f" (+{tl.n_symbolic} symbolic)"
    return text


def plot_plan(source, *, modes=None, functions=None, color_by: str = "storage", max_artists: int = MAX_ARTISTS,
              out=None, dpi: int = 120, time_limit=ARENA_TIME_LIMIT, alignment: int = 64, figsize=None):
    """Draw each function's memory timeline, one column per mode (see the module docstring).

    Parameters
    ----------
    source : IRModule, PlannedModule, list of PlannedModule, or list of FunctionTimeline
        What :func:`~memcore_py.planning.peak_report.timelines` takes (an IRModule after
        ``CallTIRRewrite`` is planned in ``modes``), or its result; for a graph-executor
        graph, ``[graph_timeline(relay_plan, arena_plan)]``
        (:func:`~memcore_py.planning.peak_report.graph_timeline`).
    modes : sequence of {"tvm", "arena"}, optional
        Columns, left to right. Default: every mode of the source (an IRModule is planned in
        ``("tvm", "arena")``; a graph's timeline has ``"relay"`` and/or ``"arena"``).
    functions : sequence of str, optional
        Rows: these functions. Default: every function with a constant-size planned tensor
        (or the first function when none has one).
    color_by : {"storage", "dtype", "tensor"}, default "storage"
    max_artists : int, default MAX_ARTISTS (2000)
        Panels with more tensors are rasterised (one image) instead of one path per tensor.
    out : str or path-like, optional
        Also save the figure there (``.png``, ``.svg`` or ``.pdf``).
    dpi : int, default 120
        Resolution of a saved raster image.
    time_limit, alignment
        Arena planning options for an IRModule source.
    figsize : (float, float), optional
        Inches; default 6.4 per column by 3.8 per row.

    Returns
    -------
    matplotlib.figure.Figure
        Axes ``fig.axes[row * n_modes + column]``.

    Raises
    ------
    PlotDependencyError
        matplotlib is not installed (``pip install "memcore[plot]"``).
    PlanningError
        A bad option, an unknown function or mode, or an unwritable ``out``.
    """
    Figure = _matplotlib()
    _check_common(color_by, max_artists, out)
    tls = as_timelines(source, modes=MODES if modes is None else modes, time_limit=time_limit, alignment=alignment,
                       functions=functions)
    if functions is None:
        tls = [t for t in tls if t.n_tensors] or tls[:1]
    if not tls:
        raise PlanningError("nothing to plot: the module has no Relax function")
    planned = tuple(tls[0].placements)
    cols = list(planned) if modes is None else [m for m in dict.fromkeys(modes) if m in planned]
    if not cols:
        raise PlanningError(f"none of the modes {tuple(modes)} was planned; the source has {planned}")
    if len(cols) > 1 and "arena" in cols:  # the reference mode (tvm, relay) on the left
        cols = [m for m in cols if m != "arena"] + ["arena"]
    fig = Figure(figsize=figsize or (6.4 * len(cols), 3.8 * len(tls)), layout="constrained")
    axes = fig.subplots(len(tls), len(cols), squeeze=False, sharey="row")
    for r, tl in enumerate(tls):
        top = max(_panel_top(tl.placements[m].address, tl.size, tl.profile, tl.lower_bound,
                             tl.placements[m].total_bytes) for m in cols)
        for c, mode in enumerate(cols):
            p = tl.placements[mode]
            if color_by == "storage":
                cat = p.storage
            elif color_by == "dtype":
                cat = _categories(tl.dtypes)
            else:
                cat = np.arange(tl.n_tensors, dtype=np.int64)
            _draw(axes[r][c], start=tl.start, end=tl.end, y=p.address, size=tl.size, cat=cat, names=tl.names,
                  n_steps=tl.n_steps, profile=tl.profile, lower_bound=tl.lower_bound, total=p.total_bytes,
                  max_artists=max_artists, title=_title(tl, mode), top=top)
    _save(fig, out, dpi)
    return fig


def plot_offsets(start, end, size, offset, *, arena_bytes: int | None = None, lower_bound: int | None = None,
                 names=None, title: str = "offset plan", color_by: str = "tensor",
                 max_artists: int = MAX_ARTISTS, out=None, dpi: int = 120, figsize=None):
    """Draw a flat offset plan: buffer ``i`` at ``offset[i]`` for steps ``[start[i], end[i]]``.

    Parameters
    ----------
    start, end, size, offset : array-like of int, shape (n,)
        The flat-array contract of :mod:`memcore.liveness` (inclusive lifetimes), e.g. a
        :func:`memcore.read_minimalloc_csv` problem and :func:`memcore.plan_offsets`'s
        ``offset``.
    arena_bytes : int, optional
        The arena size line (default: the top of the highest buffer).
    lower_bound : int, optional
        Default :func:`memcore.max_live_bytes` of the buffers.
    names : sequence of str, optional
        Written in the rectangles of small plans.
    title : str
    color_by : {"tensor", "storage"}, default "tensor"
        ``"storage"`` paints every buffer alike (one arena).
    max_artists, out, dpi, figsize
        As :func:`plot_plan`.

    Returns
    -------
    matplotlib.figure.Figure
        One axes.

    Raises
    ------
    PlotDependencyError
        matplotlib is not installed.
    memcore.InvalidArrayError
        Arrays the engine's contract refuses (lengths, ``end < start``, negative sizes).
    PlanningError
        A bad option or an unwritable ``out``.
    """
    import memcore

    Figure = _matplotlib()
    _check_common(color_by, max_artists, out)
    if color_by == "dtype":
        raise PlanningError("color_by='dtype' needs a module (flat problems have no dtypes)")
    bound = memcore.max_live_bytes(start, end, size)  # validates the arrays (InvalidArrayError)
    start, end, size = (np.asarray(a, dtype=np.int64).reshape(-1) for a in (start, end, size))
    offset = np.asarray(offset)
    if offset.shape != size.shape or (offset.size and not np.issubdtype(offset.dtype, np.integer)):
        raise PlanningError(f"offset must be {size.shape[0]} integers; got an array of shape {offset.shape}, "
                            f"dtype {offset.dtype}")
    offset = offset.astype(np.int64)
    if offset.size and offset.min() < 0:
        raise PlanningError("offset must be >= 0")
    n = int(size.shape[0])
    if lower_bound is None:
        lower_bound = int(bound)
    if arena_bytes is None:
        arena_bytes = int((offset + size).max()) if n else 0
    lo = int(min(start.min(), 0)) if n else 0
    n_steps = int(end.max()) + 1 if n else 0
    profile = memcore.live_profile(start - lo, end - lo, size, n_steps - lo) if n else None
    cat = np.zeros(n, dtype=np.int64) if color_by == "storage" else np.arange(n, dtype=np.int64)
    fig = Figure(figsize=figsize or (7.5, 4.2), layout="constrained")
    ax = fig.subplots()
    gap = "" if not lower_bound else f" ({arena_bytes / lower_bound - 1:+.1%} over bound)"
    _draw(ax, start=start - lo, end=end - lo, y=offset, size=size, cat=cat, names=names, n_steps=n_steps - lo,
          profile=profile, lower_bound=lower_bound, total=arena_bytes, max_artists=max_artists,
          title=f"{title}: {n} buffers, {format_bytes(arena_bytes)}{gap}")
    if lo:
        ax.set_xlabel(f"step - ({lo})")
    _save(fig, out, dpi)
    return fig
