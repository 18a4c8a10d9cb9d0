"""The Relax-like IR: nodes, types, symbolic shapes, ops, modules, builder, visitors,
structural equality, well-formedness, and TVMScript text (printer and parser)."""
from .prim import (  # noqa: F401
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    And,
    BinaryOp,
    Cast,
    CmpOp,
    FloatImm,
    FloorDiv,
    FloorMod,
    IfThenElse,
    IntImm,
    Max,
    Min,
    Mul,
    Not,
    Or,
    PrimExpr,
    PrimVar,
    Select,
    Sub,
    canonical,
    free_prim_vars,
    prove_equal,
)
from .types import (  # noqa: F401
    FuncType,
    ObjectType,
    PrimType,
    ShapeType,
    TensorType,
    TupleType,
    Type,
    dtype_bytes,
)
from .expr import (  # noqa: F401
    BaseFunc,
    Binding,
    BindingBlock,
    Call,
    Constant,
    DataflowBlock,
    DataflowVar,
    DataTypeImm,
    Expr,
    ExternFunc,
    Function,
    GlobalVar,
    If,
    MatchCast,
    Node,
    PrimFunc,
    PrimFuncParam,
    PrimValue,
    SeqExpr,
    ShapeExpr,
    StringImm,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
)
from .module import IRModule  # noqa: F401
from .op import Op, get_op, list_ops, register_op, shares_storage  # noqa: F401
from . import ops  # noqa: F401  (registers the built-in ops with their type rules)
from .builder import BlockBuilder, IfBuilder, NameTable  # noqa: F401
from .infer import infer_type  # noqa: F401
from .functor import ExprMutator, ExprVisitor, post_order_visit  # noqa: F401
from .structural import assert_structural_equal, structural_equal  # noqa: F401
from .well_formed import well_formed, well_formed_report  # noqa: F401
