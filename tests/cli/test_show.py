"""``memcore show FILE``: the module's text with each binding's storage, offset, lifetime and
live bytes as trailing comments; the text still parses to the same module; one-line errors."""
import io
import re

import pytest

import memcore_py
from _helpers import run_cli
from memcore_py.cli.show import annotate
from memcore_py.examples.models import list_models, load_model
from memcore_py.ir.structural import assert_structural_equal
from memcore_py.planning.check import collect_planned_tensors
from memcore_py.testing.memory_programs import chain_module, random_memory_module
from memcore_py.transform.static_plan_block_memory import plan_block_memory


@pytest.fixture
def chain_file(tmp_path):
    path = tmp_path / "chain.py"
    path.write_text(chain_module(4, width=4).script())
    return path


def comments(text):
    """``{code before the comment (stripped): comment}`` of the annotated lines."""
    out = {}
    for line in text.splitlines():
        code, sep, comment = line.partition("  # ")
        if sep:
            out[code.strip()] = comment
    return out


def test_chain_by_hand(capsys, chain_file):
    # chain_module(4, width=4): alloc 16 B live [0, 7], alloc1 8 B [3, 7], alloc2 16 B
    # [6, 10], alloc3 returned (not planned); all three planned tensors live at step 6.
    rc, out, err = run_cli(capsys, "show", chain_file, "--mode", "tvm")
    assert (rc, err) == (0, "")
    assert out.splitlines()[0] == ("# main: tvm 40 B in 3 storage(s) (+0.0%), lower bound 40 B; 3 planned tensors; "
                                   "peak 40 B at step 6")
    got = [(code.split(":")[0].split(" =")[0].split("(")[0], c) for code, c in comments(out).items()]
    assert got == [
        ("alloc", "tvm s0+0, 16 B, lifetime [0, 7]; step 0: live 16 B"),
        ("cls.kernel2", "step 1: live 16 B"),
        ("y", "step 2: live 16 B"),
        ("alloc1", "tvm s1+0, 8 B, lifetime [3, 7]; step 3: live 24 B"),
        ("cls.kernel2", "step 4: live 24 B"),
        ("y1", "step 5: live 24 B"),
        ("alloc2", "tvm s2+0, 16 B, lifetime [6, 10]; step 6: live 40 B PEAK"),
        ("cls.kernel3", "step 7: live 40 B; last use of alloc, alloc1"),
        ("y2", "step 8: live 16 B"),
        ("alloc3", "not planned; step 9: live 16 B"),
        ("cls.kernel2", "step 10: live 16 B; last use of alloc2"),
        ("y3", "step 11: live 0 B"),
    ]


def test_default_mode_is_arena(capsys, chain_file):
    rc, out, _ = run_cli(capsys, "show", chain_file, "--no-search")
    assert rc == 0 and out.startswith("# main: arena ")
    assert "arena s" in out and "tvm s" not in out


@pytest.mark.parametrize("name", list_models())
def test_shipped_models_round_trip_and_match_the_planned_ir(name):
    mod = load_model(name)
    text = annotate(mod, "arena", time_limit=None)
    assert_structural_equal(memcore_py.parse(text), mod)  # comments only
    # the offsets shown are those of the planned IR (arena mode, the same options)
    planned = plan_block_memory(mod, "arena", time_limit=None)
    for gv in mod.functions:
        if gv.name not in planned.tokens.program.function_names:
            continue
        ir = collect_planned_tensors(planned.module[gv.name], gv.name)
        offsets = {t.removesuffix("_raw"): o for s in ir.storages for t, o in zip(s.tensors, s.offset.tolist())}
        shown = {m.group(1): int(m.group(2)) for m in re.finditer(r"(\w+): R\.Tensor.*# arena s\d+\+(\d+),", text)}
        assert shown == offsets


@pytest.mark.parametrize("seed", range(25))
def test_every_binding_is_annotated(seed):
    mod = random_memory_module(seed)
    text = annotate(mod, "tvm", time_limit=None)
    assert_structural_equal(memcore_py.parse(text), mod)
    from memcore_py.testing.random_ir import count_bindings

    assert len(re.findall(r"  # (.*; )?step \d+: live ", text)) == count_bindings(mod)


def test_stdin(capsys, monkeypatch, chain_file):
    monkeypatch.setattr("sys.stdin", io.StringIO(chain_file.read_text()))
    rc, out, _ = run_cli(capsys, "show", "-", "--mode", "tvm")
    assert rc == 0 and "# tvm s2+0, 16 B, lifetime [6, 10]; step 6: live 40 B PEAK" in out


# Parses, but StaticPlanBlockMemory refuses the bound (a PassError from the analysis).
BAD_BOUND = '''# from tvm.script import ir as I
# from tvm.script import tirx as T
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n",), dtype="float32")) -> R.Tensor(("n",), dtype="float32"):
        n = T.int64()
        R.func_attr({"relax.force_pure": True, "tir_var_upper_bound": {"n": "big"}})
        alloc: R.Tensor((n,), dtype="float32") = R.builtin.alloc_tensor(R.shape([n]), R.dtype("float32"), 0, R.str("global"))
        return x
'''


def test_errors_are_one_line(capsys, tmp_path):
    rc, out, err = run_cli(capsys, "show", tmp_path / "missing.py")
    assert rc == 1 and out == "" and err.startswith("memcore show: error: cannot read") and err.count("\n") == 1
    bad = tmp_path / "bad.py"
    bad.write_text("@I.ir_module\nclass Module:\n    def f(:\n")
    rc, _, err = run_cli(capsys, "show", bad)
    assert rc == 1 and re.match(rf"memcore show: error: {re.escape(str(bad))}:\d+:\d+: ", err) and err.count("\n") == 1
    rejected = tmp_path / "rejected.py"
    rejected.write_text(BAD_BOUND)
    rc, _, err = run_cli(capsys, "show", rejected)
    assert rc == 1 and err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"memcore show: error: {rejected}: function 'main': attribute 'tir_var_upper_bound'")


def test_usage_errors(capsys, chain_file):
    assert run_cli(capsys, "show")[0] == 2
    assert run_cli(capsys, "show", chain_file, "--mode", "fast")[0] == 2


def test_listed_in_help(capsys):
    rc, out, err = run_cli(capsys, "--help")
    assert rc == 0 and re.search(r"show\s+The module's text with each binding's memory", out)


def test_cli_contract_on_mutated_texts():
    """Mutated module texts: exit 0, or one error line and never an internal error."""
    from memcore_py.cli.contract import check_cli
    from memcore_py.testing.fuzzing import default_corpus, mutate_text

    problems = []
    for i, text in enumerate(default_corpus(4)):
        for seed in range(4):
            problem = check_cli(mutate_text(text, 1000 * seed + i), "show", ("--no-search",))
            if problem:
                problems.append(problem)
    assert problems == []
