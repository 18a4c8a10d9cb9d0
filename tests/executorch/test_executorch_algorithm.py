"""memcore's ExecuTorch algorithm on hand-built TensorSpecs: the contract of the call
(bufsizes slots, mem_ids, alignment, padding, reservations, storage_base aliases, shared
objects), ExecuTorch's Verifier rule for ``mem_obj_id``, and typed errors for bad input.

Expected placements are derived from the inputs (sizes, lifetimes, alignment), never read
back from the planner.
"""
from __future__ import annotations

import random
import subprocess
import sys

import pytest

pytest.importorskip("executorch.exir")  # not "executorch": see test_executorch_programs.py
torch = pytest.importorskip("torch")

from executorch.exir.memory_planning import MemoryPlanningAlgorithmSuite, Verifier, greedy  # noqa: E402
from executorch.exir.tensor import TensorSpec  # noqa: E402
from torch.fx import Graph, GraphModule  # noqa: E402

from _executorch_programs import overlapping_pairs  # noqa: E402
from memcore_py.errors import PlanningError  # noqa: E402
from memcore_py.executorch import (  # noqa: E402
    META_KEY,
    ExecuTorchPlanningError,
    InvalidOptionError,
    InvalidSpecError,
    UnsupportedSpecError,
    memcore_algorithm,
)


def spec(n_floats, lifetime, mem_id=None):
    s = TensorSpec(torch.float32, torch.Size([n_floats]))
    s.lifetime = list(lifetime) if lifetime is not None else [None, None]
    s.mem_id = mem_id
    return s


def empty_graph_module():
    graph = Graph()
    graph.output(())
    return GraphModule({}, graph)


def run(specs, alignment=16, graph_module=None, extra_padding=0, **options):
    algo = memcore_algorithm(**options)
    return algo(alignment, specs, graph_module, None, extra_padding)


def apply(result):
    """Write a result back as the suite does."""
    for s, r in result.spec_dict.items():
        s.mem_id, s.mem_offset, s.mem_obj_id = r.mem_id, r.mem_offset, r.mem_obj_id


def test_disjoint_lifetimes_share_bytes_overlapping_ones_do_not():
    a, b, c = spec(8, (0, 1)), spec(8, (2, 3)), spec(4, (1, 2))
    result = run({a, b, c})
    # a and b never live together; c lives with both: 32 + 16 bytes is the max live.
    assert result.bufsizes == [0, 48]
    apply(result)
    assert overlapping_pairs([a, b, c]) == []
    assert all(s.mem_id == 1 for s in (a, b, c))


def test_bufsizes_one_slot_per_mem_id_slot_zero_empty():
    a, b = spec(4, (0, 1)), spec(4, (0, 1), mem_id=3)
    result = run([a, b])
    assert result.bufsizes == [0, 16, 0, 16]
    assert result.spec_dict[b].mem_id == 3 and result.spec_dict[a].mem_id == 1


def test_empty_specs():
    assert run([]).bufsizes == [0, 0]
    assert run(set(), graph_module=empty_graph_module()).bufsizes == [0, 0]


def test_alignment_realigns_specs_and_offsets():
    a, b = spec(3, (0, 2)), spec(5, (1, 3))  # 12 and 20 bytes
    result = run([a, b], alignment=64)
    assert a.alignment == b.alignment == 64 and a.allocated_memory == 64
    assert result.bufsizes == [0, 128]
    assert {r.mem_offset % 64 for r in result.spec_dict.values()} == {0}


def test_extra_padding_on_arenas_in_use_only():
    a, b = spec(4, (0, 1)), spec(4, (0, 1), mem_id=3)
    assert run([a, b], extra_padding=64).bufsizes == [0, 16 + 64, 0, 16 + 64]


def test_submodule_reservation_kept_free_at_arena_start():
    gm = empty_graph_module()
    gm.input_mem_buffer_sizes = [0, 100]
    a, b = spec(4, (0, 1)), spec(4, (1, 2))
    result = run([a, b], graph_module=gm)
    assert result.bufsizes == [0, 112 + 32]  # 100 rounded up to 16, then both tensors
    assert min(r.mem_offset for r in result.spec_dict.values()) == 112
    report = gm.meta[META_KEY]
    assert [(r.mem_id, r.reserved, r.planned_bytes, r.lower_bound) for r in report] == [(1, 112, 32, 32)]


def test_storage_base_chain_placed_inside_root():
    root, mid, leaf = spec(16, (0, 1)), spec(8, (1, 2)), spec(2, (2, 4))
    mid.storage_base, mid.storage_base_offset = root, 16
    leaf.storage_base, leaf.storage_base_offset = mid, 16
    other = spec(16, (3, 4))  # lives with leaf (hence with root's extended lifetime)
    result = run([leaf, mid, root, other])
    apply(result)
    assert mid.mem_offset == root.mem_offset + 16
    assert leaf.mem_offset == root.mem_offset + 32
    assert root.mem_obj_id == mid.mem_obj_id == leaf.mem_obj_id
    assert result.bufsizes == [0, 128]  # root (64 bytes) stays live until step 4, as other
    assert overlapping_pairs([root, mid, leaf, other]) == []


def test_suite_with_greedy_keeps_smaller_and_verifier_accepts():
    rng = random.Random(7)
    specs = []
    for _ in range(60):
        first = rng.randrange(0, 40)
        specs.append(spec(rng.choice([1, 3, 16, 33, 100]), (first, first + rng.randrange(0, 8))))
    gm = empty_graph_module()
    ours = run(list(specs), graph_module=gm)
    theirs = greedy(16, list(specs), gm, None, 0)
    assert len(ours.bufsizes) == len(theirs.bufsizes)
    assert ours.bufsizes[1] <= theirs.bufsizes[1]
    suite = MemoryPlanningAlgorithmSuite(algo_list=[memcore_algorithm(), greedy])
    assert suite(16, list(specs), gm, None, 0) == ours.bufsizes
    assert overlapping_pairs(specs) == []
    # ExecuTorch's rule: two specs sharing a byte share a mem_obj_id.
    for i, a in enumerate(specs):
        for b in specs[i + 1:]:
            if Verifier.storage_overlap(a, b):
                assert a.mem_obj_id == b.mem_obj_id


@pytest.mark.parametrize("seed", range(5))
def test_shared_objects_each_tensor_at_object_start(seed):
    rng = random.Random(seed)
    specs = []
    for _ in range(80):
        first = rng.randrange(0, 50)
        specs.append(spec(rng.choice([4, 8, 16, 64]), (first, first + rng.randrange(0, 6))))
    result = run(specs, allow_overlapping_allocations=False)
    apply(result)
    assert overlapping_pairs(specs) == []
    objects = {}
    for s in specs:
        objects.setdefault(s.mem_obj_id, []).append(s)
    ends = []
    for members in objects.values():
        assert len({s.mem_offset for s in members}) == 1
        ends.append(members[0].mem_offset + max(s.allocated_memory for s in members))
    assert result.bufsizes[1] == max(ends)


def test_allow_overlapping_allocations_per_call():
    a, b = spec(4, (0, 1)), spec(4, (2, 3))
    algo = memcore_algorithm()
    result = algo(16, [a, b], None, None, 0, allow_overlapping_allocations=False)
    assert result.bufsizes == [0, 16]


# -- bad input ---------------------------------------------------------------------------------


def test_spec_without_lifetime():
    with pytest.raises(InvalidSpecError, match=r"TensorSpec\(shape=\[4\].*has no lifetime"):
        run([spec(4, (0, 1)), spec(4, None)])


def test_lifetime_start_after_end():
    with pytest.raises(InvalidSpecError, match="starts after it ends"):
        run([spec(4, (3, 1))])


def test_negative_size():
    bad = TensorSpec(torch.float32, torch.Size([-2, 4]))
    bad.lifetime = [0, 1]
    with pytest.raises(InvalidSpecError, match=r"shape=\[-2, 4\].*negative size"):
        run([bad])


@pytest.mark.parametrize("mem_id", [0, -1, "1", 1.0, True])
def test_unknown_mem_id(mem_id):
    with pytest.raises(InvalidSpecError, match="mem_id"):
        run([spec(4, (0, 1), mem_id=mem_id)])


def test_storage_base_not_among_specs():
    base, child = spec(8, (0, 1)), spec(2, (0, 1))
    child.storage_base = base
    with pytest.raises(InvalidSpecError, match="storage_base .* not among the specs"):
        run([child])


def test_storage_base_cycle():
    a, b = spec(8, (0, 1)), spec(8, (0, 1))
    a.storage_base, b.storage_base = b, a
    with pytest.raises(InvalidSpecError, match="loops"):
        run([a, b])


def test_alias_does_not_fit_in_base():
    base, child = spec(4, (0, 1)), spec(4, (0, 1))
    child.storage_base, child.storage_base_offset = base, 16
    with pytest.raises(InvalidSpecError, match="does not fit inside its storage_base"):
        run([base, child])


def test_alias_misaligned_in_base():
    base, child = spec(16, (0, 1)), spec(2, (0, 1))
    child.storage_base, child.storage_base_offset = base, 8
    with pytest.raises(UnsupportedSpecError, match="not a multiple of the alignment 16"):
        run([base, child])


def test_alias_in_other_mem_id_than_base():
    base, child = spec(16, (0, 1), mem_id=1), spec(2, (0, 1), mem_id=2)
    child.storage_base = base
    with pytest.raises(InvalidSpecError, match="has mem_id 2 but its storage is in mem_id 1"):
        run([base, child])


@pytest.mark.parametrize("kwargs, match", [
    (dict(alignment=0), "alignment must be an int >= 1"),
    (dict(extra_padding=-1), "extra_padding must be an int >= 0"),
])
def test_bad_arguments(kwargs, match):
    with pytest.raises(InvalidOptionError, match=match):
        run([spec(4, (0, 1))], **kwargs)


def test_unknown_keyword():
    with pytest.raises(InvalidOptionError, match="unexpected keyword"):
        memcore_algorithm()(16, [], None, None, 0, colour="blue")


def test_bad_reservation():
    gm = empty_graph_module()
    gm.input_mem_buffer_sizes = [0, -5]
    with pytest.raises(InvalidOptionError, match=r"input_mem_buffer_sizes\[1\]"):
        run([spec(4, (0, 1))], graph_module=gm)


def test_errors_share_memcore_base():
    assert issubclass(InvalidSpecError, ExecuTorchPlanningError)
    assert issubclass(ExecuTorchPlanningError, PlanningError)
    assert issubclass(InvalidSpecError, ValueError) and issubclass(InvalidOptionError, ValueError)


# -- the independent checker itself ------------------------------------------------------------


def test_overlap_checker_finds_shared_live_bytes():
    a, b, c = spec(8, (0, 2)), spec(8, (2, 3)), spec(8, (3, 4))
    for s, offset in ((a, 0), (b, 32), (c, 0)):  # 32 bytes each
        s.mem_id, s.mem_offset = 1, offset
    assert overlapping_pairs([a, b, c]) == []
    c.mem_offset = 40  # overlaps b's bytes [32, 64) while both live at step 3
    assert overlapping_pairs([a, b, c]) == [(b, c)]
    b.mem_offset = 16  # now also a's bytes [0, 32) at step 2
    assert len(overlapping_pairs([a, b, c])) == 2


def test_import_needs_neither_executorch_nor_torch():
    code = ("import sys, memcore_py.executorch; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'executorch')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
