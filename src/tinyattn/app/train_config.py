"""The settings of a training run (`TrainConfig`): what `tinyattn train` takes on its command line, what
`training.train` runs and what a checkpoint's meta.json stores under `train`. Apart from the training loop,
so that checkpoint.py can check a saved configuration without importing the loop that saves it."""

import dataclasses
import math

from .. import random as trandom
from .models import GPTConfig
from ..optim.lr_scheduler import warmup_cosine


@dataclasses.dataclass
class TrainConfig:
    model: str = "gpt"  # 'gpt' or 'bigram'
    steps: int = 300  # optimizer steps in total (the bundled sonnets: about half a minute)
    batch_size: int = 12
    block_size: int = 64  # context length (tokens)
    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 128
    dropout: float = 0.0
    lr: float = 1e-3  # peak learning rate
    min_lr: float = 1e-4  # the cosine decays to this
    warmup_steps: int = 100
    lr_schedule: str = "cosine"  # 'cosine' (warmup, then cosine decay) or 'constant'
    weight_decay: float = 0.1  # AdamW's, on weight matrices and embeddings only
    beta1: float = 0.9
    beta2: float = 0.99
    grad_clip: float = 1.0  # max gradient norm; 0 turns clipping off
    eval_interval: int = 100
    eval_iters: int = 20
    seed: int = 1337
    device: str = "cpu"
    train_fraction: float = 0.9

    def __post_init__(self):
        if self.model not in ("gpt", "bigram"):
            raise ValueError(f"model must be 'gpt' or 'bigram', got {self.model!r}")
        if self.lr_schedule not in ("cosine", "constant"):
            raise ValueError(f"lr_schedule must be 'cosine' or 'constant', got {self.lr_schedule!r}")
        for name in ("steps", "batch_size", "block_size", "eval_interval", "eval_iters"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise ValueError(f"{name} must be a positive integer, got {getattr(self, name)!r}")
        if not (self.lr > 0 and math.isfinite(self.lr)):
            raise ValueError(f"lr must be a positive number, got {self.lr}")
        if self.lr_schedule == "cosine" and not 0 <= self.min_lr <= self.lr:
            raise ValueError(f"min_lr must be between 0 and lr ({self.lr}), got {self.min_lr}: the cosine "
                             "decays from lr to min_lr")
        if not isinstance(self.warmup_steps, int) or self.warmup_steps < 0:
            raise ValueError(f"warmup_steps must be 0 or more, got {self.warmup_steps!r}")
        for name in ("weight_decay", "grad_clip"):
            if not (getattr(self, name) >= 0 and math.isfinite(getattr(self, name))):
                raise ValueError(f"{name} must be 0 or more, got {getattr(self, name)}")
        trandom.check_seed(self.seed)
        if self.model == "gpt":  # the model's own checks (heads divide the embedding, ...), before any work
            GPTConfig(**self.model_config(vocab_size=1))

    def model_config(self, vocab_size):
        """The model's constructor arguments for a vocabulary of `vocab_size` characters."""
        if self.model == "bigram":
            return {"vocab_size": vocab_size}
        return dict(vocab_size=vocab_size, block_size=self.block_size, n_layer=self.n_layer,
                    n_head=self.n_head, n_embd=self.n_embd, dropout=self.dropout)

    def lr_at(self, step):
        """The learning rate of step `step` (counting from 0)."""
        if self.lr_schedule == "constant":
            return self.lr
        return warmup_cosine(step, self.lr, self.min_lr, self.warmup_steps, self.steps)
