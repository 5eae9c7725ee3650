"""QKV attention on the QKV_new accelerator, written by hand: softmax(Q.K^T).V in 10 instructions.

K goes to d1 and is transposed on chip into d3, where gemm_13 reads its right operand; Q is
then loaded into d1 over K, V into d3 over K^T once the scores are formed, and P moves from d2
to d1 to be the left operand of the second product.
"""

import jax.numpy as jnp


def qkv(kernel, api):
    @kernel(hbm=32768,
            input=[{'addr': 0, 'shape': (64, 64), 'dtype': jnp.bfloat16},
                   {'addr': 8192, 'shape': (64, 64), 'dtype': jnp.bfloat16},
                   {'addr': 16384, 'shape': (64, 64), 'dtype': jnp.bfloat16}],
            constant=[],
            output=[{'addr': 24576, 'shape': (64, 64), 'dtype': jnp.bfloat16}])
    def qkv_():
        api.load_01(n=64, addr_in=8192, addr_out=0)
        api.transpose_13(addr_in=0, addr_out=0)
        api.load_01(n=64, addr_in=0, addr_out=0)
        api.gemm_13(addr_1=0, addr_2=0, addr_out=0)
        api.softmax(n=64, addr=0)
        api.mov_21(n=64, addr_in=0, addr_out=0)
        api.load_03(n=64, addr_in=16384, addr_out=0)
        api.gemm_13(addr_1=0, addr_2=0, addr_out=0)
        api.mov_21(n=64, addr_in=0, addr_out=64)
        api.store_10(n=64, addr_in=64, addr_out=24576)
    return qkv_
