"""graph_plan_memory against Relay's own answers, recorded from TVM v0.19.0.

``tests/data/relay/<workload>_O<level>.json.gz`` was written by ``tools/relay_oracle.py``
under the Relay oracle (``tools/relay_oracle.sh``); memcore never wrote any of it. For each
relay.testing workload (ResNet-18/50, MobileNet, SqueezeNet, Inception-v3, DenseNet-121,
VGG-11, LSTM, DCGAN) at opt levels 0 and 3:

- graph form: the graph executor JSON of ``relay.build``; memcore's ``storage_id`` and
  device per entry must equal the file's on every entry (LSTM has none: relay.build of v0.19
  fails on it, and the recording says why);
- per-expression form: ``relay.backend.GraphPlanMemory`` on the fused function; memcore's
  storage ids, device types and sizes (Relay's first-token sizes) must equal the oracle's.

``tests/oracle/test_relay_graph_plan_memory.py`` re-records these live where the oracle is
installed.
"""
import gzip
import json

import pytest

from _helpers import REPO_ROOT
from memcore_py.frontend import read_graph_json
from memcore_py.planning import graph_plan_memory

RELAY_DIR = REPO_ROOT / "tests" / "data" / "relay"
WORKLOADS = ("resnet18", "resnet50", "mobilenet", "squeezenet", "inception_v3", "densenet", "vgg",
             "lstm", "dcgan")
CASES = [(w, lvl) for w in WORKLOADS for lvl in (0, 3)]


def load_recording(path):
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return json.load(fh)


def check_against_recording(doc):
    """Assert memcore's plans equal the oracle's in ``doc``; return (n_graph, n_expr) entries."""
    n_graph = 0
    gj = doc["graph_json"]
    if gj is not None:
        plan = graph_plan_memory(read_graph_json(gj))
        want = gj["attrs"]["storage_id"][1]
        got = plan.storage_id.tolist()
        bad = [e for e, (a, b) in enumerate(zip(got, want)) if a != b]
        assert not bad and len(got) == len(want), f"graph storage_id differs at entries {bad[:10]}"
        assert plan.entry_device.tolist() == gj["attrs"]["device_index"][1]
        n_graph = len(want)
    else:
        assert doc["graph_json_error"]
    oracle = doc["expr_plan"]
    plan = graph_plan_memory(read_graph_json(doc["expr_graph"]))
    assert plan.storage_id.tolist() == oracle["storage_id"]
    assert plan.entry_device.tolist() == oracle["device_type"]
    assert plan.first_bytes.tolist() == oracle["storage_size"]
    return n_graph, len(oracle["storage_id"])


def test_recordings_present():
    missing = [f"{w}_O{lvl}" for w, lvl in CASES if not (RELAY_DIR / f"{w}_O{lvl}.json.gz").exists()]
    assert not missing, f"recorded oracle answers missing: {missing} (tools/relay_oracle.sh record)"


@pytest.mark.parametrize("workload, level", CASES, ids=[f"{w}-O{lvl}" for w, lvl in CASES])
def test_relay_recorded(workload, level):
    doc = load_recording(RELAY_DIR / f"{workload}_O{level}.json.gz")
    assert doc["tvm_version"] == "0.19.0" and doc["workload"] == workload and doc["opt_level"] == level
    n_graph, n_expr = check_against_recording(doc)
    assert n_expr > 0
    assert n_graph > 0 or workload == "lstm"


def test_recorded_graph_arena_never_worse_than_bound():
    doc = load_recording(RELAY_DIR / "resnet18_O3.json.gz")
    plan = graph_plan_memory(read_graph_json(doc["graph_json"]), mode="arena", alignment=1)
    assert plan.lower_bound <= sum(plan.arena_bytes) <= plan.relay_bytes
