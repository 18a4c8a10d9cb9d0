"""memcore_py: the Python layer of memcore.

A Relax-like IR with TVMScript text in and out, Apache TVM's memory passes, Relay-style graph
planning, importers, reports and the ``memcore`` command line. The heavy lifting is done by
the :mod:`memcore` engine kernels.
"""
from memcore import __version__  # noqa: F401 - one version for both packages (memcore/__init__.py)

from .errors import IRError, MemcoreError, ParseError, PassError, PlanningError, WellFormedError  # noqa: F401


def parse(text: str, metadata=None):
    """Parse TVMScript text (as Apache TVM 0.27 prints it) into an :class:`~memcore_py.ir.IRModule`.

    Parameters
    ----------
    text : str
        An ``@I.ir_module`` class, or a single ``@R.function``.
    metadata : dict, optional
        ``{"relax.expr.Constant": [ndarray, ...]}``: binds ``metadata[key][i]`` constant
        references to arrays. Unbound references are kept as references.

    Raises
    ------
    ParseError
        With line, column and the offending source line, for any malformed input.
    """
    from .ir.text.parser import parse as _parse

    return _parse(text, metadata=metadata)
