"""Build the real-model corpus shipped in ``memcore_py/examples/models/``.

Dev script (not part of the package): needs ``torch`` and ``apache-tvm`` (0.27).

For each model below (plain PyTorch, random weights, no downloads) it runs

1. ``torch.export.export(model.eval(), example_inputs)``;
2. ``tvm.relax.frontend.torch.from_exported_program(ep, keep_params_as_input=True)``
   (weights stay function parameters, so no weight constants end up in the text; the
   ``params`` attribute holding the weight arrays is dropped);
3. TVM's own lowering, as TVM's end-to-end tutorial compiles a static-shape model
   (``relax.get_pipeline("static_shape_tuning", total_trials=0)`` followed by
   ``tvm.compile``'s ``default_build_pipeline``), stopped right before
   StaticPlanBlockMemory:

   ``DecomposeOpsForInference → CanonicalizeBindings → LegalizeOps → AnnotateTIROpPattern →
   FoldConstant → FuseOps → FuseTIR`` (static_shape_tuning: its ``zero`` pipeline; the
   MetaSchedule steps are no-ops without tuning records), then ``DispatchSampling →
   DispatchSortScan → LegalizeOps → RewriteDataflowReshape → ToNonDataflow →
   RemovePurityChecking → CallTIRRewrite`` (default_build_pipeline up to SPBM).

   That is the module StaticPlanBlockMemory receives in a real compile: fused kernels,
   explicit ``R.builtin.alloc_tensor`` outputs, ``vm.builtin.reshape`` views. Weights are
   inputs, so the transposes of ``nn.Linear`` weights stay runtime kernels with planned
   outputs, exactly as in that flow (LiftTransformParams runs only with
   ``cpu_weight_prepack``);
4. every PrimFunc body is replaced by ``T.evaluate(0)`` (signature, buffer map and attributes
   kept; the Relax functions are kept exactly) to keep the files small, and the module is
   printed with ``mod.script()`` to ``memcore_py/examples/models/<name>.py.gz``;
5. TVM's own ``StaticPlanBlockMemory`` is run on the same module and its result (bytes of
   every ``R.memory.alloc_storage``, per function) is written to ``<name>.tvm.json``: the
   oracle the real-model tests and benchmarks compare against.

Modelling choices that keep the Relax text free of large constants: BatchNorm statistics
are parameters (a frozen batch norm module), the rotary cos/sin tables and the causal
masks are parameters, position embeddings are parameters added directly (fixed sequence
length).

With ``--highlevel`` (or ``--highlevel-only``) it also writes, for the models in
``HIGHLEVEL_MODELS``, the module exactly as TVM's importer prints it *before* any lowering
(step 2 above: ``R.nn.conv2d``, ``R.matmul``, ``R.nn.layer_norm`` ..., weights as parameters,
``num_input`` kept, ``params`` dropped) to ``memcore_py/examples/models/highlevel/<name>.py.gz``;
the text must read back through TVM's parser into a module structurally equal to the one
printed.

With ``--vm-check`` the script also runs each model end to end on TVM's VM (llvm, real
PrimFunc bodies, random weights): TVM's full default pipeline is the reference, and the same
lowered module planned by memcore (parsed from TVM's text; ``StaticPlanBlockMemory`` in TVM
mode and in arena mode, then memcore's ``LowerAllocTensor`` and ``KillAfterLastUse``),
printed and re-parsed by TVM, must produce the same outputs. Needs memcore_py importable;
slow (minutes per model).

Usage::

    python tools/make_models.py [NAME ...]       # default: all models
    python tools/make_models.py --vm-check llama_small resnet50
    python tools/make_models.py --highlevel-only          # only the high-level texts
"""
from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))
OUT_DIR = os.path.join(HERE, os.pardir, "memcore_py", "examples", "models")
HIGHLEVEL_DIR = os.path.join(OUT_DIR, "highlevel")

torch.manual_seed(0)


# ---------------------------------------------------------------------------------------------
# Models (plain torch)
# ---------------------------------------------------------------------------------------------


class FrozenBatchNorm2d(nn.Module):
    """Inference batch norm whose statistics are parameters (not buffers), so that the
    TVM importer keeps them as function inputs instead of binding them as constants."""

    def __init__(self, n: int, eps: float = 1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.rand(n) + 0.5, requires_grad=False)
        self.bias = nn.Parameter(torch.randn(n) * 0.1, requires_grad=False)
        self.running_mean = nn.Parameter(torch.randn(n) * 0.1, requires_grad=False)
        self.running_var = nn.Parameter(torch.rand(n) + 0.5, requires_grad=False)
        self.eps = eps

    def forward(self, x):
        return F.batch_norm(x, self.running_mean, self.running_var, self.weight, self.bias, False, 0.0, self.eps)


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, in_ch: int, width: int, stride: int):
        super().__init__()
        out_ch = width * self.expansion
        self.conv1 = nn.Conv2d(in_ch, width, 1, bias=False)
        self.bn1 = FrozenBatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride=stride, padding=1, bias=False)
        self.bn2 = FrozenBatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, out_ch, 1, bias=False)
        self.bn3 = FrozenBatchNorm2d(out_ch)
        self.downsample = None
        if stride != 1 or in_ch != out_ch:
            self.downsample = nn.Sequential(
                nn.Conv2d(in_ch, out_ch, 1, stride=stride, bias=False), FrozenBatchNorm2d(out_ch)
            )

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = F.relu(self.bn1(self.conv1(x)))
        out = F.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return F.relu(out + identity)


class ResNet50(nn.Module):
    def __init__(self, num_classes: int = 1000):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
        self.bn1 = FrozenBatchNorm2d(64)
        layers, in_ch = [], 64
        for width, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
            for i in range(blocks):
                layers.append(Bottleneck(in_ch, width, stride if i == 0 else 1))
                in_ch = width * Bottleneck.expansion
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(in_ch, num_classes)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.max_pool2d(x, 3, stride=2, padding=1)
        x = self.layers(x)
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.fc(x)


class SelfAttention(nn.Module):
    """Multi-head self attention with an optional additive mask parameter."""

    def __init__(self, dim: int, n_heads: int, causal_len: int | None = None):
        super().__init__()
        self.n_heads, self.head_dim = n_heads, dim // n_heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.mask = None
        if causal_len is not None:
            mask = torch.full((causal_len, causal_len), -1e4).triu(1)
            self.mask = nn.Parameter(mask.reshape(1, 1, causal_len, causal_len), requires_grad=False)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(x).reshape(b, s, 3, self.n_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        scores = torch.matmul(q, k.transpose(-1, -2)) * (1.0 / math.sqrt(self.head_dim))
        if self.mask is not None:
            scores = scores + self.mask
        out = torch.matmul(torch.softmax(scores, dim=-1), v)
        return self.proj(out.transpose(1, 2).reshape(b, s, d))


class PostLNLayer(nn.Module):
    """BERT encoder layer (post layer norm)."""

    def __init__(self, dim: int, n_heads: int, ffn: int):
        super().__init__()
        self.attn = SelfAttention(dim, n_heads)
        self.ln1 = nn.LayerNorm(dim, eps=1e-12)
        self.fc1 = nn.Linear(dim, ffn)
        self.fc2 = nn.Linear(ffn, dim)
        self.ln2 = nn.LayerNorm(dim, eps=1e-12)

    def forward(self, x):
        x = self.ln1(x + self.attn(x))
        return self.ln2(x + self.fc2(F.gelu(self.fc1(x))))


class PreLNLayer(nn.Module):
    """GPT-2 / ViT block (pre layer norm)."""

    def __init__(self, dim: int, n_heads: int, ffn: int, causal_len: int | None = None, eps: float = 1e-5):
        super().__init__()
        self.ln1 = nn.LayerNorm(dim, eps=eps)
        self.attn = SelfAttention(dim, n_heads, causal_len)
        self.ln2 = nn.LayerNorm(dim, eps=eps)
        self.fc1 = nn.Linear(dim, ffn)
        self.fc2 = nn.Linear(ffn, dim)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="tanh"))


class BertBase(nn.Module):
    def __init__(self, vocab=30522, dim=768, n_layers=12, n_heads=12, ffn=3072, seq=128):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Parameter(torch.randn(1, seq, dim) * 0.02)
        self.typ = nn.Parameter(torch.randn(1, 1, dim) * 0.02)
        self.ln = nn.LayerNorm(dim, eps=1e-12)
        self.layers = nn.ModuleList(PostLNLayer(dim, n_heads, ffn) for _ in range(n_layers))
        self.pool = nn.Linear(dim, dim)

    def forward(self, input_ids):
        x = self.ln(self.tok(input_ids) + self.pos + self.typ)
        for layer in self.layers:
            x = layer(x)
        return x, torch.tanh(self.pool(x[:, 0]))


class GPT2Small(nn.Module):
    def __init__(self, vocab=50257, dim=768, n_layers=12, n_heads=12, seq=128):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Parameter(torch.randn(1, seq, dim) * 0.02)
        self.layers = nn.ModuleList(PreLNLayer(dim, n_heads, 4 * dim, causal_len=seq) for _ in range(n_layers))
        self.ln_f = nn.LayerNorm(dim)
        self.lm_head = nn.Linear(dim, vocab, bias=False)

    def forward(self, input_ids):
        x = self.tok(input_ids) + self.pos
        for layer in self.layers:
            x = layer(x)
        return self.lm_head(self.ln_f(x))


class ViTB16(nn.Module):
    def __init__(self, image=224, patch=16, dim=768, n_layers=12, n_heads=12, num_classes=1000):
        super().__init__()
        n_patches = (image // patch) ** 2
        self.patch = nn.Conv2d(3, dim, patch, stride=patch)
        self.cls = nn.Parameter(torch.randn(1, 1, dim) * 0.02)
        self.pos = nn.Parameter(torch.randn(1, n_patches + 1, dim) * 0.02)
        self.layers = nn.ModuleList(PreLNLayer(dim, n_heads, 4 * dim, eps=1e-6) for _ in range(n_layers))
        self.ln = nn.LayerNorm(dim, eps=1e-6)
        self.head = nn.Linear(dim, num_classes)

    def forward(self, img):
        x = self.patch(img).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls, x], dim=1) + self.pos
        for layer in self.layers:
            x = layer(x)
        return self.head(self.ln(x)[:, 0])


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim) + 0.1 * torch.randn(dim))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def _rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat([-x2, x1], dim=-1)


class LlamaLayer(nn.Module):
    """Llama decoder layer: RMSNorm, rotary attention with grouped KV heads, SwiGLU MLP."""

    def __init__(self, dim: int, n_heads: int, n_kv_heads: int, ffn: int):
        super().__init__()
        self.n_heads, self.n_kv, self.head_dim = n_heads, n_kv_heads, dim // n_heads
        self.norm1, self.norm2 = RMSNorm(dim), RMSNorm(dim)
        self.q = nn.Linear(dim, dim, bias=False)
        self.k = nn.Linear(dim, n_kv_heads * self.head_dim, bias=False)
        self.v = nn.Linear(dim, n_kv_heads * self.head_dim, bias=False)
        self.o = nn.Linear(dim, dim, bias=False)
        self.gate = nn.Linear(dim, ffn, bias=False)
        self.up = nn.Linear(dim, ffn, bias=False)
        self.down = nn.Linear(ffn, dim, bias=False)

    def forward(self, x, cos, sin, mask):
        b, s, d = x.shape
        h = self.norm1(x)
        q = self.q(h).reshape(b, s, self.n_heads, self.head_dim).transpose(1, 2)
        k = self.k(h).reshape(b, s, self.n_kv, self.head_dim).transpose(1, 2)
        v = self.v(h).reshape(b, s, self.n_kv, self.head_dim).transpose(1, 2)
        q = q * cos + _rotate_half(q) * sin
        k = k * cos + _rotate_half(k) * sin
        rep = self.n_heads // self.n_kv
        k = k.repeat_interleave(rep, dim=1)
        v = v.repeat_interleave(rep, dim=1)
        scores = torch.matmul(q, k.transpose(-1, -2)) * (1.0 / math.sqrt(self.head_dim)) + mask
        out = torch.matmul(torch.softmax(scores, dim=-1), v).transpose(1, 2).reshape(b, s, d)
        x = x + self.o(out)
        h = self.norm2(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


class LlamaSmall(nn.Module):
    def __init__(self, vocab=32000, dim=1024, n_layers=4, n_heads=16, n_kv_heads=4, ffn=2816, seq=128):
        super().__init__()
        head_dim = dim // n_heads
        self.tok = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList(LlamaLayer(dim, n_heads, n_kv_heads, ffn) for _ in range(n_layers))
        self.norm = RMSNorm(dim)
        self.lm_head = nn.Linear(dim, vocab, bias=False)
        inv_freq = 1.0 / (10000 ** (torch.arange(0, head_dim, 2).float() / head_dim))
        freqs = torch.outer(torch.arange(seq).float(), inv_freq)
        emb = torch.cat([freqs, freqs], dim=-1).reshape(1, 1, seq, head_dim)
        self.cos = nn.Parameter(emb.cos(), requires_grad=False)
        self.sin = nn.Parameter(emb.sin(), requires_grad=False)
        mask = torch.full((seq, seq), -1e4).triu(1)
        self.mask = nn.Parameter(mask.reshape(1, 1, seq, seq), requires_grad=False)

    def forward(self, input_ids):
        x = self.tok(input_ids)
        for layer in self.layers:
            x = layer(x, self.cos, self.sin, self.mask)
        return self.lm_head(self.norm(x))


def _ids(seq=128, vocab=30000):
    return (torch.randint(0, vocab, (1, seq), dtype=torch.int64),)


#: name -> (constructor, example inputs)
MODELS = {
    "resnet50": (ResNet50, lambda: (torch.randn(1, 3, 224, 224),)),
    "bert_base": (BertBase, _ids),
    "gpt2_small": (GPT2Small, _ids),
    "vit_b16": (ViTB16, lambda: (torch.randn(1, 3, 224, 224),)),
    "llama_small": (LlamaSmall, _ids),
}


#: Models whose pre-lowering (importer) text is shipped in ``examples/models/highlevel/``.
HIGHLEVEL_MODELS = ("resnet50", "bert_base", "gpt2_small", "llama_small")


# ---------------------------------------------------------------------------------------------
# TVM lowering
# ---------------------------------------------------------------------------------------------


def lowering_passes():
    """static_shape_tuning (no tuning) + default_build_pipeline, up to (not including)
    StaticPlanBlockMemory; see the module docstring."""
    from tvm import relax

    return [
        # static_shape_tuning_pipeline(total_trials=0): its first two passes + zero_pipeline
        relax.transform.DecomposeOpsForInference(),
        relax.transform.CanonicalizeBindings(),
        relax.transform.LegalizeOps(),
        relax.transform.AnnotateTIROpPattern(),
        relax.transform.FoldConstant(),
        relax.transform.FuseOps(),
        relax.transform.FuseTIR(),
        # default_build_pipeline, up to StaticPlanBlockMemory
        relax.backend.DispatchSampling(),
        relax.backend.DispatchSortScan(),
        relax.transform.LegalizeOps(),
        relax.transform.RewriteDataflowReshape(),
        relax.transform.ToNonDataflow(),
        relax.transform.RemovePurityChecking(),
        relax.transform.CallTIRRewrite(),
    ]


def lower(mod):
    import tvm

    target = tvm.target.Target("llvm")
    with target, tvm.transform.PassContext(opt_level=3):
        return tvm.transform.Sequential(lowering_passes())(mod)


def strip_prim_bodies(mod):
    """Signature-only PrimFuncs: body ``T.evaluate(0)``; params, buffer map, attrs kept."""
    import tvm
    from tvm import tirx

    out = tvm.IRModule({}, attrs=mod.attrs) if mod.attrs is not None else tvm.IRModule({})
    for gv, func in mod.functions.items():
        if isinstance(func, tirx.PrimFunc):
            func = func.with_body(tirx.Evaluate(tvm.tirx.const(0, "int32")))
        out[gv] = func
    return out


def strip_ty_args(text: str) -> str:
    """Drop the ``, ty_args=(...)`` TVM 0.27 prints on ``R.builtin.alloc_tensor`` calls.

    TVM's own TVMScript parser rejects that keyword ("alloc_tensor() got an unexpected keyword
    argument 'ty_args'"); the type it carries is the one the op's type inference derives from
    the shape and dtype arguments, so nothing is lost.
    """
    key = ", ty_args=("
    out, pos = [], 0
    while True:
        i = text.find(key, pos)
        if i < 0:
            out.append(text[pos:])
            return "".join(out)
        out.append(text[pos:i])
        depth, j = 1, i + len(key)
        while depth:
            depth += {"(": 1, ")": -1}.get(text[j], 0)
            j += 1
        pos = j


def tvm_plan_summary(mod):
    """Run TVM's StaticPlanBlockMemory; return its storages per Relax function."""
    import tvm
    from tvm import relax

    t0 = time.perf_counter()
    planned = relax.transform.StaticPlanBlockMemory()(mod)
    seconds = time.perf_counter() - t0
    alloc_storage = tvm.ir.Op.get("relax.memory.alloc_storage")
    mem_alloc_tensor = tvm.ir.Op.get("relax.memory.alloc_tensor")
    builtin_alloc = tvm.ir.Op.get("relax.builtin.alloc_tensor")
    functions = {}
    for gv, func in planned.functions.items():
        if not isinstance(func, relax.Function):
            continue
        storages, n_planned, n_unplanned, n_bindings = [], 0, 0, 0
        blocks = func.body.blocks
        for block in blocks:
            for binding in block.bindings:
                n_bindings += 1
                value = binding.value
                if not isinstance(value, relax.Call):
                    continue
                if value.op.same_as(alloc_storage):
                    size = value.args[0].values[0]
                    storages.append(
                        {
                            "name": binding.var.name,
                            "bytes": int(size) if isinstance(size, tvm.tirx.IntImm) else str(size),
                            "scope": str(value.args[2].value),
                            "dtype": str(value.args[3].value),
                        }
                    )
                elif value.op.same_as(mem_alloc_tensor):
                    n_planned += 1
                elif value.op.same_as(builtin_alloc):
                    n_unplanned += 1
        total = sum(s["bytes"] for s in storages if isinstance(s["bytes"], int))
        functions[gv.name_hint] = {
            "n_bindings_after": n_bindings,
            "n_storages": len(storages),
            "n_planned_tensors": n_planned,
            "n_unplanned_allocs": n_unplanned,
            "total_bytes": total,
            "storages": storages,
        }
    return functions, seconds


def count_allocs(mod):
    from tvm import relax
    import tvm

    builtin_alloc = tvm.ir.Op.get("relax.builtin.alloc_tensor")
    out = {}
    for gv, func in mod.functions.items():
        if isinstance(func, relax.Function):
            n_bind = n_alloc = 0
            for block in func.body.blocks:
                for b in block.bindings:
                    n_bind += 1
                    if isinstance(b.value, relax.Call) and b.value.op.same_as(builtin_alloc):
                        n_alloc += 1
            out[gv.name_hint] = {"n_bindings": n_bind, "n_alloc_tensor": n_alloc}
    return out


def vm_check(name: str, lowered, inputs) -> None:
    """Run ``lowered`` (full PrimFunc bodies) on TVM's VM: TVM's own pipeline vs memcore's
    planning in both modes; outputs must agree."""
    import numpy as np
    import tvm
    from tvm import relax

    import memcore_py
    from memcore_py.transform import KillAfterLastUse, LowerAllocTensor, Sequential, StaticPlanBlockMemory

    rng = np.random.default_rng(0)
    args = [t.numpy() for t in inputs]
    for p in lowered["main"].params[len(args):]:
        shape = [int(d) for d in p.ty.shape.values]
        args.append((rng.standard_normal(shape) * 0.05).astype(str(p.ty.dtype)))
    rest = [
        relax.transform.LowerRuntimeBuiltin(),
        relax.transform.ComputePrimValue(),
        relax.transform.VMShapeLower(),
        relax.transform.AttachGlobalSymbol(),
    ]

    def run(mod, passes):
        t0 = time.perf_counter()
        ex = relax.build(mod, target="llvm", relax_pipeline=tvm.transform.Sequential(passes))
        vm = relax.VirtualMachine(ex, tvm.cpu())
        out = vm["main"](*[tvm.runtime.tensor(a) for a in args])
        outs = [out.numpy()] if isinstance(out, tvm.runtime.Tensor) else [o.numpy() for o in out]
        return outs, time.perf_counter() - t0

    tvm_passes = [relax.transform.StaticPlanBlockMemory(), relax.transform.LowerAllocTensor(),
                  relax.transform.KillAfterLastUse()] + rest
    expected, seconds = run(lowered, tvm_passes)
    print(f"  {name}: TVM pipeline ran in {seconds:.1f} s", flush=True)
    ours = memcore_py.parse(lowered.script())
    for mode in ("tvm", "arena"):
        planned = Sequential([StaticPlanBlockMemory(mode=mode), LowerAllocTensor(), KillAfterLastUse()])(ours)
        got, seconds = run(tvm.script.from_source(planned.script()), rest)
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-5)
        print(f"  {name}: memcore {mode} mode: same outputs ({seconds:.1f} s)", flush=True)


def import_model(name: str):
    """``(module, inputs)``: model ``name`` exported with ``torch.export`` and imported by TVM's
    ``from_exported_program(ep, keep_params_as_input=True)``, the ``params`` attribute dropped."""
    from tvm.relax.frontend.torch import from_exported_program

    ctor, make_inputs = MODELS[name]
    model = ctor().eval()
    inputs = make_inputs()
    with torch.no_grad():
        ep = torch.export.export(model, inputs)
    mod = from_exported_program(ep, keep_params_as_input=True)
    main = mod["main"]
    if main.attrs is not None and "params" in main.attrs:
        mod["main"] = main.without_attr("params")
    return mod, inputs


def _write_gz(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    # mtime=0: byte-identical output for identical text.
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as fh:
        fh.write(text.encode())


def build_highlevel(name: str, mod=None) -> str:
    """Write model ``name``'s importer module (before legalization) as TVM prints it to
    ``highlevel/<name>.py.gz``; TVM must read the text back into an equal module."""
    import tvm

    t0 = time.perf_counter()
    if mod is None:
        mod, _ = import_model(name)
    text = mod.script()
    if "metadata[" in text:
        raise RuntimeError(f"{name}: the high-level module references metadata constants")
    tvm.ir.assert_structural_equal(tvm.script.from_source(text), mod)
    _write_gz(os.path.join(HIGHLEVEL_DIR, f"{name}.py.gz"), text)
    n_bindings = sum(len(b.bindings) for b in mod["main"].body.blocks)
    print(f"{name} (high-level): {len(text) / 1e3:.0f} kB text, {n_bindings} bindings "
          f"({time.perf_counter() - t0:.1f} s)", flush=True)
    return text


def build_one(name: str, check_vm: bool = False, highlevel: bool = False) -> dict:
    import tvm

    t0 = time.perf_counter()
    mod, inputs = import_model(name)
    if highlevel and name in HIGHLEVEL_MODELS:
        build_highlevel(name, mod)
    lowered = lower(mod)
    if check_vm:
        vm_check(name, lowered, inputs)
    stripped = strip_prim_bodies(lowered)
    text = strip_ty_args(stripped.script())
    if "metadata[" in text:
        raise RuntimeError(f"{name}: printed module references metadata constants")
    # The text must round-trip through TVM's parser, and TVM must plan the parsed text exactly
    # as it plans the module it printed.
    reparsed = tvm.script.from_source(text)
    functions, tvm_seconds = tvm_plan_summary(reparsed)
    direct, _ = tvm_plan_summary(stripped)
    if json.dumps(direct, sort_keys=True) != json.dumps(functions, sort_keys=True):
        raise RuntimeError(f"{name}: TVM plans the re-parsed text differently from the printed module")
    import_seconds = time.perf_counter() - t0
    counts = count_allocs(reparsed)
    for fname, info in functions.items():
        info.update(counts.get(fname, {}))
    _write_gz(os.path.join(OUT_DIR, f"{name}.py.gz"), text)
    oracle = {
        "model": name,
        "producer": f"tvm {tvm.__version__} relax.transform.StaticPlanBlockMemory",
        "torch": torch.__version__,
        "pipeline": [type(p).__name__ if not hasattr(p, "info") else p.info.name for p in lowering_passes()],
        "tvm_spbm_seconds": tvm_seconds,
        "functions": functions,
    }
    with open(os.path.join(OUT_DIR, f"{name}.tvm.json"), "w") as fh:
        json.dump(oracle, fh, indent=1, sort_keys=True)
        fh.write("\n")
    main_info = functions.get("main", {})
    print(
        f"{name}: {len(text) / 1e3:.0f} kB text, {main_info.get('n_bindings')} bindings, "
        f"{main_info.get('n_alloc_tensor')} alloc_tensor, TVM: {main_info.get('n_storages')} storages "
        f"{main_info.get('total_bytes', 0) / 2**20:.2f} MiB ({import_seconds:.1f} s)",
        flush=True,
    )
    return oracle


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help=f"models to build (default: all of {', '.join(MODELS)})")
    parser.add_argument("--vm-check", action="store_true",
                        help="also run each model on TVM's VM planned by TVM and by memcore (slow)")
    parser.add_argument("--highlevel", action="store_true",
                        help=f"also write the importer's (pre-lowering) text of {', '.join(HIGHLEVEL_MODELS)}")
    parser.add_argument("--highlevel-only", action="store_true",
                        help="write only the importer's (pre-lowering) texts (no lowering, no oracle)")
    args = parser.parse_args(argv)
    unknown = [n for n in args.names if n not in MODELS]
    if unknown:
        parser.error(f"unknown model(s) {unknown}; choose from {list(MODELS)}")
    torch.set_num_threads(1)
    if args.highlevel_only:
        for name in args.names or HIGHLEVEL_MODELS:
            build_highlevel(name)
        return 0
    for name in args.names or MODELS:
        build_one(name, check_vm=args.vm_check, highlevel=args.highlevel)
    return 0


if __name__ == "__main__":
    sys.exit(main())
