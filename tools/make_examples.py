"""Rebuild ``memcore_py/examples/*.py``: small models lowered by Apache TVM 0.27.

Each example is a Relax module written with TVM's ``relax.op`` API, run through TVM's
``LegalizeOps -> ToNonDataflow -> RemovePurityChecking -> CallTIRRewrite`` (the module
StaticPlanBlockMemory receives), printed by TVM, read with :func:`memcore_py.parse` and
written back with memcore's printer (the canonical text: ``memcore fmt`` leaves it
unchanged, and TVM's parser accepts it).

Usage (needs ``pip install -e ".[oracle]"``)::

    python tools/make_examples.py            # writes memcore_py/examples/{mlp,conv_block}.py
"""
from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "memcore_py", "examples")

HEADER = '''# {title}
# Lowered by Apache TVM 0.27 (LegalizeOps -> ToNonDataflow -> RemovePurityChecking ->
# CallTIRRewrite) and printed by memcore; regenerate with tools/make_examples.py.
'''


def _mlp(relax, R):
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((4, 64), "float32"))
    w1 = relax.Var("w1", relax.TensorType((64, 32), "float32"))
    b1 = relax.Var("b1", relax.TensorType((32,), "float32"))
    w2 = relax.Var("w2", relax.TensorType((32, 10), "float32"))
    b2 = relax.Var("b2", relax.TensorType((10,), "float32"))
    with bb.function("main", [x, w1, b1, w2, b2]):
        with bb.dataflow():
            h = bb.emit(R.matmul(x, w1))
            h = bb.emit(R.add(h, b1))
            h = bb.emit(R.nn.relu(h))
            o = bb.emit(R.matmul(h, w2))
            o = bb.emit(R.add(o, b2))
            o = bb.emit_output(R.nn.softmax(o, axis=-1))
        bb.emit_func_output(o)
    return bb.get()


def _conv_block(relax, R):
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((1, 8, 16, 16), "float32"))
    w = relax.Var("w", relax.TensorType((16, 8, 3, 3), "float32"))
    b = relax.Var("b", relax.TensorType((1, 16, 1, 1), "float32"))
    with bb.function("main", [x, w, b]):
        with bb.dataflow():
            c = bb.emit(R.nn.conv2d(x, w, padding=1))
            c = bb.emit(R.add(c, b))
            c = bb.emit(R.nn.relu(c))
            p = bb.emit(R.nn.max_pool2d(c, pool_size=2, strides=2))
            f = bb.emit(R.reshape(p, (1, 1024)))
            o = bb.emit_output(R.sum(f, axis=[1]))
        bb.emit_func_output(o)
    return bb.get()


EXAMPLES = {
    "mlp": ("A two-layer MLP (4x64 -> 32 -> 10, relu, softmax).", _mlp),
    "conv_block": ("A conv2d + bias + relu + max-pool block with a reshape and a reduction.", _conv_block),
}


def main() -> int:
    import tvm
    from tvm import relax
    from tvm.relax import op as R

    sys.path.insert(0, os.path.join(HERE, ".."))
    import memcore_py

    pipeline = tvm.transform.Sequential([
        relax.transform.LegalizeOps(),
        relax.transform.ToNonDataflow(),
        relax.transform.RemovePurityChecking(),
        relax.transform.CallTIRRewrite(),
    ])
    for name, (title, build) in EXAMPLES.items():
        lowered = pipeline(build(relax, R))
        ours = memcore_py.parse(lowered.script())
        text = HEADER.format(title=title) + ours.script()
        tvm.script.from_source(text)  # TVM must accept what we ship
        with open(os.path.join(OUT, f"{name}.py"), "w", encoding="utf-8") as fh:
            fh.write(text)
        print(f"wrote {name}.py ({len(text.splitlines())} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
