//! Test support for instruction selection: fixtures, and a reference interpreter that runs a
//! kernel and a candidate PII graph (each instruction by its semantics) on the same input
//! bytes, so that tests can check every candidate computes what the kernel computes.
//!
//! Values travel between instructions as bytes, as they do in memory: an instruction's ROOT
//! value is written row-major, and the consumer reads its parameter from those bytes. Every
//! operator rounds its result to its element type; arithmetic is done in f64.

#![allow(dead_code)]

use act_compiler::isa::Isa;
use act_compiler::isa_match::instantiate;
use act_compiler::kernel::{parse_kernel, Kernel};
use act_compiler::lang::{DType, Op, Reducer, Ty};
use act_compiler::pii::{PiiGraph, PiiNode};
use act_compiler::select::{select, SelectError, SelectLimits, Selection};
use std::collections::BTreeMap;

pub fn data(name: &str) -> String {
    let path = format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

pub fn isa(name: &str) -> Isa {
    Isa::from_json(&data(name)).unwrap()
}

/// `isa` without the named instructions.
pub fn without(isa: &Isa, names: &[&str]) -> Isa {
    let mut out = isa.clone();
    out.instructions.retain(|i| !names.contains(&i.name.as_str()));
    out
}

pub fn kernel_file(name: &str) -> Kernel {
    parse_kernel(&data(name), name).unwrap_or_else(|e| panic!("{e}"))
}

pub fn kernel_text(text: &str) -> Kernel {
    parse_kernel(text, "kernel.hlo").unwrap_or_else(|e| panic!("{e}"))
}

pub fn run(kernel: &Kernel, isa: &Isa) -> Result<Selection, SelectError> {
    select(kernel, isa, &SelectLimits::default())
}

/// Instruction names of a candidate, sorted (a multiset).
pub fn multiset(isa: &Isa, g: &PiiGraph) -> Vec<String> {
    let mut v: Vec<String> = g
        .nodes
        .iter()
        .filter_map(|n| match n {
            PiiNode::Instr { instr, .. } => Some(isa.instructions[*instr].name.clone()),
            _ => None,
        })
        .collect();
    v.sort();
    v
}

pub fn sorted(names: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = names.iter().map(|s| s.to_string()).collect();
    v.sort();
    v
}

/// A tensor of f64 values.
#[derive(Debug, Clone, PartialEq)]
pub struct Tensor {
    pub ty: Ty,
    pub data: Vec<f64>,
}

fn bf16_bits(v: f64) -> u16 {
    let f = v as f32;
    if f.is_nan() {
        return 0x7fc0;
    }
    let b = f.to_bits();
    let round = 0x7fff + ((b >> 16) & 1);
    (b.wrapping_add(round) >> 16) as u16
}

fn f16_of(v: f64) -> f64 {
    if !v.is_finite() || v == 0.0 {
        return v;
    }
    let exp = v.abs().log2().floor() as i32;
    if exp > 15 {
        return v.signum() * f64::INFINITY;
    }
    let q = if exp >= -14 { (exp - 10) as f64 } else { -24.0 };
    let scaled = v / q.exp2();
    let r = scaled.round();
    // Ties to even.
    let r = if (scaled - scaled.trunc()).abs() == 0.5 && r % 2.0 != 0.0 { r - scaled.signum() } else { r };
    r * q.exp2()
}

/// `v` rounded to a value of `dtype`.
pub fn round(v: f64, dtype: DType) -> f64 {
    match dtype {
        DType::F64 => v,
        DType::F32 => f64::from(v as f32),
        DType::BF16 => f64::from(f32::from_bits(u32::from(bf16_bits(v)) << 16)),
        DType::F16 => f16_of(v),
        DType::Pred => f64::from(u8::from(v != 0.0)),
        _ => {
            let bits = 8 * dtype.bytes();
            let t = v.trunc() as i128;
            let m = 1i128 << bits;
            let w = t.rem_euclid(m);
            if dtype.is_signed() && w >= m / 2 {
                (w - m) as f64
            } else {
                w as f64
            }
        }
    }
}

pub fn encode(t: &Tensor) -> Vec<u8> {
    let mut out = Vec::new();
    for &v in &t.data {
        let v = round(v, t.ty.dtype);
        match t.ty.dtype {
            DType::BF16 => out.extend(bf16_bits(v).to_le_bytes()),
            DType::F32 => out.extend((v as f32).to_le_bytes()),
            DType::F64 => out.extend(v.to_le_bytes()),
            DType::F16 => {
                let f = v as f32;
                let b = f.to_bits();
                let sign = ((b >> 16) & 0x8000) as u16;
                let h = if v == 0.0 {
                    sign
                } else if v.is_infinite() {
                    sign | 0x7c00
                } else if v.is_nan() {
                    0x7e00
                } else {
                    let exp = v.abs().log2().floor() as i32;
                    if exp >= -14 {
                        let mant = ((v.abs() / (exp as f64).exp2() - 1.0) * 1024.0) as u16;
                        sign | (((exp + 15) as u16) << 10) | mant
                    } else {
                        sign | (v.abs() / (-24f64).exp2()) as u16
                    }
                };
                out.extend(h.to_le_bytes());
            }
            d => {
                let n = d.bytes() as usize;
                let bytes = (v as i128).to_le_bytes();
                out.extend_from_slice(&bytes[..n]);
            }
        }
    }
    out
}

pub fn decode(bytes: &[u8], ty: &Ty) -> Tensor {
    let w = ty.dtype.bytes() as usize;
    assert_eq!(bytes.len() as i64, ty.bytes(), "{} bytes for {ty}", bytes.len());
    let data = bytes
        .chunks(w)
        .map(|c| match ty.dtype {
            DType::BF16 => f64::from(f32::from_bits(u32::from(u16::from_le_bytes([c[0], c[1]])) << 16)),
            DType::F32 => f64::from(f32::from_le_bytes([c[0], c[1], c[2], c[3]])),
            DType::F64 => f64::from_le_bytes(c.try_into().unwrap()),
            DType::F16 => {
                let h = u16::from_le_bytes([c[0], c[1]]);
                let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
                let e = i32::from((h >> 10) & 0x1f);
                let m = f64::from(h & 0x3ff);
                sign * match e {
                    0 => m * (-24f64).exp2(),
                    31 => {
                        if m == 0.0 {
                            f64::INFINITY
                        } else {
                            f64::NAN
                        }
                    }
                    _ => (1.0 + m / 1024.0) * f64::from(e - 15).exp2(),
                }
            }
            d => {
                let mut buf = [0u8; 16];
                buf[..w].copy_from_slice(c);
                let mut v = i128::from_le_bytes(buf);
                if d.is_signed() && c[w - 1] & 0x80 != 0 {
                    v -= 1i128 << (8 * w);
                }
                v as f64
            }
        })
        .collect();
    Tensor { ty: ty.clone(), data }
}

fn strides(shape: &[i64]) -> Vec<i64> {
    let mut s = vec![1; shape.len()];
    for k in (0..shape.len().saturating_sub(1)).rev() {
        s[k] = s[k + 1] * shape[k + 1];
    }
    s
}

fn unflat(mut i: i64, shape: &[i64]) -> Vec<i64> {
    let mut idx = vec![0; shape.len()];
    for k in (0..shape.len()).rev() {
        idx[k] = i % shape[k];
        i /= shape[k];
    }
    idx
}

fn flat(idx: &[i64], shape: &[i64]) -> usize {
    idx.iter().zip(strides(shape)).map(|(i, s)| i * s).sum::<i64>() as usize
}

/// Applies one operator.
pub fn eval_op(op: &Op, ty: &Ty, args: &[&Tensor]) -> Tensor {
    let n = ty.elements();
    let each = |f: &dyn Fn(Vec<i64>) -> f64| -> Vec<f64> { (0..n).map(|i| f(unflat(i, &ty.shape))).collect() };
    let data: Vec<f64> = match op {
        Op::Constant(lit) => {
            let v: Vec<f64> = lit.values().collect();
            if v.len() == 1 {
                vec![v[0]; n as usize]
            } else {
                v
            }
        }
        Op::Reshape | Op::Copy => args[0].data.clone(),
        Op::Convert => args[0].data.clone(),
        Op::BitcastConvert => decode(&encode(args[0]), ty).data,
        Op::Transpose(p) => each(&|o| {
            let mut idx = vec![0; p.len()];
            for (i, &pi) in p.iter().enumerate() {
                idx[pi] = o[i];
            }
            args[0].data[flat(&idx, &args[0].ty.shape)]
        }),
        Op::Slice(r) => each(&|o| {
            let idx: Vec<i64> = o.iter().zip(r).map(|(i, (s, _, st))| s + i * st).collect();
            args[0].data[flat(&idx, &args[0].ty.shape)]
        }),
        Op::Concatenate(d) => each(&|mut o| {
            for a in args {
                if o[*d] < a.ty.shape[*d] {
                    return a.data[flat(&o, &a.ty.shape)];
                }
                o[*d] -= a.ty.shape[*d];
            }
            unreachable!()
        }),
        // Every part that holds a position must hold the same value there: the overlap is
        // the same values computed twice.
        Op::Overlay { dim, starts } => each(&|o| {
            let held: Vec<f64> = args
                .iter()
                .zip(starts)
                .filter(|(a, &s)| o[*dim] >= s && o[*dim] < s + a.ty.shape[*dim])
                .map(|(a, &s)| {
                    let mut local = o.clone();
                    local[*dim] -= s;
                    a.data[flat(&local, &a.ty.shape)]
                })
                .collect();
            assert!(held.windows(2).all(|w| w[0].to_bits() == w[1].to_bits()), "overlaid parts differ at {o:?}: {held:?}");
            held[0]
        }),
        Op::Broadcast(dims) => each(&|o| {
            let src = &args[0].ty.shape;
            let idx: Vec<i64> = dims.iter().enumerate().map(|(i, &d)| if src[i] == 1 { 0 } else { o[d] }).collect();
            args[0].data[flat(&idx, src)]
        }),
        Op::Dot(d) => {
            let (a, b) = (args[0], args[1]);
            let (sa, sb) = (strides(&a.ty.shape), strides(&b.ty.shape));
            let nb = d.lhs_batch.len();
            let lf: Vec<usize> =
                (0..a.ty.rank()).filter(|x| !d.lhs_batch.contains(x) && !d.lhs_contracting.contains(x)).collect();
            let rf: Vec<usize> =
                (0..b.ty.rank()).filter(|x| !d.rhs_batch.contains(x) && !d.rhs_contracting.contains(x)).collect();
            // Offsets of every contracting position in each operand, computed once.
            let cshape: Vec<i64> = d.lhs_contracting.iter().map(|&c| a.ty.shape[c]).collect();
            let offsets: Vec<(usize, usize)> = (0..cshape.iter().product::<i64>())
                .map(|c| {
                    let ci = unflat(c, &cshape);
                    let oa: i64 = ci.iter().zip(&d.lhs_contracting).map(|(v, &k)| v * sa[k]).sum();
                    let ob: i64 = ci.iter().zip(&d.rhs_contracting).map(|(v, &k)| v * sb[k]).sum();
                    (oa as usize, ob as usize)
                })
                .collect();
            each(&|o| {
                let mut base_a: i64 = 0;
                let mut base_b: i64 = 0;
                for k in 0..nb {
                    base_a += o[k] * sa[d.lhs_batch[k]];
                    base_b += o[k] * sb[d.rhs_batch[k]];
                }
                for (k, &f) in lf.iter().enumerate() {
                    base_a += o[nb + k] * sa[f];
                }
                for (k, &f) in rf.iter().enumerate() {
                    base_b += o[nb + lf.len() + k] * sb[f];
                }
                let (ba, bb) = (base_a as usize, base_b as usize);
                offsets.iter().map(|&(oa, ob)| a.data[ba + oa] * b.data[bb + ob]).sum()
            })
        }
        Op::ReduceAdd(dims) | Op::Reduce { dims, .. } => {
            let (init, reducer) = match op {
                Op::Reduce { reducer, .. } => (args[1].data[0], *reducer),
                _ => (0.0, Reducer::Add),
            };
            let src = &args[0].ty.shape;
            let rshape: Vec<i64> = dims.iter().map(|&d| src[d]).collect();
            let kept: Vec<usize> = (0..src.len()).filter(|k| !dims.contains(k)).collect();
            each(&|o| {
                let mut idx = vec![0; src.len()];
                for (k, &kk) in kept.iter().enumerate() {
                    idx[kk] = o[k];
                }
                let mut acc = init;
                for r in 0..rshape.iter().product::<i64>() {
                    for (k, &v) in unflat(r, &rshape).iter().enumerate() {
                        idx[dims[k]] = v;
                    }
                    let x = args[0].data[flat(&idx, src)];
                    acc = match reducer {
                        Reducer::Add => acc + x,
                        Reducer::Mul => acc * x,
                        Reducer::Max => acc.max(x),
                        Reducer::Min => acc.min(x),
                    };
                }
                acc
            })
        }
        Op::Exponential => args[0].data.iter().map(|x| x.exp()).collect(),
        Op::Add | Op::Subtract | Op::Multiply | Op::Divide | Op::Maximum | Op::Minimum | Op::Xor => args[0]
            .data
            .iter()
            .zip(&args[1].data)
            .map(|(&x, &y)| match op {
                Op::Add => x + y,
                Op::Subtract => x - y,
                Op::Multiply => x * y,
                Op::Divide => x / y,
                Op::Maximum => x.max(y),
                Op::Minimum => x.min(y),
                _ => ((x as i64) ^ (y as i64)) as f64,
            })
            .collect(),
        Op::SelectLt | Op::SelectEqVar => (0..n as usize)
            .map(|i| {
                let (a, b) = (args[0].data[i], args[1].data[i]);
                let c = if *op == Op::SelectLt { a < b } else { a == b };
                if c {
                    args[2].data[i]
                } else {
                    args[3].data[i]
                }
            })
            .collect(),
        Op::DynamicUpdateSlice => {
            let (base, upd) = (args[0], args[1]);
            let starts: Vec<i64> = (0..base.ty.rank())
                .map(|k| (args[2 + k].data[0] as i64).clamp(0, base.ty.shape[k] - upd.ty.shape[k]))
                .collect();
            each(&|o| {
                let inside = o.iter().zip(&starts).zip(&upd.ty.shape).all(|((i, s), u)| *i >= *s && *i < s + u);
                if inside {
                    let idx: Vec<i64> = o.iter().zip(&starts).map(|(i, s)| i - s).collect();
                    upd.data[flat(&idx, &upd.ty.shape)]
                } else {
                    base.data[flat(&o, &base.ty.shape)]
                }
            })
        }
        Op::Other { name, attrs } if name == "reverse" => {
            let list = attrs.split("dimensions={").nth(1).and_then(|r| r.split('}').next()).unwrap_or("");
            let dims: Vec<usize> = list.split(',').filter(|d| !d.trim().is_empty()).map(|d| d.trim().parse().unwrap()).collect();
            each(&|mut o| {
                for &d in &dims {
                    o[d] = ty.shape[d] - 1 - o[d];
                }
                args[0].data[flat(&o, &args[0].ty.shape)]
            })
        }
        // XLA's pad: `low` padding values, the operand's elements `interior` apart, `high`
        // padding values, per dimension.
        Op::Other { name, attrs } if name == "pad" => {
            let text = attrs.split("padding=").nth(1).and_then(|r| r.split(',').next()).unwrap_or("");
            let config = act_compiler::infer::padding_config(text.trim()).expect("a padding configuration");
            each(&|o| {
                let mut src = Vec::with_capacity(o.len());
                for (d, &(low, _, interior)) in config.iter().enumerate() {
                    let t = o[d] - low;
                    let step = interior + 1;
                    if t < 0 || t % step != 0 || t / step >= args[0].ty.shape[d] {
                        return args[1].data[0];
                    }
                    src.push(t / step);
                }
                args[0].data[flat(&src, &args[0].ty.shape)]
            })
        }
        // XLA: clamp(lo, x, hi) = min(max(x, lo), hi), bounds of x's shape or scalars.
        Op::Other { name, .. } if name == "clamp" && args.len() == 3 => {
            let at = |t: &Tensor, i: usize| if t.data.len() == 1 { t.data[0] } else { t.data[i] };
            (0..n as usize).map(|i| args[1].data[i].max(at(args[0], i)).min(at(args[2], i))).collect()
        }
        Op::Other { name, .. } if args.len() == 1 => args[0]
            .data
            .iter()
            .map(|&x| match name.as_str() {
                "tanh" => x.tanh(),
                "negate" => -x,
                "abs" => x.abs(),
                "sqrt" => x.sqrt(),
                "log" => x.ln(),
                "logistic" => 1.0 / (1.0 + (-x).exp()),
                other => panic!("the reference interpreter cannot run {other}"),
            })
            .collect(),
        other => panic!("the reference interpreter cannot run {other:?}"),
    };
    Tensor { ty: ty.clone(), data: data.into_iter().map(|v| round(v, ty.dtype)).collect() }
}

/// The kernel's output bytes for `inputs` (one byte string per parameter).
pub fn eval_kernel(k: &Kernel, inputs: &[Vec<u8>]) -> Vec<u8> {
    let mut vals: Vec<Tensor> = Vec::new();
    for node in &k.nodes {
        let t = match node.op {
            Op::Parameter(i) => decode(&inputs[i], &node.ty),
            _ => {
                let args: Vec<&Tensor> = node.operands.iter().map(|&o| &vals[o]).collect();
                eval_op(&node.op, &node.ty, &args)
            }
        };
        vals.push(t);
    }
    encode(&vals[k.root])
}

/// The output bytes a candidate produces: each instruction runs its semantics on the bytes of
/// its operands; a view takes its positions out of the bytes of what it views, row-major over
/// the buffer's access dimensions, and a concatenation lays its parts side by side.
pub fn eval_candidate(isa: &Isa, g: &PiiGraph, inputs: &[Vec<u8>]) -> Vec<u8> {
    let values = act_compiler::value::analyse(g, isa).unwrap_or_else(|e| panic!("{e}"));
    let mut bytes: Vec<Vec<u8>> = Vec::new();
    for (n, node) in g.nodes.iter().enumerate() {
        let out = match node {
            PiiNode::Constant { dtype, shape, bits } => {
                let ty = Ty::new(*dtype, shape.clone());
                let values: Vec<f64> = bits.iter().map(|&b| round(f64::from_bits(b), *dtype)).collect();
                let data = if values.len() == 1 { vec![values[0]; ty.elements() as usize] } else { values };
                encode(&Tensor { ty, data })
            }
            PiiNode::View { of, offset, size } => {
                let whole = &values[*of].size;
                let unit = bytes[*of].len() / whole.iter().product::<i64>().max(1) as usize;
                let mut out = Vec::new();
                for pos in positions(size) {
                    let at: Vec<i64> = pos.iter().zip(offset).map(|(p, o)| p + o).collect();
                    let i = flat(&at, whole) * unit;
                    out.extend_from_slice(&bytes[*of][i..i + unit]);
                }
                out
            }
            PiiNode::Concat { parts, dim } => {
                let size = &values[n].size;
                let mut out = Vec::new();
                for pos in positions(size) {
                    // The part holding this position, and the position inside it.
                    let (mut k, mut local) = (0, pos.clone());
                    while local[*dim] >= values[parts[k]].size[*dim] {
                        local[*dim] -= values[parts[k]].size[*dim];
                        k += 1;
                    }
                    let part = &values[parts[k]].size;
                    let unit = bytes[parts[k]].len() / part.iter().product::<i64>().max(1) as usize;
                    let i = flat(&local, part) * unit;
                    out.extend_from_slice(&bytes[parts[k]][i..i + unit]);
                }
                out
            }
            // Parts written in place where they may overlap: the bytes of every part that
            // holds a position must agree.
            PiiNode::Overlay { parts, starts } => {
                let mut out: Vec<Option<u8>> = vec![None; values[n].size[0] as usize];
                for (&p, &start) in parts.iter().zip(starts) {
                    for (i, &b) in bytes[p].iter().enumerate() {
                        let at = &mut out[start as usize + i];
                        assert!(at.is_none_or(|x| x == b), "node {n}: overlaid parts differ at byte {}", start as usize + i);
                        *at = Some(b);
                    }
                }
                out.into_iter().map(|b| b.expect("every byte written")).collect()
            }
            // Contents that must not matter: a pattern, so that reading them shows.
            PiiNode::Uninit { bytes } => vec![0xa5; *bytes as usize],
            PiiNode::Input { param, bytes } => {
                assert_eq!(inputs[*param].len() as u64, *bytes);
                inputs[*param].clone()
            }
            PiiNode::Instr { instr, comp, operands } => {
                let ins = &isa.instructions[*instr];
                let env: BTreeMap<String, i64> = ins.comp_env(comp);
                let mut named: BTreeMap<&str, Tensor> = BTreeMap::new();
                for op in &ins.semantics {
                    let (o, ty) = instantiate(op, &env).unwrap();
                    let t = match o {
                        Op::Parameter(i) => decode(&bytes[operands[i]], &ty),
                        _ => {
                            let args: Vec<&Tensor> = op.operands.iter().map(|n| &named[n.as_str()]).collect();
                            eval_op(&o, &ty, &args)
                        }
                    };
                    named.insert(op.name.as_str(), t);
                }
                let root = ins.semantics.iter().find(|o| o.root).unwrap_or_else(|| ins.semantics.last().unwrap());
                let root = &named[root.name.as_str()];
                encode(root)
            }
        };
        bytes.push(out);
    }
    bytes[g.root].clone()
}

/// Every position of an extent, row-major.
fn positions(size: &[i64]) -> Vec<Vec<i64>> {
    let mut out = vec![Vec::new()];
    for &d in size {
        out = out.into_iter().flat_map(|p| (0..d).map(move |i| [p.clone(), vec![i]].concat())).collect();
    }
    out
}

/// Deterministic pseudo-random bf16 bytes in [-1, 1) for a parameter of `bytes` bytes.
pub fn random_bf16(bytes: u64, seed: u64) -> Vec<u8> {
    let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    let mut out = Vec::new();
    for _ in 0..bytes / 2 {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let v = ((state >> 33) as f64 / (1u64 << 31) as f64) * 2.0 - 1.0;
        out.extend(bf16_bits(v).to_le_bytes());
    }
    out
}

/// Checks that every candidate computes the kernel's output bit for bit on random inputs.
pub fn assert_candidates_compute_kernel(isa: &Isa, k: &Kernel, sel: &Selection) {
    let inputs: Vec<Vec<u8>> = k.params.iter().enumerate().map(|(i, p)| random_bf16(p.bytes() as u64, i as u64 + 7)).collect();
    let expected = eval_kernel(k, &inputs);
    let bound = sel.stats.lower_bound.expect("tables of costs that are not negative give a lower bound");
    for (c, g) in sel.candidates.iter().enumerate() {
        g.check().unwrap();
        let got = eval_candidate(isa, g, &inputs);
        assert!(got == expected, "candidate {c} ({:?}) does not compute kernel {}", multiset(isa, g), k.name);
        let cost = table_cost(isa, g);
        assert!(cost >= bound, "candidate {c} of kernel {} costs {cost}, below the lower bound {bound}", k.name);
    }
}

/// A candidate's cost under the table's instruction costs (the default cost model's).
pub fn table_cost(isa: &Isa, g: &PiiGraph) -> f64 {
    g.nodes
        .iter()
        .map(|n| match n {
            PiiNode::Instr { instr, comp, .. } => {
                let def = &isa.instructions[*instr];
                def.cost.eval(&def.comp_env(comp)).unwrap() as f64
            }
            _ => 0.0,
        })
        .sum()
}

/// Deterministic pseudo-random bytes for a parameter of type `ty`: values in [-1, 1) for
/// floats, small integers otherwise.
pub fn random_input(ty: &Ty, seed: u64) -> Vec<u8> {
    if ty.dtype == DType::BF16 {
        return random_bf16(ty.bytes() as u64, seed);
    }
    let mut state = seed.wrapping_mul(0x9e3779b97f4a7c15).wrapping_add(1);
    let data = (0..ty.elements())
        .map(|_| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let u = (state >> 33) as f64 / (1u64 << 31) as f64;
            if ty.dtype.is_float() {
                u * 2.0 - 1.0
            } else {
                (u * 100.0).floor()
            }
        })
        .collect();
    encode(&Tensor { ty: ty.clone(), data })
}

fn close(a: &Tensor, b: &Tensor) -> bool {
    // Reassociated accumulations (a sum kept in f32 or in bf16) may differ in the last place.
    let tol = match a.ty.dtype {
        DType::BF16 => 1.0 / 64.0,
        DType::F16 => 1.0 / 512.0,
        DType::F32 => 1e-6,
        _ => 0.0,
    };
    a.ty == b.ty
        && a.data
            .iter()
            .zip(&b.data)
            .all(|(x, y)| x == y || (x.is_nan() && y.is_nan()) || (x - y).abs() <= tol * x.abs().max(1.0))
}

/// Runs instruction `instr` with computational attributes `comp` on operand bytes.
pub fn run_instruction(isa: &Isa, instr: usize, comp: &[i64], operands: &[Vec<u8>]) -> Tensor {
    let ins = &isa.instructions[instr];
    let env: BTreeMap<String, i64> = ins.comp_env(comp);
    let mut named: BTreeMap<&str, Tensor> = BTreeMap::new();
    for op in &ins.semantics {
        let (o, ty) = instantiate(op, &env).unwrap();
        let t = match o {
            Op::Parameter(i) => decode(&operands[i], &ty),
            _ => {
                let args: Vec<&Tensor> = op.operands.iter().map(|n| &named[n.as_str()]).collect();
                eval_op(&o, &ty, &args)
            }
        };
        named.insert(op.name.as_str(), t);
    }
    let root = ins.semantics.iter().find(|o| o.root).unwrap_or_else(|| ins.semantics.last().unwrap());
    named[root.name.as_str()].clone()
}

/// Saturates the kernel's e-graph for `isa` and checks, on random inputs, that every e-node of
/// every class computes the class's value: each IR node by the interpreter, each PII by its
/// instruction's semantics (read from its operands' bytes, as the hardware would).
/// Returns the number of e-nodes checked.
pub fn assert_egraph_consistent(k: &Kernel, isa: &Isa) -> usize {
    use act_compiler::isa_match::Patterns;
    use act_compiler::select::saturate;
    let patterns = Patterns::compile(isa).expect("the table is usable");
    let (kg, _) = saturate(k, isa, &patterns, &SelectLimits::default());
    let eg = &kg.egraph;
    let inputs: Vec<Vec<u8>> =
        k.param_nodes.iter().enumerate().map(|(i, &n)| random_input(&k.nodes[n].ty, i as u64 + 3)).collect();
    let mut ids: Vec<egg::Id> = eg.classes().map(|c| c.id).collect();
    ids.sort();
    let mut value: BTreeMap<egg::Id, Tensor> = BTreeMap::new();
    let eval_node = |node: &act_compiler::lang::Node, value: &BTreeMap<egg::Id, Tensor>| -> Option<Tensor> {
        let args: Vec<&Tensor> = node.children.iter().map(|c| value.get(&eg.find(*c))).collect::<Option<_>>()?;
        Some(match &node.op {
            Op::Input(i) => decode(&inputs[*i], &node.ty),
            // Contents that must not matter: a pattern, so that depending on them shows.
            Op::Uninit(_) => decode(&vec![0xa5; node.ty.bytes() as usize], &node.ty),
            Op::Pii { instr, comp } => {
                let bytes: Vec<Vec<u8>> = args.iter().map(|t| encode(t)).collect();
                let out = run_instruction(isa, *instr, comp, &bytes);
                decode(&encode(&out), &node.ty)
            }
            op => eval_op(op, &node.ty, &args),
        })
    };
    loop {
        let mut progress = false;
        for &id in &ids {
            if value.contains_key(&id) {
                continue;
            }
            // The first node (in class order) that is not a PII and can be evaluated gives the
            // class its value; PIIs are what is being checked.
            if let Some(t) = eg[id].nodes.iter().filter(|n| !n.is_pii()).find_map(|n| eval_node(n, &value)) {
                value.insert(id, t);
                progress = true;
            }
        }
        if !progress {
            break;
        }
    }
    assert_eq!(value.len(), ids.len(), "every class has a value");
    let mut checked = 0;
    for &id in &ids {
        for node in &eg[id].nodes {
            let got = eval_node(node, &value).expect("children have values");
            assert!(close(&got, &value[&id]), "class {id} of {}: e-node {node:?} computes another value", k.name);
            checked += 1;
        }
    }
    checked
}
