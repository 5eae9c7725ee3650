"""The oracle generator: ``generate_oracle(acc)`` writes ``targets/<name>/oracle/``.

The generated package is the ISA table (``isa.json``) beside a copy of ``runtime/``, a
functional simulator that compiles each kernel's instruction semantics with JAX/XLA.
"""

from act_backend.oracle.generator import generate_oracle, write_oracle

__all__ = ["generate_oracle", "write_oracle"]
