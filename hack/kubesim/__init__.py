"""kube-sim: a Kubernetes API server stand-in for Carpenter's tests.

Standard library only.  See docs/kube-sim.md and `hack/kube-sim --help`."""
