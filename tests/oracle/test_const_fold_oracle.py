"""LowerAllocTensor's storage size against TVM's own ``nbytes *= dim`` (``TryConstFold<Mul>``):
the plan of ``memcore_py/ir/_const_fold.pyx`` built by both writers (memcore IR:
``storage_bytes_expr``; TVM objects: the native pass's ``symbolic_shape``) on random shapes
of constants (0, 1 and others) and variables."""
import random

import pytest

tvm = pytest.importorskip("tvm")
from tvm import relax, tirx  # noqa: E402
from tvm.script import ir as I, relax as R  # noqa: E402,F401

import memcore_py.tvm as mtvm  # noqa: E402
from memcore_py.ir.prim import IntImm, Mul, PrimVar  # noqa: E402
from memcore_py.transform.lower_alloc_tensor import storage_bytes_expr  # noqa: E402

DTYPES = {"float32": 4, "bool": 1, "float16": 2, "int64": 8}


def _shapes(seed: int, count: int):
    rng = random.Random(seed)
    for _ in range(count):
        dims = []
        for _ in range(rng.randint(0, 5)):
            r = rng.random()
            dims.append(rng.choice(("n", "m")) if r < 0.5 else rng.choice((0, 1, 1, 2, 3, 7)))
        yield dims, rng.choice(sorted(DTYPES))


def _tvm_bytes(dims, dtype, tvm_vars):
    """What TVM's LowerAllocTensor computes: ``IntImm::Int64(bytes) *= dim`` for each dim."""
    nbytes = tirx.IntImm("int64", DTYPES[dtype])
    for d in dims:
        nbytes = nbytes * (tvm_vars[d] if isinstance(d, str) else tirx.IntImm("int64", d))
    return nbytes


def _as_tvm(e, tvm_vars):
    """A memcore product as TVM's objects, node for node (no folding)."""
    if type(e) is IntImm:
        return tirx.IntImm("int64", e.value)
    if type(e) is PrimVar:
        return tvm_vars[e.name]
    assert type(e) is Mul, e
    return tirx.Mul(_as_tvm(e.a, tvm_vars), _as_tvm(e.b, tvm_vars))


def test_storage_bytes_expr_is_tvms_folding():
    ours_vars = {"n": PrimVar("n"), "m": PrimVar("m")}
    tvm_vars = {"n": tirx.Var("n", "int64"), "m": tirx.Var("m", "int64")}
    for dims, dtype in _shapes(0, 400):
        ours = storage_bytes_expr([ours_vars[d] if isinstance(d, str) else IntImm(d) for d in dims], dtype)
        theirs = _tvm_bytes(dims, dtype, tvm_vars)
        tvm.ir.assert_structural_equal(_as_tvm(ours, tvm_vars), theirs)


def test_native_lower_alloc_tensor_sizes_as_tvm():
    """The native pass on modules of one allocation per random shape: TVM's own output."""
    for dims, dtype in _shapes(1, 120):
        shape = ", ".join(str(d) for d in dims)
        text = f"""
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", "m"), "float32")):
        n = T.int64()
        m = T.int64()
        a: R.Tensor(({shape}{',' if len(dims) == 1 else ''}), "{dtype}") = R.builtin.alloc_tensor(R.shape([{shape}]), R.dtype("{dtype}"), R.prim_value(0), R.str("global"))
        return a
"""
        mod = tvm.script.from_source(text)
        theirs = relax.transform.LowerAllocTensor()(mod)
        ours = mtvm.LowerAllocTensor()(mod)
        tvm.ir.assert_structural_equal(ours, theirs)
