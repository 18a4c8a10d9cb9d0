"""``memcore`` command line: --version, check, fmt; exit codes and messages, no tracebacks."""
import gzip
import os
import re
import subprocess
import sys

import pytest

import memcore_py
from memcore_py.cli import SUBCOMMANDS
from memcore_py.examples import DEFAULT_EXAMPLE, example_path, example_text, list_examples, load
from memcore_py.testing import random_module

from _helpers import REPO_ROOT, run_cli, tvm_from_source


def test_version(capsys):
    rc, out, err = run_cli(capsys, "--version")
    assert rc == 0 and out.strip() == f"memcore {memcore_py.__version__}"


def test_no_command_prints_help_and_exits_2(capsys):
    rc, out, err = run_cli(capsys)
    assert rc == 2 and "COMMAND" in err
    for name in SUBCOMMANDS:
        assert name in err


def test_unknown_command_and_option_are_usage_errors(capsys):
    rc, out, err = run_cli(capsys, "frob")
    assert rc == 2 and "invalid choice: 'frob'" in err and "Traceback" not in err
    rc, out, err = run_cli(capsys, "check", "--bogus")
    assert rc == 2 and "unrecognized arguments: --bogus" in err
    rc, out, err = run_cli(capsys, "fmt")
    assert rc == 2 and "the following arguments are required: FILE" in err


def test_check_without_file_checks_the_shipped_example(capsys):
    rc, out, err = run_cli(capsys, "check")
    assert rc == 0, err
    lines = out.splitlines()
    assert lines[0] == f"{example_path(DEFAULT_EXAMPLE)}: well-formed"
    assert lines[1:] == [
        "functions: 7 (1 Relax, 6 PrimFunc)",
        "bindings: 18",
        "blocks: 1 (0 dataflow)",
    ]


def test_check_counts_dataflow_blocks_and_branches(capsys, tmp_path):
    mod = random_module(3, 120)
    path = tmp_path / "m.py"
    path.write_text(mod.script())
    rc, out, err = run_cli(capsys, "check", path)
    assert rc == 0, err
    from memcore_py.cli.check import module_counts

    c = module_counts(mod)
    assert c["bindings"] == 120
    assert "bindings: 120" in out
    assert f"blocks: {c['blocks']} ({c['dataflow_blocks']} dataflow)" in out
    assert c["dataflow_blocks"] > 0


def test_check_reads_stdin_and_gzip(capsys, tmp_path, monkeypatch):
    import io

    monkeypatch.setattr(sys, "stdin", io.StringIO(example_text("conv_block")))
    rc, out, err = run_cli(capsys, "check", "-")
    assert rc == 0 and out.startswith("-: well-formed")
    gz = tmp_path / "m.py.gz"
    with gzip.open(gz, "wt") as fh:
        fh.write(example_text("mlp"))
    rc, out, err = run_cli(capsys, "check", gz)
    assert rc == 0 and "bindings: 18" in out


def test_check_parse_error_exit_1_with_location(capsys, tmp_path):
    path = tmp_path / "bad.py"
    path.write_text(example_text("mlp").replace("R.builtin.alloc_tensor(", "R.builtin.alloc_tensor((", 1))
    rc, out, err = run_cli(capsys, "check", path)
    assert rc == 1 and out == ""
    # one line, compiler-style location FILE:LINE:COLUMN
    assert re.match(rf"memcore check: error: {re.escape(str(path))}:\d+:\d+: \S", err)
    assert err.count("\n") == 1 and "Traceback" not in err


def test_check_ill_formed_module_lists_every_problem(capsys, tmp_path):
    text = """@R.function
def main(x: R.Tensor((2, 3), "float32")):
    a: R.Tensor((2, 3), "float32") = R.add(x, x)
    b: R.Tuple = R.memory.kill_tensor(a)
    c: R.Tuple = R.memory.kill_tensor(a)
    return a
"""
    path = tmp_path / "impure.py"
    path.write_text(text)
    rc, out, err = run_cli(capsys, "check", path)
    assert rc == 1
    # every problem on stdout, one line each; one error line on stderr
    problems = out.splitlines()
    assert len(problems) == 2
    assert all(p.startswith(f"{path}: ") and "is pure but makes an impure call relax.memory.kill_tensor" in p
               for p in problems)
    assert err.count("\n") == 1
    assert err.startswith(f"memcore check: error: {path}: 2 well-formedness problem(s); the first: ")


def test_check_missing_file(capsys):
    rc, out, err = run_cli(capsys, "check", "/nonexistent/m.py")
    assert rc == 1
    assert err.strip() == "memcore check: error: cannot read '/nonexistent/m.py': No such file or directory"


def test_fmt_reprints_and_is_idempotent(capsys, tmp_path):
    rc, out, err = run_cli(capsys, "fmt", example_path("conv_block"))
    assert rc == 0, err
    assert out == load("conv_block").script().rstrip("\n") + "\n"
    path = tmp_path / "once.py"
    path.write_text(out)
    rc, out2, err = run_cli(capsys, "fmt", path)
    assert rc == 0 and out2 == out


def test_fmt_output_file_and_stdin(capsys, tmp_path, monkeypatch):
    import io

    src = random_module(1, 50).script()
    monkeypatch.setattr(sys, "stdin", io.StringIO(src))
    target = tmp_path / "out.py"
    rc, out, err = run_cli(capsys, "fmt", "-", "-o", target)
    assert rc == 0 and out == ""
    assert target.read_text() == memcore_py.parse(src).script().rstrip("\n") + "\n"
    rc, out, err = run_cli(capsys, "fmt", example_path("mlp"), "-o", tmp_path / "no" / "such" / "dir.py")
    assert rc == 1 and "memcore fmt: error: cannot write" in err


def test_fmt_parse_error(capsys, tmp_path):
    path = tmp_path / "bad.py"
    path.write_text("not tvmscript at all\n")
    rc, out, err = run_cli(capsys, "fmt", path)
    assert rc == 1 and out == "" and err.startswith(f"memcore fmt: error: {path}:1:1: ")


def test_examples_loader():
    assert set(list_examples()) >= {"mlp", "conv_block"}
    for name in list_examples():
        mod = load(name)
        assert memcore_py.ir.well_formed(mod)
    with pytest.raises(KeyError, match="unknown example 'nope'; shipped examples are"):
        load("nope")


@pytest.mark.oracle
def test_shipped_examples_parse_in_tvm(tvm):
    for name in list_examples():
        tvm_from_source(example_text(name))


def test_python_dash_m_runs_without_traceback(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    ok = subprocess.run([sys.executable, "-m", "memcore_py", "check"], capture_output=True, text=True, env=env)
    assert ok.returncode == 0 and "well-formed" in ok.stdout
    bad = tmp_path / "bad.py"
    bad.write_text("@R.function\ndef main(:\n")
    res = subprocess.run([sys.executable, "-m", "memcore_py", "check", str(bad)], capture_output=True, text=True,
                         env=env)
    assert res.returncode == 1 and "Traceback" not in res.stderr and res.stderr.startswith("memcore check: error:")
    usage = subprocess.run([sys.executable, "-m", "memcore_py", "check", "a", "b"], capture_output=True, text=True,
                           env=env)
    assert usage.returncode == 2 and "Traceback" not in usage.stderr


def test_one_version_for_both_packages_and_the_distribution():
    from importlib.metadata import version

    import memcore

    assert memcore_py.__version__ == memcore.__version__ == version("memcore")
