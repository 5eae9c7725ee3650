"""The protocol boundary: plain results in server units -> ``lsprotocol`` objects in the
client's position encoding (UTF-16 unless negotiated otherwise), and back for positions."""

from __future__ import annotations

from collections.abc import Sequence

from lsprotocol import types
from pygls.workspace.position_codec import (
    PositionCodec,
    ServerTextPosition,
    ServerTextRange,
)

from lsp.findings import Finding
from lsp.text_map import Position, TextRange

SOURCE = "act"

_SEVERITY = {
    "error": types.DiagnosticSeverity.Error,
    "warning": types.DiagnosticSeverity.Warning,
    "information": types.DiagnosticSeverity.Information,
    "hint": types.DiagnosticSeverity.Hint,
}


class Converter:
    """Converts between server units and the client's units for one document snapshot."""

    def __init__(self, codec: PositionCodec, lines: Sequence[str]):
        self.codec = codec
        self.lines = list(lines)

    def range(self, where: TextRange) -> types.Range:
        server = ServerTextRange(ServerTextPosition(*where.start), ServerTextPosition(*where.end))
        return self.codec.range_to_client_units(self.lines, server)

    def position(self, pos: Position) -> types.Position:
        return self.codec.position_to_client_units(self.lines, ServerTextPosition(*pos))

    def from_client(self, position: types.Position) -> Position:
        server = self.codec.position_from_client_units(self.lines, position)
        return (server.line, server.character)

    def diagnostic(self, finding: Finding, version: int | None = None) -> types.Diagnostic:
        """The finding as a diagnostic; its quick fixes travel in ``data`` (in server units,
        with the document ``version`` they were worked out for: ``features.code_actions``
        offers them only on that version)."""
        data = None
        if finding.fixes:
            data = {"version": version, "fixes": [fix.as_dict() for fix in finding.fixes]}
        return types.Diagnostic(
            range=self.range(finding.range),
            message=finding.message,
            severity=_SEVERITY.get(finding.severity, types.DiagnosticSeverity.Error),
            code=finding.code,
            source=SOURCE,
            data=data,
        )

