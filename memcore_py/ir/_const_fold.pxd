# See _const_fold.pyx for details. TIR's constant folding of a left-deep product, once for
# every object model's writer, and the bytes of an element its first factor is.
from libc.stdint cimport int64_t, uint8_t

cdef enum:
    FOLD_OVERFLOW = -1  # product_fold: a folded constant does not fit in int64

cdef Py_ssize_t product_fold(int64_t start, const int64_t* values, const uint8_t* is_const, Py_ssize_t n,
                             int64_t* head_value, Py_ssize_t* head_dim, Py_ssize_t* tail) noexcept nogil
    # start * d0 * d1 * ... folded as TIR folds it: the head (the constant head_value when
    # head_dim is -1, else the factor head_dim) times the factors tail[0..return value), in
    # order; FOLD_OVERFLOW when a folded constant exceeds int64.


cdef inline int64_t storage_bytes(int64_t bits, int64_t lanes) noexcept nogil:
    # Bytes per element of a dtype of ``bits`` bits and ``lanes`` lanes: ceil(bits * lanes / 8)
    # (TVM ``DataType::StorageBytes``), for every object model's reading of a dtype.
    return (bits * lanes + 7) // 8
