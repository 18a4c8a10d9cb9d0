"""AttachAttrLayoutFreeBuffers (spec §4, the four cases of §7.4, and the documented
``tir_vars`` difference).

The expected modules are written from the spec: the weight parameters ``params[num_input:]``
and constants passed to ``R.call_tir`` give the positions of ``layout_free_buffers`` on a
copy of the PrimFunc named by the module's name supply (``matmul1``, ``matmul2``, ...);
DeadCodeElimination then removes the unused original. The differential tests against TVM
itself are in tests/oracle/test_attach_attr_oracle.py.
"""
import pytest

from memcore_py.errors import PassError
from memcore_py.ir.expr import Call, PrimFunc, ShapeExpr
from memcore_py.ir.structural import assert_structural_equal
from memcore_py.testing.lowering_programs import assert_pass_output, module_from_text
from memcore_py.transform.attach_attr_layout_free_buffers import (
    AttachAttrLayoutFreeBuffers,
    attach_attr_layout_free_buffers,
    layout_free_positions,
)
from memcore_py.transform.pass_infra import PASS_REGISTRY, Sequential, get_pass

T32 = 'R.Tensor((32, 32), dtype="float32")'


def matmul(name="matmul", attrs=""):
    """The TIR matmul of TVM's test file, under ``name`` with an optional func_attr line."""
    attr_line = f"\n                T.func_attr({attrs})" if attrs else ""
    return f'''
            @T.prim_func(private=True, s_tir=True)
            def {name}(A: T.Buffer((T.int64(32), T.int64(32)), "float32"), B: T.Buffer((T.int64(32), T.int64(32)), "float32"), C: T.Buffer((T.int64(32), T.int64(32)), "float32")):{attr_line}
                for i, j, k in T.grid(T.int64(32), T.int64(32), T.int64(32)):
                    with T.sblock("C"):
                        with T.init():
                            C[i, j] = T.float32(0)
                        C[i, j] = C[i, j] + A[i, k] * B[k, j]
'''


def module(funcs: str) -> str:
    return f"""
        @I.ir_module(s_tir=True)
        class Module:{funcs}
"""


def main(params: str, body: str, attrs='{"num_input": 1}', ret="gv") -> str:
    return f"""
            @R.function
            def main({params}) -> {T32}:
                R.func_attr({attrs})
                cls = Module
                with R.dataflow():
{body}
                    R.output({ret})
                return {ret}
"""


def call(callee, args, var="gv"):
    return f"                    {var} = R.call_tir(cls.{callee}, ({args}), out_ty={T32})\n"


LF1 = '{"layout_free_buffers": [1]}'
LF0 = '{"layout_free_buffers": [0]}'


# ------------------------------------------------------------------ §7.4, the four TVM cases
def test_param():
    """num_input=1: the weight y at call_tir argument 1 -> matmul1 with [1]; matmul removed."""
    params = f"x: {T32}, y: {T32}"
    before = module(matmul() + main(params, call("matmul", "x, y")))
    expected = module(matmul("matmul1", LF1) + main(params, call("matmul1", "x, y")))
    assert_pass_output(AttachAttrLayoutFreeBuffers(), before, expected)


def test_const():
    """A Relax constant argument is layout-free: position 1."""
    scalar = '''
            @T.prim_func(private=True, s_tir=True)
            def {name}(A: T.Buffer((T.int64(32), T.int64(32)), "float32"), B: T.Buffer((), "float32"), C: T.Buffer((T.int64(32), T.int64(32)), "float32")):{attr}
                for i, j in T.grid(T.int64(32), T.int64(32)):
                    with T.sblock("C"):
                        C[i, j] = A[i, j] * B[()]
'''
    body = call("{f}", 'x, R.const(2.0, "float32")')
    params = f"x: {T32}"
    before = module(scalar.format(name="scale", attr="") + main(params, body.format(f="scale")))
    expected = module(scalar.format(name="scale1", attr=f"\n                T.func_attr({LF1})") + main(params, body.format(f="scale1")))
    assert_pass_output(AttachAttrLayoutFreeBuffers(), before, expected)


def test_multiple_same_func():
    """Two call sites with the same layout-free set share one copy, matmul1."""
    params = f"x: {T32}, w1: {T32}, w2: {T32}"
    before = module(matmul() + main(params, call("matmul", "x, w1", "lv1") + call("matmul", "lv1, w2")))
    expected = module(matmul("matmul1", LF1) + main(params, call("matmul1", "x, w1", "lv1") + call("matmul1", "lv1, w2")))
    after = assert_pass_output(AttachAttrLayoutFreeBuffers(), before, expected)
    assert sorted(gv.name for gv in after.functions) == ["main", "matmul1"]


def test_multiple_same_func_with_different_free_buffers():
    """Sets [1] and [0] give two copies, matmul1 and matmul2, in call order."""
    params = f"x: {T32}, w1: {T32}, w2: {T32}"
    before = module(matmul() + main(params, call("matmul", "x, w1", "lv1") + call("matmul", "w2, lv1")))
    expected = module(matmul("matmul1", LF1) + matmul("matmul2", LF0)
                      + main(params, call("matmul1", "x, w1", "lv1") + call("matmul2", "w2, lv1")))
    assert_pass_output(AttachAttrLayoutFreeBuffers(), before, expected)


# ------------------------------------------------------------------ §4.1 details
def test_empty_list_attached_without_num_input():
    """A function without num_input marks nothing: the copy carries an empty list."""
    params = f"x: {T32}, y: {T32}"
    before = module(matmul() + main(params, call("matmul", "x, y"), attrs='{"global_symbol": "main"}'))
    expected = module(matmul("matmul1", '{"layout_free_buffers": []}')
                      + main(params, call("matmul1", "x, y"), attrs='{"global_symbol": "main"}'))
    assert_pass_output(AttachAttrLayoutFreeBuffers(), before, expected)


def test_rebound_weight_not_recognised():
    """Only the parameter object itself counts: ``wa = w`` hides the weight."""
    params = f"x: {T32}, w: {T32}"
    body = "                    wa = w\n"
    before = module(matmul() + main(params, body + call("matmul", "x, wa")))
    expected = module(matmul("matmul1", '{"layout_free_buffers": []}') + main(params, body + call("matmul1", "x, wa")))
    assert_pass_output(AttachAttrLayoutFreeBuffers(), before, expected)


def test_existing_attr_replaced_and_equal_function_shared():
    """An existing ``layout_free_buffers`` is overwritten; a copy equal to a function of the
    module (here the original itself, already attributed [1]) reuses its GlobalVar, so the
    module is unchanged."""
    params = f"x: {T32}, y: {T32}"
    text = module(matmul(attrs=LF1) + main(params, call("matmul", "x, y")))
    before = module_from_text(text)
    after = AttachAttrLayoutFreeBuffers()(before)
    assert_structural_equal(after, before)
    assert [gv.name for gv in after.functions] == ["matmul", "main"]
    # the same function called with another set gets a copy with the new list
    swapped = module_from_text(module(matmul(attrs=LF1) + main(params, call("matmul", "y, x"))))
    expected = module(matmul("matmul1", LF0) + main(params, call("matmul1", "y, x")))
    assert_pass_output(AttachAttrLayoutFreeBuffers(), swapped, expected)


def test_public_original_survives():
    """A public (global_symbol) PrimFunc is an entry of DCE: it stays next to its copy."""
    params = f"x: {T32}, y: {T32}"
    public = matmul().replace("@T.prim_func(private=True, s_tir=True)", "@T.prim_func(s_tir=True)")
    after = AttachAttrLayoutFreeBuffers()(module_from_text(module(public + main(params, call("matmul", "x, y")))))
    names = {gv.name: f for gv, f in after.functions.items()}
    assert set(names) == {"matmul", "matmul1", "main"}
    assert "layout_free_buffers" not in names["matmul"].attrs
    assert names["matmul1"].attrs["layout_free_buffers"] == (1,)


def test_module_pass_alone_keeps_originals_and_dead_bindings():
    """Stage 1 alone adds copies; the originals and unused bindings are DCE's job."""
    params = f"x: {T32}, y: {T32}"
    before = module_from_text(module(matmul() + main(params, call("matmul", "x, y", "dead") + call("matmul", "x, y"))))
    stage1 = attach_attr_layout_free_buffers(before)
    assert [gv.name for gv in stage1.functions] == ["matmul", "main", "matmul1"]
    full = AttachAttrLayoutFreeBuffers()(before)
    assert [gv.name for gv in full.functions] == ["main", "matmul1"]
    assert [b.var.name for b in full["main"].body.blocks[0].bindings] == ["gv"]


def test_untouched_calls_and_no_call_tir():
    """Modules without call_tir come back unchanged by stage 1 (the same object)."""
    text = module(f"""
            @R.function
            def main(x: {T32}) -> {T32}:
                R.func_attr({{"num_input": 0}})
                with R.dataflow():
                    gv = R.add(x, x)
                    R.output(gv)
                return gv
""")
    mod = module_from_text(text)
    assert attach_attr_layout_free_buffers(mod) is mod


def test_layout_free_positions():
    from memcore_py.ir.expr import Constant, Var
    from memcore_py.ir.types import TensorType
    import numpy as np

    x, w = Var("x", TensorType((2,), "float32")), Var("w", TensorType((2,), "float32"))
    c = Constant(np.zeros((2,), "float32"))
    assert layout_free_positions((x, w, c), {w}) == (1, 2)
    assert layout_free_positions((x,), set()) == ()


# ------------------------------------------------------------------ tir_vars (documented difference)
SYM = '''
            @T.prim_func(private=True, s_tir=True)
            def shift(A: T.Buffer((T.int64(32), T.int64(32)), "float32"), B: T.Buffer((T.int64(32), T.int64(32)), "float32"), C: T.Buffer((T.int64(32), T.int64(32)), "float32"), n: T.int64):{attr}
                for i, j in T.grid(T.int64(32), T.int64(32)):
                    with T.sblock("C"):
                        C[i, j] = A[i, j] + B[i, j] + T.Cast("float32", n)
'''


def _tir_vars_module(callee, attr="", tir_vars=True):
    extra = ", tir_vars=R.shape([7])" if tir_vars else ""
    body = f"                    gv = R.call_tir(cls.{callee}, (x, w), out_ty={T32}{extra})\n"
    return module(SYM.format(attr=attr) + main(f"x: {T32}, w: {T32}", body))


def test_tir_vars_kept_ours():
    """Documented difference: memcore keeps the tir_vars argument (TVM drops it)."""
    before = _tir_vars_module("shift")
    expected = _tir_vars_module("shift1", attr=f"\n                T.func_attr({LF1})").replace("def shift(", "def shift1(")
    after = assert_pass_output(AttachAttrLayoutFreeBuffers(), before, expected)
    value = after["main"].body.blocks[0].bindings[0].value
    assert isinstance(value, Call) and len(value.args) == 3 and isinstance(value.args[2], ShapeExpr)


def test_tir_vars_dropped_with_tvm_compat():
    """``tvm_compat=True`` reproduces TVM: the call keeps exactly two arguments."""
    before = _tir_vars_module("shift")
    expected = _tir_vars_module("shift1", attr=f"\n                T.func_attr({LF1})", tir_vars=False).replace("def shift(", "def shift1(")
    assert_pass_output(AttachAttrLayoutFreeBuffers(tvm_compat=True), before, expected)


# ------------------------------------------------------------------ bad input
def _with_nested(outer_attrs, inner_calls_matmul):
    """main(x, w) whose first binding is a nested function ``inner(a, b)`` with num_input=1
    (built with the construction API: memcore's parser reads no nested functions), then
    ``gv = R.call_tir(cls.matmul, (x, w))``; the inner function returns ``a`` or, with
    ``inner_calls_matmul``, ``R.call_tir(cls.matmul, (a, b))``."""
    from memcore_py.ir.expr import BindingBlock, Function, SeqExpr, Var, VarBinding
    from memcore_py.ir.types import TensorType

    mod = module_from_text(module(matmul() + main(f"x: {T32}, w: {T32}", call("matmul", "x, w"), attrs=outer_attrs)))
    outer = mod["main"]
    t = TensorType((32, 32), "float32")
    a, b = Var("a", t), Var("b", t)
    if inner_calls_matmul:
        c = Var("c", t)
        template = outer.body.blocks[0].bindings[0].value
        from memcore_py.ir.expr import Tuple
        value = Call(template.op, (template.args[0], Tuple((a, b))), template.attrs, template.ty_args)
        body = SeqExpr([BindingBlock([VarBinding(c, value)])], c)
    else:
        body = SeqExpr([], a)
    inner = Function([a, b], body, t, {"num_input": 1})
    blocks = (BindingBlock([VarBinding(Var("inner", inner.ty), inner)]),) + outer.body.blocks
    new_main = Function(outer.params, SeqExpr(blocks, outer.body.body), outer.ret_ty, outer.attrs, outer.is_pure)
    return mod.with_functions({mod.get_global_var("main"): new_main})


def test_nested_function_with_num_input_is_an_error():
    """TVM aborts ("meet a non-global function with num_input attr") when the layout-free set
    is not empty; here the outer function's weight w is in it."""
    mod = _with_nested('{"num_input": 1}', False)
    with pytest.raises(PassError, match=r"non-global function with a num_input.*'main'.*binding inner"):
        attach_attr_layout_free_buffers(mod)


def test_nested_num_input_allowed_when_nothing_marked_yet():
    """TVM only aborts when the set is non-empty: a nested num_input function in a function
    without weights or earlier constants marks its own weights (b), and they stay marked
    for the rest of the top-level function."""
    # stage 1 itself (memcore's well-formedness check, which the test context runs after
    # every pass, refuses nested functions)
    after = attach_attr_layout_free_buffers(_with_nested('{"global_symbol": "main"}', True))
    lists = {gv.name: f.attrs.get("layout_free_buffers") for gv, f in after.functions.items() if isinstance(f, PrimFunc)}
    assert sorted(lists.items()) == [("matmul", None), ("matmul1", (1,)), ("matmul2", ())]  # inner's call first


def test_missing_prim_func_names_binding():
    mod = module_from_text(module(matmul() + main(f"x: {T32}, y: {T32}", call("matmul", "x, y"))))
    # drop the PrimFunc: the call now names a function the module does not define
    broken = mod.with_functions({}, remove=[mod.get_global_var("matmul")])
    with pytest.raises(PassError, match=r"'matmul', which the module does not define.*'main', binding gv = R.call_tir"):
        attach_attr_layout_free_buffers(broken)


def test_non_prim_func_callee_names_binding():
    text = module(f"""
            @R.function(private=True)
            def helper(a: {T32}, b: {T32}) -> {T32}:
                return a

            @R.function
            def main(x: {T32}, y: {T32}) -> {T32}:
                cls = Module
                gv = R.call_tir(cls.helper, (x, y), out_ty={T32})
                return gv
""")
    mod = module_from_text(text)  # memcore's parser reads it (well-formedness would refuse it)
    with pytest.raises(PassError, match=r"'helper', which is a Function, not a PrimFunc.*binding gv"):
        attach_attr_layout_free_buffers(mod)


def test_bad_num_input_and_not_a_module():
    text = module(matmul() + main(f"x: {T32}, y: {T32}", call("matmul", "x, y"), attrs='{"num_input": "one"}'))
    with pytest.raises(PassError, match="num_input' must be an int"):
        attach_attr_layout_free_buffers(module_from_text(text))
    with pytest.raises(PassError, match="expects an IRModule"):
        attach_attr_layout_free_buffers("not a module")


def test_pass_names_and_registry():
    p = AttachAttrLayoutFreeBuffers()
    assert isinstance(p, Sequential) and p.label == "AttachAttrLayoutFreeBuffers"
    assert [q.name for q in p.passes] == ["_AttachAttrLayoutFreeBuffers", "dead-code-elimination"]
    assert PASS_REGISTRY["attach-attr-layout-free-buffers"] is AttachAttrLayoutFreeBuffers
    assert get_pass("attach-attr-layout-free-buffers", tvm_compat=True).tvm_compat
    assert repr(AttachAttrLayoutFreeBuffers(tvm_compat=True)) == "AttachAttrLayoutFreeBuffers(tvm_compat=True)"


# ------------------------------------------------------------------ the one-loop path
@pytest.mark.parametrize("tir_vars", [False, True])
def test_flat_path_equals_general_mutator_on_random_programs(tir_vars):
    """Flat functions take a one-loop rewrite (stage 1); on random programs it gives the
    general mutator's output (which the oracle suite compares with TVM), DeadCodeElimination
    after either."""
    from memcore_py.ir.structural import structural_equal
    import memcore_py
    from memcore_py.testing.layout_free_programs import random_layout_free_program
    from memcore_py.transform.attach_attr_layout_free_buffers import _attach
    from memcore_py.transform.dead_code_elimination import dead_code_elimination, is_flat

    flat = 0
    for seed in range(150):
        mod = memcore_py.parse(random_layout_free_program(seed, tir_vars=tir_vars))
        flat += sum(is_flat(f) for f in mod.functions.values() if not isinstance(f, PrimFunc))
        fast = dead_code_elimination(_attach(mod, False, True))
        slow = dead_code_elimination(_attach(mod, False, False))
        assert structural_equal(fast, slow), seed
    assert flat > 150


# ------------------------------------------------------------------ shared helpers
def test_prim_func_registry_dedup_and_names():
    """PrimFuncRegistry: an equal function (module's or added) is shared; otherwise TVM's
    name-supply names skip the module's names; the module gets the additions appended."""
    from memcore_py.ir.text.prim_func_text import with_attrs
    from memcore_py.transform._prim_func_registry import PrimFuncRegistry

    mod = module_from_text(module(matmul() + matmul("matmul1", LF1) + main(f"x: {T32}, y: {T32}", call("matmul", "x, y"))))
    reg = PrimFuncRegistry(mod)
    orig = mod["matmul"]
    assert reg.add(with_attrs(orig, {"layout_free_buffers": (1,)}), "matmul").name == "matmul1"  # equal to the module's
    gv0 = reg.add(with_attrs(orig, {"layout_free_buffers": (0,)}), "matmul")
    assert gv0.name == "matmul2"  # 'matmul' and 'matmul1' are taken
    assert reg.add(with_attrs(orig, {"layout_free_buffers": [0]}), "matmul") is gv0  # list == tuple
    gv_empty = reg.add(with_attrs(orig, {"layout_free_buffers": ()}), "matmul")
    assert gv_empty.name == "matmul3"
    out = reg.module()
    assert [gv.name for gv in out.functions] == ["matmul", "matmul1", "main", "matmul2", "matmul3"]
    with pytest.raises(PassError, match="expects a PrimFunc"):
        reg.add(mod["main"], "main")
    with pytest.raises(PassError, match="expects an IRModule"):
        PrimFuncRegistry(None)


def test_prim_func_registry_keys():
    """Keyed additions are told apart by key alone (no text comparison); a keyed function is
    still compared structurally with the module's own functions."""
    from memcore_py.ir.text.prim_func_text import with_attrs
    from memcore_py.transform._prim_func_registry import PrimFuncRegistry

    mod = module_from_text(module(matmul() + matmul("matmul1", LF1) + main(f"x: {T32}, y: {T32}", call("matmul", "x, y"))))
    reg = PrimFuncRegistry(mod)
    orig = mod["matmul"]
    # equal to the module's matmul1 structurally: found although keyed
    assert reg.add(with_attrs(orig, {"layout_free_buffers": (1,)}), "matmul", key="k1").name == "matmul1"
    a = with_attrs(orig, {"layout_free_buffers": (0,)})
    gv_a = reg.add(a, "matmul", key="k0")
    b = with_attrs(orig, {"layout_free_buffers": (0,)})
    assert reg.add(b, "matmul", key="k0") is gv_a  # same key: the same function
    assert reg.add(b, "matmul", key="other").name == "matmul3"  # another key: never compared, added
    # the keyed lookups did not need the copies' texts
    assert object.__getattribute__(a, "_load") is not None
    assert reg.add(b, "matmul") is gv_a  # unkeyed: compared by structure, here through the bases
    assert a.unwritten_base() is orig and b.unwritten_base() is orig


def test_structural_equality_of_unwritten_copies():
    """Copies whose texts are unwritten compare through their bases, with the answer the
    written texts give; a copy compared with a written function is written."""
    from memcore_py.ir import structural_equal
    from memcore_py.ir.text.prim_func_text import with_attrs

    mod = module_from_text(module(matmul() + matmul("matmul1", LF1) + main(f"x: {T32}, y: {T32}", call("matmul", "x, y"))))
    orig = mod["matmul"]
    other_body = module_from_text(module(matmul().replace("T.float32(0)", "T.float32(1)")
                                         + main(f"x: {T32}, y: {T32}", call("matmul", "x, y"))))["matmul"]
    assert not structural_equal(orig, other_body)

    def copies():
        return (with_attrs(orig, {"layout_free_buffers": (0,)}), with_attrs(orig, {"layout_free_buffers": (0,)}),
                with_attrs(other_body, {"layout_free_buffers": (0,)}))

    a, b, c = copies()
    assert structural_equal(a, b) and not structural_equal(a, c)
    assert all(f.unwritten_base() is not None for f in (a, b, c))
    written = copies()
    for f in written:
        assert f.text  # write them
    assert structural_equal(written[0], written[1]) and not structural_equal(written[0], written[2])
    assert structural_equal(a, written[0]) and not structural_equal(c, written[0])
    assert a.unwritten_base() is None and written[0].unwritten_base() is None


def test_synced_text_key_shortcut():
    """prim_func_text._states_attrs skips its ast read when a key is not spelled in the line;
    a line stating the attrs in another spelling is still kept."""
    from memcore_py.ir.text import prim_func_text as pft

    text = "@T.prim_func\ndef f(A: T.Buffer((4,), \"float32\")):\n    T.func_attr({'tirx.noalias': True})\n    A[0] = T.float32(1)\n"
    assert pft.synced_text(text, {"tirx.noalias": True}, False) is text
    new = pft.synced_text(text, {"tirx.noalias": True, "layout_free_buffers": (1,)}, False)
    assert 'T.func_attr({"layout_free_buffers": [1], "tirx.noalias": True})' in new or \
        'T.func_attr({"tirx.noalias": True, "layout_free_buffers": [1]})' in new
    assert new.count("T.func_attr") == 1
    assert pft._states_attrs("T.func_attr({'layout_free_buffers': [1]})", {"layout_free_buffers": (1,)})
    assert not pft._states_attrs('T.func_attr({"tirx.noalias": True})', {"layout_free_buffers": (1,)})


def test_synced_text_signature_end_without_tokens():
    """prim_func_text._signature_end(tokens=False) counts brackets of a one-line signature
    outside its strings; multi-line signatures and strings with brackets still tokenize."""
    from memcore_py.ir.text import prim_func_text as pft

    one = ['def f(A: T.Buffer((4,), "float32")):', "    T.evaluate(0)"]
    assert pft._signature_end(one, 0, tokens=False)[0] == pft._signature_end(one, 0)[0] == 0
    multi = ['def f(A: T.Buffer((4,), "float32"),', '      B: T.Buffer((4,), "float32")):', "    T.evaluate(0)"]
    assert pft._signature_end(multi, 0, tokens=False)[0] == pft._signature_end(multi, 0)[0] == 1
    tricky = ['def f(A: T.Buffer(("(n", 4), "float32"),', '      B: T.Buffer((4,), "float32")):', "    pass"]
    assert pft._signature_end(tricky, 0, tokens=False)[0] == pft._signature_end(tricky, 0)[0] == 1
    text = "@T.prim_func\n" + "\n".join(multi) + "\n"
    synced = pft.synced_text(text, {"layout_free_buffers": (0,)}, False)
    assert synced.split("\n")[3] == '    T.func_attr({"layout_free_buffers": [0]})'
