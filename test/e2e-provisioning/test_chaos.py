"""Carpenter killed with SIGKILL at random moments while it provisions
(and, once emptiness removes nodes, while it scales down), many times in a
row: afterwards there is no leaked VM (a Carpenter VM without its
NodeClaim), no duplicate VM (two VMs for one NodeClaim), and every pod
ends up scheduled. CHAOS_RUNS sets the number of kills (default 20;
hack/soak.sh runs more); CHAOS_SEED makes a run repeatable."""
import os
import random
import signal
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from e2elib import (NODECLASS, Carpenter, Env,  # noqa: E402
                    check_vm_invariants, deployment, nodeclaims, nodepool,
                    pods, wait_until)

RUNS = int(os.environ.get("CHAOS_RUNS", "20"))
SEED = int(os.environ.get("CHAOS_SEED", str(int(time.time()))))


def scheduled(env, app, n):
    ps = pods(env, app)
    return len(ps) == n and all(p["spec"].get("nodeName") and
                                p.get("status", {}).get("phase") == "Running"
                                for p in ps)


class ChaosTest(unittest.TestCase):
    def test_sigkill_during_provisioning(self):
        print("CHAOS_SEED=%d CHAOS_RUNS=%d" % (SEED, RUNS))
        rnd = random.Random(SEED)
        env = Env(clone_seconds=1.0, boot_seconds=1.5)
        self.addCleanup(env.stop)
        env.apply(NODECLASS)
        env.apply(nodepool())
        env.apply(deployment("chaos", 0, cpu="500m", memory="512Mi"))
        args = env.carpenter_args("--leader-elect=false",
                                  "--batch-idle-duration=300ms",
                                  "--batch-max-duration=2s")
        log = os.path.join(env.workdir, "carpenter.log")
        replicas = 0
        kills = 0
        for run in range(RUNS):
            replicas += rnd.choice([1, 2, 3, 4])
            c = Carpenter(*args, log=log)
            env.kubectl("scale", "deployment", "chaos",
                        "--replicas=%d" % replicas)
            # Somewhere in batching, solving, creating, cloning, configuring,
            # starting or registering.
            time.sleep(rnd.uniform(0.0, 5.0))
            c.proc.send_signal(signal.SIGKILL)
            c.stop(signal.SIGKILL)
            kills += 1
            check_vm_invariants(self, env)
        # A last Carpenter finishes the job.
        c = Carpenter(*args, log=log)
        self.addCleanup(c.stop, signal.SIGKILL)
        try:
            wait_until(lambda: scheduled(env, "chaos", replicas), 180,
                       what="%d pods scheduled" % replicas)
        except AssertionError:
            print(env.kubectl("get", "pods,nodeclaims,nodes", "-o", "wide",
                              check=False))
            print("logs in", env.workdir)
            raise
        # Quiet now: every VM has its NodeClaim, none has two.
        time.sleep(2)
        vms = check_vm_invariants(self, env)
        claims = nodeclaims(env)
        self.assertEqual(len(vms), len(claims))
        for nc in claims:
            self.assertEqual(
                {x["type"]: x["status"] for x in nc["status"]["conditions"]
                 }.get("Ready"), "True", nc["metadata"]["name"])
        print("%d kills, %d pods, %d VMs" % (kills, replicas, len(vms)))


if __name__ == "__main__":
    unittest.main(verbosity=2)
