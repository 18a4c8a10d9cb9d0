"""ExecuTorch ``TensorSpec`` objects -> one flat table (the planner's input).

Design
------
ExecuTorch hands a memory-planning algorithm a collection of ``TensorSpec`` objects whose
``lifetime`` is set (``[first, last]`` node index, inclusive) and whose size in bytes is
``spec.realign(alignment)``. A spec whose ``storage_base`` is set does not own storage: it
lives inside its base at ``storage_base_offset`` bytes (in-place ops, views that share an
allocation), and bases form chains. :func:`read_specs` reads every spec once into a
:class:`SpecTable`, struct-of-arrays, and resolves each chain to the spec that owns the
storage (its *root*) and the byte offset inside it, so the planner only sees owners and the
aliases are placed afterwards by arithmetic.

Rules (those of ExecuTorch's own algorithms, so either can be swapped for the other):

- ``mem_id`` ``None`` means arena 1; a pre-set ``mem_id`` is kept. An alias lives in its
  root's arena.
- A root's lifetime covers its aliases' (ExecuTorch extends it before planning; done here
  again, on the table only, so that specs built by hand are planned safely too).
- ``spec.realign(alignment)`` is called on every spec, as ExecuTorch's algorithms do; it
  sets ``spec.alignment`` and the size is the aligned ``allocated_memory``.

Nothing of ExecuTorch or torch is imported: specs are read by attribute.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import InvalidSpecError, UnsupportedSpecError, describe_spec

__all__ = ["SpecTable", "read_specs"]


@dataclass(frozen=True)
class SpecTable:
    """Every spec of one planning call, in the order given, as flat arrays.

    Attributes
    ----------
    specs : tuple of TensorSpec
        The specs; index ``i`` of every array below is ``specs[i]``.
    mem_id : ndarray of shape (n,), dtype=int64
        Arena of each spec (``>= 1``; an alias has its root's).
    start, end : ndarray of shape (n,), dtype=int64
        Inclusive lifetime; a root's covers all of its aliases'.
    size : ndarray of shape (n,), dtype=int64
        ``allocated_memory`` after ``realign(alignment)``, ``>= 0``.
    root : ndarray of shape (n,), dtype=int64
        Index of the spec owning the storage (``i`` itself for an owner).
    root_offset : ndarray of shape (n,), dtype=int64
        Byte offset of the spec inside its root (0 for an owner).
    """

    specs: tuple
    mem_id: np.ndarray
    start: np.ndarray
    end: np.ndarray
    size: np.ndarray
    root: np.ndarray
    root_offset: np.ndarray

    @property
    def is_owner(self) -> np.ndarray:
        """Boolean mask of the specs that own their storage."""
        return self.root == np.arange(len(self.specs))


def _int(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _lifetime(spec):
    lifetime = getattr(spec, "lifetime", None)
    try:
        first, last = lifetime
    except (TypeError, ValueError):
        raise InvalidSpecError(
            f"{describe_spec(spec)} has no lifetime; ExecuTorch sets spec.lifetime = [first, last] "
            "(update_all_tensors_lifetime) before memory planning"
        ) from None
    if not (_int(first) and _int(last)):
        raise InvalidSpecError(
            f"{describe_spec(spec)} has no lifetime (got {lifetime!r}); ExecuTorch sets "
            "spec.lifetime = [first, last] (update_all_tensors_lifetime) before memory planning"
        )
    if first > last:
        raise InvalidSpecError(f"{describe_spec(spec)} has a lifetime that starts after it ends")
    return int(first), int(last)


def _size(spec, alignment):
    try:
        size = spec.realign(alignment)
    except Exception as exc:  # a symbolic or malformed shape: name the spec, keep the cause
        raise InvalidSpecError(f"{describe_spec(spec)} has no size in bytes: {exc}") from exc
    if not _int(size) or size < 0:
        raise InvalidSpecError(f"{describe_spec(spec)} has a negative size ({size!r} bytes)")
    return int(size)


def _mem_id(spec):
    mem_id = getattr(spec, "mem_id", None)
    if mem_id is None:
        return 1
    if not _int(mem_id) or mem_id < 1:
        raise InvalidSpecError(
            f"{describe_spec(spec)} has mem_id {mem_id!r}; a planned tensor's mem_id is an int "
            ">= 1 (0 is the constant segment) or None (= 1)"
        )
    return int(mem_id)


def read_specs(specs, alignment: int) -> SpecTable:
    """Read ExecuTorch ``TensorSpec`` objects into a :class:`SpecTable`.

    Parameters
    ----------
    specs : iterable of TensorSpec
        The specs to plan (a list or a set, as ExecuTorch passes them). Each is listed once.
    alignment : int
        Byte alignment, ``>= 1``; every spec is realigned to it.

    Returns
    -------
    SpecTable

    Raises
    ------
    InvalidSpecError
        A spec without a lifetime or with ``first > last``, a negative size, a ``mem_id``
        other than ``None`` or an int ``>= 1``, a ``storage_base`` not among ``specs``, a
        ``storage_base`` chain that loops, a negative ``storage_base_offset``, an alias that
        does not fit inside its base, or an alias with a pre-set ``mem_id`` other than its
        base's. The message names the spec.
    UnsupportedSpecError
        An alias whose offset inside its root is not a multiple of ``alignment``.
    """
    specs = tuple({id(spec): spec for spec in specs}.values())  # once each, by identity
    n = len(specs)
    index = {id(spec): i for i, spec in enumerate(specs)}
    mem_id = np.empty(n, dtype=np.int64)
    start = np.empty(n, dtype=np.int64)
    end = np.empty(n, dtype=np.int64)
    size = np.empty(n, dtype=np.int64)
    base = np.full(n, -1, dtype=np.int64)
    base_offset = np.zeros(n, dtype=np.int64)
    # Step 1. Per spec: lifetime, size, arena, direct base.
    for i, spec in enumerate(specs):
        start[i], end[i] = _lifetime(spec)
        size[i] = _size(spec, alignment)
        mem_id[i] = _mem_id(spec)
        parent = getattr(spec, "storage_base", None)
        if parent is None:
            continue
        j = index.get(id(parent))
        if j is None:
            raise InvalidSpecError(
                f"{describe_spec(spec)} has a storage_base ({describe_spec(parent)}) that is not "
                "among the specs to plan"
            )
        offset = getattr(spec, "storage_base_offset", 0)
        if not _int(offset) or offset < 0:
            raise InvalidSpecError(f"{describe_spec(spec)} has storage_base_offset {offset!r}; it must be an int >= 0")
        base[i], base_offset[i] = j, offset
    # Step 2. Resolve chains to roots (each spec walks to its root once, memoised).
    root = np.full(n, -1, dtype=np.int64)
    root_offset = np.zeros(n, dtype=np.int64)
    for i in range(n):
        path, k, on_path = [], i, set()
        while root[k] < 0 and base[k] >= 0:
            if k in on_path:
                raise InvalidSpecError(f"{describe_spec(specs[i])} has a storage_base chain that loops")
            on_path.add(k)
            path.append(k)
            k = int(base[k])
        if root[k] < 0:  # an owner
            root[k], root_offset[k] = k, 0
        for p in reversed(path):
            parent = int(base[p])
            if base_offset[p] + size[p] > size[parent]:
                raise InvalidSpecError(
                    f"{describe_spec(specs[p])} ({int(size[p])} bytes at storage_base_offset "
                    f"{int(base_offset[p])}) does not fit inside its storage_base "
                    f"{describe_spec(specs[parent])} ({int(size[parent])} bytes)"
                )
            root[p] = root[parent]
            root_offset[p] = root_offset[parent] + base_offset[p]
    # Step 3. Aliases: arena of the root, aligned offset; the root's lifetime covers them.
    for i in np.flatnonzero(root != np.arange(n)).tolist():
        r = int(root[i])
        if getattr(specs[i], "mem_id", None) is not None and mem_id[i] != mem_id[r]:
            raise InvalidSpecError(
                f"{describe_spec(specs[i])} has mem_id {int(mem_id[i])} but its storage is in "
                f"mem_id {int(mem_id[r])} ({describe_spec(specs[r])})"
            )
        if root_offset[i] % alignment:
            raise UnsupportedSpecError(
                f"{describe_spec(specs[i])} lies {int(root_offset[i])} bytes into its storage, "
                f"not a multiple of the alignment {alignment}"
            )
        mem_id[i] = mem_id[r]
        start[r] = min(start[r], start[i])
        end[r] = max(end[r], end[i])
    return SpecTable(specs=specs, mem_id=mem_id, start=start, end=end, size=size, root=root,
                     root_offset=root_offset)
