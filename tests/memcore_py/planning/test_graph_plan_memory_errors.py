"""Bad graph input -> GraphError (an IRError, a ValueError) naming the node or attr at fault."""
import copy
import json

import pytest

from memcore_py.errors import IRError, MemcoreError
from memcore_py.frontend import GraphError, read_graph_json
from memcore_py.planning import graph_plan_memory

GOOD = {
    "nodes": [
        {"op": "null", "name": "x", "inputs": []},
        {"op": "tvm_op", "name": "conv", "attrs": {"func_name": "conv", "num_inputs": "1", "num_outputs": "1",
                                                   "flatten_data": "0"}, "inputs": [[0, 0, 0]]},
        {"op": "tvm_op", "name": "relu", "attrs": {"func_name": "relu", "num_inputs": "1", "num_outputs": "1",
                                                   "flatten_data": "0"}, "inputs": [[1, 0, 0]]},
    ],
    "arg_nodes": [0],
    "heads": [[2, 0, 0]],
    "node_row_ptr": [0, 1, 2, 3],
    "attrs": {"shape": ["list_shape", [[1, 8], [1, 8], [1, 8]]],
              "dltype": ["list_str", ["float32", "float32", "float32"]]},
}


def bad(edit):
    doc = copy.deepcopy(GOOD)
    edit(doc)
    return doc


def test_good_graph_plans():
    assert graph_plan_memory(read_graph_json(GOOD)).storage_id.tolist() == [0, 1, 2]


def test_error_hierarchy():
    assert issubclass(GraphError, IRError) and issubclass(GraphError, ValueError)
    assert issubclass(GraphError, MemcoreError)


def test_malformed_json():
    with pytest.raises(GraphError, match=r"malformed JSON: .*line 1"):
        read_graph_json('{"nodes": [')


def test_unreadable_file(tmp_path):
    with pytest.raises(GraphError, match=r"missing\.json: cannot read graph JSON: No such file"):
        read_graph_json(tmp_path / "missing.json")


def test_reads_plain_and_gzipped_files(tmp_path):
    import gzip

    (tmp_path / "g.json").write_text(json.dumps(GOOD))
    with gzip.open(tmp_path / "g.json.gz", "wt") as fh:
        fh.write(json.dumps(GOOD))
    assert read_graph_json(tmp_path / "g.json").name == "g.json"
    assert read_graph_json(str(tmp_path / "g.json.gz")).n_entries == 3


@pytest.mark.parametrize("edit, message", [
    (lambda d: d.pop("nodes"), "graph JSON has no 'nodes'"),
    (lambda d: d.pop("heads"), "graph JSON has no 'heads'"),
    (lambda d: d["attrs"].pop("shape"), r"attrs\.shape is missing"),
    (lambda d: d["attrs"].pop("dltype"), r"attrs\.dltype is missing"),
    (lambda d: d["nodes"][1].pop("attrs"), r"node 1 'conv': a 'tvm_op' node needs 'attrs'"),
    (lambda d: d["nodes"][1]["attrs"].pop("func_name"), r"node 1 'conv': attrs\.func_name is missing"),
    (lambda d: d["nodes"][2]["attrs"].pop("num_outputs"), r"node 2 'relu': attrs\.num_outputs is missing"),
    (lambda d: d["nodes"][2]["attrs"].update(num_outputs="two"), r"node 2 'relu': attrs\.num_outputs must be an integer"),
    (lambda d: d["nodes"][1].pop("name"), "node 1 has no 'name'"),
    (lambda d: d["nodes"][1].update(op="conv2d"), r"node 1 'conv': op must be 'null' or 'tvm_op'"),
    (lambda d: d["nodes"][2]["attrs"].update(num_inputs="2"), r"node 2 'relu': attrs\.num_inputs is 2"),
])
def test_missing_or_ill_typed(edit, message):
    with pytest.raises(GraphError, match=message):
        read_graph_json(bad(edit))


@pytest.mark.parametrize("edit, message", [
    (lambda d: d["nodes"][2].update(inputs=[[7, 0, 0]]), r"node 2 'relu': input 0 reads node 7, which is not a node"),
    (lambda d: d["nodes"][2].update(inputs=[[1, 3, 0]]), r"node 2 'relu': input 0 reads output 3 of node 1 'conv', which has 1 outputs"),
    (lambda d: d["nodes"][2].update(inputs=[[1, -1, 0]]), r"node 2 'relu': input 0 reads output -1"),
    (lambda d: d.update(heads=[[9, 0, 0]]), r"head 0 names node 9, out of range"),
    (lambda d: d.update(heads=[[2, 1, 0]]), r"head 0 reads output 1 of node 2 'relu'"),
    (lambda d: d["nodes"][0].update(inputs=[[1, 0, 0]]), r"node 0 'x': an input node \(op 'null'\) has inputs"),
    (lambda d: d["nodes"][1].update(inputs=[[1, 0, 0]]), r"node 1 'conv': input 0 reads node 1, which is itself: a cycle"),
    (lambda d: d["nodes"][1].update(inputs=[[2, 0, 0]]), r"node 1 'conv': input 0 reads node 2, which comes later: a cycle"),
    (lambda d: d.update(node_row_ptr=[0, 1, 2, 4]), "node_row_ptr does not match"),
    (lambda d: d["attrs"].update(shape=["list_shape", [[1, 8]]]), r"attrs\.shape has 1 values for 3 node entries"),
    (lambda d: d["attrs"].update(device_index=["list_int", [1, 1]]), r"attrs\.device_index has 2 values"),
    (lambda d: d["attrs"].update(dltype=["list_int", [1, 1, 1]]), r"attrs\.dltype must be \['list_str'"),
])
def test_out_of_range_and_cycles(edit, message):
    with pytest.raises(GraphError, match=message):
        read_graph_json(bad(edit))


def test_input_node_with_inputs_is_refused():
    def edit(d):
        d["nodes"][1] = {"op": "null", "name": "p", "inputs": [[0, 0, 0]]}
    with pytest.raises(GraphError, match=r"node 1 'p': an input node \(op 'null'\) has inputs"):
        read_graph_json(bad(edit))


def test_nop_needs_one_input_and_output():
    def edit(d):
        d["nodes"][2]["attrs"]["func_name"] = "__nop"
        d["nodes"][2]["inputs"] = [[0, 0, 0], [1, 0, 0]]
        d["nodes"][2]["attrs"]["num_inputs"] = "2"
    with pytest.raises(GraphError, match=r"node 2 'relu': a reshape-only '__nop' must have one input"):
        read_graph_json(bad(edit))


def test_unknown_dtype():
    with pytest.raises(GraphError, match=r"node 1 'conv' output 0 \(entry 1\): unknown dtype 'complex64'"):
        read_graph_json(bad(lambda d: d["attrs"]["dltype"][1].__setitem__(1, "complex64")))


@pytest.mark.parametrize("dim", [-1, "n", 2.5, None])
def test_symbolic_shape_refused_like_relay(dim):
    with pytest.raises(GraphError, match=r"node 2 'relu' output 0 \(entry 2\): .*symbolic or negative.*"
                                         r"Relay's GraphPlanMemory plans constant shapes only"):
        read_graph_json(bad(lambda d: d["attrs"]["shape"][1].__setitem__(2, [1, dim])))


def test_ir_not_in_graph_form():
    import memcore_py

    text = """
@R.function
def main(x: R.Tensor(("n", 8), "float32")) -> R.Tensor(("n", 8), "float32"):
    n = T.int64()
    with R.dataflow():
        y = R.exp(x)
        R.output(y)
    return y
"""
    with pytest.raises(GraphError, match=r"parameter 'x'.*symbolic"):
        graph_plan_memory(memcore_py.parse(text))
