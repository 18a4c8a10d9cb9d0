"""The plan types every planner returns and every consumer (rewriters, reports) reads.

A :class:`MemoryPlan` says, for each planned tensor (a *token* of the planner's input), which
storage holds it and at which byte offset, and for each storage its size, dtype, scope and
device; plus the totals a report prints and the max-live lower bound they are judged by.
It knows nothing about where tensors and storages sit in the IR: a rewriter combines it with
the analysis' site tables (:class:`~memcore_py.analysis.storage_tokens.AllocationSites`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..ir.prim import IntImm, PrimExpr

__all__ = ["StoragePlan", "MemoryPlan"]


@dataclass(eq=False)
class StoragePlan:
    """One storage of a plan."""

    nbytes: PrimExpr
    """Size in bytes: an ``IntImm`` for a constant size, else the symbolic expression."""
    dtype: str
    """dtype of the storage (the tensors' dtype; ``uint8`` for an arena of mixed dtypes)."""
    scope: str
    """Storage scope (``"global"``)."""
    device: object
    """Device key: the runtime device index (or its text when symbolic)."""
    func: int
    """Index of the function the storage belongs to."""
    tokens: list
    """Token ids placed in it, in program order (the first one decides where it is emitted)."""

    @property
    def const_bytes(self) -> int | None:
        """The size when it is a constant, else None."""
        return self.nbytes.value if type(self.nbytes) is IntImm else None


@dataclass(eq=False)
class MemoryPlan:
    """Which storage and offset each planned tensor gets.

    Attributes
    ----------
    mode : str
        ``"tvm"`` (TVM's token reuse) or ``"arena"`` (offset packing).
    storages : list of StoragePlan
        In creation order.
    tok_storage : ndarray of shape (n_tok,), dtype=int64
        Index into ``storages`` of each token.
    tok_offset : ndarray of shape (n_tok,), dtype=int64
        Byte offset of each token in its storage (all 0 in TVM mode).
    tvm_bytes : int
        Bytes of the constant-size storages TVM mode uses for these tensors.
    planned_bytes : int
        Bytes of the constant-size storages of this plan.
    lower_bound : int
        Sum over (function, scope, device) pools of the max-live bytes of the constant-size
        tokens (:func:`~memcore_py.planning.lower_bound.pool_lower_bounds`): no placement
        of these tensors uses fewer bytes.
    function_names : list of str
        Name of each function (indexed by ``StoragePlan.func``).
    function_lower_bounds : dict or None
        Function name -> its share of ``lower_bound`` (None for a function with a
        symbolic-size tensor); None when the bound was not computed (TVM mode by default).
    """

    mode: str
    storages: list
    tok_storage: np.ndarray
    tok_offset: np.ndarray
    tvm_bytes: int = 0
    planned_bytes: int = 0
    lower_bound: int = 0
    function_names: list = field(default_factory=list)
    function_lower_bounds: dict | None = None

    @property
    def n_tok(self) -> int:
        return int(self.tok_storage.shape[0])

    @property
    def n_storage(self) -> int:
        return len(self.storages)

    def function_bytes(self) -> dict:
        """Function name -> bytes of its storages (None when one has a symbolic size)."""
        out: dict = {name: 0 for name in self.function_names}
        for s in self.storages:
            name = self.function_names[s.func]
            b = s.const_bytes
            out[name] = None if b is None or out[name] is None else out[name] + b
        return out
