"""The ISA table (``isa.json``): the validated spec as data for the oracle and the backend."""

from act_backend.table.isa import FORMAT, dumps, isa_table, table_of, write_isa_table

__all__ = ["FORMAT", "dumps", "isa_table", "table_of", "write_isa_table"]
