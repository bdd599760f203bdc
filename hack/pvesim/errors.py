"""Errors raised by handlers, shaped like the PVE API server's answers.

PVE (pve-http-server) puts the first line of an error message in the HTTP
reason phrase and answers {"data": null} (PVE 9 adds "message").  A failed
parameter check is 400 "Parameter verification failed." with an "errors" map.
"""


class PveError(Exception):
    """An API error: HTTP status, full message (may end in a newline)."""

    def __init__(self, status, message, errors=None, body=True):
        super().__init__(message)
        self.status = status
        self.message = message
        self.errors = errors
        self.body = body  # False: no body at all (401 and proxy 595 answers)

    @property
    def reason(self):
        first = self.message.split("\n", 1)[0]
        return first if first else "Error"


def die(msg):
    """Like a Perl die in a handler: HTTP 500, message as reason."""
    if not msg.endswith("\n"):
        msg += "\n"
    raise PveError(500, msg)


def param_error(errors):
    raise PveError(400, "Parameter verification failed.\n", errors=errors)


def perm_error(what):
    raise PveError(403, "Permission check failed (%s)\n" % what)


class TaskError(Exception):
    """Ends a worker task with exitstatus = the message (TASK ERROR: ...)."""

    def __init__(self, msg):
        super().__init__(msg)
        self.msg = msg.rstrip("\n").split("\n")[-1]


class Interrupted(Exception):
    """Thrown into a task body when the task is stopped (DELETE .../tasks/UPID)."""
