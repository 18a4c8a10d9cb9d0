# Builders of the IR nodes the compiled helpers make most (memcore_py/ir/_nodes.pyx):
# one place that knows their slots, shared by the TVM reader, the flat walks of the passes,
# KillAfterLastUse's walk, BlockBuilder.emit's binding step and the importers' call builder.
cdef object call_node(op, tuple args, attrs, tuple ty_args, ty)
cdef object binding_node(var, value)
cdef object var_node(bint dataflow, name, ty)
cdef object shape_expr_node(tuple values, ty)
cdef object tuple_node(tuple fields, ty)
cdef object prim_value_node(value, ty)
cdef object shape_type_node(tuple values)
cdef object tuple_type_node(tuple fields)
cdef object prim_type_node(str dtype)
