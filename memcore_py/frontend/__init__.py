"""Importers: files and other frameworks' graphs -> memcore's inputs.

- :mod:`.graph_json` — TVM graph-executor JSON -> :class:`~memcore_py.planning.graph_model.GraphModel`
  (:func:`read_graph_json`), the input of :func:`memcore_py.planning.graph_plan_memory`.
- :mod:`.exported_program` — a ``torch.export`` ExportedProgram -> high-level Relax, the module
  TVM's torch importer produces (:func:`from_exported_program`; torch imported on call).
- :mod:`.onnx_model` — an ONNX ModelProto -> high-level Relax, the module TVM's ONNX importer
  produces (:func:`from_onnx`; onnx imported on call).
"""
from ..planning.graph_model import GraphError  # noqa: F401
from .exported_program import exported_program_params, from_exported_program, unsupported_operators  # noqa: F401
from .graph_json import read_graph_json  # noqa: F401
from .onnx_model import from_onnx, onnx_params, unsupported_onnx_operators  # noqa: F401

__all__ = ["read_graph_json", "GraphError", "from_exported_program", "exported_program_params",
           "unsupported_operators", "from_onnx", "onnx_params", "unsupported_onnx_operators"]
