"""Writes the crate's ``src/vocabulary.rs``: the rows of ``act_backend.hlo.vocabulary`` as Rust
data, so that the Rust backend reads the very lists the Python side reads.

``python -m act_backend.hlo.vocabulary_rust`` rewrites the file; ``--check`` exits 1 when it
is stale (a test does the same).
"""

from __future__ import annotations

import sys
from pathlib import Path

from act_backend.hlo import vocabulary as v

CRATE_MODULE = Path(__file__).resolve().parents[1] / "backend" / "crate" / "src" / "vocabulary.rs"

_HEADER = """\
//! The HLO operators and element types act-backend knows, as data: generated from
//! `act_backend/hlo/vocabulary.py` by `python -m act_backend.hlo.vocabulary_rust`. Do not edit;
//! a test fails when this file is stale. Lookups are in `lang.rs`.
"""


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.replace("-", "_").split("_"))


def _dtype_variant(name: str) -> str:
    return "BF16" if name == "bf16" else _camel(name)


def _strs(items) -> str:
    return "&[" + ", ".join(f'"{s}"' for s in items) + "]"


def render() -> str:
    """The text of ``src/vocabulary.rs``."""
    out = [_HEADER]
    out.append("/// How an operator's operands and result relate.")
    out.append("#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]")
    out.append("pub enum Family {")
    out += [f"    {_camel(f)}," for f in v.FAMILIES]
    out.append("}\n")
    out.append("/// The element types an elementwise operator takes.")
    out.append("#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]")
    out.append("pub enum OperandClass {")
    out += [f"    {_camel(c)}," for c in v.OPERAND_CLASSES]
    out.append("}\n")
    out.append("/// An HLO operator, by its normalised name.")
    out.append("#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]")
    out.append("pub enum OpCode {")
    out += [f"    {_camel(op.name)}," for op in v.OPERATORS]
    out.append("}\n")
    out.append("/// One operator's row of the vocabulary.")
    out.append("#[derive(Debug, Clone, Copy, PartialEq, Eq)]")
    out.append("pub struct OperatorInfo {")
    out.append("    pub code: OpCode,")
    out.append("    /// The normalised name, then every other spelling the parsers accept.")
    out.append("    pub spellings: &'static [&'static str],")
    out.append("    pub family: Family,")
    out.append("    pub operands: OperandClass,")
    out.append("    /// Attributes with a meaning, in both front ends.")
    out.append("    pub attributes: &'static [&'static str],")
    out.append("    pub required: &'static [&'static str],")
    out.append("    /// Further attributes a kernel may give it.")
    out.append("    pub kernel_attributes: &'static [&'static str],")
    out.append("    /// TAIDL semantics may use it.")
    out.append("    pub semantics: bool,")
    out.append("    /// The kernel front ends accept it.")
    out.append("    pub kernels: bool,")
    out.append("}\n")
    out.append("/// Every operator, in `OpCode` order.")
    out.append(f"pub const OPERATORS: [OperatorInfo; {len(v.OPERATORS)}] = [")
    for op in v.OPERATORS:
        out.append("    OperatorInfo {")
        out.append(f"        code: OpCode::{_camel(op.name)},")
        out.append(f"        spellings: {_strs(v.spellings(op.name))},")
        out.append(f"        family: Family::{_camel(op.family)},")
        out.append(f"        operands: OperandClass::{_camel(op.operands)},")
        out.append(f"        attributes: {_strs(op.attributes)},")
        out.append(f"        required: {_strs(op.required)},")
        out.append(f"        kernel_attributes: {_strs(op.kernel_attributes)},")
        out.append(f"        semantics: {str(op.semantics).lower()},")
        out.append(f"        kernels: {str(op.kernels).lower()},")
        out.append("    },")
    out.append("];\n")
    out.append("/// What kind of number an element type holds.")
    out.append("#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]")
    out.append("pub enum NumberKind {")
    out += [f"    {_camel(k)}," for k in ("pred", "signed", "unsigned", "float")]
    out.append("}\n")
    out.append("/// An element type of XLA HLO.")
    out.append("#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]")
    out.append("pub enum DType {")
    out += [f"    {_dtype_variant(t.name)}," for t in v.ELEMENT_TYPES]
    out.append("}\n")
    out.append("/// One element type's row of the vocabulary.")
    out.append("#[derive(Debug, Clone, Copy, PartialEq, Eq)]")
    out.append("pub struct ElementTypeInfo {")
    out.append("    pub dtype: DType,")
    out.append("    pub name: &'static str,")
    out.append("    pub bits: u32,")
    out.append("    pub kind: NumberKind,")
    out.append("    /// The attribute of `jax.numpy` that names it, as the assembly writes it.")
    out.append("    pub jax: &'static str,")
    out.append("    /// TAIDL data models and semantics may use it.")
    out.append("    pub spec: bool,")
    out.append("    /// Floats: significand bits including the implicit one, and exponent bits.")
    out.append("    pub significand_bits: u32,")
    out.append("    pub exponent_bits: u32,")
    out.append("}\n")
    out.append("/// Every element type, in `DType` order.")
    out.append(f"pub const ELEMENT_TYPES: [ElementTypeInfo; {len(v.ELEMENT_TYPES)}] = [")
    for t in v.ELEMENT_TYPES:
        variant = _dtype_variant(t.name)
        out.append("    ElementTypeInfo {")
        out.append(f"        dtype: DType::{variant},")
        out.append(f'        name: "{t.name}",')
        out.append(f"        bits: {t.bits},")
        out.append(f"        kind: NumberKind::{_camel(t.kind)},")
        out.append(f'        jax: "{t.jax}",')
        out.append(f"        spec: {str(t.spec).lower()},")
        out.append(f"        significand_bits: {t.significand_bits},")
        out.append(f"        exponent_bits: {t.exponent_bits},")
        out.append("    },")
    out.append("];\n")
    out.append("/// Attributes any kernel instruction may carry that never change what it "
               "computes.")
    out.append(f"pub const GENERIC_KERNEL_ATTRIBUTES: &[&str] = "
               f"{_strs(v.GENERIC_KERNEL_ATTRIBUTES)};\n")
    out.append("/// The directions of `compare`.")
    out.append(f"pub const COMPARISON_DIRECTIONS: &[&str] = {_strs(v.COMPARISON_DIRECTIONS)};")
    return "\n".join(out) + "\n"


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        if CRATE_MODULE.read_text(encoding="utf-8") != text:
            print(f"{CRATE_MODULE.name} is stale: run python -m act_backend.hlo.vocabulary_rust",
                  file=sys.stderr)
            return 1
        return 0
    CRATE_MODULE.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
