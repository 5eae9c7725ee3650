"""The kernel front end: XLA HLO text -> ``act_backend.hlo.ir.Module``, its checks, and an
independent NumPy reference evaluator of what a kernel computes."""

from act_backend.hlo.ir import TupleType
from act_backend.kernel.check import check_hlo, check_module, load_kernel
from act_backend.kernel.errors import HloSyntaxError, KernelError
from act_backend.kernel.parser import parse_hlo
from act_backend.kernel.reference import UnsupportedOperator, evaluate

__all__ = ["HloSyntaxError", "KernelError", "TupleType", "UnsupportedOperator", "check_hlo",
           "check_module", "evaluate", "load_kernel", "parse_hlo"]
