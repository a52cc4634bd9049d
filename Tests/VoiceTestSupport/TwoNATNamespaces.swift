import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The network namespaces of a NAT test: a "public" one, and for each of two endpoints a NAT (masquerading router)
/// and a private host behind it. Every name starts with the test's `prefix`; the addresses are `public1`.1 (public
/// side towards NAT A, which is `public1`.2), `public2`.1 / `public2`.2 for NAT B, and `privateA`.1 / `privateA`.2
/// (NAT A's inside and host A), `privateB`.1 / `privateB`.2 for B, all /24.
///
///     hostA privateA.2 ─ natA (MASQUERADE) public1.2 ─┐
///                                                      pub public1.1 / public2.1
///     hostB privateB.2 ─ natB (MASQUERADE) public2.2 ─┘
public enum TwoNATNamespaces {
    public static let roles = ["pub", "natA", "hostA", "natB", "hostB"]

    /// Whether this machine lets us make namespaces and NAT rules (root, `ip`, `iptables`).
    public static func available(prefix: String) -> Bool {
        guard getuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/sbin/ip"),
            FileManager.default.isExecutableFile(atPath: "/usr/sbin/iptables")
        else { return false }
        let probe = "\(prefix)probe"
        return ChildProcessGroup.shell(
            "ip netns add \(probe) && ip netns exec \(probe) iptables -t nat -L >/dev/null; s=$?; ip netns del \(probe); exit $s"
        ).status == 0
    }

    /// The shell commands (`set -e`) that make the five namespaces, their links, addresses, routes, forwarding and
    /// the two NATs' MASQUERADE rule (rule 1 of each NAT's POSTROUTING chain).
    public static func script(
        prefix p: String, public1: String, public2: String, privateA: String, privateB: String
    ) -> String {
        """
        set -e
        for n in pub natA hostA natB hostB; do ip netns add \(p)$n; ip -n \(p)$n link set lo up; done
        ip link add \(p)pa netns \(p)pub type veth peer name \(p)ap netns \(p)natA
        ip link add \(p)pb netns \(p)pub type veth peer name \(p)bp netns \(p)natB
        ip link add \(p)ah netns \(p)natA type veth peer name \(p)ha netns \(p)hostA
        ip link add \(p)bh netns \(p)natB type veth peer name \(p)hb netns \(p)hostB
        ip -n \(p)pub addr add \(public1).1/24 dev \(p)pa; ip -n \(p)pub link set \(p)pa up
        ip -n \(p)pub addr add \(public2).1/24 dev \(p)pb; ip -n \(p)pub link set \(p)pb up
        ip -n \(p)natA addr add \(public1).2/24 dev \(p)ap; ip -n \(p)natA link set \(p)ap up
        ip -n \(p)natA addr add \(privateA).1/24 dev \(p)ah; ip -n \(p)natA link set \(p)ah up
        ip -n \(p)natB addr add \(public2).2/24 dev \(p)bp; ip -n \(p)natB link set \(p)bp up
        ip -n \(p)natB addr add \(privateB).1/24 dev \(p)bh; ip -n \(p)natB link set \(p)bh up
        ip -n \(p)hostA addr add \(privateA).2/24 dev \(p)ha; ip -n \(p)hostA link set \(p)ha up
        ip -n \(p)hostB addr add \(privateB).2/24 dev \(p)hb; ip -n \(p)hostB link set \(p)hb up
        ip -n \(p)natA route add default via \(public1).1
        ip -n \(p)natB route add default via \(public2).1
        ip -n \(p)hostA route add default via \(privateA).1
        ip -n \(p)hostB route add default via \(privateB).1
        for n in natA natB; do ip netns exec \(p)$n sysctl -qw net.ipv4.ip_forward=1; done
        ip netns exec \(p)natA iptables -t nat -A POSTROUTING -o \(p)ap -j MASQUERADE
        ip netns exec \(p)natB iptables -t nat -A POSTROUTING -o \(p)bp -j MASQUERADE

        """
    }

    /// Deletes the namespaces (and with them their links and rules).
    public static func teardown(prefix: String) {
        for role in roles { ChildProcessGroup.shell("ip netns del \(prefix)\(role) 2>/dev/null") }
    }
}
