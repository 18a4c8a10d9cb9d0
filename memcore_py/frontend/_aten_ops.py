"""The ATen converter table: one function per ``torch.ops.aten`` target, with TVM 0.27's mapping.

Design
------
:data:`CONVERTERS` maps the name TVM's ``ExportedProgramImporter`` dispatches on
(``node.target.__name__``: ``"add.Tensor"``, ``"convolution.default"``, ``"getitem"``) to a
function ``f(ctx, node)`` returning the node's value (:class:`~._aten_context.AtenContext`).
Each converter emits the same Relax calls, with the same attributes and in the same order, as
TVM's converter for that target (``exported_program_translator.py`` and
``base_fx_graph_translator.py`` of the installed TVM), so the builder hands out the same
``lv`` names. TVM's quirks are kept because equality with its output is the contract:

- views are value ops (``view``/``reshape`` -> ``reshape``, identity reshapes dropped;
  ``expand`` -> ``broadcast_to``; ``permute``/``transpose`` -> ``permute_dims``);
  ``clone``, ``alias``, ``detach``, ``contiguous``, ``dropout`` return their input;
- ``copy_``, ``fill_``, ``masked_fill_`` and ``zero_`` rebind their destination node (SSA
  rebinding), the other in-place variants (``add_``, ``relu_``) do not;
- ``matmul``/``mm``/``bmm``/``addmm``/``conv`` request ``out_dtype="float32"``;
- a few converters return a value they have not emitted (``max_pool2d`` of a 3-D input
  returns an unemitted ``squeeze``), which the next emit puts in A-normal form, as in TVM;
- symbolic integers (``sym_size.int``, Python ``add``/``mul`` on ``SymInt``) are
  :class:`~memcore_py.ir.prim.PrimExpr` arithmetic, a static ``sym_size`` an int32 constant.

Targets outside the table are reported all at once by the importer
(:class:`~memcore_py.errors.UnsupportedOperatorError`).
"""
from __future__ import annotations

from . import _aten_index, _aten_math, _aten_nn, _aten_scalar, _aten_shape

__all__ = ["CONVERTERS"]

_TABLES = (_aten_math.CONVERTERS, _aten_nn.CONVERTERS, _aten_index.CONVERTERS, _aten_shape.CONVERTERS,
           _aten_scalar.CONVERTERS)

#: target name (``node.target.__name__``) -> ``f(ctx, node)``; the converter modules' tables.
CONVERTERS: dict = {k: v for table in _TABLES for k, v in table.items()}
if len(CONVERTERS) != sum(len(t) for t in _TABLES):  # pragma: no cover
    raise KeyError("a target has a converter in two of the _aten_* modules")
