"""The layers that compare two inputs: CosineSimilarity and PairwiseDistance (the functional forms are
F.cosine_similarity and F.pairwise_distance)."""

from . import functional as F
from .module import Module


class CosineSimilarity(Module):
    """The cosine similarity of x1 and x2 along `dim` (see functional.cosine_similarity)."""

    def __init__(self, dim=1, eps=1e-8):
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1, x2):
        return F.cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    """The p-norm of x1 - x2 + eps along the last dim (see functional.pairwise_distance)."""

    def __init__(self, p=2.0, eps=1e-6, keepdim=False):
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1, x2):
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)
