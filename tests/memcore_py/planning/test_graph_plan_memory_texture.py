"""Relay's 2-D texture allocator (TokenAllocator2D): the C++ unit tests of TVM v0.19
(tests/cpp/relay/backend/graph_plan_token_alloc.cc) as ours, and the free list's
libstdc++ iteration order against a compiled ``std::unordered_set`` where g++ exists."""
import random
import shutil
import subprocess

import pytest

from memcore_py.planning import GraphError, graph_plan_memory, make_graph
from memcore_py.planning.texture import StdUnorderedSet, Token2D, TokenAllocator2D, texture_shape

NHWC = "global.texture-nhwc"


def tok(shape, dtype="float32", scope=NHWC, ref=1):
    return Token2D(ref, dtype, scope, tuple(shape))


def test_one_token():
    alloc = TokenAllocator2D()
    t1 = tok((1, 22, 20, 20, 4))
    assert t1.size_2d() == (400, 22, 4)  # width, height, channel
    assert alloc.request(t1) is None
    alloc.alloc(t1, 0)
    assert (len(alloc.blocks), len(alloc.free_list)) == (1, 0)
    t1.ref_counter -= 1
    alloc.check_for_release(t1)
    assert (len(alloc.blocks), len(alloc.free_list)) == (1, 1)


def _released(alloc, shape, sid=0, **kw):
    t = tok(shape, **kw)
    assert alloc.request(t) is None
    alloc.alloc(t, sid)
    t.ref_counter -= 1
    alloc.check_for_release(t)
    return t


def test_equal_size_token_reuse():
    alloc = TokenAllocator2D()
    _released(alloc, (1, 22, 20, 20, 4))
    t2 = tok((1, 22, 20, 20, 4))
    req = alloc.request(t2)
    assert req is not None and req.storage_id == 0 and req.ref_counter == 1
    assert (len(alloc.blocks), len(alloc.free_list)) == (1, 0)
    assert req.size_2d() == (400, 22, 4)


def test_equal_size_different_dtypes_never_share():
    alloc = TokenAllocator2D()
    _released(alloc, (1, 22, 20, 20, 4))
    t2 = tok((1, 22, 20, 20, 4), dtype="float16")
    assert alloc.request(t2) is None
    alloc.alloc(t2, 1)
    assert (len(alloc.blocks), len(alloc.free_list)) == (2, 1)


def test_different_sizes_token_reuse():
    alloc = TokenAllocator2D()
    t1 = _released(alloc, (1, 22, 20, 20, 4))
    t2 = tok((1, 40, 30, 30, 4))
    req = alloc.request(t2)
    assert req is t2 and req.storage_id == 0
    assert req.ref_counter == 2  # a grown texture keeps one reference more
    assert alloc.blocks[0].x == 900 and alloc.blocks[0].y == 40
    assert req.size_2d() == (900, 40, 4)
    t2.ref_counter -= 1  # as the C++ test: tok2 and req are one token, decremented twice
    req.ref_counter -= 1
    alloc.check_for_release(t1)  # t1's storage id goes back on the free list
    t3 = tok((1, 25, 30, 30, 4))
    req2 = alloc.request(t3)
    assert req2 is t2 and req2.storage_id == 0 and req2.ref_counter == 1  # fits: reused as is
    assert req2.size_2d() == (900, 40, 4)


def test_different_sizes_token_reuse_2():
    alloc = TokenAllocator2D()
    _released(alloc, (1, 22, 20, 20, 4))
    t2 = tok((1, 5, 30, 20, 4))
    req = alloc.request(t2)
    assert req is t2 and req.storage_id == 0 and req.ref_counter == 2
    assert req.size_2d() == (600, 5, 4)  # the token's own size; the block grew to 600 x 22
    assert (alloc.blocks[0].x, alloc.blocks[0].y) == (600, 22)


def test_same_size_different_scopes_never_share():
    alloc = TokenAllocator2D()
    _released(alloc, (28, 676, 1, 1, 4), scope="global.texture-weight")
    t2 = tok((28, 676, 1, 1, 4), scope="global.texture-nhwc")
    assert alloc.request(t2) is None


def test_ratio_limit():
    alloc = TokenAllocator2D()
    _released(alloc, (1, 1, 10, 10, 4))  # 100 x 1
    assert alloc.request(tok((1, 1, 10, 60, 4))) is None  # 600 / 100 = 6 > 5


def test_texture_shape_conventions():
    assert texture_shape((1, 8, 40, 40, 4), "global.texture") == (40, 320, 4)
    assert texture_shape((28, 676, 1, 1, 4), "global.texture-weight") == (676, 28, 4)
    assert texture_shape((1, 40, 4), "global.texture-nhwc") == (40, 1, 4)
    with pytest.raises(GraphError, match="unknown texture scope"):
        texture_shape((1, 2, 3, 4), "global.texture-bad")


def test_graph_with_unknown_texture_scope_raises_naming_the_node():
    nodes = [{"kind": "input", "name": "x", "outputs": [((1, 8, 4, 4, 4), "float32")]},
             {"kind": "op", "name": "conv", "inputs": [(0, 0)], "outputs": [((1, 8, 4, 4, 4), "float32")]}]
    g = make_graph(nodes, [(1, 0)], scopes=["global", "global.texture-oops"])
    with pytest.raises(GraphError, match="node 1 'conv'.*unknown texture scope"):
        graph_plan_memory(g)


def test_texture_chain_reuses_and_grows():
    """Relay's rule in a graph: a smaller texture request reuses a free one as it is."""
    big, small = (1, 4, 8, 8, 4), (1, 2, 8, 8, 4)
    nodes = [{"kind": "input", "name": "x", "outputs": [(big, "float32")]},
             {"kind": "op", "name": "a", "inputs": [(0, 0)], "outputs": [(big, "float32")]},
             {"kind": "op", "name": "b", "inputs": [(1, 0)], "outputs": [(big, "float32")]},
             {"kind": "op", "name": "c", "inputs": [(2, 0)], "outputs": [(small, "float32")]}]
    scopes = ["global"] + ["global.texture"] * 3
    plan = graph_plan_memory(make_graph(nodes, [(3, 0)], scopes=scopes))
    assert plan.storage_id.tolist() == [0, 1, 2, 1]
    assert plan.texture_shapes[1] == (8, 32, 4)
    assert plan.texture_bytes == 2 * 8 * 32 * 4 * 4


_CXX = r"""
#include <unordered_set>
#include <cstdio>
int main() { std::unordered_set<long> s; char op; long k;
  while (std::scanf(" %c %ld", &op, &k) == 2) {
    if (op == 'i') s.insert(k); else if (op == 'e') s.erase(k);
    else { for (long x : s) std::printf("%ld ", x); std::printf("\n"); } } }
"""


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ (libstdc++) to compare against")
def test_unordered_set_order_matches_libstdcxx(tmp_path):
    src = tmp_path / "us.cc"
    src.write_text(_CXX)
    exe = tmp_path / "us"
    subprocess.run(["g++", "-O1", str(src), "-o", str(exe)], check=True)
    for seed in range(60):
        rng = random.Random(seed)
        s, ops, outs = StdUnorderedSet(), [], []
        top = rng.choice([8, 40, 300])
        for _ in range(rng.randint(1, 300)):
            k, r = rng.randrange(top), rng.random()
            if r < 0.6:
                s.insert(k)
                ops.append(f"i {k}")
            elif r < 0.9:
                s.erase(k)
                ops.append(f"e {k}")
            else:
                ops.append("p 0")
                outs.append(" ".join(map(str, s)))
        ops.append("p 0")
        outs.append(" ".join(map(str, s)))
        got = subprocess.run([str(exe)], input="\n".join(ops), capture_output=True, text=True, check=True)
        assert [line.strip() for line in got.stdout.splitlines()] == outs, f"seed {seed}"
