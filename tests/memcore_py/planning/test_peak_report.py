"""Peak report (memcore_py.planning.peak_report): the tensors live at each function's peak,
checked against a brute-force sweep over the steps of the *planned IR* (re-read by the
independent checker, memcore_py.planning.check), against memcore._reference, and against a
module worked out by hand."""
import numpy as np
import pytest

import memcore._reference as ref
from memcore_py.errors import PlanningError
from memcore_py.examples.models import list_models, load_model
from memcore_py.planning.check import collect_planned_tensors
from memcore_py.planning.peak_report import format_report, report, timelines
from memcore_py.testing.memory_programs import chain_module, random_memory_module
from memcore_py.transform.static_plan_block_memory import plan_block_memory



def chain():
    """``chain_module(4, width=4)``: per op ``alloc = R.builtin.alloc_tensor``, a kernel call,
    ``y = alloc``; widths 4, 2, 4, 8 float32 (16, 8, 16, 32 bytes); the last result returned."""
    return chain_module(4, width=4)


def test_chain_by_hand():
    # Steps: 0 alloc, 1 kernel2(x, alloc), 2 y, 3 alloc1, 4 kernel2(y, alloc1), 5 y1,
    # 6 alloc2, 7 kernel3(y1, y, alloc2), 8 y2, 9 alloc3, 10 kernel2(y2, alloc3), 11 y3
    # (returned: alloc3 is not planned). Lifetimes: alloc [0, 7] (16 B), alloc1 [3, 7] (8 B),
    # alloc2 [6, 10] (16 B): all three live at steps 6 and 7.
    rep = report(chain(), top=None)
    (f,) = rep.functions
    assert (f.function, f.n_steps, f.n_tensors) == ("main", 12, 3)
    assert (f.step, f.peak_bytes, f.lower_bound, f.n_live) == (6, 40, 40, 3)
    assert [(t.name, t.start, t.end, t.nbytes, t.shape, t.dtype) for t in f.tensors] == [
        ("alloc", 0, 7, 16, (4,), "float32"),
        ("alloc2", 6, 10, 16, (4,), "float32"),
        ("alloc1", 3, 7, 8, (2,), "float32"),
    ]
    assert [t.binding for t in f.tensors] == ["cls.kernel2(x, alloc)", "cls.kernel3(y1, y, alloc2)",
                                              "cls.kernel2(y, alloc1)"]
    tvm, arena = f.modes
    # all live together: three storages, no reuse, exactly the bound
    assert (tvm.mode, tvm.bytes, tvm.n_storages, tvm.excess) == ("tvm", 40, 3, 0.0)
    assert sorted(t.placement["tvm"] for t in f.tensors) == [(0, 0), (1, 0), (2, 0)]
    # arena mode packs with 64-byte alignment (192 bytes here), more than TVM mode's 40: it
    # keeps TVM mode's storages
    assert (arena.mode, arena.bytes, arena.n_storages) == ("arena", 40, 3)
    assert [t.placement["arena"] for t in f.tensors] == [t.placement["tvm"] for t in f.tensors]


def test_top_limits_and_orders():
    rep = report(load_model("resnet50"), top=None, modes=("tvm",))
    f = rep["main"]
    sizes = [t.nbytes for t in f.tensors]
    assert sizes == sorted(sizes, reverse=True) and len(sizes) == f.n_live
    assert sum(sizes) == f.peak_bytes
    top1 = report(load_model("resnet50"), top=1, modes=("tvm",))["main"]
    assert [t.name for t in top1.tensors] == [f.tensors[0].name] and top1.n_live == f.n_live
    assert report(load_model("resnet50"), top=0)["main"].tensors == ()


def _brute_force(planned):
    """Per step of the planned function: the bytes and names of the live tensors (a plain
    sweep over every step and every tensor)."""
    rows = []
    for s in planned.storages:
        for name, a, b, size in zip(s.tensors, s.start.tolist(), s.end.tolist(), s.size.tolist()):
            if size >= 0:
                rows.append((name.removesuffix("_raw"), a, b, size))
    best, best_sets = -1, []
    for t in range(planned.n_steps + 1):
        live = [r for r in rows if r[1] <= t <= r[2]]
        load = sum(r[3] for r in live)
        if load > best:
            best, best_sets = load, []
        if load == best:
            best_sets.append(frozenset(r[0] for r in live))
    return best, best_sets


@pytest.mark.parametrize("name", list_models())
def test_peak_matches_the_planned_ir(name):
    mod = load_model(name)
    planned = {m: plan_block_memory(mod, m) for m in ("tvm", "arena")}
    rep = report([planned["tvm"], planned["arena"]], top=None)
    assert {m.mode for f in rep for m in f.modes} == {"tvm", "arena"}
    for f in rep:
        for mode, pm in planned.items():
            ir = collect_planned_tensors(pm.module[f.function], f.function)
            best, best_sets = _brute_force(ir)
            assert f.peak_bytes == max(best, 0)
            assert frozenset(t.name for t in f.tensors) in best_sets
            # placement: the storage size and offset the planned IR gives each peak tensor
            where = {}
            for s in ir.storages:
                for tname, off in zip(s.tensors, s.offset.tolist()):
                    where[tname.removesuffix("_raw")] = (s.nbytes, off)
            tl = next(t for t in timelines(pm) if t.function == f.function)
            for t in f.tensors:
                storage, offset = t.placement[mode]
                assert where[t.name] == (tl.placements[mode].storage_bytes[storage], offset)
            total = next(m.bytes for m in f.modes if m.mode == mode)
            assert total == ir.total_bytes


@pytest.mark.parametrize("seed", range(20))
def test_random_modules_against_reference(seed):
    mod = random_memory_module(seed)
    for tl in timelines(mod, time_limit=None):
        # steps: the allocation binding's step is the token's start
        steps = {id(b): s for b, s in tl.binding_steps}
        assert len(tl.binding_steps) == tl.n_steps
        from memcore_py.analysis.storage_tokens import analyze_storage_tokens

        st = analyze_storage_tokens(mod)
        for i, tok in enumerate(tl.token.tolist()):
            assert steps[id(st.sites.tok_binding[tok])] == tl.start[i]
        assert tl.profile.tolist() == ref.live_profile(tl.start.tolist(), tl.end.tolist(), tl.size.tolist(), tl.n_steps)
        peak = ref.max_live_bytes(tl.start.tolist(), tl.end.tolist(), tl.size.tolist())
        assert tl.peak_bytes == peak
        if tl.lower_bound is not None:
            assert peak <= tl.lower_bound
        # the live set at the peak step, by a sweep in the test
        live = {tl.names[i] for i in range(tl.n_tensors) if tl.start[i] <= tl.peak_step <= tl.end[i]}
        f = report([plan_block_memory(mod, "tvm")], top=None, functions=[tl.function])[tl.function]
        assert {t.name for t in f.tensors} == live and f.peak_bytes == peak
        # every mode's addresses fit in its stack and never overlap while both are live
        for p in tl.placements.values():
            addr = p.address
            assert np.all(addr + tl.size <= p.stacked_bytes)
            for i in range(tl.n_tensors):
                for j in range(i):
                    if tl.start[i] <= tl.end[j] and tl.start[j] <= tl.end[i] and tl.size[i] and tl.size[j]:
                        assert addr[i] + tl.size[i] <= addr[j] or addr[j] + tl.size[j] <= addr[i]


def test_format_report_text():
    text = format_report(report(chain()))
    first = text.splitlines()[0]
    assert first.startswith("function main: peak 40 B at step 6 of 12, 3 of 3 tensors live; lower bound 40 B;")
    assert "tvm 40 B (+0.0% over bound)" in first
    assert "alloc1" in text and "cls.kernel2(y, alloc1)" in text and "[3, 7]" in text


def test_to_dict_is_json():
    import json

    doc = json.loads(json.dumps(report(chain()).to_dict()))
    f = doc["functions"][0]
    assert f["peak_bytes"] == 40 and f["tensors"][0]["lifetime"] == [0, 7]
    assert f["modes"]["tvm"]["bytes"] == 40


@pytest.mark.parametrize("kwargs, match", [
    ({"top": -1}, "top must be"),
    ({"top": 1.5}, "top must be"),
    ({"modes": ("fast",)}, "planning mode must be one of"),
    ({"functions": ["nope"]}, "no Relax function named 'nope'"),
])
def test_bad_arguments(kwargs, match):
    with pytest.raises(PlanningError, match=match):
        report(chain(), **kwargs)


def test_bad_source():
    with pytest.raises(PlanningError, match="expected an IRModule"):
        report("main")
    mod = chain()
    with pytest.raises(PlanningError, match="same module"):
        report([plan_block_memory(mod, "tvm"), plan_block_memory(load_model("resnet50"), "arena")])


def test_timelines_as_source():
    tls = timelines(chain(), modes=("tvm",))
    assert report(tls, top=None).to_dict() == report(chain(), top=None, modes=("tvm",)).to_dict()
    assert [f.function for f in report(tls, functions=["main"])] == ["main"]
    with pytest.raises(PlanningError, match="no timeline of function 'nope'"):
        report(tls, functions=["nope"])


def _resnet18_graph():
    import gzip
    import json

    from _helpers import REPO_ROOT
    from memcore_py.frontend import read_graph_json

    with gzip.open(REPO_ROOT / "tests" / "data" / "relay" / "resnet18_O3.json.gz", "rt") as fh:
        return read_graph_json(json.dumps(json.load(fh)["graph_json"]))


def test_graph_timeline():
    import memcore
    from memcore_py.planning.graph_plan_memory import graph_plan_memory
    from memcore_py.planning.peak_report import graph_timeline

    g = _resnet18_graph()
    relay, arena = graph_plan_memory(g, mode="relay"), graph_plan_memory(g, mode="arena")
    tl = graph_timeline(relay, arena)
    assert tl.n_steps == g.n_nodes + 1 and set(tl.placements) == {"relay", "arena"}
    assert tl.placements["relay"].total_bytes == relay.relay_bytes
    assert tl.placements["arena"].total_bytes == sum(arena.arena_bytes)
    # one pool: the peak of the profile is the planner's bound, and the profile is a sweep's
    assert tl.peak_bytes == tl.lower_bound == relay.lower_bound
    assert tl.profile.tolist() == ref.live_profile(tl.start.tolist(), tl.end.tolist(), tl.size.tolist(), tl.n_steps)
    # addresses: tensors live together never share bytes, in either mode (independent check)
    for p in tl.placements.values():
        memcore.verify_offsets(tl.start, tl.end, tl.size, p.address, p.stacked_bytes)
    # the entries Relay gives one storage id share a storage here
    sid = relay.storage_id[tl.token]
    st = tl.placements["relay"].storage
    assert all((sid == sid[i]).tolist() == (st == st[i]).tolist() for i in range(0, tl.n_tensors, 7))
    f = report([tl], top=3)[g.name]
    assert [m.mode for m in f.modes] == ["relay", "arena"] and len(f.tensors) == 3


def test_graph_timeline_bad_input():
    from memcore_py.planning.graph_plan_memory import graph_plan_memory
    from memcore_py.planning.peak_report import graph_timeline

    with pytest.raises(PlanningError, match="takes GraphMemoryPlans"):
        graph_timeline()
    with pytest.raises(PlanningError, match="takes GraphMemoryPlans"):
        graph_timeline(plan_block_memory(chain(), "tvm").plan)
    g = _resnet18_graph()
    with pytest.raises(PlanningError, match="one plan per mode, all of the same graph"):
        graph_timeline(graph_plan_memory(g, mode="relay"), graph_plan_memory(g, mode="relay"))
