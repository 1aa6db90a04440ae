"""The named tuples that ops with several results return, as `torch.return_types` has them.

`x.max(dim=1)` gives `values` and `indices`: unpack them (`values, indices = x.max(1)`) or read
them by name (`x.max(1).values`). Each prints one field a line, as PyTorch prints its own:

    tinyattn.return_types.max(
    values=tensor([5., 6.]),
    indices=tensor([1, 2]))
"""

import collections


def named_result(name, fields):
    """The named tuple `tinyattn.return_types.<name>` with these fields (made once, then reused)."""
    if name in _MADE:
        return _MADE[name]
    base = collections.namedtuple(name, fields)

    def __repr__(self):
        return f"tinyattn.return_types.{name}(\n" + ",\n".join(f"{f}={v!r}" for f, v in zip(fields, self)) + ")"

    made = type(name, (base,), {"__slots__": (), "__repr__": __repr__, "__str__": __repr__,
                                "__module__": __name__, "__qualname__": name})
    _MADE[name] = made
    globals()[name] = made  # reachable by its printed name (and by pickle)
    return made


_MADE = {}
for _name in ("max", "min", "topk", "sort", "median"):
    named_result(_name, ["values", "indices"])
named_result("svd", ["U", "S", "V"])
named_result("linalg_svd", ["U", "S", "Vh"])
named_result("histogram", ["hist", "bin_edges"])
