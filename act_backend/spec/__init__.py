"""The TAIDL front end: the ``Accelerator`` API and the semantics language parser."""

from act_backend.spec.accelerator import HBM, Accelerator, DataModel, Instruction, hbm
from act_backend.spec.semantics import SemanticsError, parse_semantics
from act_backend.spec.sites import CallSite, Site, TextMap

__all__ = ["HBM", "Accelerator", "CallSite", "DataModel", "Instruction", "SemanticsError",
           "Site", "TextMap", "hbm", "parse_semantics"]
