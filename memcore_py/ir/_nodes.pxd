# Builders of the IR nodes the compiled helpers make most (memcore_py/ir/_nodes.pyx):
# one place that knows their slots, shared by the TVM reader, the flat walks of the passes
# and KillAfterLastUse's walk.
cdef object call_node(op, tuple args, attrs, tuple ty_args, ty)
cdef object binding_node(var, value)
cdef object var_node(bint dataflow, name, ty)
cdef object shape_expr_node(tuple values, ty)
