"""Relay GraphPlanMemory: memcore's graph_plan_memory vs TVM v0.19's, on relay.testing
workloads and on a 1M-entry synthetic graph.

- ``graph-plan-memory-workloads``: each recorded workload (tests/data/relay, written by the
  oracle under tools/relay_oracle.py) in per-expression form, the very function the oracle's
  ``relay.backend.GraphPlanMemory`` planned; the oracle's best-of-5 time is recorded in the
  same file, measured on this machine kind. ``extra_info``: entries, Relay bytes, arena
  bytes, the max-live lower bound, memcore's best time, the oracle's and their ratio, and
  memcore's time when the plan's lower bound (computed on first read) is read too.
  Graph-JSON form (relay.build's graph) in ``graph-plan-memory-graph-json``.
- ``graph-plan-memory-floor``: what a call costs that is not planning, on the smallest
  workload (dcgan, 38 entries): an empty Python call with the same signature, the compiled
  walk alone (argument checks, output block, the plan), building the result object, and
  the whole call.
- ``graph-plan-memory-1m``: a synthetic graph-executor graph of 1M nodes (~1.04M entries:
  3 % inputs, 3 % reshape-only ``__nop``, 3 % multi-output ops, 1-3 inputs read from the 8
  previous nodes, sizes log-uniform 64 B..4 MiB), Relay mode and arena mode. The oracle
  cannot plan a graph this deep (its visitors recurse per node and its passes are slow:
  FuseOps alone takes 17 s at 20k ops), so its speed at scale is the entries/s of its best
  run at its largest size (20k entries) in bench/data/relay_oracle_synthetic.json
  (``tools/relay_oracle.sh synthetic``); ``graph-plan-memory-oracle-sizes`` times memcore at
  the oracle's own sizes (2k and 20k entries) for a same-size ratio.
  Targets (issue 11): >= 1M entries/s, >= 20x the oracle's entries/s.

No timed asserts; the figures go to ``extra_info`` and bench/README.md.
Run: ``python -m pytest bench/bench_graph_plan_memory.py --benchmark-only``.
"""
import gzip
import json
import time
from pathlib import Path

import numpy as np
import pytest

from memcore_py._compiled import load_compiled
from memcore_py.frontend import read_graph_json
from memcore_py.planning import graph_plan_memory
from memcore_py.planning.graph_memory_plan import GraphMemoryPlan
from memcore_py.planning.graph_model import KIND_INPUT, KIND_NOP, KIND_OP, GraphModel
from memcore_py.planning.graph_plan_memory import _scope_tex

ROOT = Path(__file__).resolve().parents[1]
RELAY_DIR = ROOT / "tests" / "data" / "relay"
SYNTHETIC_ORACLE = ROOT / "bench" / "data" / "relay_oracle_synthetic.json"
WORKLOADS = sorted(p.name[: -len(".json.gz")] for p in RELAY_DIR.glob("*.json.gz"))


def _load(name):
    with gzip.open(RELAY_DIR / f"{name}.json.gz", "rt") as fh:
        return json.load(fh)


def _best(fn, repeat=20):
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def synthetic_graph(n_nodes, seed=0, window=8) -> GraphModel:
    """A graph-executor graph of ``n_nodes`` nodes (see the module docstring), built flat."""
    rng = np.random.default_rng(seed)
    kind = np.where(rng.random(n_nodes) < 0.03, KIND_INPUT, KIND_OP).astype(np.int8)
    kind[0] = KIND_INPUT
    kind[(rng.random(n_nodes) < 0.03) & (kind == KIND_OP)] = KIND_NOP
    n_out = np.ones(n_nodes, dtype=np.int64)
    multi = (rng.random(n_nodes) < 0.03) & (kind == KIND_OP)
    n_out[multi] = rng.integers(2, 4, int(multi.sum()))
    n_in = np.where(kind == KIND_INPUT, 0, np.where(kind == KIND_NOP, 1, rng.integers(1, 4, n_nodes)))
    in_ptr = np.zeros(n_nodes + 1, dtype=np.int64)
    np.cumsum(n_in, out=in_ptr[1:])
    consumer = np.repeat(np.arange(n_nodes, dtype=np.int64), n_in)
    in_node = np.maximum(consumer - rng.integers(1, window + 1, consumer.shape[0]), 0)
    in_index = rng.integers(0, 3, consumer.shape[0]) % n_out[in_node]
    n_entries = int(n_out.sum())
    nbytes = (2 ** rng.uniform(6, 22, n_entries)).astype(np.int64) // 4 * 4
    return GraphModel.from_arrays(kind, n_out, in_ptr, in_node, in_index, [n_nodes - 1], [0], nbytes,
                                  name=f"synthetic-{n_nodes}")


def _quality(benchmark, graph, relay_plan):
    arena = graph_plan_memory(graph, mode="arena")
    benchmark.extra_info.update(
        n_entries=graph.n_entries,
        n_storages=relay_plan.n_relay_storages,
        relay_bytes=relay_plan.relay_bytes,
        arena_bytes=int(sum(arena.arena_bytes)),
        lower_bound=relay_plan.lower_bound,
        pinned_bytes=relay_plan.pinned_bytes,
    )


@pytest.mark.benchmark(group="graph-plan-memory-workloads")
@pytest.mark.parametrize("name", WORKLOADS)
def test_workload_per_expression(benchmark, name):
    doc = _load(name)
    graph = read_graph_json(doc["expr_graph"])
    plan = benchmark(graph_plan_memory, graph)
    assert plan.storage_id.tolist() == doc["expr_plan"]["storage_id"]  # still Relay-exact
    _quality(benchmark, graph, plan)
    ours = _best(lambda: graph_plan_memory(graph), repeat=200)
    with_bound = _best(lambda: graph_plan_memory(graph).lower_bound, repeat=200)
    oracle = doc["oracle_seconds"]["graph_plan_memory"]
    benchmark.extra_info.update(memcore_s=ours, oracle_s=oracle, speedup_vs_oracle=oracle / ours,
                                memcore_with_lower_bound_s=with_bound)


def _empty_call(graph, *, match_range=16, mode="relay", alignment=64, time_limit=None):
    return None


@pytest.mark.benchmark(group="graph-plan-memory-floor")
def test_call_floor(benchmark):
    """The fixed costs of a call on the smallest workload (see the module docstring)."""
    name = "dcgan_O0"
    doc = _load(name)
    graph = read_graph_json(doc["expr_graph"])
    plan = benchmark(graph_plan_memory, graph)
    kernel = load_compiled("memcore_py.planning._graph_plan")
    args = (graph.node_kind, graph.node_row_ptr, graph.input_ptr, graph.input_entry, graph.head_entry,
            graph.entry_bytes, graph.entry_device, graph.entry_scope, _scope_tex(graph.scope_names)[0], 16, False)
    fields = {name: getattr(plan, name) for name in (
        "mode", "storages", "tok_storage", "tok_offset", "tvm_bytes", "planned_bytes", "function_names", "graph",
        "storage_id", "entry_device", "first_bytes", "storage_bytes", "relay_storage_bytes", "storage_creator",
        "texture_shapes", "texture_bytes", "pinned_bytes", "arena_of", "arena_bytes", "seconds")}
    n = 20000
    benchmark.extra_info.update(
        workload=name, n_entries=graph.n_entries, oracle_s=doc["oracle_seconds"]["graph_plan_memory"],
        empty_call_s=_best(lambda: _empty_call(graph), repeat=n),
        walk_s=_best(lambda: kernel.plan_relay(*args), repeat=n),
        result_object_s=_best(lambda: GraphMemoryPlan(lower_bound=0, **fields), repeat=n),
        call_s=_best(lambda: graph_plan_memory(graph), repeat=n),
        lower_bound_s=_best(lambda: graph_plan_memory(graph).lower_bound, repeat=2000),
    )
    assert plan.storage_id.tolist() == doc["expr_plan"]["storage_id"]


@pytest.mark.benchmark(group="graph-plan-memory-graph-json")
@pytest.mark.parametrize("name", [w for w in WORKLOADS if not w.startswith("lstm")])
def test_workload_graph_json(benchmark, name):
    doc = _load(name)
    text = json.dumps(doc["graph_json"])
    graph = read_graph_json(text)
    plan = benchmark(graph_plan_memory, graph)
    assert plan.storage_id.tolist() == doc["graph_json"]["attrs"]["storage_id"][1]
    _quality(benchmark, graph, plan)
    benchmark.extra_info.update(read_s=_best(lambda: read_graph_json(text), repeat=5))


@pytest.fixture(scope="module")
def graph_1m():
    return synthetic_graph(1_000_000)


def _oracle_runs():
    if not SYNTHETIC_ORACLE.exists():
        return []
    return json.loads(SYNTHETIC_ORACLE.read_text())["runs"]


@pytest.mark.benchmark(group="graph-plan-memory-oracle-sizes")
@pytest.mark.parametrize("n_ops", [2000, 20000])
def test_synthetic_oracle_size(benchmark, n_ops):
    """memcore at the sizes the oracle was timed at (same entry counts, a wider graph)."""
    graph = synthetic_graph(n_ops + 1)
    plan = benchmark(graph_plan_memory, graph)
    ours = _best(lambda: graph_plan_memory(graph), repeat=10)
    oracle = [r for r in _oracle_runs() if r["n_entries"] == n_ops + 1]
    benchmark.extra_info.update(n_entries=graph.n_entries, seconds=ours, entries_per_s=graph.n_entries / ours,
                                relay_bytes=plan.relay_bytes, lower_bound=plan.lower_bound)
    if oracle:
        benchmark.extra_info.update(oracle_entries_per_s=oracle[0]["entries_per_s"],
                                    speedup_vs_oracle=graph.n_entries / ours / oracle[0]["entries_per_s"])


def _oracle_rate():
    """The oracle's entries/s at the largest size it was timed at (its rate falls with size)."""
    runs = _oracle_runs()
    return max(runs, key=lambda r: r["n_entries"])["entries_per_s"] if runs else None


@pytest.mark.benchmark(group="graph-plan-memory-1m")
@pytest.mark.parametrize("mode", ["relay", "arena"])
def test_synthetic_1m(benchmark, graph_1m, mode):
    plan = benchmark.pedantic(graph_plan_memory, args=(graph_1m,), kwargs={"mode": mode}, rounds=3,
                              iterations=1, warmup_rounds=1)
    ours = _best(lambda: graph_plan_memory(graph_1m, mode=mode), repeat=3)
    rate = graph_1m.n_entries / ours
    oracle_rate = _oracle_rate()
    benchmark.extra_info.update(
        n_entries=graph_1m.n_entries, n_storages=plan.n_relay_storages, relay_bytes=plan.relay_bytes,
        arena_bytes=None if plan.arena_bytes is None else int(sum(plan.arena_bytes)),
        lower_bound=plan.lower_bound, seconds=ours, entries_per_s=rate,
        oracle_entries_per_s=oracle_rate,
        speedup_vs_oracle=None if oracle_rate is None else rate / oracle_rate,
    )
    assert plan.lower_bound <= plan.relay_bytes
