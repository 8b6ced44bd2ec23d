"""``python -m neardup``: the command line, as the ``neardup`` command."""

import sys

from .cli import main

sys.exit(main())
