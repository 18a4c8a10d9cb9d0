# cython: language_level=3
"""KillAfterLastUse's rules, once, for every object model (built by ``setup.py``; no fallback).

Design
------
KillAfterLastUse is *reader -> binding table -> rule kernel -> edits -> writer*. A reader
(:mod:`memcore_py.analysis._ir_reader` over memcore's IR, :mod:`memcore_py.tvm._table_reader`
over TVM's objects) fills the :class:`~memcore_py.analysis._binding_table.BindingTable`;
:func:`kill_rules` below walks one function's items and says what changes
(:class:`KillEdits`); a writer applies that to its object model
(:mod:`memcore_py.transform.kill_after_last_use`, :mod:`memcore_py.tvm.kill_extract`). The rules
(TVM ``CollectLastUsage`` / ``KillInserter``, with memcore's scoping, DIFFERENCES.md) and the
one place each lives:

1. *Kill kind* of a variable: ``kill_kind_of`` (``_kill_rules.pxd``) of how its binding defines
   it (``DEF_*``: an op whose kill role is "storage", "no_register", a tensor constant, else
   plain) and its type (``TY_*``, read by the reader).
2. *Uses*: every occurrence of a variable in an item's value (a call's arguments and a callee
   that is a variable, tuple fields, get-items, an ``If``'s condition); not the arguments of a
   storage allocation, not the argument of an explicit kill (that variable is *already
   killed*, wherever the kill is). A kill call must have exactly one argument, a variable
   (else :attr:`KillEdits.error_item`: the portable path raises, the TVM path declines).
3. *Last use*: a variable of scope S is last used at the item of S whose value holds its last
   occurrence in S (an occurrence after S ends is none), an occurrence in a nested scope (an ``If`` branch, a nested function) counting
   at the binding of S that holds that scope; one in S's result makes it an output.
4. *Placement*: killed after its last-use binding, unless an output, unused, already killed or
   of no kill kind; with ``tvm_scoping`` (TVM's placement) nothing at or after the first
   binding of S whose value is an ``If`` or nested scope; otherwise a last use inside a
   dataflow block defers the kill to right after the block (a ``DataflowVar``: no kill).
5. *Order and names*: the kills after one binding are emitted tensors, then storages, then
   objects, each in definition order; a binding holding scopes emits its kills after theirs;
   the k-th kill emitted in the function is named as ``NameTable().fresh("_")``'s k-th name
   (:func:`kill_name`).
6. *Rebindings* (``rebind=True``, the paths that do not run CanonicalizeBindings first): the
   function's CanonicalizeBindings plan (:mod:`memcore_py.analysis._canonical_rules`, where its
   rules live) is applied here where the writers can apply it: a trivial binding of the function
   body (a VarBinding, or a match_cast of a variable) is dropped and its variable's uses read the
   end of its chain of rebindings (``chain_end``, ``_canonical_rules.pxd``, over the rebindings
   dropped here); the uses of a variable a VarBinding binds directly to a tensor constant
   read the constant (the binding stays). A dataflow block stays as it is when the plan
   leaves it so: none of its bindings is a rebinding, binds a constant or has a variable as its
   value, and each of its ``Var`` s (not ``DataflowVar`` s) is used outside it. What else the
   plan changes (a dataflow block otherwise, a re-packed tuple, a rebinding or constant in a
   branch or nested function, a match_cast of a get-item or of a constant, a constant read
   through a tuple's field, the kill of a constant, a rebinding read by a branch's result
   other than a call) or may change (a match_cast of anything but a call or a variable) sets
   :attr:`KillEdits.needs_canonical`: the caller runs CanonicalizeBindings
   (:mod:`memcore_py.transform.canonicalize_bindings`) first and calls again with
   ``rebind=False``.
"""
from libc.stdint cimport int8_t, int64_t, uint8_t
from libcpp.vector cimport vector

from memcore_py.ir._names cimport numbered_name
from memcore_py.analysis._canonical_rules cimport REPACK_NONE, CanonicalPlan, canonical_plan_of, chain_end
from memcore_py.analysis._binding_table cimport (
    BindingTable, push_operands, CF_KILL, CF_NO_REGISTER, CF_STORAGE, I_BINDING, I_MATCH_CAST, I_RESULT, LEAF_CONST, X_CALL,
    X_GET_ITEM, X_IF, X_LEAF, X_SCOPE, X_TUPLE, X_VAR,
)

from memcore_py.ir.types import FuncType, PrimType, ShapeType, TensorType, TupleType

__all__ = ["kill_kind", "kill_name", "kill_rules", "memcore_type_code", "DEFINITIONS", "KillEdits"]

#: ``definition`` argument of :func:`kill_kind` -> its code.
DEFINITIONS = {"plain": DEF_PLAIN, "storage": DEF_STORAGE, "no_register": DEF_NO_REGISTER,
               "constant": DEF_CONSTANT}

cdef type TENSOR_TYPE = TensorType
cdef type TUPLE_TYPE = TupleType
cdef type SHAPE_TYPE = ShapeType
cdef type PRIM_TYPE = PrimType
cdef type FUNC_TYPE = FuncType


cpdef int memcore_type_code(ty) noexcept:
    """The ``TY_*`` code of a memcore type (``None``: untyped), as ``_kill_rules.pxd`` lists them."""
    cls = type(ty)
    if cls is TENSOR_TYPE:
        return TY_TENSOR
    if cls is TUPLE_TYPE:
        return tuple_type_code(len((<object>ty).fields))
    if cls is SHAPE_TYPE:
        return TY_SHAPE
    if cls is PRIM_TYPE:
        return TY_PRIM
    if cls is FUNC_TYPE:
        return TY_FUNC
    if ty is None:
        return TY_UNTYPED
    return TY_OBJECT


def kill_kind(int definition, ty):
    """The kill kind of a variable of memcore type ``ty`` defined as ``definition``.

    Parameters
    ----------
    definition : int
        A value of :data:`DEFINITIONS`: how the variable's binding defines it.
    ty : Type or None
        The variable's type.

    Returns
    -------
    int
        0 ``kill_tensor``, 1 ``kill_storage``, 2 ``kill_object``, -1 no kill.

    Raises
    ------
    ValueError
        ``definition`` is not one of :data:`DEFINITIONS`' values.
    """
    if definition < DEF_PLAIN or definition > DEF_CONSTANT:
        raise ValueError(f"definition must be one of {sorted(DEFINITIONS.values())}; got {definition}")
    return kill_kind_of(definition, memcore_type_code(ty))


cpdef str kill_name(Py_ssize_t k):
    """The name of the k-th kill variable of a function (``_``, ``_1``, ...)."""
    return numbered_name("_", k)


cdef class KillEdits:
    """What :func:`kill_rules` found for one function (fields: ``_kill_rules.pxd``)."""

    def __init__(self):
        self.n_kills = 0
        self.n_dropped = 0
        self.n_rewritten = 0
        self.needs_canonical = False
        self.unknown_type = False
        self.has_match_cast = False
        self.error_item = -1
        self.error_code = 0
        self.error_n = 0
        self.error_ref = 0
        self.last_use = None
        self.killed = None

    @property
    def subst(self):
        """Dict: the address of each dropped variable -> the address of the variable it stands
        for."""
        cdef size_t v
        return {self.v_ref[v]: self.v_ref[self.v_sub[v]] for v in range(self.v_sub.size()) if self.v_sub[v] >= 0}

    @property
    def constants(self):
        """Set: the addresses of the variables bound to a tensor constant (their uses read it)."""
        cdef size_t v
        return {self.v_ref[v] for v in range(self.v_const.size()) if self.v_const[v]}

    @property
    def changed(self):
        """Whether the function changes at all."""
        return self.n_kills > 0 or self.n_dropped > 0 or self.n_rewritten > 0

    cdef int64_t slot(self, Py_ssize_t block, Py_ssize_t pos) except -1:
        """The slot of binding ``pos`` of block ``block``; IndexError when that is not a binding
        of the function's blocks."""
        if (block < 0 or block >= <Py_ssize_t>self.blk_first.size() or self.blk_first[block] < 0
                or pos < 0 or pos >= self.blk_n[block]):
            raise IndexError(f"KillEdits: binding {pos} of block {block} is not a binding of the function's blocks")
        return self.blk_first[block] + pos

    def kills_after(self, Py_ssize_t block, Py_ssize_t pos):
        """The kills right after binding ``pos`` of block ``block``: ``[(kind, target address,
        kill index), ...]`` (for tests and the analysis API).

        Raises
        ------
        IndexError
            ``(block, pos)`` is not a binding of the function's blocks.
        """
        cdef int64_t s = self.slot(block, pos)
        return self.records(self.s_kill[s], self.s_nkill[s])

    def kills_after_block(self, Py_ssize_t block):
        """The kills right after block ``block``, as :meth:`kills_after` gives them.

        Raises
        ------
        IndexError
            ``block`` is not a block id of the table.
        """
        if block < 0 or block >= <Py_ssize_t>self.d_kill.size():
            raise IndexError(f"KillEdits: block {block} is not a block of the table (0 .. {self.d_kill.size() - 1})")
        return self.records(self.d_kill[block], self.d_nkill[block]) if self.d_nkill[block] else []

    def records(self, int64_t start, int64_t n):
        """Kill records ``start .. start + n - 1`` as ``(kind, target address, kill index)``.

        Raises
        ------
        IndexError
            The range is not within the ``n_kills`` records.
        """
        cdef int64_t k
        cdef list out = []
        if start < 0 or n < 0 or start + n > <int64_t>self.k_kind.size():
            raise IndexError(f"KillEdits: records {start} .. {start + n - 1} are not within the {self.k_kind.size()} kills")
        for k in range(start, start + n):
            out.append((<int>self.k_kind[k], self.k_target[k], k))
        return out

    def action(self, Py_ssize_t block, Py_ssize_t pos):
        """What becomes of binding ``pos`` of block ``block``: 0 kept, 1 dropped, 2 rewritten.

        Raises
        ------
        IndexError
            ``(block, pos)`` is not a binding of the function's blocks.
        """
        return <int>self.s_action[self.slot(block, pos)]


def kill_rules(BindingTable T, Py_ssize_t k, bint tvm_scoping=False, bint rebind=False, bint report=False):
    """KillAfterLastUse's rules (module docstring) on the ``k``-th function of ``T``.

    Parameters
    ----------
    T : BindingTable
        Read with variable types and, for memcore IR, nested scopes.
    k : int
        The function.
    tvm_scoping : bool
        TVM's placement around nested scopes and in dataflow blocks (rule 4).
    rebind : bool
        Drop the rebindings ``y = x`` (rule 6).
    report : bool
        Also fill :attr:`KillEdits.last_use`.

    Returns
    -------
    KillEdits
        With ``needs_canonical``, ``unknown_type`` or ``error_item`` set, its other fields are
        incomplete.
    """
    if k < 0 or k >= <Py_ssize_t>T.f_first.size():
        raise IndexError(f"no function {k} in the table")
    cdef KillEdits E = KillEdits()
    cdef int64_t first = T.f_first[k]
    cdef int64_t end = T.f_first[k + 1] if k + 1 < <Py_ssize_t>T.f_first.size() else <int64_t>T.i_kind.size()
    cdef int64_t n_vars = T.f_n_vars[k]
    cdef int64_t n_scopes = <int64_t>T.s_anchor.size()
    cdef int64_t n_blocks = <int64_t>T.b_scope.size()
    cdef int64_t i, j, x, y, v, w, a, b, d, c, kind, defk, p
    cdef uint8_t f
    cdef vector[int64_t] sub = vector[int64_t](n_vars, -1)     # var -> var it stands for
    cdef vector[int64_t] vdef = vector[int64_t](n_vars, -1)    # var -> its binding item
    cdef vector[int64_t] last = vector[int64_t](n_vars, -1)    # var -> item of its last occurrence
    cdef vector[int8_t] killed = vector[int8_t](n_vars, 0)
    cdef vector[int8_t] define = vector[int8_t](n_vars, DEF_PLAIN)
    cdef vector[int8_t] drop = vector[int8_t](end - first, 0)
    cdef vector[int8_t] rewrite = vector[int8_t](end - first, 0)  # item -> reads a substituted variable
    cdef vector[int8_t] cst = vector[int8_t](n_vars, 0)       # var -> bound to a constant (rule 6)
    cdef vector[int64_t] cut = vector[int64_t](n_scopes, -1)   # scope -> first item holding a scope
    cdef vector[int64_t] scope_end = vector[int64_t](n_scopes, -1)  # scope -> its result item
    cdef vector[int64_t] var_end    # var -> the result item of its scope (end + 1: a variable bound nowhere)
    cdef vector[int64_t] subtree_end = vector[int64_t](end - first, 0)
    cdef vector[int64_t] block_last = vector[int64_t](n_blocks, -1)
    cdef vector[int64_t] stack
    cdef vector[int64_t] o_at       # per kill to place: the item after whose subtree it goes
    cdef vector[int64_t] o_key      # per kill to place: kind code * (end - first) + its binding's item - first
    cdef vector[int64_t] order      # the o_key of the kills in emission order (rule 5)
    cdef vector[int64_t] o_start
    cdef int64_t q, key
    cdef vector[int64_t] target     # per item: where its variable's kill goes (item, or -2 - block)
    cdef bint dataflow = False      # the function has a dataflow block (rule 6 then reads the dataflow facts)
    cdef CanonicalPlan P = None
    if rebind:
        for i in range(first, end):
            if T.i_kind[i] != I_RESULT and T.b_dataflow[T.i_block[i]]:
                dataflow = True
                break
        P = canonical_plan_of(T, k, dataflow)  # rule 6's rebindings (rules 1-3; rule 4 in a dataflow block)

    # bindings: what defines each variable; the rebindings (rule 6); where each scope ends
    for i in range(first, end):
        v = T.i_var[i]
        if v < 0:
            if T.i_kind[i] == I_RESULT:
                scope_end[T.i_scope[i]] = i
            continue
        vdef[v] = i
        x = T.i_value[i]
        c = T.x_kind[x]
        if T.i_kind[i] == I_BINDING:
            if c == X_CALL:
                f = T.c_flags[T.x_a[x]]
                if f & CF_STORAGE:
                    define[v] = DEF_STORAGE
                elif f & CF_NO_REGISTER:
                    define[v] = DEF_NO_REGISTER
            elif c == X_LEAF and T.x_a[x] == LEAF_CONST:
                define[v] = DEF_CONSTANT
        if (c == X_IF or c == X_SCOPE) and cut[T.i_scope[i]] < 0:
            cut[T.i_scope[i]] = i
        if T.i_kind[i] == I_MATCH_CAST:
            E.has_match_cast = True
        if not rebind:
            continue
        if T.b_dataflow[T.i_block[i]] and (c == X_VAR or P.v_trivial[v] >= 0 or P.v_const[v] >= 0 or (
                not T.v_dataflow[v] and not P.v_outside[v])):
            E.needs_canonical = True  # a Var/DataflowVar exchange, a fold into an output, a rebinding in the block
        elif P.v_repack[v] != REPACK_NONE:
            E.needs_canonical = True
        elif P.v_trivial[v] >= 0:
            if T.s_anchor[T.i_scope[i]] >= 0 or (T.i_kind[i] == I_MATCH_CAST and c != X_VAR):
                E.needs_canonical = True  # in a branch or nested function, or a match_cast of a get-item
            else:
                sub[v] = chain_end(sub, P.v_trivial[v])
                drop[i - first] = 1
        elif P.v_const[v] >= 0:
            if T.s_anchor[T.i_scope[i]] >= 0 or P.v_const[v] != x or T.i_kind[i] != I_BINDING:
                E.needs_canonical = True  # in a branch, through a tuple's field, or a match_cast
            else:
                cst[v] = 1
        elif T.i_kind[i] == I_MATCH_CAST and c != X_VAR and c != X_CALL:
            E.needs_canonical = True
    if E.needs_canonical:
        return E

    # uses (rules 2, 3): the last occurrence of every variable in its own scope, in visit order
    # (an occurrence after the end of that scope, as TVM's StaticPlanBlockMemory leaves a
    # storage bound in a branch and used after the If, is not a use there)
    var_end.assign(n_vars, end + 1)
    for v in range(n_vars):
        if vdef[v] >= 0:
            var_end[v] = scope_end[T.i_scope[vdef[v]]]
    for i in range(first, end):
        if drop[i - first]:
            continue
        x = T.i_value[i]
        if T.i_kind[i] == I_BINDING and T.x_kind[x] == X_CALL:
            f = T.c_flags[T.x_a[x]]
            if f & CF_STORAGE:
                continue
            if f & CF_KILL:
                if T.x_n[x] != 1 or T.x_kind[T.x_child[T.x_first[x]]] != X_VAR:
                    E.error_item = i
                    E.error_ref = T.i_ref[i]
                    E.error_code = 1 if T.x_n[x] != 1 else 2
                    E.error_n = T.x_n[x]
                    return E
                v = T.x_a[T.x_child[T.x_first[x]]]
                w = chain_end(sub, v)
                if cst[w]:
                    E.needs_canonical = True  # the kill of a constant: CanonicalizeBindings' path reports it
                    return E
                if w != v:
                    rewrite[i - first] = 1
                killed[w] = 1
                continue
        stack.push_back(x)
        while stack.size():
            y = stack.back()
            stack.pop_back()
            c = T.x_kind[y]
            if c == X_VAR:
                v = T.x_a[y]
                w = chain_end(sub, v)
                if w != v or cst[w]:
                    if (T.i_kind[i] == I_RESULT and T.s_anchor[T.i_scope[i]] >= 0
                            and T.x_kind[T.i_value[i]] != X_CALL):
                        E.needs_canonical = True  # a branch's result, and maybe its type, changes
                        return E
                    rewrite[i - first] = 1
                if not cst[w] and i <= var_end[w]:
                    last[w] = i
            else:
                push_operands(T, y, stack)

    # the end of each item's subtree (rule 5: a binding holding scopes emits after them); the
    # number of bindings of each block
    cdef vector[int64_t] block_size = vector[int64_t](n_blocks, -1)
    for i in range(first, end):
        subtree_end[i - first] = i
        if T.i_kind[i] != I_RESULT:
            if not drop[i - first]:
                block_last[T.i_block[i]] = i
            if block_size[T.i_block[i]] <= T.i_pos[i]:
                block_size[T.i_block[i]] = T.i_pos[i] + 1
        d = T.i_scope[i]
        while T.s_anchor[d] >= 0:
            a = T.s_anchor[d]
            if subtree_end[a - first] < i:
                subtree_end[a - first] = i
            d = T.i_scope[a]

    # placement (rule 4)
    target.resize(end - first)
    if report:
        E.last_use = {}
        E.killed = {T.v_ref[v] for v in range(n_vars) if killed[v]}
    for i in range(first, end):
        v = T.i_var[i]
        if v < 0 or drop[i - first] or last[v] < 0:
            continue
        d = T.i_scope[i]
        a = last[v]
        while a >= 0 and T.i_scope[a] != d:
            a = T.s_anchor[T.i_scope[a]]
        if a < 0:
            continue  # not reached: occurrences outside the variable's scope are not recorded
        if report:
            E.last_use[T.v_ref[v]] = T.i_ref[a] if T.i_kind[a] != I_RESULT else 0
        if T.i_kind[a] == I_RESULT or killed[v]:
            continue
        if T.v_ty[v] < 0:
            E.unknown_type = True
            return E
        kind = kill_kind_of(define[v], T.v_ty[v])
        if kind < 0:
            continue
        if tvm_scoping and cut[d] >= 0 and a >= cut[d]:
            continue
        if not tvm_scoping and T.b_dataflow[T.i_block[a]]:
            if T.v_dataflow[v]:
                continue
            target[i - first] = -2 - T.i_block[a]
            o_at.push_back(subtree_end[block_last[T.i_block[a]] - first] - first)
            o_key.push_back((4 + kind) * (end - first) + (i - first))
            continue
        target[i - first] = a
        o_at.push_back(subtree_end[a - first] - first)
        o_key.push_back(kind * (end - first) + (i - first))

    # order and names (rule 5): by the item they follow, then by kind code, then by definition
    # (o_key in that order); the kills were listed in definition order
    o_start.assign(end - first + 1, 0)
    for p in range(<int64_t>o_at.size()):
        o_start[o_at[p] + 1] += 1
    for q in range(end - first):
        o_start[q + 1] += o_start[q]
    order.resize(o_at.size())
    for p in range(<int64_t>o_at.size()):
        q = o_start[o_at[p]]
        o_start[o_at[p]] = q + 1
        order[q] = o_key[p]
    # each item's run (o_start[q - 1] .. o_start[q] - 1 now) ordered by kind code (insertion)
    q = 0
    for a in range(end - first):
        b = o_start[a]
        for p in range(q + 1, b):
            key = order[p]
            j = p
            while j > q and order[j - 1] > key:
                order[j] = order[j - 1]
                j -= 1
            order[j] = key
        q = b
    # the slots of the function's blocks
    cdef int64_t n_slots = 0
    E.blk_first.assign(n_blocks, -1)
    E.d_kill.assign(n_blocks, -1)
    E.d_nkill.assign(n_blocks, 0)
    for b in range(n_blocks):  # the function's blocks that hold bindings, in id order
        if block_size[b] > 0:
            E.blk_first[b] = n_slots
            n_slots += block_size[b]
    E.blk_n.swap(block_size)
    E.s_action.assign(n_slots, EDIT_KEEP)
    E.s_item.assign(n_slots, -1)
    E.v_sub.swap(sub)
    E.v_const.swap(cst)
    E.v_ref.assign(T.v_ref.begin(), T.v_ref.begin() + n_vars)
    E.s_kill.assign(n_slots, 0)
    E.s_nkill.assign(n_slots, 0)
    E.k_kind.resize(order.size())
    E.k_target.resize(order.size())
    for p in range(<int64_t>order.size()):
        i = first + order[p] % (end - first)
        E.k_kind[p] = (order[p] // (end - first)) % 4
        E.k_target[p] = T.v_ref[T.i_var[i]]
        a = target[i - first]
        if a >= 0:
            w = E.blk_first[T.i_block[a]] + T.i_pos[a]
            if E.s_nkill[w] == 0:
                E.s_kill[w] = p
            E.s_nkill[w] += 1
        else:
            b = -2 - a
            if E.d_nkill[b] == 0:
                E.d_kill[b] = p
            E.d_nkill[b] += 1
    E.n_kills = <Py_ssize_t>order.size()
    for i in range(first, end):
        if T.i_kind[i] == I_RESULT:
            if rewrite[i - first]:
                E.n_rewritten += 1
            continue
        w = E.blk_first[T.i_block[i]] + T.i_pos[i]
        E.s_item[w] = i
        if drop[i - first]:
            E.s_action[w] = EDIT_DROP
            E.n_dropped += 1
        elif rewrite[i - first]:
            E.s_action[w] = EDIT_REWRITE
            E.n_rewritten += 1
    return E
