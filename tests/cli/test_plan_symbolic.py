"""``memcore plan`` on symbolic sizes: totals as expressions, ``--bind``, steady-state times.

The expected figures are worked out by hand from the module below (sizes in bytes of
float32 tensors), not read back from the planner.
"""
import json

import pytest

from memcore_py.analysis.arith import SizePolynomial
from memcore_py.cli.plan import UsageError, parse_bind
from memcore_py.ir.prim import FloorDiv, IntImm, Mul, PrimVar

from _helpers import run_cli

# a = (n, 4) and b = (n, 4) are live together at ``k2(a, b)``; c = (8,) is a constant-size
# tensor used after both; r is returned (unplanned). TVM mode: a, b in two storages of
# 16*n bytes (a is still live when b is allocated), c in its own: 32*n + 32. Lower bound at
# n: max(16n + 16n, 32) = 32n (c is live alone).
SYMBOLIC = '''# from tvm.script import ir as I
# from tvm.script import tirx as T
# from tvm.script import relax as R

@I.ir_module
class Module:
    @T.prim_func(private=True)
    def k2(A0: T.handle, A1: T.handle):
        T.evaluate(0)

    @R.function(pure=False)
    def main(x: R.Tensor(("n", 4), dtype="float32")) -> R.Tensor((8,), dtype="float32"):
        n = T.int64()
        cls = Module
        a: R.Tensor((n, 4), dtype="float32") = R.builtin.alloc_tensor(R.shape([n, 4]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        cls.k2(x, a)
        b: R.Tensor((n, 4), dtype="float32") = R.builtin.alloc_tensor(R.shape([n, 4]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        cls.k2(a, b)
        c: R.Tensor((8,), dtype="float32") = R.builtin.alloc_tensor(R.shape([8]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        cls.k2(b, c)
        r: R.Tensor((8,), dtype="float32") = R.builtin.alloc_tensor(R.shape([8]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        cls.k2(c, r)
        return r
'''


@pytest.fixture()
def symbolic_file(tmp_path):
    path = tmp_path / "sym.py"
    path.write_text(SYMBOLIC)
    return path


def _row(out):
    lines = out.strip().splitlines()
    return lines[0], lines[2], lines[3:]


def test_symbolic_total_is_an_expression(capsys, symbolic_file):
    rc, out, err = run_cli(capsys, "plan", symbolic_file, "--json")
    assert rc == 0, err
    (func,) = json.loads(out)["modules"][0]["functions"]
    assert func["tvm"]["bytes"] is None and func["tvm"]["expr"] == "32*n + 32"
    assert func["arena"]["bytes"] is None and func["arena"]["expr"] == "32*n + 32"
    assert func["lower_bound"] is None
    rc, out, err = run_cli(capsys, "plan", symbolic_file)
    assert rc == 0, err
    header, row, _footer = _row(out)
    assert "32*n + 32" in row and "?" in row  # the lower bound is unknown without --bind


@pytest.mark.parametrize("argv", [["--bind", "n=10"], ["--bind", "n=10,n=10"]])
def test_bind_evaluates_every_figure(capsys, symbolic_file, argv):
    rc, out, err = run_cli(capsys, "plan", symbolic_file, "--json", *argv)
    assert rc == 0, err
    doc = json.loads(out)
    assert doc["bind"] == {"n": 10}
    (func,) = doc["modules"][0]["functions"]
    assert func["tvm"]["bytes"] == 32 * 10 + 32 and func["tvm"]["expr"] is None
    assert func["arena"]["bytes"] == 32 * 10 + 32
    assert func["lower_bound"] == 32 * 10
    rc, out, err = run_cli(capsys, "plan", symbolic_file, *argv)
    assert rc == 0, err
    lines = out.strip().splitlines()
    assert "352 B" in lines[2] and "320 B" in lines[2]
    assert lines[-1] == "bound: n=10"


def test_bind_small_value_where_the_constant_tensor_dominates(capsys, symbolic_file):
    # n = 0: a and b are empty, c alone is live: the bound is c's 32 bytes
    rc, out, err = run_cli(capsys, "plan", symbolic_file, "--json", "--bind", "n=0")
    assert rc == 0, err
    (func,) = json.loads(out)["modules"][0]["functions"]
    assert func["lower_bound"] == 32 and func["tvm"]["bytes"] == 32


def test_timing_header_says_best_of_runs(capsys, symbolic_file):
    rc, out, err = run_cli(capsys, "plan", symbolic_file)
    assert rc == 0, err
    header = out.splitlines()[0]
    assert "tvm ms (best of 5)" in header and "arena ms (best of 5)" in header
    assert "best of 5 runs per mode (steady state)" in out.strip().splitlines()[-1]
    rc, out, err = run_cli(capsys, "plan", symbolic_file, "--json")
    assert json.loads(out)["modules"][0]["timing"] == "best of 5 runs"


@pytest.mark.parametrize("value, message", [
    ("n", "expected NAME=INT"),
    ("=3", "expected NAME=INT"),
    ("n=x", "must be an integer"),
    ("n=1.5", "must be an integer"),
    ("n=-1", "must be >= 0"),
    ("n=1,n=2", "given twice"),
    ("q=3", "'q' is not a shape variable"),
])
def test_bad_bind_is_one_line_usage_error(capsys, symbolic_file, value, message):
    rc, out, err = run_cli(capsys, "plan", symbolic_file, "--bind", value)
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("memcore plan: error: --bind: ") and message in err


def test_parse_bind_repeatable_and_comma_separated():
    assert parse_bind(["n=1", "m=2,k=3"]) == {"n": 1, "m": 2, "k": 3}
    assert parse_bind([]) == {}
    with pytest.raises(UsageError):
        parse_bind(["n=1,"])


def test_size_polynomial_text_and_bind():
    n, m = PrimVar("n"), PrimVar("m")
    poly = SizePolynomial([Mul(IntImm(3072), n), IntImm(1536), Mul(Mul(IntImm(4), n), m), FloorDiv(n, IntImm(2))])
    assert str(poly) == "4*m*n + floordiv(n, 2) + 3072*n + 1536"
    assert poly.variables() == {"n", "m"} and poly.value is None
    assert str(poly.bind({"n": 512})) == "2048*m + 1574656"  # 3072*512 + 1536 + 256
    assert poly.bind({"n": 512, "m": 3}).value == 1574656 + 3 * 2048
    assert str(SizePolynomial([Mul(IntImm(-4), n), IntImm(8)])) == "-4*n + 8"
    assert SizePolynomial([]).value == 0
