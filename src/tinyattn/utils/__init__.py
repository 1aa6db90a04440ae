"""`tinyattn.utils`: `data` (Dataset, DataLoader, samplers), as `torch.utils`."""

from . import data
