# cython: language_level=3
"""Compiled writes of TVM objects for :mod:`memcore_py.tvm.to_tvm` (built by ``setup.py``; the
Python writer is the fallback for everything this module declines).

Design
------
Writing through TVM's Python API costs a Python-level FFI call per constructor (the
arguments are converted one by one, lists become ``ffi.Array`` through another call, and the
result gets a Python wrapper), and a new binding of a lowered module needs four of them
(variable, argument array, call, binding). A pass that adds many bindings
(StaticPlanBlockMemory or KillAfterLastUse on a long chain) paid more for that than for the
pass itself.

Here the same constructors (TVM's registered global functions ``ir.Var``, ``ir.Call``,
``relax.VarBinding``, ``ffi.Array``, ...) are called through tvm_ffi's C API
(``TVMFFIFunctionCall``, ``tvm/ffi/c_api.h``), with ``TVMFFIAny`` arguments built in place
from object addresses, and the results stay raw handles: no Python wrapper is made for an
object the caller does not ask for. The C API's entry points are taken from the
``libtvm_ffi`` that tvm_ffi itself loaded (``tvm_ffi.LIB``), so nothing is linked at build
time and memcore builds without TVM.

Ownership: every handle a constructor returns is owned by a :class:`Keep` (one reference,
released when the ``Keep`` is freed); node maps (``reuse`` / ``record`` of ``to_tvm``,
:class:`~memcore_py.tvm._node_map.NodeMap`) hold object *addresses*, valid while their
``Keep`` is alive. A ``Keep`` also holds
Python objects (:meth:`Keep.hold`): the source module of a read, so that every address read
from it stays valid. :func:`object_at` gives the Python wrapper of an address, through a
global function registered here (tvm_ffi builds the wrapper as for any returned object).

:func:`write_block` writes one binding block: bindings found in ``reuse`` are the old
objects; a ``VarBinding`` of a ``Call`` without attributes whose callee is
an ``Op`` or a ``GlobalVar`` is built here (``R.builtin.alloc_tensor``'s type arguments
left out when TVM's parser would imply them, as the Python writer does) (its arguments are looked up in the node maps, and
the Python writer writes those that are not there, as it writes every binding declined
here). A failed constructor call raises ``TVMConversionError`` with TVM's message.
"""
from libc.stdint cimport int32_t, int64_t, uint32_t
from libcpp.vector cimport vector
from cpython.unicode cimport PyUnicode_AsUTF8AndSize

from memcore_py.ir._slots cimport get_slot, slot_offset
from memcore_py.tvm._ffi_abi cimport (
    FFIAny, HDR_SIZE, K_ARRAY, K_BOOL, K_ERROR, K_INT, K_NONE, K_OBJECT_BEGIN, K_RAW_STR, array_data, array_size, obj_field,
    obj_type,
)
from memcore_py.tvm._node_map cimport NodeMap, map_get, map_get_typed, map_put
from memcore_py.tvm._ffi_reader cimport Layout

from memcore_py.ir.expr import (
    BindingBlock, Call, DataflowVar, DataTypeImm, GlobalVar, PrimValue, ShapeExpr, StringImm, Var, VarBinding,
)
from memcore_py.ir.op import Op, get_op
from memcore_py.ir.prim import IntImm

from ._api import TVMConversionError


ctypedef struct ByteArray:
    const char* data
    size_t size

ctypedef int (*call_t)(void*, FFIAny*, int32_t, FFIAny*) noexcept nogil
ctypedef int (*ref_t)(void*) noexcept nogil
ctypedef void (*err_move_t)(void**) noexcept nogil
ctypedef void (*err_set_t)(const char*, const char*) noexcept nogil
ctypedef int (*safe_call_t)(void*, const FFIAny*, int32_t, FFIAny*) noexcept nogil
ctypedef int (*create_t)(void*, safe_call_t, void*, void**) noexcept nogil
ctypedef int (*set_global_t)(const ByteArray*, void*, int) noexcept nogil

cdef call_t c_call = NULL
cdef ref_t c_incref = NULL
cdef ref_t c_decref = NULL
cdef err_move_t c_err_move = NULL
cdef err_set_t c_err_set = NULL

# constructors (ffi.Function handles; the Python objects are kept in _FUNCS)
cdef void* f_array = NULL
cdef void* f_var = NULL
cdef void* f_dfvar = NULL
cdef void* f_call = NULL
cdef void* f_binding = NULL
cdef void* f_block = NULL
cdef void* f_dfblock = NULL
cdef void* f_map = NULL
cdef void* f_tuple = NULL
cdef void* f_seq = NULL
cdef void* f_function = NULL
cdef void* f_update_type = NULL
cdef void* f_module = NULL
cdef void* f_type_is_base_of = NULL
cdef void* f_if = NULL
cdef void* f_make_object = NULL  # ffi.MakeObjectFromPackedArgs: an object from its fields, by reflection
cdef void* h_empty_map = NULL
cdef void* h_empty_array = NULL
_FUNCS = []
#: where the block being written is (``_Writer.where``), for constructor errors
_WHERE = ["the module"]
_OBJECT_AT = []

OBJECT_AT_NAME = "memcore.tvm.object_at"

# memcore node slots read without attribute lookups (memcore_py/ir/_slots.pxd)
cdef Py_ssize_t S_B_VAR = slot_offset(VarBinding.var)
cdef Py_ssize_t S_B_VALUE = slot_offset(VarBinding.value)
cdef Py_ssize_t S_OP = slot_offset(Call.op)
cdef Py_ssize_t S_ARGS = slot_offset(Call.args)
cdef Py_ssize_t S_ATTRS = slot_offset(Call.attrs)
cdef Py_ssize_t S_TY_ARGS = slot_offset(Call.ty_args)
cdef Py_ssize_t S_TY = slot_offset(Call.ty)
cdef Py_ssize_t S_VAR_NAME = slot_offset(Var.name)
cdef Py_ssize_t S_BLOCK_BINDINGS = slot_offset(BindingBlock.bindings)
if slot_offset(Var.ty) != S_TY or slot_offset(DataflowVar.ty) != S_TY:
    raise ImportError("memcore_py.tvm._ffi_writer: unexpected slot layout of the IR nodes")
BUILTIN_ALLOC = get_op("relax.builtin.alloc_tensor")


cdef int _object_at(void* self, const FFIAny* args, int32_t n, FFIAny* result) noexcept nogil:
    """The global function behind :func:`object_at`: the object at an address, as a new
    reference (tvm_ffi wraps it as any returned object)."""
    cdef const char* h
    if n != 1 or args[0].type_index != K_INT or args[0].value == 0:
        c_err_set("ValueError", "memcore.tvm.object_at takes one object address")
        return -1
    h = <const char*><size_t>args[0].value
    c_incref(<void*>h)
    result.type_index = obj_type(h)
    result.small_len = 0
    result.value = args[0].value
    return 0


def init(api):
    """Resolve the C API and the constructors once (idempotent); False when this tvm_ffi does
    not export what is needed (the Python writer is then used alone)."""
    global c_call, c_incref, c_decref, c_err_move, c_err_set
    global f_array, f_var, f_dfvar, f_call, f_binding, f_block, f_dfblock, f_map, f_tuple, h_empty_array
    global f_seq, f_function, f_update_type, f_module, h_empty_map, f_type_is_base_of, f_if, f_make_object
    if c_call != NULL:
        return True
    import ctypes

    import tvm_ffi

    lib = getattr(tvm_ffi, "LIB", None)
    if lib is None:
        return False
    try:
        ptr = {n: ctypes.cast(getattr(lib, n), ctypes.c_void_p).value for n in (
            "TVMFFIFunctionCall", "TVMFFIObjectIncRef", "TVMFFIObjectDecRef", "TVMFFIErrorMoveFromRaised",
            "TVMFFIErrorSetRaisedFromCStr", "TVMFFIFunctionCreate", "TVMFFIFunctionSetGlobal")}
    except AttributeError:
        return False
    funcs = [tvm_ffi.get_global_func(n) for n in ("ffi.Array", "ir.Var", "relax.DataflowVar", "ir.Call",
                                                   "relax.VarBinding", "relax.BindingBlock",
                                                   "relax.DataflowBlock", "ffi.Map", "ir.Tuple",
                                                   "relax.SeqExpr", "relax.Function", "relax.UpdateType",
                                                   "ir.IRModule", "relax.TypeIsBaseOf", "relax.If",
                                                   "ffi.MakeObjectFromPackedArgs")]
    empty = api.Array([])
    empty_map = api.Map({})
    c_incref = <ref_t><size_t>ptr["TVMFFIObjectIncRef"]
    c_decref = <ref_t><size_t>ptr["TVMFFIObjectDecRef"]
    c_err_move = <err_move_t><size_t>ptr["TVMFFIErrorMoveFromRaised"]
    c_err_set = <err_set_t><size_t>ptr["TVMFFIErrorSetRaisedFromCStr"]
    cdef create_t create = <create_t><size_t>ptr["TVMFFIFunctionCreate"]
    cdef set_global_t set_global = <set_global_t><size_t>ptr["TVMFFIFunctionSetGlobal"]
    cdef void* fh = NULL
    cdef ByteArray name
    name_bytes = OBJECT_AT_NAME.encode()
    name.data = name_bytes
    name.size = len(name_bytes)
    if create(NULL, _object_at, NULL, &fh) != 0:
        return False
    rc = set_global(&name, fh, 1)
    c_decref(fh)
    if rc != 0:
        return False
    _OBJECT_AT.append(tvm_ffi.get_global_func(OBJECT_AT_NAME))
    _FUNCS.extend(funcs)
    _FUNCS.append(empty)
    _FUNCS.append(empty_map)
    cdef list hs = [f.__chandle__() for f in funcs]
    f_array = <void*><size_t>hs[0]
    f_var = <void*><size_t>hs[1]
    f_dfvar = <void*><size_t>hs[2]
    f_call = <void*><size_t>hs[3]
    f_binding = <void*><size_t>hs[4]
    f_block = <void*><size_t>hs[5]
    f_dfblock = <void*><size_t>hs[6]
    f_map = <void*><size_t>hs[7]
    f_tuple = <void*><size_t>hs[8]
    f_seq = <void*><size_t>hs[9]
    f_function = <void*><size_t>hs[10]
    f_update_type = <void*><size_t>hs[11]
    f_module = <void*><size_t>hs[12]
    f_type_is_base_of = <void*><size_t>hs[13]
    f_if = <void*><size_t>hs[14]
    f_make_object = <void*><size_t>hs[15]
    h_empty_array = <void*><size_t>empty.__chandle__()
    h_empty_map = <void*><size_t>empty_map.__chandle__()
    c_call = <call_t><size_t>ptr["TVMFFIFunctionCall"]  # set last: the "initialised" flag
    return True


cdef void* handle(int which) noexcept:
    """The handle of a constructor, or of the shared empty array (a ``Ctor``); NULL before
    :func:`init` succeeded."""
    if which == CTOR_SEQ:
        return f_seq
    if which == CTOR_FUNCTION:
        return f_function
    if which == CTOR_MODULE:
        return f_module
    if which == CTOR_DFVAR:
        return f_dfvar
    if which == CTOR_DFBLOCK:
        return f_dfblock
    if which == CTOR_ARRAY:
        return f_array
    if which == CTOR_VAR:
        return f_var
    if which == CTOR_CALL:
        return f_call
    if which == CTOR_BINDING:
        return f_binding
    if which == CTOR_BLOCK:
        return f_block
    if which == CTOR_TUPLE:
        return f_tuple
    if which == CTOR_EMPTY_ARRAY:
        return h_empty_array
    return NULL


cdef void release(void* h) noexcept:
    """Drop one reference to the object at ``h`` (an owned handle handed to a constructor)."""
    c_decref(h)


# ------------------------------------------------------------------ for compiled walks
# Constructors for the walks that build on TVM's objects directly (_kill_writer.pyx,
# _spbm_extract.pyx), declared in _ffi_writer.pxd; every object they return is owned by K.
cdef void* owned(Keep K, int ctor, FFIAny* args, int32_t n, const char* what) except NULL:
    """A new object from the constructor ``ctor`` (a ``Ctor``), owned by ``K``."""
    cdef void* h = make(handle(ctor), args, n, what)
    K.own(h)
    return h


cdef void* new_var(Keep K, const char* name, void* ty, bint dataflow=False) except NULL:
    """A new ``Var`` (``DataflowVar`` when ``dataflow``) named ``name`` (a NUL-terminated UTF-8
    string) of type ``ty``."""
    cdef FFIAny cargs[3]
    cargs[0].type_index = K_RAW_STR
    cargs[0].small_len = 0
    cargs[0].value = <int64_t><size_t>name
    set_obj(&cargs[1], ty)
    set_obj(&cargs[2], NULL)
    return owned(K, CTOR_DFVAR if dataflow else CTOR_VAR, cargs, 3, b"a variable")


cdef void* new_binding(Keep K, const char* var, void* value) except NULL:
    """A new ``VarBinding`` of ``var`` to ``value``."""
    cdef FFIAny cargs[3]
    set_obj(&cargs[0], <void*>var)
    set_obj(&cargs[1], value)
    set_obj(&cargs[2], NULL)
    return owned(K, CTOR_BINDING, cargs, 3, b"a binding")


cdef void* new_call(Keep K, void* ty, void* op, const FFIAny* args, int64_t n, void* attrs, void* ty_args) except NULL:
    """A new call: ``ir.Call``'s (type, op, arguments, attributes, type arguments, span), the
    arguments given as ``TVMFFIAny`` s."""
    return new_with_array(K, CTOR_CALL, ty, op, args, n, attrs, ty_args, b"a call")


cdef void* new_with_array(Keep K, int ctor, void* before0, void* before1, const FFIAny* items, int64_t n,
                          void* after0, void* after1, const char* what) except NULL:
    """``ctor(before0, before1, <new ffi.Array of items>, after0, after1, None)`` for a call;
    ``ctor(<array>, None)`` for a tuple or a (dataflow) binding block (``before*`` / ``after*``
    unused).
    The array is released after the call (the new object holds its own reference)."""
    cdef FFIAny cargs[6]
    cdef int32_t n_cargs
    cdef void* harr = make(f_array, <FFIAny*>items, <int32_t>n, what)
    if ctor == CTOR_CALL:
        set_obj(&cargs[0], before0)
        set_obj(&cargs[1], before1)
        set_obj(&cargs[2], harr)
        set_obj(&cargs[3], after0)
        set_obj(&cargs[4], after1)
        set_obj(&cargs[5], NULL)
        n_cargs = 6
    else:
        set_obj(&cargs[0], harr)
        set_obj(&cargs[1], NULL)
        n_cargs = 2
    try:
        return owned(K, ctor, cargs, n_cargs, what)
    finally:
        c_decref(harr)


def object_at(size_t address):
    """The Python wrapper of the TVM object at ``address`` (kept alive by its owner)."""
    return _OBJECT_AT[0](address)


cdef class Keep:
    """Owner of the TVM objects a node map's addresses point to: references to raw handles
    (what the compiled writer built) and Python objects (:meth:`hold`)."""

    def __cinit__(self):
        self.held = []

    def __dealloc__(self):
        cdef size_t i
        if c_decref != NULL:
            for i in range(self.owned.size()):
                c_decref(self.owned[i])

    def hold(self, obj):
        """Keep ``obj`` (a TVM object, or a module whose objects are addressed) alive; returns
        its address."""
        self.held.append(obj)
        return obj.__chandle__()

    def __len__(self):
        return self.owned.size() + len(self.held)


cdef int raise_ffi_error(const char* what) except -1:
    cdef void* err = NULL
    cdef const ByteArray* cell
    c_err_move(&err)
    msg = "unknown error"
    if err != NULL:
        if obj_type(<const char*>err) == K_ERROR:
            cell = <const ByteArray*>(<const char*>err + HDR_SIZE)
            msg = (cell[0].data[:cell[0].size].decode("utf-8", "replace") + ": "
                   + cell[1].data[:cell[1].size].decode("utf-8", "replace"))
        c_decref(err)
    raise TVMConversionError(f"TVM refused {what.decode()}: {msg} (in {_WHERE[0]})")


cdef void* make(void* fn, FFIAny* args, int32_t n, const char* what) except NULL:
    """A new object from the constructor ``fn`` (a new reference the caller owns)."""
    cdef FFIAny res
    res.type_index = K_NONE
    res.small_len = 0
    res.value = 0
    if c_call(fn, args, n, &res) != 0:
        raise_ffi_error(what)
    if res.type_index < K_OBJECT_BEGIN or res.value == 0:
        raise TVMConversionError(f"TVM returned no object for {what.decode()}")
    return <void*><size_t>res.value


cdef inline void set_typed(FFIAny* a, size_t h, int type_index) noexcept:
    """``set_obj`` with the object's type index when the node map knew it (0: read it from
    the object: a cache miss on an object the write does not otherwise touch)."""
    a.small_len = 0
    a.type_index = type_index if type_index != 0 else obj_type(<const char*>h)
    a.value = <int64_t>h


cdef inline void* as_handle(object address) except? NULL:
    return <void*><size_t>address


cdef void* object_handle(object address, str caller, str what, Py_ssize_t k) except NULL:
    """``address`` (an object address handed in from Python) as a handle; TypeError when it is
    not an int, ValueError when it is not positive (an address of no object), both naming
    ``caller`` and ``what`` (a format of ``k``: the list it came from)."""
    if not isinstance(address, int) or isinstance(address, bool):
        raise TypeError(f"{caller}: {what.format(k)} must be an object address (an int), "
                        f"not {type(address).__name__}")
    if address <= 0:
        raise ValueError(f"{caller}: {what.format(k)} is {address}, not an object address")
    return <void*><size_t>address


cdef list block_replacements(list new_blocks, str caller, str what):
    """Each of ``new_blocks`` as :func:`array_spliced`'s replacement of one block: an address as a
    list of that one block, a list of addresses (empty: the block is dropped) as itself; every
    address checked by :func:`object_handle` (``what``: a format of the index in ``new_blocks``)."""
    out = []
    for k in range(len(new_blocks)):
        b = new_blocks[k]
        if type(b) is list:
            for a in <list>b:
                object_handle(a, caller, what, k)
            out.append(b)
        else:
            object_handle(b, caller, what, k)
            out.append([b])
    return out


cdef int check_initialised(str caller) except -1:
    """RuntimeError naming ``caller`` when :func:`init` has not succeeded (no C API to call)."""
    if c_call == NULL:
        raise RuntimeError(f"{caller}: the compiled writer is not initialised (memcore_py.tvm._ffi_writer.init)")
    return 0


cdef object leaf_key(a):
    """The value key of a leaf argument whose TVM object can be shared (a shape, a prim
    value, a dtype, a string: what the Python writer memoises by value); None otherwise."""
    t = type(a)
    if t is ShapeExpr:
        return (ShapeExpr, a.values)
    if t is PrimValue:
        return (PrimValue, a.value)
    if t is DataTypeImm:
        return (DataTypeImm, a.value)
    if t is StringImm:
        return (StringImm, a.value)
    return None


cdef object constant_leaf_key(a):
    """The value key of a leaf whose TVM object holds nothing of one module (a shape of
    integer dims, an integer prim value, a dtype, a string), under which every conversion
    shares its address (``_Writer.shared_leaf_addrs``); None otherwise."""
    t = type(a)
    if t is DataTypeImm:
        return ("dtype", a.value)
    if t is StringImm:
        return ("str", a.value)
    if t is PrimValue:
        v = a.value
        return ("prim", v.value, v.dtype) if type(v) is IntImm else None
    if t is ShapeExpr:
        dims = []
        for d in a.values:
            if type(d) is not IntImm:
                return None
            dims.append((d.value, d.dtype))
        return ("shape", tuple(dims))
    return None


cdef inline object type_addr(W, t):
    """The address of the TVM type written for the memcore type ``t`` (memoised by ``W``)."""
    cdef dict mine = W.type_addrs
    h = mine.get(t)
    if h is None:
        h = W.shared_type_addrs.get(t)
        if h is None:
            return W.ty_addr(t)
        mine[t] = h  # one lookup for the next binding of this type
    return h


cdef object write_call_binding(W, Keep K, bd, c, object reuse, object record, NodeMap vars, dict leaves,
                               dict shared_leaves):
    """The address of a new ``VarBinding`` of the call ``c`` built here, or None when this
    binding is left to the Python writer."""
    cdef vector[FFIAny] av
    cdef FFIAny cargs[6]
    cdef Py_ssize_t j, na
    cdef const char* name
    cdef Py_ssize_t name_len
    cdef size_t h
    cdef int ti
    cdef void* harr
    cdef void* hcall
    cdef void* hvar
    cdef void* hb
    cdef void* hta = h_empty_array
    cdef vector[FFIAny] tv
    cdef tuple args
    if <object>get_slot(c, S_ATTRS):
        return None
    op = <object>get_slot(c, S_OP)
    t = type(op)
    if t is Op:
        hop = W.op_addrs.get(op)
        if hop is None:
            hop = W.op_addr(op)
    elif t is GlobalVar:
        hop = W.gvar_addrs.get(op)
        if hop is None:
            return None
    else:
        return None
    args = <tuple>get_slot(c, S_ARGS)
    na = len(args)
    av.resize(na)
    for j in range(na):
        a = args[j]
        h = map_get_typed(reuse, a, &ti)
        if h != 0:
            set_typed(&av[j], h, ti)
            continue
        h = map_get(vars, a)
        if h == 0:
            key = leaf_key(a)
            if key is not None:  # a leaf: shared by value (an equal object, whoever read it)
                hl = leaves.get(key)
                if hl is None:
                    skey = constant_leaf_key(a)
                    if skey is not None:
                        hl = shared_leaves.get(skey)
                        if hl is not None:  # as W.expr_addr would: remembered, recorded, held
                            leaves[key] = hl
                            if record is not None:  # later bindings find it in the node map, typed
                                h = <size_t>hl
                                c_incref(<void*>h)
                                K.own(<void*>h)
                                map_put(record, a, h, obj_type(<const char*>h))
                h = <size_t>(hl if hl is not None else W.expr_addr(a))
            else:
                h = <size_t>W.expr_addr(a)
        set_obj(&av[j], <void*>h)
    var = <object>get_slot(bd, S_B_VAR)
    ty = <object>get_slot(c, S_TY)
    if ty is None:
        ty = W.inferred_type(c, <object>get_slot(var, S_TY))
    hty = type_addr(W, ty)
    ty_args = <tuple>get_slot(c, S_TY_ARGS)
    if ty_args and not (op is BUILTIN_ALLOC and W.alloc_ty_args_implied(c, <object>get_slot(var, S_TY))):
        tv.resize(len(ty_args))
        for j in range(len(ty_args)):
            set_obj(&tv[j], as_handle(type_addr(W, ty_args[j])))
        hta = make(f_array, tv.data(), <int32_t>tv.size(), "the type arguments of a call")
    harr = make(f_array, av.data(), <int32_t>na, "the arguments of a call")
    set_obj(&cargs[0], as_handle(hty))
    set_obj(&cargs[1], as_handle(hop))
    set_obj(&cargs[2], harr)
    set_obj(&cargs[3], NULL)
    set_obj(&cargs[4], hta)
    set_obj(&cargs[5], NULL)
    try:
        hcall = make(f_call, cargs, 6, "a call")
    finally:  # the call holds its own references to the argument arrays
        c_decref(harr)
        if hta != h_empty_array:
            c_decref(hta)
    K.own(hcall)
    h = map_get(reuse, var)
    if h == 0:
        name = PyUnicode_AsUTF8AndSize(<object>get_slot(var, S_VAR_NAME), &name_len)
        hvt = type_addr(W, <object>get_slot(var, S_TY))
        cargs[0].type_index = K_RAW_STR
        cargs[0].small_len = 0
        cargs[0].value = <int64_t><size_t>name
        set_obj(&cargs[1], as_handle(hvt))
        set_obj(&cargs[2], NULL)
        hvar = make(f_dfvar if type(var) is DataflowVar else f_var, cargs, 3, "a variable")
        K.own(hvar)
        h = <size_t>hvar
        if record is not None:
            map_put(record, var, h, obj_type(<const char*>hvar))
    vars.put_addr(var, h)
    set_obj(&cargs[0], <void*>h)
    set_obj(&cargs[1], hcall)
    set_obj(&cargs[2], NULL)
    hb = make(f_binding, cargs, 3, "a binding")
    K.own(hb)
    if record is not None:  # the call is not recorded: a later write that keeps it keeps its binding
        map_put(record, bd, <size_t>hb, obj_type(<const char*>hb))
    return <size_t>hb


def write_block(W, Keep K, block, bint dataflow, reuse, record, NodeMap vars):
    """The address (owned by ``K``) of a new ``BindingBlock`` (``DataflowBlock`` when
    ``dataflow``) holding ``block``'s bindings: reused from ``reuse``, built here, or written
    by ``W.binding_addr`` (the Python writer). ``reuse`` and ``record`` are node maps
    (:class:`~memcore_py.tvm._node_map.NodeMap`, or dicts), ``vars`` the variables written
    so far."""
    cdef tuple bindings = <tuple>get_slot(block, S_BLOCK_BINDINGS)
    cdef Py_ssize_t i, n = len(bindings)
    cdef vector[FFIAny] items
    cdef FFIAny cargs[2]
    cdef size_t h
    cdef int ti
    cdef void* harr
    cdef void* hblock
    cdef dict leaves = W.leaf_addrs
    cdef dict shared_leaves = W.shared_leaf_addrs
    _WHERE[0] = W.where
    items.resize(n)
    for i in range(n):
        bd = bindings[i]
        h = map_get_typed(reuse, bd, &ti)
        if h != 0:
            set_typed(&items[i], h, ti)
            continue
        r = None
        if type(bd) is VarBinding:
            value = <object>get_slot(bd, S_B_VALUE)
            if type(value) is Call:  # rebuilt even when only the var changed: an equal call
                r = write_call_binding(W, K, bd, value, reuse, record, vars, leaves, shared_leaves)
        h = <size_t>(r if r is not None else W.binding_addr(bd))
        set_obj(&items[i], <void*>h)
    harr = make(f_array, items.data(), <int32_t>n, "the bindings of a block")
    set_obj(&cargs[0], harr)
    set_obj(&cargs[1], NULL)
    try:
        hblock = make(f_dfblock if dataflow else f_block, cargs, 2, "a block")
    finally:
        c_decref(harr)
    K.own(hblock)
    return <size_t>hblock


def leaf_key_of(e):
    """:func:`leaf_key` for Python callers."""
    return leaf_key(e)


def constant_leaf_key_of(e):
    """:func:`constant_leaf_key` for Python callers."""
    return constant_leaf_key(e)


cdef size_t container_of(void* constructor, Keep K, list addresses, const char* what) except 0:
    """The address (owned by ``K``) of the container ``constructor`` makes of the objects at
    ``addresses``, passed as its arguments."""
    cdef Py_ssize_t i, n = len(addresses)
    cdef vector[FFIAny] items
    cdef void* h
    items.resize(n)
    for i in range(n):
        set_obj(&items[i], as_handle(addresses[i]))
    h = make(constructor, items.data(), <int32_t>n, what)
    K.own(h)
    return <size_t>h


def map_of(Keep K, list addresses):
    """The address (owned by ``K``) of a new ``ffi.Map`` of the objects at ``addresses``, keys
    and values alternating (a module's function map: no wrapper per GlobalVar or function)."""
    return container_of(f_map, K, addresses, b"a map")


def array_spliced(Keep K not None, size_t array, list positions not None, list replacements not None):
    """The address (owned by ``K``) of a new ``ffi.Array``: the elements of the ``ffi.Array``
    at ``array`` (objects), with element ``positions[k]`` replaced by the objects at the
    addresses ``replacements[k]`` (a list, possibly longer than one). ``positions``
    increasing. A block's bindings with a few of them rewritten: no Python object per
    element kept.

    Raises
    ------
    ValueError
        ``array`` is not an ``ffi.Array``, the two lists differ in length, a position is
        out of range or not increasing, or a replacement address is not positive.
    TypeError
        A replacement is not a list (or tuple) of int addresses.
    RuntimeError
        :func:`init` has not succeeded.
    """
    cdef const char* arr = <const char*>array
    cdef const char* data
    cdef int64_t n, i, k = 0, p, last = -1
    cdef Py_ssize_t n_pos = len(positions)
    cdef vector[FFIAny] items
    cdef FFIAny a
    check_initialised("array_spliced")
    if arr == NULL or obj_type(arr) != K_ARRAY:
        raise ValueError("array_spliced: not an ffi.Array")
    if len(replacements) != n_pos:
        raise ValueError(f"array_spliced: {n_pos} positions but {len(replacements)} replacements")
    for i in range(n_pos):
        if not isinstance(replacements[i], (list, tuple)):
            raise TypeError(f"array_spliced: replacements[{i}] must be a list of object addresses, "
                            f"not {type(replacements[i]).__name__}")
    n = array_size(arr)
    data = array_data(arr)
    for i in range(n_pos):
        p = positions[i]
        if p <= last or p >= n:
            raise ValueError(f"array_spliced: position {p} out of range or not increasing")
        last = p
    items.reserve(n + 2 * n_pos)
    for i in range(n):
        if k < n_pos and i == <int64_t>positions[k]:
            for r in replacements[k]:
                set_obj(&a, object_handle(r, "array_spliced", "an address in replacements[{}]", k))
                items.push_back(a)
            k += 1
            continue
        a = (<const FFIAny*>(data + 16 * i))[0]
        if a.type_index < K_OBJECT_BEGIN:
            raise ValueError(f"array_spliced: element {i} is not an object")
        items.push_back(a)
    cdef void* h = make(f_array, items.data(), <int32_t>items.size(), b"an array")
    K.own(h)
    return <size_t>h


def block_spliced(Keep K not None, size_t bindings, list positions not None, list replacements not None,
                  bint dataflow):
    """The address (owned by ``K``) of a new ``BindingBlock`` (``DataflowBlock`` when
    ``dataflow``) of the bindings ``Array`` at ``bindings`` with :func:`array_spliced`'s
    replacements.

    Raises
    ------
    ValueError, TypeError, RuntimeError
        As :func:`array_spliced` (whose name the message gives).
    """
    cdef FFIAny cargs[2]
    cdef size_t arr = array_spliced(K, bindings, positions, replacements)
    set_obj(&cargs[0], <void*>arr)
    set_obj(&cargs[1], NULL)
    return <size_t>owned(K, CTOR_DFBLOCK if dataflow else CTOR_BLOCK, cargs, 2, b"a block")


def array_of(Keep K, list addresses):
    """The address (owned by ``K``) of a new ``ffi.Array`` of the objects at ``addresses``
    (a function's parameters: one constructor call instead of a wrapper per element)."""
    return container_of(f_array, K, addresses, b"an array")


# ------------------------------------------------------------------ function and module
def function_with_blocks(Layout L, Keep K, size_t func, size_t blocks, list changed, list new_blocks, size_t ty):
    """The address (owned by ``K``) of a new Relax ``Function``: the one at ``func`` (its
    parameters, return type, purity and attributes), whose body is a new ``SeqExpr`` of the
    blocks of the ``ffi.Array`` at ``blocks`` (its body's) with block ``changed[k]`` replaced
    by the block at address ``new_blocks[k]``, or by the blocks of a list of addresses (empty:
    the block is dropped) (``changed`` increasing), the old body's result,
    typed as the type at ``ty`` (0: the old body's type). What the extracted passes make of a
    function they change, in C: no Python wrapper of the parts.

    Raises
    ------
    ValueError
        ``func`` is not a Relax function with a ``SeqExpr`` body, or ``changed`` is not a
        list of increasing block positions (:func:`array_spliced`).
    """
    cdef const char* f = <const char*>func
    cdef const char* seq = function_body(L, f, "function_with_blocks")
    cdef size_t arr = array_spliced(K, blocks, changed,
                                    block_replacements(new_blocks, "function_with_blocks", "new_blocks[{}]"))
    return function_of_seq(L, K, f, arr, obj_field(seq, L.o_seq_body),
                           <const char*>ty if ty else obj_field(seq, L.o_expr_ty))


cdef const char* function_body(Layout L, const char* f, str caller) except NULL:
    """The ``SeqExpr`` body of the Relax function at ``f``; ValueError naming ``caller`` when
    ``f`` is not a Relax function with a ``SeqExpr`` body."""
    cdef const char* seq
    if f == NULL or obj_type(f) != L.t_function:
        raise ValueError(f"{caller}: not a Relax function")
    seq = obj_field(f, L.o_func_body)
    if seq == NULL or obj_type(seq) != L.t_seq:
        raise ValueError(f"{caller}: the function's body is not a SeqExpr")
    return seq


cdef bint type_is_base_of(const char* base, const char* derived) except -1:
    """TVM's ``IsBaseOf(base, derived)`` on the types at ``base`` and ``derived``."""
    cdef FFIAny cargs[2]
    cdef FFIAny res
    if base == derived:
        return True
    set_obj(&cargs[0], <void*>base)
    set_obj(&cargs[1], <void*>derived)
    res.type_index = K_NONE
    res.small_len = 0
    res.value = 0
    if c_call(f_type_is_base_of, cargs, 2, &res) != 0:
        raise_ffi_error(b"a type base check")
    if res.type_index != K_BOOL:
        if res.type_index >= K_OBJECT_BEGIN and res.value != 0:
            c_decref(<void*><size_t>res.value)
        raise ValueError("relax.TypeIsBaseOf did not return a bool")
    return res.value != 0


cdef size_t function_of_seq(Layout L, Keep K, const char* f, size_t blocks, const char* result,
                            const char* ty) except 0:
    """A new function (owned by ``K``) of the one at ``f`` (its parameters, purity and
    attributes) whose body is a new ``SeqExpr`` of the blocks ``Array`` at ``blocks`` and
    ``result``, typed ``ty``. Its return type is the old one when ``ty`` is a base of it,
    else none, so that TVM's constructor takes the body's (what TVM's mutator does to a
    function it changed; :func:`memcore_py.ir.infer.rebuilt_ret_ty` on memcore IR).

    When the new body's type is the very object the old function returns, the new function
    is the old one's fields with the new body (:func:`function_with_new_body`): what the
    constructor would make of them, without its work per parameter."""
    cdef FFIAny cargs[6]
    cdef FFIAny res
    cdef const char* ret_ty = obj_field(f, L.o_func_ret_ty)
    cdef bint same_types = ret_ty != NULL and <const char*>ty == ret_ty and obj_type(ret_ty) != L.t_type_missing
    if ret_ty != NULL and obj_type(ret_ty) != L.t_type_missing and ty != NULL and obj_type(ty) != L.t_type_missing \
            and not type_is_base_of(ty, ret_ty):
        ret_ty = NULL
    set_obj(&cargs[0], <void*>blocks)
    set_obj(&cargs[1], <void*>result)
    set_obj(&cargs[2], NULL)
    cdef void* hseq = owned(K, CTOR_SEQ, cargs, 3, b"a SeqExpr")
    update_type(hseq, ty, b"the type of a SeqExpr")
    if same_types and obj_field(f, L.o_expr_ty) != NULL:
        return function_with_new_body(L, K, f, hseq)
    set_obj(&cargs[0], <void*>obj_field(f, L.o_func_params))
    set_obj(&cargs[1], hseq)
    set_obj(&cargs[2], <void*>ret_ty)
    cargs[3].type_index = K_BOOL
    cargs[3].small_len = 0
    cargs[3].value = (<const unsigned char*>(f + L.o_func_is_pure))[0] != 0
    set_obj(&cargs[4], <void*>obj_field(f, L.o_func_attrs))
    set_obj(&cargs[5], NULL)
    return <size_t>owned(K, CTOR_FUNCTION, cargs, 6, b"a function")


cdef inline void set_raw_str(FFIAny* a, const char* s) noexcept:
    a.type_index = K_RAW_STR
    a.small_len = 0
    a.value = <int64_t><size_t>s


cdef size_t function_with_new_body(Layout L, Keep K, const char* f, void* body) except 0:
    """A new function (owned by ``K``) with the fields of the Relax function at ``f`` (its
    type, attributes, parameters, return type and purity) and the typed ``SeqExpr`` ``body``,
    made by reflection (``ffi.MakeObjectFromPackedArgs``).

    Only for a body whose type is the object ``f`` returns: TVM's ``Function`` constructor
    then takes that type as the return type (the body's type, which it may use, is the old
    return type: ``EraseToWellDefined`` of a type the old function already returns keeps
    it), and its type is the old ``FuncType`` (same parameter types, return type and
    purity). The constructor would recompute both, at a cost per parameter."""
    cdef FFIAny cargs[15]
    cargs[0].type_index = K_INT
    cargs[0].small_len = 0
    cargs[0].value = obj_type(f)
    set_raw_str(&cargs[1], b"span")
    set_obj(&cargs[2], NULL)
    set_raw_str(&cargs[3], b"ty")
    set_obj(&cargs[4], <void*>obj_field(f, L.o_expr_ty))
    set_raw_str(&cargs[5], b"attrs")
    set_obj(&cargs[6], <void*>obj_field(f, L.o_func_attrs))
    set_raw_str(&cargs[7], b"params")
    set_obj(&cargs[8], <void*>obj_field(f, L.o_func_params))
    set_raw_str(&cargs[9], b"body")
    set_obj(&cargs[10], body)
    set_raw_str(&cargs[11], b"ret_ty")
    set_obj(&cargs[12], <void*>obj_field(f, L.o_func_ret_ty))
    set_raw_str(&cargs[13], b"is_pure")
    cargs[14].type_index = K_BOOL
    cargs[14].small_len = 0
    cargs[14].value = (<const unsigned char*>(f + L.o_func_is_pure))[0] != 0
    cdef void* h = make(f_make_object, cargs, 15, b"a function")
    K.own(h)
    return <size_t>h


cdef int update_type(void* h, const char* ty, const char* what) except -1:
    """Set the type of the new expression at ``h`` to the type at ``ty`` (``relax.UpdateType``;
    nothing when ``ty`` is null)."""
    cdef FFIAny cargs[2]
    cdef FFIAny res
    if ty == NULL:
        return 0
    set_obj(&cargs[0], h)
    set_obj(&cargs[1], <void*>ty)
    res.type_index = K_NONE
    res.small_len = 0
    res.value = 0
    if c_call(f_update_type, cargs, 2, &res) != 0:
        raise_ffi_error(what)
    if res.type_index >= K_OBJECT_BEGIN and res.value != 0:
        c_decref(<void*><size_t>res.value)
    return 0


cdef void* seq_with_blocks(Layout L, Keep K, const char* s, list changed, list replacements) except NULL:
    """A new ``SeqExpr`` (owned by ``K``): the one at ``s`` with block ``changed[k]`` replaced by
    the blocks at the addresses ``replacements[k]`` (``changed`` increasing; none: dropped), its
    result and type the old ones (a branch a pass changed only inside); ``s`` itself when
    nothing changes."""
    cdef FFIAny cargs[3]
    if not changed:
        return <void*>s
    cdef size_t arr = array_spliced(K, <size_t>obj_field(s, L.o_seq_blocks), changed, replacements)
    set_obj(&cargs[0], <void*>arr)
    set_obj(&cargs[1], <void*>obj_field(s, L.o_seq_body))
    set_obj(&cargs[2], NULL)
    cdef void* h = owned(K, CTOR_SEQ, cargs, 3, b"a SeqExpr")
    update_type(h, obj_field(s, L.o_expr_ty), b"the type of a SeqExpr")
    return h


def if_binding_with_blocks(Layout L not None, Keep K not None, size_t bindings, Py_ssize_t pos,
                           list then_changed not None, list then_blocks not None, list else_changed not None,
                           list else_blocks not None):
    """The address (owned by ``K``) of a new ``VarBinding`` in place of binding ``pos`` of the
    bindings ``Array`` at ``bindings``, a ``VarBinding`` of an ``If``: the same variable bound to
    a new ``If`` of the old condition whose branches have block ``then_changed[k]`` replaced
    by the block at ``then_blocks[k]``, or by the blocks of a list of addresses (empty: the
    block is dropped) (``else_*`` likewise; ``*_changed`` increasing, empty for a branch kept),
    typed as the old ``If`` (its branches changed, not what they produce).
    0 when that binding is not a ``VarBinding`` of an ``If`` with ``SeqExpr`` branches (a
    ``MatchCast``: the caller declines).

    Raises
    ------
    ValueError
        ``bindings`` is not an ``ffi.Array``, ``pos`` is out of range, a ``*_changed`` list and
        its ``*_blocks`` differ in length, a block address is not positive, or a changed
        position is out of range or not increasing (:func:`array_spliced`).
    TypeError
        A block address is not an int.
    RuntimeError
        :func:`init` has not succeeded.
    """
    cdef const char* arr = <const char*>bindings
    cdef const char* b
    cdef const char* old
    cdef const char* then_seq
    cdef const char* else_seq
    cdef FFIAny cargs[4]
    check_initialised("if_binding_with_blocks")
    if len(then_changed) != len(then_blocks):
        raise ValueError(f"if_binding_with_blocks: {len(then_changed)} then_changed positions but "
                         f"{len(then_blocks)} then_blocks")
    if len(else_changed) != len(else_blocks):
        raise ValueError(f"if_binding_with_blocks: {len(else_changed)} else_changed positions but "
                         f"{len(else_blocks)} else_blocks")
    then_replacements = block_replacements(then_blocks, "if_binding_with_blocks", "then_blocks[{}]")
    else_replacements = block_replacements(else_blocks, "if_binding_with_blocks", "else_blocks[{}]")
    if arr == NULL or obj_type(arr) != K_ARRAY:
        raise ValueError("if_binding_with_blocks: not an ffi.Array")
    if not 0 <= pos < array_size(arr):
        raise ValueError(f"if_binding_with_blocks: position {pos} out of range")
    if (<const FFIAny*>(array_data(arr) + 16 * pos))[0].type_index < K_OBJECT_BEGIN:
        return 0
    b = <const char*>(<const FFIAny*>(array_data(arr) + 16 * pos))[0].value
    if obj_type(b) != L.t_binding:
        return 0
    old = obj_field(b, L.o_b_value)
    if old == NULL or obj_type(old) != L.t_if:
        return 0
    then_seq = obj_field(old, L.o_if_then)
    else_seq = obj_field(old, L.o_if_else)
    if then_seq == NULL or obj_type(then_seq) != L.t_seq or else_seq == NULL or obj_type(else_seq) != L.t_seq:
        return 0
    set_obj(&cargs[0], <void*>obj_field(old, L.o_if_cond))
    set_obj(&cargs[1], seq_with_blocks(L, K, then_seq, then_changed, then_replacements))
    set_obj(&cargs[2], seq_with_blocks(L, K, else_seq, else_changed, else_replacements))
    set_obj(&cargs[3], NULL)
    cdef void* h = make(f_if, cargs, 4, b"an If")
    K.own(h)
    update_type(h, obj_field(old, L.o_expr_ty), b"the type of an If")
    return <size_t>new_binding(K, obj_field(b, L.o_b_var), h)


def function_with_body(Layout L, Keep K, size_t func, list blocks not None, size_t result):
    """The address (owned by ``K``) of a new Relax ``Function``: the one at ``func`` (its
    parameters, return type, purity and attributes) whose body is a new ``SeqExpr`` of the
    blocks at the addresses ``blocks`` (in order) and the result at ``result``, typed as the
    old body when the result is the old one, else as the result. 0 when the old body has no
    type (not normalized: the caller's portable path infers it).

    Raises
    ------
    ValueError
        ``func`` is not a Relax function with a ``SeqExpr`` body, ``result`` is null, or a
        block address is not positive.
    TypeError
        A block address is not an int.
    """
    cdef Py_ssize_t k
    for k in range(len(blocks)):
        object_handle(blocks[k], "function_with_body", "blocks[{}]", k)
    cdef const char* f = <const char*>func
    cdef const char* seq = function_body(L, f, "function_with_body")
    cdef const char* ty
    if result == 0:
        raise ValueError("function_with_body: no result")
    ty = obj_field(seq, L.o_expr_ty)
    if ty == NULL or obj_type(ty) == L.t_type_missing:
        return 0
    if <const char*>result != obj_field(seq, L.o_seq_body):
        ty = obj_field(<const char*>result, L.o_expr_ty)
    return function_of_seq(L, K, f, array_of(K, blocks), <const char*>result, ty)


def module_with_functions(Layout L, Keep K, size_t mod, list pairs):
    """The address (owned by ``K``) of a new ``IRModule`` of the functions ``pairs`` (GlobalVar
    and function addresses alternating) with the attributes of the module at ``mod`` and no
    global infos."""
    cdef FFIAny cargs[3]
    set_obj(&cargs[0], <void*>container_of(f_map, K, pairs, b"a map"))
    set_obj(&cargs[1], <void*>obj_field(<const char*>mod, L.o_mod_attrs))
    set_obj(&cargs[2], h_empty_map)
    return <size_t>owned(K, CTOR_MODULE, cargs, 3, b"a module")


def binding_with_call_args(Layout L, Keep K, size_t binding, list args):
    """The address (owned by ``K``) of a new ``VarBinding`` of the variable of the one at
    ``binding`` (a ``VarBinding`` of a call) to a new call: the old call's type, callee,
    attributes and type arguments, with the arguments at the addresses ``args``. 0 when the
    old call has no type (not normalized: the caller's portable path infers it).

    Raises
    ------
    ValueError
        ``binding`` is not a ``VarBinding`` of a call.
    """
    cdef const char* b = <const char*>binding
    cdef const char* v
    cdef vector[FFIAny] items
    cdef FFIAny a
    if b == NULL or obj_type(b) != L.t_binding:
        raise ValueError("binding_with_call_args: not a VarBinding")
    v = obj_field(b, L.o_b_value)
    if v == NULL or obj_type(v) != L.t_call:
        raise ValueError("binding_with_call_args: the binding's value is not a call")
    cdef const char* ty = obj_field(v, L.o_expr_ty)
    if ty == NULL or obj_type(ty) == L.t_type_missing:
        return 0
    for x in args:
        set_obj(&a, as_handle(x))
        items.push_back(a)
    cdef void* call = new_call(K, <void*>ty, <void*>obj_field(v, L.o_call_op), items.data(),
                               <int64_t>items.size(), <void*>obj_field(v, L.o_call_attrs),
                               <void*>obj_field(v, L.o_call_ty_args))
    return <size_t>new_binding(K, obj_field(b, L.o_b_var), call)
