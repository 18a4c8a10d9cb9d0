"""``memcore plan`` on every input kind: MiniMalloc ``.csv`` problems, ``.onnx`` (more in
test_plan_onnx.py), torch.export ``.pt2`` files and ``module:function`` callables (with
``--dynamic``), through the command line's entry point; bad input of each kind is one line
on stderr with the file (or callable) named, and no traceback."""
import json
import os
import subprocess
import sys
import zipfile

import numpy as np
import pytest

from _helpers import MINIMALLOC_DIR, REPO_ROOT, run_cli
from memcore_py.cli.plan_inputs import InputNotImplementedError, input_kind
from test_plan_schema import check, refused


def _one_line_error(err, *needles):
    assert err.count("\n") == 1 and err.startswith("memcore plan: error: "), err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in err, (needle, err)


# ---------------------------------------------------------------------------------------------
# Input kinds
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path, kind", [
    ("graph.json", "graph-json"), ("graph.json.gz", "graph-json"), ("problem.csv", "csv"),
    ("PROBLEM.CSV", "csv"), ("model.pt2", "pt2"), ("model.onnx", "onnx"), ("pkg.models:build", "callable"),
    ("models:make.bert", "callable"), ("module.py", "tvmscript"), ("-", "tvmscript"), (None, "tvmscript"),
    ("C:\\model.txt", "tvmscript"), ("a:b:c", "tvmscript"),
])
def test_input_kind(path, kind):
    assert input_kind(path) == kind


def test_an_existing_file_with_a_colon_is_a_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "odd:name").write_text("")
    assert input_kind("odd:name") == "tvmscript"


# ---------------------------------------------------------------------------------------------
# Flat problems (.csv)
# ---------------------------------------------------------------------------------------------

#: Three buffers, half-open lifespans: a [0,2) 8 B, b [1,3) 16 B, c [2,4) 8 B. Steps 1 and 2
#: have 24 live bytes; a and c never overlap, so one 24-byte arena holds them all.
SMALL = "id,lower,upper,size\na,0,2,8\nb,1,3,16\nc,2,4,8\n"


def _csv(tmp_path, text, name="p.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_csv_table(capsys, tmp_path):
    rc, out, err = run_cli(capsys, "plan", _csv(tmp_path, SMALL), "--no-search")
    assert rc == 0 and err == ""
    header, _, row, footer = out.strip().splitlines()
    for col in ("buffers", "steps", "sum of sizes", "arena bytes", "lower bound", "arena ms"):
        assert col in header
    cells = row.split()
    assert cells[:3] == ["p.csv", "3", "4"] and cells[3:5] == ["32", "B"]  # 8 + 16 + 8
    assert cells[5:9] == ["24", "B", "24", "B"]  # arena and bound, computed by hand above
    assert footer.startswith("mode: arena")


def _max_live(start, end, size):
    """Max over steps of the bytes live then (inclusive ends): +size at start, -size after
    end, running sum."""
    lo = start.min()
    delta = np.zeros(end.max() - lo + 2, dtype=np.int64)
    np.add.at(delta, start - lo, size)
    np.add.at(delta, end - lo + 1, -size)
    return int(np.cumsum(delta).max())


@pytest.mark.parametrize("name", sorted(p.name for p in MINIMALLOC_DIR.glob("*.csv"))[:3])
def test_minimalloc_benchmark_json(capsys, name):
    path = MINIMALLOC_DIR / name
    rc, out, _ = run_cli(capsys, "plan", path, "--json", "--no-search")
    assert rc == 0
    doc = json.loads(out)
    check(doc)
    (p,) = doc["problems"]
    rows = np.loadtxt(path, delimiter=",", skiprows=1, usecols=(1, 2, 3), dtype=np.int64, ndmin=2)
    start, end, size = rows[:, 0], rows[:, 1] - 1, rows[:, 2]
    assert p["n_buffers"] == len(rows) and p["total_size"] == int(size.sum())
    assert p["lower_bound"] == _max_live(start, end, size)
    assert p["lower_bound"] <= p["arena_bytes"] <= p["total_size"]
    assert p["file_bytes"] is None and doc["time_limit"] is None


def test_csv_offset_column_is_verified_and_reported(capsys, tmp_path):
    solved = "id,lower,upper,size,offset\na,0,2,8,0\nb,1,3,16,16\nc,2,4,8,0\n"
    rc, out, _ = run_cli(capsys, "plan", _csv(tmp_path, solved), "--json", "--no-search")
    assert rc == 0
    assert json.loads(out)["problems"][0]["file_bytes"] == 32  # b ends at 16 + 16
    overlapping = "id,lower,upper,size,offset\na,0,2,8,0\nb,1,3,16,4\nc,2,4,8,0\n"
    rc, out, err = run_cli(capsys, "plan", _csv(tmp_path, overlapping, "bad.csv"))
    assert rc == 1 and out == ""
    _one_line_error(err, "bad.csv", "offset column is not a valid plan")


@pytest.mark.parametrize("text, where, message", [
    ("id,lower,upper,size\na,0,2,8\nb,1,x,16\n", ":3:", "upper must be an integer"),
    ("id,lower,upper,size\na,0,2,8\nb,3,3,16\n", ":3:", "upper must be > lower"),
    ("id,lower,upper\na,0,2\n", ":1:", "missing size"),
    ("id,lower,upper,size\na,0,2\n", ":2:", "must have 4 fields"),
    ("", ":1:", "empty file"),
])
def test_malformed_csv_names_file_and_line(capsys, tmp_path, text, where, message):
    path = _csv(tmp_path, text, "broken.csv")
    rc, out, err = run_cli(capsys, "plan", path)
    assert rc == 1 and out == ""
    _one_line_error(err, f"broken.csv{where}", message)


def test_missing_csv(capsys, tmp_path):
    rc, _, err = run_cli(capsys, "plan", tmp_path / "none.csv")
    assert rc == 1
    _one_line_error(err, "none.csv", "cannot read")


@pytest.mark.parametrize("argv, message", [
    (["--top", "3"], "--top needs a module"),
    (["--mode", "tvm"], "--mode tvm needs a module"),
    (["--print-ir"], "--print-ir needs a module"),
    (["--bind", "n=3"], "--bind needs a module"),
    (["--dynamic", "n=0:0"], "--dynamic applies to module:function"),
])
def test_csv_usage_errors(capsys, tmp_path, argv, message):
    rc, _, err = run_cli(capsys, "plan", _csv(tmp_path, SMALL), *argv)
    assert rc == 2
    _one_line_error(err, message)


def test_csv_plot(capsys, tmp_path):
    pytest.importorskip("matplotlib")
    out_png = tmp_path / "plan.png"
    rc, out, _ = run_cli(capsys, "plan", _csv(tmp_path, SMALL), "--plot", out_png, "--no-search")
    assert rc == 0 and "plot written to" in out
    assert out_png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_csv_json_schema_refuses_broken_documents(capsys, tmp_path):
    rc, out, _ = run_cli(capsys, "plan", _csv(tmp_path, SMALL), "--json", "--no-search")
    doc = json.loads(out)
    check(doc)
    p = doc["problems"][0]
    assert (p["n_buffers"], p["arena_bytes"], p["lower_bound"], p["total_size"]) == (3, 24, 24, 32)
    for broken in ({**doc, "problems": []}, {**doc, "mode": "tvm"},
                   {**doc, "problems": [{k: v for k, v in p.items() if k != "arena_bytes"}]},
                   {**doc, "problems": [{**p, "lower_bound": -1}]}):
        assert refused(broken)


# ---------------------------------------------------------------------------------------------
# ONNX
# ---------------------------------------------------------------------------------------------


def test_onnx_that_is_not_a_model_is_one_line_naming_the_file(capsys, tmp_path):
    pytest.importorskip("onnx")
    path = tmp_path / "m.onnx"
    path.write_bytes(b"\x08\x07")
    rc, out, err = run_cli(capsys, "plan", path)
    assert rc == 1 and out == ""
    _one_line_error(err, "m.onnx", "not an ONNX model")
    assert issubclass(InputNotImplementedError, NotImplementedError)


# ---------------------------------------------------------------------------------------------
# PyTorch: .pt2 files and module:function callables
# ---------------------------------------------------------------------------------------------

MODELS_PY = '''
import torch
from torch import nn


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 32)
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x):
        return torch.softmax(self.fc2(torch.relu(self.fc1(x))), dim=-1)


def mlp(batch=2):
    torch.manual_seed(0)
    return MLP(), (torch.randn(batch, 8),)


def mlp64():
    return mlp(64)


class DataDependent(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x * 2
        return x - 1


def data_dependent():
    return DataDependent(), (torch.randn(3),)


class Histogram(nn.Module):
    def forward(self, x):
        return torch.histc(x, 4) + 1


def histogram():
    return Histogram(), (torch.rand(8),)


def not_a_model():
    return 3


def raises():
    raise RuntimeError("no weights here")


NOT_CALLABLE = 1
'''


@pytest.fixture
def models_dir(tmp_path, monkeypatch):
    """A folder holding ``tinymodels.py``, made the current directory (importable from it)."""
    pytest.importorskip("torch")
    (tmp_path / "tinymodels.py").write_text(MODELS_PY)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(sys.modules, "tinymodels", raising=False)
    yield tmp_path
    sys.modules.pop("tinymodels", None)


def _exported(models_dir, name="mlp"):
    import torch

    sys.path.insert(0, str(models_dir))
    try:
        import tinymodels
    finally:
        sys.path.remove(str(models_dir))
    model, args = getattr(tinymodels, name)()
    return torch.export.export(model.eval(), args)


@pytest.fixture
def mlp_pt2(models_dir):
    import torch

    path = models_dir / "mlp.pt2"
    torch.export.save(_exported(models_dir), str(path))
    return path


def _figures(doc):
    """Per function: (bindings, allocs, planned, tvm bytes/storages, arena bytes, lower bound)."""
    return [(f["n_bindings"], f["n_allocs"], f["n_planned"], f["tvm"]["bytes"], f["tvm"]["n_storages"],
             f["arena"]["bytes"], f["lower_bound"]) for m in doc["modules"] for f in m["functions"]]


def _plan_json(capsys, *argv):
    rc, out, err = run_cli(capsys, "plan", *argv, "--json", "--no-search")
    assert rc == 0, err
    doc = json.loads(out)
    check(doc)
    return doc


def test_pt2_plans_like_the_importers_text(capsys, mlp_pt2, models_dir):
    """A ``.pt2`` file plans to the same figures as the high-level text of the same program
    (imported in memory, printed, read back as TVMScript)."""
    from memcore_py.frontend.exported_program import from_exported_program

    doc = _plan_json(capsys, mlp_pt2)
    text = models_dir / "mlp_highlevel.py"
    text.write_text(from_exported_program(_exported(models_dir)).script())
    expected = _plan_json(capsys, text)
    assert _figures(doc) == _figures(expected) and _figures(doc)[0][3] > 0
    stages = doc["modules"][0]["stages"]
    assert list(stages) == ["torch.export.load", "run_decompositions", "import", "lowering"]
    assert list(expected["modules"][0]["stages"]) == ["lowering"]  # a high-level text is lowered too


def test_pt2_table_both_modes_and_stages(capsys, mlp_pt2):
    for mode in ("tvm", "arena"):
        rc, out, err = run_cli(capsys, "plan", mlp_pt2, "--mode", mode, "--no-search")
        assert rc == 0 and err == ""
        lines = out.strip().splitlines()
        assert lines[2].split()[:2] == [str(mlp_pt2), "main"]
        assert lines[-1].startswith("stages: torch.export.load ") and "lowering" in lines[-1]
        assert lines[-2].startswith(f"mode: {mode};")


def test_pt2_print_ir_top_and_plot(capsys, mlp_pt2):
    rc, out, _ = run_cli(capsys, "plan", mlp_pt2, "--print-ir", "--no-search")
    assert rc == 0 and "R.memory.alloc_storage" in out
    rc, out, _ = run_cli(capsys, "plan", mlp_pt2, "--top", "2", "--no-search")
    assert rc == 0 and "peak" in out
    pytest.importorskip("matplotlib")
    png = mlp_pt2.parent / "mlp.png"
    rc, _, err = run_cli(capsys, "plan", mlp_pt2, "--plot", png, "--no-search")
    assert rc == 0 and err == "" and png.read_bytes()[:4] == b"\x89PNG"


def test_callable_plans_like_its_pt2(capsys, mlp_pt2):
    doc = _plan_json(capsys, "tinymodels:mlp")
    assert _figures(doc) == _figures(_plan_json(capsys, mlp_pt2))
    assert list(doc["modules"][0]["stages"]) == ["torch.export.export", "run_decompositions", "import", "lowering"]
    assert doc["modules"][0]["name"] == "tinymodels:mlp"


def test_dynamic_dim_is_symbolic(capsys, models_dir):
    doc = _plan_json(capsys, "tinymodels:mlp", "--dynamic", "batch=x:0:2")  # no upper bound
    fn = doc["modules"][0]["functions"][0]
    assert fn["tvm"]["bytes"] is None and fn["tvm"]["expr"]  # bytes are an expression in the batch


def test_bind_takes_the_dynamic_name(capsys, models_dir):
    """``--bind batch=64`` evaluates the symbolic plan at the name given to ``--dynamic``
    (torch calls the symbol ``s<N>``): the figures are the unbound expressions at 64."""
    doc = _plan_json(capsys, "tinymodels:mlp", "--dynamic", "batch=x:0:2", "--bind", "batch=64")
    (symbol,) = doc["modules"][0]["symbols"].values()
    assert list(doc["modules"][0]["symbols"]) == ["batch"] and doc["bind"] == {symbol: 64}
    unbound = _plan_json(capsys, "tinymodels:mlp", "--dynamic", "batch=x:0:2")["modules"][0]["functions"][0]
    bound = doc["modules"][0]["functions"][0]
    for mode in ("tvm", "arena"):
        assert bound[mode]["bytes"] == eval(unbound[mode]["expr"], {symbol: 64}) > 0  # noqa: S307 - "144*s77 + 512"
    rc, out, _ = run_cli(capsys, "plan", "tinymodels:mlp", "--dynamic", "batch=x:0:2", "--no-search")
    assert rc == 0 and f"symbols: batch = {symbol}" in out


def test_dynamic_upper_bound_plans_the_largest_batch(capsys, models_dir):
    """With ``MAX``, StaticPlanBlockMemory sizes every tensor at the upper bound: the same
    bytes as a static export at that batch size."""
    dynamic = _plan_json(capsys, "tinymodels:mlp", "--dynamic", "batch=0:0:2:64", "--mode", "tvm")
    static = _plan_json(capsys, "tinymodels:mlp64", "--mode", "tvm")
    assert _figures(dynamic)[0][3:5] == _figures(static)[0][3:5]
    assert _figures(dynamic)[0][3] > _figures(_plan_json(capsys, "tinymodels:mlp"))[0][3]


@pytest.mark.parametrize("spec, message", [
    ("tinymodels:data_dependent", "tinymodels:data_dependent: torch.export.export cannot export the model"),
    ("tinymodels:not_a_model", "must return (torch.nn.Module, example_inputs); got int"),
    ("tinymodels:raises", "calling it raised RuntimeError: no weights here"),
    ("tinymodels:missing", "module 'tinymodels' has no attribute 'missing'"),
    ("tinymodels:NOT_CALLABLE", "'NOT_CALLABLE' is a int, not a callable"),
    ("no_such_module_xyz:build", "cannot import module 'no_such_module_xyz'"),
])
def test_bad_callable_is_one_line(capsys, models_dir, spec, message):
    rc, out, err = run_cli(capsys, "plan", spec)
    assert rc == 1 and out == ""
    _one_line_error(err, message)


def test_unsupported_operator_is_named(capsys, models_dir):
    from memcore_py.frontend.exported_program import unsupported_operators

    missing = unsupported_operators(_exported(models_dir, "histogram").run_decompositions())
    if not missing:
        pytest.skip("the importer converts aten.histc now; pick another operator")
    rc, out, err = run_cli(capsys, "plan", "tinymodels:histogram")
    assert rc == 1 and out == ""
    _one_line_error(err, "tinymodels:histogram", *missing)


@pytest.mark.parametrize("argv, message", [
    (["--dynamic", "batch"], "expected NAME=INPUT:DIM"),
    (["--dynamic", "batch=0:-1"], "DIM must be >= 0"),
    (["--dynamic", "batch=0:0:9:3"], "MIN 9 > MAX 3"),
    (["--dynamic", "batch=y:0"], "has no example input 'y'"),
    (["--dynamic", "batch=0:5"], "has no dimension 5"),
    (["--dynamic", "b=0:0:2:8", "--dynamic", "b=0:1:2:9"], "given twice with different bounds"),
])
def test_bad_dynamic_is_usage_error(capsys, models_dir, argv, message):
    rc, _, err = run_cli(capsys, "plan", "tinymodels:mlp", *argv)
    assert rc == 2
    _one_line_error(err, message)


def test_dynamic_needs_a_callable(capsys, mlp_pt2):
    rc, _, err = run_cli(capsys, "plan", mlp_pt2, "--dynamic", "b=0:0")
    assert rc == 2
    _one_line_error(err, "--dynamic applies to module:function")


def _truncated(src, dst):
    dst.write_bytes(src.read_bytes()[: src.stat().st_size // 2])


def _random_bytes(src, dst):
    dst.write_bytes(np.random.default_rng(0).integers(0, 256, 4096, dtype=np.uint8).tobytes())


def _foreign_zip(src, dst):
    with zipfile.ZipFile(dst, "w") as z:
        z.writestr("archive/version", "1")


def _corrupt_model_json(src, dst):
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for item in zin.infolist():
            data = zin.read(item.filename)
            zout.writestr(item, b"{not json" if item.filename.endswith("models/model.json") else data)


@pytest.mark.parametrize("damage", [_truncated, _random_bytes, _foreign_zip, _corrupt_model_json])
def test_bad_pt2_is_one_line(capsys, mlp_pt2, damage):
    bad = mlp_pt2.parent / "bad.pt2"
    damage(mlp_pt2, bad)
    rc, out, err = run_cli(capsys, "plan", bad)
    assert rc == 1 and out == ""
    _one_line_error(err, f"{bad}: not a readable torch.export archive (.pt2)")


def test_missing_pt2(capsys, tmp_path):
    rc, _, err = run_cli(capsys, "plan", tmp_path / "none.pt2")
    assert rc == 1
    _one_line_error(err, "none.pt2", "no such file")


@pytest.mark.slow
def test_pt2_without_tvm_and_quiet_failures(mlp_pt2, models_dir):
    """In a fresh interpreter where ``import tvm`` fails, a ``.pt2`` plans and TVM is never
    imported; a model torch cannot export leaves nothing on stderr but the error line (torch
    prints and logs its failures before raising them)."""
    script = (
        "import sys; sys.modules['tvm'] = None\n"
        "from memcore_py.cli import main\n"
        f"rc = main(['plan', {str(mlp_pt2)!r}, '--no-search'])\n"
        "assert rc == 0, rc\n"
        "assert not [m for m in sys.modules if m.startswith('tvm.')], 'tvm was imported'\n"
        "sys.exit(main(['plan', 'tinymodels:data_dependent']))\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=models_dir, env=env,
                          timeout=300)
    assert proc.returncode == 1, proc.stderr
    assert "arena bytes" in proc.stdout
    _one_line_error(proc.stderr, "tinymodels:data_dependent")


@pytest.mark.parametrize("kind", ["pt2", "callable"])
def test_without_torch_is_one_line(capsys, tmp_path, monkeypatch, kind):
    """Without torch (``import torch`` failing), a ``.pt2`` file or a callable is an error
    naming the missing extra, not a traceback."""
    path = tmp_path / "m.pt2"
    path.write_bytes(b"PK")
    monkeypatch.setitem(sys.modules, "torch", None)
    source = str(path) if kind == "pt2" else "somepkg.models:build"
    rc, out, err = run_cli(capsys, "plan", source)
    assert rc == 1 and out == ""
    _one_line_error(err, f"{source}: ", 'pip install "memcore[torch]"')


@pytest.mark.oracle
def test_pt2_tvm_mode_bytes_are_tvms(capsys, tvm, mlp_pt2):
    """TVM-mode bytes of a ``.pt2`` equal Apache TVM's: its importer on the same loaded and
    decomposed program, then its unfused pipeline up to StaticPlanBlockMemory."""
    import torch
    from tvm import relax
    from tvm.relax.frontend.torch import from_exported_program

    ep = torch.export.load(str(mlp_pt2)).run_decompositions()
    mod = from_exported_program(ep, keep_params_as_input=True, run_ep_decomposition=False)
    passes = ("LegalizeOps", "AnnotateTIROpPattern", "FoldConstant", "RewriteDataflowReshape", "ToNonDataflow",
              "RemovePurityChecking", "CallTIRRewrite", "StaticPlanBlockMemory")
    out = tvm.transform.Sequential([getattr(relax.transform, p)() for p in passes])(mod)
    sizes = [int(b.value.args[0].values[0]) for blk in out["main"].body.blocks for b in blk.bindings
             if isinstance(b.value, relax.Call) and isinstance(b.value.op, tvm.ir.Op)
             and b.value.op.name == "relax.memory.alloc_storage"]
    fn = _plan_json(capsys, mlp_pt2, "--mode", "tvm")["modules"][0]["functions"][0]
    assert (fn["tvm"]["bytes"], fn["tvm"]["n_storages"]) == (sum(sizes), len(sizes))
