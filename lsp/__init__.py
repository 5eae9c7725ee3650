"""The act-backend language server: diagnostics, navigation and commands for TAIDL specs
(Python files that build an ``Accelerator``) and XLA-HLO kernels (``.hlo`` files).

The protocol layer (``server.py`` and the per-feature handlers it registers) stays thin:
every feature is a plain function over document text that returns data, so it can be
unit-tested without a client. Anything that runs user code or a build happens in a child
process (``spec/child.py``), never inside the server.
"""
