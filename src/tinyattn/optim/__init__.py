"""`tinyattn.optim`: SGD, Adam, AdamW, RMSprop, Adagrad, Adadelta and LBFGS (PyTorch's names and defaults) and
learning-rate schedules (`tinyattn.optim.lr_scheduler`).

    optimizer = tinyattn.optim.AdamW(model.parameters(), lr=1e-3)
    for step in range(steps):
        logits, loss = model(xb, yb)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
"""

from . import lr_scheduler
from .lbfgs import LBFGS
from .optimizer import SGD, Adagrad, Adam, AdamW, Optimizer, RMSprop
from .adadelta import Adadelta

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "LBFGS", "lr_scheduler"]

# a PyTorch name this module lacks says so (tinyattn/missing.py)
from .. import missing as _missing  # noqa: E402

__getattr__ = _missing.module_getattr(__name__)
__dir__ = _missing.module_dir(__name__)  # its public names only
