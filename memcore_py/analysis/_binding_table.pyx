# cython: language_level=3
"""The flat binding table of a module: one record of what a pass's rules need to know of a
module's Relax functions, whatever object model the module is in (built by ``setup.py``).

Design
------
A memory pass is *reader -> binding table -> rule kernel*: a reader walks one object model
(memcore's IR: :mod:`memcore_py.analysis._ir_reader`) and fills this table; the pass's rule
kernel (StaticPlanBlockMemory's Init rules: :meth:`memcore_py.analysis._storage_walk.InitRules.run_function`)
walks the table and nothing else. A reader applies no pass rule: it records what each
binding *is* (the kind of its value, the callee and its op-table properties, the variables
it reads, where it sits), and the kernel decides what that means. So each rule is written
once, in the kernel, for every object model a reader exists for.

The fields are declared, one comment each, in ``_binding_table.pxd``. The table is a struct
of arrays of C integers:

- *expressions* (``x_*``): every value and every expression nested in it, children before
  nothing in particular but always by id (``x_child``, a CSR list of child expr ids);
- *items* (``i_*``): the bindings and scope results of each function in visit order, the
  bindings of an ``If``'s branches right after the ``If`` binding itself (then branch, its
  result, else branch, its result), so that a kernel walks the items in one loop;
- *callees* (``c_flags``): per distinct callee its op-table properties (:data:`CF_ALLOCATES`,
  :data:`CF_SHARES`, :data:`CF_USES_ARGS`);
- *functions* (``f_*``): where each function's items start, how many variables it has, and
  where its reader stopped with an error (the kernel runs the items before it, then raises
  the reader's error: errors are reported in visit order, whichever side finds them);
- the block and scope structure as Python lists (what a rewriter needs to place new
  bindings), holding the reader's own objects.
"""
from libcpp.vector cimport vector

from memcore_py.analysis._binding_table cimport (CF_ALLOCATES, CF_KILL, CF_NO_REGISTER, CF_SHARES, CF_STORAGE,
                                                 CF_USES_ARGS, I_BINDING, I_MATCH_CAST, I_RESULT)


cdef class PointerIds:
    """Dense ids of objects by address (open addressing, linear probing, multiplicative
    hashing by the high bits). The objects must outlive the table (a reader's module holds
    them); they are compared, never used."""

    # fields: _binding_table.pxd

    def __cinit__(self):
        self.resize(64)

    cdef void resize(self, size_t cap) noexcept:
        """Empty, with room for ``cap`` slots (a power of two)."""
        self.keys.assign(cap, 0)
        self.vals.resize(cap)
        self.mask = cap - 1
        self.shift = 64
        while cap > 1:
            cap >>= 1
            self.shift -= 1
        self.n = 0

    cdef void clear(self, size_t expected) noexcept:
        """Empty, with room for about ``expected`` keys without growing."""
        cdef size_t cap = 64
        while cap < 2 * expected + 2:
            cap <<= 1
        self.resize(cap)

    cdef void grow(self) noexcept:
        cdef vector[size_t] keys = self.keys
        cdef vector[int64_t] vals = self.vals
        cdef int64_t n = self.n
        cdef size_t j, i
        self.resize(2 * (self.mask + 1))
        self.n = n
        for j in range(keys.size()):
            if keys[j] != 0:
                i = self.slot(keys[j])
                self.keys[i] = keys[j]
                self.vals[i] = vals[j]


cdef class BindingTable:
    """An empty table (fields: ``_binding_table.pxd``)."""

    def __init__(self):
        self.errors = []
        self.func_names = []
        self.block_bindings = []
        self.block_scope = []
        self.block_is_dataflow = []
        self.block_ifs = {}
        self.scope_parent = []
        self.scope_anchor = []
        self.scope_blocks = []
        self.var_ids = PointerIds()

    cdef int begin_function(self, str name, size_t expected_vars) except -1:
        """Start reading the next function (``expected_vars``: about how many variables)."""
        self.var_ids.clear(expected_vars)
        self.var_x.clear()
        self.v_ty.clear()
        self.v_dataflow.clear()
        self.v_ref.clear()
        self.pending.clear()
        self.reserve(expected_vars)
        self.f_first.push_back(<int64_t>self.i_kind.size())
        self.func_names.append(name)
        return 0

    cdef void reserve(self, size_t n) noexcept:
        """Room for ``n`` more variables and items and about three expressions each, so that
        reading a function of about ``n`` bindings does not grow the arrays step by step (the
        capacity at least doubles when it grows, as ``push_back``'s does)."""
        cdef size_t ni = self.i_kind.size() + n, nx = self.x_kind.size() + 3 * n
        self.var_x.reserve(n)
        self.v_ty.reserve(n)
        self.v_dataflow.reserve(n)
        self.v_ref.reserve(n)
        if self.i_kind.capacity() < ni:
            ni = max(ni, 2 * self.i_kind.capacity())
            self.i_kind.reserve(ni)
            self.i_var.reserve(ni)
            self.i_value.reserve(ni)
            self.i_block.reserve(ni)
            self.i_pos.reserve(ni)
            self.i_outer.reserve(ni)
            self.i_ref.reserve(ni)
            self.i_scope.reserve(ni)
            self.i_same_type.reserve(ni)
        if self.x_kind.capacity() < nx:
            nx = max(nx, 2 * self.x_kind.capacity())
            self.x_kind.reserve(nx)
            self.x_a.reserve(nx)
            self.x_b.reserve(nx)
            self.x_c.reserve(nx)
            self.x_first.reserve(nx)
            self.x_n.reserve(nx)
            self.x_child.reserve(nx)

    cdef int end_function(self, error) except -1:
        """The function is read: ``error`` is the reading error that stopped it at the next
        item (an exception), or None."""
        self.f_n_vars.push_back(<int64_t>self.var_x.size())
        self.f_error.push_back(<int64_t>self.i_kind.size() if error is not None else -1)
        self.errors.append(error)
        return 0

    cdef Py_ssize_t new_scope(self, Py_ssize_t parent, anchor) except -1:
        """A new scope (a function body, or an If branch anchored at ``(block, If binding,
        position)``); returns its id."""
        self.scope_parent.append(parent)
        self.scope_anchor.append(anchor)
        self.scope_blocks.append([])
        self.s_anchor.push_back(-1)
        return len(self.scope_parent) - 1

    cdef Py_ssize_t new_block(self, Py_ssize_t sid, bint dataflow, bindings, size_t ref) except -1:
        """A new block of scope ``sid`` (``bindings``: memcore's tuple of them, or None;
        ``ref``: the TVM bindings Array's address, or 0); returns its id."""
        cdef Py_ssize_t bid = len(self.block_scope)
        self.block_scope.append(sid)
        self.block_is_dataflow.append(dataflow)
        self.b_scope.push_back(sid)
        self.b_dataflow.push_back(dataflow)
        (<list>self.scope_blocks[sid]).append(bid)
        self.block_bindings.append(bindings)
        self.b_ref.push_back(ref)
        return bid

    @property
    def n_items(self):
        """Number of items recorded."""
        return <Py_ssize_t>self.i_kind.size()

    @property
    def n_exprs(self):
        """Number of expressions recorded."""
        return <Py_ssize_t>self.x_kind.size()

    @property
    def n_functions(self):
        """Number of functions recorded."""
        return <Py_ssize_t>self.f_first.size()

    def block_refs(self):
        """``b_ref`` of every block (the bindings ``Array`` address over TVM objects, else 0)."""
        return [self.b_ref[b] for b in range(self.b_ref.size())]

    def items(self):
        """The items as ``(kind, var, value, block, pos, outer)`` tuples (for tests and
        debugging)."""
        return [(self.i_kind[i], self.i_var[i], self.i_value[i], self.i_block[i], self.i_pos[i], self.i_outer[i])
                for i in range(self.i_kind.size())]

    def binding_calls(self, int flag):
        """The ``(block id, position)`` of every ``VarBinding`` whose value is a call of a callee
        with the property ``flag`` (``CALLEE_*``), in item order; None when such a call is
        anywhere else too (nested in another expression, a ``MatchCast``'s value, a scope's
        result). It asks everything the table holds: read one function into a table of its own
        to ask it of that function."""
        cdef int64_t x, i, n_calls = 0
        cdef int64_t n_callees = self.c_flags.size()
        for x in range(<int64_t>self.x_kind.size()):
            if self.x_kind[x] == X_CALL and 0 <= self.x_a[x] < n_callees and self.c_flags[self.x_a[x]] & flag:
                n_calls += 1
        out = []
        for i in range(<int64_t>self.i_kind.size()):
            x = self.i_value[i]
            if (self.i_kind[i] == I_BINDING and 0 <= x < <int64_t>self.x_kind.size() and self.x_kind[x] == X_CALL
                    and 0 <= self.x_a[x] < n_callees and self.c_flags[self.x_a[x]] & flag):
                out.append((self.i_block[i], self.i_pos[i]))
        return out if len(out) == n_calls else None

    def unread_bindings(self):
        """How many ``VarBinding`` s of the function read last bind a variable no item of that
        function reads (its variables are the table's current ones: ask right after reading
        it)."""
        cdef int64_t i, v, n = 0
        if self.f_first.size() == 0:
            return 0
        for i in range(self.f_first[self.f_first.size() - 1], <int64_t>self.i_kind.size()):
            if self.i_kind[i] == I_BINDING:
                v = self.i_var[i]
                if 0 <= v < <int64_t>self.var_x.size() and self.var_x[v] < 0:
                    n += 1
        return n

    def match_cast_refs(self):
        """``(item, binding address)`` of every ``MatchCast`` of the function read last, in item
        order (the address is ``i_ref``: the object of the reader's object model)."""
        if self.f_first.size() == 0:
            return []
        cdef int64_t i
        return [(i, self.i_ref[i]) for i in range(self.f_first[self.f_first.size() - 1], <int64_t>self.i_kind.size())
                if self.i_kind[i] == I_MATCH_CAST]

    def set_same_type(self, int64_t item, bint same):
        """Record whether the ``MatchCast`` item ``item`` casts to exactly its value's type
        (``i_same_type``), a fact a reader of TVM's objects reads with TVM's own equality.

        Raises
        ------
        ValueError
            ``item`` is not a ``MatchCast`` item of the table.
        """
        if not 0 <= item < <int64_t>self.i_kind.size() or self.i_kind[item] != I_MATCH_CAST:
            raise ValueError(f"set_same_type: item {item} is not a MatchCast of the table")
        self.i_same_type[item] = same

    def block_sizes(self):
        """The number of bindings (``VarBinding`` s and ``MatchCast`` s) of every block, by
        block id."""
        cdef vector[int64_t] sizes = vector[int64_t](self.b_scope.size(), 0)
        cdef int64_t i, b
        for i in range(<int64_t>self.i_kind.size()):
            b = self.i_block[i]
            if self.i_kind[i] != I_RESULT and 0 <= b < <int64_t>sizes.size():
                sizes[b] += 1
        return [sizes[b] for b in range(<int64_t>sizes.size())]

    def exprs(self):
        """The expressions as ``(kind, a, b, c, children)`` tuples (for tests and debugging)."""
        return [(self.x_kind[x], self.x_a[x], self.x_b[x], self.x_c[x],
                 [self.x_child[self.x_first[x] + k] for k in range(self.x_n[x])])
                for x in range(self.x_kind.size())]


#: the callee properties, for the ``callee_flags`` functions readers are given (``CF_*``)
CALLEE_ALLOCATES = CF_ALLOCATES
CALLEE_SHARES = CF_SHARES
CALLEE_USES_ARGS = CF_USES_ARGS
CALLEE_STORAGE = CF_STORAGE
CALLEE_KILL = CF_KILL
CALLEE_NO_REGISTER = CF_NO_REGISTER
CALLEE_INPLACE = CF_INPLACE
CALLEE_CALL_TIR = CF_CALL_TIR
