"""Time tinyattn against a hand-derived NumPy version and PyTorch: `python benchmarks/bench.py --help`.

The same as `tinyattn bench`; the code lives in tinyattn/app/bench.py so that an installed package has it.
"""

import sys

from tinyattn.app.bench import main

if __name__ == "__main__":
    sys.exit(main())
