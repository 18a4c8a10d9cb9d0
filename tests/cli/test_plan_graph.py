"""``memcore plan GRAPH.json``: the graph table, --json, --write-plan, one-line errors."""
import gzip
import json

import pytest

from _helpers import REPO_ROOT, run_cli


@pytest.fixture
def resnet_json(tmp_path):
    with gzip.open(REPO_ROOT / "tests" / "data" / "relay" / "resnet18_O3.json.gz", "rt") as fh:
        doc = json.load(fh)["graph_json"]
    path = tmp_path / "resnet18.json"
    path.write_text(json.dumps(doc))
    return path, doc


def test_table(capsys, resnet_json):
    path, doc = resnet_json
    rc, out, err = run_cli(capsys, "plan", path, "--no-search")
    assert rc == 0 and err == ""
    header, _, row, footer = out.strip().splitlines()
    for col in ("entries", "storages", "relay bytes", "arena bytes", "lower bound", "relay ms", "arena ms"):
        assert col in header
    assert row.split()[0] == "resnet18.json"
    assert row.split()[2] == str(len(doc["attrs"]["storage_id"][1]))
    assert footer.startswith("mode: arena")


def test_json_report(capsys, resnet_json):
    path, doc = resnet_json
    rc, out, _ = run_cli(capsys, "plan", path, "--json", "--no-search", "--mode", "tvm")
    assert rc == 0
    g = json.loads(out)["graphs"][0]
    assert g["n_entries"] == len(doc["attrs"]["storage_id"][1])
    assert g["n_storages"] == len(set(doc["attrs"]["storage_id"][1]))  # Relay's own count
    assert g["lower_bound"] <= g["arena_bytes"] and g["lower_bound"] <= g["relay_bytes"]


def test_write_plan_relay_is_the_oracles_file(capsys, resnet_json, tmp_path):
    path, doc = resnet_json
    out_path = tmp_path / "plan.json"
    rc, _, _ = run_cli(capsys, "plan", path, "--mode", "tvm", "--write-plan", out_path)
    assert rc == 0
    written = json.loads(out_path.read_text())
    assert written["attrs"]["storage_id"] == doc["attrs"]["storage_id"]  # TVM's own ids
    assert written["nodes"] == doc["nodes"] and "storage_offset" not in written["attrs"]


def test_write_plan_arena_adds_offsets(capsys, resnet_json, tmp_path):
    path, doc = resnet_json
    out_path = tmp_path / "arena.json"
    rc, _, _ = run_cli(capsys, "plan", path, "--no-search", "--write-plan", out_path)
    assert rc == 0
    attrs = json.loads(out_path.read_text())["attrs"]
    n = len(doc["attrs"]["storage_id"][1])
    assert attrs["storage_offset"][0] == "list_int" and len(attrs["storage_offset"][1]) == n
    assert attrs["storage_arena"][1] == [0] * n  # one CPU arena
    assert len(attrs["arena_bytes"][1]) == 1


@pytest.mark.parametrize("text, message", [
    ('{"nodes": [', "malformed JSON"),
    ('{"nodes": [], "heads": [[0, 0, 0]], "attrs": {"shape": ["list_shape", []], '
     '"dltype": ["list_str", []]}}', "head 0 names node 0, out of range"),
])
def test_bad_graph_is_one_line(capsys, tmp_path, text, message):
    path = tmp_path / "bad.json"
    path.write_text(text)
    rc, out, err = run_cli(capsys, "plan", path)
    assert rc == 1 and out == ""
    assert err.count("\n") == 1 and err.startswith("memcore plan: error: ") and message in err
    assert "Traceback" not in err


def test_write_plan_needs_a_graph(capsys, tmp_path):
    path = tmp_path / "m.py"
    path.write_text("")
    rc, _, err = run_cli(capsys, "plan", path, "--write-plan", tmp_path / "o.json")
    assert rc == 2 and "--write-plan needs a graph-executor JSON input" in err
