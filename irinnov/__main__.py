"""`python -m irinnov`: the `irinnov` command (`irinnov.cli.main`), for environments where the script is not on PATH."""
# Not produced by a notebook: nbdev makes no `__main__.py`, and this file holds nothing but the call.
import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
