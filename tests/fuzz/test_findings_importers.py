"""Regression tests for fuzz findings in the readers: H1 (split sections), U1-U3 (graph JSON
and ONNX inputs that escaped as untyped Python errors).

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
