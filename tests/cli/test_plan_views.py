"""``memcore plan --top N / --plot OUT`` (the peak report and timeline plot of
:mod:`memcore_py.planning.peak_report` / :mod:`memcore_py.planning.plot`, wired into the
command), and planning high-level (TVM importer) text without TVM."""
from __future__ import annotations

import gzip
import json

import pytest

from _helpers import REPO_ROOT, run_cli
from memcore_py.cli.plan import _plot_path
from memcore_py.examples.models import load_model
from memcore_py.planning.peak_report import report, timelines

MODELS = REPO_ROOT / "memcore_py" / "examples" / "models"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_top_lists_the_peak_tensors_of_each_mode(capsys):
    rc, out, err = run_cli(capsys, "plan", MODELS / "resnet50.py.gz", "--top", "2", "--no-search")
    assert rc == 0 and err == ""
    want = report(timelines(load_model("resnet50"), time_limit=None), top=2)
    (peak,) = want.functions
    assert f"function {peak.function}: peak" in out
    for t in peak.tensors:
        assert any(line.split()[:1] == [t.name] for line in out.splitlines()), t.name


def test_top_in_json_follows_the_report(capsys):
    rc, out, _ = run_cli(capsys, "plan", MODELS / "resnet50.py.gz", "--top", "3", "--json", "--no-search")
    assert rc == 0
    peak = json.loads(out)["modules"][0]["peak"]
    assert peak == report(timelines(load_model("resnet50"), time_limit=None), top=3).to_dict()


def test_plot_writes_an_image(capsys, tmp_path):
    pytest.importorskip("matplotlib")
    path = tmp_path / "r50.png"
    rc, _, err = run_cli(capsys, "plan", MODELS / "resnet50.py.gz", "--plot", path, "--no-search")
    assert rc == 0 and err == ""
    assert path.read_bytes()[:8] == PNG_MAGIC


def test_plot_and_top_for_a_graph_json(capsys, tmp_path):
    pytest.importorskip("matplotlib")
    with gzip.open(REPO_ROOT / "tests" / "data" / "relay" / "resnet18_O3.json.gz", "rt") as fh:
        doc = json.load(fh)["graph_json"]
    graph = tmp_path / "resnet18.json"
    graph.write_text(json.dumps(doc))
    path = tmp_path / "g.svg"
    rc, out, err = run_cli(capsys, "plan", graph, "--plot", path, "--top", "2", "--no-search")
    assert rc == 0 and err == ""
    assert path.read_text().lstrip().startswith(("<?xml", "<svg"))
    assert ": peak" in out


def test_plot_bad_suffix_is_a_one_line_usage_error(capsys, tmp_path):
    rc, out, err = run_cli(capsys, "plan", MODELS / "resnet50.py.gz", "--plot", tmp_path / "x.txt")
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and ".png, .svg or .pdf" in err


def test_several_inputs_get_one_plot_each():
    assert _plot_path("out/plan.png", "resnet50", False) == "out/plan.png"
    assert _plot_path("out/plan.png", "resnet50", True) == "out/plan-resnet50.png"


def test_high_level_text_is_lowered_for_planning(capsys):
    """TVM's importer output is planned without TVM: same bytes as LowerForPlanning's
    pipeline (which equals TVM's unfused pipeline, tests/oracle/test_lower_for_planning_oracle.py)."""
    import memcore_py
    from memcore_py.examples.models import highlevel_model_text
    from memcore_py.ir.expr import Call
    from memcore_py.transform import CallTIRRewrite, RemovePurityChecking, Sequential, StaticPlanBlockMemory, ToNonDataflow
    from memcore_py.transform.lower_for_planning import LowerForPlanning

    rc, out, _ = run_cli(capsys, "plan", MODELS / "highlevel" / "resnet50.py.gz", "--json", "--mode", "tvm")
    assert rc == 0
    fn = json.loads(out)["modules"][0]["functions"][0]
    planned = Sequential([LowerForPlanning(), ToNonDataflow(), RemovePurityChecking(), CallTIRRewrite(),
                          StaticPlanBlockMemory(mode="tvm")])(memcore_py.parse(highlevel_model_text("resnet50")))
    sizes = [b.value.args[0].values[0].value for blk in planned["main"].body.blocks for b in blk.bindings
             if isinstance(b.value, Call) and getattr(b.value.op, "name", "") == "relax.memory.alloc_storage"]
    assert fn["tvm"]["n_storages"] == len(sizes) > 0
    assert fn["tvm"]["bytes"] == sum(sizes)


def test_fused_flag_plans_as_the_fused_lowering(capsys):
    """``--fused`` lowers with TVM's FuseOps grouping (LowerForPlanning(fuse=True), equal to
    TVM's fused pipeline in tests/oracle/test_fused_planning_oracle.py): its bytes are that
    pipeline's, and differ from the unfused plan's on ResNet-50."""
    import memcore_py
    from memcore_py.examples.models import highlevel_model_text
    from memcore_py.ir.expr import Call
    from memcore_py.transform import CallTIRRewrite, RemovePurityChecking, Sequential, StaticPlanBlockMemory, ToNonDataflow
    from memcore_py.transform.lower_for_planning import LowerForPlanning

    def storage_bytes(fuse):
        planned = Sequential([LowerForPlanning(fuse=fuse), ToNonDataflow(), RemovePurityChecking(), CallTIRRewrite(),
                              StaticPlanBlockMemory(mode="tvm")])(memcore_py.parse(highlevel_model_text("resnet50")))
        return sum(b.value.args[0].values[0].value for blk in planned["main"].body.blocks for b in blk.bindings
                   if isinstance(b.value, Call) and getattr(b.value.op, "name", "") == "relax.memory.alloc_storage")

    rc, out, _ = run_cli(capsys, "plan", MODELS / "highlevel" / "resnet50.py.gz", "--json", "--mode", "tvm", "--fused")
    assert rc == 0
    fused = json.loads(out)["modules"][0]["functions"][0]["tvm"]["bytes"]
    assert fused == storage_bytes(True) != storage_bytes(False)
