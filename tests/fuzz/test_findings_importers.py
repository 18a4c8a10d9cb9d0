"""Regression tests for fuzz findings in the readers: H1 (split sections), U1-U3 (graph JSON
and ONNX inputs that escaped as untyped Python errors), and around the findings of the
2026-12-06 file campaign (FUZZING.md; its F3, C1, C2 and H1 reproductions are in
``test_fuzz_targets.py``): what else ONNX's shape inference aborts the process on, the LSTM
unrolling cap, a zero ``Range`` delta, a CSV row the csv module cannot read.

Each test holds the reproduction (built in ``tmp_path``) and checks the typed error of the
library and, where a file can be planned, the one-line message and exit status 1 of
``memcore plan`` (status 3 is an internal error).
"""
from __future__ import annotations

import json

import pytest
from _helpers import run_cli

from memcore_py import parse
from memcore_py.errors import FrontendError, IRError
from memcore_py.frontend import from_onnx, read_graph_json
from memcore_py.ir import infer_type
from memcore_py.planning.graph_model import GraphError


def _assert_one_line_error(capsys, path, message: str) -> None:
    rc, _, err = run_cli(capsys, "plan", path)
    assert rc == 1, err
    assert err.count("\n") == 1 and err.startswith("memcore plan: error: "), err
    assert message in err and "internal error" not in err


# ------------------------------------------------------------------------------------ H1
SPLIT = '''
# from tvm.script import ir as I
# from tvm.script import relax as R
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, {dim}), dtype="float32")):
        parts = R.split(x, indices_or_sections={n}, axis=1)
        return parts
'''


@pytest.mark.parametrize("dim", ["8", '"n"'])
def test_split_into_more_sections_than_supported_is_an_ir_error(dim):
    n = 2**40  # fuzz input 7272: building one field per section never finishes
    mod = parse(SPLIT.format(dim=dim, n=n))
    call = mod["main"].body.blocks[0].bindings[0].value
    with pytest.raises(IRError, match=rf"relax\.split: indices_or_sections = {n} sections .*at most 65536"):
        infer_type(call)



def test_split_into_more_sections_than_elements_has_empty_parts_as_in_tvm():
    ty = parse(SPLIT.format(dim="8", n=9))["main"].body.blocks[0].bindings[0].var.ty
    assert [f.shape[1].value for f in ty.fields] == [1] * 8 + [0]


# ------------------------------------------------------------------------------------ U1
def test_graph_json_nested_too_deeply_is_a_graph_error(tmp_path, capsys):
    path = tmp_path / "deep.json"
    path.write_text('{"nodes": ' + "[" * 100000 + "]" * 100000 + "}")
    with pytest.raises(GraphError, match=r"deep\.json: malformed JSON: input is nested too deeply"):
        read_graph_json(path)
    _assert_one_line_error(capsys, path, "nested too deeply")


# ------------------------------------------------------------------------------------ U2
def _graph_doc() -> dict:
    return {
        "nodes": [{"op": "null", "name": "x", "inputs": []},
                  {"op": "tvm_op", "name": "f", "inputs": [[0, 0, 0]],
                   "attrs": {"func_name": "f", "num_inputs": "1", "num_outputs": "1", "flatten_data": "0"}}],
        "arg_nodes": [0], "heads": [[1, 0, 0]], "node_row_ptr": [0, 1, 2],
        "attrs": {"shape": ["list_shape", [[2, 2], [2, 2]]], "dltype": ["list_str", ["float32", "float32"]],
                  "device_index": ["list_int", [1, 1]], "storage_id": ["list_int", [0, 1]]},
    }


BIG = 2**63


def _set_num_outputs(d, v):
    d["nodes"][1]["attrs"]["num_outputs"] = str(v)


@pytest.mark.parametrize("edit, message", [
    (lambda d: d["attrs"]["shape"][1].__setitem__(1, [2, BIG]),
     r"node 1 'f' output 0 \(entry 1\): shape dimension 9223372036854775808 is out of the int64 range"),
    (lambda d: d["attrs"]["shape"][1].__setitem__(1, [2**40, 2**40]),
     r"node 1 'f' output 0 \(entry 1\): shape \[1099511627776, 1099511627776\] of float32 is 2\*\*63 bytes"),
    (lambda d: d["nodes"][1]["inputs"][0].__setitem__(0, BIG), r"node 1 'f': input 0 node = 9223372036854775808"),
    (lambda d: d["nodes"][1]["inputs"][0].__setitem__(1, -BIG - 1),
     r"node 1 'f': input 0 index = -9223372036854775809"),
    (lambda d: d["heads"][0].__setitem__(0, BIG), r"head 0 node = 9223372036854775808 is out of the int64 range"),
    (lambda d: d["heads"][0].__setitem__(1, BIG), r"head 0 index = 9223372036854775808"),
    (lambda d: d["attrs"]["device_index"][1].__setitem__(1, BIG), r"attrs\.device_index\[1\] = 9223372036854775808"),
    (lambda d: d["node_row_ptr"].__setitem__(2, BIG), r"node_row_ptr\[2\] = 9223372036854775808"),
    (lambda d: _set_num_outputs(d, BIG), r"node 1 'f': attrs\.num_outputs = 9223372036854775808"),
    (lambda d: _set_num_outputs(d, -(2**40)), r"node 1 'f': attrs\.num_outputs must be >= 0; got -1099511627776"),
], ids=["dim", "bytes", "input-node", "input-index", "head-node", "head-index", "device", "row-ptr",
        "num-outputs", "negative-num-outputs"])
def test_graph_json_integer_outside_int64_is_a_graph_error(tmp_path, capsys, edit, message):
    doc = _graph_doc()
    edit(doc)
    with pytest.raises(GraphError, match=message):
        read_graph_json(doc)
    path = tmp_path / "g.json"
    path.write_text(json.dumps(doc))
    _assert_one_line_error(capsys, path, "g.json: ")


def test_graph_json_integer_too_long_to_read_is_a_graph_error(tmp_path, capsys):
    path = tmp_path / "g.json"
    path.write_text(json.dumps(_graph_doc()).replace("[[1, 0, 0]]", "[[" + "1" * 5000 + ", 0, 0]]"))
    with pytest.raises(GraphError, match=r"g\.json: malformed JSON: an integer has more than \d+ digits"):
        read_graph_json(path)
    _assert_one_line_error(capsys, path, "an integer has more than")


# ------------------------------------------------------------------------------------ U3
def _onnx_model_bytes(onnx) -> bytes:
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("xxxx", TensorProto.FLOAT, [2, "nnnn"])
    y = helper.make_tensor_value_info("yyyy", TensorProto.FLOAT, [2, "nnnn"])
    nodes = [helper.make_node("Relu", ["xxxx"], ["mmmm"], name="relu"),
             helper.make_node("Softmax", ["mmmm"], ["yyyy"], name="soft", axis=1)]
    graph = helper.make_graph(nodes, "main_graph", [x], [y])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


@pytest.mark.parametrize("text, field", [
    ("main_graph", "graph name"),
    ("xxxx", "graph input #0 name"),
    ("nnnn", "graph input 'xxxx': dimension 1 dim_param"),
    ("mmmm", "node #0 output 0"),
    ("relu", "node #0 name"),
    ("Relu", "node #0 op_type"),
    ("axis", "node #1 attribute 0 name"),
])
def test_onnx_name_not_utf8_is_a_frontend_error(tmp_path, capsys, text, field):
    onnx = pytest.importorskip("onnx")
    data = _onnx_model_bytes(onnx)
    assert text.encode() in data
    data = data.replace(text.encode(), text[:1].encode() + b"\xcf" + text[2:].encode())  # 0xcf: a cut sequence
    model = onnx.ModelProto()
    model.ParseFromString(data)  # protobuf accepts it, as onnx.load does
    with pytest.raises(FrontendError, match=rf"the ONNX {field} is not valid UTF-8: b'{text[:1]}\\xcf"):
        from_onnx(model)
    path = tmp_path / "bad_name.onnx"
    path.write_bytes(data)
    _assert_one_line_error(capsys, path, f"bad_name.onnx: the ONNX {field} is not valid UTF-8")


def test_onnx_string_attribute_not_utf8_is_a_frontend_error():
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    node = helper.make_node("Gelu", ["x"], ["y"], name="gelu", approximate="tanh")
    model = helper.make_model(helper.make_graph([node], "g", [x], [y]), opset_imports=[helper.make_opsetid("", 20)])
    bad = onnx.ModelProto()
    bad.ParseFromString(model.SerializeToString().replace(b"tanh", b"t\xcfnh"))
    with pytest.raises(FrontendError, match=r"node 'gelu' \(Gelu\): attribute 'approximate' is not valid UTF-8"):
        from_onnx(bad)



# ------------------------------------------------------------ the file campaigns (FUZZING.md)
@pytest.mark.parametrize("dltype", [["float32"], {"a": 1}])
def test_graph_json_dltype_of_a_list_or_dict_is_a_graph_error(tmp_path, capsys, dltype):
    doc = _graph_doc()
    doc["attrs"]["dltype"][1][1] = dltype
    path = tmp_path / "g.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(GraphError, match="dltype must be a string"):
        read_graph_json(path)
    _assert_one_line_error(capsys, path, "dltype must be a string")


def test_minimalloc_csv_not_utf8_names_its_line_and_byte(tmp_path, capsys):
    from memcore import InvalidArrayError, read_minimalloc_csv

    path = tmp_path / "p.csv"
    path.write_bytes(b"id,lower,upper,size\n0,0,3,8\n1,3,5,1\xff6\n")
    with pytest.raises(InvalidArrayError, match=r"p\.csv:3: the file is not UTF-8 text \(byte 35"):
        read_minimalloc_csv(path)
    _assert_one_line_error(capsys, path, "not UTF-8")


def test_minimalloc_csv_field_over_the_csv_limit_names_the_line_its_row_starts_on(tmp_path, capsys):
    from memcore import InvalidArrayError, read_minimalloc_csv

    path = tmp_path / "p.csv"
    path.write_bytes(b'id,lower,upper,size\n0,0,3,8\n\n1,3,"5\n' + b"x\n" * 70000)  # the quote runs on to the end
    with pytest.raises(InvalidArrayError, match=r"p\.csv:4: the row cannot be read as CSV: field larger than field "
                       r"limit \(131072\)"):
        read_minimalloc_csv(path)
    _assert_one_line_error(capsys, path, "p.csv:4: the row cannot be read as CSV")


# ------------------------------------- ONNX: what ONNX's shape inference aborts the process on
#: Case -> (the model, built by code run after ONNX_ABORTS_HEAD, and the FrontendError's message,
#: "" for none). Each one but ``shape-dict`` aborted the process (SIGABRT) in
#: ``onnx.shape_inference.infer_shapes`` before from_onnx refused it (C1 and C2 of the
#: 2026-12-06 campaign, and their relatives found by hand): a negative dimension reaching
#: ``Slice``'s inference, or a ``Split`` with more outputs than ``num_outputs``.
ONNX_ABORTS = {
    "value-info": (
        'm = model([N("Relu", ["x"], ["r"]), SLICE("r")], [value("x", [2, 4])], [value("y")], SLICE_INITS,'
        ' [value("r", [2, -4])])',
        "value_info 'r': dimension 1 has dim_value -4; a dimension must be >= 0"),
    "shape-dict": (
        'm = model([SLICE("x")], [value("x", [2, -1])], [value("y")], SLICE_INITS); SHAPE_DICT = {"x": [2, 4]}', ""),
    "float-initializer": (
        'w = numpy_helper.from_array(np.zeros((2, 4), "float32"), "w"); w.dims[1] = -1\n'
        'm = model([SLICE("w")], [], [value("y")], SLICE_INITS + [w])',
        "initializer 'w': dims must be >= 0; got [2, -1]"),
    "int-initializer": (
        'd = ints("d", [1, 2, 3, 4]); d.dims[0] = -4\n'
        'm = model([N("Slice", ["d", "st", "en", "zero"], ["y"])], [], [value("y", elem=TensorProto.INT64)],'
        ' SLICE_INITS + [d, ints("zero", [0])])',
        "initializer 'd': dims must be >= 0; got [-4]"),
    "constant": (
        't = numpy_helper.from_array(np.zeros((2, 4), "float32")); t.dims[1] = -1\n'
        'm = model([N("Constant", [], ["c"], name="c", value=t), SLICE("c")], [], [value("y")], SLICE_INITS)',
        "node 'c' (Constant): attribute 'value': dims must be >= 0; got [2, -1]"),
    "sparse-constant": (
        'sp = helper.make_sparse_tensor(numpy_helper.from_array(np.ones(1, "float32"), "v"),'
        ' ints("i", [0]), [2, -4])\n'
        'm = model([N("Constant", [], ["c"], name="c", sparse_value=sp), SLICE("c")], [], [value("y")], SLICE_INITS)',
        "node 'c' (Constant): attribute 'sparse_value': dims must be >= 0; got [2, -4]"),
    "expand-initializer": (
        'm = model([N("Expand", ["x", "s"], ["e"], name="e"), SLICE("e")], [value("x", [2, 1])], [value("y")],'
        ' SLICE_INITS + [ints("s", [2, -3])])',
        "node 'e' (Expand): the shape (input 1, 's') must be >= 0 in every entry; got -3 at entry 1"),
    "expand-constant": (
        'm = model([N("Constant", [], ["s"], value=numpy_helper.from_array(np.array([2, -1], "int64"))),'
        ' N("Expand", ["x", "s"], ["e"], name="e"), SLICE("e")], [value("x", [2, 1])], [value("y")], SLICE_INITS)',
        "node 'e' (Expand): the shape (input 1, 's') must be >= 0 in every entry; got -1 at entry 1"),
    "split-sizes": (
        'm = model([N("Split", ["x", "sp"], ["a", "b"], name="s", axis=1), SLICE("a")], [value("x", [2, 4])],'
        ' [value("y"), value("b")], SLICE_INITS + [ints("sp", [-1, 5])])',
        "node 's' (Split): the split sizes (input 1, 'sp') must be >= 0 in every entry; got -1 at entry 0"),
    "split-attribute": (
        'm = model([N("Split", ["x"], ["a", "b"], name="s", axis=1, split=[-1, 5]), SLICE("a")],'
        ' [value("x", [2, 4])], [value("y"), value("b")], SLICE_INITS, opset=11)',
        "node 's' (Split): attribute 'split' must be >= 0 in every entry; got -1 at entry 0"),
    "split-unnamed-output": (
        'm = model([N("Split", ["x"], ["a", ""], name="s", axis=1, num_outputs=1)], [value("x", [2, 4])],'
        ' [value("a")])',
        "node 's' (Split): num_outputs must be its number of outputs, 2; got 1"),
    "split-num-outputs-of-another-type": (
        'node = N("Split", ["x"], ["a", "b"], name="s", axis=1, num_outputs=1)\n'
        'node.attribute[1].type = onnx.AttributeProto.FLOATS  # inference still reads its int\n'
        'm = model([node], [value("x", [2, 4])], [value("a"), value("b")])',
        "node 's' (Split): num_outputs must be its number of outputs, 2; got 1"),
}

ONNX_ABORTS_HEAD = '''
import json, os, sys, tempfile
from contextlib import redirect_stderr
from io import StringIO
import numpy as np, onnx
from onnx import TensorProto, helper, numpy_helper
from memcore_py.cli import main
from memcore_py.errors import MemcoreError
from memcore_py.frontend import from_onnx

N = helper.make_node

def model(nodes, inputs, outputs, inits=(), value_info=(), opset=20):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits), value_info=list(value_info))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])

def value(name, dims=None, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, dims)

def ints(name, values):
    return numpy_helper.from_array(np.array(values, "int64"), name)

def SLICE(x):  # Slice(x, [0], [5], [1]): its shape inference asserted on a negative dimension of x
    return N("Slice", [x, "st", "en", "ax"], ["y"])

SLICE_INITS = [ints("st", [0]), ints("en", [5]), ints("ax", [1])]
TMP = tempfile.TemporaryDirectory()  # removed when the process ends
'''

ONNX_ABORTS_RUN = '''
    error = ""
    try:
        from_onnx(m, shape_dict=SHAPE_DICT)
    except MemcoreError as exc:
        error = f"{type(exc).__name__}: {exc}"
    path = os.path.join(TMP.name, CASE + ".onnx")
    onnx.save(m, path)
    err = StringIO()
    with redirect_stderr(err):
        rc = main(["plan", "--no-search", path])
    print(json.dumps({"case": CASE, "error": error, "rc": rc, "stderr": err.getvalue()}), flush=True)
'''


@pytest.fixture(scope="module")
def onnx_abort_results():
    """Every :data:`ONNX_ABORTS` model through ``from_onnx`` and ``memcore plan``, in one
    fresh Python (an abort ends only that one): case -> its result, the cases after an
    abort missing."""
    import subprocess
    import sys
    import textwrap

    pytest.importorskip("onnx")
    code = ONNX_ABORTS_HEAD
    for case, (source, _) in ONNX_ABORTS.items():
        code += f"\nif True:\n    CASE, SHAPE_DICT = {case!r}, None\n{textwrap.indent(source, '    ')}{ONNX_ABORTS_RUN}"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=300, text=True)
    out = {}
    for line in result.stdout.splitlines():
        record = json.loads(line)
        out[record["case"]] = record
    out["<died>"] = f"exit status {result.returncode}: {result.stderr[-500:]}"
    return out


@pytest.mark.parametrize("case", list(ONNX_ABORTS))
def test_onnx_value_shape_inference_aborts_on_is_refused_first(onnx_abort_results, case):
    record = onnx_abort_results.get(case)
    assert record is not None, f"the process died at or before {case!r}: {onnx_abort_results['<died>']}"
    message = ONNX_ABORTS[case][1]
    if not message:  # shape-dict: imports; memcore plan, without the shape_dict, refuses
        assert record["error"] == "" and record["rc"] == 1
        assert record["stderr"].endswith(": graph input 'x': dimension 1 has dim_value -1; a dimension must be >= 0\n")
        return
    assert record["error"] == f"FrontendError: {message}"
    assert record["rc"] == 1 and record["stderr"].startswith("memcore plan: error: ")
    assert record["stderr"].count("\n") == 1 and record["stderr"].endswith(f": {message}\n")


def test_onnx_lstm_over_more_steps_than_unrolled_is_a_frontend_error():
    pytest.importorskip("onnx")
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    from memcore_py.frontend._onnx_math import MAX_LSTM_STEPS

    assert MAX_LSTM_STEPS == 2**14  # the docstring of _onnx_math._lstm argues for it
    inits = [numpy_helper.from_array(np.zeros((1, 16, 3), "float32"), "W"),
             numpy_helper.from_array(np.zeros((1, 16, 4), "float32"), "R")]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [MAX_LSTM_STEPS + 1, 1, 3])
    graph = helper.make_graph([helper.make_node("LSTM", ["x", "W", "R"], ["y"], name="lstm", hidden_size=4)], "g",
                              [x], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    with pytest.raises(FrontendError, match=r"node 'lstm' \(LSTM\): the sequence length must be at most 16384 to "
                       r"unroll the LSTM \(one set of bindings per step\); got 16385"):
        from_onnx(model)


@pytest.mark.parametrize("delta", [0, 0.0])
def test_onnx_range_with_a_zero_delta_is_a_frontend_error(tmp_path, capsys, delta):
    onnx = pytest.importorskip("onnx")
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    dtype, elem = ("int64", TensorProto.INT64) if isinstance(delta, int) else ("float32", TensorProto.FLOAT)
    inits = [numpy_helper.from_array(np.array(v, dtype), n) for n, v in (("a", 0), ("b", 5), ("d", delta))]
    graph = helper.make_graph([helper.make_node("Range", ["a", "b", "d"], ["y"], name="range")], "g", [],
                              [helper.make_tensor_value_info("y", elem, None)], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    with pytest.raises(FrontendError, match=r"node 'range' \(Range\): delta must not be zero"):
        from_onnx(model)
    path = tmp_path / "range.onnx"
    onnx.save(model, str(path))
    _assert_one_line_error(capsys, path, "delta must not be zero")
