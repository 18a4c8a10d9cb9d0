"""pytest plugin: ExecuTorch's ``greedy`` replaced by memcore's algorithm.

Loaded with ``-p _memcore_swap_plugin`` before ExecuTorch's test module is imported, so that
module's ``from executorch.exir.memory_planning import greedy`` (and the default
``MemoryPlanningAlgorithmSuite()``) get memcore. The calls per test go to the JSON file named
by ``MEMCORE_SWAP_CALLS`` at the end of the session, so that the caller can tell which tests
ran memcore at all. (A ``MemoryPlanningPass`` built before the swap, such as the one inside
ExecuTorch's default ``ExecutorchBackendConfig()``, keeps the original greedy.)
"""
import json
import os

import executorch.exir.memory_planning as memory_planning

from memcore_py.executorch import memcore_algorithm

_ALGORITHM = memcore_algorithm()
_CALLS: dict = {}
_CURRENT = {"test": None}


def greedy(alignment, specs, graph_module, graph_signature, extra_padding=0, **kwargs):
    """memcore's algorithm under greedy's name and signature."""
    _CALLS[_CURRENT["test"]] = _CALLS.get(_CURRENT["test"], 0) + 1
    return _ALGORITHM(alignment, specs, graph_module, graph_signature, extra_padding, **kwargs)


memory_planning.greedy = greedy


def pytest_runtest_setup(item):
    _CURRENT["test"] = item.nodeid.split("::", 1)[1]


def pytest_sessionfinish(session):
    path = os.environ.get("MEMCORE_SWAP_CALLS")
    if path:
        with open(path, "w") as f:
            json.dump(_CALLS, f)
