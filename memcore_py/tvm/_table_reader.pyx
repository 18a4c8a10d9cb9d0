# cython: language_level=3
"""The reader of TVM's objects into the binding table (built by ``setup.py``).

Design
------
:class:`TVMReader` is the counterpart of :class:`memcore_py.analysis._ir_reader.IRReader`
over a ``tvm.IRModule``'s Relax functions, read in place through the checked
:class:`~memcore_py.tvm._ffi_reader.Layout`: it fills the same
:class:`~memcore_py.analysis._binding_table.BindingTable` with the same records in the same
order (items in visit order, ``If`` branches after their binding, dense variable ids), so
that a pass's rule kernel runs unchanged on either. It applies no pass rule. A callee's
properties are the ones memcore's op table gives its memcore counterpart: the caller passes
them per address (``known``: the ops that have any, the module's GlobalVars) and per packed
symbol (``extern_flags``); another ``Op`` has none.

:meth:`TVMReader.read_function` answers a :class:`FunctionRead` (the addresses and ids of the
function's body that the passes' writers start from).

What it does not read it *declines* (:meth:`TVMReader.read_function` returns None; the
caller takes the portable path, which reads and checks everything): an object of an
unexpected class where an expression, block or binding must be, a ``SeqExpr`` or function
nested in an expression, an ``If`` that is not a binding's value, a callee that is neither an
``Op``, a GlobalVar of the module nor an ``ExternFunc``, a function whose body is untyped and
holds a ``MatchCast``. Every object is read only after its type index matched; variables
and callees are keyed by address (compared, never dereferenced as Python objects).
"""
cimport cython
from libc.stdint cimport int8_t, int32_t, int64_t, uint8_t

from memcore_py.analysis._binding_table cimport (
    BindingTable, CF_ALLOCATES, I_BINDING, I_MATCH_CAST, I_RESULT, LEAF_CONST, LEAF_PLAIN, PointerIds, X_CALL,
    X_GET_ITEM, X_IF, X_LEAF, X_TUPLE,
)
from memcore_py.analysis._kill_rules cimport TY_FUNC, TY_OBJECT, TY_PRIM, TY_SHAPE, TY_TENSOR, tuple_type_code
from memcore_py.tvm._ffi_abi cimport (
    FFIAny, K_ARRAY, K_DATATYPE, K_OBJECT_BEGIN, any_obj, any_type, array_data, array_size, obj_field, obj_type,
)
from memcore_py.tvm._ffi_reader cimport Layout, read_string

cdef enum:
    DECLINE = -2    # the reader declines (expr ids are >= 0)

cdef extern from *:
    void prefetch "__builtin_prefetch"(const void* p) nogil


@cython.final
cdef class FunctionRead:
    """What :meth:`TVMReader.read_function` read of one Relax function: where its body is in
    TVM's memory and in the binding table. Made only by the reader."""
    cdef readonly size_t seq            # address of the body ``SeqExpr``
    cdef readonly size_t blocks         # address of the body's blocks ``Array``
    cdef readonly Py_ssize_t scope      # the body's scope id in the table
    cdef readonly Py_ssize_t first_block  # the table's block id of the function's first block
    cdef readonly size_t ty             # address of the body's type (its result's when the body is untyped)
    cdef readonly bint typed            # the body has a type (normalized)

    def __repr__(self):
        return (f"FunctionRead(seq={self.seq:#x}, blocks={self.blocks:#x}, scope={self.scope}, "
                f"first_block={self.first_block}, ty={self.ty:#x}, typed={self.typed})")


cdef inline int type_code(Layout L, const char* ty) noexcept:
    """The ``TY_*`` code (``memcore_py/analysis/_kill_rules.pxd``) of the TVM type ``ty``, or -1
    for none or a type this reader does not know."""
    cdef int32_t t
    if ty == NULL:
        return -1
    t = obj_type(ty)
    if t == L.t_tensor_type:
        return TY_TENSOR
    if t == L.t_any_type:
        return TY_OBJECT
    if t == L.t_tuple_type:
        return tuple_type_code(array_size(obj_field(ty, L.o_tuple_fields)))
    if t == L.t_func_type:
        return TY_FUNC
    if t == L.t_shape_type:
        return TY_SHAPE
    if t == L.t_prim_type:
        return TY_PRIM
    return -1


@cython.final
cdef class TVMReader:
    """Fills ``table`` with Relax functions of one ``tvm.IRModule`` (:meth:`read_function`).

    Parameters
    ----------
    table : BindingTable
    L : Layout
    ops : dict
        ``Op`` address -> its ``CALLEE_*`` flags, for every ``Op`` with a property (another
        ``Op`` has none); read, never changed.
    module : dict
        GlobalVar address -> its flags, for every GlobalVar of the module (another declines).
    extern_flags : callable
        ``symbol -> flags`` of an ``ExternFunc`` (asked once per distinct object).
    """

    cdef BindingTable T
    cdef Layout L
    cdef dict ops
    cdef dict module
    cdef object extern_flags
    cdef PointerIds callee_ids
    cdef int64_t leaf, const_leaf
    cdef bint has_match_cast

    def __init__(self, BindingTable table, Layout L, dict ops not None, dict module not None, extern_flags):
        self.T = table
        self.L = L
        self.ops = ops
        self.module = module
        self.extern_flags = extern_flags
        self.callee_ids = PointerIds()
        self.leaf = table.add_expr(X_LEAF, LEAF_PLAIN, 0, 0)
        self.const_leaf = table.add_expr(X_LEAF, LEAF_CONST, 0, 0)

    def callee_addresses(self):
        """The address of each callee read so far, by callee id (the table's ``c_flags``
        order): what a caller asks of a callee beyond its flags (its purity, for
        DeadCodeElimination's rule)."""
        cdef PointerIds ids = self.callee_ids
        cdef size_t i
        out = [0] * ids.n
        for i in range(ids.keys.size()):
            if ids.keys[i] != 0:
                out[ids.vals[i]] = ids.keys[i]
        return out

    def read_function(self, size_t func, str name):
        """Record the Relax ``Function`` at ``func`` as the table's next function.

        Returns
        -------
        FunctionRead or None
            Where the function's body is; None when the reader declines the function (the table
            is then incomplete: take the portable path for the module).
        """
        cdef Layout L = self.L
        cdef BindingTable T = self.T
        cdef const char* f = <const char*>func
        cdef const char* seq
        cdef const char* ty
        cdef const char* blocks
        cdef const char* b
        cdef const char* arr
        cdef int32_t bt
        cdef int64_t ib, n = 0
        cdef FunctionRead out
        if f == NULL or obj_type(f) != L.t_function:
            return None
        seq = obj_field(f, L.o_func_body)
        if seq == NULL or obj_type(seq) != L.t_seq:
            return None
        ty = obj_field(seq, L.o_expr_ty)
        untyped = ty == NULL or obj_type(ty) == L.t_type_missing
        if untyped:
            # not normalized: the body's type is its result's, unless a MatchCast defines a
            # variable it names (the portable path erases those)
            ty = obj_field(seq, L.o_seq_body)
            if ty != NULL:
                ty = obj_field(ty, L.o_expr_ty)
            if ty == NULL or obj_type(ty) == L.t_type_missing:
                return None
        blocks = obj_field(seq, L.o_seq_blocks)
        if blocks == NULL or obj_type(blocks) != K_ARRAY:
            return None
        for ib in range(array_size(blocks)):  # the variables to expect: the body's bindings
            bt = any_type(array_data(blocks) + 16 * ib)
            b = any_obj(array_data(blocks) + 16 * ib)
            if b != NULL and (bt == L.t_block or bt == L.t_dfblock):
                arr = obj_field(b, L.o_block_bindings)
                if arr != NULL and obj_type(arr) == K_ARRAY:
                    n += array_size(arr)
        self.has_match_cast = False
        first_block = len(T.block_scope)
        T.begin_function(name, n + 16)
        sid = T.new_scope(-1, None)
        if not self.read_seq(seq, sid) or (untyped and self.has_match_cast):
            return None
        T.end_function(None)
        out = FunctionRead.__new__(FunctionRead)
        out.seq = <size_t>seq
        out.blocks = <size_t>blocks
        out.scope = sid
        out.first_block = first_block
        out.ty = <size_t>ty
        out.typed = not untyped
        return out

    cdef bint read_seq(self, const char* seq, Py_ssize_t sid) except -1:
        """A SeqExpr's blocks and result; False to decline."""
        cdef Layout L = self.L
        cdef BindingTable T = self.T
        cdef const char* blocks = obj_field(seq, L.o_seq_blocks)
        cdef const char* body = obj_field(seq, L.o_seq_body)
        cdef int64_t ib, x, outer
        cdef int32_t bt
        if blocks == NULL or obj_type(blocks) != K_ARRAY or body == NULL:
            return False
        for ib in range(array_size(blocks)):
            bt = any_type(array_data(blocks) + 16 * ib)
            if bt != L.t_block and bt != L.t_dfblock:
                return False
            if not self.read_block(any_obj(array_data(blocks) + 16 * ib), bt == L.t_dfblock, sid):
                return False
        outer = len(T.block_scope) - 1
        x = self.read_obj(body)
        if x == DECLINE:
            return False
        T.add_item(I_RESULT, -1, x, outer, -1, outer, 0, sid)
        return True

    cdef bint read_block(self, const char* block, bint dataflow, Py_ssize_t sid) except -1:
        cdef Layout L = self.L
        cdef BindingTable T = self.T
        cdef const char* arr = obj_field(block, L.o_block_bindings)
        cdef const char* data
        cdef const char* b
        cdef const char* var
        cdef const char* value
        cdef int64_t i, n, x, outer, bid
        cdef int32_t bt, vt
        cdef int8_t kind
        if arr == NULL or obj_type(arr) != K_ARRAY:
            return False
        bid = T.new_block(sid, dataflow, None, <size_t>arr)
        data = array_data(arr)
        n = array_size(arr)
        for i in range(n):
            if i + 1 < n:
                self.prefetch_ahead(data, i, n)
            bt = any_type(data + 16 * i)
            b = any_obj(data + 16 * i)
            if bt == L.t_binding:
                kind = I_BINDING
                value = obj_field(b, L.o_b_value)
            elif bt == L.t_match_cast:
                kind = I_MATCH_CAST
                value = obj_field(b, L.o_mc_value)
                self.has_match_cast = True
            else:
                return False
            var = obj_field(b, L.o_b_var)  # MatchCast's var too (Layout checks the offset)
            if var == NULL or value == NULL:
                return False
            vt = obj_type(var)
            if vt != L.t_var and vt != L.t_dfvar:
                return False
            outer = <int64_t>T.b_scope.size() - 1
            if obj_type(value) == L.t_if:
                if not self.read_if(value, b, bid, i, kind, self.bound_var(var, vt), outer, sid):
                    return False
                continue
            x = self.read_obj(value)
            if x == DECLINE:
                return False
            T.add_item(kind, self.bound_var(var, vt), x, bid, i, outer, <size_t>b, sid)
        return True

    cdef void prefetch_ahead(self, const char* data, int64_t i, int64_t n) noexcept:
        """Ask the CPU for the objects the next bindings of the array ``data`` (``n`` of them)
        will read, a few steps ahead (each step's addresses are read from objects asked for by
        the previous step): binding ``i + 3``; the variable and value of binding ``i + 2``; the
        variable's type and a call's arguments of binding ``i + 1``."""
        cdef Layout L = self.L
        cdef const char* b
        cdef const char* v
        cdef int32_t bt
        if i + 3 < n:
            prefetch(any_obj(data + 16 * (i + 3)))
        if i + 2 < n:
            bt = any_type(data + 16 * (i + 2))
            b = any_obj(data + 16 * (i + 2))
            if b != NULL and (bt == L.t_binding or bt == L.t_match_cast):
                prefetch(obj_field(b, L.o_b_var))
                prefetch(obj_field(b, L.o_b_value if bt == L.t_binding else L.o_mc_value))
        bt = any_type(data + 16 * (i + 1))
        b = any_obj(data + 16 * (i + 1))
        if b != NULL and (bt == L.t_binding or bt == L.t_match_cast):
            v = obj_field(b, L.o_b_var)
            if v != NULL and (obj_type(v) == L.t_var or obj_type(v) == L.t_dfvar):
                prefetch(obj_field(v, L.o_expr_ty))
            v = obj_field(b, L.o_b_value if bt == L.t_binding else L.o_mc_value)
            if v != NULL and obj_type(v) == L.t_call:
                prefetch(obj_field(v, L.o_call_args))

    cdef int64_t bound_var(self, const char* var, int32_t vt) except -1:
        """The var id of a binding's variable (its type code and kind recorded)."""
        cdef BindingTable T = self.T
        cdef int64_t k = T.var_id(<size_t>var)
        T.v_ty[k] = type_code(self.L, obj_field(var, self.L.o_expr_ty))
        T.v_dataflow[k] = vt == self.L.t_dfvar
        return k

    cdef bint read_if(self, const char* e, const char* b, int64_t bid, int64_t pos, int8_t kind, int64_t var,
                      int64_t outer, Py_ssize_t parent) except -1:
        """An If binding: its item, then each branch's items (a scope each)."""
        cdef Layout L = self.L
        cdef BindingTable T = self.T
        cdef const char* branch
        cdef FFIAny a
        # the If's fields: cond, then, else follow the Expr header (offsets of the layout)
        cdef int64_t cond = self.read_obj(obj_field(e, L.o_if_cond))
        if cond == DECLINE:
            return False
        cdef int64_t x = T.add_expr(X_IF, cond, -1, -1)
        cdef int64_t item = T.add_item(kind, var, x, bid, pos, outer, <size_t>b, parent)
        anchor = (bid, <size_t>b, pos)
        sids = []
        for off in (L.o_if_then, L.o_if_else):
            branch = obj_field(e, off)
            if branch == NULL or obj_type(branch) != L.t_seq:
                return False
            sid = T.new_scope(parent, anchor)
            T.s_anchor[sid] = item
            sids.append(sid)
            if not self.read_seq(branch, sid):
                return False
        T.x_b[x] = sids[0]
        T.x_c[x] = sids[1]
        T.block_ifs.setdefault(bid, []).append((pos, (sids[0], sids[1])))
        return True

    cdef int64_t read_any(self, const char* any) except -1:
        """The expr id of the expression in the ``TVMFFIAny`` at ``any``, or DECLINE. The
        ``Any`` carries its object's type index: a variable or a leaf argument is told apart
        without touching its object."""
        cdef int32_t t = any_type(any)
        if t < K_OBJECT_BEGIN or any_obj(any) == NULL:
            return DECLINE
        return self.read_typed(any_obj(any), t)

    cdef int64_t read_obj(self, const char* e) except -1:
        """The expr id of the expression object at ``e`` (nested ones recorded first), or
        DECLINE."""
        if e == NULL:
            return DECLINE
        return self.read_typed(e, obj_type(e))

    cdef int64_t read_typed(self, const char* e, int32_t t) except -1:
        """:meth:`read_obj` of the object at ``e`` (not NULL) of type index ``t``."""
        cdef Layout L = self.L
        cdef BindingTable T = self.T
        cdef int64_t k, x
        cdef const char* arr
        if t == L.t_var or t == L.t_dfvar:
            return T.var_expr(<size_t>e)
        if t == L.t_call:
            k = self.callee_id(obj_field(e, L.o_call_op))
            if k == DECLINE:
                return DECLINE
            if T.c_flags[k] & CF_ALLOCATES:
                return T.add_expr(X_CALL, k, -1, 0)  # shape, dtype, device and scope: not read
            arr = obj_field(e, L.o_call_args)
            if arr == NULL or obj_type(arr) != K_ARRAY:
                return DECLINE
            return self.with_children(X_CALL, k, arr)
        if t == L.t_tuple:
            arr = obj_field(e, L.o_tuple_expr_fields)
            if arr == NULL or obj_type(arr) != K_ARRAY:
                return DECLINE
            return self.with_children(X_TUPLE, 0, arr)
        if t == L.t_tuple_get_item:
            k = self.read_obj(obj_field(e, L.o_tgi_tuple))
            if k == DECLINE:
                return DECLINE
            return T.add_expr(X_GET_ITEM, k, (<const int32_t*>(e + L.o_tgi_index))[0], 0)
        if (t == L.t_if or t == L.t_seq or t == L.t_function or t == L.t_binding or t == L.t_match_cast
                or t == L.t_block or t == L.t_dfblock):
            return DECLINE
        if t == L.t_generic_const and any_type(e + L.o_const_value) != K_DATATYPE:
            return self.const_leaf  # a tensor constant
        return self.leaf  # a shape, an integer, a string, a dtype, a callee, a PrimFunc

    cdef int64_t callee_id(self, const char* op) except -1:
        """The callee id of the callee object at ``op`` (its flags recorded), or DECLINE."""
        cdef Layout L = self.L
        cdef BindingTable T = self.T
        cdef int64_t k
        cdef int32_t t
        if op == NULL:
            return DECLINE
        k = self.callee_ids.get(<size_t>op)
        if k >= 0:
            return k
        t = obj_type(op)
        flags = self.ops.get(<size_t>op) if t == L.t_op else self.module.get(<size_t>op)
        if flags is None:
            if t == L.t_op:
                flags = 0
            elif t == L.t_extern_func:
                symbol = read_string(op + L.o_extern_symbol)
                if symbol is None:
                    return DECLINE
                flags = self.extern_flags(symbol)
            else:
                return DECLINE  # a GlobalVar not the module's, a variable: the portable path
        k = self.callee_ids.add(<size_t>op)
        T.c_flags.push_back(<uint8_t>flags)
        return k

    cdef int64_t with_children(self, int8_t kind, int64_t a, const char* arr) except -1:
        """A tuple or call record of the expressions in the ``Array`` at ``arr``."""
        cdef BindingTable T = self.T
        cdef size_t start = T.pending.size()
        cdef int64_t i, x
        for i in range(array_size(arr)):
            x = self.read_any(array_data(arr) + 16 * i)
            if x == DECLINE:
                T.pending.resize(start)
                return DECLINE
            T.pending.push_back(x)
        return T.add_parent(kind, a, start)
