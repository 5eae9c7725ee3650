//! IR-to-IR rewrites: HLO algebraic identities, applied to the e-graph one pass at a time.
//!
//! Each rule reads one e-node (and the nodes of its operand classes), compares attributes, and
//! proposes a term equal to the node's class. The set is the subset of identities that can
//! lead to operators some instruction's semantics contains, plus the data-movement plumbing
//! that connects layouts (copy, transpose, reshape, bit casts, converts); a rule whose result
//! uses an operator no semantics contains is switched off (see [`RuleSet`]). Every proposed
//! term is type-checked before it enters the e-graph. The identity and constant-matrix
//! rewrites (`identities.rs`) run from here too, with the literal plumbing they need: shaped
//! literals are readable from their bytes in HBM, and transposes and reshapes of literals fold.

use crate::egraph::{raw_bytes, SelGraph};
use crate::identities::{self, Identities, Reads};
use crate::infer;
use crate::isa::{Expr, Instruction, Isa, Slice as IsaSlice};
use crate::lang::{DType, DotDims, Literal, Node, Op, OpCode, Reducer, Ty};
use crate::tiling::{self, Extents};
use egg::Id;
use std::collections::BTreeSet;

/// A term to add to the e-graph: an existing class or a new node over terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Term {
    Class(Id),
    Node(Op, Ty, Vec<Term>),
}

impl Term {
    /// `parts` side by side along dimension `dim` (a value of type `ty`): the part itself when
    /// there is only one, since a concatenation of one part is that part.
    pub fn concatenate(dim: usize, ty: Ty, mut parts: Vec<Term>) -> Term {
        if parts.len() == 1 {
            parts.remove(0)
        } else {
            Term::Node(Op::Concatenate(dim), ty, parts)
        }
    }
}

/// "Class `class` also equals `term`", found by rule `rule`.
#[derive(Debug, Clone)]
pub struct Rewrite {
    pub rule: &'static str,
    pub class: Id,
    pub term: Term,
}

/// Which families of rules are on, decided by the operators the ISA's semantics use. The
/// default has every family off, windows read row by row, and HBM runs of any length.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleSet {
    /// `x = copy(x)`: lets move instructions (semantics `copy`) implement any value.
    pub copy: bool,
    /// Dot layout normal forms, transpose folding and commutation.
    pub dot: bool,
    /// Accumulation precision: `convert(reduce(convert(x, wide)), narrow) = reduce(x)`.
    pub reduce: bool,
    /// `x = transpose(transpose(x))` for computed values: lets an instruction that transposes
    /// (a transposing store or move) finish a value computed in the other layout.
    pub transpose: bool,
    /// What the ISA's semantics take along each dimension of each operator: operations larger
    /// than that along a dimension are split into tiles of it (see `tiling.rs`).
    pub tiles: Extents,
    /// Some semantics write with `dynamic_update_slice` (strided stores): values
    /// concatenated along a later dimension are written into HBM piece by piece, and a
    /// column repeated across columns as its copies (see `tiling.rs`).
    pub strided_writes: bool,
    /// Some instruction writes HBM without `dynamic_update_slice` (a store of consecutive
    /// bytes). Where none does, a whole value too is written by strided stores
    /// ([`tiling::write_columns`] of one part).
    pub contiguous_writes: bool,
    /// Some instruction reads a register's bytes as another element type (AMX-style byte
    /// tiles, [`crate::isa_match::reinterprets_on_chip`]): a strided store of bytes then
    /// writes a value of any type, its rows seen as rows of bytes.
    pub byte_registers: bool,
    /// Some instruction reads a strided window of HBM (semantics that slice what they load
    /// from HBM). Where none does, a window narrower than the matrix it lies in is read row by
    /// row, and values concatenated along their columns are written row by row: each row of
    /// such a window is one contiguous run of bytes (see `tiling::window_row_by_row`).
    pub strided_reads: bool,
    /// Bytes every contiguous run of HBM an instruction reads is a multiple of: it writes
    /// whole units of an on-chip buffer (QKV's loads, rows of 64 bf16, read runs of 128
    /// bytes). A window read row by row whose rows are not such runs cannot be loaded that
    /// way, and its rows are not added (1: any run).
    pub hbm_read_unit: i64,
    /// The same for the runs an instruction writes to HBM (it reads whole units on chip).
    pub hbm_write_unit: i64,
    /// The layouts of `dot` operands the ISA's matrix units take, as `(lhs, rhs)` indices of
    /// the normal forms of [`Finder::dot`] (lhs 0: `[batch, free, contracting]`, 1: `[batch,
    /// contracting, free]`; rhs 0: `[batch, contracting, free]`, 1: `[batch, free,
    /// contracting]`). Products are rewritten to these forms only; empty: to all four.
    pub dot_forms: BTreeSet<(usize, usize)>,
    /// Mixed-precision rules (`precision.rs`), for the types the ISA computes in.
    pub precision: crate::precision::Widenings,
    /// Operators the ISA computes within one element type, through which identity and
    /// constant-matrix rewrites route values and operators it lacks (see `identities.rs`).
    pub identities: Identities,
    /// Rows split into tiles of the largest size instructions take are also split into tiles
    /// of that size divided by this (1: not): the search for programs whose values take that
    /// share of a buffer each ([`crate::select::select_narrow`]).
    pub tile_divisor: i64,
    /// `(element type, leading extent, row width)` of the transposes some instruction writes
    /// into rows of a width its result's last dimension is not fixed to: a transposing move of
    /// `[n, 64]` writes `[64, n]` row-major into `n` rows of 64, where a store of rows reads it
    /// as `[n, 64]`. The bytes of a transpose of that leading extent are then also those of
    /// its elements as rows of that width.
    pub transposed_rows: BTreeSet<(DType, i64, i64)>,
}

impl RuleSet {
    /// The rules useful for an ISA whose semantics use the operators `ops` (table names).
    pub fn for_ops(ops: &BTreeSet<OpCode>) -> RuleSet {
        RuleSet {
            copy: ops.contains(&OpCode::Copy),
            dot: ops.contains(&OpCode::Dot),
            reduce: ops.contains(&OpCode::ReduceAdd) || ops.contains(&OpCode::Reduce),
            transpose: ops.contains(&OpCode::Transpose),
            strided_writes: ops.contains(&OpCode::DynamicUpdateSlice),
            strided_reads: true,
            ..RuleSet::default()
        }
    }

    /// The same rules, with the identity and constant-matrix rewrites `isa`'s semantics allow.
    pub fn with_identities_of(mut self, isa: &Isa) -> RuleSet {
        self.identities = Identities::of(isa);
        self
    }

    /// The same rules, with operations split into tiles of what `isa`'s semantics take, and
    /// windows of HBM read row by row where no instruction reads a strided one.
    pub fn with_tiles_of(mut self, isa: &Isa) -> RuleSet {
        self.tiles = Extents::of(isa);
        let from_hbm = |i: &crate::isa::Instruction| i.inputs.iter().any(|s| isa.buffer(&s.buffer).is_hbm());
        self.strided_reads =
            isa.instructions.iter().any(|i| from_hbm(i) && i.semantics.iter().any(|op| op.op == OpCode::Slice));
        self.hbm_read_unit = hbm_run_unit(isa, |i| (&i.inputs, &i.outputs));
        self.hbm_write_unit = hbm_run_unit(isa, |i| (&i.outputs, &i.inputs));
        self.transposed_rows = transposed_rows(isa);
        let to_hbm = |i: &crate::isa::Instruction| i.outputs.iter().any(|s| isa.buffer(&s.buffer).is_hbm());
        self.contiguous_writes =
            isa.instructions.iter().any(|i| to_hbm(i) && !i.semantics.iter().any(|op| op.op == OpCode::DynamicUpdateSlice));
        self.byte_registers = crate::isa_match::reinterprets_on_chip(isa);
        self
    }

    /// The same rules, with products rewritten only to the operand layouts `isa`'s matrix
    /// units take (see `dot_forms`). A unit whose dimension numbers are none of the normal
    /// forms leaves all four on.
    pub fn with_dot_forms_of(mut self, isa: &Isa) -> RuleSet {
        let mut forms = BTreeSet::new();
        for instr in &isa.instructions {
            let rank = |name: &str| instr.semantics.iter().find(|o| o.name == name).map(|o| o.shape.len());
            for op in instr.semantics.iter().filter(|op| op.op == OpCode::Dot) {
                let dims = |key: &str| -> Option<Vec<usize>> {
                    op.attrs.get(key).map_or(Some(Vec::new()), |v| {
                        v.as_array()?.iter().map(|d| d.as_u64().map(|d| d as usize)).collect()
                    })
                };
                let ranks = (op.operands.first().and_then(|o| rank(o)), op.operands.get(1).and_then(|o| rank(o)));
                let (Some(lb), Some(lc), Some(rb), Some(rc), (Some(ra), Some(rr))) = (
                    dims("lhs_batch_dims"),
                    dims("lhs_contracting_dims"),
                    dims("rhs_batch_dims"),
                    dims("rhs_contracting_dims"),
                    ranks,
                ) else {
                    return self;
                };
                let dd = DotDims { lhs_contracting: lc, rhs_contracting: rc, lhs_batch: lb, rhs_batch: rb };
                let Some((lhs, rhs)) = layouts(&dd, ra, rr).filter(|(l, r)| !l.is_empty() && !r.is_empty()) else {
                    return self;
                };
                forms.extend(lhs.iter().flat_map(|&l| rhs.iter().map(move |&r| (l, r))));
            }
        }
        self.dot_forms = forms;
        self
    }

    /// Every rule on (for tests of the rules themselves).
    pub fn all() -> RuleSet {
        RuleSet { copy: true, dot: true, reduce: true, transpose: true, strided_writes: true, strided_reads: true, ..RuleSet::default() }
    }
}

impl Default for RuleSet {
    fn default() -> RuleSet {
        RuleSet {
            copy: false,
            dot: false,
            reduce: false,
            transpose: false,
            tiles: Extents::default(),
            strided_writes: false,
            contiguous_writes: true,
            byte_registers: false,
            strided_reads: false,
            hbm_read_unit: 1,
            hbm_write_unit: 1,
            dot_forms: BTreeSet::new(),
            precision: Default::default(),
            identities: Identities::default(),
            tile_divisor: 1,
            transposed_rows: BTreeSet::new(),
        }
    }
}

/// The `(element type, leading extent, row width)` of every instruction of `isa` whose ROOT
/// is a matrix transpose of a constant leading extent written into an on-chip buffer of rows
/// of a width its last dimension is not fixed to (see [`RuleSet::transposed_rows`]).
fn transposed_rows(isa: &Isa) -> BTreeSet<(DType, i64, i64)> {
    let mut widths = BTreeSet::new();
    for instr in &isa.instructions {
        let (Some(root), Some(out)) = (instr.semantics.iter().find(|o| o.root).or(instr.semantics.last()), instr.outputs.first())
        else {
            continue;
        };
        let buffer = isa.buffer(&out.buffer);
        let width = buffer.unit_dims.iter().product::<i64>();
        let (OpCode::Transpose, [Expr::Int(leading), last]) = (root.op, root.shape.as_slice()) else { continue };
        if !buffer.is_hbm() && *last != Expr::Int(width) {
            widths.insert((root.dtype, *leading, width));
        }
    }
    widths
}

/// The greatest common divisor of the element counts of the on-chip units that instructions
/// moving HBM runs (`ends(i).0` touching HBM) fill or drain (`ends(i).1`): each run is whole
/// units of elements of at least one byte, so its length in bytes is a multiple of this.
fn hbm_run_unit(isa: &Isa, ends: impl Fn(&Instruction) -> (&Vec<IsaSlice>, &Vec<IsaSlice>)) -> i64 {
    let hbm = |s: &IsaSlice| isa.buffer(&s.buffer).is_hbm();
    let gcd = |a: i64, b: i64| -> i64 {
        let (mut a, mut b) = (a, b);
        while b != 0 {
            (a, b) = (b, a % b);
        }
        a
    };
    let units = isa.instructions.iter().filter(|i| ends(i).0.iter().any(hbm)).flat_map(|i| {
        ends(i).1.iter().filter(|s| !hbm(s)).map(|s| isa.buffer(&s.buffer).unit_dims.iter().product::<i64>()).collect::<Vec<_>>()
    });
    units.fold(0, gcd).max(1)
}

/// `concatenate_1(p_0 .. p_k-1) : [1, k * n]` of one-row parts `[1, n]` is, in row-major
/// order, the same values as their concatenation down rows, `[k, n]`: a vector-matrix product
/// wider than the array, computed a one-row tile at a time, is then written by one store of
/// `k` rows from side-by-side tiles. Exact for every type (the same elements in the same
/// order).
fn one_row_as_rows(eg: &SelGraph, node: &Node) -> Option<Term> {
    let (rows, width) = match node.ty.shape.as_slice() {
        &[rows, width] => (rows, width),
        _ => return None,
    };
    let parts = &node.children;
    let n = *eg[*parts.first()?].data.shape.get(1)?;
    if rows != 1 || parts.len() < 2 || parts.iter().any(|&p| eg[p].data.shape != [1, n]) {
        return None;
    }
    let stacked = node.ty.with_shape(vec![parts.len() as i64, n]);
    debug_assert_eq!(width, parts.len() as i64 * n);
    let down = Term::Node(Op::Concatenate(0), stacked, parts.iter().map(|&p| Term::Class(p)).collect());
    Some(Term::Node(Op::Reshape, node.ty.clone(), vec![down]))
}

/// A window `[0, 1) x [j n, (j + 1) n)` of a one-row matrix `x : [1, k n]` is row `j` of
/// `x` seen as `k` rows of `n` (the counterpart of [`one_row_as_rows`]: a bias added to each
/// one-row tile is then one load of `k` rows, each tile reading its row in place).
fn window_of_one_row_as_row(x_ty: &Ty, x: Id, ranges: &[(i64, i64, i64)], ty: &Ty) -> Option<Term> {
    let (&[1, width], &[(0, 1, 1), (c0, c1, 1)]) = (x_ty.shape.as_slice(), ranges) else { return None };
    let n = c1 - c0;
    if n <= 0 || n == width || width % n != 0 || c0 % n != 0 {
        return None;
    }
    let grid = Term::Node(Op::Reshape, x_ty.with_shape(vec![width / n, n]), vec![Term::Class(x)]);
    let row = c0 / n;
    Some(Term::Node(Op::Slice(vec![(row, row + 1, 1), (0, n, 1)]), ty.clone(), vec![grid]))
}

fn class_ty(eg: &SelGraph, id: Id) -> &Ty {
    &eg[id].data
}

/// Operators that compute something (as opposed to moving or reinterpreting data).
fn computes(op: &Op) -> bool {
    op.is_elementwise()
        || matches!(
            op,
            Op::Convert
                | Op::Dot(_)
                | Op::Reduce { .. }
                | Op::ReduceAdd(_)
                | Op::Broadcast(_)
                | Op::Slice(_)
                | Op::Concatenate(_)
                | Op::DynamicUpdateSlice
        )
}

fn identity(perm: &[usize]) -> bool {
    perm.iter().enumerate().all(|(i, &p)| i == p)
}

fn transpose_term(eg: &SelGraph, x: Id, perm: Vec<usize>) -> Term {
    if identity(&perm) {
        return Term::Class(x);
    }
    match infer::transpose_type(class_ty(eg, x), &perm) {
        Ok(ty) => Term::Node(Op::Transpose(perm), ty, vec![Term::Class(x)]),
        Err(_) => unreachable!("callers pass permutations of the operand's rank"),
    }
}

fn reshape_term(x: Term, x_ty: &Ty, to: Ty) -> Term {
    if *x_ty == to {
        x
    } else {
        Term::Node(Op::Reshape, to, vec![x])
    }
}

fn convert_term(eg: &SelGraph, x: Id, dtype: DType) -> Term {
    let ty = class_ty(eg, x);
    if ty.dtype == dtype {
        Term::Class(x)
    } else {
        Term::Node(Op::Convert, ty.with_dtype(dtype), vec![Term::Class(x)])
    }
}

/// The least and greatest values of an integer type or pred (64-bit ones approximately).
pub fn integer_range(dtype: DType) -> Option<(f64, f64)> {
    Some(match dtype {
        DType::Pred => (0.0, 1.0),
        DType::S8 => (-128.0, 127.0),
        DType::S16 => (-32768.0, 32767.0),
        DType::S32 => (-2147483648.0, 2147483647.0),
        DType::S64 => (-9.2e18, 9.2e18),
        DType::U8 => (0.0, 255.0),
        DType::U16 => (0.0, 65535.0),
        DType::U32 => (0.0, 4294967295.0),
        _ if dtype.is_int() => (0.0, 1.8e19),
        _ => return None,
    })
}

/// Whether `v` is a value of `dtype` (so that converting a literal to it is exact).
pub fn representable(v: f64, dtype: DType) -> bool {
    if let Some((lo, hi)) = integer_range(dtype) {
        return v.fract() == 0.0 && v >= lo && v <= hi;
    }
    if v.is_nan() || v.is_infinite() || v == 0.0 || dtype == DType::F64 {
        return true;
    }
    let f = v as f32;
    if f64::from(f) != v {
        return false;
    }
    match dtype {
        DType::F32 => true,
        DType::BF16 => f.to_bits() & 0xffff == 0,
        DType::F16 => {
            let exp = v.abs().log2().floor() as i32;
            if exp > 15 {
                return false;
            }
            // 11 significant bits for normals, a multiple of 2^-24 below 2^-14.
            let quantum = if exp >= -14 { (exp - 10) as f64 } else { -24.0 };
            (v / quantum.exp2()).fract() == 0.0
        }
        _ => false,
    }
}

/// The bytes of `x : ty` as a flat `u8` string (see `egraph::to_bytes`).
pub(crate) fn to_bytes_term(x: Term, ty: &Ty) -> Term {
    let raw = raw_bytes(ty);
    let cast = if raw == *ty { x } else { Term::Node(Op::BitcastConvert, raw.clone(), vec![x]) };
    reshape_term(cast, &raw, Ty::new(DType::U8, vec![ty.bytes()]))
}

/// `ty` read from the flat bytes `bytes` (see `egraph::from_bytes`).
pub(crate) fn from_bytes_term(bytes: Term, ty: &Ty) -> Term {
    let raw = raw_bytes(ty);
    let reshaped = reshape_term(bytes, &Ty::new(DType::U8, vec![ty.bytes()]), raw.clone());
    if raw == *ty {
        reshaped
    } else {
        Term::Node(Op::BitcastConvert, ty.clone(), vec![reshaped])
    }
}

/// A literal of shape `shape` transposed by `perm`; `None` when too large to fold.
fn transpose_literal(lit: &Literal, shape: &[i64], perm: &[usize]) -> Option<Literal> {
    if lit.bits.len() == 1 {
        return Some(lit.clone());
    }
    let count: i64 = shape.iter().product();
    if count as usize != lit.bits.len() || count > identities::MAX_CONSTANT_ELEMENTS {
        return None;
    }
    let out_shape: Vec<i64> = perm.iter().map(|&p| shape[p]).collect();
    let strides: Vec<i64> = (0..shape.len()).map(|d| shape[d + 1..].iter().product()).collect();
    let mut bits = Vec::with_capacity(lit.bits.len());
    let mut index = vec![0i64; out_shape.len()];
    for _ in 0..count {
        let source: i64 = index.iter().zip(perm).map(|(&i, &p)| i * strides[p]).sum();
        bits.push(lit.bits[source as usize]);
        for d in (0..index.len()).rev() {
            index[d] += 1;
            if index[d] < out_shape[d] {
                break;
            }
            index[d] = 0;
        }
    }
    Some(Literal { bits })
}

/// Which normal forms of [`Finder::dot`] a product with dimension numbers `dd` and operand
/// ranks `ra`, `rb` is in: the lhs forms and the rhs forms it matches (`None` when its batch
/// dimensions do not lead).
fn layouts(dd: &DotDims, ra: usize, rb: usize) -> Option<(Vec<usize>, Vec<usize>)> {
    let (nb, nc) = (dd.lhs_batch.len(), dd.lhs_contracting.len());
    let span = |from: usize, n: usize| (from..from + n).collect::<Vec<usize>>();
    if dd.lhs_batch != span(0, nb) || dd.rhs_batch != span(0, nb) || ra < nb + nc || rb < nb + nc {
        return None;
    }
    let matching = |forms: [Vec<usize>; 2], dims: &[usize]| (0..2).filter(|&k| forms[k] == dims).collect();
    let lhs = matching([span(ra - nc, nc), span(nb, nc)], &dd.lhs_contracting);
    let rhs = matching([span(nb, nc), span(rb - nc, nc)], &dd.rhs_contracting);
    Some((lhs, rhs))
}

struct Finder<'a> {
    eg: &'a SelGraph,
    rules: &'a RuleSet,
    out: Vec<Rewrite>,
}

impl<'a> Finder<'a> {
    fn push(&mut self, rule: &'static str, class: Id, term: Term) {
        if term != Term::Class(class) {
            self.out.push(Rewrite { rule, class, term });
        }
    }

    /// A split's concatenation under `rule`, and its overlay, where it has one, under
    /// `overlay_rule`.
    fn push_split(&mut self, rule: &'static str, overlay_rule: &'static str, class: Id, split: tiling::Split) {
        self.push(rule, class, split.concat);
        if let Some(overlay) = split.overlay {
            self.push(overlay_rule, class, overlay);
        }
    }

    fn nodes(&self, id: Id) -> &'a [Node] {
        &self.eg[id].nodes
    }

    /// Whether class `id` holds a literal.
    fn literal(&self, id: Id) -> bool {
        self.nodes(id).iter().any(|n| matches!(n.op, Op::Constant(_)))
    }

    /// Whether class `id` is computed by arithmetic (rather than read, moved or a literal).
    fn computed(&self, id: Id) -> bool {
        self.nodes(id).iter().any(|n| {
            n.op.is_elementwise() || matches!(n.op, Op::Convert | Op::Dot(_) | Op::Reduce { .. } | Op::ReduceAdd(_))
        })
    }

    /// The flat bytes `id` of a matrix transpose (`to_bytes(v)`, `x` its element bytes) are
    /// also those of the same elements as rows of a width into which some instruction writes
    /// transposes ([`RuleSet::transposed_rows`]): `to_bytes(reshape(v) : [e / w, w])`, which a
    /// store of rows of `w` matches. Exact for every type (a reshape keeps the row-major
    /// order).
    fn transpose_bytes_as_rows(&mut self, id: Id, x: Id) {
        let eg = self.eg;
        let values: Vec<Id> = self
            .nodes(x)
            .iter()
            .filter(|n| n.op == Op::BitcastConvert)
            .map(|n| n.children[0])
            .chain(std::iter::once(x))
            .collect();
        for v in values {
            let ty = class_ty(eg, v);
            // Transposes of kernel inputs only: every computed matrix's class holds a
            // transpose of its transpose, and the identity rewrites make many literals; the
            // rows of all of those grew a 128-row linear layer's search eightfold (a computed
            // value is transposed by the rules that move transposes through products and
            // elementwise operations instead).
            let read_transposed =
                self.nodes(v).iter().any(|n| matches!(n.op, Op::Transpose(_)) && tiling::read_as_is(eg, n.children[0]));
            if ty.rank() != 2 || !read_transposed {
                continue;
            }
            let widths: Vec<i64> = self
                .rules
                .transposed_rows
                .iter()
                .filter(|&&(d, leading, _)| d == ty.dtype && leading == ty.shape[0])
                .map(|&(.., w)| w)
                .collect();
            for w in widths {
                if w <= 0 || ty.shape[1] == w || ty.elements() % w != 0 {
                    continue;
                }
                let rows = ty.with_shape(vec![ty.elements() / w, w]);
                let term = to_bytes_term(Term::Node(Op::Reshape, rows.clone(), vec![Term::Class(v)]), &rows);
                self.push("transpose-bytes-as-rows", id, term);
            }
        }
    }

    fn class(&mut self, id: Id) {
        let eg = self.eg;
        let ty = class_ty(eg, id).clone();
        if self.rules.copy && !self.nodes(id).iter().any(|n| n.op == Op::Copy && eg.find(n.children[0]) == id) {
            self.push("copy-insert", id, Term::Node(Op::Copy, ty.clone(), vec![Term::Class(id)]));
        }
        if self.rules.transpose && ty.rank() >= 2 && self.nodes(id).iter().any(|n| computes(&n.op)) {
            let mut swap: Vec<usize> = (0..ty.rank()).collect();
            swap.swap(ty.rank() - 2, ty.rank() - 1);
            let once = transpose_term(eg, id, swap.clone());
            self.push("transpose-introduce", id, Term::Node(Op::Transpose(swap), ty.clone(), vec![once]));
        }
        // Each of these rules adds its term once: the class keeps it (a class holds one value).
        let literal = self.literal(id);
        let read_from_bytes = self.nodes(id).iter().any(|n| n.op == Op::BitcastConvert);
        if literal && !read_from_bytes && ty.rank() >= 1 && ty.dtype != DType::U8 {
            // A literal is placed in HBM and read by the ISA's loads: `c = from_bytes(to_bytes(c))`.
            self.push("constant-in-hbm", id, from_bytes_term(to_bytes_term(Term::Class(id), &ty), &ty));
        }
        if !self.rules.tiles.is_empty() {
            // One split per class: the tiles are operations too, and take the other rules (the
            // row tiles of a value too wide as well are split into columns in turn).
            let tiles = &self.rules.tiles;
            // The identities a value passes through (`x + 0`) do not choose its tiles.
            let nodes = self.nodes(id);
            let computing = || nodes.iter().filter(|n| !identities::is_pass_through(eg, n));
            if let Some(split) = computing().find_map(|n| tiling::split_leading(eg, tiles, n)) {
                self.push_split("split-leading", "overlay-leading", id, split);
                if self.rules.tile_divisor > 1 {
                    let divisor = self.rules.tile_divisor;
                    if let Some(split) = computing().find_map(|n| tiling::split_leading_divided(eg, tiles, n, divisor)) {
                        self.push_split("split-leading-divided", "overlay-leading-divided", id, split);
                    }
                }
            } else if let Some(term) = computing().find_map(|n| tiling::split_like_operand(eg, tiles, n)) {
                self.push("split-like-operand", id, term);
            } else if let Some(split) = computing().find_map(|n| tiling::split_columns(eg, tiles, n)) {
                self.push_split("split-column-tiles", "overlay-column-tiles", id, split);
            } else if let Some(term) = self.nodes(id).iter().find_map(|n| tiling::split_reduction(eg, tiles, n)) {
                self.push("split-reduction", id, term);
            }
            if let Some(term) = computing().find_map(|n| tiling::vector_as_rows(eg, tiles, n)) {
                self.push("vector-as-rows", id, term);
            }
            if let Some(term) = self.nodes(id).iter().find_map(|n| tiling::sum_of_items(eg, n)) {
                self.push("sum-of-items", id, term);
            }
            if let Some(term) = self.nodes(id).iter().find_map(|n| tiling::pad_rows(eg, tiles, n)) {
                self.push("pad-rows", id, term);
            }
            // Not instead of `pad-rows`: the identity product `x = dot(x, I)` in a class pads
            // whatever else the class holds.
            if let Some(terms) =
                computing().map(|n| tiling::pad_rows_through_products(eg, tiles, n)).find(|t| !t.is_empty())
            {
                for term in terms {
                    self.push("pad-rows-through-product", id, term);
                }
            }
            if self.rules.strided_writes {
                if let Some(term) = self.nodes(id).iter().find_map(|n| tiling::broadcast_as_copies(eg, n, 1)) {
                    self.push("broadcast-as-copies", id, term);
                }
            }
            if let Some(term) = self.nodes(id).iter().find_map(|n| tiling::broadcast_as_copies(eg, n, 0)) {
                self.push("broadcast-as-rows", id, term);
            }
            if !self.rules.strided_reads {
                // Each operation the class computes, not only its first node: the row view of
                // `max(x, 0)` is what a ReLU store matches, that of `x + 0` nothing.
                let views: Vec<Term> = computing().filter_map(|n| tiling::elementwise_as_rows(eg, tiles, n)).collect();
                for term in views {
                    self.push("elementwise-as-rows", id, term);
                }
            }
            let products = self.nodes(id).iter().map(|n| tiling::split_product(eg, &self.rules.tiles, n));
            if let Some(splits) = products.into_iter().find(|s| !s.is_empty()) {
                for (rule, term) in splits {
                    self.push(rule, id, term);
                }
            }
        }
        for node in self.nodes(id) {
            self.node(id, node);
            if !self.rules.identities.is_empty() {
                for (rule, term) in identities::lowerings(eg, &self.rules.identities, &self.rules.tiles, node) {
                    self.push(rule, id, term);
                }
                let ids = &self.rules.identities;
                for (rule, x, term) in identities::sum_operands_through_products(eg, ids, &self.rules.tiles, id, node) {
                    self.push(rule, x, term);
                }
            }
        }
    }

    fn node(&mut self, id: Id, node: &Node) {
        let eg = self.eg;
        if node.ty.rank() == 1 && (node.op.is_elementwise() || node.op == Op::Convert) {
            self.vector_as_matrix(id, node);
        }
        match &node.op {
            Op::Copy => self.push("copy-elim", id, Term::Class(node.children[0])),
            Op::Transpose(p) => {
                let x = node.children[0];
                if identity(p) {
                    self.push("transpose-identity", id, Term::Class(x));
                }
                for inner in self.nodes(x) {
                    match &inner.op {
                        Op::Constant(lit) if !self.nodes(id).iter().any(|n| matches!(n.op, Op::Constant(_))) => {
                            if let Some(folded) = transpose_literal(lit, &class_ty(eg, x).shape, p) {
                                self.push("constant-fold-transpose", id, Term::Node(Op::Constant(folded), node.ty.clone(), vec![]));
                            }
                        }
                        Op::Transpose(q) => {
                            let composed = p.iter().map(|&i| q[i]).collect();
                            self.push("transpose-compose", id, transpose_term(eg, inner.children[0], composed));
                        }
                        // Elementwise operators do not care about layout: transposing the result
                        // is transposing every operand.
                        op if op.is_elementwise() || *op == Op::Convert => {
                            let args = inner.children.iter().map(|&a| transpose_term(eg, a, p.clone())).collect();
                            self.push(
                                "transpose-through-elementwise",
                                id,
                                Term::Node(op.clone(), node.ty.clone(), args),
                            );
                        }
                        Op::Broadcast(d) => self.transpose_broadcast(id, node, p, d, inner.children[0]),
                        _ => {}
                    }
                }
            }
            Op::Reshape => {
                let x = node.children[0];
                if *class_ty(eg, x) == node.ty {
                    self.push("reshape-identity", id, Term::Class(x));
                }
                if node.ty.dtype == DType::U8 && node.ty.rank() == 1 {
                    self.transpose_bytes_as_rows(id, x);
                    // Where every store is strided, a whole matrix is written by strided stores
                    // too (one part over HBM whose contents do not matter). Not a value already
                    // so written, nor those contents themselves: each would start another
                    // region, without end.
                    let written = |c: Id| {
                        eg[c].nodes.iter().any(|n| match n.op {
                            Op::DynamicUpdateSlice | Op::Uninit(_) => true,
                            Op::Reshape => eg[n.children[0]].nodes.iter().any(|m| matches!(m.op, Op::Uninit(_))),
                            _ => false,
                        })
                    };
                    if self.rules.strided_writes && !self.rules.contiguous_writes && class_ty(eg, x).rank() >= 2 && !written(x) {
                        for term in tiling::write_columns(eg, usize::from(x), &node.ty, class_ty(eg, x), 1, &[x], self.rules.byte_registers) {
                            self.push("flatten-by-a-strided-write", id, term);
                        }
                    }
                }
                for inner in self.nodes(x) {
                    match &inner.op {
                        // Row-major values are unchanged by a reshape.
                        Op::Constant(lit)
                            if node.ty.dtype == class_ty(eg, x).dtype
                                && !self.nodes(id).iter().any(|n| matches!(n.op, Op::Constant(_))) =>
                        {
                            self.push("constant-fold-reshape", id, Term::Node(Op::Constant(lit.clone()), node.ty.clone(), vec![]));
                        }
                        // A scalar repeated is the same scalar repeated in any shape.
                        Op::Broadcast(d) if d.is_empty() && class_ty(eg, inner.children[0]).rank() == 0 => {
                            let scalar = Term::Class(inner.children[0]);
                            self.push("reshape-of-splat", id, Term::Node(Op::Broadcast(vec![]), node.ty.clone(), vec![scalar]));
                        }
                        Op::Reshape => {
                            let y = inner.children[0];
                            self.push(
                                "reshape-compose",
                                id,
                                reshape_term(Term::Class(y), class_ty(eg, y), node.ty.clone()),
                            );
                        }
                        // Flattening a concatenation along its leading dimension flattens
                        // each part and lays them end to end.
                        Op::Concatenate(0) if node.ty.rank() == 1 && inner.children.len() > 1 => {
                            let parts = inner
                                .children
                                .iter()
                                .map(|&c| {
                                    let c_ty = class_ty(eg, c);
                                    reshape_term(Term::Class(c), c_ty, c_ty.with_shape(vec![c_ty.elements()]))
                                })
                                .collect();
                            self.push("reshape-of-concat", id, Term::Node(Op::Concatenate(0), node.ty.clone(), parts));
                        }
                        Op::Overlay { dim, starts } if node.ty.rank() == 1 => {
                            if let Some(term) = tiling::flatten_overlay(eg, &node.ty, class_ty(eg, x), *dim, starts, &inner.children) {
                                self.push("reshape-of-overlay", id, term);
                            }
                        }
                        // Flattening bytes concatenated along a later dimension writes each
                        // part over the rows it lies in (see `tiling::write_columns`).
                        Op::Concatenate(d)
                            if self.rules.strided_writes
                                && *d >= 1
                                && node.ty.rank() == 1
                                && node.ty.dtype == DType::U8
                                && inner.children.len() > 1 =>
                        {
                            for term in tiling::write_columns(eg, usize::from(x), &node.ty, class_ty(eg, x), *d, &inner.children, self.rules.byte_registers) {
                                self.push("flatten-by-strided-writes", id, term);
                            }
                        }
                        Op::Concatenate(1)
                            if !self.rules.strided_writes
                                && node.ty.rank() == 1
                                && node.ty.dtype == DType::U8
                                && inner.children.len() > 1 =>
                        {
                            if let Some(term) = tiling::flatten_row_by_row(eg, &node.ty, class_ty(eg, x), &inner.children, self.rules.hbm_write_unit) {
                                self.push("flatten-row-by-row", id, term);
                            }
                        }
                        // Reshaping elements that were read from bytes is reshaping the bytes.
                        Op::BitcastConvert => {
                            let y = inner.children[0];
                            let y_ty = class_ty(eg, y);
                            let (a, b) = (y_ty.dtype.bytes(), node.ty.dtype.bytes());
                            // A cast between types of one width keeps the shape; a widening
                            // one consumes the trailing dimension of narrow elements.
                            let same_width = a == b && y_ty.shape == class_ty(eg, x).shape;
                            if same_width || (a < b && y_ty.shape.last() == Some(&i64::from(b / a))) {
                                let mut raw = node.ty.shape.clone();
                                if !same_width {
                                    raw.push(i64::from(b / a));
                                }
                                let raw_ty = Ty::new(y_ty.dtype, raw);
                                let bytes = reshape_term(Term::Class(y), y_ty, raw_ty);
                                self.push(
                                    "reshape-of-bitcast",
                                    id,
                                    Term::Node(Op::BitcastConvert, node.ty.clone(), vec![bytes]),
                                );
                            }
                        }
                        _ => {}
                    }
                }
            }
            Op::BitcastConvert => {
                let x = node.children[0];
                if *class_ty(eg, x) == node.ty {
                    self.push("bitcast-identity", id, Term::Class(x));
                }
                for inner in self.nodes(x) {
                    let y = inner.children.first().copied();
                    match (&inner.op, y) {
                        (Op::BitcastConvert, Some(y)) => {
                            if *class_ty(eg, y) == node.ty {
                                self.push("bitcast-round-trip", id, Term::Class(y));
                            } else if infer::bitcast_type(class_ty(eg, y), node.ty.dtype).as_ref() == Ok(&node.ty) {
                                self.push(
                                    "bitcast-compose",
                                    id,
                                    Term::Node(Op::BitcastConvert, node.ty.clone(), vec![Term::Class(y)]),
                                );
                            }
                        }
                        // A bit cast acts on each element alone, so on each part alone.
                        (Op::Concatenate(d) | Op::Overlay { dim: d, .. }, Some(_)) if *d < class_ty(eg, x).rank().min(node.ty.rank()) => {
                            let parts: Option<Vec<Term>> = inner
                                .children
                                .iter()
                                .map(|&c| {
                                    let cast = infer::bitcast_type(class_ty(eg, c), node.ty.dtype).ok()?;
                                    Some(Term::Node(Op::BitcastConvert, cast, vec![Term::Class(c)]))
                                })
                                .collect();
                            if let Some(parts) = parts {
                                let rule = if matches!(inner.op, Op::Overlay { .. }) { "bitcast-of-overlay" } else { "bitcast-of-concat" };
                                self.push(rule, id, Term::Node(inner.op.clone(), node.ty.clone(), parts));
                            }
                        }
                        // Both sides reinterpret the same row-major bytes.
                        (Op::Reshape, Some(y)) => {
                            if let Ok(cast) = infer::bitcast_type(class_ty(eg, y), node.ty.dtype) {
                                if cast.elements() == node.ty.elements() {
                                    let inner_term = if cast == *class_ty(eg, y) {
                                        Term::Class(y)
                                    } else {
                                        Term::Node(Op::BitcastConvert, cast.clone(), vec![Term::Class(y)])
                                    };
                                    self.push(
                                        "bitcast-of-reshape",
                                        id,
                                        reshape_term(inner_term, &cast, node.ty.clone()),
                                    );
                                }
                            }
                        }
                        _ => {}
                    }
                }
            }
            Op::Add if self.rules.dot => self.accumulate(id, node),
            // Where products are only ever added onto something, a product (a tile of one, or
            // a kernel's) is itself plus zero: the accumulator starts from zeros.
            Op::Dot(_) if self.rules.identities.accumulate_only.contains(&node.ty.dtype) => {
                let eg = self.eg;
                if !self.nodes(id).iter().any(|n| n.op == Op::Add && identities::is_pass_through(eg, n)) {
                    let (rule, term) = identities::plus_zero(&node.ty, id);
                    self.push(rule, id, term);
                }
            }
            Op::Concatenate(d) if node.ty.dtype == DType::U8 && node.ty.rank() == 1 => self.flatten_concat(id, node, *d),
            Op::Overlay { dim: 0, starts } if node.ty.dtype == DType::U8 && node.ty.rank() == 1 => self.flatten_overlay(id, node, starts),
            // Rows padded with constant rows (a contraction or a row count padded with zeros)
            // are placed part by part in one buffer, and a part read row by row is itself a
            // concatenation: its rows are the parts.
            Op::Concatenate(0) if node.children.iter().any(|&c| constant_valued(eg, c, 3)) => {
                self.flatten_concat(id, node, 0)
            }
            Op::Concatenate(1) => {
                if let Some(term) = one_row_as_rows(eg, node) {
                    self.push("one-row-as-rows", id, term);
                }
                if let Some(term) = self.wide_parts_in_windows(node) {
                    self.push("concatenate-wide-parts", id, term);
                }
                if let Some(term) = self.flatten_columns(id, node) {
                    self.push("concatenate-flatten-columns", id, term);
                }
                if let Some(term) = self.rows_of_column_parts(id, node) {
                    self.push("concatenate-rows-of-column-parts", id, term);
                }
            }
            Op::Convert => self.convert(id, node),
            Op::Broadcast(d) => self.broadcast(id, node, d),
            Op::Constant(lit) if !node.ty.shape.is_empty() => {
                if let Some(v) = lit.splat() {
                    let scalar =
                        Term::Node(Op::Constant(Literal::from_values(&[v])), node.ty.with_shape(vec![]), vec![]);
                    self.push("constant-splat", id, Term::Node(Op::Broadcast(vec![]), node.ty.clone(), vec![scalar]));
                    if lit.bits.len() > 1 {
                        self.push(
                            "constant-splat",
                            id,
                            Term::Node(Op::Constant(Literal::from_values(&[v])), node.ty.clone(), vec![]),
                        );
                    }
                }
            }
            // A sum over size-1 dimensions is not a reshape: the init +0 turns -0 into +0.
            Op::ReduceAdd(dims) => self.reduce_layouts(id, node, dims),
            Op::Reduce { dims, .. } => self.reduce_layouts(id, node, dims),
            Op::Dot(dd) if self.rules.dot => {
                self.dot(id, node, dd);
                if let Some(term) = self.vectors_as_matrices(node, dd) {
                    self.push("vector-as-matrix", id, term);
                }
            }
            Op::Slice(ranges) => self.slice(id, node, ranges),
            Op::DynamicUpdateSlice if self.rules.strided_writes => {
                for term in tiling::update_by_parts(eg, node) {
                    self.push("update-by-parts", id, term);
                }
            }
            Op::Multiply if self.rules.dot && node.ty.rank() == 2 => self.outer_product(id, node),
            // Integers only: `a < b ? b : a` is `max(a, b)` and `a < b ? a : b` is `min(a, b)`
            // (`jnp.where(x > 0, x, 0)` is a ReLU). Not for floats: with a NaN `b` the choice
            // is `a` while the maximum is NaN, and `max(-0, +0)` need not be the choice.
            Op::SelectLt if node.ty.dtype.is_int() => {
                let [a, b, t, f] = [0, 1, 2, 3].map(|i| eg.find(node.children[i]));
                let choice = match (t, f) {
                    _ if (t, f) == (b, a) => Some(("select-as-maximum", Op::Maximum)),
                    _ if (t, f) == (a, b) => Some(("select-as-minimum", Op::Minimum)),
                    _ => None,
                };
                // Both operand orders: semantics write `maximum(x, 0)` as often as the kernel
                // `0 < x ? x : 0`, and nothing else commutes them.
                if let Some((rule, op)) = choice {
                    for (x, y) in [(a, b), (b, a)] {
                        self.push(rule, id, Term::Node(op.clone(), node.ty.clone(), vec![Term::Class(x), Term::Class(y)]));
                    }
                }
            }
            _ => {}
        }
        self.squeeze(id, node);
    }

    /// Slices of values read from bytes are reads of fewer bytes: through a bit cast (the
    /// byte dimension a narrowing cast adds is kept whole) and through a reshape of a flat
    /// byte string, when the slice is a contiguous run of leading rows.
    fn slice(&mut self, id: Id, node: &Node, ranges: &[(i64, i64, i64)]) {
        let eg = self.eg;
        let x = node.children[0];
        // A slice that keeps everything is its operand. `tiling::slice_of` builds none, but
        // a kernel's own slices and the rules that write a slice directly can; each would
        // otherwise be a class of its own that the row rules multiply.
        if ranges.iter().zip(&class_ty(eg, x).shape).all(|(r, &n)| *r == (0, n, 1)) {
            self.push("slice-whole", id, Term::Class(x));
        }
        if let Some(term) = window_of_one_row_as_row(class_ty(eg, x), x, ranges, &node.ty) {
            self.push("window-of-one-row-as-row", id, term);
        }
        // A window of a literal of one value throughout is that value throughout: the tiles of
        // a sum with a constant read a literal of their own size.
        let splat = self.nodes(x).iter().find_map(|n| match &n.op {
            Op::Constant(lit) => lit.splat(),
            _ => None,
        });
        if let Some(v) = splat {
            if !self.nodes(id).iter().any(|n| matches!(n.op, Op::Constant(_))) {
                self.push("slice-of-splat", id, Term::Node(Op::Constant(Literal::from_values(&[v])), node.ty.clone(), vec![]));
            }
        }
        for inner in self.nodes(x) {
            let y = match inner.children.first() {
                Some(&y) => y,
                None => continue,
            };
            let y_ty = class_ty(eg, y);
            if !self.rules.tiles.is_empty() {
                if let Some(term) = tiling::slice_through(eg, ranges, &node.ty, inner) {
                    self.push("slice-through-rows", id, term);
                }
                if let Some(term) = tiling::slice_through_columns(eg, ranges, &node.ty, inner, self.rules.transpose) {
                    self.push("slice-through-columns", id, term);
                }
            }
            match &inner.op {
                // Columns of a column window of an operand are a window of the whole:
                // `slice(slice(y, r), s)` is one slice, read as one strided view (on chip only
                // whole rows are views, so such a tile could not be read from the loaded
                // window). Not where either slice keeps every column (rows of a window are
                // views of it; windows of a run of rows are views of a byte run already); not
                // of computed values, whose slices move through the operations instead
                // (composing them too only costs iterations); nor of literals or their bytes,
                // which fold (every zero block is a slice of every larger one: composing them
                // would not end).
                Op::Slice(inner_ranges)
                    if ranges.iter().all(|&(l, h, _)| h > l)
                        && inner_ranges.iter().zip(&y_ty.shape).skip(1).any(|(r, &n)| *r != (0, n, 1))
                        && (ranges.iter().zip(&inner.ty.shape).skip(1).any(|(r, &n)| *r != (0, n, 1))
                            || tiling::read_as_is(eg, y))
                        && !self.computed(y)
                        && !constant_valued(eg, y, 2) =>
                {
                    let composed = tiling::compose_ranges(inner_ranges, ranges);
                    self.push("slice-compose", id, Term::Node(Op::Slice(composed), node.ty.clone(), vec![Term::Class(y)]));
                }
                // Rows of rows of a value are rows of it: a row of the last rows kept of a tile
                // that overlaps the one before (written a row at a time) is a row of the tile,
                // which lies where the tile was computed.
                Op::Slice(inner_ranges)
                    if only_rows(ranges, &inner.ty) && only_rows(inner_ranges, y_ty) && !constant_valued(eg, y, 2) =>
                {
                    let composed = tiling::compose_ranges(inner_ranges, ranges);
                    self.push("slice-compose-rows", id, Term::Node(Op::Slice(composed), node.ty.clone(), vec![Term::Class(y)]));
                }
                Op::Concatenate(dim) => {
                    if let Some(term) = tiling::slice_of_concat(eg, ranges, &node.ty, *dim, &inner.children) {
                        self.push("slice-of-concat", id, term);
                    }
                }
                Op::BitcastConvert if y_ty.rank() == node.ty.rank() + 1 || y_ty.rank() == node.ty.rank() => {
                    let mut wide = ranges.to_vec();
                    if y_ty.rank() > node.ty.rank() {
                        wide.push((0, *y_ty.shape.last().expect("rank at least one"), 1));
                    }
                    let Ok(sliced) = infer::slice_type(y_ty, &wide) else { continue };
                    let term = Term::Node(Op::Slice(wide), sliced, vec![Term::Class(y)]);
                    self.push("slice-of-bitcast", id, Term::Node(Op::BitcastConvert, node.ty.clone(), vec![term]));
                }
                // The bytes of wide elements (`u8[.., 4]` of `s32[..]`): a slice that keeps each
                // element's bytes whole is the bytes of a slice of the elements.
                Op::BitcastConvert
                    if node.ty.rank() == y_ty.rank() + 1
                        && ranges.last().zip(node.ty.shape.last()).is_some_and(|(r, &n)| *r == (0, n, 1)) =>
                {
                    let narrow = &ranges[..y_ty.rank()];
                    let Ok(sliced) = infer::slice_type(y_ty, narrow) else { continue };
                    let term = Term::Node(Op::Slice(narrow.to_vec()), sliced, vec![Term::Class(y)]);
                    self.push("slice-of-bitcast", id, Term::Node(Op::BitcastConvert, node.ty.clone(), vec![term]));
                }
                // Only of a kernel input moved about (a tile of an interleaved matrix
                // unpacked, widened): a window of a computed value moves through
                // the operations instead, and windows of every reshape of one grew a
                // 128-column softmax on QKV to its node limit.
                Op::Reshape if y_ty.rank() > 1 && !self.rules.tiles.is_empty() && tiling::moved_input(eg, y) => {
                    if let Some(term) = tiling::slice_through_reshape(y, y_ty, &inner.ty.shape, ranges, &node.ty) {
                        self.push("slice-through-reshape", id, term);
                    }
                }
                Op::Reshape if y_ty.rank() == 1 => {
                    let x_shape = &class_ty(eg, x).shape;
                    let whole_rest = ranges.iter().zip(x_shape).skip(1).all(|(r, &d)| *r == (0, d, 1));
                    let Some(&(lo, hi, stride)) = ranges.first() else { continue };
                    if stride != 1 {
                        // Every `stride`-th row of a row-major matrix is the first row of each
                        // group of `stride` rows: a column window of the matrix read with rows
                        // `stride` times as long (a load with a row pitch).
                        let count = (hi - lo + stride - 1) / stride;
                        if whole_rest && x_shape.len() >= 2 && lo + count * stride <= x_shape[0] {
                            let row: i64 = x_shape[1..].iter().product();
                            let run_ty = y_ty.with_shape(vec![count * stride * row]);
                            let bytes = (lo * row, (lo + count * stride) * row, 1);
                            let run = if run_ty == *y_ty {
                                Term::Class(y)
                            } else {
                                Term::Node(Op::Slice(vec![bytes]), run_ty.clone(), vec![Term::Class(y)])
                            };
                            let mut wide = x_shape.clone();
                            wide[0] = count;
                            wide[1] *= stride;
                            let wide_ty = y_ty.with_shape(wide.clone());
                            let mut window: Vec<(i64, i64, i64)> = wide.iter().map(|&n| (0, n, 1)).collect();
                            window[1] = (0, x_shape[1], 1);
                            let term = Term::Node(Op::Slice(window), node.ty.clone(), vec![reshape_term(run, &run_ty, wide_ty)]);
                            self.push("strided-rows-as-window", id, term);
                        }
                        continue;
                    }
                    if !whole_rest {
                        for (rule, term) in tiling::strided_views(y, y_ty, x_shape, ranges, &node.ty, (!self.rules.strided_reads).then_some(self.rules.hbm_read_unit), self.rules.byte_registers) {
                            self.push(rule, id, term);
                        }
                        continue;
                    }
                    let row: i64 = x_shape[1..].iter().product();
                    let run = Term::Node(
                        Op::Slice(vec![(lo * row, hi * row, 1)]),
                        y_ty.with_shape(vec![(hi - lo) * row]),
                        vec![Term::Class(y)],
                    );
                    self.push("slice-of-flat-reshape", id, reshape_term(run, &y_ty.with_shape(vec![(hi - lo) * row]), node.ty.clone()));
                }
                _ => {}
            }
        }
    }

    /// An operation on values with size-1 dimensions is a reshape of the same operation on
    /// the values without them (a batch of one is no batch).
    fn squeeze(&mut self, id: Id, node: &Node) {
        let eg = self.eg;
        let has_ones = |t: &Ty| t.shape.contains(&1);
        if !has_ones(&node.ty) && !node.children.iter().any(|&c| has_ones(class_ty(eg, c))) {
            return;
        }
        let sq = |t: &Ty| t.with_shape(t.shape.iter().copied().filter(|&d| d != 1).collect());
        let kept = |t: &Ty| (0..t.rank()).filter(|&k| t.shape[k] != 1).collect::<Vec<usize>>();
        let operand = |c: Id| {
            let t = class_ty(eg, c);
            reshape_term(Term::Class(c), t, sq(t))
        };
        // New index of `d` among `kept` (callers only ask for kept dimensions).
        let renumber = |kept: &[usize], d: usize| kept.iter().position(|&k| k == d);
        let out = sq(&node.ty);
        let inner: Option<Term> = match &node.op {
            op if op.is_elementwise() || *op == Op::Convert => {
                Some(Term::Node(op.clone(), out.clone(), node.children.iter().map(|&c| operand(c)).collect()))
            }
            Op::Transpose(p) => {
                let kx = kept(class_ty(eg, node.children[0]));
                let perm: Option<Vec<usize>> =
                    p.iter().filter(|&&d| kx.contains(&d)).map(|&d| renumber(&kx, d)).collect();
                perm.map(|perm| Term::Node(Op::Transpose(perm), out.clone(), vec![operand(node.children[0])]))
            }
            Op::Broadcast(d) => {
                let x_ty = class_ty(eg, node.children[0]);
                let (kx, kr) = (kept(x_ty), kept(&node.ty));
                let dims: Option<Vec<usize>> = kx.iter().map(|&i| renumber(&kr, d[i])).collect();
                dims.filter(|_| has_ones(&node.ty))
                    .map(|dims| Term::Node(Op::Broadcast(dims), out.clone(), vec![operand(node.children[0])]))
            }
            Op::ReduceAdd(dims) | Op::Reduce { dims, .. } => {
                let kx = kept(class_ty(eg, node.children[0]));
                let new_dims: Vec<usize> = dims.iter().filter_map(|&d| renumber(&kx, d)).collect();
                if new_dims.is_empty() {
                    None
                } else {
                    let op = match &node.op {
                        Op::Reduce { reducer, .. } => Op::Reduce { dims: new_dims, reducer: *reducer },
                        _ => Op::ReduceAdd(new_dims),
                    };
                    let mut children = vec![operand(node.children[0])];
                    children.extend(node.children[1..].iter().map(|&c| Term::Class(c)));
                    Some(Term::Node(op, out.clone(), children))
                }
            }
            Op::Dot(dd) if self.rules.dot => {
                let (ka, kb) = (kept(class_ty(eg, node.children[0])), kept(class_ty(eg, node.children[1])));
                let pairs = |l: &[usize], r: &[usize]| -> (Vec<usize>, Vec<usize>) {
                    l.iter().zip(r).filter_map(|(&a, &b)| Some((renumber(&ka, a)?, renumber(&kb, b)?))).unzip()
                };
                let (lc, rc) = pairs(&dd.lhs_contracting, &dd.rhs_contracting);
                let (lb, rb) = pairs(&dd.lhs_batch, &dd.rhs_batch);
                let dims = DotDims { lhs_contracting: lc, rhs_contracting: rc, lhs_batch: lb, rhs_batch: rb };
                Some(Term::Node(Op::Dot(dims), out.clone(), vec![operand(node.children[0]), operand(node.children[1])]))
            }
            _ => None,
        };
        if let Some(inner) = inner {
            if inner
                != Term::Node(node.op.clone(), node.ty.clone(), node.children.iter().map(|&c| Term::Class(c)).collect())
            {
                self.push("squeeze", id, reshape_term(inner, &out, node.ty.clone()));
            }
        }
        if let Op::Dot(dd) = &node.op {
            if let Some(term) = self.squeeze_batch(node, dd) {
                self.push("squeeze-batch", id, term);
            }
        }
        // Likewise an elementwise operation on a batch of one keeps its other dimensions (a
        // bias added to a batch item of one row is a matrix of one row, not a vector).
        let elementwise = (node.op.is_elementwise() || node.op == Op::Convert)
            && node.children.iter().all(|&c| class_ty(eg, c).shape.first() == Some(&1));
        if elementwise && node.ty.rank() >= 3 && node.ty.shape[0] == 1 && out.rank() < node.ty.rank() - 1 {
            let drop_first = |t: &Ty| t.with_shape(t.shape[1..].to_vec());
            let operands = node
                .children
                .iter()
                .map(|&c| {
                    let t = class_ty(eg, c);
                    reshape_term(Term::Class(c), t, drop_first(t))
                })
                .collect();
            let inner_ty = drop_first(&node.ty);
            let inner = Term::Node(node.op.clone(), inner_ty.clone(), operands);
            self.push("squeeze-batch", id, reshape_term(inner, &inner_ty, node.ty.clone()));
        }
    }

    /// A product's batch dimensions of size one dropped, and nothing else: the squeeze above
    /// also drops a free dimension of one, which leaves a vector where a matrix unit takes a
    /// matrix of one row (a batch of products of one row each).
    fn squeeze_batch(&self, node: &Node, dd: &DotDims) -> Option<Term> {
        let eg = self.eg;
        let (a, b) = (node.children[0], node.children[1]);
        let (a_ty, b_ty) = (class_ty(eg, a), class_ty(eg, b));
        let ones: Vec<usize> = (0..dd.lhs_batch.len()).filter(|&i| a_ty.shape[dd.lhs_batch[i]] == 1).collect();
        if ones.is_empty() || !self.rules.dot {
            return None;
        }
        let dropped_a: Vec<usize> = ones.iter().map(|&i| dd.lhs_batch[i]).collect();
        let dropped_b: Vec<usize> = ones.iter().map(|&i| dd.rhs_batch[i]).collect();
        let renumber = |dims: &[usize], dropped: &[usize]| -> Vec<usize> {
            dims.iter()
                .filter(|d| !dropped.contains(d))
                .map(|&d| d - dropped.iter().filter(|&&x| x < d).count())
                .collect()
        };
        let without = |ty: &Ty, dropped: &[usize]| {
            ty.with_shape((0..ty.rank()).filter(|d| !dropped.contains(d)).map(|d| ty.shape[d]).collect())
        };
        let dims = DotDims {
            lhs_contracting: renumber(&dd.lhs_contracting, &dropped_a),
            rhs_contracting: renumber(&dd.rhs_contracting, &dropped_b),
            lhs_batch: renumber(&dd.lhs_batch, &dropped_a),
            rhs_batch: renumber(&dd.rhs_batch, &dropped_b),
        };
        // The result's batch dimensions come first, in lhs_batch order.
        let out = without(&node.ty, &ones);
        let operand = |c: Id, ty: &Ty, dropped: &[usize]| reshape_term(Term::Class(c), ty, without(ty, dropped));
        let inner = Term::Node(
            Op::Dot(dims),
            out.clone(),
            vec![operand(a, a_ty, &dropped_a), operand(b, b_ty, &dropped_b)],
        );
        Some(reshape_term(inner, &out, node.ty.clone()))
    }

    /// An elementwise operation on vectors, one of which is a reshaped matrix of one row or
    /// one column, is the same operation on them all as such matrices, reshaped: a bias added
    /// to a vector-matrix product is added to the product's one-row matrix (buffers of rows
    /// and columns hold matrices). Only then: every vector would double the e-graph's
    /// widening conversions of flattened tiles.
    fn vector_as_matrix(&mut self, id: Id, node: &Node) {
        let eg = self.eg;
        let n = node.ty.shape[0];
        let shapes: BTreeSet<Vec<i64>> = node
            .children
            .iter()
            .flat_map(|&c| &eg[c].nodes)
            .filter(|k| k.op == Op::Reshape)
            .map(|k| class_ty(eg, k.children[0]).shape.clone())
            .filter(|shape| *shape == [1, n] || *shape == [n, 1])
            .collect();
        for shape in shapes {
            let operands = node
                .children
                .iter()
                .map(|&c| {
                    let t = class_ty(self.eg, c);
                    reshape_term(Term::Class(c), t, t.with_shape(shape.clone()))
                })
                .collect();
            let matrix = node.ty.with_shape(shape);
            let inner = Term::Node(node.op.clone(), matrix.clone(), operands);
            self.push("vector-as-matrix", id, reshape_term(inner, &matrix, node.ty.clone()));
        }
    }

    /// `u[:, None] * v[None, :]`, a product of a vector repeated across columns and one
    /// repeated down rows (how `jnp.outer` is written), is the product of `u` as a column by
    /// `v` as a row: one multiplication per element either way (multiplication commutes).
    fn outer_product(&mut self, id: Id, node: &Node) {
        let eg = self.eg;
        let repeated = |c: Id, dim: usize| {
            eg[c].nodes.iter().find_map(|n| match &n.op {
                Op::Broadcast(d) if d.as_slice() == [dim] && class_ty(eg, n.children[0]).rank() == 1 => Some(n.children[0]),
                _ => None,
            })
        };
        let (a, b) = (node.children[0], node.children[1]);
        let pair = match (repeated(a, 0), repeated(b, 1)) {
            (Some(u), Some(v)) => Some((u, v)),
            _ => repeated(b, 0).zip(repeated(a, 1)),
        };
        let Some((u, v)) = pair else { return };
        let (u_ty, v_ty) = (class_ty(eg, u), class_ty(eg, v));
        let column = reshape_term(Term::Class(u), u_ty, u_ty.with_shape(vec![u_ty.shape[0], 1]));
        let row = reshape_term(Term::Class(v), v_ty, v_ty.with_shape(vec![1, v_ty.shape[0]]));
        let dims = DotDims { lhs_contracting: vec![1], rhs_contracting: vec![0], ..Default::default() };
        self.push("outer-product", id, Term::Node(Op::Dot(dims), node.ty.clone(), vec![column, row]));
    }

    /// A product of a vector is the product of that vector as a matrix of one row (on the
    /// left) or one column (on the right), reshaped: `A.v = reshape(A.[v], [m])` (the same
    /// bytes in row-major order, the same sums), since matrix units take matrices. An outer
    /// product of vectors is the product of a column by a row (one term per sum: the same
    /// rounding).
    fn vectors_as_matrices(&self, node: &Node, dd: &DotDims) -> Option<Term> {
        let eg = self.eg;
        let (a, b) = (node.children[0], node.children[1]);
        let (a_ty, b_ty) = (class_ty(eg, a), class_ty(eg, b));
        let (lhs_vector, rhs_vector) = (a_ty.rank() == 1, b_ty.rank() == 1);
        if !dd.lhs_batch.is_empty() || !(lhs_vector || rhs_vector) {
            return None;
        }
        if dd.lhs_contracting.is_empty() {
            // An outer product `u v^T`: a column by a row, over a contraction of one.
            if !(lhs_vector && rhs_vector) {
                return None;
            }
            let dims = DotDims { lhs_contracting: vec![1], rhs_contracting: vec![0], ..dd.clone() };
            let column = reshape_term(Term::Class(a), a_ty, a_ty.with_shape(vec![a_ty.shape[0], 1]));
            let row = reshape_term(Term::Class(b), b_ty, b_ty.with_shape(vec![1, b_ty.shape[0]]));
            return Some(Term::Node(Op::Dot(dims), node.ty.clone(), vec![column, row]));
        }
        let (mut lhs, mut rhs, mut dims) = (Term::Class(a), Term::Class(b), dd.clone());
        let mut out = node.ty.shape.clone();
        if lhs_vector {
            lhs = reshape_term(lhs, a_ty, a_ty.with_shape(vec![1, a_ty.shape[0]]));
            dims.lhs_contracting = vec![1];
            out.insert(0, 1);
        }
        if rhs_vector {
            rhs = reshape_term(rhs, b_ty, b_ty.with_shape(vec![b_ty.shape[0], 1]));
            dims.rhs_contracting = vec![0];
            out.push(1);
        }
        let out = node.ty.with_shape(out);
        Some(reshape_term(Term::Node(Op::Dot(dims), out.clone(), vec![lhs, rhs]), &out, node.ty.clone()))
    }

    /// `transpose(broadcast(y, d), p)` is a broadcast of `y` (itself transposed when its
    /// dimensions land out of order).
    fn transpose_broadcast(&mut self, id: Id, node: &Node, p: &[usize], d: &[usize], y: Id) {
        let inverse = crate::lang::inverse_permutation(p);
        let moved: Vec<usize> = d.iter().map(|&dj| inverse[dj]).collect();
        let mut order: Vec<usize> = (0..moved.len()).collect();
        order.sort_by_key(|&k| moved[k]);
        let dims = order.iter().map(|&k| moved[k]).collect();
        let operand = transpose_term(self.eg, y, order);
        self.push("transpose-through-broadcast", id, Term::Node(Op::Broadcast(dims), node.ty.clone(), vec![operand]));
    }

    /// A reduction in two layouts of its operand, reduced dimensions last or first, and with a
    /// transposed operand folded in when the kept dimensions keep their order.
    fn reduce_layouts(&mut self, id: Id, node: &Node, dims: &[usize]) {
        let eg = self.eg;
        let x = node.children[0];
        let rank = class_ty(eg, x).rank();
        let kept: Vec<usize> = (0..rank).filter(|d| !dims.contains(d)).collect();
        let with_dims = |op: &Op, dims: Vec<usize>| match op {
            Op::Reduce { reducer, .. } => Op::Reduce { dims, reducer: *reducer },
            _ => Op::ReduceAdd(dims),
        };
        let rest: Vec<Term> = node.children[1..].iter().map(|&c| Term::Class(c)).collect();
        let forms = [
            ([&kept[..], dims].concat(), (kept.len()..rank).collect::<Vec<usize>>()),
            ([dims, &kept[..]].concat(), (0..dims.len()).collect()),
        ];
        for (perm, new_dims) in forms {
            let mut children = vec![transpose_term(eg, x, perm)];
            children.extend(rest.iter().cloned());
            self.push("reduce-layout", id, Term::Node(with_dims(&node.op, new_dims), node.ty.clone(), children));
        }
        for inner in self.nodes(x) {
            let Op::Transpose(p) = &inner.op else { continue };
            if !kept.iter().map(|&k| p[k]).collect::<Vec<_>>().windows(2).all(|w| w[0] < w[1]) {
                continue;
            }
            let mut children = vec![Term::Class(inner.children[0])];
            children.extend(rest.iter().cloned());
            let folded = with_dims(&node.op, dims.iter().map(|&d| p[d]).collect());
            self.push("reduce-fold-transpose", id, Term::Node(folded, node.ty.clone(), children));
        }
    }

    fn convert(&mut self, id: Id, node: &Node) {
        let eg = self.eg;
        let x = node.children[0];
        let x_ty = class_ty(eg, x).clone();
        let to = node.ty.dtype;
        if x_ty.dtype == to {
            self.push("convert-identity", id, Term::Class(x));
        }
        for inner in self.nodes(x) {
            let y = inner.children.first().copied();
            match (&inner.op, y) {
                (Op::Convert, Some(y)) if class_ty(eg, y).dtype.widens_exactly_to(x_ty.dtype) => {
                    self.push("convert-exact-round-trip", id, convert_term(eg, y, to));
                }
                // Converting commutes with moving data around; pushing it to the operand lets
                // it meet the convert it cancels or the reduction it narrows.
                (Op::Reshape, Some(y)) => {
                    let c = convert_term(eg, y, to);
                    self.push(
                        "convert-through-reshape",
                        id,
                        reshape_term(c, &class_ty(eg, y).with_dtype(to), node.ty.clone()),
                    );
                }
                (Op::Transpose(p), Some(y)) => {
                    let c = convert_term(eg, y, to);
                    self.push(
                        "convert-through-transpose",
                        id,
                        Term::Node(Op::Transpose(p.clone()), node.ty.clone(), vec![c]),
                    );
                }
                (Op::Broadcast(d), Some(y)) => {
                    let c = convert_term(eg, y, to);
                    self.push(
                        "convert-through-broadcast",
                        id,
                        Term::Node(Op::Broadcast(d.clone()), node.ty.clone(), vec![c]),
                    );
                }
                (Op::Constant(lit), None) if lit.values().all(|v| representable(v, to)) => {
                    self.push("convert-constant", id, Term::Node(Op::Constant(lit.clone()), node.ty.clone(), vec![]));
                }
                (Op::ReduceAdd(dims), Some(y)) if self.rules.reduce => {
                    // convert(reduce_add(convert(z, wide)), narrow) = reduce_add(z) in the narrow
                    // type: the accumulation precision is left to the reduction.
                    for widen in self.nodes(y) {
                        if widen.op == Op::Convert {
                            let z = widen.children[0];
                            if class_ty(eg, z).dtype == to && to.widens_exactly_to(x_ty.dtype) {
                                self.push(
                                    "reduce-precision",
                                    id,
                                    Term::Node(Op::ReduceAdd(dims.clone()), node.ty.clone(), vec![Term::Class(z)]),
                                );
                            }
                        }
                    }
                }
                (Op::Dot(dd), Some(a)) if self.rules.dot => {
                    // convert(dot(a, b) : wide, narrow) = dot(a, b) : narrow for narrow operands:
                    // like a reduction's, the accumulation precision is the matrix unit's.
                    let b = inner.children[1];
                    let narrow_operands = class_ty(eg, a).dtype == to && class_ty(eg, b).dtype == to;
                    if narrow_operands && to.widens_exactly_to(x_ty.dtype) {
                        self.push(
                            "dot-precision",
                            id,
                            Term::Node(Op::Dot(dd.clone()), node.ty.clone(), vec![Term::Class(a), Term::Class(b)]),
                        );
                    }
                }
                (Op::Reduce { dims, reducer: r @ (Reducer::Max | Reducer::Min) }, Some(y)) if self.rules.reduce => {
                    // Max and min commute with monotone rounding: exact in any precision.
                    let init = inner.children[1];
                    for widen in self.nodes(y) {
                        if widen.op == Op::Convert {
                            let z = widen.children[0];
                            if class_ty(eg, z).dtype == to && to.widens_exactly_to(x_ty.dtype) {
                                let op = Op::Reduce { dims: dims.clone(), reducer: *r };
                                let narrow_init = convert_term(eg, init, to);
                                self.push(
                                    "reduce-precision",
                                    id,
                                    Term::Node(op, node.ty.clone(), vec![Term::Class(z), narrow_init]),
                                );
                            }
                        }
                    }
                }
                _ => {}
            }
        }
    }

    /// Sums that a multiply-accumulate computes: an addend joins the accumulation of products.
    /// - `add(x, y) = add(y, x)` where `y` is led by a product (it holds a `dot` of no
    ///   constant, or a sum whose first term does) and `x` is not a product: the product
    ///   first, as the partial products of a split contraction are written (`c + A.B`,
    ///   `c + (P1 + P0)`). Exact in every type: one rounding, the same either way (two NaN
    ///   operands give a NaN either way, whose payload may be the other's);
    /// - integers only, `add(add(d, q), z) = add(d, add(q, z))` where `d` is a product and `q`
    ///   is led by one, applied down the whole chain at once: the addend moves in along the
    ///   chain of partial products, so that `(P2 + (P1 + P0)) + c` is `P2 + (P1 + (P0 + c))`,
    ///   one accumulation onto `c` per tile. The addend may be a product or a chain of them
    ///   too: a sum of products is then one chain of accumulations. Two's-complement sums
    ///   wrap, so they are associative; a float sum is never regrouped (that changes its
    ///   rounding).
    ///
    /// Products never swap places and an addend only moves inwards, from the right of a chain
    /// that leads a sum, so a chain of `n` partial products and one addend gains `O(n)` nodes,
    /// not every bracketing of them.
    fn accumulate(&mut self, id: Id, node: &Node) {
        let eg = self.eg;
        // A product of computed or input values: the identity products `x = dot(x, I)` that
        // put a product in nearly every class have a constant operand.
        let constant = |c: Id| constant_valued(eg, c, 3);
        let product = |c: Id| {
            eg[c].nodes.iter().any(|n| matches!(n.op, Op::Dot(_)) && !n.children.iter().any(|&k| constant(k)))
        };
        let led_by_product =
            |c: Id| product(c) || eg[c].nodes.iter().any(|n| n.op == Op::Add && product(n.children[0]));
        let (x, y) = (node.children[0], node.children[1]);
        // A zero addend stays where it is: `x = add(x, 0)`, the identity that lets an
        // accumulating instruction make any value, has nothing to accumulate. Other constants
        // move like any addend (`A.B + 5` with a split contraction accumulates onto the 5s).
        if identities::is_zero(eg, x) || identities::is_zero(eg, y) {
            return;
        }
        if !product(x) && led_by_product(y) {
            self.push("add-product-first", id, Term::Node(Op::Add, node.ty.clone(), vec![Term::Class(y), Term::Class(x)]));
        }
        if !node.ty.dtype.is_int() {
            return;
        }
        // The next link of a chain of partial products: `add(d, q)` in `c` with `d` a product
        // and `q` one or the head of a sum of them. Only along such chains: an identity
        // `x = add(x, 0)` in the class would otherwise nest zeros around `z` forever.
        let link = |c: Id| {
            eg[c].nodes.iter().find(|n| {
                n.op == Op::Add
                    && product(n.children[0])
                    && led_by_product(n.children[1])
                    && n.children.iter().all(|&k| eg.find(k) != eg.find(c))
            })
        };
        let Some(first) = link(x) else { return };
        // The whole chain at once, `add(d1, add(d2, ... add(dn, z)))`: one iteration instead
        // of one per product (a 128-deep contraction has eight).
        let mut products = vec![first.children[0]];
        let mut rest = first.children[1];
        let mut seen = vec![eg.find(x)];
        while let Some(next) = link(rest).filter(|_| !seen.contains(&eg.find(rest)) && products.len() < 256) {
            seen.push(eg.find(rest));
            products.push(next.children[0]);
            rest = next.children[1];
        }
        let mut sum = Term::Node(Op::Add, node.ty.clone(), vec![Term::Class(rest), Term::Class(y)]);
        for &d in products.iter().rev() {
            sum = Term::Node(Op::Add, node.ty.clone(), vec![Term::Class(d), sum]);
        }
        self.push("add-into-accumulation", id, sum);
    }

    /// Byte strings end to end whose parts are themselves byte strings end to end are one
    /// concatenation of the inner parts: each part of an HBM concatenation must be written by
    /// an instruction, so the output of a batch whose items are each gathered from tiles (a
    /// batched product plus an addend, larger than the array in rows and columns) is written
    /// tile by tile into its place. Every part that holds a concatenation is replaced by the
    /// parts of its first one, all at once: one node per node, not one per subset of parts.
    fn flatten_concat(&mut self, id: Id, node: &Node, d: usize) {
        let eg = self.eg;
        // Each part's first concatenation, and also its finest (rows written one by one, where
        // an ISA stores only contiguous runs, rather than tiles it cannot write).
        let inner = |c: Id, finest: bool| -> Option<Vec<Id>> {
            let mut concats =
                eg[c].nodes.iter().filter(|n| n.op == Op::Concatenate(d) && n.children.len() > 1 && eg.find(c) != id);
            let chosen = if finest { concats.max_by_key(|n| n.children.len()) } else { concats.next() };
            chosen.map(|n| n.children.clone())
        };
        // Byte strings end to end, some of them overlays: one overlay of all their parts (an
        // overlay is written part by part into the output, never as a part of it).
        if d == 0 {
            let overlay_of = |c: Id| {
                eg[c].nodes.iter().find_map(|n| match &n.op {
                    Op::Overlay { dim: 0, starts } => Some((n.children.clone(), starts.clone())),
                    _ => None,
                })
            };
            if node.children.iter().any(|&c| overlay_of(c).is_some()) {
                let (mut parts, mut starts, mut at) = (Vec::new(), Vec::new(), 0);
                for &c in &node.children {
                    let (ps, ss) = overlay_of(c).unwrap_or_else(|| (vec![c], vec![0]));
                    parts.extend(ps.into_iter().map(Term::Class));
                    starts.extend(ss.into_iter().map(|s| s + at));
                    at += class_ty(eg, c).elements();
                }
                self.push("concat-of-overlays", id, Term::Node(Op::Overlay { dim: 0, starts }, node.ty.clone(), parts));
            }
        }
        if !node.children.iter().any(|&c| inner(c, false).is_some()) {
            return;
        }
        let mut pushed: Vec<Vec<Id>> = Vec::new();
        for finest in [false, true] {
            let parts: Vec<Id> = node.children.iter().flat_map(|&c| inner(c, finest).unwrap_or_else(|| vec![c])).collect();
            if !pushed.contains(&parts) {
                let term = Term::Node(Op::Concatenate(d), node.ty.clone(), parts.iter().map(|&k| Term::Class(k)).collect());
                pushed.push(parts);
                self.push("concat-flatten", id, term);
            }
        }
    }

    /// An overlay of byte strings some of which are concatenations or overlays themselves: one
    /// overlay of all their parts, each at its own start (each part of an overlay is written by
    /// an instruction). The finest concatenation of each as well as its first, as for
    /// [`Finder::flatten_concat`].
    fn flatten_overlay(&mut self, id: Id, node: &Node, starts: &[i64]) {
        let eg = self.eg;
        let parts_of = |c: Id, finest: bool| -> Option<(Vec<Id>, Vec<i64>)> {
            let nodes = eg[c].nodes.iter().filter(|n| n.children.len() > 1 && eg.find(c) != id);
            let mut found = nodes.filter_map(|n| match &n.op {
                Op::Concatenate(0) => {
                    let starts = n
                        .children
                        .iter()
                        .scan(0, |at, &k| {
                            let start = *at;
                            *at += class_ty(eg, k).elements();
                            Some(start)
                        })
                        .collect();
                    Some((n.children.clone(), starts))
                }
                Op::Overlay { dim: 0, starts } => Some((n.children.clone(), starts.clone())),
                _ => None,
            });
            if finest {
                found.max_by_key(|(parts, _)| parts.len())
            } else {
                found.next()
            }
        };
        if !node.children.iter().any(|&c| parts_of(c, false).is_some()) {
            return;
        }
        let mut pushed: Vec<Vec<Id>> = Vec::new();
        for finest in [false, true] {
            let (mut parts, mut at) = (Vec::new(), Vec::new());
            for (&c, &start) in node.children.iter().zip(starts) {
                let (ps, ss) = parts_of(c, finest).unwrap_or_else(|| (vec![c], vec![0]));
                parts.extend(ps);
                at.extend(ss.into_iter().map(|s| s + start));
            }
            if !pushed.contains(&parts) {
                let term = Term::Node(Op::Overlay { dim: 0, starts: at }, node.ty.clone(), parts.iter().map(|&k| Term::Class(k)).collect());
                pushed.push(parts);
                self.push("overlay-flatten", id, term);
            }
        }
    }

    fn broadcast(&mut self, id: Id, node: &Node, d: &[usize]) {
        let eg = self.eg;
        let x = node.children[0];
        let x_ty = class_ty(eg, x).clone();
        if identity(d) && x_ty.shape == node.ty.shape {
            self.push("broadcast-identity", id, Term::Class(x));
        }
        for inner in self.nodes(x) {
            match &inner.op {
                Op::Broadcast(e) => {
                    let y = inner.children[0];
                    let composed: Vec<usize> = e.iter().map(|&i| d[i]).collect();
                    if infer::broadcast_check(class_ty(eg, y), &composed, &node.ty.shape).is_ok() {
                        self.push(
                            "broadcast-compose",
                            id,
                            Term::Node(Op::Broadcast(composed), node.ty.clone(), vec![Term::Class(y)]),
                        );
                    }
                }
                Op::Constant(lit) if x_ty.shape.is_empty() => {
                    self.push("broadcast-constant", id, Term::Node(Op::Constant(lit.clone()), node.ty.clone(), vec![]));
                }
                _ => {}
            }
        }
        // A vector of one value is a row of it: instructions move rows and columns (a run of
        // zeros between a convolution's pieces in its flat output, loaded as one row of a
        // literal and stored). The same elements in the same order.
        if x_ty.rank() == 0 && node.ty.rank() == 1 {
            let row = node.ty.with_shape(vec![1, node.ty.shape[0]]);
            let term = Term::Node(Op::Broadcast(Vec::new()), row.clone(), vec![Term::Class(x)]);
            self.push("broadcast-vector-as-row", id, reshape_term(term, &row, node.ty.clone()));
        }
        // Size-1 operand dimensions carry nothing the broadcast does not repeat anyway.
        let kept: Vec<usize> = (0..x_ty.rank()).filter(|&i| x_ty.shape[i] != 1).collect();
        if kept.len() < x_ty.rank() {
            let squeezed = x_ty.with_shape(kept.iter().map(|&i| x_ty.shape[i]).collect());
            let dims = kept.iter().map(|&i| d[i]).collect();
            let operand = reshape_term(Term::Class(x), &x_ty, squeezed);
            self.push("broadcast-squeeze", id, Term::Node(Op::Broadcast(dims), node.ty.clone(), vec![operand]));
        }
    }

    /// A concatenation along columns of a part wider than every product, read as it is (a
    /// kernel input, not a value some rule tiles): the same concatenation with that part as
    /// its windows of the product's width, which loads and stores move one by one
    /// (`jnp.concatenate([a, b], 1)` of 24-column inputs on a 16-column array; a `jnp.pad`).
    fn wide_parts_in_windows(&self, node: &Node) -> Option<Term> {
        let eg = self.eg;
        let width = self.rules.tiles.product_columns().filter(|&w| w > 0)?;
        if node.ty.rank() != 2 {
            return None;
        }
        let wide = |c: Id| class_ty(eg, c).shape[1] > width && tiling::read_as_is(eg, c);
        if !node.children.iter().any(|&c| wide(c)) {
            return None;
        }
        let mut parts = Vec::new();
        for &c in &node.children {
            let ty = class_ty(eg, c);
            if !wide(c) {
                parts.push(Term::Class(c));
                continue;
            }
            for lo in (0..ty.shape[1]).step_by(width as usize) {
                let hi = (lo + width).min(ty.shape[1]);
                let window = vec![(0, ty.shape[0], 1), (lo, hi, 1)];
                parts.push(Term::Node(Op::Slice(window), ty.with_shape(vec![ty.shape[0], hi - lo]), vec![Term::Class(c)]));
            }
        }
        Some(Term::Node(node.op.clone(), node.ty.clone(), parts))
    }

    /// Matrices side by side that are themselves column tiles side by side: one concatenation
    /// of the tiles (each part holding a concatenation along columns replaced by the parts of
    /// its first one), so that each tile is written into its columns.
    fn flatten_columns(&self, id: Id, node: &Node) -> Option<Term> {
        let eg = self.eg;
        let inner = |c: Id| {
            eg[c].nodes.iter().find(|n| n.op == Op::Concatenate(1) && n.children.len() > 1 && eg.find(c) != id).map(|n| n.children.clone())
        };
        if !node.children.iter().any(|&c| inner(c).is_some()) {
            return None;
        }
        let parts = node.children.iter().flat_map(|&c| inner(c).unwrap_or_else(|| vec![c])).map(Term::Class).collect();
        Some(Term::Node(node.op.clone(), node.ty.clone(), parts))
    }

    /// Matrices side by side, each of the same row tiles one above the other: the row tiles'
    /// concatenations side by side, one above the other (`concatenate_1(concatenate_0(a0,
    /// a1), concatenate_0(b0, b1)) = concatenate_0(concatenate_1(a0, b0), concatenate_1(a1,
    /// b1))`), so that each row tile of the whole is written by its own stores (a transposed
    /// convolution's outputs of two residues interleaved, each taller than the array). Exact
    /// for every type: the same elements at the same places.
    fn rows_of_column_parts(&self, id: Id, node: &Node) -> Option<Term> {
        let eg = self.eg;
        if node.ty.rank() != 2 {
            return None;
        }
        let heights = |n: &Node| -> Vec<i64> { n.children.iter().map(|&c| class_ty(eg, c).shape[0]).collect() };
        let rows_of = |c: Id, want: Option<&[i64]>| {
            eg[c].nodes.iter().find(|n| {
                n.op == Op::Concatenate(0) && n.children.len() > 1 && eg.find(c) != id && want.is_none_or(|w| heights(n) == w)
            })
        };
        let first = rows_of(node.children[0], None)?;
        let split = heights(first);
        let tiles: Vec<Vec<Id>> =
            node.children.iter().map(|&c| rows_of(c, Some(&split)).map(|n| n.children.clone())).collect::<Option<_>>()?;
        let rows = split.iter().enumerate().map(|(i, &height)| {
            let width = node.ty.shape[1];
            let side_by_side = tiles.iter().map(|parts| Term::Class(parts[i])).collect();
            Term::Node(Op::Concatenate(1), node.ty.with_shape(vec![height, width]), side_by_side)
        });
        Some(Term::Node(Op::Concatenate(0), node.ty.clone(), rows.collect()))
    }

    /// A matrix product whose contraction is padded with zeros (`jnp.pad` of an operand, or
    /// the operands of a concatenation ending in zeros) without the padding: `dot(concatenate_1(
    /// x, 0), w) = dot(x, w[:n])` and `dot(a, concatenate_0(y, 0)) = dot(a[:, :n], y)`, `n` the
    /// columns (rows) of what comes before the zeros. The terms dropped are products with
    /// zero: exact for integers, and for floats up to the sign of a zero sum and the
    /// infinities the identity products also assume away (see `identities.rs`).
    fn zero_padded_contraction(&mut self, id: Id, node: &Node, dd: &DotDims) {
        let eg = self.eg;
        let (a, b) = (node.children[0], node.children[1]);
        let standard = dd.lhs_batch.is_empty() && dd.lhs_contracting == [1] && dd.rhs_contracting == [0];
        if !standard || class_ty(eg, a).rank() != 2 || class_ty(eg, b).rank() != 2 {
            return;
        }
        // The parts before the trailing zeros of a concatenation along `d` in class `c`, and
        // how far they reach.
        let leading = |c: Id, d: usize| -> Option<(Term, i64)> {
            eg[c].nodes.iter().find_map(|n| {
                if n.op != Op::Concatenate(d) {
                    return None;
                }
                let kept = n.children.iter().rposition(|&p| !identities::is_zero(eg, p))? + 1;
                if kept == n.children.len() {
                    return None;
                }
                let reach: i64 = n.children[..kept].iter().map(|&p| class_ty(eg, p).shape[d]).sum();
                let mut shape = class_ty(eg, c).shape.clone();
                shape[d] = reach;
                let parts: Vec<Term> = n.children[..kept].iter().map(|&p| Term::Class(p)).collect();
                Some((Term::concatenate(d, class_ty(eg, c).with_shape(shape), parts), reach))
            })
        };
        let window = |c: Id, d: usize, n: i64| {
            let ty = class_ty(eg, c);
            let mut ranges: Vec<(i64, i64, i64)> = ty.shape.iter().map(|&s| (0, s, 1)).collect();
            ranges[d] = (0, n, 1);
            let mut shape = ty.shape.clone();
            shape[d] = n;
            Term::Node(Op::Slice(ranges), ty.with_shape(shape), vec![Term::Class(c)])
        };
        if let Some((x, n)) = leading(a, 1) {
            self.push("zero-padded-contraction", id, Term::Node(node.op.clone(), node.ty.clone(), vec![x, window(b, 0, n)]));
        }
        if let Some((y, n)) = leading(b, 0) {
            self.push("zero-padded-contraction", id, Term::Node(node.op.clone(), node.ty.clone(), vec![window(a, 1, n), y]));
        }
    }

    fn dot(&mut self, id: Id, node: &Node, dd: &DotDims) {
        let eg = self.eg;
        let (a, b) = (node.children[0], node.children[1]);
        let (ra, rb) = (class_ty(eg, a).rank(), class_ty(eg, b).rank());
        // A product with a constant, already in a form a unit takes (the identity and
        // constant-matrix products are written so), needs no other layout: transposes of the
        // constant fold, and its result is stored or moved transposed by the ISA's own
        // instructions if at all. Other layouts of it would only grow the e-graph.
        let unit_form = layouts(dd, ra, rb).is_some_and(|(l, r)| {
            l.iter().any(|&l| r.iter().any(|&r| self.rules.dot_forms.contains(&(l, r))))
        });
        let constant = |c: Id| self.nodes(c).iter().any(|n| matches!(n.op, Op::Constant(_)));
        if unit_form && (constant(a) || constant(b)) {
            return;
        }
        self.zero_padded_contraction(id, node, dd);
        let nb = dd.lhs_batch.len();
        let lf = DotDims::free(ra, &dd.lhs_batch, &dd.lhs_contracting);
        let rf = DotDims::free(rb, &dd.rhs_batch, &dd.rhs_contracting);
        let nc = dd.lhs_contracting.len();
        let span = |from: usize, n: usize| (from..from + n).collect::<Vec<usize>>();
        // Layout normal forms: each operand transposed to [batch, free, contracting] or
        // [batch, contracting, free], so that a matrix unit with fixed dimension numbers
        // meets the product whichever way the kernel wrote it.
        let lhs_forms = [
            ([&dd.lhs_batch[..], &lf, &dd.lhs_contracting].concat(), span(nb + lf.len(), nc)),
            ([&dd.lhs_batch[..], &dd.lhs_contracting, &lf].concat(), span(nb, nc)),
        ];
        let rhs_forms = [
            ([&dd.rhs_batch[..], &dd.rhs_contracting, &rf].concat(), span(nb, nc)),
            ([&dd.rhs_batch[..], &rf, &dd.rhs_contracting].concat(), span(nb + rf.len(), nc)),
        ];
        for (l, (lperm, lc)) in lhs_forms.iter().enumerate() {
            for (r, (rperm, rc)) in rhs_forms.iter().enumerate() {
                if !self.rules.dot_forms.is_empty() && !self.rules.dot_forms.contains(&(l, r)) {
                    continue;
                }
                let dims = DotDims {
                    lhs_contracting: lc.clone(),
                    rhs_contracting: rc.clone(),
                    lhs_batch: span(0, nb),
                    rhs_batch: span(0, nb),
                };
                let term = Term::Node(
                    Op::Dot(dims),
                    node.ty.clone(),
                    vec![transpose_term(eg, a, lperm.clone()), transpose_term(eg, b, rperm.clone())],
                );
                self.push("dot-normal-form", id, term);
            }
        }
        // A transposed operand folds into the dimension numbers when its free dimensions keep
        // their order (the result lists them in increasing order).
        for (side, operand) in [(0usize, a), (1usize, b)] {
            for inner in self.nodes(operand) {
                let Op::Transpose(p) = &inner.op else { continue };
                let (batch, contracting, free) = if side == 0 {
                    (&dd.lhs_batch, &dd.lhs_contracting, &lf)
                } else {
                    (&dd.rhs_batch, &dd.rhs_contracting, &rf)
                };
                let mapped_free: Vec<usize> = free.iter().map(|&f| p[f]).collect();
                if !mapped_free.windows(2).all(|w| w[0] < w[1]) {
                    continue;
                }
                let mut dims = dd.clone();
                let new_batch = batch.iter().map(|&x| p[x]).collect();
                let new_contracting = contracting.iter().map(|&x| p[x]).collect();
                let mut children = vec![Term::Class(a), Term::Class(b)];
                children[side] = Term::Class(inner.children[0]);
                if side == 0 {
                    dims.lhs_batch = new_batch;
                    dims.lhs_contracting = new_contracting;
                } else {
                    dims.rhs_batch = new_batch;
                    dims.rhs_contracting = new_contracting;
                }
                self.push("dot-fold-transpose", id, Term::Node(Op::Dot(dims), node.ty.clone(), children));
            }
        }
        // Commutation: dot(a, b) = transpose(dot(b, a)) with the free dimensions swapped back.
        let swapped = DotDims {
            lhs_contracting: dd.rhs_contracting.clone(),
            rhs_contracting: dd.lhs_contracting.clone(),
            lhs_batch: dd.rhs_batch.clone(),
            rhs_batch: dd.lhs_batch.clone(),
        };
        let mut sshape: Vec<i64> = node.ty.shape[..nb].to_vec();
        sshape.extend_from_slice(&node.ty.shape[nb + lf.len()..]);
        sshape.extend_from_slice(&node.ty.shape[nb..nb + lf.len()]);
        let perm: Vec<usize> = [span(0, nb), span(nb + rf.len(), lf.len()), span(nb, rf.len())].concat();
        let inner = Term::Node(Op::Dot(swapped), node.ty.with_shape(sshape), vec![Term::Class(b), Term::Class(a)]);
        self.push("dot-commute", id, Term::Node(Op::Transpose(perm), node.ty.clone(), vec![inner]));
    }
}

/// All rewrites the rules find, over classes in increasing id order (deterministic).
pub fn search(eg: &SelGraph, rules: &RuleSet) -> Vec<Rewrite> {
    let mut ids: Vec<Id> = eg.classes().map(|c| c.id).collect();
    ids.sort();
    search_classes(eg, rules, &ids)
}

/// The rewrites the rules find starting from the canonical classes `ids`, in their order.
pub fn search_classes(eg: &SelGraph, rules: &RuleSet, ids: &[Id]) -> Vec<Rewrite> {
    let mut out = crate::parallel::search_chunks(ids, |part| {
        let mut finder = Finder { eg, rules, out: Vec::new() };
        for &id in part {
            finder.class(id);
        }
        finder.out
    });
    out.extend(crate::parallel::search_chunks(ids, |part| crate::precision::search_classes(eg, &rules.precision, part)));
    out
}

/// Identity paths for the kernel's values (`node_class[k]` for kernel node `k`, constants
/// left out): each value once, so no identity is applied to its own output.
pub fn pass_through(eg: &SelGraph, rules: &RuleSet, kernel: &crate::kernel::Kernel, node_class: &[Id]) -> Vec<Rewrite> {
    let mut out = Vec::new();
    if rules.identities.is_empty() {
        return out;
    }
    let mut done = BTreeSet::new();
    for (k, node) in kernel.nodes.iter().enumerate() {
        let class = eg.find(node_class[k]);
        if matches!(node.op, Op::Constant(_)) || !done.insert(class) {
            continue;
        }
        for (rule, term) in identities::pass_through(eg, &rules.identities, &rules.tiles, class) {
            out.push(Rewrite { rule, class, term });
        }
    }
    out
}

/// The kernel's windows cut along several dimensions, each also written as a chain of slices
/// of one dimension (`x[r, c]` is `x[r][:, c]`), which move through the operations they split
/// one at a time. Once, for the kernel's own slices: windows the slice rules compose from
/// chains (`slice-compose`) already have theirs.
pub fn kernel_windows(eg: &SelGraph, kernel: &crate::kernel::Kernel, node_class: &[Id]) -> Vec<Rewrite> {
    let mut out = Vec::new();
    for (k, node) in kernel.nodes.iter().enumerate() {
        let Op::Slice(ranges) = &node.op else { continue };
        let x = eg.find(node_class[node.operands[0]]);
        if let Some(term) = tiling::window_one_dimension_at_a_time(x, class_ty(eg, x), ranges, &node.ty) {
            out.push(Rewrite { rule: "window-one-dimension-at-a-time", class: eg.find(node_class[k]), term });
        }
    }
    out
}

/// Most rows of a product computed a row at a time by [`rows_as_matrix_vector_products`]:
/// each row is a product of its own.
pub const MAX_MATRIX_VECTOR_ROWS: i64 = 256;

/// Whether a product with a transposed right operand, `A . B^T` of `rows` rows, runs a row at
/// a time ([`rows_as_matrix_vector_products`]) rather than with `B` transposed first
/// ([`transposes_by_products`]): where it is no taller than one product of the units, it
/// multiplies no more than the transpose would, and offering both outgrows the search.
fn product_runs_a_row_at_a_time(tiles: &Extents, rows: i64) -> bool {
    rows <= MAX_MATRIX_VECTOR_ROWS && tiles.product_rows().is_some_and(|r| rows <= r)
}

/// Most items of a batch transposed, or multiplied with a transposed operand, item by item
/// ([`transposes_by_products`]): each item is a product of its own.
pub const MAX_BATCH_ITEMS: i64 = 256;

/// Most multiply-adds (rows x columns x contraction) of a product computed a row at a time:
/// each row's product is tiled in turn, and on Gemmini's 16x16 array `A . B^T` of 64x128 by
/// 128x128 (2^20) takes 5.9 s and 505 MB; beyond this the search would reach its node limit
/// before a program, where the product is refused at once.
pub const MAX_MATRIX_VECTOR_WORK: i64 = 1 << 22;

/// On an ISA whose semantics transpose nowhere, and whose units take a right operand only
/// contracted along its first dimension, a kernel product with a transposed right
/// operand, `A . B^T` (`A : [m, k]`, `B : [n, k]`, each contracting its last dimension), as its
/// rows: row `i` is `(B . a_i^T)^T`, where `a_i^T` is row `i` of `A` reshaped to a column and
/// the `[n, 1]` result reshaped back to a row (a reshape keeps the row-major order, so both
/// are the same bytes). `B` is then a left operand in the layout the units take. The same
/// products summed over the same `k`, so the same values as the product's other forms. Added
/// once, for the kernel's own products of at most [`MAX_MATRIX_VECTOR_ROWS`] rows and
/// [`MAX_MATRIX_VECTOR_WORK`] multiply-adds.
pub fn rows_as_matrix_vector_products(
    eg: &SelGraph,
    kernel: &crate::kernel::Kernel,
    node_class: &[Id],
    rules: &RuleSet,
) -> Vec<Rewrite> {
    let mut out = Vec::new();
    // Only where no semantics transposes and no unit takes a right operand contracted along
    // its last dimension (`RuleSet::dot_forms`): elsewhere the product has its own forms.
    let units_take_b_transposed = rules.dot_forms.is_empty() || rules.dot_forms.iter().any(|&(_, r)| r != 0);
    if rules.transpose || !rules.dot || units_take_b_transposed {
        return out;
    }
    for (k, node) in kernel.nodes.iter().enumerate() {
        let Op::Dot(dd) = &node.op else { continue };
        if !dd.lhs_batch.is_empty() || dd.lhs_contracting != [1] {
            continue;
        }
        // `B` contracted along its last dimension: by the dimension numbers, or as the
        // operand of a transpose the product contracts along its first (as JAX writes `b.T`).
        let rhs = &kernel.nodes[node.operands[1]];
        let b = match (&dd.rhs_contracting[..], &rhs.op) {
            ([1], _) => node.operands[1],
            ([0], Op::Transpose(p)) if p[..] == [1, 0] => rhs.operands[0],
            _ => continue,
        };
        let (a, b) = (eg.find(node_class[node.operands[0]]), eg.find(node_class[b]));
        let (a_ty, b_ty) = (class_ty(eg, a).clone(), class_ty(eg, b).clone());
        if a_ty.rank() != 2 || b_ty.rank() != 2 || node.ty.rank() != 2 {
            continue;
        }
        let (m, depth, n) = (a_ty.shape[0], a_ty.shape[1], b_ty.shape[0]);
        if m > MAX_MATRIX_VECTOR_ROWS || m.saturating_mul(n).saturating_mul(depth) > MAX_MATRIX_VECTOR_WORK {
            continue;
        }
        // Otherwise `B` is transposed once, where it can be.
        if !product_runs_a_row_at_a_time(&rules.tiles, m)
            && identities::transpose_by_products(eg, &rules.identities, &rules.tiles, b, Reads::inputs(rules.strided_reads)).is_some()
        {
            continue;
        }
        let std = DotDims { lhs_contracting: vec![1], rhs_contracting: vec![0], ..DotDims::default() };
        let row = |i: i64| {
            let a_row = Term::Node(Op::Slice(vec![(i, i + 1, 1), (0, depth, 1)]), a_ty.with_shape(vec![1, depth]), vec![Term::Class(a)]);
            let column = Term::Node(Op::Reshape, a_ty.with_shape(vec![depth, 1]), vec![a_row]);
            let product = Term::Node(Op::Dot(std.clone()), node.ty.with_shape(vec![n, 1]), vec![Term::Class(b), column]);
            Term::Node(Op::Reshape, node.ty.with_shape(vec![1, n]), vec![product])
        };
        let term = Term::concatenate(0, node.ty.clone(), (0..m).map(row).collect());
        out.push(Rewrite { rule: "rows-as-matrix-vector-products", class: eg.find(node_class[k]), term });
    }
    out
}

/// How many operations deep [`transposed_value`] moves a transpose towards the kernel's inputs.
const MAX_TRANSPOSE_DEPTH: usize = 6;

/// The free (not contracted) dimension of a matrix contracted along `d`.
fn flip(d: &[usize]) -> Vec<usize> {
    d.iter().map(|&x| 1 - x).collect()
}

/// A matrix operand of a product: a class, and the window of it the product takes (`None`:
/// all of it).
type Operand<'r> = (Id, Option<&'r [(i64, i64, i64)]>);

/// `a . b : ty` as a unit that takes only `[m, k] . [k, n]` computes it, given the free
/// dimension of each: `a`'s 0 and `b`'s 1 are taken as they are, the others transposed by
/// [`identities::transpose_by_products`].
fn standard_product(eg: &SelGraph, rules: &RuleSet, a: Operand, a_free: &[usize], b: Operand, b_free: &[usize], ty: &Ty) -> Option<Term> {
    let as_is = |(x, window): Operand| match window {
        Some(ranges) => {
            let shape = ranges.iter().map(|&(lo, hi, _)| hi - lo).collect();
            Term::Node(Op::Slice(ranges.to_vec()), class_ty(eg, x).with_shape(shape), vec![Term::Class(x)])
        }
        None => Term::Class(x),
    };
    let transposed = |(x, window): Operand| match window {
        Some(ranges) => identities::window_transpose_by_products(eg, &rules.identities, &rules.tiles, x, ranges, Reads::inputs(rules.strided_reads)),
        None => identities::transpose_by_products(eg, &rules.identities, &rules.tiles, x, Reads::inputs(rules.strided_reads)),
    };
    let lhs = match a_free {
        [0] => as_is(a),
        [1] => transposed(a)?,
        _ => return None,
    };
    let rhs = match b_free {
        [1] => as_is(b),
        [0] => transposed(b)?,
        _ => return None,
    };
    let std = DotDims { lhs_contracting: vec![1], rhs_contracting: vec![0], ..DotDims::default() };
    Some(Term::Node(Op::Dot(std), ty.clone(), vec![lhs, rhs]))
}

/// The transpose of kernel matrix `k`, moved onto the kernel's inputs through the operations
/// that do not care about layout (elementwise operations and converts apply to the
/// transposed operands, a broadcast repeats along the other dimension, a literal folds, a
/// window and a concatenation swap their dimensions, a transpose cancels) and through
/// products (`(A . B)^T = B^T . A^T`), `depth` operations deep: each transposed input
/// computed by [`identities::transpose_by_products`]. `None` where some operand on the way is
/// neither.
fn transposed_value(eg: &SelGraph, kernel: &crate::kernel::Kernel, node_class: &[Id], rules: &RuleSet, k: usize, depth: usize) -> Option<Term> {
    let node = &kernel.nodes[k];
    let class = eg.find(node_class[k]);
    let ty = class_ty(eg, class);
    if ty.rank() != 2 || depth == 0 {
        return None;
    }
    if let Some(term) = identities::transpose_by_products(eg, &rules.identities, &rules.tiles, class, Reads::inputs(rules.strided_reads)) {
        return Some(term);
    }
    let t_ty = ty.with_shape(vec![ty.shape[1], ty.shape[0]]);
    let operand = |j: usize| eg.find(node_class[node.operands[j]]);
    match &node.op {
        // A literal of one value throughout is the same literal in the other shape (a
        // transpose of it was a class of its own, which the ReLU route to a maximum with zero
        // did not see as zero: `relu(a @ b).T` at 17x17x17 was refused).
        Op::Constant(lit) if lit.splat().is_some() => Some(Term::Node(Op::Constant(lit.clone()), t_ty, vec![])),
        Op::Constant(_) => Some(Term::Node(Op::Transpose(vec![1, 0]), t_ty, vec![Term::Class(class)])),
        Op::Dot(dd) if dd.lhs_batch.is_empty() => {
            let (a, b) = (operand(0), operand(1));
            if class_ty(eg, a).rank() != 2 || class_ty(eg, b).rank() != 2 {
                return None;
            }
            standard_product(eg, rules, (b, None), &flip(&dd.rhs_contracting), (a, None), &flip(&dd.lhs_contracting), &t_ty)
        }
        // The transpose of a transpose is its operand; of a window, the window of the
        // transpose with its ranges swapped; of a concatenation, the parts' transposes
        // concatenated along the other dimension.
        Op::Transpose(p) if p[..] == [1, 0] => Some(Term::Class(operand(0))),
        Op::Slice(ranges) if class_ty(eg, operand(0)).rank() == 2 => {
            // A window of a product is the product of its operands' windows, transposed as
            // windows of inputs (a transposed product's window would be tiled from the whole).
            let inner = &kernel.nodes[node.operands[0]];
            if let Op::Dot(dd) = &inner.op {
                let (a, b) = (eg.find(node_class[inner.operands[0]]), eg.find(node_class[inner.operands[1]]));
                let (a_ty, b_ty) = (class_ty(eg, a), class_ty(eg, b));
                let (&[lc], &[rc]) = (&dd.lhs_contracting[..], &dd.rhs_contracting[..]) else { return None };
                if !dd.lhs_batch.is_empty() || a_ty.rank() != 2 || b_ty.rank() != 2 {
                    return None;
                }
                let mut a_window = vec![(0, a_ty.shape[0], 1), (0, a_ty.shape[1], 1)];
                a_window[1 - lc] = ranges[0];
                let mut b_window = vec![(0, b_ty.shape[0], 1), (0, b_ty.shape[1], 1)];
                b_window[1 - rc] = ranges[1];
                return standard_product(eg, rules, (b, Some(&b_window)), &[1 - rc], (a, Some(&a_window)), &[1 - lc], &t_ty);
            }
            let x = transposed_value(eg, kernel, node_class, rules, node.operands[0], depth - 1)?;
            Some(Term::Node(Op::Slice(vec![ranges[1], ranges[0]]), t_ty, vec![x]))
        }
        Op::Concatenate(d) if *d < 2 => {
            let parts = (0..node.operands.len())
                .map(|j| transposed_value(eg, kernel, node_class, rules, node.operands[j], depth - 1))
                .collect::<Option<Vec<Term>>>()?;
            Some(Term::Node(Op::Concatenate(1 - d), t_ty, parts))
        }
        Op::Broadcast(d) => match (class_ty(eg, operand(0)).rank(), d.as_slice()) {
            (0, _) => Some(Term::Node(Op::Broadcast(d.clone()), t_ty, vec![Term::Class(operand(0))])),
            (1, [r]) if *r < 2 => Some(Term::Node(Op::Broadcast(vec![1 - r]), t_ty, vec![Term::Class(operand(0))])),
            _ => None,
        },
        op if op.is_elementwise() || *op == Op::Convert => {
            let args = (0..node.operands.len())
                .map(|j| match class_ty(eg, operand(j)).rank() {
                    0 => Some(Term::Class(operand(j))),
                    _ => transposed_value(eg, kernel, node_class, rules, node.operands[j], depth - 1),
                })
                .collect::<Option<Vec<Term>>>()?;
            Some(Term::Node(op.clone(), t_ty, args))
        }
        _ => None,
    }
}

/// On an ISA whose semantics transpose nowhere and whose units take products only as `[m, k] .
/// [k, n]`, the kernel's transposes of matrices and its products with an operand in another
/// layout (`A^T . B`, `A . B^T`, batched or not), with each transposed operand computed by
/// products that contract one element ([`identities::transpose_by_products`]): the
/// operand's rows loaded as columns, which the unit turns into columns of the result. Added
/// once, for the kernel's own operations, whose operands are windows of kernel inputs (the
/// other layouts the rules give every product would multiply the e-graph); a batched product
/// is written item by item. The same products over the same contraction as the kernel's own.
pub fn transposes_by_products(
    eg: &SelGraph,
    kernel: &crate::kernel::Kernel,
    node_class: &[Id],
    rules: &RuleSet,
) -> Vec<Rewrite> {
    let mut out = Vec::new();
    let standard_only = !rules.dot_forms.is_empty() && rules.dot_forms.iter().all(|&f| f == (0, 0));
    if rules.transpose || !rules.dot || !standard_only || rules.identities.is_empty() {
        return out;
    }
    let (ids, tiles) = (&rules.identities, &rules.tiles);
    let std = DotDims { lhs_contracting: vec![1], rhs_contracting: vec![0], ..DotDims::default() };
    let short = |dot: &crate::kernel::KernelNode| dot.ty.rank() == 2 && product_runs_a_row_at_a_time(tiles, dot.ty.shape[0]);
    let read_only_by_short_products = |t: usize| {
        let readers: Vec<&crate::kernel::KernelNode> = kernel.nodes.iter().filter(|n| n.operands.contains(&t)).collect();
        !readers.is_empty()
            && readers.iter().all(|n| {
                matches!(&n.op, Op::Dot(dd) if dd.lhs_batch.is_empty() && dd.lhs_contracting == [1] && dd.rhs_contracting == [0])
                    && n.operands[1] == t
                    && n.operands[0] != t
                    && short(n)
            })
    };
    for (k, node) in kernel.nodes.iter().enumerate() {
        let class = eg.find(node_class[k]);
        let operand = |j: usize| eg.find(node_class[node.operands[j]]);
        match &node.op {
            // A batch of matrices each transposed, item by item.
            Op::Transpose(p) if p[..] == [0, 2, 1] && node.ty.shape[0] <= MAX_BATCH_ITEMS => {
                let x = operand(0);
                let (r, c) = (node.ty.shape[1], node.ty.shape[2]);
                let items = (0..node.ty.shape[0])
                    .map(|i| {
                        let t = identities::item_transpose_by_products(eg, ids, tiles, x, i, Reads::inputs(rules.strided_reads))
                            .or_else(|| identities::item_transpose_by_products(eg, ids, tiles, x, i, Reads::stored(rules.strided_reads)))?;
                        Some(Term::Node(Op::Reshape, node.ty.with_shape(vec![1, r, c]), vec![t]))
                    })
                    .collect::<Option<Vec<Term>>>();
                if let Some(items) = items {
                    let term = Term::concatenate(0, node.ty.clone(), items);
                    out.push(Rewrite { rule: "transpose-by-products", class, term });
                }
            }
            Op::Transpose(p) if p[..] == [1, 0] => {
                if read_only_by_short_products(k) {
                    continue;
                }
                let by_products = transposed_value(eg, kernel, node_class, rules, node.operands[0], MAX_TRANSPOSE_DEPTH);
                // Written out, each row of it is also a column of the operand where it lies:
                // where that is an input (whose transpose takes a one-element product per
                // element), or where no product computes the transpose from the operand's own.
                let by_columns = kernel.written_out(k)
                    && rules.strided_reads
                    && (by_products.is_none() || matches!(kernel.nodes[node.operands[0]].op, Op::Parameter(_)));
                let stored = || identities::transpose_by_products(eg, ids, tiles, operand(0), Reads::stored(rules.strided_reads));
                if let Some(term) = by_products.or_else(stored) {
                    out.push(Rewrite { rule: "transpose-by-products", class, term });
                }
                if by_columns {
                    if let Some(term) = identities::transpose_by_columns(eg, operand(0)) {
                        out.push(Rewrite { rule: "transpose-by-columns", class, term });
                    }
                }
            }
            Op::Dot(dd) if dd.lhs_batch.is_empty() && node.ty.rank() == 2 => {
                let (a, b) = (operand(0), operand(1));
                if class_ty(eg, a).rank() != 2 || class_ty(eg, b).rank() != 2 {
                    continue;
                }
                let only_rhs_transposed = dd.lhs_contracting == [1] && dd.rhs_contracting == [1];
                if (dd.lhs_contracting != [1] || dd.rhs_contracting != [0]) && !(only_rhs_transposed && short(node)) {
                    if let Some(term) = standard_product(eg, rules, (a, None), &flip(&dd.lhs_contracting), (b, None), &flip(&dd.rhs_contracting), &node.ty) {
                        out.push(Rewrite { rule: "transposed-operand-by-products", class, term });
                    }
                }
            }
            Op::Dot(dd) if dd.lhs_batch == [0] && dd.rhs_batch == [0] && node.ty.rank() == 3 => {
                let (a, b) = (operand(0), operand(1));
                let (a_ty, b_ty) = (class_ty(eg, a).clone(), class_ty(eg, b).clone());
                let (lc, rc) = (&dd.lhs_contracting[..], &dd.rhs_contracting[..]);
                if a_ty.rank() != 3 || b_ty.rank() != 3 || (lc == [2] && rc == [1]) || node.ty.shape[0] > MAX_BATCH_ITEMS {
                    continue;
                }
                let (m, n) = (node.ty.shape[1], node.ty.shape[2]);
                let item = |x: Id, x_ty: &Ty, i: i64| {
                    let mut window: Vec<(i64, i64, i64)> = x_ty.shape.iter().map(|&d| (0, d, 1)).collect();
                    window[0] = (i, i + 1, 1);
                    let one = Term::Node(Op::Slice(window), x_ty.with_shape([&[1][..], &x_ty.shape[1..]].concat()), vec![Term::Class(x)]);
                    Term::Node(Op::Reshape, x_ty.with_shape(x_ty.shape[1..].to_vec()), vec![one])
                };
                let items = (0..node.ty.shape[0])
                    .map(|i| {
                        let lhs = match lc {
                            [2] => Some(item(a, &a_ty, i)),
                            [1] => identities::item_transpose_by_products(eg, ids, tiles, a, i, Reads::inputs(rules.strided_reads)),
                            _ => None,
                        }?;
                        let rhs = match rc {
                            [1] => Some(item(b, &b_ty, i)),
                            [2] => identities::item_transpose_by_products(eg, ids, tiles, b, i, Reads::inputs(rules.strided_reads)),
                            _ => None,
                        }?;
                        let product = Term::Node(Op::Dot(std.clone()), node.ty.with_shape(vec![m, n]), vec![lhs, rhs]);
                        Some(Term::Node(Op::Reshape, node.ty.with_shape(vec![1, m, n]), vec![product]))
                    })
                    .collect::<Option<Vec<Term>>>();
                if let Some(items) = items {
                    let term = Term::concatenate(0, node.ty.clone(), items);
                    out.push(Rewrite { rule: "transposed-operand-by-products", class, term });
                }
            }
            _ => {}
        }
    }
    out
}

/// Whether class `c` holds a constant, or within `depth` steps a slice, reshape, broadcast,
/// transpose or conversion of one (a tile of a zero matrix is not folded to a literal).
/// Whether `ranges` take a window of consecutive rows of a value of type `ty` and every
/// element of each.
fn only_rows(ranges: &[(i64, i64, i64)], ty: &Ty) -> bool {
    ranges.first().is_some_and(|r| r.2 == 1) && ranges.iter().zip(&ty.shape).skip(1).all(|(r, &n)| *r == (0, n, 1))
}

pub(crate) fn constant_valued(eg: &SelGraph, c: Id, depth: usize) -> bool {
    eg[c].nodes.iter().any(|n| match n.op {
        Op::Constant(_) => true,
        Op::Slice(_) | Op::Reshape | Op::Broadcast(_) | Op::Transpose(_) | Op::Convert | Op::BitcastConvert => {
            depth > 0 && constant_valued(eg, n.children[0], depth - 1)
        }
        _ => false,
    })
}

/// Adds a term, checking the type of every new node; `None` when a node is ill-typed (a bug
/// in a rule, reported in debug builds).
pub fn add_term(eg: &mut SelGraph, term: &Term) -> Option<Id> {
    match term {
        Term::Class(id) => Some(*id),
        Term::Node(op, ty, kids) => {
            let ids = kids.iter().map(|k| add_term(eg, k)).collect::<Option<Vec<Id>>>()?;
            let mut node = Node::new(op.clone(), ty.clone(), ids);
            // Most terms rules find late in a search are already there.
            if let Some(id) = eg.lookup(&mut node) {
                return Some(id);
            }
            let tys: Vec<&Ty> = node.children.iter().map(|&k| &eg[k].data).collect();
            if let Err(e) = infer::check(op, &tys, ty) {
                debug_assert!(false, "a rewrite built an ill-typed node: {e}");
                return None;
            }
            Some(eg.add(node))
        }
    }
}

/// Applies rewrites and rebuilds; returns whether the e-graph changed.
pub fn apply(eg: &mut SelGraph, rewrites: &[Rewrite]) -> bool {
    let mut changed = false;
    for rw in rewrites {
        let before = eg.total_size();
        let Some(id) = add_term(eg, &rw.term) else { continue };
        changed |= eg.total_size() != before;
        if eg[rw.class].data != eg[id].data {
            debug_assert!(false, "rule {} equated {} with {}", rw.rule, eg[rw.class].data, eg[id].data);
            continue;
        }
        changed |= eg.union(rw.class, id);
    }
    eg.rebuild();
    changed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::egraph::TypeAnalysis;

    fn ty(shape: &[i64]) -> Ty {
        Ty::new(DType::BF16, shape.to_vec())
    }

    fn saturate(eg: &mut SelGraph, rules: &RuleSet) {
        // Every rule set reaches its fixed point well within this many rounds (the padding
        // rules of a test ISA of fixed-size units take 12).
        for _ in 0..20 {
            let found = search(eg, rules);
            if !apply(eg, &found) {
                return;
            }
        }
        panic!("did not saturate");
    }

    #[test]
    fn transposes_compose_and_cancel() {
        let mut eg = SelGraph::new(TypeAnalysis);
        let x = eg.add(Node::leaf(Op::Input(0), ty(&[2, 3, 4])));
        let t1 = eg.add(Node::new(Op::Transpose(vec![1, 2, 0]), ty(&[3, 4, 2]), vec![x]));
        let t2 = eg.add(Node::new(Op::Transpose(vec![2, 0, 1]), ty(&[2, 3, 4]), vec![t1]));
        saturate(&mut eg, &RuleSet::default());
        assert_eq!(eg.find(t2), eg.find(x));
        assert_ne!(eg.find(t1), eg.find(x));
    }

    #[test]
    fn contracting_the_rhs_on_dim_1_is_a_product_with_its_transpose() {
        let mut eg = SelGraph::new(TypeAnalysis);
        let a = eg.add(Node::leaf(Op::Input(0), ty(&[4, 8])));
        let b = eg.add(Node::leaf(Op::Input(1), ty(&[6, 8])));
        let abt = DotDims { lhs_contracting: vec![1], rhs_contracting: vec![1], ..Default::default() };
        let d = eg.add(Node::new(Op::Dot(abt), ty(&[4, 6]), vec![a, b]));
        saturate(&mut eg, &RuleSet::all());
        let bt = eg.lookup(Node::new(Op::Transpose(vec![1, 0]), ty(&[8, 6]), vec![b])).expect("b^T was built");
        let std = DotDims { lhs_contracting: vec![1], rhs_contracting: vec![0], ..Default::default() };
        let normal = eg.lookup(Node::new(Op::Dot(std.clone()), ty(&[4, 6]), vec![a, bt])).expect("a.(b^T) was built");
        assert_eq!(eg.find(normal), eg.find(d));
        // ...and never a product with b itself in the standard form (A.B^T is not A.B).
        let wrong = eg.lookup(Node::new(Op::Dot(std), ty(&[4, 6]), vec![a, b]));
        assert!(wrong.is_none() || eg.find(wrong.unwrap()) != eg.find(d));
    }

    #[test]
    fn a_product_of_vectors_is_a_product_of_a_row_and_a_column() {
        let mut eg = SelGraph::new(TypeAnalysis);
        let a = eg.add(Node::leaf(Op::Input(0), ty(&[4, 8])));
        let v = eg.add(Node::leaf(Op::Input(1), ty(&[8])));
        let std = DotDims { lhs_contracting: vec![1], rhs_contracting: vec![0], ..Default::default() };
        let av = eg.add(Node::new(Op::Dot(std.clone()), ty(&[4]), vec![a, v]));
        let vv = eg.add(Node::new(Op::Dot(DotDims { lhs_contracting: vec![0], ..std.clone() }), ty(&[]), vec![v, v]));
        saturate(&mut eg, &RuleSet::all());
        let reshape = |eg: &SelGraph, x: Id, shape: &[i64]| eg.lookup(Node::new(Op::Reshape, ty(shape), vec![x]));
        let column = reshape(&eg, v, &[8, 1]).expect("v as a column was built");
        let row = reshape(&eg, v, &[1, 8]).expect("v as a row was built");
        // A.v = reshape(A.[v]) and v.v = reshape([v].[v]), in the array's layout.
        let matrix = eg.lookup(Node::new(Op::Dot(std.clone()), ty(&[4, 1]), vec![a, column])).expect("A.[v]");
        assert_eq!(reshape(&eg, matrix, &[4]).map(|r| eg.find(r)), Some(eg.find(av)));
        let scalar = eg.lookup(Node::new(Op::Dot(std), ty(&[1, 1]), vec![row, column])).expect("[v].[v]");
        assert_eq!(reshape(&eg, scalar, &[]).map(|r| eg.find(r)), Some(eg.find(vv)));
    }

    #[test]
    fn a_product_of_a_column_repeated_across_and_a_row_repeated_down_is_an_outer_product() {
        let mut eg = SelGraph::new(TypeAnalysis);
        let u = eg.add(Node::leaf(Op::Input(0), ty(&[4])));
        let v = eg.add(Node::leaf(Op::Input(1), ty(&[3])));
        let across = eg.add(Node::new(Op::Broadcast(vec![0]), ty(&[4, 3]), vec![u]));
        let down = eg.add(Node::new(Op::Broadcast(vec![1]), ty(&[4, 3]), vec![v]));
        // Either order of the operands: multiplication commutes.
        let uv = eg.add(Node::new(Op::Multiply, ty(&[4, 3]), vec![across, down]));
        let vu = eg.add(Node::new(Op::Multiply, ty(&[4, 3]), vec![down, across]));
        saturate(&mut eg, &RuleSet::all());
        let column = eg.lookup(Node::new(Op::Reshape, ty(&[4, 1]), vec![u])).expect("u as a column");
        let row = eg.lookup(Node::new(Op::Reshape, ty(&[1, 3]), vec![v])).expect("v as a row");
        let dims = DotDims { lhs_contracting: vec![1], rhs_contracting: vec![0], ..Default::default() };
        let outer = eg.lookup(Node::new(Op::Dot(dims), ty(&[4, 3]), vec![column, row])).expect("the outer product");
        assert_eq!(eg.find(outer), eg.find(uv));
        assert_eq!(eg.find(outer), eg.find(vu));
    }

    #[test]
    fn a_sum_of_vectors_one_a_reshaped_row_is_a_sum_of_rows() {
        let mut eg = SelGraph::new(TypeAnalysis);
        let row = eg.add(Node::leaf(Op::Input(0), ty(&[1, 8])));
        let c = eg.add(Node::leaf(Op::Input(1), ty(&[8])));
        let v = eg.add(Node::new(Op::Reshape, ty(&[8]), vec![row]));
        let sum = eg.add(Node::new(Op::Add, ty(&[8]), vec![v, c]));
        let d = eg.add(Node::leaf(Op::Input(2), ty(&[8])));
        let d_alone = eg.add(Node::new(Op::Exponential, ty(&[8]), vec![d]));
        saturate(&mut eg, &RuleSet::all());
        let c_row = eg.lookup(Node::new(Op::Reshape, ty(&[1, 8]), vec![c])).expect("c as a row was built");
        let rows = eg.lookup(Node::new(Op::Add, ty(&[1, 8]), vec![row, c_row])).expect("the sum of rows");
        let back = eg.lookup(Node::new(Op::Reshape, ty(&[8]), vec![rows])).expect("reshaped");
        assert_eq!(eg.find(back), eg.find(sum));
        // An operation on vectors none of which is a reshaped matrix stays on vectors.
        assert!(eg[d_alone].nodes.iter().all(|n| n.op != Op::Reshape));
    }

    #[test]
    fn the_normal_forms_a_product_is_in() {
        // (lhs contracting, rhs contracting, batch, lhs rank, rhs rank) => (lhs forms, rhs forms)
        let dims = |lc: &[usize], rc: &[usize], batch: usize| DotDims {
            lhs_contracting: lc.to_vec(),
            rhs_contracting: rc.to_vec(),
            lhs_batch: (0..batch).collect(),
            rhs_batch: (0..batch).collect(),
        };
        let cases = [
            (dims(&[1], &[0], 0), 2, 2, Some((vec![0], vec![0]))),
            (dims(&[1], &[1], 0), 2, 2, Some((vec![0], vec![1]))),
            (dims(&[0], &[0], 0), 2, 2, Some((vec![1], vec![0]))),
            (dims(&[2], &[1], 1), 3, 3, Some((vec![0], vec![0]))),
            (DotDims { lhs_batch: vec![1], rhs_batch: vec![1], ..dims(&[2], &[2], 0) }, 3, 3, None),
        ];
        for (dd, ra, rb, expected) in cases {
            assert_eq!(layouts(&dd, ra, rb), expected, "{dd:?}");
        }
    }

    #[test]
    fn a_product_with_a_constant_in_the_units_layout_takes_no_other() {
        let std = DotDims { lhs_contracting: vec![1], rhs_contracting: vec![0], ..Default::default() };
        let abt = DotDims { lhs_contracting: vec![1], rhs_contracting: vec![1], ..Default::default() };
        let rules = RuleSet { dot: true, dot_forms: [(0, 0)].into_iter().collect(), ..RuleSet::default() };
        let dots = |eg: &SelGraph| eg.classes().flat_map(|c| &c.nodes).filter(|n| matches!(n.op, Op::Dot(_))).count();
        // x . C in the unit's layout: nothing to add.
        let mut eg = SelGraph::new(TypeAnalysis);
        let x = eg.add(Node::leaf(Op::Input(0), ty(&[4, 4])));
        let c = eg.add(Node::leaf(Op::Constant(Literal::from_values(&[1.0])), ty(&[4, 4])));
        eg.add(Node::new(Op::Dot(std.clone()), ty(&[4, 4]), vec![x, c]));
        saturate(&mut eg, &rules);
        assert_eq!(dots(&eg), 1);
        // x . C^T by dimension numbers: brought to the unit's layout, with the constant's
        // transpose folded.
        let mut eg = SelGraph::new(TypeAnalysis);
        let x = eg.add(Node::leaf(Op::Input(0), ty(&[4, 4])));
        let c = eg.add(Node::leaf(Op::Constant(Literal::from_values(&[1.0])), ty(&[4, 4])));
        let d = eg.add(Node::new(Op::Dot(abt), ty(&[4, 4]), vec![x, c]));
        saturate(&mut eg, &rules);
        let ct = eg.lookup(Node::new(Op::Transpose(vec![1, 0]), ty(&[4, 4]), vec![c])).expect("c^T");
        let normal = eg.lookup(Node::new(Op::Dot(std), ty(&[4, 4]), vec![x, ct])).expect("x . c^T");
        assert_eq!(eg.find(normal), eg.find(d));
    }

    #[test]
    fn a_product_taller_than_every_tile_is_the_concatenation_of_its_row_tiles() {
        let mut eg = SelGraph::new(TypeAnalysis);
        let a = eg.add(Node::leaf(Op::Input(0), ty(&[8, 4])));
        let b = eg.add(Node::leaf(Op::Input(1), ty(&[4, 3])));
        let std = DotDims { lhs_contracting: vec![1], rhs_contracting: vec![0], ..Default::default() };
        let d = eg.add(Node::new(Op::Dot(std.clone()), ty(&[8, 3]), vec![a, b]));
        let rules = RuleSet {
            dot: true,
            tiles: Extents::from_entries([(OpCode::Dot, vec![Some(2), Some(3)]), (OpCode::Dot, vec![Some(4), Some(3)])]),
            ..RuleSet::default()
        };
        saturate(&mut eg, &rules);
        // Tiles of the largest extent: two of four rows each.
        let tile = |lo: i64| {
            let rows = eg.lookup(Node::new(Op::Slice(vec![(lo, lo + 4, 1), (0, 4, 1)]), ty(&[4, 4]), vec![a]))?;
            eg.lookup(Node::new(Op::Dot(std.clone()), ty(&[4, 3]), vec![rows, b]))
        };
        let (t0, t1) = (tile(0).expect("tile 0 built"), tile(4).expect("tile 1 built"));
        let whole = eg.lookup(Node::new(Op::Concatenate(0), ty(&[8, 3]), vec![t0, t1])).expect("concatenated");
        assert_eq!(eg.find(whole), eg.find(d));
        // A tile already of a unit's size is not split again.
        assert!(eg[t0].nodes.iter().all(|n| !matches!(n.op, Op::Concatenate(_))));
    }

    #[test]
    fn slices_of_values_read_from_bytes_read_fewer_bytes() {
        let mut eg = SelGraph::new(TypeAnalysis);
        let bytes = eg.add(Node::leaf(Op::Input(0), Ty::new(DType::U8, vec![64])));
        let x = crate::egraph::from_bytes(&mut eg, bytes, &ty(&[8, 4]));
        let rows = eg.add(Node::new(Op::Slice(vec![(2, 6, 1), (0, 4, 1)]), ty(&[4, 4]), vec![x]));
        saturate(&mut eg, &RuleSet::default());
        // Rows 2..6 of a row of 8 bytes: bytes 16..48.
        let run = eg
            .lookup(Node::new(Op::Slice(vec![(16, 48, 1)]), Ty::new(DType::U8, vec![32]), vec![bytes]))
            .expect("the byte run was built");
        let read = crate::egraph::from_bytes(&mut eg, run, &ty(&[4, 4]));
        eg.rebuild();
        assert_eq!(eg.find(read), eg.find(rows));
    }

    #[test]
    fn a_slice_of_a_slice_is_one_slice() {
        let mut eg = SelGraph::new(TypeAnalysis);
        let x = eg.add(Node::leaf(Op::Input(0), ty(&[32, 32])));
        let cols = eg.add(Node::new(Op::Slice(vec![(0, 32, 1), (4, 28, 2)]), ty(&[32, 12]), vec![x]));
        let tile = eg.add(Node::new(Op::Slice(vec![(16, 32, 1), (1, 7, 3)]), ty(&[16, 2]), vec![cols]));
        saturate(&mut eg, &RuleSet::default());
        // Columns 1 and 4 of columns 4, 6, 8, ...: columns 6 and 12 of the whole.
        let direct = eg
            .lookup(Node::new(Op::Slice(vec![(16, 32, 1), (6, 13, 6)]), ty(&[16, 2]), vec![x]))
            .expect("composed");
        assert_eq!(eg.find(direct), eg.find(tile));
    }

    #[test]
    fn an_integer_choice_of_the_larger_operand_is_their_maximum() {
        let mut eg = SelGraph::new(TypeAnalysis);
        let int = |shape: &[i64]| Ty::new(DType::S32, shape.to_vec());
        let x = eg.add(Node::leaf(Op::Input(0), int(&[4, 4])));
        let zero = eg.add(Node::leaf(Op::Constant(Literal::from_values(&[0.0])), int(&[4, 4])));
        // `0 < x ? x : 0` (a ReLU written with `jnp.where`) and `x < 0 ? x : 0`.
        let relu = eg.add(Node::new(Op::SelectLt, int(&[4, 4]), vec![zero, x, x, zero]));
        let min = eg.add(Node::new(Op::SelectLt, int(&[4, 4]), vec![x, zero, x, zero]));
        saturate(&mut eg, &RuleSet::default());
        for (op, class) in [(Op::Maximum, relu), (Op::Minimum, min)] {
            for operands in [vec![x, zero], vec![zero, x]] {
                let found = eg.lookup(Node::new(op.clone(), int(&[4, 4]), operands)).expect("built");
                assert_eq!(eg.find(found), eg.find(class));
            }
        }
        // Not for floats: with a NaN operand the choice and the maximum differ.
        let f = eg.add(Node::leaf(Op::Input(1), ty(&[4, 4])));
        let f0 = eg.add(Node::leaf(Op::Constant(Literal::from_values(&[0.0])), ty(&[4, 4])));
        eg.add(Node::new(Op::SelectLt, ty(&[4, 4]), vec![f0, f, f, f0]));
        saturate(&mut eg, &RuleSet::default());
        assert!(eg.lookup(Node::new(Op::Maximum, ty(&[4, 4]), vec![f0, f])).is_none());
    }

    #[test]
    fn narrowing_an_accumulation_is_the_narrow_reduction() {
        let mut eg = SelGraph::new(TypeAnalysis);
        let x = eg.add(Node::leaf(Op::Input(0), ty(&[4, 8])));
        let wide = eg.add(Node::new(Op::Convert, Ty::new(DType::F32, vec![4, 8]), vec![x]));
        let sum = eg.add(Node::new(Op::ReduceAdd(vec![1]), Ty::new(DType::F32, vec![4]), vec![wide]));
        let r = eg.add(Node::new(Op::Reshape, Ty::new(DType::F32, vec![4, 1]), vec![sum]));
        let narrow = eg.add(Node::new(Op::Convert, ty(&[4, 1]), vec![r]));
        let back = eg.add(Node::new(Op::Reshape, ty(&[4]), vec![narrow]));
        saturate(&mut eg, &RuleSet::all());
        let direct = eg.lookup(Node::new(Op::ReduceAdd(vec![1]), ty(&[4]), vec![x])).expect("built");
        assert_eq!(eg.find(direct), eg.find(back));
    }

    #[test]
    fn precision_rule_needs_an_exact_widening() {
        let mut eg = SelGraph::new(TypeAnalysis);
        let x = eg.add(Node::leaf(Op::Input(0), Ty::new(DType::F32, vec![4, 8])));
        let narrow = eg.add(Node::new(Op::Convert, ty(&[4, 8]), vec![x]));
        let sum = eg.add(Node::new(Op::ReduceAdd(vec![1]), ty(&[4]), vec![narrow]));
        let _back = eg.add(Node::new(Op::Convert, Ty::new(DType::F32, vec![4]), vec![sum]));
        saturate(&mut eg, &RuleSet::all());
        assert!(eg.lookup(Node::new(Op::ReduceAdd(vec![1]), Ty::new(DType::F32, vec![4]), vec![x])).is_none());
    }

    #[test]
    fn literals_convert_only_when_exact() {
        assert!(representable(1.0, DType::BF16));
        assert!(representable(f64::NEG_INFINITY, DType::F16));
        assert!(!representable(0.1, DType::BF16));
        assert!(representable(65504.0, DType::F16));
        assert!(!representable(65536.0 * 2.0, DType::F16));
        assert!(representable(2f64.powi(-24), DType::F16));
        assert!(!representable(2f64.powi(-25), DType::F16));
        assert!(!representable(1.5, DType::S32));
        assert!(representable(-128.0, DType::S8));
    }
}
