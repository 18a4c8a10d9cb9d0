"""Build the memcore Cython kernels.

All metadata lives in pyproject.toml; this file only declares the extensions.
Knobs are environment variables:

- ``MEMCORE_DEBUG=1``: boundscheck/initializedcheck on, ``-O0 -g``, asserts kept.
- ``MEMCORE_EXTENSIONS=memcore._a,memcore._b``: build only these (a developer's shortcut while
  another kernel is half-written); the default builds all.
"""
import os

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup

DEBUG = os.environ.get("MEMCORE_DEBUG", "0") not in ("", "0")

#: One set of Cython directives for every extension (sklearn's meson.build habit).
DIRECTIVES = {
    "language_level": 3,
    "boundscheck": DEBUG,
    "initializedcheck": DEBUG,
    "wraparound": False,
    "cdivision": True,
    "nonecheck": False,
    "embedsignature": True,
}

#: Extension name -> sources. C++ only where a module needs libcpp.
EXTENSIONS = {
    "memcore._liveness": {"sources": ["memcore/_liveness.pyx"], "language": "c"},
    "memcore._offsets": {"sources": ["memcore/_offsets.pyx"], "language": "c"},
    "memcore._tokens": {"sources": ["memcore/_tokens.pyx"], "language": "c++"},
    "memcore._verify": {"sources": ["memcore/_verify.pyx"], "language": "c++"},
    # compiled helpers of the Python layer, in the package whose job they do; no fallback
    "memcore_py.ir._nodes": {"sources": ["memcore_py/ir/_nodes.pyx"], "language": "c"},
    "memcore_py.ir._block_emit": {"sources": ["memcore_py/ir/_block_emit.pyx"], "language": "c"},
    "memcore_py.ir._names": {"sources": ["memcore_py/ir/_names.pyx"], "language": "c"},
    "memcore_py.ir._const_fold": {"sources": ["memcore_py/ir/_const_fold.pyx"], "language": "c++"},
    "memcore_py.ir._int_bound": {"sources": ["memcore_py/ir/_int_bound.pyx"], "language": "c++"},
    "memcore_py.analysis._binding_table": {"sources": ["memcore_py/analysis/_binding_table.pyx"], "language": "c++"},
    "memcore_py.analysis._ir_reader": {"sources": ["memcore_py/analysis/_ir_reader.pyx"], "language": "c++"},
    "memcore_py.analysis._storage_walk": {"sources": ["memcore_py/analysis/_storage_walk.pyx"], "language": "c++"},
    "memcore_py.analysis._inplace_walk": {"sources": ["memcore_py/analysis/_inplace_walk.pyx"], "language": "c"},
    "memcore_py.analysis._canonical_rules": {
        "sources": ["memcore_py/analysis/_canonical_rules.pyx"],
        "language": "c++",
    },
    "memcore_py.analysis._dce_rules": {"sources": ["memcore_py/analysis/_dce_rules.pyx"], "language": "c++"},
    "memcore_py.analysis._kill_rules": {"sources": ["memcore_py/analysis/_kill_rules.pyx"], "language": "c++"},
    "memcore_py.transform._alloc_rewrite": {"sources": ["memcore_py/transform/_alloc_rewrite.pyx"], "language": "c"},
    "memcore_py.transform._flat_walks": {"sources": ["memcore_py/transform/_flat_walks.pyx"], "language": "c"},
    "memcore_py.transform._kill_writer": {"sources": ["memcore_py/transform/_kill_writer.pyx"], "language": "c++"},
    "memcore_py.planning._graph_plan": {"sources": ["memcore_py/planning/_graph_plan.pyx"], "language": "c++"},
    "memcore_py.frontend._aten_calls": {"sources": ["memcore_py/frontend/_aten_calls.pyx"], "language": "c"},
    "memcore_py.tvm._ffi_reader": {"sources": ["memcore_py/tvm/_ffi_reader.pyx"], "language": "c++"},
    "memcore_py.tvm._ffi_writer": {"sources": ["memcore_py/tvm/_ffi_writer.pyx"], "language": "c++"},
    "memcore_py.tvm._node_map": {"sources": ["memcore_py/tvm/_node_map.pyx"], "language": "c"},
    "memcore_py.tvm._kill_writer": {"sources": ["memcore_py/tvm/_kill_writer.pyx"], "language": "c++"},
    "memcore_py.tvm._table_reader": {"sources": ["memcore_py/tvm/_table_reader.pyx"], "language": "c++"},
    "memcore_py.tvm._spbm_extract": {"sources": ["memcore_py/tvm/_spbm_extract.pyx"], "language": "c++"},
    "memcore_py.tvm._lower_extract": {"sources": ["memcore_py/tvm/_lower_extract.pyx"], "language": "c++"},
}

_COMPILE_ARGS = ["-O0", "-g", "-UNDEBUG"] if DEBUG else ["-O3"]


def _extensions():
    only = {n for n in os.environ.get("MEMCORE_EXTENSIONS", "").split(",") if n}
    exts = []
    for name, spec in EXTENSIONS.items():
        if only and name not in only:
            continue
        lang = spec.get("language", "c")
        args = list(_COMPILE_ARGS)
        if lang == "c++":
            args.append("-std=c++17")
        exts.append(
            Extension(
                name,
                sources=spec["sources"],
                language=lang,
                include_dirs=[numpy.get_include()],
                define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_22_API_VERSION")],
                extra_compile_args=args,
            )
        )
    return cythonize(exts, compiler_directives=DIRECTIVES, quiet=True)


setup(ext_modules=_extensions())
