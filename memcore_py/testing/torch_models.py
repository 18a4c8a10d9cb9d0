"""Small plain-PyTorch versions of common model families, for import and planning tests.

Design
------
torchvision, timm and transformers are not dependencies, so the families are written with
``torch.nn`` only, random weights and reduced sizes (a CI run imports and plans all of them
in seconds), keeping the structure that decides memory planning: which ops run, in which
order, with which shapes.

- ``resnet18`` / ``resnet50``: basic and bottleneck residual blocks with ``nn.BatchNorm2d``
  (running statistics as buffers), max pooling, global average pooling, a classifier
  (ResNet-18's 2-2-2-2 blocks; the bottleneck model has 1-2-2-1 blocks instead of
  ResNet-50's 3-4-6-3, same block kinds and downsampling);
- ``mobilenet_v2``: inverted residual blocks (1x1 expansion, 3x3 depthwise convolution,
  linear 1x1 projection) with ``nn.ReLU6``;
- ``vit``: patch embedding by a strided convolution, a class token, position embeddings,
  pre-norm encoder blocks;
- ``bert`` (post-norm encoder), ``gpt2`` (pre-norm decoder with a causal mask) and
  ``llama`` (RMSNorm, rotary embeddings, grouped key/value heads, SwiGLU MLP): the block
  structure of tools/make_models.py. Their position tables (BERT's position embeddings,
  the causal masks, Llama's rotary cos/sin) have ``max_seq`` rows and are sliced to the
  input's sequence length (GPT-2 looks its positions up by ``arange``). The ``*_dynamic``
  entries export a ``torch.export.Dim`` sequence length (at most ``max_seq / 2``) and
  compute positions from it instead (``index_select`` of ``arange(s)``, a causal mask made
  by ``full``/``triu``, rotary angles ``outer(arange(s), inv_freq)``), as current
  transformers code does; ``llama_sliced_dynamic`` keeps the sliced tables (TVM's importer
  gives the slice the extent ``T.min(s, 64)``, which its broadcasts cannot match with
  ``s``, so what follows has no shape and TVM's LegalizeOps cannot lower it);
- ``lstm``: a two-layer ``nn.LSTM`` (the export unrolls it over the time steps).

:func:`torch_model` builds one entry: ``(model in eval mode, example args,
dynamic_shapes or None)``. torch is imported on call, so importing this module needs no
torch; seeds are fixed.
"""
from __future__ import annotations

from ..errors import MemcoreError

__all__ = ["TORCH_MODELS", "torch_model"]

#: Entry names: static exports, then the dynamic-sequence ones (``Dim("seq", min=2, max=...)``).
TORCH_MODELS = ("resnet18", "resnet50", "mobilenet_v2", "vit", "bert", "gpt2", "llama", "lstm",
                "bert_dynamic", "gpt2_dynamic", "llama_dynamic", "llama_sliced_dynamic")

_MAX_SEQ = 64
_SEQ = 16


def torch_model(name: str):
    """``(model, example args, dynamic_shapes)`` of the entry ``name`` (:data:`TORCH_MODELS`).

    Raises
    ------
    MemcoreError
        ``name`` is not an entry.
    """
    if name not in TORCH_MODELS:
        raise MemcoreError(f"unknown torch model {name!r}; the models are {', '.join(TORCH_MODELS)}")
    import torch

    torch.manual_seed(0)
    blocks = _blocks()
    base, dynamic = (name[: -len("_dynamic")], True) if name.endswith("_dynamic") else (name, False)
    computed = dynamic and not base.endswith("_sliced")
    model, args = _BUILDERS[base.replace("_sliced", "")](torch, blocks, computed)
    shapes = None
    if dynamic:
        from torch.export import Dim

        shapes = ({1: Dim("seq", min=2, max=_MAX_SEQ // 2)},)
    return model.eval(), args, shapes


def _blocks():
    """The nn.Module classes, defined once torch is imported."""
    import math

    import torch
    import torch.nn.functional as F
    from torch import nn

    class Basic(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.c1, self.b1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout)
            self.c2, self.b2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout)
            self.down = None
            if stride != 1 or cin != cout:
                self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            skip = x if self.down is None else self.down(x)
            return F.relu(self.b2(self.c2(F.relu(self.b1(self.c1(x))))) + skip)

    class Bottleneck(nn.Module):
        def __init__(self, cin, width, stride):
            super().__init__()
            cout = width * 4
            self.c1, self.b1 = nn.Conv2d(cin, width, 1, bias=False), nn.BatchNorm2d(width)
            self.c2, self.b2 = nn.Conv2d(width, width, 3, stride, 1, bias=False), nn.BatchNorm2d(width)
            self.c3, self.b3 = nn.Conv2d(width, cout, 1, bias=False), nn.BatchNorm2d(cout)
            self.down = None
            if stride != 1 or cin != cout:
                self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            skip = x if self.down is None else self.down(x)
            out = F.relu(self.b1(self.c1(x)))
            out = F.relu(self.b2(self.c2(out)))
            return F.relu(self.b3(self.c3(out)) + skip)

    class ResNet(nn.Module):
        def __init__(self, block, depths, widths, expansion, classes=10):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, widths[0], 7, 2, 3, bias=False), nn.BatchNorm2d(widths[0]),
                                      nn.ReLU(), nn.MaxPool2d(3, 2, 1))
            layers, cin = [], widths[0]
            for i, (depth, width) in enumerate(zip(depths, widths)):
                for j in range(depth):
                    layers.append(block(cin, width, 2 if i > 0 and j == 0 else 1))
                    cin = width * expansion
            self.layers = nn.Sequential(*layers)
            self.fc = nn.Linear(cin, classes)

        def forward(self, x):
            return self.fc(torch.flatten(F.adaptive_avg_pool2d(self.layers(self.stem(x)), 1), 1))

    class InvertedResidual(nn.Module):
        def __init__(self, cin, cout, stride, expand):
            super().__init__()
            hidden = cin * expand
            layers = []
            if expand != 1:
                layers += [nn.Conv2d(cin, hidden, 1, bias=False), nn.BatchNorm2d(hidden), nn.ReLU6()]
            layers += [nn.Conv2d(hidden, hidden, 3, stride, 1, groups=hidden, bias=False), nn.BatchNorm2d(hidden),
                       nn.ReLU6(), nn.Conv2d(hidden, cout, 1, bias=False), nn.BatchNorm2d(cout)]
            self.conv = nn.Sequential(*layers)
            self.residual = stride == 1 and cin == cout

        def forward(self, x):
            return x + self.conv(x) if self.residual else self.conv(x)

    class MobileNetV2(nn.Module):
        #: (expansion, channels, repeats, stride), MobileNetV2's table with fewer channels and repeats
        SETTINGS = ((1, 8, 1, 1), (6, 12, 2, 2), (6, 16, 2, 2), (6, 32, 1, 2))

        def __init__(self, classes=10):
            super().__init__()
            layers = [nn.Conv2d(3, 8, 3, 2, 1, bias=False), nn.BatchNorm2d(8), nn.ReLU6()]
            cin = 8
            for t, c, n, s in self.SETTINGS:
                for i in range(n):
                    layers.append(InvertedResidual(cin, c, s if i == 0 else 1, t))
                    cin = c
            layers += [nn.Conv2d(cin, 64, 1, bias=False), nn.BatchNorm2d(64), nn.ReLU6()]
            self.features = nn.Sequential(*layers)
            self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(64, classes))

        def forward(self, x):
            return self.classifier(torch.flatten(F.adaptive_avg_pool2d(self.features(x), 1), 1))

    class Attention(nn.Module):
        def __init__(self, dim, heads, kv_heads=None, bias=True):
            super().__init__()
            self.heads, self.kv, self.hd = heads, kv_heads or heads, dim // heads
            self.q = nn.Linear(dim, dim, bias=bias)
            self.k = nn.Linear(dim, self.kv * self.hd, bias=bias)
            self.v = nn.Linear(dim, self.kv * self.hd, bias=bias)
            self.o = nn.Linear(dim, dim, bias=bias)

        def split(self, t, heads):
            b, s, _ = t.shape
            return t.reshape(b, s, heads, self.hd).transpose(1, 2)

        def forward(self, x, mask=None, rotary=None):
            b, s, d = x.shape
            q, k, v = self.split(self.q(x), self.heads), self.split(self.k(x), self.kv), self.split(self.v(x), self.kv)
            if rotary is not None:
                q, k = rotary(q), rotary(k)
            if self.kv != self.heads:
                k = k.repeat_interleave(self.heads // self.kv, dim=1)
                v = v.repeat_interleave(self.heads // self.kv, dim=1)
            scores = torch.matmul(q, k.transpose(-1, -2)) * (1.0 / math.sqrt(self.hd))
            if mask is not None:
                scores = scores + mask
            out = torch.matmul(torch.softmax(scores, dim=-1), v)
            return self.o(out.transpose(1, 2).reshape(b, s, d))

    class PostNorm(nn.Module):
        def __init__(self, dim, heads, ffn):
            super().__init__()
            self.attn, self.ln1, self.ln2 = (
                Attention(dim, heads),
                nn.LayerNorm(dim, eps=1e-12),
                nn.LayerNorm(dim, eps=1e-12),
            )
            self.fc1, self.fc2 = nn.Linear(dim, ffn), nn.Linear(ffn, dim)

        def forward(self, x):
            x = self.ln1(x + self.attn(x))
            return self.ln2(x + self.fc2(F.gelu(self.fc1(x))))

    class PreNorm(nn.Module):
        def __init__(self, dim, heads, ffn, approximate="none"):
            super().__init__()
            self.attn, self.ln1, self.ln2 = Attention(dim, heads), nn.LayerNorm(dim), nn.LayerNorm(dim)
            self.fc1, self.fc2 = nn.Linear(dim, ffn), nn.Linear(ffn, dim)
            self.approximate = approximate

        def forward(self, x, mask=None):
            x = x + self.attn(self.ln1(x), mask)
            return x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate=self.approximate))

    class ViT(nn.Module):
        def __init__(self, image=32, patch=8, dim=32, layers=2, heads=4, classes=10):
            super().__init__()
            self.patch = nn.Conv2d(3, dim, patch, patch)
            self.cls = nn.Parameter(torch.randn(1, 1, dim) * 0.02)
            self.pos = nn.Parameter(torch.randn(1, (image // patch) ** 2 + 1, dim) * 0.02)
            self.blocks = nn.ModuleList(PreNorm(dim, heads, 4 * dim) for _ in range(layers))
            self.ln = nn.LayerNorm(dim, eps=1e-6)
            self.head = nn.Linear(dim, classes)

        def forward(self, img):
            x = self.patch(img).flatten(2).transpose(1, 2)
            x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos
            for blk in self.blocks:
                x = blk(x)
            return self.head(self.ln(x)[:, 0])

    class Bert(nn.Module):
        def __init__(self, vocab=100, dim=32, layers=2, heads=4, ffn=64, computed=False):
            super().__init__()
            self.computed = computed
            self.tok = nn.Embedding(vocab, dim)
            self.pos = nn.Parameter(torch.randn(1, _MAX_SEQ, dim) * 0.02)
            self.ln = nn.LayerNorm(dim, eps=1e-12)
            self.blocks = nn.ModuleList(PostNorm(dim, heads, ffn) for _ in range(layers))
            self.pool = nn.Linear(dim, dim)

        def forward(self, ids):
            s = ids.shape[1]
            pos = self.pos[0].index_select(0, torch.arange(s)) if self.computed else self.pos[:, :s]
            x = self.ln(self.tok(ids) + pos)
            for blk in self.blocks:
                x = blk(x)
            return x, torch.tanh(self.pool(x[:, 0]))

    def causal_mask(s):
        return torch.full((s, s), -1e4).triu(1)

    class GPT2(nn.Module):
        def __init__(self, vocab=100, dim=32, layers=2, heads=4, computed=False):
            super().__init__()
            self.computed = computed
            self.tok = nn.Embedding(vocab, dim)
            self.pos = nn.Embedding(_MAX_SEQ, dim)
            self.mask = nn.Parameter(torch.full((_MAX_SEQ, _MAX_SEQ), -1e4).triu(1), requires_grad=False)
            self.blocks = nn.ModuleList(PreNorm(dim, heads, 4 * dim, "tanh") for _ in range(layers))
            self.ln_f = nn.LayerNorm(dim)
            self.lm_head = nn.Linear(dim, vocab, bias=False)

        def forward(self, ids):
            s = ids.shape[1]
            x = self.tok(ids) + self.pos(torch.arange(s))
            mask = causal_mask(s) if self.computed else self.mask[:s, :s]
            for blk in self.blocks:
                x = blk(x, mask)
            return self.lm_head(self.ln_f(x))

    class RMSNorm(nn.Module):
        def __init__(self, dim, eps=1e-6):
            super().__init__()
            self.weight, self.eps = nn.Parameter(torch.ones(dim)), eps

        def forward(self, x):
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight

    class Rotary:
        def __init__(self, cos, sin):
            self.cos, self.sin = cos, sin

        def __call__(self, t):
            t1, t2 = t.chunk(2, dim=-1)
            return t * self.cos + torch.cat([-t2, t1], dim=-1) * self.sin

    class LlamaBlock(nn.Module):
        def __init__(self, dim, heads, kv_heads, ffn):
            super().__init__()
            self.n1, self.n2 = RMSNorm(dim), RMSNorm(dim)
            self.attn = Attention(dim, heads, kv_heads, bias=False)
            self.gate, self.up = nn.Linear(dim, ffn, bias=False), nn.Linear(dim, ffn, bias=False)
            self.down = nn.Linear(ffn, dim, bias=False)

        def forward(self, x, mask, rotary):
            x = x + self.attn(self.n1(x), mask, rotary)
            h = self.n2(x)
            return x + self.down(F.silu(self.gate(h)) * self.up(h))

    class Llama(nn.Module):
        def __init__(self, vocab=100, dim=32, layers=2, heads=4, kv_heads=2, ffn=48, computed=False):
            super().__init__()
            self.computed = computed
            hd = dim // heads
            self.tok = nn.Embedding(vocab, dim)
            self.blocks = nn.ModuleList(LlamaBlock(dim, heads, kv_heads, ffn) for _ in range(layers))
            self.norm = RMSNorm(dim)
            self.lm_head = nn.Linear(dim, vocab, bias=False)
            inv = 1.0 / (10000 ** (torch.arange(0, hd, 2).float() / hd))
            self.register_buffer("inv_freq", inv)
            freqs = torch.outer(torch.arange(_MAX_SEQ).float(), inv)
            emb = torch.cat([freqs, freqs], dim=-1)
            self.cos = nn.Parameter(emb.cos(), requires_grad=False)
            self.sin = nn.Parameter(emb.sin(), requires_grad=False)
            self.mask = nn.Parameter(torch.full((_MAX_SEQ, _MAX_SEQ), -1e4).triu(1), requires_grad=False)

        def forward(self, ids):
            s = ids.shape[1]
            if self.computed:
                freqs = torch.outer(torch.arange(s).float(), self.inv_freq)
                emb = torch.cat([freqs, freqs], dim=-1)
                rotary, mask = Rotary(emb.cos(), emb.sin()), causal_mask(s)
            else:
                rotary, mask = Rotary(self.cos[:s], self.sin[:s]), self.mask[:s, :s]
            x = self.tok(ids)
            for blk in self.blocks:
                x = blk(x, mask, rotary)
            return self.lm_head(self.norm(x))

    class LSTM(nn.Module):
        def __init__(self, features=8, hidden=16, classes=4):
            super().__init__()
            self.lstm = nn.LSTM(features, hidden, num_layers=2, batch_first=True)
            self.fc = nn.Linear(hidden, classes)

        def forward(self, x):
            out, _ = self.lstm(x)
            return self.fc(out[:, -1])

    classes = dict(locals())
    return {k: v for k, v in classes.items() if isinstance(v, type)}


def _ids(torch):
    return (torch.randint(0, 100, (1, _SEQ), dtype=torch.int64),)


_BUILDERS = {
    "resnet18": lambda torch, b, c: (b["ResNet"](b["Basic"], (2, 2, 2, 2), (8, 16, 32, 64), 1),
                                  (torch.randn(1, 3, 32, 32),)),
    "resnet50": lambda torch, b, c: (b["ResNet"](b["Bottleneck"], (1, 2, 2, 1), (4, 8, 16, 32), 4),
                                  (torch.randn(1, 3, 32, 32),)),
    "mobilenet_v2": lambda torch, b, c: (b["MobileNetV2"](), (torch.randn(1, 3, 32, 32),)),
    "vit": lambda torch, b, c: (b["ViT"](), (torch.randn(1, 3, 32, 32),)),
    "bert": lambda torch, b, c: (b["Bert"](computed=c), _ids(torch)),
    "gpt2": lambda torch, b, c: (b["GPT2"](computed=c), _ids(torch)),
    "llama": lambda torch, b, c: (b["Llama"](computed=c), _ids(torch)),
    "lstm": lambda torch, b, c: (b["LSTM"](), (torch.randn(2, 6, 8),)),
}
