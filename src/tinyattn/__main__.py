"""`python -m tinyattn ...` runs the `tinyattn` command."""

import sys

from .cli import main

if __name__ == "__main__":  # not on import (documentation tools import every module)
    sys.exit(main())
