"""Token allocation: storages for tokens, with TVM Relax's (or Relay's) reuse rules.

A *token* is one allocation to plan (TVM's ``StorageToken``): ``tok_bytes`` bytes in pool
class ``tok_pool`` (storage scope x dtype [x device], numbered by the caller), read by
``tok_refs`` calls. Its life is an *event program* in program order:

- ``(EV_REQUEST, p)``: token p is allocated; it gets a free storage of its pool or a fresh one.
- ``(EV_DECREF, p)``: a call that read p has run; when p's count reaches 0 its storage returns
  to the free pool of its class.

This is how one kernel serves both Apache TVM Relax's ``StaticPlanBlockMemory``
(``TokenAllocator1D`` + ``StorageAllocator``, spec §1.4) and the retired Relay
``GraphPlanMemory`` (spec §1.8, ``release_zero_ref=True``). Liveness here is implicit in the
events; the interval contract of :mod:`memcore.liveness` is not used.

Stages: validate (vectorised, :mod:`memcore._validate`) -> make pool ids dense -> run the
``memcore._tokens`` kernel -> raise for a sequence error it reports -> :class:`TokenPlan`.
"""

from dataclasses import dataclass

import numpy as np

from . import _tokens
from ._validate import INT64_MAX, as_int_scalar, as_token_program, exact_sum, raise_sequence_error

__all__ = ["EV_REQUEST", "EV_DECREF", "TokenPlan", "plan_tokens"]

#: Event kind: allocate the token (TVM: an ``alloc_tensor`` binding is visited).
EV_REQUEST = 0
#: Event kind: one reader of the token has run (TVM: ``ref_counter -= 1`` after a call).
EV_DECREF = 1

#: the kernels' "no symbolic sizes" tok_sym (read-only, shared)
_NO_SYM = np.empty(0, dtype=np.int64)
_NO_SYM.setflags(write=False)

_new = object.__new__

#: kernel error code -> its name in ``SEQUENCE_ERRORS`` (memcore._validate)
_ERROR_NAMES = {code: name for name, code in _tokens.ERROR_CODES.items()}


@dataclass(frozen=True, eq=False)
class TokenPlan:
    """Result of :func:`plan_tokens`: which storage each token uses, and the storages.

    The arrays are read-only.
    """

    storage_of: np.ndarray
    """int64[n_tok]: storage id of each token, -1 for a token never requested."""
    storage_bytes: np.ndarray
    """int64[n_storage]: bytes of each storage, the maximum ever requested on it."""
    storage_pool: np.ndarray
    """int64[n_storage]: pool class of each storage (the ``tok_pool`` of its tokens)."""

    def __post_init__(self):
        self.storage_of.setflags(write=False)
        self.storage_bytes.setflags(write=False)
        self.storage_pool.setflags(write=False)

    @classmethod
    def _of_readonly(cls, storage_of, storage_bytes, storage_pool):
        """The plan of three arrays that are already read-only (the kernel's): the fields are
        set as the dataclass ``__init__`` sets them, without it and its ``__post_init__``
        (on a small program those are most of the wrapper's cost)."""
        plan = _new(cls)
        plan.__dict__.update(storage_of=storage_of, storage_bytes=storage_bytes, storage_pool=storage_pool)
        return plan

    @property
    def n_storage(self):
        """Number of storages (``len(storage_bytes)``)."""
        return int(self.storage_bytes.shape[0])

    @property
    def total_bytes(self):
        """Sum of ``storage_bytes`` as an exact Python int (the bytes the plan allocates)."""
        return exact_sum(self.storage_bytes)

    def __repr__(self):
        return (
            f"TokenPlan(n_tok={self.storage_of.shape[0]}, n_storage={self.n_storage}, "
            f"total_bytes={self.total_bytes})"
        )


def _dense_pools(tok_pool):
    """Return (dense ids in [0, n_pools), n_pools, dense id -> pool id or None).

    Small pool ids are used as they are (no copy, the mapping is the identity: None);
    large ones are renumbered with ``np.unique``.
    """
    if tok_pool.shape[0] == 0:
        return tok_pool, 0, None
    top = int(tok_pool.max())
    if top <= 2 * tok_pool.shape[0] + 1024:
        return tok_pool, top + 1, None
    pool_ids, dense = np.unique(tok_pool, return_inverse=True)
    return np.ascontiguousarray(dense, dtype=np.int64), int(pool_ids.shape[0]), pool_ids


def plan_tokens(
    tok_bytes,
    tok_pool,
    tok_refs,
    ev_kind,
    ev_tok,
    *,
    tok_sym=None,
    match_range=16,
    release_zero_ref=False,
    check=True,
    n_pools=None,
):
    """Assign a storage to every token of an event program, reusing freed storages.

    Parameters
    ----------
    tok_bytes : ndarray of shape (n_tok,), dtype=int64
        Bytes of each token, ``>= 0``. For a symbolic token (``tok_sym >= 0``) the value is
        only carried into ``storage_bytes`` (an upper bound, or 0); reuse ignores it.
    tok_pool : ndarray of shape (n_tok,), dtype=int64
        Pool class of each token, ``>= 0``. Storages never move between pools.
    tok_refs : ndarray of shape (n_tok,), dtype=int64
        Number of readers of each token (its EV_DECREF events), ``>= 0``.
    ev_kind : ndarray of shape (n_events,), dtype=int8
        ``EV_REQUEST`` (0) or ``EV_DECREF`` (1) for each event, in program order.
    ev_tok : ndarray of shape (n_events,), dtype=int64
        Token of each event, in ``[0, n_tok)``.
    tok_sym : ndarray of shape (n_tok,), dtype=int64, optional
        Symbolic size class of each token, -1 for a constant size (the default for all).
        Two tokens of one class have provably equal sizes (the caller canonicalises).
    match_range : int, default=16
        Size window factor: a constant request of s bytes may take a free storage of
        ``s // match_range`` to ``s * match_range`` bytes. 0 disables reuse altogether.
    release_zero_ref : bool, default=False
        False: Relax rules, a token with no readers gets fresh storage that is never
        released. True: Relay rules, it takes part in reuse and its storage is released
        right after the request.
    check : bool, default=True
        Validate the arrays (dtypes, lengths, value ranges). ``False`` is for internal
        callers that build the arrays themselves (memcore_py's planning layer): they must
        be C-contiguous int64 (``ev_kind`` int8) of consistent lengths (else ValueError)
        with values in range and ``match_range`` an int ``>= 0``; the event *sequence* is
        still checked. The checks are most of the cost of a call on small programs.
    n_pools : int, optional
        With ``check=False`` only (ignored otherwise): the pool ids are already dense,
        ``0 <= tok_pool < n_pools``, as the caller guarantees for the other unchecked ranges;
        saves finding the largest id.

    Returns
    -------
    TokenPlan
        ``storage_of`` (int64[n_tok], -1 for tokens never requested), ``storage_bytes`` and
        ``storage_pool`` (int64[n_storage]), storages numbered in creation order.

    Raises
    ------
    InvalidArrayError
        Wrong dtype/shape/length; negative bytes, pools or refs; a ``tok_sym`` below -1; an
        ``ev_kind`` other than 0/1; an ``ev_tok`` out of range; ``match_range < 0``; or a bad
        sequence (a token requested twice, an EV_DECREF before the EV_REQUEST or past the
        count), with the event index.

    Notes
    -----
    Events run in program order (TVM ``StorageAllocator``, spec §1.4).

    *EV_REQUEST p* (TVM ``RequestReuse``): if ``tok_refs[p] == 0`` and not
    ``release_zero_ref``, p gets a fresh storage. Else, in p's pool: a symbolic p takes the
    earliest released free storage of the same class, unchanged. A constant p of s bytes
    looks at free constant storages with ``s // match_range <= bytes <= s * match_range``
    (saturating at 2**63-1): the smallest with ``bytes >= s`` (earliest released among equal
    sizes), else the largest with ``bytes < s`` (latest released among equal sizes), which is
    enlarged to s. Otherwise a fresh storage. The storage's count becomes ``tok_refs[p]``.

    *EV_DECREF p*: p's storage loses a reference; at 0 it is released into its pool, after
    the free storages of equal size. A token whose count never reaches 0 keeps its storage.

    Free lists are ``std::multimap`` per pool and a FIFO per symbolic class:
    O(n_events log F) time for F free storages, O(n_tok) memory.

    Examples
    --------
    Two tokens live one after the other share a storage, which grows to the larger size:

    >>> from memcore import EV_DECREF, EV_REQUEST, plan_tokens
    >>> plan = plan_tokens(
    ...     tok_bytes=[32, 48], tok_pool=[0, 0], tok_refs=[1, 1],
    ...     ev_kind=[EV_REQUEST, EV_DECREF, EV_REQUEST, EV_DECREF], ev_tok=[0, 0, 1, 1])
    >>> plan.storage_of.tolist(), plan.storage_bytes.tolist()
    ([0, 0], [48])
    """
    if check:
        tok_bytes, tok_pool, tok_refs, ev_kind, ev_tok, tok_sym = as_token_program(
            tok_bytes, tok_pool, tok_refs, ev_kind, ev_tok, tok_sym
        )
        match_range = as_int_scalar("match_range", match_range, low=0)
    elif tok_sym is None:
        tok_sym = _NO_SYM
    if check or n_pools is None:
        dense, n_pools, pool_ids = _dense_pools(tok_pool)
    else:  # the ids are the caller's guarantee; the count itself is checked (it sizes the kernel's tables)
        if type(n_pools) is not int or not 1 <= n_pools <= INT64_MAX:  # the full check off the common case
            n_pools = as_int_scalar("n_pools", n_pools, low=1 if tok_pool.shape[0] else 0)
        dense, pool_ids = tok_pool, None
    code, bad_event, storage_of, storage_bytes, storage_dense = _tokens._py_plan_tokens(
        tok_bytes,
        dense,
        n_pools,
        tok_refs,
        tok_sym,
        ev_kind,
        ev_tok,
        match_range,
        bool(release_zero_ref),
    )
    if code:
        raise_sequence_error(_ERROR_NAMES[code], bad_event, ev_tok, tok_refs)
    if pool_ids is None:  # the kernel's arrays are read-only already
        return TokenPlan._of_readonly(storage_of, storage_bytes, storage_dense)
    return TokenPlan(storage_of, storage_bytes, pool_ids[storage_dense])
