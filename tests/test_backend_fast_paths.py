"""The NumPy fast paths in backend.py give what the plain formulas give."""

import numpy as np
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

from tinyattn import backend


@given(
    vocab=st.integers(1, 20),
    width=st.integers(1, 5),
    data=st.data(),
)
def test_index_add_rows_adds_repeated_ids_like_add_at(vocab, width, data):
    n = data.draw(st.integers(0, 40), label="n")
    ids = data.draw(hnp.arrays(np.int64, (n,), elements=st.integers(0, vocab - 1)), label="ids")
    rows = data.draw(hnp.arrays(np.float32, (n, width), elements=st.floats(-100, 100, width=32)), label="rows")
    start = np.arange(vocab * width, dtype=np.float32).reshape(vocab, width)
    expected = start.copy()
    np.add.at(expected, ids, rows)  # one row at a time; the fast path adds up each run first: other rounding
    np.testing.assert_allclose(backend.index_add_rows(start.copy(), ids, rows), expected, rtol=1e-6, atol=1e-4)
