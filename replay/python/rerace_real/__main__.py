import os
import sys

from .serve import main

# os._exit, not sys.exit: a patch's non-daemon thread must not hold the engine (and rerace,
# which waits for it) after the work is done.
code = main()
sys.stdout.flush()
sys.stderr.flush()
os._exit(code)
