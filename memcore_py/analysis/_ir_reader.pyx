# cython: language_level=3
"""The reader of memcore's IR into the binding table (built by ``setup.py``; no fallback).

Design
------
:class:`IRReader` walks the Relax functions of a memcore :class:`~memcore_py.ir.module.
IRModule` in visit order and fills a :class:`~memcore_py.analysis._binding_table.
BindingTable` (fields and order: ``_binding_table.pxd``). It applies no pass rule: a binding's
value becomes an expression record (variable, tuple, get-item, call of a callee id, ``If``,
leaf), a callee's properties come from the ``callee_flags`` function it is given (the op
table's, once per distinct callee), and variables become dense per-function ids.

Per bound variable it records the ``TY_*`` code of its type (``_kill_rules.pxd``) and whether
it is a ``DataflowVar``; a tensor constant is a leaf of its own kind (``LEAF_CONST``) holding its
object's address (``x_b``); a call of a variable records that variable (``x_b``); a get-item
records the arity of its tuple's type (``x_c``); a match_cast records whether its type is its
value's (``i_same_type``).

What the table cannot hold is a *reading* error, raised as the pass's error type with the
function's name: a ``SeqExpr`` anywhere but a function body or an ``If`` branch, a nested
function, an ``If`` that is not a binding's value. Nested functions and ``SeqExpr`` s are read
as scopes instead (``X_SCOPE``) when the reader is made with ``nested_scopes=True``: the items
of such a scope come right after the binding whose value it is, or, when it is nested deeper
in that value, right before that binding's item. The reader stops the function there and
records the error at the item it stopped at (``f_error``); a rule kernel runs the items before
it and then raises it, so that errors come in visit order.

Slots of the IR nodes are read through ``memcore_py/ir/_slots.pxd``.
"""
from cpython.object cimport PyObject, PyObject_TypeCheck, PyTypeObject, Py_TYPE
from libc.stdint cimport int8_t, int64_t, uint8_t

from memcore_py.analysis._binding_table cimport (
    BindingTable, CF_ALLOCATES, I_BINDING, I_MATCH_CAST, I_RESULT, LEAF_CONST, LEAF_PLAIN, PointerIds, X_CALL,
    X_GET_ITEM, X_IF, X_LEAF, X_SCOPE, X_TUPLE,
)
from memcore_py.analysis._kill_rules cimport memcore_type_code
from memcore_py.ir._slots cimport get_slot, slot_offset

from memcore_py.ir.functor import value_type
from memcore_py.ir.types import TupleType, type_equal
from memcore_py.ir.expr import (
    Call, Constant, DataflowBlock, DataflowVar, Expr, Function, If, MatchCast, SeqExpr, Tuple, TupleGetItem, Var,
    VarBinding,
)

cdef Py_ssize_t O_VAR = slot_offset(VarBinding.var)
cdef Py_ssize_t O_VALUE = slot_offset(VarBinding.value)
cdef Py_ssize_t O_OP = slot_offset(Call.op)
cdef Py_ssize_t O_ARGS = slot_offset(Call.args)
cdef Py_ssize_t O_FIELDS = slot_offset(Tuple.fields)
cdef Py_ssize_t O_SEQ_BLOCKS = slot_offset(SeqExpr.blocks)
cdef Py_ssize_t O_SEQ_BODY = slot_offset(SeqExpr.body)
cdef Py_ssize_t O_TY = slot_offset(Expr.ty)
cdef Py_ssize_t O_FUNC_BODY = slot_offset(Function.body)
if slot_offset(MatchCast.var) != O_VAR or slot_offset(MatchCast.value) != O_VALUE:
    raise ImportError("memcore_py.analysis._ir_reader: unexpected slot layout of the IR nodes")

cdef PyTypeObject* T_VAR = <PyTypeObject*>Var
cdef PyTypeObject* T_DATAFLOW_VAR = <PyTypeObject*>DataflowVar
cdef PyTypeObject* T_CALL = <PyTypeObject*>Call
cdef PyTypeObject* T_TUPLE = <PyTypeObject*>Tuple
cdef PyTypeObject* T_GET_ITEM = <PyTypeObject*>TupleGetItem
cdef PyTypeObject* T_IF = <PyTypeObject*>If
cdef PyTypeObject* T_SEQ = <PyTypeObject*>SeqExpr
cdef PyTypeObject* T_VAR_BINDING = <PyTypeObject*>VarBinding
cdef PyTypeObject* T_MATCH_CAST = <PyTypeObject*>MatchCast
cdef PyTypeObject* T_DATAFLOW_BLOCK = <PyTypeObject*>DataflowBlock
cdef PyTypeObject* T_FUNCTION = <PyTypeObject*>Function
cdef PyTypeObject* T_CONSTANT = <PyTypeObject*>Constant


cdef class IRReader:
    """Fills ``table`` with the Relax functions it is given (:meth:`read_function`).

    Parameters
    ----------
    table : BindingTable
    callee_flags : callable
        ``callee -> int``: the ``CF_*`` properties of a call's callee (asked once per distinct
        callee object).
    error_cls : type
        The exception type of reading errors (the pass's).
    pass_name : str
        The pass, for the messages of what it does not support.
    nested_scopes : bool, default False
        Read nested functions and ``SeqExpr`` s as scopes (``X_SCOPE``) instead of reporting
        them.
    """

    cdef BindingTable T
    cdef object callee_flags, error_cls
    cdef PointerIds callee_ids  # callee object -> callee id
    cdef readonly list callees  # the callees in id order (held: their ids are by address)
    cdef int64_t leaf
    cdef str func_name, pass_name
    cdef bint nested_scopes
    cdef list opened            # scopes opened while reading the value of the binding being read
    cdef Py_ssize_t current_scope  # the scope of the binding or result being read

    def __init__(self, BindingTable table, callee_flags, error_cls, str pass_name, bint nested_scopes=False):
        self.T = table
        self.callee_flags = callee_flags
        self.error_cls = error_cls
        self.callee_ids = PointerIds()
        self.callees = []
        self.leaf = table.add_expr(X_LEAF, LEAF_PLAIN, 0, 0)
        self.func_name = ""
        self.pass_name = pass_name
        self.nested_scopes = nested_scopes
        self.opened = []

    def read_function(self, str name, body):
        """Record one function (its body, a ``SeqExpr``) as the table's next function; a
        reading error is recorded (``errors``, ``f_error``), not raised. Returns the scope id
        of the body."""
        cdef BindingTable T = self.T
        cdef Py_ssize_t expected = 0
        self.func_name = name
        if Py_TYPE(body) is T_SEQ:
            for block in <object>get_slot(body, O_SEQ_BLOCKS):
                expected += len(block.bindings)
        T.begin_function(name, expected + 16)
        sid = T.new_scope(-1, None)
        try:
            if Py_TYPE(body) is not T_SEQ:
                raise self.error_cls(f"function {name!r}: the body must be a SeqExpr; got {type(body).__name__}")
            self.read_seq(body, sid)
        except self.error_cls as exc:
            T.end_function(exc)
        else:
            T.end_function(None)
        return sid

    cdef int read_seq(self, seq, Py_ssize_t sid) except -1:
        cdef BindingTable T = self.T
        for block in <object>get_slot(seq, O_SEQ_BLOCKS):
            self.read_block(block, sid)
        cdef int64_t outer = len(T.block_scope) - 1
        self.current_scope = sid
        cdef int64_t x = self.read_expr(<object>get_slot(seq, O_SEQ_BODY))
        self.anchor_opened(T.add_item(I_RESULT, -1, x, outer, -1, outer, 0, sid))
        return 0

    cdef int anchor_opened(self, int64_t item) except -1:
        """Anchor the scopes opened while reading ``item``'s value at ``item``."""
        if self.opened:
            for s in self.opened:
                self.T.s_anchor[s] = item
            self.opened.clear()
        return 0

    cdef int read_block(self, block, Py_ssize_t sid) except -1:
        cdef BindingTable T = self.T
        cdef tuple bindings = tuple(block.bindings)
        cdef Py_ssize_t bid = T.new_block(sid, Py_TYPE(block) is T_DATAFLOW_BLOCK, bindings, 0)
        cdef Py_ssize_t i, n = len(bindings)
        cdef PyTypeObject* tb
        cdef PyObject* p
        cdef int8_t kind
        cdef int64_t x, var, outer, item
        for i in range(n):
            b = bindings[i]
            tb = Py_TYPE(b)
            if tb is T_VAR_BINDING:
                kind = I_BINDING
            elif tb is T_MATCH_CAST:
                kind = I_MATCH_CAST
            else:
                raise self.error_cls(f"function {self.func_name!r}: a block holds {type(b).__name__}, not a binding")
            outer = len(T.block_scope) - 1
            self.current_scope = sid
            p = get_slot(b, O_VALUE)
            value = <object>p if p is not NULL else None
            p = get_slot(b, O_VAR)
            if Py_TYPE(value) is T_IF:
                self.read_if(value, b, bid, i, kind, p, outer, sid)
                continue
            if self.nested_scopes and (Py_TYPE(value) is T_SEQ or PyObject_TypeCheck(value, T_FUNCTION)):
                x = T.add_expr(X_SCOPE, PyObject_TypeCheck(value, T_FUNCTION), -1, 0)
                item = T.add_item(kind, self.bound_var(p), x, bid, i, outer, <size_t><PyObject*>b, sid)
                T.x_b[x] = self.read_scope(value, sid, (bid, b, i), item)
                continue
            x = self.read_expr(value)
            var = self.bound_var(p)
            item = T.add_item(kind, var, x, bid, i, outer, <size_t><PyObject*>b, sid)
            self.anchor_opened(item)
            if kind == I_MATCH_CAST:
                T.i_same_type[item] = type_equal(<object>get_slot(<object>p, O_TY), value_type(value))
        return 0

    cdef int64_t bound_var(self, PyObject* p) except -2:
        """The var id of a binding's variable (its type code and kind recorded), -1 for none."""
        cdef BindingTable T = self.T
        if p is NULL:
            return -1
        cdef int64_t var = T.var_id(<size_t>p)
        cdef PyObject* ty = get_slot(<object>p, O_TY)
        T.v_ty[var] = memcore_type_code(<object>ty if ty is not NULL else None)
        T.v_dataflow[var] = Py_TYPE(<object>p) is T_DATAFLOW_VAR
        return var

    cdef Py_ssize_t read_scope(self, e, Py_ssize_t parent, anchor, int64_t item) except -1:
        """A nested function or SeqExpr as a scope anchored at ``item`` (-1: not yet known, see
        ``opened``); returns its scope id."""
        cdef BindingTable T = self.T
        cdef Py_ssize_t sid = T.new_scope(parent, anchor)
        T.s_anchor[sid] = item
        if item < 0:
            self.opened.append(sid)
        seq = e if Py_TYPE(e) is T_SEQ else <object>get_slot(e, O_FUNC_BODY)
        if Py_TYPE(seq) is not T_SEQ:
            raise self.error_cls(f"function {self.func_name!r}: a nested function's body must be a SeqExpr; "
                                 f"got {type(seq).__name__}")
        cdef list opened = self.opened
        self.opened = []
        self.read_seq(seq, sid)
        self.opened = opened
        self.current_scope = parent
        return sid

    cdef int read_if(self, e, b, Py_ssize_t bid, Py_ssize_t pos, int8_t kind, PyObject* var, int64_t outer,
                     Py_ssize_t parent) except -1:
        """An If binding: its item, then each branch's items (a scope each)."""
        cdef BindingTable T = self.T
        cdef int64_t cond = self.read_expr(e.cond)
        cdef int64_t x = T.add_expr(X_IF, cond, -1, -1)
        cdef int64_t item = T.add_item(kind, self.bound_var(var), x, bid, pos, outer, <size_t><PyObject*>b, parent)
        anchor = (bid, b, pos)
        then_sid = T.new_scope(parent, anchor)
        T.s_anchor[then_sid] = item
        T.x_b[x] = then_sid
        self.read_branch(e.true_branch, then_sid)
        else_sid = T.new_scope(parent, anchor)
        T.s_anchor[else_sid] = item
        T.x_c[x] = else_sid
        self.read_branch(e.false_branch, else_sid)
        T.block_ifs.setdefault(bid, []).append((pos, (then_sid, else_sid)))
        return 0

    cdef int read_branch(self, branch, Py_ssize_t sid) except -1:
        if Py_TYPE(branch) is not T_SEQ:
            raise self.error_cls(f"function {self.func_name!r}: an If branch must be a SeqExpr; "
                                 f"got {type(branch).__name__}")
        return self.read_seq(branch, sid)

    cdef int64_t read_expr(self, e) except -1:
        """The expr id of ``e`` (its nested expressions recorded first)."""
        cdef BindingTable T = self.T
        cdef PyTypeObject* t = Py_TYPE(e)
        cdef int64_t k, x
        cdef uint8_t flags
        if t is T_VAR or t is T_DATAFLOW_VAR:
            return T.var_expr(<size_t><PyObject*>e)
        if t is T_CALL:
            op = <object>get_slot(e, O_OP)
            k = self.callee_ids.get(<size_t><PyObject*>op)
            if k < 0:
                flags = <uint8_t>self.callee_flags(op)
                k = self.callee_ids.add(<size_t><PyObject*>op)
                self.callees.append(op)
                T.c_flags.push_back(flags)
            if T.c_flags[k] & CF_ALLOCATES:
                # an allocation's arguments are its shape, dtype, device and scope: not read
                return T.add_expr(X_CALL, k, -1, 0)
            args = <object>get_slot(e, O_ARGS)
            x = self.with_children(X_CALL, k, args if type(args) is tuple else tuple(args))
            if Py_TYPE(op) is T_VAR or Py_TYPE(op) is T_DATAFLOW_VAR:
                T.x_b[x] = T.var_expr(<size_t><PyObject*>op)
            return x
        if t is T_TUPLE:
            return self.with_children(X_TUPLE, 0, tuple(<object>get_slot(e, O_FIELDS)))
        if t is T_GET_ITEM:
            tup = e.tuple_value
            k = self.read_expr(tup)
            ty = value_type(tup)
            return T.add_expr(X_GET_ITEM, k, e.index, len(ty.fields) if type(ty) is TupleType else 0)
        if t is T_IF:
            raise self.error_cls(
                f"function {self.func_name!r}: an If must be bound directly to a variable (A-normal form); "
                "got it nested in an expression"
            )
        if t is T_CONSTANT:
            return T.add_expr(X_LEAF, LEAF_CONST, <int64_t><PyObject*>e, 0)
        if self.nested_scopes and (t is T_SEQ or PyObject_TypeCheck(e, T_FUNCTION)):
            x = T.add_expr(X_SCOPE, PyObject_TypeCheck(e, T_FUNCTION), -1, 0)
            T.x_b[x] = self.read_scope(e, self.current_scope, None, -1)
            return x
        if t is T_SEQ:
            raise self.error_cls(f"function {self.func_name!r}: a SeqExpr may only be a function body or an If branch")
        if PyObject_TypeCheck(e, T_FUNCTION):
            raise self.error_cls(
                f"function {self.func_name!r}: nested functions are not supported by {self.pass_name}; "
                "lift them to the module first (LambdaLift)"
            )
        return self.leaf

    cdef int64_t with_children(self, int8_t kind, int64_t a, tuple children) except -1:
        """A tuple or call record of ``children`` (read first)."""
        cdef BindingTable T = self.T
        cdef size_t start = T.pending.size()
        cdef int64_t x
        for c in children:
            x = self.read_expr(c)
            T.pending.push_back(x)
        return T.add_parent(kind, a, start)
