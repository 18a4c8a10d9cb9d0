"""Operator registry: name -> :class:`Op` with the properties passes ask about.

An :class:`Op` is a singleton per name (``get_op("relax.add") is get_op("relax.add")``), so
passes compare ops by identity. Properties:

- ``pure``: no side effects (a call may be removed when unused).
- ``view``: the result aliases ``args[0]``'s storage (reshape, memory.view, ...).
- ``inplace``: DataflowUseInplaceCalls may compute it in place of an argument.
- ``legalize``: name of the PrimFunc its legalization produces (for in-place rewrites).
- ``attr_names``: keyword attributes in TVMScript order (``R.split(x, indices_or_sections=2,
  axis=0)``); ``n_args``: (min, max) positional Relax arguments (max None = variadic).

Unknown names are an error (:class:`~memcore_py.errors.IRError`), never a silent new op.
"""
from __future__ import annotations

from ..errors import IRError

__all__ = ["Op", "register_op", "get_op", "is_registered", "list_ops"]

_set = object.__setattr__


class Op:
    """A registered primitive operator. Immutable; one object per name."""

    __slots__ = ("name", "pure", "view", "inplace", "legalize", "attr_names", "n_args", "ty")

    def __init__(self, name, pure=True, view=False, inplace=False, legalize=None, attr_names=(), n_args=(0, None)):
        _set(self, "name", name)
        _set(self, "pure", bool(pure))
        _set(self, "view", bool(view))
        _set(self, "inplace", bool(inplace))
        _set(self, "legalize", legalize)
        _set(self, "attr_names", tuple(attr_names))
        _set(self, "n_args", tuple(n_args))
        _set(self, "ty", None)

    def __setattr__(self, key, value):
        raise AttributeError("Op is immutable")

    __hash__ = object.__hash__

    @property
    def script_name(self) -> str:
        """The TVMScript spelling: ``relax.nn.relu`` -> ``R.nn.relu``."""
        return "R." + self.name[len("relax."):] if self.name.startswith("relax.") else self.name

    def __repr__(self):
        return f"Op({self.name!r})"


_REGISTRY: dict[str, Op] = {}


def register_op(name: str, **props) -> Op:
    """Register ``name`` (idempotent for identical properties) and return its :class:`Op`."""
    if name in _REGISTRY:
        return _REGISTRY[name]
    op = Op(name, **props)
    _REGISTRY[name] = op
    return op


def get_op(name: str) -> Op:
    """The :class:`Op` named ``name`` (``"relax.add"``); :class:`IRError` if unknown."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise IRError(f"unknown operator {name!r}") from None


def is_registered(name: str) -> bool:
    return name in _REGISTRY


def list_ops():
    """All registered op names, sorted."""
    return sorted(_REGISTRY)


# --- element-wise arithmetic (in-place capable ones per spec §3.2) ---------------------------
for _n in ("add", "subtract", "multiply", "divide"):
    register_op(f"relax.{_n}", inplace=True, legalize=_n, n_args=(2, 2))
for _n in ("floor_divide", "power", "maximum", "minimum", "equal", "less", "greater",
           "not_equal", "less_equal", "greater_equal"):
    register_op(f"relax.{_n}", legalize=_n, n_args=(2, 2))
for _n in ("nn.relu", "nn.silu"):
    register_op(f"relax.{_n}", inplace=True, legalize=_n.split(".")[-1], n_args=(1, 1))
for _n in ("exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "negative", "abs", "sin", "cos",
           "erf", "round", "floor", "ceil", "nn.gelu", "nn.gelu_tanh"):
    register_op(f"relax.{_n}", legalize=_n.split(".")[-1], n_args=(1, 1))

# --- views: the result shares args[0]'s storage ---------------------------------------------
register_op("relax.reshape", view=True, n_args=(2, 2))
register_op("relax.expand_dims", view=True, attr_names=("axis",), n_args=(1, 1))
register_op("relax.squeeze", view=True, attr_names=("axis",), n_args=(1, 1))
register_op("relax.permute_dims", view=True, attr_names=("axes",), n_args=(1, 1))
register_op("relax.flatten", view=True, n_args=(1, 1))
register_op("relax.nn.batch_flatten", view=True, n_args=(1, 1))
register_op("relax.memory.view", view=True, n_args=(1, 4))
register_op("relax.memory.ensure_zero_offset", view=True, n_args=(1, 1))

# --- other tensor ops --------------------------------------------------------------------------
register_op("relax.matmul", attr_names=("out_dtype",), n_args=(2, 2))
register_op("relax.split", attr_names=("indices_or_sections", "axis"), n_args=(1, 1))
register_op("relax.concat", attr_names=("axis",), n_args=(1, 1))
register_op("relax.sum", attr_names=("axis", "keepdims"), n_args=(1, 1))
register_op("relax.mean", attr_names=("axis", "keepdims"), n_args=(1, 1))
register_op("relax.astype", attr_names=("dtype",), n_args=(1, 1))
register_op("relax.nn.softmax", attr_names=("axis",), n_args=(1, 1))
register_op("relax.shape_of", n_args=(1, 1))
register_op("relax.zeros", attr_names=("dtype",), n_args=(1, 1))
register_op("relax.ones", attr_names=("dtype",), n_args=(1, 1))

# --- calls into lower-level functions ------------------------------------------------------------
register_op("relax.call_tir", n_args=(2, 3))
register_op("relax.call_tir_inplace", attr_names=("inplace_indices",), n_args=(2, 3))
register_op("relax.call_tir_with_grad", attr_names=("te_grad_name", "te_grad_kwargs"), n_args=(2, 3))
register_op("relax.call_dps_packed", n_args=(2, 2))
register_op("relax.call_pure_packed", n_args=(1, None))
register_op("relax.call_inplace_packed", attr_names=("inplace_indices",), n_args=(1, None))
register_op("relax.vm.call_tir_dyn", pure=False, n_args=(2, 2))

# --- memory. Purity is TVM 0.27's ``FPurity``: allocations are pure (so they may sit in
# dataflow blocks and DeadCodeElimination drops unused ones); only kills are impure. ---------
register_op("relax.builtin.alloc_tensor", n_args=(3, 4))
register_op("relax.memory.alloc_storage", n_args=(4, 4))
register_op("relax.memory.alloc_tensor", n_args=(4, 5))
register_op("relax.memory.kill_storage", pure=False, n_args=(1, 1))
register_op("relax.memory.kill_tensor", pure=False, n_args=(1, 1))
register_op("relax.vm.alloc_storage", n_args=(3, 4))
register_op("relax.vm.alloc_tensor", n_args=(4, 5))
register_op("relax.vm.kill_object", pure=False, n_args=(1, 1))
register_op("relax.null_value", n_args=(0, 0))
