"""The issue 27 workloads of ``bench_tvm_bridge.py``: models memcore's tests and shipped texts
never saw, built as TVM builds them for a user, with random weights and small configs.

Each model is exported once (``torch.export.export(model, args, dynamic_shapes=...)``) and
imported by TVM (``tvm.relax.frontend.torch.from_exported_program(ep,
keep_params_as_input=True)`` then ``relax.frontend.detach_params``, as TVM's end-to-end
tutorial does; the weights are then parameters after ``num_input``). From that high-level
module each pass gets the input it has in TVM's pipelines (:func:`pass_inputs`):

- DataflowUseInplaceCalls: the high-level module after ``DecomposeOpsForInference`` and
  ``CanonicalizeBindings`` (what precedes the zero pipeline in
  ``relax.pipeline.static_shape_tuning_pipeline``; the pass works on high-level ops);
- AttachAttrLayoutFreeBuffers: after those two and the zero pipeline (``LegalizeOps``,
  ``AnnotateTIROpPattern``, ``FoldConstant``, ``FuseOps``, ``FuseTIR``), where
  ``static_shape_tuning_pipeline(cpu_weight_prepack=True)`` runs it;
- StaticPlanBlockMemory: after the passes before it in ``relax.get_default_pipeline`` for
  an llvm target (library dispatch, legalization and fusion, ``RewriteDataflowReshape``,
  ``ToNonDataflow``, ``RemovePurityChecking``, ``CallTIRRewrite``);
- LowerAllocTensor: that module after TVM's StaticPlanBlockMemory;
- KillAfterLastUse: after TVM's StaticPlanBlockMemory and LowerAllocTensor.

Nothing is cached on disk. transformers is optional: without it the BERT workload is a plain
``torch.nn`` encoder and the decoder and vision workloads are skipped. (The vision models are
transformers' ViT and DeiT, not timm's: timm needs torchvision, and the only torchvision wheel
for this torch release on the bench machine is a CUDA build that does not load.)
Not a benchmark file itself (pytest collects ``bench_*.py`` only).
"""
from __future__ import annotations

import importlib.util
import time

#: Upper bound of the bounded symbolic dims (``torch.export.Dim(max=...)``, imported by TVM
#: as ``tir_var_upper_bound``).
MAX_SEQ = 64
MAX_BATCH = 16
MAX_HW = 256
HIDDEN = 64


def has(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


# ------------------------------------------------------------------------------ the models
def _torch():
    import torch

    return torch


def cond_model():
    """``torch.cond`` on the sign of the input's sum: two MLP branches (an ``If`` in Relax)."""
    torch = _torch()
    nn = torch.nn

    class Cond(nn.Module):
        def __init__(self):
            super().__init__()
            self.inp = nn.Linear(HIDDEN, HIDDEN)
            self.a1, self.a2 = nn.Linear(HIDDEN, 2 * HIDDEN), nn.Linear(2 * HIDDEN, HIDDEN)
            self.b1, self.b2 = nn.Linear(HIDDEN, 2 * HIDDEN), nn.Linear(2 * HIDDEN, HIDDEN)
            self.out = nn.Linear(HIDDEN, HIDDEN)

        def forward(self, x):
            h = torch.relu(self.inp(x))

            def true_fn(h):
                return self.a2(torch.relu(self.a1(h))) * 2.0

            def false_fn(h):
                return self.b2(torch.tanh(self.b1(h))) + 1.0

            return self.out(torch.cond(h.sum() > 0, true_fn, false_fn, (h,)) + h)

    return Cond()


def convnet_model():
    """Three conv-BN-ReLU stages (strides 1, 2, 2), a max pool, global average pool, linear."""
    nn = _torch().nn

    def stage(cin, cout, stride):
        return [nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU()]

    return nn.Sequential(*stage(3, 16, 1), *stage(16, 32, 2), nn.MaxPool2d(2), *stage(32, 64, 2),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10))


def cross_attention_model():
    """Pre-norm cross-attention (queries from ``x``, keys and values from ``ctx``) and an MLP,
    with explicit projections: batch, query length and context length all symbolic."""
    torch = _torch()
    nn = torch.nn

    class CrossAttention(nn.Module):
        def __init__(self, heads=4):
            super().__init__()
            self.heads = heads
            self.norm_q, self.norm_kv, self.norm_mlp = nn.LayerNorm(HIDDEN), nn.LayerNorm(HIDDEN), nn.LayerNorm(HIDDEN)
            self.q, self.k, self.v, self.o = (nn.Linear(HIDDEN, HIDDEN) for _ in range(4))
            self.mlp = nn.Sequential(nn.Linear(HIDDEN, 4 * HIDDEN), nn.GELU(), nn.Linear(4 * HIDDEN, HIDDEN))

        def forward(self, x, ctx):
            b, lq, e = x.shape
            lk = ctx.shape[1]
            d = e // self.heads
            q = self.q(self.norm_q(x)).reshape(b, lq, self.heads, d).transpose(1, 2)
            kv = self.norm_kv(ctx)
            k = self.k(kv).reshape(b, lk, self.heads, d).transpose(1, 2)
            v = self.v(kv).reshape(b, lk, self.heads, d).transpose(1, 2)
            att = torch.softmax(q @ k.transpose(-1, -2) * d ** -0.5, dim=-1)
            x = x + self.o((att @ v).transpose(1, 2).reshape(b, lq, e))
            return x + self.mlp(self.norm_mlp(x))

    return CrossAttention()


def bert_model():
    """A 2-layer BERT (transformers' ``BertModel`` from a ``BertConfig``, random weights), or
    without transformers a plain ``torch.nn.TransformerEncoder`` of the same size."""
    torch = _torch()
    if has("transformers"):
        from transformers import BertConfig, BertModel

        cfg = BertConfig(vocab_size=1000, hidden_size=HIDDEN, num_hidden_layers=2, num_attention_heads=2,
                         intermediate_size=2 * HIDDEN, max_position_embeddings=128)
        model = BertModel(cfg, add_pooling_layer=False)

        class Bert(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.bert = model

            def forward(self, input_ids, attention_mask):
                # explicit position and token type ids: BertModel's default slices its
                # 128-entry buffers to T.min(seq, 128), and TVM's importer then loses the
                # embedding sum's shape (LegalizeOps fails on the ndim-only tensor)
                position_ids = torch.arange(input_ids.shape[1]).unsqueeze(0)
                return self.bert(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                                 token_type_ids=torch.zeros_like(input_ids)).last_hidden_state

        return Bert()

    class Encoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = torch.nn.Embedding(1000, HIDDEN)
            layer = torch.nn.TransformerEncoderLayer(HIDDEN, 2, 2 * HIDDEN, batch_first=True)
            self.enc = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)

        def forward(self, input_ids, attention_mask):
            return self.enc(self.emb(input_ids), src_key_padding_mask=attention_mask == 0)

    return Encoder()


def qwen2_model():
    """A 2-layer Qwen2 decoder (transformers' ``Qwen2Model``, grouped-query attention, random
    weights) given a 2-D attention mask, no KV cache."""
    torch = _torch()
    from transformers import Qwen2Config, Qwen2Model

    cfg = Qwen2Config(vocab_size=1000, hidden_size=HIDDEN, intermediate_size=2 * HIDDEN, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256, use_cache=False)
    model = Qwen2Model(cfg)

    class Decoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask):
            return self.model(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).last_hidden_state

    return Decoder()


def _vision(cls_name, config_name):
    torch = _torch()
    import transformers

    cfg = getattr(transformers, config_name)(image_size=32, patch_size=8, num_channels=3, hidden_size=HIDDEN,
                                             num_hidden_layers=2, num_attention_heads=2,
                                             intermediate_size=2 * HIDDEN)
    model = getattr(transformers, cls_name)(cfg, add_pooling_layer=False)

    class Vision(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, pixel_values):
            return self.model(pixel_values=pixel_values).last_hidden_state

    return Vision()


def vit_model():
    """transformers' ``ViTModel``: 32x32 images, 8x8 patches, 2 layers of width 64."""
    return _vision("ViTModel", "ViTConfig")


def deit_model():
    """transformers' ``DeiTModel`` (class and distillation tokens), the same size."""
    return _vision("DeiTModel", "DeiTConfig")


def _token_args(batch=2, seq=16):
    torch = _torch()
    ids = torch.randint(0, 1000, (batch, seq))
    mask = torch.ones(batch, seq, dtype=torch.int64)
    mask[1, seq // 2:] = 0  # the second sequence padded
    return ids, mask


def _dims():
    from torch.export import Dim

    batch, seq = Dim("batch", min=1, max=MAX_BATCH), Dim("seq", min=2, max=MAX_SEQ)
    return batch, seq


def specs() -> dict:
    """Workload name -> ``(model factory, args factory, dynamic_shapes factory, needs)``.
    ``needs`` names the optional package the model needs. The ``:unbounded`` workloads are
    their bounded sibling's module with ``tir_var_upper_bound`` removed (:func:`build`)."""
    torch = _torch()

    def tokens():
        b, s = _dims()
        return {"input_ids": {0: b, 1: s}, "attention_mask": {0: b, 1: s}}

    def cross():
        from torch.export import Dim

        b, lq, lk = Dim("batch", min=1, max=MAX_BATCH), Dim("lq", min=2, max=MAX_SEQ), Dim("lk", min=2, max=MAX_SEQ)
        return {"x": {0: b, 1: lq}, "ctx": {0: b, 1: lk}}

    def hw():
        from torch.export import Dim

        # 4*h and 4*w: the stride-2 stages and the pool divide them exactly
        return {"input": {2: 4 * Dim("h", min=4, max=MAX_HW // 4), 3: 4 * Dim("w", min=4, max=MAX_HW // 4)}}

    return {
        "cond_static": (cond_model, lambda: (torch.randn(4, HIDDEN),), lambda: None, None),
        "cond_dynbatch": (cond_model, lambda: (torch.randn(4, HIDDEN),),
                          lambda: {"x": {0: _dims()[0]}}, None),
        "convnet_hw": (convnet_model, lambda: (torch.randn(1, 3, 32, 48),), hw, None),
        "bert:bounded": (bert_model, _token_args, tokens, None),
        "cross_attention": (cross_attention_model, lambda: (torch.randn(2, 16, HIDDEN), torch.randn(2, 24, HIDDEN)),
                            cross, None),
        "qwen2_mask": (qwen2_model, _token_args, tokens, "transformers"),
        "vit": (vit_model, lambda: (torch.randn(2, 3, 32, 32),), lambda: {"pixel_values": {0: _dims()[0]}},
                "transformers"),
        "deit": (deit_model, lambda: (torch.randn(2, 3, 32, 32),), lambda: {"pixel_values": {0: _dims()[0]}},
                 "transformers"),
    }


#: Every workload, in the bench's order ("bert:unbounded" is derived from "bert:bounded").
WORKLOADS = ("cond_static", "cond_dynbatch", "convnet_hw", "bert:bounded", "bert:unbounded", "cross_attention",
             "qwen2_mask", "vit", "deit")


def needs(name: str):
    """The optional package workload ``name`` needs (None: torch and TVM only)."""
    return specs()[name.replace(":unbounded", ":bounded")][3]


# ------------------------------------------------------------------------------ TVM's import
def export_and_import(name: str):
    """``(high-level tvm.IRModule, seconds of export + import)`` of a workload (see the module
    docstring); an ``:unbounded`` name is not exported: ask for its bounded sibling and call
    :func:`without_upper_bound`."""
    torch = _torch()
    from tvm import relax
    from tvm.relax.frontend.torch import from_exported_program

    make, args, dynamic, _ = specs()[name]
    torch.manual_seed(0)
    t0 = time.perf_counter()
    with torch.no_grad():
        model = make().eval()
        ep = torch.export.export(model, args(), dynamic_shapes=dynamic())
    mod = from_exported_program(ep, keep_params_as_input=True)
    mod, _params = relax.frontend.detach_params(mod)
    return mod, time.perf_counter() - t0


def without_upper_bound(mod):
    """``mod`` with ``tir_var_upper_bound`` removed from every Relax function (the symbolic
    dims unbounded, as an export without ``Dim(max=...)`` of a model that does not bound them
    itself)."""
    import tvm
    from tvm import relax

    funcs = {}
    for gv, f in mod.functions.items():
        if isinstance(f, relax.Function) and f.attrs is not None and "tir_var_upper_bound" in f.attrs:
            f = f.without_attr("tir_var_upper_bound")
        funcs[gv] = f
    return tvm.IRModule(funcs, attrs=mod.attrs, global_infos=mod.global_infos)


PASSES = ("DataflowUseInplaceCalls", "AttachAttrLayoutFreeBuffers", "StaticPlanBlockMemory", "LowerAllocTensor",
          "KillAfterLastUse")


def pass_inputs(high):
    """Pass name -> the ``tvm.IRModule`` the pass gets in TVM's pipeline (module docstring)."""
    import tvm
    from tvm import relax
    from tvm.relax.backend.cpu_generic import pipeline as cpu_generic

    rt = relax.transform
    target = tvm.target.Target("llvm")
    out = {}
    with target:
        decomposed = tvm.transform.Sequential([rt.DecomposeOpsForInference(), rt.CanonicalizeBindings()])(high)
        out["DataflowUseInplaceCalls"] = decomposed
        out["AttachAttrLayoutFreeBuffers"] = relax.pipeline.zero_pipeline()(decomposed)
        before_spbm = tvm.transform.Sequential(cpu_generic.library_dispatch_passes(target)
                                               + cpu_generic.legalize_passes(target)
                                               + cpu_generic.dataflow_lower_passes(target))(high)
    out["StaticPlanBlockMemory"] = before_spbm
    planned = rt.StaticPlanBlockMemory()(before_spbm)
    out["LowerAllocTensor"] = planned
    out["KillAfterLastUse"] = rt.LowerAllocTensor()(planned)
    return out
