"""IRModule: an ordered map from global names to functions."""
from __future__ import annotations

from ..errors import IRError
from .expr import BaseFunc, GlobalVar

__all__ = ["IRModule", "VDevice"]


class IRModule:
    """An ordered collection of functions (Relax :class:`~memcore_py.ir.Function` and
    :class:`~memcore_py.ir.PrimFunc`) keyed by :class:`GlobalVar`.

    Modules are treated as immutable: passes build new modules (:meth:`with_functions`).

    Attributes
    ----------
    functions : dict of GlobalVar -> BaseFunc
        In definition order (the order TVMScript prints them).
    attrs : dict
        Module attributes.
    global_infos : dict
        ``I.module_global_infos`` content (e.g. ``{"vdevice": [...]}``), kept as read.
    """

    __slots__ = ("functions", "attrs", "global_infos", "_by_name")

    def __init__(self, functions=None, attrs=None, global_infos=None):
        funcs = {}
        by_name = {}
        for gv, func in (functions or {}).items():
            if isinstance(gv, str):
                gv = GlobalVar(gv)
            if not isinstance(gv, GlobalVar):
                raise IRError(f"IRModule keys must be GlobalVar or str; got {type(gv).__name__}")
            if not isinstance(func, BaseFunc):
                raise IRError(
                    f"IRModule value for {gv.name!r} must be a Function or PrimFunc; got {type(func).__name__}"
                )
            if gv.name in by_name:
                raise IRError(f"IRModule has two functions named {gv.name!r}")
            funcs[gv] = func
            by_name[gv.name] = gv
        self.functions = funcs
        self.attrs = dict(attrs) if attrs else {}
        self.global_infos = dict(global_infos) if global_infos else {}
        self._by_name = by_name

    def get_global_var(self, name: str) -> GlobalVar:
        """The GlobalVar named ``name``; :class:`IRError` if there is none."""
        try:
            return self._by_name[name]
        except KeyError:
            raise IRError(f"IRModule has no function named {name!r}; it has {sorted(self._by_name)}") from None

    def __getitem__(self, key):
        gv = self.get_global_var(key) if isinstance(key, str) else key
        try:
            return self.functions[gv]
        except KeyError:
            raise IRError(f"IRModule has no function for {gv!r}") from None

    def __contains__(self, key):
        if isinstance(key, str):
            return key in self._by_name
        return key in self.functions

    def __iter__(self):
        return iter(self.functions)

    def __len__(self):
        return len(self.functions)

    def items(self):
        return self.functions.items()

    def with_functions(self, updates: dict, remove=()) -> "IRModule":
        """A new module with ``updates`` (GlobalVar -> func, replacing or appending) and the
        GlobalVars in ``remove`` dropped; order of existing functions is kept."""
        funcs = {}
        removed = set(remove)
        for gv, f in self.functions.items():
            if gv in removed:
                continue
            funcs[gv] = updates.get(gv, f)
        for gv, f in updates.items():
            if gv not in funcs and gv not in removed:
                funcs[gv] = f
        return IRModule(funcs, self.attrs, self.global_infos)

    def script(self, **options) -> str:
        """TVMScript text of the module that Apache TVM 0.27's parser accepts."""
        from .text.printer import script

        return script(self, **options)

    def __repr__(self):
        return f"IRModule({[gv.name for gv in self.functions]})"


class VDevice:
    """A virtual device listed in ``IRModule.global_infos["vdevice"]``
    (TVMScript ``I.vdevice(target, vdevice_id, memory_scope)``). Compared by value.

    Attributes
    ----------
    target : str or dict
        The target as written (``"llvm"`` or TVM's target dict).
    vdevice_id : int
    memory_scope : str
    """

    __slots__ = ("target", "vdevice_id", "memory_scope")

    def __init__(self, target, vdevice_id: int = 0, memory_scope: str = "global"):
        object.__setattr__(self, "target", target)
        object.__setattr__(self, "vdevice_id", int(vdevice_id))
        object.__setattr__(self, "memory_scope", str(memory_scope))

    def __setattr__(self, key, value):
        raise AttributeError("VDevice is immutable")

    def _key(self):
        return (repr(self.target), self.vdevice_id, self.memory_scope)

    def __eq__(self, other):
        return isinstance(other, VDevice) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return f"VDevice({self.target!r}, {self.vdevice_id}, {self.memory_scope!r})"
