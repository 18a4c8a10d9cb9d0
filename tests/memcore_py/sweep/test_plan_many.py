"""memcore_py.sweep.plan_many: results in input order, equal across executors, equal to what
``memcore plan`` reports for the same module, cached by content, and failures as values."""
from __future__ import annotations

import pytest
from cli.test_plan_symbolic import SYMBOLIC  # a hand-worked module: TVM mode 32n + 32 bytes, lower bound 32n

from memcore_py.cli.plan import plan_and_report
from memcore_py.examples.models import model_text
from memcore_py.ir.text.parser import parse
from memcore_py.sweep import SweepError, SweepResult, Variant, plan_many

@pytest.fixture()
def symbolic_file(tmp_path):
    path = tmp_path / "sym.py"
    path.write_text(SYMBOLIC)
    return path


def test_bind_evaluates_the_plan_at_each_value(symbolic_file):
    values = (2, 16, 100)
    results = plan_many([Variant(symbolic_file, bind={"n": n}, mode="both") for n in values], executor="serial")
    assert [r.index for r in results] == [0, 1, 2]
    for n, r in zip(values, results):
        assert r.error is None, r.error
        assert r.tvm_bytes == 32 * n + 32
        assert r.lower_bound == 32 * n
        assert r.lower_bound <= r.arena_bytes <= r.tvm_bytes
        assert r.bind == {"n": n} and r.model == str(symbolic_file)


def test_without_bind_a_symbolic_total_is_its_expression(symbolic_file):
    (r,) = plan_many([Variant(symbolic_file, mode="tvm")], executor="serial")
    assert r.error is None and r.tvm_bytes is None and r.arena_bytes is None
    assert r.tvm_expr.replace(" ", "") in ("(32*n+32)", "(32+32*n)")


def test_figures_equal_what_memcore_plan_reports():
    """The shipped models, both modes: the sweep's sums are the report's (a different path:
    the CLI's plan_and_report plans both modes itself)."""
    from memcore_py.sweep.worker import Worker
    from memcore_py.sweep.variant import model_source

    names = ("resnet50", "llama_small")
    results = plan_many([Variant(m, mode="both") for m in names], executor="serial")
    for name, r in zip(names, results):
        mod = Worker().lowered(model_source(name), False)
        report = plan_and_report(mod, name=name, runs=1, time_limit=None)
        assert r.tvm_bytes == sum(f.tvm_bytes for f in report.functions)
        assert r.arena_bytes == sum(f.arena_bytes for f in report.functions)
        assert r.lower_bound == sum(f.lower_bound for f in report.functions)


def test_serial_and_process_pool_give_identical_results(symbolic_file):
    variants = [Variant(m, mode=mode) for m in ("resnet50", "llama_small", parse(model_text("resnet50")))
                for mode in ("tvm", "arena", "both")]
    variants += [Variant(symbolic_file, bind={"n": n}, mode="both") for n in (4, 8, 64)]
    serial = plan_many(variants, executor="serial")
    pooled = plan_many(variants, executor="process", jobs=2)
    assert len(pooled) == len(variants)
    for a, b in zip(serial, pooled):
        assert a.error is None and a.same_plan(b), (a, b)
    # an IRModule is planned as its text: the same figures as the shipped name
    assert serial[6].tvm_bytes == serial[0].tvm_bytes and serial[6].model == "<IRModule>"


def test_the_cache_replans_only_what_changed(tmp_path, symbolic_file):
    cache = tmp_path / "results.sqlite"
    variants = [Variant(symbolic_file, bind={"n": n}, mode="both") for n in (4, 8)] + [Variant("resnet50")]
    first = plan_many(variants, executor="serial", cache=cache)
    assert not any(r.cached for r in first)
    second = plan_many(variants, executor="serial", cache=cache)
    assert all(r.cached for r in second)
    assert all(a.same_plan(b) for a, b in zip(first, second))
    # the model's content changed: its variants are planned again, the others come from the cache
    c8 = 'c: R.Tensor((8,), dtype="float32") = R.builtin.alloc_tensor(R.shape([8])'
    symbolic_file.write_text(SYMBOLIC.replace(c8, c8.replace("8", "16")))
    third = plan_many(variants, executor="serial", cache=cache)
    assert [r.cached for r in third] == [False, False, True]
    assert third[0].tvm_bytes == 32 * 4 + 64
    # different options are different entries
    (fused,) = plan_many([Variant("resnet50", fuse=True)], executor="serial", cache=cache)
    assert not fused.cached


def test_a_file_that_is_not_a_cache_is_an_error(tmp_path):
    bad = tmp_path / "notes.sqlite"
    bad.write_text("these are my notes, not a database\n" * 100)
    with pytest.raises(SweepError, match="cannot be used as a sweep cache"):
        plan_many([Variant("resnet50")], executor="serial", cache=bad)
    assert bad.read_text().startswith("these are my notes")


def test_failures_are_values_and_the_sweep_goes_on(tmp_path, symbolic_file):
    broken = tmp_path / "broken.py"
    broken.write_text("@R.function\ndef main(:\n")
    variants = [
        Variant(tmp_path / "missing.py"),
        Variant(broken),
        Variant(symbolic_file, bind={"m": 3}),
        Variant("no_such_model"),
        Variant("resnet50"),
    ]
    for executor in ("serial", "process"):
        results = plan_many(variants, executor=executor, jobs=2)
        errors = [r.error for r in results]
        assert "no such file" in errors[0]
        assert errors[1].startswith("ParseError")
        assert "bind names m" in errors[2] and "they have: n" in errors[2]
        assert "not a shipped model" in errors[3]
        assert errors[4] is None and results[4].arena_bytes > 0
        assert all(r.tvm_bytes is None and r.arena_bytes is None for r in results[:4])


def test_failed_variants_are_not_cached(tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text("not a module")
    cache = tmp_path / "c.sqlite"
    plan_many([Variant(broken)], executor="serial", cache=cache)
    (again,) = plan_many([Variant(broken)], executor="serial", cache=cache)
    assert again.error and not again.cached


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"mode": "fastest"}, "Variant.mode must be one of"),
    ({"bind": {"n": -1}}, "int >= 0"),
    ({"bind": {"n": True}}, "int >= 0"),
    ({"bind": [("n", 1)]}, "must be a dict"),
    ({"fuse": 1}, "fuse must be a bool"),
    ({"time_limit": 0}, "time_limit must be None or a number > 0"),
])
def test_bad_variant_options_are_sweep_errors(kwargs, message):
    with pytest.raises(SweepError, match=message):
        Variant("resnet50", **kwargs)


@pytest.mark.parametrize(("call", "message"), [
    (lambda: plan_many(["resnet50"], executor="serial"), "expected a memcore_py.sweep.Variant"),
    (lambda: plan_many([Variant("resnet50")], executor="cluster"), "executor must be one of"),
    (lambda: plan_many([Variant("resnet50")], jobs=0), "jobs must be an int >= 1"),
    (lambda: plan_many([Variant(3.5)], executor="serial"), None),
])
def test_bad_arguments_are_sweep_errors(call, message):
    if message is None:  # a model of an unknown kind is that variant's error
        (r,) = call()
        assert "must be a shipped model name, a path or an IRModule" in r.error
        return
    with pytest.raises(SweepError, match=message):
        call()


def test_a_local_ray_gives_the_serial_results(symbolic_file):
    pytest.importorskip("ray", reason="the ray extra (installed by the README's test command)")
    variants = [Variant(m, mode=mode) for m in ("resnet50", "llama_small") for mode in ("tvm", "arena")]
    variants += [Variant(symbolic_file, bind={"n": n}, mode="both") for n in (4, 8, 64)] + [Variant("no_such_model")]
    serial = plan_many(variants, executor="serial")
    done = []
    on_ray = plan_many(variants, executor="ray", jobs=2, progress=done.append)
    assert len(on_ray) == len(variants) and sum(done) == len(variants) - 1  # the bad model never reaches Ray
    for a, b in zip(serial, on_ray):
        assert a.same_plan(b), (a, b)
    assert on_ray[-1].error and "not a shipped model" in on_ray[-1].error
    import ray

    assert not ray.is_initialized()  # the local Ray started for the call is shut down


def test_ray_missing_is_a_sweep_error(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "ray", None)  # import ray raises ImportError
    with pytest.raises(SweepError, match=r"executor='ray' needs Ray: pip install"):
        plan_many([Variant("resnet50")], executor="ray")


def test_results_print_as_a_table_and_json():
    import json

    results = plan_many([Variant("resnet50", mode="tvm")], executor="serial")
    table = results.to_table().splitlines()
    assert table[0].split()[:3] == ["index", "model", "bind"] and "resnet50" in table[1]
    doc = json.loads(results.to_json())
    assert SweepResult(**doc["results"][0]).same_plan(results[0])


def test_graph_json_and_flat_csv_problems(tmp_path):
    """Relay's plan and arena mode of a graph-executor JSON, and a packed CSV problem, equal to
    what memcore plan's readers give for the same files."""
    import gzip
    import json
    from pathlib import Path

    from memcore_py.cli.plan_flat import plan_flat_file
    from memcore_py.cli.plan_graph import plan_graph_file

    with gzip.open(Path(__file__).resolve().parents[2] / "data" / "relay" / "mobilenet_O3.json.gz", "rt") as fh:
        graph = tmp_path / "mobilenet.json"
        graph.write_text(json.dumps(json.load(fh)["graph_json"]))
    csv = tmp_path / "p.csv"
    csv.write_text("id,lower,upper,size\n0,0,2,32\n1,1,3,16\n2,2,4,64\n3,3,5,8\n")
    results = plan_many([Variant(graph, mode="both"), Variant(csv), Variant(csv, mode="tvm"),
                         Variant(graph, bind={"n": 2})], executor="serial")
    _g, relay, arena = plan_graph_file(str(graph))
    assert (results[0].tvm_bytes, results[0].arena_bytes) == (relay.relay_bytes, sum(arena.arena_bytes))
    assert results[0].lower_bound == relay.lower_bound
    flat = plan_flat_file(str(csv))
    assert (results[1].arena_bytes, results[1].lower_bound) == (flat.plan.arena_bytes, flat.plan.lower_bound)
    assert results[1].tvm_bytes is None and results[1].error is None
    assert "no TVM mode" in results[2].error
    assert "has no symbolic dimensions" in results[3].error


def test_each_model_is_resolved_once_given_as_a_path_or_a_name(monkeypatch, symbolic_file, tmp_path):
    import memcore_py.sweep as sweep

    calls = []
    real = sweep.model_source
    monkeypatch.setattr(sweep, "model_source", lambda m: calls.append(m) or real(m))
    missing = tmp_path / "missing.py"
    variants = [Variant(symbolic_file, bind={"n": n}) for n in range(1, 30)]  # the same Path, new objects
    variants += [Variant(str(symbolic_file), bind={"n": 2}), Variant(missing), Variant(missing)]
    results = plan_many(variants, executor="serial")
    assert len(calls) == 2  # the file (as Path and as str), and the missing file once
    assert all(r.error is None for r in results[:-2]) and results[-1].error == results[-2].error


def test_plot_sweep_draws_the_swept_dimension_and_refuses_what_it_cannot(tmp_path, symbolic_file):
    pytest.importorskip("matplotlib")
    from memcore_py.errors import PlanningError
    from memcore_py.sweep.plot import plot_sweep

    results = plan_many([Variant(symbolic_file, bind={"n": n}, mode="both") for n in (2, 4, 8)], executor="serial")
    fig = plot_sweep(results, "n", out=tmp_path / "p.png")
    assert (tmp_path / "p.png").stat().st_size > 0
    labels = sorted(line.get_label() for line in fig.axes[0].get_lines())
    assert labels == [f"{symbolic_file} arena", f"{symbolic_file} lower bound", f"{symbolic_file} tvm"]
    tvm_line = next(line for line in fig.axes[0].get_lines() if line.get_label().endswith(" tvm"))
    assert list(tvm_line.get_ydata()) == [32 * n + 32 for n in (2, 4, 8)]
    with pytest.raises(PlanningError, match="no planned result binds 'm'"):
        plot_sweep(results, "m")
    with pytest.raises(PlanningError, match="must end in one of"):
        plot_sweep(results, "n", out=tmp_path / "p.gif")
