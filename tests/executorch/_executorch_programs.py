"""Programs the ExecuTorch tests export and lower, and independent checks of a lowered plan.

Built with torch only when called. The checks below read the TensorSpecs of a lowered
program's graphs and are written separately from memcore_py.executorch: plain Python,
pairwise, no memcore code.
"""
from __future__ import annotations

#: memcore_py.testing.torch_models entries lowered by the program tests.
TORCH_MODEL_NAMES = ("resnet18", "resnet50", "mobilenet_v2", "vit", "bert", "gpt2", "llama", "lstm")
#: Programs defined here.
EXTRA_NAMES = ("kv_cache", "multi_output", "cond")


def _extra_models():
    import torch
    from torch import nn

    class KVCache(nn.Module):
        """A cache buffer written in place at the given position, then attended over."""

        def __init__(self):
            super().__init__()
            self.register_buffer("k", torch.zeros(1, 8, 16))
            self.proj = nn.Linear(16, 16)

        def forward(self, x, pos):
            self.k.index_copy_(1, pos, self.proj(x))
            att = torch.softmax(x @ self.k.transpose(1, 2), -1)
            return att @ self.k

    class MultiOutput(nn.Module):
        """An encoder returning several intermediate results of different sizes."""

        def __init__(self):
            super().__init__()
            self.a, self.b, self.c = nn.Linear(16, 64), nn.Linear(64, 32), nn.Linear(32, 8)

        def forward(self, x):
            h1 = torch.relu(self.a(x))
            h2 = torch.tanh(self.b(h1))
            h3 = self.c(h2) + h2[..., :8]
            return h3, h1 * 2, h2.sum(-1)

    class Cond(nn.Module):
        """A torch.cond with one branch bigger than the other."""

        def forward(self, x):
            def big(x):
                return (x.sin() * 2 + 1).cos() @ x

            def small(x):
                return x.cos() - x

            y = torch.cond(x.sum() > 0, big, small, (x,))
            return y * 2 + x

    torch.manual_seed(0)
    return {
        "kv_cache": (KVCache(), (torch.randn(1, 1, 16), torch.tensor([3]))),
        "multi_output": (MultiOutput(), (torch.randn(4, 16),)),
        "cond": (Cond(), (torch.randn(8, 8),)),
    }


def build_program(name):
    """``(model, args)`` of a program name; parameters frozen (ExecuTorch lowers inference)."""
    if name in TORCH_MODEL_NAMES:
        from memcore_py.testing.torch_models import torch_model

        model, args, _ = torch_model(name)
    else:
        model, args = _extra_models()[name]
    model.eval().requires_grad_(False)
    return model, args


def planned_specs(graph_module):
    """The distinct planned TensorSpecs of one graph (not its submodules), in node order.

    A view spec (ExecuTorch's ``_ViewSpec``, made after planning for ``memory.view`` nodes)
    reads its lifetime and placement from its base: it is the base's storage, counted once.
    """
    seen, specs = set(), []
    stack = []
    for node in graph_module.graph.nodes:
        stack.append(node.meta.get("spec"))
        while stack:
            item = stack.pop()
            if isinstance(item, (list, tuple)):
                stack.extend(item)
            elif item is not None and hasattr(item, "mem_offset"):
                while type(item).__name__ == "_ViewSpec":
                    item = item._base
                if item.mem_offset is None or getattr(item, "const", False) or id(item) in seen:
                    continue
                seen.add(id(item))
                specs.append(item)
    return specs


def _chain(spec):
    out = []
    while spec is not None:
        out.append(spec)
        spec = spec.storage_base
    return out


def overlapping_pairs(specs):
    """Pairs of specs live at a common step whose bytes intersect (a spec and a spec in its
    storage_base chain excepted: that sharing is the point of the alias)."""
    bad = []
    for i, a in enumerate(specs):
        for b in specs[i + 1:]:
            if a.mem_id != b.mem_id or a.allocated_memory == 0 or b.allocated_memory == 0:
                continue
            if a.lifetime[1] < b.lifetime[0] or b.lifetime[1] < a.lifetime[0]:
                continue
            if a.mem_offset + a.allocated_memory <= b.mem_offset or b.mem_offset + b.allocated_memory <= a.mem_offset:
                continue
            if any(x is b for x in _chain(a)) or any(x is a for x in _chain(b)):
                continue
            bad.append((a, b))
    return bad


def max_live_by_mem_id(specs):
    """Max over steps of the bytes of storage-owning specs live at once, per mem_id."""
    best = {}
    owners = [s for s in specs if s.storage_base is None]
    for s in owners:
        t = s.lifetime[0]
        live = sum(o.allocated_memory for o in owners if o.mem_id == s.mem_id and o.lifetime[0] <= t <= o.lifetime[1])
        best[s.mem_id] = max(best.get(s.mem_id, 0), live)
    return best


def submodule_reservations(graph_module):
    """Per mem_id, the largest buffer size any direct control-flow submodule planned."""
    reserved = {}
    for _, child in graph_module.named_children():
        for mem_id, size in enumerate(getattr(child, "meta", {}).get("non_const_buffer_sizes") or []):
            reserved[mem_id] = max(reserved.get(mem_id, 0), size)
    return reserved


def prefill_decode_program():
    """``({"prefill": ExportedProgram, "decode": ExportedProgram}, calls)``: two methods of
    one decoder sharing a cache buffer (written in place by both), and the method calls to
    run in order as ``(method, args)``."""
    import torch
    from torch import nn

    class Decoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("cache", torch.zeros(1, 8, 16))
            self.proj = nn.Linear(16, 16)

        def prefill(self, x):
            h = self.proj(x)
            self.cache[:, : x.shape[1]].copy_(h)
            return torch.softmax(h @ self.cache.transpose(1, 2), -1) @ self.cache

        def decode(self, x, pos):
            h = self.proj(x)
            self.cache.index_copy_(1, pos, h)
            return torch.softmax(h @ self.cache.transpose(1, 2), -1) @ self.cache

    class Method(nn.Module):
        def __init__(self, owner, name):
            super().__init__()
            self.owner, self.name = owner, name

        def forward(self, *args):
            return getattr(self.owner, self.name)(*args)

    torch.manual_seed(0)
    decoder = Decoder().eval().requires_grad_(False)
    prompt, token = torch.randn(1, 4, 16), torch.randn(1, 1, 16)
    programs = {
        "prefill": torch.export.export(Method(decoder, "prefill"), (prompt,)),
        "decode": torch.export.export(Method(decoder, "decode"), (token, torch.tensor([4]))),
    }
    calls = [("prefill", (prompt,)), ("decode", (token, torch.tensor([4]))),
             ("decode", (token * 2, torch.tensor([5])))]
    return programs, calls
