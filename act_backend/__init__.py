"""act-backend: test oracles, compiler backends and editor tooling from TAIDL specs.

The public API is the TAIDL front end (``Accelerator``) and the two generators.
"""

from act_backend.build import generate_backend
from act_backend.oracle import generate_oracle
from act_backend.spec import Accelerator

__all__ = ["Accelerator", "generate_backend", "generate_oracle"]
__version__ = "0.1.0"
