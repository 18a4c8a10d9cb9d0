"""Lazy access to Apache TVM: the one place ``memcore_py.tvm`` imports it.

TVM is an optional dependency (the ``oracle`` extra). Nothing imports it at package import;
:func:`tvm_api` imports it on first use and resolves, once, every class and FFI constructor
the converters use, so the hot loops read attributes of one namespace object instead of
walking ``tvm.relax.expr...`` per node.
"""
from __future__ import annotations

from types import SimpleNamespace

from ..errors import IRError, PassError, PlanningError, WellFormedError

__all__ = ["tvm_api", "TVMConversionError"]


class TVMConversionError(IRError):
    """A TVM object memcore does not model (a node type, an op, an attribute), or a memcore
    node TVM cannot hold; the message names the object and where it was found."""


_API = None


def _register_errors():
    """Register memcore's errors with tvm_ffi, so that one raised inside a native pass
    (a ``tvm.transform.Pass`` calling memcore) reaches the caller of the pass as the same
    class with the same message, instead of TVM's ``RuntimeError``. tvm_ffi maps errors by
    class name; none of these names is one of TVM's. (``ParseError`` is left out: it is
    made from a position as well as a message, and no pass parses text.)"""
    import tvm_ffi
    from memcore._errors import InvalidArrayError, MemcoreError, PlanError

    for cls in (MemcoreError, IRError, WellFormedError, PassError, PlanningError, TVMConversionError,
                InvalidArrayError, PlanError):
        tvm_ffi.register_error(cls)


def tvm_api() -> SimpleNamespace:
    """The TVM classes and FFI constructors the bridge uses (imported on first call).

    Raises
    ------
    ImportError
        When Apache TVM is not installed, saying how to install it.
    """
    global _API
    if _API is not None:
        return _API
    try:
        import tvm
        import tvm.relax  # noqa: F401  (registers the Relax node classes)
        from tvm import ir as tir_ir
        from tvm.ir import _ffi_api as ir_ffi
        from tvm.ir.prim import expr as prim_expr
        from tvm.relax import _ffi_api as rx_ffi
        from tvm.relax import expr as rx_expr
        from tvm.relax import type as rx_type
        from tvm.relax.global_info import VDevice
        from tvm.relax.script.builder import ir as script_ops
        from tvm_ffi import _ffi_api as ffi
        from tvm_ffi import container
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "memcore_py.tvm needs Apache TVM: pip install 'memcore[oracle]' (the supported version: "
            "memcore_py.tvm.compat.SUPPORTED_TVM)"
        ) from exc
    import tvm.ir.prim  # noqa: F401

    prim_ffi = tvm.ir.prim._ffi_api if hasattr(tvm.ir.prim, "_ffi_api") else None
    _register_errors()
    _API = SimpleNamespace(
        tvm=tvm,
        ir=tir_ir,
        ir_ffi=ir_ffi,
        rx_ffi=rx_ffi,
        prim_ffi=prim_ffi,
        prim=prim_expr,
        ffi=ffi,
        script_ops=script_ops,
        Array=container.Array,
        Map=container.Map,
        # ir classes
        Var=tir_ir.Var,
        GlobalVar=tir_ir.GlobalVar,
        Call=tir_ir.Call,
        Op=tir_ir.Op,
        Tuple=tir_ir.Tuple,
        TupleGetItem=tir_ir.TupleGetItem,
        StringImm=tir_ir.StringImm,
        GenericConst=tir_ir.GenericConst,
        IntImm=prim_expr.IntImm,
        FloatImm=prim_expr.FloatImm,
        Type=tir_ir.Type,
        PrimType=tir_ir.PrimType,
        TupleType=tir_ir.TupleType,
        StringType=tir_ir.StringType,
        DictAttrs=tir_ir.DictAttrs,
        IRModule=tir_ir.IRModule,
        # relax classes
        DataflowVar=rx_expr.DataflowVar,
        VarBinding=rx_expr.VarBinding,
        MatchCast=rx_expr.MatchCast,
        BindingBlock=rx_expr.BindingBlock,
        DataflowBlock=rx_expr.DataflowBlock,
        SeqExpr=rx_expr.SeqExpr,
        If=rx_expr.If,
        ShapeExpr=rx_expr.ShapeExpr,
        Function=rx_expr.Function,
        ExternFunc=rx_expr.ExternFunc,
        TensorType=rx_type.TensorType,
        ShapeType=rx_type.ShapeType,
        AnyType=rx_type.AnyType,
        FuncType=rx_type.FuncType,
        VDevice=VDevice,
        PrimFunc=tvm.tirx.PrimFunc,
        Tensor=tvm.runtime.Tensor,
    )
    return _API
