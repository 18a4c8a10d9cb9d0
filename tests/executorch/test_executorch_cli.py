"""``memcore plan FILE --executorch``: the table, the JSON form against the shipped schema,
the ``.pte`` it writes running in ExecuTorch's portable runtime, and its usage errors."""
from __future__ import annotations

import json
from importlib import resources

import pytest

pytest.importorskip("executorch.exir")  # not "executorch": see test_executorch_programs.py
torch = pytest.importorskip("torch")

from _executorch_programs import build_program  # noqa: E402
from _helpers import run_cli  # noqa: E402


@pytest.fixture(scope="module")
def pt2(tmp_path_factory):
    model, args = build_program("multi_output")
    path = tmp_path_factory.mktemp("executorch") / "multi_output.pt2"
    torch.export.save(torch.export.export(model, args), str(path))
    return path, model, args


def test_table(capsys, pt2):
    rc, out, err = run_cli(capsys, "plan", pt2[0], "--executorch", "--no-search")
    assert rc == 0, err
    header, row = out.splitlines()[:2]
    assert header.split()[:2] == ["method", "mem_id"]
    method, mem_id, greedy_bytes, memcore_bytes, bound, _ = row.split()
    assert (method, mem_id) == ("forward", "1")
    greedy_bytes, memcore_bytes, bound = (int(x.replace(",", "")) for x in (greedy_bytes, memcore_bytes, bound))
    assert bound <= memcore_bytes <= greedy_bytes


def test_json_matches_schema_and_pte_runs(capsys, pt2, tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    from executorch.extension.pybindings.portable_lib import _load_for_executorch_from_buffer

    pte = tmp_path / "out.pte"
    rc, out, err = run_cli(capsys, "plan", pt2[0], "--executorch", "--json", "--write-pte", pte)
    assert rc == 0, err
    doc = json.loads(out)
    schema = json.loads(resources.files("memcore_py.cli").joinpath("plan_schema.json").read_text(encoding="utf-8"))
    jsonschema.validate(doc, schema)
    (arena,) = doc["programs"][0]["methods"][0]["mem_ids"]
    assert arena["lower_bound"] <= arena["memcore_bytes"] <= arena["greedy_bytes"]
    _, model, args = pt2
    buffer = pte.read_bytes()  # the runtime module reads it in place: keep it alive meanwhile
    module = _load_for_executorch_from_buffer(buffer)
    got = module.forward(args)
    del module
    for a, b in zip(model(*args), got):
        torch.testing.assert_close(b, a)


def test_needs_a_torch_program(capsys, tmp_path):
    text = tmp_path / "mod.py"
    text.write_text("# not a torch program\n")
    rc, _, err = run_cli(capsys, "plan", text, "--executorch")
    assert rc == 2 and "must be a .pt2 archive or module:function" in err
    rc, _, err = run_cli(capsys, "plan", "--executorch")
    assert rc == 2 and "--executorch needs FILE" in err


def test_write_pte_needs_executorch(capsys, pt2, tmp_path):
    rc, _, err = run_cli(capsys, "plan", pt2[0], "--write-pte", tmp_path / "x.pte")
    assert rc == 2 and "--write-pte needs --executorch" in err


def test_unreadable_pt2(capsys, tmp_path):
    bad = tmp_path / "bad.pt2"
    bad.write_bytes(b"not a zip")
    rc, _, err = run_cli(capsys, "plan", bad, "--executorch")
    assert rc == 1 and "not a readable torch.export archive" in err
