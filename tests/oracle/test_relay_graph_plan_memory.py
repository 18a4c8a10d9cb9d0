"""graph_plan_memory against the live Relay oracle (TVM v0.19.0 in its own virtual env).

The oracle cannot live in memcore's environment (it is the top-level ``tvm`` package, like
apache-tvm 0.27), so this test runs ``tools/relay_oracle.py record`` under the oracle's
interpreter -- ``$MEMCORE_RELAY_PYTHON``, else ``$MEMCORE_RELAY_VENV/bin/python``, else
``~/.cache/memcore/relay-oracle-venv/bin/python`` -- and compares memcore's plans with what it
writes: the graph executor JSON's ``storage_id``/``device_index`` on every entry, and
GraphPlanMemory's per-expression storage ids, device types and sizes. It also checks that the
recordings under tests/data/relay (which CI checks without the oracle) are still the
oracle's answers.

Workloads: ResNet-18, SqueezeNet, VGG-11, LSTM and DCGAN at opt levels 0 and 3 by default
(under a minute of relay.build); ``MEMCORE_RELAY_ALL=1`` adds MobileNet, ResNet-50,
Inception-v3 and DenseNet-121 (about six more minutes). All nine are checked without the
oracle from their recordings.
"""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from _helpers import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "tests" / "memcore_py" / "planning"))
from test_graph_plan_memory_relay import RELAY_DIR, check_against_recording, load_recording  # noqa: E402

pytestmark = pytest.mark.oracle

INSTALL = "bash tools/relay_oracle.sh install"
QUICK = ("resnet18", "squeezenet", "vgg", "lstm", "dcgan")
ALL = QUICK + ("mobilenet", "resnet50", "inception_v3", "densenet")
#: the workloads of this run, fixed at collection
NAMES = ALL if os.environ.get("MEMCORE_RELAY_ALL") else QUICK


def _oracle_python():
    explicit = os.environ.get("MEMCORE_RELAY_PYTHON")
    if explicit:
        return explicit
    venv = os.environ.get("MEMCORE_RELAY_VENV", str(Path.home() / ".cache" / "memcore" / "relay-oracle-venv"))
    return str(Path(venv) / "bin" / "python")


def _missing(reason: str):
    """Skip, or fail where the oracle is required (``MEMCORE_REQUIRE_RELAY_ORACLE=1``: CI's test
    command installs it first, so a missing oracle there is an error, not a skip)."""
    if os.environ.get("MEMCORE_REQUIRE_RELAY_ORACLE") == "1":
        pytest.fail(f"{reason} (MEMCORE_REQUIRE_RELAY_ORACLE=1)")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def oracle_python():
    py = _oracle_python()
    if not Path(py).exists():
        _missing(f"the Relay oracle (TVM 0.19.0) is not installed at {py}; install it with: {INSTALL}")
    probe = subprocess.run(
        [py, "-c", "import tvm, tvm.relay; print(tvm.__version__)"],
        capture_output=True, text=True, env={**os.environ, "TOPHUB_LOCATION": "NONE"},
    )
    if probe.returncode != 0 or probe.stdout.strip() != "0.19.0":
        _missing(f"{py} does not import TVM 0.19.0 with Relay ({probe.stderr.strip()[-200:]}); "
                 f"install it with: {INSTALL}")
    return py


@pytest.fixture(scope="module")
def live_recordings(oracle_python, tmp_path_factory):
    out = tmp_path_factory.mktemp("relay")
    subprocess.run(
        [oracle_python, str(REPO_ROOT / "tools" / "relay_oracle.py"), "record", "--out", str(out),
         "--workloads", *NAMES, "--opt-levels", "0", "3"],
        check=True, capture_output=True, text=True, env={**os.environ, "TOPHUB_LOCATION": "NONE"},
    )
    return {p.name: load_recording(p) for p in sorted(out.glob("*.json.gz"))}


CASES = [f"{w}_O{lvl}.json.gz" for w in NAMES for lvl in (0, 3)]


@pytest.mark.parametrize("name", CASES)
def test_live_oracle(live_recordings, name):
    doc = live_recordings[name]
    check_against_recording(doc)
    recorded = load_recording(RELAY_DIR / name)
    assert doc["expr_plan"] == recorded["expr_plan"], "tests/data/relay is stale: re-record it"
    if doc["graph_json"] is not None:
        assert doc["graph_json"]["attrs"]["storage_id"] == recorded["graph_json"]["attrs"]["storage_id"]
