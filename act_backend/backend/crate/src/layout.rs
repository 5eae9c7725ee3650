//! The kernel's interface as the assembly sees it: element types, tensor shapes, and where
//! inputs and output sit in HBM (inputs packed in parameter order from address 0, the output
//! right after them).

use std::fmt;

/// An element type of XLA HLO: its name, size in bytes, and `jax.numpy` spelling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ElementType {
    pub name: &'static str,
    pub bytes: i64,
    pub jnp: &'static str,
}

const ELEMENT_TYPES: &[ElementType] = &[
    ElementType { name: "pred", bytes: 1, jnp: "bool_" },
    ElementType { name: "s8", bytes: 1, jnp: "int8" },
    ElementType { name: "s16", bytes: 2, jnp: "int16" },
    ElementType { name: "s32", bytes: 4, jnp: "int32" },
    ElementType { name: "s64", bytes: 8, jnp: "int64" },
    ElementType { name: "u8", bytes: 1, jnp: "uint8" },
    ElementType { name: "u16", bytes: 2, jnp: "uint16" },
    ElementType { name: "u32", bytes: 4, jnp: "uint32" },
    ElementType { name: "u64", bytes: 8, jnp: "uint64" },
    ElementType { name: "f16", bytes: 2, jnp: "float16" },
    ElementType { name: "bf16", bytes: 2, jnp: "bfloat16" },
    ElementType { name: "f32", bytes: 4, jnp: "float32" },
    ElementType { name: "f64", bytes: 8, jnp: "float64" },
];

/// The element type called `name`, if HLO has one.
pub fn element_type(name: &str) -> Option<ElementType> {
    ELEMENT_TYPES.iter().copied().find(|t| t.name == name)
}

/// A tensor type of the kernel's signature.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tensor {
    pub dtype: String,
    pub shape: Vec<i64>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayoutError(pub String);

impl fmt::Display for LayoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for LayoutError {}

impl Tensor {
    pub fn element(&self) -> Result<ElementType, LayoutError> {
        element_type(&self.dtype)
            .ok_or_else(|| LayoutError(format!("unknown element type {:?}", self.dtype)))
    }

    pub fn bytes(&self) -> Result<i64, LayoutError> {
        let elems = self.shape.iter().try_fold(
            1i64,
            |acc, &d| {
                if d < 0 {
                    None
                } else {
                    acc.checked_mul(d)
                }
            },
        );
        let elems = elems.ok_or_else(|| LayoutError(format!("bad shape {:?}", self.shape)))?;
        elems
            .checked_mul(self.element()?.bytes)
            .ok_or_else(|| LayoutError(format!("shape {:?} is too large", self.shape)))
    }
}

/// A kernel's name and types, as much of it as the back end needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signature {
    /// The HLO module's name.
    pub module: String,
    pub inputs: Vec<Tensor>,
    pub output: Tensor,
}

/// `[addr, addr + bytes)` in HBM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placed {
    pub addr: i64,
    pub bytes: i64,
}

impl Placed {
    pub fn end(&self) -> i64 {
        self.addr + self.bytes
    }
}

/// Where the kernel's inputs and output live in HBM (CSP3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HbmLayout {
    pub inputs: Vec<Placed>,
    pub output: Placed,
}

impl HbmLayout {
    /// Inputs packed in parameter order from 0, each at its byte size; the output after them.
    pub fn packed(sig: &Signature) -> Result<HbmLayout, LayoutError> {
        let mut next = 0i64;
        let mut inputs = Vec::with_capacity(sig.inputs.len());
        for (i, t) in sig.inputs.iter().enumerate() {
            let bytes = t.bytes().map_err(|e| LayoutError(format!("parameter {i}: {e}")))?;
            inputs.push(Placed { addr: next, bytes });
            next += bytes;
        }
        let bytes = sig.output.bytes().map_err(|e| LayoutError(format!("output: {e}")))?;
        Ok(HbmLayout { inputs, output: Placed { addr: next, bytes } })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(dtype: &str, shape: &[i64]) -> Tensor {
        Tensor { dtype: dtype.into(), shape: shape.to_vec() }
    }

    #[test]
    fn packs_inputs_in_parameter_order_then_the_output() {
        let sig = Signature {
            module: "m".into(),
            inputs: vec![t("bf16", &[64, 64]), t("f32", &[3]), t("s8", &[])],
            output: t("bf16", &[2, 2]),
        };
        let layout = HbmLayout::packed(&sig).unwrap();
        let addrs: Vec<(i64, i64)> = layout.inputs.iter().map(|p| (p.addr, p.bytes)).collect();
        assert_eq!(addrs, [(0, 8192), (8192, 12), (8204, 1)]);
        assert_eq!(layout.output, Placed { addr: 8205, bytes: 8 });
    }

    #[test]
    fn unknown_element_type_is_named() {
        let err = t("c64", &[2]).bytes().unwrap_err();
        assert!(err.0.contains("\"c64\""), "{err}");
    }
}
