//! Memory allocation of a scheduled candidate: builds the placement request of
//! docs/architecture.md 5.2 (CSP1-CSP4), hands it to the C++ allocator through `act_allocate`,
//! and reads the addressing attributes of every step out of the answer.
//!
//! Variables: every addressing attribute of every step; the start of every value along each
//! access dimension; for buffers with several access dimensions, the row-major flattened
//! start, whose block conservatively covers the bounding range of the slice. Equalities tie
//! each producer's output start and each consumer's input start to the value's start. Views
//! and parts of concatenations have no block of their own: their starts are the start of the
//! storage they lie in plus their offset, and that storage's block spans all their lifetimes.
//! Constants are scratch HBM that lives for the whole program.

use crate::isa::{floor_div, Affine, CmpOp, Constraint, Expr, Instruction, Isa, Slice};
use crate::layout::HbmLayout;
use crate::pii::{PiiGraph, PiiNode};
use crate::schedule::Schedule;
use crate::value::{CandidateError, Value};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::ffi::{c_char, c_int, CStr, CString};
use std::fmt;

extern "C" {
    fn act_allocate(request_json: *const c_char, response_json: *mut *mut c_char) -> c_int;
    fn act_allocate_free(response_json: *mut c_char);
}

/// The solver's budget. Deterministic time decides the answer, so a given request gets the
/// same answer on any machine.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Limits {
    pub max_deterministic_time: f64,
    pub random_seed: i32,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_deterministic_time: 10.0, random_seed: 0 }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Variable {
    pub name: String,
    pub lo: i64,
    pub hi: i64,
}

/// `sum(coef * var) + const == 0`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Equality {
    pub terms: Vec<(usize, i64)>,
    #[serde(rename = "const")]
    pub constant: i64,
}

/// A value occupying `[start, start + size)` of `buffer` during `[time.0, time.1)`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Block {
    pub buffer: String,
    pub capacity: Option<i64>,
    pub start: usize,
    pub size: i64,
    pub time: (i64, i64),
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Request {
    pub variables: Vec<Variable>,
    pub equalities: Vec<Equality>,
    pub blocks: Vec<Block>,
    pub objective: Vec<(usize, i64)>,
    pub limits: Limits,
}

/// A request together with what is needed to read its answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub request: Request,
    /// Per step, the variable of each addressing attribute (in `addr_attrs` order).
    pub step_vars: Vec<Vec<usize>>,
    /// Start variable and size of every HBM block, for the end of HBM in use.
    hbm_blocks: Vec<(usize, i64)>,
    /// Constant nodes and their start variables, in node order.
    constant_vars: Vec<(usize, usize)>,
}

/// The result of preparing a request: a plan, or a proof by counting that none can exist.
#[derive(Debug, Clone, PartialEq)]
pub enum Prepared {
    Plan(Plan),
    Infeasible(String),
}

/// Addresses chosen for every step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// Per step, the value of each addressing attribute (in `addr_attrs` order).
    pub addrs: Vec<Vec<i64>>,
    /// One past the highest HBM byte in use.
    pub hbm_end: i64,
    /// Constant nodes and where in d0 each is placed, in node order.
    pub constants: Vec<(usize, i64)>,
    /// The allocator's note, e.g. "optimal".
    pub message: String,
}

/// The allocator's answer. Running out of budget is not the same as impossible.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Solved(Placement),
    Infeasible(String),
    OutOfBudget(String),
}

impl Outcome {
    pub fn status(&self) -> &'static str {
        match self {
            Outcome::Solved(_) => "solved",
            Outcome::Infeasible(_) => "infeasible",
            Outcome::OutOfBudget(_) => "out_of_budget",
        }
    }
}

/// The allocator could not answer: a bug on this side of the interface (or a broken link).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AllocError {
    /// The allocator called the request invalid: the request builder is wrong.
    Invalid(String),
    /// `act_allocate` returned non-zero without a response.
    NoResponse(i32),
    /// The response could not be read.
    BadResponse(String),
}

impl fmt::Display for AllocError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AllocError::Invalid(m) => {
                write!(f, "the allocator rejected the request as invalid (a backend bug): {m}")
            }
            AllocError::NoResponse(code) => {
                write!(f, "act_allocate failed with code {code} and wrote no response")
            }
            AllocError::BadResponse(m) => write!(f, "unreadable allocator response: {m}"),
        }
    }
}

impl std::error::Error for AllocError {}

/// Builds the request for `schedule` of `graph`.
pub fn prepare(
    graph: &PiiGraph,
    isa: &Isa,
    values: &[Value],
    schedule: &Schedule,
    layout: &HbmLayout,
    limits: Limits,
) -> Result<Prepared, CandidateError> {
    let mut b = Builder::new(limits);
    let build = |b: &mut Builder| -> Result<Vec<Vec<usize>>, Stop> {
        let starts = value_starts(graph, isa, values, schedule, layout, b)?;
        let mut step_vars = Vec::with_capacity(schedule.steps.len());
        for (s, &n) in schedule.steps.iter().enumerate() {
            let PiiNode::Instr { instr, comp, operands } = &graph.nodes[n] else {
                unreachable!("schedules hold instruction nodes only")
            };
            let def = &isa.instructions[*instr];
            step_vars.push(step_attributes(s, n, def, comp, operands, &starts, b)?);
        }
        Ok(step_vars)
    };
    match build(&mut b) {
        Ok(step_vars) => Ok(Prepared::Plan(b.finish(step_vars))),
        Err(Stop::Infeasible(why)) => Ok(Prepared::Infeasible(why)),
        Err(Stop::Bad(e)) => Err(e),
    }
}

/// Why building a request stopped early.
enum Stop {
    Bad(CandidateError),
    /// Some value or attribute has no room at all, whatever the other placements.
    Infeasible(String),
}

impl From<CandidateError> for Stop {
    fn from(e: CandidateError) -> Stop {
        Stop::Bad(e)
    }
}

/// The start variable of each live value along each of its access dimensions.
#[derive(Debug, Clone)]
struct Starts {
    per_dim: Vec<Vec<usize>>,
}

/// Start variables and blocks of every live value.
fn value_starts(
    graph: &PiiGraph,
    isa: &Isa,
    values: &[Value],
    schedule: &Schedule,
    layout: &HbmLayout,
    b: &mut Builder,
) -> Result<Starts, Stop> {
    let live = |n: usize| schedule.live[n].is_some();
    // Uninitialised HBM, and what instructions write over it in place, are one storage with
    // what the last of them writes: a strided store's chain ends in (a part of) the output.
    let mut over_uninit = vec![false; values.len()];
    for (n, node) in graph.nodes.iter().enumerate() {
        if matches!(node, PiiNode::Uninit { .. }) {
            over_uninit[n] = true;
        }
        if let Some(writer) = values[n].overwritten_by.filter(|_| over_uninit[n]) {
            over_uninit[writer] = true;
        }
    }
    let mut anchors = anchors(values, schedule);
    for n in (0..values.len()).rev() {
        if let Some(writer) = values[n].overwritten_by.filter(|&w| over_uninit[n] && live(w)) {
            anchors[n] = anchors[writer].clone();
        }
    }
    let out_end = layout.output.end();
    // Scratch HBM values go after the output; placed side by side they always fit below this.
    let scratch: i64 = (0..values.len())
        .filter(|&n| live(n) && anchors[n].0 == n && n != graph.root)
        .filter(|&n| is_scratch_hbm(graph, isa, values, n))
        .map(|n| values[n].size[0])
        .sum();
    let hbm_limit = out_end + scratch;
    b.loose = hbm_limit + isa.buffers.iter().filter_map(|bf| bf.capacity()).sum::<i64>();
    let mut seen_params = BTreeMap::new();
    let mut per_dim = vec![Vec::new(); values.len()];
    let mut scratch_vars = Vec::new();
    for (n, value) in values.iter().enumerate() {
        if schedule.live[n].is_none() || anchors[n].0 != n {
            continue;
        }
        // The storage lasts from the first to the last moment any name of it is live.
        let time = (0..values.len())
            .filter(|&m| anchors[m].0 == n)
            .filter_map(|m| schedule.live[m])
            .reduce(|a, b| (a.0.min(b.0), a.1.max(b.1)))
            .expect("the anchor itself is live");
        let buffer = &isa.buffers[value.buffer];
        let name = format!("node{n}");
        if buffer.is_hbm() {
            let size = value.size[0];
            let (lo, hi) = match graph.nodes[n] {
                PiiNode::Input { param, bytes } => {
                    let placed = layout.inputs.get(param).ok_or_else(|| {
                        CandidateError(format!(
                            "node {n} is parameter {param}, but the kernel has {}",
                            layout.inputs.len()
                        ))
                    })?;
                    if placed.bytes != bytes as i64 {
                        return Err(CandidateError(format!(
                            "node {n} is parameter {param} of {bytes} bytes, but the kernel's \
                             parameter {param} has {}",
                            placed.bytes
                        ))
                        .into());
                    }
                    if let Some(other) = seen_params.insert(param, n) {
                        return Err(CandidateError(format!(
                            "nodes {other} and {n} are both parameter {param}"
                        ))
                        .into());
                    }
                    (placed.addr, placed.addr)
                }
                _ if n == graph.root => {
                    if size != layout.output.bytes {
                        return Err(CandidateError(format!(
                            "the root (node {n}) writes {size} bytes, the kernel's output has {}",
                            layout.output.bytes
                        ))
                        .into());
                    }
                    (layout.output.addr, layout.output.addr)
                }
                _ => (out_end, hbm_limit - size),
            };
            let var = b.var(format!("{name}.start"), lo, hi);
            if let PiiNode::Constant { .. } = graph.nodes[n] {
                b.constant_vars.push((n, var));
            }
            if lo != hi {
                scratch_vars.push((var, size));
            }
            per_dim[n] = vec![var];
            b.hbm_blocks.push((var, size));
            b.block(&buffer.name, None, var, size, time);
            continue;
        }
        let dims: Vec<i64> =
            buffer.access_dims.iter().map(|d| d.expect("on-chip dims are bounded")).collect();
        let mut vars = Vec::with_capacity(dims.len());
        for (k, (&dim, &size)) in dims.iter().zip(&value.size).enumerate() {
            if size > dim {
                return Err(Stop::Infeasible(format!(
                    "node {n} needs {size} positions of {} along access dimension {k}, which \
                     has {dim}",
                    buffer.name
                )));
            }
            vars.push(b.var(format!("{name}.start{k}"), 0, dim - size));
        }
        // Row-major strides; the flattened block spans first to last position touched.
        let strides: Vec<i64> = (0..dims.len()).map(|k| dims[k + 1..].iter().product()).collect();
        let capacity: i64 = dims.iter().product();
        let flat_size: i64 = if value.size.contains(&0) {
            0
        } else {
            1 + value.size.iter().zip(&strides).map(|(s, st)| (s - 1) * st).sum::<i64>()
        };
        let flat = if dims.len() == 1 {
            vars[0]
        } else {
            let flat = b.var(format!("{name}.flat"), 0, capacity - flat_size.max(0));
            let mut terms: Vec<(usize, i64)> = vars.iter().copied().zip(strides).collect();
            terms.push((flat, -1));
            b.equal(terms, 0);
            flat
        };
        b.on_chip_starts.push((flat, capacity - flat_size));
        b.block(&buffer.name, Some(capacity), flat, flat_size, time);
        per_dim[n] = vars;
    }
    // Views and parts of concatenations: a fixed offset from the storage they are part of.
    for (n, value) in values.iter().enumerate() {
        let (anchor, ref offset) = anchors[n];
        if schedule.live[n].is_none() || anchor == n {
            continue;
        }
        let mut vars = Vec::with_capacity(offset.len());
        for (k, &off) in offset.iter().enumerate() {
            let base = per_dim[anchor][k];
            let (lo, hi) = b.domain(base);
            let (lo, hi) = match isa.buffers[value.buffer].access_dims[k] {
                Some(dim) => (lo + off, (hi + off).min(dim - value.size[k])),
                None => (lo + off, hi + off),
            };
            let var = b.var(format!("node{n}.start{k}"), lo, hi.max(lo));
            b.equal(vec![(var, 1), (base, -1)], -off);
            vars.push(var);
        }
        per_dim[n] = vars;
    }
    if !scratch_vars.is_empty() {
        // hbm_end >= start + size for each scratch value, as equalities with slack.
        let end = b.var("hbm_end".into(), out_end, hbm_limit);
        for (i, &(var, size)) in scratch_vars.iter().enumerate() {
            let slack = b.var(format!("hbm_end.slack{i}"), 0, hbm_limit);
            b.equal(vec![(end, 1), (var, -1), (slack, -1)], -size);
        }
        b.hbm_end = Some((end, hbm_limit));
    }
    Ok(Starts { per_dim })
}

fn is_scratch_hbm(graph: &PiiGraph, isa: &Isa, values: &[Value], n: usize) -> bool {
    isa.buffers[values[n].buffer].is_hbm() && !matches!(graph.nodes[n], PiiNode::Input { .. })
}

/// Per node: the live node whose storage holds its value (itself for most), and its offset
/// there per access dimension. Views and parts of live concatenations follow their links;
/// a part whose concatenation the program leaves out keeps storage of its own.
pub(crate) fn anchors(values: &[Value], schedule: &Schedule) -> Vec<(usize, Vec<i64>)> {
    let mut out: Vec<(usize, Vec<i64>)> = Vec::with_capacity(values.len());
    for (n, v) in values.iter().enumerate() {
        out.push((n, vec![0; v.size.len()]));
    }
    // A view links to an earlier node, a part to a later one: follow links to the end.
    for n in 0..values.len() {
        let mut at = n;
        let mut offset = vec![0i64; values[n].size.len()];
        while let Some((next, off)) = &values[at].within {
            if schedule.live[*next].is_none() {
                break;
            }
            for (o, d) in offset.iter_mut().zip(off) {
                *o += d;
            }
            at = *next;
        }
        out[n] = (at, offset);
    }
    out
}

/// Variables of the addressing attributes of step `s` (node `n`), and the equalities tying
/// its slices to the values it reads and writes.
fn step_attributes(
    s: usize,
    n: usize,
    def: &Instruction,
    comp: &[i64],
    operands: &[usize],
    starts: &Starts,
    b: &mut Builder,
) -> Result<Vec<usize>, Stop> {
    let env = def.comp_env(comp);
    let here = |msg: String| CandidateError(format!("node {n} ({}): {msg}", def.name));
    let mut linear: Vec<(Affine, usize)> = Vec::new();
    let slices = def.inputs.iter().zip(operands.iter().copied()).chain([(&def.outputs[0], n)]);
    for (slice, value) in slices {
        for (k, expr) in slice.start.iter().enumerate() {
            let aff =
                expr.affine(&env).map_err(|e| here(format!("{}: {e}", describe(slice, k))))?;
            let var = *starts.per_dim[value]
                .get(k)
                .ok_or_else(|| here(format!("{} has no access dimension {k}", slice.buffer)))?;
            linear.push((aff, var));
        }
    }
    // Domains from the slices that name one attribute alone: start = c + coef * attr must
    // land inside the domain of the value start it equals.
    let mut vars = Vec::with_capacity(def.addr_attrs.len());
    for attr in &def.addr_attrs {
        let key = format!("a.{attr}");
        let mut lo = i64::MIN;
        let mut hi = i64::MAX;
        let mut bounded = false;
        for (aff, var) in &linear {
            if aff.terms.len() == 1 {
                if let Some(&coef) = aff.terms.get(&key) {
                    let (vlo, vhi) = b.domain(*var);
                    let (alo, ahi) = if coef > 0 {
                        (ceil_div(vlo - aff.constant, coef), floor_div(vhi - aff.constant, coef))
                    } else {
                        (ceil_div(vhi - aff.constant, coef), floor_div(vlo - aff.constant, coef))
                    };
                    lo = lo.max(alo);
                    hi = hi.min(ahi);
                    bounded = true;
                }
            }
        }
        let mentioned = linear.iter().any(|(aff, _)| aff.terms.contains_key(&key));
        if bounded && lo > hi {
            return Err(Stop::Infeasible(format!(
                "step {s} ({}): no value of @a.{attr} puts all its slices inside their buffers",
                def.name
            )));
        }
        let (lo, hi) = match (bounded, mentioned) {
            (true, _) => (lo, hi),
            (false, true) => (-b.loose, b.loose),
            // An attribute no slice mentions cannot matter; pin it for a stable answer.
            (false, false) => (0, 0),
        };
        vars.push(b.var(format!("step{s}.{}.{attr}", def.name), lo, hi));
    }
    for (aff, var) in linear {
        let mut terms = Vec::with_capacity(aff.terms.len() + 1);
        for (name, coef) in &aff.terms {
            let attr = name
                .strip_prefix("a.")
                .and_then(|a| def.addr_attrs.iter().position(|x| x == a))
                .ok_or_else(|| {
                    here(format!("start expression uses @{name}, which has no value"))
                })?;
            terms.push((vars[attr], *coef));
        }
        terms.push((var, -1));
        b.equal(terms, aff.constant);
    }
    for (k, constraint) in def.constraints.iter().enumerate() {
        if !constraint.is_computational() {
            let label = format!("step{s}.{}.constraint{k}", def.name);
            constrain(constraint, &env, &vars, def, &label, b).map_err(|msg| {
                Stop::Infeasible(format!("step {s} ({}): constraint `{constraint}`: {msg}", def.name))
            })?;
        }
    }
    Ok(vars)
}

/// One constraint on addressing attributes as allocator constraints (CSP1): an equality as
/// is, an inequality through a slack variable, `x % m == r` through an integer multiple
/// (`x - m * k == r`). The computational attributes are known (`env`).
fn constrain(
    constraint: &Constraint,
    env: &BTreeMap<String, i64>,
    vars: &[usize],
    def: &Instruction,
    label: &str,
    b: &mut Builder,
) -> Result<(), String> {
    // A bound on |x| for an affine x over attributes within [-loose, loose].
    let loose = b.loose;
    let reach = |aff: &Affine| -> i64 {
        let coefs: i64 = aff.terms.values().map(|c| c.saturating_abs()).fold(0, i64::saturating_add);
        loose.saturating_mul(coefs).saturating_add(aff.constant.saturating_abs()).min(1 << 50)
    };
    let terms_of = |aff: &Affine| -> Result<Vec<(usize, i64)>, String> {
        aff.terms
            .iter()
            .map(|(name, coef)| {
                name.strip_prefix("a.")
                    .and_then(|a| def.addr_attrs.iter().position(|x| x == a))
                    .map(|i| (vars[i], *coef))
                    .ok_or_else(|| format!("@{name} has no value"))
            })
            .collect()
    };
    let modulo = match (&constraint.lhs, &constraint.rhs, constraint.op) {
        (Expr::Rem(x, m), r, CmpOp::Eq) | (r, Expr::Rem(x, m), CmpOp::Eq) => Some((x, m, r)),
        _ => None,
    };
    if let Some((x, m, r)) = modulo {
        let m = m.eval(env).map_err(|e| e.to_string())?;
        let r = r.eval(env).map_err(|e| e.to_string())?;
        if m == 0 {
            return Err("modulo by zero".into());
        }
        // Floor remainders lie in [0, m) (or (m, 0] for negative m).
        if (m > 0 && !(0..m).contains(&r)) || (m < 0 && !(m + 1..=0).contains(&r)) {
            return Err(format!("no value has remainder {r} modulo {m}"));
        }
        let aff = x.affine(env).map_err(|e| e.to_string())?;
        let mut terms = terms_of(&aff)?;
        let bound = reach(&aff);
        let k = b.var(format!("{label}.multiple"), -bound, bound);
        terms.push((k, -m));
        b.equal(terms, aff.constant - r);
        return Ok(());
    }
    let diff = Expr::Sub(Box::new(constraint.lhs.clone()), Box::new(constraint.rhs.clone()));
    let aff = diff.affine(env).map_err(|e| e.to_string())?;
    let mut terms = terms_of(&aff)?;
    // lhs - rhs + sign * slack == 0 with slack in [lo, loose].
    let (sign, lo) = match constraint.op {
        CmpOp::Eq => (0, 0),
        CmpOp::Le => (1, 0),
        CmpOp::Lt => (1, 1),
        CmpOp::Ge => (-1, 0),
        CmpOp::Gt => (-1, 1),
        CmpOp::Ne => return Err("'!=' on addressing attributes cannot be placed".into()),
    };
    if sign != 0 {
        let bound = reach(&aff);
        let slack = b.var(format!("{label}.slack"), lo, bound.max(lo));
        terms.push((slack, sign));
    }
    b.equal(terms, aff.constant);
    Ok(())
}

fn describe(slice: &Slice, k: usize) -> String {
    format!("start {k} of its {} slice", slice.buffer)
}

fn ceil_div(a: i64, b: i64) -> i64 {
    -floor_div(-a, b)
}

/// Accumulates the request.
struct Builder {
    request: Request,
    hbm_blocks: Vec<(usize, i64)>,
    /// Flattened start variables of on-chip values, with their upper bound.
    on_chip_starts: Vec<(usize, i64)>,
    /// The HBM end variable and its upper bound, when there is scratch HBM.
    hbm_end: Option<(usize, i64)>,
    /// Bound of attributes whose domain no single slice determines.
    loose: i64,
    constant_vars: Vec<(usize, usize)>,
}

impl Builder {
    fn new(limits: Limits) -> Builder {
        Builder {
            request: Request {
                variables: Vec::new(),
                equalities: Vec::new(),
                blocks: Vec::new(),
                objective: Vec::new(),
                limits,
            },
            hbm_blocks: Vec::new(),
            on_chip_starts: Vec::new(),
            hbm_end: None,
            loose: 0,
            constant_vars: Vec::new(),
        }
    }

    fn var(&mut self, name: String, lo: i64, hi: i64) -> usize {
        self.request.variables.push(Variable { name, lo, hi });
        self.request.variables.len() - 1
    }

    fn domain(&self, var: usize) -> (i64, i64) {
        let v = &self.request.variables[var];
        (v.lo, v.hi)
    }

    fn equal(&mut self, terms: Vec<(usize, i64)>, constant: i64) {
        self.request.equalities.push(Equality { terms, constant });
    }

    fn block(
        &mut self,
        buffer: &str,
        capacity: Option<i64>,
        start: usize,
        size: i64,
        time: (i64, i64),
    ) {
        self.request.blocks.push(Block { buffer: buffer.to_string(), capacity, start, size, time });
    }

    /// Objective: first the end of HBM, then (with a weight that keeps it second) the sum of
    /// on-chip starts, which packs values low and leaves the solver few equal optima.
    fn finish(mut self, step_vars: Vec<Vec<usize>>) -> Plan {
        let spread: i64 = self.on_chip_starts.iter().map(|&(_, hi)| hi.max(0)).sum();
        let weight = spread + 1;
        let mut objective: Vec<(usize, i64)> = Vec::new();
        let mut secondary = true;
        if let Some((end, bound)) = self.hbm_end {
            // Keep |objective| well inside what the allocator accepts (2^52).
            secondary = (weight as i128) * (bound as i128) < (1i128 << 50);
            objective.push((end, if secondary { weight } else { 1 }));
        }
        if secondary {
            objective.extend(self.on_chip_starts.iter().map(|&(v, _)| (v, 1)));
        }
        self.request.objective = objective;
        Plan {
            request: self.request,
            step_vars,
            hbm_blocks: self.hbm_blocks,
            constant_vars: self.constant_vars,
        }
    }
}

impl Plan {
    pub fn to_json(&self) -> String {
        serde_json::to_string(&self.request).expect("a request always serialises")
    }

    /// Reads the allocator's response.
    pub fn read_response(&self, text: &str) -> Result<Outcome, AllocError> {
        #[derive(Deserialize)]
        struct Response {
            status: String,
            #[serde(default)]
            values: Vec<i64>,
            #[serde(default)]
            message: String,
        }
        let r: Response = serde_json::from_str(text)
            .map_err(|e| AllocError::BadResponse(format!("{e} in {text:?}")))?;
        match r.status.as_str() {
            "solved" => {
                if r.values.len() != self.request.variables.len() {
                    return Err(AllocError::BadResponse(format!(
                        "{} values for {} variables",
                        r.values.len(),
                        self.request.variables.len()
                    )));
                }
                Ok(Outcome::Solved(self.placement(&r.values, r.message)))
            }
            "infeasible" => Ok(Outcome::Infeasible(r.message)),
            "out_of_budget" => Ok(Outcome::OutOfBudget(r.message)),
            "invalid" => Err(AllocError::Invalid(r.message)),
            other => Err(AllocError::BadResponse(format!("unknown status {other:?}"))),
        }
    }

    /// The placement that `values` (one per variable) give.
    fn placement(&self, values: &[i64], message: String) -> Placement {
        let addrs = self.step_vars.iter().map(|vars| vars.iter().map(|&v| values[v]).collect()).collect();
        let hbm_end = self.hbm_blocks.iter().map(|&(v, size)| values[v] + size).max().unwrap_or(0);
        let constants = self.constant_vars.iter().map(|&(n, v)| (n, values[v])).collect();
        Placement { addrs, hbm_end, constants, message }
    }

    /// Solves the plan: first by the verified greedy placement (`greedy.rs`), which answers in
    /// milliseconds at any size; only when it finds none, with the linked allocator (CP-SAT),
    /// which finds a placement where first fit does not or proves that none exists. CP-SAT
    /// used to place every small request: packing by the sum of starts, which it rarely
    /// proves optimal, took its whole budget (a 40x40x40 int8 product on Gemmini, 42 blocks:
    /// 17 s per candidate); no cost reads how tightly values are packed.
    pub fn solve(&self) -> Result<Outcome, AllocError> {
        if let Some(values) = crate::greedy::place(&self.request) {
            return Ok(Outcome::Solved(self.placement(&values, "greedy placement, verified".into())));
        }
        let blocks = self.request.blocks.len();
        if blocks > MAX_SOLVER_BLOCKS {
            return Ok(Outcome::OutOfBudget(format!(
                "first fit found no placement, and CP-SAT is given at most {MAX_SOLVER_BLOCKS} blocks \
                 (this request has {blocks})"
            )));
        }
        self.read_response(&call_allocator(&self.to_json())?)
    }
}

/// Most blocks of a request handed to CP-SAT when first fit fails. Beyond some thousands of
/// blocks it finds nothing within its deterministic budget, and the wall-clock safety net
/// ends it instead, an answer that may differ between machines: a 512^3 product's
/// reloading variant on Gemmini (about 35,000 blocks) ran 60 s for nothing. Past this,
/// the candidate is out of budget at once, the same on every machine.
pub const MAX_SOLVER_BLOCKS: usize = 4_096;

/// One round trip through the C interface; the response is copied and freed here.
pub fn call_allocator(request: &str) -> Result<String, AllocError> {
    let request = CString::new(request)
        .map_err(|_| AllocError::Invalid("the request contains a NUL byte".into()))?;
    let mut response: *mut c_char = std::ptr::null_mut();
    // SAFETY: `request` is a valid NUL-terminated string for the duration of the call and
    // `response` is a valid place for the allocator to store its pointer.
    let code = unsafe { act_allocate(request.as_ptr(), &mut response) };
    if code != 0 || response.is_null() {
        return Err(AllocError::NoResponse(code));
    }
    // SAFETY: on success the allocator wrote a NUL-terminated string that stays valid until
    // act_allocate_free, which is called right after copying it.
    let text = unsafe { CStr::from_ptr(response) }.to_string_lossy().into_owned();
    unsafe { act_allocate_free(response) };
    Ok(text)
}
