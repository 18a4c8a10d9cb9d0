"""CanonicalizeBindings, the parts KillAfterLastUse relies on (spec §2.2).

Expected modules are TVM 0.27.0.post1's ``relax.transform.CanonicalizeBindings`` output for
the same input (obtained in the venv).
"""
import pytest

from memcore_py.errors import PassError
from memcore_py.ir.expr import DataflowVar, Var
from memcore_py.testing.lowering_programs import assert_pass_output, module_from_text
from memcore_py.transform import CanonicalizeBindings
from memcore_py.transform.canonicalize_bindings import canonicalize_bindings

T4 = 'R.Tensor((4,), dtype="float32")'


def test_trivial_chain_collapses_to_the_earliest_var():
    before = """
    @I.ir_module
    class Module:
        @R.function(pure=False)
        def main(x: R.Tensor((4,), "float32")):
            a = R.add(x, x)
            b = a
            c = b
            d = R.add(c, b)
            return d
    """
    expected = f"""
    @I.ir_module
    class Module:
        @R.function(pure=False)
        def main(x: {T4}) -> {T4}:
            a: {T4} = R.add(x, x)
            d: {T4} = R.add(a, a)
            return d
    """
    assert_pass_output(CanonicalizeBindings(), before, expected)


def test_match_cast_to_the_same_type_is_trivial_to_another_type_is_kept():
    before = """
    @I.ir_module
    class Module:
        @R.function(pure=False)
        def main(x: R.Tensor((4,), "float32")):
            a = R.add(x, x)
            b = R.match_cast(a, R.Tensor((4,), "float32"))
            c = R.match_cast(a, R.Tensor(ndim=1, dtype="float32"))
            d = R.add(b, c)
            return d
    """
    t1 = 'R.Tensor(dtype="float32", ndim=1)'
    expected = f"""
    @I.ir_module
    class Module:
        @R.function(pure=False)
        def main(x: {T4}) -> {t1}:
            a: {T4} = R.add(x, x)
            c: {t1} = R.match_cast(a, {t1})
            d: {t1} = R.add(a, c)
            return d
    """
    assert_pass_output(CanonicalizeBindings(), before, expected)


def test_get_item_of_a_known_tuple_reads_the_field():
    before = """
    @I.ir_module
    class Module:
        @R.function(pure=False)
        def main(x: R.Tensor((4,), "float32")):
            a = R.add(x, x)
            t = (a, x)
            u = t
            b = u[0]
            c = t[1]
            d = R.add(b, c)
            return d
    """
    expected = f"""
    @I.ir_module
    class Module:
        @R.function(pure=False)
        def main(x: {T4}) -> {T4}:
            a: {T4} = R.add(x, x)
            t: R.Tuple({T4}, {T4}) = a, x
            d: {T4} = R.add(a, x)
            return d
    """
    assert_pass_output(CanonicalizeBindings(), before, expected)


def test_repacking_every_field_in_order_is_a_copy():
    """``(p[0], p[1])`` is ``p``; ``(p[1], p[0])`` is a new tuple."""
    before = """
    @I.ir_module
    class Module:
        @R.function(pure=False)
        def main(p: R.Tuple(R.Tensor((4,), "float32"), R.Tensor((4,), "float32"))):
            a = p[0]
            b = p[1]
            c = (a, b)
            d = (b, a)
            return (c, d)
    """
    tt = f"R.Tuple({T4}, {T4})"
    expected = f"""
    @I.ir_module
    class Module:
        @R.function(pure=False)
        def main(p: {tt}) -> R.Tuple({tt}, {tt}):
            a: {T4} = p[0]
            b: {T4} = p[1]
            d: {tt} = b, a
            return (p, d)
    """
    assert_pass_output(CanonicalizeBindings(), before, expected)


def test_constants_are_inlined_and_their_bindings_stay():
    before = """
    @I.ir_module
    class Module:
        @R.function(pure=False)
        def main(x: R.Tensor((4,), "float32")):
            k = R.const(1.5, "float32")
            t = (k, x)
            j = t[0]
            a = R.add(x, j)
            b = R.add(a, k)
            return b
    """
    expected = f"""
    @I.ir_module
    class Module:
        @R.function(pure=False)
        def main(x: {T4}) -> {T4}:
            k: R.Tensor((), dtype="float32") = R.const(1.5, "float32")
            t: R.Tuple(R.Tensor((), dtype="float32"), {T4}) = R.const(1.5, "float32"), x
            a: {T4} = R.add(x, R.const(1.5, "float32"))
            b: {T4} = R.add(a, R.const(1.5, "float32"))
            return b
    """
    assert_pass_output(CanonicalizeBindings(), before, expected)


def test_dataflow_outputs_used_only_inside_become_dataflow_vars():
    """``gv = b`` folds into ``b``'s binding (gv is used after the block); ``unused_out``,
    never used outside the block, becomes a DataflowVar and leaves ``R.output``."""
    before = """
    @I.ir_module
    class Module:
        @R.function
        def main(x: R.Tensor((4,), "float32")):
            with R.dataflow():
                a = R.add(x, x)
                b = R.add(a, a)
                gv = b
                unused_out = R.add(a, x)
                R.output(gv, unused_out)
            return gv
    """
    expected = f"""
    @I.ir_module
    class Module:
        @R.function
        def main(x: {T4}) -> {T4}:
            with R.dataflow():
                a: {T4} = R.add(x, x)
                gv: {T4} = R.add(a, a)
                unused_out: {T4} = R.add(a, x)
                R.output(gv)
            return gv
    """
    after = assert_pass_output(CanonicalizeBindings(), before, expected)
    kinds = {b.var.name: type(b.var) for b in after["main"].body.blocks[0].bindings}
    assert kinds == {"a": DataflowVar, "gv": Var, "unused_out": DataflowVar}


def test_var_bound_to_dataflow_var_takes_over_its_binding():
    """``gv1 = a`` with ``gv1`` used after the block: ``a``'s binding now defines ``gv1``
    (a DataflowVar must not escape); ``lv = gv2`` with ``lv`` a DataflowVar is removed."""
    before = """
    @I.ir_module
    class Module:
        @R.function
        def main(x: R.Tensor((4,), "float32")):
            with R.dataflow():
                a = R.add(x, x)
                gv1 = a
                gv2 = R.add(gv1, gv1)
                lv = gv2
                gv3 = R.add(lv, gv1)
                R.output(gv1, gv3)
            y = R.add(gv1, gv3)
            return y
    """
    expected = f"""
    @I.ir_module
    class Module:
        @R.function
        def main(x: {T4}) -> {T4}:
            with R.dataflow():
                gv1: {T4} = R.add(x, x)
                gv2: {T4} = R.add(gv1, gv1)
                gv3: {T4} = R.add(gv2, gv1)
                R.output(gv1, gv3)
            y: {T4} = R.add(gv1, gv3)
            return y
    """
    assert_pass_output(CanonicalizeBindings(), before, expected)


def test_dataflow_var_feeding_one_output_match_cast_is_folded():
    before = """
    @I.ir_module
    class Module:
        @R.function
        def main(x: R.Tensor((4,), "float32")):
            with R.dataflow():
                a = R.add(x, x)
                gv = R.match_cast(a, R.Tensor(ndim=1, dtype="float32"))
                R.output(gv)
            return gv
    """
    t1 = 'R.Tensor(dtype="float32", ndim=1)'
    expected = f"""
    @I.ir_module
    class Module:
        @R.function
        def main(x: {T4}) -> {t1}:
            with R.dataflow():
                gv: {t1} = R.match_cast(R.add(x, x), {t1})
                R.output(gv)
            return gv
    """
    assert_pass_output(CanonicalizeBindings(), before, expected)


def test_symbolic_var_known_from_match_cast_is_substituted():
    """``n`` is 16 from the match_cast, which then casts to the value's own type (trivial)."""
    before = """
    @I.ir_module
    class Module:
        @R.function(pure=False)
        def main(x: R.Tensor((16,), "float32")):
            n = T.int64()
            y = R.match_cast(x, R.Tensor((n,), "float32"))
            z = R.add(y, y)
            s = R.shape([n, 2])
            w: R.Tensor((n,), "float32") = R.call_packed("f", z, s, ty_args=(R.Tensor((n,), "float32"),))
            return w
    """
    t16 = 'R.Tensor((16,), dtype="float32")'
    expected = f"""
    @I.ir_module
    class Module:
        @R.function(pure=False)
        def main(x: {t16}) -> {t16}:
            z: {t16} = R.add(x, x)
            s: R.Shape([16, 2]) = R.shape([16, 2])
            w: {t16} = R.call_packed("f", z, s, ty_args=({t16},))
            return w
    """
    assert_pass_output(CanonicalizeBindings(), before, expected)


def test_branch_made_more_precise_is_cast_back_to_the_if_type():
    before = """
    @I.ir_module
    class Module:
        @R.function(pure=False)
        def main(x: R.Tensor((16,), "float32"), c: R.Tensor((), "bool")):
            n = T.int64()
            if c:
                y = R.match_cast(x, R.Tensor((n,), "float32"))
                s = R.shape([n])
                r = s
            else:
                r = R.shape([4])
            return r
    """
    expected = """
    @I.ir_module
    class Module:
        @R.function(pure=False)
        def main(x: R.Tensor((16,), dtype="float32"), c: R.Tensor((), dtype="bool")) -> R.Shape(ndim=1):
            if c:
                s: R.Shape([16]) = R.shape([16])
                then_branch_with_dyn: R.Shape(ndim=1) = R.match_cast(s, R.Shape(ndim=1))
                r: R.Shape(ndim=1) = then_branch_with_dyn
            else:
                else_branch_with_dyn: R.Shape(ndim=1) = R.match_cast(R.shape([4]), R.Shape(ndim=1))
                r: R.Shape(ndim=1) = else_branch_with_dyn
            return r
    """
    assert_pass_output(CanonicalizeBindings(), before, expected)


def test_inconsistent_match_casts_raise():
    mod = module_from_text("""
    @I.ir_module
    class Module:
        @R.function(pure=False)
        def main(x: R.Tensor((16,), "float32"), w: R.Tensor((8,), "float32")):
            n = T.int64()
            y = R.match_cast(x, R.Tensor((n,), "float32"))
            z = R.match_cast(w, R.Tensor((n,), "float32"))
            return z
    """)
    with pytest.raises(PassError, match=r"must be consistent.*'y'.*n is.*'z'.*function 'main'"):
        CanonicalizeBindings()(mod)


def test_blocks_of_the_same_kind_merge_and_dataflow_stays():
    before = """
    @I.ir_module
    class Module:
        @R.function
        def main(x: R.Tensor((4,), "float32")):
            a = R.add(x, x)
            with R.dataflow():
                b = R.add(a, a)
                R.output(b)
            c = R.add(b, b)
            return c
    """
    expected = f"""
    @I.ir_module
    class Module:
        @R.function
        def main(x: {T4}) -> {T4}:
            a: {T4} = R.add(x, x)
            with R.dataflow():
                b: {T4} = R.add(a, a)
                R.output(b)
            c: {T4} = R.add(b, b)
            return c
    """
    assert_pass_output(CanonicalizeBindings(), before, expected)


def test_if_branches_use_the_outer_source():
    before = """
    @I.ir_module
    class Module:
        @R.function(pure=False)
        def main(x: R.Tensor((4,), "float32"), c: R.Tensor((), "bool")):
            a = R.add(x, x)
            b = a
            if c:
                d = b
                e = R.add(d, d)
                r = e
            else:
                r = b
            return r
    """
    expected = f"""
    @I.ir_module
    class Module:
        @R.function(pure=False)
        def main(x: {T4}, c: R.Tensor((), dtype="bool")) -> {T4}:
            a: {T4} = R.add(x, x)
            if c:
                e: {T4} = R.add(a, a)
                r: {T4} = e
            else:
                r: {T4} = a
            return r
    """
    assert_pass_output(CanonicalizeBindings(), before, expected)


def test_nothing_to_do_returns_the_function():
    mod = module_from_text("""
    @I.ir_module
    class Module:
        @R.function(pure=False)
        def main(x: R.Tensor((4,), "float32")):
            a = R.add(x, x)
            return a
    """)
    assert canonicalize_bindings(mod["main"]) is mod["main"]
    assert CanonicalizeBindings.name == "canonicalize-bindings"


# ---------------------------------------------------------------- match_cast_substitutes
def _t(*dims):
    from memcore_py.ir.prim import PrimVar
    from memcore_py.ir.types import TensorType

    return TensorType(tuple(PrimVar(d, "int64") if isinstance(d, str) else d for d in dims), "float32")


@pytest.mark.parametrize(("pattern", "value", "substitutes"), [
    (_t("m"), _t("n"), True),            # m becomes n: the symbolic stage substitutes
    (_t("n"), _t("n"), False),           # n is n
    (_t("m", 4), _t(8, 4), True),        # m becomes 8
    (_t(4, 4), _t("n", 4), False),       # no bare variable in the pattern
    (_t("m"), _t("n", 4), False),        # ranks differ: nothing is matched
    (_t("m"), None, False),              # the value's type is unknown
])
def test_match_cast_substitutes_is_the_symbolic_stage_s_question(pattern, value, substitutes):
    from memcore_py.transform.canonicalize_bindings import match_cast_substitutes

    assert match_cast_substitutes(pattern, value) is substitutes


def test_match_cast_substitutes_agrees_with_the_stage_on_a_function():
    """Where match_cast_substitutes says no, the stage leaves the function as it is; where it
    says yes, the stage rewrites the variable's type."""
    from memcore_py.transform.canonicalize_bindings import canonicalize_tir_variables

    def func(pattern):
        return module_from_text(f'''
@R.function
def main(x: R.Tensor(("n",), dtype="float32")) -> R.Tensor(("n",), dtype="float32"):
    n = T.int64()
    m = T.int64()
    y = R.match_cast(x, R.Tensor(({pattern},), dtype="float32"))
    z = R.add(x, x)
    return z
''')["main"]

    same = func("n")
    assert canonicalize_tir_variables(same, "main") is same
    other = func("m")
    assert canonicalize_tir_variables(other, "main") is not other
