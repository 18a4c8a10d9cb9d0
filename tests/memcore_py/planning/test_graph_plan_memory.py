"""graph_plan_memory: the historical Relay tests (spec relay_graph_plan_memory.md §4) as ours,
plus the rules of tvm_passes.md §1.8 one scenario at a time, arena mode and the JSON round trip.

Expected values come from the spec's tables and from working the rules by hand; none is
copied from the planner's output.
"""
import json

import numpy as np
import pytest

import memcore
from memcore_py.frontend import read_graph_json
from memcore_py.planning import GraphMemoryPlan, graph_plan_memory
from memcore_py.planning.graph_model import make_graph

F32 = "float32"


def inp(name, shape, dtype=F32):
    return {"kind": "input", "name": name, "outputs": [(shape, dtype)]}


def op(name, inputs, *outputs, kind="op"):
    return {"kind": kind, "name": name, "inputs": list(inputs), "outputs": list(outputs)}


# ---------------------------------------------------------------------------------------------
# spec §4: tests/python/relay/test_backend_graph_executor.py::test_plan_memory
# ---------------------------------------------------------------------------------------------


def test_plan_memory():
    """x (10,), y (1,); exp(y); add(x, .); five exp -> 4 storages, sizes 40/4/4/40."""
    nodes = [inp("x", (10,)), inp("y", (1,)), op("exp_y", [(1, 0)], ((1,), F32)),
             op("add", [(0, 0), (2, 0)], ((10,), F32))]
    for i in range(5):
        nodes.append(op(f"exp{i}", [(len(nodes) - 1, 0)], ((10,), F32)))
    plan = graph_plan_memory(make_graph(nodes, heads=[(len(nodes) - 1, 0)]))
    sids = plan.storage_id.tolist()
    assert len(set(sids)) == 4
    assert len(set(plan.entry_device.tolist())) == 1
    size_of_sid = {}
    for sid, size in zip(sids, plan.first_bytes.tolist()):
        assert size_of_sid.setdefault(sid, size) == size  # one size per storage id
    # The first-token quirk: storage 2 is created by exp(y) (4 B) and later grows to 40 B,
    # but Relay reports the size of its first tensor.
    assert size_of_sid == {0: 40, 1: 4, 2: 4, 3: 40}
    assert plan.relay_storage_bytes.tolist() == [40, 4, 40, 40]
    assert plan.storage_bytes[sids.index(2)] == 40


def test_reshape_nop():
    """abs+expand_dims, reshape (nop), abs, sqrt, reshape (nop); heads (z0, z1, z2)."""
    nodes = [
        inp("x", (10, 4)),
        op("fused_abs_expand_dims", [(0, 0)], ((10, 1, 4), F32)),
        op("reshape0", [(1, 0)], ((2, 20), F32), kind="nop"),
        op("abs", [(1, 0)], ((10, 1, 4), F32)),
        op("sqrt", [(3, 0)], ((10, 1, 4), F32)),
        op("reshape1", [(3, 0)], ((4, 10), F32), kind="nop"),
    ]
    plan = graph_plan_memory(make_graph(nodes, heads=[(2, 0), (4, 0), (5, 0)]))
    assert plan.storage_id.tolist() == [0, 1, 1, 2, 3, 2]


def test_conv_network_two_devices():
    """v0.6.0 test_conv_network: conv2d x3 on GPU (2), add on CPU (1), device copies between:
    10 storage entries, 8 distinct storages, device types {1, 2}."""
    act = ((1, 64, 56, 56), F32)
    nodes = [inp("data1", act[0]), inp("data2", act[0]), inp("weight", (64, 64, 3, 3)),
             op("conv1", [(0, 0), (2, 0)], act), op("conv2", [(1, 0), (2, 0)], act),
             op("copy1", [(3, 0)], act), op("copy2", [(4, 0)], act),
             op("add", [(5, 0), (6, 0)], act), op("copy3", [(7, 0)], act),
             op("conv3", [(8, 0), (2, 0)], act)]
    devices = [2, 2, 2, 2, 2, 1, 1, 1, 2, 2]
    plan = graph_plan_memory(make_graph(nodes, heads=[(9, 0)], devices=devices))
    sids = plan.storage_id.tolist()
    assert len(sids) == 10
    assert len(set(sids)) == 8
    assert set(plan.entry_device.tolist()) == {1, 2}
    # entries on different devices never share a storage
    for sid in set(sids):
        assert len({devices[e] for e in range(10) if sids[e] == sid}) == 1


def test_plan_2d_memory():
    """test_plan_2d_memory: layout_transform to NCHW4c (global), three adds in
    global.texture, layout_transform back (global): storages 0-3 global, 4-6 textures."""
    nchw, nchw4c = (1, 32, 40, 40), (1, 8, 40, 40, 4)
    nodes = [inp("data1", nchw), inp("data2", nchw),
             op("lt1", [(0, 0)], (nchw4c, F32)), op("lt2", [(1, 0)], (nchw4c, F32)),
             op("add6", [(2, 0), (3, 0)], (nchw4c, F32)),
             op("add8", [(4, 0), (3, 0)], (nchw4c, F32)),
             op("add10", [(4, 0), (5, 0)], (nchw4c, F32)),
             op("lt11", [(6, 0)], (nchw, F32))]
    scopes = ["global"] * 4 + ["global.texture"] * 3 + ["global"]
    plan = graph_plan_memory(make_graph(nodes, heads=[(7, 0)], scopes=scopes))
    scope_of = {}
    for sid, scope in zip(plan.storage_id.tolist(), scopes):
        scope_of.setdefault(sid, scope)
    assert scope_of == {0: "global", 1: "global", 2: "global", 3: "global",
                        4: "global.texture", 5: "global.texture", 6: "global.texture"}
    assert plan.relay_storage_scope == ["global"] * 4 + ["global.texture"] * 3
    assert plan.first_bytes[4:7].tolist() == [0, 0, 0]  # Relay reports 0 for a texture
    assert plan.texture_shapes[4] == (40, 8 * 40, 4)  # width W, height N*C*H, channel c
    assert plan.storage_id[7] == 2  # the last buffer reuses the first released one


# ---------------------------------------------------------------------------------------------
# §1.8 rules, one scenario each
# ---------------------------------------------------------------------------------------------


def _chain(sizes, *, head_all=False):
    """x -> op0 -> op1 -> ...; op i outputs sizes[i] float32 elements."""
    nodes = [inp("x", (1,))]
    for i, s in enumerate(sizes):
        nodes.append(op(f"op{i}", [(i, 0)], ((s,), F32)))
    return nodes


@pytest.mark.parametrize(
    "free_elems, want_elems, reused",
    [(16, 1, True),    # 64 B serves 4 B: 64 = 4 * 16, inclusive
     (17, 1, False),   # 68 B does not serve 4 B
     (1, 16, True),    # 4 B serves 64 B (64 // 16 = 4), enlarged
     (1, 17, True),    # 4 B serves 68 B (68 // 16 = 4)
     (1, 20, False)],  # 4 B does not serve 80 B
)
def test_match_range_window(free_elems, want_elems, reused):
    # op0 (free_elems) is read by op1 only, so it is free when op2 (want_elems) is requested.
    nodes = _chain([free_elems, 1000, want_elems])
    plan = graph_plan_memory(make_graph(nodes, heads=[(3, 0)]))
    assert bool(plan.storage_id[3] == plan.storage_id[1]) is reused


def test_match_range_zero_disables_reuse():
    nodes = _chain([8, 8, 8, 8])
    plan = graph_plan_memory(make_graph(nodes, heads=[(4, 0)]), match_range=0)
    assert len(set(plan.storage_id.tolist())) == 5


def test_inputs_and_outputs_never_reused():
    """Params are pinned: a later equal-sized tensor never takes their storage, even after
    their last use; heads are never released."""
    nodes = [inp("x", (8,)), op("a", [(0, 0)], ((8,), F32)), op("b", [(1, 0)], ((8,), F32)),
             op("c", [(2, 0)], ((8,), F32)), op("d", [(3, 0)], ((8,), F32))]
    plan = graph_plan_memory(make_graph(nodes, heads=[(2, 0), (4, 0)]))
    sids = plan.storage_id.tolist()
    assert sids[0] not in sids[1:]
    # a is released at b and c takes it; b is a head, never released; c is released only
    # after d's request, so d gets a fresh storage.
    assert sids == [0, 1, 2, 1, 3]


def test_zero_ref_output_released_at_once():
    """A call output nobody reads is released right after its request (unlike Relax)."""
    nodes = [inp("x", (8,)), op("dead", [(0, 0)], ((8,), F32)), op("a", [(0, 0)], ((8,), F32))]
    plan = graph_plan_memory(make_graph(nodes, heads=[(2, 0)]))
    assert plan.storage_id.tolist() == [0, 1, 1]


def test_multi_output_zero_ref_released_after_all_requests():
    """Relay requests every output of a call before releasing the 0-ref ones, so a call's
    outputs never share a storage with each other."""
    nodes = [inp("x", (8,)),
             op("split", [(0, 0)], ((8,), F32), ((8,), F32), ((8,), F32)),
             op("use1", [(1, 1)], ((8,), F32))]
    plan = graph_plan_memory(make_graph(nodes, heads=[(2, 0)]))
    sids = plan.storage_id.tolist()
    assert len(set(sids[1:4])) == 3
    # released in output order: outputs 0 and 2 (0 refs) at the split, then output 1 at use1;
    # use1 is requested first, and takes the earliest released equal-size storage: output 0's.
    assert sids[4] == sids[1]


def test_dtypes_share_one_free_list():
    nodes = [inp("x", (8,)), op("a", [(0, 0)], ((8,), F32)), op("b", [(1, 0)], ((8,), "int32")),
             op("c", [(2, 0)], ((32,), "int8"))]
    plan = graph_plan_memory(make_graph(nodes, heads=[(3, 0)]))
    assert plan.storage_id[3] == plan.storage_id[1]


def test_selection_order():
    """Free {40 B released 1st, 40 B released 2nd}: a 40 B request takes the first (FIFO among
    equal keys); a 48 B request takes the last released smaller one and enlarges it."""
    nodes = [inp("x", (1,)),
             op("a", [(0, 0)], ((10,), F32)), op("b", [(0, 0)], ((10,), F32)),
             op("big", [(1, 0), (2, 0)], ((1000,), F32)),  # releases a then b
             op("r40", [(3, 0)], ((10,), F32))]
    plan = graph_plan_memory(make_graph(nodes, heads=[(4, 0)]))
    assert plan.storage_id[4] == plan.storage_id[1]
    nodes[-1] = op("r48", [(3, 0)], ((12,), F32))
    plan = graph_plan_memory(make_graph(nodes, heads=[(4, 0)]))
    assert plan.storage_id[4] == plan.storage_id[2]
    assert plan.relay_storage_bytes[plan.storage_id[2]] == 48
    assert plan.first_bytes[4] == 40  # the storage's first tensor


def test_nop_chain_aliases_to_the_root():
    nodes = [inp("x", (8,)), op("a", [(0, 0)], ((8,), F32)),
             op("r1", [(1, 0)], ((2, 4), F32), kind="nop"), op("r2", [(2, 0)], ((4, 2), F32), kind="nop"),
             op("b", [(0, 0)], ((8,), F32)), op("c", [(3, 0), (4, 0)], ((8,), F32))]
    plan = graph_plan_memory(make_graph(nodes, heads=[(5, 0)]))
    sids = plan.storage_id.tolist()
    assert sids[1] == sids[2] == sids[3]
    assert sids[4] != sids[1]  # a is live through its aliases until c


# ---------------------------------------------------------------------------------------------
# plan object, arena mode, JSON
# ---------------------------------------------------------------------------------------------


def _graph_doc():
    return {
        "nodes": [{"op": "null", "name": "x", "inputs": []},
                  {"op": "tvm_op", "name": "f", "attrs": {"func_name": "f", "num_inputs": "1",
                                                          "num_outputs": "1", "flatten_data": "0"},
                   "inputs": [[0, 0, 0]]},
                  {"op": "tvm_op", "name": "g", "attrs": {"func_name": "g", "num_inputs": "1",
                                                          "num_outputs": "1", "flatten_data": "0"},
                   "inputs": [[1, 0, 0]]},
                  {"op": "tvm_op", "name": "h", "attrs": {"func_name": "h", "num_inputs": "1",
                                                          "num_outputs": "1", "flatten_data": "0"},
                   "inputs": [[2, 0, 0]]}],
        "arg_nodes": [0],
        "heads": [[3, 0, 0]],
        "node_row_ptr": [0, 1, 2, 3, 4],
        "attrs": {"shape": ["list_shape", [[256], [256], [64], [256]]],
                  "dltype": ["list_str", ["float32"] * 4],
                  "storage_id": ["list_int", [9, 9, 9, 9]]},
        "extra_key": 1,
    }


def test_plan_is_a_memory_plan_and_json_round_trip():
    plan = graph_plan_memory(read_graph_json(json.dumps(_graph_doc())))
    assert isinstance(plan, GraphMemoryPlan)
    assert plan.mode == "relay"
    assert plan.storage_id.tolist() == [0, 1, 2, 1]  # the file's storage_id is ignored
    assert plan.n_storage == 3 and plan.tok_storage.tolist() == [0, 1, 2, 1]
    assert plan.relay_bytes == plan.tvm_bytes == 1024 + 1024 + 256
    out = json.loads(plan.to_graph_json())
    assert out["attrs"]["storage_id"] == ["list_int", [0, 1, 2, 1]]
    assert out["extra_key"] == 1 and out["nodes"] == _graph_doc()["nodes"]
    # the written file plans to the same ids
    again = graph_plan_memory(read_graph_json(out))
    assert again.storage_id.tolist() == [0, 1, 2, 1]


def test_lower_bound_is_max_live():
    plan = graph_plan_memory(read_graph_json(_graph_doc()))
    # x (pinned, 1024) is live throughout; f (1024) and g (256) overlap at g; g and h at h.
    assert plan.lower_bound == 1024 + 1024 + 256
    assert plan.pinned_bytes == 1024


def test_arena_mode_offsets_are_sound():
    doc = _graph_doc()
    plan = graph_plan_memory(read_graph_json(doc), mode="arena", alignment=64)
    assert plan.mode == "arena"
    assert plan.storage_id.tolist() == [0, 1, 2, 1]  # Relay ids are kept
    assert plan.arena_of.tolist() == [0, 0, 0, 0]
    start, end, size = [-1, 1, 2, 3], [4, 2, 3, 4], [1024, 1024, 256, 1024]
    memcore.verify_offsets(start, end, size, plan.tok_offset, plan.arena_bytes[0])
    assert plan.arena_bytes[0] >= plan.lower_bound
    out = json.loads(plan.to_graph_json())
    assert out["attrs"]["storage_offset"] == ["list_int", plan.tok_offset.tolist()]
    assert out["attrs"]["storage_arena"] == ["list_int", [0, 0, 0, 0]]
    assert out["attrs"]["arena_bytes"] == ["list_int", plan.arena_bytes]


def test_arena_one_buffer_per_device():
    nodes = [inp("x", (16,)), op("a", [(0, 0)], ((16,), F32)), op("b", [(1, 0)], ((16,), F32)),
             op("c", [(2, 0)], ((16,), F32))]
    devices = [1, 1, 2, 2]
    plan = graph_plan_memory(make_graph(nodes, heads=[(3, 0)], devices=devices), mode="arena", alignment=1)
    assert len(plan.arena_bytes) == 2
    assert plan.arena_of[0] == plan.arena_of[1] != plan.arena_of[2] == plan.arena_of[3]
    assert sorted(plan.arena_bytes) == [128, 128]


def test_ir_function_graph_form():
    """The memcore IR form of test_plan_memory gives the same storage ids as the graph."""
    import memcore_py

    text = """
@R.function
def main(x: R.Tensor((10,), "float32"), y: R.Tensor((1,), "float32")) -> R.Tensor((2, 5), "float32"):
    with R.dataflow():
        z = R.exp(y)
        w = R.add(x, z)
        a = R.exp(w)
        b = R.exp(a)
        c = R.reshape(b, R.shape([2, 5]))
        d = R.exp(c)
        R.output(d)
    return d
"""
    plan = graph_plan_memory(memcore_py.parse(text))
    # x, y pinned; z 2; w 3; a takes z's (enlarged); b takes w's; c aliases b; d takes a's
    assert plan.storage_id.tolist() == [0, 1, 2, 3, 2, 3, 3, 2]
    assert plan.graph.node_kind.tolist() == [0, 0, 1, 1, 1, 1, 2, 1]
    assert json.loads(plan.to_graph_json())["nodes"][6]["attrs"]["func_name"] == "__nop"


def test_unknown_mode():
    with pytest.raises(ValueError, match="mode must be one of"):
        graph_plan_memory(read_graph_json(_graph_doc()), mode="tvm")


def test_verify_tokens_on_relay_program():
    from memcore_py.planning.graph_plan_memory import relay_token_program

    g = read_graph_json(_graph_doc())
    prog = relay_token_program(g)
    tp = memcore.plan_tokens(prog.tok_bytes, prog.tok_pool, prog.tok_refs, prog.ev_kind, prog.ev_tok,
                             release_zero_ref=True)
    memcore.verify_tokens(prog.tok_bytes, prog.tok_pool, prog.tok_refs, prog.ev_kind, prog.ev_tok, tp)
    assert np.array_equal(tp.storage_of[prog.entry_tok], graph_plan_memory(g).storage_id)
