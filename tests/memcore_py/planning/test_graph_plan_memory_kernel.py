"""The compiled walk of graph_plan_memory (memcore_py/planning/_graph_plan.pyx).

- Its plans equal the engine's (:func:`memcore.plan_tokens`, a differently built allocator:
  64 size buckets per pool) on the event program of the same graph, on graphs whose free
  lists grow past one block (``BLOCK_CAP`` = 64 entries), with several pools, multi-output
  nodes, ``__nop`` chains and every ``match_range`` kind; the engine's plan is checked by
  :func:`memcore.verify_tokens`.
- A :class:`GraphModel` built by hand (not by ``from_arrays``) with inconsistent arrays is
  refused with a GraphError naming the place, never read out of bounds.
- ``match_range`` is validated as before (InvalidArrayError).
"""
import dataclasses

import numpy as np
import pytest

import memcore
from memcore_py.planning.graph_model import KIND_INPUT, KIND_NOP, KIND_OP, GraphError, GraphModel, make_graph
from memcore_py.planning.graph_plan_memory import graph_plan_memory, relay_token_program


def wide_graph(seed, width, chain, n_devices=1):
    """x; ``width`` ops reading x (all live at once); a join reading all of them (so ``width``
    storages are freed together); then a chain of ``chain`` ops (some multi-output, some
    ``__nop``) taking storages from that free list. Sizes are log-uniform 16 B..1 MiB."""
    rng = np.random.default_rng(seed)
    kind, n_out, ins = [KIND_INPUT], [1], [[]]
    for _ in range(width):
        kind.append(KIND_OP)
        n_out.append(1)
        ins.append([(0, 0)])
    kind.append(KIND_OP)
    n_out.append(1)
    ins.append([(i, 0) for i in range(1, width + 1)])
    for _ in range(chain):
        prev = len(kind) - 1
        r = rng.random()
        if r < 0.1:
            kind.append(KIND_NOP)
            n_out.append(1)
            ins.append([(prev, 0)])
        else:
            kind.append(KIND_OP)
            n_out.append(int(rng.integers(2, 4)) if r < 0.2 else 1)
            back = max(prev - int(rng.integers(0, 3)), width + 1)
            ins.append([(prev, 0)] + [(back, int(rng.integers(0, n_out[back])))])
    in_ptr = np.cumsum([0] + [len(i) for i in ins])
    in_node = [a for i in ins for a, _ in i]
    in_index = [b for i in ins for _, b in i]
    n_entries = int(sum(n_out))
    nbytes = (2 ** rng.uniform(4, 20, n_entries)).astype(np.int64)
    devices = rng.integers(1, n_devices + 1, n_entries)
    row_ptr = np.concatenate([[0], np.cumsum(n_out)])
    for n, k in enumerate(kind):  # a __nop's output is its input's storage: same device
        if k == KIND_NOP:
            a, b = ins[n][0]
            devices[row_ptr[n]] = devices[row_ptr[a] + b]
    return GraphModel.from_arrays(kind, n_out, in_ptr, in_node, in_index, [len(kind) - 1], [0], nbytes,
                                  entry_device=devices, name=f"wide-{seed}")


@pytest.mark.parametrize("match_range", [16, 2, 1, 0])
@pytest.mark.parametrize("seed,width,n_devices", [(0, 200, 1), (1, 300, 2), (2, 70, 3), (3, 1000, 1)])
def test_walk_equals_engine_on_wide_graphs(seed, width, n_devices, match_range):
    g = wide_graph(seed, width, chain=3 * width, n_devices=n_devices)
    plan = graph_plan_memory(g, match_range=match_range)
    prog = relay_token_program(g)
    tp = memcore.plan_tokens(prog.tok_bytes, prog.tok_pool, prog.tok_refs, prog.ev_kind, prog.ev_tok,
                             match_range=match_range, release_zero_ref=True)
    memcore.verify_tokens(prog.tok_bytes, prog.tok_pool, prog.tok_refs, prog.ev_kind, prog.ev_tok, tp)
    assert np.array_equal(plan.storage_id, tp.storage_of[prog.entry_tok])
    assert np.array_equal(plan.relay_storage_bytes, tp.storage_bytes)
    assert plan.relay_bytes == tp.total_bytes
    if match_range >= 2:  # (random sizes almost never match exactly: match_range 1 reuses little)
        assert tp.n_storage < g.n_entries - width  # the chain did reuse the freed storages
    # per entry: device and first size are the creating entry's, final size the storage's
    sid = plan.storage_id
    creator = np.array([np.flatnonzero(sid == s)[0] for s in range(tp.n_storage)])
    assert np.array_equal(plan.first_bytes, g.entry_bytes[creator[sid]])
    assert np.array_equal(plan.entry_device, g.entry_device[creator[sid]])
    assert np.array_equal(plan.storage_bytes, tp.storage_bytes[sid])
    assert np.array_equal(plan.relay_storage_device, g.entry_device[creator])
    assert plan.relay_storage_scope == ["global"] * tp.n_storage


def test_pinned_storages_are_never_reused():
    """Inputs (and a __nop of one) keep their storage to the end; no operator takes it."""
    g = make_graph([
        {"kind": "input", "name": "x", "outputs": [((64,), "float32")]},
        {"kind": "nop", "name": "r", "inputs": [(0, 0)], "outputs": [((8, 8), "float32")]},
        {"kind": "op", "name": "a", "inputs": [(1, 0)], "outputs": [((64,), "float32")]},
        {"kind": "op", "name": "b", "inputs": [(2, 0)], "outputs": [((64,), "float32")]},
        {"kind": "op", "name": "c", "inputs": [(3, 0)], "outputs": [((64,), "float32")]},
    ], heads=[(4, 0)])
    # x 0 (r aliases it); a 1; b 2; c takes a's storage: x's is never free
    assert graph_plan_memory(g).storage_id.tolist() == [0, 0, 1, 2, 1]
    assert graph_plan_memory(g).pinned_bytes == 256


def _good():
    return make_graph([
        {"kind": "input", "name": "x", "outputs": [((4,), "float32")]},
        {"kind": "op", "name": "a", "inputs": [(0, 0)], "outputs": [((4,), "float32")]},
        {"kind": "op", "name": "b", "inputs": [(1, 0)], "outputs": [((4,), "float32")]},
    ], heads=[(2, 0)])


def _ro(values, dtype=np.int64):
    a = np.array(values, dtype=dtype)
    a.setflags(write=False)
    return a


@pytest.mark.parametrize("change,message", [
    ({"input_entry": _ro([0, 2])}, r"node 2 'b': input 0 reads entry 2, which is not an output of an earlier node"),
    ({"input_entry": _ro([0, -1])}, r"node 2 'b': input 0 reads entry -1"),
    ({"head_entry": _ro([3])}, r"head 0 names entry 3, out of range \[0, 3\)"),
    ({"node_kind": _ro([0, 7, 1], np.int8)}, r"node 1 'a': unknown node kind 7"),
    ({"node_kind": _ro([0, 0, 1], np.int8)}, r"node 1 'a': an input node \(op 'null'\) has inputs"),
    ({"node_kind": _ro([0, 2, 1], np.int8), "node_row_ptr": _ro([0, 1, 1, 2]), "entry_bytes": _ro([16, 16]),
      "entry_device": _ro([-1, -1]), "entry_scope": _ro([0, 0]), "head_entry": _ro([1])},
     r"node 1 'a': a reshape-only '__nop' must have one input and one output"),
    ({"entry_scope": _ro([0, 1, 0])}, r"entry 1: storage scope index 1 is not one of 1 scopes"),
    ({"entry_bytes": _ro([16, -16, 16])}, r"entry 1: negative size -16"),
    ({"node_row_ptr": _ro([0, 2, 1, 3])}, r"node_row_ptr is not a CSR pointer"),
    ({"node_row_ptr": _ro([0, 1, 2, 4])}, r"node_row_ptr is not a CSR pointer"),
    ({"input_ptr": _ro([0, 0, 2, 1])}, r"input_ptr is not a CSR pointer"),
    ({"input_ptr": _ro([0, 0, 1, 3])}, r"input_ptr is not a CSR pointer"),
    ({"entry_bytes": _ro([16, 16, 16], np.int32)}, r"entry_bytes must be a C-contiguous 1-D int64 array of length 3"),
    ({"entry_device": _ro([-1, -1])}, r"entry_device must be a C-contiguous 1-D int64 array of length 3"),
    ({"input_entry": np.array([0, 0, 1, 1])[::2]}, r"input_entry must be a C-contiguous"),
    ({"head_entry": [2]}, r"head_entry is not a numpy array"),
])
def test_hand_built_model_is_checked(change, message):
    g = dataclasses.replace(_good(), **change)
    with pytest.raises(GraphError, match=message):
        graph_plan_memory(g)
    with pytest.raises(GraphError, match=message):
        relay_token_program(g)


def test_sizes_past_int64_are_refused():
    """No byte total (Relay bytes, pinned bytes, the bound) can wrap: the sizes' sum is checked."""
    g = GraphModel.from_arrays([KIND_INPUT, KIND_OP, KIND_OP], [1, 1, 1], [0, 0, 1, 2], [0, 1], [0, 0],
                               [2], [0], [2**62, 2**62, 1])
    with pytest.raises(GraphError, match=r"entry 1: the entry sizes add up past 2\*\*63 - 1 bytes"):
        graph_plan_memory(g)
    fits = GraphModel.from_arrays([KIND_INPUT, KIND_OP, KIND_OP], [1, 1, 1], [0, 0, 1, 2], [0, 1], [0, 0],
                                  [2], [0], [2**62, 2**62 - 2, 1])
    assert graph_plan_memory(fits).relay_bytes == 2**63 - 1


def test_hand_built_model_that_is_consistent_plans():
    g = _good()
    same = dataclasses.replace(g, entry_bytes=_ro([16, 16, 16]))
    assert graph_plan_memory(same).storage_id.tolist() == [0, 1, 2]


@pytest.mark.parametrize("bad", [-1, 1.5, True, "16", 2**63])
def test_match_range_is_validated(bad):
    with pytest.raises(memcore.InvalidArrayError, match="match_range"):
        graph_plan_memory(_good(), match_range=bad)


def test_match_range_numpy_integer():
    assert graph_plan_memory(_good(), match_range=np.int64(0)).storage_id.tolist() == [0, 1, 2]


def _texture_graph():
    """test_plan_2d_memory's graph: four flat buffers, three textures, one flat buffer."""
    nchw, nchw4c = (1, 32, 40, 40), (1, 8, 40, 40, 4)
    f32 = "float32"
    nodes = [{"kind": "input", "name": "data1", "outputs": [(nchw, f32)]},
             {"kind": "input", "name": "data2", "outputs": [(nchw, f32)]},
             {"kind": "op", "name": "lt1", "inputs": [(0, 0)], "outputs": [(nchw4c, f32)]},
             {"kind": "op", "name": "lt2", "inputs": [(1, 0)], "outputs": [(nchw4c, f32)]},
             {"kind": "op", "name": "add6", "inputs": [(2, 0), (3, 0)], "outputs": [(nchw4c, f32)]},
             {"kind": "op", "name": "add8", "inputs": [(4, 0), (3, 0)], "outputs": [(nchw4c, f32)]},
             {"kind": "op", "name": "add10", "inputs": [(4, 0), (5, 0)], "outputs": [(nchw4c, f32)]},
             {"kind": "op", "name": "lt11", "inputs": [(6, 0)], "outputs": [(nchw, f32)]}]
    scopes = ["global"] * 4 + ["global.texture"] * 3 + ["global"]
    return make_graph(nodes, heads=[(7, 0)], scopes=scopes, devices=[3] * 8), scopes


def test_storage_plans_are_built_on_read():
    """plan.storages[i]: the entries of Relay storage i in order, its final bytes, the dtype,
    scope and device of its creating entry (derived here from the per-entry arrays)."""
    g, scopes = _texture_graph()
    plan = graph_plan_memory(g)
    sid = plan.storage_id.tolist()
    assert len(plan.storages) == plan.n_relay_storages == len(set(sid))
    for i, sp in enumerate(plan.storages):
        members = [e for e in range(g.n_entries) if sid[e] == i]
        assert sp.tokens == members
        assert sp.const_bytes == plan.relay_storage_bytes[i] == max(plan.storage_bytes[members])
        assert (sp.scope, sp.device, sp.dtype) == (scopes[members[0]], 3, "float32")
    assert [sp.tokens for sp in plan.storages[-2:]] == [sp.tokens for sp in plan.storages[5:7]]
    with pytest.raises(IndexError, match="storage 7 out of range"):
        plan.storages[7]
    assert plan.relay_storage_device.tolist() == [3] * 7
    # bytes of a flat storage are its largest tensor's; of a texture, width x height x channel x 4
    assert plan.relay_storage_bytes[:4].tolist() == [32 * 40 * 40 * 4] * 4
    assert plan.relay_storage_bytes[4:].tolist() == [40 * 8 * 40 * 4 * 4] * 3
    assert plan.texture_bytes == 3 * 40 * 8 * 40 * 4 * 4
    assert plan.relay_bytes == 4 * 32 * 40 * 40 * 4


def test_arena_mode_with_textures():
    """Arena mode packs the flat tensors; textures keep Relay's 2-D storages and no arena."""
    g, scopes = _texture_graph()
    relay = graph_plan_memory(g)
    arena = graph_plan_memory(g, mode="arena", alignment=1)
    assert arena.storage_id.tolist() == relay.storage_id.tolist()
    tex = [s == "global.texture" for s in scopes]
    assert [a == -1 for a in arena.arena_of.tolist()] == tex
    assert len(arena.arena_bytes) == 1
    # data1, data2 pinned; lt1 and lt2 live until add6/add8; lt11 after them: 4 buffers at once
    assert arena.lower_bound == relay.lower_bound == 4 * 32 * 40 * 40 * 4
    assert arena.arena_bytes[0] == arena.lower_bound
