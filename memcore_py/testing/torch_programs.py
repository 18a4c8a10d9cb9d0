"""Small plain-PyTorch programs for the ``torch.export`` importer's tests and benchmark.

Design
------
:func:`torch_programs` returns, for each name, a model in eval mode, its example inputs and
its ``dynamic_shapes`` (None for static exports). Together they reach the ATen targets the
importer converts after ``run_decompositions()``: convolutions with bias, batch norm with
buffers, pooling, linear layers, layer norm, embeddings, attention with a causal mask built
from ``arange``/``full``/``triu``, element-wise arithmetic and comparisons, views and
slicing, creation ops, dtype conversions, a buffer mutation, in-place ops (``masked_fill_``,
``fill_``, ``zero_``, ``copy_``, ``relu_``, ``add_``: kept by an export that is not
decomposed), and ``torch.export.Dim``
dimensions with and without an upper bound. The models are built on call (torch is imported
then), with fixed seeds, so importing this module needs no torch.
"""
from __future__ import annotations

__all__ = ["torch_programs", "op_sweep_programs", "export_program"]


def export_program(model, args, dynamic_shapes=None):
    """``torch.export.export(model, args, dynamic_shapes=...)``."""
    import torch

    return torch.export.export(model, args, dynamic_shapes=dynamic_shapes)


def torch_programs() -> dict:
    """name -> (model, example args, dynamic_shapes); see the module docstring."""
    import torch
    import torch.nn.functional as F
    from torch import nn
    from torch.export import Dim

    torch.manual_seed(0)

    class ConvNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3, padding=1)
            self.bn = nn.BatchNorm2d(8)
            self.conv2 = nn.Conv2d(8, 8, 3, stride=2, groups=2, bias=False)
            self.fc = nn.Linear(8, 4)

        def forward(self, x):
            x = F.max_pool2d(F.relu(self.bn(self.conv(x))), 2)
            x = F.avg_pool2d(F.relu6(self.conv2(x)), 2)
            return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))

    class Conv1dNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv1d(4, 6, 3, padding=2, dilation=2)

        def forward(self, x):
            return torch.sigmoid(self.conv(x))

    class Activations(nn.Module):
        def __init__(self):
            super().__init__()
            self.l1 = nn.Linear(8, 16)
            self.l2 = nn.Linear(16, 8)
            self.drop = nn.Dropout(0.1)

        def forward(self, x):
            h = self.drop(F.gelu(self.l1(x)))
            h = F.silu(h) + F.gelu(h, approximate="tanh") - torch.tanh(h)
            h = F.leaky_relu(h, 0.2) * F.hardtanh(h)
            y = self.l2(h.clamp(-2.0, 2.0))
            return F.softmax(y, dim=-1), F.log_softmax(y, dim=1), torch.exp(-y.abs())

    class Arithmetic(nn.Module):
        def forward(self, x, y):
            a = (x + 2.0) * y / 3.0 - 1
            b = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
            c = torch.where(x > y, torch.maximum(x, y), torch.minimum(x, y))
            d = (1.0 - x).sum(dim=0) + y.sum()
            e = (x >= 0.5).to(torch.float32) + (y != 0).float() + torch.sqrt(torch.abs(y))
            return a * b, c, d, e, x.neg().exp()

    class Manipulation(nn.Module):
        def forward(self, x):
            a, b = x.split(4, dim=-1)
            c = torch.cat([b, a, x[:, 1:3, :4]], dim=1)
            d = torch.stack([a, b], dim=0).permute(1, 0, 2, 3)
            e = x.unsqueeze(1).expand(2, 3, 6, 8).reshape(2, 18, 8)
            f = x.transpose(1, 2)[:, :, 0].contiguous()
            g = x.chunk(2, dim=-1)[0].narrow(1, 1, 2).flatten()
            h = x[0:1, 0:6:2, :].repeat(1, 2, 1).squeeze(0)
            return c, d, e, f, g, h, x.view(2, 12, 4)[:, :, None].squeeze(2)

    class Creation(nn.Module):
        def forward(self, x):
            n = x.shape[-1]
            ar = torch.arange(n, dtype=torch.float32) * 0.5
            z = torch.zeros(2, n) + torch.ones(2, n) + torch.full((2, n), 3.0)
            m = torch.tril(torch.ones(n, n)) + torch.ones_like(x).triu(1)[0]
            k = x.new_zeros(2, n) + torch.zeros_like(x) + torch.tensor(2.0)
            i = torch.arange(1, 2 * n, 2) + 1
            return x + ar, z, m, k, i, x.to(torch.int32) // 2, (x * 4).type_as(i)

    class EmbeddingNorm(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(50, 16)
            self.ln = nn.LayerNorm(16)
            self.ln2 = nn.LayerNorm(16, elementwise_affine=False)
            self.out = nn.Linear(16, 50, bias=False)

        def forward(self, ids):
            h = self.ln(self.emb(ids))
            return self.out(self.ln2(h)), h[:, -1], h.select(1, 0)

    class CausalAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(100, 32)
            self.qkv = nn.Linear(32, 96)
            self.proj = nn.Linear(32, 32)

        def forward(self, ids):
            x = self.emb(ids)
            b, s, d = x.shape
            q, k, v = self.qkv(x).reshape(b, s, 3, 4, 8).permute(2, 0, 3, 1, 4)
            mask = torch.full((s, s), -1e4).triu(1)
            att = torch.softmax(q @ k.transpose(-1, -2) * 0.25 + mask, dim=-1)
            keep = torch.arange(s) >= 1
            att = att.masked_fill(~keep[:, None], 0.0)
            out = (att @ v).transpose(1, 2).reshape(b, s, d)
            return self.proj(out), torch.arange(s)

    class BufferMutation(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("count", torch.zeros(4))
            self.register_buffer("scale", torch.linspace(0.5, 2.0, 4))

        def forward(self, x):
            self.count.add_(1.0)
            return x * self.scale + self.count

    class InPlace(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("state", torch.zeros(2, 4))

        def forward(self, x):
            y = x * 2.0
            y.masked_fill_(x > 0.5, 0.0)
            z = x + 1.0
            z.fill_(3.0)
            w = x - 1.0
            w.zero_()
            self.state.copy_(y)
            u = torch.relu_(x * 3.0)
            return y + z + w, self.state * 2.0, u.add_(1.0)

    class DynamicBatch(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(6, 3)

        def forward(self, x):
            return F.relu(self.fc(x)).sum(-1), x.reshape(-1, 2)

    seq = Dim("seq", min=2, max=512)
    programs = {
        "convnet": (ConvNet(), (torch.randn(2, 3, 16, 16),), None),
        "conv1d": (Conv1dNet(), (torch.randn(1, 4, 10),), None),
        "activations": (Activations(), (torch.randn(2, 3, 8),), None),
        "arithmetic": (Arithmetic(), (torch.rand(4, 6), torch.randn(4, 6)), None),
        "manipulation": (Manipulation(), (torch.randn(2, 6, 8),), None),
        "creation": (Creation(), (torch.randn(2, 5),), None),
        "embedding_norm": (EmbeddingNorm(), (torch.randint(0, 50, (2, 7)),), None),
        "causal_attention_dynamic": (CausalAttention(), (torch.randint(0, 100, (1, 16)),), ({1: seq},)),
        "buffer_mutation": (BufferMutation(), (torch.randn(3, 4),), None),
        "inplace": (InPlace(), (torch.rand(2, 4),), None),
        "dynamic_batch_unbounded": (DynamicBatch(), (torch.randn(4, 6),), ({0: Dim("batch", min=2)},)),
    }
    for model, _, _ in programs.values():
        model.eval()
    return programs


def op_sweep_programs() -> dict:
    """name -> (model, example args): one small program per converter family (unary math,
    clamps, comparisons and integer/boolean arithmetic, reductions, convolutions and pooling
    of less common ranks and options, norms without affine weights, linear algebra variants,
    views, slicing and joins, creation ops and dtype conversions), static shapes. Built on
    call with a fixed seed, like :func:`torch_programs`."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    torch.manual_seed(0)

    class Fn(nn.Module):
        def __init__(self, fn, **children):
            super().__init__()
            self.fn = fn
            for k, v in children.items():
                setattr(self, k, v)

        def forward(self, *args):
            return self.fn(self, *args)

    x = torch.rand(2, 3, 4) * 0.8 + 0.1  # in (0, 1): acos, asin, atanh, log are defined
    ints = torch.randint(-5, 5, (3, 4))
    img = torch.randn(1, 2, 6, 6)
    unary = ("abs", "acos", "asin", "asinh", "atan", "atanh", "ceil", "cos", "cosh", "erf", "exp",
             "floor", "log", "neg", "sigmoid", "sign", "sin", "sinh", "sqrt", "square", "tan", "tanh",
             "trunc", "isfinite", "isinf", "isnan", "rsqrt")
    programs = {
        "unary": (Fn(lambda m, x: tuple(getattr(torch, n)(x) for n in unary) + (torch.acosh(x + 1.5),)), (x,)),
        "unary_int": (Fn(lambda m, i: (torch.sqrt(i.abs()), torch.rsqrt(i.abs() + 1), ~i, ~(i > 0), F.selu(i.float()))),
                      (ints,)),
        "clamps": (Fn(lambda m, x, lo: (x.clamp(min=0.2), x.clamp(max=0.7), torch.clamp_min(x, 0.3),
                                        torch.clamp_max(x, 0.6), x.clamp(lo, lo + 0.5),
                                        F.hardtanh(x, -0.5, 0.5), F.leaky_relu(x))), (x, torch.full((4,), 0.25))),
        "relu6": (Fn(lambda m, x: F.relu6(x)), (x,)),
        "compare": (Fn(lambda m, x, y: (x == y, x != 0.5, x < y, x <= 0.5, x > y, x >= y, torch.eq(x, 0.3),
                                        torch.max(x, y), torch.min(x, y), torch.maximum(x, y))), (x, x.flip(-1))),
        "int_arith": (Fn(lambda m, i, j: (i % 3, torch.remainder(i, j.abs() + 1), torch.floor_divide(i, j.abs() + 1),
                                          i & j, i | 1, i ^ j, (i > 0) & (j > 0), (i > 0) | (j < 0), i ** 2, i ** 0,
                                          i + 0.5, i * j.float())),
                      (ints, ints.flip(0))),
        "float_arith": (Fn(lambda m, x, y: (1.0 - x, 2.0 ** x, x ** y, torch.pow(x, 0.5), torch.rsub(x, y),
                                            x / y, 3 / x, x - y * 2, torch.div(x, y, rounding_mode="trunc"))),
                        (x, x + 0.5)),
        "reductions": (Fn(lambda m, x, i: (x.mean(), x.sum(), x.max(), x.min(), x.mean(dim=(0, 2)),
                                           x.sum(-1, keepdim=True), i.sum(), (i > 0).sum(1),
                                           x.sum(dtype=torch.float64))),
                       (x, ints)),
        "conv_pool": (Fn(lambda m, img, vol: (m.c3(vol), m.c2s(img), F.max_pool2d(img[0], 2),
                                              F.avg_pool2d(img[0], 3, 1, 1), F.adaptive_avg_pool2d(img, (2, 3)),
                                              F.avg_pool2d(img, 2, ceil_mode=True, count_include_pad=False),
                                              F.max_pool2d(img, 3, 2, 1, ceil_mode=True), m.c1(img[0]))),
                      (img, torch.randn(1, 2, 4, 4, 4))) ,
        "norms": (Fn(lambda m, img, seq: (m.bn(img), m.ln(seq), F.layer_norm(seq, (3, 4)))), (img, x)),
        "linear_algebra": (Fn(lambda m, x, w, b: (m.lin(x), torch.addmm(b, x[0], w, beta=0.5, alpha=2.0),
                                                  torch.addmm(b, x[0], w, beta=0.0), x @ w, x[0] @ w,
                                                  torch.bmm(x, w.expand(2, 4, 5)), torch.mm(x[1], w))),
                           (x, torch.randn(4, 5), torch.randn(5))),
        "views": (Fn(lambda m, x: (x.expand(3, 2, 3, 4), x[:, :1].expand(-1, 3, -1), x[:1].expand_as(x),
                                   x.flatten(0, 1), x.permute(2, 0, 1), x.transpose(-1, -2), x.unsqueeze(-1),
                                   x[:, :1].squeeze(), x[:, :1].squeeze(1), x.view(-1), x.reshape(4, -1),
                                   x.reshape(2, 3, 4))), (x,)),
        "slicing": (Fn(lambda m, x, idx: (x[:, -1], x[..., 1:4:2], x[:, -2:], x.narrow(2, 1, 2),
                                          x.select(-1, 2), torch.index_select(x, 2, idx), x[:, 1:2, 1:3],
                                          m.emb(idx))),
                    (x, torch.tensor([0, 3, 1])), ),
        "joins": (Fn(lambda m, x: (torch.cat([x, x], -1), torch.stack([x, x], 1), x.split([1, 3], -1),
                                   x.chunk(3, 2), x.unbind(1), x[:1].unbind(0), x.repeat(1, 2, 1),
                                   torch.tile(x, (2,)), x.split(3, dim=-1))), (x,)),
        "creation": (Fn(lambda m, x, i: (torch.zeros(2, 3, dtype=torch.int32), torch.ones(3, dtype=torch.float16),
                                         torch.empty(2, 2).fill_(1.0) * 0, torch.empty_like(x) * 0,
                                         torch.full_like(x, 7, dtype=torch.int64), torch.full_like(i, 2),
                                         x.new_ones(2, 2), x.new_zeros((3,)), torch.arange(0.0, 2.0, 0.5),
                                         torch.arange(2, 11, 3, dtype=torch.float32), torch.ones_like(i),
                                         torch.zeros_like(x, dtype=torch.bool), torch.full((2,), True),
                                         torch.full((2, 2), 3), i.masked_fill(i > 0, 1),
                                         torch.where(x > 0.5, x, torch.zeros_like(x)))), (x, ints)),
        "dtypes": (Fn(lambda m, x, i: (x.to(torch.float16), x.double(), i.to(torch.int8), x.int(), i.type_as(x),
                                       x.to(dtype=torch.int64) + i[0, 0], x.half().float(), i.bool())), (x, ints)),
    }
    programs["conv_pool"][0].c3 = nn.Conv3d(2, 3, 3, padding=1)
    programs["conv_pool"][0].c2s = nn.Conv2d(2, 4, (3, 1), stride=(2, 1), padding=(1, 0), dilation=(1, 2), bias=False)
    programs["conv_pool"][0].c1 = nn.Conv1d(6, 2, 3, bias=False)
    programs["norms"][0].bn = nn.BatchNorm2d(2, affine=False)
    programs["norms"][0].ln = nn.LayerNorm(4, bias=False)
    programs["linear_algebra"][0].lin = nn.Linear(4, 3, bias=False)
    programs["slicing"][0].emb = nn.Embedding(5, 3)
    for model, _ in programs.values():
        model.eval()
    return programs
