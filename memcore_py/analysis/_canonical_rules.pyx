# cython: language_level=3
"""CanonicalizeBindings' planning rules, once, over the binding table (built by ``setup.py``; no
fallback).

Design
------
TVM's ``CanonicalizePlanner`` walks a function once and records what ``BindingCanonicalizer``
rewrites. :func:`canonical_plan` is that walk over one function of a
:class:`~memcore_py.analysis._binding_table.BindingTable`; its result, a :class:`CanonicalPlan`,
is read by the two passes that apply these rules:

- CanonicalizeBindings on memcore IR (:mod:`memcore_py.transform.canonicalize_bindings`), which
  takes the plan's objects (:meth:`CanonicalPlan.objects`) and rewrites;
- KillAfterLastUse's rebinding rule (rule 6 of :mod:`memcore_py.analysis._kill_rules`), which
  applies the plan's rebindings and constants itself where its writers can, on memcore IR and
  on TVM's objects alike, and otherwise asks for CanonicalizeBindings.

KillAfterLastUse's UnusedTrivialBindingRemover
(:func:`memcore_py.transform.kill_after_last_use.remove_unused_trivial_bindings`) asks rule 2 of
each binding's own value (:func:`exact_rebindings`).

The rules, in binding (visit) order, each in one place here:

1. *Known value* of a bound variable (``v_known``, TVM ``UnwrapKnownValue``): its binding's
   value, except that ``t[i]`` of a tuple literal known through variables is that tuple's field
   ``i`` (``t = (a, b); c = t[1]`` knows ``c`` is ``b``), and a non-empty tuple
   ``(u[0], ..., u[n-1])`` whose fields are, through variables, get-items ``0 .. n-1`` of one
   ``u`` of arity ``n`` is ``u`` (``REPACK_EXACT``; ``REPACK_FIELDS`` when the table does not
   know ``u``'s arity). Known values are followed through variables bound earlier.
2. *Trivial binding* (``v_trivial``; ``rebinds_exactly``, ``_canonical_rules.pxd``): the known
   value is a variable other than the bound one and the binding is a VarBinding or a match_cast
   to exactly its value's type (the reader's ``i_same_type``).
3. *Constant binding* (``v_const``): the known value is a tensor constant.
4. *Dataflow facts*: a variable bound in a dataflow block (``v_in_dataflow``); used outside its
   home block (``v_outside``: a use in a binding outside any dataflow block or in another block,
   or in a scope's result).
5. *Chains* (``chain_end``, ``_canonical_rules.pxd``): a chain of trivial bindings
   (``y = x; z = y``) collapses to its first non-trivial variable (``z`` stands for ``x``);
   :meth:`CanonicalPlan.objects` gives each trivially rebound variable its chain's end, and
   KillAfterLastUse's kernel follows its own rebindings with the same function.

What the rewrite does with the plan (Var/DataflowVar exchange) is CanonicalizeBindings'
(``memcore_py.transform.canonicalize_bindings._plan``).
"""
from cpython.object cimport PyObject
from libc.stdint cimport int8_t, int64_t
from libcpp.vector cimport vector

from memcore_py.analysis._binding_table cimport (
    BindingTable, push_operands, I_RESULT, LEAF_CONST, X_CALL, X_GET_ITEM, X_IF, X_LEAF, X_TUPLE,
)

__all__ = ["canonical_plan", "exact_rebindings", "CanonicalPlan", "REPACKS"]

#: ``REPACK_*`` codes by name (``_canonical_rules.pxd``), as :meth:`CanonicalPlan.repack` gives them.
REPACKS = {"none": REPACK_NONE, "fields": REPACK_FIELDS, "exact": REPACK_EXACT}


cdef class CanonicalPlan:
    """What CanonicalizeBindings' planner finds in one function (fields: ``_canonical_rules.pxd``)."""

    def objects(self):
        """The plan as memcore IR objects, for CanonicalizeBindings' rewrite.

        Returns
        -------
        trivial : dict
            Each trivially rebound variable -> the first non-trivial variable of its chain of
            trivial bindings (rule 5), in binding order.
        constants : dict
            Each variable bound to a constant -> that :class:`~memcore_py.ir.Constant`.
        in_dataflow : list
            The variables bound in dataflow blocks, in binding order.
        outside : set
            The variables used outside their home dataflow block (or outside any).

        Raises
        ------
        TypeError
            The table was not read from memcore IR (its objects are not Python objects).
        """
        cdef BindingTable T = self.T
        cdef int64_t i, v
        for i in range(self.first, self.end):
            if T.i_kind[i] != I_RESULT and T.block_bindings[T.i_block[i]] is None:
                raise TypeError("CanonicalPlan.objects: the table was not read from memcore IR")
        trivial, constants, in_dataflow = {}, {}, []
        for i in range(self.first, self.end):
            v = T.i_var[i]
            if v < 0:
                continue
            var = <object><PyObject*>T.v_ref[v]
            if self.v_trivial[v] >= 0:
                trivial[var] = <object><PyObject*>T.v_ref[chain_end(self.v_trivial, self.v_trivial[v])]
            elif self.v_const[v] >= 0:
                if T.x_b[self.v_const[v]] == 0:
                    raise TypeError("CanonicalPlan.objects: the table did not record the constant's object")
                constants[var] = <object><PyObject*><size_t>T.x_b[self.v_const[v]]
            if self.v_in_dataflow[v]:
                in_dataflow.append(var)
        outside = {<object><PyObject*>T.v_ref[v] for v in range(<int64_t>self.v_outside.size()) if self.v_outside[v]}
        return trivial, constants, in_dataflow, outside

    @property
    def n_vars(self):
        """The number of variables of the function (var ids ``0 .. n_vars - 1``)."""
        return <Py_ssize_t>self.v_item.size()

    def repack(self, Py_ssize_t v):
        """The ``REPACK_*`` code of variable ``v``'s binding (for tests)."""
        if v < 0 or v >= <Py_ssize_t>self.v_repack.size():
            raise IndexError(f"no variable {v} in the function")
        return <int>self.v_repack[v]

    def rebinds(self, Py_ssize_t v):
        """The var id variable ``v``'s trivial binding rebinds, -1 when it is not trivial (rule 2,
        one link of a chain; for tests)."""
        if v < 0 or v >= <Py_ssize_t>self.v_trivial.size():
            raise IndexError(f"no variable {v} in the function")
        return self.v_trivial[v]


cdef inline int64_t unwrap_var(BindingTable T, vector[int64_t]& known, int64_t x) noexcept nogil:
    """``x``, or while it is a variable with a known value, that value (rule 1)."""
    cdef size_t steps = 0
    cdef int64_t nxt
    while T.x_kind[x] == X_VAR and steps <= known.size():
        nxt = known[T.x_a[x]]
        if nxt < 0:
            return x
        x = nxt
        steps += 1
    return x


cdef int64_t repack_source(BindingTable T, vector[int64_t]& known, int64_t x, int8_t* kind) noexcept nogil:
    """For the tuple ``x``: the ``u`` it re-packs (``kind`` REPACK_EXACT) or -1 (rule 1)."""
    cdef int64_t j, el, n = T.x_n[x]
    cdef int64_t first = unwrap_var(T, known, T.x_child[T.x_first[x]])
    kind[0] = REPACK_NONE
    if T.x_kind[first] != X_GET_ITEM:
        return -1
    if T.x_c[first] != 0 and T.x_c[first] != n:
        return -1  # the source's arity is known and is not n
    cdef int64_t earlier = unwrap_var(T, known, T.x_a[first])
    for j in range(n):
        el = unwrap_var(T, known, T.x_child[T.x_first[x] + j])
        if T.x_kind[el] != X_GET_ITEM or T.x_b[el] != j:
            return -1
        if unwrap_var(T, known, T.x_a[el]) != earlier:
            return -1
    if T.x_c[first] == 0:
        kind[0] = REPACK_FIELDS
        return -1
    kind[0] = REPACK_EXACT
    return earlier


cdef CanonicalPlan canonical_plan_of(BindingTable T, Py_ssize_t k, bint facts=True):
    cdef CanonicalPlan P = CanonicalPlan()
    cdef int64_t n_vars = T.f_n_vars[k]
    cdef int64_t i, j, v, x, t, val, blk
    cdef int8_t c, repack
    cdef bint outside
    cdef vector[int64_t] stack
    P.T = T
    P.function = k
    P.first = T.f_first[k]
    P.end = T.f_first[k + 1] if k + 1 < <Py_ssize_t>T.f_first.size() else <int64_t>T.i_kind.size()
    P.v_item.assign(n_vars, -1)
    P.v_known.assign(n_vars, -1)
    P.v_trivial.assign(n_vars, -1)
    P.v_const.assign(n_vars, -1)
    P.v_repack.assign(n_vars, REPACK_NONE)
    if facts:
        P.v_in_dataflow.assign(n_vars, 0)
        P.v_outside.assign(n_vars, 0)
    with nogil:
        # rules 1-3, in binding order (a known value is followed through earlier bindings only)
        for i in range(P.first, P.end):
            v = T.i_var[i]
            if v < 0:
                continue
            P.v_item[v] = i
            x = T.i_value[i]
            c = T.x_kind[x]
            val = x
            if c == X_GET_ITEM:
                t = unwrap_var(T, P.v_known, T.x_a[x])
                j = T.x_b[x]
                if T.x_kind[t] == X_TUPLE and 0 <= j < T.x_n[t]:
                    val = T.x_child[T.x_first[t] + j]
            elif c == X_TUPLE and T.x_n[x] > 0:
                t = repack_source(T, P.v_known, x, &repack)
                P.v_repack[v] = repack
                if t >= 0:
                    val = t
            if rebinds_exactly(T, i, val):
                if T.x_a[val] != v:
                    P.v_trivial[v] = T.x_a[val]
            elif T.x_kind[val] == X_LEAF and T.x_a[val] == LEAF_CONST:
                P.v_const[v] = val
            P.v_known[v] = val
            if facts and T.b_dataflow[T.i_block[i]]:
                P.v_in_dataflow[v] = 1
        # rule 4: every occurrence of a variable, by the block it is in (only when asked)
        if facts:
            for i in range(P.first, P.end):
                blk = T.i_block[i]
                outside = T.i_kind[i] == I_RESULT or not T.b_dataflow[blk]
                stack.push_back(T.i_value[i])
                while stack.size():
                    x = stack.back()
                    stack.pop_back()
                    c = T.x_kind[x]
                    if c == X_VAR:
                        v = T.x_a[x]
                        if outside or (P.v_item[v] >= 0 and T.i_block[P.v_item[v]] != blk):
                            P.v_outside[v] = 1
                    else:
                        push_operands(T, x, stack)
    return P


def canonical_plan(BindingTable T, Py_ssize_t k):
    """CanonicalizeBindings' plan (module docstring) of the ``k``-th function of ``T``.

    ``T`` must still hold that function's variables: ``k`` is the last function read.

    Parameters
    ----------
    T : BindingTable
    k : int

    Returns
    -------
    CanonicalPlan

    Raises
    ------
    IndexError
        ``k`` is not the table's last function.
    """
    if k != <Py_ssize_t>T.f_first.size() - 1 or k < 0:
        raise IndexError(f"canonical_plan: function {k} is not the table's last function read")
    return canonical_plan_of(T, k)


def exact_rebindings(BindingTable T, Py_ssize_t k):
    """The bindings of the ``k``-th function of ``T`` whose own value rebinds a variable exactly
    (rule 2's ``rebinds_exactly`` of the binding's value, not of its known value: TVM
    ``UnusedTrivialBindingRemover``'s candidates), in every scope the table holds.

    Parameters
    ----------
    T : BindingTable
        The table, with ``i_same_type`` read (memcore IR).
    k : int
        The function (any the table holds).

    Returns
    -------
    list of (int, int)
        ``(block id, position)`` of each such binding, in item order.

    Raises
    ------
    IndexError
        ``T`` has no function ``k``.
    """
    if k < 0 or k >= <Py_ssize_t>T.f_first.size():
        raise IndexError(f"exact_rebindings: no function {k} in the table")
    cdef int64_t i
    cdef int64_t first = T.f_first[k]
    cdef int64_t end = T.f_first[k + 1] if k + 1 < <Py_ssize_t>T.f_first.size() else <int64_t>T.i_kind.size()
    return [(T.i_block[i], T.i_pos[i]) for i in range(first, end)
            if T.i_kind[i] != I_RESULT and rebinds_exactly(T, i, T.i_value[i])]
