"""Generating a compiler backend: ``generate_backend(acc, cost=None)`` writes the backend crate
to ``targets/<name>/backend/``, builds it with cargo (which builds the C++ allocator with
CMake) and installs the compiler as ``backends/<name>``."""

from act_backend.build.generate import generate_backend

__all__ = ["generate_backend"]
