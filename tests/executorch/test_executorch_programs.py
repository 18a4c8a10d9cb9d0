"""memcore as ExecuTorch's memory planner on real exported programs.

Each program is exported and brought to ExecuTorch's edge dialect once (module-scoped
fixture), then ``to_executorch`` lowers two copies: with ExecuTorch's default ``greedy`` and
with memcore (``memory_planning_pass``). Both ``.pte`` buffers run in ExecuTorch's portable runtime on
the same inputs and must give bit-identical outputs. memcore's plan is checked by helpers
written apart from the planner (``_executorch_programs``: pairwise byte/lifetime overlap in
plain Python, an independent max-live lower bound) and by ExecuTorch's own ``Verifier``,
which ExecuTorch runs only for an algorithm named "greedy".

The memcore lowering runs two memcore algorithms in one suite: heuristics only
(``time_limit=None``, deterministic) and with a generous search budget (the search stops as
soon as it reaches the lower bound, so the budget only matters on a loaded machine). The
suite keeps the smaller; the heuristics' sizes are recorded so both are held to
"<= greedy".

The skip is on ``executorch.exir``, not ``executorch``: pytest puts ``tests/`` on
``sys.path``, where this folder would pass for a namespace package named ``executorch``.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field

import pytest

pytest.importorskip("executorch.exir")
torch = pytest.importorskip("torch")

from executorch.exir import ExecutorchBackendConfig, to_edge  # noqa: E402
from executorch.exir.memory_planning import MemoryPlanningAlgorithmSuite, Verifier, greedy  # noqa: E402
from executorch.exir.passes import MemoryPlanningPass  # noqa: E402
from executorch.extension.pybindings.portable_lib import _load_for_executorch_from_buffer  # noqa: E402

from _executorch_programs import (  # noqa: E402
    EXTRA_NAMES,
    TORCH_MODEL_NAMES,
    build_program,
    max_live_by_mem_id,
    overlapping_pairs,
    planned_specs,
    prefill_decode_program,
    submodule_reservations,
)
from memcore_py.executorch import memcore_algorithm, memory_planning_pass  # noqa: E402

#: Seconds of search per arena (the search returns as soon as it meets the lower bound).
TIME_LIMIT = 2.0
ALIGNMENT = 16  # ExecuTorch's default (executorch.exir.tensor.ALIGNMENT)


@dataclass
class Lowered:
    name: str
    model: object
    args: tuple
    greedy: object
    memcore: object
    heuristic_bufsizes: list = field(default_factory=list)


def _lower(edge, planning_pass):
    """Lower a copy of ``edge`` (``to_executorch`` changes the program it runs on)."""
    return copy.deepcopy(edge).to_executorch(ExecutorchBackendConfig(memory_planning_pass=planning_pass))


def _memcore_pass(recorded, **pass_kwargs):
    heuristics = memcore_algorithm(time_limit=None)

    def memcore_heuristics(*args, **kwargs):
        result = heuristics(*args, **kwargs)
        recorded.append(list(result.bufsizes))
        return result

    suite = MemoryPlanningAlgorithmSuite(algo_list=[memcore_algorithm(time_limit=TIME_LIMIT), memcore_heuristics])
    return MemoryPlanningPass(memory_planning_algo=suite, **pass_kwargs)


@pytest.fixture(scope="module", params=TORCH_MODEL_NAMES + EXTRA_NAMES)
def lowered(request):
    model, args = build_program(request.param)
    edge = to_edge(torch.export.export(model, args))
    recorded = []
    greedy_program = _lower(edge, MemoryPlanningPass())
    memcore_program = _lower(edge, _memcore_pass(recorded))
    return Lowered(request.param, model, args, greedy_program, memcore_program, recorded[-1])


def _bufsizes(program):
    return list(program.executorch_program.execution_plan[0].non_const_buffer_sizes)


def _input_sequence(item):
    """Inputs to run, in order (state carries over between calls in one runtime module)."""
    if item.name == "kv_cache":
        x = item.args[0]
        return [item.args, (x * -0.5, torch.tensor([5])), (x + 1.0, torch.tensor([3]))]
    if item.name == "cond":
        return [item.args, (-item.args[0],)]
    return [item.args]


def _load(buffer):
    """A runtime module of a ``.pte`` buffer. The pybindings may read the buffer in place
    (a ``BufferDataLoader`` over the bytes) without keeping it alive, so the caller holds
    ``buffer`` for as long as it uses the module; a temporary here crashed intermittently."""
    return _load_for_executorch_from_buffer(buffer)


def _run(program, inputs):
    buffer = program.buffer  # a new bytes object per access: keep this one alive (see _load)
    module = _load(buffer)
    outputs = [list(module.forward(args)) for args in inputs]
    del module
    return outputs


def test_outputs_bit_identical_to_greedy(lowered):
    inputs = _input_sequence(lowered)
    expected = _run(lowered.greedy, inputs)
    got = _run(lowered.memcore, inputs)
    assert len(got) == len(expected)
    for call, (want, have) in enumerate(zip(expected, got)):
        assert len(have) == len(want)
        for k, (a, b) in enumerate(zip(want, have)):
            assert torch.equal(a, b), f"{lowered.name}: call {call}, output {k} differs"


def test_outputs_match_eager(lowered):
    """Sanity of the runs themselves: memcore's program computes the model (not merely the
    same as greedy's). A copy of the model runs the calls, its state carried over as the
    runtime's is."""
    inputs = _input_sequence(lowered)
    model = copy.deepcopy(lowered.model)
    got = _run(lowered.memcore, inputs)
    for call, args in enumerate(inputs):
        want = model(*args)
        want = list(want) if isinstance(want, (tuple, list)) else [want]
        assert len(got[call]) == len(want)
        for a, b in zip(want, got[call]):
            torch.testing.assert_close(b, a, rtol=1e-4, atol=1e-4)


def _graphs(program):
    gm = program.exported_program().graph_module
    return [gm] + [child for _, child in gm.named_children() if hasattr(child, "graph")]


def test_memcore_plan_independent_check(lowered):
    for graph in _graphs(lowered.memcore):
        specs = planned_specs(graph)
        assert specs, "no planned tensors found"
        bufsizes = graph.meta["non_const_buffer_sizes"]
        reserved = submodule_reservations(graph)
        for spec in specs:
            assert spec.mem_offset % ALIGNMENT == 0, spec
            assert spec.mem_offset + spec.allocated_memory <= bufsizes[spec.mem_id], spec
            assert spec.mem_offset >= reserved.get(spec.mem_id, 0), spec
        assert overlapping_pairs(specs) == []


def test_executorch_verifier_accepts_memcore_plan(lowered):
    program = lowered.memcore.exported_program()
    verifier = Verifier(program.graph_module, True, True, True, program.graph_signature)
    verifier.verify_storage_reuse()
    verifier.verify_graph_input_output()


def test_memcore_bytes_at_most_greedy(lowered):
    greedy_sizes = _bufsizes(lowered.greedy)
    memcore_sizes = _bufsizes(lowered.memcore)
    assert len(memcore_sizes) == len(greedy_sizes) == len(lowered.heuristic_bufsizes)
    assert memcore_sizes[0] == 0
    for mem_id, limit in enumerate(greedy_sizes):
        assert memcore_sizes[mem_id] <= limit, (mem_id, memcore_sizes, greedy_sizes)
        assert lowered.heuristic_bufsizes[mem_id] <= limit, (mem_id, lowered.heuristic_bufsizes, greedy_sizes)


def test_memcore_bytes_within_one_percent_of_lower_bound(lowered):
    """Per mem_id: at most 1.01x the max-live bytes of the planned tensors, plus the space
    control-flow submodules reserve at the start of the arena (for ``cond`` the bound is
    then not a true lower bound of every plan, only of plans that keep that space apart,
    as ExecuTorch's and memcore's do)."""
    graph = lowered.memcore.exported_program().graph_module
    live = max_live_by_mem_id(planned_specs(graph))
    reserved = submodule_reservations(graph)
    sizes = _bufsizes(lowered.memcore)
    for mem_id, bound in live.items():
        floor = reserved.get(mem_id, 0) + bound
        assert floor <= sizes[mem_id] <= 1.01 * floor, (mem_id, sizes[mem_id], floor)


# -- pass options --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def edge_programs():
    out = {}
    for name in ("multi_output", "kv_cache"):
        model, args = build_program(name)
        out[name] = (to_edge(torch.export.export(model, args)), args)
    return out


@pytest.mark.parametrize("alloc_graph_input, alloc_graph_output", [(False, True), (True, False), (False, False)])
def test_graph_input_output_allocation_options(edge_programs, alloc_graph_input, alloc_graph_output):
    edge, args = edge_programs["multi_output"]
    options = dict(alloc_graph_input=alloc_graph_input, alloc_graph_output=alloc_graph_output)
    want = _run(_lower(edge, MemoryPlanningPass(**options)), [args])
    program = _lower(edge, memory_planning_pass(**options))
    have = _run(program, [args])
    assert all(torch.equal(a, b) for a, b in zip(want[0], have[0]))
    ep = program.exported_program()
    verifier = Verifier(ep.graph_module, alloc_graph_input, alloc_graph_output, True, ep.graph_signature)
    verifier.verify_storage_reuse()
    verifier.verify_graph_input_output()
    assert overlapping_pairs(planned_specs(ep.graph_module)) == []


def test_share_mutable_buffers(edge_programs):
    edge, args = edge_programs["kv_cache"]
    inputs = [args, (args[0] * 3.0, torch.tensor([6])), (args[0] - 1.0, torch.tensor([3]))]
    want = _run(_lower(edge, MemoryPlanningPass(share_mutable_buffers=True)), inputs)
    program = _lower(edge, memory_planning_pass(share_mutable_buffers=True))
    have = _run(program, inputs)
    for a, b in zip(want, have):
        assert all(torch.equal(x, y) for x, y in zip(a, b))
    sizes = _bufsizes(program)
    assert len(sizes) == 3 and sizes[2] == 8 * 16 * 4  # activations in 1, the shared cache in 2
    specs = planned_specs(program.exported_program().graph_module)
    assert overlapping_pairs(specs) == []


def test_shared_objects_when_overlapping_allocations_refused(edge_programs):
    """``allow_overlapping_allocations=False``: every tensor starts at the first byte of its
    shared object, tensors of one object are never live together."""
    import functools

    edge, args = edge_programs["multi_output"]
    greedy_objects = functools.partial(greedy, allow_overlapping_allocations=False)
    want = _run(_lower(edge, MemoryPlanningPass(MemoryPlanningAlgorithmSuite([greedy_objects]))), [args])
    program = _lower(edge, memory_planning_pass(allow_overlapping_allocations=False))
    have = _run(program, [args])
    assert all(torch.equal(a, b) for a, b in zip(want[0], have[0]))
    specs = planned_specs(program.exported_program().graph_module)
    objects = {}
    for spec in specs:
        objects.setdefault((spec.mem_id, spec.mem_obj_id), []).append(spec)
    for members in objects.values():
        owners = [s for s in members if s.storage_base is None]
        assert len({s.mem_offset for s in owners}) == 1
        for i, a in enumerate(owners):
            for b in owners[i + 1:]:
                assert a.lifetime[1] < b.lifetime[0] or b.lifetime[1] < a.lifetime[0]
    assert overlapping_pairs(specs) == []
    ep = program.exported_program()
    Verifier(ep.graph_module, True, True, True, ep.graph_signature).verify_storage_reuse()


def test_two_methods_share_mutable_cache():
    """A prefill/decode program with its cache shared through ``share_mutable_buffers``:
    each method's activations in its own arena (mem_id 1), the cache in mem_id 2."""
    programs, calls = prefill_decode_program()
    edge = to_edge(programs)
    results, sizes = {}, {}
    for label, make in (("greedy", MemoryPlanningPass), ("memcore", memory_planning_pass)):
        program = _lower(edge, make(share_mutable_buffers=True))
        buffer = program.buffer
        module = _load(buffer)
        results[label] = [list(module.run_method(method, args)) for method, args in calls]
        del module
        plans = program.executorch_program.execution_plan
        sizes[label] = {plan.name: list(plan.non_const_buffer_sizes) for plan in plans}
        if label == "memcore":
            for method in programs:
                assert overlapping_pairs(planned_specs(program.exported_program(method).graph_module)) == []
    for want, have in zip(results["greedy"], results["memcore"]):
        assert all(torch.equal(a, b) for a, b in zip(want, have))
    for method, greedy_sizes in sizes["greedy"].items():
        ours = sizes["memcore"][method]
        assert len(ours) == 3 and ours[2] == greedy_sizes[2] == 8 * 16 * 4
        assert ours[1] <= greedy_sizes[1]
