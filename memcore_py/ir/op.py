"""Operator registry: the :class:`Op` class and the name -> Op table.

An :class:`Op` is a singleton per name (``get_op("relax.add") is get_op("relax.add")``), so
passes compare ops by identity. Every property a pass reads about an op is declared once, in
the op's one :func:`register_op` call; the built-in ops are all registered, each with its
type rule, in :mod:`memcore_py.ir.ops` (imported by ``memcore_py.ir``). No other module
keeps a list of op names for these properties. Properties, and the TVM source of each set:

- ``pure``: no side effects, so an unused call may be removed and the call may sit in a
  dataflow block (TVM ``FPurity``; read by :func:`~memcore_py.ir.well_formed`).
- ``shares_storage``: the result is ``args[0]``'s storage (TVM ``IsInplaceMemoryOp`` in
  src/relax/transform/static_plan_block_memory.cc: ``relax.reshape``, ``relax.memory.view``,
  ``relax.memory.ensure_zero_offset``). StaticPlanBlockMemory gives the result ``args[0]``'s
  storage tokens and does not count the call as a use. Test with :func:`shares_storage`,
  which also covers the packed function :data:`RESHAPE_PACKED`.
- ``view_memory``: the result *may* share storage with ``args[0]`` (TVM ``IsViewMemoryOp`` in
  src/relax/transform/dataflow_inplace.cc: the ``shares_storage`` ops plus ``expand_dims``,
  ``squeeze``, ``permute_dims``, ``flatten``, ``nn.batch_flatten``). DataflowUseInplaceCalls'
  alias analysis gives the result ``args[0]``'s alias set. Implied by ``shares_storage``.
- ``inplace``: DataflowUseInplaceCalls may compute the op in place of an argument (TVM's
  supported ops, spec §3.2); requires ``legalize``.
- ``legalize``: name of the PrimFunc its legalization produces (``"add"``; the in-place
  rewrite names its copy ``add_inplace``).
- ``calls_prim_func``: ``args[0]`` must be the GlobalVar of a PrimFunc (the ``call_tir``
  family; checked by well-formedness).
- ``schema``: the op's :class:`~memcore_py.ir.op_schema.Schema` (positional Relax arguments
  with their kinds and defaults, attributes with their kinds and defaults in TVM's printing
  order, the TVMScript wrapper's signature), or None for the lowering-level ops the parser
  and printer handle by hand (``call_tir``, allocations, ...). Every high-level op has one.
  **Attribute values** are plain Python values, one representation per kind (``int``,
  tuple of ints, ``float``, ``bool``, ``str``, dtype ``str`` or None for TVM's void dtype,
  float32 ``FloatImm``), tabled in :mod:`memcore_py.ir.op_schema`; the parser stores every
  attribute (defaults filled in), the printer writes every attribute, a type rule reads them
  with :meth:`Op.attr`.
- ``attr_names``: keyword attributes in TVMScript order (``R.split(x, indices_or_sections=2,
  axis=0)``): the schema's attribute names when there is a schema; ``n_args``: (min, max)
  positional Relax arguments (max None = variadic), implied by the schema when there is one.
- ``kill_role``: how KillAfterLastUse treats ``v = <call of the op>`` (TVM ``CollectLastUsage``
  in src/relax/transform/kill_after_last_use.cc): ``"storage"`` — ``v`` is a storage object
  (killed with ``kill_storage``) and the arguments are not uses (``memory.alloc_storage``,
  ``vm.alloc_storage``); ``"kill_tensor"`` / ``"kill_storage"`` / ``"kill_object"`` — the
  call kills its one argument, which is then never killed again, and is not a use (the kill
  ops, one per kill kind: :func:`kill_op` finds them); ``"no_register"`` — ``v`` holds no VM
  register and is never killed (``null_value``); None for every other op. Every walk of that
  pass, over memcore's IR or TVM's objects, takes these ops from :func:`ops_with_kill_role`.
- ``type_rule``: ``rule(call, arg_types) -> Type``, the result type of a call whose
  arguments have types ``arg_types`` (TVM ``FInferStructInfo``); what
  :func:`~memcore_py.ir.infer.infer_type` calls. None: calls of the op cannot be inferred.

Unknown names are an error (:class:`~memcore_py.errors.IRError`), never a silent new op.
The one exception is explicit: :func:`opaque_op` gives the TVM bridge an opaque :class:`Op`
for an operator TVM has and memcore does not model, carrying only what the memory passes
read of any op (its name and purity, TVM ``FPurity``; every other property at its default:
uses its arguments, shares no storage, no kill role, no type rule). It is not registered:
memcore's parser does not read it, and its calls carry their type from TVM.
"""
from __future__ import annotations

from ..errors import IRError
from .expr import ExternFunc
from .op_schema import ABSENT, REQUIRED, Schema, complete_attrs, convert_attr

__all__ = [
    "Op",
    "opaque_op",
    "is_opaque",
    "register_op",
    "get_op",
    "is_registered",
    "list_ops",
    "shares_storage",
    "RESHAPE_PACKED",
    "KILL_ROLES",
    "KILL_KINDS",
    "kill_op",
    "ops_with_kill_role",
]

_set = object.__setattr__

#: The values of ``Op.kill_role`` other than None (module docstring).
KILL_ROLES = ("storage", "kill_tensor", "kill_storage", "kill_object", "no_register")
#: KillAfterLastUse's kill kinds in its kill order (0 tensor, 1 storage, 2 object): the kill
#: role of the op that kills a value of each kind.
KILL_KINDS = ("kill_tensor", "kill_storage", "kill_object")

#: Packed function whose result is its first argument's storage (TVM PR #20134, "Track
#: lowered reshape storage aliases"; ``RewriteDataflowReshape`` lowers ``R.reshape`` to it).
RESHAPE_PACKED = "vm.builtin.reshape"


class Op:
    """A registered primitive operator. Immutable; one object per name. The properties are
    described in the module docstring; create ops with :func:`register_op`."""

    #: The properties (module docstring), compared when an op is registered again.
    PROPERTIES = (
        "name", "pure", "shares_storage", "view_memory", "inplace", "legalize", "calls_prim_func",
        "attr_names", "n_args", "type_rule", "schema", "kill_role",
    )
    __slots__ = PROPERTIES + ("_attr_specs",)

    def __init__(self, name, *, type_rule=None, pure=True, shares_storage=False, view_memory=False,
                 inplace=False, legalize=None, calls_prim_func=False, attr_names=(), n_args=(0, None), schema=None,
                 kill_role=None):
        if not isinstance(name, str) or not name:
            raise IRError(f"an op name must be a non-empty str; got {name!r}")
        if type_rule is not None and not callable(type_rule):
            raise IRError(f"the type_rule of {name} must be callable or None; got {type_rule!r}")
        if legalize is not None and not isinstance(legalize, str):
            raise IRError(f"the legalize name of {name} must be a str or None; got {legalize!r}")
        if inplace and legalize is None:
            raise IRError(f"{name} is registered inplace=True, which needs its legalize name; got None")
        if shares_storage and not view_memory:
            raise IRError(
                f"{name} is registered shares_storage=True, which implies view_memory=True "
                f"(a result that is args[0]'s storage may alias it); got view_memory=False"
            )
        if kill_role is not None and kill_role not in KILL_ROLES:
            raise IRError(f"the kill_role of {name} must be None or one of {KILL_ROLES}; got {kill_role!r}")
        if schema is not None:
            if not isinstance(schema, Schema):
                raise IRError(f"the schema of {name} must be an op_schema.Schema; got {schema!r}")
            attr_names = tuple(a.name for a in schema.attrs)
            n_args = (sum(1 for a in schema.args if a.default is not ABSENT), len(schema.args))
        lo, hi = n_args
        if lo < 0 or (hi is not None and hi < lo):
            raise IRError(f"the n_args of {name} must be (min, max) with 0 <= min <= max; got {n_args!r}")
        _set(self, "name", name)
        _set(self, "pure", bool(pure))
        _set(self, "shares_storage", bool(shares_storage))
        _set(self, "view_memory", bool(view_memory))
        _set(self, "inplace", bool(inplace))
        _set(self, "legalize", legalize)
        _set(self, "calls_prim_func", bool(calls_prim_func))
        _set(self, "attr_names", tuple(attr_names))
        _set(self, "n_args", (lo, hi))
        _set(self, "type_rule", type_rule)
        _set(self, "schema", schema)
        _set(self, "kill_role", kill_role)
        # attribute name -> its op_schema.Attr, read by convert_attrs for every call built
        _set(self, "_attr_specs", {a.name: a for a in schema.attrs} if schema is not None else None)

    def __setattr__(self, key, value):
        raise AttributeError("Op is immutable")

    __hash__ = object.__hash__

    @property
    def script_name(self) -> str:
        """The TVMScript spelling: ``relax.nn.relu`` -> ``R.nn.relu``."""
        return "R." + self.name[len("relax."):] if self.name.startswith("relax.") else self.name

    def n_args_error(self, n: int) -> str | None:
        """The message for a call of this op with ``n`` arguments when ``n`` is outside
        ``n_args`` (``"relax.add takes 2 arguments; got 3"``); None when it fits."""
        lo, hi = self.n_args
        if lo <= n and (hi is None or n <= hi):
            return None
        want = f"{lo}" if lo == hi else (f"{lo} to {hi}" if hi is not None else f"at least {lo}")
        return f"{self.name} takes {want} arguments; got {n}"

    def attr(self, call, key):
        """Attribute ``key`` of ``call`` (a call of this op): its value, else the schema's
        default (derived defaults computed); :class:`IRError` if the schema has no such
        attribute or it is required and missing. Ops without a schema: the value or None."""
        attrs = call.attrs
        if key in attrs:
            return attrs[key]
        schema = self.schema
        if schema is None:
            return None
        for a in schema.attrs:
            if a.name == key:
                if a.default is REQUIRED:
                    raise IRError(f"{self.name} needs the attribute {key!r}")
                if callable(a.default):
                    return self.complete_attrs(attrs, call.args)[key]
                return a.default
        raise IRError(f"{self.name} has no attribute {key!r}")

    def complete_attrs(self, attrs: dict, args) -> dict:
        """``attrs`` with every schema attribute present in printing order (defaults filled,
        derived ones computed from ``args``); the dict itself for ops without a schema.
        :class:`IRError` for names outside the schema or a missing required attribute."""
        if self.schema is None:
            return attrs
        return complete_attrs(self.name, self.schema, attrs, args)

    def convert_attrs(self, attrs: dict, args=()) -> dict:
        """``attrs`` as the parser would store them: every value converted to its kind's one
        representation (:func:`~memcore_py.ir.op_schema.convert_attr`: ``IntImm`` -> int, a
        list -> a tuple, ``padding=1`` -> ``(1, 1, 1, 1)``, ...) and every attribute present
        (:meth:`complete_attrs`). For code that builds calls from other sources (the TVM
        bridge). Ops without a schema: ``attrs`` unchanged. :class:`IRError` naming the op
        and the attribute when a value does not fit."""
        schema = self.schema
        if schema is None:
            return attrs
        specs = self._attr_specs
        out = {}
        for k, v in attrs.items():
            spec = specs.get(k)
            out[k] = convert_attr(self.name, spec, v) if spec is not None else v
        return self.complete_attrs(out, args)

    def _properties(self) -> tuple:
        return tuple(getattr(self, k) for k in Op.PROPERTIES)

    def __repr__(self):
        return f"Op({self.name!r})"


_REGISTRY: dict[str, Op] = {}


#: (name, pure) -> its opaque Op: one object per operator, as the registry's, so that passes
#: compare ops by identity.
_OPAQUE: dict = {}


def opaque_op(name: str, *, pure: bool) -> Op:
    """The opaque :class:`Op` of the operator ``name`` that memcore does not model (its calls
    use their arguments, share no storage and are ``pure`` as TVM's ``FPurity`` says): an
    ``Op`` like a registered one, so every pass treats it by its properties.

    Raises
    ------
    IRError
        ``name`` is a registered op (use :func:`get_op`), or not an op name.
    """
    if name in _REGISTRY:
        raise IRError(f"operator {name!r} is registered; it is not opaque")
    key = (name, bool(pure))
    op = _OPAQUE.get(key)
    if op is None:
        op = _OPAQUE[key] = Op(name, pure=bool(pure))
    return op


def register_op(name: str, **properties) -> Op:
    """Register the op ``name`` with all its properties and return its :class:`Op`.

    Parameters
    ----------
    name : str
        ``"relax.<name>"``.
    **properties
        ``type_rule``, ``pure``, ``shares_storage``, ``view_memory``, ``inplace``,
        ``legalize``, ``calls_prim_func``, ``attr_names``, ``n_args``, ``schema``,
        ``kill_role`` (module docstring).

    Returns
    -------
    Op
        The new op; registering a name again with identical properties returns the existing
        op (its schema may be left out then).

    Raises
    ------
    IRError
        Inconsistent properties, or ``name`` is registered with different properties.
    """
    old = _REGISTRY.get(name)
    if old is not None and old.schema is not None and properties.get("schema") is None:
        properties = dict(properties, schema=old.schema)  # a schema may be left out when registering again
    op = Op(name, **properties)
    if old is None:
        _REGISTRY[name] = op
        return op
    if old._properties() != op._properties():
        diff = [k for k, a, b in zip(Op.PROPERTIES, old._properties(), op._properties()) if a != b]
        raise IRError(f"operator {name!r} is already registered with different properties: {', '.join(diff)}")
    return old


def is_opaque(op) -> bool:
    """Whether ``op`` is an opaque op of :func:`opaque_op` (memcore does not model it)."""
    return _OPAQUE.get((op.name, op.pure)) is op


def get_op(name: str) -> Op:
    """The :class:`Op` named ``name`` (``"relax.add"``); :class:`IRError` if unknown."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise IRError(f"unknown operator {name!r}; registered operators are listed by list_ops()") from None


def is_registered(name: str) -> bool:
    """Whether an op named ``name`` is registered."""
    return name in _REGISTRY


def list_ops():
    """All registered op names, sorted."""
    return sorted(_REGISTRY)


def ops_with_kill_role(*roles: str) -> tuple:
    """The registered ops whose ``kill_role`` is one of ``roles``, in name order."""
    bad = [r for r in roles if r not in KILL_ROLES]
    if bad:
        raise IRError(f"kill roles must be among {KILL_ROLES}; got {bad}")
    return tuple(_REGISTRY[n] for n in sorted(_REGISTRY) if _REGISTRY[n].kill_role in roles)


def kill_op(kind: int) -> Op:
    """The op KillAfterLastUse emits to kill a value of kill kind ``kind`` (0 tensor, 1
    storage, 2 object: :data:`KILL_KINDS`)."""
    if kind not in (0, 1, 2):
        raise IRError(f"a kill kind must be 0 (tensor), 1 (storage) or 2 (object); got {kind!r}")
    (op,) = ops_with_kill_role(KILL_KINDS[kind])
    return op


def shares_storage(callee) -> bool:
    """Whether a call of ``callee`` returns ``args[0]``'s storage (TVM ``IsInplaceMemoryOp``,
    extended to the packed ``vm.builtin.reshape`` by PR #20134): an :class:`Op` registered
    ``shares_storage=True``, or an :class:`~memcore_py.ir.expr.ExternFunc` named
    :data:`RESHAPE_PACKED`. Any other callee (GlobalVar, Var, ...) is False.

    For ``in`` tests in hot loops over ops, :data:`memcore_py.ir.ops.SHARES_STORAGE_OPS`
    holds the same ops."""
    t = type(callee)
    if t is Op:
        return callee.shares_storage
    return t is ExternFunc and callee.global_symbol == RESHAPE_PACKED
