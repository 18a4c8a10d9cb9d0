"""Properties of graph_plan_memory on random graphs (hypothesis).

- Relay mode equals :func:`relay_reference`, a pure-Python planner written straight from
  tvm_passes.md §1.8 (one free multimap keyed by bytes shared by every device, scanned for a
  compatible token, Relay's per-token reference counts and ``ReuseInputToken``) -- a
  different structure from memcore's per-pool engine.
- The event program passes ``memcore.verify_tokens``; arena mode passes
  ``memcore.verify_offsets`` with lifetimes computed here from the node list, and is never
  below the max-live bound, which equals the one computed here from those lifetimes.
"""
from bisect import bisect_left, insort
from itertools import count

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import memcore
from memcore_py.planning import graph_plan_memory
from memcore_py.planning.graph_model import make_graph
from memcore_py.planning.graph_plan_memory import relay_token_program

DTYPE_BYTES = {"float32": 4, "int8": 1, "float16": 2, "bool": 1, "float32x4": 16}


class _Token:
    def __init__(self, ref, max_bytes, sid, device, scope, first):
        self.ref, self.max_bytes, self.sid = ref, max_bytes, sid
        self.device, self.scope, self.first = device, scope, first


def relay_reference(nodes, heads, devices, scopes=None, match_range=16):
    """Per entry ``(storage_id, device, first_bytes)`` and the storages' final bytes, by §1.8."""
    entries, size, dev = [], [], []
    for i, nd in enumerate(nodes):
        for k, (shape, dtype) in enumerate(nd["outputs"]):
            entries.append((i, k))
            size.append(int(np.prod(shape, dtype=np.int64)) * DTYPE_BYTES[dtype])
            dev.append(devices[len(dev)])
    scope = scopes or ["global"] * len(entries)
    eid = {e: j for j, e in enumerate(entries)}
    proto_ref = [0] * len(entries)
    for nd in nodes:
        for i, k in nd.get("inputs", ()):
            proto_ref[eid[(i, k)]] += 1
    for i, k in heads:
        proto_ref[eid[(i, k)]] += 1
    free = []  # (max_bytes, seq, token): a multimap keyed by bytes, equal keys in insertion order
    seq = count()
    sids = count()
    storages = []
    tok_of = {}

    def alloc(e):
        t = _Token(proto_ref[e], size[e], next(sids), dev[e], scope[e], size[e])
        storages.append(t)
        return t

    def request(e):
        if match_range == 0:
            return None
        s = size[e]
        mid = bisect_left(free, (s,))
        for j in range(mid, len(free)):  # upward: [s, s * match_range]
            if free[j][0] > s * match_range:
                break
            t = free[j][2]
            if t.device == dev[e] and t.scope == scope[e]:
                del free[j]
                t.max_bytes, t.ref = max(s, t.max_bytes), proto_ref[e]
                return t
        for j in range(mid - 1, -1, -1):  # downward: [s // match_range, s)
            if free[j][0] < s // match_range:
                break
            t = free[j][2]
            if t.device == dev[e] and t.scope == scope[e]:
                del free[j]
                t.max_bytes, t.ref = max(s, t.max_bytes), proto_ref[e]
                return t
        return None

    def check_for_release(t):
        if t.ref == 0:
            insort(free, (t.max_bytes, next(seq), t))

    for i, nd in enumerate(nodes):
        outs = [eid[(i, k)] for k in range(len(nd["outputs"]))]
        ins = [eid[(a, b)] for a, b in nd.get("inputs", ())]
        if nd["kind"] == "input":
            for e in outs:
                t = alloc(e)
                t.ref += 1
                tok_of[e] = t
        elif nd["kind"] == "nop":
            t = tok_of[ins[0]]
            t.ref += proto_ref[outs[0]]
            tok_of[outs[0]] = t
            check_for_release(t)
            t.ref -= 1
            check_for_release(t)
        else:
            for e in outs:
                tok_of[e] = request(e) or alloc(e)
            for e in outs:
                check_for_release(tok_of[e])
            for e in ins:
                t = tok_of[e]
                t.ref -= 1
                check_for_release(t)
    per_entry = [(tok_of[e].sid, tok_of[e].device, tok_of[e].first) for e in range(len(entries))]
    return per_entry, [t.max_bytes for t in storages]


def lifetimes(nodes, heads):
    """(start, end) per entry, by the nop-aliased token, independent of the planner."""
    entries, root = [], []
    for i, nd in enumerate(nodes):
        for k in range(len(nd["outputs"])):
            entries.append((i, k))
    eid = {e: j for j, e in enumerate(entries)}
    for i, nd in enumerate(nodes):
        for k in range(len(nd["outputs"])):
            root.append(root[eid[tuple(nd["inputs"][0])]] if nd["kind"] == "nop" else eid[(i, k)])
    n = len(nodes)
    start = [entries[root[j]][0] for j in range(len(entries))]
    end = list(start)
    for i, nd in enumerate(nodes):
        for a, b in nd.get("inputs", ()):
            r = root[eid[(a, b)]]
            end[r] = max(end[r], i)
    for a, b in heads:
        end[root[eid[(a, b)]]] = n
    for j, (i, _) in enumerate(entries):
        if nodes[i]["kind"] == "input":
            start[j], end[j] = -1, n
    return root, [start[r] for r in root], [end[r] for r in root]


@st.composite
def graphs(draw):
    n_devices = draw(st.sampled_from([1, 1, 2]))
    dims = st.sampled_from([1, 2, 3, 4, 5, 8, 16, 17, 20, 64, 68, 80, 256])
    dtype = st.sampled_from(list(DTYPE_BYTES))
    nodes, devices, n_entries = [], [], 0
    n_nodes = draw(st.integers(1, 24))
    for i in range(n_nodes):
        kind = "input" if i == 0 else draw(st.sampled_from(["op"] * 6 + ["input", "nop"]))
        if kind == "input":
            outs = [((draw(dims),), draw(dtype))]
            ins = []
        else:
            avail = [(j, k) for j, nd in enumerate(nodes) for k in range(len(nd["outputs"]))]
            if kind == "nop":
                ins = [draw(st.sampled_from(avail))]
                outs = [((draw(dims),), "float32")]
            else:
                ins = draw(st.lists(st.sampled_from(avail), min_size=1, max_size=3))
                outs = [((draw(dims), draw(st.sampled_from([1, 2]))), draw(dtype))
                        for _ in range(draw(st.sampled_from([1, 1, 1, 2, 3])))]
        nodes.append({"kind": kind, "name": f"n{i}", "inputs": ins, "outputs": outs})
        devices.extend(draw(st.integers(1, n_devices)) for _ in outs)
        n_entries += len(outs)
    # a nop's output sits on its input's device (it is the same storage)
    entry_of = {}
    for i, nd in enumerate(nodes):
        for k in range(len(nd["outputs"])):
            entry_of[(i, k)] = len(entry_of)
    for i, nd in enumerate(nodes):
        if nd["kind"] == "nop":
            devices[entry_of[(i, 0)]] = devices[entry_of[tuple(nd["inputs"][0])]]
    avail = list(entry_of)
    heads = draw(st.lists(st.sampled_from(avail), min_size=1, max_size=3))
    match_range = draw(st.sampled_from([16, 16, 16, 2, 1, 0]))
    return nodes, heads, devices, match_range


SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(graphs())
def test_relay_mode_equals_reference(case):
    nodes, heads, devices, match_range = case
    g = make_graph(nodes, heads, devices=devices)
    plan = graph_plan_memory(g, match_range=match_range)
    want, want_bytes = relay_reference(nodes, heads, devices, match_range=match_range)
    assert plan.storage_id.tolist() == [w[0] for w in want]
    assert plan.entry_device.tolist() == [w[1] for w in want]
    assert plan.first_bytes.tolist() == [w[2] for w in want]
    assert plan.relay_storage_bytes.tolist() == want_bytes


@SETTINGS
@given(graphs())
def test_token_program_verifies(case):
    nodes, heads, devices, match_range = case
    g = make_graph(nodes, heads, devices=devices)
    prog = relay_token_program(g)
    tp = memcore.plan_tokens(prog.tok_bytes, prog.tok_pool, prog.tok_refs, prog.ev_kind, prog.ev_tok,
                             match_range=match_range, release_zero_ref=True)
    memcore.verify_tokens(prog.tok_bytes, prog.tok_pool, prog.tok_refs, prog.ev_kind, prog.ev_tok, tp)


@SETTINGS
@given(graphs(), st.sampled_from([1, 64]))
def test_arena_offsets_verify(case, alignment):
    nodes, heads, devices, _ = case
    g = make_graph(nodes, heads, devices=devices)
    plan = graph_plan_memory(g, mode="arena", alignment=alignment)
    root, start, end = lifetimes(nodes, heads)
    size = g.entry_bytes.tolist()
    total = 0
    for a, nbytes in enumerate(plan.arena_bytes):
        members = [e for e in range(g.n_entries) if plan.arena_of[e] == a and root[e] == e]
        assert len({devices[e] for e in members}) == 1  # one arena per device
        memcore.verify_offsets([start[e] for e in members], [end[e] for e in members],
                               [size[e] for e in members], [plan.tok_offset[e] for e in members], nbytes)
        total += nbytes
    # aliases sit where their root sits
    assert all(plan.tok_offset[e] == plan.tok_offset[root[e]] for e in range(g.n_entries))
    assert total >= plan.lower_bound
    # the bound: max over node steps of the live root bytes, per device, summed (both modes;
    # Relay mode computes it when first read)
    want = 0
    for d in set(devices):
        roots = [e for e in range(g.n_entries) if root[e] == e and devices[e] == d]
        want += max(sum(size[e] for e in roots if start[e] <= t <= end[e]) for t in range(-1, len(nodes) + 1))
    assert plan.lower_bound == want
    assert graph_plan_memory(g).lower_bound == want
    prog = relay_token_program(g)  # the walk's intervals (peak_report's), on the token entries
    roots = [e for e in range(g.n_entries) if root[e] == e]
    assert prog.tok_start[roots].tolist() == [start[e] for e in roots]
    assert prog.tok_end[roots].tolist() == [end[e] for e in roots]
