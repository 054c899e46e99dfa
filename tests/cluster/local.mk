# tests/cluster: several hosts on one machine (issue 18). hosts.sh makes them
# (network and UTS namespaces, veth links to a bridge in a namespace of its
# own) and launches Open MPI across them without ssh; the driver trains on
# 2 hosts and compares with 1; test-hosts-fail.sh kills or cuts off a host,
# resumes, exchanges NCCL ids across hosts and shapes the links (root only:
# they skip, with the reason, where namespaces cannot be made).
CLUSTER_TEST_DRIVERS = tests/cluster/test-hosts.sh tests/cluster/test-hosts-fail.sh
TESTS += $(CLUSTER_TEST_DRIVERS)
EXTRA_DIST += $(CLUSTER_TEST_DRIVERS) tests/cluster/hosts.sh tests/cluster/cluster.sh
