"""Settings for the whole test run (tests/ and the notebooks that pytest executes with nbmake)."""

import os

# notebooks run their short versions under the test suite (the notebook kernels inherit this);
# open them in Jupyter for the full-size runs
os.environ.setdefault("TINYATTN_NOTEBOOK_QUICK", "1")
