"""ExecuTorch's own memory-planning tests (``executorch/exir/tests/test_memory_planning.py``,
shipped in the 1.5.1 wheel) with memcore's algorithm in place of ``greedy``.

The swap (``_memcore_swap_plugin``) replaces ``executorch.exir.memory_planning.greedy``
before the test module is imported, in a separate pytest process so that nothing of this
session (where greedy is the baseline) is touched. Of the file's 45 tests, 29 call the
swapped algorithm (checked: the plugin counts calls per test): the 28 of :data:`RUN_MEMCORE`
and :data:`SLOW`; all pass with memcore. They are algorithm-agnostic except ``TestMisc::test_multiple_pools_1``,
which pins greedy's (mem_id, offset) multiset and ``[0, 8, 0, 8]``: memcore's plan of that
small program is the same. The other 16 never reach the swapped function: ``naive``
parametrizations (``test_multiple_pools_0``, ``TestMap::test_map``, ``test_multi_map``),
Verifier- or helper-only tests (``TestVerifier::test_overlap``, ``TestMisc::test_filter_nodes``,
``test_set_alloc_node_spec_uses_shared_alloc_offset``,
``test_custom_pool_with_device_planning_raises``, which raises before planning), and tests
lowering through ExecuTorch's default ``ExecutorchBackendConfig()``, whose planning pass was
built with the original greedy at import (``TestMemoryPlanningUserInputs`` x4,
``test_none_output``, ``test_placeholder_lifetime``, ``test_mutation_not_double_allocated``,
``test_mutable_buffers_infinite_lifespan``, ``test_custom_inplace_op_memory_aliasing``).

``TestMemoryPlanning::test_graph_input_output`` (quantizes a model; about half a minute) runs
in its own test, marked ``slow``.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("executorch.exir")  # not "executorch": see test_executorch_programs.py
pytest.importorskip("torch")

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]

#: Tests of ExecuTorch's file that call the (swapped) algorithm, fast ones.
RUN_MEMCORE = (
    "TestMemoryPlanning::test_basic",
    "TestMemoryPlanning::test_different_tensor_sizes",
    "TestMemoryPlanning::test_linear_with_view",
    "TestMemoryPlanning::test_list_arg",
    "TestMemoryPlanning::test_return_two",
    "TestMisc::test_constants_not_memory_planned",
    "TestMisc::test_multiple_pools_1",
    "TestMap::test_custom_kv_cache_shared_buffers",
    "TestMap::test_multi_state_plan",
    "TestDeviceAwareMemoryPlanning::test_all_cuda_no_wasted_slots",
    "TestDeviceAwareMemoryPlanning::test_cpu_only_unchanged",
    "TestDeviceAwareMemoryPlanning::test_device_index_propagated",
    "TestDeviceAwareMemoryPlanning::test_different_device_indices_separate_buffers",
    "TestDeviceAwareMemoryPlanning::test_disabled_falls_back_to_cpu",
    "TestDeviceAwareMemoryPlanning::test_mem_offset_correct_after_remap",
    "TestDeviceAwareMemoryPlanning::test_mixed_cpu_cuda_separate_buffers",
    "TestDeviceAwareMemoryPlanning::test_no_cross_device_memory_sharing",
    "TestStorageBaseMemoryPlanning::test_greedy_places_storage_backed_spec_inside_base_object",
    "TestStorageBaseMemoryPlanning::test_greedy_reserves_storage_base_lifetime_before_reuse",
    "TestStorageBaseMemoryPlanning::test_greedy_resolves_chained_storage_base",
    "TestStorageBaseMemoryPlanning::test_greedy_result_contains_storage_backed_full_plan",
    "TestStorageBaseMemoryPlanning::test_verifier_allows_chained_storage_base_overlap",
    "TestStorageBaseMemoryPlanning::test_verifier_allows_storage_base_overlap",
    "TestInPlaceElemWise::test_basic_inplace_sharing",
    "TestInPlaceElemWise::test_multi_user_blocks_inplace",
    "TestInPlaceElemWise::test_no_inplace_when_ops_not_eligible",
    "TestInPlaceElemWise::test_verifier_allows_chained_inplace_overlap",
    "TestInPlaceElemWise::test_verifier_allows_inplace_overlap",
)
SLOW = ("TestMemoryPlanning::test_graph_input_output",)


def _executorch_test_file():
    import executorch.exir

    path = Path(executorch.exir.__file__).parent / "tests" / "test_memory_planning.py"
    if not path.exists():
        pytest.skip("this executorch wheel does not ship exir/tests/test_memory_planning.py")
    return path


def _run_swapped(tests, tmp_path):
    path = _executorch_test_file()
    calls = tmp_path / "calls.json"
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    env = dict(os.environ, MEMCORE_SWAP_CALLS=str(calls),
               PYTHONPATH=os.pathsep.join([str(HERE), str(REPO), os.environ.get("PYTHONPATH", "")]))
    ids = [f"{path}::{t}" for t in tests]
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "_memcore_swap_plugin",
           "-c", str(tmp_path / "pytest.ini"), "--rootdir", str(tmp_path), "-rfE", *ids]
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    tail = proc.stdout[-4000:] + proc.stderr[-2000:]
    assert proc.returncode == 0, tail
    assert f"{len(tests)} passed" in proc.stdout, tail
    counted = json.loads(calls.read_text())
    assert sorted(t for t in tests if counted.get(t, 0) == 0) == [], "tests that never ran memcore"


def test_executorch_memory_planning_tests_with_memcore(tmp_path):
    _run_swapped(RUN_MEMCORE, tmp_path)


@pytest.mark.slow
def test_executorch_graph_input_output_test_with_memcore(tmp_path):
    _run_swapped(SLOW, tmp_path)
