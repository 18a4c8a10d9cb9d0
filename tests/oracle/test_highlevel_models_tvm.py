"""Oracle: the real models as TVM 0.27's torch importer prints them (before legalization),
shipped in ``memcore_py/examples/models/highlevel/``, against Apache TVM.

For ResNet-50, BERT-base, GPT-2 and the Llama-style decoder:

1. memcore parses TVM's text and prints it back byte for byte (every attribute, default
   and float spelled as TVM spells it);
2. TVM reads memcore's printed text into a module structurally equal to its own parse of
   the original text;
3. memcore's type rules reproduce every binding annotation TVM printed: the text with all
   binding annotations removed parses (types inferred by our rules) and prints back
   identical to TVM's text, and each call's inferred type equals its annotation;
4. the texts are what TVM's importer produces: they cover the op set of the models
   (conv2d, batch_norm, layer_norm, matmul, strided_slice, take, split, ...).
"""
import re

import pytest

tvm = pytest.importorskip("tvm")

from memcore_py import parse  # noqa: E402
from memcore_py.examples.models import highlevel_model_text, list_highlevel_models  # noqa: E402
from memcore_py.ir import Call, Function  # noqa: E402
from memcore_py.ir.infer import infer_type  # noqa: E402
from memcore_py.ir.op import Op  # noqa: E402
from memcore_py.ir.types import type_equal  # noqa: E402
from _helpers import tvm_from_source  # noqa: E402

pytestmark = pytest.mark.oracle

MODELS = ["resnet50", "bert_base", "gpt2_small", "llama_small"]

#: A binding's annotation: ``name: <type> = `` (the type ends at the first " = ", as TVM prints).
_ANNOTATION = re.compile(r"^(\s+[A-Za-z_]\w*): .*? = ", re.M)


@pytest.fixture(scope="module", params=MODELS)
def model(request):
    text = highlevel_model_text(request.param)
    return request.param, text, parse(text)


def test_the_four_models_are_shipped():
    assert set(MODELS) <= set(list_highlevel_models())


def test_prints_back_byte_for_byte(model):
    name, text, mod = model
    assert mod.script().rstrip("\n") == text.rstrip("\n")


def test_tvm_reads_our_text_into_its_own_module(model):
    name, text, mod = model
    tvm.ir.assert_structural_equal(tvm_from_source(mod.script()), tvm_from_source(text))


def test_type_rules_reproduce_every_annotation(model):
    name, text, mod = model
    bare = _ANNOTATION.sub(r"\1 = ", text)
    assert bare.count(": R.") < text.count(": R.")  # annotations were removed
    inferred = parse(bare)
    assert inferred.script().rstrip("\n") == text.rstrip("\n")
    n_calls = 0
    for _gv, func in mod.functions.items():
        if not isinstance(func, Function):
            continue
        for block in func.body.blocks:
            for b in block.bindings:
                if isinstance(b.value, Call) and type(b.value.op) is Op:
                    n_calls += 1
                    got = infer_type(b.value, mod)
                    assert type_equal(got, b.var.ty), f"{name}: {b.var.name}: {got!r} vs {b.var.ty!r}"
    assert n_calls > 150


def test_tvm_infers_the_same_types_for_our_unannotated_text(model):
    """TVM re-infers every binding of the annotation-free text and prints TVM's original."""
    name, text, mod = model
    bare = _ANNOTATION.sub(r"\1 = ", text)
    assert tvm_from_source(bare).script().rstrip("\n") == text.rstrip("\n")


@pytest.mark.parametrize("name, ops", [
    ("resnet50", {"R.nn.conv2d", "R.nn.batch_norm", "R.nn.relu", "R.nn.max_pool2d", "R.mean", "R.zeros_like"}),
    ("bert_base", {"R.take", "R.nn.layer_norm", "R.strided_slice", "R.squeeze", "R.nn.gelu", "R.tanh"}),
    ("gpt2_small", {"R.nn.gelu_tanh", "R.nn.softmax", "R.broadcast_to", "R.permute_dims"}),
    ("llama_small", {"R.split", "R.concat", "R.power", "R.rsqrt", "R.expand_dims", "R.sigmoid", "R.negative"}),
])
def test_models_use_the_high_level_ops(name, ops):
    text = highlevel_model_text(name)
    used = set(re.findall(r"(R\.[a-z_.0-9]+)\(", text))
    assert ops <= used
