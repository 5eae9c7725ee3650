//! Emission: the assembly text of a program, exactly as the oracle reads it.

mod backend_support;

use act_compiler::emit::{assembly, Step};
use act_compiler::lang::{DType, Ty};
use act_compiler::layout::{HbmLayout, Signature};
use backend_support::*;

#[test]
fn attention_assembly_is_the_documented_format() {
    let isa = qkv();
    let graph = attention(&isa);
    let layout = attention_layout();
    let addrs: Vec<Vec<i64>> = vec![
        vec![0, 0],
        vec![8192, 64],
        vec![0, 64, 0],
        vec![0],
        vec![0, 0],
        vec![16384, 64],
        vec![0, 64, 0],
        vec![0, 0],
        vec![0, 24576],
    ];
    let steps: Vec<Step> = (3..12)
        .zip(&addrs)
        .map(|(n, addr)| {
            let act_compiler::pii::PiiNode::Instr { instr, comp, .. } = &graph.nodes[n] else {
                panic!()
            };
            Step { instr: &isa.instructions[*instr], comp, addr }
        })
        .collect();
    let text = assembly(&attention_signature(), &layout, 32768, &steps).unwrap();
    let spec = "{'addr': A, 'shape': (64, 64), 'dtype': jnp.bfloat16}";
    let expected = format!(
        "import jax.numpy as jnp


def qkv(kernel, api):
    @kernel(hbm=32768,
            input=[{}, {}, {}],
            constant=[],
            output=[{}])
    def qkv_():
        api.load_rm(n=64, addr_in=0, addr_out=0)
        api.load_cm(n=64, addr_in=8192, addr_out=64)
        api.gemm(addr_1=0, addr_2=64, addr_out=0)
        api.softmax(n=64, addr=0)
        api.mov(n=64, addr_in=0, addr_out=0)
        api.load_rm(n=64, addr_in=16384, addr_out=64)
        api.gemm(addr_1=0, addr_2=64, addr_out=0)
        api.mov(n=64, addr_in=0, addr_out=0)
        api.store_rm(n=64, addr_in=0, addr_out=24576)
    return qkv_
",
        spec.replace('A', "0"),
        spec.replace('A', "8192"),
        spec.replace('A', "16384"),
        spec.replace('A', "24576"),
    );
    assert_eq!(text, expected);
    assert_eq!(assembly(&attention_signature(), &layout, 32768, &steps).unwrap(), text);
}

#[test]
fn shapes_and_element_types_are_python_literals() {
    let sig = Signature {
        module: "jit_f.1".into(),
        inputs: vec![
            Ty::new(DType::F32, vec![8]),
            Ty::new(DType::S8, vec![]),
        ],
        outputs: vec![Ty::new(DType::U32, vec![2, 3, 4])],
    };
    let layout = HbmLayout::packed(&sig).unwrap();
    let text = assembly(&sig, &layout, 200, &[]).unwrap();
    assert!(text.contains("def jit_f_1(kernel, api):"), "{text}");
    assert!(text.contains("input=[{'addr': 0, 'shape': (8,), 'dtype': jnp.float32}, {'addr': 32, 'shape': (), 'dtype': jnp.int8}],"), "{text}");
    assert!(
        text.contains("output=[{'addr': 33, 'shape': (2, 3, 4), 'dtype': jnp.uint32}])"),
        "{text}"
    );
    assert!(text.contains("    def jit_f_1_():\n        pass\n    return jit_f_1_\n"), "{text}");
}

