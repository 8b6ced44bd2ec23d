"""``python -m neardup.cli``: the command line, as the ``neardup`` command."""

import sys

from . import main

sys.exit(main())
