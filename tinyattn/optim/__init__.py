"""`tinyattn.optim`: SGD, Adam and AdamW (PyTorch's names and defaults) and learning-rate schedules.

    optimizer = tinyattn.optim.AdamW(model.parameters(), lr=1e-3)
    for step in range(steps):
        logits, loss = model(xb, yb)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
"""

from . import lr_scheduler
from .optimizer import SGD, Adam, AdamW, Optimizer

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "lr_scheduler"]
