"""``memcore plan GRAPH.json``: Relay's GraphPlanMemory and its arena mode on a graph-executor JSON.

A file named ``*.json`` or ``*.json.gz`` given to ``memcore plan`` is read as a TVM
graph-executor graph (:func:`memcore_py.frontend.read_graph_json`) and planned twice with
:func:`memcore_py.planning.graph_plan_memory`: Relay-exact, and in arena mode (one buffer per
(device, scope) pool, ``--time-limit`` / ``--no-search`` as for Relax modules). The table
has one row per graph: nodes, entries, Relay storages, Relay's flat bytes, arena bytes, the
max-live lower bound, each one's excess over it, texture bytes and both planning times.
``--json`` prints the same figures as JSON; ``--write-plan OUT.json`` writes the graph back
with memcore's ``storage_id`` (Relay-exact; with ``--mode arena`` also the
``storage_arena`` / ``storage_offset`` / ``arena_bytes`` attrs), the file a graph executor
loads. Bad input is one line on stderr and exit status 1.
"""
from __future__ import annotations

import json
import sys

from ._common import fail

__all__ = ["is_graph_json", "run_graph", "plan_graph_file", "format_graph_table"]

_COLUMNS = ("graph", "nodes", "entries", "storages", "relay bytes", "arena bytes", "lower bound",
            "relay/lb", "arena/lb", "texture bytes", "relay ms", "arena ms")


def is_graph_json(path) -> bool:
    """Whether ``memcore plan`` reads ``path`` as a graph-executor JSON (by its name)."""
    return isinstance(path, str) and (path.endswith(".json") or path.endswith(".json.gz"))


def plan_graph_file(path: str, *, time_limit=None):
    """``(graph, relay_plan, arena_plan)`` for a graph-executor JSON file (``-`` = stdin).

    Raises
    ------
    MemcoreError
        :class:`~memcore_py.planning.graph_model.GraphError` for bad input.
    """
    from ..frontend import read_graph_json
    from ..planning import graph_plan_memory

    source = sys.stdin.read() if path == "-" else path
    graph = read_graph_json(source, name="<stdin>" if path == "-" else None)
    relay = graph_plan_memory(graph, mode="relay")
    arena = graph_plan_memory(graph, mode="arena", time_limit=time_limit)
    return graph, relay, arena


def _excess(nbytes, bound):
    return "-" if not bound or nbytes is None else f"{nbytes / bound - 1.0:+.1%}"


def format_graph_table(rows) -> str:
    """Fixed-width table of ``(relay_plan, arena_plan)`` pairs, one row each."""
    from .report import format_bytes

    lines = []
    for relay, arena in rows:
        s = arena.summary()
        lines.append((
            s["name"], str(s["n_nodes"]), str(s["n_entries"]), str(relay.n_relay_storages),
            format_bytes(relay.relay_bytes), format_bytes(s["arena_bytes"]), format_bytes(relay.lower_bound),
            _excess(relay.relay_bytes, relay.lower_bound), _excess(s["arena_bytes"], relay.lower_bound),
            format_bytes(relay.texture_bytes), f"{relay.seconds * 1e3:.2f}", f"{arena.seconds * 1e3:.2f}",
        ))
    widths = [max(len(c), *(len(r[i]) for r in lines)) if lines else len(c) for i, c in enumerate(_COLUMNS)]

    def fmt(row):
        return "  ".join(v.ljust(w) if i == 0 else v.rjust(w) for i, (v, w) in enumerate(zip(row, widths)))

    return "\n".join([fmt(_COLUMNS), fmt(["-" * w for w in widths]), *(fmt(r) for r in lines)])


def run_graph(args, out=None) -> int:
    """``memcore plan`` on a graph-executor JSON ``args.file``; returns the exit status."""
    from ..errors import MemcoreError

    out = out or sys.stdout
    if getattr(args, "print_ir", False):
        return fail("plan", "--print-ir needs a TVMScript module; a graph JSON has no IR (use --write-plan)", 2)
    try:
        graph, relay, arena = plan_graph_file(args.file, time_limit=args.time_limit)
    except MemcoreError as exc:
        return fail("plan", str(exc), 1)
    chosen = arena if args.mode == "arena" else relay
    top, plot = getattr(args, "top", None), getattr(args, "plot", None)
    peak = None
    if top or plot:
        from ..planning.peak_report import format_report, graph_timeline, report
        from ..planning.plot import plot_plan

        try:
            tl = graph_timeline(relay, arena)
            peak = report([tl], top=top) if top else None
            if plot:
                plot_plan([tl], out=plot)
        except MemcoreError as exc:
            return fail("plan", f"{args.file}: {exc}", 1)
    if args.write_plan:
        try:
            with open(args.write_plan, "w", encoding="utf-8") as fh:
                fh.write(chosen.to_graph_json() + "\n")
        except OSError as exc:
            return fail("plan", f"cannot write {args.write_plan!r}: {exc.strerror or exc}", 1)
    if args.json:
        doc = {"mode": args.mode, "time_limit": args.time_limit,
               "graphs": [{**arena.summary(), "mode": None, "relay_storages": relay.n_relay_storages,
                           "relay_seconds": relay.seconds, "arena_seconds": arena.seconds,
                           "seconds": None}]}
        if peak is not None:
            doc["graphs"][0]["peak"] = peak.to_dict()
        out.write(json.dumps(doc, indent=2) + "\n")
    else:
        out.write(format_graph_table([(relay, arena)]) + "\n")
        written = f"; plan written to {args.write_plan}" if args.write_plan else ""
        out.write(f"mode: {'arena' if args.mode == 'arena' else 'relay'}{written}\n")
        if peak is not None:
            out.write(format_report(peak).rstrip("\n") + "\n")
    return 0
