//! The e-graph language of instruction selection: tensor operators that carry their attributes
//! and their result type, kernel input leaves, and partially instantiated instructions (PIIs).
//!
//! Every e-node holds its full result type and every attribute that changes its meaning, so two
//! e-nodes are equal only when they compute the same thing: `transpose {1,0}` never matches
//! `transpose {0,1}`, and a dot's dimension numbers are part of the dot.

use egg::{Id, Language};
use std::fmt;

pub use crate::vocabulary::{DType, Family, OpCode, OperandClass, OperatorInfo};
use crate::vocabulary::{ElementTypeInfo, NumberKind, ELEMENT_TYPES, OPERATORS};

impl OpCode {
    /// The operator a printed opcode names, in any spelling the vocabulary lists
    /// (`exp`, `bitcast-convert`...).
    pub fn parse(spelling: &str) -> Option<OpCode> {
        OPERATORS.iter().find(|op| op.spellings.contains(&spelling)).map(|op| op.code)
    }

    /// The operator's row of the vocabulary.
    pub fn info(self) -> &'static OperatorInfo {
        &OPERATORS[self as usize]
    }

    /// The normalised name (`bitcast_convert`, `exponential`).
    pub fn name(self) -> &'static str {
        self.info().spellings[0]
    }
}

impl DType {
    pub fn parse(name: &str) -> Option<DType> {
        ELEMENT_TYPES.iter().find(|t| t.name == name).map(|t| t.dtype)
    }

    /// The element type's row of the vocabulary.
    pub fn info(self) -> &'static ElementTypeInfo {
        &ELEMENT_TYPES[self as usize]
    }

    pub fn name(self) -> &'static str {
        self.info().name
    }

    /// Bytes per element (pred takes one byte, as XLA stores it).
    pub fn bytes(self) -> u32 {
        self.info().bits.div_ceil(8)
    }

    /// The `jax.numpy` attribute that names it (`bfloat16`, `bool_`).
    pub fn jax_name(self) -> &'static str {
        self.info().jax
    }

    pub fn is_float(self) -> bool {
        self.info().kind == NumberKind::Float
    }

    pub fn is_int(self) -> bool {
        matches!(self.info().kind, NumberKind::Signed | NumberKind::Unsigned)
    }

    pub fn is_signed(self) -> bool {
        self.info().kind == NumberKind::Signed
    }

    /// Significand bits including the implicit one (floats only).
    fn significand_bits(self) -> u32 {
        self.info().significand_bits
    }

    /// Exponent bits (floats only).
    fn exponent_bits(self) -> u32 {
        self.info().exponent_bits
    }

    /// Whether converting every value of `self` to `to` and back gives it back unchanged, so
    /// that a round trip through `to` is the identity.
    pub fn widens_exactly_to(self, to: DType) -> bool {
        if self == to {
            return true;
        }
        match (self.is_float(), to.is_float()) {
            (true, true) => {
                self.significand_bits() <= to.significand_bits() && self.exponent_bits() <= to.exponent_bits()
            }
            (false, false) => {
                if self == DType::Pred {
                    return true;
                }
                if to == DType::Pred {
                    return false;
                }
                let (a, b) = (self.bytes(), to.bytes());
                match (self.is_signed(), to.is_signed()) {
                    (s, t) if s == t => a <= b,
                    (false, true) => a < b,
                    _ => false,
                }
            }
            (false, true) => {
                // Every integer of `self` must be representable: |x| < 2^significand.
                let magnitude = if self == DType::Pred {
                    1
                } else if self.is_signed() {
                    8 * self.bytes() - 1
                } else {
                    8 * self.bytes()
                };
                magnitude <= to.significand_bits()
            }
            (true, false) => false,
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A tensor type: element type and dimensions (row-major).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Ty {
    pub dtype: DType,
    pub shape: Vec<i64>,
}

impl Ty {
    pub fn new(dtype: DType, shape: Vec<i64>) -> Ty {
        Ty { dtype, shape }
    }

    pub fn elements(&self) -> i64 {
        self.shape.iter().product()
    }

    pub fn bytes(&self) -> i64 {
        self.elements() * i64::from(self.dtype.bytes())
    }

    pub fn rank(&self) -> usize {
        self.shape.len()
    }

    pub fn with_shape(&self, shape: Vec<i64>) -> Ty {
        Ty { dtype: self.dtype, shape }
    }

    pub fn with_dtype(&self, dtype: DType) -> Ty {
        Ty { dtype, shape: self.shape.clone() }
    }

    /// The type of this value transposed by `order` (`order[j]` is the dimension that
    /// becomes dimension `j`; a permutation of the dimensions, which callers ensure).
    pub fn permuted(&self, order: &[usize]) -> Ty {
        self.with_shape(order.iter().map(|&d| self.shape[d]).collect())
    }
}

impl fmt::Display for Ty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let dims: Vec<String> = self.shape.iter().map(i64::to_string).collect();
        write!(f, "{}[{}]", self.dtype, dims.join(","))
    }
}

/// The reduction a `reduce` applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Reducer {
    Add,
    Max,
    Min,
    Mul,
}

impl Reducer {
    /// The name the ISA table uses (`computation` attribute).
    pub fn table_name(self) -> &'static str {
        match self {
            Reducer::Add => "add",
            Reducer::Max => "max",
            Reducer::Min => "min",
            Reducer::Mul => "mul",
        }
    }

    pub fn from_table_name(name: &str) -> Option<Reducer> {
        match name {
            "add" => Some(Reducer::Add),
            "max" | "maximum" => Some(Reducer::Max),
            "min" | "minimum" => Some(Reducer::Min),
            "mul" | "multiply" => Some(Reducer::Mul),
            _ => None,
        }
    }
}

/// Dot dimension numbers.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct DotDims {
    pub lhs_contracting: Vec<usize>,
    pub rhs_contracting: Vec<usize>,
    pub lhs_batch: Vec<usize>,
    pub rhs_batch: Vec<usize>,
}

impl DotDims {
    /// Dimensions of a `rank`-dimensional operand that are neither batch nor contracting, in
    /// increasing order: the order in which they appear in the result.
    pub fn free(rank: usize, batch: &[usize], contracting: &[usize]) -> Vec<usize> {
        (0..rank).filter(|d| !batch.contains(d) && !contracting.contains(d)).collect()
    }
}

/// A literal: its values as f64 bit patterns, row-major (one value for a scalar or a splat).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Literal {
    pub bits: Vec<u64>,
}

impl Literal {
    pub fn from_values(values: &[f64]) -> Literal {
        Literal { bits: values.iter().map(|v| v.to_bits()).collect() }
    }

    pub fn values(&self) -> impl Iterator<Item = f64> + '_ {
        self.bits.iter().map(|b| f64::from_bits(*b))
    }

    /// The single value every element has, if they all have the same one.
    pub fn splat(&self) -> Option<f64> {
        let first = *self.bits.first()?;
        self.bits.iter().all(|b| *b == first).then(|| f64::from_bits(first))
    }
}

/// An operator with its attributes. The result type lives beside it in [`Node`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Op {
    /// Kernel parameter `i` in its declared type (kernel graphs only; the e-graph replaces it
    /// by the bit cast of [`Op::Input`]).
    Parameter(usize),
    /// Kernel parameter `i` as the bytes it occupies in HBM: `u8[bytes]`, available in d0.
    Input(usize),
    Constant(Literal),
    /// Bytes of HBM whose contents do not matter: the region an output is written into piece
    /// by piece, read and written back by strided stores (`u8[bytes]`).
    /// The tag tells regions apart: each is written over once.
    Uninit(usize),
    Reshape,
    BitcastConvert,
    Convert,
    Copy,
    Transpose(Vec<usize>),
    /// `(start, limit, stride)` per dimension.
    Slice(Vec<(i64, i64, i64)>),
    Concatenate(usize),
    /// The parts placed along `dim` at `starts`, where they may overlap: built only where the
    /// overlapping elements are the same values computed twice (the last tile of a dimension
    /// no multiple of a fixed unit, computed over the unit's last elements), so that writing
    /// the parts in any order gives the value. No instruction computes it; a byte string in
    /// HBM made so is each part written in its place.
    Overlay { dim: usize, starts: Vec<i64> },
    Dot(DotDims),
    Broadcast(Vec<usize>),
    /// Operands `[x, init]`.
    Reduce {
        dims: Vec<usize>,
        reducer: Reducer,
    },
    /// A sum with init 0, one operand.
    ReduceAdd(Vec<usize>),
    Exponential,
    Add,
    Subtract,
    Multiply,
    Divide,
    Maximum,
    Minimum,
    Xor,
    /// Operands `[a, b, on_true, on_false]`: `a < b ? on_true : on_false`.
    SelectLt,
    /// Operands `[a, b, on_true, on_false]`: `a == b ? on_true : on_false`.
    SelectEqVar,
    /// Operands `[operand, update, index...]`.
    DynamicUpdateSlice,
    /// A kernel operator that no instruction semantics can contain (`tanh`, `log`...): kept
    /// with its attributes' text so that selection can name it.
    Other {
        name: String,
        attrs: String,
    },
    /// An instruction of the ISA table with its computational attributes fixed; children are
    /// the classes of its input slices, in order.
    Pii {
        instr: usize,
        comp: Vec<i64>,
    },
}

/// The value of attribute `key` in the `name=value, ...` text an [`Op::Other`] keeps.
pub fn attribute<'a>(attrs: &'a str, key: &str) -> Option<&'a str> {
    attrs.split(", ").find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
}

/// The indices of a `key={i,j,...}` attribute (a `reverse`'s `dimensions`, say) in the text
/// an [`Op::Other`] keeps; `None` where it is absent or not such a list.
pub fn index_list(attrs: &str, key: &str) -> Option<Vec<usize>> {
    let list = attribute(attrs, key)?.strip_prefix('{')?.strip_suffix('}')?;
    list.split(',').filter(|d| !d.trim().is_empty()).map(|d| d.trim().parse().ok()).collect()
}

/// The inverse of the permutation `order`: where `order[i] = d`, `inverse[d] = i`.
pub fn inverse_permutation(order: &[usize]) -> Vec<usize> {
    let mut inverse = vec![0; order.len()];
    for (i, &d) in order.iter().enumerate() {
        inverse[d] = i;
    }
    inverse
}

impl Op {
    /// The e-graph operator of a vocabulary operator that instruction semantics may contain
    /// and that carries no attributes; `None` for the others.
    pub fn plain(code: OpCode) -> Option<Op> {
        Some(match code {
            OpCode::Reshape => Op::Reshape,
            OpCode::BitcastConvert => Op::BitcastConvert,
            OpCode::Convert => Op::Convert,
            OpCode::Copy => Op::Copy,
            OpCode::Exponential => Op::Exponential,
            OpCode::Add => Op::Add,
            OpCode::Subtract => Op::Subtract,
            OpCode::Multiply => Op::Multiply,
            OpCode::Divide => Op::Divide,
            OpCode::Maximum => Op::Maximum,
            OpCode::Minimum => Op::Minimum,
            OpCode::Xor => Op::Xor,
            OpCode::SelectLt => Op::SelectLt,
            OpCode::SelectEqVar => Op::SelectEqVar,
            OpCode::DynamicUpdateSlice => Op::DynamicUpdateSlice,
            _ => return None,
        })
    }

    /// The HLO spelling of the operator, as a user would recognise it in a message.
    pub fn hlo_name(&self) -> &str {
        match self {
            Op::Parameter(_) => "parameter",
            Op::Input(_) => "parameter",
            Op::Constant(_) => "constant",
            Op::Uninit(_) => "uninitialised",
            Op::Reshape => "reshape",
            Op::BitcastConvert => "bitcast-convert",
            Op::Convert => "convert",
            Op::Copy => "copy",
            Op::Transpose(_) => "transpose",
            Op::Slice(_) => "slice",
            Op::Concatenate(_) => "concatenate",
            Op::Overlay { .. } => "concatenate",
            Op::Dot(_) => "dot",
            Op::Broadcast(_) => "broadcast",
            Op::Reduce { .. } => "reduce",
            Op::ReduceAdd(_) => "reduce",
            Op::Exponential => "exponential",
            Op::Add => "add",
            Op::Subtract => "subtract",
            Op::Multiply => "multiply",
            Op::Divide => "divide",
            Op::Maximum => "maximum",
            Op::Minimum => "minimum",
            Op::Xor => "xor",
            Op::SelectLt => "select",
            Op::SelectEqVar => "select",
            Op::DynamicUpdateSlice => "dynamic-update-slice",
            Op::Other { name, .. } => name,
            Op::Pii { .. } => "instruction",
        }
    }

    /// Elementwise operators: the result has the operands' shape and each element depends on
    /// the same element of every operand.
    pub fn is_elementwise(&self) -> bool {
        matches!(
            self,
            Op::Exponential
                | Op::Add
                | Op::Subtract
                | Op::Multiply
                | Op::Divide
                | Op::Maximum
                | Op::Minimum
                | Op::Xor
                | Op::SelectLt
                | Op::SelectEqVar
        )
    }
}

/// An e-node: operator, result type, operand classes.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Node {
    pub op: Op,
    pub ty: Ty,
    pub children: Vec<Id>,
}

impl Node {
    pub fn new(op: Op, ty: Ty, children: Vec<Id>) -> Node {
        Node { op, ty, children }
    }

    pub fn leaf(op: Op, ty: Ty) -> Node {
        Node { op, ty, children: Vec::new() }
    }

    pub fn is_pii(&self) -> bool {
        matches!(self.op, Op::Pii { .. })
    }
}

impl Language for Node {
    type Discriminant = std::mem::Discriminant<Op>;

    fn discriminant(&self) -> Self::Discriminant {
        std::mem::discriminant(&self.op)
    }

    fn matches(&self, other: &Self) -> bool {
        self.op == other.op && self.ty == other.ty && self.children.len() == other.children.len()
    }

    fn children(&self) -> &[Id] {
        &self.children
    }

    fn children_mut(&mut self) -> &mut [Id] {
        &mut self.children
    }
}

impl fmt::Display for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.ty, self.op.hlo_name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_lists_are_read_from_attribute_text() {
        assert_eq!(index_list("dimensions={1}", "dimensions"), Some(vec![1]));
        assert_eq!(index_list("slice={[0:2]}, dimensions={0,1}", "dimensions"), Some(vec![0, 1]));
        assert_eq!(index_list("dimensions={}", "dimensions"), Some(vec![]));
        assert_eq!(index_list("window_dimensions={1}", "dimensions"), None);
        assert_eq!(index_list("", "dimensions"), None);
    }

    #[test]
    fn a_permutation_and_its_inverse_undo_each_other() {
        let order = [0, 2, 3, 1];
        let inverse = inverse_permutation(&order);
        assert_eq!(inverse, vec![0, 3, 1, 2]);
        let ty = Ty::new(DType::S8, vec![1, 16, 8, 4]);
        assert_eq!(ty.permuted(&order).shape, vec![1, 8, 4, 16]);
        assert_eq!(ty.permuted(&order).permuted(&inverse), ty);
    }

    #[test]
    fn dtype_names_round_trip() {
        for (i, t) in ELEMENT_TYPES.iter().enumerate() {
            assert_eq!(t.dtype as usize, i, "ELEMENT_TYPES is in DType order");
            assert_eq!(DType::parse(t.name), Some(t.dtype));
            assert_eq!(t.dtype.name(), t.name);
        }
        assert_eq!(DType::BF16.bytes(), 2);
        assert_eq!(DType::Pred.bytes(), 1);
        assert_eq!(DType::parse("f8"), None);
    }

    #[test]
    fn every_spelling_names_its_operator() {
        for (i, op) in OPERATORS.iter().enumerate() {
            assert_eq!(op.code as usize, i, "OPERATORS is in OpCode order");
            for spelling in op.spellings {
                assert_eq!(OpCode::parse(spelling), Some(op.code), "{spelling}");
            }
        }
        assert_eq!(OpCode::parse("exp"), Some(OpCode::Exponential));
        assert_eq!(OpCode::parse("bitcast-convert"), Some(OpCode::BitcastConvert));
        assert_eq!(OpCode::parse("frobnicate"), None);
    }

    #[test]
    fn exact_widening() {
        assert!(DType::BF16.widens_exactly_to(DType::F32));
        assert!(DType::F16.widens_exactly_to(DType::F32));
        assert!(!DType::F32.widens_exactly_to(DType::BF16));
        assert!(!DType::F16.widens_exactly_to(DType::BF16));
        assert!(!DType::BF16.widens_exactly_to(DType::F16));
        assert!(DType::S8.widens_exactly_to(DType::BF16));
        assert!(!DType::S16.widens_exactly_to(DType::BF16));
        assert!(DType::U8.widens_exactly_to(DType::S16));
        assert!(!DType::S8.widens_exactly_to(DType::U32));
        assert!(!DType::F32.widens_exactly_to(DType::S32));
    }

    #[test]
    fn nodes_differ_by_attributes() {
        let t = Ty::new(DType::BF16, vec![4, 4]);
        let a = Node::new(Op::Transpose(vec![1, 0]), t.clone(), vec![Id::from(0usize)]);
        let b = Node::new(Op::Transpose(vec![0, 1]), t, vec![Id::from(0usize)]);
        assert!(!a.matches(&b));
    }
}
