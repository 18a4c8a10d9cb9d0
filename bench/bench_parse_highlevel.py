"""High-level TVMScript text: memcore's parser and printer on the real models as TVM 0.27's
torch importer prints them (before legalization: ``R.nn.conv2d``, ``R.matmul``,
``R.nn.layer_norm`` ... with every attribute), against Apache TVM's own parser
(``tvm.script.from_source``) and printer (``script()``) on the same text in the same run.

Workloads: ``memcore_py.examples.models.highlevel`` (ResNet-50, BERT-base, GPT-2, the
Llama-style decoder), and a 10k-binding text made of the BERT body repeated 16 times (its
dataflow block's bindings renamed per copy) to show the per-binding rate on a large
function; TVM's parser is measured on the four models only (it needs ~4 s for two copies
and slows down with size).

Every benchmark records ``n_bindings``, ``bindings_per_s`` (fastest round, or the single run
under ``--benchmark-disable``), ``best_seconds`` and ``text_bytes`` in ``extra_info``; the
memcore print benchmarks check the text is TVM's byte for byte.

Run: ``pytest bench/bench_parse_highlevel.py --benchmark-only`` (results: bench/README.md,
"IR text", high-level rows).
"""
import re

import pytest
from _passes_common import tvm_or_none as _tvm
from bench_ir_text import _record, _timed

from memcore_py import parse
from memcore_py.examples.models import highlevel_model_text, list_highlevel_models
from _helpers import tvm_from_source

MODELS = list_highlevel_models()
_BINDING = re.compile(r"^\s+[A-Za-z_]\w*(?::| =)", re.M)


def _n_bindings(text):
    return len(_BINDING.findall(text))


def _repeated_bert(copies: int) -> str:
    """BERT's main function with its dataflow body repeated ``copies`` times (copy ``k``'s
    vars renamed ``<name>_k``; each copy reads the function parameters; the output is the
    last copy's)."""
    text = highlevel_model_text("bert_base")
    head, rest = text.split("        with R.dataflow():\n", 1)
    body, tail = rest.split("            R.output(gv)\n", 1)
    lines = body.splitlines(keepends=True)
    names = sorted({m.group(1) for ln in lines for m in [re.match(r"\s+(lv\d*|gv\d*):", ln)] if m}, key=len,
                   reverse=True)
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, names)) + r")\b")
    out = [head, "        with R.dataflow():\n"]
    for k in range(copies):
        suffix = "" if k == copies - 1 else f"_{k}"
        out.append(pattern.sub(lambda m, suffix=suffix: m.group(1) + suffix, body))
    out.append("            R.output(gv)\n")
    out.append(tail)
    return "".join(out)


_CACHE = {}


def workload(name):
    """(text, n_bindings) of a workload, built once."""
    if name not in _CACHE:
        text = _repeated_bert(16) if name == "bert_x16" else highlevel_model_text(name)
        _CACHE[name] = (text, _n_bindings(text))
    return _CACHE[name]


WORKLOADS = MODELS + ["bert_x16"]


@pytest.mark.benchmark(group="ir-text-highlevel-parse")
@pytest.mark.parametrize("name", WORKLOADS)
def test_memcore_parse(benchmark, name):
    text, nb = workload(name)
    times = []
    mod = benchmark.pedantic(_timed(parse, times), args=(text,), rounds=5, iterations=1)
    assert sum(len(b.bindings) for b in mod["main"].body.blocks) == nb
    _CACHE[("memcore", name)] = mod
    _record(benchmark, nb, times, text)


@pytest.mark.benchmark(group="ir-text-highlevel-print")
@pytest.mark.parametrize("name", WORKLOADS)
def test_memcore_print(benchmark, name):
    text, nb = workload(name)
    mod = _CACHE.get(("memcore", name)) or parse(text)
    times = []
    out = benchmark.pedantic(_timed(mod.script, times), rounds=5, iterations=1)
    assert out.rstrip("\n") == text.rstrip("\n")
    _record(benchmark, nb, times, out)


@pytest.mark.benchmark(group="ir-text-highlevel-parse")
@pytest.mark.parametrize("name", MODELS)
def test_tvm_parse(benchmark, name):
    tvm = _tvm()
    if tvm is None:
        pytest.skip("apache-tvm not installed")
    text, nb = workload(name)
    times = []
    out = benchmark.pedantic(_timed(tvm.script.from_source, times), args=(text,), rounds=3, iterations=1)
    _CACHE[("tvm", name)] = out
    _record(benchmark, nb, times, text)


@pytest.mark.benchmark(group="ir-text-highlevel-print")
@pytest.mark.parametrize("name", MODELS)
def test_tvm_print(benchmark, name):
    tvm = _tvm()
    if tvm is None:
        pytest.skip("apache-tvm not installed")
    text, nb = workload(name)
    mod = _CACHE.get(("tvm", name)) or tvm_from_source(text)
    times = []
    out = benchmark.pedantic(_timed(mod.script, times), rounds=3, iterations=1)
    _record(benchmark, nb, times, out)
