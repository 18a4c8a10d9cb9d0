"""``memcore plan MODEL.pt2`` end to end, time split by stage, against TVM's importer and its
unfused pipeline on the same program, same run.

Workload: BERT-base (tools/make_models.py's ``bert_base``: 12 post-norm encoder layers,
hidden 768, sequence 128, random weights), exported with ``torch.export.export`` and written
with ``torch.export.save`` to a temporary folder once per session (not timed). With
``--benchmark-disable`` (the CI smoke run) the small ``embedding_norm`` program of
:mod:`memcore_py.testing.torch_programs` stands in for it (BERT-base's archive is 440 MB).

``test_plan_pt2_ours`` times ``memcore plan FILE --json`` in-process (``memcore_py.cli.main``)
and reads the stage times the command reports (``stages`` in its JSON):
``torch.export.load`` and ``run_decompositions`` are torch's own work; ``import``
(``from_exported_program``), ``lowering`` (``LowerForPlanning, ToNonDataflow,
RemovePurityChecking, CallTIRRewrite``) and the planning of both modes are memcore's. The
issue's target, "import + plan in both modes in < 1 s excluding torch's own load", is
``memcore_s`` = the command's wall time minus the two torch stages (it also covers the
command's five timed runs of each mode, the report and the JSON); ``under_1s`` records
whether it holds. ``tvm_mode_s`` / ``arena_mode_s`` are the steady-state planning times (best
of 5). ``cold_*``: the same command once in a fresh interpreter where ``import tvm`` fails (as
in a venv with only ``pip install ".[torch]"``), checked not to import TVM;
``cold_memcore_s`` is its wall time minus ``import torch``, the load and the decompositions
(so it includes importing memcore_py and the first, cold planning).

``test_plan_pt2_tvm`` (apache-tvm installed) starts from the same loaded and decomposed
program and runs TVM 0.27's ``from_exported_program(keep_params_as_input=True,
run_ep_decomposition=False)`` then ``LegalizeOps, AnnotateTIROpPattern, FoldConstant,
RewriteDataflowReshape, ToNonDataflow, RemovePurityChecking, CallTIRRewrite,
StaticPlanBlockMemory``: the baseline for memcore's ``import + lowering + TVM-mode plan``.
Its planned bytes are recorded next to memcore's TVM-mode bytes (they are equal:
tests/oracle/test_lower_for_planning_oracle.py).
"""
from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import time
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from _passes_common import tvm_or_none  # noqa: E402

from memcore_py.cli import main  # noqa: E402
from memcore_py.testing.torch_programs import torch_programs  # noqa: E402

TORCH_STAGES = ("torch.export.load", "run_decompositions")
TVM_UNFUSED = ("LegalizeOps", "AnnotateTIROpPattern", "FoldConstant", "RewriteDataflowReshape", "ToNonDataflow",
               "RemovePurityChecking", "CallTIRRewrite", "StaticPlanBlockMemory")


def _bert_base():
    path = Path(__file__).resolve().parents[1] / "tools" / "make_models.py"
    spec = importlib.util.spec_from_file_location("_memcore_make_models", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    ctor, inputs = mod.MODELS["bert_base"]
    return ctor().eval(), inputs()


@pytest.fixture(scope="session")
def model_pt2(request, tmp_path_factory):
    """``(name, path)`` of the saved program: BERT-base, or a small one in the smoke run."""
    if request.config.getoption("benchmark_disable"):
        name = "embedding_norm"
        model, args, dynamic = torch_programs()[name]
    else:
        name, (model, args), dynamic = "bert_base", _bert_base(), None
    ep = torch.export.export(model, args, dynamic_shapes=dynamic)
    path = tmp_path_factory.mktemp("pt2") / f"{name}.pt2"
    torch.export.save(ep, str(path))
    return name, path


def _plan_cli(path):
    """``memcore plan PATH --json`` in-process: (JSON document, wall seconds)."""
    buf = io.StringIO()
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(buf):
        rc = main(["plan", str(path), "--json"])
    seconds = time.perf_counter() - t0
    assert rc == 0
    return json.loads(buf.getvalue()), seconds


@pytest.mark.benchmark(group="plan-models")
def test_plan_pt2_ours(benchmark, model_pt2):
    name, path = model_pt2
    runs = []

    def run():
        runs.append(_plan_cli(path))

    benchmark.pedantic(run, rounds=3, iterations=1)
    doc, wall = min(runs, key=lambda r: r[1] - sum(r[0]["modules"][0]["stages"][s] for s in TORCH_STAGES))
    module = doc["modules"][0]
    stages = module["stages"]
    torch_s = sum(stages[s] for s in TORCH_STAGES)
    fn = module["functions"][0]
    benchmark.extra_info.update(
        model=name, size_mb=round(path.stat().st_size / 2**20, 1), n_bindings=fn["n_bindings"],
        n_planned=fn["n_planned"], wall_s=round(wall, 4),
        load_s=round(stages["torch.export.load"], 4), decompositions_s=round(stages["run_decompositions"], 4),
        import_s=round(stages["import"], 4), lowering_s=round(stages["lowering"], 4),
        tvm_mode_s=round(module["tvm_seconds"], 5), arena_mode_s=round(module["arena_seconds"], 5),
        memcore_s=round(wall - torch_s, 4), under_1s=wall - torch_s < 1.0,
        tvm_mode_bytes=fn["tvm"]["bytes"], arena_bytes=fn["arena"]["bytes"], lower_bound=fn["lower_bound"])
    assert fn["lower_bound"] <= fn["arena"]["bytes"] <= fn["tvm"]["bytes"]
    benchmark.extra_info.update(_cold_run(path))


#: A fresh interpreter in which ``import tvm`` fails (as without apache-tvm): times
#: ``import torch``, then runs ``memcore plan FILE --json``; prints both, and whether any of
#: TVM was imported.
_COLD = """
import contextlib, io, json, sys, time
sys.modules["tvm"] = None
t0 = time.perf_counter()
import torch
t1 = time.perf_counter()
from memcore_py.cli import main
buf = io.StringIO()
with contextlib.redirect_stdout(buf):
    rc = main(["plan", sys.argv[1], "--json"])
t2 = time.perf_counter()
print(json.dumps({"rc": rc, "torch_import_s": t1 - t0, "plan_s": t2 - t1, "doc": json.loads(buf.getvalue()),
                  "tvm_imported": any(m.startswith("tvm.") for m in sys.modules)}))
"""


def _cold_run(path) -> dict:
    """``memcore plan`` in a fresh process without TVM: the first, cold call, stage by stage."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    proc = subprocess.run([sys.executable, "-c", _COLD, str(path)], capture_output=True, text=True, cwd=root,
                          timeout=600, check=True)
    res = json.loads(proc.stdout)
    assert res["rc"] == 0 and not res["tvm_imported"]
    stages = res["doc"]["modules"][0]["stages"]
    torch_s = res["torch_import_s"] + sum(stages[s] for s in TORCH_STAGES)
    return {"cold_torch_import_s": round(res["torch_import_s"], 4), "cold_plan_command_s": round(res["plan_s"], 4),
            "cold_load_s": round(stages["torch.export.load"], 4),
            "cold_decompositions_s": round(stages["run_decompositions"], 4),
            "cold_import_s": round(stages["import"], 4), "cold_lowering_s": round(stages["lowering"], 4),
            "cold_memcore_s": round(res["torch_import_s"] + res["plan_s"] - torch_s, 4),
            "cold_tvm_imported": res["tvm_imported"]}


def _tvm_alloc_storage_bytes(tvm, mod):
    from tvm import relax

    return sum(int(b.value.args[0].values[0]) for f in mod.functions.values() if isinstance(f, relax.Function)
               for blk in f.body.blocks for b in blk.bindings
               if isinstance(b.value, relax.Call) and isinstance(b.value.op, tvm.ir.Op)
               and b.value.op.name == "relax.memory.alloc_storage")


@pytest.mark.benchmark(group="plan-models")
def test_plan_pt2_tvm(benchmark, model_pt2):
    tvm = tvm_or_none()
    if tvm is None:
        pytest.skip("apache-tvm is not installed")
    from tvm import relax
    from tvm.relax.frontend.torch import from_exported_program

    name, path = model_pt2
    ep = torch.export.load(str(path)).run_decompositions()
    pipeline = tvm.transform.Sequential([getattr(relax.transform, p)() for p in TVM_UNFUSED])
    times = []

    def run():
        t0 = time.perf_counter()
        mod = from_exported_program(ep, keep_params_as_input=True, run_ep_decomposition=False)
        t1 = time.perf_counter()
        out = pipeline(mod)
        times.append((t1 - t0, time.perf_counter() - t1))
        return out

    out = benchmark.pedantic(run, rounds=3, iterations=1)
    import_s, pipeline_s = min(times, key=sum)
    benchmark.extra_info.update(model=name, tvm_import_s=round(import_s, 4), tvm_pipeline_s=round(pipeline_s, 4),
                                tvm_total_s=round(import_s + pipeline_s, 4),
                                tvm_planned_bytes=_tvm_alloc_storage_bytes(tvm, out))
