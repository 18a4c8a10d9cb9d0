"""Bad input to compiled helpers that the TVM bridge calls, and to the reader of the Case-2
attribute.

Checks
------
* :func:`memcore_py.tvm._lower_extract.symbolic_shape`,
  :func:`memcore_py.tvm._ffi_writer.if_binding_with_blocks` and
  :func:`memcore_py.tvm._ffi_writer.block_spliced`, given wrong-typed arguments, parallel lists
  of different lengths, positions out of range and addresses of the wrong kind of object (0, a
  scalar, a ``Function`` where a block or binding is expected), raise a clear error: a
  ``ValueError`` or ``TypeError`` naming the function and the argument, a ``RuntimeError`` when
  the compiled writer is not initialised, or a ``TVMConversionError`` with TVM's message when
  one of TVM's constructors refuses. They never crash, hang or read out of bounds: the wrapper
  checks its input before the kernel reads it (project standard).
* :func:`memcore_py.transform.static_plan_block_memory.plans_dynamic_output` reads
  ``relax.memory_plan_dynamic_func_output`` as TVM 0.27's StaticPlanBlockMemory does: an
  integer, a bool, an ``IntImm`` or None is read as TVM reads it, and a value TVM refuses (a
  string, a float, a list) raises a ``PassError`` naming the attribute.

Every error case is paired with a valid call of the same function on the same objects, so
that a test fails when the function stops working instead of only when it stops refusing.
Cases that crashed the interpreter before their wrapper checked them (a None ``Layout`` or
``Keep``, a constructor handle that is not a function, a null binding address, a writer not
initialised) run in a child interpreter: a regression fails the test and not the whole run.

Addresses passed as ``obj.__chandle__()`` come from objects held in local variables for the
whole call (a temporary would be freed and its address left dangling).
"""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

tvm = pytest.importorskip("tvm")

from _helpers import REPO_ROOT, tvm_from_source  # noqa: E402
from tvm import relax  # noqa: E402

import memcore_py.tvm as mtvm  # noqa: E402
from memcore_py.errors import PassError  # noqa: E402
from memcore_py.ir.prim import FloatImm, IntImm  # noqa: E402
from memcore_py.transform.static_plan_block_memory import ATTR_PLAN_DYNAMIC_FUNC_OUTPUT, plans_dynamic_output  # noqa: E402
from memcore_py.tvm import TVMConversionError, _ffi_writer, _lower_extract  # noqa: E402
from memcore_py.tvm._api import tvm_api  # noqa: E402
from memcore_py.tvm.from_tvm import _layout  # noqa: E402
from memcore_py.tvm.lower_alloc_extract import _size_ctors  # noqa: E402

#: one allocation of the symbolic shape (n, 4): allocation_sizes hands it over as a SymbolicSize
SYMBOLIC_ALLOC = """# from tvm.script import relax as R
# from tvm.script import tirx as T

@R.function(pure=False)
def main(s: R.Shape(["n"])) -> R.Tensor(("n", 4), dtype="float32"):
    n = T.int64()
    a = R.builtin.alloc_tensor(R.shape([n, 4]), R.dtype("float32"), R.prim_value(0), R.str("global"))
    return a
"""

#: a function whose first binding is an If with a one-block SeqExpr per branch
WITH_IF = """# from tvm.script import relax as R

@R.function
def main(c: R.Tensor((), "bool"), x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
    if c:
        y = R.add(x, x)
        r = y
    else:
        z = R.multiply(x, x)
        r = z
    return r
"""


def _module(text):
    """TVM's parse of ``text`` (one function) as a module."""
    parsed = tvm_from_source(text)
    return parsed if isinstance(parsed, tvm.IRModule) else tvm.IRModule({"main": parsed})


@pytest.fixture(scope="module")
def layout():
    L = _layout(tvm_api())  # also initialises the compiled writer
    if L is None:
        pytest.skip("the compiled fast paths are off for this TVM (portable path only)")
    return L


@pytest.fixture(scope="module")
def alloc_mod():
    return _module(SYMBOLIC_ALLOC)


@pytest.fixture(scope="module")
def if_mod():
    return _module(WITH_IF)


def _symbolic_size(layout, mod):
    """The SymbolicSize allocation_sizes hands over for ``mod``'s allocation (``mod`` holds its
    dims Array)."""
    bindings = mod["main"].body.blocks[0].bindings
    (size,) = _lower_extract.allocation_sizes(layout, bindings.__chandle__(), [0])
    assert isinstance(size, _lower_extract.SymbolicSize)
    return size


def _forged_size(dims: int, elem: int = 4):
    """A SymbolicSize with the dims address ``dims``, made as unpickling makes one (its
    ``__setstate_cython__``): the way Python code reaches ``symbolic_shape`` with an address
    that ``allocation_sizes`` did not hand over."""
    size = _lower_extract.SymbolicSize.__new__(_lower_extract.SymbolicSize)
    size.__setstate_cython__((dims, "float32", elem, None))
    assert size.dims == dims and size.elem == elem
    return size


def _run_isolated(body: str) -> str:
    """Run ``body`` in a child interpreter after a prelude that defines ``api``, ``L`` (the
    layout; the compiled writer initialised), ``K`` (a Keep), ``hs`` (the size constructors'
    handles), ``size`` (the SymbolicSize of :data:`SYMBOLIC_ALLOC`), ``alloc_mod``, ``if_mod``,
    ``bindings`` (the address of ``if_mod``'s first block's bindings) and ``first`` (the
    address of its If binding), and ``report(thunk)``, which prints the exception ``thunk``
    raises as ``type: message``. Returns its standard output; fails the test when it exits
    abnormally (a segfault is a negative return code)."""
    prelude = textwrap.dedent(f"""
        import tvm
        from memcore_py.tvm import _ffi_reader, _ffi_writer, _lower_extract
        from memcore_py.tvm._api import tvm_api
        from memcore_py.tvm.from_tvm import _layout
        from memcore_py.tvm.lower_alloc_extract import _size_ctors

        def report(thunk):
            try:
                got = thunk()
            except Exception as e:
                print(f"{{type(e).__name__}}: {{e}}")
            else:
                print(f"returned {{got!r}}")

        api = tvm_api()
        alloc_mod = tvm.IRModule({{"main": tvm.script.from_source({SYMBOLIC_ALLOC!r})}})
        if_mod = tvm.IRModule({{"main": tvm.script.from_source({WITH_IF!r})}})
        held = if_mod["main"].body.blocks[0].bindings
        bindings = held.__chandle__()
        first_binding = held[0]
        first = first_binding.__chandle__()
        if {{FRESH}}:
            L = _ffi_reader.Layout(api)  # the writer left uninitialised
        else:
            L = _layout(api)
            hs = _size_ctors(api)
            (size,) = _lower_extract.allocation_sizes(L, alloc_mod["main"].body.blocks[0].bindings.__chandle__(), [0])
        K = _ffi_writer.Keep()
    """)
    fresh = "FRESH = True" in body
    code = prelude.replace("{FRESH}", str(fresh)) + textwrap.dedent(body)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO_ROOT, timeout=300)
    assert proc.returncode == 0, f"the child interpreter exited with {proc.returncode}:\n{proc.stderr[-3000:]}"
    return proc.stdout


# ---------------------------------------------------------------------------- symbolic_shape
def test_symbolic_shape_builds_the_size_of_a_real_allocation(layout, alloc_mod):
    keep = _ffi_writer.Keep()
    size = _symbolic_size(layout, alloc_mod)
    shape = _ffi_writer.object_at(_lower_extract.symbolic_shape(layout, keep, size, *_size_ctors(tvm_api())))
    n = alloc_mod["main"].params[0].ty.values[0]
    four = tvm.tirx.IntImm("int64", 4)
    tvm.ir.assert_structural_equal(shape, relax.ShapeExpr([tvm.tirx.Mul(tvm.tirx.Mul(four, n), four)]))


def test_symbolic_shape_refuses_a_size_that_is_not_a_symbolic_size(layout):
    keep, ctors = _ffi_writer.Keep(), _size_ctors(tvm_api())
    for bad in (None, 16, (0, "float32", 4, None)):
        with pytest.raises(TypeError, match="'size'"):
            _lower_extract.symbolic_shape(layout, keep, bad, *ctors)


def test_symbolic_shape_refuses_dims_that_are_not_an_array(layout):
    keep, ctors = _ffi_writer.Keep(), _size_ctors(tvm_api())
    unset = _lower_extract.SymbolicSize.__new__(_lower_extract.SymbolicSize)  # dims 0
    with pytest.raises(ValueError, match="symbolic_shape: the dims are not an ffi.Array"):
        _lower_extract.symbolic_shape(layout, keep, unset, *ctors)
    imm = tvm.tirx.IntImm("int64", 3)  # held: its address stays valid through the call
    var = relax.Var("v", relax.TensorType((2,), "float32"))
    for obj in (imm, var):
        with pytest.raises(ValueError, match="symbolic_shape: the dims are not an ffi.Array"):
            _lower_extract.symbolic_shape(layout, keep, _forged_size(obj.__chandle__()), *ctors)


def test_symbolic_shape_takes_max_dims_and_refuses_more(layout):
    keep, ctors = _ffi_writer.Keep(), _size_ctors(tvm_api())
    n = tvm.tirx.Var("n", "int64")
    most = tvm.runtime.convert([n] * 64)
    shape = _ffi_writer.object_at(_lower_extract.symbolic_shape(layout, keep, _forged_size(most.__chandle__()), *ctors))
    assert len(shape.values) == 1
    too_many = tvm.runtime.convert([n] * 65)
    with pytest.raises(ValueError, match="symbolic_shape: more than 64 dims"):
        _lower_extract.symbolic_shape(layout, keep, _forged_size(too_many.__chandle__()), *ctors)


def test_symbolic_shape_refuses_a_constant_part_over_int64(layout):
    keep, ctors = _ffi_writer.Keep(), _size_ctors(tvm_api())
    n = tvm.tirx.Var("n", "int64")
    big = tvm.tirx.IntImm("int64", 2**62)
    fits = tvm.runtime.convert([big, n])  # 2 * 2**62 would overflow; 1 * 2**62 does not
    shape = _ffi_writer.object_at(_lower_extract.symbolic_shape(layout, keep, _forged_size(fits.__chandle__(), 1),
                                                                *ctors))
    tvm.ir.assert_structural_equal(shape, relax.ShapeExpr([tvm.tirx.Mul(big, n)]))
    over = tvm.runtime.convert([big, n, big])
    with pytest.raises(ValueError, match="symbolic_shape: the constant part of the size exceeds int64"):
        _lower_extract.symbolic_shape(layout, keep, _forged_size(over.__chandle__(), 8), *ctors)


def test_symbolic_shape_of_no_dims_is_the_element_size(layout):
    keep, ctors = _ffi_writer.Keep(), _size_ctors(tvm_api())
    empty = tvm.runtime.convert([])
    shape = _ffi_writer.object_at(_lower_extract.symbolic_shape(layout, keep, _forged_size(empty.__chandle__(), 4),
                                                                *ctors))
    assert [int(v) for v in shape.values] == [4]


def test_symbolic_shape_dims_that_are_not_prim_exprs_get_tvms_refusal(layout):
    keep, ctors = _ffi_writer.Keep(), _size_ctors(tvm_api())
    for items in (["a", "b"], [None, None], [relax.Var("a"), relax.Var("b")]):
        dims = tvm.runtime.convert(items)
        with pytest.raises(TVMConversionError, match="TVM refused a product"):
            _lower_extract.symbolic_shape(layout, keep, _forged_size(dims.__chandle__()), *ctors)


def test_symbolic_shape_the_wrong_constructor_gets_tvms_refusal(layout, alloc_mod):
    keep = _ffi_writer.Keep()
    int_imm, mul, shape = _size_ctors(tvm_api())
    size = _symbolic_size(layout, alloc_mod)
    with pytest.raises(TVMConversionError, match="TVM refused an IntImm"):
        _lower_extract.symbolic_shape(layout, keep, size, mul, int_imm, shape)
    with pytest.raises(TVMConversionError, match="TVM refused a shape"):
        _lower_extract.symbolic_shape(layout, keep, size, int_imm, mul, mul)


def test_symbolic_shape_refuses_constructor_handles_that_are_not_functions():
    """Crashed before the wrapper checked them: the kernel called whatever the address held."""
    out = _run_isolated("""
        imm = tvm.tirx.IntImm("int64", 3)
        report(lambda: _lower_extract.symbolic_shape(L, K, size, 0, hs[1], hs[2]))
        report(lambda: _lower_extract.symbolic_shape(L, K, size, hs[0], imm.__chandle__(), hs[2]))
        report(lambda: _lower_extract.symbolic_shape(L, K, size, hs[0], hs[1], first))
        report(lambda: type(_lower_extract.symbolic_shape(L, K, size, *hs)).__name__)
    """)
    assert out.splitlines() == [
        "ValueError: symbolic_shape: ctor_int_imm is not the address of an ffi.Function",
        "ValueError: symbolic_shape: ctor_mul is not the address of an ffi.Function",
        "ValueError: symbolic_shape: ctor_shape is not the address of an ffi.Function",
        "returned 'int'",
    ], out


def test_symbolic_shape_refuses_a_none_layout_or_keep():
    """Crashed (or read past the None object) before ``not None`` on the arguments."""
    out = _run_isolated("""
        report(lambda: _lower_extract.symbolic_shape(None, K, size, *hs))
        report(lambda: _lower_extract.symbolic_shape(L, None, size, *hs))
        report(lambda: _lower_extract.symbolic_shape(K, L, size, *hs))
    """)
    lines = out.splitlines()
    assert len(lines) == 3, out
    assert lines[0].startswith("TypeError: Argument 'L' has incorrect type"), out
    assert lines[1].startswith("TypeError: Argument 'K' has incorrect type"), out
    assert lines[2].startswith("TypeError: Argument 'L' has incorrect type"), out


def test_compiled_writes_before_the_writer_is_initialised_raise():
    """A Layout can be built without ``_ffi_writer.init``: the three functions then had no C
    API to call and crashed; they raise a RuntimeError naming the missing initialisation."""
    out = _run_isolated("""
        FRESH = True
        size = _lower_extract.SymbolicSize.__new__(_lower_extract.SymbolicSize)
        report(lambda: _lower_extract.symbolic_shape(L, K, size, 1, 1, 1))
        report(lambda: _ffi_writer.if_binding_with_blocks(L, K, bindings, 0, [], [], [], []))
        report(lambda: _ffi_writer.block_spliced(K, bindings, [0], [[first]], False))
    """)
    assert out.splitlines() == [
        f"RuntimeError: {f}: the compiled writer is not initialised (memcore_py.tvm._ffi_writer.init)"
        for f in ("symbolic_shape", "if_binding_with_blocks", "array_spliced")
    ], out


# ---------------------------------------------------------------------------- if_binding_with_blocks
def _if_parts(if_mod):
    """(bindings Array, the If, its then block, its else block) of ``if_mod``."""
    bindings = if_mod["main"].body.blocks[0].bindings
    the_if = bindings[0].value
    return bindings, the_if, the_if.true_branch.blocks[0], the_if.false_branch.blocks[0]


def test_if_binding_with_blocks_replaces_a_branch_block(layout, if_mod):
    keep = _ffi_writer.Keep()
    bindings, the_if, then_block, else_block = _if_parts(if_mod)
    new = _ffi_writer.object_at(_ffi_writer.if_binding_with_blocks(
        layout, keep, bindings.__chandle__(), 0, [0], [else_block.__chandle__()], [], []))
    assert new.var.same_as(bindings[0].var)
    assert new.value.true_branch.blocks[0].same_as(else_block)
    assert new.value.false_branch.same_as(the_if.false_branch)


def test_if_binding_with_blocks_refuses_what_is_not_a_bindings_array(layout, if_mod):
    keep = _ffi_writer.Keep()
    func = if_mod["main"]
    for address in (0, func.__chandle__(), func.body.__chandle__()):
        with pytest.raises(ValueError, match="if_binding_with_blocks: not an ffi.Array"):
            _ffi_writer.if_binding_with_blocks(layout, keep, address, 0, [], [], [], [])


def test_if_binding_with_blocks_refuses_a_position_out_of_range(layout, if_mod):
    keep = _ffi_writer.Keep()
    bindings = _if_parts(if_mod)[0]
    for pos in (-1, len(bindings), 2**40):
        with pytest.raises(ValueError, match=f"if_binding_with_blocks: position {pos} out of range"):
            _ffi_writer.if_binding_with_blocks(layout, keep, bindings.__chandle__(), pos, [], [], [], [])


def test_if_binding_with_blocks_declines_a_binding_that_is_not_an_if(layout, if_mod):
    """Documented: 0 (the caller declines) when the element is not a VarBinding of an If."""
    keep = _ffi_writer.Keep()
    _bindings, _the_if, then_block, _else = _if_parts(if_mod)
    func = if_mod["main"]
    for arr in (then_block.bindings, tvm.runtime.convert([func]), tvm.runtime.convert([1])):
        assert _ffi_writer.if_binding_with_blocks(layout, keep, arr.__chandle__(), 0, [], [], [], []) == 0


def test_if_binding_with_blocks_refuses_lists_of_different_lengths(layout, if_mod):
    """``then_changed=[]`` with a block in ``then_blocks`` was silently ignored before."""
    keep = _ffi_writer.Keep()
    bindings, _the_if, then_block, else_block = _if_parts(if_mod)
    t, e = then_block.__chandle__(), else_block.__chandle__()
    cases = [([], [t], [], [], "0 then_changed positions but 1 then_blocks"),
             ([0], [t, t], [], [], "1 then_changed positions but 2 then_blocks"),
             ([0], [t], [0], [], "1 else_changed positions but 0 else_blocks"),
             ([], [], [], [e], "0 else_changed positions but 1 else_blocks")]
    for tc, tb, ec, eb, msg in cases:
        with pytest.raises(ValueError, match=f"if_binding_with_blocks: {msg}"):
            _ffi_writer.if_binding_with_blocks(layout, keep, bindings.__chandle__(), 0, tc, tb, ec, eb)


def test_if_binding_with_blocks_refuses_changed_positions_out_of_range(layout, if_mod):
    keep = _ffi_writer.Keep()
    bindings, _the_if, then_block, _else = _if_parts(if_mod)
    t = then_block.__chandle__()
    for changed in ([1], [-1], [0, 0]):
        with pytest.raises(ValueError, match="array_spliced: position .* out of range or not increasing"):
            _ffi_writer.if_binding_with_blocks(layout, keep, bindings.__chandle__(), 0, changed, [t] * len(changed),
                                               [], [])


def test_if_binding_with_blocks_refuses_block_addresses_of_the_wrong_kind(layout, if_mod):
    """0 built an ``If`` with a null block before (no error; the IR was broken); a negative
    address or a TVM object in place of its address failed in Cython's conversion without
    naming the argument; a Function's address is refused by TVM's SeqExpr constructor."""
    keep = _ffi_writer.Keep()
    bindings, _the_if, then_block, _else = _if_parts(if_mod)
    func = if_mod["main"]
    arr = bindings.__chandle__()
    with pytest.raises(ValueError, match=r"if_binding_with_blocks: then_blocks\[0\] is 0, not an object address"):
        _ffi_writer.if_binding_with_blocks(layout, keep, arr, 0, [0], [0], [], [])
    with pytest.raises(ValueError, match=r"if_binding_with_blocks: else_blocks\[0\] is -1, not an object address"):
        _ffi_writer.if_binding_with_blocks(layout, keep, arr, 0, [], [], [0], [-1])
    with pytest.raises(TypeError, match=r"if_binding_with_blocks: then_blocks\[0\] must be an object address "
                                        r"\(an int\), not BindingBlock"):
        _ffi_writer.if_binding_with_blocks(layout, keep, arr, 0, [0], [then_block], [], [])
    with pytest.raises(TVMConversionError, match="TVM refused a SeqExpr: .*Array<relax.expr.BindingBlock>"):
        _ffi_writer.if_binding_with_blocks(layout, keep, arr, 0, [0], [func.__chandle__()], [], [])


def test_if_binding_with_blocks_refuses_wrong_typed_arguments(layout, if_mod):
    keep = _ffi_writer.Keep()
    bindings = _if_parts(if_mod)[0]
    arr = bindings.__chandle__()
    with pytest.raises(TypeError, match="Argument 'then_changed' has incorrect type"):
        _ffi_writer.if_binding_with_blocks(layout, keep, arr, 0, None, [], [], [])
    with pytest.raises(TypeError, match="Argument 'else_blocks' has incorrect type"):
        _ffi_writer.if_binding_with_blocks(layout, keep, arr, 0, [], [], [], (1,))
    with pytest.raises(TypeError, match="Argument 'L' has incorrect type"):
        _ffi_writer.if_binding_with_blocks(keep, keep, arr, 0, [], [], [], [])
    with pytest.raises(TypeError):
        _ffi_writer.if_binding_with_blocks(layout, keep, arr, "0", [], [], [], [])
    with pytest.raises(TypeError):
        _ffi_writer.if_binding_with_blocks(layout, keep, bindings, 0, [], [], [], [])  # the object, not its address
    with pytest.raises(TypeError):
        _ffi_writer.if_binding_with_blocks(layout, keep, arr, 0, ["0"], [_if_parts(if_mod)[2].__chandle__()], [], [])


def test_if_binding_with_blocks_refuses_a_none_layout_or_keep():
    """Read past the None object (L) or crashed (K) before ``not None`` on the arguments."""
    out = _run_isolated("""
        report(lambda: _ffi_writer.if_binding_with_blocks(None, K, bindings, 0, [], [], [], []))
        report(lambda: _ffi_writer.if_binding_with_blocks(L, None, bindings, 0, [], [], [], []))
        report(lambda: type(_ffi_writer.if_binding_with_blocks(L, K, bindings, 0, [], [], [], [])).__name__)
    """)
    lines = out.splitlines()
    assert len(lines) == 3, out
    assert lines[0].startswith("TypeError: Argument 'L' has incorrect type"), out
    assert lines[1].startswith("TypeError: Argument 'K' has incorrect type"), out
    assert lines[2] == "returned 'int'", out


# ---------------------------------------------------------------------------- block_spliced
def test_block_spliced_replaces_a_binding(if_mod):
    keep = _ffi_writer.Keep()
    bindings, _the_if, then_block, _else = _if_parts(if_mod)
    inner = then_block.bindings  # (y = R.add(x, x),)
    first = inner[0]
    new = _ffi_writer.object_at(_ffi_writer.block_spliced(keep, inner.__chandle__(), [0],
                                                           [[first.__chandle__(), first.__chandle__()]], True))
    assert isinstance(new, relax.DataflowBlock)
    assert len(new.bindings) == 2 and all(b.same_as(first) for b in new.bindings)


def test_block_spliced_refuses_what_is_not_a_bindings_array(if_mod):
    keep = _ffi_writer.Keep()
    bindings, _the_if, _then, _else = _if_parts(if_mod)
    first = bindings[0]
    func = if_mod["main"]
    for address in (0, func.__chandle__(), first.__chandle__()):
        with pytest.raises(ValueError, match="array_spliced: not an ffi.Array"):
            _ffi_writer.block_spliced(keep, address, [0], [[first.__chandle__()]], False)


def test_block_spliced_refuses_bad_positions(if_mod):
    keep = _ffi_writer.Keep()
    inner = _if_parts(if_mod)[2].bindings
    b = inner[0].__chandle__()
    arr = inner.__chandle__()
    with pytest.raises(ValueError, match="array_spliced: 1 positions but 0 replacements"):
        _ffi_writer.block_spliced(keep, arr, [0], [], False)
    with pytest.raises(ValueError, match="array_spliced: 0 positions but 1 replacements"):
        _ffi_writer.block_spliced(keep, arr, [], [[b]], False)
    for positions in ([2], [-1], [1, 0], [1, 1], [2**40]):
        with pytest.raises(ValueError, match="array_spliced: position .* out of range or not increasing"):
            _ffi_writer.block_spliced(keep, arr, positions, [[b]] * len(positions), False)


def test_block_spliced_refuses_replacements_of_the_wrong_kind(if_mod):
    """A replacement that is not a list, or an address that is not an int, failed deep in the
    loop without naming the argument; a Function's address is refused by TVM's BindingBlock
    constructor, as is a bindings Array of Functions."""
    keep = _ffi_writer.Keep()
    inner = _if_parts(if_mod)[2].bindings
    first = inner[0]
    arr = inner.__chandle__()
    func = if_mod["main"]
    with pytest.raises(TypeError, match=r"array_spliced: replacements\[0\] must be a list of object addresses, "
                                        r"not int"):
        _ffi_writer.block_spliced(keep, arr, [0], [first.__chandle__()], False)
    with pytest.raises(TypeError, match=r"array_spliced: an address in replacements\[0\] must be an object address "
                                        r"\(an int\), not VarBinding"):
        _ffi_writer.block_spliced(keep, arr, [0], [[first]], False)
    with pytest.raises(ValueError, match=r"array_spliced: an address in replacements\[0\] is -1"):
        _ffi_writer.block_spliced(keep, arr, [0], [[-1]], False)
    with pytest.raises(TVMConversionError, match="TVM refused a block: .*Array<relax.expr.Binding>"):
        _ffi_writer.block_spliced(keep, arr, [0], [[func.__chandle__()]], False)
    funcs = tvm.runtime.convert([func, func])
    with pytest.raises(TVMConversionError, match="TVM refused a block: .*Array<relax.expr.Binding>"):
        _ffi_writer.block_spliced(keep, funcs.__chandle__(), [0], [[first.__chandle__()]], False)
    with pytest.raises(TypeError, match="Argument 'positions' has incorrect type"):
        _ffi_writer.block_spliced(keep, arr, None, [[first.__chandle__()]], False)
    with pytest.raises(TypeError):
        _ffi_writer.block_spliced(keep, arr, ["0"], [[first.__chandle__()]], False)


def test_block_spliced_refuses_a_null_binding_and_a_none_keep():
    """A replacement address 0 made TVM build a block with a null binding and crash; a None
    Keep crashed when the new array was recorded in it."""
    out = _run_isolated("""
        report(lambda: _ffi_writer.block_spliced(K, bindings, [0], [[0]], False))
        report(lambda: _ffi_writer.block_spliced(None, bindings, [0], [[first]], False))
        report(lambda: type(_ffi_writer.block_spliced(K, bindings, [0], [[first]], False)).__name__)
    """)
    lines = out.splitlines()
    assert len(lines) == 3, out
    assert lines[0] == r"ValueError: array_spliced: an address in replacements[0] is 0, not an object address", out
    assert lines[1].startswith("TypeError: Argument 'K' has incorrect type"), out
    assert lines[2] == "returned 'int'", out


# ---------------------------------------------------------------------------- plans_dynamic_output
#: attribute values TVM's ``GetAttr<IntImm>`` reads (``(value, TVM plans Case 2)``)
READ_BY_TVM = {
    "int 2": (2, True),
    "int 0": (0, False),
    "None": (None, False),
    "bool True": (True, True),
    "IntImm 2": (lambda: tvm.tirx.IntImm("int64", 2), True),
}
#: attribute values TVM's pass refuses with a TypeError (``Cannot convert ... to ir.IntImm``)
REFUSED_BY_TVM = {
    "str": "1",
    "float": 1.5,
    "float 0": 0.0,
    "list": [1],
    "empty list": [],
    "FloatImm": lambda: tvm.tirx.FloatImm("float32", 1.0),
}


def _with_attr(value):
    """:data:`SYMBOLIC_ALLOC` with the attribute set to ``value`` (a TVM object made by a
    callable, so that the tables hold none)."""
    if callable(value):
        value = value()
    func = _module(SYMBOLIC_ALLOC)["main"].with_attr(ATTR_PLAN_DYNAMIC_FUNC_OUTPUT, value)
    return tvm.IRModule({"main": func})


@pytest.mark.parametrize("case", list(READ_BY_TVM))
def test_plans_dynamic_output_reads_what_tvm_reads_as_tvm_does(case):
    """An int, a bool, an IntImm or None: TVM plans the symbolic allocation of the output
    ("Case 2") and drops the attribute when the value is nonzero, and plans nothing (the
    attribute kept) when it is 0 or None. memcore decides the same and its pass gives TVM's
    module."""
    value, plans = READ_BY_TVM[case]
    mod = _with_attr(value)
    want = relax.transform.StaticPlanBlockMemory()(mod)
    assert (ATTR_PLAN_DYNAMIC_FUNC_OUTPUT not in (want["main"].attrs or {})) == plans
    assert plans_dynamic_output(mtvm.from_tvm(mod)["main"].attrs) is plans
    tvm.ir.assert_structural_equal(mtvm.StaticPlanBlockMemory()(mod), want)


@pytest.mark.parametrize("case", list(REFUSED_BY_TVM))
def test_plans_dynamic_output_refuses_what_tvm_refuses(case):
    """A string, a float, a list or a FloatImm: TVM's pass fails (``GetAttr<IntImm>``: a
    TypeError, "Cannot convert from type ... to ir.IntImm"), so memcore cannot behave as TVM
    does by planning or not planning; it raises a PassError naming the attribute (before, it
    took the value's Python truth: ``"0"`` and ``[0]`` planned), from the reader and from the
    native pass."""
    mod = _with_attr(REFUSED_BY_TVM[case])
    with pytest.raises(TypeError, match="to `ir.IntImm`"):
        relax.transform.StaticPlanBlockMemory()(mod)
    attrs = mtvm.from_tvm(mod)["main"].attrs
    with pytest.raises(PassError, match=f"attribute '{ATTR_PLAN_DYNAMIC_FUNC_OUTPUT}' must be an integer"):
        plans_dynamic_output(attrs)
    with pytest.raises(PassError, match=f"attribute '{ATTR_PLAN_DYNAMIC_FUNC_OUTPUT}' must be an integer"):
        mtvm.StaticPlanBlockMemory()(mod)


def test_plans_dynamic_output_on_memcore_values():
    """The values memcore's own IR can hold there: integers, bools and IntImm read as TVM reads
    them; a string, a float, a FloatImm, a list or an arbitrary object raise a PassError
    naming the attribute; an absent attribute is 0."""
    assert plans_dynamic_output({}) is False
    for value, want in ((2, True), (0, False), (None, False), (True, True), (False, False),
                        (IntImm(2, "int64"), True), (IntImm(0, "int32"), False)):
        assert plans_dynamic_output({ATTR_PLAN_DYNAMIC_FUNC_OUTPUT: value}) is want, value
    for value in ("0", "", 0.0, 2.5, FloatImm(1.0, "float32"), [1], (), object()):
        with pytest.raises(PassError, match=f"attribute '{ATTR_PLAN_DYNAMIC_FUNC_OUTPUT}' must be an integer"):
            plans_dynamic_output({ATTR_PLAN_DYNAMIC_FUNC_OUTPUT: value})
