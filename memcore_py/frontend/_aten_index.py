"""ATen converters for search, sorting, gathering and scattering (TVM 0.27's mapping).

Design
------
``argmax``/``argmin``, ``topk``, ``sort``/``argsort`` (int64 indices, as TVM asks for),
``gather`` (``gather_elements``), ``scatter`` (``scatter_elements``; a scalar source broadcast
to the index's shape first), ``index_put``/``index_put_``, ``flip`` (one single-axis
``flip`` per dim), ``cumprod``, ``bucketize`` and ``max.dim`` (a ``topk`` with k = 1). Each converter emits
what TVM's converter of the same target emits, in the same order (see :mod:`._aten_ops` for
the conventions); ``index_put_`` rebinds every node holding its destination value, as TVM
does for aliases of the mutated tensor.
"""
from __future__ import annotations

from ._aten_common import arg, registrar, relax_dtype

__all__ = ["CONVERTERS"]

CONVERTERS: dict = {}
_register = registrar(CONVERTERS)


# ------------------------------------------------------------------------------------ search
def _arg_reduce(op_name):
    def convert(ctx, node):
        """TVM's ``_argmax_argmin``: ``relax.<op>(x, dim, keepdim)``."""
        return ctx.op(op_name, ctx.env[node.args[0]], axis=arg(node, 1, "dim", None),
                      keepdims=arg(node, 2, "keepdim", False))
    return convert


CONVERTERS["argmax.default"] = _arg_reduce("argmax")
CONVERTERS["argmin.default"] = _arg_reduce("argmin")


@_register("topk.default")
def _topk(ctx, node):
    """TVM's ``_topk``: one ``topk`` returning (values, int64 indices); unsorted output is
    refused, as TVM refuses it."""
    args = ctx.args(node)
    get = lambda i, key, d: args[i] if len(args) > i else node.kwargs.get(key, d)  # noqa: E731
    if not get(4, "sorted", True):
        raise ctx.error("topk with sorted=False is not supported (as in TVM)")
    return ctx.op("topk", args[0], k=get(1, "k", 1), axis=get(2, "dim", -1), largest=get(3, "largest", True),
                  ret_type="both", dtype="int64")


@_register("max.dim")
def _max_dim(ctx, node):
    """TVM's ``_max_dim``: ``topk(k=1)`` on ``dim``, both fields squeezed unless ``keepdim``,
    then a (values, indices) tuple."""
    x = ctx.env[node.args[0]]
    dim = node.args[1]
    keepdim = arg(node, 2, "keepdim", False)
    res = ctx.op("topk", x, k=1, axis=dim, largest=True, ret_type="both", dtype="int64")
    values, indices = ctx.item(res, 0), ctx.item(res, 1)
    if not keepdim:
        values = ctx.op("squeeze", values, axis=[dim])
        indices = ctx.op("squeeze", indices, axis=[dim])
    return ctx.emit(ctx.tuple([values, indices]))


@_register("argsort.default")
def _argsort(ctx, node):
    return ctx.op("argsort", ctx.env[node.args[0]], axis=arg(node, 1, "dim", -1),
                  descending=arg(node, 2, "descending", False), dtype="int64")


@_register("sort.default")
def _sort(ctx, node):
    """TVM's ``_sort``: int64 ``argsort``, ``gather_elements`` of the values, a (values,
    indices) tuple."""
    x = ctx.env[node.args[0]]
    dim = arg(node, 1, "dim", -1)
    indices = ctx.op("argsort", x, axis=dim, descending=arg(node, 2, "descending", False), dtype="int64")
    values = ctx.op("gather_elements", x, indices, axis=dim)
    return ctx.emit(ctx.tuple([values, indices]))


# ------------------------------------------------------------------------------------ gather, scatter
@_register("gather.default")
def _gather(ctx, node):
    return ctx.op("gather_elements", ctx.env[node.args[0]], ctx.env[node.args[2]],
                  axis=arg(node, 1, "dim", 0))


@_register("scatter.src")
def _scatter(ctx, node):
    x = ctx.env[node.args[0]]
    if len(node.args) == 1:
        dim, index, src = node.kwargs["dim"], ctx.env[node.kwargs["index"]], ctx.env[node.kwargs["src"]]
    elif len(node.args) == 4:
        dim, index, src = node.args[1], ctx.env[node.args[2]], ctx.env[node.args[3]]
    else:
        raise ctx.error(f"unexpected scatter arguments {node.args!r}")
    return ctx.op("scatter_elements", x, index, src, axis=dim)


@_register("scatter.value")
def _scatter_value(ctx, node):
    """TVM's ``_scatter_value``: the scalar, a constant of ``x``'s dtype, broadcast to the
    index's shape, then ``scatter_elements``."""
    x = ctx.env[node.args[0]]
    index = ctx.env[node.args[2]]
    src = ctx.op("broadcast_to", ctx.const(node.args[3], ctx.dtype_of(x)), ctx.shape_of(index))
    return ctx.op("scatter_elements", x, index, src, axis=node.args[1])


@_register("index_put.default", "index_put_.default")
def _index_put(ctx, node):
    """TVM's ``_index_put``: ``None`` indices become ``arange`` reshaped to
    ``[n] + [1] * max_ndim``; ``index_put_`` rebinds every node whose value is the
    destination's (TVM's alias handling)."""
    args = ctx.args(node)
    tensor = args[0]
    indices = args[1] if len(args) > 1 else ctx.value(node.kwargs.get("indices"))
    values = args[2] if len(args) > 2 else ctx.value(node.kwargs.get("values"))
    accumulate = args[3] if len(args) > 3 else node.kwargs.get("accumulate", False)
    if indices is None or values is None:
        raise ctx.error("index_put needs indices and values")
    if not isinstance(accumulate, bool):
        raise ctx.error(f"accumulate must be a bool; got {accumulate!r}")
    if isinstance(indices, (list, tuple)):
        given = [idx for idx in indices if idx is not None]
        if len(given) < len(indices):
            shape = ctx.shape_of(tensor)
            max_ndim = max((idx.ty.ndim for idx in given), default=1)
            processed = []
            for i, idx in enumerate(indices):
                if idx is None:
                    r = ctx.op("arange", 0, shape[i], 1, dtype="int64")
                    processed.append(ctx.op("reshape", r, [shape[i]] + [1] * max_ndim))
                else:
                    processed.append(idx)
            indices = processed
        indices = ctx.tuple(indices)
    out = ctx.op("index_put", tensor, indices, values, accumulate=accumulate)
    if node.target.__name__ == "index_put_.default" and isinstance(node.args[0], ctx.torch.fx.Node):
        for env_node, value in list(ctx.env.items()):
            if value is tensor:
                ctx.env[env_node] = out
    return out


# ------------------------------------------------------------------------------------ flip, scans
@_register("flip.default")
def _flip(ctx, node):
    """TVM's ``_flip``: ``relax.flip`` is single-axis, one per dim in order."""
    out = ctx.env[node.args[0]]
    dims = arg(node, 1, "dims", None)
    if isinstance(dims, int):
        dims = [dims]
    if not isinstance(dims, (list, tuple)):
        raise ctx.error(f"flip expects an int or a list of ints; got {dims!r}")
    for d in dims:
        out = ctx.op("flip", out, axis=d)
    return out


@_register("cumprod.default")
def _cumprod(ctx, node):
    """TVM's ``_cumprod``: ``relax.cumprod(x, dim, dtype)``, the dtype only when the node has one."""
    x = ctx.env[node.args[0]]
    dtype = relax_dtype(ctx, node.kwargs["dtype"]) if "dtype" in node.kwargs else None
    return ctx.op("cumprod", x, axis=arg(node, 1, "dim", None), dtype=dtype)


@_register("bucketize.Tensor")
def _bucketize(ctx, node):
    args = ctx.args(node)
    return ctx.op("bucketize", args[0], args[1], out_int32=node.kwargs.get("out_int32", False),
                  right=node.kwargs.get("right", False))
