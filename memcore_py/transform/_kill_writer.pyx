# cython: language_level=3
"""KillAfterLastUse's writer over memcore's IR (built by ``setup.py``; no fallback).

Design
------
KillAfterLastUse's rule kernel (:func:`memcore_py.analysis._kill_rules.kill_rules`) says what
changes in a function as a :class:`~memcore_py.analysis._kill_rules.KillEdits`: which bindings
go (rebindings ``y = x``), which kept bindings read a variable that now stands for another
(or for a constant), and which kills follow which binding or dataflow block, in emission
order with their names' indices. :class:`EditWriter` applies that to memcore's IR and decides
nothing: it walks the scopes (function body, ``If`` branches, nested functions and
``SeqExpr`` s) as TVM's ``KillInserter`` does, keeps every binding it does not change as the
object it was, rebuilds only what reads a substituted variable, and normalizes each rebuilt
scope's blocks (:func:`memcore_py.ir.functor.normalize_blocks`). The kill bindings and rebuilt
calls are made by the unchecked node builders of ``memcore_py/ir/_nodes.pxd`` (their types
are known: ``R.Tuple()`` for a kill, the old call's for a rebuilt call); rebuilt tuples and
get-items by the checked constructors, which compute their types.

The edits name the reader's objects by address; the function being written holds them, so
the writer turns the addresses back into those objects once, and looks bindings and
variables up by identity.
"""
from cpython.object cimport PyObject, PyObject_TypeCheck, PyTypeObject

from libc.stdint cimport int8_t, int64_t

from memcore_py.analysis._kill_rules cimport EDIT_DROP, EDIT_REWRITE, KillEdits, kill_name
from memcore_py.ir._nodes cimport binding_node, call_node, var_node
from memcore_py.ir._slots cimport get_slot, slot_offset

from memcore_py.ir.construct import EMPTY_ATTRS, new_block, new_match_cast, new_seq
from memcore_py.ir.expr import (BindingBlock, Call, DataflowBlock, DataflowVar, Expr, Function, If, MatchCast,
                                SeqExpr, Tuple, TupleGetItem, Var, VarBinding)
from memcore_py.ir.functor import normalize_blocks
from memcore_py.ir.op import kill_op
from memcore_py.ir.types import VOID, type_equal

__all__ = ["EditWriter", "NeedsCanonical"]


class NeedsCanonical(Exception):
    """A match_cast reads, after the rebindings, a variable of exactly its type: it became a
    rebinding itself, which only CanonicalizeBindings' path removes."""


cdef Py_ssize_t O_VAR = slot_offset(VarBinding.var)
cdef Py_ssize_t O_VALUE = slot_offset(VarBinding.value)
cdef Py_ssize_t O_BINDINGS = slot_offset(BindingBlock.bindings)
cdef Py_ssize_t O_BLOCKS = slot_offset(SeqExpr.blocks)
cdef Py_ssize_t O_BODY = slot_offset(SeqExpr.body)
cdef Py_ssize_t O_TY = slot_offset(Expr.ty)
cdef Py_ssize_t O_OP = slot_offset(Call.op)
cdef Py_ssize_t O_ARGS = slot_offset(Call.args)
cdef Py_ssize_t O_ATTRS = slot_offset(Call.attrs)
cdef Py_ssize_t O_TY_ARGS = slot_offset(Call.ty_args)
cdef PyTypeObject* T_FUNCTION = <PyTypeObject*>Function

cdef type VAR = Var
cdef type DFVAR = DataflowVar
cdef type CALL = Call
cdef type TUPLE = Tuple
cdef type TGI = TupleGetItem
cdef type IF_EXPR = If
cdef type SEQ = SeqExpr
cdef type MATCH_CAST = MatchCast
cdef type DF_BLOCK = DataflowBlock
cdef tuple KILL_OPS = tuple(kill_op(kind) for kind in range(3))
cdef object VOID_TY = VOID


cdef inline object obj(size_t address):
    """The memcore object at ``address`` (an address the reader took of the function's own
    objects, which the function holds)."""
    return <object><PyObject*>address


cdef class EditWriter:
    """Applies one function's :class:`KillEdits` (module docstring).

    Parameters
    ----------
    edits : KillEdits
    block_bindings : list
        The table's ``block_bindings`` (block id -> the block's bindings tuple), to find each
        block's slots.
    """

    cdef KillEdits E
    cdef dict block_ids, subst
    cdef set constants

    def __init__(self, KillEdits edits, list block_bindings):
        self.E = edits
        self.block_ids = {id(block_bindings[b]): b for b in range(len(block_bindings)) if edits.blk_first[b] >= 0}
        self.subst = {obj(a): obj(b) for a, b in edits.subst.items()}
        self.constants = {obj(a) for a in edits.constants}

    cdef int kills(self, int64_t first, int64_t n, list out, bint in_dataflow) except -1:
        cdef KillEdits E = self.E
        cdef int64_t k
        for k in range(first, first + n):
            out.append(binding_node(var_node(in_dataflow, kill_name(k), VOID_TY),
                                    call_node(KILL_OPS[E.k_kind[k]], (obj(E.k_target[k]),), EMPTY_ATTRS, (), VOID_TY)))
        return 0

    cdef object substituted(self, e):
        """``e`` with the substituted variables replaced (calls keep their type)."""
        cls = type(e)
        cdef tuple old, new
        cdef list new_args
        cdef Py_ssize_t i, n
        cdef bint changed
        if cls is VAR or cls is DFVAR:
            return self.subst.get(e, e)
        if cls is CALL:
            op = <object>get_slot(e, O_OP)
            if type(op) is VAR or type(op) is DFVAR:
                op = self.subst.get(op, op)
            old = <tuple>get_slot(e, O_ARGS)
            n = len(old)
            changed = op is not <object>get_slot(e, O_OP)
            new_args = [None] * n
            for i in range(n):
                a = old[i]
                t = type(a)
                na = self.subst.get(a, a) if t is VAR or t is DFVAR else self.substituted(a) if (
                    t is TUPLE or t is TGI or t is CALL) else a
                changed = changed or na is not a
                new_args[i] = na
            if not changed:
                return e
            return call_node(op, tuple(new_args), <object>get_slot(e, O_ATTRS), <tuple>get_slot(e, O_TY_ARGS),
                             <object>get_slot(e, O_TY))
        if cls is TUPLE:
            old = tuple(e.fields)
            new = tuple([self.substituted(f) for f in old])
            for i in range(len(old)):
                if new[i] is not old[i]:
                    return Tuple(new)
            return e
        if cls is TGI:
            t = self.substituted(e.tuple_value)
            return e if t is e.tuple_value else TupleGetItem(t, e.index)
        return e

    cdef object expr(self, e):
        cls = type(e)
        if cls is SEQ:
            return self.seq(e)
        if cls is IF_EXPR:
            cond = self.substituted(e.cond) if self.subst else e.cond
            tb, fb = self.seq(e.true_branch), self.seq(e.false_branch)
            if cond is e.cond and tb is e.true_branch and fb is e.false_branch:
                return e
            return If(cond, tb, fb, e.ty)
        if isinstance(e, Function):
            body = self.seq(e.body)
            if body is e.body:
                return e
            return Function(e.params, body, e.ret_ty, e.attrs, e.is_pure)
        return e

    cpdef object seq(self, seq):
        """The scope ``seq`` with its edits applied (``seq`` itself when none applies)."""
        cdef KillEdits E = self.E
        cdef dict subst = self.subst
        cdef set constants = self.constants
        cdef list new_blocks = [], out, tail
        cdef bint changed = False, block_changed, in_df
        cdef tuple bindings
        cdef int64_t base, slot, pos, n
        cdef int8_t action
        for blk in <tuple>get_slot(seq, O_BLOCKS):
            in_df = type(blk) is DF_BLOCK
            bindings = <tuple>get_slot(blk, O_BINDINGS)
            n = len(bindings)
            bid = self.block_ids.get(id(bindings))
            if bid is None or n == 0:
                new_blocks.append(blk)
                continue
            base = E.blk_first[<Py_ssize_t>bid]
            out = []
            block_changed = False
            for pos in range(n):
                b = bindings[pos]
                slot = base + pos
                action = E.s_action[slot]
                var = <object>get_slot(b, O_VAR)
                value = <object>get_slot(b, O_VALUE)
                if action == EDIT_DROP:
                    target = subst[var]
                    subst[var] = subst.get(target, target)
                    block_changed = True
                    continue
                if constants and var in constants:
                    subst[var] = value
                nv = value
                cls = type(value)
                if cls is IF_EXPR or cls is SEQ or (cls is not CALL and PyObject_TypeCheck(value, T_FUNCTION)):
                    nv = self.expr(value)
                elif action == EDIT_REWRITE:
                    nv = self.substituted(value)
                if nv is not value:
                    if type(b) is MATCH_CAST:
                        if (type(nv) is VAR or type(nv) is DFVAR) and type_equal(
                                <object>get_slot(var, O_TY), <object>get_slot(nv, O_TY)):
                            raise NeedsCanonical
                        b = new_match_cast(var, nv, b.ty)
                    else:
                        b = binding_node(var, nv)
                    block_changed = True
                out.append(b)
                if E.s_nkill[slot]:
                    self.kills(E.s_kill[slot], E.s_nkill[slot], out, in_df)
                    block_changed = True
            if block_changed:
                new_blocks.append(new_block(type(blk), out))
                changed = True
            else:
                new_blocks.append(blk)
            if E.d_nkill[<Py_ssize_t>bid]:
                tail = []
                self.kills(E.d_kill[<Py_ssize_t>bid], E.d_nkill[<Py_ssize_t>bid], tail, False)
                new_blocks.append(new_block(BindingBlock, tail))
                changed = True
        body = <object>get_slot(seq, O_BODY)
        if subst:
            body = self.substituted(body)
        normalized = normalize_blocks(new_blocks)
        if not changed and body is <object>get_slot(seq, O_BODY) and len(normalized) == len(<tuple>get_slot(seq, O_BLOCKS)):
            return seq
        return new_seq(normalized, body)
