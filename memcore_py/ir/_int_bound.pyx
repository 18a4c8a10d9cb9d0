# cython: language_level=3
"""Constant integer bounds and modular sets of integer expressions, compiled: TVM's
``ConstIntBoundAnalyzer`` and ``ModularSetAnalyzer`` rules, written once, over a flat list
of nodes.

Design
------
An expression is handed to :func:`bound_nodes` as :c:type:`IntNode` s in post-order (every
operand before the node using it; the last node is the expression). Two encoders fill that
list and apply no rule: :func:`const_int_bound` / :func:`modular_set` here, over memcore's
:mod:`~memcore_py.ir.prim` nodes (what :func:`memcore_py.ir.prim_arith.const_int_bound` and
the bound analyses of :mod:`memcore_py.analysis.arith` call), and
``memcore_py/tvm/_spbm_extract.pyx``, over TVM's PrimExpr objects, for the upper bounds of
symbolic allocation dims. A variable enters as its range under the caller's bounds, a cast
and any other node as the range of its dtype, so the kernel knows nothing of names or
dtypes.

The rules (TVM ``src/arith/const_int_bound.cc``, ``modular_set.cc``):

- bounds live in ``[NEG_INF, POS_INF]`` = ``[-INT64_MAX, INT64_MAX]``, the ends meaning
  infinity; addition and multiplication saturate at them; a literal outside that range is
  saturated when encoded (TVM's ``IntImm`` holds an int64);
- ``+``, ``-``, ``*``: interval arithmetic; ``//``: over the divisor's range without 0
  (split at 0 when it spans it); ``%``: TVM's ``floormod`` bound, narrowed for a positive
  constant divisor ``d`` by the dividend's modular set ``coeff * x + base``: the values
  ``base mod g + g * j`` with ``g = gcd(coeff, d)``;
- ``min``/``max``: of the ends; ``select``: the union of its branches; ``cast``: the operand
  clamped to the target dtype; anything else: its dtype's range;
- modular sets: a literal ``(0, value)``; ``+``/``-``: ``gcd`` of the coefficients; ``*``:
  ``gcd(c1 c2, c1 b2, c2 b1)``; ``//`` and ``%`` by a positive constant as TVM; anything else
  nothing known ``(1, 0)``; normalised to ``0 <= base < coeff``. Where an intermediate would
  overflow int64, nothing is known.
"""
from libc.stdint cimport INT64_MAX, INT64_MIN, int32_t, int64_t
from libcpp.vector cimport vector

from memcore_py.ir.prim import Add, Cast, FloorDiv, FloorMod, IntImm, Max, Min, Mul, PrimVar, Select, Sub

cdef extern from *:
    """
    static inline int mc_add_ovf(int64_t a, int64_t b, int64_t* r) { return __builtin_add_overflow(a, b, r); }
    static inline int mc_mul_ovf(int64_t a, int64_t b, int64_t* r) { return __builtin_mul_overflow(a, b, r); }
    """
    bint mc_add_ovf(int64_t a, int64_t b, int64_t* r) noexcept nogil
    bint mc_mul_ovf(int64_t a, int64_t b, int64_t* r) noexcept nogil

cdef int64_t PINF = INT64_MAX
cdef int64_t NINF = -INT64_MAX

__all__ = ["const_int_bound", "modular_set"]


cdef int64_t saturate(object value):
    """``value`` (a Python int) clamped to ``[NEG_INF, POS_INF]``."""
    if value >= PINF:
        return PINF
    if value <= NINF:
        return NINF
    return <int64_t>value


cdef inline int64_t clamp(int64_t x) noexcept nogil:
    return NINF if x < NINF else x  # INT64_MIN, the one value below -INT64_MAX


cdef inline bint is_inf(int64_t x) noexcept nogil:
    return x == PINF or x == NINF


cdef inline int64_t fdiv(int64_t x, int64_t y) noexcept nogil:
    """Floor division, ``y != 0``, operands in ``[NEG_INF, POS_INF]``."""
    cdef int64_t q = x // y
    if x % y != 0 and ((x < 0) != (y < 0)):
        q -= 1
    return q


cdef inline int64_t fmod(int64_t x, int64_t y) noexcept nogil:
    """Floor modulo (the sign of ``y``), ``y != 0``."""
    cdef int64_t r = x % y
    if r != 0 and ((r < 0) != (y < 0)):
        r += y
    return r


cdef inline int64_t inf_add(int64_t x, int64_t y) noexcept nogil:
    cdef int64_t r
    if is_inf(x):
        return x
    if is_inf(y):
        return y
    if mc_add_ovf(x, y, &r):
        return PINF if x > 0 else NINF
    return clamp(r)


cdef inline int64_t inf_mul(int64_t x, int64_t y) noexcept nogil:
    cdef int64_t r
    if not is_inf(x) and not is_inf(y):
        if mc_mul_ovf(x, y, &r):
            return PINF if (x > 0) == (y > 0) else NINF
        return clamp(r)
    if x == 0 or y == 0:
        return 0
    return PINF if (x > 0) == (y > 0) else NINF


cdef inline int64_t inf_floordiv(int64_t x, int64_t y) noexcept nogil:
    if x == PINF:
        return PINF if y > 0 else NINF
    if x == NINF:
        return NINF if y > 0 else PINF
    return fdiv(x, y)  # as TVM: a finite x over an infinite end divides by +-(2**63 - 1)


cdef inline void boundary(int64_t a0, int64_t a1, int64_t b0, int64_t b1, bint div,
                          int64_t* lo, int64_t* hi) noexcept nogil:
    """The min and max of ``op`` over the four corners (``op``: ``*``, or ``//`` if ``div``)."""
    cdef int64_t v[4]
    cdef int k
    if div:
        v[0] = inf_floordiv(a0, b0); v[1] = inf_floordiv(a0, b1)
        v[2] = inf_floordiv(a1, b0); v[3] = inf_floordiv(a1, b1)
    else:
        v[0] = inf_mul(a0, b0); v[1] = inf_mul(a0, b1); v[2] = inf_mul(a1, b0); v[3] = inf_mul(a1, b1)
    lo[0] = v[0]
    hi[0] = v[0]
    for k in range(1, 4):
        if v[k] < lo[0]:
            lo[0] = v[k]
        if v[k] > hi[0]:
            hi[0] = v[k]


cdef inline void div_bound(int64_t a0, int64_t a1, int64_t b0, int64_t b1, int64_t* lo, int64_t* hi) noexcept nogil:
    cdef int64_t l1, h1, l2, h2
    if b0 == 0:
        b0 = 1
    if b1 == 0:
        b1 = -1
    if b0 <= 0 <= b1:  # split at zero: the negative and the positive divisors
        boundary(a0, a1, b0, -1, True, &l1, &h1)
        boundary(a0, a1, 1, b1, True, &l2, &h2)
        lo[0] = l1 if l1 < l2 else l2
        hi[0] = h1 if h1 > h2 else h2
        return
    boundary(a0, a1, b0, b1, True, lo, hi)


cdef inline void mod_bound(int64_t a0, int64_t a1, int64_t b0, int64_t b1, int64_t* lo, int64_t* hi) noexcept nogil:
    cdef int64_t cap_lo, cap_hi
    if b0 > 0:
        cap_hi = inf_add(b1, -1)
        if a0 >= 0:
            if a1 < b0:
                lo[0], hi[0] = a0, a1
                return
            lo[0], hi[0] = 0, (a1 if a1 < cap_hi else cap_hi)
            return
        lo[0], hi[0] = 0, cap_hi
        return
    cap_lo = inf_add(b0, 1)
    cap_hi = inf_add(b1, -1)
    lo[0] = cap_lo if cap_lo < 0 else 0
    hi[0] = cap_hi if cap_hi > 0 else 0


cdef inline int64_t gcd(int64_t x, int64_t y) noexcept nogil:
    """``math.gcd`` of two values above INT64_MIN."""
    cdef int64_t t
    if x < 0:
        x = -x
    if y < 0:
        y = -y
    while y:
        t = x % y
        x = y
        y = t
    return x


cdef inline void modular(const IntNode* nd, const int64_t* coeff, const int64_t* base,
                         int64_t* c, int64_t* b) noexcept nogil:
    """The modular set ``(c, b)`` of ``nd`` from its operands' (not normalised)."""
    cdef int64_t c1, b1, c2, b2, d, p, q, r
    cdef int kind = nd.kind
    c[0], b[0] = 1, 0
    if kind == N_IMM:
        c[0], b[0] = 0, nd.v0
        return
    if kind == N_ADD or kind == N_SUB or kind == N_MUL:
        c1, b1, c2, b2 = coeff[nd.a], base[nd.a], coeff[nd.b], base[nd.b]
        if kind == N_MUL:
            if (mc_mul_ovf(c1, c2, &p) or mc_mul_ovf(c1, b2, &q) or mc_mul_ovf(c2, b1, &r)
                    or p == INT64_MIN or q == INT64_MIN or r == INT64_MIN or mc_mul_ovf(b1, b2, &d)):
                return
            c[0], b[0] = gcd(gcd(p, q), r), d
            return
        if kind == N_SUB:
            if b2 == INT64_MIN:
                return
            b2 = -b2
        if mc_add_ovf(b1, b2, &d):
            return
        c[0], b[0] = gcd(c1, c2), d
        return
    if kind == N_FLOORDIV or kind == N_FLOORMOD:  # the divisor is a literal (the caller's check)
        d = base[nd.b]
        if d <= 0:
            return
        c1, b1 = coeff[nd.a], base[nd.a]
        if kind == N_FLOORDIV:
            if c1 % d == 0:
                c[0], b[0] = c1 // d, fdiv(b1, d)
            return
        c[0], b[0] = gcd(c1, d), b1  # the gcd is positive: d > 0


cdef void bound_nodes(const IntNode* nodes, Py_ssize_t n, int64_t* lo, int64_t* hi,
                      int64_t* coeff, int64_t* base) noexcept nogil:
    """Fill ``lo``/``hi`` (the constant bound) and ``coeff``/``base`` (the modular set,
    normalised) of each of the ``n`` nodes, in order (module docstring)."""
    cdef Py_ssize_t i
    cdef const IntNode* nd
    cdef int64_t a0, a1, b0, b1, c, b, d, g, lo_m, hi_m
    cdef int kind
    for i in range(n):
        nd = nodes + i
        kind = nd.kind
        if kind == N_IMM:
            lo[i], hi[i] = nd.v0, nd.v0
        elif kind == N_VAR or kind == N_EVERYTHING:
            lo[i], hi[i] = nd.v0, nd.v1
        elif kind == N_CAST:
            a0, a1 = lo[nd.a], hi[nd.a]
            lo[i] = a0 if a0 > nd.v0 else nd.v0
            hi[i] = a1 if a1 < nd.v1 else nd.v1
        else:
            a0, a1, b0, b1 = lo[nd.a], hi[nd.a], lo[nd.b], hi[nd.b]
            if kind == N_ADD:
                lo[i], hi[i] = inf_add(a0, b0), inf_add(a1, b1)
            elif kind == N_SUB:
                lo[i], hi[i] = inf_add(a0, -b1), inf_add(a1, -b0)
            elif kind == N_MUL:
                boundary(a0, a1, b0, b1, False, lo + i, hi + i)
            elif kind == N_FLOORDIV:
                div_bound(a0, a1, b0, b1, lo + i, hi + i)
            elif kind == N_FLOORMOD:
                mod_bound(a0, a1, b0, b1, lo + i, hi + i)
                if nodes[nd.b].kind == N_IMM and nodes[nd.b].v0 > 0:
                    # the dividend is coeff * x + base: a % d is base mod g + g * j, g = gcd
                    d = nodes[nd.b].v0
                    g = gcd(coeff[nd.a], d)
                    lo_m = fmod(base[nd.a], g)
                    hi_m = (d - 1) - fmod(fmod(d - 1, g) - fmod(base[nd.a], g), g)
                    if lo_m > lo[i]:
                        lo[i] = lo_m
                    if hi_m < hi[i]:
                        hi[i] = hi_m
            elif kind == N_MIN:
                lo[i] = a0 if a0 < b0 else b0
                hi[i] = a1 if a1 < b1 else b1
            elif kind == N_MAX:
                lo[i] = a0 if a0 > b0 else b0
                hi[i] = a1 if a1 > b1 else b1
            else:  # N_SELECT
                lo[i] = a0 if a0 < b0 else b0
                hi[i] = a1 if a1 > b1 else b1
        if (kind == N_FLOORDIV or kind == N_FLOORMOD) and nodes[nd.b].kind != N_IMM:
            c, b = 1, 0
        else:
            modular(nd, coeff, base, &c, &b)
        if c:
            if c < 0:
                c = -c
            b = fmod(b, c)
        coeff[i], base[i] = c, b


# --------------------------------------------------------------------------------------
# The encoder over memcore's prim nodes
# --------------------------------------------------------------------------------------
cdef dict _BINARY = {Add: N_ADD, Sub: N_SUB, Mul: N_MUL, FloorDiv: N_FLOORDIV, FloorMod: N_FLOORMOD,
                     Min: N_MIN, Max: N_MAX}


cdef Py_ssize_t encode(object root, object var_bound, object everything, vector[IntNode]& out) except -1:
    """Append ``root``'s nodes to ``out`` in post-order (each shared node once); its index.
    ``var_bound(name)`` and ``everything(dtype)``: the ranges of a variable and of a dtype
    (None: not asked; a variable then knows nothing, any other node is unbounded)."""
    cdef dict memo = {}
    cdef list stack = [root]
    cdef IntNode nd
    cdef object e, t, x, y, r
    cdef bint ready
    while stack:
        e = stack[len(stack) - 1]
        if id(e) in memo:
            stack.pop()
            continue
        t = type(e)
        nd.a = nd.b = -1
        nd.v0 = nd.v1 = 0
        x = y = None
        if t is IntImm:
            nd.kind = N_IMM
            nd.v0 = saturate(e.value)
        elif t is PrimVar:
            nd.kind = N_VAR
            r = var_bound(e.name) if var_bound is not None else None
            nd.v0, nd.v1 = (saturate(r[0]), saturate(r[1])) if r is not None else (NINF, PINF)
        elif t in _BINARY:
            nd.kind = _BINARY[t]
            x, y = e.a, e.b
        elif t is Select:
            nd.kind = N_SELECT
            x, y = e.true_value, e.false_value
        elif t is Cast:
            nd.kind = N_CAST
            x = e.value
        else:  # comparisons, and/or/not (bool), if_then_else (a call): everything of the dtype
            nd.kind = N_EVERYTHING
            r = everything(e.dtype) if everything is not None else None
            nd.v0, nd.v1 = (saturate(r[0]), saturate(r[1])) if r is not None else (NINF, PINF)
        ready = True
        if y is not None and id(y) not in memo:
            stack.append(y)
            ready = False
        if x is not None and id(x) not in memo:
            stack.append(x)
            ready = False
        if not ready:
            continue
        stack.pop()
        if x is not None:
            nd.a = memo[id(x)]
        if y is not None:
            nd.b = memo[id(y)]
        if nd.kind == N_CAST:
            r = everything(e.dtype) if everything is not None else None
            nd.v0, nd.v1 = (saturate(r[0]), saturate(r[1])) if r is not None else (NINF, PINF)
        memo[id(e)] = out.size()
        out.push_back(nd)
    return memo[id(root)]


cdef void run(vector[IntNode]& nodes, vector[int64_t]& lo, vector[int64_t]& hi,
              vector[int64_t]& coeff, vector[int64_t]& base):
    cdef Py_ssize_t n = nodes.size()
    lo.resize(n)
    hi.resize(n)
    coeff.resize(n)
    base.resize(n)
    with nogil:
        bound_nodes(nodes.data(), n, lo.data(), hi.data(), coeff.data(), base.data())


def const_int_bound(expr, var_bound, everything):
    """``(lo, hi)``, the constant bound of the prim ``expr`` (module docstring; TVM
    ``Analyzer::const_int_bound``), ``NEG_INF``/``POS_INF`` for an unbounded end.
    ``var_bound(name)``: a variable's ``(lo, hi)``; ``everything(dtype)``: a dtype's range."""
    cdef vector[IntNode] nodes
    cdef vector[int64_t] lo, hi, coeff, base
    cdef Py_ssize_t k = encode(expr, var_bound, everything, nodes)
    run(nodes, lo, hi, coeff, base)
    return (lo[k], hi[k])


def modular_set(expr):
    """``(coeff, base)`` with ``expr == coeff * x + base`` for some integer ``x`` (TVM
    ``ModularSet``; coeff 0: the constant ``base``; ``(1, 0)``: nothing known)."""
    cdef vector[IntNode] nodes
    cdef vector[int64_t] lo, hi, coeff, base
    cdef Py_ssize_t k = encode(expr, None, None, nodes)
    run(nodes, lo, hi, coeff, base)
    return (coeff[k], base[k])


#: the node kinds, for :func:`bound_of`'s callers
IMM, VAR, ADD, SUB, MUL, FLOORDIV, FLOORMOD, MIN, MAX, SELECT, CAST, EVERYTHING = range(12)


def bound_of(list nodes):
    """``(lo, hi)`` of the last of ``nodes``, each ``(kind, a, b, v0, v1)`` as an
    :c:type:`IntNode` (``kind`` one of this module's kinds, ``a``/``b`` earlier indices or -1;
    ends saturated), for an expression in another form than prim nodes (the canonical
    polynomials of :mod:`memcore_py.analysis.arith`).

    Raises
    ------
    ValueError
        A kind out of range, or an operand that is not an earlier node.
    """
    cdef vector[IntNode] out
    cdef vector[int64_t] lo, hi, coeff, base
    cdef IntNode nd
    cdef Py_ssize_t i = 0
    cdef int need
    for kind, a, b, v0, v1 in nodes:
        if not 0 <= kind <= N_EVERYTHING:
            raise ValueError(f"node {i}: kind {kind} out of range")
        need = 2 if N_ADD <= kind <= N_SELECT else (1 if kind == N_CAST else 0)
        if (need >= 1 and not 0 <= a < i) or (need == 2 and not 0 <= b < i):
            raise ValueError(f"node {i}: operands {a}, {b} are not earlier nodes")
        nd.kind, nd.a, nd.b = kind, (a if need >= 1 else -1), (b if need == 2 else -1)
        nd.v0, nd.v1 = saturate(v0), saturate(v1)
        out.push_back(nd)
        i += 1
    if not i:
        raise ValueError("no nodes")
    run(out, lo, hi, coeff, base)
    cdef size_t last = i - 1
    return (lo[last], hi[last])
