"""TVM's FuseOps grouping on an indexed forward graph: post-dominator tree and fusion phases.

The algorithm of src/relax/analysis/graph_partitioner.cc (TVM 0.27), restated:

- The graph's nodes are numbered in post-DFS (topological) order; node ``i`` has an op pattern,
  an ``extern_ref`` flag (its value leaves the dataflow block or the function) and its out
  edges ``(consumer, edge pattern)``, the edge pattern being the consumer's op pattern.
- Post-dominator tree, built in reverse order: an external node is a root (depth 1, pattern
  ``kOpaque``); otherwise the parent is the least common ancestor, in the tree, of the node's
  consumers, and the node's *dominator pattern* the maximum of the edge patterns and of the
  patterns of the tree nodes walked to reach that ancestor (a node without consumers is a
  root with pattern ``kElemWise``).
- Groups form a union-find; a group has the pattern of its root node, an anchor when it holds
  a ``kOutEWiseFusable`` node, and a node count.
- Three phases visit the nodes in order. A node is skipped when its group is ``kOpaque``, it
  has no post-dominator, or the fused group would exceed ``max_depth`` nodes (the dominator's
  group plus, for each node on the paths to it, the count its own record holds). Phase 0: a ``kOutEWiseFusable``
  node fuses into its post-dominator when its dominator pattern is ``kElemWise`` and every
  group on the paths to it is at most ``kBroadcast``; a node of pattern at most ``kBroadcast``
  (phases 0 and 1) fuses when its dominator pattern is at most ``kInjective`` or
  ``kCommReduce`` and every group on the paths is at most ``kInjective``, the post-dominator's
  group being elementwise, broadcast, injective, a reduction or ``kOutEWiseFusable``;
  ``kInjective``/``kTuple`` nodes (phase 1 only) when every group on the paths, the
  post-dominator's included, is at most ``kInjective``; ``kCommReduce`` never as source.
  Phase 2 fuses injective nodes into an intermediate tuple that already fused into injective
  consumers. Nothing fuses into a ``kTuple`` group, nor into its own group.
- Fusing (``CommitFuse``) merges every node on the paths from the source up to (excluding) the
  post-dominator into the post-dominator's group; a merged group takes the child's pattern
  only when the child holds the anchor.

TVM's FuseOps passes ``max_function_args=0``, so the argument-count limit (and the postponed
fusing it needs) never applies; it is not reproduced.
"""
from __future__ import annotations

__all__ = ["ForwardGraph", "partition", "K_ELEM_WISE", "K_BROADCAST", "K_INJECTIVE", "K_COMM_REDUCE",
           "K_OUT_EWISE_FUSABLE", "K_TUPLE", "K_OPAQUE", "MAX_FUSE_DEPTH"]

from ._op_patterns import (K_BROADCAST, K_COMM_REDUCE, K_ELEM_WISE, K_INJECTIVE, K_OPAQUE, K_OUT_EWISE_FUSABLE,
                           K_TUPLE)

#: TVM's default ``relax.FuseOps.max_depth`` (``kMaxFusedOps``).
MAX_FUSE_DEPTH = 256


class ForwardGraph:
    """Indexed forward dataflow graph: parallel lists indexed by node number (topological order).

    Attributes
    ----------
    pattern : list of int
    extern_ref : list of bool
    outputs : list of list of (int, int)
        Out edges ``(consumer node, edge pattern)`` in insertion order.
    """

    __slots__ = ("pattern", "extern_ref", "outputs")

    def __init__(self):
        self.pattern, self.extern_ref, self.outputs = [], [], []

    def add_node(self, pattern: int, extern_ref: bool) -> int:
        self.pattern.append(pattern)
        self.extern_ref.append(extern_ref)
        self.outputs.append([])
        return len(self.pattern) - 1

    def add_edge(self, src: int, dst: int, pattern: int) -> None:
        self.outputs[src].append((dst, pattern))

    def __len__(self):
        return len(self.pattern)


def _post_dominators(g: ForwardGraph):
    """Per node: (tree parent or -1, depth, dominator pattern)."""
    n = len(g)
    parent, depth, dom_pat = [-1] * n, [1] * n, [K_OPAQUE] * n
    for i in range(n - 1, -1, -1):
        if g.extern_ref[i]:
            continue
        pat = K_ELEM_WISE
        anc = None
        first = True
        for dst, epat in g.outputs[i]:
            if first:
                anc = dst
                first = False
            elif anc is not None:
                anc, pat = _lca(anc, dst, parent, depth, dom_pat, pat)
            pat = max(pat, epat)
        if anc is not None:
            parent[i], depth[i] = anc, depth[anc] + 1
        dom_pat[i] = pat
    return parent, depth, dom_pat


def _lca(a, b, parent, depth, dom_pat, pat):
    while a != b:
        if a < 0 or b < 0:
            return None, pat
        if depth[a] < depth[b]:
            pat = max(pat, dom_pat[b])
            b = parent[b]
        elif depth[b] < depth[a]:
            pat = max(pat, dom_pat[a])
            a = parent[a]
        else:
            pat = max(pat, dom_pat[a], dom_pat[b])
            a, b = parent[a], parent[b]
    return a, pat


class _Groups:
    """Union-find over nodes with TVM's group fields."""

    def __init__(self, g: ForwardGraph):
        n = len(g)
        self.parent = list(range(n))
        self.pattern = list(g.pattern)
        self.anchor = [p == K_OUT_EWISE_FUSABLE for p in g.pattern]
        self.num_nodes = [1] * n

    def root(self, i: int) -> int:
        r = i
        while self.parent[r] != r:
            r = self.parent[r]
        while self.parent[i] != r:
            self.parent[i], i = r, self.parent[i]
        return r

    def merge(self, child: int, parent: int) -> None:
        c, p = self.root(child), self.root(parent)
        if c == p:
            return
        self.num_nodes[p] += self.num_nodes[c]
        self.parent[c] = p
        if self.anchor[c]:
            self.anchor[p] = True
            self.pattern[p] = max(self.pattern[p], self.pattern[c])


def _check_path(g, groups, src, sink, cond) -> bool:
    """Every node reachable from ``src`` before ``sink`` (and ``sink``) satisfies ``cond(pattern
    of its group, is_sink)``; ``src`` itself is not checked."""
    seen = set()
    stack = [dst for dst, _ in reversed(g.outputs[src])]
    while stack:
        v = stack.pop()
        if v in seen:
            continue
        seen.add(v)
        if not cond(groups.pattern[groups.root(v)], v == sink):
            return False
        if v != sink:
            stack.extend(dst for dst, _ in reversed(g.outputs[v]))
    return True


def _commit(g, groups, src, sink) -> None:
    target = sink
    seen = set()
    stack = [src]
    while stack:
        v = stack.pop()
        if v == sink or v in seen:
            continue
        seen.add(v)
        groups.merge(v, target)
        stack.extend(dst for dst, _ in g.outputs[v])


def _fused_size(g, groups, child, dom) -> int:
    seen = set()
    total = groups.num_nodes[groups.root(dom)]
    stack = [child]
    while stack:
        v = stack.pop()
        if v == dom or v in seen:
            continue
        seen.add(v)
        total += groups.num_nodes[v]  # the node's own record, as TVM counts
        stack.extend(dst for dst, _ in g.outputs[v])
    return total


def _sink_after_broadcast(kind, is_sink):
    if not is_sink:
        return kind <= K_INJECTIVE
    return kind <= K_INJECTIVE or kind in (K_COMM_REDUCE, K_OUT_EWISE_FUSABLE)


def partition(g: ForwardGraph, max_depth: int = MAX_FUSE_DEPTH) -> list:
    """The group (a representative node) of every node of ``g`` after TVM's three fusion
    phases (module docstring)."""
    parent, _, dom_pat = _post_dominators(g)
    groups = _Groups(g)
    for phase in range(3):
        for i in range(len(g)):
            gi = groups.root(i)
            if groups.pattern[i] == K_OPAQUE:  # the node's own group record, as TVM reads it
                continue
            dom = parent[i]
            if dom < 0:
                continue
            if _fused_size(g, groups, i, dom) > max_depth:
                continue
            pat = groups.pattern[i]
            if phase == 2:
                if pat > K_INJECTIVE:
                    continue
                droot = groups.root(dom)
                if groups.pattern[droot] == K_TUPLE:
                    continue
                if groups.pattern[dom] == K_TUPLE and groups.pattern[droot] <= K_INJECTIVE:
                    if _check_path(g, groups, i, dom, lambda k, s: k <= K_INJECTIVE):
                        _commit(g, groups, i, dom)
                continue
            if gi == groups.root(dom):
                continue
            if groups.pattern[dom] == K_TUPLE:
                continue
            if pat == K_OUT_EWISE_FUSABLE:
                if phase == 0 and dom_pat[i] == K_ELEM_WISE and \
                        _check_path(g, groups, i, dom, lambda k, s: k <= K_BROADCAST):
                    _commit(g, groups, i, dom)
            elif pat <= K_BROADCAST:
                if (dom_pat[i] <= K_INJECTIVE or dom_pat[i] == K_COMM_REDUCE) and \
                        _check_path(g, groups, i, dom, _sink_after_broadcast):
                    _commit(g, groups, i, dom)
            elif pat in (K_INJECTIVE, K_TUPLE):
                if phase == 1 and _check_path(g, groups, i, dom, lambda k, s: k <= K_INJECTIVE):
                    _commit(g, groups, i, dom)
    return [groups.root(i) for i in range(len(g))]
