"""ExecuTorch memory planning: memcore's algorithm (``memcore_py.executorch``) against
ExecuTorch's ``greedy`` on the same TensorSpecs, same run.

Workloads: a synthetic program of 10 000 specs (``random_intervals`` over 10 000 steps,
about 100 live at a time, sizes below 64 KiB, uint8 specs so that the size in bytes is the
shape) and the specs ExecuTorch hands its algorithm when lowering two real programs of
:mod:`memcore_py.testing.torch_models` (ResNet-18 and GPT-2, small configs), recorded once
per session by a pass-through algorithm inside ``to_executorch``. Each benchmark times one
algorithm call ``algo(alignment, specs, graph_module, None, 0)``; both algorithms only
realign the specs (same alignment) and return a ``MemoryAlgoResult``, so calls repeat.
memcore runs twice: heuristics only (``time_limit=None``, the planning-speed comparison) and
with its default search budget (``ARENA_TIME_LIMIT`` per arena, spent only above the lower
bound: the bytes comparison).

``extra_info``: ``n_specs``, ``planned_bytes`` (the arena, ``bufsizes[1]``),
``lower_bound`` (max-live bytes of the storage-owning specs, the same number for both),
``gap`` (relative); memcore's also ``alternating_greedy_s``, ``alternating_memcore_s`` and
``speedup`` (greedy / memcore, best of alternating calls) when benchmarking is on.
Greedy is quadratic Python (about 3 s at 10 000 specs), so under ``--benchmark-disable``
each benchmark still runs once.
"""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("executorch.exir")
torch = pytest.importorskip("torch")

from _passes_common import best_alternating  # noqa: E402

import memcore  # noqa: E402
from memcore._workloads import random_intervals  # noqa: E402
from memcore_py.executorch import memcore_algorithm  # noqa: E402
from memcore_py.planning.arena_options import ARENA_TIME_LIMIT  # noqa: E402

ALIGNMENT = 16
N_SYNTHETIC = 10_000
REAL = ("resnet18", "gpt2")
_CACHE: dict = {}


def _synthetic(n):
    from executorch.exir.tensor import TensorSpec

    start, end, size = random_intervals(np.random.default_rng(n), n, n, max_size=1 << 16)
    specs = []
    for s, e, b in zip(start.tolist(), end.tolist(), size.tolist()):
        spec = TensorSpec(torch.uint8, torch.Size([b]))
        spec.lifetime = [s, e]
        specs.append(spec)
    return specs, None


def _recorded(name):
    """The specs and graph module of ``name``'s top-level planning call in ``to_executorch``."""
    from executorch.exir import ExecutorchBackendConfig, to_edge
    from executorch.exir.memory_planning import MemoryPlanningAlgorithmSuite, greedy
    from executorch.exir.passes import MemoryPlanningPass

    from memcore_py.testing.torch_models import torch_model

    calls = []

    def recording(alignment, specs, graph_module, graph_signature, extra_padding=0):
        calls.append((list(specs), graph_module))
        return greedy(alignment, specs, graph_module, graph_signature, extra_padding)

    model, args, _ = torch_model(name)
    model.requires_grad_(False)
    edge = to_edge(torch.export.export(model, args))
    suite = MemoryPlanningAlgorithmSuite(algo_list=[recording])
    edge.to_executorch(ExecutorchBackendConfig(memory_planning_pass=MemoryPlanningPass(suite)))
    return calls[-1]


def workload(name):
    if name not in _CACHE:
        specs, gm = _synthetic(N_SYNTHETIC) if name == "synthetic_10k" else _recorded(name)
        _CACHE[name] = (specs, gm, _lower_bound(specs))
    return _CACHE[name]


def _lower_bound(specs):
    owners = [s for s in specs if s.storage_base is None]
    start = np.array([s.lifetime[0] for s in owners], dtype=np.int64)
    end = np.array([s.lifetime[1] for s in owners], dtype=np.int64)
    size = np.array([s.realign(ALIGNMENT) for s in owners], dtype=np.int64)
    return int(memcore.max_live_bytes(start, end, size))


def _greedy():
    from executorch.exir.memory_planning import greedy

    return greedy


def _call(algo, specs, gm):
    return lambda: algo(ALIGNMENT, specs, gm, None, 0)


def _record(benchmark, result, specs, lower):
    planned = int(result.bufsizes[1])
    benchmark.extra_info.update(n_specs=len(specs), planned_bytes=planned, lower_bound=lower,
                                gap=(planned - lower) / lower if lower else 0.0)


WORKLOADS = ("synthetic_10k",) + REAL


@pytest.mark.benchmark(group="executorch-planning")
@pytest.mark.parametrize("name", WORKLOADS)
def test_greedy(benchmark, name):
    specs, gm, lower = workload(name)
    result = benchmark(_call(_greedy(), specs, gm))
    _record(benchmark, result, specs, lower)


@pytest.mark.benchmark(group="executorch-planning")
@pytest.mark.parametrize("time_limit", [None, ARENA_TIME_LIMIT], ids=["heuristics", "search"])
@pytest.mark.parametrize("name", WORKLOADS)
def test_memcore(benchmark, name, time_limit):
    specs, gm, lower = workload(name)
    ours = _call(memcore_algorithm(time_limit=time_limit), specs, gm)
    result = benchmark(ours)
    _record(benchmark, result, specs, lower)
    theirs = _call(_greedy(), specs, gm)
    assert result.bufsizes[1] <= theirs().bufsizes[1]
    if not benchmark.disabled:
        best_ours, best_theirs = best_alternating(ours, theirs, rounds=3)
        benchmark.extra_info.update(alternating_memcore_s=best_ours, alternating_greedy_s=best_theirs,
                                    speedup=best_theirs / best_ours)
