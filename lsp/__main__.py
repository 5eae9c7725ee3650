"""``python -m lsp``: start the language server on stdio."""

from lsp.server import main

main()
