"""Real models lowered by Apache TVM's own pipeline, shipped as TVMScript text.

Each model ``<name>`` is two files in this folder:

``<name>.py.gz``
    The module StaticPlanBlockMemory receives in a real TVM 0.27 CPU compile (fused
    kernels, ``R.builtin.alloc_tensor`` outputs after ``CallTIRRewrite``), printed by TVM.
    PrimFunc bodies are replaced by ``T.evaluate(0)``; the Relax functions are exactly TVM's.
``<name>.tvm.json``
    TVM's own StaticPlanBlockMemory result on that module (bytes of every storage per
    function, counts, time): the oracle tests and benchmarks compare against.

``highlevel/<name>.py.gz``
    The same model's module exactly as TVM 0.27's torch importer prints it, *before* any
    lowering (``from_exported_program(ep, keep_params_as_input=True)``: ``R.nn.conv2d``,
    ``R.matmul``, ``R.nn.layer_norm`` ..., weights as parameters, ``num_input`` kept, the
    ``params`` attribute dropped), for ResNet-50, BERT-base, GPT-2 and the Llama-style
    decoder: the input of the high-level passes (DataflowUseInplaceCalls, LegalizeOps).

``tools/make_models.py`` (needs torch and tvm) rebuilds them and documents the pipeline
(``--highlevel-only`` rebuilds the high-level texts alone).
Its ``--vm-check`` runs the models with their real PrimFunc bodies on TVM's VM (llvm, random
weights): planned by memcore in TVM mode and in arena mode, all five give TVM's own
pipeline's outputs.

Examples
--------
>>> from memcore_py.examples.models import list_models, load_model
>>> list_models()  # doctest: +SKIP
['bert_base', 'gpt2_small', 'llama_small', 'resnet50', 'vit_b16']
>>> mod = load_model("resnet50")  # doctest: +SKIP
>>> list_highlevel_models()  # doctest: +SKIP
['bert_base', 'gpt2_small', 'llama_small', 'resnet50']
>>> hl = load_highlevel_model("bert_base")  # doctest: +SKIP
"""
from __future__ import annotations

import gzip
import json
import os

__all__ = [
    "list_models", "model_text", "load_model", "tvm_oracle",
    "list_highlevel_models", "highlevel_model_text", "load_highlevel_model",
]

_DIR = os.path.dirname(os.path.abspath(__file__))
_HIGHLEVEL_DIR = os.path.join(_DIR, "highlevel")
_TEXT_SUFFIX = ".py.gz"
_ORACLE_SUFFIX = ".tvm.json"


def list_models() -> list[str]:
    """Names of the shipped real models, sorted."""
    return sorted(f[: -len(_TEXT_SUFFIX)] for f in os.listdir(_DIR) if f.endswith(_TEXT_SUFFIX))


def _path(name: str, suffix: str) -> str:
    if not isinstance(name, str) or name not in list_models():
        raise KeyError(f"unknown model {name!r}; shipped models are {list_models()}")
    return os.path.join(_DIR, name + suffix)


def model_text(name: str) -> str:
    """The TVMScript text of model ``name``.

    Raises
    ------
    KeyError
        If no such model is shipped (the message lists the ones that are).
    """
    with gzip.open(_path(name, _TEXT_SUFFIX), "rt", encoding="utf-8") as fh:
        return fh.read()


def load_model(name: str):
    """Parse model ``name`` into an :class:`~memcore_py.ir.IRModule`."""
    from ... import parse

    return parse(model_text(name))


def tvm_oracle(name: str) -> dict:
    """TVM's recorded StaticPlanBlockMemory result for model ``name``.

    Returns
    -------
    dict
        ``{"model", "producer", "pipeline", "tvm_spbm_seconds", "functions": {fname: {
        "total_bytes", "n_storages", "n_planned_tensors", "n_unplanned_allocs",
        "n_bindings", "n_alloc_tensor", "storages": [{"name", "bytes", "scope", "dtype"}]}}}``
    """
    with open(_path(name, _ORACLE_SUFFIX), encoding="utf-8") as fh:
        return json.load(fh)


def list_highlevel_models() -> list[str]:
    """Names of the shipped high-level (importer, pre-lowering) model texts, sorted."""
    if not os.path.isdir(_HIGHLEVEL_DIR):
        return []
    return sorted(f[: -len(_TEXT_SUFFIX)] for f in os.listdir(_HIGHLEVEL_DIR) if f.endswith(_TEXT_SUFFIX))


def highlevel_model_text(name: str) -> str:
    """The TVMScript text of model ``name`` as TVM's torch importer prints it.

    Raises
    ------
    KeyError
        If no such high-level model is shipped (the message lists the ones that are).
    """
    if not isinstance(name, str) or name not in list_highlevel_models():
        raise KeyError(f"unknown high-level model {name!r}; shipped high-level models are {list_highlevel_models()}")
    with gzip.open(os.path.join(_HIGHLEVEL_DIR, name + _TEXT_SUFFIX), "rt", encoding="utf-8") as fh:
        return fh.read()


def load_highlevel_model(name: str):
    """Parse the high-level text of model ``name`` into an :class:`~memcore_py.ir.IRModule`."""
    from ... import parse

    return parse(highlevel_model_text(name))
