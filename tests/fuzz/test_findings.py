"""Regression tests for the fuzzing run of issue 9: bugs B1-B7, round trips R1-R8.

Each test holds the minimal input the fuzzer found and checks the class it stands for (not
only the instance): e.g. B1 feeds every pathological whitespace shape to the whole parser,
B4 holds Apache TVM's own accept/refuse answers for annotations that contradict values.
"""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from _helpers import run_cli, tvm_from_source

import memcore
from memcore_py import parse
from memcore_py.errors import MemcoreError, ParseError, PassError, PlanningError
from memcore_py.ir import structural_equal, well_formed, well_formed_report

HEAD = "# from tvm.script import relax as R\n# from tvm.script import tir as T\n\n"


def _src(body: str) -> str:
    return HEAD + textwrap.dedent(body).lstrip("\n")


# ------------------------------------------------------------------------------ B1
_LINEAR_SCRIPT = r"""
import sys, time
from memcore_py import parse
from memcore_py.errors import ParseError
from memcore_py.examples import example_text
N = int(sys.argv[1])
base = example_text("mlp").split("\n")
inputs = []
head = "# from tvm.script import relax as R\n\n@R.function\n"
for sep in ("\u00a0x", "\u3000", "\u2003x", "\x0bx", "x", "", "= x", "#"):
    inputs.append(head + 'def main(x: R.Tensor((4,), "float32")):\n    return' + " " * N + sep + "\n")
    inputs.append(head + " " * N + sep + "\ndef main(x: R.Tensor((4,), 'float32')):\n    return x\n")
# long runs of spaces / tabs inside real lines: decorator, class, def, assignment, call
for i, line in enumerate(base):
    if line.strip().startswith(("@", "class", "def", "lv", "gv", "alloc", "T.func_attr")):
        for ws in (" ", "\t"):
            for cut in (line.find(" ", len(line) - len(line.lstrip()) + 1), line.find("("), line.find("=")):
                if cut > 0:
                    for sep in ("\u00a0", "x", ""):
                        inputs.append("\n".join(base[:i] + [line[:cut] + ws * N + sep + line[cut:]] + base[i + 1:]))
worst = 0.0
for text in inputs:
    t = time.perf_counter()
    try:
        parse(text)
    except ParseError:
        pass
    worst = max(worst, time.perf_counter() - t)
print(len(inputs), worst)
"""


def test_b1_parsing_is_linear_on_pathological_whitespace():
    """200k-character whitespace runs before non-ASCII spaces, at the end of lines and inside
    decorators, class and def lines, annotations and calls: all parse or fail at once. A
    quadratic scan would take minutes per input (the fuzzer's 20k-space input took 7.7 s);
    the subprocess is a hang guard, not a speed check (speed: bench/bench_ir_text.py)."""
    proc = subprocess.run([sys.executable, "-c", _LINEAR_SCRIPT, "200000"], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    n, worst = proc.stdout.split()
    assert int(n) > 50


def test_b1_non_ascii_space_is_a_clear_error():
    src = _src('''
        @R.function
        def main(x: R.Tensor((4,), "float32")):
            return\u00a0x
        ''')
    with pytest.raises(ParseError, match=r"character U\+00A0 \(NO-BREAK SPACE\)"):
        parse(src)


# ------------------------------------------------------------------------------ B2
B2 = _src('''
    @R.function
    def main() -> R.Tensor((4611686018427387904,), "float32"):
        storage = R.memory.alloc_storage(R.shape([8]), 0, "global", "uint8")
        a = R.memory.alloc_tensor(storage, 0, R.shape([4611686018427387904]), "float32")
        return a
    ''')


def test_b2_overflowing_size_is_ill_formed_and_named():
    problems = well_formed_report(parse(B2))
    assert any("binding 1 ('a')" in p and "does not fit in int64" in p for p in problems), problems


@pytest.mark.parametrize("annotation", ["R.Object", 'R.Tensor(ndim=1, dtype="float32")'])
def test_b2_overflow_hidden_by_annotation_is_still_found(annotation):
    src = B2.replace("    a = R.memory", f"    a: {annotation} = R.memory").replace(
        '-> R.Tensor((4611686018427387904,), "float32")', "")
    problems = well_formed_report(parse(src))
    assert any("allocation of binding 1 ('a')" in p and "does not fit in int64" in p for p in problems), problems


def test_b2_planner_raises_typed_error_naming_binding():
    from memcore_py.planning.check import collect_planned_tensors

    mod = parse(B2)
    with pytest.raises(PlanningError, match="'a'.*int64"):
        collect_planned_tensors(mod["main"], "main")


def test_b2_negative_dim_is_ill_formed():
    mod = parse(_src('''
        @R.function
        def main(x: R.Tensor((-4,), "float32")):
            return x
        '''))
    assert any("dim 0 is negative" in p for p in well_formed_report(mod))


def test_b2_builtin_alloc_overflow_is_a_pass_error():
    from memcore_py.transform.static_plan_block_memory import plan_block_memory

    mod = parse(_src('''
        @R.function
        def main():
            a: R.Tensor((4611686018427387904, 4), "float32") = R.builtin.alloc_tensor(R.shape([4611686018427387904, 4]), R.dtype("float32"), 0)
            return a
        '''))
    assert not well_formed(mod)
    with pytest.raises(PassError, match="'a'.*does not fit in int64"):
        plan_block_memory(mod, "tvm")


@pytest.mark.parametrize("cmd", ["plan", "check"])
def test_b2_cli_one_line_error(capsys, tmp_path, cmd):
    path = tmp_path / "b2.py"
    path.write_text(B2)
    rc, out, err = run_cli(capsys, cmd, path)
    assert rc == 1
    assert err.count("\n") == 1 and err.startswith(f"memcore {cmd}: error: ")
    assert "int64" in err and "Traceback" not in err


# ------------------------------------------------------------------------------ B3
B3 = _src('''
    @R.function
    def main(x: R.Tensor((1, 4), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        k0 = T.int64()
        with R.dataflow():
            lv4 = R.match_cast(x, R.Tensor((k0, 4), dtype="float32"))
            lv7 = R.reshape(lv4, R.shape([k0 * 4]))
            R.output(lv7)
        return lv7
    ''')

# What Apache TVM 0.27's CanonicalizeBindings prints for B3 (tests/oracle checks it live).
B3_TVM = _src('''
    @R.function
    def main(x: R.Tensor((1, 4), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        with R.dataflow():
            lv7: R.Tensor((4,), dtype="float32") = R.reshape(x, R.shape([4]))
            R.output(lv7)
        return lv7
    ''')


def test_b3_canonicalize_substitutes_symbolic_vars_inside_call_arguments():
    from memcore_py.transform import CanonicalizeBindings

    out = CanonicalizeBindings()(parse(B3))
    assert well_formed(out)
    assert structural_equal(out, parse(B3_TVM))


def test_b3_kill_after_last_use_on_random_module_37():
    from memcore_py.testing import random_module
    from memcore_py.transform import KillAfterLastUse

    assert well_formed(KillAfterLastUse()(random_module(37, 30)))


def test_b3_prim_value_argument_is_substituted_too():
    from memcore_py.transform import CanonicalizeBindings

    out = CanonicalizeBindings()(parse(_src('''
        @R.function(pure=False)
        def main(x: R.Tensor((1, 4), dtype="float32")):
            k0 = T.int64()
            lv4 = R.match_cast(x, R.Tensor((k0, 4), dtype="float32"))
            y: R.Object = R.call_packed("f", lv4, R.prim_value(k0 + 1), ty_args=(R.Object,))
            return y
        ''')))
    assert well_formed(out)
    assert "k0" not in out.script()


# ------------------------------------------------------------------------------ B4
def _b4_case(body: str) -> str:
    return _src(body)


#: name -> (source, Apache TVM 0.27's parser accepts it). Recorded from TVM's own parser
#: (tests/oracle/test_parse_refusals.py re-checks them wherever TVM is installed).
B4_CASES = {
    "static_dim": ('''
        @R.function
        def main() -> R.Tensor((4, 0), "uint8"):
            with R.dataflow():
                alloc: R.Tensor((4, 2), "uint8") = R.builtin.alloc_tensor(R.shape([4, 2]), R.dtype("uint8"), 0)
                gv: R.Tensor((4, 0), "uint8") = alloc
                R.output(gv)
            return gv
        ''', False),
    "tuple_as_tensor": ('''
        @R.function
        def main(x: R.Tensor((4,), "float32")):
            t: R.Tensor((4,), "float32") = (x, x)
            return t
        ''', False),
    "rank": ('''
        @R.function
        def main(x: R.Tensor((4,), "float32")):
            t: R.Tensor((4, 1), "float32") = x
            return t
        ''', False),
    "dtype": ('''
        @R.function
        def main(x: R.Tensor((4,), "float32")):
            t: R.Tensor((4,), "float16") = x
            return t
        ''', False),
    "shape_value": ('''
        @R.function
        def main(x: R.Tensor((4,), "float32")):
            s: R.Shape([5]) = R.shape([4])
            return s
        ''', False),
    "prim_dtype": ('''
        @R.function
        def main(x: R.Tensor((4,), "float32")):
            s: R.Prim("float32") = R.prim_value(T.int64(3))
            return s
        ''', False),
    "tensor_as_shape": ('''
        @R.function
        def main(x: R.Tensor((4,), "float32")):
            s: R.Shape([4]) = x
            return s
        ''', False),
    "tuple_length": ('''
        @R.function
        def main(x: R.Tensor((4,), "float32")):
            t: R.Tuple(R.Tensor((4,), "float32")) = (x, x)
            return t
        ''', False),
    "symbolic_cannot_disprove": ('''
        @R.function
        def main(x: R.Tensor((4,), "float32"), y: R.Tensor(("n",), "float32")):
            n = T.int64()
            t: R.Tensor((n,), "float32") = x
            return t
        ''', True),
    "object_to_tensor": ('''
        @R.function(pure=False)
        def main(x: R.Tensor((4,), "float32")):
            o: R.Object = R.call_packed("f", x, ty_args=(R.Object,))
            t: R.Tensor((4,), "float16") = o
            return t
        ''', True),
    "tensor_to_object": ('''
        @R.function
        def main(x: R.Tensor((4,), "float32")):
            t: R.Object = x
            return t
        ''', True),
    "alloc_annotation": ('''
        @R.function
        def main() -> R.Tensor((4, 2), "uint8"):
            alloc: R.Tensor((4, 3), "uint8") = R.builtin.alloc_tensor(R.shape([4, 2]), R.dtype("uint8"), 0)
            return alloc
        ''', False),
    "non_void_statement": ('''
        @R.function
        def main(x: R.Tensor((4,), "float32")):
            R.add(x, x)
            return x
        ''', False),
    "tuple_statement": ('''
        @R.function
        def main(x: R.Tensor((4,), "float32")):
            (x, x)
            return x
        ''', False),
}


@pytest.mark.parametrize("name", sorted(B4_CASES))
def test_b4_annotation_contradicting_value_is_refused_like_tvm(name):
    body, tvm_accepts = B4_CASES[name]
    src = _b4_case(body)
    if tvm_accepts:
        mod = parse(src)
        assert well_formed(mod)
        assert structural_equal(parse(mod.script()), mod)
    else:
        with pytest.raises(ParseError) as info:
            parse(src)
        assert info.value.line > 0


def test_b4_refusal_names_the_binding():
    with pytest.raises(ParseError, match=r"annotation of 'gv' contradicts its value: shape dim 1 is 2, not 0"):
        parse(_b4_case(B4_CASES["static_dim"][0]))


def test_b4_well_formed_catches_contradictions_built_in_python():
    from memcore_py.ir import BlockBuilder  # noqa: F401  (the builder infers; build by hand)
    from memcore_py.ir.expr import BindingBlock, Function, SeqExpr, Var, VarBinding
    from memcore_py.ir.types import TensorType

    x = Var("x", TensorType((4, 2), "uint8"))
    gv = Var("gv", TensorType((4, 0), "uint8"))
    func = Function([x], SeqExpr([BindingBlock([VarBinding(gv, x)])], gv), TensorType((4, 0), "uint8"))
    problems = well_formed_report(func)
    assert any("'gv'" in p and "contradicts" in p for p in problems), problems


# ------------------------------------------------------------------------------ B5, B6
@pytest.mark.parametrize("limit", [10**400, -(10**400), float("inf"), float("nan"), -1, 0])
def test_b5_time_limit_out_of_range_is_invalid_array_error(limit):
    with pytest.raises(memcore.InvalidArrayError, match="time_limit"):
        memcore.plan_offsets([0], [1], [8], time_limit=limit)


@pytest.mark.parametrize("n_steps", [2**62, 2**63 - 3])
def test_b6_live_profile_too_big_to_allocate_is_invalid_array_error(n_steps):
    with pytest.raises(memcore.InvalidArrayError, match="n_steps"):
        memcore.live_profile([0], [1], [8], n_steps=n_steps)


# ------------------------------------------------------------------------------ B7
B7 = _src('''
    @R.function(pure=False)
    def main(x: R.Tensor((4,), "float32")):
        o: R.Any = R.call_packed("f", x, foo=R.Any, sinfo_args=(R.Object,))
        return o
    ''')


def test_b7_non_value_attribute_is_refused():
    with pytest.raises(ParseError, match="R.Any is not an attribute value"):
        parse(B7)


@pytest.mark.parametrize("argv", [("fmt",), ("plan", "--print-ir"), ("check",)])
def test_b7_cli_reports_one_line(capsys, tmp_path, argv):
    path = tmp_path / "b7.py"
    path.write_text(B7)
    rc, out, err = run_cli(capsys, *argv, path)
    assert rc == 1 and out == ""
    assert err.count("\n") == 1 and f"{path}:" in err and "Traceback" not in err


def test_cli_internal_error_is_one_line(capsys, monkeypatch):
    """Whatever escapes a subcommand (here a simulated bug) is one line, status 3."""
    import memcore_py.cli.fmt as fmt

    def boom(args, out=None):
        raise ZeroDivisionError("simulated bug")

    monkeypatch.setattr(fmt, "run", boom)
    rc, out, err = run_cli(capsys, "fmt", "x.py")
    assert rc == 3
    assert err.count("\n") == 1 and "internal error: ZeroDivisionError: simulated bug" in err


def test_memcore_errors_escaping_a_subcommand_are_one_line(capsys, monkeypatch):
    import memcore_py.cli.fmt as fmt

    def typed(args, out=None):
        raise ParseError("bad token", 3, 7, "x = $")

    monkeypatch.setattr(fmt, "run", typed)
    rc, out, err = run_cli(capsys, "fmt", "x.py")
    assert rc == 1 and err == "memcore fmt: error: 3:7: bad token\n"
    assert isinstance(ParseError("m"), MemcoreError)


# ------------------------------------------------------------------------------ R1-R8
def _round_trip(src: str):
    """parse -> print -> parse: equal modules and a fixed point of the printer."""
    mod = parse(src)
    text = mod.script()
    again = parse(text)
    assert structural_equal(mod, again), text
    assert again.script() == text
    return mod


@pytest.mark.parametrize("value", ["f\b\f\x01\x7f", "tab\there", "a\u00a0\U0001F600z", "x\x001", "back\\slash \"q\""])
def test_r1_strings_with_escapes_round_trip(value):
    import json

    mod = _round_trip(_src(f'''
        @R.function(pure=False)
        def main(x: R.Tensor((4,), "float32")):
            o: R.Object = R.call_packed({json.dumps(value)}, x, ty_args=(R.Object,))
            return o
        '''))
    assert mod["main"].body.blocks[0].bindings[0].value.op.global_symbol == value


def test_r1_python_escapes_are_decoded():
    from memcore_py.ir.text.lexer import string_value

    assert string_value(r'"\b\f\a\v\101\x41\u0041\N{BULLET}\q"') == "\b\f\a\vAAA\u2022\\q"


@pytest.mark.parametrize("dim", ["n * 0.0", "n + 1.5", "0.5"])
def test_r2_float_in_a_shape_dimension_is_refused(dim):
    with pytest.raises(ParseError):
        parse(_src(f'''
            @R.function
            def main(x: R.Tensor(("{dim}",), "float32")):
                return x
            '''))


def test_r3_void_tuple_statement_prints_parseable():
    from memcore_py.ir.expr import BindingBlock, Function, SeqExpr, Tuple, Var, VarBinding
    from memcore_py.ir.module import IRModule
    from memcore_py.ir.types import TensorType, TupleType

    x = Var("x", TensorType((4,), "float32"))
    func = Function([x], SeqExpr([BindingBlock([VarBinding(Var("v", TupleType(())), Tuple([]))])], x),
                    TensorType((4,), "float32"))
    mod = IRModule({"main": func})
    assert structural_equal(parse(mod.script()), mod)


@pytest.mark.parametrize("body", [
    ["T.evaluate(0)", 'T.func_attr({"tir.noalias": True})'],
    ["T.evaluate(0)", 'T.func_attr({"tir.noalias": True})', "for i in range(4):", "    T.evaluate(i)"],
])
def test_r4_func_attr_not_first_is_printed_once(body):
    lines = "\n".join("        " + b for b in body)
    mod = _round_trip(HEAD + "# from tvm.script import ir as I\n\n@I.ir_module\nclass Module:\n"
                      "    @T.prim_func(private=True)\n    def f(a: T.Buffer((4,), \"float32\")):\n" + lines +
                      "\n\n    @R.function\n    def main(x: R.Tensor((4,), \"float32\")):\n        return x\n")
    assert mod.script().count("T.func_attr") == 1
    assert mod["f"].attrs == {"tir.noalias": True}


def test_r5_prim_value_types_survive_printing():
    mod = _round_trip(_src('''
        @R.function
        def main(x: R.Tensor(("n",), "float32")):
            n = T.int64()
            t = (n,)
            u = R.prim_value(n + 1)
            return (t, u, (n,))
        '''))
    from memcore_py.ir.functor import value_type

    # issue 32: a derived prim type holds no value, as TVM 0.27's (``R.Tuple(T.int64)``)
    assert value_type(mod["main"].body.body).fields[2].fields[0].value is None


def test_r6_contradicting_ty_args_refused_and_compatible_ones_kept():
    with pytest.raises(ParseError, match="ty_args contradicts"):
        parse(_src('''
            @R.function
            def main():
                a: R.Tensor((4,), "float32") = R.builtin.alloc_tensor(R.shape([4]), R.dtype("float32"), 0, ty_args=(R.Tensor((8,), "float32"),))
                return a
            '''))
    mod = _round_trip(_src('''
        @R.function
        def main():
            a: R.Tensor((4,), "float32") = R.builtin.alloc_tensor(R.shape([4]), R.dtype("float32"), 0, ty_args=(R.Tensor(ndim=1, dtype="float32"),))
            return a
        '''))
    assert mod["main"].body.blocks[0].bindings[0].value.ty_args[0].shape is None


def test_r7_tab_indented_prim_func_round_trips():
    _round_trip(HEAD + "# from tvm.script import ir as I\n\n" + (
        "@I.ir_module\nclass Module:\n\t@T.prim_func(private=True)\n\tdef f(a: T.Buffer((4,), \"float32\")):\n"
        "\t\tT.evaluate(0)\n\n\t@R.function\n\tdef main(x: R.Tensor((4,), \"float32\")):\n\t\treturn x\n"))


@pytest.mark.parametrize("name", ["R", "T", "I", "cls", "metadata", "True", "lambda"])
def test_r8_symbolic_var_named_like_a_printer_alias_is_refused(name):
    for src in (f'''
        @R.function
        def main(x: R.Tensor(("{name}",), "float32")):
            return x
        ''', f'''
        @R.function
        def main(x: R.Tensor((4,), "float32")):
            {name} = T.int64()
            y = R.match_cast(x, R.Tensor(({name},), "float32"))
            return y
        '''):
        # "True" in a dimension string is the boolean literal (a condition), not a name
        with pytest.raises(ParseError, match=f"(symbolic var|dimension string) '{name}'"):
            parse(_src(src))


def test_r8_printer_renames_a_body_symbolic_var_named_like_the_module():
    from memcore_py.transform import StaticPlanBlockMemory

    mod = parse(_src('''
        @R.function
        def main(x: R.Tensor((4,), "float32")):
            Module = T.int64()
            y = R.match_cast(x, R.Tensor((Module,), "float32"))
            z = R.builtin.alloc_tensor(R.shape([Module]), R.dtype("float32"), 0)
            return z
        '''))
    planned = StaticPlanBlockMemory()(mod)
    assert structural_equal(parse(planned.script()), planned)


def test_campaign_finding_non_ascii_prim_func_name_is_refused():
    """tools/fuzz.py, seed 10094757: a PrimFunc parameter with a non-ASCII name parsed but
    its printed module did not; names are ASCII in both parts now."""
    src = HEAD + "# from tvm.script import ir as I\n\n@I.ir_module\nclass Module:\n    @T.prim_func(private=True)\n" \
        "    def f(a: T.Buffer((4,), \"float32\"), \u1725b: T.Buffer((4,), \"float32\")):\n        T.evaluate(0)\n"
    with pytest.raises(ParseError, match="non-ASCII"):
        parse(src)


# ------------------------------------------------------------------------------ bridge B9-B13
# Findings of the bridge campaign (issue 32): ``from_tvm`` against memcore's reading of TVM's
# text of the same module, and memcore's passes against TVM's. TVM is the oracle: its text,
# its parser's reading of that text, its passes' answers.
_BRIDGE_HEAD = "# from tvm.script import ir as I\n# from tvm.script import tirx as T\n# from tvm.script import relax as R\n"


def _tvm_module(body: str):
    pytest.importorskip("tvm")
    return tvm_from_source(_BRIDGE_HEAD + "@I.ir_module\nclass Module:\n" + body)


def _bridge_verdict(m):
    from memcore_py.testing.fuzz_bridge import check_bridge

    info = {"listed": []}
    return check_bridge(m, info), info


# B11: a dim written ``T.int64()`` is a TIR variable with an empty name; TVM's text names it
# after its place in the module (a module ``v = TypeVar("v")``), which TVM's parser reads back
# as a variable named ``v``: the text does not give the module back.
_B11_PRIM_FUNC = '''
    @T.prim_func(private=True, s_tir=True)
    def add(A: T.Buffer((T.int64(8), T.int64(8)), "float32"), B: T.Buffer((T.int64(8), T.int64()), "float32")):
        T.evaluate(0)
'''
_B11_RELAX = '''
    @R.function
    def main(x: R.Tensor((T.int64(),), "float32")) -> R.Tensor(ndim=1, dtype="float32"):
        return x
'''


@pytest.mark.parametrize("body, dim", [
    (_B11_PRIM_FUNC, lambda m: m["add"].params[1].ty.shape[1]),
    (_B11_RELAX, lambda m: m["main"].params[0].ty.shape.values[0]),
], ids=["prim-func-parameter", "relax-parameter"])
def test_bridge_b11_an_unnamed_tir_variable_is_refused_when_the_module_is_read(body, dim):
    from memcore_py.tvm import TVMConversionError, from_tvm

    pytest.importorskip("tvm")
    m = _tvm_module(body)
    assert str(dim(m).name) == ""
    text = m.script()
    assert 'v = TypeVar("v")' in text  # TVM's name for it: a module TypeVar
    assert str(dim(tvm_from_source(text)).name) == "v"  # which TVM's parser reads as ``v``
    with pytest.raises(TVMConversionError, match="empty name"):
        from_tvm(m)  # at once, before any PrimFunc signature is read


def test_bridge_b11_the_refusal_is_a_listed_difference():
    m = _tvm_module(_B11_PRIM_FUNC)
    verdict, info = _bridge_verdict(m)
    assert verdict is None
    assert "unnamed-tir-variable" in info["listed"]


# B9: an attribute integer beyond int64 is an ``ffi.BigInt`` in TVM, which its text spells
# ``metadata["ffi.BigInt"][0]`` (the value omitted): both readings refuse it.
_B9_BIG = 99999999999999999999999999999999
_B9_PRIM_FUNC = f'''
    @T.prim_func(private=True, s_tir=True)
    def scale(A: T.Buffer((T.int64(8),), "float32"), B: T.Buffer((T.int64(8),), "float32")):
        T.func_attr({{"layout_free_buffers": [{_B9_BIG}]}})
        T.evaluate(0)
'''
_B9_RELAX = f'''
    @R.function
    def main(x: R.Tensor((2,), "float32")) -> R.Tensor((2,), "float32"):
        R.func_attr({{"foo": [-{_B9_BIG}]}})
        return x
'''

# B13 was this finding in a Relax function's attrs: memcore's parser read the metadata
# reference as a tensor Constant where ``from_tvm`` read the integer.
_B13_RELAX = f'''
    @R.function
    def main(x: R.Tensor(("n", 4), "float32")) -> R.Tensor(("n", 4), "float32"):
        R.func_attr({{"tir_var_lower_bound": {{"n": -{_B9_BIG}}}, "tir_var_upper_bound": {{"n": 16}}}})
        return x
'''


@pytest.mark.parametrize("body", [_B9_PRIM_FUNC, _B9_RELAX, _B13_RELAX],
                         ids=["prim-func-attr", "relax-function-attr", "b13-relax-bounds"])
def test_bridge_b9_an_integer_beyond_int64_is_refused_by_from_tvm_and_by_the_parser(body):
    from memcore_py.tvm import TVMConversionError, from_tvm

    m = _tvm_module(body)
    text = m.script()
    assert 'metadata["ffi.BigInt"][0]' in text  # TVM's spelling, its value omitted
    with pytest.raises(TVMConversionError, match=str(_B9_BIG)):
        from_tvm(m)  # at once, before any PrimFunc signature is read
    with pytest.raises(ParseError, match="ffi.BigInt"):
        parse(text)
    assert _bridge_verdict(m)[0] is None


# B12: a packed call without ``ty_args`` takes its binding's annotation as its type in TVM's
# parser; TVM's KillAfterLastUse (its binding canonicalization, substituting ``y`` by ``x``)
# rebuilds the call, derives ``R.Any`` for it and fails on the PrimFunc call it feeds.
# memcore keeps the type; the fuzzer recognises the case (DIFFERENCES.md).
_B12 = '''
    @T.prim_func(private=True)
    def add(A0: T.Buffer((T.int64(2), T.int64(16)), "int32"), out0: T.Buffer((T.int64(2), T.int64(16)), "int32")):
        T.evaluate(0)

    @R.function
    def main(x: R.Tensor((2, 16), dtype="int32")) -> R.Tensor((2, 16), dtype="int32"):
        R.func_attr({"relax.force_pure": True})
        cls = Module
        y: R.Tensor((2, 16), dtype="int32") = x
        lv1: R.Tensor((2, 16), dtype="int32") = R.call_packed("memcore.test.identity", y)
        alloc2: R.Tensor((2, 16), dtype="int32") = R.builtin.alloc_tensor(R.shape([2, 16]), R.dtype("int32"), 0, R.str("global"))
        cls.add(lv1, alloc2)
        return alloc2
'''


def test_bridge_b12_tvms_kill_after_last_use_failing_on_a_packed_call_typed_by_its_annotation_is_listed():
    tvm = pytest.importorskip("tvm")
    from tvm import relax

    import memcore_py.tvm as mtvm
    from memcore_py.testing.fuzz_bridge import _with_packed_call_types

    m = _tvm_module(_B12)
    with pytest.raises(ValueError, match=r"Argument 0 type mismatch: .*, given R\.Any"):
        relax.transform.KillAfterLastUse()(m)
    ours = mtvm.KillAfterLastUse(tvm_scoping=True)(m)
    spelled, n = _with_packed_call_types(m)  # TVM's pass once the call's type is its ty_args
    assert n == 1
    tvm.ir.assert_structural_equal(_with_packed_call_types(ours)[0], relax.transform.KillAfterLastUse()(spelled),
                                   map_free_vars=True)
    verdict, info = _bridge_verdict(m)
    assert verdict is None
    assert "packed-call-type-from-annotation" in info["listed"]
