"""Seeded random workloads for the engine's tests and benchmarks (not used by the kernels).

Each generator is vectorised, so a 1M-element workload takes well under a second to build,
and returns arrays that satisfy the contract of the kernel it feeds.
"""

import numpy as np

__all__ = ["random_liveness", "random_intervals", "random_token_program"]


def random_liveness(rng, n, n_steps, *, max_uses=4, p_output=0.1):
    """Random ``(def_pos, use_ptr, use_pos, is_output)`` for :func:`memcore.live_intervals`.

    Values are defined at a random step or -1; each has 0..max_uses uses at or after its
    definition; about ``p_output`` of them are outputs.
    """
    def_pos = rng.integers(-1, n_steps, n, dtype=np.int64)
    counts = rng.integers(0, max_uses + 1, n, dtype=np.int64)
    use_ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=use_ptr[1:])
    owner_def = np.repeat(np.maximum(def_pos, 0), counts)
    span = n_steps - owner_def
    use_pos = owner_def + (rng.random(owner_def.shape[0]) * span).astype(np.int64)
    is_output = (rng.random(n) < p_output).astype(np.uint8)
    return def_pos, use_ptr, use_pos, is_output


def random_intervals(rng, n, n_steps, *, mean_length=100, max_size=1 << 20):
    """Random inclusive ``(start, end, size)`` with starts in ``[0, n_steps)``."""
    start = rng.integers(0, n_steps, n, dtype=np.int64)
    length = rng.geometric(1.0 / mean_length, n).astype(np.int64) - 1
    end = np.minimum(start + length, n_steps - 1)
    size = rng.integers(0, max_size, n, dtype=np.int64)
    return start, end, size


def random_token_program(
    rng,
    n_tok,
    *,
    n_pools=3,
    max_refs=3,
    mean_live=100,
    p_zero_ref=0.05,
    p_symbolic=0.0,
    n_sym_classes=4,
    max_log2_bytes=24,
):
    """A random, well-formed token event program for :func:`memcore.plan_tokens`.

    Token i is requested at time ``2 i``; each of its ``tok_refs[i]`` readers runs at an odd
    time up to about ``4 * mean_live`` later, so about ``mean_live`` tokens are live at once.
    Sizes are log-uniform up to ``2**max_log2_bytes``.

    Returns
    -------
    dict
        Keyword arguments for ``plan_tokens``: tok_bytes, tok_pool, tok_refs, ev_kind,
        ev_tok, tok_sym.
    """
    tok_bytes = np.exp2(rng.random(n_tok) * max_log2_bytes).astype(np.int64)
    tok_pool = rng.integers(0, n_pools, n_tok, dtype=np.int64)
    tok_refs = rng.integers(1, max_refs + 1, n_tok, dtype=np.int64)
    tok_refs[rng.random(n_tok) < p_zero_ref] = 0
    tok_sym = np.where(
        rng.random(n_tok) < p_symbolic, rng.integers(0, n_sym_classes, n_tok), -1
    ).astype(np.int64)
    reader = np.repeat(np.arange(n_tok, dtype=np.int64), tok_refs)
    delay = rng.integers(0, 2 * mean_live, reader.shape[0], dtype=np.int64)
    times = np.concatenate([2 * np.arange(n_tok, dtype=np.int64), 2 * (reader + delay) + 1])
    toks = np.concatenate([np.arange(n_tok, dtype=np.int64), reader])
    kinds = np.concatenate(
        [np.zeros(n_tok, dtype=np.int8), np.ones(reader.shape[0], dtype=np.int8)]
    )
    order = np.argsort(times, kind="stable")
    return {
        "tok_bytes": tok_bytes,
        "tok_pool": tok_pool,
        "tok_refs": tok_refs,
        "ev_kind": kinds[order],
        "ev_tok": toks[order],
        "tok_sym": tok_sym,
    }
