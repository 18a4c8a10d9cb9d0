"""``memcore plan model.onnx``: ONNX files written with ``onnx.helper`` (no torch needed) are
imported with :func:`memcore_py.frontend.onnx_model.from_onnx` and planned like a ``.pt2``
file; the report's stages are ``onnx.load``, ``import``, ``lowering``; a ``dim_param`` is a
``--bind`` name. Every bad input (unsupported operators, a truncated file, a model without
shapes, a missing file, ``--dynamic``, onnx not installed) is one line on stderr naming the
file and what is wrong, exit status 1 (2 for usage), no traceback."""
import json
import sys

import numpy as np
import pytest

from _helpers import run_cli

onnx = pytest.importorskip("onnx")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

F = TensorProto.FLOAT


def _one_line_error(err, *needles):
    assert err.count("\n") == 1 and err.startswith("memcore plan: error: "), err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in err, (needle, err)


def _save(tmp_path, name, nodes, inputs, outputs, inits=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    path = tmp_path / name
    path.write_bytes(model.SerializeToString())
    return path


def _convnet(tmp_path, batch=1, name="net.onnx"):
    rng = np.random.default_rng(0)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node("Conv", ["r", "w2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["c2", "r"], ["s"], name="residual"),
             helper.make_node("GlobalAveragePool", ["s"], ["p"], name="gap"),
             helper.make_node("Flatten", ["p"], ["f"], name="flatten"),
             helper.make_node("Gemm", ["f", "fw"], ["y"], name="fc", transB=1)]
    inits = [numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype("float32"), "w"),
             numpy_helper.from_array(rng.standard_normal((8, 8, 3, 3)).astype("float32"), "w2"),
             numpy_helper.from_array(rng.standard_normal((10, 8)).astype("float32"), "fw")]
    return _save(tmp_path, name, nodes, [helper.make_tensor_value_info("x", F, [batch, 3, 16, 16])],
                 [helper.make_tensor_value_info("y", F, None)], inits)


def test_plan_onnx_file_reports_bytes_and_stages(capsys, tmp_path):
    path = _convnet(tmp_path)
    rc, out, err = run_cli(capsys, "plan", path, "--json")
    assert rc == 0, err
    doc = json.loads(out)
    (module,) = doc["modules"]
    assert list(module["stages"]) == ["onnx.load", "import", "lowering"]
    (fn,) = module["functions"]
    # activations of 1x8x16x16 float32 (8 KiB): conv, relu, conv2, add cannot all share one
    assert fn["name"] == "main" and fn["tvm"]["bytes"] >= fn["lower_bound"] >= 2 * 8 * 16 * 16 * 4


def test_plan_onnx_dim_param_is_a_bind_name(capsys, tmp_path):
    path = _convnet(tmp_path, batch="batch")
    rc, out, err = run_cli(capsys, "plan", path, "--bind", "batch=2", "--json")
    assert rc == 0, err
    (fn,) = json.loads(out)["modules"][0]["functions"]
    rc1, out1, err1 = run_cli(capsys, "plan", _convnet(tmp_path, batch=2, name="two.onnx"), "--json")
    assert rc1 == 0, err1
    (static,) = json.loads(out1)["modules"][0]["functions"]
    # the same tensors at batch 2: the same lower bound; a symbolic plan is never smaller
    assert fn["lower_bound"] == static["lower_bound"] > 0
    assert fn["tvm"]["bytes"] >= static["tvm"]["bytes"] >= static["lower_bound"]


def test_unsupported_operators_are_all_named_in_one_line(capsys, tmp_path):
    nodes = [helper.make_node("Det", ["x"], ["n"], name="det"),
             helper.make_node("AllClassNMS", ["x", "k"], ["v"], name="nms")]
    path = _save(tmp_path, "bad.onnx", nodes, [helper.make_tensor_value_info("x", F, [4])],
                 [helper.make_empty_tensor_value_info("n"), helper.make_empty_tensor_value_info("v")],
                 [numpy_helper.from_array(np.array([2], "int64"), "k")])
    rc, out, err = run_cli(capsys, "plan", path)
    assert rc == 1 and out == ""
    _one_line_error(err, "bad.onnx", "2 operator(s)", "Det (nodes det)", "AllClassNMS (nodes nms)")


def test_truncated_file_is_one_line(capsys, tmp_path):
    data = _convnet(tmp_path).read_bytes()
    cut = tmp_path / "cut.onnx"
    cut.write_bytes(data[: len(data) // 3])
    rc, out, err = run_cli(capsys, "plan", cut)
    assert rc == 1 and out == ""
    _one_line_error(err, "cut.onnx", "not a")


def test_model_without_shapes_names_the_values(capsys, tmp_path):
    path = _save(tmp_path, "noshape.onnx", [helper.make_node("Relu", ["x"], ["y"], name="relu")],
                 [helper.make_tensor_value_info("x", F, None)], [helper.make_tensor_value_info("y", F, None)])
    rc, out, err = run_cli(capsys, "plan", path)
    assert rc == 1 and out == ""
    _one_line_error(err, "noshape.onnx", "no shape", "graph input 'x'", "shape_dict")


def test_missing_file_is_one_line(capsys, tmp_path):
    rc, out, err = run_cli(capsys, "plan", tmp_path / "none.onnx")
    assert rc == 1 and out == ""
    _one_line_error(err, "none.onnx", "no such file")


def test_dynamic_is_a_usage_error_for_onnx(capsys, tmp_path):
    rc, out, err = run_cli(capsys, "plan", _convnet(tmp_path), "--dynamic", "b=0:0")
    assert rc == 2 and out == ""
    _one_line_error(err, "--dynamic applies to module:function inputs")


def test_missing_onnx_names_the_extra(capsys, tmp_path, monkeypatch):
    path = _convnet(tmp_path)
    monkeypatch.setitem(sys.modules, "onnx", None)
    rc, out, err = run_cli(capsys, "plan", path)
    assert rc == 1 and out == ""
    _one_line_error(err, "net.onnx", "memcore[onnx]")
