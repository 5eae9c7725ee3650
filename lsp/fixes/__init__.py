"""Quick fixes: the repairs a refusal offers, as text edits computed where the refusal was
found.

A fix is plain data (``Fix``: a title and the edits that make it, in server units); the
check that reports a problem attaches the fixes it has (``spec`` for a spec's problems, with
the accelerator the validation checked; ``kernel`` for a kernel's), and the server hands
them to the client with the diagnostic (its ``data``), to be offered as code actions.
Nothing here decides what is wrong: every fix starts from a refusal of the validation or the
kernel checker, its code and its span, and reads what it needs from the same parsers.
"""
