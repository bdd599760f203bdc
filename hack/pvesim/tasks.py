"""Worker tasks (UPIDs) and the per-VM config flock, run by one scheduler.

A task body is a generator run under the state lock.  It yields:
  Sleep(s)   resume after s seconds
  Work(s)    the task's main work; a hung task (--hang-tasks-fraction) never
             comes back from it
  Lock(vmid) take /var/lock/qemu-server/lock-<vmid>.conf; waits up to the flock
             timeout (10 s on PVE) and then fails the task with
             "can't lock file '/var/lock/qemu-server/lock-N.conf' - got timeout"
It ends by returning (OK, or "WARNINGS: n" when it returns n > 0) or by raising
TaskError(msg) (exitstatus = msg).  Stopping a task (DELETE .../tasks/UPID)
throws Interrupted into the body.
"""

import heapq
import itertools
import sys
import threading
import time
import traceback

from .errors import Interrupted, TaskError


class Sleep:
    def __init__(self, seconds):
        self.seconds = seconds


class Work(Sleep):
    pass


class Lock:
    def __init__(self, vmid, timeout=None):
        self.vmid = vmid
        self.timeout = timeout


class Scheduler(threading.Thread):
    """Timed callbacks, each run with the state lock held."""

    def __init__(self, cond):
        super().__init__(name="pvesim-scheduler", daemon=True)
        self.cond = cond
        self.heap = []
        self.seq = itertools.count()
        self.stopped = False

    def call_at(self, when, fn, *args):
        with self.cond:
            heapq.heappush(self.heap, (when, next(self.seq), fn, args))
            self.cond.notify_all()

    def call_later(self, delay, fn, *args):
        self.call_at(time.monotonic() + max(0.0, delay), fn, *args)

    def run(self):
        with self.cond:
            while not self.stopped:
                now = time.monotonic()
                if self.heap and self.heap[0][0] <= now:
                    _, _, fn, args = heapq.heappop(self.heap)
                    try:
                        fn(*args)
                    except Exception:  # keep the simulator alive, but say so
                        traceback.print_exc(file=sys.stderr)
                    continue
                timeout = (self.heap[0][0] - now) if self.heap else 1.0
                self.cond.wait(min(timeout, 1.0))


class Task:
    def __init__(self, mgr, node, ttype, tid, user, pstart):
        self.mgr = mgr
        self.node = node
        self.type = ttype
        self.id = str(tid)
        self.user = user
        self.pid = mgr.next_pid()
        self.pstart = pstart
        self.starttime = int(time.time())
        self.upid = "UPID:%s:%08X:%08X:%08X:%s:%s:%s:" % (
            node, self.pid, self.pstart, self.starttime, ttype, self.id, user)
        self.status = "running"
        self.exitstatus = None
        self.endtime = None
        self.lines = []
        self.gen = None
        self.wake = 0          # token: a resume with an older token is stale
        self.waiting_lock = None
        self.held = []         # vmids whose flock this task holds
        self.hang = False
        self.hung = False
        self.on_end = []

    def log(self, line):
        self.lines.append(line)

    def as_status(self):
        d = {"upid": self.upid, "node": self.node, "pid": self.pid, "pstart": self.pstart,
             "starttime": self.starttime, "type": self.type, "id": self.id,
             "user": self.user, "status": self.status}
        if self.status == "stopped":
            d["exitstatus"] = self.exitstatus
        return d


class SyncHolder:
    """Owner of a flock taken by a synchronous API call (PUT config)."""


class TaskManager:
    def __init__(self, cond, scheduler, flock_timeout=10.0):
        self.cond = cond
        self.sched = scheduler
        self.flock_timeout = flock_timeout
        self.tasks = {}          # upid -> Task
        self.order = []          # upids, oldest first
        self.flocks = {}         # vmid -> [holder, [waiting tasks]]
        self._pid = itertools.count(0x1A2B0)
        self.pstart_of = None    # fn(node) -> pstart clock ticks

    def next_pid(self):
        return next(self._pid)

    # ---- task lifecycle ----
    def start(self, node, ttype, tid, user, body, hang=False):
        """Create a task and run its body up to its first wait."""
        task = Task(self, node, ttype, tid, user, self.pstart_of(node))
        task.hang = hang
        self.tasks[task.upid] = task
        self.order.append(task.upid)
        task.gen = body(task)
        self._step(task, None, None)
        return task

    def _step(self, task, value, exc):
        while task.status == "running":
            try:
                if exc is not None:
                    instr = task.gen.throw(exc)
                else:
                    instr = task.gen.send(value)
            except StopIteration as stop:
                warnings = stop.value or 0
                self._finish(task, "WARNINGS: %d" % warnings if warnings else "OK")
                return
            except TaskError as e:
                self._finish(task, e.msg)
                return
            except Interrupted:
                self._finish(task, "interrupted by signal")
                return
            except Exception as e:  # a simulator bug: fail the task loudly
                traceback.print_exc(file=sys.stderr)
                self._finish(task, "pve-sim internal error: %s" % e)
                return
            value, exc = None, None
            if not self._wait(task, instr):
                return

    def _wait(self, task, instr):
        """Arrange the resume; True when the body may go on at once."""
        task.wake += 1
        token = task.wake
        if isinstance(instr, Lock):
            fl = self.flocks.setdefault(instr.vmid, [None, []])
            if fl[0] is None or fl[0] is task:
                fl[0] = task
                if instr.vmid not in task.held:
                    task.held.append(instr.vmid)
                return True
            fl[1].append(task)
            task.waiting_lock = instr.vmid
            timeout = self.flock_timeout if instr.timeout is None else instr.timeout
            self.sched.call_later(timeout, self._lock_timeout, task, token, instr.vmid)
            return False
        if isinstance(instr, Work) and task.hang:
            task.hung = True
            return False  # never resumed, until stopped
        seconds = instr.seconds if isinstance(instr, Sleep) else 0
        self.sched.call_later(seconds, self._resume, task, token, None)
        return False

    def _resume(self, task, token, exc):
        if task.wake != token or task.status != "running":
            return
        self._step(task, None, exc)

    def _lock_timeout(self, task, token, vmid):
        if task.wake != token or task.waiting_lock != vmid:
            return
        fl = self.flocks.get(vmid)
        if fl and task in fl[1]:
            fl[1].remove(task)
        task.waiting_lock = None
        self._step(task, None, TaskError(
            "can't lock file '/var/lock/qemu-server/lock-%s.conf' - got timeout" % vmid))

    def _finish(self, task, exitstatus):
        task.status = "stopped"
        task.exitstatus = exitstatus
        task.endtime = int(time.time())
        if exitstatus == "OK":
            task.log("TASK OK")
        elif exitstatus.startswith("WARNINGS: "):
            task.log("TASK " + exitstatus)
        else:
            task.log("TASK ERROR: " + exitstatus)
        if task.waiting_lock is not None:
            fl = self.flocks.get(task.waiting_lock)
            if fl and task in fl[1]:
                fl[1].remove(task)
            task.waiting_lock = None
        for vmid in list(task.held):
            self.release(vmid, task)
        task.held = []
        for fn in task.on_end:
            try:
                fn(task)
            except Exception:
                traceback.print_exc(file=sys.stderr)
        self.cond.notify_all()

    def stop(self, task):
        """DELETE /nodes/{node}/tasks/{upid}: kill the worker."""
        if task.status != "running":
            return
        task.wake += 1
        if task.waiting_lock is not None:
            fl = self.flocks.get(task.waiting_lock)
            if fl and task in fl[1]:
                fl[1].remove(task)
            task.waiting_lock = None
        self._step(task, None, Interrupted())

    # ---- flocks ----
    def release(self, vmid, owner):
        fl = self.flocks.get(vmid)
        if not fl or fl[0] is not owner:
            return
        fl[0] = None
        while fl[1]:
            nxt = fl[1].pop(0)
            if nxt.status != "running":
                continue
            fl[0] = nxt
            nxt.waiting_lock = None
            if vmid not in nxt.held:
                nxt.held.append(vmid)
            nxt.wake += 1
            self.sched.call_later(0, self._resume, nxt, nxt.wake, None)
            break
        if fl[0] is None and not fl[1]:
            del self.flocks[vmid]
        self.cond.notify_all()

    def lock_sync(self, vmid, timeout=None):
        """Take a VM's flock from an API thread (cond held); waits like
        PVE's lock_config.  Returns the holder token or raises TaskError."""
        timeout = self.flock_timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        holder = SyncHolder()
        while True:
            fl = self.flocks.setdefault(vmid, [None, []])
            if fl[0] is None and not fl[1]:
                fl[0] = holder
                return holder
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                if fl[0] is None and not fl[1]:
                    del self.flocks[vmid]
                raise TaskError("can't lock file '/var/lock/qemu-server/lock-%s.conf' - "
                                "got timeout" % vmid)
            self.cond.wait(min(remaining, 0.5))

    def locked_by(self, vmid):
        fl = self.flocks.get(vmid)
        return fl[0] if fl else None

    def running(self):
        return [self.tasks[u] for u in self.order if self.tasks[u].status == "running"]
