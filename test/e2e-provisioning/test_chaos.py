"""Carpenter killed with SIGKILL at random moments while it scales a
deployment up (batching, creating, cloning, registering) and down
(emptiness decisions, drains, VM deletions), and while drift replaces
nodes (every fifth run changes the NodePool's template labels), many
times in a row: after each kill there is no leaked VM (a Carpenter VM
without its NodeClaim) and no duplicate VM (two VMs for one NodeClaim); at
the end every pod is scheduled, no empty node is left and every node
carries the NodePool's last labels. CHAOS_RUNS sets the number of kills
(default 20; hack/soak.sh runs more); CHAOS_SEED makes a run
repeatable."""
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
    def test_sigkill_during_scale_up_and_down(self):
        print("CHAOS_SEED=%d CHAOS_RUNS=%d" % (SEED, RUNS))
        rnd = random.Random(SEED)
        env = Env(clone_seconds=1.0, boot_seconds=1.5)
        self.addCleanup(env.stop)
        env.apply(NODECLASS)
        # Empty nodes go a second after their last pod, all at once.
        def pool(gen):
            return nodepool(consolidate_after="1s", budgets=[{"nodes": "100%"}],
                            labels={"chaos-gen": str(gen)})
        gen = 0
        env.apply(pool(gen))
        env.apply(deployment("chaos", 0, cpu="500m", memory="512Mi"))
        args = env.carpenter_args("--leader-elect=false",
                                  "--batch-idle-duration=300ms",
                                  "--batch-max-duration=2s",
                                  "--disruption-poll-interval=500ms",
                                  "--disruption-validation-delay=1s")
        log = os.path.join(env.workdir, "carpenter.log")
        replicas = 0
        kills = downs = 0
        for run in range(RUNS):
            if replicas and rnd.random() < 0.4:
                replicas = max(0, replicas - rnd.choice([2, 4, 6, 8]))
                downs += 1
            else:
                replicas += rnd.choice([1, 2, 3, 4])
            if run % 5 == 4:
                gen += 1
                env.apply(pool(gen))
            c = Carpenter(*args, log=log)
            env.kubectl("scale", "deployment", "chaos",
                        "--replicas=%d" % replicas)
            # Somewhere in batching, solving, creating, cloning, configuring,
            # starting or registering; or deciding, draining, deleting VMs.
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
        def empty_nodes():
            used = {p["spec"].get("nodeName") for p in pods(env, "chaos")}
            return [nc["metadata"]["name"] for nc in nodeclaims(env)
                    if nc.get("status", {}).get("nodeName") not in used]
        try:
            wait_until(lambda: not empty_nodes(), 120,
                       what="no empty node left")
        except AssertionError:
            print(empty_nodes(), "logs in", env.workdir)
            raise
        # Drift replaced every node of an older template.
        def drifted():
            return [nc["metadata"]["name"] for nc in nodeclaims(env)
                    if nc["metadata"].get("labels", {}).get("chaos-gen") !=
                    str(gen)]
        try:
            wait_until(lambda: not drifted(), 180,
                       what="every node of generation %d" % gen)
            wait_until(lambda: scheduled(env, "chaos", replicas), 60,
                       what="%d pods scheduled after drift" % replicas)
        except AssertionError:
            print(drifted(), "logs in", env.workdir)
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
        print("%d kills (%d while scaling down), %d pods, %d VMs, %d "
              "template changes" % (kills, downs, replicas, len(vms), gen))


if __name__ == "__main__":
    unittest.main(verbosity=2)
