"""The Hypothesis strategies the exercises draw their random cases from.

Only the checker's random stage imports this module. Hypothesis is an install requirement of
tinyattn; where it has been removed, the checker runs the fixed cases alone and says so.
Values stay in a small range (float64 central differences are exact enough there), and away from
the kinks of ops that have one (ReLU at 0).
"""

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp


class Strategies:
    """What an exercise's `random_case(draw, s)` draws from: `draw(s.floats((2, 3)))`."""

    def size(self, low=1, high=4):
        return st.integers(low, high)

    def shape(self, min_dims=1, max_dims=3, high=4):
        return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=1, max_side=high)

    def broadcastable(self, count=2, min_dims=1, max_dims=3, high=4, signature=None):
        """Shapes that broadcast together: .input_shapes and .result_shape."""
        if signature:
            return hnp.mutually_broadcastable_shapes(signature=signature, min_dims=0,
                                                     max_dims=max_dims, min_side=1, max_side=high)
        return hnp.mutually_broadcastable_shapes(num_shapes=count, min_dims=min_dims, max_dims=max_dims,
                                                 min_side=1, max_side=high)

    def floats(self, shape, low=-2.0, high=2.0):
        return hnp.arrays(np.float64, shape, elements=st.floats(low, high, allow_nan=False, allow_infinity=False))

    def nonzero(self, shape, smallest=0.05, high=2.0):
        """Floats with |x| >= smallest: off the kink at 0."""
        magnitude = st.floats(smallest, high, allow_nan=False)
        elements = st.one_of(magnitude, magnitude.map(lambda v: -v))
        return hnp.arrays(np.float64, shape, elements=elements)

    def ints(self, shape, low, high):
        return hnp.arrays(np.int64, shape, elements=st.integers(low, high))

    def masks(self, shape):
        return hnp.arrays(np.bool_, shape, elements=st.booleans())

    def one_of(self, values):
        return st.sampled_from(list(values))

    def booleans(self):
        return st.booleans()
