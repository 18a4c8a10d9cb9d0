"""Model files into high-level Relax modules: a ``torch.export.save`` archive (``.pt2``) or an
ONNX file, each failure a typed error naming the file.

Design
------
What ``memcore plan`` and ``memcore_py.sweep`` both read, below both. :func:`import_pt2` loads
the archive (:func:`load_exported_program`), runs ``ep.run_decompositions()`` and imports the
program (:func:`import_decomposed`, also used for a program exported from a callable);
:func:`import_onnx_file` loads and imports an ONNX model. Weights stay parameters (the
``num_input`` attribute set), as memory planning wants them. Each stage's wall time goes to
the caller's ``timings`` dict under the names of :data:`STAGES`, so that a report can tell
torch's own work from memcore's.

A torch error message is cut to its first line (torch's messages run to dozens of lines of
hints), and what torch logs or prints to stderr while it fails is dropped (:func:`quiet`). A
``dim_bounds`` entry the model refuses (a name it does not have, a range outside the recorded
one) is a :class:`DimBoundsError`, so that a caller can report it as its own option's error.
"""
from __future__ import annotations

import contextlib
import io
import logging
import os
import time
import warnings

from ..errors import FrontendDependencyError, FrontendError, UnsupportedOperatorError

__all__ = ["STAGES", "DimBoundsError", "load_exported_program", "import_decomposed", "import_pt2", "import_onnx_file",
           "quiet", "reason", "require_torch_for"]

#: Stages recorded in ``timings``, in order.
STAGES = ("torch.export.load", "torch.export.export", "onnx.load", "run_decompositions", "import")
#: Longest torch message kept in an error (its first line, cut here).
MAX_REASON = 300


class DimBoundsError(FrontendError):
    """A ``dim_bounds`` entry the model refuses; the message names the file."""


def require_torch_for(source: str):
    """torch, or the importer's :class:`~memcore_py.errors.FrontendDependencyError` naming
    ``source``."""
    from .exported_program import require_torch

    try:
        return require_torch()
    except FrontendDependencyError as exc:
        raise FrontendDependencyError(f"{source}: {exc}") from exc


@contextlib.contextmanager
def quiet():
    """No Python warnings, log records or stderr output while torch works: torch logs and
    prints its failures (tracebacks, graph dumps) before raising them, and memcore reports
    every error as one line."""
    previous = logging.root.manager.disable
    logging.disable(logging.CRITICAL)
    try:
        with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
            warnings.simplefilter("ignore")
            yield
    finally:
        logging.disable(previous)


def reason(exc: BaseException) -> str:
    """``Type: first line of the message``, at most :data:`MAX_REASON` characters."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    text = f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__
    return text if len(text) <= MAX_REASON else text[:MAX_REASON - 3] + "..."


def load_exported_program(path: str):
    """``torch.export.load(path)``, its failures as a :class:`FrontendError` naming ``path``.

    Raises
    ------
    FrontendDependencyError
        torch is not installed.
    FrontendError
        The file is missing, unreadable, truncated or not a ``torch.export.save`` archive.
    """
    if not os.path.isfile(path):
        raise FrontendError(f"cannot read {path!r}: no such file")
    torch = require_torch_for(path)
    try:
        with quiet():
            ep = torch.export.load(path)
    except Exception as exc:  # noqa: BLE001 - torch raises many kinds (zip, pickle, schema)
        raise FrontendError(f"{path}: not a readable torch.export archive (.pt2): {reason(exc)}") from exc
    if not isinstance(ep, torch.export.ExportedProgram):
        raise FrontendError(f"{path}: torch.export.load returned a {type(ep).__name__}, not an ExportedProgram")
    return ep


def import_decomposed(ep, source: str, timings: dict | None = None, dim_bounds: dict | None = None):
    """``ep.run_decompositions()`` imported by
    :func:`~memcore_py.frontend.exported_program.from_exported_program` (weights as parameters).

    Raises
    ------
    FrontendError
        torch's decomposition or the import failed (an
        :class:`~memcore_py.errors.UnsupportedOperatorError` lists every operator without a
        converter); the message names ``source``.
    DimBoundsError
        A ``dim_bounds`` entry the program refuses.
    """
    from .exported_program import from_exported_program

    timings = {} if timings is None else timings
    t0 = time.perf_counter()
    try:
        with quiet():
            ep = ep.run_decompositions()
    except Exception as exc:  # noqa: BLE001 - torch's decomposition of a user program
        raise FrontendError(f"{source}: torch's run_decompositions() failed: {reason(exc)}") from exc
    timings["run_decompositions"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    try:
        mod = from_exported_program(ep, keep_params_as_input=True, run_ep_decomposition=False, dim_bounds=dim_bounds)
    except UnsupportedOperatorError as exc:
        raise UnsupportedOperatorError(f"{source}: {exc}", exc.ops) from exc
    except FrontendError as exc:
        if dim_bounds and str(exc).startswith("dim_bounds"):
            raise DimBoundsError(f"{source}: {exc}") from exc
        raise FrontendError(f"{source}: {exc}") from exc
    timings["import"] = time.perf_counter() - t0
    return mod


def import_pt2(path: str, timings: dict | None = None, dim_bounds: dict | None = None):
    """The high-level Relax module of a ``torch.export.save`` archive: loaded
    (:func:`load_exported_program`), decomposed and imported (:func:`import_decomposed`)."""
    timings = {} if timings is None else timings
    t0 = time.perf_counter()
    ep = load_exported_program(path)
    timings["torch.export.load"] = time.perf_counter() - t0
    return import_decomposed(ep, path, timings, dim_bounds)


def import_onnx_file(path: str, timings: dict | None = None, dim_bounds: dict | None = None):
    """The high-level Relax module of the ONNX file ``path`` (initializers as parameters;
    ``dim_bounds`` as :func:`~memcore_py.frontend.onnx_model.from_onnx` takes it).

    Raises
    ------
    FrontendDependencyError
        onnx is not installed (the message names ``path`` and the ``onnx`` extra).
    FrontendError
        The file is missing, truncated or not an ONNX model, or the import fails (an
        :class:`~memcore_py.errors.UnsupportedOperatorError` lists every operator without a
        converter, a value without a shape is named); the message names ``path``.
    DimBoundsError
        ``dim_bounds`` names a dimension no graph input has.
    """
    from .onnx_model import from_onnx, load_onnx

    timings = {} if timings is None else timings
    t0 = time.perf_counter()
    try:
        model = load_onnx(path)
        timings["onnx.load"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        mod = from_onnx(model, keep_params_as_input=True, dim_bounds=dim_bounds)
    except FrontendDependencyError as exc:
        raise FrontendDependencyError(f"{path}: {exc}") from exc
    except UnsupportedOperatorError as exc:
        raise UnsupportedOperatorError(f"{path}: {exc}", exc.ops) from exc
    except FrontendError as exc:
        text = str(exc)
        if dim_bounds and text.startswith("dim_bounds"):
            raise DimBoundsError(f"{path}: {text}") from exc
        raise FrontendError(text if text.startswith((path, f"cannot read {path!r}")) else f"{path}: {text}") from exc
    timings["import"] = time.perf_counter() - t0
    return mod
