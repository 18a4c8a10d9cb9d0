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

# Extra sources (not in the spec) covering the other constructs of the printed subset. They
# are written as TVM's parser accepts them; the data files hold TVM's re-print.
EXTRA = {
    "x_call_tir_dataflow": """
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def add(a: T.Buffer((T.int64(2), T.int64(3)), "float32"), b: T.Buffer((T.int64(2), T.int64(3)), "float32"), c: T.Buffer((T.int64(2), T.int64(3)), "float32")):
        T.func_attr({"tirx.noalias": True})
        T.evaluate(0)

    @T.prim_func(private=True)
    def add_ip(a: T.Buffer((T.int64(2), T.int64(3)), "float32"), b: T.Buffer((T.int64(2), T.int64(3)), "float32")):
        T.evaluate(0)

    @T.prim_func(private=True)
    def split2(a: T.Buffer((T.int64(2), T.int64(3)), "float32"), b: T.Buffer((T.int64(2), T.int64(3)), "float32"), c: T.Buffer((T.int64(2), T.int64(3)), "float32")):
        T.evaluate(0)

    @R.function
    def main(x: R.Tensor((2, 3), "float32"), y: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32"):
        cls = Module
        with R.dataflow():
            a = R.call_tir(cls.add, (x, y), out_ty=R.Tensor((2, 3), "float32"))
            t = R.call_tir(cls.split2, (a,), out_ty=[R.Tensor((2, 3), "float32"), R.Tensor((2, 3), "float32")])
            t0 = t[0]
            t1 = t[1]
            b = R.call_tir_inplace(cls.add_ip, (t0, t1), out_ty=R.Tensor((2, 3), "float32"), inplace_indices=[1])
            c = R.call_dps_packed("my_ext", (b,), out_ty=R.Tensor((2, 3), "float32"))
            d = R.nn.relu(c)
            e = R.permute_dims(d, axes=[1, 0])
            f = R.sum(e, axis=[0], keepdims=True)
            g = R.astype(d, "float16")
            R.output(d, f, g)
        return d
""",
    "x_if_match_cast": """
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 4), "float32"), y: R.Tensor(ndim=2, dtype="float32"), c: R.Tensor((), "bool")):
        n = T.int64()
        k = T.int64()
        j = T.int64()
        a = R.match_cast(y, R.Tensor((k, j), "float32"))
        b = R.exp(a)
        s = R.shape([k * 2, n])
        if c:
            t = R.multiply(x, x)
            u = R.add(t, t)
            r = u
        else:
            r = R.add(x, x)
        q = R.reshape(r, R.shape([n * 4]))
        p = R.prim_value(k + 1)
        tup = (b, (q, s))
        g = tup[1]
        h = g[0]
        return (h, p, tup)
""",
    "x_lowered_vm": """
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def add(a: T.Buffer((T.int64(2), T.int64(3)), "float32"), b: T.Buffer((T.int64(2), T.int64(3)), "float32"), c: T.Buffer((T.int64(2), T.int64(3)), "float32")):
        T.evaluate(0)

    @R.function(pure=False)
    def main(x: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32"):
        cls = Module
        s = R.vm.alloc_storage(R.shape([24]), R.prim_value(0), R.dtype("uint8"), R.str("global"))
        t = R.vm.alloc_tensor(s, R.prim_value(0), R.shape([2, 3]), R.dtype("float32"))
        R.vm.call_tir_dyn(cls.add, (x, x, t))
        u = R.call_packed("vm.builtin.reshape", t, R.shape([3, 2]), ty_args=R.Tensor((3, 2), "float32"))
        st = R.memory.alloc_storage(R.shape([24]), 0, "global", "float32")
        al = R.memory.alloc_tensor(st, 0, R.shape([2, 3]), "float32", 0)
        v = R.memory.view(al, R.shape([3, 2]), R.dtype("float32"), R.prim_value(0))
        w = R.memory.ensure_zero_offset(v)
        b = R.call_pure_packed("my_pure", w, ty_args=R.Tensor((3, 2), "float32"))
        ip = R.call_inplace_packed("my_inplace", b, inplace_indices=[0], ty_args=R.Tensor((3, 2), "float32"))
        pk = R.call_packed("my_packed", ip, R.prim_value(T.int32(4)), R.prim_value(T.float32(1.5)), R.str("s"), R.dtype("int8"), ty_args=R.Object)
        R.memory.kill_tensor(al)
        R.memory.kill_storage(st)
        R.vm.kill_object(s)
        nv = R.null_value()
        return x
""",
    "x_constants": """
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), "float32")):
        a = R.add(x, R.const(1.0, "float32"))
        b = R.add(a, R.const(-float("inf"), "float32"))
        c = R.add(b, R.const(float("nan"), "float32"))
        d = R.add(c, R.const(0.1, "float32"))
        e = R.const(3, "int64")
        f = R.const(True, "bool")
        g = R.const(2.5, "float16")
        h = R.const(-7, "int32")
        k = R.add(d, R.const([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], "float32"))
        return (k, e, f, g, h)
""",
    "x_functions": """
@I.ir_module
class Module:
    I.module_attrs({"attr": 10})

    @R.function(private=True)
    def helper(x: R.Tensor((2, 3), "float32"), p: R.Prim("int64")) -> R.Tuple(R.Tensor((2, 3), "float32"), R.Prim("int64")):
        return (x, p)

    @R.function
    def other(x: R.Tensor((2, 3), "float32"), f: R.Callable((R.Tensor((2, 3), "float32"),), R.Tensor((2, 3), "float32"))) -> R.Tensor((2, 3), "float32"):
        R.func_attr({"num_input": 1, "tir_var_upper_bound": {"n": 16}, "tir_non_negative_var": ["n"]})
        y = f(x)
        return y

    @R.function
    def main(x: R.Tensor((2, 3), "float32"), o: R.Object, s: R.Shape(ndim=2)) -> R.Tensor((2, 3), "float32"):
        cls = Module
        t = cls.helper(x, R.prim_value(3))
        y = t[0]
        st = R.str("hello")
        return y
""",
}


def extras():
    for name, src in EXTRA.items():
        _write(name, tvm.script.from_source(src))


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
    extras()


if __name__ == "__main__":
    main()
