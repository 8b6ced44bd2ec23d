"""``python -m neardup``: the command line, as the ``neardup`` command."""

import sys

from .cli import main

if __name__ == "__main__":  # not when a worker process (spawn) imports the parent's main
    sys.exit(main())
