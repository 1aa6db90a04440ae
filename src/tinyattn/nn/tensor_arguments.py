"""The check that an argument is a tensor, which `tinyattn.nn.functional` (functional.py and the
convolutions of functional_conv.py) and the layers (as F.tensor_argument) share. A module of its own:
functional.py imports functional_conv.py, so functional_conv.py cannot import it from there."""

from ..tensor import Tensor


def tensor_argument(value, who, name="input"):
    """`value` if it is a Tensor; otherwise a TypeError that says what to do (a NumPy array or a list
    would fail later with a message about dtypes or attributes)."""
    if not isinstance(value, Tensor):
        library = type(value).__module__.split(".")[0]
        kind = type(value).__name__ if library == "builtins" else f"{library}.{type(value).__name__}"
        hint = " (or tinyattn.from_numpy)" if library == "numpy" else ""
        raise TypeError(f"{who}: the {name} must be a tinyattn tensor, got a {kind}: convert it with "
                        f"tinyattn.tensor(...){hint}")
    return value
