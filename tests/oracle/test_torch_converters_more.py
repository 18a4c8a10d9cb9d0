"""Oracle: the torch converters added for issue 28 ("every converter TVM 0.27 has"), against
TVM 0.27's ``from_exported_program``.

Each case is a tiny ``torch.nn`` program using one target (group/instance norm, padding,
flip, argmax/argmin, topk, sort/argsort, gather, scatter, index_put, cumprod, upsampling,
transposed convolution, einsum, and cheaper element-wise, reduction and shape targets). It is
exported once with ``torch.export`` and imported by memcore and by TVM without TVM's
decomposition, and also with it (``run_ep_decomposition``) where the decomposed graph holds
another added target (:data:`DECOMPOSED`); memcore's module, converted to TVM
(``memcore_py.tvm.to_tvm``), must be structurally equal to TVM's. The export (the decomposed
one for :data:`DECOMPOSED_ONLY`) must contain the target, so each case checks the converter
it is named for. Where TVM's import is a different program than torch's, memcore refuses
the node (``test_arguments_tvm_drops_are_refused``, ``test_diagonal_with_offset_is_refused``;
DIFFERENCES.md "More torch converters").
"""
from __future__ import annotations

import functools

import pytest

torch = pytest.importorskip("torch")
tvm = pytest.importorskip("tvm")

import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402
from torch.export import Dim  # noqa: E402
from tvm.relax.frontend.torch import from_exported_program as tvm_from_exported_program  # noqa: E402

from memcore_py.frontend.exported_program import from_exported_program  # noqa: E402
from memcore_py.tvm import to_tvm  # noqa: E402

pytestmark = pytest.mark.oracle


from oracle.test_stock_model_converters import _f32, _Fn, _i64, _tvm_import  # noqa: E402


_S = Dim("s", min=2, max=64)


class _Training(nn.Module):
    """A module exported in training mode (``eval()`` in the test leaves the wrapped one alone)."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner.train()

    def train(self, mode=True):
        return self

    def forward(self, x):
        return self.inner(x)


class _SetColumns(nn.Module):
    """``y[:, j] = v``: ``index_put_`` with a ``None`` index (TVM's arange path)."""

    def forward(self, x, j, v):
        y = x.clone()
        y[:, j] = v
        return y


class _Module:
    """A case's ``nn.Module`` (built at export time), as opposed to a function to wrap."""

    def __init__(self, factory):
        self.factory = factory

#: name -> (target, module factory or function, example args, dynamic_shapes or None)
CASES = {
    # norms
    "group_norm": ("group_norm.default", _Module(lambda: nn.GroupNorm(2, 4)), (_f32(1, 4, 3, 3),), None),
    "group_norm_3d_eps": ("group_norm.default", _Module(lambda: nn.GroupNorm(3, 6, eps=1e-3)),
                          (_f32(2, 6, 5),), None),
    "group_norm_dyn": ("group_norm.default", _Module(lambda: nn.GroupNorm(2, 4)), (_f32(1, 4, 8, 3),),
                       ({2: _S},)),
    "batch_norm_training": ("_native_batch_norm_legit_functional.default",
                            _Module(lambda: _Training(nn.BatchNorm2d(4))),
                            (_f32(2, 4, 3, 3),), None),
    "batch_norm_training_affine_off": ("_native_batch_norm_legit_functional.default",
                                       _Module(lambda: _Training(nn.BatchNorm1d(3, affine=False, momentum=0.3))),
                                       (_f32(4, 3),), None),
    "instance_norm": ("instance_norm.default", _Module(lambda: nn.InstanceNorm2d(4, affine=True)),
                      (_f32(1, 4, 3, 3),), None),
    "instance_norm_plain": ("instance_norm.default", _Module(lambda: nn.InstanceNorm1d(3)), (_f32(2, 3, 8),),
                            None),
    # padding
    "pad_constant": ("pad.default", lambda x: F.pad(x, (1, 2), value=1.5), (_f32(1, 4, 3, 3),), None),
    "constant_pad_2d": ("constant_pad_nd.default", lambda x: torch.constant_pad_nd(x, (1, 1, 0, 2)),
                        (_f32(2, 3, 4),), None),
    "pad_reflect": ("pad.default", lambda x: F.pad(x, (1, 2, 2, 1), mode="reflect"), (_f32(1, 4, 3, 3),), None),
    "pad_replicate": ("pad.default", lambda x: F.pad(x, (1, 2), mode="replicate"), (_f32(1, 4, 3),), None),
    # flip, search, sort
    "flip": ("flip.default", lambda x: torch.flip(x, (0, 2)), (_f32(2, 4, 3),), None),
    "flip_dyn": ("flip.default", lambda x: torch.flip(x, (-1,)), (_f32(8, 4),), ({0: _S},)),
    "argmax": ("argmax.default", lambda x: torch.argmax(x, 1), (_f32(2, 4, 3),), None),
    "argmax_all": ("argmax.default", torch.argmax, (_f32(2, 4, 3),), None),
    "argmin_keepdim": ("argmin.default", lambda x: torch.argmin(x, -1, keepdim=True), (_f32(2, 4, 3),), None),
    "topk": ("topk.default", lambda x: torch.topk(x, 2), (_f32(2, 4, 3),), None),
    "topk_smallest_dim": ("topk.default", lambda x: torch.topk(x, 3, dim=1, largest=False)[0] * 2,
                          (_f32(2, 4, 3),), None),
    "sort": ("sort.default", lambda x: torch.sort(x, 1), (_f32(2, 4, 3),), None),
    "sort_descending": ("sort.default", lambda x: torch.sort(x, descending=True)[0], (_f32(6, 5),), None),
    "argsort": ("argsort.default", lambda x: torch.argsort(x, 1), (_f32(2, 4, 3),), None),
    "max_dim": ("max.dim", lambda x: torch.max(x, 1), (_f32(2, 4, 3),), None),
    "max_dim_keepdim": ("max.dim", lambda x: torch.max(x, -1, keepdim=True)[1], (_f32(2, 4, 3),), None),
    "cumprod": ("cumprod.default", lambda x: torch.cumprod(x, 1), (_f32(2, 4),), None),
    "cumprod_dtype": ("cumprod.default", lambda x: torch.cumprod(x, 0, dtype=torch.float64), (_f32(3, 4),), None),
    # symbolic sizes
    "argmax_dyn": ("argmax.default", lambda x: torch.argmax(x, 0), (_f32(8, 4),), ({0: _S},)),
    "topk_dyn": ("topk.default", lambda x: torch.topk(x, 2), (_f32(8, 4),), ({0: _S},)),
    "sort_dyn": ("sort.default", lambda x: torch.sort(x, 0), (_f32(8, 4),), ({0: _S},)),
    "cumprod_dyn": ("cumprod.default", lambda x: torch.cumprod(x, 0), (_f32(8, 4),), ({0: _S},)),
    "gather_dyn": ("gather.default", lambda x, i: torch.gather(x, 1, i), (_f32(8, 4), _i64(4, 8, 2)),
                   ({0: _S}, {0: _S})),
    "constant_pad_dyn": ("constant_pad_nd.default", lambda x: torch.constant_pad_nd(x, (1, 1, 2, 0)),
                         (_f32(8, 4),), ({0: _S},)),
    "upsample_nearest_size_dyn": ("upsample_nearest2d.vec", lambda x: F.interpolate(x, size=(5, 7)),
                                  (_f32(2, 2, 3, 3),), ({0: _S},)),
    "conv_transpose2d_dyn": ("conv_transpose2d.input", _Module(lambda: nn.ConvTranspose2d(4, 2, 3, stride=2)),
                             (_f32(2, 4, 3, 3),), ({0: _S},)),
    # gather, scatter, index_put
    "gather": ("gather.default", lambda x, i: torch.gather(x, 1, i), (_f32(2, 4, 3), _i64(4, 2, 2, 3)), None),
    "scatter_src": ("scatter.src", lambda x, i, s: x.scatter(1, i, s), (_f32(2, 4), _i64(4, 2, 2), _f32(2, 2)), None),
    "scatter_value": ("scatter.value", lambda x, i: x.scatter(0, i, 2.5), (_f32(3, 4), _i64(3, 2, 4)), None),
    "index_put_inplace": ("index_put_.default", lambda x, i, j, v: x.index_put_((i, j), v) * 2,
                          (_f32(5, 4), torch.tensor([0, 2]), torch.tensor([1, 3]), _f32(2)), None),
    "index_put_none": ("index_put_.default", _Module(lambda: _SetColumns()),
                       (_f32(3, 5), torch.tensor([0, 2]), _f32(3, 2)), None),
    "index_put_accumulate": ("index_put.default", lambda x, i, j, v: torch.index_put(x, (i, j), v, accumulate=True),
                             (_f32(5, 4), torch.tensor([0, 2]), torch.tensor([1, 3]), _f32(2)), None),
    # resize
    "upsample_nearest": ("upsample_nearest2d.vec", lambda x: F.interpolate(x, scale_factor=2), (_f32(1, 4, 3, 3),),
                         None),
    "upsample_nearest_size": ("upsample_nearest2d.vec", lambda x: F.interpolate(x, size=(5, 7)),
                              (_f32(1, 2, 3, 3),), None),
    "upsample_bilinear": ("upsample_bilinear2d.vec", lambda x: F.interpolate(x, size=(5, 6), mode="bilinear"),
                          (_f32(1, 4, 3, 3),), None),
    "upsample_bilinear_align": ("upsample_bilinear2d.vec",
                                lambda x: F.interpolate(x, scale_factor=(2, 3), mode="bilinear", align_corners=True),
                                (_f32(1, 2, 3, 3),), None),
    "upsample_bilinear_aa": ("_upsample_bilinear2d_aa.default",
                             lambda x: F.interpolate(x, size=(6, 6), mode="bilinear", antialias=True),
                             (_f32(1, 2, 3, 3),), None),
    "upsample_bicubic": ("upsample_bicubic2d.vec", lambda x: F.interpolate(x, size=(6, 6), mode="bicubic"),
                         (_f32(1, 2, 3, 3),), None),
    # transposed convolution (decomposed: convolution.default with transposed=True)
    "conv_transpose2d": ("conv_transpose2d.input", _Module(lambda: nn.ConvTranspose2d(4, 2, 3, stride=2)),
                         (_f32(1, 4, 3, 3),), None),
    "conv_transpose2d_groups": ("conv_transpose2d.input",
                                _Module(lambda: nn.ConvTranspose2d(4, 4, 3, stride=2, padding=1, output_padding=1,
                                                                   groups=2, bias=False)), (_f32(1, 4, 5, 5),), None),
    "conv_transpose1d": ("conv_transpose1d.default", _Module(lambda: nn.ConvTranspose1d(4, 2, 3, dilation=2)),
                         (_f32(1, 4, 6),), None),
    # einsum (decomposed: bmm and views)
    "einsum_matmul": ("einsum.default", lambda a, b: torch.einsum("ij,jk->ik", a, b), (_f32(2, 3), _f32(3, 4)), None),
    "einsum_batch": ("einsum.default", lambda a, b: torch.einsum("bij,bjk->bik", a, b),
                     (_f32(2, 2, 3), _f32(2, 3, 4)), None),
    # element-wise
    "expm1": ("expm1.default", torch.expm1, (_f32(3, 4),), None),
    "log2": ("log2.default", torch.log2, (_f32(3, 4).abs(),), None),
    "log10": ("log10.default", torch.log10, (_f32(3, 4).abs(),), None),
    "log1p": ("log1p.default", torch.log1p, (_f32(3, 4).abs(),), None),
    "hardsigmoid": ("hardsigmoid.default", _Module(lambda: nn.Hardsigmoid()), (_f32(3, 4),), None),
    "hardswish_inplace": ("hardswish_.default", lambda x: F.hardswish(x * 2, inplace=True), (_f32(3, 4),), None),
    "hardswish": ("hardswish.default", _Module(lambda: nn.Hardswish()), (_f32(3, 4),), None),
    "celu": ("celu.default", _Module(lambda: nn.CELU()), (_f32(3, 4),), None),
    "softplus": ("softplus.default", _Module(lambda: nn.Softplus(2.0, 10.0)), (_f32(3, 4),), None),
    "softshrink": ("softshrink.default", _Module(lambda: nn.Softshrink(0.3)), (_f32(3, 4),), None),
    "round": ("round.default", torch.round, (_f32(3, 4),), None),
    "round_decimals": ("round.decimals", lambda x: torch.round(x, decimals=2), (_f32(3, 4),), None),
    "round_negative_decimals": ("round.decimals", lambda x: torch.round(x, decimals=-1), (_f32(3, 4),), None),
    "atan2": ("atan2.default", torch.atan2, (_f32(3, 4), _f32(3, 4)), None),
    "logaddexp": ("logaddexp.default", torch.logaddexp, (_f32(3, 4), _f32(4)), None),
    "fmod_scalar": ("fmod.Scalar", lambda x: torch.fmod(x, 1.5), (_f32(3, 4),), None),
    "fmod_tensor": ("fmod.Tensor", torch.fmod, (_f32(3, 4), _f32(3, 4)), None),
    "outer": ("outer.default", torch.outer, (_f32(3), _f32(4)), None),
    "baddbmm": ("baddbmm.default", lambda x, a, b: torch.baddbmm(x, a, b, beta=0.5, alpha=2.0),
                (_f32(2, 3, 4), _f32(2, 3, 5), _f32(2, 5, 4)), None),
    "baddbmm_unit": ("baddbmm.default", torch.baddbmm, (_f32(2, 3, 4), _f32(2, 3, 5), _f32(2, 5, 4)), None),
    "addmm_scaled": ("addmm.default", lambda x, a, b: torch.addmm(x, a, b, beta=0.5, alpha=2.0),
                     (_f32(3, 4), _f32(3, 5), _f32(5, 4)), None),
    "addmm_no_bias": ("addmm.default", lambda x, a, b: torch.addmm(x, a, b, beta=0.0),
                      (_f32(3, 4), _f32(3, 5), _f32(5, 4)), None),
    "bucketize": ("bucketize.Tensor", lambda x, b: torch.bucketize(x, b, right=True),
                  (_f32(3, 4), torch.tensor([-1.0, 0.0, 1.0])), None),
    # reductions
    "prod": ("prod.default", torch.prod, (_f32(3, 4),), None),
    "std": ("std.correction", lambda x: torch.std(x, 1, correction=0), (_f32(3, 4),), None),
    "var": ("var.correction", lambda x: torch.var(x, 1, correction=1, keepdim=True), (_f32(3, 4),), None),
    "var_population": ("var.correction", lambda x: torch.var(x, correction=0), (_f32(3, 4),), None),
    "median_dim": ("median.dim", lambda x: torch.median(x, 1), (_f32(3, 4),), None),
    "median_dim_keepdim": ("median.dim", lambda x: torch.median(x, -1, keepdim=True)[0], (_f32(3, 4),), None),
    "median": ("median.default", torch.median, (_f32(3, 4),), None),
    # shape
    "broadcast_to": ("broadcast_to.default", lambda x: torch.broadcast_to(x, (3, 4)), (_f32(1, 4),), None),
    "reshape_as": ("reshape_as.default", lambda x, y: x.reshape_as(y), (_f32(3, 4), _f32(2, 6)), None),
    "unflatten": ("unflatten.int", lambda x: torch.unflatten(x, 1, (2, 3)), (_f32(4, 6),), None),
    "roll": ("roll.default", lambda x: torch.roll(x, (1, -2), (0, 1)), (_f32(3, 4),), None),
    "roll_flat": ("roll.default", lambda x: torch.roll(x, 5), (_f32(3, 4),), None),
    "diagonal": ("diagonal.default", torch.diagonal, (_f32(4, 4),), None),
    "meshgrid_default": ("meshgrid.default", lambda a, b, c: torch.meshgrid([a, b, c]), (_f32(3), _f32(4), _f32(())),
                         None),
    "meshgrid": ("meshgrid.indexing", lambda a, b: torch.meshgrid(a, b, indexing="ij"), (_f32(3), _f32(4)), None),
    "slice_scatter": ("slice_scatter.default", lambda x, s: torch.slice_scatter(x, s, 1, 1, 3),
                      (_f32(3, 4), _f32(3, 2)), None),
    "eye": ("eye.default", lambda x: x + torch.eye(4, dtype=torch.float32), (_f32(4, 4),), None),
    "eye_m": ("eye.m", lambda x: x + torch.eye(3, 4, dtype=torch.float32), (_f32(3, 4),), None),
    "linspace": ("linspace.default", lambda x: x + torch.linspace(0, 1, 4), (_f32(3, 4),), None),
    "hamming_window_periodic": ("hamming_window.periodic", lambda x: x * torch.hamming_window(4, periodic=False),
                                (_f32(3, 4),), None),
    "hamming_window_alpha": ("hamming_window.periodic_alpha", lambda x: x * torch.hamming_window(4, False, 0.5),
                             (_f32(3, 4),), None),
    "hamming_window_alpha_beta": ("hamming_window.periodic_alpha_beta",
                                  lambda x: x * torch.hamming_window(4, True, 0.5, 0.4), (_f32(3, 4),), None),
    "hamming_window": ("hamming_window.default", lambda x: x * torch.hamming_window(4), (_f32(3, 4),), None),
    "as_strided": ("as_strided.default", lambda x: torch.as_strided(x, (4, 3), (3, 1)), (_f32(3, 4),), None),
    # other layers
    "pixel_shuffle": ("pixel_shuffle.default", _Module(lambda: nn.PixelShuffle(2)), (_f32(1, 8, 3, 3),), None),
    "prelu": ("prelu.default", _Module(lambda: nn.PReLU(4)), (_f32(2, 4, 3),), None),
    "one_hot": ("one_hot.default", lambda x: F.one_hot(x, 5), (_i64(5, 3, 4),), None),
    "max_pool1d": ("max_pool1d.default", _Module(lambda: nn.MaxPool1d(2)), (_f32(1, 4, 8),), None),
    "max_pool1d_unbatched": ("max_pool1d.default", _Module(lambda: nn.MaxPool1d(3, 2, 1)), (_f32(4, 8),), None),
    "avg_pool1d": ("avg_pool1d.default", _Module(lambda: nn.AvgPool1d(2)), (_f32(1, 4, 8),), None),
    "adaptive_avg_pool1d": ("adaptive_avg_pool1d.default", _Module(lambda: nn.AdaptiveAvgPool1d(2)),
                            (_f32(1, 4, 8),), None),
    "max_pool3d": ("max_pool3d.default", _Module(lambda: nn.MaxPool3d(2)), (_f32(1, 2, 4, 4, 4),), None),
    "avg_pool3d": ("avg_pool3d.default", _Module(lambda: nn.AvgPool3d(2)), (_f32(1, 2, 4, 4, 4),), None),
    "adaptive_avg_pool3d": ("adaptive_avg_pool3d.default", _Module(lambda: nn.AdaptiveAvgPool3d(2)),
                            (_f32(1, 2, 4, 4, 4),), None),
}


@functools.lru_cache(maxsize=None)
def _export(name):
    target, fn, args, dynamic = CASES[name]
    torch.manual_seed(0)
    if isinstance(fn, _Module):
        model, shapes = fn.factory(), dynamic
    else:  # forward(*args): the per-argument specs are one positional entry
        model, shapes = _Fn(fn), None if dynamic is None else (dynamic,)
    ep = torch.export.export(model.eval(), args, dynamic_shapes=shapes)
    graph = ep.run_decompositions().graph if name in DECOMPOSED_ONLY else ep.graph
    assert any(n.op == "call_function" and n.target.__name__ == target for n in graph.nodes), \
        f"{name}: the export has no {target} node"
    return ep


#: Cases also imported after TVM's decomposition: those whose decomposed graph has another
#: added target (``group_norm`` -> ``native_group_norm``, ``instance_norm`` ->
#: ``_native_batch_norm_legit.no_stats``, ``pad`` -> ``constant_pad_nd``, ``argsort`` ->
#: ``sort``, ``index_put_`` -> ``index_put``, ``std`` -> ``var.correction``, ``softplus`` ->
#: ``log1p``, ...) or a new path of an old one (``convolution`` with ``transposed=True``).
#: Elsewhere the decomposed graph has the same target, or only targets tested elsewhere.
#: ``one_hot``'s decomposition asserts (``_assert_async``: an impure function without a dataflow
#: block, for TVM and memcore alike); ``test_exported_program_more.py`` covers it.
DECOMPOSED = (
    "adaptive_avg_pool3d", "argsort", "celu", "conv_transpose1d", "conv_transpose2d", "conv_transpose2d_dyn",
    "conv_transpose2d_groups",
    "group_norm", "group_norm_3d_eps", "group_norm_dyn", "index_put_inplace", "index_put_none", "instance_norm",
    "instance_norm_plain", "logaddexp", "max_pool3d", "pad_constant", "roll", "roll_flat", "softplus", "std",
)


#: Cases whose target only appears after decomposition (torch exports the antialiased
#: resize as ``_upsample_bilinear2d_aa.vec``, which TVM's map lacks, and a BatchNorm in
#: training mode as ``batch_norm``; they decompose to the targets named).
DECOMPOSED_ONLY = ("upsample_bilinear_aa", "batch_norm_training", "batch_norm_training_affine_off")


@pytest.mark.parametrize("name,decompose", [(n, False) for n in sorted(CASES) if n not in DECOMPOSED_ONLY]
                         + [(n, True) for n in DECOMPOSED + DECOMPOSED_ONLY],
                         ids=lambda v: {False: "aten", True: "decomposed"}.get(v, v) if isinstance(v, bool) else v)
def test_converter_imports_as_tvm(name, decompose):
    ep = _export(name)
    theirs = _tvm_import(ep, keep_params_as_input=True, run_ep_decomposition=decompose)
    ours = from_exported_program(ep, keep_params_as_input=True, run_ep_decomposition=decompose)
    tvm.ir.assert_structural_equal(to_tvm(ours), theirs)


def test_diagonal_with_offset_is_refused():
    """TVM's general ``diagonal`` path ends in ``einsum("...zz->...z")``, which memcore's
    einsum type rule cannot shape; memcore refuses it, naming the node, rather than import a
    program with a different result type."""
    from memcore_py.errors import FrontendError

    ep = torch.export.export(_Fn(lambda x: torch.diagonal(x, 1, 0, 2)), (_f32(4, 3, 5),))
    tvm_from_exported_program(ep, run_ep_decomposition=False)  # TVM imports it
    with pytest.raises(FrontendError, match=r"diagonal.*offset"):
        from_exported_program(ep, run_ep_decomposition=False)


@pytest.mark.parametrize("name, fn, args, match", [
    ("celu", _Module(lambda: nn.CELU(0.5)), (_f32(3, 4),), r"celu with alpha=0\.5"),
    ("std", lambda x: torch.std(x, 1, correction=1), (_f32(3, 4),), r"std with correction=1"),
    ("instance_norm", _Module(lambda: nn.InstanceNorm2d(4, eps=1e-3)), (_f32(1, 4, 3, 3),),
     r"instance_norm with eps=0\.001"),
])
def test_arguments_tvm_drops_are_refused(name, fn, args, match):
    """Where TVM's converter drops or misreads an argument (celu's alpha, std's correction,
    instance_norm's eps), its import is a different program; memcore refuses the node instead
    (the decomposed graphs, which spell these ops out, import equal to TVM)."""
    from memcore_py.errors import FrontendError

    model = fn.factory() if isinstance(fn, _Module) else _Fn(fn)
    ep = torch.export.export(model.eval(), args)
    tvm_from_exported_program(ep, run_ep_decomposition=False)  # TVM imports it
    with pytest.raises(FrontendError, match=match):
        from_exported_program(ep, run_ep_decomposition=False)
    theirs = _tvm_import(ep, keep_params_as_input=True)
    tvm.ir.assert_structural_equal(to_tvm(from_exported_program(ep, keep_params_as_input=True)), theirs)
