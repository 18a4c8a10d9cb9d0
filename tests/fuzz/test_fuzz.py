"""The CI fuzzing run: >= 2,000 inputs per run against the invariants of
:mod:`memcore_py.testing.fuzzing` (parser, printer, passes, kernels, command line).

Hypothesis drives the inputs with ``derandomize=True``, so every CI run sees the same inputs
and a failure reproduces; ``tools/fuzz.py`` runs long campaigns over fresh seeds with the
same checks (FUZZING.md). A failing example prints its seed; ``mutate_text(corpus[seed %
len(corpus)], seed)`` / ``kernel_call(seed)`` rebuild the input.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from memcore_py.cli.contract import check_cli
from memcore_py.testing.fuzzing import check_kernel, check_text, default_corpus, kernel_call, mutate_text

CORPUS = default_corpus()
SEEDS = st.integers(min_value=0, max_value=2**40)


def _fast(n: int):
    """Deterministic, no deadline (first calls compile caches), no example database."""
    return settings(max_examples=n, derandomize=True, deadline=None, database=None,
                    suppress_health_check=list(HealthCheck))


@_fast(1500)
@given(SEEDS)
def test_fuzz_text_parse_print_passes(seed):
    text = mutate_text(CORPUS[seed % len(CORPUS)], seed)
    problem = check_text(text)
    assert problem is None, f"seed {seed}: {problem}"


@_fast(1000)
@given(SEEDS)
def test_fuzz_kernel_calls(seed):
    name, args, kwargs = kernel_call(seed)
    problem = check_kernel(name, args, kwargs)
    assert problem is None, f"seed {seed}: {problem}"


def _arrays(dtype):
    return hnp.arrays(dtype=dtype, shape=st.integers(0, 30),
                      elements=st.integers(-3, 60) if dtype != np.float64 else st.floats(allow_nan=True, allow_infinity=True))


@_fast(300)
@given(st.sampled_from([np.int64, np.int32, np.float64]), st.data())
def test_fuzz_interval_kernels_on_hypothesis_arrays(dtype, data):
    """Hypothesis-built arrays (any length, negative values, wrong dtypes) for the interval
    kernels: a typed error or a verified plan."""
    start = data.draw(_arrays(dtype), label="start")
    end = data.draw(_arrays(np.int64), label="end")
    size = data.draw(_arrays(np.int64), label="size")
    for name, args in (("max_live_bytes", (start, end, size)), ("plan_offsets", (start, end, size)),
                       ("live_profile", (start, end, size, 70))):
        problem = check_kernel(name, args, {})
        assert problem is None, problem


@_fast(150)
@given(SEEDS, st.sampled_from(["check", "fmt", "plan"]))
def test_fuzz_cli_one_line_errors(seed, command):
    text = mutate_text(CORPUS[seed % len(CORPUS)], seed)
    problem = check_cli(text, command, ("--no-search",) if command == "plan" else ())
    assert problem is None, f"seed {seed}: {problem}"


@_fast(60)
@given(st.integers(0, 10**6), st.integers(1, 60))
def test_fuzz_random_modules_through_every_pass(seed, n_bindings):
    """Well-formed random modules (the generators' full feature set) through the passes."""
    from memcore_py.testing import random_lowered_module, random_module

    for mod in (random_module(seed, n_bindings), random_lowered_module(seed, n_bindings)):
        problem = check_text(mod.script())
        assert problem is None, f"seed {seed}, {n_bindings} bindings: {problem}"


def test_checks_can_fail():
    """The invariants are real: a kernel result that is wrong, and text that is not TVMScript
    but raises an untyped error, are reported."""
    assert check_kernel("max_live_bytes", ([0], [1], [8]), {"alignment": 1}) is None
    assert "raised TypeError" in check_kernel("max_live_bytes", ([0], [1], [8]), {"alignment": 1, "bogus": 2})
    assert check_cli("not tvmscript", "check") is None  # one line, exit 1


@pytest.mark.parametrize("seed", range(5))
def test_mutations_are_deterministic(seed):
    text = CORPUS[seed]
    assert mutate_text(text, seed) == mutate_text(text, seed)
    assert kernel_call(seed)[0] == kernel_call(seed)[0]
