"""`python -m tinyattn ...` runs the `tinyattn` command (tinyattn.app.cli)."""

import sys

from .app.cli import main

if __name__ == "__main__":  # not on import (documentation tools import every module)
    sys.exit(main())
