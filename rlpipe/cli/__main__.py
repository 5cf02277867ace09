"""`python -m rlpipe.cli ARGS`: the same as the `rlpipe ARGS` console script."""
import sys

from rlpipe.cli import main

sys.exit(main())
