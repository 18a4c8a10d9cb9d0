# The flat binding table of one module (see _binding_table.pyx): what a reader records of a
# module's Relax functions and a pass's rule kernel walks. Struct of arrays; ids are dense.
# A reader fills it in visit order and applies no pass rule; what it cannot read it reports
# through ``error`` (memcore IR) or declines (TVM objects).
cimport cython
from libc.stdint cimport int8_t, int64_t, uint8_t
from libcpp.vector cimport vector

cdef enum ExprKind:
    X_LEAF = 0          # carries nothing a pass tracks: a constant, shape, prim value, string, dtype, callee
    X_VAR = 1           # a variable: x_a = its var id (per function)
    X_TUPLE = 2         # a tuple: its fields are x_child[x_first : x_first + x_n]
    X_GET_ITEM = 3      # a tuple get-item: x_a = the tuple's expr id, x_b = the index, x_c = the arity of
                        # the tuple's type (0: not recorded)
    X_CALL = 4          # a call: x_a = callee id, its arguments are x_child[x_first : x_first + x_n]
                        # (none for a CF_ALLOCATES callee: shape, dtype, device and scope carry nothing);
                        # x_b = the X_VAR expr of a callee that is a variable, else -1
    X_IF = 5            # an If (only as a binding's value): x_a = condition expr, x_b / x_c = then / else scope
    X_SCOPE = 6         # a nested function or SeqExpr (read only when the reader is asked to): x_b = its scope,
                        # x_a = 1 for a function

cdef enum LeafKind:
    # x_a of an X_LEAF
    LEAF_PLAIN = 0      # a shape, prim value, string, dtype, callee, ...
    LEAF_CONST = 1      # a tensor constant (x_b: the constant object's address, memcore IR; else 0)

cdef enum ItemKind:
    I_BINDING = 0       # a VarBinding
    I_MATCH_CAST = 1    # a MatchCast
    I_RESULT = 2        # the result of a scope (a function body or an If branch), after its blocks

cdef enum CalleeFlag:
    # properties of a callee, from the op table and the module (a reader fills c_flags)
    CF_ALLOCATES = 1    # R.builtin.alloc_tensor
    CF_SHARES = 2       # the result is args[0]'s storage (R.reshape, R.memory.view, ...)
    CF_USES_ARGS = 4    # a kernel call reading and writing its arguments (PrimFunc, packed, call_tir_dyn)
    CF_STORAGE = 8      # kill role "storage": the result is a storage object (memory./vm.alloc_storage)
    CF_KILL = 16        # kill role kill_tensor / kill_storage / kill_object: an explicit kill
    CF_NO_REGISTER = 32 # kill role "no_register": the result holds no VM register (R.null_value())
    CF_INPLACE = 64     # DataflowUseInplaceCalls may compute the op in place of an argument (Op.inplace)
    CF_CALL_TIR = 128   # R.call_tir: the call whose PrimFunc AttachAttrLayoutFreeBuffers annotates


@cython.final
cdef class PointerIds:
    # Dense ids of objects by address, for readers (variables, callees); see _binding_table.pyx
    cdef vector[size_t] keys        # open addressing, 0 = empty
    cdef vector[int64_t] vals       # the id of each key
    cdef size_t mask
    cdef int shift                  # 64 - log2(capacity): hashing by the product's high bits
    cdef int64_t n                  # ids handed out

    cdef void resize(self, size_t cap) noexcept
    cdef void clear(self, size_t expected) noexcept
    cdef void grow(self) noexcept

    # the lookups, inline: every reader's variable and callee goes through them
    cdef inline size_t slot(self, size_t key) noexcept:
        """The slot of ``key``, or the empty slot where it would go."""
        cdef size_t i = ((key >> 4) * <size_t>0x9E3779B97F4A7C15ULL) >> self.shift
        while self.keys[i] != 0 and self.keys[i] != key:
            i = (i + 1) & self.mask
        return i

    cdef inline int64_t get(self, size_t key) noexcept:
        """The id of ``key``, or -1."""
        cdef size_t i = self.slot(key)
        return self.vals[i] if self.keys[i] == key else -1

    cdef inline int64_t add(self, size_t key) except -1:
        """The id of ``key``, a new one (``n`` before the call) if it had none."""
        cdef size_t i = self.slot(key)
        if self.keys[i] == key:
            return self.vals[i]
        if 2 * (<size_t>self.n + 1) > self.mask:
            self.grow()
            i = self.slot(key)
        self.keys[i] = key
        self.vals[i] = self.n
        self.n += 1
        return self.n - 1


@cython.final
cdef class BindingTable:
    # ---- expressions: every value and everything nested in it, in reading order
    cdef vector[int8_t] x_kind      # ExprKind
    cdef vector[int64_t] x_a        # per kind (ExprKind)
    cdef vector[int64_t] x_b
    cdef vector[int64_t] x_c
    cdef vector[int64_t] x_first    # first child in x_child (tuples and calls)
    cdef vector[int64_t] x_n        # number of children
    cdef vector[int64_t] x_child    # children's expr ids (CSR)
    # ---- items: the bindings and scope results of every function, in visit order (If branches
    # right after their If binding: the then branch, its result, the else branch, its result)
    cdef vector[int8_t] i_kind      # ItemKind
    cdef vector[int64_t] i_var      # the bound variable's var id (-1 for a result)
    cdef vector[int64_t] i_value    # the value's (or result's) expr id
    cdef vector[int64_t] i_block    # block id of a binding; for a result, the last block read before it
    cdef vector[int64_t] i_pos      # position of a binding in its block
    cdef vector[int64_t] i_outer    # block read last before the item (the block of calls nested in it)
    cdef vector[size_t] i_ref       # the binding object's address (borrowed; the reader's module holds it)
    cdef vector[int64_t] i_scope    # the scope the item belongs to
    cdef vector[int8_t] i_same_type # 1: a MatchCast to exactly its value's type (memcore IR; else 0)
    # ---- callees: one id per distinct callee object of the module
    cdef vector[uint8_t] c_flags    # CalleeFlag bits
    # ---- functions: items f_first[k] .. f_first[k + 1] - 1 are the k-th function's
    cdef vector[int64_t] f_first
    cdef vector[int64_t] f_n_vars   # variables of the function (var ids 0 .. n - 1)
    cdef vector[int64_t] f_error    # item at which reading stopped (its error in errors[k]), or -1
    cdef public list errors         # per function: the reader's error (an exception), or None
    cdef public list func_names     # per function: its name
    # ---- blocks and scopes (as AllocationSites holds them; objects of the reader's object model)
    cdef public list block_bindings # block id -> the block's bindings (memcore IR; None for TVM objects)
    cdef vector[size_t] b_ref       # block id -> the address of the block's bindings array (TVM objects; 0 else)
    cdef public list block_scope    # block id -> scope id
    cdef public list block_is_dataflow
    cdef public dict block_ifs      # block id -> [(position, (then scope, else scope)), ...] of its Ifs
    cdef public list scope_parent   # scope id -> parent scope id (-1: a function body)
    cdef public list scope_anchor   # scope id -> (block id, If binding, position), None for a body
    cdef public list scope_blocks   # scope id -> its block ids
    cdef vector[int64_t] b_scope    # block id -> scope id (block_scope, for kernels)
    cdef vector[int8_t] b_dataflow  # block id -> 1 for a dataflow block
    cdef vector[int64_t] s_anchor   # scope id -> the item of the binding whose value holds it (-1: a body)
    # ---- the function being read (reader state kept here, so both readers share it)
    cdef PointerIds var_ids         # variable address -> var id
    cdef vector[int64_t] var_x      # var id -> its X_VAR expression (-1 before its first use)
    cdef vector[int8_t] v_ty        # var id -> the TY_* code of its type (_kill_rules.pxd); -1 unbound or unread
    cdef vector[int8_t] v_dataflow  # var id -> 1 for a DataflowVar
    cdef vector[size_t] v_ref       # var id -> the variable object's address (borrowed)
    cdef vector[int64_t] pending    # children read so far of the tuples and calls being read (a stack)

    cdef int begin_function(self, str name, size_t expected_vars) except -1
    cdef void reserve(self, size_t n) noexcept
    cdef int end_function(self, error) except -1
    cdef Py_ssize_t new_scope(self, Py_ssize_t parent, anchor) except -1
    cdef Py_ssize_t new_block(self, Py_ssize_t sid, bint dataflow, bindings, size_t ref) except -1

    # the records a reader appends per binding and expression, inline (compiled into each reader)
    cdef inline int64_t add_expr(self, int8_t kind, int64_t a, int64_t b, int64_t c) except -1:
        """Append an expression without children; returns its id."""
        cdef int64_t x = <int64_t>self.x_kind.size()
        self.x_kind.push_back(kind)
        self.x_a.push_back(a)
        self.x_b.push_back(b)
        self.x_c.push_back(c)
        self.x_first.push_back(<int64_t>self.x_child.size())
        self.x_n.push_back(0)
        return x

    cdef inline int64_t add_parent(self, int8_t kind, int64_t a, size_t start) except -1:
        """Append a tuple or call record whose children are ``pending[start:]`` (a reader
        pushes each child's id there as it reads it; they are moved into ``x_child``
        contiguously); returns its id."""
        cdef int64_t x = self.add_expr(kind, a, -1, 0)
        cdef size_t i
        self.x_n[x] = <int64_t>(self.pending.size() - start)
        for i in range(start, self.pending.size()):
            self.x_child.push_back(self.pending[i])
        self.pending.resize(start)
        return x

    cdef inline int64_t var_id(self, size_t key) except -1:
        """The var id of the variable at address ``key`` in the function being read."""
        cdef int64_t k = self.var_ids.add(key)
        if k == <int64_t>self.var_x.size():
            self.var_x.push_back(-1)
            self.v_ty.push_back(-1)
            self.v_dataflow.push_back(0)
            self.v_ref.push_back(key)
        return k

    cdef inline int64_t var_expr(self, size_t key) except -1:
        """The X_VAR expression of the variable at address ``key`` (one per variable)."""
        cdef int64_t k = self.var_id(key)
        cdef int64_t x = self.var_x[k]
        if x < 0:
            x = self.var_x[k] = self.add_expr(X_VAR, k, 0, 0)
        return x

    cdef inline int64_t add_item(self, int8_t kind, int64_t var, int64_t value, int64_t block, int64_t pos,
                                 int64_t outer, size_t ref, int64_t scope) except -1:
        """Append an item; returns its index."""
        cdef int64_t i = <int64_t>self.i_kind.size()
        self.i_kind.push_back(kind)
        self.i_var.push_back(var)
        self.i_value.push_back(value)
        self.i_block.push_back(block)
        self.i_pos.push_back(pos)
        self.i_outer.push_back(outer)
        self.i_ref.push_back(ref)
        self.i_scope.push_back(scope)
        self.i_same_type.push_back(0)
        return i


cdef inline void push_operands(BindingTable T, int64_t x, vector[int64_t]& stack) noexcept nogil:
    """Push the expressions evaluating ``x`` reads directly (every pass's notion of a use): a
    call's variable callee and its arguments, a tuple's fields, a get-item's tuple, an ``If``'s
    condition. An ``If``'s branches and a nested scope are not pushed: their items are the
    table's own."""
    cdef int8_t c = T.x_kind[x]
    cdef int64_t j
    if c == X_CALL or c == X_TUPLE:
        if c == X_CALL and T.x_b[x] >= 0:
            stack.push_back(T.x_b[x])
        for j in range(T.x_n[x]):
            stack.push_back(T.x_child[T.x_first[x] + j])
    elif c == X_GET_ITEM or c == X_IF:
        stack.push_back(T.x_a[x])
