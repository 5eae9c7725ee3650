//! The assembly of docs/architecture.md section 3: a Python file whose kernel function makes
//! one `api.<instruction>(...)` call per step. The text depends on its inputs only, so the
//! same candidate always gives the same bytes. Constants the program reads are listed with
//! their values, which the simulator writes into HBM before the program runs.

use crate::isa::Instruction;
use crate::lang::{DType, Ty};
use crate::layout::{HbmLayout, LayoutError, Placed, Signature};
use std::fmt::Write;

/// One instruction of the program with all its attributes known.
#[derive(Debug, Clone, Copy)]
pub struct Step<'a> {
    pub instr: &'a Instruction,
    /// Values of `instr.comp_attrs`, in order.
    pub comp: &'a [i64],
    /// Values of `instr.addr_attrs`, in order.
    pub addr: &'a [i64],
}

const PYTHON_KEYWORDS: &[&str] = &[
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue",
    "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import",
    "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while",
    "with", "yield",
];

/// `name` made a Python identifier: other characters become `_`, a leading digit gets a `_`
/// in front, and a keyword or a name the file itself uses (`jnp`) gets a `_` appended.
pub fn python_identifier(name: &str) -> String {
    let mut out: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect();
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, '_');
    }
    if PYTHON_KEYWORDS.contains(&out.as_str()) || out == "jnp" {
        out.push('_');
    }
    out
}

/// A constant placed in HBM: `bits` are f64 bit patterns, row-major, or one for a splat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Constant<'a> {
    pub addr: i64,
    pub dtype: DType,
    pub shape: &'a [i64],
    pub bits: &'a [u64],
}

/// A placed program, owned: per step the instruction (its index in the table), its
/// computational and addressing attributes; the literals it reads (where each lies, its type,
/// its values as f64 bit patterns); and one past the highest HBM byte it uses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PlacedProgram {
    pub steps: Vec<(usize, Vec<i64>, Vec<i64>)>,
    pub constants: Vec<(i64, Ty, Vec<u64>)>,
    pub hbm_end: i64,
}

impl PlacedProgram {
    /// Its assembly, the kernel's interface `sig` placed as `layout` says.
    pub fn assembly(&self, isa: &crate::isa::Isa, sig: &Signature, layout: &HbmLayout) -> Result<String, LayoutError> {
        let steps: Vec<Step> = self
            .steps
            .iter()
            .map(|(instr, comp, addr)| Step { instr: &isa.instructions[*instr], comp, addr })
            .collect();
        let constants: Vec<Constant> = self
            .constants
            .iter()
            .map(|(addr, ty, bits)| Constant { addr: *addr, dtype: ty.dtype, shape: &ty.shape, bits })
            .collect();
        assembly_with_constants(sig, layout, self.hbm_end.max(layout.output.end()), &steps, &constants)
    }
}

/// The assembly of a program without constants. `hbm` is one past the highest HBM byte in
/// use.
pub fn assembly(
    sig: &Signature,
    layout: &HbmLayout,
    hbm: i64,
    steps: &[Step<'_>],
) -> Result<String, LayoutError> {
    assembly_with_constants(sig, layout, hbm, steps, &[])
}

/// The assembly of a program that reads `constants`.
pub fn assembly_with_constants(
    sig: &Signature,
    layout: &HbmLayout,
    hbm: i64,
    steps: &[Step<'_>],
    constants: &[Constant<'_>],
) -> Result<String, LayoutError> {
    let constant_list =
        constants.iter().map(constant_spec).collect::<Result<Vec<_>, _>>()?.join(", ");
    let name = python_identifier(&sig.module);
    let inputs = sig
        .inputs
        .iter()
        .zip(&layout.inputs)
        .map(|(t, p)| tensor_spec(t, p))
        .collect::<Result<Vec<_>, _>>()?
        .join(", ");
    let output = sig
        .outputs
        .iter()
        .zip(&layout.outputs(sig)?)
        .map(|(t, p)| tensor_spec(t, p))
        .collect::<Result<Vec<_>, _>>()?
        .join(", ");
    let mut text = String::new();
    let pad = " ".repeat("    @kernel(".len());
    // Writing to a String cannot fail.
    let _ = write!(
        text,
        "import jax.numpy as jnp\n\n\n\
         def {name}(kernel, api):\n    \
         @kernel(hbm={hbm},\n\
         {pad}input=[{inputs}],\n\
         {pad}constant=[{constant_list}],\n\
         {pad}output=[{output}])\n    \
         def {name}_():\n"
    );
    for step in steps {
        let _ = writeln!(text, "        {}", call(step));
    }
    if steps.is_empty() {
        text.push_str("        pass\n");
    }
    let _ = writeln!(text, "    return {name}_");
    Ok(text)
}

/// `api.<name>(<comp attrs>, <addr attrs>)` with keyword arguments.
fn call(step: &Step<'_>) -> String {
    let instr = step.instr;
    let args: Vec<String> = instr
        .comp_attrs
        .iter()
        .zip(step.comp)
        .chain(instr.addr_attrs.iter().zip(step.addr))
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    format!("api.{}({})", instr.name, args.join(", "))
}

fn shape_tuple(shape: &[i64]) -> String {
    let dims: Vec<String> = shape.iter().map(i64::to_string).collect();
    match dims.len() {
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.join(", ")),
    }
}

fn tensor_spec(t: &Ty, at: &Placed) -> Result<String, LayoutError> {
    let shape = shape_tuple(&t.shape);
    Ok(format!("{{'addr': {}, 'shape': {shape}, 'dtype': jnp.{}}}", at.addr, t.dtype.jax_name()))
}

/// A Python literal of `v` that reads back as the same f64.
fn python_float(v: f64) -> String {
    if v.is_nan() {
        "float('nan')".into()
    } else if v.is_infinite() {
        if v > 0.0 { "float('inf')" } else { "-float('inf')" }.into()
    } else {
        // Debug prints the shortest text that reads back exactly, always with a '.' or 'e'.
        format!("{v:?}")
    }
}

/// `{'addr': .., 'shape': .., 'dtype': .., 'value': ..}`: a splat as `jnp.full`, other
/// values as a flat array reshaped.
fn constant_spec(c: &Constant<'_>) -> Result<String, LayoutError> {
    let jnp = c.dtype.jax_name();
    let shape = shape_tuple(c.shape);
    let values: Vec<String> = c.bits.iter().map(|&b| python_float(f64::from_bits(b))).collect();
    let value = match values.as_slice() {
        [one] => format!("jnp.full({shape}, {one}, dtype=jnp.{jnp})"),
        all => format!("jnp.array([{}], dtype=jnp.{jnp}).reshape({shape})", all.join(", ")),
    };
    Ok(format!("{{'addr': {}, 'shape': {shape}, 'dtype': jnp.{jnp}, 'value': {value}}}", c.addr))
}

#[cfg(test)]
mod tests {
    use super::python_identifier;

    #[test]
    fn module_names_become_identifiers() {
        for (name, ident) in [
            ("qkv", "qkv"),
            ("jit_attention", "jit_attention"),
            ("jit_f.1", "jit_f_1"),
            ("3mm", "_3mm"),
            ("class", "class_"),
            ("jnp", "jnp_"),
            ("", "_"),
        ] {
            assert_eq!(python_identifier(name), ident, "{name:?}");
        }
    }
}
