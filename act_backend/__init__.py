"""act-backend: test oracles, compiler backends and editor tooling from TAIDL specs.

The public API is the TAIDL front end (``Accelerator``) and the two generators. The
generators (and ``act_backend.jax``, JAX in one call) are imported on first use, so that
``import act_backend`` stays light for the language server, which only validates.
"""

from typing import TYPE_CHECKING

from act_backend.spec import Accelerator

if TYPE_CHECKING:
    from act_backend.backend.generator import generate_backend
    from act_backend.oracle import generate_oracle

__all__ = ["Accelerator", "generate_backend", "generate_oracle"]
__version__ = "0.1.0"


def __getattr__(name: str):
    if name == "generate_backend":
        from act_backend.backend.generator import generate_backend

        return generate_backend
    if name == "generate_oracle":
        from act_backend.oracle import generate_oracle

        return generate_oracle
    if name == "jax":
        import act_backend.jax

        return act_backend.jax
    raise AttributeError(f"module 'act_backend' has no attribute {name!r}")
