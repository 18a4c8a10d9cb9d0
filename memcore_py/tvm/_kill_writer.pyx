# cython: language_level=3
"""KillAfterLastUse's writer over TVM's objects (built by ``setup.py``; the native pass,
:mod:`memcore_py.tvm.kill_extract`, drives it).

Design
------
The counterpart of :mod:`memcore_py.transform._kill_writer` for a function read by
:class:`~memcore_py.tvm._table_reader.TVMReader`: it applies the rule kernel's
:class:`~memcore_py.analysis._kill_rules.KillEdits` and decides nothing. :meth:`KillWriter.scope`
rebuilds one scope (a function body or an ``If`` branch) as TVM's ``KillInserter`` leaves it:
its blocks in TVM's normal form (adjacent blocks of one kind merged, empty ones dropped; a
dataflow block stays one, the kills the kernel defers past it opening an ordinary block after
it), every kept binding the object it was, the dropped rebindings gone, the bindings that read
a substituted variable rebuilt (same op, attributes, type arguments and type; a tuple retyped
by TVM's constructor), the kills after their bindings (``_k = R.memory.kill_tensor(v)`` ..., a
fresh ``R.Tuple()`` variable named ``kill_name(k)``; a ``DataflowVar`` in a dataflow block).
An ``If`` binding whose branches change is rebuilt by the caller's ``rebuild_if`` (through
TVM's Python API: a new ``SeqExpr`` per branch and a new ``If`` of the old type), then bound
to the same variable; a ``MatchCast`` whose value changes, by the caller's ``rebuild_cast``
(same variable and type).

Reads go through the checked :class:`~memcore_py.tvm._ffi_reader.Layout` (objects the reader
already matched), writes through the compiled writer's constructors
(:mod:`memcore_py.tvm._ffi_writer`); every object built is owned by the caller's ``Keep``.
:meth:`KillWriter.scope` answers a :class:`ScopeRewrite` (whether the scope changed, its new
blocks and result). What the writer cannot build (a get-item or another expression reading a
substituted variable, a tuple TVM cannot type) makes it return None: the pass declines to the
portable path.
"""
cimport cython
from libc.stdint cimport int8_t, int32_t, int64_t
from libcpp.vector cimport vector

from memcore_py.analysis._binding_table cimport I_MATCH_CAST, X_CALL, X_IF, X_TUPLE, X_VAR, BindingTable
from memcore_py.analysis._kill_rules cimport EDIT_DROP, EDIT_KEEP, EDIT_REWRITE, KillEdits, kill_name
from memcore_py.tvm._ffi_abi cimport FFIAny, K_ARRAY, any_obj, any_type, array_data, array_size, obj_field, obj_type
from memcore_py.tvm._ffi_reader cimport Layout
from memcore_py.tvm._ffi_writer cimport (
    CTOR_BLOCK, CTOR_DFBLOCK, CTOR_EMPTY_ARRAY, CTOR_TUPLE, Keep, handle, new_binding, new_call, new_var, new_with_array, set_obj,
)

cdef enum:
    FAIL = 0    # returned by a rebuild: the writer cannot build it (the pass declines)

cdef vector[char] KILL_NAMES       # kill_name(k) for k = 0, 1, ... encoded, each NUL-terminated (filled on demand)
cdef vector[size_t] KILL_NAME_AT   # k -> where kill_name(k) starts in KILL_NAMES


cdef const char* kill_name_chars(Py_ssize_t k) except NULL:
    """``kill_name(k)`` as a NUL-terminated UTF-8 string (valid until the next call): the names
    side by side in one buffer, so a function's kills read them from a few cache lines."""
    cdef bytes name
    cdef char c
    while <Py_ssize_t>KILL_NAME_AT.size() <= k:
        name = kill_name(<Py_ssize_t>KILL_NAME_AT.size()).encode()
        KILL_NAME_AT.push_back(KILL_NAMES.size())
        for c in name:
            KILL_NAMES.push_back(c)
        KILL_NAMES.push_back(0)
    return KILL_NAMES.data() + KILL_NAME_AT[k]


@cython.final
cdef class ScopeRewrite:
    """One scope as :meth:`KillWriter.scope` rebuilt it. Made only by the writer."""
    cdef readonly bint changed      # the scope changed (else ``blocks`` is empty and the old SeqExpr stays)
    cdef readonly list blocks       # addresses of the scope's new blocks, in order (empty: no binding left)
    cdef readonly size_t result     # address of the scope's result (the old one unless a read of it was substituted)

    def __repr__(self):
        return f"ScopeRewrite(changed={self.changed}, blocks={[hex(b) for b in self.blocks]}, result={self.result:#x})"


cdef ScopeRewrite scope_rewrite(bint changed, list blocks, size_t result):
    """A :class:`ScopeRewrite` of the given fields."""
    cdef ScopeRewrite out = ScopeRewrite.__new__(ScopeRewrite)
    out.changed = changed
    out.blocks = blocks
    out.result = result
    return out


cdef class KillWriter:
    """Applies one function's edits to its TVM objects (module docstring).

    Parameters
    ----------
    L : Layout
    K : Keep
        Owns every object built.
    T : BindingTable
        The table the function was read into.
    E : KillEdits
        The kernel's edits of that function.
    kill_ops : tuple of int
        The addresses of TVM's kill ops, by kill kind (tensor, storage, object).
    unit : int
        The address of an ``R.Tuple()`` type (the kill variables' and calls' type).
    rebuild_if : callable
        ``(If address, condition address, then, else) -> address of the new If``, each branch
        the :class:`ScopeRewrite` :meth:`scope` returned for it.
    rebuild_cast : callable
        ``(MatchCast address, value address) -> address of a new MatchCast`` of the same
        variable and type to the new value.
    """

    cdef Layout L
    cdef Keep K
    cdef BindingTable T
    cdef KillEdits E
    cdef size_t kill_ops[3]
    cdef size_t unit
    cdef object rebuild_if
    cdef object rebuild_cast
    cdef vector[size_t] reads   # var id -> address of what its uses read (a variable or a constant; 0: itself)
    cdef bint any_read
    cdef vector[FFIAny] args    # the arguments of the expression being rewritten (reused: no allocation per binding)

    def __init__(self, Layout L, Keep K, BindingTable T, KillEdits E, tuple kill_ops, size_t unit, rebuild_if,
                 rebuild_cast):
        self.L, self.K, self.T, self.E = L, K, T, E
        for i in range(3):
            self.kill_ops[i] = kill_ops[i]
        self.unit = unit
        self.rebuild_if = rebuild_if
        self.rebuild_cast = rebuild_cast
        self.reads.assign(E.v_sub.size(), 0)
        self.any_read = False

    cdef size_t read_as(self, size_t var) noexcept:
        """What a use of the variable at ``var`` reads (the table's variable ids are the
        function's: the writer runs right after the function is read)."""
        cdef int64_t k = self.T.var_ids.get(var)
        if k < 0 or <size_t>k >= self.reads.size() or self.reads[k] == 0:
            return var
        return self.reads[k]

    cdef void set_read(self, int64_t k, size_t what) noexcept:
        self.reads[k] = what
        self.any_read = True

    cdef int resolve_items(self, const char* arr, int64_t x, vector[FFIAny]& out) except -1:
        """The elements of the ``ffi.Array`` at ``arr`` with the substituted variables read as
        what they stand for, into ``out``; returns 1 when one changed, FAIL (0) when the
        writer cannot build one, 2 when none changed. ``x``: the table's record of the tuple
        or call that holds the array (its children are the elements, in order: a variable's
        id is read there, not looked up by address), or -1 (none recorded)."""
        cdef Layout L = self.L
        cdef BindingTable T = self.T
        cdef int64_t n = array_size(arr), i, c = -1, k
        cdef const char* a
        cdef size_t r
        cdef int32_t t
        cdef bint changed = False
        cdef vector[FFIAny] inner
        cdef int got
        cdef void* h
        if x >= 0 and T.x_n[x] != n:
            x = -1  # the arguments were not recorded (an allocation's)
        out.resize(n)
        for i in range(n):
            out[i] = (<const FFIAny*>(array_data(arr) + 16 * i))[0]
            a = any_obj(array_data(arr) + 16 * i)
            if a == NULL:
                continue
            if x >= 0:
                c = T.x_child[T.x_first[x] + i]
            t = any_type(array_data(arr) + 16 * i)  # the object's type index, kept in the Any
            if t == L.t_var or t == L.t_dfvar:
                if c >= 0 and T.x_kind[c] == X_VAR:
                    k = T.x_a[c]
                    r = self.reads[k] if <size_t>k < self.reads.size() and self.reads[k] != 0 else <size_t>a
                else:
                    r = self.read_as(<size_t>a)
                if r != <size_t>a:
                    set_obj(&out[i], <void*>r)
                    changed = True
            elif t == L.t_tuple:
                got = self.resolve_items(obj_field(a, L.o_tuple_expr_fields),
                                         c if c >= 0 and T.x_kind[c] == X_TUPLE else -1, inner)
                if got == FAIL:
                    return FAIL
                if got == 1:
                    h = self.new_tuple(inner)
                    if h == NULL:
                        return FAIL
                    set_obj(&out[i], h)
                    changed = True
            elif t == L.t_tuple_get_item or t == L.t_call:
                return FAIL  # not in A-normal form: the portable path
        return 1 if changed else 2

    cdef void* new_tuple(self, vector[FFIAny]& fields) except? NULL:
        """A new tuple of ``fields``, or NULL when TVM could not type it."""
        cdef void* h = new_with_array(self.K, CTOR_TUPLE, NULL, NULL, fields.data(), <int64_t>fields.size(), NULL,
                                      NULL, b"a tuple")
        cdef const char* ty = obj_field(<const char*>h, self.L.o_expr_ty)
        if ty == NULL or obj_type(ty) == self.L.t_type_missing:
            return NULL
        return h

    cdef size_t rewritten(self, const char* value, int64_t x) except? 0:
        """The expression at ``value`` (a variable, call or tuple) with the substituted
        variables read as what they stand for (``value`` itself when none is); FAIL when the
        writer cannot build it. ``x``: its record in the table, or -1."""
        cdef Layout L = self.L
        cdef int32_t t = obj_type(value)
        cdef int got
        cdef void* h
        if t == L.t_var or t == L.t_dfvar:
            return self.read_as(<size_t>value)
        if x >= 0 and self.T.x_kind[x] != X_CALL and self.T.x_kind[x] != X_TUPLE:
            x = -1
        if t == L.t_call:
            got = self.resolve_items(obj_field(value, L.o_call_args), x, self.args)
            if got == FAIL:
                return FAIL
            if got == 2:
                return <size_t>value
            return <size_t>new_call(self.K, <void*>obj_field(value, L.o_expr_ty), <void*>obj_field(value, L.o_call_op),
                                    self.args.data(), <int64_t>self.args.size(), <void*>obj_field(value, L.o_call_attrs),
                                    <void*>obj_field(value, L.o_call_ty_args))
        if t == L.t_tuple:
            got = self.resolve_items(obj_field(value, L.o_tuple_expr_fields), x, self.args)
            if got == FAIL:
                return FAIL
            if got == 2:
                return <size_t>value
            h = self.new_tuple(self.args)
            return <size_t>h if h != NULL else FAIL
        if t == L.t_tuple_get_item:
            return FAIL
        return <size_t>value  # a leaf

    cdef int close_group(self, vector[FFIAny]& group, bint dataflow, list blocks) except -1:
        """Append to ``blocks`` a new block (a ``DataflowBlock`` when ``dataflow``) of the
        bindings in ``group``, then empty it; nothing when it is empty."""
        if group.size() == 0:
            return 0
        blocks.append(<size_t>new_with_array(self.K, CTOR_DFBLOCK if dataflow else CTOR_BLOCK, NULL, NULL,
                                             group.data(), <int64_t>group.size(), NULL, NULL, b"a block"))
        group.clear()
        return 0

    cdef int push_kills(self, int64_t first, int64_t n, bint dataflow, vector[FFIAny]& group) except -1:
        """Append the kills ``first .. first + n - 1`` to ``group`` (their variables
        ``DataflowVar`` s when ``dataflow``)."""
        cdef KillEdits E = self.E
        cdef FFIAny arg, item
        cdef int64_t k
        for k in range(first, first + n):
            set_obj(&arg, <void*>E.k_target[k])
            set_obj(&item, new_binding(self.K, <const char*>new_var(self.K, kill_name_chars(k), <void*>self.unit, dataflow),
                                       new_call(self.K, <void*>self.unit, <void*>self.kill_ops[E.k_kind[k]], &arg,
                                                1, NULL, handle(CTOR_EMPTY_ARRAY))))
            group.push_back(item)
        return 0

    cdef int set_bound(self, FFIAny* item, const char* b, const char* var, size_t value, bint is_cast) except -1:
        """Set ``item`` to the binding ``b`` (of the variable ``var``; a ``MatchCast`` when
        ``is_cast``) rebuilt with the value at ``value``."""
        if is_cast:
            set_obj(item, <void*><size_t>self.rebuild_cast(<size_t>b, value))
        else:
            set_obj(item, new_binding(self.K, var, <void*>value))
        return 0

    def scope(self, Py_ssize_t sid, size_t seq):
        """The scope ``sid`` of the table (the ``SeqExpr`` at ``seq``) with its edits applied.

        Returns
        -------
        ScopeRewrite or None
            The scope rebuilt; None to decline.
        """
        cdef Layout L = self.L
        cdef BindingTable T = self.T
        cdef KillEdits E = self.E
        cdef vector[FFIAny] group      # the bindings of the block being built (of kind group_df)
        cdef FFIAny item
        cdef const char* arr
        cdef const char* b
        cdef const char* var
        cdef const char* value
        cdef int64_t base, slot, pos, n, v, w, x
        cdef size_t r
        cdef int8_t action
        cdef bint is_if, is_cast, df
        cdef bint group_df = False
        cdef int last_kind = -1         # the kind of the last non-empty old block (-1: none yet)
        cdef ScopeRewrite then_out, else_out
        cdef list blocks = T.scope_blocks[sid]
        cdef list new_blocks = []
        cdef bint changed = False
        cdef int64_t n_slots = 0
        for bid in blocks:
            n_slots += array_size(<const char*>T.b_ref[bid])
        group.reserve(n_slots + E.n_kills)
        for bid in blocks:
            arr = <const char*>T.b_ref[bid]
            n = array_size(arr)
            if n == 0:
                changed = True  # dropped
                continue
            df = T.b_dataflow[bid]
            if last_kind == <int>df:
                changed = True  # merged with the block before it
            last_kind = df
            if df != group_df:
                self.close_group(group, group_df, new_blocks)
                group_df = df
            base = E.blk_first[bid]
            for pos in range(n):
                slot = base + pos
                item = (<const FFIAny*>(array_data(arr) + 16 * pos))[0]
                action = E.s_action[slot]
                v = T.i_var[E.s_item[slot]]
                if action == EDIT_DROP:
                    w = E.v_sub[v]
                    self.set_read(v, self.reads[w] if self.reads[w] else T.v_ref[w])
                    changed = True
                    continue
                is_if = T.x_kind[T.i_value[E.s_item[slot]]] == X_IF
                is_cast = T.i_kind[E.s_item[slot]] == I_MATCH_CAST
                if action != EDIT_KEEP or is_if or E.v_const[v]:
                    # the binding's objects are read only when it changes or names them
                    b = any_obj(array_data(arr) + 16 * pos)
                    var = obj_field(b, L.o_b_var)
                    value = obj_field(b, L.o_mc_value if is_cast else L.o_b_value)
                    if E.v_const[v]:
                        self.set_read(v, <size_t>value)
                if is_if:
                    x = T.i_value[E.s_item[slot]]  # the If's record: its branches' scopes
                    then_out = self.scope(T.x_b[x], <size_t>obj_field(value, L.o_if_then))
                    else_out = self.scope(T.x_c[x], <size_t>obj_field(value, L.o_if_else))
                    if then_out is None or else_out is None:
                        return None
                    r = <size_t>obj_field(value, L.o_if_cond)
                    if action == EDIT_REWRITE:
                        r = self.rewritten(<const char*>r, T.x_a[T.i_value[E.s_item[slot]]])
                        if r == FAIL:
                            return None
                    if then_out.changed or else_out.changed or r != <size_t>obj_field(value, L.o_if_cond):
                        r = self.rebuild_if(<size_t>value, r, then_out, else_out)
                        self.set_bound(&item, b, var, r, is_cast)
                        changed = True
                elif action == EDIT_REWRITE:
                    r = self.rewritten(value, T.i_value[E.s_item[slot]])
                    if r == FAIL:
                        return None
                    self.set_bound(&item, b, var, r, is_cast)
                    changed = True
                group.push_back(item)
                if E.s_nkill[slot]:
                    self.push_kills(E.s_kill[slot], E.s_nkill[slot], df, group)
                    changed = True
            if E.d_nkill[bid]:
                # the kills deferred past a dataflow block open an ordinary block after it
                self.close_group(group, group_df, new_blocks)
                group_df = False
                last_kind = 0
                self.push_kills(E.d_kill[bid], E.d_nkill[bid], False, group)
                changed = True
        cdef const char* result = obj_field(<const char*>seq, L.o_seq_body)
        r = <size_t>result
        if self.any_read:
            r = self.rewritten(result, -1)
            if r == FAIL:
                return None
            changed = changed or r != <size_t>result
        if not changed:
            return scope_rewrite(False, [], r)
        self.close_group(group, group_df, new_blocks)
        return scope_rewrite(True, new_blocks, r)
