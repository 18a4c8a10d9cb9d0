"""``memcore plan``: table, JSON, --print-ir, --passes, and errors (exit codes, no tracebacks)."""
import json
import subprocess
import sys

import pytest

import memcore_py
from memcore_py.cli import main
from memcore_py.examples.models import list_models, model_text

from _helpers import run_cli

SMALL_MODEL = "llama_small"


@pytest.fixture(scope="module")
def model_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("plan") / f"{SMALL_MODEL}.py"
    path.write_text(model_text(SMALL_MODEL))
    return path


def test_plan_file_prints_table(capsys, model_file):
    rc, out, err = run_cli(capsys, "plan", model_file)
    assert rc == 0, err
    header, rule, row, footer = out.strip().splitlines()
    assert header.split()[:5] == ["module", "function", "bindings", "allocs", "planned"]
    assert row.split()[1] == "main"
    assert footer == ("mode: arena; passes: static-plan-block-memory,lower-alloc-tensor,kill-after-last-use; "
                      "times: best of 5 runs per mode (steady state)")


def test_plan_without_argument_plans_shipped_models(capsys):
    rc, out, err = run_cli(capsys, "plan")
    assert rc == 0, err
    lines = out.strip().splitlines()
    rows, rule, totals = lines[2:-3], lines[-3], lines[-2]
    assert [r.split()[0] for r in rows] == sorted(list_models())
    assert set(rule) <= {"-", " "} and totals.split()[:3] == ["total", str(len(rows)), "functions"]


def test_plan_gzipped_file(capsys, tmp_path):
    import gzip

    path = tmp_path / "m.py.gz"
    with gzip.open(path, "wt") as fh:
        fh.write(model_text(SMALL_MODEL))
    rc, out, err = run_cli(capsys, "plan", path, "--json")
    assert rc == 0, err
    assert json.loads(out)["modules"][0]["name"] == str(path)


@pytest.mark.parametrize("mode", ["tvm", "arena"])
def test_json_schema(capsys, model_file, mode):
    rc, out, err = run_cli(capsys, "plan", model_file, "--json", "--mode", mode)
    assert rc == 0, err
    doc = json.loads(out)
    assert doc["mode"] == mode
    assert doc["passes"] == ["static-plan-block-memory", "lower-alloc-tensor", "kill-after-last-use"]
    (module,) = doc["modules"]
    assert set(module) == {"name", "tvm_seconds", "arena_seconds", "timing", "bind", "functions"}
    (func,) = module["functions"]
    assert set(func) == {"name", "n_bindings", "n_allocs", "n_planned", "tvm", "arena", "lower_bound", "reference_bytes"}
    assert set(func["tvm"]) == set(func["arena"]) == {"n_storages", "bytes", "expr"}
    assert func["name"] == "main"
    assert func["lower_bound"] <= func["arena"]["bytes"] <= func["tvm"]["bytes"]
    assert func["reference_bytes"] is None  # only the shipped models carry TVM's own result


def test_json_without_argument_carries_tvm_reference(capsys):
    rc, out, err = run_cli(capsys, "plan", "--json")
    assert rc == 0, err
    for module in json.loads(out)["modules"]:
        (func,) = module["functions"]
        assert func["reference_bytes"] == func["tvm"]["bytes"]  # TVM-exact mode


@pytest.mark.parametrize("mode", ["tvm", "arena"])
def test_print_ir_parses_back(capsys, model_file, mode):
    rc, out, err = run_cli(capsys, "plan", model_file, "--print-ir", "--mode", mode)
    assert rc == 0, err
    mod = memcore_py.parse(out)
    text = mod.script()
    assert "R.builtin.alloc_tensor" not in text  # LowerAllocTensor ran
    assert "R.memory.kill_tensor" in text or "R.memory.kill_storage" in text  # KillAfterLastUse ran


def test_passes_option_runs_only_those(capsys, model_file):
    rc, out, err = run_cli(capsys, "plan", model_file, "--print-ir", "--passes", "static-plan-block-memory")
    assert rc == 0, err
    text = memcore_py.parse(out).script()
    assert "R.memory.alloc_storage" in text
    assert "kill" not in text


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--passes", "no-such-pass"], "unknown pass 'no-such-pass'"),
        (["--passes", "kill-after-last-use"], "must include 'static-plan-block-memory' once"),
    ],
)
def test_bad_passes_is_usage_error(capsys, model_file, argv, message):
    rc, out, err = run_cli(capsys, "plan", model_file, *argv)
    assert rc == 2
    assert message in err
    assert "Traceback" not in err


def test_time_limit_reaches_the_bound_and_is_in_json(capsys):
    rc, out, err = run_cli(capsys, "plan", "--json", "--time-limit", "1")
    assert rc == 0, err
    doc = json.loads(out)
    assert doc["time_limit"] == 1.0
    for module in doc["modules"]:
        (func,) = module["functions"]
        assert func["arena"]["bytes"] == func["lower_bound"]


@pytest.mark.parametrize("value", ["0", "-1", "soon", "inf"])
def test_bad_time_limit_is_usage_error(capsys, model_file, value):
    with pytest.raises(SystemExit) as exc:
        main(["plan", str(model_file), "--time-limit", value])
    assert exc.value.code == 2
    assert "--time-limit: must be a positive number of seconds" in capsys.readouterr().err


def test_bad_mode_is_usage_error(capsys, model_file):
    with pytest.raises(SystemExit) as exc:
        main(["plan", str(model_file), "--mode", "best"])
    assert exc.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


def test_missing_file_exit_1(capsys, tmp_path):
    rc, out, err = run_cli(capsys, "plan", tmp_path / "nope.py")
    assert rc == 1
    assert "nope.py" in err and "No such file" in err
    assert out == ""


def test_unparsable_file_exit_1(capsys, tmp_path):
    path = tmp_path / "bad.py"
    path.write_text("@I.ir_module\nclass Module:\n    @R.function\n    def main(x: R.Tensor((2,), \"float32\"):\n")
    rc, out, err = run_cli(capsys, "plan", path)
    assert rc == 1
    assert err.startswith("memcore plan: error: ")
    assert "bad.py:4:" in err and err.count("\n") == 1
    assert "Traceback" not in err


def test_command_line_exit_status_and_no_traceback(tmp_path):
    path = tmp_path / "bad.py"
    path.write_text("this is not TVMScript\n")
    proc = subprocess.run([sys.executable, "-m", "memcore_py", "plan", str(path)], capture_output=True, text=True)
    assert proc.returncode == 1
    assert "memcore plan: error:" in proc.stderr
    assert "Traceback" not in proc.stderr
