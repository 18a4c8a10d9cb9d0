# A two-layer MLP (4x64 -> 32 -> 10, relu, softmax).
# Lowered by Apache TVM 0.27 (LegalizeOps -> ToNonDataflow -> RemovePurityChecking ->
# CallTIRRewrite) and printed by memcore; regenerate with tools/make_examples.py.
# from tvm.script import ir as I
# from tvm.script import tirx as T
# from tvm.tirx.layout import Axis
# from tvm.script import relax as R

@I.ir_module
class Module:
    @T.prim_func(private=True, s_tir=True)
    def add(lv: T.Buffer((T.int64(4), T.int64(32)), "float32"), b1: T.Buffer((T.int64(32),), "float32"), T_add: T.Buffer((T.int64(4), T.int64(32)), "float32")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        for ax0, ax1 in T.grid(T.int64(4), T.int64(32)):
            with T.sblock("T_add"):
                v_ax0, v_ax1 = T.axis.remap("SS", [ax0, ax1])
                T.reads(lv[v_ax0, v_ax1], b1[v_ax1])
                T.writes(T_add[v_ax0, v_ax1])
                T_add[v_ax0, v_ax1] = lv[v_ax0, v_ax1] + b1[v_ax1]

    @T.prim_func(private=True, s_tir=True)
    def add1(lv3: T.Buffer((T.int64(4), T.int64(10)), "float32"), b2: T.Buffer((T.int64(10),), "float32"), T_add: T.Buffer((T.int64(4), T.int64(10)), "float32")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        for ax0, ax1 in T.grid(T.int64(4), T.int64(10)):
            with T.sblock("T_add"):
                v_ax0, v_ax1 = T.axis.remap("SS", [ax0, ax1])
                T.reads(lv3[v_ax0, v_ax1], b2[v_ax1])
                T.writes(T_add[v_ax0, v_ax1])
                T_add[v_ax0, v_ax1] = lv3[v_ax0, v_ax1] + b2[v_ax1]

    @T.prim_func(private=True, s_tir=True)
    def matmul(x: T.Buffer((T.int64(4), T.int64(64)), "float32"), w1: T.Buffer((T.int64(64), T.int64(32)), "float32"), matmul: T.Buffer((T.int64(4), T.int64(32)), "float32")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        for i0, i1, k in T.grid(T.int64(4), T.int64(32), T.int64(64)):
            with T.sblock("matmul"):
                v_i0, v_i1, v_k = T.axis.remap("SSR", [i0, i1, k])
                T.reads(x[v_i0, v_k], w1[v_k, v_i1])
                T.writes(matmul[v_i0, v_i1])
                with T.init():
                    matmul[v_i0, v_i1] = T.float32(0.0)
                matmul[v_i0, v_i1] = matmul[v_i0, v_i1] + x[v_i0, v_k] * w1[v_k, v_i1]

    @T.prim_func(private=True, s_tir=True)
    def matmul1(lv2: T.Buffer((T.int64(4), T.int64(32)), "float32"), w2: T.Buffer((T.int64(32), T.int64(10)), "float32"), matmul: T.Buffer((T.int64(4), T.int64(10)), "float32")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        for i0, i1, k in T.grid(T.int64(4), T.int64(10), T.int64(32)):
            with T.sblock("matmul"):
                v_i0, v_i1, v_k = T.axis.remap("SSR", [i0, i1, k])
                T.reads(lv2[v_i0, v_k], w2[v_k, v_i1])
                T.writes(matmul[v_i0, v_i1])
                with T.init():
                    matmul[v_i0, v_i1] = T.float32(0.0)
                matmul[v_i0, v_i1] = matmul[v_i0, v_i1] + lv2[v_i0, v_k] * w2[v_k, v_i1]

    @T.prim_func(private=True, s_tir=True)
    def relu(lv1: T.Buffer((T.int64(4), T.int64(32)), "float32"), compute: T.Buffer((T.int64(4), T.int64(32)), "float32")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        for i0, i1 in T.grid(T.int64(4), T.int64(32)):
            with T.sblock("compute"):
                v_i0, v_i1 = T.axis.remap("SS", [i0, i1])
                T.reads(lv1[v_i0, v_i1])
                T.writes(compute[v_i0, v_i1])
                compute[v_i0, v_i1] = T.max(lv1[v_i0, v_i1], T.float32(0.0))

    @T.prim_func(private=True, s_tir=True)
    def softmax(lv4: T.Buffer((T.int64(4), T.int64(10)), "float32"), T_softmax_norm: T.Buffer((T.int64(4), T.int64(10)), "float32")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        T_softmax_maxelem = T.sblock_alloc_buffer((T.int64(4),))
        T_softmax_exp = T.sblock_alloc_buffer((T.int64(4), T.int64(10)))
        T_softmax_expsum = T.sblock_alloc_buffer((T.int64(4),))
        for i0, k in T.grid(T.int64(4), T.int64(10)):
            with T.sblock("T_softmax_maxelem"):
                v_i0, v_k = T.axis.remap("SR", [i0, k])
                T.reads(lv4[v_i0, v_k])
                T.writes(T_softmax_maxelem[v_i0])
                with T.init():
                    T_softmax_maxelem[v_i0] = T.float32(-340282346638528859811704183484516925440.0)
                T_softmax_maxelem[v_i0] = T.max(T_softmax_maxelem[v_i0], lv4[v_i0, v_k])
        for i0, i1 in T.grid(T.int64(4), T.int64(10)):
            with T.sblock("T_softmax_exp"):
                v_i0, v_i1 = T.axis.remap("SS", [i0, i1])
                T.reads(lv4[v_i0, v_i1], T_softmax_maxelem[v_i0])
                T.writes(T_softmax_exp[v_i0, v_i1])
                T_softmax_exp[v_i0, v_i1] = T.exp(lv4[v_i0, v_i1] - T_softmax_maxelem[v_i0])
        for i0, k in T.grid(T.int64(4), T.int64(10)):
            with T.sblock("T_softmax_expsum"):
                v_i0, v_k = T.axis.remap("SR", [i0, k])
                T.reads(T_softmax_exp[v_i0, v_k])
                T.writes(T_softmax_expsum[v_i0])
                with T.init():
                    T_softmax_expsum[v_i0] = T.float32(0.0)
                T_softmax_expsum[v_i0] = T_softmax_expsum[v_i0] + T_softmax_exp[v_i0, v_k]
        for i0, i1 in T.grid(T.int64(4), T.int64(10)):
            with T.sblock("T_softmax_norm"):
                v_i0, v_i1 = T.axis.remap("SS", [i0, i1])
                T.reads(T_softmax_exp[v_i0, v_i1], T_softmax_expsum[v_i0])
                T.writes(T_softmax_norm[v_i0, v_i1])
                T.sblock_attr({"axis": 1})
                T_softmax_norm[v_i0, v_i1] = T_softmax_exp[v_i0, v_i1] / T_softmax_expsum[v_i0]

    @R.function
    def main(x: R.Tensor((4, 64), dtype="float32"), w1: R.Tensor((64, 32), dtype="float32"), b1: R.Tensor((32,), dtype="float32"), w2: R.Tensor((32, 10), dtype="float32"), b2: R.Tensor((10,), dtype="float32")) -> R.Tensor((4, 10), dtype="float32"):
        R.func_attr({"relax.force_pure": True})
        cls = Module
        alloc: R.Tensor((4, 32), dtype="float32") = R.builtin.alloc_tensor(R.shape([4, 32]), R.dtype("float32"), 0, R.str("global"))
        cls.matmul(x, w1, alloc)
        lv: R.Tensor((4, 32), dtype="float32") = alloc
        alloc1: R.Tensor((4, 32), dtype="float32") = R.builtin.alloc_tensor(R.shape([4, 32]), R.dtype("float32"), 0, R.str("global"))
        cls.add(lv, b1, alloc1)
        lv1: R.Tensor((4, 32), dtype="float32") = alloc1
        alloc2: R.Tensor((4, 32), dtype="float32") = R.builtin.alloc_tensor(R.shape([4, 32]), R.dtype("float32"), 0, R.str("global"))
        cls.relu(lv1, alloc2)
        lv2: R.Tensor((4, 32), dtype="float32") = alloc2
        alloc3: R.Tensor((4, 10), dtype="float32") = R.builtin.alloc_tensor(R.shape([4, 10]), R.dtype("float32"), 0, R.str("global"))
        cls.matmul1(lv2, w2, alloc3)
        lv3: R.Tensor((4, 10), dtype="float32") = alloc3
        alloc4: R.Tensor((4, 10), dtype="float32") = R.builtin.alloc_tensor(R.shape([4, 10]), R.dtype("float32"), 0, R.str("global"))
        cls.add1(lv3, b2, alloc4)
        lv4: R.Tensor((4, 10), dtype="float32") = alloc4
        alloc5: R.Tensor((4, 10), dtype="float32") = R.builtin.alloc_tensor(R.shape([4, 10]), R.dtype("float32"), 0, R.str("global"))
        cls.softmax(lv4, alloc5)
        gv: R.Tensor((4, 10), dtype="float32") = alloc5
        return gv
