"""Importers: files and other frameworks' graphs -> memcore's inputs.

- :mod:`.graph_json` — TVM graph-executor JSON -> :class:`~memcore_py.planning.graph_model.GraphModel`
  (:func:`read_graph_json`), the input of :func:`memcore_py.planning.graph_plan_memory`.
"""
from ..planning.graph_model import GraphError  # noqa: F401
from .graph_json import read_graph_json  # noqa: F401

__all__ = ["read_graph_json", "GraphError"]
