"""LowerForPlanning(fuse=True): the FuseOps grouping rules on small modules.

Each case lists the kernels ``main`` calls after fusion, in binding order (``R.reshape`` views
as ``view``), as TVM's FuseOps rules give them (worked out by hand in the comments); the
oracle test at the end runs TVM's own pipeline (LegalizeOps ... FuseTIR,
RewriteDataflowReshape) on the same text and expects the same list.
"""
from __future__ import annotations

import pytest

import memcore_py
from memcore_py.errors import PassError
from memcore_py.ir.expr import Call
from memcore_py.transform._fuse_partition import (K_BROADCAST, K_COMM_REDUCE, K_ELEM_WISE, K_INJECTIVE, K_OPAQUE,
                                                  K_OUT_EWISE_FUSABLE, ForwardGraph, partition)
from memcore_py.transform.fuse_for_planning import fuse_for_planning
from memcore_py.transform.lower_for_planning import LowerForPlanning, lower_for_planning
from _helpers import tvm_from_source

HEADER = """# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, 8), dtype="float32"), w: R.Tensor((8, 6), dtype="float32"),
             b: R.Tensor((6,), dtype="float32"), y: R.Tensor((4, 8), dtype="float32")):
        with R.dataflow():
"""


def module_text(body: str, ret: str) -> str:
    text = HEADER + "".join(f"            {ln.strip()}\n" for ln in body.strip().split("\n"))
    return text + f"            R.output({ret})\n        return {f'({ret})' if ',' in ret else ret}\n"


CASES = {
    # exp, add, relu: element-wise; each post-dominated by the next with an element-wise edge.
    "elementwise_chain": ("""
        a = R.exp(x)
        c = R.add(a, y)
        gv = R.nn.relu(c)
    """, "gv", ["fused_tir_exp_add_relu"], None),
    # matmul (kOutEWiseFusable) fuses into its element-wise post-dominator chain.
    "matmul_bias_relu": ("""
        a = R.matmul(x, w)
        c = R.add(a, b)
        gv = R.nn.relu(c)
    """, "gv", ["fused_matmul_add_relu"], None),
    # exp fuses into the reduction; a reduction never fuses into what follows.
    "reduction": ("""
        a = R.exp(x)
        s = R.sum(a, axis=[1], keepdims=True)
        gv = R.multiply(s, R.const(2.0, "float32"))
    """, "gv", ["fused_tir_exp_sum", "multiply"], None),
    # diamond: matmul's post-dominator is the add both branches meet in; all element-wise.
    "diamond": ("""
        a = R.matmul(x, w)
        r = R.nn.relu(a)
        e = R.exp(a)
        gv = R.add(r, e)
    """, "gv", ["fused_matmul_relu_tir_exp_add"], None),
    # diamond through a reduction: matmul cannot fuse (the path holds a kCommReduce); relu
    # fuses into the add; the add's group reads the sum, so the sum is emitted before it.
    "diamond_through_reduction": ("""
        a = R.matmul(x, w)
        r = R.nn.relu(a)
        s = R.sum(a, axis=[1], keepdims=True)
        gv = R.add(r, s)
    """, "gv", ["matmul", "sum", "fused_relu_add"], None),
    # max depth 2: exp1 joins exp2 (2 nodes); exp2 cannot bring exp3 (its group is 2 + 1);
    # exp3 joins exp4; exp5 is an output (no post-dominator).
    "max_depth": ("""
        a1 = R.exp(x)
        a2 = R.exp(a1)
        a3 = R.exp(a2)
        a4 = R.exp(a3)
        gv = R.exp(a4)
    """, "gv", ["fused_tir_exp_tir_exp", "fused_tir_exp_tir_exp", "tir_exp"], 2),
    # a reshape (kInjective) fuses both ways: add into it (phase 0), it into relu (phase 1).
    "reshape_inside_a_group": ("""
        a = R.add(x, y)
        r = R.reshape(a, R.shape([8, 4]))
        gv = R.nn.relu(r)
    """, "gv", ["fused_add_reshape_relu"], None),
    # a reshape left alone (softmax is not an injective sink) becomes a view after fusion.
    "reshape_alone_is_a_view": ("""
        a = R.matmul(x, w)
        r = R.reshape(a, R.shape([2, 12]))
        gv = R.nn.softmax(r, axis=-1)
    """, "gv", ["matmul", "view", "softmax"], None),
    # a reshape bound to an output variable keeps its kernel (RewriteDataflowReshape skips it).
    "reshape_output_keeps_kernel": ("""
        gv = R.reshape(x, R.shape([8, 4]))
    """, "gv", ["reshape"], None),
    # split and its TupleGetItems (kInjective) fuse into the add (phase 1).
    "split_items_fuse": ("""
        t = R.split(x, indices_or_sections=2, axis=1)
        t0 = t[0]
        t1 = t[1]
        gv = R.add(t0, t1)
    """, "gv", ["fused_split_add"], None),
    # two consumers that are outputs: the add has no post-dominator and stays alone.
    "no_post_dominator": ("""
        a = R.add(x, y)
        gv = R.exp(a)
        gv1 = R.nn.relu(a)
    """, "gv, gv1", ["add", "tir_exp", "relu"], None),
}


def kernels(mod) -> list:
    out = []
    for blk in mod["main"].body.blocks:
        for bd in blk.bindings:
            v = bd.value
            if type(v) is Call and v.op.name == "relax.call_tir":
                out.append(v.args[0].name)
            elif type(v) is Call and v.op.name == "relax.reshape":
                out.append("view")
    return out


@pytest.mark.parametrize("case", sorted(CASES))
def test_grouping(case):
    body, ret, expected, depth = CASES[case]
    mod = memcore_py.parse(module_text(body, ret))
    out = lower_for_planning(mod, fuse=True, **({"max_depth": depth} if depth else {}))
    assert kernels(out) == expected


def test_fused_kernel_signature_is_the_groups_inputs_and_outputs():
    out = lower_for_planning(memcore_py.parse(module_text(CASES["matmul_bias_relu"][0], "gv")), fuse=True)
    call = out["main"].body.blocks[0].bindings[0].value
    assert [a.name for a in call.args[1].fields] == ["x", "w", "b"]
    k = out["fused_matmul_add_relu"]
    assert [(p.dtype, tuple(d.value for d in p.shape)) for p in k.params] == [
        ("float32", (4, 8)), ("float32", (8, 6)), ("float32", (6,)), ("float32", (4, 6))]
    assert k.text is None and k.private


def test_unfused_kernels_are_removed_and_patterns_recorded():
    text = module_text(CASES["reduction"][0], "gv")
    out = lower_for_planning(memcore_py.parse(text), fuse=True)
    names = sorted(gv.name for gv in out.functions)
    assert names == ["fused_tir_exp_sum", "main", "multiply"]
    assert out["multiply"].attrs["op_pattern"] == K_ELEM_WISE
    unfused = lower_for_planning(memcore_py.parse(text))
    assert "op_pattern" not in unfused["sum"].attrs


def test_pass_wrapper_and_bad_inputs():
    text = module_text(CASES["elementwise_chain"][0], "gv")
    assert kernels(LowerForPlanning(fuse=True)(memcore_py.parse(text))) == ["fused_tir_exp_add_relu"]
    assert repr(LowerForPlanning(fuse=True)) == "LowerForPlanning(fuse=True)"
    with pytest.raises(PassError, match="max_depth"):
        lower_for_planning(memcore_py.parse(text), fuse=True, max_depth=0)
    with pytest.raises(PassError, match="IRModule"):
        fuse_for_planning("main")


def test_unknown_op_pattern_is_an_error():
    # pixel_shuffle: TVM 0.27's LegalizeOps cannot legalize it (topi.nn has no pixel_shuffle)
    text = HEADER.replace('x: R.Tensor((4, 8), dtype="float32")', 'x: R.Tensor((1, 4, 8, 8), dtype="float32")')
    text += "            gv = R.nn.pixel_shuffle(x, upscale_factor=2)\n            R.output(gv)\n        return gv\n"
    with pytest.raises(PassError, match="no FuseOps op pattern.*relax.nn.pixel_shuffle"):
        lower_for_planning(memcore_py.parse(text), fuse=True)
    assert kernels(lower_for_planning(memcore_py.parse(text))) == ["pixel_shuffle"]  # unfused: no pattern needed


# -- the partition alone, on hand-built graphs -------------------------------------------------

def _graph(patterns, edges, extern=()):
    g = ForwardGraph()
    for i, p in enumerate(patterns):
        g.add_node(p, i in extern)
    for s, d in edges:
        g.add_edge(s, d, patterns[d])
    return g


def test_partition_of_a_chain_and_of_an_opaque_break():
    # 0 (param, opaque, extern) -> 1 elemwise -> 2 broadcast -> 3 injective -> 4 output
    g = _graph([K_OPAQUE, K_ELEM_WISE, K_BROADCAST, K_INJECTIVE, K_ELEM_WISE], [(0, 1), (1, 2), (2, 3), (3, 4)],
               extern={0, 4})
    root = partition(g)
    assert root[1] == root[2] == root[3] == root[4] != root[0]
    # an opaque node in the middle splits the chain
    g = _graph([K_OPAQUE, K_ELEM_WISE, K_OPAQUE, K_ELEM_WISE, K_ELEM_WISE], [(0, 1), (1, 2), (2, 3), (3, 4)],
               extern={0, 4})
    root = partition(g)
    assert len({root[1], root[2]}) == 2 and root[3] == root[4] and root[1] != root[3]


def test_partition_out_ewise_needs_an_elementwise_post_dominator():
    # conv (4) -> reduce (3): the conv's dominator pattern is kCommReduce, no fusion
    g = _graph([K_OPAQUE, K_OUT_EWISE_FUSABLE, K_COMM_REDUCE, K_ELEM_WISE], [(0, 1), (1, 2), (2, 3)], extern={0, 3})
    root = partition(g)
    assert len({root[1], root[2], root[3]}) == 3
    # conv (4) -> add (0) -> relu (0): one group, its pattern the anchor's
    g = _graph([K_OPAQUE, K_OUT_EWISE_FUSABLE, K_ELEM_WISE, K_ELEM_WISE], [(0, 1), (1, 2), (2, 3)], extern={0, 3})
    root = partition(g)
    assert root[1] == root[2] == root[3]


def test_partition_max_depth():
    n = 7
    g = _graph([K_OPAQUE] + [K_ELEM_WISE] * n, [(i, i + 1) for i in range(n)], extern={0, n})
    assert len(set(partition(g)[1:])) == 1
    sizes = {}
    for r in partition(g, max_depth=3)[1:]:
        sizes[r] = sizes.get(r, 0) + 1
    assert max(sizes.values()) <= 3 and sum(sizes.values()) == n


# -- the same cases through TVM --------------------------------------------------------------

@pytest.mark.oracle
@pytest.mark.parametrize("case", sorted(CASES))
def test_grouping_is_tvms(case):
    tvm = pytest.importorskip("tvm")
    from tvm import relax

    body, ret, expected, depth = CASES[case]
    t = relax.transform
    seq = tvm.transform.Sequential([t.LegalizeOps(), t.AnnotateTIROpPattern(), t.FoldConstant(), t.FuseOps(),
                                    t.FuseTIR(), t.RewriteDataflowReshape()])
    config = {"relax.FuseOps.max_depth": depth} if depth else {}
    with tvm.transform.PassContext(opt_level=2, config=config):
        out = seq(tvm_from_source(module_text(body, ret)))
    names = []
    for blk in out["main"].body.blocks:
        for bd in blk.bindings:
            v = bd.value
            if isinstance(v, relax.Call) and isinstance(v.op, tvm.ir.Op):
                if v.op.name == "relax.call_tir":
                    names.append(v.args[0].name_hint)
                elif v.op.name == "relax.reshape":
                    names.append("view")
    assert names == expected
