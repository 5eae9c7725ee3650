"""One operator and element-type vocabulary: every list the Python side keeps is derived from
it, the Rust crate's ``src/vocabulary.rs`` is generated from it and never stale, and every
operator it lets a front end accept has a rule there."""

from __future__ import annotations

import re

import numpy as np
import pytest

from act_backend.hlo import vocabulary as v
from act_backend.hlo.dtypes import byte_size, numpy_dtype
from act_backend.hlo.infer import KNOWN_OPCODES
from act_backend.hlo.vocabulary_rust import CRATE_MODULE, render
from act_backend.kernel import reference_ops
from act_backend.oracle.runtime import semantics as oracle_semantics
from act_backend.spec import semantics as spec_semantics
from lsp import hlo_ops


def test_the_crate_reads_the_vocabulary_this_package_reads():
    # Regenerate with: python -m act_backend.hlo.vocabulary_rust
    assert CRATE_MODULE.read_text(encoding="utf-8") == render()


def test_the_rust_enums_list_every_row_in_order():
    text = CRATE_MODULE.read_text(encoding="utf-8")
    spellings = re.findall(r"spellings: &\[\"([a-z0-9_]+)\"", text)
    assert spellings == [op.name for op in v.OPERATORS]
    names = re.findall(r'name: "([a-z0-9]+)"', text)
    assert names == [t.name for t in v.ELEMENT_TYPES]


def test_names_and_spellings_are_unique():
    names = [op.name for op in v.OPERATORS]
    assert len(names) == len(set(names))
    every = [s for op in v.OPERATORS for s in v.spellings(op.name)]
    assert len(every) == len(set(every))


@pytest.mark.parametrize("printed, normalised", [
    ("exp", "exponential"), ("bitcast-convert", "bitcast_convert"),
    ("dynamic-update-slice", "dynamic_update_slice"), ("get-tuple-element", "get_tuple_element"),
    ("add", "add"), ("frobnicate-it", "frobnicate_it"),
])
def test_printed_opcodes_are_normalised(printed, normalised):
    assert v.normalise_opcode(printed) == normalised


def test_rows_are_well_formed():
    for op in v.OPERATORS:
        assert op.family in v.FAMILIES, op.name
        assert op.operands in v.OPERAND_CLASSES, op.name
        assert set(op.required) <= set(op.attributes), op.name
        assert op.doc.endswith("."), op.name
        assert not (op.semantics and not op.kernels and op.family == "other"), op.name


def test_every_operator_a_kernel_may_use_has_a_type_rule_and_a_reference():
    for name in v.operators(kernels=True) - v.operators(family="structural"):
        assert name in KNOWN_OPCODES, f"{name} has no rule in act_backend.hlo.infer"
    for name in v.operators(family="unary", kernels=True):
        assert name in reference_ops.UNARY or name in reference_ops.UNARY_WITH_ATTRIBUTES, \
            f"{name} has no NumPy reference"
    for name in v.operators(family="binary", kernels=True):
        assert name in reference_ops.BINARY, f"{name} has no NumPy reference"


def test_the_semantics_language_is_the_vocabularys_semantics_operators():
    assert set(spec_semantics.OPERATORS) == v.operators(semantics=True)
    assert spec_semantics.ALIASES == {"exp": "exponential"}
    for name in v.operators(semantics=True):
        assert name in oracle_semantics._IMPLS, f"the oracle does not implement {name}"


def test_the_language_server_documents_every_spelling():
    for op in v.OPERATORS:
        for spelling in v.spellings(op.name):
            assert hlo_ops.hover_text(spelling) is not None, spelling
    assert set(hlo_ops.kernel_operators()) == v.operators(kernels=True)


@pytest.mark.parametrize("row", v.ELEMENT_TYPES, ids=lambda t: t.name)
def test_element_types_agree_with_numpy_and_jax(row):
    import jax.numpy as jnp

    assert byte_size(row.name) == row.bytes == max(1, row.bits // 8)
    assert np.dtype(getattr(jnp, row.jax)) == numpy_dtype(row.name)
    kind = numpy_dtype(row.name).kind
    assert {"b": "pred", "i": "signed", "u": "unsigned", "f": "float", "V": "float"}[kind] \
        == row.kind
    if row.kind == "float":
        info = jnp.finfo(numpy_dtype(row.name))
        assert row.significand_bits == info.nmant + 1
        assert row.exponent_bits == info.nexp
