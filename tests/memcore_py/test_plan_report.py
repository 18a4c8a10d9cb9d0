"""Plan reports (memcore_py.cli.report) and the planned-IR checker (memcore_py.planning.check): numbers on small modules, symbolic sizes, independent checks."""
import numpy as np
import pytest

import memcore
import memcore_py
from memcore_py.errors import PlanningError
from memcore_py.cli.plan import plan_and_report
from memcore_py.cli.report import format_bytes, format_table
from memcore_py.planning.check import collect_planned_tensors, verify_planned

HEADER = '''# from tvm.script import ir as I
# from tvm.script import tirx as T
# from tvm.script import relax as R

@I.ir_module
class Module:
    @T.prim_func(private=True, s_tir=True)
    def add(a: T.Buffer((T.int64(2), T.int64(3)), "float32"), b: T.Buffer((T.int64(2), T.int64(3)), "float32"), c: T.Buffer((T.int64(2), T.int64(3)), "float32")):
        T.evaluate(0)

    @T.prim_func(private=True, s_tir=True)
    def add_dyn(var_a: T.handle, var_c: T.handle):
        n = T.int64()
        a = T.match_buffer(var_a, (n,))
        c = T.match_buffer(var_c, (n,))
        T.evaluate(0)

'''

# Spec §6.1 after CallTIRRewrite: y = x+x; z = y+y; w = z+x; v = w+z (v returned).
CHAIN = HEADER + '''    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
        R.func_attr({"relax.force_pure": True})
        cls = Module
        alloc: R.Tensor((2, 3), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("float32"), 0, R.str("global"))
        cls.add(x, x, alloc)
        y: R.Tensor((2, 3), dtype="float32") = alloc
        alloc1: R.Tensor((2, 3), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("float32"), 0, R.str("global"))
        cls.add(y, y, alloc1)
        z: R.Tensor((2, 3), dtype="float32") = alloc1
        alloc2: R.Tensor((2, 3), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("float32"), 0, R.str("global"))
        cls.add(z, x, alloc2)
        w: R.Tensor((2, 3), dtype="float32") = alloc2
        alloc3: R.Tensor((2, 3), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("float32"), 0, R.str("global"))
        cls.add(w, z, alloc3)
        v: R.Tensor((2, 3), dtype="float32") = alloc3
        return v
'''

# A dynamic length without an upper bound: the sizes stay symbolic.
DYNAMIC = HEADER + '''    @R.function
    def main(x: R.Tensor(("n",), dtype="float32")) -> R.Tensor(("n",), dtype="float32"):
        n = T.int64()
        R.func_attr({"relax.force_pure": True})
        cls = Module
        alloc: R.Tensor((n,), dtype="float32") = R.builtin.alloc_tensor(R.shape([n]), R.dtype("float32"), 0, R.str("global"))
        cls.add_dyn(x, alloc)
        alloc1: R.Tensor((n,), dtype="float32") = R.builtin.alloc_tensor(R.shape([n]), R.dtype("float32"), 0, R.str("global"))
        cls.add_dyn(alloc, alloc1)
        alloc2: R.Tensor((n,), dtype="float32") = R.builtin.alloc_tensor(R.shape([n]), R.dtype("float32"), 0, R.str("global"))
        cls.add_dyn(alloc1, alloc2)
        return alloc2
'''

# Planned by hand, wrongly: alloc and alloc1 are live together (alloc is read by the call
# writing alloc1) but share bytes 0..24 of one storage.
BAD_PLAN = HEADER + '''    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
        R.func_attr({"relax.force_pure": True})
        cls = Module
        storage: R.Object = R.memory.alloc_storage(R.shape([24]), R.prim_value(0), R.str("global"), R.dtype("float32"))
        alloc: R.Tensor((2, 3), dtype="float32") = R.memory.alloc_tensor(storage, R.prim_value(0), R.shape([2, 3]), R.dtype("float32"))
        cls.add(x, x, alloc)
        alloc1: R.Tensor((2, 3), dtype="float32") = R.memory.alloc_tensor(storage, R.prim_value(0), R.shape([2, 3]), R.dtype("float32"))
        cls.add(alloc, x, alloc1)
        alloc2: R.Tensor((2, 3), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("float32"), 0, R.str("global"))
        cls.add(alloc1, x, alloc2)
        return alloc2
'''


def test_chain_report_numbers():
    report = plan_and_report(memcore_py.parse(CHAIN), name="chain")
    (f,) = report.functions
    assert (f.name, f.n_bindings, f.n_allocs, f.n_planned) == ("main", 12, 4, 3)
    # TVM (spec §6.1): y's storage is reused by w; z has its own; v is returned (unplanned).
    assert (f.tvm_storages, f.tvm_bytes) == (2, 48)
    assert f.lower_bound == 48
    assert f.arena_bytes <= f.tvm_bytes
    assert f.excess(f.tvm_bytes) == 0.0
    assert report.tvm_seconds > 0 and report.arena_seconds > 0


def test_chain_lifetimes_from_the_planned_ir():
    planned = collect_planned_tensors(plan_and_report(memcore_py.parse(CHAIN)).tvm_module["main"], "main")
    assert planned.n_unplanned == 1
    by_tensor = {}
    for s in planned.storages:
        for name, start, end, size in zip(s.tensors, s.start, s.end, s.size):
            by_tensor[name] = (s.name, int(start), int(end), int(size))
    # TVM mode inserts the storages before their first tensor: storage, alloc, add, y,
    # storage1, alloc1, add, z, alloc2, add, w, alloc3, add, v.
    assert by_tensor["alloc"][1:] == (1, 6, 24)  # last read through y by the call at step 6
    assert by_tensor["alloc1"][1:] == (5, 12, 24)  # read through z at step 12
    assert by_tensor["alloc2"][0] == by_tensor["alloc"][0]  # w reuses y's storage
    verify_planned(planned)
    assert planned.lower_bound() == 48


def test_symbolic_sizes_are_expressions():
    # alloc and alloc1 (4*n bytes each) are live together at the second call: two storages
    report = plan_and_report(memcore_py.parse(DYNAMIC))
    (f,) = report.functions
    assert f.n_planned == 2
    assert f.tvm_bytes is None and f.tvm_expr == "8*n" and f.lower_bound is None
    assert f.excess(f.tvm_bytes) is None
    row = format_table([report]).splitlines()[2]
    assert row.split()[6] == "8*n"
    assert row.split()[8] == "?"  # the lower bound at unknown n


def test_symbolic_sizes_bound():
    report = plan_and_report(memcore_py.parse(DYNAMIC), bind={"n": 5})
    (f,) = report.functions
    assert f.tvm_bytes == f.arena_bytes == 40 and f.tvm_expr is None
    assert f.lower_bound == 40


def test_verify_planned_catches_shared_live_bytes():
    planned = collect_planned_tensors(memcore_py.parse(BAD_PLAN)["main"], "main")
    (storage,) = planned.storages
    assert storage.tensors == ("alloc", "alloc1")
    assert storage.start.tolist() == [1, 3] and storage.end.tolist() == [4, 6]
    with pytest.raises(memcore.PlanError, match="function 'main', storage 'storage'"):
        verify_planned(planned)


def test_alloc_tensor_without_storage_is_rejected():
    text = BAD_PLAN.replace(
        '        storage: R.Object = R.memory.alloc_storage(R.shape([24]), R.prim_value(0), R.str("global"), R.dtype("float32"))\n',
        "",
    ).replace("(x: R.Tensor((2, 3), dtype=\"float32\"))", "(x: R.Tensor((2, 3), dtype=\"float32\"), storage: R.Object)")
    with pytest.raises(PlanningError, match="must take a storage allocated earlier"):
        collect_planned_tensors(memcore_py.parse(text)["main"], "main")


@pytest.mark.parametrize(
    "n, text",
    [(None, "?"), (0, "0 B"), (1023, "1023 B"), (1024, "1.00 KiB"), (3 * 2**20 // 2, "1.50 MiB"), (2**31, "2.00 GiB")],
)
def test_format_bytes(n, text):
    assert format_bytes(n) == text


def test_storage_arrays_are_int64():
    planned = collect_planned_tensors(plan_and_report(memcore_py.parse(CHAIN)).arena_module["main"], "main")
    for s in planned.storages:
        for arr in (s.start, s.end, s.size, s.offset):
            assert arr.dtype == np.int64 and arr.flags.c_contiguous


# ----------------------------------------------------------------------------- the table
def _two_reports():
    from memcore_py.examples.models import model_text

    return [plan_and_report(memcore_py.parse(model_text(n)), name=n, runs=1) for n in ("resnet50", "llama_small")]


def test_table_rows_are_sorted_and_totals_are_the_sums():
    reports = _two_reports()
    lines = format_table(reports).splitlines()
    body = [ln.split() for ln in lines[2:] if not ln.startswith("-")]
    rows, totals = body[:-1], body[-1]
    assert [r[0] for r in rows] == sorted(rep.name for rep in reports)  # given resnet50 first
    funcs = [f for rep in reports for f in rep.functions]
    assert totals[:3] == ["total", str(len(funcs)), "functions"]
    assert int(totals[3]) == sum(f.n_bindings for f in funcs) == sum(int(r[2]) for r in rows)
    assert int(totals[6]) == sum(f.tvm_storages for f in funcs)
    lb = sum(f.lower_bound for f in funcs)
    assert " ".join(totals[7:9]) == format_bytes(sum(f.tvm_bytes for f in funcs))
    assert " ".join(totals[11:13]) == format_bytes(lb)
    assert totals[13] == f"{sum(f.tvm_bytes for f in funcs) / lb - 1:+.1%}"
    # one function: no totals row
    single = format_table(reports[:1]).splitlines()
    assert len(single) == 3 and not single[-1].startswith("total")


def test_table_total_of_a_symbolic_column_is_unknown():
    reports = [plan_and_report(memcore_py.parse(DYNAMIC), name="dyn"), plan_and_report(memcore_py.parse(CHAIN), name="chain")]
    totals = format_table(reports).splitlines()[-1].split()
    assert totals[0] == "total" and totals[7] == "-"  # 8*n + a number: no single total


class _Terminal(__import__("io").StringIO):
    def isatty(self):
        return True


def test_write_table_plain_when_piped_rich_on_a_terminal(monkeypatch):
    from memcore_py.cli.report import write_table

    reports = _two_reports()
    piped = __import__("io").StringIO()
    write_table(reports, piped)
    assert piped.getvalue() == format_table(reports) + "\n"
    pytest.importorskip("rich")
    term = _Terminal()
    write_table(reports, term)
    drawn = __import__("re").sub(r"\x1b\[[0-9;]*m", "", term.getvalue())  # without the colours
    assert "┃" in drawn and "│ total" in drawn and "llama_small" in drawn
    assert drawn.index("llama_small") < drawn.index("resnet50")
    # without rich, a terminal gets the plain table
    monkeypatch.setitem(__import__("sys").modules, "rich", None)
    monkeypatch.setitem(__import__("sys").modules, "rich.console", None)
    plain = _Terminal()
    write_table(reports, plain)
    assert plain.getvalue() == format_table(reports) + "\n"
