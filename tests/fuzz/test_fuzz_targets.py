"""The CI slice of the file and bridge fuzz targets: a few hundred deterministic inputs each
of ``onnx``, ``graph-json`` and ``csv`` (:mod:`memcore_py.testing.fuzz_files`) and a hundred
``bridge`` modules (:mod:`memcore_py.testing.fuzz_bridge`), the same checks
``tools/fuzz.py`` runs in long campaigns (FUZZING.md).

Hypothesis draws the seeds with ``derandomize=True``, so every run sees the same inputs; a
failure prints its seed, and ``fuzz_input(target, file_corpus(target), seed)`` (file, suffix,
``memcore plan`` options) /
``bridge_input(seed)`` rebuild the input. A violation that FUZZING.md records as open is
allowed only where :data:`OPEN_FINDINGS` names it, and each open finding has a strict xfail
reproduction below, which fails (and asks for the entry to go) once the finding is fixed.
"""
from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memcore_py.cli import main as cli_main
from memcore_py.testing import fuzz_files
from _helpers import tvm_from_source

SEEDS = st.integers(min_value=0, max_value=2**40)

#: Open findings of the fuzz campaigns (FUZZING.md, "Open findings"): id -> a pattern every
#: part of the violation matches.
OPEN_FINDINGS = {
}


def _fast(n: int):
    """Deterministic, no deadline (first calls fill caches), no example database."""
    return settings(max_examples=n, derandomize=True, deadline=None, database=None,
                    suppress_health_check=list(HealthCheck))


def _assert_only_open(problem, seed, allowed):
    """``problem`` is None, or each of its parts is one of the ``allowed`` open findings."""
    if problem is None:
        return
    for part in problem.split(" | "):
        assert any(re.search(OPEN_FINDINGS[k], part) for k in allowed), f"seed {seed}: {problem}"


def _file_check(target, seed, corpus):
    data, suffix, options = fuzz_files.fuzz_input(target, corpus, seed)
    return fuzz_files.check_file(target, data, suffix, options, cli_main=cli_main)


@pytest.fixture(scope="module")
def corpora():
    return {target: fuzz_files.file_corpus(target) for target in ("csv", "graph-json")}


@_fast(400)
@given(seed=SEEDS)
def test_fuzz_csv(corpora, seed):
    _assert_only_open(_file_check("csv", seed, corpora["csv"]), seed, ())


@_fast(250)
@given(seed=SEEDS)
def test_fuzz_graph_json(corpora, seed):
    _assert_only_open(_file_check("graph-json", seed, corpora["graph-json"]), seed, ())


@pytest.fixture(scope="module")
def onnx_corpus():
    pytest.importorskip("onnx")
    return fuzz_files.file_corpus("onnx")


@_fast(250)
@given(seed=SEEDS)
def test_fuzz_onnx(onnx_corpus, seed):
    _assert_only_open(_file_check("onnx", seed, onnx_corpus), seed, ())


@pytest.mark.oracle
@_fast(60)
@given(seed=SEEDS)
def test_fuzz_bridge(seed):
    pytest.importorskip("tvm")
    from memcore_py.testing import fuzz_bridge

    m = fuzz_bridge.bridge_input(seed)
    problem = m if isinstance(m, str) else fuzz_bridge.check_bridge(m)
    _assert_only_open(problem, seed, ())


def test_the_checks_can_fail(tmp_path):
    """The invariants are real: a plan the verifier must refuse is refused, and a CLI that
    exits with an internal error is reported."""
    import numpy as np

    bad = fuzz_files._verify_offsets(np.array([0, 0]), np.array([3, 3]), np.array([8, 8]), np.array([0, 4]), 12, None,
                                     "a hand-made plan")
    assert bad is not None and bad.startswith("verify:")
    assert fuzz_files._max_live(np.array([0, 2, 5]), np.array([3, 6, 5]), np.array([4, 8, 16])) == 24
    path = tmp_path / "p.csv"
    path.write_bytes(b"id,lower,upper,size\n0,0,3,8\n1,3,5,16\n")
    assert fuzz_files.check_csv(str(path)) is None
    assert fuzz_files.check_plan_cli(str(path), cli_main) is None


@pytest.mark.parametrize("target", ["csv", "graph-json", "onnx"])
def test_corpus_files_pass_and_mutations_are_deterministic(target):
    if target == "onnx":
        pytest.importorskip("onnx")
    corpus = fuzz_files.file_corpus(target)
    for data in corpus[:6]:
        info: dict = {}
        assert fuzz_files.check_file(target, data, info=info, cli_main=cli_main) is None
        assert info.get("planned"), "every corpus file imports and plans"
    for seed in range(1, 6):
        assert fuzz_files.mutate_file(target, corpus, seed) == fuzz_files.mutate_file(target, corpus, seed)


# ------------------------------------------------------------------------------ the campaigns' findings
def test_f3_csv_field_over_the_csv_limit_is_an_invalid_array_error_naming_its_line(tmp_path):
    """F3 (FUZZING.md): an unterminated quote runs a field past the csv module's limit."""
    from memcore import InvalidArrayError, read_minimalloc_csv

    data = b'id,lower,upper,size\n"' + b"x" * 131072 + b"\n"
    path = tmp_path / "p.csv"
    path.write_bytes(data)
    with pytest.raises(InvalidArrayError, match=r"p\.csv:2: the row cannot be read as CSV: field larger than field "
                       r"limit \(131072\)"):
        read_minimalloc_csv(path)
    assert fuzz_files.check_file("csv", data, cli_main=cli_main) is None


ONNX_HEAD = """
import numpy as np
from onnx import TensorProto, helper, numpy_helper
from memcore_py.errors import MemcoreError
from memcore_py.frontend import from_onnx

def model(nodes, inputs, outputs, inits=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])

def value(name, dims=None):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, dims)
"""

C1_MODEL = """
init = [numpy_helper.from_array(np.array([v], "int64"), n) for n, v in (("st", 1), ("en", 5), ("ax", 1))]
m = model([helper.make_node("Slice", ["x", "st", "en", "ax"], ["y"])], [value("x", [2, -1])], [value("y")], init)
"""

C2_MODEL = """
split = helper.make_node("Split", ["x"], ["a", "b"], axis=1, num_outputs=1)
m = model([split], [value("x", [2, 4])], [value("a"), value("b")])
"""


def _import_error(source: str) -> str:
    """Import the model ``source`` builds in a fresh Python (an abort ends only that one);
    ``"<error type>: <message>"`` of the MemcoreError it raises, or ``""``."""
    import subprocess
    import sys

    pytest.importorskip("onnx")
    code = (ONNX_HEAD + source + "\ntry:\n    from_onnx(m)\nexcept MemcoreError as exc:\n"
            "    print(f'{type(exc).__name__}: {exc}')\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120)
    assert result.returncode == 0, result.stderr.decode(errors="replace")[-300:]
    return result.stdout.decode().strip()


def test_c1_negative_dim_value_is_a_frontend_error_before_shape_inference():
    """C1 (FUZZING.md): ONNX's shape inference aborts the process on it."""
    assert _import_error(C1_MODEL) == ("FrontendError: graph input 'x': dimension 1 has dim_value -1; a dimension "
                                       "must be >= 0")


def test_c2_split_num_outputs_not_its_outputs_is_a_frontend_error_before_shape_inference():
    """C2 (FUZZING.md): ONNX's shape inference aborts the process on it."""
    assert _import_error(C2_MODEL) == ("FrontendError: node unnamed Split node: num_outputs must be its number of "
                                       "outputs, 2; got 1")


class _Late(Exception):
    pass


def test_h1_lstm_over_a_huge_sequence_is_a_frontend_error_at_once():
    """H1 (FUZZING.md): the importer unrolled the LSTM step by step."""
    import signal

    import numpy as np

    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    from memcore_py.errors import FrontendError
    from memcore_py.frontend import from_onnx

    inits = [numpy_helper.from_array(np.zeros((1, 16, 3), "float32"), "W"),
             numpy_helper.from_array(np.zeros((1, 16, 4), "float32"), "R")]
    graph = helper.make_graph([helper.make_node("LSTM", ["x", "W", "R"], ["y"], hidden_size=4)], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2**40, 1, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    del onnx

    def late(signum, frame):
        raise _Late()

    previous = signal.signal(signal.SIGALRM, late)
    signal.setitimer(signal.ITIMER_REAL, 2.0)
    try:
        with pytest.raises(FrontendError, match=r"unnamed LSTM node: the sequence length must be at most 16384 .*; "
                           r"got 1099511627776"):
            from_onnx(model)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


HEAD = "# from tvm.script import ir as I\n# from tvm.script import relax as R\n@I.ir_module\nclass Module:\n"


@pytest.mark.oracle
def test_b1_to_tvm_of_an_unannotated_return_builds_what_tvms_parser_builds():
    """B1 (FUZZING.md, fixed): the function gets the return type TVM's parser derives."""
    pytest.importorskip("tvm")
    import tvm_ffi

    import memcore_py
    from memcore_py.tvm import to_tvm

    text = HEAD + """    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32")):
        return x
"""
    assert tvm_ffi.structural_equal(to_tvm(memcore_py.parse(text)), tvm_from_source(text))


def _bridge_problem(body: str):
    pytest.importorskip("tvm")
    from memcore_py.testing import fuzz_bridge

    return fuzz_bridge.check_bridge(tvm_from_source(HEAD + body))


@pytest.mark.oracle
def test_b2_a_type_valued_call_attribute_is_read_by_from_tvm_as_from_tvms_text():
    """B2 (FUZZING.md, fixed)."""
    assert _bridge_problem("""    @R.function(pure=False)
    def main(x: R.Tensor((2, 3), dtype="float32")):
        y: R.Tensor((2, 3), dtype="float32") = R.call_packed("f", x, foo=(R.Tensor((2, 3), dtype="float32"),))
        return y
""") is None


@pytest.mark.oracle
def test_b3_a_non_ascii_string_reads_from_tvms_escaped_utf8_bytes():
    """B3 (FUZZING.md, fixed)."""
    assert _bridge_problem("""    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
        y: R.Tensor((2, 3), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("float32"), 0,
                                                                      R.str("gl\u00e9"))
        return y
""") is None
