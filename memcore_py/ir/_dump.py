"""A plain, TVMScript-like text dump of IR objects for diagnostics.

Used by :func:`~memcore_py.ir.assert_structural_equal` and by error messages when the real
printer (:mod:`memcore_py.ir.printer`) is unavailable or does not handle the object (a lone
binding, a type). The output is for people only: it is not meant to be parsed.
"""
from __future__ import annotations

from .expr import (
    Binding,
    BindingBlock,
    Call,
    Constant,
    DataflowBlock,
    DataTypeImm,
    ExternFunc,
    Function,
    GlobalVar,
    If,
    MatchCast,
    PrimFunc,
    PrimValue,
    SeqExpr,
    ShapeExpr,
    StringImm,
    Tuple,
    TupleGetItem,
    Var,
)
from .module import IRModule
from .op import Op
from .prim import BinaryOp, FloatImm, IntImm, PrimVar
from .types import FuncType, ObjectType, PrimType, ShapeType, TensorType, TupleType

__all__ = ["dump", "dump_prim", "dump_type", "dump_expr"]


def dump_prim(e) -> str:
    if isinstance(e, IntImm):
        return str(e.value) if e.dtype == "int64" else f"T.{e.dtype}({e.value})"
    if isinstance(e, FloatImm):
        return f"T.{e.dtype}({e.value!r})"
    if isinstance(e, PrimVar):
        return e.name
    if isinstance(e, BinaryOp):
        if e.infix:
            return f"({dump_prim(e.a)} {e.symbol} {dump_prim(e.b)})"
        return f"{e.symbol}({dump_prim(e.a)}, {dump_prim(e.b)})"
    return repr(e)


def _shape(values):
    return "(" + ", ".join(dump_prim(v) for v in values) + ("," if len(values) == 1 else "") + ")"


def dump_type(t) -> str:
    if t is None:
        return "?"
    if isinstance(t, TensorType):
        parts = []
        if t.shape is not None:
            parts.append(_shape(t.shape))
        elif t.ndim != -1:
            parts.append(f"ndim={t.ndim}")
        if t.dtype:
            parts.append(f'dtype="{t.dtype}"')
        if t.vdevice:
            parts.append(f'vdevice="{t.vdevice}"')
        return f"R.Tensor({', '.join(parts)})"
    if isinstance(t, TupleType):
        return f"R.Tuple({', '.join(dump_type(f) for f in t.fields)})"
    if isinstance(t, ShapeType):
        if t.values is not None:
            return f"R.Shape([{', '.join(dump_prim(v) for v in t.values)}])"
        return f"R.Shape(ndim={t.ndim})"
    if isinstance(t, PrimType):
        return f'R.Prim("{t.dtype}")' if t.value is None else f"R.Prim(value={dump_prim(t.value)})"
    if isinstance(t, FuncType):
        params = "..." if t.params is None else ", ".join(dump_type(p) for p in t.params)
        return f"R.Callable(({params}), {dump_type(t.ret)}, {t.purity})"
    if isinstance(t, ObjectType):
        return "R.Object"
    return repr(t)


def _attr(v) -> str:
    if isinstance(v, (IntImm, FloatImm, PrimVar, BinaryOp)):
        return dump_prim(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_attr(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k!r}: {_attr(x)}" for k, x in v.items()) + "}"
    return repr(v)


def dump_expr(e) -> str:
    if isinstance(e, (Var, GlobalVar)):
        return e.name if isinstance(e, Var) else f"cls.{e.name}"
    if isinstance(e, Call):
        op = e.op
        if isinstance(op, Op):
            head = op.script_name
        elif isinstance(op, ExternFunc):
            head = f'R.call_packed("{op.global_symbol}", '
        else:
            head = dump_expr(op)
        args = [dump_expr(a) for a in e.args]
        args += [f"{k}={_attr(v)}" for k, v in e.attrs.items()]
        if e.ty_args:
            args.append("ty_args=(" + ", ".join(dump_type(t) for t in e.ty_args) + ",)")
        if isinstance(op, ExternFunc):
            return head + ", ".join(args) + ")"
        return f"{head}({', '.join(args)})"
    if isinstance(e, Tuple):
        inner = ", ".join(dump_expr(f) for f in e.fields)
        return f"({inner},)" if len(e.fields) == 1 else f"({inner})"
    if isinstance(e, TupleGetItem):
        return f"{dump_expr(e.tuple_value)}[{e.index}]"
    if isinstance(e, ShapeExpr):
        return f"R.shape([{', '.join(dump_prim(v) for v in e.values)}])"
    if isinstance(e, PrimValue):
        return f"R.prim_value({dump_prim(e.value)})"
    if isinstance(e, StringImm):
        return f'R.str("{e.value}")'
    if isinstance(e, DataTypeImm):
        return f'R.dtype("{e.value}")'
    if isinstance(e, Constant):
        if e.data is None:
            return f"metadata[{e.meta[0]!r}][{e.meta[1]}]"
        return f"R.const({e.data.tolist()!r}, \"{e.data.dtype}\")"
    if isinstance(e, ExternFunc):
        return f'R.ExternFunc("{e.global_symbol}")'
    return type(e).__name__


def _binding_lines(b: Binding, indent: str, out: list):
    head = f"{indent}{b.var.name}: {dump_type(b.var.ty)} = "
    v = b.value
    if isinstance(b, MatchCast):
        out.append(f"{head}R.match_cast({dump_expr(v)}, {dump_type(b.ty)})")
    elif isinstance(v, If):
        out.append(f"{indent}if {dump_expr(v.cond)}:")
        _seq_lines(v.true_branch, indent + "    ", out, b.var.name)
        out.append(f"{indent}else:")
        _seq_lines(v.false_branch, indent + "    ", out, b.var.name)
    else:
        out.append(head + dump_expr(v))


def _block_lines(block: BindingBlock, indent: str, out: list):
    if isinstance(block, DataflowBlock):
        out.append(f"{indent}with R.dataflow():")
        inner = indent + "    "
        for b in block.bindings:
            _binding_lines(b, inner, out)
        outs = [b.var.name for b in block.bindings if type(b.var) is Var]
        out.append(f"{inner}R.output({', '.join(outs)})")
    else:
        for b in block.bindings:
            _binding_lines(b, indent, out)


def _seq_lines(seq: SeqExpr, indent: str, out: list, result_name=None):
    for block in seq.blocks:
        _block_lines(block, indent, out)
    if result_name is None:
        out.append(f"{indent}return {dump_expr(seq.body)}")
    else:
        out.append(f"{indent}{result_name} = {dump_expr(seq.body)}")


def _function_lines(name: str, f, indent: str, out: list):
    if isinstance(f, PrimFunc):
        if f.text:
            out.extend(indent + line for line in f.text.splitlines())
        else:
            params = ", ".join(
                f"{p.name}: T.Buffer({_shape(p.shape)}, \"{p.dtype}\")" if p.is_buffer else f"{p.name}: T.{p.dtype}"
                for p in f.params
            )
            out.append(f"{indent}@T.prim_func(private={f.private})")
            out.append(f"{indent}def {name}({params}): ...")
        return
    deco = "@R.function" if f.is_pure else "@R.function(pure=False)"
    out.append(indent + deco)
    params = ", ".join(f"{p.name}: {dump_type(p.ty)}" for p in f.params)
    ret = f.ret_ty if f.ret_ty is not None else f.body.ty
    out.append(f"{indent}def {name}({params}) -> {dump_type(ret)}:")
    inner = indent + "    "
    if f.attrs:
        out.append(f"{inner}R.func_attr({_attr(f.attrs)})")
    _seq_lines(f.body, inner, out)


def dump(obj) -> str:
    """Text of a module, function, block, binding, expression, type or PrimExpr."""
    out: list[str] = []
    if isinstance(obj, IRModule):
        out.append("@I.ir_module")
        out.append("class Module:")
        for gv, f in obj.functions.items():
            _function_lines(gv.name, f, "    ", out)
            out.append("")
    elif isinstance(obj, (Function, PrimFunc)):
        _function_lines("main", obj, "", out)
    elif isinstance(obj, BindingBlock):
        _block_lines(obj, "", out)
    elif isinstance(obj, Binding):
        _binding_lines(obj, "", out)
    elif isinstance(obj, SeqExpr):
        _seq_lines(obj, "", out)
    elif isinstance(obj, (TensorType, TupleType, ShapeType, PrimType, FuncType, ObjectType)):
        out.append(dump_type(obj))
    elif isinstance(obj, (IntImm, FloatImm, PrimVar, BinaryOp)):
        out.append(dump_prim(obj))
    else:
        out.append(dump_expr(obj))
    return "\n".join(out)
