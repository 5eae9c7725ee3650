"""Write the input matrices Q, K, V of the attention examples (seeded, reproducible).

Each matrix is 64x64 bf16, stored raw (little-endian, row-major) as data/<name>.dat in
every example directory. Q and K are drawn so that the scores Q.K^T have a standard
deviation near 1, the range where a bf16 softmax is neither flat nor one-hot; V is uniform
in [-1, 1].

    python examples/make_data.py
"""

from pathlib import Path

import ml_dtypes
import numpy as np

SEED = 20251130
SHAPE = (64, 64)
EXAMPLES = ("QKV", "QKV_new")


def attention_inputs(seed: int = SEED) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    # std(Q.K^T) = sqrt(64) * sigma^2 = 1 for sigma = 64 ** -0.25
    sigma = 64 ** -0.25
    q = rng.normal(0.0, sigma, SHAPE)
    k = rng.normal(0.0, sigma, SHAPE)
    v = rng.uniform(-1.0, 1.0, SHAPE)
    return {name: m.astype(ml_dtypes.bfloat16) for name, m in (("Q", q), ("K", k), ("V", v))}


def main() -> None:
    here = Path(__file__).resolve().parent
    matrices = attention_inputs()
    for example in EXAMPLES:
        data = here / example / "data"
        data.mkdir(parents=True, exist_ok=True)
        for name, matrix in matrices.items():
            (data / f"{name}.dat").write_bytes(matrix.view(np.uint16).astype("<u2").tobytes())
            print(f"wrote {data / f'{name}.dat'}")


if __name__ == "__main__":
    main()
