# See _names.pyx for details. The names memcore's passes give the variables they create, from
# one rule (NameTable's sequence for a hint), for every object model's writer.

cpdef str numbered_name(str hint, Py_ssize_t k)
    # The k-th name NameTable().fresh(hint) hands out: hint, hint1, hint2, ...

cpdef str raw_name(str name)
    # The name of the raw allocation behind the view ``name`` (arena mode at a non-zero offset).
