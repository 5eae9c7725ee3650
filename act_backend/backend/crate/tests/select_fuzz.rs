//! Random kernels over bf16[64,64] values (deterministic seeds): products with any dimension
//! numbers, transposes, row and column softmaxes, copies, convert round trips, sums. Each
//! either selects, and then every candidate computes the kernel and the e-graph is consistent,
//! or is refused with `NoInstruction`; and selection stays fast.

mod select_support;

use act_compiler::select::SelectError;
use select_support::{assert_candidates_compute_kernel, assert_egraph_consistent, isa, kernel_text, run};

struct Rng(u64);

impl Rng {
    fn next(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((self.0 >> 33) % n as u64) as usize
    }
}

const T: &str = "bf16[64,64]";

/// A random kernel: `params` inputs, then `steps` operations on earlier values.
fn random_kernel(seed: u64) -> String {
    let mut rng = Rng(seed);
    let params = 1 + rng.next(3);
    let steps = 2 + rng.next(6);
    let mut lines = vec![
        "HloModule fuzz".to_string(),
        "%add (x: bf16[], y: bf16[]) -> bf16[] {".into(),
        "  %x = bf16[] parameter(0)".into(),
        "  %y = bf16[] parameter(1)".into(),
        "  ROOT %s = bf16[] add(%x, %y)".into(),
        "}".into(),
        "ENTRY e {".into(),
    ];
    let mut values: Vec<String> = Vec::new();
    for i in 0..params {
        lines.push(format!("  p{i} = {T} parameter({i})"));
        values.push(format!("p{i}"));
    }
    for s in 0..steps {
        let a = values[rng.next(values.len())].clone();
        let b = values[rng.next(values.len())].clone();
        let v = format!("v{s}");
        match rng.next(7) {
            0 | 1 => lines.push(format!(
                "  {v} = {T} dot({a}, {b}), lhs_contracting_dims={{{}}}, rhs_contracting_dims={{{}}}",
                rng.next(2),
                rng.next(2)
            )),
            2 => lines.push(format!("  {v} = {T} transpose({a}), dimensions={{1,0}}")),
            3 => {
                let (reduced, kept) = if rng.next(2) == 0 { (1, 0) } else { (0, 1) };
                lines.push(format!("  {v}e = {T} exponential({a})"));
                lines.push(format!("  {v}z = bf16[] constant(0)"));
                lines.push(format!("  {v}r = bf16[64] reduce({v}e, {v}z), dimensions={{{reduced}}}, to_apply=%add"));
                lines.push(format!("  {v}b = {T} broadcast({v}r), dimensions={{{kept}}}"));
                lines.push(format!("  {v} = {T} divide({v}e, {v}b)"));
            }
            4 => lines.push(format!("  {v} = {T} copy({a})")),
            5 => {
                lines.push(format!("  {v}w = f32[64,64] convert({a})"));
                lines.push(format!("  {v} = {T} convert({v}w)"));
            }
            _ => lines.push(format!("  {v} = {T} add({a}, {b})")),
        }
        values.push(v);
    }
    let last = lines.len() - 1;
    lines[last] = lines[last].replacen("  ", "  ROOT ", 1);
    lines.push("}".into());
    lines.join("\n") + "\n"
}

#[test]
fn random_kernels_select_soundly_or_are_refused() {
    let tables = [isa("qkv_isa.json"), isa("qkv_new_isa.json")];
    let (mut selected, mut refused) = (0, 0);
    for seed in 0..48u64 {
        let text = random_kernel(seed);
        let k = kernel_text(&text);
        for isa in &tables {
            let started = std::time::Instant::now();
            let result = run(&k, isa);
            let ms = started.elapsed().as_secs_f64() * 1e3;
            assert!(ms < 2000.0, "seed {seed} on {}: selection took {ms:.0} ms\n{text}", isa.name);
            match result {
                Ok(sel) => {
                    selected += 1;
                    assert_candidates_compute_kernel(isa, &k, &sel);
                    assert_egraph_consistent(&k, isa);
                }
                Err(SelectError::NoInstruction { .. }) => refused += 1,
                Err(e) => panic!("seed {seed}: {e}\n{text}"),
            }
        }
    }
    // Both outcomes occur: the generator is not trivially one-sided.
    eprintln!("{selected} selected, {refused} refused");
    assert!(selected >= 10 && refused >= 10, "{selected} selected, {refused} refused");
}
