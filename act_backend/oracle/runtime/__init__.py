"""The oracle runtime: the Python package copied into every generated oracle.

Beside an ``isa.json`` it simulates that accelerator: ``decorator`` (``kernel``,
``set_simulation_backend``), ``api`` (one function per instruction), ``tracing`` (recording api
calls), ``semantics`` (instruction semantics lowered to JAX), ``state`` (HBM and on-chip
buffers), ``executable`` (compiling a program whole or step by step), ``bits`` (floating values
moved as their bits) and ``table`` (reading ``isa.json``). It imports nothing from
act_backend. The generator writes the oracle's own ``__init__.py``; this one only marks the
source package.
"""
