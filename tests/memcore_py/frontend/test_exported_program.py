"""memcore_py.frontend.exported_program without TVM: the importer against the TVM importer's
recorded output (the shipped high-level texts), its placeholders, symbolic dims, constants and
outputs, and its errors (missing torch, bad input, unsupported operators).

The comparison with TVM's importer run live is tests/oracle/test_exported_program_oracle.py.
"""
import sys

import numpy as np
import pytest
from _helpers import load_make_models

from memcore_py import parse
from memcore_py.errors import FrontendDependencyError, FrontendError, MemcoreError, UnsupportedOperatorError
from memcore_py.frontend.exported_program import (
    exported_program_params,
    from_exported_program,
    unsupported_operators,
)
from memcore_py.ir import Constant, PrimVar, TupleGetItem, assert_structural_equal, well_formed



@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def _make_models():
    return load_make_models()


def _export(torch, model, args, dynamic_shapes=None):
    return torch.export.export(model.eval(), args, dynamic_shapes=dynamic_shapes)


# ------------------------------------------------------------------------------------ errors
def test_missing_torch_is_a_typed_import_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` raises ImportError
    with pytest.raises(FrontendDependencyError) as info:
        from_exported_program(object())
    assert isinstance(info.value, ImportError) and isinstance(info.value, MemcoreError)
    assert "memcore[torch]" in str(info.value)


def test_not_an_exported_program(torch):
    with pytest.raises(FrontendError, match="expects a torch.export.ExportedProgram; got Linear"):
        from_exported_program(torch.nn.Linear(2, 2))


def test_unsupported_operators_are_listed_at_once(torch):
    class Uses(torch.nn.Module):
        def forward(self, x):
            return torch.erfinv(x), torch.lgamma(x), torch.erfinv(x * 0.5), torch.relu(x)

    ep = _export(torch, Uses(), (torch.rand(3, 4),))
    with pytest.raises(UnsupportedOperatorError) as info:
        from_exported_program(ep)
    err = info.value
    assert err.ops == {"aten.erfinv.default": ("erfinv", "erfinv_1"), "aten.lgamma.default": ("lgamma",)}
    assert "2 operator(s)" in str(err) and "erfinv_1" in str(err) and "relu" not in str(err)
    assert isinstance(err, FrontendError) and isinstance(err, ValueError)
    assert unsupported_operators(ep) == err.ops


def test_converter_rejection_names_the_node(torch):
    class OffDiagonal(torch.nn.Module):
        def forward(self, x):
            return torch.diagonal(x, 1)

    ep = _export(torch, OffDiagonal(), (torch.randn(4, 4),))
    with pytest.raises(FrontendError, match=r"node 'diagonal' \(diagonal.default\): diagonal with an offset"):
        from_exported_program(ep)


def test_non_tensor_input_is_rejected(torch):
    class Scaled(torch.nn.Module):
        def forward(self, x, k: int):
            return x * k

    ep = _export(torch, Scaled(), (torch.randn(2), 3))
    with pytest.raises(FrontendError, match="input 'k'"):
        from_exported_program(ep)


# ------------------------------------------------------------------------------------ TVM's recorded output
@pytest.mark.slow
@pytest.mark.parametrize("name", ["resnet50", "bert_base", "gpt2_small", "llama_small"])
def test_real_models_equal_tvm_importer_text(torch, name):
    """The shipped texts are TVM 0.27's importer output for these very model definitions
    (tools/make_models.py --highlevel): memcore's import must be structurally equal."""
    from memcore_py.examples.models import highlevel_model_text

    mm = _make_models()
    assert name in mm.HIGHLEVEL_MODELS
    ctor, inputs = mm.MODELS[name]
    mod = from_exported_program(_export(torch, ctor(), inputs()))
    assert_structural_equal(mod, parse(highlevel_model_text(name)))


# ------------------------------------------------------------------------------------ structure
class _Attention:
    @staticmethod
    def build(torch):
        class M(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.emb = torch.nn.Embedding(50, 16)
                self.fc = torch.nn.Linear(16, 16)

            def forward(self, ids):
                x = self.fc(self.emb(ids))
                s = x.shape[1]
                mask = torch.full((s, s), -1e4).triu(1)
                return torch.softmax(x @ x.transpose(-1, -2) + mask, -1), torch.arange(s)

        return M()


def test_dynamic_dims_are_named_symbolic_vars_with_bounds(torch):
    from torch.export import Dim

    ep = _export(torch, _Attention.build(torch), (torch.randint(0, 50, (1, 16)),),
                 ({1: Dim("seq", min=2, max=512)},))
    (symbol,) = ep.range_constraints
    mod = from_exported_program(ep)
    main = mod["main"]
    assert [p.name for p in main.params] == ["ids", "p_emb_weight", "p_fc_weight", "p_fc_bias"]
    seq = main.params[0].ty.shape[1]
    assert isinstance(seq, PrimVar) and seq.name == str(symbol) and seq.dtype == "int64"
    assert main.attrs["num_input"] == 1
    assert main.attrs["tir_var_lower_bound"] == {str(symbol): 2}
    assert main.attrs["tir_var_upper_bound"] == {str(symbol): 512}
    (out_scores, out_range) = main.ret_ty.fields
    assert [d.name for d in out_scores.shape[1:]] == [str(symbol)] * 2
    assert out_range.shape[0].name == str(symbol) and out_range.dtype == "int64"
    assert well_formed(mod)
    assert_structural_equal(parse(mod.script()), mod)


def test_unbounded_dim_has_no_upper_bound(torch):
    from torch.export import Dim

    ep = _export(torch, torch.nn.Linear(3, 2), (torch.randn(4, 3),), ({0: Dim("batch", min=2)},))
    attrs = from_exported_program(ep)["main"].attrs
    (symbol,) = ep.range_constraints
    assert attrs["tir_var_lower_bound"] == {str(symbol): 2}
    assert "tir_var_upper_bound" not in attrs


def _bn_net(torch):
    torch.manual_seed(1)
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.ReLU())
    with torch.no_grad():
        net[1].running_mean.uniform_(-1, 1)
        net[1].running_var.uniform_(0.5, 2)
    return net


def test_buffers_are_bound_as_constants_with_their_data(torch):
    net = _bn_net(torch)
    mod = from_exported_program(_export(torch, net, (torch.randn(1, 3, 8, 8),)))
    main = mod["main"]
    assert [p.name for p in main.params] == ["input", "p_0_weight", "p_0_bias", "p_1_weight", "p_1_bias"]
    bn = next(b.value for blk in main.body.blocks for b in blk.bindings
              if getattr(getattr(b.value, "op", None), "name", "") == "relax.nn.batch_norm")
    mean, var = bn.args[3], bn.args[4]
    assert isinstance(mean, Constant) and isinstance(var, Constant)
    np.testing.assert_array_equal(mean.data, net[1].running_mean.numpy())
    np.testing.assert_array_equal(var.data, net[1].running_var.numpy())
    assert bn.attrs["training"] is False and bn.attrs["axis"] == 1


def test_params_bound_when_not_kept_as_inputs(torch):
    net = _bn_net(torch)
    mod = from_exported_program(_export(torch, net, (torch.randn(1, 3, 8, 8),)), keep_params_as_input=False)
    main = mod["main"]
    assert [p.name for p in main.params] == ["input"]
    assert "num_input" not in main.attrs
    conv = main.body.blocks[0].bindings[0].value
    assert conv.op.name == "relax.nn.conv2d" and isinstance(conv.args[1], Constant)
    np.testing.assert_array_equal(conv.args[1].data, net[0].weight.detach().numpy())


def test_params_helper_matches_function_params(torch):
    net = _bn_net(torch)
    ep = _export(torch, net, (torch.randn(1, 3, 8, 8),))
    main = from_exported_program(ep)["main"]
    params = exported_program_params(ep)
    assert list(params) == [p.name for p in main.params[main.attrs["num_input"]:]]
    np.testing.assert_array_equal(params["p_0_weight"], net[0].weight.detach().numpy())


def test_buffer_mutation_outputs_are_dropped(torch):
    class Counter(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("count", torch.zeros(3))

        def forward(self, x):
            self.count.add_(1.0)
            return x + self.count

    ep = _export(torch, Counter(), (torch.randn(2, 3),)).run_decompositions()
    kinds = [s.kind.name for s in ep.graph_signature.output_specs]
    assert kinds == ["BUFFER_MUTATION", "USER_OUTPUT"]
    main = from_exported_program(ep)["main"]
    assert [p.name for p in main.params] == ["x"]
    assert len(main.ret_ty.fields) == 1 and tuple(d.value for d in main.ret_ty.fields[0].shape) == (2, 3)


def test_multi_output_node_reads_tuple_items(torch):
    net = torch.nn.Sequential(torch.nn.MaxPool2d(2))
    main = from_exported_program(_export(torch, net, (torch.randn(1, 2, 4, 4),)))["main"]
    bindings = main.body.blocks[0].bindings
    ops = [getattr(getattr(b.value, "op", None), "name", type(b.value).__name__) for b in bindings]
    # max_pool2d_with_indices: (pool, zeros_like placeholder for the indices), then item 0
    assert ops == ["relax.nn.max_pool2d", "relax.zeros_like", "Tuple", "TupleGetItem", "Tuple"]
    assert isinstance(bindings[3].value, TupleGetItem) and bindings[3].value.index == 0
    assert [b.var.name for b in bindings] == ["lv", "lv1", "lv2", "lv3", "gv"]


def test_inplace_ops_rebind_their_destination(torch):
    """Without decomposition the in-place ops stay; copy_/fill_/masked_fill_/zero_ rebind the
    destination node (later readers see the new value), add_/relu_ do not (TVM's rule)."""
    from memcore_py.testing.torch_programs import torch_programs

    model, args, _ = torch_programs()["inplace"]
    main = from_exported_program(_export(torch, model, args), run_ep_decomposition=False)["main"]
    bindings = main.body.blocks[0].bindings
    value = {b.var: b.value for b in bindings}

    def op(v):
        return getattr(getattr(value.get(v), "op", None), "name", None)

    out = value[main.body.body].fields  # gv = (y + z + w, state * 2, u + 1)
    yz, w = value[out[0]].args
    y, z = value[yz].args
    assert (op(y), op(z), op(w)) == ("relax.where", "relax.full", "relax.zeros_like")
    state = value[out[1]].args[0]  # self.state.copy_(y): the buffer now reads the copied y
    assert op(state) == "relax.broadcast_to" and value[state].args[0] is y
    u = value[out[2]].args[0]  # torch.relu_(x * 3) is read as relu's result, add_ is a plain add
    assert op(u) == "relax.nn.relu" and op(out[2]) == "relax.add"
