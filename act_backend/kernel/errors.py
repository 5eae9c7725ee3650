"""The errors a bad kernel raises: ``file:line:col: message``, with the span they cover."""

from __future__ import annotations

from act_backend.hlo.ir import Span


class KernelError(ValueError):
    """A kernel the toolchain refuses; ``str()`` is ``file:line:col: message``.

    ``code`` is the stable kebab-case id the checker reports the same problem under.
    """

    def __init__(self, file: str | None, line: int, column: int, message: str, *,
                 end_line: int | None = None, end_column: int | None = None,
                 code: str = "kernel-error") -> None:
        self.file = file
        self.line = line
        self.column = column
        self.message = message
        self.end_line = end_line if end_line is not None else line
        self.end_column = end_column if end_column is not None else column + 1
        self.code = code
        super().__init__(f"{file or '<string>'}:{line}:{column}: {message}")

    @classmethod
    def at(cls, span: Span, message: str, code: str | None = None) -> KernelError:
        kwargs = {"code": code} if code is not None else {}
        return cls(span.file, span.line, span.column, message, end_line=span.end_line,
                   end_column=span.end_column, **kwargs)

    @property
    def span(self) -> Span:
        return Span(self.file, self.line, self.column, self.end_line, self.end_column)


class HloSyntaxError(KernelError):
    """Text that cannot be read as an HLO module (``code`` ``hlo-syntax`` for a grammar
    error; more specific ids for well-formed text that still cannot make a module, such as a
    declared operand type that contradicts the operand)."""

    def __init__(self, file: str | None, line: int, column: int, message: str, *,
                 end_line: int | None = None, end_column: int | None = None,
                 code: str = "hlo-syntax") -> None:
        super().__init__(file, line, column, message, end_line=end_line,
                         end_column=end_column, code=code)
