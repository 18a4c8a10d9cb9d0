"""Oracle: the torch.export converters for symbolic scalars, data-dependent sizes, assertions,
losses, sampling, norms, recurrent layers and random tensors (issue 28), against TVM 0.27's
``from_exported_program``.

Each case is a tiny program exported once with ``torch.export`` and imported by memcore and
by TVM, with and without TVM's decomposition where the graph of that mode holds the case's
targets (checked, so each case tests the converters it names); memcore's module, converted
to TVM (``memcore_py.tvm.to_tvm``), must be structurally equal to TVM's. A decomposed case
runs ``ep.run_decompositions()`` once (what ``run_ep_decomposition=True`` does in both
importers) and both import that program.

Three keys of TVM's map are not ATen ops of torch 2.13: ``softsign.default`` (torch
decomposes ``F.softsign`` in Python), ``_adaptive_avg_pool1d.default`` and ``roi_align.default``
(torchvision's op; the CPU build here has no kernel library). TVM dispatches on
``target.__name__``, so they are reached through custom ops of those names in the
``memcore_oracle`` namespace (:func:`_custom_ops`), which export keeps as they are.
"""
from __future__ import annotations

import functools
import operator

import pytest

torch = pytest.importorskip("torch")
tvm = pytest.importorskip("tvm")

import torch.nn.functional as F  # noqa: E402
from torch.export import Dim  # noqa: E402
from tvm.relax.frontend.torch import from_exported_program as tvm_from_exported_program  # noqa: E402

from memcore_py.errors import FrontendError  # noqa: E402
from memcore_py.frontend.exported_program import from_exported_program  # noqa: E402
from memcore_py.tvm import to_tvm  # noqa: E402
from oracle.test_stock_model_converters import _f32, _Fn, _i64, _tvm_import  # noqa: E402

pytestmark = pytest.mark.oracle

_S = Dim("s", min=3, max=64)


@functools.lru_cache(maxsize=None)
def _custom_ops():
    """``torch.ops.memcore_oracle``: ``softsign``, ``_adaptive_avg_pool1d`` and ``roi_align``
    with torch's (torchvision's) signatures and fake kernels for export."""
    lib = "memcore_oracle"

    @torch.library.custom_op(f"{lib}::softsign", mutates_args=())
    def softsign(x: torch.Tensor) -> torch.Tensor:
        return F.softsign(x)

    softsign.register_fake(lambda x: torch.empty_like(x))

    @torch.library.custom_op(f"{lib}::_adaptive_avg_pool1d", mutates_args=())
    def adaptive_avg_pool1d(x: torch.Tensor, output_size: list[int]) -> torch.Tensor:
        return F.adaptive_avg_pool1d(x, output_size)

    adaptive_avg_pool1d.register_fake(lambda x, output_size: x.new_empty(x.shape[:-1] + (output_size[0],)))

    @torch.library.custom_op(f"{lib}::roi_align", mutates_args=())
    def roi_align(x: torch.Tensor, rois: torch.Tensor, spatial_scale: float, pooled_height: int, pooled_width: int,
                  sampling_ratio: int, aligned: bool) -> torch.Tensor:
        return x.new_zeros(rois.shape[0], x.shape[1], pooled_height, pooled_width)

    roi_align.register_fake(lambda x, rois, scale, h, w, ratio, aligned: x.new_empty(rois.shape[0], x.shape[1], h, w))
    return getattr(torch.ops, lib)


def _compare_sizes(x, i):
    k = i.item()
    torch._check(k > 1)
    torch._check(k < x.shape[0])
    return x * 2


def _compare_equal(x, i):
    torch._check(i.item() == 2)
    return x * 2


def _assert(x):
    torch._assert_async(x.sum() > 0)
    return x * 2


def _assert_msg(x):
    torch._assert_async(x.abs().sum() >= 0, "non-negative")
    return x + 1


class _First(torch.nn.Module):
    """The first result of a module (an RNN's output sequence; its final states unused)."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, *args):
        return self.inner(*args)[0]


def _ops():
    return _custom_ops()


_ROIS = torch.tensor([[0, 0.0, 0.0, 3.0, 3.0], [0, 1.0, 1.0, 4.0, 5.0]])
_BOTH = ("aten", "decomposed")

#: name -> (function, example args, dynamic_shapes of the arguments or None,
#: {mode: targets its graph must hold})
CASES = {
    # symbolic scalars
    "compare_sizes": (_compare_sizes, (_f32(8, 4), torch.tensor(2)), ({0: _S}, None),
                      {"aten": ("item.default", "ge", "le", "gt", "lt"),
                       "decomposed": ("_local_scalar_dense.default", "ge", "le", "gt", "lt")}),
    "compare_equal": (_compare_equal, (_f32(8, 4), torch.tensor(2)), None,
                      {"aten": ("item.default", "eq"), "decomposed": ("_local_scalar_dense.default", "eq")}),
    "neg": (lambda x: x.new_zeros(x.shape[0] - (-x.shape[0])), (_f32(4, 3),), ({0: _S},),
            dict.fromkeys(_BOTH, ("neg",))),
    "item_int32": (_compare_equal, (_f32(3, 4), torch.tensor([2], dtype=torch.int32)), None,
                   {"aten": ("item.default",), "decomposed": ("_local_scalar_dense.default",)}),
    "item_float": (lambda x, i: x * i.item(), (_f32(3, 4), torch.tensor([2.0])), None,
                   {"aten": ("item.default",), "decomposed": ("_local_scalar_dense.default",)}),
    "item_float_scalar": (lambda x, i: x * i.item(), (_f32(3, 4), torch.tensor(2.0)), None,
                          {"aten": ("item.default",), "decomposed": ("_local_scalar_dense.default",)}),
    # data-dependent sizes
    "masked_select": (lambda x: torch.masked_select(x, x > 0), (_f32(3, 4),), None,
                      dict.fromkeys(_BOTH, ("masked_select.default", "sym_size.int", "ge", "le"))),
    "masked_select_broadcast": (lambda x, m: torch.masked_select(x, m),
                                (_f32(3, 4), torch.tensor([True, False, True, True])), None,
                                dict.fromkeys(_BOTH, ("masked_select.default",))),
    # assertions (an impure main without a dataflow block)
    # (the decomposition drops torch._assert_async(cond) without a message)
    "assert_async": (_assert, (_f32(3, 4),), None, {"aten": ("_assert_async.default",)}),
    "assert_async_msg": (_assert_msg, (_f32(3, 4),), None, dict.fromkeys(_BOTH, ("_assert_async.msg",))),
    "one_hot": (lambda x: F.one_hot(x, 5), (_i64(5, 3),), None, {"decomposed": ("_assert_async.msg",)}),
    # norms, activations, losses
    "vector_norm": (lambda x: torch.linalg.vector_norm(x, 2, dim=1), (_f32(3, 4),), None,
                    dict.fromkeys(_BOTH, ("linalg_vector_norm.default",))),
    "vector_norm_all": (lambda x: torch.linalg.vector_norm(x), (_f32(3, 4),), None,
                        dict.fromkeys(_BOTH, ("linalg_vector_norm.default",))),
    "vector_norm_inf": (lambda x: (torch.linalg.vector_norm(x, float("inf")),
                                   torch.linalg.vector_norm(x, -float("inf"), dim=0, keepdim=True)),
                        (_f32(3, 4),), None, dict.fromkeys(_BOTH, ("linalg_vector_norm.default",))),
    "vector_norm_p": (lambda x: torch.linalg.vector_norm(x, 1.5, (0, 1), True), (_f32(2, 3, 4),), None,
                      dict.fromkeys(_BOTH, ("linalg_vector_norm.default",))),
    "exponential": (lambda x: x + torch.empty_like(x).exponential_(), (_f32(3, 4),), None,
                    {"decomposed": ("exponential.default",)}),
    "softsign": (lambda x: _ops().softsign(x) * 2, (_f32(3, 4),), None, dict.fromkeys(_BOTH, ("softsign.default",))),
    "cross_entropy": (lambda x, t: F.cross_entropy(x, t), (_f32(3, 5), torch.tensor([1, 0, 4])), None,
                      {"aten": ("cross_entropy_loss.default",)}),
    "cross_entropy_weight": (lambda x, t, w: F.cross_entropy(x, t, w),
                             (_f32(3, 5), torch.tensor([1, 0, 4]), torch.rand(5)), None,
                             {"aten": ("cross_entropy_loss.default",)}),
    # recurrent (undecomposed only: the decomposition spells the cells out)
    "rnn_tanh": (torch.nn.RNN(4, 3), (_f32(5, 2, 4),), None, {"aten": ("rnn_tanh.input",)}),
    "rnn_tanh_bidirectional": (torch.nn.RNN(4, 3, bidirectional=True), (_f32(3, 2, 4),), None,
                               {"aten": ("rnn_tanh.input",)}),
    "rnn_tanh_batch_first_hx": (torch.nn.RNN(4, 3, batch_first=True, bidirectional=True, bias=False),
                                (_f32(2, 3, 4), _f32(2, 2, 3)), None, {"aten": ("rnn_tanh.input",)}),
    "lstm": (_First(torch.nn.LSTM(4, 3)), (_f32(5, 2, 4),), None, {"aten": ("lstm.input",)}),
    "lstm_bidirectional": (_First(torch.nn.LSTM(4, 3, bidirectional=True)), (_f32(3, 2, 4),), None,
                           {"aten": ("lstm.input",)}),
    "lstm_batch_first_hx": (_First(torch.nn.LSTM(4, 3, batch_first=True, bidirectional=True, bias=False)),
                            (_f32(2, 3, 4), (_f32(2, 2, 3), _f32(2, 2, 3))), None, {"aten": ("lstm.input",)}),
    "gru": (_First(torch.nn.GRU(4, 3)), (_f32(5, 2, 4),), None, {"aten": ("gru.input",)}),
    "gru_bidirectional": (_First(torch.nn.GRU(4, 3, bidirectional=True)), (_f32(3, 2, 4),), None,
                          {"aten": ("gru.input",)}),
    "gru_batch_first_hx": (_First(torch.nn.GRU(4, 3, batch_first=True, bidirectional=True, bias=False)),
                           (_f32(2, 3, 4), _f32(2, 2, 3)), None, {"aten": ("gru.input",)}),
    # pooling, sampling, rois
    "adaptive_avg_pool1d": (lambda x: _ops()._adaptive_avg_pool1d(x, [2]), (_f32(1, 3, 8),), None,
                            dict.fromkeys(_BOTH, ("_adaptive_avg_pool1d.default",))),
    "grid_sample": (lambda x, g: F.grid_sample(x, g, align_corners=False),
                    (_f32(1, 2, 4, 4), torch.rand(1, 3, 3, 2) * 2 - 1), None,
                    {"decomposed": ("grid_sampler_2d.default",)}),
    "grid_sample_nearest_border": (lambda x, g: F.grid_sample(x, g, mode="nearest", padding_mode="border",
                                                              align_corners=True),
                                   (_f32(1, 2, 4, 4), torch.rand(1, 3, 3, 2)), None,
                                   {"decomposed": ("grid_sampler_2d.default",)}),
    "affine_grid": (lambda t: F.affine_grid(t, [2, 3, 4, 5], align_corners=True), (_f32(2, 2, 3),), None,
                    {"aten": ("affine_grid_generator.default",)}),
    "roi_align": (lambda x, r: _ops().roi_align(x, r, 0.5, 2, 3, 2, False), (_f32(1, 2, 8, 8), _ROIS), None,
                  dict.fromkeys(_BOTH, ("roi_align.default",))),
    "roi_align_aligned": (lambda x, r: _ops().roi_align(x, r, 1.0, 2, 2, -1, True), (_f32(1, 2, 8, 8), _ROIS),
                          None, dict.fromkeys(_BOTH, ("roi_align.default",))),
}


@functools.lru_cache(maxsize=None)
def _export(name, mode):
    fn, args, dynamic, _ = CASES[name]
    torch.manual_seed(0)
    ep = torch.export.export(_Fn(fn).eval(), args, dynamic_shapes=None if dynamic is None else (dynamic,))
    return ep.run_decompositions() if mode == "decomposed" else ep


def _targets(graph) -> set:
    return {getattr(n.target, "__name__", str(n.target)) for n in graph.nodes if n.op == "call_function"}


def _assert_same(ep, decompose):
    theirs = _tvm_import(ep, keep_params_as_input=True, run_ep_decomposition=decompose)
    ours = from_exported_program(ep, keep_params_as_input=True, run_ep_decomposition=decompose)
    tvm.ir.assert_structural_equal(to_tvm(ours), theirs)
    return ours


@pytest.mark.parametrize("name,mode", [(n, m) for n in CASES for m in CASES[n][3]])
def test_converter_imports_as_tvm(name, mode):
    ep = _export(name, mode)
    missing = set(CASES[name][3][mode]) - _targets(ep.graph)
    assert not missing, f"{name} ({mode}): the export has no {sorted(missing)} node"
    ours = _assert_same(ep, False)
    if name.startswith("assert_async") or name == "one_hot":
        assert not ours["main"].is_pure  # TVM's impure main without a dataflow block, matched


#: name -> (function, {mode: targets}); TVM draws the constant from numpy's global generator
RANDOM_CASES = {
    "randn": (lambda x: x + torch.randn(3, 4), dict.fromkeys(_BOTH, ("randn.default",))),
    "randn_like": (lambda x: x + torch.randn_like(x), dict.fromkeys(_BOTH, ("randn_like.default",))),
    "randn_like_dtype": (lambda x: x.double() + torch.randn_like(x, dtype=torch.float64),
                         dict.fromkeys(_BOTH, ("randn_like.default",))),
}


@pytest.mark.parametrize("name,mode", [(n, m) for n in RANDOM_CASES for m in RANDOM_CASES[n][1]])
def test_randn_imports_as_tvm(name, mode):
    """``randn``/``randn_like`` become a constant sampled by ``np.random.randn`` at import, in
    TVM and in memcore: with numpy seeded alike the modules are equal (constants compared by
    value), with another seed they are not."""
    import numpy as np

    fn, targets = RANDOM_CASES[name]
    ep = torch.export.export(_Fn(fn).eval(), (_f32(3, 4),))
    if mode == "decomposed":
        ep = ep.run_decompositions()
    assert set(targets[mode]) <= _targets(ep.graph)
    np.random.seed(0)
    theirs = _tvm_import(ep, keep_params_as_input=True, run_ep_decomposition=False)
    for seed, equal in ((0, True), (1, False)):
        np.random.seed(seed)
        ours = to_tvm(from_exported_program(ep, keep_params_as_input=True, run_ep_decomposition=False))
        if equal:
            tvm.ir.assert_structural_equal(ours, theirs)
        else:
            with pytest.raises(ValueError, match="ir.GenericConst|data"):
                tvm.ir.assert_structural_equal(ours, theirs)


def test_symbolic_not_equal_imports_as_tvm():
    """``operator.ne`` on a ``SymInt``: torch 2.13 writes ``torch._check(k != 2)`` as
    ``sym_not(eq)`` (which TVM's map lacks), so the program of ``compare_equal`` is exported
    and its ``eq`` node retargeted to ``operator.ne``; both importers read that graph."""
    fn, args, dynamic, _ = CASES["compare_equal"]
    ep = torch.export.export(_Fn(fn).eval(), args)
    (eq,) = [n for n in ep.graph.nodes if n.op == "call_function" and n.target is operator.eq]
    eq.target = operator.ne
    assert "ne" in _targets(ep.graph)
    _assert_same(ep, False)


def test_cross_entropy_arguments_tvm_drops_are_refused():
    """TVM's ``cross_entropy_loss.default`` reads ``reduction`` and ``ignore_index`` from the
    keywords only, and the export passes them positionally: TVM imports ``reduction="sum"``
    as a mean. memcore refuses the node (the decomposed graph imports equal to TVM)."""
    ep = torch.export.export(_Fn(lambda x, t: F.cross_entropy(x, t, reduction="sum")),
                             (_f32(3, 5), torch.tensor([1, 0, 4])))
    tvm_from_exported_program(ep, run_ep_decomposition=False)  # TVM imports it
    with pytest.raises(FrontendError, match=r"cross_entropy_loss with reduction=2"):
        from_exported_program(ep, run_ep_decomposition=False)
    _assert_same(ep, True)


def test_lstm_final_states_are_refused():
    """TVM's ``lstm.input`` converter returns the output sequence alone, and its ``getitem``
    hands that out for ``h_n`` and ``c_n`` too (other shapes than torch's); memcore refuses an
    LSTM whose final states are used."""
    ep = torch.export.export(torch.nn.LSTM(4, 3).eval(), (_f32(5, 2, 4),))
    theirs = _tvm_import(ep, run_ep_decomposition=False)  # TVM imports it ...
    ret = theirs["main"].ret_ty.fields
    assert [int(d) for d in ret[1].shape] == [5, 2, 3]  # ... h_n as the (seq, batch, hidden) output
    with pytest.raises(FrontendError, match=r"LSTM's final states are used"):
        from_exported_program(ep, run_ep_decomposition=False)
    _assert_same(ep, True)


def test_affine_grid_without_align_corners_is_refused_as_in_tvm():
    ep = torch.export.export(_Fn(lambda t: F.affine_grid(t, [1, 2, 4, 5], align_corners=False)), (_f32(1, 2, 3),))
    with pytest.raises(NotImplementedError):
        tvm_from_exported_program(ep, run_ep_decomposition=False)
    with pytest.raises(FrontendError, match="align_corners=False"):
        from_exported_program(ep, run_ep_decomposition=False)
    _assert_same(ep, True)
