"""`python -m tinyattn ...` runs the `tinyattn` command."""

import sys

from .cli import main

sys.exit(main())
