"""``memcore plan --json`` against its shipped JSON Schema (memcore_py/cli/plan_schema.json):
every shipped model, a graph-executor JSON, a symbolic module, and documents the schema must
refuse. Validated with ``jsonschema`` when installed and, always, with the small validator
below (the subset of JSON Schema the file uses), so that the test runs without the extra."""
import copy
import gzip
import json
from importlib import resources

import pytest

from _helpers import REPO_ROOT, run_cli
from memcore_py.examples.models import list_models

SCHEMA = json.loads(resources.files("memcore_py.cli").joinpath("plan_schema.json").read_text(encoding="utf-8"))


# ---------------------------------------------------------------------------------------------
# A validator for the subset of JSON Schema (2020-12) that plan_schema.json uses
# ---------------------------------------------------------------------------------------------

_TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "null": lambda v: v is None,
    "boolean": lambda v: isinstance(v, bool),
}
_KNOWN = {"$schema", "$id", "$defs", "$ref", "version", "title", "description", "$comment", "type", "enum",
          "const", "required", "properties", "additionalProperties", "items", "minItems", "maxItems", "minimum",
          "exclusiveMinimum", "oneOf"}


def subset_errors(value, schema, root=SCHEMA, path="$"):
    """Messages for every way ``value`` breaks ``schema`` (empty: valid)."""
    unknown = set(schema) - _KNOWN
    assert not unknown, f"the small validator does not implement {unknown}"
    if "$ref" in schema:
        target = root
        for part in schema["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        return subset_errors(value, target, root, path)
    if "oneOf" in schema:
        ok = [s for s in schema["oneOf"] if not subset_errors(value, s, root, path)]
        return [] if len(ok) == 1 else [f"{path}: matches {len(ok)} of the oneOf alternatives"]
    errors = []
    types = schema.get("type")
    if types is not None:
        types = [types] if isinstance(types, str) else types
        if not any(_TYPES[t](value) for t in types):
            return [f"{path}: {value!r} is not of type {types}"]
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{path}: {value!r} not in {schema['enum']}")
    if "const" in schema and value != schema["const"]:
        errors.append(f"{path}: {value!r} != {schema['const']!r}")
    if _TYPES["number"](value):
        if "minimum" in schema and value < schema["minimum"]:
            errors.append(f"{path}: {value} < {schema['minimum']}")
        if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
            errors.append(f"{path}: {value} <= {schema['exclusiveMinimum']}")
    if isinstance(value, dict):
        for key in schema.get("required", ()):
            if key not in value:
                errors.append(f"{path}: missing {key!r}")
        props = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        for key, v in value.items():
            if key in props:
                errors += subset_errors(v, props[key], root, f"{path}.{key}")
            elif extra is False:
                errors.append(f"{path}: unexpected {key!r}")
            elif isinstance(extra, dict):
                errors += subset_errors(v, extra, root, f"{path}.{key}")
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            errors.append(f"{path}: fewer than {schema['minItems']} items")
        if len(value) > schema.get("maxItems", len(value)):
            errors.append(f"{path}: more than {schema['maxItems']} items")
        if "items" in schema:
            for i, v in enumerate(value):
                errors += subset_errors(v, schema["items"], root, f"{path}[{i}]")
    return errors


def check(doc):
    """Assert ``doc`` is valid (both validators)."""
    assert subset_errors(doc, SCHEMA) == []
    try:
        import jsonschema
    except ImportError:
        return
    jsonschema.Draft202012Validator(SCHEMA).validate(doc)


def refused(doc) -> bool:
    """Whether both validators refuse ``doc``."""
    bad = bool(subset_errors(doc, SCHEMA))
    try:
        import jsonschema
    except ImportError:
        return bad
    return bad and not jsonschema.Draft202012Validator(SCHEMA).is_valid(doc)


# ---------------------------------------------------------------------------------------------


def test_schema_is_versioned_and_well_formed():
    assert SCHEMA["$id"] == "urn:memcore:schema:plan-report:1" and SCHEMA["version"] == 1
    assert SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


@pytest.fixture(scope="module")
def shipped_doc():
    """``memcore plan --json --print-ir`` (no FILE: every shipped model), run once."""
    import contextlib
    import io

    from memcore_py.cli import main

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["plan", "--json", "--print-ir"]) == 0
    return json.loads(buf.getvalue())


def test_every_shipped_model_validates(shipped_doc):
    check(shipped_doc)
    assert [m["name"] for m in shipped_doc["modules"]] == list_models()
    for m in shipped_doc["modules"]:
        check({**shipped_doc, "modules": [m]})  # each model on its own too
        assert m["functions"] and all(f["reference_bytes"] is not None for f in m["functions"])
        assert m["ir"].startswith("# from tvm.script")


def test_graph_json_validates(capsys, tmp_path):
    with gzip.open(REPO_ROOT / "tests" / "data" / "relay" / "resnet18_O3.json.gz", "rt") as fh:
        doc = json.load(fh)["graph_json"]
    path = tmp_path / "resnet18.json"
    path.write_text(json.dumps(doc))
    rc, out, _ = run_cli(capsys, "plan", path, "--json", "--no-search")
    assert rc == 0
    check(json.loads(out))


DYNAMIC = '''# from tvm.script import ir as I
# from tvm.script import tirx as T
# from tvm.script import relax as R

@I.ir_module
class Module:
    @T.prim_func(private=True, s_tir=True)
    def add_dyn(var_a: T.handle, var_c: T.handle):
        n = T.int64()
        a = T.match_buffer(var_a, (n,))
        c = T.match_buffer(var_c, (n,))
        T.evaluate(0)

    @R.function
    def main(x: R.Tensor(("n",), dtype="float32")) -> R.Tensor(("n",), dtype="float32"):
        n = T.int64()
        R.func_attr({"relax.force_pure": True})
        cls = Module
        alloc: R.Tensor((n,), dtype="float32") = R.builtin.alloc_tensor(R.shape([n]), R.dtype("float32"), 0, R.str("global"))
        cls.add_dyn(x, alloc)
        alloc1: R.Tensor((n,), dtype="float32") = R.builtin.alloc_tensor(R.shape([n]), R.dtype("float32"), 0, R.str("global"))
        cls.add_dyn(alloc, alloc1)
        return alloc1
'''


def test_symbolic_module_validates(capsys, tmp_path):
    path = tmp_path / "dyn.py"
    path.write_text(DYNAMIC)
    rc, out, _ = run_cli(capsys, "plan", path, "--json", "--no-search", "--mode", "tvm")
    assert rc == 0
    doc = json.loads(out)
    check(doc)
    (f,) = doc["modules"][0]["functions"]
    assert f["tvm"]["bytes"] is None and f["reference_bytes"] is None and doc["time_limit"] is None


def test_bounded_module_validates(capsys, tmp_path):
    path = tmp_path / "dyn.py"
    path.write_text(DYNAMIC)
    rc, out, _ = run_cli(capsys, "plan", path, "--json", "--no-search", "--bound", "n=1:64")
    assert rc == 0
    doc = json.loads(out)
    check(doc)
    assert doc["bounds"] == {"n": [1, 64]} and isinstance(_first_function(doc)["tvm"]["bytes"], int)
    doc["bounds"]["n"] = [1]
    assert refused(doc)


def _first_function(doc):
    return doc["modules"][0]["functions"][0]


@pytest.mark.parametrize("breakage", [
    lambda d: _first_function(d).pop("lower_bound"),
    lambda d: _first_function(d)["tvm"].update(bytes="12 MiB"),
    lambda d: _first_function(d)["arena"].update(bytes=-1),
    lambda d: _first_function(d).update(n_planned=True),
    lambda d: d.update(mode="fast"),
    lambda d: d.update(time_limit=0),
    lambda d: d.update(passes=[]),
    lambda d: d.update(modules=[]),
    lambda d: d["modules"][0].update(surprise=1),
    lambda d: d.update(graphs=[]),
    lambda d: d.update(schema="urn:memcore:schema:plan-report:2"),
], ids=["no-lower-bound", "bytes-text", "bytes-negative", "bool-count", "mode", "time-limit-0",
        "no-passes", "no-modules", "unknown-field", "both-forms", "other-version"])
def test_schema_refuses(shipped_doc, breakage):
    doc = copy.deepcopy(shipped_doc)
    breakage(doc)
    assert refused(doc)


@pytest.mark.parametrize("name", list_models())
def test_peak_report_fits_the_module_entry(shipped_doc, name):
    """``--top`` output (PeakReport.to_dict()) as the optional ``peak`` of a module entry."""
    from memcore_py.examples.models import load_model
    from memcore_py.planning.peak_report import report

    doc = copy.deepcopy(shipped_doc)
    (entry,) = [m for m in doc["modules"] if m["name"] == name]
    entry["peak"] = json.loads(json.dumps(report(load_model(name), top=3, time_limit=None).to_dict()))
    check(doc)
    entry["peak"]["functions"][0]["tensors"][0]["lifetime"] = [1, 2, 3]
    assert refused(doc)


def test_plan_top_json_validates(capsys):
    """``memcore plan --top N --json`` (the peak report inside each module entry)."""
    rc, out, _ = run_cli(capsys, "plan", REPO_ROOT / "memcore_py" / "examples" / "models" / "llama_small.py.gz",
                         "--top", "4", "--json", "--no-search")
    assert rc == 0
    doc = json.loads(out)
    assert "peak" in doc["modules"][0]
    check(doc)
