"""ATen converters for normalisation, padding, resizing, transposed convolution and other
neural-network layers (TVM 0.27's mapping).

Design
------
``group_norm``/``native_group_norm`` and ``instance_norm`` (with the decomposed
``_native_batch_norm_legit.no_stats``, which TVM also imports as ``instance_norm``),
``constant_pad_nd``/``pad`` (torch's last-dim-first pad list as ``nn.pad``'s per-dim
``pad_width``), the ``upsample_*2d`` family (``image.resize2d``), ``conv_transpose1d/2d``
(also ``convolution.default`` with ``transposed=True``, see :mod:`._aten_math`), ``einsum``,
``pixel_shuffle``, ``prelu``, ``one_hot``, the 1-D/3-D pools, ``grid_sampler_2d``
(``image.grid_sample``), ``affine_grid_generator``, torchvision's ``roi_align`` and
``rnn_tanh``/``lstm``/``gru`` (unrolled over the static sequence). Each converter emits what
TVM's converter of the same target emits, in the same order (see :mod:`._aten_ops`),
including TVM's quirks (the 1-D/3-D pools' unbatched squeeze is returned unemitted); where a
quirk makes TVM's program differ from torch's (``instance_norm``'s epsilon, read from the
``running_var`` position) the node is refused instead.
"""
from __future__ import annotations

import operator

import numpy as np

from ..ir.expr import Call
from ._aten_common import arg, registrar, relax_dtype, static_dim

__all__ = ["CONVERTERS", "conv_transpose"]

CONVERTERS: dict = {}
_register = registrar(CONVERTERS)


# ------------------------------------------------------------------------------------ norms
def _group_norm_emit(ctx, x, gamma, beta, num_groups, eps):
    rank = len(ctx.shape_of(x))
    return ctx.op("nn.group_norm", x, gamma, beta, num_groups=num_groups, channel_axis=1,
                  axes=list(range(2, rank)), epsilon=eps)


def _optional_tensor(ctx, node, i):
    a = node.args[i] if len(node.args) > i else None
    if a is None:
        raise ctx.error(f"argument {i} is None: TVM's converter needs the affine weights")
    return ctx.env[a]


@_register("group_norm.default")
def _group_norm(ctx, node):
    """TVM's ``_group_norm``: ``nn.group_norm`` over the spatial axes, channel axis 1."""
    return _group_norm_emit(ctx, ctx.env[node.args[0]], _optional_tensor(ctx, node, 2),
                            _optional_tensor(ctx, node, 3), node.args[1], arg(node, 4, "eps", 1e-05))


@_register("native_group_norm.default")
def _native_group_norm(ctx, node):
    """``native_group_norm(x, weight, bias, N, C, HxW, group, eps)``; its (out, mean, rstd)
    is the normalised tensor, as in TVM (``getitem`` 0 of a tensor is the tensor)."""
    num_groups = node.args[6] if len(node.args) > 6 else 1
    eps = node.args[7] if len(node.args) > 7 else 1e-05
    return _group_norm_emit(ctx, ctx.env[node.args[0]], _optional_tensor(ctx, node, 1),
                            _optional_tensor(ctx, node, 2), num_groups, eps)


def _affine_or(ctx, node, i, x, fill):
    """``env.get(args[i], const([fill] * channel))``, TVM's default weights."""
    a = node.args[i] if len(node.args) > i else None
    if a is not None:
        return ctx.env[a]
    channel = static_dim(ctx.shape_of(x)[1])
    if channel is None:
        raise ctx.error("a norm without affine parameters needs a static channel count (as TVM)")
    return ctx.const(np.full(channel, fill, dtype="float64"), ctx.dtype_of(x))


@_register("instance_norm.default")
def _instance_norm(ctx, node):
    """``instance_norm(x, w, b, running_mean, running_var, use_input_stats, momentum, eps, ..)``.
    TVM reads the epsilon from position 4 (``running_var``), so it is 1e-5 whatever the node's
    ``eps``: another ``eps`` is refused, as are running stats (TVM would fail on the tensor)
    (DIFFERENCES.md "More torch converters")."""
    x = ctx.env[node.args[0]]
    gamma, beta = _affine_or(ctx, node, 1, x, 1.0), _affine_or(ctx, node, 2, x, 0.0)
    running_var = node.args[4] if len(node.args) > 4 else None
    if running_var is not None:
        raise ctx.error("instance_norm with running stats is not supported (TVM reads eps from running_var)")
    eps = arg(node, 7, "eps", 1e-05)
    if eps != 1e-05:
        raise ctx.error(f"instance_norm with eps={eps!r}: TVM's converter uses 1e-05 (it reads running_var's "
                        "position); memcore imports only eps=1e-05 rather than a different program")
    eps = 1e-05
    rank = len(ctx.shape_of(x))
    return ctx.op("nn.instance_norm", x, gamma, beta, channel_axis=1, axes=list(range(2, rank)), epsilon=eps)


@_register("_native_batch_norm_legit.no_stats")
def _batch_norm_no_stats(ctx, node):
    """``_native_batch_norm_legit.no_stats(x, w, b, training, momentum, eps)`` (decomposed
    InstanceNorm): TVM's ``instance_norm`` over axis 0 and the spatial axes."""
    x = ctx.env[node.args[0]]
    gamma, beta = _affine_or(ctx, node, 1, x, 1.0), _affine_or(ctx, node, 2, x, 0.0)
    eps = arg(node, 5, "eps", 1e-05)
    rank = len(ctx.shape_of(x))
    return ctx.op("nn.instance_norm", x, gamma, beta, channel_axis=1, axes=[0] + list(range(2, rank)),
                  epsilon=eps)


# ------------------------------------------------------------------------------------ padding
def _pad_width(ctx, x, pad):
    """torch's ``pad`` (last dim first, (before, after) pairs) as ``nn.pad``'s ``pad_width``
    (first dim first, unpadded leading dims 0)."""
    rank = x.ty.ndim
    width = [0] * (rank * 2)
    pairs = [list(pad[i:i + 2]) for i in range(0, len(pad), 2)]
    flat = [v for pair in reversed(pairs) for v in pair]
    if flat:
        width[-len(flat):] = flat
    return width


@_register("constant_pad_nd.default")
def _constant_pad_nd(ctx, node):
    x = ctx.env[node.args[0]]
    value = arg(node, 2, "value", 0.0)
    value = 0.0 if value is None else value
    return ctx.op("nn.pad", x, pad_width=_pad_width(ctx, x, node.args[1]), pad_mode="constant", pad_value=value)


@_register("pad.default")
def _pad(ctx, node):
    """TVM's ``_pad``: torch's mode string passed as ``pad_mode`` unchanged."""
    x = ctx.env[node.args[0]]
    mode = arg(node, 2, "mode", "constant")
    value = arg(node, 3, "value", 0.0)
    value = 0.0 if value is None else value
    return ctx.op("nn.pad", x, pad_width=_pad_width(ctx, x, node.args[1]), pad_mode=mode, pad_value=value)


# ------------------------------------------------------------------------------------ resize
def _upsample(ctx, x, size, scale_factor, method, align_corners):
    """TVM's ``_upsample_impl``: a missing size is ``int(dim * scale)`` per spatial dim."""
    if size is None:
        shape = ctx.shape_of(x)
        dims = [static_dim(d) for d in shape[2:]]
        if any(d is None for d in dims):
            raise ctx.error("upsampling by a scale factor needs static spatial dims (as TVM)")
        if isinstance(scale_factor, (list, tuple)):
            if len(scale_factor) != len(dims):
                raise ctx.error(f"expected {len(dims)} scale factors; got {scale_factor!r}")
            size = [int(d * s) for d, s in zip(dims, scale_factor)]
        else:
            size = [int(d * scale_factor) for d in dims]
    return ctx.op("image.resize2d", x, list(size), layout="NCHW", method=method,
                  coordinate_transformation_mode="align_corners" if align_corners else "half_pixel")


@_register("upsample_bilinear2d.vec")
def _upsample_bilinear2d(ctx, node):
    """``upsample_bilinear2d.vec(x, output_size, align_corners, scale_factors)``."""
    return _upsample(ctx, ctx.env[node.args[0]], arg(node, 1, "size", None), arg(node, 3, "scale_factor", 1),
                     "linear", arg(node, 2, "align_corners", True))


@_register("_upsample_bilinear2d_aa.default")
def _upsample_bilinear2d_aa(ctx, node):
    """TVM imports the antialiased variant as plain bilinear resizing."""
    return _upsample(ctx, ctx.env[node.args[0]], arg(node, 1, "output_size", None),
                     arg(node, 3, "scale_factors", None), "linear", arg(node, 2, "align_corners", False))


@_register("upsample_nearest2d.vec")
def _upsample_nearest2d(ctx, node):
    """``upsample_nearest2d.vec(x, output_size, scale_factors)``; TVM reads an align_corners
    at position 2 (the scale factors) or 3, so ``half_pixel`` unless those are set."""
    size = arg(node, 1, "size", None)
    if size:
        scale, align = None, arg(node, 2, "align_corners", None)
    else:
        scale, align = arg(node, 2, "scale_factor", 1), arg(node, 3, "align_corners", None)
    return _upsample(ctx, ctx.env[node.args[0]], size, scale, "nearest_neighbor", align)


@_register("upsample_bicubic2d.vec")
def _upsample_bicubic2d(ctx, node):
    size = arg(node, 1, "size", None)
    scale = None if size is not None else arg(node, 3, "scale_factor", 1)
    return _upsample(ctx, ctx.env[node.args[0]], size, scale, "cubic", arg(node, 2, "align_corners", None))


# ------------------------------------------------------------------------------------ conv transpose
def _no_bias(bias) -> bool:
    return bias is None or (isinstance(bias, Call) and bias.op.name == "relax.null_value")


def conv_transpose(ctx, x, weight, bias, stride, padding, dilation, groups, output_padding):
    """TVM's ``_conv_transpose{1,2}d_impl``: ``nn.conv{1,2}d_transpose`` (IO kernel layout,
    float32 out), then the bias reshaped to (1, -1, 1[, 1]) added."""
    nd = len(ctx.shape_of(x)) - 2
    layouts = {1: ("NCW", "IOW"), 2: ("NCHW", "IOHW")}.get(nd)
    if layouts is None:
        raise ctx.error(f"transposed convolution of a rank-{nd + 2} input is not supported (as in TVM)")
    out = ctx.op(f"nn.conv{nd}d_transpose", x, weight, strides=stride, padding=padding, dilation=dilation,
                 groups=groups, output_padding=output_padding, data_layout=layouts[0], kernel_layout=layouts[1],
                 out_dtype="float32")
    if _no_bias(bias):
        return out
    if len(ctx.shape_of(bias)) != 1:
        raise ctx.error("the convolution bias must be 1-D")
    return ctx.op("add", out, ctx.call("reshape", bias, (1, -1) + (1,) * nd))


@_register("conv_transpose1d.default", "conv_transpose2d.input")
def _conv_transpose(ctx, node):
    """``conv_transpose{1,2}d(x, w, bias, stride, padding, output_padding, groups, dilation)``."""
    args = ctx.args(node)
    get = lambda i, d: args[i] if len(args) > i else d  # noqa: E731
    return conv_transpose(ctx, args[0], args[1], get(2, None), get(3, 1), get(4, 0), get(7, 1), get(6, 1), get(5, 0))


# ------------------------------------------------------------------------------------ other layers
@_register("einsum.default")
def _einsum(ctx, node):
    args = ctx.args(node)
    operands = args[1] if isinstance(args[1], (list, tuple)) else args[1:]
    return ctx.op("einsum", list(operands), subscripts=args[0])


@_register("pixel_shuffle.default")
def _pixel_shuffle(ctx, node):
    factor = node.args[1]
    if not isinstance(factor, int):
        raise ctx.error(f"pixel_shuffle needs an int upscale factor; got {factor!r}")
    return ctx.op("nn.pixel_shuffle", ctx.env[node.args[0]], upscale_factor=factor)


@_register("prelu.default")
def _prelu(ctx, node):
    x = ctx.env[node.args[0]]
    return ctx.op("nn.prelu", x, ctx.env[node.args[1]], axis=0 if x.ty.ndim == 1 else 1)


@_register("one_hot.default")
def _one_hot(ctx, node):
    num_classes = arg(node, 1, "num_classes", None)
    if not isinstance(num_classes, int) or num_classes <= 0:
        raise ctx.error(f"one_hot needs a positive num_classes (as TVM); got {num_classes!r}")
    on, off = arg(node, 2, "on_value", 1), arg(node, 3, "off_value", 0)
    return ctx.op("one_hot", ctx.env[node.args[0]], on, off, depth=num_classes, axis=arg(node, 4, "axis", -1))


def _unbatched(ctx, x, rank, emit_pool):
    """TVM's 1-D/3-D pool wrappers: an input missing the batch dim gets one (an unemitted
    ``expand_dims``, bound by the pool's emit) and loses it after (an unemitted ``squeeze``,
    returned)."""
    unbatched = x.ty.ndim == rank - 1
    if unbatched:
        x = ctx.call("expand_dims", x, axis=0)
    out = emit_pool(x)
    return ctx.call("squeeze", out, axis=[0]) if unbatched else out


_LAYOUT = {1: "NCW", 3: "NCDHW"}


def _max_pool(nd):
    def convert(ctx, node):
        args = ctx.args(node)
        get = lambda i, d: args[i] if len(args) > i else d  # noqa: E731
        kernel = args[1]
        stride = get(2, None)
        stride = kernel if stride is None else stride
        out = _unbatched(ctx, args[0], nd + 2, lambda x: ctx.op(
            f"nn.max_pool{nd}d", x, pool_size=kernel, strides=stride, padding=get(3, 0), dilation=get(4, 1),
            ceil_mode=get(5, False), layout=_LAYOUT[nd]))
        if not node.target.__name__.endswith("_with_indices.default"):
            return out
        # TVM: (output, zeros_like(output)) as indices placeholder, one emitted tuple
        return ctx.emit(ctx.tuple([out, ctx.call("zeros_like", out)]))
    return convert


def _avg_pool(nd):
    def convert(ctx, node):
        x = ctx.env[node.args[0]]
        get = lambda i, key, d: node.args[i] if len(node.args) > i else node.kwargs.get(key, d)  # noqa: E731
        kernel = get(1, "kernel_size", None)
        stride = get(2, "stride", None)
        stride = kernel if stride is None or stride == [] else stride
        return _unbatched(ctx, x, nd + 2, lambda x: ctx.op(
            f"nn.avg_pool{nd}d", x, pool_size=kernel, strides=stride, padding=get(3, "padding", 0),
            ceil_mode=get(4, "ceil_mode", False), count_include_pad=get(5, "count_include_pad", True),
            layout=_LAYOUT[nd]))
    return convert


def _adaptive_avg_pool(nd):
    def convert(ctx, node):
        size = node.args[1] if len(node.args) > 1 else node.kwargs["output_size"]
        return _unbatched(ctx, ctx.env[node.args[0]], nd + 2, lambda x: ctx.op(
            f"nn.adaptive_avg_pool{nd}d", x, output_size=size, layout=_LAYOUT[nd]))
    return convert


for _nd in (1, 3):
    CONVERTERS[f"max_pool{_nd}d.default"] = _max_pool(_nd)
    CONVERTERS[f"avg_pool{_nd}d.default"] = _avg_pool(_nd)
    CONVERTERS[f"adaptive_avg_pool{_nd}d.default"] = _adaptive_avg_pool(_nd)
# (torch 2.13 has no aten._adaptive_avg_pool1d: TVM's other 1-D key, reached by a custom op of that name)
CONVERTERS["_adaptive_avg_pool1d.default"] = _adaptive_avg_pool(1)
CONVERTERS["_adaptive_avg_pool3d.default"] = _adaptive_avg_pool(3)
CONVERTERS["max_pool3d_with_indices.default"] = _max_pool(3)


# ------------------------------------------------------------------------------------ sampling, rois
@_register("grid_sampler_2d.default")
def _grid_sampler_2d(ctx, node):
    """``grid_sampler_2d(x, grid, interpolation, padding, align_corners)``: TVM's
    ``image.grid_sample`` with torch's mode enums as names (NCHW)."""
    args = ctx.args(node)
    get = lambda i, d: args[i] if len(args) > i else d  # noqa: E731
    method = {0: "bilinear", 1: "nearest", 2: "bicubic"}.get(get(2, 0), "bilinear")
    padding = {0: "zeros", 1: "border", 2: "reflection"}.get(get(3, 0), "zeros")
    return ctx.op("image.grid_sample", args[0], args[1], method=method, layout="NCHW", padding_mode=padding,
                  align_corners=get(4, False))


@_register("affine_grid_generator.default")
def _affine_grid_generator(ctx, node):
    """``affine_grid_generator(theta, size, align_corners)``: TVM's ``image.affine_grid`` of
    (H, W), its (N, 2, H, W) result permuted to torch's (N, H, W, 2); TVM refuses
    ``align_corners=False``, and so does memcore."""
    args = ctx.args(node)
    theta, size = args[0], args[1]
    if not (args[2] if len(args) > 2 else False):
        raise ctx.error("affine_grid with align_corners=False is not supported (as in TVM)")
    grid = ctx.op("image.affine_grid", theta, [size[2], size[3]])
    return ctx.op("permute_dims", grid, axes=[0, 2, 3, 1])


@_register("roi_align.default")
def _roi_align(ctx, node):
    """torchvision's ``roi_align(x, rois, spatial_scale, pooled_h, pooled_w, sampling_ratio,
    aligned)``: TVM's ``vision.roi_align`` (NCHW, avg); when ``aligned``, the boxes (columns
    1-4 of the rois) are shifted by -0.5 first, as TVM does."""
    args = ctx.args(node)
    get = lambda i, d: args[i] if len(args) > i else d  # noqa: E731
    data, rois = args[0], args[1]
    pooled_h = get(3, 1)
    aligned = get(6, False)
    if aligned:
        index = ctx.op("strided_slice", rois, [1], [0], [1])
        boxes = ctx.op("strided_slice", rois, [1], [1], [5])
        boxes = ctx.op("subtract", boxes, ctx.const(0.5, ctx.dtype_of(rois)))
        rois = ctx.op("concat", [index, boxes], axis=1)
    return ctx.op("vision.roi_align", data, rois, pooled_size=(pooled_h, get(4, pooled_h)),
                  spatial_scale=get(2, 1.0), sample_ratio=get(5, -1), aligned=aligned, layout="NCHW", mode="avg")


# ------------------------------------------------------------------------------------ recurrent
def _direction_weights(ctx, params, direction, has_biases, n_gates, hidden, input_size, dtype):
    """(w_ih, w_hh, b_ih, b_hh) of one direction as TVM's RNN converters read them from the
    flat ``params`` list; zero weights (``n_gates * hidden`` rows) and no biases when the
    list is too short."""
    per_direction = 4 if has_biases else 2
    first = direction * per_direction
    if params and len(params) >= first + per_direction:
        w = params[first:first + per_direction]
        return (w[0], w[1], w[2], w[3]) if has_biases else (w[0], w[1], None, None)
    return (ctx.op("zeros", [n_gates * hidden, input_size], dtype=dtype),
            ctx.op("zeros", [n_gates * hidden, hidden], dtype=dtype), None, None)


def _rnn_args(ctx, node, name):
    """``(x, hx, params, has_biases, bidirectional, batch_first)`` of an undecomposed
    ``rnn_tanh``/``lstm``/``gru`` node (``(x, hx, params, has_biases, num_layers, dropout,
    train, bidirectional, batch_first)``); one layer only, as in TVM."""
    args = ctx.args(node)
    get = lambda i, d: args[i] if len(args) > i else d  # noqa: E731
    if get(4, 1) > 1:
        raise ctx.error(f"a multi-layer {name} is not supported (as in TVM)")
    return args[0], get(1, None), get(2, None), get(3, True), get(7, False), get(8, False)


def _initial_states(ctx, hx, n_dirs, batch, hidden, dtype):
    """Each direction's initial hidden state: ``hx[d]``, or zeros without ``hx``."""
    if hx is not None:
        return [ctx.op("take", hx, ctx.const(i, "int64"), axis=0, mode="clip") for i in range(n_dirs)]
    return [ctx.op("zeros", [batch, hidden], dtype=dtype) for _ in range(n_dirs)]


def _swap_batch_and_time(ctx, x):
    """``x`` with its first two axes swapped (batch-first <-> time-first)."""
    return ctx.op("permute_dims", x, axes=[1, 0, 2])


def _final_states_unused(ctx, node, name):
    """TVM's ``lstm``/``gru`` converters return the output sequence alone, which its
    ``getitem`` also hands out for the final states: refuse a node whose states are used."""
    if any(u.target is operator.getitem and u.args[1] != 0 and u.users for u in node.users):
        raise ctx.error(f"the {name}'s final states are used: TVM's converter returns the output sequence for "
                        "them; memcore refuses it rather than import a different program")


def _rnn_tanh_direction(ctx, x, w_ih, w_hh, b_ih, b_hh, h, seq_len, reverse):
    """TVM's ``_rnn_tanh_cell_unroll``: transposed weights, the summed biases, then per time
    step ``h = tanh(x_t @ W_ih^T + h @ W_hh^T [+ b])``; the outputs stacked in time order.
    Returns (outputs, last hidden state)."""
    w_ih_t = ctx.op("permute_dims", w_ih, axes=[1, 0])
    w_hh_t = ctx.op("permute_dims", w_hh, axes=[1, 0])
    bias = ctx.op("add", b_ih, b_hh) if b_ih is not None and b_hh is not None else None
    outputs = []
    for t in (range(seq_len - 1, -1, -1) if reverse else range(seq_len)):
        x_t = ctx.op("take", x, ctx.const(t, "int64"), axis=0, mode="clip")
        pre = ctx.op("add", ctx.op("matmul", x_t, w_ih_t), ctx.op("matmul", h, w_hh_t))
        if bias is not None:
            pre = ctx.op("add", pre, bias)
        h = ctx.op("tanh", pre)
        outputs.append(h)
    if reverse:
        outputs.reverse()
    return ctx.op("stack", outputs, axis=0), h


@_register("rnn_tanh.input")
def _rnn_tanh(ctx, node):
    """``rnn_tanh.input(x, hx, params, has_biases, num_layers, dropout, train, bidirectional,
    batch_first)`` (undecomposed ``nn.RNN``): TVM's ``_rnn_tanh``, one layer, static sequence
    length; unrolled per direction (the backward one over reversed time), outputs
    concatenated on the feature axis, the final states stacked; returns ``(output, h_n)``."""
    x, hx, params, has_biases, bidirectional, batch_first = _rnn_args(ctx, node, "RNN")
    meta = node.args[0].meta
    meta = meta["val"] if "val" in meta else meta["tensor_meta"]
    shape = list(meta.shape)
    seq_len, batch, input_size = (shape[1], shape[0], shape[2]) if batch_first else shape
    if not isinstance(seq_len, int):
        raise ctx.error("an RNN over a symbolic sequence length is not supported (as in TVM)")
    hidden = 16  # TVM's default when the weights are missing
    if params and len(params) >= 2:
        w_meta = node.args[2][0].meta
        hidden = int((w_meta["val"] if "val" in w_meta else w_meta["tensor_meta"]).shape[0])
    dtype = relax_dtype(ctx, meta.dtype)

    fwd = _direction_weights(ctx, params, 0, has_biases, 1, hidden, input_size, dtype)
    bwd = _direction_weights(ctx, params, 1, has_biases, 1, hidden, input_size, dtype) if bidirectional else None
    h0 = _initial_states(ctx, hx, 2 if bidirectional else 1, batch, hidden, dtype)
    seq = _swap_batch_and_time(ctx, x) if batch_first else x
    out, h_n = _rnn_tanh_direction(ctx, seq, *fwd, h0[0], seq_len, False)
    if bidirectional:
        out_b, h_n_b = _rnn_tanh_direction(ctx, seq, *bwd, h0[1], seq_len, True)
        out = ctx.op("concat", [out, out_b], axis=2)
        h_n = ctx.op("stack", [h_n, h_n_b], axis=0)
    else:
        h_n = ctx.op("expand_dims", h_n, axis=0)
    if batch_first:
        out = _swap_batch_and_time(ctx, out)
    return ctx.emit(ctx.tuple([out, h_n]))


def _lstm_direction(ctx, x, w_ih, w_hh, b_ih, b_hh, h, c, seq_len, hidden, reverse):
    """TVM's ``_lstm_cell_unroll``: per time step the gates ``x_t @ W_ih^T + h @ W_hh^T``
    (+ each bias), sliced i, f, g, o; ``c = f * c + i * g``, ``h = o * tanh(c)``; the
    hidden states stacked in time order."""
    w_ih_t = ctx.op("permute_dims", w_ih, axes=[1, 0])
    w_hh_t = ctx.op("permute_dims", w_hh, axes=[1, 0])
    outputs = []
    for t in (range(seq_len - 1, -1, -1) if reverse else range(seq_len)):
        x_t = ctx.op("take", x, ctx.const(t, "int64"), axis=0, mode="clip")
        gates = ctx.op("add", ctx.op("matmul", x_t, w_ih_t), ctx.op("matmul", h, w_hh_t))
        for b in (b_ih, b_hh):
            if b is not None:
                gates = ctx.op("add", gates, b)
        i, f, g, o = (ctx.op("strided_slice", gates, [1], [k * hidden], [(k + 1) * hidden]) for k in range(4))
        i, f, g, o = ctx.op("sigmoid", i), ctx.op("sigmoid", f), ctx.op("tanh", g), ctx.op("sigmoid", o)
        c = ctx.emit(ctx.call("add", ctx.call("multiply", f, c), ctx.call("multiply", i, g)))
        h = ctx.emit(ctx.call("multiply", o, ctx.call("tanh", c)))
        outputs.append(h)
    if reverse:
        outputs.reverse()
    return ctx.op("stack", outputs, axis=0)


@_register("lstm.input")
def _lstm(ctx, node):
    """``lstm.input(x, (h0, c0), params, has_biases, num_layers, dropout, train, bidirectional,
    batch_first)`` (undecomposed ``nn.LSTM``): TVM's ``_lstm``, one layer, static sequence
    length, unrolled per direction. TVM returns the output sequence alone, which its
    ``getitem`` then reads for ``h_n`` and ``c_n`` too; memcore refuses a node whose final
    states are used rather than import that different program."""
    x, hx, params, has_biases, bidirectional, batch_first = _rnn_args(ctx, node, "LSTM")
    _final_states_unused(ctx, node, "LSTM")
    shape = [static_dim(d) if static_dim(d) is not None else d for d in ctx.shape_of(x)]
    seq_len, batch, input_size = (shape[1], shape[0], shape[2]) if batch_first else shape
    if not isinstance(seq_len, int):
        raise ctx.error("an LSTM over a symbolic sequence length is not supported")
    hidden = static_dim(ctx.shape_of(params[0])[0]) // 4 if params and len(params) >= 2 else 16
    dtype = ctx.dtype_of(x)

    if params and len(params) >= 2:  # (TVM's forward test differs from the backward one)
        fwd = (params[0], params[1], params[2] if has_biases and len(params) > 2 else None,
               params[3] if has_biases and len(params) > 3 else None)
    else:
        fwd = _direction_weights(ctx, None, 0, has_biases, 4, hidden, input_size, dtype)
    bwd = _direction_weights(ctx, params, 1, has_biases, 4, hidden, input_size, dtype) if bidirectional else None
    n_dirs = 2 if bidirectional else 1
    if hx is not None and len(hx) >= 2:
        states = [ctx.op("take", s, ctx.const(i, "int64"), axis=0, mode="clip")
                  for i in range(n_dirs) for s in (hx[0], hx[1])]
    else:
        states = [ctx.op("zeros", [batch, hidden], dtype=dtype) for _ in range(2 * n_dirs)]
    seq = _swap_batch_and_time(ctx, x) if batch_first else x
    out = _lstm_direction(ctx, seq, *fwd, states[0], states[1], seq_len, hidden, False)
    if bidirectional:
        out_b = _lstm_direction(ctx, seq, *bwd, states[2], states[3], seq_len, hidden, True)
        out = ctx.op("concat", [out, out_b], axis=2)
    if batch_first:
        out = _swap_batch_and_time(ctx, out)
    return out


def _gru_direction(ctx, x, w_ih, w_hh, b_ih, b_hh, h, seq_len, hidden, dtype, reverse):
    """TVM's ``_gru_cell_unroll``: the r, z, n row blocks of both weights sliced and
    transposed first; per time step ``r``/``z = sigmoid(x W_i + b_i + h W_h + b_h)``,
    ``n = tanh(x W_in + b_in + r * (h W_hn + b_hn))``, ``h = (1 - z) * n + z * h`` (the bias
    slices taken in the step, as TVM does); the hidden states stacked in time order."""
    blocks = [(k * hidden, (k + 1) * hidden) for k in range(3)]
    sliced = [ctx.op("strided_slice", w, [0], [lo], [hi]) for lo, hi in blocks for w in (w_ih, w_hh)]
    w_t = [ctx.op("permute_dims", w, axes=[1, 0]) for w in sliced]
    biased = b_ih is not None and b_hh is not None
    outputs = []
    for t in (range(seq_len - 1, -1, -1) if reverse else range(seq_len)):
        x_t = ctx.op("take", x, ctx.const(t, "int64"), axis=0, mode="clip")
        gates = []
        for k, (lo, hi) in enumerate(blocks):
            ih = ctx.op("matmul", x_t, w_t[2 * k])
            hh = ctx.op("matmul", h, w_t[2 * k + 1])
            if biased:
                b_i, b_h = (ctx.op("strided_slice", b, [0], [lo], [hi]) for b in (b_ih, b_hh))
            if k < 2:
                pre = ctx.call("add", ctx.call("add", ctx.call("add", ih, b_i), hh), b_h) if biased \
                    else ctx.call("add", ih, hh)
                gates.append(ctx.emit(ctx.call("sigmoid", pre)))
            else:
                r = gates[0]
                pre = ctx.call("add", ctx.call("add", ih, b_i), ctx.call("multiply", r, ctx.call("add", hh, b_h))) \
                    if biased else ctx.call("add", ih, ctx.call("multiply", r, hh))
                gates.append(ctx.emit(ctx.call("tanh", pre)))
        _, z, n = gates
        one_minus_z = ctx.op("subtract", ctx.const(1.0, dtype), z)
        h = ctx.emit(ctx.call("add", ctx.call("multiply", one_minus_z, n), ctx.call("multiply", z, h)))
        outputs.append(h)
    if reverse:
        outputs.reverse()
    return ctx.op("stack", outputs, axis=0)


@_register("gru.input")
def _gru(ctx, node):
    """``gru.input(x, hx, params, has_biases, num_layers, dropout, train, bidirectional,
    batch_first)`` (undecomposed ``nn.GRU``): TVM's ``_gru``, one layer, static sequence
    length, unrolled per direction; like ``lstm``, only the output sequence (a node whose
    final state is used is refused)."""
    x, hx, params, has_biases, bidirectional, batch_first = _rnn_args(ctx, node, "GRU")
    _final_states_unused(ctx, node, "GRU")
    shape = [static_dim(d) if static_dim(d) is not None else d for d in ctx.shape_of(x)]
    seq_len, batch, input_size = (shape[1], shape[0], shape[2]) if batch_first else shape
    if not isinstance(seq_len, int):
        raise ctx.error("a GRU over a symbolic sequence length is not supported")
    hidden = static_dim(ctx.shape_of(params[0])[0]) // 3 if params and len(params) >= 2 else 16
    dtype = ctx.dtype_of(x)
    fwd = _direction_weights(ctx, params, 0, has_biases, 3, hidden, input_size, dtype)
    bwd = _direction_weights(ctx, params, 1, has_biases, 3, hidden, input_size, dtype) if bidirectional else None
    h0 = _initial_states(ctx, hx, 2 if bidirectional else 1, batch, hidden, dtype)
    seq = _swap_batch_and_time(ctx, x) if batch_first else x
    out = _gru_direction(ctx, seq, *fwd, h0[0], seq_len, hidden, dtype, False)
    if bidirectional:
        out_b = _gru_direction(ctx, seq, *bwd, h0[1], seq_len, hidden, dtype, True)
        out = ctx.op("concat", [out, out_b], axis=2)
    if batch_first:
        out = _swap_batch_and_time(ctx, out)
    return out
