# tests/cluster: several hosts on one machine (issue 18). hosts.sh makes them
# (network and UTS namespaces, veth links to a bridge in a namespace of its
# own) and launches Open MPI across them without ssh; the driver trains on
# 2 hosts and compares with 1 (root only: it skips, with the reason, where
# namespaces cannot be made).
CLUSTER_TEST_DRIVERS = tests/cluster/test-hosts.sh
TESTS += $(CLUSTER_TEST_DRIVERS)
EXTRA_DIST += $(CLUSTER_TEST_DRIVERS) tests/cluster/hosts.sh
