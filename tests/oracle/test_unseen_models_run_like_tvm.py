"""Oracle: on models none of memcore's tests or shipped texts were written for (the bridge
bench's unseen workloads, ``bench/_unseen_models.py``: a ``torch.cond`` model with a dynamic
batch, a convnet with symbolic H and W, a cross-attention block with three symbolic dims;
random weights), each of memcore's five native passes, put where TVM's pipeline runs TVM's,
gives a module that ``tvm.compile`` builds and TVM's VM runs to exactly TVM's own outputs
(bit for bit, at the exported shape and at another one):

- StaticPlanBlockMemory (TVM mode and arena mode), LowerAllocTensor and KillAfterLastUse:
  ``tvm.compile`` with :func:`memcore_py.tvm.pipeline` (TVM's default pipeline, those three
  swapped) against ``tvm.compile`` with TVM's own;
- DataflowUseInplaceCalls on the high-level module (after ``DecomposeOpsForInference`` and
  ``CanonicalizeBindings``), and AttachAttrLayoutFreeBuffers after TVM's zero pipeline, each
  against the model as TVM builds it and against TVM's pass on the same module, both through
  TVM's default build. The inputs run one after the other on one executable, so a pass that
  writes into a constant shows: TVM's DataflowUseInplaceCalls does on the convnet
  (DIFFERENCES.md, ``constant-views``), memcore's does not.

One test per model (every pass in it), so each model is exported and imported once.
"""
from __future__ import annotations

import numpy as np
import pytest

tvm = pytest.importorskip("tvm")
torch = pytest.importorskip("torch")

from tvm import relax  # noqa: E402

import memcore_py.tvm as mtvm  # noqa: E402
from bench import _unseen_models as um  # noqa: E402

pytestmark = [pytest.mark.oracle, pytest.mark.slow]

TARGET = "llvm"

#: model -> the shapes it runs at besides the exported one (a dynamic dim changed)
OTHER_INPUTS = {
    "cond_dynbatch": lambda: (torch.randn(3, um.HIDDEN),),
    "convnet_hw": lambda: (torch.randn(1, 3, 40, 24),),
    "cross_attention": lambda: (torch.randn(3, 8, um.HIDDEN), torch.randn(3, 12, um.HIDDEN)),
}


def _plain_hw():
    """The convnet's H and W as plain symbolic dims. The bench exports them as ``4*h`` and
    ``4*w``, which TVM 0.27 itself cannot build ("PrimExpr T.int64(4) * s39 is not computed"
    in VMShapeLower: an input dim that is a multiple of a variable does not define it)."""
    from torch.export import Dim

    return {"input": {2: Dim("h", min=24, max=um.MAX_HW), 3: Dim("w", min=24, max=um.MAX_HW)}}


#: model -> its dynamic shapes where they differ from the bench's
DYNAMIC = {"convnet_hw": _plain_hw}


def _import(name):
    """``(high-level module, weights, [input tuples])`` as TVM's tutorial imports a model."""
    from tvm.relax.frontend.torch import from_exported_program

    make, args, dynamic, _ = um.specs()[name]
    torch.manual_seed(0)
    with torch.no_grad():
        model = make().eval()
        example = args()
        ep = torch.export.export(model, example, dynamic_shapes=DYNAMIC.get(name, dynamic)())
    mod = from_exported_program(ep, keep_params_as_input=True)
    mod, params = relax.frontend.detach_params(mod)
    torch.manual_seed(1)
    inputs = [tuple(t.numpy() for t in example), tuple(t.numpy() for t in OTHER_INPUTS[name]())]
    return mod, [p.numpy() for p in params["main"]], inputs


def _run(mod, weights, inputs, pipeline="default"):
    """The outputs TVM's VM gives for each input tuple, as flat lists of arrays."""
    ex = tvm.compile(mod, target=TARGET, relax_pipeline=pipeline)
    vm = relax.VirtualMachine(ex, tvm.cpu())
    out = []
    for args in inputs:
        res = vm["main"](*[tvm.runtime.tensor(a) for a in args], *[tvm.runtime.tensor(w) for w in weights])
        out.append(_flat(res))
    return out


def _flat(res):
    if isinstance(res, (list, tuple)) or type(res).__name__ == "Array":
        return [a for r in res for a in _flat(r)]
    return [res.numpy()]


def _assert_same(got, want, what):
    assert len(got) == len(want), what
    for i, (g, w) in enumerate(zip(got, want)):
        assert len(g) == len(w), f"{what}, input {i}"
        for k, (a, b) in enumerate(zip(g, w)):
            np.testing.assert_array_equal(a, b, err_msg=f"{what}, input {i}, output {k}")


def _same(got, want) -> bool:
    try:
        _assert_same(got, want, "")
    except AssertionError:
        return False
    return True


#: (model, pass) where TVM's own pass writes into a constant (DIFFERENCES.md, constant-views):
#: the convnet's decomposed BatchNorms add eps into a view of the running variance.
TVM_WRITES_INTO_CONSTANTS = {("convnet_hw", "DataflowUseInplaceCalls")}


@pytest.mark.parametrize("name", sorted(OTHER_INPUTS))
def test_every_native_pass_compiles_and_runs_like_tvms(name):
    high, weights, inputs = _import(name)
    target = tvm.target.Target(TARGET)
    want = _run(high, weights, inputs)

    # the memory passes, in TVM's default pipeline
    for mode in ("tvm", "arena"):
        got = _run(high, weights, inputs, mtvm.pipeline(target, mode))
        _assert_same(got, want, f"{name}: memcore's memory passes ({mode} mode) in TVM's pipeline")

    # the two high-level passes, where TVM's tuning pipelines run them
    with target:
        decomposed = tvm.transform.Sequential([relax.transform.DecomposeOpsForInference(),
                                               relax.transform.CanonicalizeBindings()])(high)
        zero = relax.pipeline.zero_pipeline()(decomposed)
    unsound = []
    for pass_name, module in (("DataflowUseInplaceCalls", decomposed), ("AttachAttrLayoutFreeBuffers", zero)):
        ours = _run(getattr(mtvm, pass_name)()(module), weights, inputs)
        _assert_same(ours, want, f"{name}: memcore's {pass_name} against the model as TVM builds it")
        theirs = getattr(relax.transform, pass_name)()(module)
        if (name, pass_name) in TVM_WRITES_INTO_CONSTANTS:
            unsound.append(theirs)  # run last: it changes the constants every module here shares
        else:
            _assert_same(ours, _run(theirs, weights, inputs), f"{name}: memcore's {pass_name}")
    for theirs in unsound:
        # DIFFERENCES.md, constant-views: TVM's in-place add into a view of a constant changes
        # the constant, so the second input's run (at least) is not the model's
        assert not _same(_run(theirs, weights, inputs), want)
