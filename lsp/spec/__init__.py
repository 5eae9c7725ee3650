"""Everything the server knows about TAIDL specs: reading one without running it
(``reader``, ``replay``), running it in a child process (``child``, ``runner``), the
diagnostics either way (``check``), and what it declares, for the features (``describe``,
``model``)."""
