"""Engine token allocation: plan_tokens (TVM Relax / Relay rules), 1e3..1e6 tokens.

Workload (``memcore._workloads.random_token_program``): every token is requested once and
read once (an EV_REQUEST and an EV_DECREF), about 100 tokens live at a time, 3 pools, sizes
log-uniform up to 16 MiB. Each group holds plan_tokens at every size, ``np.argsort`` of an
equal-size int64 array measured in the same run (the target: plan_tokens within 3x of it at
1M tokens) and the pure-Python reference at small sizes. ``extra_info`` records n_tok,
n_events, n_storage, the bytes planned, the max-live lower bound of the token lifetimes and
the kernel/argsort ratio.

Run: ``python -m pytest bench/bench_engine_tokens.py --benchmark-only`` (table in
bench/README.md, "Engine: liveness and tokens").
"""

import functools

import numpy as np
import pytest

from _engine_baselines import REFERENCE_SIZES, SIZES, argsort_input, record_ratio
from memcore import _reference as ref
from memcore import max_live_bytes, plan_tokens, verify_tokens
from memcore._workloads import random_token_program


@functools.lru_cache(maxsize=None)
def token_workload(n):
    """The event program for n tokens and the max-live bytes of the token lifetimes."""
    prog = random_token_program(
        np.random.default_rng(n), n, n_pools=3, max_refs=1, p_zero_ref=0.0, mean_live=100
    )
    # A token is live from its request to its last read (event indices, inclusive).
    events = np.arange(prog["ev_tok"].shape[0], dtype=np.int64)
    first = np.full(n, -1, dtype=np.int64)
    last = np.full(n, -1, dtype=np.int64)
    np.maximum.at(last, prog["ev_tok"], events)
    first[prog["ev_tok"][prog["ev_kind"] == 0]] = events[prog["ev_kind"] == 0]
    lower_bound = max_live_bytes(first, last, prog["tok_bytes"])
    return prog, lower_bound


def _record(benchmark, n, result, lower_bound):
    benchmark.extra_info.update(
        n_tok=n,
        n_events=2 * n,
        n_storage=result.n_storage,
        planned_bytes=result.total_bytes,
        lower_bound=lower_bound,
    )


@pytest.mark.benchmark(group="engine-plan-tokens")
@pytest.mark.parametrize("n", SIZES)
def test_plan_tokens(benchmark, n):
    prog, lower_bound = token_workload(n)
    result = benchmark(plan_tokens, **prog)
    _record(benchmark, n, result, lower_bound)
    record_ratio(benchmark, n, plan_tokens, **prog)
    assert result.total_bytes >= lower_bound


@pytest.mark.benchmark(group="engine-plan-tokens")
@pytest.mark.parametrize("n", [100_000])
def test_plan_tokens_relay(benchmark, n):
    prog, lower_bound = token_workload(n)
    result = benchmark(plan_tokens, **prog, release_zero_ref=True)
    _record(benchmark, n, result, lower_bound)
    record_ratio(benchmark, n, plan_tokens, **prog, release_zero_ref=True)


@pytest.mark.benchmark(group="engine-plan-tokens")
@pytest.mark.parametrize("n", REFERENCE_SIZES + [10_000])
def test_plan_tokens_reference(benchmark, n):
    prog, lower_bound = token_workload(n)
    storage_of, storage_bytes, _ = benchmark(ref.plan_tokens, **prog)
    benchmark.extra_info.update(n_tok=n, n_storage=len(storage_bytes),
                                planned_bytes=sum(storage_bytes), lower_bound=lower_bound)
    assert storage_of == plan_tokens(**prog).storage_of.tolist()


@pytest.mark.benchmark(group="engine-plan-tokens")
@pytest.mark.parametrize("n", SIZES)
def test_plan_tokens_argsort_baseline(benchmark, n):
    benchmark(np.argsort, argsort_input(n))
    benchmark.extra_info.update(n=n)


@pytest.mark.benchmark(group="engine-verify-tokens")
@pytest.mark.parametrize("n", [1_000_000])
def test_verify_tokens(benchmark, n):
    prog, _ = token_workload(n)
    result = plan_tokens(**prog)
    benchmark(verify_tokens, **prog, plan=result)
    benchmark.extra_info.update(n_tok=n, n_storage=result.n_storage)
    record_ratio(benchmark, n, verify_tokens, **prog, plan=result)
