"""Record Relay ``GraphPlanMemory``'s answers (TVM v0.19.0) for memcore's tests and benchmarks.

Runs under the Relay oracle's own interpreter (``tools/relay_oracle.sh`` installs it into a
virtual environment of its own; never into memcore's). It imports nothing from memcore, so
what it writes is TVM's answer and nothing else.

For each relay.testing workload and opt level it writes ``<name>_O<level>.json.gz``::

    {"workload", "opt_level", "tvm_version",
     "graph_json":  the graph executor's JSON from relay.build(..., target="llvm") (its
                    attrs.storage_id / device_index are the oracle's per-entry plan), or
                    null when relay.build fails ("graph_json_error" then says why),
     "expr_graph":  the per-expression form of the same workload (InferType,
                    FuseOps(fuse_opt_level=<level>), InferType, PlanDevices) written as a
                    graph-executor JSON: params, constants and calls in GraphPlanMemory's
                    visiting order, one entry per flattened output tensor,
     "expr_plan":   relay.backend.GraphPlanMemory on that function, per entry of expr_graph:
                    {"storage_id", "device_type", "storage_size"},
     "oracle_seconds": {"graph_plan_memory": best of 5 runs of GraphPlanMemory,
                        "n_entries": entries it planned}}

Usage (from the repository root, with the oracle's python)::

    python tools/relay_oracle.py record --out tests/data/relay [--workloads resnet18 ...]
        [--opt-levels 0 3]
    python tools/relay_oracle.py synthetic [--ops 2000 20000]   # GraphPlanMemory's speed at scale
"""
import argparse
import gzip
import json
import os
import sys
import time

os.environ.setdefault("TOPHUB_LOCATION", "NONE")

import tvm  # noqa: E402
from tvm import relay  # noqa: E402
from tvm.relay import testing  # noqa: E402

#: name -> builder of (mod, params); small batch sizes, the library's default shapes.
WORKLOADS = {
    "resnet18": lambda: testing.resnet.get_workload(num_layers=18, batch_size=1),
    "resnet50": lambda: testing.resnet.get_workload(num_layers=50, batch_size=1),
    "mobilenet": lambda: testing.mobilenet.get_workload(batch_size=1),
    "squeezenet": lambda: testing.squeezenet.get_workload(batch_size=1),
    "inception_v3": lambda: testing.inception_v3.get_workload(batch_size=1),
    "densenet": lambda: testing.densenet.get_workload(batch_size=1),
    "vgg": lambda: testing.vgg.get_workload(batch_size=1, num_layers=11),
    "lstm": lambda: _graph_form(testing.lstm.get_workload(iterations=8, num_hidden=64, batch_size=1)),
    "dcgan": lambda: testing.dcgan.get_workload(batch_size=1),
}


def _graph_form(workload):
    """relay.testing's LSTM is let-bound, which relay.build of v0.19 rejects ("primitive
    functions not set"); ToGraphNormalForm gives the same dataflow graph without lets."""
    mod, params = workload
    return relay.transform.ToGraphNormalForm()(mod), params


def _bound(mod, params):
    func = relay.build_module.bind_params_by_name(mod["main"], params)
    return tvm.IRModule.from_expr(func)


def graph_json(mod, opt_level):
    """The graph executor JSON of relay.build at ``opt_level`` (llvm)."""
    with tvm.transform.PassContext(opt_level=opt_level):
        lib = relay.build(mod, target="llvm")
    return json.loads(lib.get_graph_json())


def per_expression(mod, opt_level):
    """(function, plan) for the per-expression form (spec: relay_graph_plan_memory.md §1)."""
    with tvm.transform.PassContext(opt_level=opt_level):
        mod = relay.transform.InferType()(mod)
        mod = relay.transform.FuseOps(fuse_opt_level=opt_level)(mod)
        mod = relay.transform.InferType()(mod)
        config = tvm.target.make_compilation_config(
            tvm.transform.PassContext.current(), tvm.target.Target("llvm"))
        mod = relay.transform.PlanDevices(config)(mod)
    func = mod["main"]
    plan_fn = tvm.get_global_func("relay.backend.GraphPlanMemory")
    best = float("inf")
    plan = None
    for _ in range(5):
        t0 = time.perf_counter()
        plan = plan_fn(func)
        best = min(best, time.perf_counter() - t0)
    return func, plan, best


def _flat_types(ty):
    if isinstance(ty, relay.TupleType):
        out = []
        for f in ty.fields:
            out.extend(_flat_types(f))
        return out
    if isinstance(ty, relay.TensorType):
        return [ty]
    return []


class _ExprGraph:
    """The function as graph-executor JSON, in GraphPlanMemory's visiting order.

    Order: params (in order), then a post-order walk of the body where a call's arguments
    are visited left to right before the call, a constant is a node where first reached,
    tuples and get-items only route entries (StorageAllocaBaseVisitor).
    """

    def __init__(self, func, plan):
        self.nodes, self.row_ptr = [], [0]
        self.shapes, self.dtypes = [], []
        self.sids, self.devs, self.sizes = [], [], []
        self.info = plan.expr_to_storage_info
        self.memo = {}
        self.n_const = 0
        for p in func.params:
            self._node(p, {"op": "null", "name": p.name_hint, "inputs": []})
        self.arg_nodes = list(range(len(self.nodes)))
        heads = self._visit(func.body)
        self.heads = [[n, i, 0] for n, i in heads]

    def _node(self, expr, node):
        nid = len(self.nodes)
        types = _flat_types(expr.checked_type)
        info = self.info[expr]
        sids = [int(x) for x in info.storage_ids]
        devs = [int(d.device_type_int) for d in info.virtual_devices]
        sizes = [int(x) for x in info.storage_sizes]
        assert len(types) == len(sids), (len(types), len(sids))
        for t, s, d, z in zip(types, sids, devs, sizes):
            self.shapes.append([int(x) for x in t.shape])
            self.dtypes.append(str(t.dtype))
            self.sids.append(s)
            self.devs.append(d)
            self.sizes.append(z)
        if node["op"] != "null":
            node["attrs"]["num_outputs"] = str(len(types))
        self.nodes.append(node)
        self.row_ptr.append(self.row_ptr[-1] + len(types))
        out = [(nid, i) for i in range(len(types))]
        self.memo[expr] = out
        return out

    def _visit(self, expr):
        if expr in self.memo:
            return self.memo[expr]
        if isinstance(expr, relay.Constant):
            self.n_const += 1
            return self._node(expr, {"op": "null", "name": f"const_{self.n_const - 1}", "inputs": []})
        if isinstance(expr, relay.Tuple):
            out = [e for f in expr.fields for e in self._visit(f)]
        elif isinstance(expr, relay.TupleGetItem):
            out = [self._visit(expr.tuple_value)[expr.index]]
        elif isinstance(expr, relay.Call):
            inputs = [e for a in expr.args for e in self._visit(a)]
            name = f"fused_{len(self.nodes)}"
            node = {"op": "tvm_op", "name": name,
                    "attrs": {"func_name": name, "num_inputs": str(len(inputs)),
                              "num_outputs": "0", "flatten_data": "0"},
                    "inputs": [[n, i, 0] for n, i in inputs]}
            return self._node(expr, node)
        elif isinstance(expr, relay.Var):
            out = self.memo[expr]
        else:
            raise TypeError(f"unsupported expression {type(expr).__name__}")
        self.memo[expr] = out
        return out

    def to_json(self):
        n = len(self.shapes)
        return {
            "nodes": self.nodes,
            "arg_nodes": self.arg_nodes,
            "heads": self.heads,
            "node_row_ptr": self.row_ptr,
            "attrs": {
                "shape": ["list_shape", self.shapes],
                "dltype": ["list_str", self.dtypes],
                "storage_id": ["list_int", [-1] * n],
                "device_index": ["list_int", self.devs],
            },
        }


def record(name, opt_level):
    mod, params = WORKLOADS[name]()
    mod = _bound(mod, params)
    try:
        gj, gj_error = graph_json(mod, opt_level), None
    except tvm.TVMError as exc:  # relay.build of v0.19 fails on relay.testing's LSTM
        gj, gj_error = None, str(exc).strip().splitlines()[-1]
    func, plan, seconds = per_expression(mod, opt_level)
    eg = _ExprGraph(func, plan)
    return {
        "workload": name,
        "opt_level": opt_level,
        "tvm_version": tvm.__version__,
        "graph_json": gj,
        "graph_json_error": gj_error,
        "expr_graph": eg.to_json(),
        "expr_plan": {"storage_id": eg.sids, "device_type": eg.devs, "storage_size": eg.sizes},
        "oracle_seconds": {"graph_plan_memory": seconds, "n_entries": len(eg.sids)},
    }


def synthetic(n_ops):
    """Best-of-3 seconds of GraphPlanMemory on a synthetic chain of ``n_ops`` fused ops
    (exp, and every third op an add reading one of the 3 previous values), 64 floats each.

    Relay's visitors recurse once per node: run under ``ulimit -s unlimited`` beyond a few
    thousand ops (relay_oracle.sh does)."""
    import numpy as np

    rng = np.random.default_rng(0)
    x = relay.var("x", shape=(64,), dtype="float32")
    vals = [x]
    for i in range(n_ops):
        if i % 3 == 0 and len(vals) > 4:
            vals.append(relay.add(vals[-1], vals[-1 - int(rng.integers(1, 4))]))
        else:
            vals.append(relay.exp(vals[-1]))
    mod = tvm.IRModule.from_expr(relay.Function([x], vals[-1]))
    with tvm.transform.PassContext(opt_level=0):
        mod = relay.transform.InferType()(mod)
        mod = relay.transform.FuseOps(fuse_opt_level=0)(mod)
        mod = relay.transform.InferType()(mod)
        config = tvm.target.make_compilation_config(
            tvm.transform.PassContext.current(), tvm.target.Target("llvm"))
        mod = relay.transform.PlanDevices(config)(mod)
    plan_fn = tvm.get_global_func("relay.backend.GraphPlanMemory")
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        plan_fn(mod["main"])
        best = min(best, time.perf_counter() - t0)
    return {"n_entries": n_ops + 1, "graph_plan_memory": best, "entries_per_s": (n_ops + 1) / best}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    rec = sub.add_parser("record", help="write <name>_O<level>.json.gz files")
    rec.add_argument("--out", required=True)
    rec.add_argument("--workloads", nargs="*", default=list(WORKLOADS), choices=list(WORKLOADS))
    rec.add_argument("--opt-levels", nargs="*", type=int, default=[0, 3])
    syn = sub.add_parser("synthetic", help="time GraphPlanMemory on synthetic chains; print JSON")
    syn.add_argument("--ops", nargs="*", type=int, default=[2000, 20000])
    args = parser.parse_args(argv)
    if args.cmd == "synthetic":
        print(json.dumps({"tvm_version": tvm.__version__, "runs": [synthetic(n) for n in args.ops]}))
        return 0
    os.makedirs(args.out, exist_ok=True)
    for name in args.workloads:
        for level in args.opt_levels:
            t0 = time.perf_counter()
            doc = record(name, level)
            path = os.path.join(args.out, f"{name}_O{level}.json.gz")
            with gzip.GzipFile(path, "wb", mtime=0) as fh:
                fh.write(json.dumps(doc, separators=(",", ":"), sort_keys=True).encode())
            n_graph = len(doc["graph_json"]["attrs"]["storage_id"][1]) if doc["graph_json"] else 0
            print(f"{path}: {n_graph} graph entries, "
                  f"{len(doc['expr_plan']['storage_id'])} expression entries "
                  f"({time.perf_counter() - t0:.1f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
