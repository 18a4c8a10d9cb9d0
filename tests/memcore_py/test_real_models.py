"""Real models (shipped TVMScript, lowered by TVM 0.27's own pipeline): parse, plan in both
modes, check every plan independently, and compare with the lower bound and TVM's own result.

No torch or tvm needed: the text and TVM's recorded plan (``<name>.tvm.json``) are shipped.
Measured figures are printed (``pytest -s``) and summarised in bench/README.md.
"""
import pytest

from memcore_py.examples.models import list_models, load_model, model_text, tvm_oracle
from memcore_py.cli.plan import plan_and_report
from memcore_py.planning.check import collect_planned_tensors, verify_planned

MODELS = ["bert_base", "gpt2_small", "llama_small", "resnet50", "vit_b16"]

#: Arena mode's default includes a short offset search (ARENA_TIME_LIMIT). Without it
#: (``time_limit=None``) ViT-B/16's best heuristic was measured +4.6 % over the bound; the
#: search reaches the bound exactly in a few ms.


@pytest.fixture(scope="module", params=MODELS)
def model(request):
    """(name, parsed module, report, TVM's recorded plan), built once per model."""
    name = request.param
    mod = load_model(name)
    return name, mod, plan_and_report(mod, name=name), tvm_oracle(name)


def test_all_models_shipped():
    assert list_models() == MODELS


def test_unknown_model_lists_the_shipped_ones():
    with pytest.raises(KeyError, match="resnet50"):
        model_text("resnet-1000")


def test_parses_to_well_formed_module(model):
    from memcore_py.ir.well_formed import well_formed_report

    name, mod, _, oracle = model
    assert well_formed_report(mod) == []
    assert "main" in mod
    assert set(oracle["functions"]) == {"main"}


def test_binding_and_alloc_counts_match_tvm(model):
    """Our parser sees the same function TVM planned."""
    name, _, report, oracle = model
    (main,) = report.functions
    info = oracle["functions"]["main"]
    assert main.n_bindings == info["n_bindings"]
    assert main.n_allocs == info["n_alloc_tensor"]


def test_tvm_mode_reproduces_tvm(model):
    """TVM-exact mode: the same planned tensors and the same storages, in order, as TVM 0.27."""
    name, _, report, oracle = model
    info = oracle["functions"]["main"]
    planned = collect_planned_tensors(report.tvm_module["main"], "main")
    assert planned.n_planned == info["n_planned_tensors"]
    assert planned.n_unplanned == info["n_unplanned_allocs"]
    assert [s.nbytes for s in planned.storages] == [s["bytes"] for s in info["storages"]]
    assert report.functions[0].tvm_bytes == info["total_bytes"]


def test_tvm_mode_plan_verifies(model):
    _, _, report, _ = model
    verify_planned(collect_planned_tensors(report.tvm_module["main"], "main"))


def test_lower_bound_agrees_with_independent_lifetimes(model):
    """The planner's token lifetimes and the ones re-derived from the planned IR give the
    same max-live bound."""
    _, _, report, _ = model
    independent = collect_planned_tensors(report.tvm_module["main"], "main").lower_bound()
    assert report.functions[0].lower_bound == independent


def test_arena_mode_plan_verifies(model):
    _, _, report, _ = model
    planned = collect_planned_tensors(report.arena_module["main"], "main")
    verify_planned(planned)
    assert planned.n_planned == report.functions[0].n_planned


def test_arena_beats_tvm_and_is_within_1_percent_of_lower_bound(model):
    name, _, report, _ = model
    (f,) = report.functions
    print(f"\n{name}: tvm {f.tvm_bytes} arena {f.arena_bytes} lb {f.lower_bound} "
          f"(tvm {f.excess(f.tvm_bytes):+.2%}, arena {f.excess(f.arena_bytes):+.3%})")
    assert f.lower_bound > 0
    assert f.lower_bound <= f.arena_bytes <= f.tvm_bytes
    assert f.arena_bytes <= 1.01 * f.lower_bound


def test_arena_with_search_reaches_the_lower_bound(model):
    """With plan_offsets' anytime search every model packs to exactly the max-live bound."""
    from memcore_py.transform import StaticPlanBlockMemory

    name, mod, report, _ = model
    planned = collect_planned_tensors(StaticPlanBlockMemory(mode="arena", time_limit=2.0)(mod)["main"], "main")
    verify_planned(planned)
    assert planned.total_bytes == report.functions[0].lower_bound


def test_tvm_sits_above_the_lower_bound(model):
    """TVM's own recorded plan, measured against the bound of the same tensors and lifetimes.

    Measured (TVM 0.27.0.post1): ResNet-50 +80.7 %, BERT-base +73.4 %, ViT-B/16 +68.0 %,
    GPT-2 small +13.0 %, Llama-style +11.5 % (the last two are dominated by the transposed
    LM-head weight, one tensor that no plan can share).
    """
    name, _, report, oracle = model
    (f,) = report.functions
    tvm_bytes = oracle["functions"]["main"]["total_bytes"]
    excess = f.excess(tvm_bytes)
    print(f"\n{name}: TVM 0.27 {tvm_bytes} bytes, lower bound {f.lower_bound}: {excess:+.1%}")
    assert 0.05 <= excess <= 0.90


def test_arena_heuristics_only_is_deterministic_and_never_above_tvm(model):
    """``time_limit=None``: no search; the plan is a pure function of the input."""
    name, mod, report, _ = model
    first = plan_and_report(mod, name=name, time_limit=None).functions[0]
    again = plan_and_report(mod, name=name, time_limit=None).functions[0]
    assert first.arena_bytes == again.arena_bytes
    assert report.functions[0].arena_bytes <= first.arena_bytes <= first.tvm_bytes
