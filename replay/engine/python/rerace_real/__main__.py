import os
import sys

USAGE = """usage: python -m rerace_real   (started by rerace, not by hand)

rerace's real-code engine: `rerace replay|fuzz|check --engine python [--python-exe PY]
[--patch FILE]` starts it in PY, with a JSON configuration and the replay commands on pipes
(replay/engine/python/rerace_real/serve.py describes the protocol). Run rerace, not this module."""

# By hand with arguments (rerace starts it with `-c` and none): the usage, not a wait on a pipe.
if sys.argv[1:]:
    help_asked = sys.argv[1] in ("-h", "--help")
    print(USAGE, file=sys.stdout if help_asked else sys.stderr)
    sys.exit(0 if help_asked else 64)

from .serve import main  # noqa: E402

# os._exit, not sys.exit: a patch's non-daemon thread must not hold the engine (and rerace,
# which waits for it) after the work is done.
code = main()
sys.stdout.flush()
sys.stderr.flush()
os._exit(code)
