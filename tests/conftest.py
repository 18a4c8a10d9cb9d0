"""Suite-wide fixtures.

- Every test runs its passes under ``PassContext(verify=True)``: ``well_formed`` is checked
  after every pass, so a pass that produces ill-formed IR fails the test that ran it (the
  xDSL pass contract; ``DESIGN.md``, "Testing"). A context a test enters itself, or passes
  explicitly, sits above this one and wins. A test that feeds a pass ill-formed IR on purpose,
  or checks output TVM itself leaves ill-formed, opts out with ``@pytest.mark.no_verify``.
- ``tvm``: Apache TVM, or a skip when the ``oracle`` extra is not installed.

Plain helpers shared by several files are in ``_helpers.py``, imported as
``from _helpers import ...``: ``pythonpath`` in pyproject.toml puts this folder on ``sys.path``
(and the repository root before it) however pytest is started.
"""
from __future__ import annotations

import pytest


def _pass_context():
    try:
        from memcore_py.transform.pass_infra import PassContext
    except ImportError:  # the engine tests need no IR layer; a broken one fails its own tests
        return None
    return PassContext


@pytest.fixture(scope="session", autouse=True)
def _verify_passes():
    """``PassContext(verify=True)`` for the whole session, module-scoped fixtures included."""
    ctx = _pass_context()
    if ctx is None:
        yield
        return
    with ctx(verify=True):
        yield


@pytest.fixture(autouse=True)
def _no_verify(request):
    """A test marked ``no_verify`` runs its passes under ``PassContext(verify=False)``."""
    ctx = _pass_context() if request.node.get_closest_marker("no_verify") is not None else None
    if ctx is None:
        yield
        return
    with ctx(verify=False):
        yield


@pytest.fixture
def tvm():
    """The ``tvm`` package (apache-tvm, the ``oracle`` extra), or skip the test."""
    return pytest.importorskip("tvm", reason="apache-tvm is not installed (pip install memcore[oracle])")
