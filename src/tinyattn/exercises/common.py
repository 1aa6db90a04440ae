"""Small helpers the exercise files share: example values, and what is special about a case."""

import numpy as np


def example_values(seed, low=None, **shapes):
    """{name: float64 array of that shape}, drawn from a generator seeded with `seed` (normal values,
    or uniform in [low, 2] where `low` is given)."""
    rng = np.random.default_rng(seed)
    if low is None:
        return {name: rng.standard_normal(shape) for name, shape in shapes.items()}
    return {name: rng.uniform(low, 2.0, shape) for name, shape in shapes.items()}


def broadcast_edge(case, names=None):
    """What broadcasting does in this case: 'y has a size-1 dim that is broadcast'."""
    arrays = {name: value for name, value in case.items() if isinstance(value, np.ndarray)
              and np.issubdtype(value.dtype, np.floating) and (names is None or name in names)}
    full = np.broadcast_shapes(*(a.shape for a in arrays.values()))
    notes = []
    for name, value in arrays.items():
        shape = value.shape
        stretched = [d for d, size in enumerate(shape) if size == 1 and full[len(full) - len(shape) + d] != 1]
        if stretched:
            notes.append(f"{name} has a size-1 dim that is broadcast")
        elif len(shape) < len(full):
            notes.append(f"{name} has fewer dims than the output")
    return "; ".join(notes)


def has_size_one(case):
    return any(1 in value.shape for value in case.values() if isinstance(value, np.ndarray))


def reduction_edge(case):
    """What is special about a sum/mean case: keepdim=True, a negative dim, a size-1 dim."""
    notes = []
    if case["keepdim"]:
        notes.append("keepdim=True")
    if case["dim"] < 0:
        notes.append(f"a negative dim ({case['dim']})")
    if has_size_one(case):
        notes.append("a size-1 dim")
    return ", ".join(notes)
