"""The error a refused compile raises, pointing at the user's code.

A backend refusal names a line of the HLO it compiled (``kernel.hlo:5: no instruction of QKV
computes `tanh` ...``); ``CompileError`` carries that message, the HLO line, and, when JAX
recorded where the refused operation came from, the source line, which its message starts
with (``model.py:12: ...``), the way a compiler reports an error in the file being compiled.
"""

from __future__ import annotations

from act_backend.jax.source_map import SourceLocation


class CompileError(ValueError):
    """The backend refused a kernel.

    ``source`` is where the refused operation was written (None when the HLO does not say),
    ``hlo_line`` the line number in the compiled HLO (None when the backend named none),
    ``hlo_text`` that line, ``backend_message`` what the backend said, and ``stderr`` the
    backend's whole error output.
    """

    def __init__(self, backend_message: str, *, target: str, source: SourceLocation | None,
                 hlo_line: int | None, hlo_text: str | None, stderr: str):
        self.backend_message = backend_message
        self.target = target
        self.source = source
        self.hlo_line = hlo_line
        self.hlo_text = hlo_text
        self.stderr = stderr
        super().__init__(self._render())

    def _render(self) -> str:
        where = f"{self.source}: " if self.source is not None else ""
        text = f"{where}the {self.target} backend refused the kernel: {self.backend_message}"
        if self.hlo_line is not None:
            text += f"\n  HLO line {self.hlo_line}: {self.hlo_text or '(not an instruction)'}"
        return text
