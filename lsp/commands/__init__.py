"""The ``workspace/executeCommand`` commands: generate a backend, compile and simulate a
kernel. Each runs its work in a child process, reports progress and can be cancelled."""
