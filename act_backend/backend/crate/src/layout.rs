//! The kernel's interface as the assembly sees it: element types, tensor shapes, and where
//! inputs and output sit in HBM (inputs packed in parameter order from address 0, the output
//! right after them).

use crate::lang::Ty;
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayoutError(pub String);

impl fmt::Display for LayoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for LayoutError {}

/// The bytes a tensor of the signature occupies, refusing sizes that do not fit an `i64`.
pub fn bytes_of(t: &Ty) -> Result<i64, LayoutError> {
    if t.shape.iter().any(|&d| d < 0) {
        return Err(LayoutError(format!("bad shape {:?}", t.shape)));
    }
    t.shape
        .iter()
        .try_fold(i64::from(t.dtype.bytes()), |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| LayoutError(format!("shape {:?} is too large", t.shape)))
}

/// A kernel's name and types, as much of it as the back end needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signature {
    /// The HLO module's name.
    pub module: String,
    pub inputs: Vec<Ty>,
    /// The kernel's results, written after the inputs in this order, end to end.
    pub outputs: Vec<Ty>,
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

/// Where the kernel's inputs and output live in HBM (CSP3). `output` spans every result:
/// result `i` starts where result `i - 1` ends ([`HbmLayout::outputs`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HbmLayout {
    pub inputs: Vec<Placed>,
    pub output: Placed,
}

impl HbmLayout {
    /// Inputs packed in parameter order from 0, each at its byte size; the outputs after them.
    pub fn packed(sig: &Signature) -> Result<HbmLayout, LayoutError> {
        let mut next = 0i64;
        let mut inputs = Vec::with_capacity(sig.inputs.len());
        for (i, t) in sig.inputs.iter().enumerate() {
            let bytes = bytes_of(t).map_err(|e| LayoutError(format!("parameter {i}: {e}")))?;
            inputs.push(Placed { addr: next, bytes });
            next += bytes;
        }
        let mut bytes = 0i64;
        for (i, t) in sig.outputs.iter().enumerate() {
            bytes += bytes_of(t).map_err(|e| LayoutError(format!("output {i}: {e}")))?;
        }
        Ok(HbmLayout { inputs, output: Placed { addr: next, bytes } })
    }

    /// Where each of `sig`'s outputs lies within [`HbmLayout::output`].
    pub fn outputs(&self, sig: &Signature) -> Result<Vec<Placed>, LayoutError> {
        let mut next = self.output.addr;
        let mut placed = Vec::with_capacity(sig.outputs.len());
        for (i, t) in sig.outputs.iter().enumerate() {
            let bytes = bytes_of(t).map_err(|e| LayoutError(format!("output {i}: {e}")))?;
            placed.push(Placed { addr: next, bytes });
            next += bytes;
        }
        if next != self.output.end() {
            return Err(LayoutError(format!(
                "the outputs take {} bytes, the output region has {}",
                next - self.output.addr,
                self.output.bytes
            )));
        }
        Ok(placed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::lang::DType;

    fn t(dtype: DType, shape: &[i64]) -> Ty {
        Ty::new(dtype, shape.to_vec())
    }

    #[test]
    fn packs_inputs_in_parameter_order_then_the_output() {
        let sig = Signature {
            module: "m".into(),
            inputs: vec![t(DType::BF16, &[64, 64]), t(DType::F32, &[3]), t(DType::S8, &[])],
            outputs: vec![t(DType::BF16, &[2, 2])],
        };
        let layout = HbmLayout::packed(&sig).unwrap();
        let addrs: Vec<(i64, i64)> = layout.inputs.iter().map(|p| (p.addr, p.bytes)).collect();
        assert_eq!(addrs, [(0, 8192), (8192, 12), (8204, 1)]);
        assert_eq!(layout.output, Placed { addr: 8205, bytes: 8 });
    }

    #[test]
    fn a_size_that_does_not_fit_is_named() {
        let err = bytes_of(&t(DType::F64, &[1 << 40, 1 << 40])).unwrap_err();
        assert!(err.0.contains("too large"), "{err}");
    }
}
