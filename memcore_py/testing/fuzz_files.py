"""Fuzzing the file importers: ONNX models, graph-executor JSON and MiniMalloc CSV.

Design
------
The same shape as :mod:`memcore_py.testing.fuzzing`: an input is a pure function of a seed
(:func:`fuzz_input`), a *check* runs one input and returns ``None`` when every invariant
holds, else a one-line ``"<kind>: <what>"`` (the kind is what minimisation keeps); checks
never raise, except :class:`MemoryError` (a crash, for the campaign's supervisor) and
``BaseException`` subclasses that are not errors (the campaign's per-input alarm).

Inputs, per target (:data:`FILE_TARGETS`: target -> file suffix)
    A corpus of valid files (:func:`file_corpus`) mutated by a seed (:func:`mutate_file`):

    - ``onnx``: small models written with ``onnx.helper`` (an MLP with initializers, a
      convnet, transformer ops, ``dim_param`` shapes computed with ``Shape``/``Range``, an
      LSTM, a zoo of element-wise, reduction and shape ops), mutated on the ``ModelProto``
      (dims, element types, attributes, op types and domains, edges, node order, initializers,
      IR and opset versions, outputs) or on the serialized bytes;
    - ``graph-json``: seeded random graph-executor graphs (inputs, ops with several outputs,
      ``__nop`` aliases, devices, texture scopes) and, when the checkout has them, the Relay
      graphs recorded in ``tests/data/relay`` (each recording's ``expr_graph`` and
      ``graph_json``); mutated on the JSON document (any value replaced by an
      odd one, keys deleted, list items duplicated, swapped or deleted, deep nesting) or on
      its text; one input in ten is written gzip-compressed (``.json.gz``);
    - ``csv``: seeded random MiniMalloc problems (column orders, an ``offset`` column that is
      a valid plan, string or integer ids, CRLF, blank lines) and, when the checkout has
      them, ``bench/data/minimalloc``; mutated on the rows (odd numbers, empty or quoted
      fields, repeated or deleted rows and columns, headers renamed, a byte-order mark,
      many rows) or on the bytes.

    Byte-level mutations (all targets): bit flips, interesting bytes, insertions,
    deletions, duplications of a range, truncation, splicing with another corpus member,
    invalid UTF-8.

Invariants (:func:`check_file`)
    1. the library importer (``memcore_py.frontend.onnx_model.load_onnx`` +
       :func:`~memcore_py.frontend.from_onnx`, :func:`~memcore_py.frontend.read_graph_json`,
       :func:`memcore.read_minimalloc_csv`) returns its model or raises a
       :class:`~memcore_py.errors.MemcoreError`;
    2. what it returns is planned by the library (ONNX: lowered for planning and
       StaticPlanBlockMemory in TVM and arena mode; graph: ``graph_plan_memory`` in Relay and
       arena mode; CSV: :func:`memcore.plan_offsets`), which raises a ``MemcoreError`` or
       returns a plan that an independent check accepts: ONNX plans by
       :func:`memcore_py.planning.check.verify_planned` on every function; graph plans by
       lifetimes recomputed here from the graph's arrays (Relay storages shared only by
       disjoint lifetimes and large enough, each arena verified with
       :func:`memcore.verify_offsets`, aliases at their root's offset, the arena total not
       below the max-live bytes computed here); CSV plans by :func:`memcore.verify_offsets`,
       a plain pairwise check (up to :data:`PAIRWISE_LIMIT` buffers) and the max-live bytes
       computed here;
    3. ``memcore plan FILE`` (in-process, :func:`check_plan_cli`) exits 0, or non-zero with
       exactly one stderr line ``memcore plan: error: ...``, no traceback, never the
       ``internal error`` exit (3).
"""
from __future__ import annotations

import gzip
import io
import json
import os
import random
import tempfile
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import numpy as np

__all__ = [
    "FILE_TARGETS",
    "PAIRWISE_LIMIT",
    "MAX_BYTES",
    "file_corpus",
    "mutate_file",
    "fuzz_input",
    "plan_options",
    "check_file",
    "check_onnx",
    "check_graph_json",
    "check_csv",
    "check_plan_cli",
]

#: Target name -> suffix of the file ``memcore plan`` is given (the suffix picks the reader).
FILE_TARGETS = {"onnx": ".onnx", "graph-json": ".json", "csv": ".csv"}

#: Largest CSV problem whose plan is also checked pair by pair in plain numpy.
PAIRWISE_LIMIT = 1000

#: Mutated files are cut to this many bytes (a mutation that repeats rows or ranges can
#: otherwise grow a file without bound).
MAX_BYTES = 1 << 18

_REPO = Path(__file__).resolve().parents[2]
_INTERESTING_INTS = [0, 1, -1, 2, 3, 7, 255, 256, 65536, 2**31 - 1, 2**31, 2**32, 2**62, 2**63 - 1, 2**63,
                     -(2**63), -(2**63) - 1, 2**64, 10**30]
_INTERESTING_BYTES = b"\x00\xff\n\r,\"'{}[]-+.e9 \t\x7f\x80\xc3"


# ------------------------------------------------------------------------------ corpus
def file_corpus(target: str) -> list:
    """Valid files of ``target`` (bytes each): generated ones first, in a fixed order, then
    the checkout's data files when present (module docstring)."""
    if target == "onnx":
        return _onnx_corpus()
    if target == "graph-json":
        return _graph_corpus()
    if target == "csv":
        return _csv_corpus()
    raise ValueError(f"target must be one of {sorted(FILE_TARGETS)}; got {target!r}")


def _csv_corpus() -> list:
    texts = [_random_csv(random.Random(seed)) for seed in range(24)]
    for path in sorted((_REPO / "bench" / "data" / "minimalloc").glob("*.csv")):
        texts.append(path.read_bytes())
    return texts


def _random_csv(rng: random.Random) -> bytes:
    """A random MiniMalloc problem; with an ``offset`` column half the time (a valid plan,
    made with :func:`memcore.plan_offsets`)."""
    import memcore

    n = rng.choice([0, 1, 2, 5, 12, 40, 150])
    lower = [rng.randrange(0, 60) for _ in range(n)]
    upper = [lo + rng.randrange(1, 25) for lo in lower]
    size = [rng.choice([0, 1, 4, 64, 1000, rng.randrange(1, 1 << 20)]) for _ in range(n)]
    ids = [str(i) if rng.random() < 0.7 else f"b{i}" for i in range(n)]
    columns = ["id", "lower", "upper", "size"]
    rows = [[ids[i], str(lower[i]), str(upper[i]), str(size[i])] for i in range(n)]
    if rng.random() < 0.5:
        plan = memcore.plan_offsets(np.array(lower, np.int64), np.array(upper, np.int64) - 1,
                                    np.array(size, np.int64))
        columns.append("offset")
        for row, off in zip(rows, plan.offset.tolist()):
            row.append(str(off))
    order = list(range(len(columns)))
    if rng.random() < 0.3:
        rng.shuffle(order)
    eol = "\r\n" if rng.random() < 0.2 else "\n"
    lines = [",".join(columns[k] for k in order)] + [",".join(r[k] for k in order) for r in rows]
    if rows and rng.random() < 0.2:
        lines.insert(rng.randrange(1, len(lines) + 1), "")
    return (eol.join(lines) + eol).encode()


def _graph_corpus() -> list:
    docs = [json.dumps(_random_graph_doc(random.Random(seed))).encode() for seed in range(24)]
    for path in sorted((_REPO / "tests" / "data" / "relay").glob("*.json.gz")):
        with gzip.open(path, "rb") as fh:
            recording = json.load(fh)  # tools/relay_oracle.py: the graph before and after Relay's planning
        docs.extend(json.dumps(recording[key]).encode() for key in ("expr_graph", "graph_json"))
    return docs


_GRAPH_DTYPES = ["float32", "float16", "int8", "int32", "uint8", "bool", "float32x4", "int64"]


def _random_graph_doc(rng: random.Random) -> dict:
    """A valid graph-executor JSON document: inputs, ``tvm_op`` nodes with one to three
    outputs, ``__nop`` aliases, heads; sometimes devices and texture scopes."""
    nodes, shapes, dtypes, entries = [], [], [], []
    n_nodes = rng.randrange(1, 30)
    texture = rng.random() < 0.2
    for i in range(n_nodes):
        kind = "null" if i == 0 or rng.random() < 0.15 else ("nop" if rng.random() < 0.1 else "op")
        if kind == "null":
            nodes.append({"op": "null", "name": f"in{i}", "inputs": []})
            n_out = 1
        else:
            k = 1 if kind == "nop" else rng.randrange(1, 4)
            ins = [list(entries[rng.randrange(len(entries))]) + [0] for _ in range(k)]
            n_out = 1 if kind == "nop" else rng.choice([1, 1, 1, 2, 3])
            func = "__nop" if kind == "nop" else f"fused_op{i}"
            nodes.append({"op": "tvm_op", "name": func if kind == "nop" else f"op{i}", "inputs": ins,
                          "attrs": {"func_name": func, "num_inputs": str(len(ins)), "num_outputs": str(n_out),
                                    "flatten_data": "0"}})
        for k in range(n_out):
            entries.append((i, k))
            if texture:
                shapes.append([1, rng.choice([1, 2, 4]), rng.choice([4, 8, 16]), rng.choice([4, 8]), 4])
            else:
                shapes.append([rng.choice([1, 2, 3, 8, 17, 64]) for _ in range(rng.randrange(0, 4))])
            dtypes.append("float32" if texture else rng.choice(_GRAPH_DTYPES))
    row_ptr = [0]
    for nd in nodes:
        row_ptr.append(row_ptr[-1] + (int(nd["attrs"]["num_outputs"]) if nd["op"] != "null" else 1))
    heads = [list(entries[rng.randrange(len(entries))]) + [0] for _ in range(rng.randrange(1, 4))]
    attrs = {"shape": ["list_shape", shapes], "dltype": ["list_str", dtypes],
             "storage_id": ["list_int", list(range(len(entries)))]}
    if rng.random() < 0.3:
        attrs["device_index"] = ["list_int", [rng.choice([1, 1, 2]) for _ in entries]]
    if texture:
        attrs["storage_scope"] = ["list_str", [rng.choice(["global", "global.texture", "global.texture-nhwc"])
                                               for _ in entries]]
    return {"nodes": nodes, "arg_nodes": [i for i, nd in enumerate(nodes) if nd["op"] == "null"],
            "heads": heads, "node_row_ptr": row_ptr, "attrs": attrs}


def _onnx_corpus() -> list:
    return [model.SerializeToString() for model in _onnx_models()]


def _onnx_models() -> list:
    return [build() for build in (_onnx_mlp, _onnx_convnet, _onnx_transformer, _onnx_dynamic, _onnx_lstm,
                                  _onnx_zoo)]


def _onnx_model(nodes, inputs, outputs, inits=(), opset=20):
    from onnx import helper

    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _init(name, array):
    from onnx import numpy_helper

    return numpy_helper.from_array(np.asarray(array), name)


def _vi(name, elem, dims):
    from onnx import helper

    return helper.make_tensor_value_info(name, elem, dims)


def _onnx_mlp():
    from onnx import TensorProto as TP, helper as h

    rng = np.random.default_rng(0)
    nodes = [h.make_node("MatMul", ["x", "w1"], ["m"], name="mm"), h.make_node("Add", ["m", "b1"], ["a"], name="add"),
             h.make_node("Relu", ["a"], ["r"], name="relu"),
             h.make_node("Gemm", ["r", "w2", "b2"], ["y"], name="fc", transB=1)]
    inits = [_init("w1", rng.standard_normal((8, 16)).astype("float32")), _init("b1", np.zeros(16, "float32")),
             _init("w2", rng.standard_normal((4, 16)).astype("float32")), _init("b2", np.zeros(4, "float32"))]
    return _onnx_model(nodes, [_vi("x", TP.FLOAT, ["batch", 8])], [_vi("y", TP.FLOAT, None)], inits)


def _onnx_convnet():
    from onnx import TensorProto as TP, helper as h

    rng = np.random.default_rng(1)
    nodes = [
        h.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1], strides=[2, 2]),
        h.make_node("Relu", ["c"], ["r"], name="relu"),
        h.make_node("MaxPool", ["r"], ["p"], name="pool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
        h.make_node("BatchNormalization", ["p", "g", "beta", "mu", "var"], ["bn"], name="bn"),
        h.make_node("AveragePool", ["bn"], ["ap"], name="ap", kernel_shape=[2, 2], strides=[1, 1]),
        h.make_node("GlobalAveragePool", ["bn"], ["gap"], name="gap"),
        h.make_node("Flatten", ["gap"], ["flat"], name="flat"),
        h.make_node("Gemm", ["flat", "fw", "fb"], ["y"], name="fc", transB=1, alpha=0.5, beta=2.0),
        h.make_node("Clip", ["y", "lo", "hi"], ["clipped"], name="clip"),
    ]
    inits = [_init("w", rng.standard_normal((8, 3, 3, 3)).astype("float32")), _init("b", np.zeros(8, "float32")),
             _init("g", np.ones(8, "float32")), _init("beta", np.zeros(8, "float32")),
             _init("mu", np.zeros(8, "float32")), _init("var", np.ones(8, "float32")),
             _init("fw", rng.standard_normal((10, 8)).astype("float32")), _init("fb", np.zeros(10, "float32")),
             _init("lo", np.float32(0)), _init("hi", np.float32(6))]
    return _onnx_model(nodes, [_vi("x", TP.FLOAT, [1, 3, 16, 16])],
                       [_vi(n, TP.FLOAT, None) for n in ("ap", "clipped")], inits)


def _onnx_transformer():
    from onnx import TensorProto as TP, helper as h

    rng = np.random.default_rng(2)
    nodes = [
        h.make_node("Gather", ["emb", "ids"], ["e"], name="embed"),
        h.make_node("LayerNormalization", ["e", "lw", "lb"], ["ln"], name="ln", epsilon=1e-6),
        h.make_node("MatMul", ["ln", "wq"], ["q"], name="q"),
        h.make_node("Reshape", ["q", "heads"], ["qh"], name="split_heads"),
        h.make_node("Transpose", ["qh"], ["qt"], name="t", perm=[0, 2, 1, 3]),
        h.make_node("Transpose", ["qh"], ["kt"], name="tk", perm=[0, 2, 3, 1]),
        h.make_node("MatMul", ["qt", "kt"], ["s"], name="scores"),
        h.make_node("Div", ["s", "scale"], ["sd"], name="div"),
        h.make_node("Softmax", ["sd"], ["a"], name="softmax", axis=-1),
        h.make_node("Gelu", ["ln"], ["ge"], name="gelu", approximate="tanh"),
        h.make_node("Pow", ["ln", "two"], ["sq"], name="pow"),
        h.make_node("ReduceMean", ["sq", "last"], ["ms"], name="mean", keepdims=1),
        h.make_node("Sqrt", ["ms"], ["rms"], name="sqrt"),
        h.make_node("Sub", ["ln", "rms"], ["d"], name="sub"),
        h.make_node("Split", ["d"], ["h0", "h1"], name="split", axis=2, num_outputs=2),
        h.make_node("Concat", ["h1", "h0"], ["rot"], name="cat", axis=-1),
        h.make_node("Unsqueeze", ["rot", "ax1"], ["u"], name="unsq"),
        h.make_node("Expand", ["u", "eshape"], ["ex"], name="expand"),
        h.make_node("Squeeze", ["u", "ax1"], ["sqz"], name="squeeze"),
        h.make_node("Slice", ["ln", "st", "en", "ax2"], ["sl"], name="slice"),
        h.make_node("Cast", ["ids"], ["idf"], name="cast", to=TP.FLOAT),
        h.make_node("Greater", ["idf", "zero"], ["pos"], name="gt"),
        h.make_node("Where", ["pos", "idf", "zero"], ["w"], name="where"),
        h.make_node("Trilu", ["a"], ["tri"], name="triu", upper=1),
    ]
    inits = [_init("emb", rng.standard_normal((50, 16)).astype("float32")), _init("lw", np.ones(16, "float32")),
             _init("lb", np.zeros(16, "float32")), _init("wq", rng.standard_normal((16, 16)).astype("float32")),
             _init("heads", np.array([1, 6, 2, 8], "int64")), _init("scale", np.float32(2.0)),
             _init("two", np.float32(2.0)), _init("last", np.array([-1], "int64")),
             _init("ax1", np.array([1], "int64")), _init("eshape", np.array([1, 3, 6, 16], "int64")),
             _init("st", np.array([1], "int64")), _init("en", np.array([5], "int64")),
             _init("ax2", np.array([1], "int64")), _init("zero", np.float32(0))]
    outs = ["a", "ge", "rot", "ex", "sqz", "sl", "w", "tri"]
    return _onnx_model(nodes, [_vi("ids", TP.INT64, [1, 6])], [_vi(n, TP.FLOAT, None) for n in outs], inits)


def _onnx_dynamic():
    from onnx import TensorProto as TP, helper as h

    nodes = [
        h.make_node("Shape", ["x"], ["s"], name="shape"),
        h.make_node("Gather", ["s", "one"], ["n"], name="seq_len"),
        h.make_node("Unsqueeze", ["n", "zero_axis"], ["n1"], name="as_shape"),
        h.make_node("Concat", ["n1", "tail"], ["target"], name="target", axis=0),
        h.make_node("Reshape", ["x", "target"], ["r"], name="reshape"),
        h.make_node("Range", ["start", "n", "step"], ["pos"], name="positions"),
        h.make_node("Add", ["x", "y"], ["z"], name="add"),
        h.make_node("Mul", ["z", "z"], ["zz"], name="mul"),
    ]
    inits = [_init("one", np.array(1, "int64")), _init("zero_axis", np.array([0], "int64")),
             _init("tail", np.array([-1], "int64")), _init("start", np.array(0, "int64")),
             _init("step", np.array(1, "int64"))]
    return _onnx_model(nodes, [_vi("x", TP.FLOAT, [2, "seq"]), _vi("y", TP.FLOAT, [2, "seq"])],
                       [_vi("r", TP.FLOAT, None), _vi("pos", TP.INT64, None), _vi("zz", TP.FLOAT, None)], inits)


def _onnx_lstm():
    from onnx import TensorProto as TP, helper as h

    rng = np.random.default_rng(3)
    hidden, feat = 4, 3
    nodes = [h.make_node("LSTM", ["x", "W", "R", "B"], ["y", "yh"], name="lstm", hidden_size=hidden)]
    inits = [_init("W", rng.standard_normal((1, 4 * hidden, feat)).astype("float32")),
             _init("R", rng.standard_normal((1, 4 * hidden, hidden)).astype("float32")),
             _init("B", np.zeros((1, 8 * hidden), "float32"))]
    return _onnx_model(nodes, [_vi("x", TP.FLOAT, [3, 1, feat])], [_vi("y", TP.FLOAT, None), _vi("yh", TP.FLOAT, None)],
                       inits)


def _onnx_zoo():
    """Element-wise, reduction and shape ops over a symbolic batch dimension."""
    from onnx import TensorProto as TP, helper as h

    unary = ["Abs", "Exp", "Sigmoid", "Tanh", "Softplus", "Elu", "LeakyRelu", "HardSigmoid", "HardSwish", "Selu",
             "Erf", "Ceil", "Floor", "Sign", "Neg", "Sin", "Cos", "Identity", "Dropout", "Reciprocal", "Log", "Sqrt"]
    nodes, prev = [], "x"
    for i, op in enumerate(unary):
        nodes.append(h.make_node(op, [prev], [f"u{i}"], name=f"{op.lower()}{i}"))
        prev = f"u{i}"
    nodes += [
        h.make_node("Max", ["x", prev], ["mx"], name="max"), h.make_node("Min", ["x", "mx"], ["mn"], name="min"),
        h.make_node("Mean", ["mx", "mn"], ["me"], name="mean"),
        h.make_node("Sum", ["me", "x", "mn"], ["sm"], name="sum"),
        h.make_node("Less", ["sm", "x"], ["lt"], name="less"), h.make_node("Not", ["lt"], ["nt"], name="not"),
        h.make_node("And", ["lt", "nt"], ["an"], name="and"), h.make_node("Or", ["an", "lt"], ["orr"], name="or"),
        h.make_node("Where", ["orr", "sm", "x"], ["wh"], name="where"),
        h.make_node("ReduceSum", ["wh", "axes"], ["rs"], name="rsum", keepdims=0),
        h.make_node("ReduceMax", ["wh"], ["rmx"], name="rmax", axes=[1], keepdims=1),
        h.make_node("ArgMax", ["wh"], ["am"], name="argmax", axis=1),
        h.make_node("Softmax", ["wh"], ["so"], name="softmax", axis=1),
        h.make_node("LogSoftmax", ["wh"], ["lso"], name="logsoftmax", axis=1),
        h.make_node("PRelu", ["lso", "slope"], ["pr"], name="prelu"),
        h.make_node("Transpose", ["pr"], ["tr"], name="transpose", perm=[1, 0]),
        h.make_node("Flatten", ["tr"], ["fl"], name="flatten", axis=1),
        h.make_node("ConstantOfShape", ["cshape"], ["cs"], name="cos_shape"),
        h.make_node("CastLike", ["cs", "x"], ["csl"], name="castlike"),
    ]
    inits = [_init("axes", np.array([1], "int64")), _init("slope", np.full(6, 0.1, "float32")),
             _init("cshape", np.array([2, 3], "int64"))]
    outs = [("rs", TP.FLOAT), ("rmx", TP.FLOAT), ("am", TP.INT64), ("so", TP.FLOAT), ("fl", TP.FLOAT),
            ("csl", TP.FLOAT)]
    return _onnx_model(nodes, [_vi("x", TP.FLOAT, ["batch", 6])], [_vi(n, t, None) for n, t in outs], inits)


# ------------------------------------------------------------------------------ mutation
def fuzz_input(target: str, corpus: list, seed: int) -> tuple:
    """``(data, suffix, options)``: the file ``seed`` makes for ``target`` from ``corpus``,
    the suffix it is written with and the ``memcore plan`` options it is run with
    (:func:`plan_options`)."""
    data = mutate_file(target, corpus, seed)
    suffix = FILE_TARGETS[target]
    if target == "graph-json" and seed % 10 == 9:
        data, suffix = gzip.compress(data, mtime=0), ".json.gz"
    return data, suffix, plan_options(target, seed)


def plan_options(target: str, seed: int) -> tuple:
    """The ``memcore plan`` options input ``seed`` runs with: ``--no-search`` always (the
    anytime search would spend its time limit on every input), then by seed the table,
    ``--json``, and where the input kind takes them ``--mode tvm`` and ``--top 3`` (a flat
    CSV problem refuses both as usage errors; one CSV input in eight tries them); ONNX also
    ``--fused`` on one input in five."""
    options = [(), ("--json",), ("--mode", "tvm"), ("--top", "3")]
    if target == "csv" and seed % 8:
        options = options[:2]
    extra = ("--no-search",) + options[seed % len(options)]
    if target == "onnx" and seed % 5 == 4:
        extra = extra + ("--fused",)
    return extra


def mutate_file(target: str, corpus: list, seed: int) -> bytes:
    """A mutation of ``corpus[seed % len(corpus)]`` chosen by ``seed``: one to three
    structure-aware or byte-level edits (module docstring; byte-level 35% of the time, 15%
    for ONNX), the result cut to
    :data:`MAX_BYTES`; seed ``% 16 == 0`` keeps the file as it is."""
    rng = random.Random(seed)
    data = corpus[seed % len(corpus)]
    if seed % 16 == 0:
        return data
    byte_level = 0.15 if target == "onnx" else 0.35  # serialized protobuf rarely survives a byte edit
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        if rng.random() < byte_level:
            data = _mutate_bytes(data, rng, corpus)
        elif target == "onnx":
            data = _mutate_onnx(data, rng)
        elif target == "graph-json":
            data = _mutate_json(data, rng)
        else:
            data = _mutate_csv(data, rng)
        data = data[:MAX_BYTES]
    return data


def _mutate_bytes(data: bytes, rng: random.Random, corpus: list) -> bytes:
    b = bytearray(data)
    op = rng.randrange(9)
    pos = rng.randrange(len(b) + 1)
    if op == 0 and b:  # flip a bit
        i = min(pos, len(b) - 1)
        b[i] ^= 1 << rng.randrange(8)
    elif op == 1 and b:  # an interesting byte
        b[min(pos, len(b) - 1)] = rng.choice(_INTERESTING_BYTES)
    elif op == 2:  # insert random bytes
        b[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.choice([1, 2, 8, 64])))
    elif op == 3:  # delete a range
        del b[pos:pos + rng.choice([1, 4, 32, 1000])]
    elif op == 4:  # duplicate a range
        end = min(len(b), pos + rng.choice([1, 16, 256, 4096]))
        b[end:end] = b[pos:end] * rng.choice([1, 2, 20])
    elif op == 5:  # truncate
        del b[pos:]
    elif op == 6:  # splice with another member of the corpus
        other = corpus[rng.randrange(len(corpus))]
        b = b[:pos] + other[rng.randrange(len(other) + 1):]
    elif op == 7:  # invalid UTF-8
        b[pos:pos] = rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xe2\x82"])
    else:  # overwrite with a digit run
        b[pos:pos + 1] = b"9" * rng.choice([1, 19, 20, 400, 5000])
    return bytes(b)


# -------------------------------------------------------------------------- csv mutation
_CSV_VALUES = ["", " ", "0", "-1", "-0", "+5", " 7 ", "1_000", "0x10", "1e3", "1.5", "nan", "\u0661\u0662",
               "9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
               "18446744073709551616", "9" * 30, "\"3\"", "a", "\x00", "\u00a0", "4611686018427387904"]
_CSV_HEADERS = ["id", "lower", "upper", "size", "offset", "Id", "LOWER", " size ", "extra", "", "begin", "end"]


def _mutate_csv(data: bytes, rng: random.Random) -> bytes:
    text = data.decode("utf-8", errors="surrogateescape")
    eol = "\r\n" if "\r\n" in text else "\n"
    lines = text.split(eol)
    rows = [ln.split(",") for ln in lines]
    op = rng.randrange(12)
    k = rng.randrange(len(rows))
    row = rows[k]
    if op == 0:  # a field replaced by an odd value
        row[rng.randrange(len(row))] = rng.choice(_CSV_VALUES)
    elif op == 1:  # a number replaced by an interesting integer
        row[rng.randrange(len(row))] = str(rng.choice(_INTERESTING_INTS))
    elif op == 2:  # a header field renamed
        rows[0][rng.randrange(len(rows[0]))] = rng.choice(_CSV_HEADERS)
    elif op == 3:  # a column deleted or duplicated everywhere
        j = rng.randrange(len(rows[0]))
        dup = rng.random() < 0.5
        for r in rows:
            if j < len(r):
                if dup:
                    r.insert(j, r[j])
                else:
                    del r[j]
    elif op == 4:  # a row duplicated, or deleted
        if rng.random() < 0.5:
            rows.insert(k, list(row))
        else:
            del rows[k]
    elif op == 5:  # many rows
        body = rows[1:] or [["0", "0", "1", "1"]]
        rows = rows[:1] + body * rng.choice([2, 10, 100])
    elif op == 6:  # upper <= lower
        if len(row) >= 3:
            row[2] = row[1]
    elif op == 7:  # a field added to one row
        row.append(rng.choice(_CSV_VALUES))
    elif op == 8:  # quoting
        j = rng.randrange(len(row))
        row[j] = '"' + row[j] + rng.choice(['"', '""', '', '",x"'])
    elif op == 9:  # a byte-order mark or a blank line
        rows.insert(rng.randrange(len(rows) + 1), [rng.choice(["", " ", "\t", ",,,"])])
        if rng.random() < 0.3:
            rows[0][0] = "\ufeff" + rows[0][0]
    elif op == 10:  # swap two rows (the header moves)
        j = rng.randrange(len(rows))
        rows[k], rows[j] = rows[j], rows[k]
    else:  # the same id twice
        if len(rows) > 2:
            rows[-1][0] = rows[1][0]
    out = eol.join(",".join(r) for r in rows)
    return out.encode("utf-8", errors="surrogateescape")


# ------------------------------------------------------------------------- json mutation
_JSON_VALUES = [None, True, False, 0, -1, 1, 2**31, 2**63 - 1, 2**63, -(2**63) - 1, 2**64, 1.5, float("nan"),
                float("inf"), "", "0", "null", "float32", "float32x4", "int4", "custom[x]64", "handle", "bool",
                "global.texture", "global.texture-weight", "global.texture-nhwc", "global.texture-bad",
                "__nop", "tvm_op", "null", [], [0], [[0, 0, 0]], ["list_int", []], ["list_shape", [[]]], {},
                {"func_name": "__nop"}, [-1, 0, 0], [0, 5, 0], "\ud800", "\u00e9"]


def _mutate_json(data: bytes, rng: random.Random) -> bytes:
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError):
        return _mutate_bytes(data, rng, [data])
    paths = []
    _json_paths(doc, (), paths, 4000)
    path = paths[rng.randrange(len(paths))]
    parent, key = _json_parent(doc, path)
    op = rng.randrange(6)
    if parent is None:  # the root
        doc = rng.choice(_JSON_VALUES) if op == 0 else doc
    elif op == 0 or op == 1:  # a value replaced
        parent[key] = rng.choice(_JSON_VALUES) if op == 0 else _odd_number(parent[key], rng)
    elif op == 2:  # a key or item deleted
        del parent[key]
    elif op == 3 and isinstance(parent, list):  # an item duplicated
        parent.insert(key, json.loads(json.dumps(parent[key])))
    elif op == 4 and isinstance(parent, list) and len(parent) > 1:  # two items swapped
        j = rng.randrange(len(parent))
        parent[key], parent[j] = parent[j], parent[key]
    else:  # deep nesting
        value = parent[key]
        for _ in range(rng.choice([5, 100, 3000])):
            value = [value]
        parent[key] = value
    try:
        return json.dumps(doc, indent=rng.choice([None, None, 1])).encode()
    except (RecursionError, ValueError):
        return data


def _odd_number(value, rng: random.Random):
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return rng.choice(_INTERESTING_INTS)
    if isinstance(value, str):
        return str(rng.choice(_INTERESTING_INTS)) if value.lstrip("-").isdigit() else value + rng.choice(["x", "4"])
    return rng.choice([value + 1, value - 1, -value, value * 2**32, rng.choice(_INTERESTING_INTS)])


def _json_paths(node, path, out, limit) -> None:
    """Every path (tuple of keys) in ``node``, depth first, at most ``limit``."""
    out.append(path)
    if len(out) >= limit:
        return
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, child in items:
        _json_paths(child, path + (key,), out, limit)
        if len(out) >= limit:
            return


def _json_parent(doc, path):
    if not path:
        return None, None
    node = doc
    for key in path[:-1]:
        node = node[key]
    return node, path[-1]


# ------------------------------------------------------------------------- onnx mutation
def _mutate_onnx(data: bytes, rng: random.Random) -> bytes:
    import onnx

    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except Exception:  # noqa: BLE001 - protobuf's DecodeError: already broken bytes
        return _mutate_bytes(data, rng, [data])
    _mutate_model(model, rng)
    try:
        return model.SerializeToString()
    except Exception:  # noqa: BLE001 - a field protobuf refuses to encode
        return data


_ONNX_OPS = ["Relu", "Add", "MatMul", "Conv", "Reshape", "Transpose", "Concat", "Gather", "Softmax", "Split",
             "Slice", "Expand", "Range", "Trilu", "LSTM", "Shape", "ConstantOfShape", "Squeeze", "Unsqueeze",
             "ReduceSum", "Gemm", "MaxPool", "Resize", "Pad", "TopK", "Loop", "If", "Foo", ""]
_ONNX_DIMS = [0, 1, 2, 3, -1, 7, 2**31, 2**40, 2**62, 2**63 - 1]
_ONNX_PARAMS = ["n", "batch", "seq", "", "1x", "n m", "\u00e9", "R", "T"]


def _mutate_model(model, rng: random.Random) -> None:
    """One structure-aware edit of an ``onnx.ModelProto``, in place."""
    g = model.graph
    op = rng.randrange(11)
    if op == 0:  # a dim of a graph input or output
        _mutate_dim(list(g.input) + list(g.output) + list(g.value_info), rng)
    elif op == 1 and g.node:  # an attribute
        _mutate_attribute(g.node[rng.randrange(len(g.node))], rng)
    elif op == 2 and g.node:  # an op type or domain
        node = g.node[rng.randrange(len(g.node))]
        if rng.random() < 0.85:
            node.op_type = rng.choice(_ONNX_OPS)
        else:
            node.domain = rng.choice(["com.microsoft", "ai.onnx.ml", "x"])
    elif op == 3 and g.node:  # an edge
        node = g.node[rng.randrange(len(g.node))]
        names = [v for nd in g.node for v in nd.output] + [v.name for v in g.input] + ["", "missing"]
        field = node.input if node.input and rng.random() < 0.7 else node.output
        if field:
            field[rng.randrange(len(field))] = rng.choice(names)
        else:
            field.append(rng.choice(names))
    elif op == 4 and g.node:  # a node deleted, duplicated or moved
        nodes = list(g.node)
        i = rng.randrange(len(nodes))
        choice = rng.randrange(3)
        if choice == 0:
            del nodes[i]
        elif choice == 1:
            nodes.insert(i, nodes[i])
        else:
            nodes.insert(rng.randrange(len(nodes)), nodes.pop(i))
        del g.node[:]
        g.node.extend(nodes)
    elif op == 5 and g.initializer:  # an initializer
        _mutate_initializer(g.initializer[rng.randrange(len(g.initializer))], rng)
    elif op == 6:  # an element type
        values = list(g.input) + list(g.output)
        if values:
            values[rng.randrange(len(values))].type.tensor_type.elem_type = rng.choice([0, 1, 2, 3, 6, 7, 8, 9, 10,
                                                                                      11, 14, 16, 17, 23, 99])
    elif op == 7:  # IR or opset version
        if rng.random() < 0.5:
            model.ir_version = rng.choice([0, 1, 2, 3, 7, 99])
        elif model.opset_import:
            model.opset_import[0].version = rng.choice([1, 6, 7, 11, 12, 13, 17, 99])
    elif op == 8:  # an output removed or one added
        if g.output and rng.random() < 0.5:
            del g.output[rng.randrange(len(g.output))]
        else:
            names = [v for nd in g.node for v in nd.output] + ["missing"]
            g.output.add().CopyFrom(g.output[0] if g.output else g.input[0])
            g.output[-1].name = rng.choice(names)
    elif op == 9:  # an input duplicated or removed
        if g.input and rng.random() < 0.5:
            g.input.add().CopyFrom(g.input[rng.randrange(len(g.input))])
        elif g.input:
            del g.input[rng.randrange(len(g.input))]
    else:  # a value's shape cleared or given another rank
        values = list(g.input) + list(g.output)
        if values:
            shape = values[rng.randrange(len(values))].type.tensor_type.shape
            if rng.random() < 0.5:
                del shape.dim[:]
            else:
                shape.dim.add().dim_value = rng.choice([1, 2, 5])


def _mutate_dim(values, rng: random.Random) -> None:
    dims = [d for v in values for d in v.type.tensor_type.shape.dim]
    if not dims:
        return
    d = dims[rng.randrange(len(dims))]
    if rng.random() < 0.6:
        value = rng.choice(_ONNX_DIMS)
        if -(2**63) <= value < 2**63:
            d.dim_value = value
    else:
        d.dim_param = rng.choice(_ONNX_PARAMS)


def _mutate_attribute(node, rng: random.Random) -> None:
    from onnx import helper

    if not node.attribute or rng.random() < 0.2:
        name = rng.choice(["axis", "perm", "pads", "kernel_shape", "strides", "keepdims", "to", "num_outputs", "foo"])
        node.attribute.append(helper.make_attribute(name, rng.choice([0, -1, 2, 2**40, [1, 0], [0, 0, 0, 0]])))
        return
    attr = node.attribute[rng.randrange(len(node.attribute))]
    if rng.random() < 0.15:
        node.attribute.remove(attr)
    elif attr.ints:
        k = rng.randrange(len(attr.ints))
        attr.ints[k] = rng.choice([0, -1, -5, 1, 3, 2**31, 2**62])
        if rng.random() < 0.3:
            attr.ints.append(rng.choice([0, 1, 2]))
    elif attr.type == attr.INT:
        attr.i = rng.choice([0, 1, -1, -3, 5, 17, 2**31, 2**62, -(2**63)])
    elif attr.type == attr.FLOAT:
        attr.f = rng.choice([0.0, -1.0, float("nan"), float("inf"), 1e38])
    elif attr.type == attr.STRING:
        attr.s = rng.choice([b"", b"none", b"tanh", b"\xff"])
    else:
        kind = rng.choice([attr.INT, attr.FLOATS, attr.TENSOR, attr.GRAPH, 99])
        try:
            attr.type = kind
        except ValueError:  # protobuf refuses a value outside the enum: an undefined type instead
            attr.type = attr.UNDEFINED


def _mutate_initializer(init, rng: random.Random) -> None:
    op = rng.randrange(4)
    if op == 0 and init.dims:
        init.dims[rng.randrange(len(init.dims))] = rng.choice([0, 1, 3, 2**20, -1])
    elif op == 1:
        init.data_type = rng.choice([0, 1, 6, 7, 9, 10, 16, 99])
    elif op == 2 and init.raw_data:
        init.raw_data = init.raw_data[:rng.randrange(len(init.raw_data) + 1)]
    else:
        init.dims.append(rng.choice([1, 2]))


# ------------------------------------------------------------------------------ checks
def check_file(target: str, data: bytes, suffix: str | None = None, cli_extra: tuple = ("--no-search",),
               info: dict | None = None, *, cli_main) -> str | None:
    """Write ``data`` to a temporary ``*<suffix>`` file and run ``target``'s invariants
    (module docstring) on it.

    Parameters
    ----------
    target : {"onnx", "graph-json", "csv"}
    data : bytes
        The file's content.
    suffix : str, optional
        Default: the target's (:data:`FILE_TARGETS`).
    cli_extra : tuple of str
        Options given to ``memcore plan`` before the file.
    info : dict, optional
        Filled with ``imported`` (the importer returned a model), ``planned`` (its plans
        were made and verified) and ``cli_violation`` (``memcore plan`` broke its contract).
    cli_main : callable
        The command line's entry point, ``memcore_py.cli.main`` (given by the caller: this
        layer sits below the command line and does not import it).

    Returns
    -------
    str or None
        None when every invariant holds, else ``"<kind>: <what>"``; when both the library
        and the command line break an invariant, both, joined by ``" | "``.
    """
    info = {} if info is None else info
    with tempfile.TemporaryDirectory(prefix="memcore-fuzz-") as tmp:
        path = os.path.join(tmp, "input" + (suffix or FILE_TARGETS[target]))
        with open(path, "wb") as fh:
            fh.write(data)
        problem = {"onnx": check_onnx, "graph-json": check_graph_json, "csv": check_csv}[target](path, info)
        cli_problem = check_plan_cli(path, cli_main, cli_extra)
    if cli_problem is not None:
        info["cli_violation"] = True
        problem = cli_problem if problem is None else f"{problem} | {cli_problem}"
    return problem


def _untyped(what: str, exc: Exception) -> str:
    lines = str(exc).strip().splitlines()
    return f"untyped: {what} raised {type(exc).__name__}: {lines[0][:200] if lines else ''}"


def check_csv(path: str, info: dict | None = None) -> str | None:
    """The CSV invariants on the file ``path``: the reader returns a problem or raises
    ``InvalidArrayError``; ``plan_offsets``' plan of it is verified (module docstring).
    ``info`` as for :func:`check_file`."""
    info = {} if info is None else info
    import memcore

    try:
        problem = memcore.read_minimalloc_csv(path)
    except memcore.MemcoreError:
        return None
    except MemoryError:
        raise
    except Exception as exc:  # noqa: BLE001 - the invariant under test
        return _untyped("read_minimalloc_csv", exc)
    info["imported"] = True
    try:
        plan = memcore.plan_offsets(problem.start, problem.end, problem.size)
    except memcore.MemcoreError:
        return None
    except MemoryError:
        raise
    except Exception as exc:  # noqa: BLE001
        return _untyped("plan_offsets", exc)
    info["planned"] = True
    return _verify_offsets(problem.start, problem.end, problem.size, plan.offset, int(plan.arena_bytes),
                           int(plan.lower_bound), "plan_offsets")


def _verify_offsets(start, end, size, offset, arena_bytes: int, lower_bound: int | None, what: str) -> str | None:
    """The offset plan checked by memcore's verifier, pair by pair in numpy (small plans),
    and against the max-live bytes computed here."""
    import memcore

    try:
        memcore.verify_offsets(start, end, size, offset, arena_bytes)
    except memcore.MemcoreError as exc:
        return f"verify: {what}'s plan refused by verify_offsets: {exc}"
    n = len(size)
    if n <= PAIRWISE_LIMIT:
        problem = _pairwise_conflict(np.asarray(start), np.asarray(end), np.asarray(size), np.asarray(offset))
        if problem:
            return f"verify: {what}'s plan: {problem}"
        live = _max_live(np.asarray(start), np.asarray(end), np.asarray(size))
        if arena_bytes < live:
            return f"verify: {what}'s arena of {arena_bytes} bytes is below the max-live {live} bytes"
        if lower_bound is not None and lower_bound != live:
            return f"verify: {what}'s lower bound {lower_bound} differs from the max-live {live} bytes computed here"
    return None


def _pairwise_conflict(start, end, size, offset) -> str | None:
    """Two buffers live at the same step on shared bytes, or a buffer at a negative offset
    (all pairs at once; offsets are >= 0 when compared, so no difference overflows)."""
    if len(size) and int(offset.min()) < 0:
        return f"negative offset {int(offset.min())}"
    s, e, z, o = (a.astype(np.int64) for a in (start, end, size, offset))
    together = (s[:, None] <= e[None, :]) & (s[None, :] <= e[:, None])
    shared = ((o[:, None] - o[None, :]) < z[None, :]) & ((o[None, :] - o[:, None]) < z[:, None])
    clash = together & shared & (z[:, None] > 0) & (z[None, :] > 0)
    np.fill_diagonal(clash, False)
    if clash.any():
        i, j = (int(k) for k in np.argwhere(clash)[0])
        return f"buffers {i} and {j} are live together and share bytes"
    return None


def _max_live(start, end, size) -> int:
    """Max over steps of the bytes of the buffers live at that step: a sweep over the
    ``+size`` / ``-size`` events in Python integers (no overflow)."""
    events = sorted([(int(s), 1, int(z)) for s, z in zip(start.tolist(), size.tolist())]
                    + [(int(e) + 1, 0, -int(z)) for e, z in zip(end.tolist(), size.tolist())])
    best = live = 0
    for _, _, delta in events:  # at one step, the ends (kind 0) come before the starts
        live += delta
        best = max(best, live)
    return best


def check_graph_json(path: str, info: dict | None = None) -> str | None:
    """The graph-JSON invariants on the file ``path``: the reader returns a graph or raises
    ``GraphError``; both plans of it are verified (module docstring). ``info`` as for
    :func:`check_file`."""
    info = {} if info is None else info
    from ..errors import MemcoreError
    from ..frontend import read_graph_json
    from ..planning import graph_plan_memory

    try:
        graph = read_graph_json(path)
    except MemcoreError:
        return None
    except MemoryError:
        raise
    except Exception as exc:  # noqa: BLE001
        return _untyped("read_graph_json", exc)
    info["imported"] = True
    plans = {}
    for mode in ("relay", "arena"):
        try:
            plans[mode] = graph_plan_memory(graph, mode=mode)
        except MemcoreError:
            return None
        except MemoryError:
            raise
        except Exception as exc:  # noqa: BLE001
            return _untyped(f"graph_plan_memory(mode={mode!r})", exc)
    info["planned"] = True
    return _verify_graph_plans(graph, plans["relay"], plans["arena"])


def _graph_lifetimes(g) -> tuple:
    """``(root, start, end)`` per entry from the graph's arrays alone: a ``__nop`` output's
    root is its input's root; a root lives from its node to its last reader (the number of
    nodes for heads); inputs live from -1 to the end."""
    from ..planning.graph_model import KIND_INPUT, KIND_NOP

    n_nodes, n_entries = g.n_nodes, g.n_entries
    row, in_ptr, in_entry = g.node_row_ptr.tolist(), g.input_ptr.tolist(), g.input_entry.tolist()
    kind = g.node_kind.tolist()
    root = list(range(n_entries))
    start = [0] * n_entries
    for n in range(n_nodes):
        for e in range(row[n], row[n + 1]):
            start[e] = n
            if kind[n] == KIND_NOP:
                root[e] = root[in_entry[in_ptr[n]]]
    end = list(start)
    for n in range(n_nodes):
        for e in in_entry[in_ptr[n]:in_ptr[n + 1]]:
            end[root[e]] = max(end[root[e]], n)
    for e in g.head_entry.tolist():
        end[root[e]] = n_nodes
    for n in range(n_nodes):
        if kind[n] == KIND_INPUT:
            for e in range(row[n], row[n + 1]):
                start[e], end[e] = -1, n_nodes
    return root, [start[r] for r in root], [end[r] for r in root]


def _verify_graph_plans(g, relay, arena) -> str | None:
    from ..planning.graph_model import is_texture_scope

    root, start, end = _graph_lifetimes(g)
    size = g.entry_bytes.tolist()
    texture = [is_texture_scope(g.scope_names[s]) for s in g.entry_scope.tolist()]
    problem = _verify_relay_storages(g, relay, root, start, end, size, texture)
    if problem is None:
        problem = _verify_arenas(g, arena, root, start, end, size, texture)
    return problem


def _verify_relay_storages(g, plan, root, start, end, size, texture) -> str | None:
    """Relay mode: roots sharing a storage id have disjoint lifetimes and one (device,
    scope); a flat storage holds each of its tensors; an alias has its root's storage."""
    sid = plan.storage_id.tolist()
    st_bytes = plan.relay_storage_bytes.tolist()
    device, scope = g.entry_device.tolist(), g.entry_scope.tolist()
    members: dict = {}
    for e in range(g.n_entries):
        if sid[e] != sid[root[e]]:
            return f"verify: relay plan: entry {e} aliases entry {root[e]} but has another storage"
        if root[e] == e:
            members.setdefault(sid[e], []).append(e)
    for s, es in members.items():
        if len({(device[e], scope[e]) for e in es}) > 1:
            return f"verify: relay plan: storage {s} holds entries of several devices or scopes"
        es = sorted(es, key=lambda e: start[e])
        for a, b in zip(es, es[1:]):
            if start[b] <= end[a]:
                return (f"verify: relay plan: entries {a} (live {start[a]}..{end[a]}) and {b} (live "
                        f"{start[b]}..{end[b]}) share storage {s}")
        flat = [e for e in es if not texture[e]]
        if flat and st_bytes[s] < max(size[e] for e in flat):
            return f"verify: relay plan: storage {s} of {st_bytes[s]} bytes is smaller than one of its tensors"
    return None


def _verify_arenas(g, plan, root, start, end, size, texture) -> str | None:
    """Arena mode: each arena is a valid offset plan of its root entries, of one (device,
    scope); aliases sit at their root's offset; the total is not below the max-live bytes."""
    arena_of, offset = plan.arena_of.tolist(), plan.tok_offset.tolist()
    device, scope = g.entry_device.tolist(), g.entry_scope.tolist()
    pools: dict = {}
    for e in range(g.n_entries):
        if texture[e]:
            continue
        if arena_of[e] != arena_of[root[e]] or offset[e] != offset[root[e]]:
            return f"verify: arena plan: entry {e} is not where the entry it aliases ({root[e]}) is"
        if root[e] == e:
            if arena_of[e] < 0:
                return f"verify: arena plan: flat entry {e} is in no arena"
            pools.setdefault(arena_of[e], []).append(e)
    live_total = 0
    for a, es in pools.items():
        if len({(device[e], scope[e]) for e in es}) > 1:
            return f"verify: arena plan: arena {a} holds entries of several devices or scopes"
        s, e, z, o = (np.array([col[k] for k in es], np.int64) for col in (start, end, size, offset))
        problem = _verify_offsets(s, e, z, o, int(plan.arena_bytes[a]), None, f"arena {a}")
        if problem:
            return problem
        live_total += _max_live(s, e, z)
    if len(pools) != len(plan.arena_bytes):
        return f"verify: arena plan: {len(plan.arena_bytes)} arenas for {len(pools)} (device, scope) pools"
    if sum(int(b) for b in plan.arena_bytes) < live_total:
        return f"verify: arena plan: {sum(plan.arena_bytes)} bytes, below the max-live {live_total} bytes"
    return None


def check_onnx(path: str, info: dict | None = None) -> str | None:
    """The ONNX invariants on the file ``path``: loading and importing return a module or
    raise a ``MemcoreError``; the module's plans in both modes are verified (module
    docstring). ``info`` as for :func:`check_file`."""
    from ..errors import MemcoreError
    from ..frontend.onnx_model import from_onnx, load_onnx

    info = {} if info is None else info
    try:
        model = load_onnx(path)
    except MemcoreError:
        return None
    except MemoryError:
        raise
    except Exception as exc:  # noqa: BLE001
        return _untyped("load_onnx", exc)
    try:
        mod = from_onnx(model)
    except MemcoreError:
        return None
    except MemoryError:
        raise
    except Exception as exc:  # noqa: BLE001
        return _untyped("from_onnx", exc)
    info["imported"] = True
    return _plan_and_verify_module(mod, info)


def _plan_and_verify_module(mod, info: dict) -> str | None:
    """Lower ``mod`` for planning as ``memcore plan`` does, plan it in both modes and verify
    every function's plan with :func:`memcore_py.planning.check.verify_planned`."""
    from ..errors import MemcoreError
    from ..ir.expr import Function
    from ..planning.check import collect_planned_tensors, verify_planned
    from ..transform import (CallTIRRewrite, LowerForPlanning, RemovePurityChecking, Sequential,
                             StaticPlanBlockMemory, ToNonDataflow)

    try:
        lowered = Sequential([LowerForPlanning(), ToNonDataflow(), RemovePurityChecking(), CallTIRRewrite()])(mod)
    except MemcoreError:
        return None
    except MemoryError:
        raise
    except Exception as exc:  # noqa: BLE001
        return _untyped("lowering for planning", exc)
    for mode in ("tvm", "arena"):
        try:
            planned = StaticPlanBlockMemory(mode=mode)(lowered)
        except MemcoreError:
            return None
        except MemoryError:
            raise
        except Exception as exc:  # noqa: BLE001
            return _untyped(f"StaticPlanBlockMemory(mode={mode!r})", exc)
        for name, func in planned.functions.items():
            if not isinstance(func, Function):
                continue
            try:
                verify_planned(collect_planned_tensors(func, name))
            except MemcoreError as exc:
                return f"verify: {mode} plan of {name!r}: {exc}"
            except MemoryError:
                raise
            except Exception as exc:  # noqa: BLE001
                return _untyped(f"verifying the {mode} plan of {name!r}", exc)
    info["planned"] = True
    return None


# ------------------------------------------------------------------------------ command line
def check_plan_cli(path: str, main, extra: tuple = ("--no-search",)) -> str | None:
    """``memcore plan [extra] path`` in-process through ``main`` (``memcore_py.cli.main``);
    None when the command line's contract holds (exit 0, or non-zero with one ``memcore plan:
    error: ...`` stderr line, no traceback, never an internal error), else ``"cli: <what>"``."""
    out, err = io.StringIO(), io.StringIO()
    try:
        with redirect_stdout(out), redirect_stderr(err):
            status = main(["plan", *extra, path])
    except SystemExit as exc:
        status = exc.code
    except MemoryError:
        raise
    except Exception as exc:  # noqa: BLE001 - the invariant under test
        return f"cli: memcore plan raised {type(exc).__name__}: {exc}"
    message = err.getvalue()
    if status == 0:
        return None
    if "Traceback" in message:
        return "cli: memcore plan printed a traceback"
    if message.count("\n") != 1 or not message.startswith("memcore plan: error: "):
        return f"cli: memcore plan exited {status} with {message.count(chr(10))} stderr lines: {message[:200]!r}"
    if status == 3 or "internal error" in message:
        return f"cli: exit {status}: {message.strip()[:300]}"
    return None
