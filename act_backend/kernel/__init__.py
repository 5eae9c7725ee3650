"""The kernel front end: XLA HLO text -> ``act_backend.hlo.ir.Module``, its checks, and an
independent NumPy reference evaluator of what a kernel computes."""

from act_backend.kernel.errors import HloSyntaxError
from act_backend.kernel.parser import parse_hlo
from act_backend.kernel.shapes import TupleType

__all__ = ["HloSyntaxError", "TupleType", "parse_hlo"]
