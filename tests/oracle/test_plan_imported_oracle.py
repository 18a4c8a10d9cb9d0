"""Oracle: planning imported torch models without TVM gives TVM's unfused plan.

For each model of :mod:`memcore_py.testing.torch_models` (ResNet-18/50, MobileNetV2, ViT,
BERT, GPT-2, Llama, a two-layer LSTM; BERT, GPT-2 and Llama also with a bounded
``torch.export.Dim`` sequence length; the dynamic Llama also without an upper bound, where
storage sizes are symbolic), one decomposed ``torch.export`` program is

1. imported by memcore (``from_exported_program``) and by TVM 0.27; the two modules must be
   structurally equal;
2. planned by memcore alone (``LowerForPlanning -> ToNonDataflow -> RemovePurityChecking ->
   CallTIRRewrite -> StaticPlanBlockMemory``) and by TVM's unfused pipeline on TVM's module
   (``LegalizeOps, AnnotateTIROpPattern, FoldConstant, RewriteDataflowReshape, ToNonDataflow,
   RemovePurityChecking, CallTIRRewrite, StaticPlanBlockMemory``); per function the storages
   (bytes, in order), the allocation counts and, for every planned tensor in binding order,
   the storage it is placed in and its dtype must be equal. A difference is listed by the
   assertion message.

``llama_sliced_dynamic`` (rotary tables sliced to the ``Dim`` length) imports equal to TVM,
but TVM's own LegalizeOps cannot lower it (the slice's extent ``T.min(s, 64)`` leaves the
broadcasts after it without a shape); memcore's LowerForPlanning stops on the same
binding with a PassError.
"""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
tvm = pytest.importorskip("tvm")

from tvm.relax.frontend.torch import from_exported_program as tvm_from_exported_program  # noqa: E402

from memcore_py.errors import PassError  # noqa: E402
from memcore_py.frontend.exported_program import from_exported_program  # noqa: E402
from memcore_py.testing.torch_models import TORCH_MODELS, torch_model  # noqa: E402
from memcore_py.transform.lower_for_planning import lower_for_planning  # noqa: E402
from memcore_py.tvm import to_tvm  # noqa: E402
from oracle.test_lower_for_planning_oracle import memcore_plan, tvm_unfused_plan  # noqa: E402

pytestmark = pytest.mark.oracle

PLANNED = [m for m in TORCH_MODELS if m != "llama_sliced_dynamic"]


def _export(name):
    model, args, dynamic = torch_model(name)
    return torch.export.export(model, args, dynamic_shapes=dynamic).run_decompositions()


def _imports(ep):
    theirs = tvm_from_exported_program(ep, keep_params_as_input=True)
    main = theirs["main"]
    if main.attrs is not None and "params" in main.attrs:
        theirs["main"] = main.without_attr("params")
    ours = from_exported_program(ep, keep_params_as_input=True)
    tvm.ir.assert_structural_equal(to_tvm(ours), theirs)
    return ours, theirs


def _differences(ours: dict, theirs: dict) -> list:
    out = []
    for fn in sorted(set(ours) | set(theirs)):
        if fn not in ours or fn not in theirs:
            out.append(f"{fn}: only in {'memcore' if fn in ours else 'TVM'}")
            continue
        (s1, c1, p1), (s2, c2, p2) = ours[fn], theirs[fn]
        if s1 != s2:
            out.append(f"{fn}: storages memcore {s1} vs TVM {s2}")
        if c1 != c2:
            out.append(f"{fn}: allocation counts memcore {c1} vs TVM {c2}")
        if p1 != p2:
            k = next((i for i, (a, b) in enumerate(zip(p1, p2)) if a != b), min(len(p1), len(p2)))
            out.append(f"{fn}: planned tensor {k} (of {len(p1)} / {len(p2)}) placed "
                       f"{p1[k] if k < len(p1) else None} by memcore, {p2[k] if k < len(p2) else None} by TVM")
    return out


@pytest.mark.parametrize("name", PLANNED)
def test_imported_model_plans_as_tvm_unfused_pipeline(name):
    ep = _export(name)
    ours, theirs = _imports(ep)
    if name.endswith("_dynamic"):
        assert "tir_var_upper_bound" in ours["main"].attrs
    mine, tvms = memcore_plan(ours), tvm_unfused_plan(theirs)
    assert not _differences(mine, tvms), "\n".join(_differences(mine, tvms))
    sizes = mine["main"][0]
    assert sizes and all(isinstance(s, int) for s in sizes)  # bounded: every storage has a static size


def test_unbounded_sequence_plans_symbolic_sizes_as_tvm():
    """Without an upper bound the storages have symbolic sizes (``T.int64(32) * s``), equal
    expression for expression."""
    model, args, _ = torch_model("llama_dynamic")
    from torch.export import Dim

    ep = torch.export.export(model, args, dynamic_shapes=({1: Dim("seq", min=2)},)).run_decompositions()
    ours, theirs = _imports(ep)
    assert "tir_var_upper_bound" not in ours["main"].attrs
    mine, tvms = memcore_plan(ours), tvm_unfused_plan(theirs)
    assert not _differences(mine, tvms), "\n".join(_differences(mine, tvms))
    assert any(isinstance(s, str) and "s" in s for s in mine["main"][0])


def test_sliced_rotary_tables_import_as_tvm_but_do_not_lower():
    """The dynamic Llama with sliced rotary tables: the import is TVM's (the slice's extent is
    ``T.min(s, 64)``); TVM's LegalizeOps fails on what follows, memcore's LowerForPlanning
    names the first binding without a shape."""
    ep = _export("llama_sliced_dynamic")
    ours, theirs = _imports(ep)
    text = ours.script()
    assert "T.min(s" in text and 'R.Tensor(dtype="float32", ndim=' in text
    with pytest.raises(Exception, match="ShapeExpr"):
        tvm_unfused_plan(theirs)
    with pytest.raises(PassError, match="known shape"):
        lower_for_planning(ours)


def test_unknown_model_name_is_an_error():
    from memcore_py.errors import MemcoreError

    with pytest.raises(MemcoreError, match="unknown torch model 'resnet'.*resnet18"):
        torch_model("resnet")
