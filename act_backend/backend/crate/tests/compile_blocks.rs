//! Blocks of a kernel's rows: one block's placed program, run once per block, reads and writes
//! each block's rows of the inputs it splits and of the output, the inputs it reads whole
//! where they lie; an access that cannot be moved leaves the kernel to be compiled whole.
//! Blocks of columns read and write their part where it lies in the whole value.

mod select_support;

use act_compiler::emit::PlacedProgram;
use act_compiler::isa::{CmpOp, Constraint, Expr, Isa};
use act_compiler::kernel::{parse_kernel, Kernel};
use act_compiler::layout::{HbmLayout, Signature};
use act_compiler::partition::{instantiate, plan, Plan};
use select_support::isa;

/// A maximum of 64 rows of 16 floats with a row of 16 read whole, in 4 blocks of 16 rows.
fn blocks() -> (Kernel, Plan) {
    let text = "HloModule m\n\nENTRY e {\n  x = f32[64,16] parameter(0)\n  v = f32[16] parameter(1)\n\
                \x20 b = f32[64,16] broadcast(v), dimensions={1}\n  ROOT m = f32[64,16] maximum(x, b)\n}\n";
    let kernel = parse_kernel(text, "k.hlo").expect("a valid kernel");
    let rows = |k: &Kernel| k.nodes[k.root].ty.shape[0] as usize;
    let plan = plan(&kernel, rows, 12, 1).expect("a split into blocks");
    assert_eq!((plan.blocks(), plan.split_inputs()), (4, vec![true, false]));
    (kernel, plan)
}

fn signature(k: &Kernel) -> Signature {
    Signature { module: k.name.clone(), inputs: k.params.clone(), outputs: k.outputs.clone() }
}

/// Every block's run of `program`, in order, each step as `(instruction, addresses)`;
/// `None` where the program cannot be moved.
fn run(isa: &Isa, program: &PlacedProgram) -> Option<Vec<(String, Vec<i64>)>> {
    let (kernel, plan) = blocks();
    let (sig, block_sig) = (signature(&kernel), signature(&plan.block));
    let (layout, block_layout) = (HbmLayout::packed(&sig).unwrap(), HbmLayout::packed(&block_sig).unwrap());
    let text = instantiate(isa, &plan, program, &block_layout, &sig, &layout)?;
    Some(
        text.lines()
            .filter_map(|l| l.trim_start().strip_prefix("api."))
            .map(|call| {
                let (name, args) = call.split_once('(').unwrap();
                let values = args.trim_end_matches(')').split(", ").map(|kv| kv.split_once('=').unwrap().1.parse().unwrap());
                (name.to_string(), values.collect())
            })
            .collect(),
    )
}

fn index(isa: &Isa, name: &str) -> usize {
    isa.instructions.iter().position(|i| i.name == name).unwrap()
}

/// Row 1 of a block's input and the row read whole, their maximum stored as row 1 of its
/// output. The block's layout: its input rows at 0 (1,024 bytes), the row at 1,024 (64), its
/// output at 1,088.
fn row_one(isa: &Isa) -> PlacedProgram {
    PlacedProgram {
        steps: vec![
            (index(isa, "vload"), vec![], vec![64, 0]),
            (index(isa, "vload"), vec![], vec![1024, 1]),
            (index(isa, "vmax"), vec![], vec![0, 1, 2]),
            (index(isa, "vstore"), vec![], vec![2, 1088 + 64]),
        ],
        constants: vec![],
        hbm_end: 2112,
    }
}

#[test]
fn each_block_reads_and_writes_its_own_rows_and_the_whole_input_where_it_lies() {
    let isa = isa("registers_isa.json");
    let steps = run(&isa, &row_one(&isa)).expect("every access moves");
    assert_eq!(steps.len(), 16);
    // The whole kernel: x at 0 (4,096 bytes), v at 4,096 (64), the output at 4,160.
    for (i, block) in steps.chunks(4).enumerate() {
        let i = i as i64;
        assert_eq!(block[0], ("vload".to_string(), vec![64 + 1024 * i, 0]), "block {i}");
        assert_eq!(block[1], ("vload".to_string(), vec![4096, 1]), "block {i}: the row read whole");
        assert_eq!(block[2], ("vmax".to_string(), vec![0, 1, 2]), "block {i}: registers stay");
        assert_eq!(block[3], ("vstore".to_string(), vec![2, 4160 + 1024 * i + 64]), "block {i}");
    }
}

#[test]
fn an_access_across_two_regions_or_against_a_constraint_is_not_moved() {
    let mut isa = isa("registers_isa.json");
    let mut across = row_one(&isa);
    // Bytes 1,000 to 1,064: the end of the block's input rows and the start of the row.
    across.steps[0].2[0] = 1000;
    assert!(run(&isa, &across).is_none());
    // A load that may only read below 2,048: in the kernel, the row read whole lies at 4,096.
    let vload = index(&isa, "vload");
    isa.instructions[vload].constraints.push(Constraint { op: CmpOp::Lt, lhs: Expr::Attr("a.addr".into()), rhs: Expr::Int(2048) });
    assert!(run(&isa, &row_one(&isa)).is_none());
}

#[test]
fn a_strided_store_writes_back_every_byte_of_its_span_it_does_not_update() {
    // What lets a block of columns, moved to a later part, span on past the result's end.
    let isa = isa("gemmini_isa.json");
    let updates = |name: &str| isa.instructions[index(&isa, name)].updates_in_place();
    assert!(updates("mvout_acc_strided") && updates("mvout_strided"));
    assert!(!updates("mvout_acc") && !updates("mvin_strided"));
}

/// A 16x32 by 32x64 int8 product in 4 blocks of 16 columns, each written in place into the
/// whole 16x64 result. Both layouts: A at 0 (512 bytes), B at 512 (2,048), the result at
/// 2,560 (4,096), a block's columns 64 bytes on from the block before's.
fn columns_in_place() -> (Kernel, Plan) {
    let text = "HloModule m\n\nENTRY e {\n  a = s8[16,32] parameter(0)\n  b = s8[32,64] parameter(1)\n\
                \x20 ROOT d = s32[16,64] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n";
    let kernel = parse_kernel(text, "k.hlo").expect("a valid kernel");
    let columns = |k: &Kernel| k.outputs[0].shape[1] as usize;
    let plan = plan(&kernel, columns, 16 - kernel.nodes.len(), 16).expect("a split into blocks");
    assert_eq!((plan.blocks(), plan.part.clone()), (4, vec![16, 16]));
    (kernel, plan)
}

/// The assembly of `steps` (instruction, computational and addressing attributes) run in
/// [`columns_in_place`]'s blocks; `None` where they cannot be moved.
fn in_place(isa: &Isa, steps: &[(&str, Vec<i64>, Vec<i64>)]) -> Option<String> {
    let (kernel, plan) = columns_in_place();
    let (sig, block_sig) = (signature(&kernel), signature(&plan.block));
    let (layout, block_layout) = (HbmLayout::packed(&sig).unwrap(), HbmLayout::packed(&block_sig).unwrap());
    let steps = steps.iter().map(|(name, comp, addr)| (index(isa, name), comp.clone(), addr.clone())).collect();
    let program = PlacedProgram { steps, constants: vec![], hbm_end: 6656 };
    instantiate(isa, &plan, &program, &block_layout, &sig, &layout)
}

#[test]
fn a_block_of_columns_reads_and_writes_where_its_part_lies_and_may_span_on_past_the_end() {
    let isa = isa("gemmini_isa.json");
    // B's 16 columns, 32 rows at B's row length, and the result's 16 rows at its row length:
    // each span runs from its first row to the end of its last one.
    let steps = [
        ("mvin_strided", vec![32, 16, 64, 0, 1], vec![512, 0]),
        ("mvout_acc_strided", vec![16, 16, 64, 0], vec![2560, 0]),
    ];
    let text = in_place(&isa, &steps).expect("every access moves");
    let addresses: Vec<i64> = text.lines().filter_map(|l| l.split("hbm_addr=").nth(1)?.split(',').next()?.parse().ok()).collect();
    // Block j: B's columns 16 bytes on, the result's 64.
    assert_eq!(addresses, [512, 2560, 528, 2624, 544, 2688, 560, 2752]);
    // The last block's store spans 192 bytes past the result, written back as they were read:
    // the kernel's HBM holds them.
    assert!(text.contains("hbm=6848"), "{text}");
}

#[test]
fn a_write_that_changes_another_blocks_columns_is_not_moved() {
    let isa = isa("gemmini_isa.json");
    // A contiguous store of 16 rows of 16 int32 writes 1,024 bytes from the result's start:
    // rows of the other blocks' columns too.
    assert!(in_place(&isa, &[("mvout_acc", vec![16, 16], vec![2560, 0])]).is_none());
    // One row of the block's 16 columns is its own.
    assert!(in_place(&isa, &[("mvout_acc", vec![1, 16], vec![2560 + 256, 0])]).is_some());
}
