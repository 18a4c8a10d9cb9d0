"""``python -m memcore_py`` is the ``memcore`` command."""
import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
