"""Ground truth from XLA itself: an HLO module's text run on XLA's CPU client.

jaxlib parses the text (``hlo_module_from_text``), converts the module to StableHLO and
compiles it on the CPU client, so the reference is XLA's own arithmetic for the very text the
backend compiled. These are jaxlib's private entry points: the jax version is pinned in
tests/requirements.txt and ``tests/test_xla_reference.py`` holds them to a known answer.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def run_hlo(text: str, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """The results of the module's entry computation on ``inputs`` (one array per output,
    in order; a tuple ROOT gives several)."""
    import jax
    from jax._src import xla_bridge
    from jax._src.lib import hlo, xla_client

    module = hlo.hlo_module_from_text(text)
    stablehlo = xla_client._xla.mlir.hlo_to_stablehlo(module.as_serialized_hlo_module_proto())
    backend = xla_bridge.get_backend("cpu")
    device = backend.local_devices()[0]
    executable = backend.compile_and_load(stablehlo, [device], xla_client.CompileOptions())
    buffers = [jax.device_put(np.asarray(x), device) for x in inputs]
    return [np.asarray(out) for out in executable.execute(buffers)]
