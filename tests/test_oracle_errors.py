"""The oracle refuses wrong kernels with errors that name the instruction and the operand.

Nothing is clamped or guessed: a slice outside its buffer, a missing, unknown or non-integer
attribute, attribute values for which the semantics do not fit the slices, and inputs of the
wrong shape or type all stop the simulation with a message saying what and where.
"""

from __future__ import annotations

import re
import sys

import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from assembly.probe_tables import probe_table
from helpers.oracle_harness import load_oracle

from act_backend.oracle import write_oracle

BF16 = ml_dtypes.bfloat16
TILE = {"shape": (64, 64), "dtype": jnp.bfloat16}


@pytest.fixture(scope="module")
def oracle(tmp_path_factory):
    module = load_oracle(write_oracle(probe_table(), tmp_path_factory.mktemp("p") / "oracle"))
    return (sys.modules[f"{module.__name__}.decorator"].kernel,
            sys.modules[f"{module.__name__}.api"])


def traced(oracle, body, hbm=32768, inputs=(), outputs=()):
    """Traces ``body`` (which calls the api) as a kernel; returns the kernel."""
    kernel, _ = oracle
    k = kernel(hbm=hbm, input=list(inputs), output=list(outputs))(body)
    k("cost")()
    return k


def refused(oracle, body, message, **kwargs):
    with pytest.raises(ValueError, match=message) as info:
        traced(oracle, body, **kwargs)
    return str(info.value)


# ---------------------------------------------------------------------------------------------
# Slices outside their buffers


def test_an_hbm_slice_past_the_end_names_instruction_operand_and_rows(oracle):
    _, api = oracle

    def qkv_():
        api.load_rm(n=64, addr_in=32000, addr_out=0)

    text = refused(oracle, qkv_, r"^load_rm input 0 \(d0\): rows \[32000, 40192\) exceed HBM "
                                 r"of 32768 bytes")
    assert text.endswith("(call 1 of kernel qkv_)")


def test_an_on_chip_slice_past_the_end_names_the_buffer_and_its_rows(oracle):
    _, api = oracle

    def body():
        api.load_rm(n=64, addr_in=0, addr_out=0)
        api.mov(n=64, addr_in=0, addr_out=100)

    text = refused(oracle, body, r"^mov output 0 \(d1\): rows \[100, 164\) exceed d1 of 128 "
                                 r"rows")
    assert "(call 2 of kernel body)" in text


def test_a_negative_address_is_refused_not_wrapped(oracle):
    _, api = oracle
    refused(oracle, lambda: api.gemm(addr_1=-64, addr_2=0, addr_out=0),
            r"^gemm input 0 \(d1\): rows \[-64, 0\) start below 0")


def test_a_slice_past_the_end_of_a_second_access_dim_says_which_dim(oracle):
    _, api = oracle
    refused(oracle, lambda: api.load_block(h=2, w=3, addr_in=0, row=1, col=6),
            r"^load_block output 0 \(d4\): rows \[6, 9\) exceed d4 of 8 rows along access "
            r"dim 1")


def test_a_size_that_is_not_positive_is_refused(oracle):
    _, api = oracle
    refused(oracle, lambda: api.load_rm(n=0, addr_in=0, addr_out=0),
            r"^load_rm input 0 \(d0\): size 0 is not positive")


# ---------------------------------------------------------------------------------------------
# Attributes


def test_a_missing_attribute_is_named(oracle):
    _, api = oracle
    refused(oracle, lambda: api.load_rm(n=64, addr_in=0),
            r"^load_rm: missing attribute 'addr_out'")


def test_an_unknown_attribute_is_named_with_the_accepted_ones(oracle):
    _, api = oracle
    refused(oracle, lambda: api.load_rm(n=64, addr_in=0, addr_out=0, stride=2),
            r"^load_rm: unknown attribute 'stride' \(accepted: n, addr_in, addr_out\)")


@pytest.mark.parametrize("value, shown", [(64.0, r"64\.0 \(float\)"), ("64", r"'64' \(str\)"),
                                          (True, r"True \(bool\)")])
def test_a_non_integer_attribute_is_refused(oracle, value, shown):
    _, api = oracle
    refused(oracle, lambda: api.load_rm(n=value, addr_in=0, addr_out=0),
            rf"^load_rm: attribute 'n' must be an integer, got {shown}")


def test_numpy_integers_are_integers(oracle):
    _, api = oracle
    k = traced(oracle, lambda: api.load_rm(n=np.int64(64), addr_in=np.uint16(0),
                                           addr_out=np.int32(0)))
    assert k("cost")() == 1


def test_positional_arguments_are_refused(oracle):
    _, api = oracle
    refused(oracle, lambda: api.load_rm(64, 0, 0),
            r"^load_rm: takes keyword arguments only \(n, addr_in, addr_out\), got 3 "
            r"positional")


def test_an_api_call_outside_a_kernel_is_refused(oracle):
    _, api = oracle
    with pytest.raises(ValueError, match=r"^api\.mov was called outside a kernel"):
        api.mov(n=1, addr_in=0, addr_out=0)


# ---------------------------------------------------------------------------------------------
# Attribute values for which the semantics do not fit


def test_a_parameter_that_disagrees_with_its_slice_names_both(oracle):
    _, api = oracle
    traced(oracle, lambda: api.load_pair(n=2, addr_in=0, addr_out=0))
    refused(oracle, lambda: api.load_pair(n=3, addr_in=0, addr_out=0),
            r"^load_pair \(n=3\) input 0 \(d0\): parameter\(0\) is u8\[256\] but rows "
            r"\[0, 384\) hold u8\[384\]")


def test_semantics_that_disagree_for_a_value_name_the_operator(oracle):
    _, api = oracle
    traced(oracle, lambda: api.load_two(n=2, addr_in=0, addr_out=0))
    refused(oracle, lambda: api.load_two(n=3, addr_in=0, addr_out=0),
            r"^load_two \(n=3\): %a = reshape\(%In1\): cannot reshape u8\[384\] \(384 "
            r"elements\) to u8\[2,64,2\]")


# ---------------------------------------------------------------------------------------------
# Kernel declarations and inputs


def _qkv_like(oracle):
    kernel, api = oracle

    @kernel(hbm=32768,
            input=[{"addr": 0, **TILE}, {"addr": 8192, **TILE}],
            output=[{"addr": 16384, **TILE}])
    def qkv_():
        api.load_rm(n=64, addr_in=0, addr_out=0)
        api.load_cm(n=64, addr_in=8192, addr_out=64)
        api.gemm(addr_1=0, addr_2=64, addr_out=0)
        api.mov(n=64, addr_in=0, addr_out=0)
        api.store_rm(n=64, addr_in=0, addr_out=16384)

    return qkv_


def test_an_input_of_the_wrong_dtype_is_refused(oracle):
    k = _qkv_like(oracle)
    good = np.zeros((64, 64), BF16)
    with pytest.raises(ValueError, match=r"^kernel qkv_: input 1 must be bf16\[64,64\], got "
                                         r"f32\[64,64\]"):
        k("fsim")(good, np.zeros((64, 64), np.float32))


def test_an_input_of_the_wrong_shape_is_refused(oracle):
    k = _qkv_like(oracle)
    with pytest.raises(ValueError, match=r"^kernel qkv_: input 0 must be bf16\[64,64\], got "
                                         r"bf16\[64,32\]"):
        k("fsim")(np.zeros((64, 32), BF16), np.zeros((64, 64), BF16))


def test_a_wrong_number_of_inputs_is_refused(oracle):
    k = _qkv_like(oracle)
    with pytest.raises(ValueError, match=r"^kernel qkv_: takes 2 inputs, got 1"):
        k("fsim")(np.zeros((64, 64), BF16))


def test_an_input_that_is_not_an_array_is_refused(oracle):
    k = _qkv_like(oracle)
    with pytest.raises(ValueError, match=r"^kernel qkv_: input 0 must be an array of "
                                         r"bf16\[64,64\], got list"):
        k("fsim")([[0.0] * 64] * 64, np.zeros((64, 64), BF16))


def test_fsim_compile_checks_inputs_it_is_given(oracle):
    k = _qkv_like(oracle)
    with pytest.raises(ValueError, match=r"^kernel qkv_: input 1 must be bf16\[64,64\]"):
        k("fsim-compile")(np.zeros((64, 64), BF16), np.zeros((64, 64), np.int8))


def test_an_unknown_mode_is_refused(oracle):
    k = _qkv_like(oracle)
    with pytest.raises(ValueError, match=re.escape(
            "kernel qkv_: unknown mode 'run' (modes: fsim-compile, fsim, cost)")):
        k("run")


def test_a_declared_tensor_beyond_hbm_is_refused(oracle):
    kernel, _ = oracle
    with pytest.raises(ValueError, match=r"^kernel k: output 0: bf16\[64,64\] at addr 30000 "
                                         r"needs bytes \[30000, 38192\), beyond HBM of 32768"):
        kernel(hbm=32768, input=[], output=[{"addr": 30000, **TILE}])(_named("k"))


def test_a_declared_tensor_with_an_unknown_key_is_refused(oracle):
    kernel, _ = oracle
    with pytest.raises(ValueError, match=r"^kernel k: input 0: unknown key\(s\) layout"):
        kernel(hbm=32768, input=[{"addr": 0, "layout": "rm", **TILE}], output=[])(_named("k"))


def test_a_64_bit_dtype_is_refused_rather_than_narrowed(oracle):
    kernel, _ = oracle
    with pytest.raises(ValueError, match=r"^kernel k: input 0: dtype .*float64.* is not one "
                                         r"the oracle simulates"):
        kernel(hbm=1024, input=[{"addr": 0, "shape": (4,), "dtype": np.float64}],
               output=[])(_named("k"))


def test_a_constant_whose_value_does_not_fill_its_shape_is_refused(oracle):
    kernel, _ = oracle
    with pytest.raises(ValueError, match=r"^kernel k: constant 0: value has shape \[3\], the "
                                         r"constant is declared f32\[2,2\]"):
        kernel(hbm=1024, input=[], output=[],
               constant=[{"addr": 0, "shape": (2, 2), "dtype": jnp.float32,
                          "value": [1.0, 2.0, 3.0]}])(_named("k"))


def _named(name):
    def body():
        pass

    body.__name__ = name
    return body
