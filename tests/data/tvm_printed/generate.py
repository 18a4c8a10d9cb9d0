"""Regenerate the TVM-printed test data (spec/tvm_passes.md section 6 worked examples).

Each ``*.txt`` file here is the verbatim ``IRModule.script()`` output of Apache TVM
0.27.0.post1 for one example source run through the listed passes. The files are inputs of
the parser tests; nothing here is written by memcore.

Run with the venv that has apache-tvm installed::

    /work/venv/bin/python tests/data/tvm_printed/generate.py
"""
import os

import tvm
from tvm import relax

HERE = os.path.dirname(os.path.abspath(__file__))

PRE = [  # spec section 6.1: the pre-pipeline before StaticPlanBlockMemory
    relax.transform.LegalizeOps(),
    relax.transform.ToNonDataflow(),
    relax.transform.RemovePurityChecking(),
    relax.transform.CallTIRRewrite(),
]
POST = [relax.transform.LowerAllocTensor(), relax.transform.KillAfterLastUse()]

CHAIN = '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32"):
        y = R.add(x, x)
        z = R.multiply(y, y)
        w = R.add(z, x)
        v = R.multiply(w, z)
        return v
'''

TUPLE = '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, 4), "float32")):
        a = R.exp(x)
        t = R.split(a, 2, axis=0)
        b = t[0]
        c = t[1]
        d = R.add(b, c)
        e = R.exp(d)
        f = R.exp(e)
        out = (f, c)
        return out
'''

DYNAMIC = '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 4), "float32"), y: R.Tensor(("n", "m"), "float32")):
        R.func_attr({ATTRS})
        n = T.int64()
        m = T.int64()
        a = R.exp(x)
        b = R.exp(a)
        c = R.exp(b)
        d = R.exp(y)
        e = R.exp(d)
        f = R.exp(e)
        return (c, f)
'''

INPLACE = '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), "float32"), y: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32"):
        with R.dataflow():
            a = R.add(x, y)
            b = R.multiply(a, a)
            c = R.exp(b)
            d = R.add(b, c)
            e = R.nn.relu(d)
            f = R.add(e, x)
            g = R.subtract(x, f)
            R.output(g)
        return g
'''

KILL_IF = '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), "float32"), c: R.Tensor((), "bool")):
        a = R.add(x, x)
        b = R.add(a, a)
        if c:
            t = R.multiply(b, b)
            u = R.multiply(t, t)
            r = u
        else:
            r = R.add(x, x)
        d = R.add(r, b)
        e = R.add(d, d)
        tup = (e, d)
        g = tup[0]
        h = R.add(g, R.const(1.0, "float32"))
        s = R.shape_of(h)
        return (h, s)
'''

KILL_NO_IF = '''
@I.ir_module
class Module:
    @R.function(pure=False)
    def main(x: R.Tensor((2, 3), "float32")):
        a = R.add(x, x)
        b = R.add(a, a)
        d = R.add(b, b)
        e = R.add(d, d)
        tup = (e, d)
        g = tup[0]
        h = R.add(g, R.const(1.0, "float32"))
        s = R.shape_of(h)
        p = R.prim_value(3)
        pt = R.call_packed("f", h, ty_args=R.Tuple(R.Tensor((2, 3), "float32"), R.Tensor((2, 3), "float32")))
        q = pt[0]
        return (q, s, p)
'''


def _seq(passes):
    return tvm.transform.Sequential(passes)


def _write(name, mod):
    with open(os.path.join(HERE, name + ".txt"), "w") as fh:
        fh.write(mod.script())
        fh.write("\n")


def _pipeline(prefix, src):
    mod = tvm.script.from_source(src)
    _write(prefix + "_source", mod)
    lowered = _seq(PRE)(mod)
    _write(prefix + "_lowered", lowered)
    planned = relax.transform.StaticPlanBlockMemory()(lowered)
    _write(prefix + "_planned", planned)
    _write(prefix + "_killed", _seq(POST)(planned))


def main():
    _pipeline("6_1_chain", CHAIN)
    _pipeline("6_2_tuple", TUPLE)
    _pipeline("6_3_dynamic", DYNAMIC.replace("ATTRS", '"tir_var_upper_bound": {"n": 128}'))
    _pipeline(
        "6_3_dynamic_output",
        DYNAMIC.replace(
            "ATTRS", '"tir_var_upper_bound": {"n": 128}, "relax.memory_plan_dynamic_func_output": True'
        ),
    )
    mod = tvm.script.from_source(INPLACE)
    _write("6_4_inplace_source", mod)
    _write("6_4_inplace_after", relax.transform.DataflowUseInplaceCalls()(mod))
    mod = tvm.script.from_source(KILL_IF)
    _write("6_5_kill_if_source", mod)
    _write("6_5_kill_if_after", relax.transform.KillAfterLastUse()(mod))
    mod = tvm.script.from_source(KILL_NO_IF)
    _write("6_5_kill_no_if_source", mod)
    _write("6_5_kill_no_if_after", relax.transform.KillAfterLastUse()(mod))


if __name__ == "__main__":
    main()
