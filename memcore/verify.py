"""Independent checks of memory plans: offset plans and token (storage) plans.

The checkers share no code with the planners beyond argument validation, so a planner bug
cannot hide itself. Both return None for a valid plan and raise :class:`~memcore.PlanError`
naming the first violation; malformed *arguments* (dtype, length, an ill-formed event
program) raise :class:`~memcore.InvalidArrayError` as every kernel does.

Stages: validate (:mod:`memcore._validate`, the same checks as the planners)
-> vectorised bound checks -> ``memcore._verify`` kernel -> message.
"""

import numpy as np

from . import _verify
from ._errors import InvalidArrayError, PlanError
from ._validate import (
    SEQUENCE_ERRORS,
    as_aligned_interval_arrays,
    as_int64_array,
    as_int_scalar,
    as_token_program,
    check_length,
    first_true,
    raise_sequence_error,
)

__all__ = ["verify_offsets", "verify_tokens"]


def _describe_buffer(i, start, end, size, offset):
    lo = int(offset[i])
    return (
        f"buffer {i} (live [{int(start[i])}, {int(end[i])}], "
        f"bytes [{lo}, {lo + int(size[i])}))"
    )


def verify_offsets(start, end, size, offset, arena_bytes):
    """Check that an offset plan never puts two live buffers on the same bytes.

    Parameters
    ----------
    start, end : ndarray of shape (n,), dtype=int64
        Inclusive live intervals (contract in :mod:`memcore.liveness`), ``start <= end``.
    size : ndarray of shape (n,), dtype=int64
        Bytes of each buffer, ``>= 0``.
    offset : ndarray of shape (n,), dtype=int64
        Byte offset of each buffer in the arena.
    arena_bytes : int
        Size of the arena, ``>= 0``.

    Returns
    -------
    None
        When every buffer lies in ``[0, arena_bytes)`` and no two buffers whose lifetimes
        overlap (``start[i] <= end[j]`` and ``start[j] <= end[i]``) share a byte.

    Raises
    ------
    InvalidArrayError
        Malformed arguments: wrong dtype/shape/length, ``end < start``, a negative size,
        sizes whose total overflows int64, or a negative ``arena_bytes``.
    PlanError
        A buffer outside the arena (negative offset, or ``offset + size > arena_bytes``),
        or two live buffers sharing bytes; the message names both buffers with their
        lifetimes and byte ranges. Zero-size buffers never conflict.

    Notes
    -----
    A sweep over time with the live byte ranges kept in a balanced tree keyed by offset:
    each new buffer is compared with its neighbours in offset order only, since the live
    set is conflict-free so far. O(n log n) time, O(n) memory. The conflict reported is
    the first one the sweep meets (earliest start time).

    Examples
    --------
    >>> from memcore import verify_offsets
    >>> verify_offsets([0, 1], [1, 2], [8, 8], [0, 8], arena_bytes=16)
    >>> verify_offsets([0, 1], [1, 2], [8, 8], [0, 4], arena_bytes=16)
    Traceback (most recent call last):
    ...
    memcore._errors.PlanError: buffer 0 (live [0, 1], bytes [0, 8)) and buffer 1 (live [1, 2], bytes [4, 12)) are live at the same time and overlap in bytes
    """  # noqa: E501 - a doctest's output is one line
    start, end, size = as_aligned_interval_arrays(start, end, size, 1)
    offset = as_int64_array("offset", offset)
    check_length("offset", offset, start.shape[0], "len(start)")
    arena_bytes = as_int_scalar("arena_bytes", arena_bytes, low=0)
    bad = first_true(offset < 0)
    if bad >= 0:
        raise PlanError(
            f"offset[{bad}] must be >= 0; got {int(offset[bad])} for "
            f"{_describe_buffer(bad, start, end, size, offset)}"
        )
    # offset + size <= arena_bytes, written so that nothing overflows (both are >= 0).
    bad = first_true(offset > arena_bytes - size)
    if bad >= 0:
        raise PlanError(
            f"{_describe_buffer(bad, start, end, size, offset)} must fit in the arena of "
            f"{arena_bytes} bytes; got offset[{bad}] + size[{bad}] = "
            f"{int(offset[bad]) + int(size[bad])}"
        )
    pair = _verify._py_verify_offsets(start, end, size, offset)
    if pair is not None:
        i, j = pair
        raise PlanError(
            f"{_describe_buffer(i, start, end, size, offset)} and "
            f"{_describe_buffer(j, start, end, size, offset)} are live at the same time "
            f"and overlap in bytes"
        )


def verify_tokens(tok_bytes, tok_pool, tok_refs, ev_kind, ev_tok, plan, *, tok_sym=None):
    """Check a token plan: no storage shared by live tokens, large enough, pools unmixed.

    Parameters
    ----------
    tok_bytes, tok_pool, tok_refs, ev_kind, ev_tok, tok_sym
        The event program, exactly as given to :func:`memcore.plan_tokens`.
    plan : TokenPlan
        The plan to check; any object with ``storage_of`` (int64[n_tok]),
        ``storage_bytes`` and ``storage_pool`` (int64[n_storage]) attributes is accepted.

    Returns
    -------
    None
        When the plan is valid:

        - every requested token has a storage in ``[0, n_storage)`` and every token never
          requested has ``storage_of == -1``;
        - no two tokens holding one storage are live at once, a token being live from its
          EV_REQUEST to the EV_DECREF that brings its count to 0 (a token with
          ``tok_refs == 0`` only at its request);
        - each storage is at least as large as every token placed on it;
        - each storage holds tokens of its own pool only (``storage_pool``), and never mixes
          symbolic classes, nor a symbolic class with constant sizes.

    Raises
    ------
    InvalidArrayError
        Malformed program or plan arrays (as :func:`memcore.plan_tokens`, plus plan arrays
        of the wrong dtype or length).
    PlanError
        The first violation, with the event index, the tokens and the storage.

    Notes
    -----
    One pass over the events with a holder per storage and a count per token:
    O(n_events + n_tok + n_storage) time and memory. Whether the plan *reuses* as TVM
    would is not checked (that is plan_tokens' test suite's job), only that it is safe.

    Examples
    --------
    >>> from memcore import plan_tokens, verify_tokens
    >>> program = dict(tok_bytes=[32, 48], tok_pool=[0, 0], tok_refs=[1, 1],
    ...                ev_kind=[0, 1, 0, 1], ev_tok=[0, 0, 1, 1])
    >>> verify_tokens(**program, plan=plan_tokens(**program))
    """
    tok_bytes, tok_pool, tok_refs, ev_kind, ev_tok, tok_sym = as_token_program(
        tok_bytes, tok_pool, tok_refs, ev_kind, ev_tok, tok_sym
    )
    n_tok = tok_bytes.shape[0]
    try:
        storage_of, storage_bytes, storage_pool = (
            plan.storage_of,
            plan.storage_bytes,
            plan.storage_pool,
        )
    except AttributeError:
        raise InvalidArrayError(
            "plan must be a TokenPlan (storage_of, storage_bytes, storage_pool); got "
            f"{type(plan).__name__}"
        ) from None
    storage_of = as_int64_array("plan.storage_of", storage_of)
    storage_bytes = as_int64_array("plan.storage_bytes", storage_bytes)
    storage_pool = as_int64_array("plan.storage_pool", storage_pool)
    check_length("plan.storage_of", storage_of, n_tok, "len(tok_bytes)")
    n_storage = storage_bytes.shape[0]
    check_length("plan.storage_pool", storage_pool, n_storage, "len(plan.storage_bytes)")

    requested = np.zeros(n_tok, dtype=bool)
    requested[ev_tok[ev_kind == 0]] = True
    bad = first_true(requested & ((storage_of < 0) | (storage_of >= n_storage)))
    if bad >= 0:
        raise PlanError(
            f"plan.storage_of[{bad}] = {int(storage_of[bad])} must be a storage id in "
            f"[0, {n_storage}) for requested token {bad}"
        )
    code, e, a, b = _verify._py_verify_tokens(
        tok_bytes, tok_pool, tok_refs, tok_sym, ev_kind, ev_tok,
        storage_of, storage_bytes, storage_pool,
    )
    if code == 0:
        bad = first_true(~requested & (storage_of != -1))
        if bad >= 0:
            raise PlanError(
                f"plan.storage_of[{bad}] = {int(storage_of[bad])} must be -1 for token "
                f"{bad}, which is never requested"
            )
        return None
    codes = _verify.TOKEN_CODES
    for error in SEQUENCE_ERRORS:
        if code == codes[error]:
            raise_sequence_error(error, e, ev_tok, tok_refs)
    st = int(storage_of[a])
    if code == codes["ERR_SHARED"]:
        raise PlanError(
            f"tokens {a} and {b} must not hold storage {st} at the same time; got token {b} "
            f"requested at event {e} while token {a} is still live"
        )
    if code == codes["ERR_TOO_SMALL"]:
        raise PlanError(
            f"storage {st} must be at least as large as token {a}; got "
            f"plan.storage_bytes[{st}] = {int(storage_bytes[st])} < "
            f"tok_bytes[{a}] = {int(tok_bytes[a])} (event {e})"
        )
    if code == codes["ERR_POOL"]:
        raise PlanError(
            f"storage {st} must hold tokens of its pool only; got token {a} of pool "
            f"{int(tok_pool[a])} on plan.storage_pool[{st}] = {int(storage_pool[st])} "
            f"(event {e})"
        )
    if code == codes["ERR_SYM"]:
        sym = int(tok_sym[a]) if tok_sym.shape[0] else -1
        mine = "constant size" if sym == -1 else f"symbolic class {sym}"
        theirs = "constant sizes" if b == -1 else f"symbolic class {b}"
        raise PlanError(
            f"storage {st} must not mix symbolic size classes or a class with constant "
            f"sizes; got token {a} ({mine}) on a storage holding {theirs} (event {e})"
        )
    raise AssertionError(f"internal error: unknown verify_tokens code {code}")  # pragma: no cover
