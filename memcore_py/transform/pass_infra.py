"""Pass infrastructure: :class:`Pass`, :class:`ModulePass`, :class:`FunctionPass`,
:class:`Sequential` and :class:`PassContext`.

Design (after torch.fx's ``PassManager`` and xDSL's ``ModulePass``)
-------------------------------------------------------------------
- A pass is a small object, configured at construction and called like TVM's:
  ``StaticPlanBlockMemory(mode="arena")(mod) -> IRModule``. Passes are functional: the
  input module is never mutated.
- Every pass class has a kebab-case ``name`` (``"static-plan-block-memory"``) used by the CLI
  (``--passes a,b,c``) and in error messages; :data:`PASS_REGISTRY` maps names to classes.
- :class:`PassContext` carries options for a pipeline run: ``verify=True`` runs
  :func:`~memcore_py.ir.well_formed` after every pass, ``trace`` receives
  ``(pass_name, message)`` notes from passes (e.g. why an allocation was left unplanned).
  Contexts nest with ``with PassContext(...):``; outside any ``with`` a default context applies.
- A failure inside :class:`Sequential` is re-raised as :class:`~memcore_py.errors.PassError`
  naming the pass, its position and the passes before it, with ``__cause__`` set.
"""
from __future__ import annotations

import threading
from typing import Callable, ClassVar

from ..errors import MemcoreError, PassError
from ..ir.expr import Function
from ..ir.module import IRModule

__all__ = ["PassContext", "Pass", "ModulePass", "FunctionPass", "Sequential", "PASS_REGISTRY", "get_pass"]


class _ContextStack(threading.local):
    """The stack of entered contexts, one per thread (created empty on a thread's first use,
    so that reading it never takes the missing-attribute path: that costs more than a small
    pass)."""

    def __init__(self):
        self.stack: list = []


_LOCAL = _ContextStack()


class PassContext:
    """Options for running passes.

    Parameters
    ----------
    verify : bool, default False
        Run ``well_formed`` after every pass; a violation raises :class:`PassError` naming the
        pass that produced it.
    trace : callable or bool, default False
        ``trace(pass_name, message)`` is called with notes passes emit; ``True`` collects them
        in :attr:`notes`.
    config : dict, optional
        Free-form pass options (``{"arena.algorithm": "auto"}``).

    Examples
    --------
    >>> with PassContext(verify=True):
    ...     mod = Sequential([ToNonDataflow(), CallTIRRewrite()])(mod)  # doctest: +SKIP
    """

    def __init__(self, verify: bool = False, trace: Callable | bool = False, config: dict | None = None):
        self.verify = bool(verify)
        self.config = dict(config or {})
        self.notes: list[tuple[str, str]] = []
        self._trace = trace

    def note(self, pass_name: str, message: str) -> None:
        """Record a trace note (no-op unless tracing is on)."""
        if self._trace is True:
            self.notes.append((pass_name, message))
        elif callable(self._trace):
            self._trace(pass_name, message)

    @property
    def tracing(self) -> bool:
        return bool(self._trace)

    @staticmethod
    def current() -> "PassContext":
        stack = _LOCAL.stack
        if not stack:
            return _DEFAULT_CONTEXT
        return stack[-1]

    def __enter__(self):
        _LOCAL.stack.append(self)
        return self

    def __exit__(self, *exc):
        _LOCAL.stack.pop()
        return False


_DEFAULT_CONTEXT = PassContext()

#: kebab-case pass name -> pass class (filled by :meth:`Pass.__init_subclass__`).
PASS_REGISTRY: dict[str, type] = {}


class Pass:
    """Base class of all passes. Subclasses set ``name`` and implement :meth:`transform`."""

    #: kebab-case name for the CLI and error messages.
    name: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("name"):
            PASS_REGISTRY[cls.name] = cls

    def transform(self, mod: IRModule, ctx: PassContext) -> IRModule:  # pragma: no cover - abstract
        raise NotImplementedError(f"{type(self).__name__}.transform")

    def __call__(self, mod: IRModule, ctx: PassContext | None = None) -> IRModule:
        if not isinstance(mod, IRModule):
            raise PassError(f"pass '{self.name}' expects an IRModule; got {type(mod).__name__}")
        ctx = ctx or PassContext.current()
        out = self.transform(mod, ctx)
        if ctx.verify:
            _verify_after(self.name, out)
        return out

    def __repr__(self):
        return f"{type(self).__name__}()"


def _verify_after(pass_name: str, mod: IRModule, before: list[str] | None = None) -> None:
    from ..ir.well_formed import well_formed_report

    problems = well_formed_report(mod)
    if problems:
        where = f"pass '{pass_name}'" + (f" (after {before})" if before else "")
        raise PassError(f"{where} produced ill-formed IR:\n  " + "\n  ".join(problems))


class ModulePass(Pass):
    """A pass over the whole module; subclasses implement :meth:`transform`."""


class FunctionPass(Pass):
    """A pass applied to every Relax :class:`~memcore_py.ir.Function` of a module
    independently; subclasses implement :meth:`transform_function`."""

    def transform_function(self, func: Function, mod: IRModule, ctx: PassContext) -> Function:  # pragma: no cover
        raise NotImplementedError(f"{type(self).__name__}.transform_function")

    def transform(self, mod: IRModule, ctx: PassContext) -> IRModule:
        updates = {}
        for gv, func in mod.functions.items():
            if isinstance(func, Function):
                new = self.transform_function(func, mod, ctx)
                if new is not func:
                    updates[gv] = new
        return mod.with_functions(updates) if updates else mod


class Sequential(Pass):
    """Run passes in order.

    A failing pass is re-raised as :class:`PassError`:
    ``pass 'kill-after-last-use' (#2, after ['static-plan-block-memory']) failed: ...``.
    """

    name = "sequential"

    def __init__(self, passes, name: str | None = None):
        self.passes = list(passes)
        for i, p in enumerate(self.passes):
            if not isinstance(p, Pass):
                raise PassError(f"Sequential item {i} must be a Pass; got {type(p).__name__}")
        if name:
            self.label = name
        else:
            self.label = "sequential"

    def transform(self, mod: IRModule, ctx: PassContext) -> IRModule:
        done: list[str] = []
        for i, p in enumerate(self.passes, start=1):
            try:
                mod = p.transform(mod, ctx)
            except MemcoreError as exc:
                raise PassError(f"pass '{p.name}' (#{i}, after {done}) failed: {exc}") from exc
            except Exception as exc:  # an internal error: keep the type visible in the message
                raise PassError(
                    f"pass '{p.name}' (#{i}, after {done}) failed with an internal error: "
                    f"{type(exc).__name__}: {exc}"
                ) from exc
            if ctx.verify:
                _verify_after(p.name, mod, list(done) if done else None)
            done.append(p.name)
        return mod

    def __call__(self, mod: IRModule, ctx: PassContext | None = None) -> IRModule:
        if not isinstance(mod, IRModule):
            raise PassError(f"pass '{self.name}' expects an IRModule; got {type(mod).__name__}")
        return self.transform(mod, ctx or PassContext.current())

    def __repr__(self):
        return f"Sequential({[p.name for p in self.passes]})"


def get_pass(name: str, **options) -> Pass:
    """Instantiate the pass registered as ``name`` (kebab-case)."""
    cls = PASS_REGISTRY.get(name)
    if cls is None or cls is Sequential:
        raise PassError(f"unknown pass {name!r}; known passes: {sorted(k for k in PASS_REGISTRY if k != 'sequential')}")
    return cls(**options)
