"""``memcore plan FILE --bound NAME=[MIN]:MAX``: a symbolic dimension bounded from the
command line is planned for its upper bound, for an ONNX file (``from_onnx``'s
``dim_bounds``), a ``torch.export`` ``.pt2`` file (``from_exported_program``'s
``dim_bounds``, intersected with the export's range) and TVMScript text (the
``tir_var_*_bound`` attributes of every function having the variable).

The expected figures come from the Python API path (import with ``dim_bounds``, lower, run
``StaticPlanBlockMemory`` in each mode, sum the ``R.memory.alloc_storage`` sizes of the
printed result), or from ``--bind`` at the upper bound, never from the report code.
Every bad ``--bound`` is one ``memcore plan: error:`` line with exit status 2.
"""
import json
import re

import numpy as np
import pytest

from memcore_py.cli._common import UsageError
from memcore_py.cli.plan_inputs import parse_bound

from _helpers import run_cli

#: Two functions over ``n``: ``main`` allocates two (n, 4) float32 tensors live together and
#: an (8,) one; ``helper`` one (n, 4) tensor.
SYMBOLIC = '''# from tvm.script import ir as I
# from tvm.script import tirx as T
# from tvm.script import relax as R

@I.ir_module
class Module:
    @T.prim_func(private=True)
    def k2(A0: T.handle, A1: T.handle):
        T.evaluate(0)

    @R.function(pure=False)
    def helper(x: R.Tensor(("n", 4), dtype="float32")) -> R.Tensor(("n", 4), dtype="float32"):
        n = T.int64()
        cls = Module
        a: R.Tensor((n, 4), dtype="float32") = R.builtin.alloc_tensor(R.shape([n, 4]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        cls.k2(x, a)
        b: R.Tensor((n, 4), dtype="float32") = R.builtin.alloc_tensor(R.shape([n, 4]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        cls.k2(a, b)
        return b

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

_STORAGE = re.compile(r"R\.memory\.alloc_storage\(R\.shape\(\[(\d+)\]\)")


def _one_line_error(err, *needles):
    assert err.count("\n") == 1 and err.startswith("memcore plan: error: "), err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in err, (needle, err)


def _functions(out) -> dict:
    (module,) = json.loads(out)["modules"]
    return {f["name"]: f for f in module["functions"]}


def _api_bytes(mod) -> dict:
    """``{mode: bytes}`` of ``main`` after the Python API's lowering and planning: the sum of
    the constant ``R.memory.alloc_storage`` sizes in the planned text."""
    from memcore_py.transform import (CallTIRRewrite, LowerForPlanning, RemovePurityChecking, Sequential,
                                      StaticPlanBlockMemory, ToNonDataflow)

    lowered = Sequential([LowerForPlanning(), ToNonDataflow(), RemovePurityChecking(), CallTIRRewrite()])(mod)
    out = {}
    for mode in ("tvm", "arena"):
        text = StaticPlanBlockMemory(mode=mode, time_limit=None)(lowered).script()
        out[mode] = sum(int(m) for m in _STORAGE.findall(text))
    return out


def _check_against_api(fn, api):
    assert isinstance(fn["arena"]["bytes"], int) and fn["arena"]["expr"] is None
    assert fn["tvm"]["bytes"] == api["tvm"]
    assert fn["arena"]["bytes"] == api["arena"]
    assert fn["lower_bound"] <= fn["arena"]["bytes"] <= fn["tvm"]["bytes"]


# ---------------------------------------------------------------------------------- parsing
def test_parse_bound_forms():
    assert parse_bound(["seq=1:128", "b=:8,c=0:0"]) == {"seq": (1, 128), "b": (0, 8), "c": (0, 0)}
    assert parse_bound([]) == {}


@pytest.mark.parametrize("item, needle", [
    ("seq=128", "NAME=N is --bind's form"),
    ("seq=1:", "expected NAME=MIN:MAX"),
    ("=1:2", "expected NAME=MIN:MAX"),
    ("seq=a:3", "MIN must be an integer"),
    ("seq=1:2.5", "MAX must be an integer"),
    ("seq=-1:3", "must be >= 0"),
    ("seq=9:3", "MIN 9 > MAX 3"),
])
def test_parse_bound_refuses(item, needle):
    with pytest.raises(UsageError, match=re.escape(needle)):
        parse_bound([item])


def test_parse_bound_refuses_a_name_twice():
    with pytest.raises(UsageError, match="'seq' given twice"):
        parse_bound(["seq=1:8", "seq=1:8"])


# ---------------------------------------------------------------------------------- TVMScript
@pytest.fixture()
def symbolic_file(tmp_path):
    path = tmp_path / "sym.py"
    path.write_text(SYMBOLIC)
    return path


def test_tvmscript_bound_equals_bind_at_the_upper_bound(capsys, symbolic_file):
    rc, out, err = run_cli(capsys, "plan", symbolic_file, "--json", "--no-search")
    assert rc == 0, err
    assert all(f["tvm"]["bytes"] is None for f in _functions(out).values())  # symbolic without a bound
    rc, out, err = run_cli(capsys, "plan", symbolic_file, "--json", "--no-search", "--bind", "n=64")
    assert rc == 0, err
    at_64 = _functions(out)
    rc, out, err = run_cli(capsys, "plan", symbolic_file, "--json", "--no-search", "--bound", "n=1:64")
    assert rc == 0, err
    assert json.loads(out)["bounds"] == {"n": [1, 64]}
    bounded = _functions(out)
    assert set(bounded) == {"helper", "main"}  # every function having n is bounded
    for name, fn in bounded.items():
        assert fn["tvm"]["bytes"] == at_64[name]["tvm"]["bytes"] > 0, name
        assert fn["lower_bound"] <= fn["arena"]["bytes"] <= fn["tvm"]["bytes"]


def test_tvmscript_bound_narrows_the_text_attribute(capsys, tmp_path):
    path = tmp_path / "sym32.py"
    path.write_text(SYMBOLIC.replace('        n = T.int64()\n        cls = Module\n        a:',
                                     '        n = T.int64()\n        R.func_attr({"tir_var_upper_bound": {"n": 32}})\n'
                                     '        cls = Module\n        a:', 1))
    rc, out, err = run_cli(capsys, "plan", path, "--no-search", "--bound", "n=:1000")
    assert rc == 0, err
    assert "dim bounds: n in [0, 1000] (helper [0, 32], main [0, 1000])" in out  # helper records 32
    rc, out, err = run_cli(capsys, "plan", path, "--bound", "n=100:1000")
    assert rc == 2
    _one_line_error(err, "--bound n=100:1000", "'helper'", "[0, 32]")


@pytest.mark.parametrize("argv, needles", [
    (["--bound", "m=1:8"], ["--bound: 'm' is not a shape variable", "'n'"]),
    (["--bound", "n=8:1"], ["MIN 8 > MAX 1"]),
    (["--bound", "n=x:8"], ["MIN must be an integer"]),
    (["--bound", "n=1:8", "--bound", "n=1:8"], ["'n' given twice"]),
    (["--bound", "n=8"], ["NAME=N is --bind's form"]),
])
def test_tvmscript_bad_bound_is_one_line(capsys, symbolic_file, argv, needles):
    rc, out, err = run_cli(capsys, "plan", symbolic_file, *argv)
    assert rc == 2 and out == ""
    _one_line_error(err, *needles)


def test_bound_on_inputs_without_symbolic_dims(capsys, tmp_path):
    csv = tmp_path / "p.csv"
    csv.write_text("id,lower,upper,size\n0,0,2,8\n")
    rc, _, err = run_cli(capsys, "plan", csv, "--bound", "n=1:8")
    assert rc == 2
    _one_line_error(err, "--bound applies to models with symbolic dimensions", "CSV")
    graph = tmp_path / "g.json"
    graph.write_text("{}")
    rc, _, err = run_cli(capsys, "plan", graph, "--bound", "n=1:8")
    assert rc == 2
    _one_line_error(err, "graph-executor JSON")
    rc, _, err = run_cli(capsys, "plan", "--bound", "n=1:8")
    assert rc == 2
    _one_line_error(err, "--bound needs a FILE")


# ---------------------------------------------------------------------------------- ONNX
@pytest.fixture()
def dynamic_onnx(tmp_path):
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"], name="mm1"),
             helper.make_node("Relu", ["h"], ["r"], name="relu"),
             helper.make_node("MatMul", ["r", "w2"], ["h2"], name="mm2"),
             helper.make_node("Relu", ["h2"], ["r2"], name="relu2"),
             helper.make_node("MatMul", ["r2", "w3"], ["y"], name="mm3")]
    inits = [numpy_helper.from_array(rng.standard_normal(s).astype("float32"), n)
             for n, s in (("w1", (16, 64)), ("w2", (64, 32)), ("w3", (32, 16)))]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["seq", 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["seq", 16])], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    path = tmp_path / "dyn.onnx"
    path.write_bytes(model.SerializeToString())
    return path, model


def test_onnx_bound_plans_as_from_onnx_with_dim_bounds(capsys, dynamic_onnx):
    from memcore_py.frontend import from_onnx

    path, model = dynamic_onnx
    rc, out, err = run_cli(capsys, "plan", path, "--json", "--no-search")
    assert rc == 0, err
    (fn,) = _functions(out).values()
    assert fn["arena"]["bytes"] is None and "seq" in fn["arena"]["expr"]  # unbounded: symbolic
    rc, out, err = run_cli(capsys, "plan", path, "--json", "--no-search", "--bound", "seq=1:128")
    assert rc == 0, err
    assert json.loads(out)["bounds"] == {"seq": [1, 128]}
    (fn,) = _functions(out).values()
    _check_against_api(fn, _api_bytes(from_onnx(model, dim_bounds={"seq": (1, 128)})))
    rc, text, err = run_cli(capsys, "plan", path, "--no-search", "--bound", "seq=1:128")
    assert rc == 0, err
    assert "dim bounds: seq in [1, 128]" in text


def test_onnx_bound_unknown_name(capsys, dynamic_onnx):
    path, _ = dynamic_onnx
    rc, out, err = run_cli(capsys, "plan", path, "--bound", "batch=1:8")
    assert rc == 2 and out == ""
    _one_line_error(err, "--bound", "dyn.onnx", "'batch'", "'seq'")


MLP_PY = '''
import torch


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 64)
        self.fc2 = torch.nn.Linear(64, 16)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def make():
    torch.manual_seed(0)
    return MLP(), (torch.randn(4, 16),)
'''


# ---------------------------------------------------------------------------------- .pt2
@pytest.fixture(scope="module")
def dynamic_pt2(tmp_path_factory):
    torch = pytest.importorskip("torch")

    namespace: dict = {}
    exec(MLP_PY, namespace)  # the model the callable test imports from a file
    MLP = namespace["MLP"]
    torch.manual_seed(0)
    seq = torch.export.Dim("seq", max=512)
    ep = torch.export.export(MLP().eval(), (torch.randn(4, 16),), dynamic_shapes={"x": {0: seq}})
    path = tmp_path_factory.mktemp("pt2") / "mlp.pt2"
    torch.export.save(ep, str(path))
    (symbol,) = [str(s) for s in ep.range_constraints]
    return path, ep.run_decompositions(), symbol


def test_pt2_bound_plans_as_from_exported_program_with_dim_bounds(capsys, dynamic_pt2):
    from memcore_py.frontend import from_exported_program

    path, ep, sym = dynamic_pt2
    rc, out, err = run_cli(capsys, "plan", path, "--json", "--no-search")
    assert rc == 0, err
    (exported,) = _functions(out).values()  # the export's own range: planned for 512
    rc, out, err = run_cli(capsys, "plan", path, "--json", "--no-search", "--bound", f"{sym}=:128")
    assert rc == 0, err
    assert json.loads(out)["bounds"] == {sym: [0, 128]}
    (fn,) = _functions(out).values()
    _check_against_api(fn, _api_bytes(from_exported_program(ep, run_ep_decomposition=False,
                                                             dim_bounds={sym: (0, 128)})))
    assert fn["tvm"]["bytes"] < exported["tvm"]["bytes"]
    # a wider bound cannot widen the export's range: planned as the file says
    rc, out, err = run_cli(capsys, "plan", path, "--json", "--no-search", "--bound", f"{sym}=1:1000")
    assert rc == 0, err
    assert json.loads(out)["bounds"] == {sym: [1, 512]}
    (wide,) = _functions(out).values()
    assert wide["tvm"]["bytes"] == exported["tvm"]["bytes"]


@pytest.mark.parametrize("bound, needles", [
    ("seq=1:8", ["'seq'", "which no input has as a symbolic dimension"]),
    ("{sym}=600:1000", ["does not meet the range [0, 512]"]),
])
def test_pt2_bad_bound_is_one_line(capsys, dynamic_pt2, bound, needles):
    path, _, sym = dynamic_pt2
    rc, out, err = run_cli(capsys, "plan", path, "--bound", bound.format(sym=sym))
    assert rc == 2 and out == ""
    _one_line_error(err, "--bound: ", "mlp.pt2", *needles)


def test_from_exported_program_dim_bounds_validation(dynamic_pt2):
    from memcore_py.errors import FrontendError
    from memcore_py.frontend import from_exported_program

    _, ep, sym = dynamic_pt2
    mod = from_exported_program(ep, run_ep_decomposition=False, dim_bounds={sym: (2, 64)})
    attrs = mod["main"].attrs
    assert attrs["tir_var_lower_bound"][sym] == 2 and attrs["tir_var_upper_bound"][sym] == 64
    for bad in ((5, 2), (-1, 4), ("a", 4), 7):
        with pytest.raises(FrontendError, match=re.escape(f"dim_bounds[{sym!r}]")):
            from_exported_program(ep, run_ep_decomposition=False, dim_bounds={sym: bad})


# ---------------------------------------------------------------------------------- module:function



def test_callable_bound_takes_the_dynamic_name(capsys, dynamic_pt2, tmp_path, monkeypatch):
    import sys

    path, _, sym = dynamic_pt2
    (tmp_path / "boundmlp.py").write_text(MLP_PY)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(sys.modules, "boundmlp", raising=False)
    rc, out, err = run_cli(capsys, "plan", "boundmlp:make", "--json", "--no-search", "--dynamic", "seq=0:0",
                           "--bound", "seq=:128")
    assert rc == 0, err
    doc = json.loads(out)
    (symbol,) = doc["bounds"]
    assert doc["bounds"][symbol] == [0, 128] and doc["modules"][0]["symbols"] == {"seq": symbol}
    (fn,) = _functions(out).values()
    rc, out, err = run_cli(capsys, "plan", path, "--json", "--no-search", "--bound", f"{sym}=:128")
    assert rc == 0, err
    (same,) = _functions(out).values()  # the same layers exported with a range: the same plan at 128
    assert (fn["tvm"]["bytes"], fn["arena"]["bytes"]) == (same["tvm"]["bytes"], same["arena"]["bytes"])
    rc, out, err = run_cli(capsys, "plan", "boundmlp:make", "--dynamic", "seq=0:0", "--bound", "seq=:128",
                           "--bound", f"{symbol}=:64")
    assert rc == 2 and out == ""
    _one_line_error(err, f"'seq' and '{symbol}' are the same dimension")
    sys.modules.pop("boundmlp", None)
