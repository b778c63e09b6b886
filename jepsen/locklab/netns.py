"""The lab's network: a bridge in the root namespace (where the resource server listens) and one
network namespace per server slot and per worker, each joined to the bridge by a veth pair and given
an nftables table the faults add drop rules to.

Addresses: only this module's own namespaces (NET below) and loopback are ever contacted. The names
(rll-*) and the subnet differ from jepsen/run's (rlj-*, 10.231.7.0/24), so the two can run at once.
"""

import subprocess

NET = "10.231.8"
BRIDGE = "rll-br0"
RESOURCE_IP = f"{NET}.1"  # the bridge's own address: the root namespace
SERVER_SLOTS = 5  # redis5 needs five; raftlock uses the first three
WORKER_SLOTS_MAX = 16


def sh(*args, check=True):
    return subprocess.run(args, check=check, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True)


def server_ns(slot):
    return f"rll-s{slot}"


def server_ip(slot):
    return f"{NET}.{10 + slot}"


def worker_ns(worker):
    return f"rll-w{worker}"


def worker_ip(worker):
    return f"{NET}.{50 + worker}"


def all_namespaces(workers):
    return ([(server_ns(s), server_ip(s), f"rll-vs{s}") for s in range(1, SERVER_SLOTS + 1)] +
            [(worker_ns(w), worker_ip(w), f"rll-vw{w}") for w in range(1, workers + 1)])


def setup(workers):
    assert 1 <= workers <= WORKER_SLOTS_MAX
    teardown()  # leftovers of a run that was killed
    sh("ip", "link", "add", BRIDGE, "type", "bridge")
    sh("ip", "addr", "add", f"{RESOURCE_IP}/24", "dev", BRIDGE)
    sh("ip", "link", "set", BRIDGE, "up")
    for ns, ip, host_end in all_namespaces(workers):
        ns_end = host_end.replace("rll-v", "rll-p")
        sh("ip", "netns", "add", ns)
        sh("ip", "link", "add", host_end, "type", "veth", "peer", "name", ns_end)
        sh("ip", "link", "set", host_end, "master", BRIDGE, "up")
        sh("ip", "link", "set", ns_end, "netns", ns)
        sh("ip", "-n", ns, "link", "set", "lo", "up")
        sh("ip", "-n", ns, "addr", "add", f"{ip}/24", "dev", ns_end)
        sh("ip", "-n", ns, "link", "set", ns_end, "up")
        nft(ns, "add", "table", "inet", "lab")
        for chain, hook in (("input", "input"), ("output", "output")):
            nft(ns, "add", "chain", "inet", "lab", chain,
                f"{{ type filter hook {hook} priority 0; policy accept; }}")


def teardown():
    for s in range(1, SERVER_SLOTS + 1):
        sh("ip", "netns", "del", server_ns(s), check=False)
        sh("ip", "link", "del", f"rll-vs{s}", check=False)
    for w in range(1, WORKER_SLOTS_MAX + 1):
        sh("ip", "netns", "del", worker_ns(w), check=False)
        sh("ip", "link", "del", f"rll-vw{w}", check=False)
    sh("ip", "link", "del", BRIDGE, check=False)


def nft(ns, *args):
    return sh("ip", "netns", "exec", ns, "nft", *args)


def cut_off(ns, ips):
    """Drops every packet between namespace `ns` and `ips`, both ways."""
    for ip in ips:
        nft(ns, "add", "rule", "inet", "lab", "output", "ip", "daddr", ip, "drop")
        nft(ns, "add", "rule", "inet", "lab", "input", "ip", "saddr", ip, "drop")


def heal(ns):
    nft(ns, "flush", "chain", "inet", "lab", "input")
    nft(ns, "flush", "chain", "inet", "lab", "output")
