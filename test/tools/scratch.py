"""Scratch folders for the python tests: made under $TMPDIR (hack/test.sh
points it at a folder of its own and fails on anything left there) and
removed when the test process ends, whether the tests passed, failed or
were interrupted (SIGINT, or SIGTERM as `timeout` and a killed ctest parent
send it); remove() drops one earlier.

    import scratch
    d = scratch.mkdtemp("pve-sim-test-")
"""
import atexit
import os
import shutil
import signal
import sys
import tempfile

_dirs = []


def mkdtemp(prefix):
    d = tempfile.mkdtemp(prefix=prefix)
    _dirs.append(d)
    return d


def remove(d):
    shutil.rmtree(d, ignore_errors=True)
    if d in _dirs:
        _dirs.remove(d)


def _remove_all():
    while _dirs:
        shutil.rmtree(_dirs.pop(), ignore_errors=True)


def _on_sigterm(signum, frame):
    # exit through the interpreter, so that atexit (and finally blocks and
    # tearDown's stopping of simulators) run
    sys.exit(128 + signum)


atexit.register(_remove_all)
if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL and os.getpid() != 1:
    signal.signal(signal.SIGTERM, _on_sigterm)
