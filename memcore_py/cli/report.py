"""The memory report as text: the per-function table ``memcore plan`` prints.

Design
------
The report itself (:class:`~memcore_py.planning.report.PlanReport`, built from the plans by
:func:`~memcore_py.planning.report.build_report`; what its figures mean is said there) is
planning's. This module formats it: bytes in binary units (a symbolic total as its
expression), the table sorted by module and function with a totals row. :func:`write_table`
draws it with ``rich`` on a terminal when rich is installed and writes the plain fixed-width
text otherwise (piped output stays the same for scripts).
"""
from __future__ import annotations

__all__ = ["format_bytes", "format_table", "table_cells", "write_table", "render_rich_table"]


# ---------------------------------------------------------------------------------------------
# Text
# ---------------------------------------------------------------------------------------------


def format_bytes(n: int | None, expr: str | None = None) -> str:
    """``12.34 MiB`` style; ``expr`` (the symbolic total, in bytes) when ``n`` is unknown;
    ``?`` when neither is known."""
    if n is None:
        return expr if expr is not None else "?"
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n} B"


_COLUMNS = ("module", "function", "bindings", "allocs", "planned", "storages", "tvm bytes",
            "arena bytes", "lower bound", "tvm/lb", "arena/lb", "TVM 0.27", "tvm ms", "arena ms")


def _sum_known(values):
    """The sum of ``values``, or None when one of them is unknown (None)."""
    total = 0
    for v in values:
        if v is None:
            return None
        total += v
    return total


def table_cells(reports):
    """``(columns, rows, totals)`` of the report table, all cells strings.

    Rows are sorted by module, then function name (the order of the files on the command
    line does not matter); ``totals`` sums every count and byte column over all rows (a byte
    total is ``-`` when one of its rows is symbolic or unknown), the excess columns relative
    to the summed lower bound, and the times over the modules (each module's time once)."""
    runs = max((rep.runs for rep in reports), default=1)
    columns = _COLUMNS[:-2] + (f"tvm ms (best of {runs})", f"arena ms (best of {runs})")
    entries = sorted(((rep.name, f.name, rep, f) for rep in reports for f in rep.functions), key=lambda e: e[:2])
    rows = []
    for _, _, rep, f in entries:
        tvm_x, arena_x = f.excess(f.tvm_bytes), f.excess(f.arena_bytes)
        rows.append((
            rep.name, f.name, str(f.n_bindings), str(f.n_allocs), str(f.n_planned),
            str(f.tvm_storages), format_bytes(f.tvm_bytes, f.tvm_expr), format_bytes(f.arena_bytes, f.arena_expr),
            format_bytes(f.lower_bound),
            "-" if tvm_x is None else f"{tvm_x:+.1%}",
            "-" if arena_x is None else f"{arena_x:+.1%}",
            "-" if f.reference_bytes is None else format_bytes(f.reference_bytes),
            f"{rep.tvm_seconds * 1e3:.1f}", f"{rep.arena_seconds * 1e3:.1f}",
        ))
    funcs = [f for _, _, _, f in entries]
    tvm, arena = _sum_known(f.tvm_bytes for f in funcs), _sum_known(f.arena_bytes for f in funcs)
    lb = _sum_known(f.lower_bound for f in funcs)
    ref = _sum_known(f.reference_bytes for f in funcs)

    def excess(n):
        return "-" if n is None or not lb else f"{n / lb - 1.0:+.1%}"

    def total_bytes(n):
        return "-" if n is None else format_bytes(n)

    totals = (
        "total",
        f"{len(funcs)} functions",
        str(sum(f.n_bindings for f in funcs)),
        str(sum(f.n_allocs for f in funcs)),
        str(sum(f.n_planned for f in funcs)),
        str(sum(f.tvm_storages for f in funcs)),
        total_bytes(tvm),
        total_bytes(arena),
        total_bytes(lb),
        excess(tvm),
        excess(arena),
        "-" if ref is None or not funcs else format_bytes(ref),
        f"{sum(rep.tvm_seconds for rep in reports) * 1e3:.1f}",
        f"{sum(rep.arena_seconds for rep in reports) * 1e3:.1f}",
    )
    return columns, rows, totals


def format_table(reports) -> str:
    """A fixed-width table with one row per function of each :class:`~memcore_py.planning.report.PlanReport`, sorted by
    module and function, and a totals row when there is more than one function.

    ``storages`` is TVM mode's count; ``tvm/lb`` and ``arena/lb`` are the excess over the
    lower bound; ``TVM 0.27`` is Apache TVM's own result when recorded; the times are those
    of the whole module's StaticPlanBlockMemory run in each mode, the fastest of the report's
    runs (steady state), as the time column headers say. A symbolic total is printed as an
    expression in bytes.
    """
    columns, rows, totals = table_cells(reports)
    shown = rows + [totals] if len(rows) > 1 else rows
    widths = [max(len(c), *(len(r[i]) for r in shown)) if shown else len(c) for i, c in enumerate(columns)]
    left = {0, 1}

    def fmt(cells):
        return "  ".join(
            c.ljust(w) if i in left else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))
        ).rstrip()

    rule = fmt(tuple("-" * w for w in widths))
    lines = [fmt(columns), rule]
    lines.extend(fmt(r) for r in rows)
    if len(rows) > 1:
        lines.extend((rule, fmt(totals)))
    return "\n".join(lines)


def write_table(reports, out) -> None:
    """Write the report table to ``out``: drawn with ``rich`` when it is installed and
    ``out`` is a terminal, the plain :func:`format_table` otherwise (piped, redirected, or
    without rich), so scripts always read the same fixed-width text."""
    if getattr(out, "isatty", None) is not None and out.isatty():
        try:
            render_rich_table(reports, out, force_terminal=True)
            return
        except ImportError:
            pass
    out.write(format_table(reports) + "\n")


def render_rich_table(reports, out, *, force_terminal: bool = False, width: int | None = None) -> None:
    """The report table drawn by ``rich`` (a ``rich.table.Table``: same cells, sorted rows,
    totals as its footer) on ``out``.

    Raises
    ------
    ImportError
        rich is not installed (``pip install rich``).
    """
    from rich.console import Console
    from rich.table import Table

    columns, rows, totals = table_cells(reports)
    show_totals = len(rows) > 1
    table = Table(show_footer=show_totals, header_style="bold", footer_style="bold")
    for i, c in enumerate(columns):
        table.add_column(c, justify="left" if i < 2 else "right", footer=totals[i] if show_totals else "")
    for r in rows:
        table.add_row(*r)
    Console(file=out, force_terminal=force_terminal, width=width or 250, soft_wrap=False).print(table)
