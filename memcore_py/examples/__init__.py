"""Example modules shipped with memcore, as TVMScript text.

- ``mlp``: a two-layer MLP; ``conv_block``: conv2d + bias + relu + max-pool + reshape + sum.
  Both lowered by Apache TVM 0.27 (``LegalizeOps -> ToNonDataflow -> RemovePurityChecking
  -> CallTIRRewrite``, the input of StaticPlanBlockMemory) with TVM's real PrimFunc bodies;
  ``tools/make_examples.py`` rebuilds them.
- :mod:`memcore_py.examples.models`: larger real models (ResNet-50, BERT, ...) with TVM's
  own planning results; :func:`list_models` / :func:`load_model` are re-exported here.

Examples
--------
>>> from memcore_py.examples import list_examples, load
>>> list_examples()
['conv_block', 'mlp']
>>> mod = load("mlp")
>>> sorted(gv.name for gv in mod.functions)[-1]
'softmax'
"""
from __future__ import annotations

import os

from .models import list_models, load_model  # noqa: E402

__all__ = ["DEFAULT_EXAMPLE", "list_examples", "example_path", "example_text", "load", "list_models", "load_model"]

_DIR = os.path.dirname(os.path.abspath(__file__))

#: The example ``memcore check`` reads when given no file.
DEFAULT_EXAMPLE = "mlp"


def list_examples() -> list[str]:
    """Names of the shipped example modules, sorted."""
    return sorted(f[:-3] for f in os.listdir(_DIR) if f.endswith(".py") and not f.startswith("_"))


def example_path(name: str) -> str:
    """Path of example ``name``'s TVMScript file.

    Raises
    ------
    KeyError
        If there is no such example (the message lists the ones there are).
    """
    if not isinstance(name, str) or name not in list_examples():
        raise KeyError(f"unknown example {name!r}; shipped examples are {list_examples()}")
    return os.path.join(_DIR, name + ".py")


def example_text(name: str) -> str:
    """The TVMScript text of example ``name``."""
    with open(example_path(name), encoding="utf-8") as fh:
        return fh.read()


def load(name: str = DEFAULT_EXAMPLE):
    """Parse example ``name`` into an :class:`~memcore_py.ir.IRModule`."""
    from .. import parse

    return parse(example_text(name))
