#!/usr/bin/env python3
"""Load on the calling client's service, measured side by side (Benchmarks/README.md, "Service load").

Starts the service as `make service` does (Services/run-service.sh: PostgreSQL, the registration service over
HTTPS, Kamailio with Services/kamailio/kamailio.cfg) in a state directory of its own, then:

1. registration service: USERS signed registrations (`POST /v1/registrations` over HTTPS, one connection each,
   CONCURRENCY at a time), the grants kept for the next steps;
2. SIP registrations: SIPp (Benchmarks/sipp/service-register.xml) REGISTERs --processes of the users with their
   grants through Kamailio (auth_ephemeral, usrloc written through to PostgreSQL) at each rate of
   --register-rates, one SIPp process per user (SIPp 3.6 takes digest credentials per process);
3. call setups: SIPp (Benchmarks/sipp/service-call.xml) calls user i+1 from user i at each rate of --call-rates, the
   callees registered at a SIPp UAS (Benchmarks/sipp/service-uas.xml; INVITE, 407, INVITE with credentials, 200,
   ACK, BYE);
4. the floor: a plain Kamailio (Benchmarks/sipp/kamailio-register-floor.cfg: one static password, bindings in
   memory) takes the same REGISTERs at the same rates.

Each step reports the rate offered and achieved, failures, response-time percentiles (SIPp's rtd, from the first
request to the final 200; the HTTPS client's own timing), and the CPU per operation of Kamailio, the registration
service and PostgreSQL (utime + stime of every process of each, from /proc, over the step). A rate passes when
nothing failed and the achieved rate is within 10 % of the offered one.

Usage: Benchmarks/scripts/service-load.py VOICE_ENGINE [--users 2000] [--concurrency 8] [--processes 20]
           [--register-rates 100,200,400,800] [--call-rates 50,100,200,400] [--seconds 5] [--port-base 27000]
Needs: sipp (Debian's sip-tester), kamailio with its postgres, autheph and tls modules, postgresql, openssl.
"""
import argparse
import base64
import hashlib
import http.client
import json
import os
import queue
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


def processes():
    """pid → (ppid, utime + stime in ticks) for every process."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            table[int(entry)] = (int(fields[1]), int(fields[11]) + int(fields[12]))
        except (OSError, IndexError, ValueError):
            pass
    return table


def tree_cpu(root, table):
    """CPU seconds of `root` and its descendants."""
    total, pending = 0, [root]
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


def wait_for(check, what, seconds=60):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if check():
            return
        time.sleep(0.2)
    sys.exit(f"{what} did not come up within {seconds} s")


def tcp_open(port):
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def percentiles(values):
    if not values:
        return "–"
    ordered = sorted(values)
    pick = lambda p: ordered[min(len(ordered) - 1, int(p * len(ordered)))]
    return f"{pick(0.5):.1f} / {pick(0.9):.1f} / {pick(0.99):.1f}"


class Meter:
    """CPU of the service's processes across one step."""

    def __init__(self, roots):
        self.roots = roots

    def __enter__(self):
        table = processes()
        self.before = {name: tree_cpu(pid, table) for name, pid in self.roots.items() if pid}
        self.started = time.time()
        return self

    def __exit__(self, *_):
        table = processes()
        self.elapsed = time.time() - self.started
        self.used = {name: tree_cpu(pid, table) - self.before[name] for name, pid in self.roots.items() if pid}

    def per(self, count):
        return {name: (1000 * used / count if count else 0) for name, used in self.used.items()}


def register_with_service(https_port, ca, users, concurrency):
    """Signed registrations over HTTPS; returns grants, latencies (ms) and failures."""
    context = ssl.create_default_context(cafile=ca)
    work = queue.Queue()
    for index in range(users):
        work.put(index)
    grants, latencies, failures = {}, [], []
    lock = threading.Lock()

    def worker():
        while True:
            try:
                index = work.get_nowait()
            except queue.Empty:
                return
            user = f"load{index}"
            sequence = int(time.time() * 1000)
            signature = base64.b64encode(
                hashlib.sha1(f"{user}{APPLICATION_KEY}{sequence}{APPLICATION_SECRET}".encode()).digest()).decode()
            body = json.dumps({"applicationKey": APPLICATION_KEY, "userID": user, "sequence": sequence,
                               "signature": signature})
            started = time.perf_counter()
            try:
                connection = http.client.HTTPSConnection("127.0.0.1", https_port, context=context, timeout=10)
                connection.request("POST", "/v1/registrations", body, {"Content-Type": "application/json"})
                answer = connection.getresponse()
                payload = answer.read()
                connection.close()
                elapsed = 1000 * (time.perf_counter() - started)
                with lock:
                    if answer.status == 200:
                        grants[user] = json.loads(payload)
                        latencies.append(elapsed)
                    else:
                        failures.append(f"{user}: HTTP {answer.status} {payload[:100]!r}")
            except OSError as error:
                with lock:
                    failures.append(f"{user}: {error}")

    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return grants, latencies, failures


def free_udp_port():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_sipp(directory, scenario, identities, targets, rate, seconds, destination, keys=()):
    """SIPp at `rate` calls/s in all for `seconds`, one process per identity (user, auth username, password:
    SIPp 3.6 takes digest credentials per process, `-s`/`-au`/`-ap`, not from an injection file), each calling
    its target (field0). Returns (calls, achieved rate, failed, response times in ms)."""
    processes_count = len(identities)
    per_process = max(1, rate * seconds // processes_count)
    period = int(1000 * processes_count / rate)
    work = tempfile.mkdtemp(dir=directory)
    running = []
    started = time.time()
    for index, (user, username, password) in enumerate(identities):
        csv = os.path.join(work, f"targets{index}.csv")
        with open(csv, "w") as f:
            f.write("SEQUENTIAL\n" + f"{targets[index]};\n")
        command = ["sipp", destination, "-sf", scenario, "-inf", csv, "-s", user, "-au", username, "-ap", password,
                   "-m", str(per_process), "-r", "1", "-rp", str(period), "-i", "127.0.0.1",
                   "-p", str(free_udp_port()), "-trace_rtt", "-rtt_freq", "1", "-trace_err", "-nostdin",
                   "-timeout", f"{seconds * 4 + 20}s", "-timeout_error"]
        for key, value in keys:
            command += ["-key", key, str(value)]
        folder = os.path.join(work, str(index))
        os.mkdir(folder)
        running.append(subprocess.Popen(command, cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    codes = [process.wait() for process in running]
    elapsed = time.time() - started
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
    span = (max(moments) - min(moments)) / 1000 if len(moments) > 1 else elapsed
    return count, (len(times) - 1) / span if span > 0 else 0, failed, times


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("voice_engine")
    parser.add_argument("--users", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--register-rates", default="100,200,400,800")
    parser.add_argument("--call-rates", default="50,100,200,400")
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--processes", type=int, default=20,
                        help="SIPp processes, one user each, that share the SIP load")
    parser.add_argument("--port-base", type=int, default=27000)
    args = parser.parse_args()
    base = args.port_base
    sip_port, tls_port, https_port, db_port, uas_port, floor_port = base, base + 1, base + 10, base + 20, base + 30, \
        base + 40
    directory = tempfile.mkdtemp(prefix="service-load-")
    os.chmod(directory, 0o755)
    state = os.path.join(directory, "state")
    environment = dict(os.environ, SIP_TLS_PORT=str(tls_port), DB_PORT=str(db_port), METRICS_PORT=str(base + 11),
                       KAMAILIO_METRICS_PORT=str(base + 2))
    service = subprocess.Popen(["sh", os.path.join(REPO, "Services", "run-service.sh"), state, str(sip_port),
                                str(https_port), os.path.abspath(args.voice_engine)],
                               env=environment, stdout=open(os.path.join(directory, "service.log"), "w"),
                               stderr=subprocess.STDOUT, start_new_session=True)
    helpers = []
    rows = []
    try:
        wait_for(lambda: tcp_open(https_port) and tcp_open(tls_port), "the service")
        kamailio = int(open(os.path.join(state, "kamailio.pid")).read().split()[0])
        postgres = int(open(os.path.join(state, "postgresql", "data", "postmaster.pid")).readline())
        registration = find_pid(f"registration-service --listen 127.0.0.1:{https_port}")
        roots = {"kamailio": kamailio, "registration service": registration, "postgresql": postgres}

        with Meter(roots) as meter:
            grants, latencies, failures = register_with_service(
                https_port, os.path.join(state, "ca.pem"), args.users, args.concurrency)
        per = meter.per(len(grants))
        rows.append(("registration service (HTTPS, signed)", f"{args.concurrency} at a time",
                     f"{len(grants) / meter.elapsed:.0f}", len(failures), percentiles(latencies), per))
        if failures:
            print("registration failures:", failures[:5], file=sys.stderr)
        users = sorted(grants)
        credentials = [(user, grants[user]["username"], grants[user]["password"]) for user in users]

        identities = credentials[:args.processes]
        own = [user for user, _, _ in identities]
        for rate in [int(r) for r in args.register_rates.split(",")]:
            with Meter(roots) as meter:
                count, achieved, failed, times = run_sipp(
                    directory, os.path.join(SIPP_DIR, "service-register.xml"), identities, own, rate, args.seconds,
                    f"127.0.0.1:{sip_port}", keys=[("contact_port", uas_port)])
            rows.append(("SIP REGISTER (auth_ephemeral, usrloc → PostgreSQL)", rate, f"{achieved:.0f}", failed,
                         percentiles(times), meter.per(count - failed)))

        uas = subprocess.Popen(["sipp", "-sf", os.path.join(SIPP_DIR, "service-uas.xml"), "-i", "127.0.0.1",
                                "-p", str(uas_port), "-nostdin"], cwd=directory, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True)
        helpers.append(uas)
        time.sleep(1)
        callees = [own[(i + 1) % len(own)] for i in range(len(own))]
        for rate in [int(r) for r in args.call_rates.split(",")]:
            with Meter(roots) as meter:
                count, achieved, failed, times = run_sipp(
                    directory, os.path.join(SIPP_DIR, "service-call.xml"), identities, callees, rate, args.seconds,
                    f"127.0.0.1:{sip_port}")
            rows.append(("call setup (INVITE 407 INVITE 200 ACK BYE)", rate, f"{achieved:.0f}", failed,
                         percentiles(times), meter.per(count - failed)))

        floor = subprocess.Popen(["kamailio", "-f", os.path.join(SIPP_DIR, "kamailio-register-floor.cfg"), "-DD",
                                  "-E", "-A", 'SECRET="floor-password"', "-l", f"udp:127.0.0.1:{floor_port}",
                                  "-P", os.path.join(directory, "floor.pid"), "-m", "64", "-M", "8"],
                                 stdout=subprocess.DEVNULL, stderr=open(os.path.join(directory, "floor.log"), "w"),
                                 start_new_session=True)
        helpers.append(floor)
        time.sleep(1.5)
        static = [(user, user, "floor-password") for user in own]
        for rate in [int(r) for r in args.register_rates.split(",")]:
            with Meter({"kamailio": floor.pid}) as meter:
                count, achieved, failed, times = run_sipp(
                    directory, os.path.join(SIPP_DIR, "service-register.xml"), static, own, rate, args.seconds,
                    f"127.0.0.1:{floor_port}", keys=[("contact_port", uas_port)])
            rows.append(("floor: plain Kamailio REGISTER, static password, memory", rate, f"{achieved:.0f}", failed,
                         percentiles(times), meter.per(count - failed)))
    finally:
        for helper in helpers:
            os.killpg(helper.pid, signal.SIGTERM)
        os.killpg(service.pid, signal.SIGINT)
        service.wait(timeout=30)

    print(f"load average {os.getloadavg()[0]:.1f}; {args.users} users; {args.seconds} s per rate; "
          f"state in {directory}")
    print("| step | offered /s | achieved /s | failed | passes | p50 / p90 / p99 ms | CPU ms per operation |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for step, offered, achieved, failed, times, per in rows:
        cpu = ", ".join(f"{name} {value:.2f}" for name, value in per.items())
        passes = "–" if not isinstance(offered, int) else (
            "yes" if failed == 0 and float(achieved) >= 0.9 * offered else "no")
        print(f"| {step} | {offered} | {achieved} | {failed} | {passes} | {times} | {cpu} |")


if __name__ == "__main__":
    main()
