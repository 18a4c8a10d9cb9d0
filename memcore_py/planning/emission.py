"""Where each storage of a plan is emitted: the binding it must precede.

TVM emits a storage right before its first allocation, in that allocation's block, as a
DataflowVar in a dataflow block. That position is kept whenever it dominates every use of the
storage. Otherwise (a storage first used inside an ``If`` branch and reused in the other
branch or after the ``If``, or a DataflowVar storage reused after its dataflow block) TVM's
output is unsound, and the storage goes right before the binding of the innermost scope
containing all uses that contains the first use, as a plain Var unless all uses are in one
dataflow block (DIFFERENCES.md: ``dominating-storage``).

Inputs: a :class:`~memcore_py.planning.memory_plan.MemoryPlan` (which tokens share a storage)
and the analysis' :class:`~memcore_py.analysis.storage_tokens.AllocationSites` (block and
scope tree, per-block positions of the allocations).
"""
from __future__ import annotations

from functools import partial
from operator import itemgetter
from typing import NamedTuple

from ..analysis.storage_tokens import AllocationSites
from .memory_plan import MemoryPlan

__all__ = ["EmissionSite", "emission_site", "emission_sites"]


class EmissionSite(NamedTuple):
    """Emit a storage right before binding ``position`` of block ``block``."""

    block: int
    """Block id (:class:`AllocationSites` numbering)."""
    position: int
    """Position of the binding in that block."""
    dataflow_var: bool
    """Bind the storage to a DataflowVar (all its uses are in that dataflow block)."""
    is_tvm_site: bool
    """The position is TVM's own (False: moved to dominate every use)."""


#: ``EmissionSite`` from a 4-tuple without NamedTuple's Python-level ``__new__`` (one per storage)
_site = partial(tuple.__new__, EmissionSite)


def _scope_chain(sites: AllocationSites, sid: int) -> list:
    chain = []
    while sid >= 0:
        chain.append(sid)
        sid = sites.scope_parent[sid]
    chain.reverse()
    return chain


def emission_site(sites: AllocationSites, toks: list) -> EmissionSite:
    """The emission site of a storage used by tokens ``toks`` (token ids in program order)."""
    tok_block = sites.tok_block
    first = toks[0]
    b0 = tok_block[first]
    i0 = sites.tok_index[first]
    df0 = sites.block_is_dataflow[b0]
    if len(toks) == 1 or itemgetter(*toks)(tok_block).count(b0) == len(toks):  # all in block b0
        return _site((b0, i0, df0, True))
    chains = [_scope_chain(sites, sites.block_scope[tok_block[t]]) for t in toks]
    depth = min(len(c) for c in chains)
    lca = 0
    for i in range(depth):
        s = chains[0][i]
        if all(c[i] == s for c in chains):
            lca = i
        else:
            break
    lca_scope = chains[0][lca]
    s0 = sites.block_scope[b0]
    if s0 == lca_scope:
        # Same scope: TVM's position dominates unless a dataflow block is left.
        return _site((b0, i0, False, not df0))
    # Walk up from the first use to the child scope of the common scope.
    sid = s0
    while sites.scope_parent[sid] != lca_scope:
        sid = sites.scope_parent[sid]
    anchor_block, _anchor_binding, anchor_index = sites.scope_anchor[sid]
    return _site((anchor_block, anchor_index, False, False))


def emission_sites(sites: AllocationSites, plan: MemoryPlan) -> list:
    """:class:`EmissionSite` of every storage of ``plan``, by storage index."""
    tok_block = sites.tok_block
    tok_index = sites.tok_index
    is_dataflow = sites.block_is_dataflow
    new = tuple.__new__  # _site without the partial's call layer (one site per storage)
    storages = plan.storages
    if tok_block and tok_block.count(tok_block[0]) == len(tok_block):
        # every planned allocation in one block (the common case): each storage goes right
        # before its first allocation, as emission_site finds for tokens of one block
        b0 = tok_block[0]
        df0 = is_dataflow[b0]
        return [new(EmissionSite, (b0, tok_index[s.tokens[0]], df0, True)) for s in storages]
    # the storages whose tokens are not all in the block of their first one (tokens come in
    # program order, so a storage's first token is the first one seen)
    first_block: dict = {}
    spread = set()
    for b, k in zip(tok_block, plan.tok_storage.tolist()):
        if first_block.setdefault(k, b) != b:
            spread.add(k)
    out = []
    for k, s in enumerate(storages):
        if k in spread:
            out.append(emission_site(sites, s.tokens))
        else:  # emission_site's first case
            t = s.tokens[0]
            b0 = tok_block[t]
            out.append(new(EmissionSite, (b0, tok_index[t], is_dataflow[b0], True)))
    return out
