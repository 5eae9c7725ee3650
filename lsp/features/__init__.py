"""Editor features (symbols, hover, completion, definition, code lenses, code actions, inlay
hints, navigation between a kernel and its assembly), one module each.

Every module exposes plain functions from a document's text and model to data in server
units; ``lsp.server`` converts their results to protocol objects.
"""
