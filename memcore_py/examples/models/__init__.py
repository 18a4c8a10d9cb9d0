"""Real models lowered by Apache TVM's own pipeline, shipped as TVMScript text.

Each model ``<name>`` is two files in this folder:

``<name>.py.gz``
    The module StaticPlanBlockMemory receives in a real TVM 0.27 CPU compile (fused
    kernels, ``R.builtin.alloc_tensor`` outputs after ``CallTIRRewrite``), printed by TVM.
    PrimFunc bodies are replaced by ``T.evaluate(0)``; the Relax functions are exactly TVM's.
``<name>.tvm.json``
    TVM's own StaticPlanBlockMemory result on that module (bytes of every storage per
    function, counts, time): the oracle tests and benchmarks compare against.

``tools/make_models.py`` (needs torch and tvm) rebuilds both and documents the pipeline.
Its ``--vm-check`` runs the models with their real PrimFunc bodies on TVM's VM (llvm, random
weights): planned by memcore in TVM mode and in arena mode, all five give TVM's own
pipeline's outputs.

Examples
--------
>>> from memcore_py.examples.models import list_models, load_model
>>> list_models()  # doctest: +SKIP
['bert_base', 'gpt2_small', 'llama_small', 'resnet50', 'vit_b16']
>>> mod = load_model("resnet50")  # doctest: +SKIP
"""
from __future__ import annotations

import gzip
import json
import os

__all__ = ["list_models", "model_text", "load_model", "tvm_oracle"]

_DIR = os.path.dirname(os.path.abspath(__file__))
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
