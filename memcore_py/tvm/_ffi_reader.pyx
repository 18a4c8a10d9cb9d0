"""Compiled reads of TVM objects straight from their memory, for :mod:`memcore_py.tvm.from_tvm`
(built by ``setup.py``; the Python reader is the fallback for everything this module declines).

Design
------
``from_tvm`` through TVM's Python API pays for every field it reads: a field read builds a
Python wrapper, an array element costs a global-function call, and a binding of a lowered
model needs 15-25 of them, which made reading cost several times TVM's own
StaticPlanBlockMemory. A TVM object is a C struct with a stable ABI (``tvm/ffi/c_api.h``):

- every object starts with ``TVMFFIObject`` {u64 ref count; i32 type index; ...}, so its type
  index is the int32 at byte 8;
- an ``ffi.Array`` is that header then ``TVMFFISeqCell`` {data, size, ...}: the elements are
  16-byte ``TVMFFIAny`` {i32 type index; u32; 8-byte value} at ``data``;
- a ``String`` or ``BigInt`` field is an inline ``TVMFFIAny``: a small string (type index 11,
  length in the second word, bytes inline), a string object (65: header then {data, size}),
  an int64 (1);
- every other field sits at the offset TVM's reflection reports for it
  (``TypeInfo.fields[i].offset``).

:class:`Layout` takes the type indices and field offsets from tvm_ffi's reflection at run time
(nothing is hard-coded but the C ABI above) and checks the ABI on objects it builds through
TVM's Python API before it is used; when a check fails the reader runs on the Python API alone.

:func:`read_bindings` reads a block's bindings: a ``VarBinding`` of a ``Call`` whose callee,
arguments (variables, shapes of ``IntImm`` and known symbolic dims, dtypes, strings,
integers), attributes (none) and types (tensor and shape types of such dims, types seen
before) it can read is built here; any other binding, and any object met for the first time
that needs the Python path (an op, a dtype, a symbolic variable, a composite dim), is read by
the Python reader, which fills the shared memo tables so that the next occurrence is read here.
``R.Object`` (TVM's ``AnyType``, a new object for every storage binding) is read here too.
The memo tables are the reader's own (keyed by object address, valid while the source module
is alive, as in the Python reader).

Above the bindings, what a pass call would otherwise pay per call through the Python API:

- :func:`module_functions`: a module's function map (``ffi.Map``, small or dense layout; see
  :func:`map_entries`) as :class:`FunctionEntry` records (kind, name, GlobalVar, function);
- :func:`function_attrs` / :func:`module_attrs`: a ``DictAttrs`` with string keys and bool,
  int, float, string or ``int64`` ``IntImm`` values, or maps of such values (the
  ``tir_var_upper_bound`` of a dynamic function), nearly every function's attrs
  (``global_symbol``, ``relax.force_pure``, ``num_input``; 3 FFI calls per entry otherwise);
- :func:`module_has_global_infos`: whether the module's global-info map is non-empty.

Each declines (returns None) what it does not read, and :class:`Layout`'s self-check runs it
on objects built through the Python API. Reads never go past what a type index check allowed:
an object's fields are read only after its type index matched the expected type.
"""
cimport cython
from libc.stdint cimport UINT64_MAX, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libcpp.vector cimport vector
from cpython.object cimport PyObject
from cpython.unicode cimport PyUnicode_DecodeUTF8

from memcore_py.analysis._flat_rule cimport (FLAT_CALL, FLAT_GET_ITEM, FLAT_LEAF, FLAT_SCOPE, FLAT_TUPLE, HOLD_BINDING,
                                             HOLD_RESULT, STEP_FLAT, flat_step)
from memcore_py.ir._nodes cimport binding_node, call_node, shape_expr_node, var_node
from memcore_py.tvm._node_map cimport AddrMap, map_put
from memcore_py.tvm._ffi_abi cimport (
    HDR_SIZE, K_ARRAY, K_BOOL, K_DATATYPE, K_INT, K_OBJECT_BEGIN, K_SMALL_STR, K_STR, addr, any_obj, any_type, array_data,
    array_size, obj_field, obj_type,
)

from memcore_py.ir.construct import EMPTY_ATTRS, new_shape_type
from memcore_py.ir.ops import builtin_alloc_implied_type
from memcore_py.ir.prim import Add, FloorDiv, FloorMod, Max, Min, Mul, Sub

cdef enum:
    K_FLOAT = 3
    K_MAP = 72
from memcore_py.ir.expr import Call, DataflowVar, DataTypeImm, PrimValue, ShapeExpr, StringImm, Var, VarBinding
from memcore_py.ir.types import ObjectType, TensorType, TupleType

#: the memcore type of TVM's ``AnyType`` (``R.Object``), shared by both readers
OBJECT_TYPE = ObjectType()

cdef object read_string(const char* any):
    """A ``String`` field (an inline TVMFFIAny) as a Python str; None if not a string."""
    cdef int32_t ti = any_type(any)
    cdef const char* obj
    if ti == K_SMALL_STR:
        return PyUnicode_DecodeUTF8(any + 8, (<const uint32_t*>(any + 4))[0], NULL)
    if ti == K_STR:
        obj = any_obj(any)
        if obj == NULL or obj_type(obj) != K_STR:
            return None
        return PyUnicode_DecodeUTF8((<const char**>(obj + HDR_SIZE))[0],
                                    (<const int64_t*>(obj + HDR_SIZE + 8))[0], NULL)
    return None


cdef enum FieldKind:
    # how a field is stored, for the layout's self-check (field_matches)
    F_OBJ = 0  # an object pointer (null for None)
    F_STR = 1  # a String: an inline TVMFFIAny (read_string)
    F_INT_ANY = 2  # an integer in an inline TVMFFIAny (IntImm.value)
    F_DTYPE_ANY = 3  # a DataType in an inline TVMFFIAny (GenericConst.value of a dtype)
    F_I32 = 4  # an int32
    F_BOOL = 5  # a one-byte bool
    F_DLDTYPE = 6  # an inline DLDataType (4 bytes)


def _reflected(cls, name):
    """The getter TVM's reflection registers for the field ``name`` of ``cls`` (what the
    Python attribute calls; ``DictAttrs.__dict__`` is reached only this way)."""
    ti = cls.__tvm_ffi_type_info__
    while ti is not None:
        for f in ti.fields:
            if f.name == name:
                return f.as_property(cls).fget
        ti = ti.parent_type_info
    raise KeyError(name)


cdef inline int64_t packed_of(dt):
    """A Python dtype (``tvm_ffi.dtype``) as :func:`packed_dtype` packs a DLDataType."""
    return dt.type_code | dt.bits << 8 | dt.lanes << 16


cdef bint field_matches(const char* obj, Py_ssize_t offset, int kind, value):
    """Whether the field of kind ``kind`` at ``obj + offset`` holds ``value``, the field as
    TVM's reflection returns it; any value of an unexpected Python type does not match."""
    cdef const char* f = obj + offset
    try:
        if kind == F_OBJ:
            return addr(obj_field(obj, offset)) == (0 if value is None else value.__chandle__())
        if kind == F_STR:
            return isinstance(value, str) and read_string(f) == value
        if kind == F_INT_ANY:
            return any_type(f) == K_INT and (<const int64_t*>(f + 8))[0] == int(value)
        if kind == F_DTYPE_ANY:
            return any_type(f) == K_DATATYPE and (<const uint32_t*>(f + 8))[0] == packed_of(value)
        if kind == F_I32:
            return (<const int32_t*>f)[0] == int(value)
        if kind == F_BOOL:
            return isinstance(value, bool) and ((<const uint8_t*>f)[0] != 0) == value
        if kind == F_DLDTYPE:
            return (<const uint32_t*>f)[0] == packed_of(value)
    except (AttributeError, TypeError, ValueError):
        return False
    return False


cdef class Layout:
    """Type indices and field offsets of the TVM classes read here, from tvm_ffi's reflection
    (module docstring). ``ok`` is False when the ABI self-check failed, and ``failure`` then
    names the first check that did (None otherwise).

    Construction raises ``KeyError`` when a field read here is missing from TVM's reflection
    and ``RuntimeError`` when fields the readers treat as one sit at different offsets;
    :func:`memcore_py.tvm.compat.fast_layout` takes either as "no fast path"."""

    def __init__(self, api):
        def info(cls):
            return cls.__tvm_ffi_type_info__

        def off(cls, name):
            ti = info(cls)
            while ti is not None:
                for f in ti.fields:
                    if f.name == name:
                        return f.offset
                ti = ti.parent_type_info
            raise KeyError(name)

        self.t_var = info(api.Var).type_index
        self.t_dfvar = info(api.DataflowVar).type_index
        self.t_binding = info(api.VarBinding).type_index
        self.t_call = info(api.Call).type_index
        self.t_shape_expr = info(api.ShapeExpr).type_index
        self.t_tensor_type = info(api.TensorType).type_index
        self.t_shape_type = info(api.ShapeType).type_index
        self.t_int_imm = info(api.IntImm).type_index
        self.t_generic_const = info(api.GenericConst).type_index
        self.t_string_imm = info(api.StringImm).type_index
        self.t_tuple_type = info(api.TupleType).type_index
        self.o_tuple_fields = off(api.TupleType, "fields")
        self.o_expr_ty = off(api.Var, "ty")
        self.o_var_name = off(api.Var, "name")
        self.o_b_var = off(api.VarBinding, "var")
        self.o_b_value = off(api.VarBinding, "value")
        self.o_call_op = off(api.Call, "op")
        self.o_call_args = off(api.Call, "args")
        self.o_call_attrs = off(api.Call, "attrs")
        self.o_call_ty_args = off(api.Call, "ty_args")
        self.o_shape_values = off(api.ShapeExpr, "values")
        self.o_imm_value = off(api.IntImm, "value")
        self.o_const_value = off(api.GenericConst, "value")
        self.o_str_value = off(api.StringImm, "value")
        self.o_tt_shape = off(api.TensorType, "shape")
        self.o_tt_dtype = off(api.TensorType, "dtype")
        self.o_tt_vdevice = off(api.TensorType, "vdevice")
        self.o_tt_ndim = off(api.TensorType, "ndim")
        self.o_st_values = off(api.ShapeType, "values")
        self.o_st_ndim = off(api.ShapeType, "ndim")
        self.t_dict_attrs = info(api.DictAttrs).type_index
        self.o_attrs_dict = off(api.DictAttrs, "__dict__")
        self.o_func_attrs = off(api.Function, "attrs")
        self.o_mod_attrs = off(api.IRModule, "attrs")
        self.o_mod_infos = off(api.IRModule, "global_infos")
        self.o_mod_functions = off(api.IRModule, "functions")
        self.t_global_var = info(api.GlobalVar).type_index
        self.o_gv_name = off(api.GlobalVar, "name_hint")
        self.t_function = info(api.Function).type_index
        self.t_prim_func = info(api.PrimFunc).type_index
        self.t_any_type = info(api.AnyType).type_index
        self.t_func_type = info(api.FuncType).type_index
        self.t_prim_type = info(api.PrimType).type_index
        self.t_op = info(api.Op).type_index
        self.t_extern_func = info(api.ExternFunc).type_index
        self.t_type_missing = type(api.ir_ffi.TypeMissing()).__tvm_ffi_type_info__.type_index
        self.t_if = info(api.If).type_index
        self.t_seq = info(api.SeqExpr).type_index
        self.t_tuple = info(api.Tuple).type_index
        self.t_tuple_get_item = info(api.TupleGetItem).type_index
        self.t_match_cast = info(api.MatchCast).type_index
        self.t_block = info(api.BindingBlock).type_index
        self.t_dfblock = info(api.DataflowBlock).type_index
        self.o_func_body = off(api.Function, "body")
        self.o_tuple_expr_fields = off(api.Tuple, "fields")
        self.o_tgi_tuple = off(api.TupleGetItem, "tuple_value")
        self.o_mc_value = off(api.MatchCast, "value")
        self.o_tgi_index = off(api.TupleGetItem, "index")  # an int32
        self.o_pt_dtype = off(api.PrimType, "dtype")  # an inline DLDataType
        self.o_extern_symbol = off(api.ExternFunc, "global_symbol")  # a String
        self.o_func_params = off(api.Function, "params")
        self.o_func_ret_ty = off(api.Function, "ret_ty")
        self.o_func_is_pure = off(api.Function, "is_pure")  # a bool (one byte)
        self.o_seq_blocks = off(api.SeqExpr, "blocks")
        self.o_seq_body = off(api.SeqExpr, "body")
        self.o_block_bindings = off(api.BindingBlock, "bindings")
        self.o_if_cond = off(api.If, "cond")
        self.o_if_then = off(api.If, "true_branch")
        self.o_if_else = off(api.If, "false_branch")
        self.o_ft_params = off(api.FuncType, "params")
        self.o_ft_ret = off(api.FuncType, "ret")
        if off(api.MatchCast, "var") != self.o_b_var:
            raise RuntimeError("MatchCast.var is not at VarBinding.var's offset")
        if off(api.DataflowBlock, "bindings") != self.o_block_bindings:
            raise RuntimeError("DataflowBlock.bindings is not at BindingBlock.bindings' offset")
        for o in (off(api.DataflowVar, "ty"), off(api.Call, "ty"), off(api.ShapeExpr, "ty"),
                  off(api.IntImm, "ty"), off(api.GenericConst, "ty"), off(api.StringImm, "ty")):
            if o != self.o_expr_ty:
                raise RuntimeError("TVM expressions do not share the offset of 'ty'")
        if off(api.DataflowVar, "name") != self.o_var_name:
            raise RuntimeError("DataflowVar.name is not at Var.name's offset")
        binary = [getattr(api.prim, name) for name, _node in BINARY_PRIM_NODES]
        self.o_bin_a, self.o_bin_b = off(binary[0], "a"), off(binary[0], "b")
        for k, cls in enumerate(binary):
            self.t_bin[k] = info(cls).type_index
            if off(cls, "a") != self.o_bin_a or off(cls, "b") != self.o_bin_b:
                raise RuntimeError(f"{cls.__name__}'s operands are not at {binary[0].__name__}'s offsets")
        self.failure = self._self_check(api)
        self.ok = self.failure is None

    def _check_module_functions(self, api):
        """:func:`module_functions` on modules of both map layouts against the Python API."""
        import tvm

        text = ("# from tvm.script import relax as R\n\n@R.function\n"
                "def f(x: R.Tensor((4,), dtype=\"float32\")) -> R.Tensor((4,), dtype=\"float32\"):\n    return x\n")
        f = tvm.script.from_source(text)
        for n in (1, 3, 9):  # the small layout holds at most 4 entries
            mod = api.IRModule({f"f{i}" if i else "a_function_name_longer_than_a_small_string": f for i in range(n)})
            got = [(e.kind, e.name, e.gvar, e.func) for e in module_functions(self, mod.__chandle__()) or ()]
            want = [(1, str(gv.name_hint), gv.__chandle__(), fn.__chandle__()) for gv, fn in mod.functions.items()]
            if got != want:  # the iteration order too
                return False
        return True

    def _field_samples(self, api):
        """``(object, expected type index, [(field, offset, kind), ...])`` for an object of every
        class read here, built through TVM's Python API with a value in every field the
        readers read (non-null where the field may be null, two objects where a field is a
        flag): every offset of this layout is read on one of them (:meth:`_check_fields`)."""
        i64 = lambda v: api.IntImm("int64", v)
        half = api.PrimType("float16")
        vdevice = api.VDevice(None, 3, "global")
        shape = api.rx_ffi.ShapeExpr([i64(2), i64(-(1 << 40) + 3)], None)
        tensor = api.TensorType(shape, "float32", vdevice)
        plain = api.TensorType(None, "bfloat16", None, 3)
        shape_ty = api.ShapeType([i64(2), i64(7), i64(9), i64(4), i64(5)])
        unknown_shape = api.ShapeType(None, 2)
        tuple_ty = api.TupleType([tensor, half])
        x = api.Var("a_long_parameter_name_0123456789", tensor)
        y = api.DataflowVar("a_long_dataflow_var_0123456789", plain)
        z = api.Var("z", tensor)
        w = api.Var("w", api.AnyType())
        attrs = api.ir.make_node("ir.DictAttrs", n=5, s="a_long_attribute_value_0123456789")
        call = api.Call(api.Op.get("relax.add"), [x, shape], attrs=attrs, ty_args=[half, tuple_ty], ret_ty=plain)
        dtype = api.ir_ffi.GenericConst(api.tvm.DataType("bfloat16"), api.rx_ffi.AnyType(None), None)
        string = api.StringImm("a_long_string_immediate_0123456789")
        tup = api.Tuple([x, string, dtype])
        item = api.TupleGetItem(tup, 2)
        binding = api.VarBinding(y, call)
        cast = api.MatchCast(z, y, tensor)
        last = api.VarBinding(w, item)
        dfblock = api.DataflowBlock([binding, cast])
        block = api.BindingBlock([last])
        seq = api.SeqExpr([dfblock, block], z)
        branch = api.If(api.Var("c", api.TensorType(api.rx_ffi.ShapeExpr([], None), "bool", None)), seq,
                        api.SeqExpr([block], x))
        impure = api.Function([x], seq, tensor, False, attrs)
        func_ty = api.FuncType([tensor, tuple_ty], plain)
        pure = api.Function([x, z], x, None, True, None)
        gv = api.GlobalVar("a_long_global_function_name_0123456789")
        mod = api.IRModule({gv: impure}, attrs, {"vdevice": [vdevice]})
        symbol = api.ExternFunc("a_packed_function_name_0123456789")
        O, S, I, D, I32, B, DL = F_OBJ, F_STR, F_INT_ANY, F_DTYPE_ANY, F_I32, F_BOOL, F_DLDTYPE
        var_fields = [("name", self.o_var_name, S), ("ty", self.o_expr_ty, O)]
        return [
            (x, self.t_var, var_fields),
            (y, self.t_dfvar, var_fields),
            (call, self.t_call, [("op", self.o_call_op, O), ("args", self.o_call_args, O),
                                 ("attrs", self.o_call_attrs, O), ("ty_args", self.o_call_ty_args, O),
                                 ("ty", self.o_expr_ty, O)]),
            (shape, self.t_shape_expr, [("values", self.o_shape_values, O), ("ty", self.o_expr_ty, O)]),
            (i64(-(1 << 40) + 3), self.t_int_imm, [("value", self.o_imm_value, I), ("ty", self.o_expr_ty, O)]),
            (dtype, self.t_generic_const, [("value", self.o_const_value, D), ("ty", self.o_expr_ty, O)]),
            (string, self.t_string_imm, [("value", self.o_str_value, S), ("ty", self.o_expr_ty, O)]),
            (tensor, self.t_tensor_type, [("shape", self.o_tt_shape, O), ("dtype", self.o_tt_dtype, O),
                                          ("vdevice", self.o_tt_vdevice, O), ("ndim", self.o_tt_ndim, I32)]),
            (plain, self.t_tensor_type, [("shape", self.o_tt_shape, O), ("dtype", self.o_tt_dtype, O),
                                         ("vdevice", self.o_tt_vdevice, O), ("ndim", self.o_tt_ndim, I32)]),
            (shape_ty, self.t_shape_type, [("values", self.o_st_values, O), ("ndim", self.o_st_ndim, I32)]),
            (unknown_shape, self.t_shape_type, [("values", self.o_st_values, O), ("ndim", self.o_st_ndim, I32)]),
            (tuple_ty, self.t_tuple_type, [("fields", self.o_tuple_fields, O)]),
            (attrs, self.t_dict_attrs, [("__dict__", self.o_attrs_dict, O)]),
            (impure, self.t_function, [("attrs", self.o_func_attrs, O), ("body", self.o_func_body, O),
                                       ("params", self.o_func_params, O), ("ret_ty", self.o_func_ret_ty, O),
                                       ("is_pure", self.o_func_is_pure, B)]),
            (pure, self.t_function, [("body", self.o_func_body, O), ("params", self.o_func_params, O),
                                     ("is_pure", self.o_func_is_pure, B)]),
            (mod, -1, [("attrs", self.o_mod_attrs, O), ("global_infos", self.o_mod_infos, O),
                       ("functions", self.o_mod_functions, O)]),
            (gv, self.t_global_var, [("name_hint", self.o_gv_name, S)]),
            (tup, self.t_tuple, [("fields", self.o_tuple_expr_fields, O)]),
            (item, self.t_tuple_get_item, [("tuple_value", self.o_tgi_tuple, O), ("index", self.o_tgi_index, I32)]),
            (binding, self.t_binding, [("var", self.o_b_var, O), ("value", self.o_b_value, O)]),
            (cast, self.t_match_cast, [("var", self.o_b_var, O), ("value", self.o_mc_value, O)]),
            (dfblock, self.t_dfblock, [("bindings", self.o_block_bindings, O)]),
            (block, self.t_block, [("bindings", self.o_block_bindings, O)]),
            (seq, self.t_seq, [("blocks", self.o_seq_blocks, O), ("body", self.o_seq_body, O)]),
            (branch, self.t_if, [("cond", self.o_if_cond, O), ("true_branch", self.o_if_then, O),
                                 ("false_branch", self.o_if_else, O)]),
            (half, self.t_prim_type, [("dtype", self.o_pt_dtype, DL)]),
            (func_ty, self.t_func_type, [("params", self.o_ft_params, O), ("ret", self.o_ft_ret, O)]),
            (symbol, self.t_extern_func, [("global_symbol", self.o_extern_symbol, S)]),
            *[(getattr(api.prim, name)(i64(k - 3), api.Var(f"n{k}", api.PrimType("int64"))), self.t_bin[k],
               [("a", self.o_bin_a, O), ("b", self.o_bin_b, O)]) for k, (name, _node) in enumerate(BINARY_PRIM_NODES)],
            (api.rx_ffi.AnyType(None), self.t_any_type, []),
            (api.Op.get("relax.add"), self.t_op, []),
            (api.ir_ffi.TypeMissing(), self.t_type_missing, []),
        ]

    def _check_fields(self, api):
        """Read every field offset of this layout on objects built through TVM's Python API
        (:meth:`_field_samples`) and compare with what TVM's reflection getter (the Python
        attribute) returns for that field; also each object's type index. None when all
        agree, else the name of the first field (or type) that does not."""
        samples = self._field_samples(api)
        cdef const char* p
        for obj, type_index, fields in samples:
            p = <const char*><size_t>obj.__chandle__()
            cls = type(obj)
            if type_index >= 0 and obj_type(p) != type_index:
                return f"the type index of {cls.__name__}"
            for name, offset, kind in fields:
                if not field_matches(p, offset, kind, _reflected(cls, name)(obj)):
                    return f"{cls.__name__}.{name} (offset {offset})"
        return None

    def _self_check(self, api):
        """Read objects built through TVM's Python API and compare with what the API reads.
        None when every check passed, else a short description of the first that failed."""
        import tvm_ffi

        failed = self._check_fields(api)
        if failed is not None:
            return f"{failed} does not read what TVM's API reads"
        short = api.Var("ab", None)
        long = api.Var("a_long_variable_name_0123456789", None)
        big = api.IntImm("int64", 1 << 40)
        arr = tvm_ffi.convert([short, long, big])
        cdef const char* a = <const char*><size_t>arr.__chandle__()
        cdef const char* data
        if obj_type(a) != K_ARRAY or array_size(a) != 3:
            return "an Array's header"
        data = array_data(a)
        if any_type(data) != self.t_var or addr(any_obj(data)) != short.__chandle__():
            return "an Array's elements"
        if any_type(data + 32) != self.t_int_imm or addr(any_obj(data + 32)) != big.__chandle__():
            return "an Array's elements"
        if read_string(any_obj(data) + self.o_var_name) != "ab":
            return "a small string"
        if read_string(any_obj(data + 16) + self.o_var_name) != "a_long_variable_name_0123456789":
            return "a string object"
        cdef const char* v = any_obj(data + 32) + self.o_imm_value
        if any_type(v) != K_INT or (<const int64_t*>(v + 8))[0] != (1 << 40):
            return "an IntImm's value"
        probe = {"relax.force_pure": True, "n": -7, "x": 1.5, "global_symbol": "a_long_symbol_name_0123456789"}
        attrs = api.ir.make_node("ir.DictAttrs", **probe)
        got = read_dict_attrs_at(self, <const char*><size_t>attrs.__chandle__())
        if got != probe or list(got) != [str(k) for k, _ in attrs.items()] or type(got["n"]) is not int:
            return "a DictAttrs' small map"
        empty = api.IRModule({})
        if module_has_global_infos(self, empty.__chandle__()) != (len(empty.global_infos) > 0):
            return "an empty module's global infos"
        if not self._check_module_functions(api):
            return "a module's function map"
        probe["s"] = "ab"  # five entries: TVM's dense layout
        probe["bounds"] = {"n": api.IntImm("int64", 128), "m": 7}  # a nested map, an int64 IntImm
        attrs = api.ir.make_node("ir.DictAttrs", **probe)
        got = read_dict_attrs_at(self, <const char*><size_t>attrs.__chandle__())
        want = {str(k): (dict((str(a), int(b)) for a, b in x.items()) if k == "bounds" else x)
                for k, x in attrs.items()}
        if got != want or list(got) != list(want) or list(got["bounds"]) != list(want["bounds"]):
            return "a DictAttrs' dense map"
        probe["i32"] = api.IntImm("int32", 3)  # not an int64: left to the Python API
        attrs = api.ir.make_node("ir.DictAttrs", **probe)
        if read_dict_attrs_at(self, <const char*><size_t>attrs.__chandle__()) is not None:
            return "an int32 IntImm attribute"
        return None


cdef object read_attr_value(Layout L, const char* v, int depth):
    """The attribute value in the ``TVMFFIAny`` at ``v`` as
    :func:`~memcore_py.tvm.values.from_tvm_value` reads it, when it is a bool, an int, a float,
    a string, an ``int64`` ``IntImm`` (an int) or, up to two levels deep, a map of such values
    with string keys (a dict); None otherwise (the Python API reads it)."""
    cdef int32_t ti = any_type(v)
    cdef const char* obj
    cdef const char* ty
    cdef const uint8_t* dt
    if ti == K_BOOL:
        return (<const int64_t*>(v + 8))[0] != 0
    if ti == K_INT:
        return (<const int64_t*>(v + 8))[0]
    if ti == K_FLOAT:
        return (<const double*>(v + 8))[0]
    if ti == L.t_int_imm:
        obj = any_obj(v)
        ty = obj_field(obj, L.o_expr_ty)
        if ty == NULL or obj_type(ty) != L.t_prim_type or any_type(obj + L.o_imm_value) != K_INT:
            return None
        dt = <const uint8_t*>(ty + L.o_pt_dtype)
        if dt[0] != 0 or dt[1] != 64 or (<const uint16_t*>(dt + 2))[0] != 1:  # int64 only
            return None
        return (<const int64_t*>(obj + L.o_imm_value + 8))[0]
    if ti == K_MAP:
        return read_attr_map(L, any_obj(v), depth + 1) if depth < 2 else None
    return read_string(v)


cdef object read_attr_map(Layout L, const char* m, int depth):
    """The entries of an ``ffi.Map`` (either layout, :func:`map_entries`) as a dict in its
    iteration order, when every key is a string and every value one
    :func:`read_attr_value` reads; None otherwise (the Python API reads it)."""
    entries = map_entries(m)
    if entries is None:
        return None
    out = {}
    cdef const char* pair
    for e in entries:
        pair = <const char*><size_t>e
        k = read_string(pair)
        if k is None:
            return None
        val = read_attr_value(L, pair + 16, depth)
        if val is None:
            return None
        out[k] = val
    return out


cdef object read_dict_attrs_at(Layout L, const char* attrs):
    """A ``DictAttrs`` (or null: ``{}``) as :func:`~memcore_py.tvm.values.dict_attrs_from_tvm`
    reads it, when :func:`read_attr_map` can read its map; None otherwise."""
    if attrs == NULL:
        return {}
    if obj_type(attrs) != L.t_dict_attrs:
        return None
    return read_attr_map(L, obj_field(attrs, L.o_attrs_dict), 0)


def function_attrs(Layout L, size_t func):
    """The attrs of the Relax ``Function`` at ``func`` as a dict of memcore values, or None
    when the Python API must read them (:func:`read_dict_attrs_at`)."""
    return read_dict_attrs_at(L, obj_field(<const char*>func, L.o_func_attrs))


def module_attrs(Layout L, size_t mod):
    """The attrs of the ``IRModule`` at ``mod`` as :func:`function_attrs` reads them."""
    return read_dict_attrs_at(L, obj_field(<const char*>mod, L.o_mod_attrs))


def module_has_global_infos(Layout L, size_t mod):
    """Whether the ``IRModule`` at ``mod`` may have global infos (False only when its
    ``global_infos`` map is null or empty: the size field every map layout shares)."""
    cdef const char* m = obj_field(<const char*>mod, L.o_mod_infos)
    if m == NULL:
        return False
    if obj_type(m) != K_MAP:
        return True
    return (<const uint64_t*>(m + HDR_SIZE + 8))[0] != 0


cdef object map_entries(const char* m):
    """The addresses of the {key, value} ``TVMFFIAny`` pairs of every entry of the ``ffi.Map``
    at ``m``, in the map's iteration order (insertion order, as Python and C++ iterate it);
    None when ``m`` is not a map or what is read disagrees with its size. Both layouts share
    the header {void* data_; u64 size_; u64 slots_; void* data_deleter_}: the small one (top
    bit of ``slots_`` set) holds ``size_`` 32-byte pairs at ``data_`` in insertion order; the
    dense one holds ``slots_`` slots in blocks of 16 (16 metadata bytes, 0xFF empty and 0xFE
    protected, then 16 48-byte items: the pair, then the indices of the previous and next item
    of the insertion list), the list's head index after the header's u32 ``fib_shift_``
    (``Layout``'s self-check compares the order with the Python API's). Every index followed
    is checked against the slot count and the slot's metadata, and the list must end after
    exactly ``size_`` items."""
    cdef uint64_t n, slots, idx, k = 0
    cdef const char* data
    cdef const char* block
    cdef uint8_t meta
    if m == NULL or obj_type(m) != K_MAP:
        return None
    data = (<const char**>(m + HDR_SIZE))[0]
    n = (<const uint64_t*>(m + HDR_SIZE + 8))[0]
    slots = (<const uint64_t*>(m + HDR_SIZE + 16))[0]
    if slots >> 63:
        return [addr(data + 32 * k) for k in range(n)]
    out = []
    idx = (<const uint64_t*>(m + HDR_SIZE + 40))[0]
    while idx != UINT64_MAX:
        if idx >= slots or k >= n:
            return None
        block = data + (idx // 16) * (16 + 16 * 48)
        meta = (<const uint8_t*>block)[idx % 16]
        if meta == 0xFF or meta == 0xFE:
            return None
        out.append(addr(block + 16 + 48 * (idx % 16)))
        k += 1
        idx = (<const uint64_t*>(block + 16 + 48 * (idx % 16) + 40))[0]
    return out if k == n else None


# ------------------------------------------------------------------ the records (fields: _ffi_reader.pxd)
@cython.freelist(64)  # many made per pass call
cdef class FunctionEntry:
    def __repr__(self):
        return f"FunctionEntry(kind={self.kind}, name={self.name!r}, gvar={self.gvar:#x}, func={self.func:#x})"


@cython.freelist(32)  # many made per pass call
cdef class BlockCalls:
    def __init__(self, size_t block, bint is_dataflow, size_t bindings, list positions not None):
        self.block, self.is_dataflow, self.bindings, self.positions = block, is_dataflow, bindings, positions

    def __repr__(self):
        return (f"BlockCalls(block={self.block:#x}, is_dataflow={self.is_dataflow}, bindings={self.bindings:#x}, "
                f"positions={self.positions})")


cdef class FlatFunction:
    def __init__(self, size_t seq, size_t blocks, list block_calls not None):
        self.seq, self.blocks, self.block_calls = seq, blocks, block_calls

    def __repr__(self):
        return f"FlatFunction(seq={self.seq:#x}, blocks={self.blocks:#x}, block_calls={self.block_calls})"


@cython.freelist(32)  # many made per pass call
cdef class CallArguments:
    def __repr__(self):
        return (f"CallArguments(binding={self.binding:#x}, args={self.args}, tuple_fields={self.tuple_fields}, "
                f"constant_fields={self.constant_fields})")


cdef inline FunctionEntry function_entry(int kind, str name, size_t gvar, size_t func):
    cdef FunctionEntry r = FunctionEntry.__new__(FunctionEntry)
    r.kind, r.name, r.gvar, r.func = kind, name, gvar, func
    return r


cdef inline BlockCalls block_calls(size_t block, bint is_dataflow, size_t bindings, list positions):
    cdef BlockCalls r = BlockCalls.__new__(BlockCalls)
    r.block, r.is_dataflow, r.bindings, r.positions = block, is_dataflow, bindings, positions
    return r


cdef inline CallArguments call_args(size_t binding, list args, tuple_fields, list constant_fields):
    cdef CallArguments r = CallArguments.__new__(CallArguments)
    r.binding, r.args, r.tuple_fields, r.constant_fields = binding, args, tuple_fields, constant_fields
    return r


def module_functions(Layout L, size_t mod):
    """The functions of the ``IRModule`` at ``mod`` as :class:`FunctionEntry` records, kind 1
    for a Relax ``Function``, 0 for a ``PrimFunc``, -1 for anything else; in the map's
    iteration order (TVM's passes visit functions in it). None when the map is not read here
    (:func:`map_entries`), a key is not a ``GlobalVar`` with a string name or a value not an
    object."""
    cdef const char* kv
    cdef const char* gv
    cdef const char* f
    cdef int32_t ft
    entries = map_entries(obj_field(<const char*>mod, L.o_mod_functions))
    if entries is None:
        return None
    out = []
    for a in entries:
        kv = <const char*><size_t>a
        if any_type(kv) != L.t_global_var:
            return None
        gv = any_obj(kv)
        name = read_string(gv + L.o_gv_name)
        if name is None:
            return None
        ft = any_type(kv + 16)
        if ft < K_OBJECT_BEGIN or any_obj(kv + 16) == NULL:
            return None
        f = any_obj(kv + 16)
        out.append(function_entry(1 if ft == L.t_function else 0 if ft == L.t_prim_func else -1, name, addr(gv),
                                  addr(f)))
    return out


cdef class Memo:
    """The reader's memo tables (``from_tvm._Reader``), held as typed references for the
    duration of one call (attribute lookups on the reader cost more than the reads)."""

    cdef dict dtypes, ints, prims, interned
    cdef AddrMap types, ops, callees, vars, leaves
    cdef object reader, builtin_alloc

    def __init__(self, reader):
        self.reader = reader
        self.types = reader.types
        self.dtypes = reader.dtypes
        self.ints = reader.ints
        self.prims = reader.prims
        self.interned = reader.interned
        self.ops = reader.ops
        self.callees = reader.callees
        self.vars = reader.vars
        self.leaves = reader.leaves
        self.builtin_alloc = reader.builtin_alloc


#: The binary PrimExprs the readers read: (TVM class name in ``tvm.ir.prim.expr``, memcore
#: node), the one list of this correspondence (``from_tvm._binary_classes`` is built from it).
BINARY_PRIM_NODES = (("Add", Add), ("Sub", Sub), ("Mul", Mul), ("FloorDiv", FloorDiv), ("FloorMod", FloorMod),
                     ("Min", Min), ("Max", Max))
cdef tuple BINARY_NODES = tuple(node for _name, node in BINARY_PRIM_NODES)


cdef object read_prim_at(Layout L, int32_t ti, const char* e, dict ints, dict prims, int depth):
    """The memcore prim of the PrimExpr ``e`` (type index ``ti``) when it is an ``IntImm``
    already interned (by value and type object), a symbolic variable already read, or a
    binary node (``BINARY_PRIM_NODES``) of such parts, built as the Python reader builds it;
    None otherwise (the Python path reads it and fills the tables)."""
    cdef const char* val
    cdef const char* a
    cdef const char* b
    cdef int k
    if ti == L.t_int_imm:
        val = e + L.o_imm_value
        if any_type(val) != K_INT:
            return None
        return ints.get(((<const int64_t*>(val + 8))[0], addr(obj_field(e, L.o_expr_ty))))
    if ti == L.t_var:
        return prims.get(addr(e))
    if depth > 64:  # deeper than any shape arithmetic: left to the Python reader
        return None
    for k in range(7):
        if ti == L.t_bin[k]:
            a = obj_field(e, L.o_bin_a)
            b = obj_field(e, L.o_bin_b)
            if a == NULL or b == NULL:
                return None
            x = read_prim_at(L, obj_type(a), a, ints, prims, depth + 1)
            if x is None:
                return None
            y = read_prim_at(L, obj_type(b), b, ints, prims, depth + 1)
            if y is None:
                return None
            return BINARY_NODES[k](x, y)
    return None


cdef object read_dims_at(Layout L, const char* arr, dict ints, dict prims):
    """The dims of an ``Array[PrimExpr]`` as memcore prims when :func:`read_prim_at` reads
    every one; None otherwise (the Python path reads it and fills the tables)."""
    cdef int64_t n, i
    cdef const char* data
    if arr == NULL or obj_type(arr) != K_ARRAY:
        return None
    n = array_size(arr)
    data = array_data(arr)
    out = [None] * n
    for i in range(n):
        r = read_prim_at(L, any_type(data + 16 * i), any_obj(data + 16 * i), ints, prims, 0)
        if r is None:
            return None
        out[i] = r
    return tuple(out)


def read_dims(Layout L, size_t arr, dict ints, dict prims):
    """:func:`read_dims_at` for an array given by address (``__chandle__()``)."""
    return read_dims_at(L, <const char*>arr, ints, prims)


cdef object read_type(Layout L, const char* t, Memo M):
    """A type already read (by address), ``R.Object``, or a tensor or tuple type of readable
    parts; None otherwise."""
    cdef const char* shape
    cdef const char* dt
    cdef PyObject* known
    if t == NULL:
        return None
    known = M.types.get_obj(addr(t))
    if known != NULL:
        return <object>known
    if obj_type(t) == L.t_tuple_type:
        return read_tuple_type(L, t, M)
    if obj_type(t) == L.t_any_type:  # a storage's or a packed call's R.Object: a new object per binding
        return OBJECT_TYPE
    if obj_type(t) != L.t_tensor_type or obj_field(t, L.o_tt_vdevice) != NULL:
        return None
    dt = obj_field(t, L.o_tt_dtype)
    if dt == NULL:
        return None
    dtype = M.dtypes.get(addr(dt))
    if dtype is None:
        return None
    shape = obj_field(t, L.o_tt_shape)
    if shape == NULL:
        dims = None
    elif obj_type(shape) == L.t_shape_expr:
        dims = read_dims_at(L, obj_field(shape, L.o_shape_values), M.ints, M.prims)
        if dims is None:
            return None
    else:
        return None
    key = (dims, dtype, (<const int32_t*>(t + L.o_tt_ndim))[0], None)
    r = M.interned.get(key)
    if r is None:
        r = TensorType(*key)
        M.interned[key] = r
    M.types.put_obj(addr(t), r)
    return r


cdef object read_types_at(Layout L, const char* arr, Memo M):
    """The types of an ``Array[Type]`` as a tuple, each read by :func:`read_type`; None when
    one is not read here."""
    cdef const char* data
    cdef int64_t n, i
    if arr == NULL or obj_type(arr) != K_ARRAY:
        return None
    n = array_size(arr)
    if n == 0:
        return ()
    data = array_data(arr)
    out = [None] * n
    for i in range(n):
        if any_type(data + 16 * i) < K_OBJECT_BEGIN:
            return None
        t = read_type(L, any_obj(data + 16 * i), M)
        if t is None:
            return None
        out[i] = t
    return tuple(out)


cdef object read_tuple_type(Layout L, const char* t, Memo M):
    """A tuple type of readable field types (interned by its fields), or None."""
    fields = read_types_at(L, obj_field(t, L.o_tuple_fields), M)
    if fields is None:
        return None
    key = ("tuple-type", fields)
    r = M.interned.get(key)
    if r is None:
        r = M.interned[key] = TupleType(key[1])
    M.types.put_obj(addr(t), r)
    return r


cdef const char* checked_array(obj, str caller) except NULL:
    """The address of ``obj``, an ``ffi.Array`` (TypeError naming ``caller`` otherwise)."""
    cdef const char* arr = <const char*><size_t>obj.__chandle__()
    if arr == NULL or obj_type(arr) != K_ARRAY:
        raise TypeError(f"{caller} expects an ffi.Array")
    return arr


cdef object define_var(Layout L, Memo M, const char* v, int32_t vt):
    """The memcore variable for the TVM variable at ``v`` (type index ``vt``), registered by
    address; None when its name or type is not read here."""
    ty = read_type(L, obj_field(v, L.o_expr_ty), M)
    name = read_string(v + L.o_var_name)
    if ty is None or name is None:
        return None
    var = var_node(vt == L.t_dfvar, name, ty)
    M.vars.put_obj(addr(v), var)
    return var


def read_params(Layout L, reader, params, slow, list out):
    """Append the memcore variables of the ``Array[Var]`` ``params`` (a function's
    parameters) to ``out``, recorded as the Python reader records them; ``slow(tvm_var)``
    reads any variable whose type this module cannot read."""
    cdef const char* arr = checked_array(params, "read_params")
    cdef const char* data = array_data(arr)
    cdef const char* v
    cdef int64_t i
    cdef int32_t vt
    cdef Memo M = Memo(reader)
    record = reader.record
    for i in range(array_size(arr)):
        vt = any_type(data + 16 * i)
        v = any_obj(data + 16 * i)
        var = define_var(L, M, v, vt) if vt == L.t_var or vt == L.t_dfvar else None
        if var is None:
            out.append(slow(reader.get(params, i)))
            continue
        if record is not None:
            map_put(record, var, addr(v), vt)
        out.append(var)


cdef object read_arg(Layout L, int32_t ti, const char* e, Memo M):
    """A call argument: a variable, a shape, a dtype, a string or an integer; None otherwise.
    A leaf (not a variable) read once is found by its address the next time (TVM shares leaf
    objects between calls: memcore shares their nodes alike)."""
    cdef PyObject* known
    if ti == L.t_var or ti == L.t_dfvar:
        known = M.vars.get_obj(addr(e))
        return <object>known if known != NULL else None
    known = M.leaves.get_obj(addr(e))
    if known != NULL:
        return <object>known
    r = read_leaf(L, ti, e, M)
    if r is not None:
        M.leaves.put_obj(addr(e), r)
    return r


cdef object read_leaf(Layout L, int32_t ti, const char* e, Memo M):
    """A shape, a dtype, a string or an integer argument; None otherwise."""
    cdef const char* val
    if ti == L.t_shape_expr:
        dims = read_dims_at(L, obj_field(e, L.o_shape_values), M.ints, M.prims)
        if dims is None:
            return None
        key = ("shape", dims)
        st = M.interned.get(key)
        if st is None:
            st = M.interned[key] = new_shape_type(dims)
        return shape_expr_node(dims, st)
    if ti == L.t_generic_const:
        val = e + L.o_const_value
        if any_type(val) != K_DATATYPE:
            return None
        return M.interned.get(("dtype-imm", (<const uint32_t*>(val + 8))[0]))
    if ti == L.t_string_imm:  # leaves are immutable: one node per string / integer
        s = read_string(e + L.o_str_value)
        if s is None:
            return None
        key = ("string-imm", s)
        r = M.interned.get(key)
        if r is None:
            r = M.interned[key] = StringImm(s)
        return r
    if ti == L.t_int_imm:
        val = e + L.o_imm_value
        if any_type(val) != K_INT:
            return None
        r = M.ints.get(((<const int64_t*>(val + 8))[0], addr(obj_field(e, L.o_expr_ty))))
        if r is None:
            return None
        key = ("prim-value", r)
        pv = M.interned.get(key)
        if pv is None:
            pv = M.interned[key] = PrimValue(r)
        return pv
    return None


cdef object read_call(Layout L, const char* c, Memo M):
    """A ``Call`` read here in full, or None."""
    cdef const char* arr
    cdef const char* data
    cdef int64_t n, i
    cdef PyObject* known
    if obj_field(c, L.o_call_attrs) != NULL:
        return None
    known = M.ops.get_obj(addr(obj_field(c, L.o_call_op)))
    if known == NULL:
        known = M.callees.get_obj(addr(obj_field(c, L.o_call_op)))
        if known == NULL:
            return None
    callee = <object>known
    arr = obj_field(c, L.o_call_args)
    if arr == NULL or obj_type(arr) != K_ARRAY:
        return None
    n = array_size(arr)
    data = array_data(arr)
    args = [None] * n
    for i in range(n):
        a = read_arg(L, any_type(data + 16 * i), any_obj(data + 16 * i), M)
        if a is None:
            return None
        args[i] = a
    ty_args = read_types_at(L, obj_field(c, L.o_call_ty_args), M)
    if ty_args is None:
        return None
    ty = read_type(L, obj_field(c, L.o_expr_ty), M)
    if ty is None:
        return None
    args = tuple(args)
    if callee is M.builtin_alloc and not ty_args:  # the type its shape and dtype give (_Reader)
        if n < 2:
            return None
        shape, dtype = args[0], args[1]
        if type(shape) is not ShapeExpr or type(dtype) is not DataTypeImm:
            return None
        key = (shape.values, dtype.value, len(shape.values), None)
        t = M.interned.get(key)
        if t is None:
            return None
        ty_args = (t,)
    return call_node(callee, args, EMPTY_ATTRS, ty_args, ty)  # args untracked with it


def register_dtype_imm(Layout L, reader, size_t const_addr, node):
    """Remember the memcore ``DataTypeImm`` read for the GenericConst at ``const_addr`` under
    its packed DLDataType, so that the next dtype constant of that dtype is read here."""
    cdef const char* val = <const char*>const_addr + L.o_const_value
    if any_type(val) == K_DATATYPE:
        reader.interned[("dtype-imm", (<const uint32_t*>(val + 8))[0])] = node


cdef object read_binding_any(Layout L, Memo M, const char* any, record):
    """The memcore binding of the ``Binding`` in the ``TVMFFIAny`` at ``any``, read here and
    recorded (binding, var and value -> TVM object) when ``record`` is not None; None when it
    is not read here."""
    cdef const char* b = any_obj(any)
    cdef const char* v
    cdef const char* val
    cdef int32_t vt, ct
    cdef PyObject* alias
    if any_type(any) != L.t_binding:
        return None
    v = obj_field(b, L.o_b_var)
    val = obj_field(b, L.o_b_value)
    vt = obj_type(v)
    if vt != L.t_var and vt != L.t_dfvar:
        return None
    value = None
    ct = obj_type(val)
    if ct == L.t_call:
        value = read_call(L, val, M)
    elif ct == L.t_var or ct == L.t_dfvar:
        alias = M.vars.get_obj(addr(val))  # an alias of a variable defined before
        value = <object>alias if alias != NULL else None
    if value is None:
        return None
    var = define_var(L, M, v, vt)
    if var is None:
        return None
    if ct == L.t_call and value.op is M.builtin_alloc and var.ty is not value.ty_args[0] \
            and array_size(obj_field(val, L.o_call_ty_args)) == 0:
        implied = builtin_alloc_implied_type(value.ty_args[0], var.ty)[0]  # the annotation's, as parsed
        value = call_node(value.op, value.args, EMPTY_ATTRS, (implied,), value.ty)
    nb = binding_node(var, value)
    if record is not None:
        map_put(record, nb, addr(b), L.t_binding)
        map_put(record, value, addr(val), ct)
        map_put(record, var, addr(v), vt)
    return nb


def read_bindings(Layout L, reader, bindings, slow, list out):
    """Append the memcore bindings of the ``Array[Binding]`` ``bindings`` to ``out``.

    Bindings read here are recorded as the Python reader records them (binding, var and
    value -> TVM object) when ``reader.record`` is not None; ``slow(tvm_binding)`` reads
    any other and returns the memcore binding."""
    cdef const char* arr = checked_array(bindings, "read_bindings")
    cdef const char* data = array_data(arr)
    cdef int64_t i
    cdef Memo M = Memo(reader)
    record = reader.record
    get = reader.get
    for i in range(array_size(arr)):
        nb = read_binding_any(L, M, data + 16 * i, record)
        if nb is None:
            nb = slow(get(bindings, i))
        out.append(nb)


def read_binding_at(Layout L, reader, size_t bindings, Py_ssize_t i):
    """The memcore binding of element ``i`` of the ``Array[Binding]`` at ``bindings`` as
    :func:`read_bindings` reads it, or None when it is not read here (the caller reads it
    through the Python reader)."""
    cdef const char* arr = <const char*>bindings
    if arr == NULL or obj_type(arr) != K_ARRAY or not 0 <= i < array_size(arr):
        raise ValueError("read_binding_at: not an ffi.Array, or the index is out of range")
    return read_binding_any(L, Memo(reader), array_data(arr) + 16 * i, reader.record)


# ------------------------------------------------------------------------ flat functions
cdef inline int node_class(Layout L, int32_t t) noexcept:
    """The class of a TVM node of type index ``t`` for the flatness rule (``_flat_rule.pxd``)."""
    if t == L.t_call:
        return FLAT_CALL
    if t == L.t_tuple:
        return FLAT_TUPLE
    if t == L.t_tuple_get_item:
        return FLAT_GET_ITEM
    if t == L.t_if or t == L.t_seq or t == L.t_function:
        return FLAT_SCOPE
    return FLAT_LEAF


cdef bint flat_node(Layout L, const char* v, int32_t t, int holder) noexcept:
    """Whether the TVM expression at ``v`` (of type index ``t``) held as ``holder`` is flat:
    :func:`flat_step` asked of it and, as it says, of its children (a call's arguments, a
    tuple's fields, a get-item's tuple). What is not read here is not flat."""
    cdef int step = flat_step(holder, node_class(L, t))
    cdef const char* arr
    cdef const char* data
    cdef int64_t i
    if step <= 0:
        return step == STEP_FLAT
    if t == L.t_tuple_get_item:
        arr = obj_field(v, L.o_tgi_tuple)
        return arr != NULL and flat_node(L, arr, obj_type(arr), step)
    arr = obj_field(v, L.o_call_args if t == L.t_call else L.o_tuple_expr_fields)
    if arr == NULL or obj_type(arr) != K_ARRAY:
        return False
    data = array_data(arr)
    for i in range(array_size(arr)):
        if not flat_node(L, any_obj(data + 16 * i), any_type(data + 16 * i), step):
            return False
    return True


cdef object call_positions(Layout L, const char* arr, size_t op):
    """The positions of the bindings of the ``Array[Binding]`` at ``arr`` whose value is a
    call of the ``Op`` at ``op``, when every binding value is flat (:func:`flat_node`, the
    rule of ``memcore_py/analysis/_flat_rule.pxd``). None when one is not, or when an element is not a ``VarBinding`` / ``MatchCast``."""
    cdef const char* data
    cdef const char* b
    cdef const char* v
    cdef int32_t bt
    cdef int64_t i
    cdef list out = []
    if arr == NULL or obj_type(arr) != K_ARRAY:
        return None
    data = array_data(arr)
    for i in range(array_size(arr)):
        bt = any_type(data + 16 * i)
        b = any_obj(data + 16 * i)
        if bt == L.t_binding:
            v = obj_field(b, L.o_b_value)
        elif bt == L.t_match_cast:
            v = obj_field(b, L.o_mc_value)
        else:
            return None
        if v == NULL or not flat_node(L, v, obj_type(v), HOLD_BINDING):
            return None
        if obj_type(v) == L.t_call and addr(obj_field(v, L.o_call_op)) == op:
            out.append(i)
    return out


def flat_function_calls(Layout L, size_t func, size_t op):
    """For the Relax ``Function`` at ``func``, when it is flat (is_flat's rule, see
    :func:`call_positions`): a :class:`FlatFunction` of its body with a :class:`BlockCalls`
    (the positions of the calls of ``op``) per block, in order. None when it is not flat or
    holds what is not read here."""
    cdef const char* f = <const char*>func
    cdef const char* seq
    cdef const char* blocks
    cdef const char* data
    cdef const char* blk
    cdef const char* arr
    cdef int32_t bt
    cdef int64_t i
    cdef FlatFunction r
    if f == NULL or obj_type(f) != L.t_function:
        return None
    seq = obj_field(f, L.o_func_body)
    if seq == NULL or obj_type(seq) != L.t_seq or not flat_result(L, seq):
        return None
    blocks = obj_field(seq, L.o_seq_blocks)
    if blocks == NULL or obj_type(blocks) != K_ARRAY:
        return None
    data = array_data(blocks)
    out = []
    for i in range(array_size(blocks)):
        bt = any_type(data + 16 * i)
        blk = any_obj(data + 16 * i)
        if bt != L.t_block and bt != L.t_dfblock:
            return None
        arr = obj_field(blk, L.o_block_bindings)
        positions = call_positions(L, arr, op)
        if positions is None:
            return None
        out.append(block_calls(addr(blk), bt == L.t_dfblock, addr(arr), positions))
    r = FlatFunction.__new__(FlatFunction)
    r.seq, r.blocks, r.block_calls = addr(seq), addr(blocks), out
    return r


cdef bint flat_result(Layout L, const char* s) noexcept:
    """Whether the result of the ``SeqExpr`` at ``s`` is flat (:func:`flat_node`)."""
    cdef const char* body
    if s == NULL or obj_type(s) != L.t_seq:
        return False
    body = obj_field(s, L.o_seq_body)
    return body != NULL and flat_node(L, body, obj_type(body), HOLD_RESULT)


cdef object dtype_name(int64_t packed):
    """memcore's name of a dtype :func:`element_bytes` sizes (``"float32"``, ``"bool"``)."""
    cdef int64_t code = packed & 0xFF, bits = (packed >> 8) & 0xFF
    if code == DL_BOOL:
        return "bool"
    return ("int", "uint", "float", "", "bfloat")[code] + str(bits)


cdef int64_t exact_alloc(Layout L, const char* var, const char* call, int64_t* dtype, const char** dims,
                         const char** ty_dims) noexcept:
    """The rank of the allocation ``var = R.builtin.alloc_tensor(shape, dtype, device, scope)``
    (``call`` its value, the op checked by the caller) when it is exactly typed, the one form
    the compiled extractions size: the four arguments a ``ShapeExpr``, a dtype constant, an
    integer ``IntImm`` and a ``StringImm``; ``var`` a tensor of that dtype without a vdevice
    whose shape has the same dims, each the same constant or the same symbolic expression (the
    same object, or one of the same structure over the same variables: an annotation written
    again; a negative constant or another expression is not exact). Sets ``dtype`` (packed), ``dims``
    (the shape argument's ``Array``) and ``ty_dims`` (the type's). -1 otherwise."""
    cdef const char* ty
    cdef const char* pt
    cdef const char* tshape
    cdef const char* args
    cdef const char* a
    cdef const char* v
    cdef const char* e
    cdef const char* t
    cdef int64_t n, i, d
    if var == NULL or call == NULL or obj_type(call) != L.t_call:
        return -1
    args = obj_field(call, L.o_call_args)
    if args == NULL or obj_type(args) != K_ARRAY or array_size(args) != 4:
        return -1
    a = array_data(args)
    if (any_type(a) != L.t_shape_expr or any_type(a + 16) != L.t_generic_const or any_type(a + 32) != L.t_int_imm
            or any_type(a + 48) != L.t_string_imm):
        return -1
    v = any_obj(a + 16) + L.o_const_value
    if any_type(v) != K_DATATYPE:
        return -1
    v = any_obj(a + 32) + L.o_imm_value
    if any_type(v) != K_INT:
        return -1
    dtype[0] = packed_dtype(any_obj(a + 16) + L.o_const_value + 8)
    ty = obj_field(var, L.o_expr_ty)
    if ty == NULL or obj_type(ty) != L.t_tensor_type or obj_field(ty, L.o_tt_vdevice) != NULL:
        return -1
    pt = obj_field(ty, L.o_tt_dtype)
    tshape = obj_field(ty, L.o_tt_shape)
    if pt == NULL or obj_type(pt) != L.t_prim_type or packed_dtype(pt + L.o_pt_dtype) != dtype[0]:
        return -1
    if tshape == NULL or obj_type(tshape) != L.t_shape_expr:
        return -1
    dims[0] = obj_field(any_obj(a), L.o_shape_values)
    ty_dims[0] = obj_field(tshape, L.o_shape_values)
    if dims[0] == NULL or obj_type(dims[0]) != K_ARRAY or ty_dims[0] == NULL or obj_type(ty_dims[0]) != K_ARRAY:
        return -1
    n = array_size(dims[0])
    if array_size(ty_dims[0]) != n or (<const int32_t*>(ty + L.o_tt_ndim))[0] != n:
        return -1
    for i in range(n):
        e = array_data(dims[0]) + 16 * i
        t = array_data(ty_dims[0]) + 16 * i
        d = const_dim(L, e)
        if d >= 0:
            if d != const_dim(L, t):
                return -1
        elif any_type(e) < K_OBJECT_BEGIN or any_type(e) == L.t_int_imm:
            return -1
        elif any_obj(e) != any_obj(t) and not same_dim(L, any_obj(e), any_obj(t)):
            return -1
    return n


cdef bint same_dim(Layout L, const char* a, const char* b) noexcept:
    """Whether the PrimExprs ``a`` and ``b`` are structurally equal dims of the same variables
    (:func:`~memcore_py.tvm._ffi_reader.intern_dim`'s keys; False for what it does not key)."""
    cdef vector[int64_t] ka, kb
    return intern_dim(L, a, ka, 0) and intern_dim(L, b, kb, 0) and ka == kb


def call_arguments(Layout L, size_t bindings, list positions):
    """The arguments of the calls bound at ``positions`` of the ``Array[Binding]`` at
    ``bindings`` (each a ``VarBinding`` of a call): a :class:`CallArguments` per position,
    whose ``tuple_fields`` are the addresses of the fields of the second argument when it is a
    ``Tuple`` (else None) and ``constant_fields`` the addresses of those that are tensor
    constants. None when a position is out of range or its
    binding is not a ``VarBinding`` of a call. What the arguments mean is the caller's pass's
    business; this only reads them (AttachAttrLayoutFreeBuffers' extraction,
    :mod:`memcore_py.tvm.attach_extract`)."""
    cdef const char* arr = <const char*>bindings
    cdef const char* b
    cdef const char* v
    cdef const char* args
    cdef const char* tup
    cdef const char* f
    cdef int64_t n, p
    if arr == NULL or obj_type(arr) != K_ARRAY:
        return None
    n = array_size(arr)
    out = []
    for p in positions:
        if p < 0 or p >= n or any_type(array_data(arr) + 16 * p) != L.t_binding:
            return None
        b = any_obj(array_data(arr) + 16 * p)
        v = obj_field(b, L.o_b_value)
        if v == NULL or obj_type(v) != L.t_call:
            return None
        args = obj_field(v, L.o_call_args)
        arg_addrs = array_objects(args)
        if arg_addrs is None:
            return None
        field_addrs = None
        constants = []
        if array_size(args) >= 2:
            tup = any_obj(array_data(args) + 16)
            if obj_type(tup) == L.t_tuple:
                field_addrs = array_objects(obj_field(tup, L.o_tuple_expr_fields))
                if field_addrs is None:
                    return None
                for a in field_addrs:
                    f = <const char*><size_t>a
                    if obj_type(f) == L.t_generic_const and any_type(f + L.o_const_value) != K_DATATYPE:
                        constants.append(a)
        out.append(call_args(addr(b), arg_addrs, field_addrs, constants))
    return out


def function_params(Layout L, size_t func):
    """The addresses of the parameters of the Relax ``Function`` at ``func``, or None."""
    cdef const char* f = <const char*>func
    if f == NULL or obj_type(f) != L.t_function:
        return None
    return array_objects(obj_field(f, L.o_func_params))


cdef object array_objects(const char* arr):
    """The addresses of the elements of the ``ffi.Array`` at ``arr``, or None when it is not
    an array or an element is not an object."""
    cdef int64_t i
    if arr == NULL or obj_type(arr) != K_ARRAY:
        return None
    out = []
    for i in range(array_size(arr)):
        if any_type(array_data(arr) + 16 * i) < K_OBJECT_BEGIN:
            return None
        out.append(addr(any_obj(array_data(arr) + 16 * i)))
    return out


cdef int prim_var_names(Layout L, const char* e, list names, set seen, int depth) except -2:
    """Append to ``names`` the name of each variable of the PrimExpr at ``e`` not in ``seen``
    (addresses), operands left to right; -1 when a node is not an ``IntImm``, a variable or a
    binary node (``BINARY_PRIM_NODES``)."""
    cdef int32_t t
    cdef int k
    if e == NULL or depth > 64:
        return -1
    t = obj_type(e)
    if t == L.t_int_imm:
        return 0
    if t == L.t_var:
        if addr(e) not in seen:
            seen.add(addr(e))
            name = read_string(e + L.o_var_name)
            if name is None:
                return -1
            names.append(name)
        return 0
    for k in range(7):
        if t == L.t_bin[k]:
            if prim_var_names(L, obj_field(e, L.o_bin_a), names, seen, depth + 1) < 0:
                return -1
            return prim_var_names(L, obj_field(e, L.o_bin_b), names, seen, depth + 1)
    return -1


cdef int array_var_names(Layout L, const char* arr, list names, set seen, int depth, bint types) except -2:
    """:func:`type_var_names` (``types``) or :func:`prim_var_names` of each element of the
    ``ffi.Array`` at ``arr``; -1 when an element declines or is not an object."""
    cdef int64_t i
    cdef const char* data
    if arr == NULL or obj_type(arr) != K_ARRAY:
        return -1
    data = array_data(arr)
    for i in range(array_size(arr)):
        if any_type(data + 16 * i) < K_OBJECT_BEGIN:
            return -1
        if types:
            if type_var_names(L, any_obj(data + 16 * i), names, seen, depth + 1) < 0:
                return -1
        elif prim_var_names(L, any_obj(data + 16 * i), names, seen, 0) < 0:
            return -1
    return 0


cdef int type_var_names(Layout L, const char* t, list names, set seen, int depth) except -2:
    """Append the names of the TIR variables of the Relax type at ``t`` (TVM's
    ``TIRVarsInType`` visit order, each variable object once); -1 for a type or a dim this
    reader does not read (a shape given by a variable, a nested function type with a
    derivation, ...)."""
    cdef int32_t k
    cdef const char* shape
    if t == NULL or depth > 64:
        return -1
    k = obj_type(t)
    if k == L.t_any_type or k == L.t_prim_type:
        return 0
    if k == L.t_tensor_type:
        shape = obj_field(t, L.o_tt_shape)
        if shape == NULL:
            return 0
        if obj_type(shape) != L.t_shape_expr:
            return -1
        return array_var_names(L, obj_field(shape, L.o_shape_values), names, seen, depth, False)
    if k == L.t_shape_type:
        if obj_field(t, L.o_st_values) == NULL:
            return 0
        return array_var_names(L, obj_field(t, L.o_st_values), names, seen, depth, False)
    if k == L.t_tuple_type:
        return array_var_names(L, obj_field(t, L.o_tuple_fields), names, seen, depth, True)
    if k == L.t_func_type:
        if array_var_names(L, obj_field(t, L.o_ft_params), names, seen, depth, True) < 0:
            return -1
        return type_var_names(L, obj_field(t, L.o_ft_ret), names, seen, depth + 1)
    return -1


def signature_var_names(Layout L, size_t func):
    """The names of the TIR variables of the type of the Relax ``Function`` at ``func`` (its
    parameters' and return type), as TVM's ``TIRVarsInType`` lists them; None when the
    function has no ``FuncType`` or a part of it is not read here (the caller then asks TVM)."""
    cdef const char* f = <const char*>func
    cdef const char* ty
    cdef list names = []
    if f == NULL or obj_type(f) != L.t_function:
        return None
    ty = obj_field(f, L.o_expr_ty)
    if ty == NULL or obj_type(ty) != L.t_func_type:
        return None
    if type_var_names(L, ty, names, set(), 0) < 0:
        return None
    return names
