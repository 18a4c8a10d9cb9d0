# cython: language_level=3
"""DeadCodeElimination's unused-binding rule, once, over the binding table (built by
``setup.py``; no fallback).

Design
------
TVM's ``RemoveAllUnused`` removes every ``VarBinding`` whose variable is *unused*: the
greatest fixpoint of "not externally exposed, and every binding that reads it is removed".
One kernel decides it over one function of a
:class:`~memcore_py.analysis._binding_table.BindingTable` whose every call's arguments were read,
for either object model: :func:`unused_bindings` answers the variables of a table read from
memcore IR with nested scopes (:class:`~memcore_py.analysis._ir_reader.IRReader`), which the
pass (:mod:`memcore_py.transform.dead_code_elimination`) drops; :func:`unused_binding_sites`
answers where the bindings are, for a table read from TVM's objects
(:class:`~memcore_py.tvm._table_reader.TVMReader`), which the native
AttachAttrLayoutFreeBuffers (:mod:`memcore_py.tvm.attach_extract`) drops. The rules, each in
one place here:

1. *Readers* (TVM ``CollectVarUsage``): a variable occurring in an item's value (a call's
   arguments and variable callee, tuple fields, get-items, an ``If``'s condition) is read by
   the item's *user*: a ``VarBinding``'s own variable; for a ``MatchCast`` or a scope's result,
   the user of its scope. An ``If`` branch or a nested ``SeqExpr`` has the user of the binding
   that holds it (its variable for a ``VarBinding``); a function body and a nested function
   have none. A read without a user exposes the variable.
2. *Impurity* (TVM ``ContainsImpureCall``): a ``VarBinding`` whose value calls an impure callee
   (the caller's ``impure`` flags, one per callee id: TVM ``IsImpureCall``) exposes its variable;
   nested calls, ``If`` branches and nested ``SeqExpr`` s are searched, nested functions are
   not, except that a bound function is judged by its body.
3. *Fixpoint*: each ``VarBinding`` variable counts its distinct readers; one with none that is
   not exposed is unused, and then each variable it reads has one reader less (a worklist).
   ``MatchCast`` bindings are never removed.
"""
from libc.stdint cimport int8_t, int64_t, uint8_t
from libcpp.algorithm cimport sort, unique
from libcpp.pair cimport pair
from libcpp.vector cimport vector

from cpython.object cimport PyObject

from memcore_py.analysis._binding_table cimport (
    BindingTable, push_operands, I_BINDING, I_RESULT, X_CALL, X_SCOPE, X_VAR,
)

__all__ = ["unused_bindings", "unused_binding_sites"]

cdef enum:
    SCOPE_BODY = 0      # the function body: no user
    SCOPE_INHERITS = 1  # an If branch or nested SeqExpr: the user of the binding holding it
    SCOPE_FUNCTION = 2  # a nested function: no user, not searched for impure calls


def unused_bindings(BindingTable T, Py_ssize_t k, const uint8_t[::1] impure):
    """The variables of the ``VarBinding`` s DeadCodeElimination removes from the ``k``-th
    function of ``T`` (module docstring).

    Parameters
    ----------
    T : BindingTable
        Read from memcore IR with nested scopes and every call's arguments; ``k`` must be the
        last function read.
    k : int
    impure : bytes-like of uint8
        Per callee id of ``T``, 1 when a call of that callee is impure.

    Returns
    -------
    list
        The unused variables (memcore IR objects), in binding order.

    Raises
    ------
    IndexError
        ``k`` is not the table's last function.
    ValueError
        ``impure`` does not have one flag per callee.
    TypeError
        The table was not read from memcore IR.
    """
    cdef int64_t i
    check_function(T, k, impure)
    for i in range(T.f_first[k], <int64_t>T.i_kind.size()):
        if T.i_kind[i] != I_RESULT and T.block_bindings[T.i_block[i]] is None:
            raise TypeError("unused_bindings: the table was not read from memcore IR")
    return [<object><PyObject*>T.v_ref[T.i_var[i]] for i in removed_items(T, k, impure)]


def unused_binding_sites(BindingTable T, Py_ssize_t k, const uint8_t[::1] impure):
    """Where the ``VarBinding`` s DeadCodeElimination removes from the ``k``-th function of
    ``T`` are (module docstring), for a table of either object model.

    Parameters
    ----------
    T : BindingTable
        Read with every call's arguments (a TVM reader given no ``CALLEE_ALLOCATES`` flag);
        ``k`` must be the last function read.
    k : int
    impure : bytes-like of uint8
        Per callee id of ``T``, 1 when a call of that callee is impure.

    Returns
    -------
    list of (int, int)
        ``(block id, position in the block)`` of each removed binding, in binding order.

    Raises
    ------
    IndexError
        ``k`` is not the table's last function.
    ValueError
        ``impure`` does not have one flag per callee.
    """
    check_function(T, k, impure)
    return [(T.i_block[i], T.i_pos[i]) for i in removed_items(T, k, impure)]


cdef list removed_items(BindingTable T, Py_ssize_t k, const uint8_t[::1] impure):
    """The items of the ``VarBinding`` s :func:`dead_variables` removes, in binding order
    (arguments checked by :func:`check_function`)."""
    cdef vector[int8_t] dead
    cdef int64_t i, v
    dead_variables(T, k, impure, dead)
    out = []
    for i in range(T.f_first[k], <int64_t>T.i_kind.size()):
        v = T.i_var[i]
        if T.i_kind[i] == I_BINDING and v >= 0 and dead[v]:
            out.append(i)
    return out


cdef int check_function(BindingTable T, Py_ssize_t k, const uint8_t[::1] impure) except -1:
    """The wrappers' checks of their arguments, before :func:`dead_variables` reads them."""
    if k < 0 or k != <Py_ssize_t>T.f_first.size() - 1:
        raise IndexError(f"unused_bindings: function {k} is not the table's last function read")
    if impure.shape[0] != <Py_ssize_t>T.c_flags.size():
        raise ValueError(f"unused_bindings: {impure.shape[0]} impurity flags for {T.c_flags.size()} callees")
    return 0


cdef int dead_variables(BindingTable T, Py_ssize_t k, const uint8_t[::1] impure, vector[int8_t]& dead) except -1:
    """The rules of the module docstring: ``dead[v]`` is 1 for each variable of the ``k``-th
    function whose ``VarBinding`` is removed (arguments checked by :func:`check_function`)."""
    cdef int64_t first = T.f_first[k], end = <int64_t>T.i_kind.size()
    cdef int64_t n_vars = T.f_n_vars[k], n_scopes = <int64_t>T.s_anchor.size(), n_exprs = <int64_t>T.x_kind.size()
    cdef int64_t i, j, s, x, v, u, a, c, n
    cdef vector[int8_t] kind = vector[int8_t](n_scopes, SCOPE_BODY)
    cdef vector[int64_t] scope_user = vector[int64_t](n_scopes, -1)
    cdef vector[int8_t] scope_impure = vector[int8_t](n_scopes, 0)
    cdef vector[int8_t] item_impure = vector[int8_t](end - first, 0)
    cdef vector[int8_t] exposed = vector[int8_t](n_vars, 0)
    cdef vector[int8_t] removable = vector[int8_t](n_vars, 0)   # bound by a VarBinding
    cdef vector[int64_t] users = vector[int64_t](n_vars, 0)
    dead.assign(n_vars, 0)
    cdef vector[pair[int64_t, int64_t]] reads                   # (user, variable read)
    cdef vector[int64_t] read_first = vector[int64_t](n_vars + 1, 0)
    cdef vector[int64_t] stack, todo
    with nogil:
        # the kind of each scope (rule 1)
        for s in range(n_scopes):
            if T.s_anchor[s] >= 0:
                kind[s] = SCOPE_INHERITS
        for x in range(n_exprs):
            if T.x_kind[x] == X_SCOPE and T.x_a[x] == 1 and 0 <= T.x_b[x] < n_scopes:
                kind[T.x_b[x]] = SCOPE_FUNCTION
        for s in range(n_scopes):  # a parent scope has a smaller id than its children
            if kind[s] == SCOPE_INHERITS:
                a = T.s_anchor[s]
                scope_user[s] = T.i_var[a] if T.i_kind[a] == I_BINDING else scope_user[T.i_scope[a]]
        # readers and impure calls of each item's value (rules 1, 2)
        for i in range(first, end):
            u = T.i_var[i] if T.i_kind[i] == I_BINDING else scope_user[T.i_scope[i]]
            if T.i_kind[i] == I_BINDING and T.i_var[i] >= 0:
                removable[T.i_var[i]] = 1
            stack.push_back(T.i_value[i])
            while stack.size():
                x = stack.back()
                stack.pop_back()
                c = T.x_kind[x]
                if c == X_VAR:
                    v = T.x_a[x]
                    if u < 0:
                        exposed[v] = 1
                    else:
                        reads.push_back(pair[int64_t, int64_t](u, v))
                else:
                    if c == X_CALL and impure[T.x_a[x]]:
                        item_impure[i - first] = 1
                    push_operands(T, x, stack)
            if item_impure[i - first]:
                scope_impure[T.i_scope[i]] = 1
        for s in range(n_scopes - 1, -1, -1):  # children first: an If's or SeqExpr's calls are its holder's
            if kind[s] == SCOPE_INHERITS and scope_impure[s]:
                a = T.s_anchor[s]
                item_impure[a - first] = 1
                scope_impure[T.i_scope[a]] = 1
        for i in range(first, end):
            x = T.i_value[i]
            if T.x_kind[x] == X_SCOPE and T.x_a[x] == 1 and scope_impure[T.x_b[x]]:
                item_impure[i - first] = 1  # a bound function is judged by its body
            if T.i_kind[i] == I_BINDING and T.i_var[i] >= 0 and item_impure[i - first]:
                exposed[T.i_var[i]] = 1
        # distinct readers, and what each user reads (CSR by user) (rule 3)
        sort(reads.begin(), reads.end())
        n = unique(reads.begin(), reads.end()) - reads.begin()
        reads.resize(n)
        for j in range(n):
            read_first[reads[j].first + 1] += 1
            if removable[reads[j].second]:
                users[reads[j].second] += 1
        for v in range(n_vars):
            read_first[v + 1] += read_first[v]
        for v in range(n_vars):
            if removable[v] and users[v] == 0 and not exposed[v]:
                dead[v] = 1
                todo.push_back(v)
        while todo.size():
            u = todo.back()
            todo.pop_back()
            for j in range(read_first[u], read_first[u + 1]):
                v = reads[j].second
                if not removable[v]:
                    continue
                users[v] -= 1
                if users[v] == 0 and not exposed[v] and not dead[v]:
                    dead[v] = 1
                    todo.push_back(v)
    return 0
