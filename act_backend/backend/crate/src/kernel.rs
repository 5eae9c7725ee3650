//! A kernel as a typed DAG of operators, built from the HLO syntax tree of its entry
//! computation: operands resolved, attributes decoded, reducers recognised, every type
//! checked with the rules of `infer.rs`. Normalisations that keep the meaning:
//! `reduce(x, 0) to_apply=<add>` becomes `reduce_add(x)`, other reducers keep their init and
//! name their computation (add, max, min, mul), a reduce of any other region is kept by name,
//! `exp` is `exponential`, and
//! `select(compare(a, b, direction), t, f)` becomes `select_lt` / `select_eq_var` where that is
//! exact. A `call` is inlined: the computation it applies becomes nodes of the kernel, its
//! parameters bound to the call's operands, so that selection sees plain operators (errors
//! inside it point into its text). Operators no instruction semantics contains (tanh, clamp,
//! reverse, pad...) are kept by name with their meaningful attributes as text
//! ([`Op::Other`]), so that selection can name them. A tuple ROOT of the entry (several
//! results) becomes the concatenation of its elements' bytes (`results.rs`). Finally what
//! depends on constants only is folded into constants (`fold.rs`).
//!
//! The other computations are read and checked too, and every refusal carries the stable code
//! and the position the Python checker (`act_backend.kernel.check_hlo`) gives the same fault:
//! the conformance corpus (`tests/conformance/`) holds both front ends to one verdict.

use crate::channels_last;
use crate::convolution;
use crate::fold;
use crate::hlo_parse::{self, Arg, Computation, Instr, Pos, TypeAst, Value};
use crate::infer::{self, Site};
use crate::reduce_window;
use crate::results;
use crate::transposes;
use crate::lang::{DType, DotDims, Family, Literal, Op, OpCode, Reducer, Ty};
use crate::vocabulary::{COMPARISON_DIRECTIONS, GENERIC_KERNEL_ATTRIBUTES};
use std::collections::HashMap;
use std::fmt;

/// One operation of the kernel.
#[derive(Debug, Clone)]
pub struct KernelNode {
    pub name: String,
    pub op: Op,
    pub ty: Ty,
    pub operands: Vec<usize>,
    pub line: usize,
    pub col: usize,
    /// The HLO text of the instruction.
    pub text: String,
}

/// The nodes a computation added to a kernel: its ROOT's, its results' (the ROOT, or the
/// elements of the entry's tuple ROOT) and each parameter's.
struct Added {
    root: usize,
    results: Vec<usize>,
    params: Vec<Option<usize>>,
}

/// A kernel: its nodes in program order (operands first), parameters and outputs.
#[derive(Debug, Clone)]
pub struct Kernel {
    pub name: String,
    pub file: String,
    pub params: Vec<Ty>,
    /// The types of the kernel's results, in order: one, or each element of a tuple ROOT.
    pub outputs: Vec<Ty>,
    pub nodes: Vec<KernelNode>,
    /// Node of parameter `i`.
    pub param_nodes: Vec<usize>,
    /// Node of result `i`.
    pub results: Vec<usize>,
    /// The node whose value the kernel writes to HBM after its inputs: the result, or for
    /// several results the concatenation of their bytes (`results.rs`).
    pub root: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KernelErrorKind {
    Syntax,
    UnknownOperator,
    UndefinedOperand,
    Shape,
    Unsupported,
}

impl Kernel {
    /// Replaces the nodes with `nodes`, in which node `k` of the old ones is `new_index[k]`.
    pub fn renumber(&mut self, nodes: Vec<KernelNode>, new_index: &[usize]) {
        self.param_nodes = self.param_nodes.iter().map(|&k| new_index[k]).collect();
        self.results = self.results.iter().map(|&k| new_index[k]).collect();
        self.root = new_index[self.root];
        self.nodes = nodes;
    }

    /// Drops those of `candidates` that nothing the kernel's value depends on reads.
    pub fn drop_unread(&mut self, candidates: impl IntoIterator<Item = usize>) {
        let live = fold::live(self);
        let mut keep = vec![true; self.nodes.len()];
        candidates.into_iter().filter(|&k| !live[k]).for_each(|k| keep[k] = false);
        if keep.contains(&false) {
            fold::remove_nodes(self, &keep);
        }
    }

    /// Whether node `k`'s value is only written out: a result nothing else reads, or read
    /// only by reshapes and concatenations along the leading dimension whose values are only
    /// written out (its bytes are a run of theirs).
    pub fn written_out(&self, k: usize) -> bool {
        let readers: Vec<usize> = (0..self.nodes.len()).filter(|&r| self.nodes[r].operands.contains(&k)).collect();
        if readers.is_empty() {
            return k == self.root || self.results.contains(&k);
        }
        readers.iter().all(|&r| matches!(self.nodes[r].op, Op::Reshape | Op::Concatenate(0)) && self.written_out(r))
    }
}

impl KernelErrorKind {
    /// The kind of a stable error code (the table the conformance corpus's `kinds` records):
    /// codes the crate uses alone (`unsupported-tuple`...) are refusals of what it does not
    /// compile; any code not listed is a type error.
    pub fn of_code(code: &str) -> KernelErrorKind {
        match code {
            "hlo-syntax" | "missing-attribute" | "missing-entry" | "duplicate-entry" | "duplicate-computation"
            | "missing-root" | "duplicate-root" | "duplicate-instruction" | "duplicate-parameter"
            | "missing-parameter" | "bad-name" | "entry-layout-syntax" | "entry-layout-mismatch"
            | "duplicate-attribute" | "unknown-attribute" => KernelErrorKind::Syntax,
            "unknown-operator" => KernelErrorKind::UnknownOperator,
            "undefined-operand" | "unknown-computation" => KernelErrorKind::UndefinedOperand,
            "unsupported-operator" | "unsupported-tuple" | "unsupported-constant"
            | "variadic-reduce" | "recursive-call" => KernelErrorKind::Unsupported,
            _ => KernelErrorKind::Shape,
        }
    }
}

/// A problem in a kernel file; `Display` is `file:line:col: message`. `code` is the stable
/// kebab-case id the Python checker reports the same problem under (`Problem.code`), or one of
/// the crate's own refusals (`unsupported-tuple`, `unsupported-constant`); `kind` is its
/// coarse class.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelError {
    pub file: String,
    pub line: usize,
    pub col: usize,
    pub kind: KernelErrorKind,
    pub code: &'static str,
    pub message: String,
}

impl fmt::Display for KernelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}: {}", self.file, self.line, self.col, self.message)
    }
}

impl std::error::Error for KernelError {}

/// Parses an HLO kernel; `file` is used in error messages. Convolutions are written
/// channels-last (`channels_last::lower_kernel`), then as the products they sum
/// (`convolution::lower_kernel`), windowed reductions (and float maxima and minima over
/// dimensions before the last) as the folds of strided windows they are
/// (`reduce_window::lower_kernel`), transposes as transposes of matrices
/// (`transposes::lower_kernel`) and what depends on constants only is folded.
pub fn parse_kernel(text: &str, file: &str) -> Result<Kernel, KernelError> {
    parse_kernel_as_written(text, file).map(lowered)
}

/// A kernel as written with its convolutions written as products, its transposes as
/// transposes of matrices and its constant-only work folded: what selection reads.
pub fn lowered(mut kernel: Kernel) -> Kernel {
    channels_last::lower_kernel(&mut kernel);
    convolution::lower_kernel(&mut kernel);
    reduce_window::lower_kernel(&mut kernel);
    transposes::lower_kernel(&mut kernel);
    fold::fold_constants(&mut kernel);
    kernel
}

/// The kernel as its text writes it, checked: convolutions kept whole, nothing folded.
pub fn parse_kernel_as_written(text: &str, file: &str) -> Result<Kernel, KernelError> {
    let module = hlo_parse::parse_module(text).map_err(|e| KernelError {
        file: file.to_string(),
        line: e.pos.line,
        col: e.pos.col,
        kind: KernelErrorKind::of_code(e.code),
        code: e.code,
        message: e.message,
    })?;
    let builder = Builder { file, computations: &module.computations };
    let entry = builder.entry()?;
    // What the Python parser refuses while reading the text comes first, in text order.
    for comp in &module.computations {
        builder.decode(comp)?;
    }
    builder.recursion()?;
    // Every computation is checked, in text order, as the Python checker checks them; what
    // the crate would not compile in a computation the entry does not run directly (a tuple)
    // is refused where it is inlined into the kernel, or not at all when nothing applies it.
    let name = module.name.clone().unwrap_or_else(|| entry.name.clone());
    let mut kernel = None;
    for comp in &module.computations {
        if std::ptr::eq(comp, entry) {
            kernel = Some(builder.build(name.clone(), comp)?);
        } else if let Err(e) = builder.build(comp.name.clone(), comp) {
            if e.kind != KernelErrorKind::Unsupported {
                return Err(e);
            }
        }
    }
    Ok(kernel.expect("the entry is one of the computations"))
}

/// Where an argument is written.
fn arg_pos(arg: &Arg) -> Pos {
    match arg {
        Arg::Operand { pos, .. } => *pos,
        Arg::Literal(v) => v.pos(),
    }
}

/// A literal's numbers are numbers (`1`, `-2.5e-3`, `inf`, `true`), nested in braces.
fn literal_words(value: &Value) -> Result<(), (Pos, String)> {
    match value {
        Value::Word(w, p) => number_of(w).map(|_| ()).ok_or((*p, format!("expected a literal value, found `{w}`"))),
        Value::List(items, _) => items.iter().try_for_each(literal_words),
        other => Err((other.pos(), format!("expected a literal value, found `{other}`"))),
    }
}

/// The element types a written type names, tuples included.
fn element_types(ast: &TypeAst, out: &mut Vec<(String, Pos)>) {
    match ast {
        TypeAst::Tensor { dtype, pos, .. } => out.push((dtype.clone(), *pos)),
        TypeAst::Tuple { elements, .. } => elements.iter().for_each(|e| element_types(e, out)),
    }
}

/// Attributes whose values the Python parser decodes, on any operator: integer lists,
/// integers, comparison directions, pad's padding and a convolution's window and labels.
const INT_LIST_ATTRIBUTES: &[&str] =
    &["dimensions", "lhs_contracting_dims", "rhs_contracting_dims", "lhs_batch_dims", "rhs_batch_dims", "dynamic_slice_sizes"];
const INT_ATTRIBUTES: &[&str] =
    &["iota_dimension", "index", "exponent_bits", "mantissa_bits", "feature_group_count", "batch_group_count"];

struct Builder<'a> {
    file: &'a str,
    computations: &'a [Computation],
}

fn int_of(word: &str) -> Option<i64> {
    word.parse::<i64>().ok()
}

/// A literal number as HLO prints it (`1`, `-2.5e-3`, `inf`, `-nan`, `true`).
fn number_of(word: &str) -> Option<f64> {
    match word {
        "true" => return Some(1.0),
        "false" => return Some(0.0),
        "inf" => return Some(f64::INFINITY),
        "-inf" => return Some(f64::NEG_INFINITY),
        "nan" | "-nan" => return Some(f64::NAN),
        _ => {}
    }
    word.parse::<f64>().ok()
}

impl<'a> Builder<'a> {
    fn err<T>(&self, pos: Pos, code: &'static str, message: impl Into<String>) -> Result<T, KernelError> {
        Err(KernelError {
            file: self.file.to_string(),
            line: pos.line,
            col: pos.col,
            kind: KernelErrorKind::of_code(code),
            code,
            message: message.into(),
        })
    }

    fn entry(&self) -> Result<&'a Computation, KernelError> {
        let entries: Vec<&Computation> = self.computations.iter().filter(|c| c.entry).collect();
        match entries.as_slice() {
            [one] => Ok(one),
            // As the Python checker: the kernel's computation is named, never guessed.
            [] => match self.computations.last() {
                Some(last) => self.err(
                    last.pos,
                    "missing-entry",
                    format!("no computation is marked ENTRY; write `ENTRY {}` for the kernel's computation", last.name),
                ),
                None => self.err(Pos { line: 1, col: 1 }, "missing-entry", "the module has no computation"),
            },
            [_, second, ..] => {
                self.err(second.pos, "duplicate-entry", "the module has more than one ENTRY computation")
            }
        }
    }

    /// An operand written with its type (`bf16[64,64]{1,0} %K`) must have that type.
    fn check_written(
        &self,
        written: &TypeAst,
        actual: &Ty,
        index: usize,
        user: &str,
        name: &str,
        pos: Pos,
    ) -> Result<(), KernelError> {
        let written = self.tensor_ty(written, "an operand")?;
        if written == *actual {
            return Ok(());
        }
        self.err(
            pos,
            "operand-type-mismatch",
            format!("operand {index} of `{user}` is written as {written}, but `{name}` is {actual}"),
        )
    }

    fn tensor_ty(&self, ast: &TypeAst, what: &str) -> Result<Ty, KernelError> {
        match ast {
            TypeAst::Tensor { dtype, dims, pos } => match DType::parse(dtype) {
                Some(d) => Ok(Ty::new(d, dims.clone())),
                None => self.err(*pos, "hlo-syntax", format!("unknown element type `{dtype}`")),
            },
            TypeAst::Tuple { pos, .. } => self.err(
                *pos,
                "unsupported-tuple",
                format!("{what} has the tuple type {ast}; only single tensors are supported"),
            ),
        }
    }

    fn int_list(&self, instr: &Instr, name: &str, required: bool) -> Result<Vec<i64>, KernelError> {
        let Some(attr) = instr.attr(name) else {
            if required {
                return self.err(
                    instr.opcode_pos,
                    "missing-attribute",
                    format!("`{}` needs the attribute {name}={{...}}", instr.opcode),
                );
            }
            return Ok(Vec::new());
        };
        // At the value that is not an integer, as the Python parser reports it.
        let Value::List(items, _) = &attr.value else {
            return self.err(
                attr.value.pos(),
                "hlo-syntax",
                format!("{name} must be a list of integers such as {{1,0}}, found {}", attr.value),
            );
        };
        items
            .iter()
            .map(|v| {
                let value = if let Value::Word(w, _) = v { int_of(w) } else { None };
                value.map_or_else(
                    || self.err(v.pos(), "hlo-syntax", format!("each entry of {name} must be an integer, found {v}")),
                    Ok,
                )
            })
            .collect()
    }

    /// The refusals of reading the text, over one computation: element types, parameter
    /// indices, literals where an operand name belongs, attributes given twice, and the
    /// values of the attributes with a meaning on any operator.
    fn decode(&self, comp: &Computation) -> Result<(), KernelError> {
        let known = |ast: &TypeAst| {
            let mut types = Vec::new();
            element_types(ast, &mut types);
            match types.into_iter().find(|(d, _)| DType::parse(d).is_none()) {
                Some((dtype, pos)) => self.err(pos, "hlo-syntax", format!("unknown element type `{dtype}`")),
                None => Ok(()),
            }
        };
        for instr in &comp.instrs {
            known(&instr.ty)?;
            if instr.opcode == "parameter" {
                let index = match instr.args.as_slice() {
                    [Arg::Literal(Value::Word(w, _))] => int_of(w).filter(|i| *i >= 0),
                    _ => None,
                };
                if index.is_none() {
                    let pos = instr.args.first().map_or(instr.opcode_pos, arg_pos);
                    return self.err(pos, "hlo-syntax", format!("parameter `{}` needs its index, as in parameter(0)", instr.name));
                }
            }
            if instr.opcode == "constant" {
                match instr.args.as_slice() {
                    [Arg::Literal(value)] => literal_words(value).or_else(|(pos, message)| self.err(pos, "hlo-syntax", message))?,
                    args => {
                        return self.err(
                            args.get(1).map_or(instr.opcode_pos, arg_pos),
                            "hlo-syntax",
                            format!("constant `{}` takes one literal value, as in constant(0) or constant({{1, 2}})", instr.name),
                        )
                    }
                }
            }
            for arg in &instr.args {
                let Arg::Operand { name, pos, declared } = arg else { continue };
                if !name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
                    return self.err(
                        *pos,
                        "hlo-syntax",
                        format!("expected an operand name in `{}`, found the literal {name} (only constant() takes a literal)", instr.name),
                    );
                }
                if let Some(t) = declared {
                    known(t)?;
                }
            }
            for (k, attr) in instr.attrs.iter().enumerate() {
                if instr.attrs[..k].iter().any(|a| a.name == attr.name) {
                    return self.err(attr.pos, "hlo-syntax", format!("attribute `{}` is given twice in `{}`", attr.name, instr.name));
                }
                let name = attr.name.as_str();
                if INT_LIST_ATTRIBUTES.contains(&name) {
                    self.int_list(instr, name, false)?;
                } else if INT_ATTRIBUTES.contains(&name) {
                    self.decode_word(instr, name, &[])?;
                } else if name == "direction" {
                    self.decode_word(instr, name, COMPARISON_DIRECTIONS)?;
                } else if name == "window" && (!written_tightly(&attr.value) || convolution::window_fields(&attr.value.to_string()).is_none()) {
                    return self.err(
                        attr.value.pos(),
                        "hlo-syntax",
                        format!("attribute window expects {{size=AxB stride=AxB pad=l_hxl_h lhs_dilate=AxB rhs_dilate=AxB}}, found {}", attr.value),
                    );
                } else if name == "dim_labels" && convolution::dim_labels(&attr.value.to_string()).is_none() {
                    return self.err(
                        attr.value.pos(),
                        "hlo-syntax",
                        format!("attribute dim_labels expects input_kernel->output labels, such as b01f_01io->b01f, found {}", attr.value),
                    );
                } else if name == "padding" {
                    let config = match &attr.value {
                        Value::Word(w, _) => infer::padding_config(w),
                        _ => None,
                    };
                    if config.is_none() {
                        return self.err(
                            attr.value.pos(),
                            "hlo-syntax",
                            format!("attribute padding expects low_high_interior per dimension joined by `x`, such as 0_0x1_2_0, found {}", attr.value),
                        );
                    }
                }
            }
        }
        Ok(())
    }

    /// A written attribute value that must be one of `allowed` (`direction`) or an integer
    /// (`allowed` empty: `iota_dimension`); a syntax error at the value otherwise.
    fn decode_word(&self, instr: &Instr, name: &str, allowed: &[&str]) -> Result<(), KernelError> {
        let Some(attr) = instr.attr(name) else { return Ok(()) };
        let ok = match &attr.value {
            Value::Word(w, _) if allowed.is_empty() => int_of(w).is_some(),
            Value::Word(w, _) => allowed.contains(&w.as_str()),
            _ => false,
        };
        if ok {
            return Ok(());
        }
        let wanted = if allowed.is_empty() { "an integer".to_string() } else { format!("one of {}", allowed.join(", ")) };
        self.err(attr.value.pos(), "hlo-syntax", format!("attribute {name} expects {wanted}, found {}", attr.value))
    }

    fn dims(&self, instr: &Instr, name: &str, required: bool) -> Result<Vec<usize>, KernelError> {
        let v = self.int_list(instr, name, required)?;
        if let Some(neg) = v.iter().find(|&&d| d < 0) {
            let pos = instr.attr(name).map_or(instr.opcode_pos, |a| a.pos);
            return self.err(pos, "bad-attribute", format!("{name} has the negative dimension {neg}"));
        }
        Ok(v.into_iter().map(|d| d as usize).collect())
    }

    fn slice_ranges(&self, instr: &Instr) -> Result<Vec<(i64, i64, i64)>, KernelError> {
        let Some(attr) = instr.attr("slice") else {
            return self.err(
                instr.opcode_pos,
                "missing-attribute",
                "`slice` needs the attribute slice={[start:limit], ...}",
            );
        };
        let bad = || {
            self.err(
                attr.pos,
                "hlo-syntax",
                format!("slice must be a list of [start:limit(:stride)] ranges, found {}", attr.value),
            )
        };
        let Value::List(items, _) = &attr.value else { return bad() };
        let mut out = Vec::new();
        for item in items {
            let Value::Range(parts, _) = item else { return bad() };
            let nums: Option<Vec<i64>> = parts.iter().map(|p| int_of(p)).collect();
            match nums.as_deref() {
                Some([s, l]) => out.push((*s, *l, 1)),
                Some([s, l, st]) => out.push((*s, *l, *st)),
                _ => return bad(),
            }
        }
        Ok(out)
    }

    fn literal(&self, instr: &Instr, ty: &Ty) -> Result<Literal, KernelError> {
        let Some(Arg::Literal(value)) = instr.args.first() else {
            return self.err(instr.opcode_pos, "hlo-syntax", "`constant` needs a literal, e.g. constant(0)");
        };
        /// Row-major values, the length of each nesting level, and the depth of the numbers
        /// (`None` when they are not all at one depth).
        struct Flat {
            values: Vec<f64>,
            shape: Vec<i64>,
            leaf_depth: Option<Option<usize>>,
            even: bool,
        }
        fn flatten(v: &Value, depth: usize, flat: &mut Flat) -> Result<(), (Pos, String)> {
            match v {
                Value::Word(w, p) => {
                    let x = number_of(w).ok_or((*p, format!("`{w}` is not a number")))?;
                    flat.values.push(x);
                    flat.leaf_depth = match flat.leaf_depth {
                        None => Some(Some(depth)),
                        Some(d) if d == Some(depth) => Some(d),
                        Some(_) => Some(None),
                    };
                    Ok(())
                }
                Value::List(items, _) => {
                    if flat.shape.len() <= depth {
                        flat.shape.push(items.len() as i64);
                    } else if flat.shape[depth] != items.len() as i64 {
                        flat.even = false;
                    }
                    items.iter().try_for_each(|i| flatten(i, depth + 1, flat))
                }
                other => Err((other.pos(), format!("`{other}` is not a literal"))),
            }
        }
        let mut flat = Flat { values: Vec::new(), shape: Vec::new(), leaf_depth: None, even: true };
        if let Err((pos, message)) = flatten(value, 0, &mut flat) {
            return self.err(pos, "hlo-syntax", message);
        }
        let one_depth = flat.leaf_depth.is_none_or(|d| d == Some(flat.shape.len()));
        if !flat.even || !one_depth {
            return self.err(value.pos(), "bad-attribute", "the literal's nested lists are ragged");
        }
        let Flat { values, shape, .. } = flat;
        let fits = if matches!(value, Value::List(..)) { shape == ty.shape } else { ty.shape.is_empty() };
        if !fits {
            return self.err(
                value.pos(),
                "bad-attribute",
                format!("the literal {value} does not have the declared shape {ty}"),
            );
        }
        if ty.dtype.is_int() || ty.dtype == DType::Pred {
            if let Some(bad) = values.iter().find(|v| v.fract() != 0.0 || !v.is_finite()) {
                return self.err(value.pos(), "bad-attribute", format!("{bad} is not a value of {}", ty.dtype));
            }
            // Literals are kept as f64: larger integers would no longer be told apart.
            if values.iter().any(|v| v.abs() >= 9007199254740992.0) {
                return self.err(
                    value.pos(),
                    "unsupported-constant",
                    "integer constants of magnitude 2^53 or more are not supported",
                );
            }
        }
        Ok(Literal::from_values(&values))
    }

    /// The reducer a `to_apply` computation applies: a single add/maximum/minimum/multiply of
    /// its two scalar parameters, which like its result have the init value's element type,
    /// and whether it takes its first parameter (the running value) first.
    /// `None` for any other region (`and`, `or`, a computation of several steps), once it has
    /// the signature of a reducer: two scalar parameters and a scalar result of that type.
    fn reducer(&self, instr: &Instr, dtype: DType) -> Result<Option<(Reducer, bool)>, KernelError> {
        let Some(attr) = instr.attr("to_apply") else {
            let message = format!("`{}` needs to_apply=<computation>", instr.opcode);
            return self.err(instr.opcode_pos, "missing-attribute", message);
        };
        let name = attr.value.to_string();
        let name = name.strip_prefix('%').unwrap_or(&name);
        let Some(comp) = self.computations.iter().find(|c| c.name == name && !c.entry) else {
            let what = if self.computations.iter().any(|c| c.name == name) { "is the ENTRY computation" } else { "is not defined" };
            return self.err(attr.pos, "unknown-computation", format!("computation `{name}` {what}"));
        };
        let scalar = Ty::new(dtype, Vec::new());
        let is_scalar = |i: &Instr| matches!(self.tensor_ty(&i.ty, "a reducer value"), Ok(t) if t == scalar);
        // The checker's rule for any region (its instructions are typed where it is defined).
        let general = || -> Result<Option<(Reducer, bool)>, KernelError> {
            let params: Vec<&Instr> = comp.instrs.iter().filter(|i| i.opcode == "parameter").collect();
            let root = comp.instrs.iter().find(|i| i.root);
            let fits = params.len() == 2 && params.iter().all(|p| is_scalar(p)) && root.is_none_or(is_scalar);
            if comp.instrs.is_empty() || fits {
                return Ok(None);
            }
            self.err(
                attr.pos,
                "reducer-signature",
                format!("reducer `{name}` must take two {scalar} parameters and return {scalar}"),
            )
        };
        let params: HashMap<&str, i64> = comp
            .instrs
            .iter()
            .filter(|i| i.opcode == "parameter")
            .filter_map(|i| match i.args.first() {
                Some(Arg::Literal(Value::Word(w, _))) => int_of(w).map(|k| (i.name.as_str(), k)),
                _ => None,
            })
            .collect();
        let root = comp.instrs.iter().find(|i| i.root).or(comp.instrs.last());
        let Some(root) = root else { return general() };
        let reducer = match root.opcode.as_str() {
            "add" => Reducer::Add,
            "maximum" => Reducer::Max,
            "minimum" => Reducer::Min,
            "multiply" => Reducer::Mul,
            _ => return general(),
        };
        let mut idx: Vec<i64> = root
            .args
            .iter()
            .filter_map(|a| match a {
                Arg::Operand { name, .. } => params.get(name.as_str()).copied(),
                Arg::Literal(_) => None,
            })
            .collect();
        let running_first = idx == [0, 1];
        idx.sort_unstable();
        if idx != [0, 1] || root.args.len() != 2 || comp.instrs.len() != 3 {
            return general();
        }
        // The region's own instruction is typed first (it comes before its use in the text).
        let param_tys = root
            .args
            .iter()
            .filter_map(|a| match a {
                Arg::Operand { name, .. } => comp.instrs.iter().find(|i| &i.name == name),
                Arg::Literal(_) => None,
            })
            .map(|i| self.tensor_ty(&i.ty, "a reducer value"))
            .collect::<Result<Vec<Ty>, KernelError>>()?;
        let root_ty = self.tensor_ty(&root.ty, "a reducer value")?;
        let root_op = Op::Other { name: root.opcode.clone(), attrs: String::new() };
        if let Err(e) = infer::check(&root_op, &param_tys.iter().collect::<Vec<&Ty>>(), &root_ty) {
            return self.type_err(root, e);
        }
        if !comp.instrs.iter().all(is_scalar) {
            return self.err(
                attr.pos,
                "reducer-signature",
                format!("reducer `{name}` must take two {scalar} parameters and return {scalar}"),
            );
        }
        Ok(Some((reducer, running_first)))
    }

    fn build(&self, name: String, entry: &Computation) -> Result<Kernel, KernelError> {
        let mut nodes: Vec<KernelNode> = Vec::new();
        let Added { root, results, params } = self.computation(entry, None, &mut nodes)?;
        let param_nodes = params.iter().map(|p| p.expect("no parameter index is missing, as checked above")).collect::<Vec<usize>>();
        Ok(Kernel {
            name,
            file: self.file.to_string(),
            params: param_nodes.iter().map(|&k| nodes[k].ty.clone()).collect(),
            outputs: results.iter().map(|&k| nodes[k].ty.clone()).collect(),
            nodes,
            param_nodes,
            results,
            root,
        })
    }

    /// Adds the nodes of `comp` to `nodes` and says which are its ROOT, results and parameters.
    /// `bound` is `None` for the kernel's own computation, whose parameters become parameter
    /// nodes, and a call's operands for a computation inlined where it is applied, whose
    /// parameters are those operands.
    fn computation(
        &self,
        comp: &Computation,
        bound: Option<&[usize]>,
        nodes: &mut Vec<KernelNode>,
    ) -> Result<Added, KernelError> {
        let mut by_name: HashMap<String, usize> = HashMap::new();
        let later: HashMap<&str, Pos> = comp.instrs.iter().map(|i| (i.name.as_str(), i.pos)).collect();
        let mut params: Vec<Option<usize>> = Vec::new();
        let mut root = None;
        // What is wrong with the computation as a whole is reported at its name, before its
        // instructions, as the checker orders it.
        let param_index = |i: &Instr| match (i.opcode.as_str(), i.args.as_slice()) {
            ("parameter", [Arg::Literal(Value::Word(w, _))]) => int_of(w),
            _ => None,
        };
        if comp.instrs.is_empty() {
            return self.err(comp.pos, "missing-root", format!("computation `{}` has no instructions", comp.name));
        }
        if !comp.instrs.iter().any(|i| i.root) {
            return self.err(
                comp.pos,
                "missing-root",
                format!("computation `{}` has no ROOT instruction; mark the one whose value it returns", comp.name),
            );
        }
        let mut indices: Vec<i64> = comp.instrs.iter().filter_map(param_index).collect();
        indices.sort_unstable();
        indices.dedup();
        if let Some(missing) = (0..indices.len() as i64).find(|k| indices.binary_search(k).is_err()) {
            return self.err(comp.pos, "missing-parameter", format!("parameter({missing}) is missing"));
        }
        let mut tuple_root: Option<(&Instr, Vec<usize>)> = None;
        for instr in &comp.instrs {
            if by_name.contains_key(&instr.name) || tuple_root.as_ref().is_some_and(|(t, _)| t.name == instr.name) {
                return self.err(instr.pos, "duplicate-instruction", format!("`{}` is defined twice", instr.name));
            }
            if bound.is_none() && instr.root && OpCode::parse(&instr.opcode) == Some(OpCode::Tuple) {
                if root.is_some() {
                    return self.err(instr.pos, "duplicate-root", "more than one instruction is marked ROOT");
                }
                tuple_root = Some((instr, self.tuple_results(instr, &by_name, &later, nodes)?));
                continue;
            }
            let is_root = instr.root;
            let reduces = matches!(OpCode::parse(&instr.opcode), Some(OpCode::Reduce | OpCode::ReduceWindow));
            if matches!(instr.ty, TypeAst::Tuple { .. }) && reduces {
                return self.err(
                    instr.ty.pos(),
                    "variadic-reduce",
                    format!("{} `{}` is declared {}: a variadic reduce is not supported", instr.opcode, instr.name, instr.ty),
                );
            }
            let ty = self.tensor_ty(&instr.ty, if is_root && bound.is_none() { "the kernel's output" } else { "a value" })?;
            let code = self.opcode(instr)?;
            let mut operands = Vec::new();
            for arg in &instr.args {
                if let Arg::Operand { name, pos, declared } = arg {
                    match by_name.get(name) {
                        Some(&k) => {
                            if let Some(written) = declared {
                                self.check_written(written, &nodes[k].ty, operands.len(), &instr.name, name, *pos)?;
                            }
                            operands.push(k);
                        }
                        None if later.contains_key(name.as_str()) => {
                            return self.err(
                                *pos,
                                "undefined-operand",
                                format!("operand `{name}` is used before it is defined"),
                            )
                        }
                        None => {
                            return self.err(
                                *pos,
                                "undefined-operand",
                                format!("operand `{name}` is not defined"),
                            )
                        }
                    }
                }
            }
            if code == OpCode::Call {
                // The called computation's nodes, its parameters bound to the operands: the
                // call's value is its ROOT's.
                let value = self.inline_call(instr, &ty, &operands, nodes)?;
                if is_root {
                    if root.is_some() || tuple_root.is_some() {
                        return self.err(instr.pos, "duplicate-root", "more than one instruction is marked ROOT");
                    }
                    root = Some(value);
                }
                by_name.insert(instr.name.clone(), value);
                continue;
            }
            let (op, operands) = self.operator(instr, code, &ty, operands, nodes)?;
            let operand_tys: Vec<&Ty> = operands.iter().map(|&k| &nodes[k].ty).collect();
            if let Err(e) = infer::check(&op, &operand_tys, &ty) {
                return self.type_err(instr, e);
            }
            // In an inlined computation a parameter is the call's operand, not a node.
            let mut value = nodes.len();
            if let Op::Parameter(i) = op {
                if params.len() <= i {
                    params.resize(i + 1, None);
                }
                if params[i].is_some() {
                    let pos = match instr.args.first() {
                        Some(Arg::Literal(v)) => v.pos(),
                        _ => instr.pos,
                    };
                    return self.err(pos, "duplicate-parameter", format!("parameter {i} is declared twice"));
                }
                if let Some(args) = bound {
                    value = *args.get(i).expect("the call passes one operand per parameter, as checked where it is applied");
                }
                params[i] = Some(value);
            }
            if is_root {
                if root.is_some() || tuple_root.is_some() {
                    return self.err(instr.pos, "duplicate-root", "more than one instruction is marked ROOT");
                }
                root = Some(value);
            }
            by_name.insert(instr.name.clone(), value);
            if value < nodes.len() {
                continue;
            }
            nodes.push(KernelNode {
                name: instr.name.clone(),
                op,
                ty,
                operands,
                line: instr.pos.line,
                col: instr.pos.col,
                text: instr.text.clone(),
            });
        }
        let (root, results) = match tuple_root {
            Some((tuple, results)) => (results::bytes_end_to_end(nodes, &results, tuple), results),
            None => {
                let root = root.expect("a ROOT was found above");
                (root, vec![root])
            }
        };
        Ok(Added { root, results, params })
    }

    /// The nodes a tuple ROOT returns: tensors defined before it, of the types it declares.
    fn tuple_results(
        &self,
        tuple: &Instr,
        by_name: &HashMap<String, usize>,
        later: &HashMap<&str, Pos>,
        nodes: &[KernelNode],
    ) -> Result<Vec<usize>, KernelError> {
        let elements = match &tuple.ty {
            TypeAst::Tuple { elements, .. } if !elements.is_empty() => elements,
            TypeAst::Tuple { pos, .. } => {
                return self.err(*pos, "unsupported-tuple", "the kernel's output is an empty tuple")
            }
            TypeAst::Tensor { pos, .. } => {
                return self.err(
                    *pos,
                    "declared-type-mismatch",
                    format!("tuple `{}` is declared {}, which is not a tuple", tuple.name, tuple.ty),
                )
            }
        };
        let declared: Vec<Ty> = elements
            .iter()
            .map(|e| self.tensor_ty(e, "an element of the kernel's output"))
            .collect::<Result<_, _>>()?;
        let mut results = Vec::new();
        for arg in &tuple.args {
            let Arg::Operand { name, pos, declared: written } = arg else {
                return self.err(arg_pos(arg), "hlo-syntax", "the elements of a tuple are values, not literals");
            };
            let Some(&k) = by_name.get(name) else {
                let message = if later.contains_key(name.as_str()) {
                    format!("operand `{name}` is used before it is defined")
                } else {
                    format!("operand `{name}` is not defined")
                };
                return self.err(*pos, "undefined-operand", message);
            };
            if let Some(written) = written {
                self.check_written(written, &nodes[k].ty, results.len(), &tuple.name, name, *pos)?;
            }
            results.push(k);
        }
        let produced: Vec<&Ty> = results.iter().map(|&k| &nodes[k].ty).collect();
        if declared.iter().ne(produced.iter().copied()) {
            let produced: Vec<String> = produced.iter().map(|t| t.to_string()).collect();
            return self.err(
                tuple.ty.pos(),
                "declared-type-mismatch",
                format!("tuple `{}` is declared {} but produces ({})", tuple.name, tuple.ty, produced.join(", ")),
            );
        }
        Ok(results)
    }

    /// A `call`, inlined: the computation it applies is checked against its operands (as the
    /// checker types a call) and its nodes are added with its parameters bound to them;
    /// returns the node of its ROOT. Errors inside it are reported where its text says them.
    /// Recursion was refused before any computation was built ([`Builder::recursion`]).
    fn inline_call(&self, instr: &Instr, ty: &Ty, operands: &[usize], nodes: &mut Vec<KernelNode>) -> Result<usize, KernelError> {
        let callee = self.applied(instr)?;
        let mut params: Vec<&Instr> = callee.instrs.iter().filter(|i| i.opcode == "parameter").collect();
        params.sort_by_key(|p| match p.args.first() {
            Some(Arg::Literal(Value::Word(w, _))) => int_of(w),
            _ => None,
        });
        if params.len() != operands.len() {
            return self.err(
                instr.opcode_pos,
                "operand-count",
                format!(
                    "call `{}` passes {} operands to `{}`, which takes {}",
                    instr.name,
                    operands.len(),
                    callee.name,
                    params.len()
                ),
            );
        }
        let operand_pos: Vec<Pos> = instr
            .args
            .iter()
            .filter_map(|a| match a {
                Arg::Operand { pos, .. } => Some(*pos),
                Arg::Literal(_) => None,
            })
            .collect();
        for (k, (param, &operand)) in params.iter().zip(operands).enumerate() {
            let param_ty = self.tensor_ty(&param.ty, "a parameter")?;
            if param_ty != nodes[operand].ty {
                return self.err(
                    operand_pos.get(k).copied().unwrap_or(instr.pos),
                    "operand-type-mismatch",
                    format!(
                        "operand {k} of call `{}` is {}, but parameter {k} of `{}` is {param_ty}",
                        instr.name, nodes[operand].ty, callee.name
                    ),
                );
            }
        }
        let root = self.computation(callee, Some(operands), nodes)?.root;
        if nodes[root].ty != *ty {
            return self.err(
                instr.ty.pos(),
                "declared-type-mismatch",
                format!("call `{}` is declared {ty} but produces {}", instr.name, nodes[root].ty),
            );
        }
        Ok(root)
    }

    /// The computation a `call` applies (its `to_apply`), which is not the entry.
    fn applied(&self, instr: &Instr) -> Result<&'a Computation, KernelError> {
        let Some(attr) = instr.attr("to_apply") else {
            return self.err(instr.opcode_pos, "missing-attribute", format!("call `{}` needs to_apply=<computation>", instr.name));
        };
        let name = attr.value.to_string();
        let name = name.strip_prefix('%').unwrap_or(&name);
        match self.computations.iter().find(|c| c.name == name) {
            Some(c) if !c.entry => Ok(c),
            Some(_) => self.err(attr.pos, "unknown-computation", format!("call `{}` applies the ENTRY computation `{name}`", instr.name)),
            None => self.err(attr.pos, "unknown-computation", format!("call `{}` applies computation `{name}`, which is not defined", instr.name)),
        }
    }

    /// A computation may not apply itself, directly or through others: the first such
    /// application by position, found as the checker finds them (depth first from each
    /// computation in text order, over every `to_apply`).
    fn recursion(&self) -> Result<(), KernelError> {
        fn applied(instr: &Instr) -> Option<(String, Pos)> {
            let attr = instr.attr("to_apply")?;
            let name = attr.value.to_string();
            Some((name.strip_prefix('%').unwrap_or(&name).to_string(), attr.pos))
        }
        #[derive(PartialEq)]
        enum State {
            Open,
            Closed,
        }
        fn visit<'c>(
            comp: &'c Computation,
            all: &'c [Computation],
            state: &mut HashMap<&'c str, State>,
            found: &mut Vec<(Pos, String)>,
        ) {
            state.insert(&comp.name, State::Open);
            for instr in &comp.instrs {
                let Some((callee, pos)) = applied(instr) else { continue };
                // Applying the entry is refused as such where it is written, and first.
                if all.iter().any(|c| c.entry && c.name == callee) {
                    continue;
                }
                match (state.get(callee.as_str()), all.iter().find(|c| c.name == callee)) {
                    (Some(State::Open), _) => found.push((
                        pos,
                        format!(
                            "`{}` applies computation `{callee}`, which is already being applied: computations may not be recursive",
                            instr.name
                        ),
                    )),
                    (None, Some(next)) => visit(next, all, state, found),
                    _ => {}
                }
            }
            state.insert(&comp.name, State::Closed);
        }
        let mut state = HashMap::new();
        let mut found = Vec::new();
        for comp in self.computations {
            if !state.contains_key(comp.name.as_str()) {
                visit(comp, self.computations, &mut state, &mut found);
            }
        }
        match found.into_iter().min_by_key(|(pos, _)| (pos.line, pos.col)) {
            Some((pos, message)) => self.err(pos, "recursive-call", message),
            None => Ok(()),
        }
    }

    /// The operator an instruction names, if kernels may use it.
    fn opcode(&self, instr: &Instr) -> Result<OpCode, KernelError> {
        let Some(code) = OpCode::parse(&instr.opcode) else {
            return self.err(
                instr.opcode_pos,
                "unknown-operator",
                format!("unknown operator `{}`", instr.opcode),
            );
        };
        let info = code.info();
        // A call is inlined; the other structural operators (tuple, get-tuple-element) are not.
        if !info.kernels || (info.family == Family::Structural && code != OpCode::Call) {
            return self.err(
                instr.opcode_pos,
                "unsupported-operator",
                format!("`{}` is not supported in kernels: write the kernel as one computation over tensors", instr.opcode),
            );
        }
        Ok(code)
    }

    /// A type error of `instr`, at the part of the text it names, under its code.
    fn type_err<T>(&self, instr: &Instr, e: infer::TypeError) -> Result<T, KernelError> {
        let pos = match e.site {
            Site::Opcode => instr.opcode_pos,
            Site::Declared => instr.ty.pos(),
            Site::Attr(name) => instr.attr(name).map_or(instr.opcode_pos, |a| a.pos),
            Site::Operand(i) => instr
                .args
                .iter()
                .filter_map(|a| match a {
                    Arg::Operand { pos, .. } => Some(*pos),
                    Arg::Literal(_) => None,
                })
                .nth(i)
                .unwrap_or(instr.opcode_pos),
        };
        self.err(pos, e.code, format!("`{}`: {}", instr.name, e.message))
    }

    /// Type-checks the instruction as written, before a normalisation changes its operands.
    fn check_as_written(&self, instr: &Instr, op: &Op, operands: &[usize], nodes: &[KernelNode], ty: &Ty) -> Result<(), KernelError> {
        let tys: Vec<&Ty> = operands.iter().map(|&k| &nodes[k].ty).collect();
        infer::check(op, &tys, ty).or_else(|e| self.type_err(instr, e))
    }

    /// Decodes the operator and its attributes; may rewrite the operand list (reduce with a
    /// zero init drops it; select of compare takes the compared values).
    fn operator(
        &self,
        instr: &Instr,
        code: OpCode,
        ty: &Ty,
        operands: Vec<usize>,
        nodes: &[KernelNode],
    ) -> Result<(Op, Vec<usize>), KernelError> {
        // The operand count is checked before the attributes are read, as the checker does.
        let fixed = match code {
            OpCode::Transpose | OpCode::Broadcast | OpCode::Slice | OpCode::ReduceAdd => Some(1),
            OpCode::Dot => Some(2),
            _ => None,
        };
        if let Some(n) = fixed {
            let tys: Vec<&Ty> = operands.iter().map(|&k| &nodes[k].ty).collect();
            infer::arity(code.name(), &tys, n).or_else(|e| self.type_err(instr, e))?;
        }
        let op = match code {
            OpCode::Parameter => match instr.args.as_slice() {
                [Arg::Literal(Value::Word(w, _))] if int_of(w).is_some_and(|i| i >= 0) => {
                    Op::Parameter(int_of(w).unwrap_or(0) as usize)
                }
                _ => {
                    return self.err(
                        instr.args.first().map_or(instr.opcode_pos, arg_pos),
                        "hlo-syntax",
                        "`parameter` needs its index, e.g. parameter(0)",
                    )
                }
            },
            OpCode::Constant => Op::Constant(self.literal(instr, ty)?),
            OpCode::Transpose => Op::Transpose(self.dims(instr, "dimensions", true)?),
            OpCode::Broadcast => Op::Broadcast(self.dims(instr, "dimensions", true)?),
            OpCode::Slice => Op::Slice(self.slice_ranges(instr)?),
            OpCode::Concatenate => {
                let d = self.dims(instr, "dimensions", true)?;
                if d.len() != 1 {
                    let pos = instr.attr("dimensions").map_or(instr.opcode_pos, |a| a.pos);
                    return self.err(pos, "bad-attribute", "concatenate takes exactly one dimension");
                }
                Op::Concatenate(d[0])
            }
            OpCode::Dot => Op::Dot(DotDims {
                lhs_contracting: self.dims(instr, "lhs_contracting_dims", false)?,
                rhs_contracting: self.dims(instr, "rhs_contracting_dims", false)?,
                lhs_batch: self.dims(instr, "lhs_batch_dims", false)?,
                rhs_batch: self.dims(instr, "rhs_batch_dims", false)?,
            }),
            OpCode::Reduce => {
                if operands.len() != 2 {
                    return self.err(
                        instr.opcode_pos,
                        "variadic-reduce",
                        format!(
                            "a reduce of {} operands is not supported; reduce one tensor with one init value",
                            operands.len()
                        ),
                    );
                }
                let dims = self.dims(instr, "dimensions", true)?;
                // The operands are typed before the reducer is read, as the Python checker
                // does; which reducer it is does not change the type.
                let as_written = Op::Reduce { dims: dims.clone(), reducer: Reducer::Add };
                self.check_as_written(instr, &as_written, &operands, nodes, ty)?;
                let Some((reducer, _)) = self.reducer(instr, nodes[operands[1]].ty.dtype)? else {
                    // A region no instruction semantics names (and, or, several steps): the
                    // reduce is kept by name with its attributes, so that selection names it.
                    return Ok((self.opaque(instr), operands));
                };
                let reduce = Op::Reduce { dims: dims.clone(), reducer };
                let init_is_zero =
                    matches!(&nodes[operands[1]].op, Op::Constant(l) if l.splat().map(f64::to_bits) == Some(0));
                if reducer == Reducer::Add && init_is_zero {
                    return Ok((Op::ReduceAdd(dims), vec![operands[0]]));
                }
                reduce
            }
            OpCode::ReduceAdd => Op::ReduceAdd(self.dims(instr, "dimensions", true)?),
            OpCode::ReduceWindow => {
                let window = self.opaque(instr);
                self.check_as_written(instr, &window, &operands, nodes, ty)?;
                let Some((reducer, running_first)) = self.reducer(instr, nodes[operands[1]].ty.dtype)? else {
                    // Another region: kept by name, so that selection names it.
                    return Ok((window, operands));
                };
                let Op::Other { name, attrs } = window else { unreachable!("opaque operators are Other") };
                let fold = reduce_window::Fold { reducer, running_first };
                Op::Other { name, attrs: format!("{attrs}, {}", fold.attribute()) }
            }
            OpCode::Compare => {
                self.decode_word(instr, "direction", COMPARISON_DIRECTIONS)?;
                self.opaque(instr)
            }
            OpCode::Iota => {
                self.decode_word(instr, "iota_dimension", &[])?;
                self.opaque(instr)
            }
            OpCode::Select => {
                let select = self.opaque(instr);
                self.check_as_written(instr, &select, &operands, nodes, ty)?;
                if let Some(sel) = select_of_compare(&operands, nodes, ty) {
                    return Ok(sel);
                }
                select
            }
            // Operators without attributes that instruction semantics can contain map to their
            // e-graph operator; the others (tanh, log...) are kept by name so that selection can
            // say which one found no instruction.
            other => Op::plain(other).unwrap_or_else(|| self.opaque(instr)),
        };
        Ok((op, operands))
    }

    /// An operator kept by name; `_` and `-` are one (the table spells names either way).
    fn opaque(&self, instr: &Instr) -> Op {
        let attrs: Vec<String> = instr
            .attrs
            .iter()
            .filter(|a| !GENERIC_KERNEL_ATTRIBUTES.contains(&a.name.as_str()))
            .map(|a| format!("{}={}", a.name, a.value))
            .collect();
        Op::Other { name: instr.opcode.replace('_', "-"), attrs: attrs.join(", ") }
    }
}

/// Whether every `=` inside `value` (a window's `size=3x3`) touches the words on both sides,
/// as XLA's lexer reads an attribute name with its `=`.
fn written_tightly(value: &Value) -> bool {
    let words: Vec<(&str, Pos)> = match value {
        Value::List(items, _) => items
            .iter()
            .flat_map(|item| match item {
                Value::Seq(parts, _) => parts.iter().collect::<Vec<_>>(),
                other => vec![other],
            })
            .filter_map(|v| match v {
                Value::Word(w, p) => Some((w.as_str(), *p)),
                _ => None,
            })
            .collect(),
        _ => return true,
    };
    words.windows(3).all(|w| {
        let [(key, k), ("=", eq), (_, v)] = w else { return true };
        k.line == eq.line && eq.line == v.line && k.col + key.chars().count() == eq.col && eq.col + 1 == v.col
    })
}

/// `select(compare(a, b, dir), t, f)` as `select_lt` / `select_eq_var`, for the directions
/// where that is exact (LE and GE only on integers: with NaN they are not negations of LT).
fn select_of_compare(operands: &[usize], nodes: &[KernelNode], ty: &Ty) -> Option<(Op, Vec<usize>)> {
    let [p, t, f] = operands else { return None };
    let pred = &nodes[*p];
    let Op::Other { name, attrs } = &pred.op else { return None };
    if name != "compare" || pred.ty.shape != ty.shape {
        return None;
    }
    let [a, b] = pred.operands.as_slice() else { return None };
    let direction = crate::lang::attribute(attrs, "direction")?;
    // A non-default comparison type (TOTALORDER) orders -0 and NaN differently.
    if attrs
        .split(", ")
        .any(|kv| kv.starts_with("type=") && !matches!(kv, "type=FLOAT" | "type=SIGNED" | "type=UNSIGNED"))
    {
        return None;
    }
    let integer = !nodes[*a].ty.dtype.is_float();
    let (a, b, t, f) = (*a, *b, *t, *f);
    Some(match direction {
        "LT" => (Op::SelectLt, vec![a, b, t, f]),
        "GT" => (Op::SelectLt, vec![b, a, t, f]),
        "EQ" => (Op::SelectEqVar, vec![a, b, t, f]),
        "NE" => (Op::SelectEqVar, vec![a, b, f, t]),
        "GE" if integer => (Op::SelectLt, vec![a, b, f, t]),
        "LE" if integer => (Op::SelectLt, vec![b, a, f, t]),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: &str = "HloModule small\n\
        %sum (x: f32[], y: f32[]) -> f32[] {\n  %x = f32[] parameter(0)\n  %y = f32[] parameter(1)\n  ROOT %s = f32[] add(f32[] %x, f32[] %y)\n}\n\
        %max (x: f32[], y: f32[]) -> f32[] {\n  %x = f32[] parameter(0)\n  %y = f32[] parameter(1)\n  ROOT %s = f32[] maximum(%y, %x)\n}\n\
        ENTRY %e (a: f32[4,8]) -> f32[4] {\n  %a = f32[4,8]{1,0} parameter(0)\n  %z = f32[] constant(0)\n  \
        %m = f32[] constant(-inf)\n  %r = f32[4]{0} reduce(f32[4,8]{1,0} %a, f32[] %z), dimensions={1}, to_apply=%sum\n  \
        %q = f32[4]{0} reduce(%a, %m), dimensions={1}, to_apply=%max\n  ROOT %o = f32[4] add(%r, %q)\n}\n";

    #[test]
    fn reduce_with_zero_init_and_add_is_reduce_add() {
        let k = parse_kernel(SMALL, "small.hlo").unwrap();
        assert_eq!(k.name, "small");
        assert_eq!(k.params, vec![Ty::new(DType::F32, vec![4, 8])]);
        let r = k.nodes.iter().find(|n| n.name == "r").unwrap();
        assert_eq!(r.op, Op::ReduceAdd(vec![1]));
        assert_eq!(r.operands.len(), 1);
        let q = k.nodes.iter().find(|n| n.name == "q").unwrap();
        assert_eq!(q.op, Op::Reduce { dims: vec![1], reducer: Reducer::Max });
        assert_eq!(q.operands.len(), 2);
        assert_eq!(k.nodes[k.root].name, "o");
    }

    fn error_of(text: &str) -> KernelError {
        parse_kernel(text, "k.hlo").unwrap_err()
    }

    #[test]
    fn errors_name_file_line_and_column() {
        let e = error_of("HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n  ROOT q = f32[4] frobnicate(p)\n}\n");
        assert_eq!(e.kind, KernelErrorKind::UnknownOperator);
        assert_eq!(e.to_string(), "k.hlo:4:19: unknown operator `frobnicate`");
        let e = error_of("HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n  ROOT q = f32[4] add(p, r)\n}\n");
        assert_eq!(e.kind, KernelErrorKind::UndefinedOperand);
        assert_eq!(e.to_string(), "k.hlo:4:26: operand `r` is not defined");
        let e = error_of("HloModule m\nENTRY e {\n  p = f32[4,2] parameter(0)\n  ROOT q = f32[4,2] transpose(p), dimensions={1,0}\n}\n");
        assert_eq!(e.kind, KernelErrorKind::Shape);
        assert!(
            e.to_string().starts_with("k.hlo:4:12: `q`: declared type f32[4,2] but transpose produces f32[2,4]"),
            "{e}"
        );
        let e = error_of(
            "HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n  t = (f32[4], f32[4]) tuple(p, p)\n  ROOT q = f32[4] copy(p)\n}\n",
        );
        assert_eq!(e.kind, KernelErrorKind::Unsupported);
        assert_eq!((e.line, e.col), (4, 7));
        let e = error_of("HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n  ROOT q = f32[4] add(p p)\n}\n");
        assert_eq!(e.kind, KernelErrorKind::Syntax);
    }

    #[test]
    fn literals_fill_their_declared_shape() {
        let k = parse_kernel(
            "HloModule m\nENTRY e {\n  a = f32[2,2] constant({ {1, 2.5}, {-inf, 4} })\n  \
             b = pred[] constant(true)\n  p = f32[2,2] parameter(0)\n  ROOT c = f32[2,2] add(a, p)\n}\n",
            "m.hlo",
        )
        .unwrap();
        let Op::Constant(lit) = &k.nodes[0].op else { panic!("not a constant") };
        assert_eq!(lit.values().collect::<Vec<_>>(), vec![1.0, 2.5, f64::NEG_INFINITY, 4.0]);
        assert!(matches!(&k.nodes[1].op, Op::Constant(l) if l.splat() == Some(1.0)));
        let ragged =
            parse_kernel("HloModule m\nENTRY e {\n  ROOT a = f32[2,2] constant({ {1, 2}, {3} })\n}\n", "m.hlo");
        assert_eq!(ragged.unwrap_err().to_string(), "m.hlo:3:30: the literal's nested lists are ragged");
        let mixed = parse_kernel("HloModule m\nENTRY e {\n  ROOT a = f32[2] constant({1, {2}})\n}\n", "m.hlo");
        assert_eq!(mixed.unwrap_err().code, "bad-attribute");
        let wrong = parse_kernel("HloModule m\nENTRY e {\n  ROOT a = f32[3] constant({1, 2})\n}\n", "m.hlo");
        assert_eq!(wrong.unwrap_err().kind, KernelErrorKind::Shape);
        let huge = parse_kernel("HloModule m\nENTRY e {\n  ROOT a = s64[] constant(9007199254740993)\n}\n", "m.hlo");
        assert_eq!(huge.unwrap_err().kind, KernelErrorKind::Unsupported);
        let fraction = parse_kernel("HloModule m\nENTRY e {\n  ROOT a = s32[] constant(1.5)\n}\n", "m.hlo");
        assert_eq!(fraction.unwrap_err().to_string(), "m.hlo:3:27: 1.5 is not a value of s32");
    }

    #[test]
    fn select_of_compare_becomes_select_lt() {
        let k = parse_kernel(
            "HloModule m\nENTRY e {\n  a = f32[4] parameter(0)\n  b = f32[4] parameter(1)\n  \
             c = pred[4] compare(a, b), direction=GT\n  ROOT s = f32[4] select(c, a, b)\n}\n",
            "m.hlo",
        )
        .unwrap();
        let s = &k.nodes[k.root];
        assert_eq!(s.op, Op::SelectLt);
        assert_eq!(s.operands, vec![1, 0, 0, 1]);
        // GE on floats is not a negated LT (NaN): kept as an opaque select.
        let k = parse_kernel(
            "HloModule m\nENTRY e {\n  a = f32[4] parameter(0)\n  b = f32[4] parameter(1)\n  \
             c = pred[4] compare(a, b), direction=GE\n  ROOT s = f32[4] select(c, a, b)\n}\n",
            "m.hlo",
        )
        .unwrap();
        assert!(matches!(&k.nodes[k.root].op, Op::Other { name, .. } if name == "select"));
    }
}
