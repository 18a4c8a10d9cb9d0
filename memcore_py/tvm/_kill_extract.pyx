# cython: language_level=3
"""Compiled KillAfterLastUse of one flat Relax function, on the TVM objects themselves (built by
``setup.py``; :mod:`memcore_py.tvm.kill_extract` calls it and declines to the full conversion
what it declines).

Design
------
:func:`kill_function` runs the rules of the compiled flat walk over memcore's IR
(:func:`memcore_py.transform._kill_walk.kill_flat`: CanonicalizeBindings' re-binding removal,
then a kill after each last use) on a function whose every binding is one of

- ``v = <call>`` of an ``Op``, a ``GlobalVar`` or an ``ExternFunc`` whose arguments are
  variables or leaves without variables (shapes, prim values, strings, dtypes, constants,
  functions): uses recorded at the binding; ``v`` gets the kill of its type (tensor:
  ``kill_tensor``; ``R.Object`` or a non-empty tuple: ``kill_object``; shapes, prim values,
  functions and ``R.Tuple()``: none; the rule is ``kill_kind_of`` of
  ``memcore_py/analysis/_kill_rules.pxd``, this walk only reads TVM's type into its code);
- ``v = R.memory.alloc_storage(...)`` / ``R.vm.alloc_storage`` / ``R.null_value()`` of such
  leaves (a storage gets ``kill_storage``; a null value nothing);
- an explicit kill of one variable (that variable is not killed again);
- ``y = x``: dropped, and every later use of ``y`` reads ``x`` (the calls that used ``y`` are
  rebuilt with the same op, attributes, type arguments and type);

in binding blocks that are not dataflow blocks, with a variable or such a leaf as result. The
variable numbering and the kill order are the flat walk's own (``VarTable`` and
``kill_schedule``, ``memcore_py/transform/_kill_walk.pxd``), so both paths place and name the
kills alike; tests compare both on every shipped model and on random modules. Anything else
(a ``MatchCast``, a tuple or get-item, a constant-bound variable, a nested scope, a dataflow
block, a kill call of something other than one variable, a type other than those above)
declines: None, and the caller runs the full conversion, which handles and checks it.

Reads go through the checked :class:`~memcore_py.tvm._ffi_reader.Layout` (an object's fields
are read only after its type index matched), writes through the compiled writer's
constructors (:mod:`memcore_py.tvm._ffi_writer`); every object built is owned by the caller's
``Keep``. The ``VarTable`` keys are the TVM variables' addresses (compared, never
dereferenced as Python objects).
"""
from libc.stdint cimport int32_t, int64_t
from libcpp.vector cimport vector
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from cpython.object cimport PyObject

from memcore_py.analysis._kill_rules cimport (DEF_NO_REGISTER, DEF_PLAIN, DEF_STORAGE, TY_FUNC, TY_OBJECT, TY_PRIM,
                                             TY_SHAPE, TY_TENSOR, TY_TUPLE, TY_UNIT, kill_kind_of)
from memcore_py.transform._kill_walk cimport VarTable, kill_name, kill_schedule
from memcore_py.tvm._ffi_abi cimport (
    FFIAny, K_ARRAY, K_DATATYPE, K_OBJECT_BEGIN, any_obj, any_type, array_data, array_size, obj_field, obj_type,
)
from memcore_py.tvm._ffi_reader cimport Layout
from memcore_py.tvm._ffi_writer cimport (
    CTOR_BLOCK, CTOR_EMPTY_ARRAY, CTOR_TUPLE, Keep, handle, new_binding, new_call, new_var, new_with_array, set_obj,
)

cdef enum:
    ARG_VAR = 0
    ARG_LEAF = 1
    ARG_OTHER = 2


cdef inline int classify(Layout L, const char* any) noexcept:
    """What an argument (a ``TVMFFIAny``) is for the walk: a variable, a leaf holding no Relax
    variable, or something the walk declines."""
    if any_obj(any) == NULL:
        return ARG_OTHER
    return classify_type(L, any_type(any))


cdef inline int classify_type(Layout L, int32_t t) noexcept:
    """:func:`classify` of an object of type index ``t``."""
    if t < K_OBJECT_BEGIN:
        return ARG_OTHER
    if t == L.t_var or t == L.t_dfvar:
        return ARG_VAR
    if (t == L.t_tuple or t == L.t_tuple_get_item or t == L.t_call or t == L.t_if or t == L.t_seq
            or t == L.t_function or t == L.t_binding or t == L.t_match_cast or t == L.t_block or t == L.t_dfblock):
        return ARG_OTHER
    return ARG_LEAF


cdef inline int type_code(Layout L, const char* ty) noexcept:
    """The ``TY_*`` code (``memcore_py/analysis/_kill_rules.pxd``) of the TVM type ``ty``, or -1
    for a type this reader declines (none, or one it does not know)."""
    cdef int32_t t
    if ty == NULL:
        return -1
    t = obj_type(ty)
    if t == L.t_tensor_type:
        return TY_TENSOR
    if t == L.t_any_type:
        return TY_OBJECT
    if t == L.t_tuple_type:
        return TY_TUPLE if array_size(obj_field(ty, L.o_tuple_fields)) > 0 else TY_UNIT
    if t == L.t_func_type:
        return TY_FUNC
    if t == L.t_shape_type:
        return TY_SHAPE
    if t == L.t_prim_type:
        return TY_PRIM
    return -1


cdef inline int type_kind(Layout L, const char* ty) noexcept:
    """The kill kind of a variable of type ``ty`` defined by a plain binding
    (``kill_kind_of``), or -2 for a type the walk declines."""
    cdef int code = type_code(L, ty)
    if code < 0:
        return -2
    return kill_kind_of(DEF_PLAIN, code)


cdef inline bint plain_value(Layout L, const char* value, int32_t t) noexcept:
    """Whether a binding's value of type index ``t`` is a leaf the flat walk keeps as it is
    (a shape, an integer prim value, a string, a dtype, a function); a tensor constant is not
    (its variable's uses would read the constant)."""
    if t == L.t_shape_expr or t == L.t_int_imm or t == L.t_string_imm or t == L.t_extern_func or t == L.t_global_var:
        return True
    if t == L.t_generic_const:
        return any_type(value + L.o_const_value) == K_DATATYPE
    return False


cdef inline PyObject* key(const char* p) noexcept:
    return <PyObject*>p





cdef void* record_uses(Layout L, VarTable V, Keep K, const char* items, Py_ssize_t pos,
                       vector[FFIAny]* resolved) except? NULL:
    """Record the variables among the elements of the ``ffi.Array`` ``items`` (arguments, or
    tuple fields) as used at output position ``pos``, each re-bound one as what it stands
    for. Returns ``items`` when none was re-bound, NULL when an element is neither a
    variable nor a leaf (declined); otherwise any other non-NULL value, ``resolved`` then
    holding the elements with the re-bindings resolved."""
    cdef int64_t n = array_size(items), ia
    cdef const char* a
    cdef int c
    cdef Py_ssize_t j
    cdef PyObject* r
    cdef bint subst = False
    for ia in range(n):
        a = array_data(items) + 16 * ia
        c = classify(L, a)
        if c == ARG_OTHER:
            return NULL
        if c == ARG_VAR:
            r = V.stands_for(key(any_obj(a)))
            subst = subst or r != key(any_obj(a))
            V.last[V.get(r)] = pos
    if not subst:
        return <void*>items
    resolved.resize(n)
    for ia in range(n):
        a = array_data(items) + 16 * ia
        resolved[0][ia] = (<const FFIAny*>a)[0]
        if classify(L, a) == ARG_VAR:
            set_obj(&resolved[0][ia], <void*>V.stands_for(key(any_obj(a))))
    return <void*>K  # not items, not NULL


cdef void* rebuilt_binding(Layout L, Keep K, const char* var, const char* call, const FFIAny* new_args,
                           int64_t n) except NULL:
    """A new ``VarBinding`` of ``var`` to ``call`` with the arguments ``new_args`` (same op,
    attributes, type arguments and type); owned by ``K``."""
    return new_binding(K, var, new_call(K, <void*>obj_field(call, L.o_expr_ty), <void*>obj_field(call, L.o_call_op),
                                        new_args, n, <void*>obj_field(call, L.o_call_attrs),
                                        <void*>obj_field(call, L.o_call_ty_args)))


cdef void* rebuilt_tuple(Layout L, Keep K, vector[FFIAny]& fields) except? NULL:
    """A new tuple of ``fields`` (owned by ``K``), or NULL when TVM could not type it (a field
    without a type: declined)."""
    cdef void* htuple = new_with_array(K, CTOR_TUPLE, NULL, NULL, fields.data(), <int64_t>fields.size(), NULL, NULL,
                                       b"a tuple")
    cdef const char* ty = obj_field(<const char*>htuple, L.o_expr_ty)
    if ty == NULL or obj_type(ty) == L.t_type_missing:
        return NULL
    return htuple


cdef void* rebuilt_tuple_binding(Layout L, Keep K, const char* var, vector[FFIAny]& fields) except? NULL:
    """A new ``VarBinding`` of ``var`` to :func:`rebuilt_tuple` of ``fields``, or NULL."""
    cdef void* htuple = rebuilt_tuple(L, K, fields)
    if htuple == NULL:
        return NULL
    return new_binding(K, var, htuple)


cdef void* kill_binding(Keep K, Py_ssize_t k, void* op, const char* target, void* unit) except NULL:
    """``_k = <op>(target)``: a new ``VarBinding`` of a fresh ``R.Tuple()`` variable named as
    the flat walk names its k-th kill (``kill_name``: ``_``, ``_1``, ...); owned by ``K``."""
    cdef bytes name = kill_name(k).encode()
    cdef FFIAny arg
    cdef void* hvar = new_var(K, name, unit)
    set_obj(&arg, <void*>target)
    return new_binding(K, <const char*>hvar, new_call(K, unit, op, &arg, 1, NULL, handle(CTOR_EMPTY_ARRAY)))


cdef class KillRoleOps:
    """The addresses of TVM's ops by kill role (``Op.kill_role`` in memcore's op table,
    :mod:`memcore_py.ir.op`), as :func:`kill_function` compares them."""
    cdef size_t kill[3]                 # the kill op of each kill kind: tensor, storage, object
    cdef vector[size_t] storage         # ops whose result is a storage object (args not uses)
    cdef vector[size_t] no_register     # ops whose result holds no register (never killed)

    def __init__(self, tuple kill, tuple storage, tuple no_register):
        if len(kill) != 3:
            raise ValueError(f"kill must hold the three kill ops' addresses; got {len(kill)}")
        for i in range(3):
            self.kill[i] = kill[i]
        for a in storage:
            self.storage.push_back(a)
        for a in no_register:
            self.no_register.push_back(a)


cdef inline bint among(size_t op, vector[size_t]& addresses) noexcept:
    for a in addresses:
        if a == op:
            return True
    return False


def kill_function(Layout L, Keep K, size_t func, KillRoleOps ops, size_t unit):
    """KillAfterLastUse of the Relax ``Function`` at ``func`` (module docstring).

    Parameters
    ----------
    L : Layout
    K : Keep
        Owns every object built; ``func`` must stay alive while it is used.
    func : int
        The function's address.
    ops : KillRoleOps
        TVM's ops by kill role.
    unit : int
        The address of an ``R.Tuple()`` type (the kill variables' and calls' type).

    Returns
    -------
    None, False or tuple
        None: declined (run the full conversion). False: the pass leaves the function as it
        is. Otherwise ``(block, result)``: the address of the function's one new
        ``BindingBlock`` (0 when it has no binding left) and of its result expression.
    """
    cdef const char* f = <const char*>func
    cdef const char* seq
    cdef const char* blocks
    cdef const char* blk
    cdef const char* arr
    cdef const char* b
    cdef const char* var
    cdef const char* value
    cdef const char* op
    cdef const char* args
    cdef const char* a
    cdef const char* target
    cdef const char* result
    cdef const char* data
    cdef const char* fields
    cdef int64_t n_blocks, n_total = 0, i, ib, n, na, ia
    cdef int32_t t, ot
    cdef int kind, c
    cdef Py_ssize_t j, pos
    cdef PyObject* r
    cdef bint changed, subst
    cdef vector[FFIAny] out
    cdef vector[FFIAny] new_args
    cdef FFIAny item
    cdef void* h
    if f == NULL or obj_type(f) != L.t_function:
        return None
    seq = obj_field(f, L.o_func_body)
    if seq == NULL or obj_type(seq) != L.t_seq:
        return None
    blocks = obj_field(seq, L.o_seq_blocks)
    if blocks == NULL or obj_type(blocks) != K_ARRAY:
        return None
    n_blocks = array_size(blocks)
    for ib in range(n_blocks):
        if any_type(array_data(blocks) + 16 * ib) != L.t_block:
            return None
        arr = obj_field(any_obj(array_data(blocks) + 16 * ib), L.o_block_bindings)
        if arr == NULL or obj_type(arr) != K_ARRAY:
            return None
        n_total += array_size(arr)
    cdef VarTable V = VarTable(n_total + 8)
    changed = n_blocks > 1
    out.reserve(n_total)
    for ib in range(n_blocks):
        arr = obj_field(any_obj(array_data(blocks) + 16 * ib), L.o_block_bindings)
        data = array_data(arr)
        n = array_size(arr)
        for i in range(n):
            if any_type(data + 16 * i) != L.t_binding:
                return None  # a MatchCast: the full conversion canonicalizes its symbolic vars
            b = any_obj(data + 16 * i)
            var = obj_field(b, L.o_b_var)
            value = obj_field(b, L.o_b_value)
            if var == NULL or obj_type(var) != L.t_var or value == NULL:
                return None
            t = obj_type(value)
            if t == L.t_var:  # y = x: dropped; y's uses read x (or what x stands for)
                V.rebind(key(var), key(value))
                changed = True
                continue
            if t == L.t_tuple:  # kept; its fields' re-bindings resolved
                kind = type_kind(L, obj_field(var, L.o_expr_ty))
                fields = obj_field(value, L.o_tuple_expr_fields)
                if kind == -2 or fields == NULL or obj_type(fields) != K_ARRAY:
                    return None
                item = (<const FFIAny*>(data + 16 * i))[0]
                h = record_uses(L, V, K, fields, <Py_ssize_t>out.size(), &new_args)
                if h == NULL:
                    return None
                if kind >= 0:
                    V.set_kind(V.get(key(var)), <signed char>kind)
                if h != <void*>fields:
                    set_obj(&item, rebuilt_tuple_binding(L, K, var, new_args))
                    if item.value == 0:
                        return None
                    changed = True
                out.push_back(item)
                continue
            if t != L.t_call:
                if not plain_value(L, value, t):
                    return None
                kind = type_kind(L, obj_field(var, L.o_expr_ty))  # kept as it is
                if kind == -2:
                    return None
                if kind >= 0:
                    V.set_kind(V.get(key(var)), <signed char>kind)
                out.push_back((<const FFIAny*>(data + 16 * i))[0])
                continue
            op = obj_field(value, L.o_call_op)
            args = obj_field(value, L.o_call_args)
            if op == NULL or args == NULL or obj_type(args) != K_ARRAY:
                return None
            na = array_size(args)
            item = (<const FFIAny*>(data + 16 * i))[0]
            if <size_t>op == ops.kill[0] or <size_t>op == ops.kill[1] or <size_t>op == ops.kill[2]:
                if na != 1 or classify(L, array_data(args)) != ARG_VAR:
                    return None  # the full conversion reports a malformed kill
                target = any_obj(array_data(args))
                r = V.stands_for(key(target))
                if r != key(target):
                    target = <const char*>r
                    new_args.resize(1)
                    set_obj(&new_args[0], <void*>target)
                    set_obj(&item, rebuilt_binding(L, K, var, value, new_args.data(), 1))
                    changed = True
                V.killed[V.get(key(target))] = 1
                out.push_back(item)
                continue
            if among(<size_t>op, ops.storage) or among(<size_t>op, ops.no_register):
                for ia in range(na):
                    if classify(L, array_data(args) + 16 * ia) != ARG_LEAF:
                        return None
                kind = kill_kind_of(DEF_STORAGE if among(<size_t>op, ops.storage) else DEF_NO_REGISTER, TY_OBJECT)
                if kind >= 0:
                    V.set_kind(V.get(key(var)), <signed char>kind)
                out.push_back(item)
                continue
            ot = obj_type(op)
            if ot != L.t_op and ot != L.t_global_var and ot != L.t_extern_func:
                return None
            kind = type_kind(L, obj_field(var, L.o_expr_ty))
            if kind == -2:
                return None
            h = record_uses(L, V, K, args, <Py_ssize_t>out.size(), &new_args)
            if h == NULL:
                return None
            if kind >= 0:
                V.set_kind(V.get(key(var)), <signed char>kind)
            if h != <void*>args:
                set_obj(&item, rebuilt_binding(L, K, var, value, new_args.data(), na))
                changed = True
            out.push_back(item)
    result = obj_field(seq, L.o_seq_body)
    if result == NULL:
        return None
    t = obj_type(result)
    if t == L.t_var or t == L.t_dfvar:
        r = V.stands_for(key(result))
        if r != key(result):
            result = <const char*>r
            changed = True
        V.last[V.get(r)] = -1
    elif t == L.t_tuple:
        fields = obj_field(result, L.o_tuple_expr_fields)
        if fields == NULL or obj_type(fields) != K_ARRAY:
            return None
        h = record_uses(L, V, K, fields, -1, &new_args)
        if h == NULL:
            return None
        if h != <void*>fields:
            result = <const char*>rebuilt_tuple(L, K, new_args)
            if result == NULL:
                return None
            changed = True
    elif classify_type(L, t) != ARG_LEAF:
        return None
    n = <int64_t>out.size()
    cdef Py_ssize_t* order = <Py_ssize_t*>PyMem_Malloc((2 * V.n_defs + 1) * sizeof(Py_ssize_t))
    if order == NULL:
        raise MemoryError()
    cdef Py_ssize_t* at = order + V.n_defs
    cdef Py_ssize_t n_kills, kc = 0
    cdef vector[FFIAny] final
    try:
        n_kills = kill_schedule(V, n, order, at)
        if n_kills == 0 and not changed and (n_blocks == 0 or n > 0):
            return False
        final.reserve(n + n_kills)
        for i in range(n):
            final.push_back(out[i])
            while kc < n_kills and at[kc] == i:
                j = order[kc]
                set_obj(&item, kill_binding(K, kc, <void*>ops.kill[V.kind[j]], <const char*>V.keys[j], <void*>unit))
                final.push_back(item)
                kc += 1
    finally:
        PyMem_Free(order)
    if final.size() == 0:
        return 0, <size_t>result
    h = new_with_array(K, CTOR_BLOCK, NULL, NULL, final.data(), <int64_t>final.size(), NULL, NULL, b"a block")
    return <size_t>h, <size_t>result
