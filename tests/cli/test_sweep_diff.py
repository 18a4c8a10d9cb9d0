"""``memcore sweep`` (variants from the command line, JSON/CSV out, the exit status) and
``memcore diff`` (a regression gate: an injected +1 byte fails it, identical results pass)."""
from __future__ import annotations

import csv
import json

import pytest

from memcore_py.cli._common import UsageError
from memcore_py.cli.sweep import parse_values

from _helpers import run_cli


@pytest.mark.parametrize(("text", "values"), [
    ("128", [128]),
    ("1,2,4", [1, 2, 4]),
    ("128:4096:x2", [128, 256, 512, 1024, 2048, 4096]),
    ("128:1024:256", [128, 384, 640, 896]),
    ("5:5:1", [5]),
])
def test_bind_values(text, values):
    assert parse_values(text, "n") == values


@pytest.mark.parametrize(("text", "message"), [
    ("a", "'a' is not an integer"),
    ("1:2", "a range is START:STOP:STEP"),
    ("1:8:x1", "the step must be >= 1"),
    ("0:8:x2", "cannot start at 0"),
    ("4:2:1", "no values"),
    ("-3", "is negative"),
    ("0:100000000:1", "more than"),
])
def test_bad_bind_values_are_usage_errors(text, message):
    with pytest.raises(UsageError, match=message):
        parse_values(text, "n")


def test_sweep_writes_json_that_diff_accepts_and_an_injected_regression_fails(capsys, tmp_path):
    old = tmp_path / "old.json"
    rc, out, err = run_cli(capsys, "sweep", "resnet50", "llama_small", "--mode", "tvm,arena", "--executor", "serial",
                           "--out", old)
    assert rc == 0, err
    doc = json.loads(old.read_text())
    assert [(r["model"], r["mode"]) for r in doc["results"]] == [
        ("resnet50", "tvm"), ("resnet50", "arena"), ("llama_small", "tvm"), ("llama_small", "arena")]
    assert "resnet50" in out and "llama_small" in out
    rc, out, err = run_cli(capsys, "diff", old, old)
    assert rc == 0, err
    assert "0 regression(s)" in out
    grown = json.loads(old.read_text())
    grown["results"][1]["arena_bytes"] += 1
    new = tmp_path / "new.json"
    new.write_text(json.dumps(grown))
    rc, out, err = run_cli(capsys, "diff", old, new)
    assert rc == 1
    assert "REGRESSION: resnet50 arena: arena_bytes" in out and "1 regression(s)" in err
    rc, out, err = run_cli(capsys, "diff", old, new, "--max-bytes-growth", "1%")  # +1 byte is within 1 %
    assert rc == 0, err
    shrunk = json.loads(old.read_text())
    shrunk["results"][0]["tvm_bytes"] -= 64
    new.write_text(json.dumps(shrunk))
    rc, out, err = run_cli(capsys, "diff", old, new)
    assert rc == 0 and "changed: resnet50 tvm: tvm_bytes" in out


def test_diff_fails_on_a_missing_or_newly_failing_variant(capsys, tmp_path):
    old = tmp_path / "old.json"
    assert run_cli(capsys, "sweep", "resnet50", "--mode", "tvm,arena", "--executor", "serial", "--out", old)[0] == 0
    doc = json.loads(old.read_text())
    missing = tmp_path / "missing.json"
    missing.write_text(json.dumps({"results": doc["results"][:1]}))
    rc, out, _err = run_cli(capsys, "diff", old, missing)
    assert rc == 1 and "missing from the new results" in out
    failing = json.loads(old.read_text())
    failing["results"][0].update(error="PassError: boom", tvm_bytes=None)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(failing))
    rc, out, _err = run_cli(capsys, "diff", old, bad)
    assert rc == 1 and "failed: PassError: boom" in out


@pytest.mark.parametrize(("content", "message"), [
    ("not json", "not JSON"),
    ('{"rows": []}', "not a memcore sweep result file"),
    ('{"results": [{"model": "m"}]}', "lacks model, bind, mode or fuse"),
])
def test_diff_reports_a_bad_file_in_one_line(capsys, tmp_path, content, message):
    path = tmp_path / "x.json"
    path.write_text(content)
    rc, _out, err = run_cli(capsys, "diff", path, path)
    assert rc == 1 and message in err and err.count("\n") == 1


def test_sweep_over_a_bound_dimension_to_csv(capsys, tmp_path):
    from test_plan_symbolic import SYMBOLIC

    model = tmp_path / "sym.py"
    model.write_text(SYMBOLIC)
    out_csv = tmp_path / "r.csv"
    rc, out, err = run_cli(capsys, "sweep", model, "--bind", "n=2:8:x2", "--mode", "tvm", "--executor", "serial",
                           "--out", out_csv)
    assert rc == 0, err
    rows = list(csv.DictReader(out_csv.open()))
    assert [(r["bind"], int(r["tvm_bytes"])) for r in rows] == [("n=2", 96), ("n=4", 160), ("n=8", 288)]


def test_a_failed_variant_sets_the_exit_status_and_the_rest_is_printed(capsys, tmp_path):
    rc, out, err = run_cli(capsys, "sweep", "resnet50", tmp_path / "nope.py", "--mode", "tvm", "--executor", "serial")
    assert rc == 1
    assert "1 of 2 variants failed" in err and err.count("\n") == 1
    assert "resnet50" in out and "no such file" in out


@pytest.mark.parametrize(("argv", "message"), [
    (["--out", "r.txt"], "must end in .json or .csv"),
    (["--plot", "p.gif", "--bind", "n=1,2"], "must end in .png"),
    (["--plot", "p.png"], "exactly one --bind with several values"),
    (["--bind", "n"], "expected NAME=VALUES"),
    (["--bind", "n=1", "--bind", "n=2"], "given twice"),
    (["--mode", "fast"], "--mode: expected tvm, arena"),
    (["--jobs", "0"], "--jobs must be >= 1"),
])
def test_usage_errors(capsys, argv, message):
    rc, _out, err = run_cli(capsys, "sweep", "resnet50", *argv)
    assert rc == 2 and message in err and err.count("\n") == 1
