"""Test and benchmark helpers: random well-formed programs.

- :func:`random_module` — a random module (dataflow and plain blocks, If, tuples,
  match_cast, call_tir / call_packed / DPS calls, several functions) with exactly
  ``n_bindings`` bindings; deterministic per seed.
- :func:`random_lowered_module` — a random post-CallTIRRewrite function (``alloc_tensor``
  + DPS calls, views, tuples): the input StaticPlanBlockMemory sees.
- :func:`count_bindings`, :func:`module_features` — what a module contains.
- :func:`torch_model` — small plain-``torch.nn`` ResNet-18/50, MobileNetV2, ViT, BERT, GPT-2,
  Llama and LSTM programs for the importer and planning tests (:data:`TORCH_MODELS`; torch
  imported on call).
"""
from .random_ir import FEATURES, count_bindings, module_features, random_lowered_module, random_module  # noqa: F401
from .torch_models import TORCH_MODELS, torch_model  # noqa: F401

__all__ = ["random_module", "random_lowered_module", "count_bindings", "module_features", "FEATURES",
           "TORCH_MODELS", "torch_model"]
