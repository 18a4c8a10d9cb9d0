# cython: language_level=3
"""TIR's constant folding of a product, once for every writer (built by ``setup.py``; no
fallback).

Design
------
TVM builds a storage's byte count as ``nbytes = IntImm(bytes per element); for d in shape:
nbytes *= d`` (LowerAllocTensor), and ``*`` folds by ``TryConstFold<Mul>``: two constants
multiply, a constant 1 is dropped, a constant 0 absorbs the product, anything else becomes a
``Mul`` node. :func:`product_fold` (``cdef``, for the compiled writer over TVM's objects) and
:func:`product_fold_plan` (its Python entry, for the writer over memcore's IR and for
:func:`memcore_py.ir.prim_arith.fold_mul`, every product of two expressions memcore's IR
builds) state that rule once, as a plan over the factors' positions: the product is its
*head* (a folded constant, or one factor) times the *tail* factors, multiplied left to right.
Each caller builds the expression from the plan with its own constructors and its own factor
objects, so the factors stay the objects they were.

The bytes of one element of a dtype, the constant a storage's product starts from (TVM
``DataType::StorageBytes``), are :func:`storage_bytes` (``cdef inline`` in the ``.pxd``, for the
compiled readers of TVM's dtypes) and :func:`element_storage_bytes` (its Python entry, for
:func:`memcore_py.ir.types.dtype_bytes`).
"""
from libc.stdint cimport INT64_MAX, INT64_MIN, int64_t, uint8_t
from libcpp.vector cimport vector

__all__ = ["product_fold_plan", "element_storage_bytes"]


cdef inline bint mul_overflows(int64_t a, int64_t b) noexcept nogil:
    """Whether ``a * b`` overflows int64."""
    if a == 0 or b == 0:
        return False
    if a > 0:
        if b > 0:
            return a > INT64_MAX // b
        return b < INT64_MIN // a
    if b > 0:
        return a < INT64_MIN // b
    return a != 0 and b < INT64_MAX // a


cdef Py_ssize_t product_fold(int64_t start, const int64_t* values, const uint8_t* is_const, Py_ssize_t n,
                             int64_t* head_value, Py_ssize_t* head_dim, Py_ssize_t* tail) noexcept nogil:
    """Fold ``start * d[0] * ... * d[n-1]`` (left to right) as TIR's ``TryConstFold<Mul>``.

    Parameters
    ----------
    start : int64
        The constant the product starts from.
    values, is_const : arrays of n
        Factor ``i`` is the constant ``values[i]`` when ``is_const[i]``, else an expression.
    head_value, head_dim : out
        The head of the product: the constant ``head_value`` when ``head_dim`` is -1, else
        the factor ``head_dim``.
    tail : out, room for n
        The factors multiplied onto the head, in order.

    Returns
    -------
    Py_ssize_t
        The number of tail factors; ``FOLD_OVERFLOW`` when a folded constant exceeds int64.
    """
    cdef int64_t c = start          # the product so far while it is a constant
    cdef Py_ssize_t hd = -1         # the head factor once the product is an expression
    cdef Py_ssize_t nt = 0
    cdef bint constant = True
    cdef Py_ssize_t i
    for i in range(n):
        if constant:
            if is_const[i]:
                if mul_overflows(c, values[i]):
                    return FOLD_OVERFLOW
                c *= values[i]
            elif c == 1:            # 1 * d is d
                hd = i
                constant = False
            elif c != 0:            # 0 * d stays 0
                hd = -1
                tail[nt] = i
                nt += 1
                constant = False
        elif is_const[i] and values[i] == 1:
            pass                    # e * 1 is e
        elif is_const[i] and values[i] == 0:
            c, hd, nt, constant = 0, -1, 0, True  # e * 0 is 0
        else:
            tail[nt] = i
            nt += 1
    head_value[0] = c
    head_dim[0] = hd
    return nt


def product_fold_plan(int64_t start, list factors):
    """The plan of ``start * f[0] * f[1] * ...`` folded as TIR folds it (module docstring):
    ``(head, tail)``, ``head`` the constant (an int) or the index of the factor the product
    starts from (``(index,)``), ``tail`` the indices of the factors multiplied onto it, in
    order. ``factors[i]`` is an int for a constant factor, None for an expression.

    Raises
    ------
    OverflowError
        A folded constant exceeds int64.
    """
    cdef Py_ssize_t n = len(factors), i, nt
    cdef vector[int64_t] values = vector[int64_t](n)
    cdef vector[uint8_t] is_const = vector[uint8_t](n)
    cdef vector[Py_ssize_t] tail = vector[Py_ssize_t](n + 1)
    cdef int64_t head_value
    cdef Py_ssize_t head_dim
    for i in range(n):
        f = factors[i]
        if f is not None:
            values[i] = f
            is_const[i] = 1
    nt = product_fold(start, values.data(), is_const.data(), n, &head_value, &head_dim, tail.data())
    if nt == FOLD_OVERFLOW:
        raise OverflowError(f"the product of {start} and the constants {[f for f in factors if f is not None]} "
                            "exceeds int64")
    head = (head_dim,) if head_dim >= 0 else <object>head_value
    return head, [tail[i] for i in range(nt)]


def element_storage_bytes(int64_t bits, int64_t lanes):
    """Bytes per element of a dtype of ``bits`` bits and ``lanes`` lanes (``storage_bytes``,
    module docstring); the caller has checked the dtype."""
    return storage_bytes(bits, lanes)
