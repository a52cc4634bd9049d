#!/usr/bin/env python3
"""Load on the calling client's service, measured side by side (Benchmarks/README.md, "Service load").

Starts the service on two nodes sharing one PostgreSQL database: node A as `make service` does
(Services/run-service.sh with NODES: PostgreSQL, the registration service over HTTPS, Kamailio with
Services/kamailio/kamailio.cfg as one node of two) on 127.0.0.1, node B (a second registration service and a
second Kamailio, on A's database, secret and certificate) on 127.0.0.2, then steps through fixed rates:

1. signed registrations (`POST /v1/registrations` over HTTPS, a new TLS connection each as a device makes it),
   half to each node, at each rate of --service-rates; the grants are kept for the SIP steps;
2. SIP registrations: SIPp (Benchmarks/sipp/service-register.xml) REGISTERs --processes of the users with their
   grants (auth_ephemeral, usrloc in PostgreSQL), half through each node, at each rate of --register-rates, one
   SIPp process per user (SIPp 3.6 takes digest credentials per process);
3. call setups: each user's callee is a SIPp UAS (Benchmarks/sipp/service-uas.xml) registered through the other
   node from the UAS's own port (a node saves a binding with a Path naming itself and the REGISTER's source), and
   SIPp (Benchmarks/sipp/service-call.xml) calls it at each rate of --call-rates (INVITE, 407, ACK, INVITE with
   credentials, the INVITE relayed to the callee's node, 180, 200, ACK, BYE);
4. the floor: a plain Kamailio (Benchmarks/sipp/kamailio-register-floor.cfg: one static password, bindings in
   memory) takes the same REGISTERs at the same rates.

Each step reports the rate offered and achieved, failures, the response times' p50 / p95 / p99 (SIPp's rtd, from
the first request to the final 200; the HTTPS client's own timing), the CPU per operation of Kamailio, the
registration service and PostgreSQL (utime + stime of every process of each, both nodes, from /proc, over the
step) and the 1-minute load average at the step's start. A rate passes when nothing failed and the achieved rate
is at least 90 % of the offered one.

Usage: Benchmarks/scripts/service-load.py VOICE_ENGINE [--service-rates 50,100,200] [--processes 20]
           [--register-rates 100,200,400,800] [--call-rates 50,100,200,400] [--seconds 10] [--port-base 27000]
Needs: sipp (Debian's sip-tester), kamailio with its postgres, autheph, tls and dispatcher modules, postgresql,
openssl.
"""
import argparse
import base64
import hashlib
import http.client
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SIPP_DIR = os.path.join(REPO, "Benchmarks", "sipp")
APPLICATION_KEY, APPLICATION_SECRET = "demo-application-key", "demo-application-secret"
TICK = os.sysconf("SC_CLK_TCK")
NODE_A, NODE_B = "127.0.0.1", "127.0.0.2"


def processes():
    """pid → (ppid, utime + stime + cutime + cstime in ticks) for every process: the children's times count the
    processes that ended and were reaped (a PostgreSQL backend closed during a step)."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            table[int(entry)] = (int(fields[1]), sum(int(value) for value in fields[11:15]))
        except (OSError, IndexError, ValueError):
            pass
    return table


def tree_cpu(roots, table):
    """CPU seconds of the processes `roots` and their descendants."""
    total, pending = 0, list(roots)
    while pending:
        pid = pending.pop()
        if pid in table:
            total += table[pid][1]
            pending += [child for child, (parent, _) in table.items() if parent == pid]
    return total / TICK


def find_pid(needle):
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    if needle in f.read().replace(b"\0", b" ").decode(errors="replace"):
                        return int(entry)
            except OSError:
                pass
    return None


def wait_for(check, what, seconds=90):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if check():
            return
        time.sleep(0.2)
    sys.exit(f"{what} did not come up within {seconds} s")


def tcp_open(host, port):
    with socket.socket() as s:
        return s.connect_ex((host, port)) == 0


def percentiles(values):
    if not values:
        return "–"
    ordered = sorted(values)
    pick = lambda p: ordered[min(len(ordered) - 1, int(p * len(ordered)))]
    return f"{pick(0.5):.1f} / {pick(0.95):.1f} / {pick(0.99):.1f}"


class Meter:
    """CPU of the service's processes across one step, and the load average at its start."""

    def __init__(self, roots):
        self.roots = roots

    def __enter__(self):
        self.load = os.getloadavg()[0]
        table = processes()
        self.before = {name: tree_cpu(pids, table) for name, pids in self.roots.items()}
        self.started = time.time()
        return self

    def __exit__(self, *_):
        table = processes()
        self.elapsed = time.time() - self.started
        self.used = {name: tree_cpu(pids, table) - self.before[name] for name, pids in self.roots.items()}

    def per(self, count):
        return {name: (1000 * used / count if count else 0) for name, used in self.used.items()}


def sign(user, sequence):
    text = f"{user}{APPLICATION_KEY}{sequence}{APPLICATION_SECRET}"
    return base64.b64encode(hashlib.sha1(text.encode()).digest()).decode()


def register_with_service(nodes, https_port, ca, rate, seconds, first_index):
    """Signed registrations over HTTPS at `rate` per second for `seconds` (users first_index…, alternately through
    each node), each started on its schedule on a thread of its own; returns grants, latencies (ms), failures and
    the achieved rate (completions over the span between the first and the last, as for SIPp)."""
    context = ssl.create_default_context(cafile=ca)
    count = rate * seconds
    grants, latencies, failures, moments = {}, [], [], []
    lock = threading.Lock()
    sequence = int(time.time() * 1000)

    def one(index):
        user = f"load{first_index + index}"
        body = json.dumps({"applicationKey": APPLICATION_KEY, "userID": user, "sequence": sequence,
                           "signature": sign(user, sequence)})
        started = time.perf_counter()
        try:
            connection = http.client.HTTPSConnection(nodes[index % len(nodes)], https_port, context=context,
                                                     timeout=10)
            connection.request("POST", "/v1/registrations", body, {"Content-Type": "application/json"})
            answer = connection.getresponse()
            payload = answer.read()
            connection.close()
            elapsed = 1000 * (time.perf_counter() - started)
            with lock:
                if answer.status == 200:
                    grants[user] = json.loads(payload)
                    latencies.append(elapsed)
                    moments.append(time.perf_counter())
                else:
                    failures.append(f"{user}: HTTP {answer.status} {payload[:100]!r}")
        except OSError as error:
            with lock:
                failures.append(f"{user}: {error}")

    threads = []
    begin = time.perf_counter()
    for index in range(count):
        delay = begin + index / rate - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        thread = threading.Thread(target=one, args=(index,))
        thread.start()
        threads.append(thread)
    for thread in threads:
        thread.join()
    span = max(moments) - min(moments) if len(moments) > 1 else 0
    return grants, latencies, failures, (len(moments) - 1) / span if span > 0 else 0


def free_udp_port():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_sipp(directory, scenario, identities, rate, seconds, keys=(), total=None):
    """SIPp at `rate` calls/s in all for `seconds` (or `total` calls, one per process), one process per identity
    (user, auth username, password, destination, target, local port or None: SIPp 3.6 takes digest credentials
    per process, `-s`/`-au`/`-ap`, not from an injection file), each calling its target (field0) through its
    destination. Returns (calls, achieved rate, failed, response times in ms)."""
    processes_count = len(identities)
    per_process = total or max(1, rate * seconds // processes_count)
    period = int(1000 * processes_count / rate)
    work = tempfile.mkdtemp(dir=directory)
    running = []
    for index, (user, username, password, destination, target, port, contact_port) in enumerate(identities):
        csv = os.path.join(work, f"targets{index}.csv")
        with open(csv, "w") as f:
            f.write("SEQUENTIAL\n" + f"{target};\n")
        command = ["sipp", destination, "-sf", scenario, "-inf", csv, "-s", user, "-au", username, "-ap", password,
                   "-m", str(per_process), "-r", "1", "-rp", str(period), "-i", "127.0.0.1",
                   "-p", str(port or free_udp_port()), "-trace_rtt", "-rtt_freq", "1", "-trace_err", "-nostdin",
                   "-timeout", f"{seconds * 4 + 20}s", "-timeout_error"]
        if contact_port:
            command += ["-key", "contact_port", str(contact_port)]
        for key, value in keys:
            command += ["-key", key, str(value)]
        folder = os.path.join(work, str(index))
        os.mkdir(folder)
        running.append(subprocess.Popen(command, cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    codes = [process.wait() for process in running]
    times, moments = [], []
    for index in range(processes_count):
        folder = os.path.join(work, str(index))
        for name in os.listdir(folder):
            if name.endswith("_rtt.csv"):
                with open(os.path.join(folder, name)) as f:
                    for line in f.readlines()[1:]:
                        parts = line.strip().split(";")
                        if len(parts) >= 2:
                            try:
                                moments.append(float(parts[0]))
                                times.append(float(parts[1]))
                            except ValueError:
                                pass
    count = per_process * processes_count
    failed = max(count - len(times), sum(1 for code in codes if code != 0))
    # The sustained rate: completions over the span between the first and the last (process start-up left out).
    span = (max(moments) - min(moments)) / 1000 if len(moments) > 1 else 0
    return count, (len(times) - 1) / span if span > 0 else 0, failed, times


def start_node_b(voice_engine, state, directory, sip_port, tls_port, https_port, db_port):
    """The second node on A's database, secret and certificate: a registration service and a Kamailio."""
    secret = open(os.path.join(state, "shared-secret")).read().strip()
    password = open(os.path.join(state, "database-password")).read().strip()
    registration = subprocess.Popen(
        [voice_engine, "registration-service", "--listen", f"{NODE_B}:{https_port}",
         "--database", f"postgres://voiceengine@127.0.0.1:{db_port}/voiceengine",
         "--database-password-file", os.path.join(state, "database-password"),
         "--shared-secret-file", os.path.join(state, "shared-secret"),
         "--certificate", os.path.join(state, "server.pem"), "--private-key", os.path.join(state, "server.key")],
        stdout=open(os.path.join(directory, "registration-b.log"), "w"), stderr=subprocess.STDOUT,
        start_new_session=True)
    kamailio = subprocess.Popen(
        ["kamailio", "-f", os.path.join(REPO, "Services", "kamailio", "kamailio.cfg"), "-DD", "-E",
         "-l", f"udp:{NODE_B}:{sip_port}", "-l", f"tcp:{NODE_B}:{sip_port}", "-l", f"tls:{NODE_B}:{tls_port}",
         "-A", "WITH_TLS", "-A", f'TLSCFG="{os.path.join(state, "tls.cfg")}"', "-A", f'SECRET="{secret}"',
         "-A", f'DB_URL="postgres://voiceengine:{password}@127.0.0.1:{db_port}/voiceengine"',
         "-A", f'SELF="sip:{NODE_B}:{sip_port}"', "-A", "CLUSTER",
         "-A", f'NODES="{os.path.join(state, "nodes.list")}"', "-P", os.path.join(directory, "kamailio-b.pid"),
         "-Y", directory, "-m", "256", "-M", "8"],
        stdout=subprocess.DEVNULL, stderr=open(os.path.join(directory, "kamailio-b.log"), "w"),
        start_new_session=True)
    return registration, kamailio


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("voice_engine")
    parser.add_argument("--service-rates", default="50,100,200")
    parser.add_argument("--register-rates", default="100,200,400,800")
    parser.add_argument("--call-rates", default="50,100,200,400")
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--processes", type=int, default=20,
                        help="SIPp processes, one user each, that share the SIP load (even: half per node)")
    parser.add_argument("--port-base", type=int, default=27000)
    parser.add_argument("--skip-floor", action="store_true")
    args = parser.parse_args()
    voice_engine = os.path.abspath(args.voice_engine)
    base = args.port_base
    sip_port, tls_port, https_port, db_port, floor_port = base, base + 1, base + 10, base + 20, base + 40
    uas_ports = [base + 100 + index for index in range(args.processes)]
    directory = tempfile.mkdtemp(prefix="service-load-")
    os.chmod(directory, 0o755)
    state = os.path.join(directory, "state")
    environment = dict(os.environ, SIP_TLS_PORT=str(tls_port), DB_PORT=str(db_port), METRICS_PORT=str(base + 11),
                       KAMAILIO_METRICS_PORT=str(base + 2), TURN_PORT=str(base + 50), TURN_MIN_PORT=str(base + 200),
                       NODES=f"sip:{NODE_A}:{sip_port} sip:{NODE_B}:{sip_port}",
                       SERVICE_NAMES=f"DNS:localhost,DNS:voiceengine.test,IP:{NODE_A},IP:{NODE_B}")
    service = subprocess.Popen(["sh", os.path.join(REPO, "Services", "run-service.sh"), state, str(sip_port),
                                str(https_port), voice_engine],
                               env=environment, stdout=open(os.path.join(directory, "service.log"), "w"),
                               stderr=subprocess.STDOUT, start_new_session=True)
    helpers = []
    rows = []
    try:
        wait_for(lambda: tcp_open(NODE_A, https_port) and tcp_open(NODE_A, tls_port), "node A")
        helpers += start_node_b(voice_engine, state, directory, sip_port, tls_port, https_port, db_port)
        wait_for(lambda: tcp_open(NODE_B, https_port) and tcp_open(NODE_B, tls_port), "node B")
        kamailio_a = int(open(os.path.join(state, "kamailio.pid")).read().split()[0])
        kamailio_b = int(open(os.path.join(directory, "kamailio-b.pid")).read().split()[0])
        postgres = int(open(os.path.join(state, "postgresql", "data", "postmaster.pid")).readline())
        registration_a = find_pid(f"registration-service --listen {NODE_A}:{https_port}")
        registration_b = helpers[0].pid
        roots = {"Kamailio": [kamailio_a, kamailio_b], "registration service": [registration_a, registration_b],
                 "PostgreSQL": [postgres]}
        ca = os.path.join(state, "ca.pem")
        nodes = [NODE_A, NODE_B]

        grants, first = {}, 0
        for rate in [int(r) for r in args.service_rates.split(",")]:
            with Meter(roots) as meter:
                granted, latencies, failures, achieved = register_with_service(
                    nodes, https_port, ca, rate, args.seconds, first)
            first += rate * args.seconds
            grants.update(granted)
            rows.append(("signed registration (HTTPS, registration service)", rate, achieved, len(failures),
                         percentiles(latencies), meter.per(len(granted)), meter.load))
            if failures:
                print(f"registration failures at {rate}/s:", failures[:3], file=sys.stderr)
        users = sorted(grants)[:args.processes]
        credentials = [(user, grants[user]["username"], grants[user]["password"]) for user in users]

        # SIP REGISTERs: user i through node i % 2.
        sip = [f"{nodes[index % 2]}:{sip_port}" for index in range(len(users))]
        identities = [(user, name, password, sip[index], user, None, uas_ports[index])
                      for index, (user, name, password) in enumerate(credentials)]
        for rate in [int(r) for r in args.register_rates.split(",")]:
            with Meter(roots) as meter:
                count, achieved, failed, times = run_sipp(
                    directory, os.path.join(SIPP_DIR, "service-register.xml"), identities, rate, args.seconds)
            rows.append(("SIP REGISTER (auth_ephemeral, usrloc in PostgreSQL)", rate, achieved, failed,
                         percentiles(times), meter.per(count - failed), meter.load))

        # The callees: each user's UAS registers from its own port through its node, then answers there.
        callee_registrations = [(user, name, password, sip[index], user, uas_ports[index], uas_ports[index])
                                for index, (user, name, password) in enumerate(credentials)]
        _, _, failed, _ = run_sipp(directory, os.path.join(SIPP_DIR, "service-register.xml"), callee_registrations,
                                   len(users), 1, total=1)
        if failed:
            print(f"{failed} callee registrations failed", file=sys.stderr)
        for index, port in enumerate(uas_ports[:len(users)]):
            helpers.append(subprocess.Popen(
                ["sipp", "-sf", os.path.join(SIPP_DIR, "service-uas.xml"), "-i", "127.0.0.1", "-p", str(port),
                 "-nostdin"], cwd=directory, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                start_new_session=True))
        time.sleep(1)
        # Caller i (through node i % 2) calls user i + 1, registered through the other node.
        callers = [(user, name, password, sip[index], users[(index + 1) % len(users)], None, None)
                   for index, (user, name, password) in enumerate(credentials)]
        for rate in [int(r) for r in args.call_rates.split(",")]:
            with Meter(roots) as meter:
                count, achieved, failed, times = run_sipp(
                    directory, os.path.join(SIPP_DIR, "service-call.xml"), callers, rate, args.seconds)
            rows.append(("call setup (INVITE 407 INVITE, across nodes, 200 ACK BYE)", rate, achieved, failed,
                         percentiles(times), meter.per(count - failed), meter.load))

        if not args.skip_floor:
            floor = subprocess.Popen(
                ["kamailio", "-f", os.path.join(SIPP_DIR, "kamailio-register-floor.cfg"), "-DD", "-E", "-A",
                 'SECRET="floor-password"', "-l", f"udp:127.0.0.1:{floor_port}", "-P",
                 os.path.join(directory, "floor.pid"), "-m", "64", "-M", "8"],
                stdout=subprocess.DEVNULL, stderr=open(os.path.join(directory, "floor.log"), "w"),
                start_new_session=True)
            helpers.append(floor)
            time.sleep(1.5)
            static = [(user, user, "floor-password", f"127.0.0.1:{floor_port}", user, None, uas_ports[index])
                      for index, user in enumerate(users)]
            for rate in [int(r) for r in args.register_rates.split(",")]:
                with Meter({"Kamailio": [floor.pid]}) as meter:
                    count, achieved, failed, times = run_sipp(
                        directory, os.path.join(SIPP_DIR, "service-register.xml"), static, rate, args.seconds)
                rows.append(("floor: plain Kamailio REGISTER, static password, memory", rate, achieved, failed,
                             percentiles(times), meter.per(count - failed), meter.load))
    finally:
        for helper in helpers:
            try:
                os.killpg(helper.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        os.killpg(service.pid, signal.SIGINT)
        service.wait(timeout=30)

    print(f"{args.seconds} s per rate; two nodes ({NODE_A}, {NODE_B}) on one PostgreSQL; "
          f"{args.processes} SIPp users; state in {directory}")
    print("| step | offered /s | achieved /s | failed | passes | p50 / p95 / p99 ms | CPU ms per operation | load |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for step, offered, achieved, failed, times, per, load in rows:
        cpu = ", ".join(f"{name} {value:.2f}" for name, value in per.items())
        passes = "yes" if failed == 0 and achieved >= 0.9 * offered else "no"
        print(f"| {step} | {offered} | {achieved:.0f} | {failed} | {passes} | {times} | {cpu} | {load:.1f} |")


if __name__ == "__main__":
    main()
