"""Oracle: memcore's passes as TVM passes (memcore_py.tvm) on ``tvm.IRModule`` objects.

1. Each native pass gives the module memcore's own pass gives through text
   (``from_tvm(native(m)) == memcore_pass(parse(m.script()))``), and in TVM mode the module
   TVM's own pass gives (``tvm.ir.assert_structural_equal``), on the shipped real models and
   on random lowered programs (where memcore's documented fixes, DIFFERENCES.md, do not apply).
2. ``tvm.compile(mod, target="llvm", relax_pipeline=memcore_py.tvm.pipeline("llvm", mode))``
   builds a torch-free model with real PrimFunc bodies (LegalizeOps of matmul/add/relu),
   and TVM's VM runs it with outputs equal to TVM's default pipeline; arena mode plans fewer
   bytes than TVM's StaticPlanBlockMemory on it.
"""
from __future__ import annotations

import numpy as np
import pytest

tvm = pytest.importorskip("tvm")
from tvm import relax  # noqa: E402

import memcore_py.tvm as mtvm  # noqa: E402
from memcore_py import parse  # noqa: E402
from memcore_py import transform as mc  # noqa: E402
from memcore_py.examples.models import list_models, model_text  # noqa: E402
from memcore_py.ir import Call, IRModule, assert_structural_equal  # noqa: E402
from memcore_py.testing import random_lowered_module  # noqa: E402
from memcore_py.testing.inplace_programs import random_inplace_program  # noqa: E402
from memcore_py.testing.layout_free_programs import random_layout_free_program  # noqa: E402
from memcore_py.testing.memory_programs import random_memory_module  # noqa: E402
from memcore_py.transform.static_plan_block_memory import differences_from_tvm  # noqa: E402
from _helpers import tvm_from_source  # noqa: E402

pytestmark = pytest.mark.oracle

TVM_SPBM = relax.transform.StaticPlanBlockMemory
TVM_LOWER = relax.transform.LowerAllocTensor
TVM_KILL = relax.transform.KillAfterLastUse


@pytest.fixture(scope="module")
def models():
    return {name: tvm_from_source(model_text(name)) for name in list_models()}


def same_as_memcore(native_out, memcore_pass, m):
    """The native pass's output, read back, equals memcore's pass on memcore's reading of
    TVM's text of the input, its functions in the input's order (TVM's text sorts them; a pass
    that names new functions visits them in the module's order, as TVM's passes do)."""
    read = parse(m.script())
    ordered = IRModule({read.get_global_var(gv.name_hint): read[gv.name_hint] for gv in m.functions}, read.attrs,
                       read.global_infos)
    assert_structural_equal(mtvm.from_tvm(native_out), memcore_pass(ordered))


# ------------------------------------------------------------------------------ real models
@pytest.mark.parametrize("name", list_models())
def test_static_plan_block_memory_tvm_mode_equals_tvm(models, name):
    m = models[name]
    out = mtvm.StaticPlanBlockMemory()(m)
    tvm.ir.assert_structural_equal(out, TVM_SPBM()(m))
    same_as_memcore(out, mc.StaticPlanBlockMemory(), m)


@pytest.mark.parametrize("name", list_models())
def test_static_plan_block_memory_arena_equals_memcore(models, name):
    m = models[name]
    out = mtvm.StaticPlanBlockMemory(mode="arena")(m)
    same_as_memcore(out, mc.StaticPlanBlockMemory(mode="arena"), m)


@pytest.mark.parametrize("name", list_models())
def test_lower_alloc_tensor_equals_tvm(models, name):
    planned = TVM_SPBM()(models[name])
    out = mtvm.LowerAllocTensor()(planned)
    tvm.ir.assert_structural_equal(out, TVM_LOWER()(planned))
    same_as_memcore(out, mc.LowerAllocTensor(), planned)


@pytest.mark.parametrize("name", list_models())
def test_kill_after_last_use_equals_tvm(models, name):
    lowered = TVM_LOWER()(TVM_SPBM()(models[name]))
    out = mtvm.KillAfterLastUse(tvm_scoping=True)(lowered)
    tvm.ir.assert_structural_equal(out, TVM_KILL()(lowered))
    same_as_memcore(mtvm.KillAfterLastUse()(lowered), mc.KillAfterLastUse(), lowered)


def test_native_passes_compose_like_tvm(models):
    m = models["llama_small"]
    ours = tvm.transform.Sequential([mtvm.StaticPlanBlockMemory(), mtvm.LowerAllocTensor(),
                                     mtvm.KillAfterLastUse(tvm_scoping=True)])(m)
    theirs = tvm.transform.Sequential([TVM_SPBM(), TVM_LOWER(), TVM_KILL()])(m)
    tvm.ir.assert_structural_equal(ours, theirs)


def test_module_changed_in_place_between_passes_is_read_again(models):
    """The hand-over between consecutive native passes must not use a stale memcore form
    when the user replaced a function of the written module in place."""
    m = models["resnet50"]
    planned = mtvm.StaticPlanBlockMemory()(m)
    gv = planned.get_global_var("main")
    planned[gv] = m["main"]  # in place: same module object, the unplanned function back
    out = mtvm.LowerAllocTensor()(planned)
    tvm.ir.assert_structural_equal(out, TVM_LOWER()(planned))


def test_prim_funcs_pass_through_untouched(models):
    m = models["resnet50"]
    out = mtvm.StaticPlanBlockMemory(mode="arena")(m)
    for gv, f in m.functions.items():
        if isinstance(f, tvm.tirx.PrimFunc):
            assert out[gv.name_hint].same_as(f)


# ------------------------------------------------------------------------------ random programs
def _random(seed):
    mod = random_lowered_module(seed, 20 + (seed * 11) % 60) if seed % 2 else random_memory_module(seed)
    return mod, tvm_from_source(mod.script())


@pytest.mark.parametrize("seed", range(40))
def test_random_static_plan_block_memory(seed):
    mod, m = _random(seed)
    for mode in ("tvm", "arena"):
        out = mtvm.StaticPlanBlockMemory(mode=mode)(m)
        same_as_memcore(out, mc.StaticPlanBlockMemory(mode=mode), m)
    if not differences_from_tvm(mod):
        tvm.ir.assert_structural_equal(mtvm.StaticPlanBlockMemory()(m), TVM_SPBM()(m))


@pytest.mark.parametrize("seed", range(20))
def test_random_lower_and_kill(seed):
    _, m = _random(seed)
    planned = mtvm.StaticPlanBlockMemory()(m)  # (TVM's own pass fails an internal check on some)
    lowered = mtvm.LowerAllocTensor()(planned)
    tvm.ir.assert_structural_equal(lowered, TVM_LOWER()(planned))
    same_as_memcore(mtvm.KillAfterLastUse()(lowered), mc.KillAfterLastUse(), lowered)


# ------------------------------------------------------------------------------ VM execution
WIDTHS = (8, 128, 64, 32, 16, 256, 8)  # uneven: TVM plans 8448 bytes, the arena 8192
BATCH = 4


def mlp_module():
    """A torch-free MLP of uneven widths in high-level Relax (matmul, add, relu)."""
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((BATCH, WIDTHS[0]), "float32"))
    ws = [relax.Var(f"w{i}", relax.TensorType((a, b), "float32")) for i, (a, b) in enumerate(zip(WIDTHS, WIDTHS[1:]))]
    bs = [relax.Var(f"b{i}", relax.TensorType((b,), "float32")) for i, b in enumerate(WIDTHS[1:])]
    with bb.function("main", [x, *ws, *bs]):
        with bb.dataflow():
            h = x
            for w, b in zip(ws, bs):
                h = bb.emit(relax.op.nn.relu(relax.op.add(relax.op.matmul(h, w), b)))
            out = bb.emit_output(h)
        bb.emit_func_output(out)
    return bb.get()


def mlp_inputs():
    rng = np.random.default_rng(7)
    arrays = [rng.standard_normal((BATCH, WIDTHS[0])).astype("float32")]
    arrays += [(rng.standard_normal((a, b)) / np.sqrt(a)).astype("float32") for a, b in zip(WIDTHS, WIDTHS[1:])]
    arrays += [rng.standard_normal((b,)).astype("float32") for b in WIDTHS[1:]]
    return arrays


def run_on_vm(mod, relax_pipeline):
    ex = tvm.compile(mod, target="llvm", relax_pipeline=relax_pipeline)
    vm = relax.VirtualMachine(ex, tvm.cpu())
    return vm["main"](*[tvm.runtime.tensor(a) for a in mlp_inputs()]).numpy()


@pytest.mark.parametrize("mode", ["tvm", "arena"])
def test_compiled_with_memcore_pipeline_runs_like_tvm(mode):
    mod = mlp_module()
    want = run_on_vm(mod, "default")
    got = run_on_vm(mod, mtvm.pipeline("llvm", mode=mode))
    assert got.shape == (BATCH, WIDTHS[-1])
    np.testing.assert_array_equal(got, want)


def planned_bytes(tvm_mod) -> int:
    """Sum of the constant sizes of ``R.memory.alloc_storage`` in ``main``."""
    total = 0
    for block in mtvm.from_tvm(tvm_mod)["main"].body.blocks:
        for b in block.bindings:
            v = b.value
            if type(v) is Call and getattr(v.op, "name", "") == "relax.memory.alloc_storage":
                total += v.args[0].values[0].value
    return total


def test_arena_pipeline_plans_fewer_bytes_than_tvm():
    before_planning = tvm.transform.Sequential([
        relax.transform.LegalizeOps(), relax.transform.RewriteDataflowReshape(), relax.transform.ToNonDataflow(),
        relax.transform.RemovePurityChecking(), relax.transform.CallTIRRewrite(),
    ])(mlp_module())
    tvm_bytes = planned_bytes(TVM_SPBM()(before_planning))
    arena_bytes = planned_bytes(mtvm.StaticPlanBlockMemory(mode="arena")(before_planning))
    assert 0 < arena_bytes < tvm_bytes, (arena_bytes, tvm_bytes)


def test_pipeline_refuses_a_bad_mode_when_built():
    from memcore_py import PassError

    with pytest.raises(PassError, match="mode must be one of"):
        mtvm.pipeline("llvm", mode="best")


def test_pipeline_for_a_gpu_target_swaps_the_same_passes():
    """TVM 0.27's CUDA backend has no dataflow_lower_passes; like tvm.compile, the default
    build pipeline is used, with memcore's three passes in it (checked by running its
    memory passes' part on a module that needs no GPU: the pass names are what is swapped)."""
    from memcore_py.tvm.passes import SWAPPED, _default_build_passes, _swap
    from memcore_py.tvm._api import tvm_api

    swapped = [p.info.name for p in _swap(_default_build_passes(tvm_api()), "arena", {})]
    assert [n for n in swapped if n.startswith("memcore.")] == [f"memcore.{n}" for n in SWAPPED]
    assert not set(SWAPPED) & set(swapped)
    assert mtvm.pipeline("cuda", mode="arena").info.name == "memcore.pipeline[arena]"


# ------------------------------------------------------------------------------ the other two passes
@pytest.mark.parametrize("seed", range(10))
def test_random_dataflow_use_inplace_calls(seed):
    """New in-place PrimFuncs are memcore-made (built as TVM objects from their kernels); the
    rest of the module is written back by reuse."""
    m = tvm_from_source(random_inplace_program(seed))
    same_as_memcore(mtvm.DataflowUseInplaceCalls()(m), mc.DataflowUseInplaceCalls(), m)


_NOTHING_IN_PLACE = """
# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, 8), "float32"), c: R.Tensor((), "bool")) -> R.Tensor((4, 8), "float32"):
        n = R.add(x, x)
        with R.dataflow():
            y = R.exp(x)
            z = R.add(x, y) if {in_block} else R.nn.softmax(y)
            R.output(z)
        if c:
            with R.dataflow():
                u = R.exp(z)
                w = {branch_call}
                R.output(w)
            r = w
        else:
            r = z
        return r
"""


@pytest.mark.parametrize("case", ["outside-dataflow", "in-block", "in-branch-block"])
def test_dataflow_use_inplace_calls_returns_a_module_with_nothing_to_rewrite_as_it_is(case):
    """A module whose calls of in-place ops are all outside dataflow blocks is its own result,
    found without conversion (the same object); one with such a call in a dataflow block (the
    body's, or a block in an If branch) is rewritten, as by TVM. TVM's output is the reference
    in every case."""
    in_block = "True" if case == "in-block" else "False"
    branch_call = "R.multiply(u, u)" if case == "in-branch-block" else "R.exp(u)"
    text = _NOTHING_IN_PLACE.format(in_block=in_block, branch_call=branch_call)
    text = text.replace("R.add(x, y) if True else R.nn.softmax(y)", "R.add(x, y)")
    text = text.replace("R.add(x, y) if False else R.nn.softmax(y)", "R.nn.softmax(y)")
    m = tvm_from_source(text)
    want = relax.transform.DataflowUseInplaceCalls()(m)
    got = mtvm.DataflowUseInplaceCalls(tvm_compat=True)(m)
    tvm.ir.assert_structural_equal(got, want)
    rewritten = "call_tir_inplace" in want.script()
    assert rewritten == (case in ("in-block", "in-branch-block"))
    assert got.same_as(m) == (not rewritten)


@pytest.mark.parametrize("seed", list(range(10)) + [216600545])
def test_random_attach_attr_layout_free_buffers(seed):
    """The native pass on random programs (dead bindings included: the full conversion runs)
    gives memcore's pass on the same text, and in ``tvm_compat`` mode TVM's module: the copies
    named in the module's function order, as TVM visits it (seed 216600545: the copies of
    ``add`` were named in the printed order, ``add1`` <-> ``add2``, issue 32's F2)."""
    m = tvm_from_source(random_layout_free_program(seed))
    same_as_memcore(mtvm.AttachAttrLayoutFreeBuffers()(m), mc.AttachAttrLayoutFreeBuffers(), m)
    _functions_equal(mtvm.AttachAttrLayoutFreeBuffers(tvm_compat=True)(m), relax.transform.AttachAttrLayoutFreeBuffers()(m))


_INDIRECT_PRIM_FUNC = """
# from tvm.script import ir as I
# from tvm.script import relax as R
# from tvm.script import tirx as T

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((16, 16), "float32"), w: R.Tensor((16, 16), "float32")) -> R.Tensor((16, 16), "float32"):
        R.func_attr({"num_input": 1})
        cls = Module
        gv0 = R.call_tir(cls.tir_add_tensors, (x, w), out_ty=R.Tensor((16, 16), "float32"))
        gv1 = R.call_tir(cls.tir_add_tensors2, (x, w), out_ty=R.Tensor((16, 16), "float32"))
        return gv1

{tensors}
    @T.prim_func(private=True, s_tir=True)
    def tir_add_float32(x: T.float32, y: T.float32) -> T.float32:
        return x + y
"""
#: one PrimFunc calling another, written twice under two names (two equal callees)
_CALLS_ANOTHER = """
    @T.prim_func(private=True, s_tir=True)
    def {name}(x: T.Buffer((16, 16), "float32"), y: T.Buffer((16, 16), "float32"), z: T.Buffer((16, 16), "float32")):
        for i, j in T.grid(16, 16):
            with T.sblock("add"):
                vi, vj = T.axis.remap("SS", [i, j])
                z[vi, vj] = Module.tir_add_float32(x[vi, vj], y[vi, vj])
"""
_INDIRECT_PRIM_FUNC = _INDIRECT_PRIM_FUNC.replace(
    "{tensors}", "".join(_CALLS_ANOTHER.format(name=n) for n in ("tir_add_tensors", "tir_add_tensors2")))


def test_attach_attr_layout_free_buffers_keeps_what_a_copy_calls_and_shares_equal_copies():
    """The copies' DeadCodeElimination keeps a PrimFunc that only another PrimFunc calls, and
    two equal callees get one copy, as TVM does (the native pass answers both from TVM's
    objects, the pure pass from the text)."""
    m = tvm_from_source(_INDIRECT_PRIM_FUNC)
    want = relax.transform.AttachAttrLayoutFreeBuffers()(m)
    got = mtvm.AttachAttrLayoutFreeBuffers(tvm_compat=True)(m)
    tvm.ir.assert_structural_equal(got, want)
    names = sorted(gv.name_hint for gv in got.functions)
    assert "tir_add_float32" in names and len(names) == 3, names
    # the pure pass on TVM's text (which spells the TIR call Module.tir_add_float32) keeps it too
    pure = mc.AttachAttrLayoutFreeBuffers(tvm_compat=True)(parse(m.script()))
    assert sorted(gv.name for gv in pure.functions) == names
    # from_tvm writes the TIR call as the module's text does
    assert_structural_equal(mtvm.from_tvm(m), parse(m.script()))
    same_as_memcore(got, mc.AttachAttrLayoutFreeBuffers(tvm_compat=True), m)


def _functions_equal(got, want):
    """The two modules define the same names, each function structurally equal (GlobalVars
    matched by name: TVM shares variables between copies of one function across functions,
    so a whole-module comparison would trip on TVM's sharing, not on the pass)."""
    assert sorted(gv.name_hint for gv in got.functions) == sorted(gv.name_hint for gv in want.functions)
    for gv in want.functions:
        tvm.ir.assert_structural_equal(got[gv.name_hint], want[gv.name_hint], map_free_vars=True)


def _attach_extracted(m):
    from memcore_py.tvm._api import tvm_api
    from memcore_py.tvm.attach_extract import attach_attr_extracted

    return attach_attr_extracted(tvm_api(), m, keep_tir_vars=False)


def test_attach_attr_on_tvm_objects_equals_tvm_on_random_programs():
    """AttachAttrLayoutFreeBuffers on TVM's objects (no conversion) gives TVM's module on 150
    random programs, dead bindings and unreachable functions included (its DeadCodeElimination
    stage drops them on TVM's objects too): which call site gets which copy, the copies' names
    in TVM's function order, copies shared with the module's attributed functions, what
    DeadCodeElimination keeps. Then the pass again on its own output (every PrimFunc
    attributed) gives TVM's second run."""
    n_dropped = 0
    for seed in range(150):
        m = tvm_from_source(random_layout_free_program(seed))
        got = _attach_extracted(m)
        assert got is not None, f"seed {seed}: the native pass declined"
        want = relax.transform.AttachAttrLayoutFreeBuffers()(m)
        _functions_equal(got, want)
        _functions_equal(mtvm.AttachAttrLayoutFreeBuffers(tvm_compat=True)(m), want)
        n_dropped += _n_bindings(want) < _n_bindings(m)
        if seed % 5 == 0:
            again = _attach_extracted(got)
            assert again is not None
            _functions_equal(again, relax.transform.AttachAttrLayoutFreeBuffers()(want))
    assert n_dropped > 50, f"only {n_dropped} of 150 programs had a binding for DeadCodeElimination to drop"


def _n_bindings(mod) -> int:
    """The bindings of a module's Relax functions, If branches included."""
    def in_seq(seq):
        n = 0
        for block in seq.blocks:
            for b in block.bindings:
                n += 1
                if isinstance(b.value, relax.If):
                    n += in_seq(b.value.true_branch) + in_seq(b.value.false_branch)
        return n

    return sum(in_seq(f.body) for f in mod.functions.values() if isinstance(f, relax.Function))


def test_attach_attr_on_tvm_objects_finds_equal_copies_by_hash_in_large_groups(monkeypatch):
    """Beyond ``PAIRWISE_LIMIT`` copies of one positions tuple, an original is compared only
    with those of equal structural hash: with the limit at 0 every search takes that path; two
    equal callees still get one copy, and random programs TVM's module."""
    from memcore_py.tvm import attach_extract

    monkeypatch.setattr(attach_extract, "PAIRWISE_LIMIT", 0)
    both_live = _INDIRECT_PRIM_FUNC.replace(
        ' -> R.Tensor((16, 16), "float32"):\n        R.func_attr', ':\n        R.func_attr').replace(
        "return gv1", "return (gv0, gv1)")
    assert both_live != _INDIRECT_PRIM_FUNC
    m = tvm_from_source(both_live)
    got = _attach_extracted(m)  # no dead binding: the native pass itself
    assert got is not None
    _functions_equal(got, relax.transform.AttachAttrLayoutFreeBuffers()(m))
    assert len(got.functions) == 3, sorted(gv.name_hint for gv in got.functions)  # one shared copy
    dce = relax.transform.DeadCodeElimination()
    for seed in range(20):
        m = dce(tvm_from_source(random_layout_free_program(seed)))
        got = _attach_extracted(m)
        assert got is not None, f"seed {seed}: the native pass declined"
        _functions_equal(got, relax.transform.AttachAttrLayoutFreeBuffers()(m))


_ATTACH_IN_BRANCHES = """
# from tvm.script import ir as I
# from tvm.script import relax as R
# from tvm.script import tirx as T

@I.ir_module
class Module:
{kernels}
    @R.function
    def main(c: R.Tensor((), "bool"), x: R.Tensor((8, 8), "float32"), w: R.Tensor((8, 8), "float32")) -> R.Tensor((8, 8), "float32"):
        R.func_attr({{"num_input": 2}})
        cls = Module
        y = R.call_tir(cls.add, (x, w), out_ty=R.Tensor((8, 8), "float32"))
        if c:
            with R.dataflow():
                a = R.call_tir(cls.mul, (y, w), out_ty=R.Tensor((8, 8), "float32"))
                b = R.call_tir(cls.add, (a, x), out_ty=R.Tensor((8, 8), "float32"))
                R.output(b)
            r = b
        else:
            k = R.call_tir(cls.add, (w, x), out_ty=R.Tensor((8, 8), "float32"))
            r = k
        z = R.call_tir(cls.mul, (r, x), out_ty=R.Tensor((8, 8), "float32"))
        return z
"""
_KERNEL = """
    @T.prim_func(private=True, s_tir=True)
    def {name}(A: T.Buffer((T.int64(8), T.int64(8)), "float32"), B: T.Buffer((T.int64(8), T.int64(8)), "float32"), C: T.Buffer((T.int64(8), T.int64(8)), "float32")):
        for i, j in T.grid(T.int64(8), T.int64(8)):
            with T.sblock("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = A[vi, vj] {op} B[vi, vj]
"""


def test_attach_attr_on_tvm_objects_rewrites_calls_in_if_branches():
    """``call_tir`` bindings in both branches of an ``If`` (one in a dataflow block) and around
    it are rewritten on TVM's objects, the copies named in TVM's visit order; the output
    equals TVM's, and compiles."""
    text = _ATTACH_IN_BRANCHES.format(kernels="".join(_KERNEL.format(name=n, op=o) for n, o in (("add", "+"),
                                                                                              ("mul", "*"))))
    m = tvm_from_source(text)
    got = _attach_extracted(m)
    assert got is not None
    want = relax.transform.AttachAttrLayoutFreeBuffers()(m)
    tvm.ir.assert_structural_equal(got, want)
    assert sorted(gv.name_hint for gv in got.functions) == ["add1", "add2", "add3", "main", "mul1", "mul2"]
    tvm.compile(got, target="llvm")


_DEAD_IN_SCOPES = """
# from tvm.script import ir as I
# from tvm.script import relax as R
# from tvm.script import tirx as T

@I.ir_module
class Module:
{kernels}
    @R.function(private=True, pure=False)
    def side(y: R.Tensor((8, 8), "float32")) -> R.Tensor((8, 8), "float32"):
        return y

    @R.function(pure=False)
    def main(c: R.Tensor((), "bool"), x: R.Tensor((8, 8), "float32"), w: R.Tensor((8, 8), "float32")) -> R.Tensor((8, 8), "float32"):
        R.func_attr({{"num_input": 2}})
        cls = Module
        with R.dataflow():
            y = R.call_tir(cls.add, (x, w), out_ty=R.Tensor((8, 8), "float32"))
            R.output(y)
        unused = R.call_tir(cls.mul, (x, w), out_ty=R.Tensor((8, 8), "float32"))
        with R.dataflow():
            y2 = R.call_tir(cls.mul, (y, x), out_ty=R.Tensor((8, 8), "float32"))
            R.output(y2)
        if c:
            with R.dataflow():
                dead = R.call_tir(cls.mul, (y2, w), out_ty=R.Tensor((8, 8), "float32"))
                R.output(dead)
            kept = R.call_tir(cls.add, (y2, w), out_ty=R.Tensor((8, 8), "float32"))
            r = kept
        else:
            p = cls.side(y2)
            q = R.call_tir(cls.add, (w, w), out_ty=R.Tensor((8, 8), "float32"))
            r = y2
        gone = R.add(r, r)
        packed = R.call_packed("memcore_test_packed", r, sinfo_args=R.Tensor((8, 8), "float32"))
        z = R.call_tir(cls.mul, (r, x), out_ty=R.Tensor((8, 8), "float32"))
        return z
"""


def test_attach_attr_on_tvm_objects_drops_dead_bindings_and_normalizes_blocks():
    """DeadCodeElimination's stage on TVM's objects: bindings nothing reads go, in the body and
    in ``If`` branches (an impure call stays: of an impure function, a packed function); a block they empty goes, and the two dataflow
    blocks it separated become one, as TVM's normalizer leaves them; a copy only a dead
    binding called is not in the module. The output equals TVM's, and compiles."""
    text = _DEAD_IN_SCOPES.format(kernels="".join(_KERNEL.format(name=n, op=o) for n, o in (("add", "+"),
                                                                                           ("mul", "*"))))
    m = tvm_from_source(text)
    got = _attach_extracted(m)
    assert got is not None, "the native pass declined"
    want = relax.transform.AttachAttrLayoutFreeBuffers()(m)
    tvm.ir.assert_structural_equal(got, want)
    body = got["main"].body
    assert [type(b).__name__ for b in body.blocks] == ["DataflowBlock", "BindingBlock"]
    assert [b.var.name for b in body.blocks[0].bindings] == ["y", "y2"]
    then_branch, else_branch = body.blocks[1].bindings[0].value.true_branch, body.blocks[1].bindings[0].value.false_branch
    assert [b.var.name for blk in then_branch.blocks for b in blk.bindings] == ["kept"]
    assert [b.var.name for blk in else_branch.blocks for b in blk.bindings] == ["p"]
    script = got["main"].script()
    assert "gone" not in script and 'R.call_packed("memcore_test_packed"' in script  # a packed call is impure: kept
    tvm.compile(got, target="llvm")


def test_attach_attr_on_a_module_not_normalized_equals_tvm():
    """A module built with TVM's node constructors and not normalized (its calls and body
    untyped, one binding dead): TVM's pass types what it rebuilds, so memcore's output must
    be typed as TVM's, not carry the old calls' missing types (the native pass leaves such
    a function to the portable path, which infers them)."""
    text = _DEAD_IN_SCOPES.format(kernels="".join(_KERNEL.format(name=n, op=o) for n, o in (("add", "+"),
                                                                                           ("mul", "*"))))
    template = tvm_from_source(text)
    main = template["main"]
    c, x, w = main.params
    add, mul = template.get_global_var("add"), template.get_global_var("mul")
    proto = main.body.blocks[0].bindings[0].value  # y = R.call_tir(cls.add, (x, w), ...)
    y = relax.Var("y", proto.ty)  # the dataflow block's output
    dead = relax.DataflowVar("dead", proto.ty)
    z = relax.Var("z", proto.ty)
    bindings = [relax.VarBinding(y, relax.Call(proto.op, [add, relax.Tuple([x, w])], proto.attrs, proto.ty_args)),
                relax.VarBinding(dead, relax.Call(proto.op, [mul, relax.Tuple([y, w])], proto.attrs, proto.ty_args)),
                relax.VarBinding(z, relax.Call(proto.op, [mul, relax.Tuple([y, x])], proto.attrs, proto.ty_args))]
    body = relax.SeqExpr([relax.DataflowBlock(bindings[:2]), relax.BindingBlock(bindings[2:])], z)
    funcs = {g: f for g, f in template.functions.items() if g.name_hint not in ("main", "side")}
    funcs[template.get_global_var("main")] = relax.Function(main.params, body, main.ret_ty, main.is_pure, main.attrs)
    m = tvm.IRModule(funcs)
    assert bindings[0].value.ty is None or bindings[0].value.ty.is_missing()
    _functions_equal(mtvm.AttachAttrLayoutFreeBuffers(tvm_compat=True)(m), relax.transform.AttachAttrLayoutFreeBuffers()(m))


def test_module_functions_read_in_tvms_iteration_order():
    """The compiled reader lists a module's functions in the order TVM iterates them (the
    order TVM's passes visit and name in), for the small and the dense map layouts."""
    from memcore_py.tvm import _ffi_reader, compat
    from memcore_py.tvm._api import tvm_api

    api = tvm_api()
    layout = compat.fast_layout(api)
    f = tvm_from_source(_ATTACH_IN_BRANCHES.format(kernels=_KERNEL.format(name="add", op="+")
                                                          + _KERNEL.format(name="mul", op="*")))["main"]
    for n in (2, 4, 5, 17, 70):
        names = [f"fn{(i * 37) % 101}" for i in range(n)]  # neither sorted nor hash-ordered
        mod = tvm.IRModule({name: f for name in names})
        got = [e.name for e in _ffi_reader.module_functions(layout, mod.__chandle__())]
        assert got == [gv.name_hint for gv in mod.functions]


def test_pipeline_follows_tvms_own_default_pipeline(monkeypatch):
    """The CPU pipeline is TVM's ``default_build_pipeline`` as TVM defines it when called (here
    with a pass added and one removed), memcore's passes in place of TVM's three."""
    from memcore_py.tvm._api import tvm_api
    from memcore_py.tvm.passes import _default_build_passes

    t = relax.transform

    def changed_pipeline():
        @tvm.transform.module_pass(opt_level=0)
        def _pipeline(mod, _ctx):
            return tvm.transform.Sequential([
                t.LegalizeOps(), t.ToNonDataflow(), t.RemovePurityChecking(), t.CallTIRRewrite(),
                t.DeadCodeElimination(), t.StaticPlanBlockMemory(), t.LowerAllocTensor(), t.KillAfterLastUse(),
                t.VMShapeLower(),
            ])(mod)
        return _pipeline

    monkeypatch.setattr(relax.pipeline, "default_build_pipeline", changed_pipeline)
    names = [p.info.name for p in _default_build_passes(tvm_api())]
    assert names == ["LegalizeOps", "ToNonDataflow", "RemovePurityChecking", "CallTIRRewrite", "DeadCodeElimination",
                     "StaticPlanBlockMemory", "LowerAllocTensor", "KillAfterLastUse", "VMShapeLower"]


def test_pipeline_refuses_a_tvm_pass_it_cannot_make(monkeypatch):
    from memcore_py import PassError
    from memcore_py.tvm._api import tvm_api
    from memcore_py.tvm.passes import _default_build_passes

    def odd_pipeline():
        @tvm.transform.module_pass(opt_level=0, name="_pipeline")
        def _pipeline(mod, _ctx):
            @tvm.transform.module_pass(opt_level=0, name="VendorPass")
            def vendor(m, _c):
                return m
            return tvm.transform.Sequential([vendor])(mod)
        return _pipeline

    monkeypatch.setattr(relax.pipeline, "default_build_pipeline", odd_pipeline)
    with pytest.raises(PassError, match="'VendorPass'"):
        _default_build_passes(tvm_api())
