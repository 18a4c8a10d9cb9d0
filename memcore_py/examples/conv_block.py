# A conv2d + bias + relu + max-pool block with a reshape and a reduction.
# Lowered by Apache TVM 0.27 (LegalizeOps -> ToNonDataflow -> RemovePurityChecking ->
# CallTIRRewrite) and printed by memcore; regenerate with tools/make_examples.py.
# from tvm.script import ir as I
# from tvm.script import tirx as T
# from tvm.tirx.layout import Axis
# from tvm.script import relax as R

@I.ir_module
class Module:
    @T.prim_func(private=True, s_tir=True)
    def add(lv: T.Buffer((T.int64(1), T.int64(16), T.int64(16), T.int64(16)), "float32"), b: T.Buffer((T.int64(1), T.int64(16), T.int64(1), T.int64(1)), "float32"), T_add: T.Buffer((T.int64(1), T.int64(16), T.int64(16), T.int64(16)), "float32")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        for ax0, ax1, ax2, ax3 in T.grid(T.int64(1), T.int64(16), T.int64(16), T.int64(16)):
            with T.sblock("T_add"):
                v_ax0, v_ax1, v_ax2, v_ax3 = T.axis.remap("SSSS", [ax0, ax1, ax2, ax3])
                T.reads(lv[v_ax0, v_ax1, v_ax2, v_ax3], b[v_ax0, v_ax1, T.int64(0), T.int64(0)])
                T.writes(T_add[v_ax0, v_ax1, v_ax2, v_ax3])
                T_add[v_ax0, v_ax1, v_ax2, v_ax3] = lv[v_ax0, v_ax1, v_ax2, v_ax3] + b[v_ax0, v_ax1, T.int64(0), T.int64(0)]

    @T.prim_func(private=True, s_tir=True)
    def conv2d(x: T.Buffer((T.int64(1), T.int64(8), T.int64(16), T.int64(16)), "float32"), w: T.Buffer((T.int64(16), T.int64(8), T.int64(3), T.int64(3)), "float32"), conv2d_nchw: T.Buffer((T.int64(1), T.int64(16), T.int64(16), T.int64(16)), "float32")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        pad_temp = T.sblock_alloc_buffer((T.int64(1), T.int64(8), T.int64(18), T.int64(18)))
        for i0, i1, i2, i3 in T.grid(T.int64(1), T.int64(8), T.int64(18), T.int64(18)):
            with T.sblock("pad_temp"):
                v_i0, v_i1, v_i2, v_i3 = T.axis.remap("SSSS", [i0, i1, i2, i3])
                T.reads(x[v_i0, v_i1, v_i2 - T.int64(1), v_i3 - T.int64(1)])
                T.writes(pad_temp[v_i0, v_i1, v_i2, v_i3])
                pad_temp[v_i0, v_i1, v_i2, v_i3] = T.if_then_else(T.int64(1) <= v_i2 and v_i2 < T.int64(17) and T.int64(1) <= v_i3 and v_i3 < T.int64(17), x[v_i0, v_i1, v_i2 - T.int64(1), v_i3 - T.int64(1)], T.float32(0.0))
        for nn, ff, yy, xx, rc, ry, rx in T.grid(T.int64(1), T.int64(16), T.int64(16), T.int64(16), T.int64(8), T.int64(3), T.int64(3)):
            with T.sblock("conv2d_nchw"):
                v_nn, v_ff, v_yy, v_xx, v_rc, v_ry, v_rx = T.axis.remap("SSSSRRR", [nn, ff, yy, xx, rc, ry, rx])
                T.reads(pad_temp[v_nn, v_rc, v_yy + v_ry, v_xx + v_rx], w[v_ff, v_rc, v_ry, v_rx])
                T.writes(conv2d_nchw[v_nn, v_ff, v_yy, v_xx])
                with T.init():
                    conv2d_nchw[v_nn, v_ff, v_yy, v_xx] = T.float32(0.0)
                conv2d_nchw[v_nn, v_ff, v_yy, v_xx] = conv2d_nchw[v_nn, v_ff, v_yy, v_xx] + pad_temp[v_nn, v_rc, v_yy + v_ry, v_xx + v_rx] * w[v_ff, v_rc, v_ry, v_rx]

    @T.prim_func(private=True, s_tir=True)
    def max_pool2d(lv2: T.Buffer((T.int64(1), T.int64(16), T.int64(16), T.int64(16)), "float32"), pool_max: T.Buffer((T.int64(1), T.int64(16), T.int64(8), T.int64(8)), "float32")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        for ax0, ax1, ax2, ax3, rv0, rv1 in T.grid(T.int64(1), T.int64(16), T.int64(8), T.int64(8), T.int64(2), T.int64(2)):
            with T.sblock("pool_max"):
                v_ax0, v_ax1, v_ax2, v_ax3, v_rv0, v_rv1 = T.axis.remap("SSSSRR", [ax0, ax1, ax2, ax3, rv0, rv1])
                T.reads(lv2[v_ax0, v_ax1, v_ax2 * T.int64(2) + v_rv0, v_ax3 * T.int64(2) + v_rv1])
                T.writes(pool_max[v_ax0, v_ax1, v_ax2, v_ax3])
                T.sblock_attr({"schedule_rule": "meta_schedule.pool_max"})
                with T.init():
                    pool_max[v_ax0, v_ax1, v_ax2, v_ax3] = T.float32(-340282346638528859811704183484516925440.0)
                pool_max[v_ax0, v_ax1, v_ax2, v_ax3] = T.max(pool_max[v_ax0, v_ax1, v_ax2, v_ax3], lv2[v_ax0, v_ax1, v_ax2 * T.int64(2) + v_rv0, v_ax3 * T.int64(2) + v_rv1])

    @T.prim_func(private=True, s_tir=True)
    def relu(lv1: T.Buffer((T.int64(1), T.int64(16), T.int64(16), T.int64(16)), "float32"), compute: T.Buffer((T.int64(1), T.int64(16), T.int64(16), T.int64(16)), "float32")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        for i0, i1, i2, i3 in T.grid(T.int64(1), T.int64(16), T.int64(16), T.int64(16)):
            with T.sblock("compute"):
                v_i0, v_i1, v_i2, v_i3 = T.axis.remap("SSSS", [i0, i1, i2, i3])
                T.reads(lv1[v_i0, v_i1, v_i2, v_i3])
                T.writes(compute[v_i0, v_i1, v_i2, v_i3])
                compute[v_i0, v_i1, v_i2, v_i3] = T.max(lv1[v_i0, v_i1, v_i2, v_i3], T.float32(0.0))

    @T.prim_func(private=True, s_tir=True)
    def reshape(lv3: T.Buffer((T.int64(1), T.int64(16), T.int64(8), T.int64(8)), "float32"), T_reshape: T.Buffer((T.int64(1), T.int64(1024)), "float32")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        for ax0, ax1 in T.grid(T.int64(1), T.int64(1024)):
            with T.sblock("T_reshape"):
                v_ax0, v_ax1 = T.axis.remap("SS", [ax0, ax1])
                T.reads(lv3[T.int64(0), v_ax1 % T.int64(1024) // T.int64(64), v_ax1 % T.int64(64) // T.int64(8), v_ax1 % T.int64(8)])
                T.writes(T_reshape[v_ax0, v_ax1])
                T_reshape[v_ax0, v_ax1] = lv3[T.int64(0), v_ax1 % T.int64(1024) // T.int64(64), v_ax1 % T.int64(64) // T.int64(8), v_ax1 % T.int64(8)]

    @T.prim_func(private=True, s_tir=True)
    def sum(lv4: T.Buffer((T.int64(1), T.int64(1024)), "float32"), lv4_red: T.Buffer((T.int64(1),), "float32")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        for ax0, k1 in T.grid(T.int64(1), T.int64(1024)):
            with T.sblock("lv4_red"):
                v_ax0, v_k1 = T.axis.remap("SR", [ax0, k1])
                T.reads(lv4[v_ax0, v_k1])
                T.writes(lv4_red[v_ax0])
                with T.init():
                    lv4_red[v_ax0] = T.float32(0.0)
                lv4_red[v_ax0] = lv4_red[v_ax0] + lv4[v_ax0, v_k1]

    @R.function
    def main(x: R.Tensor((1, 8, 16, 16), dtype="float32"), w: R.Tensor((16, 8, 3, 3), dtype="float32"), b: R.Tensor((1, 16, 1, 1), dtype="float32")) -> R.Tensor((1,), dtype="float32"):
        R.func_attr({"relax.force_pure": True})
        cls = Module
        alloc: R.Tensor((1, 16, 16, 16), dtype="float32") = R.builtin.alloc_tensor(R.shape([1, 16, 16, 16]), R.dtype("float32"), 0, R.str("global"))
        cls.conv2d(x, w, alloc)
        lv: R.Tensor((1, 16, 16, 16), dtype="float32") = alloc
        alloc1: R.Tensor((1, 16, 16, 16), dtype="float32") = R.builtin.alloc_tensor(R.shape([1, 16, 16, 16]), R.dtype("float32"), 0, R.str("global"))
        cls.add(lv, b, alloc1)
        lv1: R.Tensor((1, 16, 16, 16), dtype="float32") = alloc1
        alloc2: R.Tensor((1, 16, 16, 16), dtype="float32") = R.builtin.alloc_tensor(R.shape([1, 16, 16, 16]), R.dtype("float32"), 0, R.str("global"))
        cls.relu(lv1, alloc2)
        lv2: R.Tensor((1, 16, 16, 16), dtype="float32") = alloc2
        alloc3: R.Tensor((1, 16, 8, 8), dtype="float32") = R.builtin.alloc_tensor(R.shape([1, 16, 8, 8]), R.dtype("float32"), 0, R.str("global"))
        cls.max_pool2d(lv2, alloc3)
        lv3: R.Tensor((1, 16, 8, 8), dtype="float32") = alloc3
        alloc4: R.Tensor((1, 1024), dtype="float32") = R.builtin.alloc_tensor(R.shape([1, 1024]), R.dtype("float32"), 0, R.str("global"))
        cls.reshape(lv3, alloc4)
        lv4: R.Tensor((1, 1024), dtype="float32") = alloc4
        alloc5: R.Tensor((1,), dtype="float32") = R.builtin.alloc_tensor(R.shape([1]), R.dtype("float32"), 0, R.str("global"))
        cls.sum(lv4, alloc5)
        gv: R.Tensor((1,), dtype="float32") = alloc5
        return gv
