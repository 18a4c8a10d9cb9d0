"""The TVM compatibility gate: the one place ``memcore_py.tvm`` decides whether its compiled
fast paths may read TVM's objects in memory.

Public API
----------
- :data:`SUPPORTED_TVM`: the TVM versions the fast paths were built and checked against.
- :func:`fast_layout` ``(api) -> Layout | None``: the compiled reader's checked
  :class:`~memcore_py.tvm._ffi_reader.Layout`, or None for "portable path only".
- :data:`PORTABLE_ENV`: set ``MEMCORE_TVM_PORTABLE=1`` to force the portable path.
- :class:`TVMVersionWarning`, :class:`TVMLayoutWarning`: why the fast paths are off.
- :func:`reset`: forget the decision (after changing the environment variable in-process,
  and between tests).
- :func:`parse_script` ``(api, text)``: TVM's script parser on a text memcore wrote (below).

Design
------
Two paths run every native pass (:mod:`memcore_py.tvm.passes`):

- the *fast paths*: the extractions (:mod:`.spbm_extract`, :mod:`.kill_extract`,
  :mod:`.lower_alloc_extract`) and the compiled reader inside :func:`~memcore_py.tvm.from_tvm`,
  which read TVM's objects as C structs at the field offsets tvm_ffi's reflection reports;
- the *portable path*: :func:`~memcore_py.tvm.from_tvm` through TVM's Python API alone, the
  memcore pass, :func:`~memcore_py.tvm.to_tvm` (objects made by TVM's own constructors).

A C read of a struct whose layout changed is a wrong read or a crash, not an error, so the
fast paths run only when all of these hold, decided once per process by :func:`fast_layout`:

1. ``tvm.__version__`` is supported (:func:`is_supported`). Versions are matched on the
   *release*: ``0.27.0``, ``0.27.0.post1`` and ``0.27.0+local`` match ``0.27.0.post1``, because
   post-releases and local builds rebuild the packaging of one source release and do not
   change its C++ classes; pre-releases and development builds (``0.27.0rc1``,
   ``0.28.dev0``) and other releases do not match. (The self-check in 3. still runs on a
   matching version.)
2. ``MEMCORE_TVM_PORTABLE`` is unset, empty or ``0`` (the user's escape hatch).
3. The :class:`~memcore_py.tvm._ffi_reader.Layout` builds and its self-check passes: every
   field offset the readers use is read on objects built through TVM's Python API and
   compared with what TVM's reflection returns for it. Any exception while it builds (a
   renamed field is a ``KeyError``) counts as a failed check, never as a failed pass.

When 1. or 3. fails, one warning says why (:class:`TVMVersionWarning`,
:class:`TVMLayoutWarning`) and every pass runs on the portable path; a forced portable path
(2.) is silent. The decision is cached: a process warns once.

Parsing. A PrimFunc memcore made (DataflowUseInplaceCalls' in-place functions) reaches TVM as
text through TVM's own parser. That parser evaluates the decorator ``@T.prim_func(...)`` of
each function only to learn its dialect (the ``dispatch_token``; ``private`` and the other
flags are read from the syntax tree), and TVM's ``prim_func`` captures the Python call stack
for a decorator applied to Python source (``inspect.stack()``: a call per frame to
``inspect.getmodule``, often most of the parse). On a supported TVM :func:`parse_script` runs
the same parser, :func:`tvm.script.parser.core.entry.parse`, with TVM's default globals
except that ``T.prim_func`` evaluates to the dialect token alone: the same objects, without
the capture nothing in a text can use. Elsewhere it is ``tvm.script.from_source``.
"""
from __future__ import annotations

import os
import re
import warnings

from . import _ffi_reader, _ffi_writer

__all__ = ["SUPPORTED_TVM", "PORTABLE_ENV", "TVMVersionWarning", "TVMLayoutWarning", "is_supported",
           "tvm_version", "fast_layout", "reset", "parse_script"]

#: The TVM versions (``tvm.__version__``) the fast paths were built and checked against;
#: another version with the same release also matches (:func:`is_supported`).
SUPPORTED_TVM = ("0.27.0.post1",)

#: Set to anything but ``""`` or ``"0"`` to run every pass on the portable path (read when
#: the decision is made: at the first pass of the process, or after :func:`reset`).
PORTABLE_ENV = "MEMCORE_TVM_PORTABLE"

#: A public version: the release, then an optional post-release and local label (PEP 440).
_VERSION = re.compile(r"(?P<release>\d+(?:\.\d+)*)(?:[.-]?post\d*)?(?:\+[A-Za-z0-9.]+)?")


class TVMVersionWarning(UserWarning):
    """The installed TVM is not a version memcore's fast paths support: every pass runs on
    the portable path (the full conversion through TVM's Python API)."""


class TVMLayoutWarning(UserWarning):
    """The installed TVM's objects do not have the layout memcore's compiled reader checks:
    every pass runs on the portable path (the full conversion through TVM's Python API)."""


def _release(version: str):
    """The release of ``version`` as a tuple of ints, or None when it is a pre-release, a
    development build or not a version."""
    m = _VERSION.fullmatch(version.strip())
    return None if m is None else tuple(int(p) for p in m.group("release").split("."))


def is_supported(version: str) -> bool:
    """Whether TVM ``version`` has the release of one of :data:`SUPPORTED_TVM` (module
    docstring: post-releases and local labels match, pre-releases do not).

    Parameters
    ----------
    version : str
        A ``tvm.__version__``.
    """
    release = _release(version)
    return release is not None and any(release == _release(v) for v in SUPPORTED_TVM)


def tvm_version(api) -> str:
    """``tvm.__version__`` of the TVM in ``api`` (:func:`~memcore_py.tvm._api.tvm_api`), or
    ``""`` when it has none."""
    return str(getattr(api.tvm, "__version__", ""))


class _Decision:
    """The cached answers of :func:`fast_layout` (``made`` False until the first call) and of
    :func:`parse_script` (``script_globals``: None until the first parse, False when the public
    entry must run, else ``(parse, globals)``)."""

    __slots__ = ("made", "layout", "script_globals")

    def __init__(self):
        self.made = False
        self.layout = None
        self.script_globals = None


_DECISION = _Decision()


def reset() -> None:
    """Forget the cached decisions: the next :func:`fast_layout` decides (and warns) again, and
    the next :func:`parse_script` looks at the version again."""
    _DECISION.made = False
    _DECISION.layout = None
    _DECISION.script_globals = None


def _forced_portable() -> bool:
    return os.environ.get(PORTABLE_ENV, "") not in ("", "0")


def _build_layout(api):
    """``(layout, None)`` when the compiled reader may run, else ``(None, reason)``."""
    try:
        if not _ffi_writer.init(api):
            return None, "tvm_ffi does not export the C API the compiled writer calls"
        layout = _ffi_reader.Layout(api)
    except Exception as exc:  # noqa: BLE001 - any failure to build the layout means "no fast path"
        return None, f"building the layout raised {type(exc).__name__}: {exc}"
    if not layout.ok:
        return None, f"the layout self-check failed: {layout.failure}"
    return layout, None


def _decide(api):
    if _forced_portable():
        return None
    version = tvm_version(api)
    if not is_supported(version):
        warnings.warn(
            f"memcore_py.tvm: TVM {version or '(no version)'} is not a supported version "
            f"({', '.join(SUPPORTED_TVM)}); every pass runs on the portable path (the full "
            f"conversion through TVM's Python API), without the compiled fast paths",
            TVMVersionWarning, stacklevel=4)
        return None
    layout, reason = _build_layout(api)
    if layout is None:
        warnings.warn(
            f"memcore_py.tvm: TVM {version}'s objects do not have the checked layout ({reason}); "
            f"every pass runs on the portable path (the full conversion through TVM's Python API)",
            TVMLayoutWarning, stacklevel=4)
    return layout


def fast_layout(api):
    """The compiled reader's checked :class:`~memcore_py.tvm._ffi_reader.Layout`, or None when
    the fast paths must not run (module docstring; the first call decides, and warns when the
    version or the layout is the reason).

    Parameters
    ----------
    api : types.SimpleNamespace
        :func:`~memcore_py.tvm._api.tvm_api`'s namespace.

    Returns
    -------
    Layout or None
    """
    if not _DECISION.made:
        _DECISION.layout = _decide(api)
        _DECISION.made = True
    return _DECISION.layout


def _text_prim_func_decorator(*args, **kwargs):
    """``T.prim_func`` as the parser evaluates it in a text: only its dialect matters."""
    return _text_prim_func_decorator


def _script_globals(api):
    import types

    try:
        from tvm.script.parser.core import entry

        defaults = entry._default_globals()
        real_t = defaults["T"]
        token = real_t.prim_func.dispatch_token
    except Exception:  # noqa: BLE001 - another parser layout: use the public entry
        return False
    _text_prim_func_decorator.dispatch_token = token
    t = types.ModuleType(real_t.__name__)
    t.__dict__.update(real_t.__dict__)
    t.prim_func = _text_prim_func_decorator
    out = dict(defaults)
    for k, v in defaults.items():
        if v is real_t:
            out[k] = t
    return entry.parse, out


def parse_script(api, text: str):
    """The object TVM's script parser makes of ``text`` (a module or a function); see the
    module docstring, "Parsing".

    Raises
    ------
    Exception
        Whatever TVM's parser raises for a text it refuses (the caller reports it).
    """
    if _DECISION.script_globals is None:
        _DECISION.script_globals = _script_globals(api) if is_supported(tvm_version(api)) else False
    if _DECISION.script_globals is False:
        return api.tvm.script.from_source(text)
    parse, script_globals = _DECISION.script_globals
    return parse(text, extra_vars=dict(script_globals))
