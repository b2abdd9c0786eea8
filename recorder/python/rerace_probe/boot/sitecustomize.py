# Put first on PYTHONPATH by `rerace record --probe triton`: loads the probe at start-up, so
# the recorded program needs no change. Does nothing without the recorder.
try:
    import rerace_probe

    rerace_probe.install()
except Exception as e:  # never break the recorded program
    import sys

    print("rerace probe: not installed: %s" % e, file=sys.stderr)
