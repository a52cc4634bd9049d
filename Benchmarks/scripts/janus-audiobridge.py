#!/usr/bin/env python3
"""Drives Debian's Janus (AudioBridge plugin) with plain-RTP participants for `voice-bench conference --janus`.

Starts `janus` with a configuration of its own (HTTP API on 127.0.0.1:PORT, only the AudioBridge plugin and the
HTTP transport, AudioBridge RTP ports in RTP_RANGE), creates a 16 kHz room that allows plain-RTP participants,
joins every participant of the workload file (written by ConferenceWorkload.write(to:): plain RTP, Opus 16 kHz
20 ms with DTX) with its own UDP socket, replays the datagrams in real time (one tick every 20 ms) and reports the
CPU time Janus used (utime + stime from /proc) over the measured window, as one JSON line:
{"participants":N,"seconds":S,"cpu_seconds":C,"participants_per_core":P,"mixed_packets_received":R}.

Exit 3 when janus is not installed. Only loopback addresses are used.
"""
import argparse
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

PLUGINS = "/usr/lib/x86_64-linux-gnu/janus/plugins"
TRANSPORTS = "/usr/lib/x86_64-linux-gnu/janus/transports"


def read_workload(path):
    with open(path, "rb") as f:
        blob = f.read()
    if blob[:4] != b"VCWL":
        raise SystemExit("not a workload file: " + path)
    participants, ticks, count = struct.unpack_from("<III", blob, 4)
    at = 16
    per_tick = [[] for _ in range(ticks)]
    for _ in range(count):
        tick, owner, length = struct.unpack_from("<IIH", blob, at)
        at += 10
        per_tick[tick].append((owner, blob[at:at + length]))
        at += length
    return participants, ticks, per_tick


def write_config(folder, port, rtp_range):
    plugins = [f for f in os.listdir(PLUGINS) if f.endswith(".so") and f != "libjanus_audiobridge.so"]
    transports = [f for f in os.listdir(TRANSPORTS) if f.endswith(".so") and f != "libjanus_http.so"]
    with open(os.path.join(folder, "janus.jcfg"), "w") as f:
        f.write(f"""general: {{
    configs_folder = "{folder}"
    plugins_folder = "{PLUGINS}"
    transports_folder = "{TRANSPORTS}"
    debug_level = 4
    admin_secret = "unused-{os.getpid()}"
}}
plugins: {{ disable = "{",".join(plugins)}" }}
transports: {{ disable = "{",".join(transports)}" }}
events: {{ broadcast = false }}
loggers: {{ disable = "libjanus_jsonlog.so" }}
media: {{ rtp_port_range = "{rtp_range}" }}
nat: {{ nice_debug = false }}
""")
    with open(os.path.join(folder, "janus.transport.http.jcfg"), "w") as f:
        f.write(f"""general: {{
    json = "compact"
    base_path = "/janus"
    http = true
    port = {port}
    ip = "127.0.0.1"
    https = false
}}
admin: {{ admin_http = false admin_https = false }}
""")
    with open(os.path.join(folder, "janus.plugin.audiobridge.jcfg"), "w") as f:
        f.write(f"""general: {{
    rtp_port_range = "{rtp_range}"
    local_ip = "127.0.0.1"
    events = false
}}
""")


class Janus:
    def __init__(self, port):
        self.base = f"http://127.0.0.1:{port}/janus"
        self.transaction = 0
        self.events = []
        self.lock = threading.Condition()
        self.running = True

    def post(self, path, body):
        self.transaction += 1
        body["transaction"] = f"t{self.transaction}"
        request = urllib.request.Request(self.base + path, data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as r:
            return json.loads(r.read())

    def poll(self, session):
        while self.running:
            try:
                with urllib.request.urlopen(f"{self.base}/{session}?maxev=10", timeout=40) as r:
                    reply = json.loads(r.read())
            except Exception:
                continue
            items = reply if isinstance(reply, list) else [reply]
            with self.lock:
                self.events.extend(items)
                self.lock.notify_all()

    def wait_event(self, handle, kind, timeout=10):
        end = time.time() + timeout
        with self.lock:
            while time.time() < end:
                for e in self.events:
                    data = e.get("plugindata", {}).get("data", {})
                    if e.get("sender") == handle and data.get("audiobridge") == kind:
                        self.events.remove(e)
                        return data
                self.lock.wait(0.2)
        raise SystemExit(f"no '{kind}' event from handle {handle}")


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workload")
    parser.add_argument("--port", type=int, default=28300)
    parser.add_argument("--rtp-range", default="28310-28399")
    parser.add_argument("--warm-up-seconds", type=float, default=2.0)
    args = parser.parse_args()
    if not shutil.which("janus"):
        print("janus is not installed", file=sys.stderr)
        return 3
    participants, ticks, per_tick = read_workload(args.workload)
    folder = tempfile.mkdtemp(prefix="voice-bench-janus-")
    write_config(folder, args.port, args.rtp_range)
    log = open(os.path.join(folder, "janus.log"), "w")
    process = subprocess.Popen(["janus", "-F", folder, "-C", os.path.join(folder, "janus.jcfg")],
                               stdout=log, stderr=subprocess.STDOUT)
    janus = Janus(args.port)
    sockets = []
    try:
        for _ in range(100):
            try:
                session = janus.post("", {"janus": "create"})["data"]["id"]
                break
            except Exception:
                if process.poll() is not None:
                    raise SystemExit("janus exited: see " + os.path.join(folder, "janus.log"))
                time.sleep(0.1)
        else:
            raise SystemExit("janus HTTP API did not come up")
        threading.Thread(target=janus.poll, args=(session,), daemon=True).start()
        room = 4242
        handles = []
        for i in range(participants):
            handle = janus.post(f"/{session}", {"janus": "attach", "plugin": "janus.plugin.audiobridge"})["data"]["id"]
            handles.append(handle)
        created = janus.post(f"/{session}/{handles[0]}", {"janus": "message", "body": {
            "request": "create", "room": room, "sampling_rate": 16000, "allow_rtp_participants": True,
            "permanent": False}})
        data = created.get("plugindata", {}).get("data", {})
        if data.get("audiobridge") != "created":
            raise SystemExit(f"room not created: {created}")
        targets = []
        for i, handle in enumerate(handles):
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.bind(("127.0.0.1", 0))
            s.setblocking(False)
            sockets.append(s)
            janus.post(f"/{session}/{handle}", {"janus": "message", "body": {
                "request": "join", "room": room, "display": f"p{i}",
                "rtp": {"ip": "127.0.0.1", "port": s.getsockname()[1], "payload_type": 111}}})
            joined = janus.wait_event(handle, "joined")
            rtp = joined.get("rtp")
            if not rtp:
                raise SystemExit(f"join without an RTP address: {joined}")
            targets.append(("127.0.0.1", rtp["port"]))
        received = 0
        start = time.monotonic()
        warm = int(args.warm_up_seconds * 50)
        cpu0 = None
        for t in range(ticks):
            if t == warm:
                cpu0 = cpu_seconds(process.pid)
                wall0 = time.monotonic()
                received = 0
            for owner, datagram in per_tick[t]:
                sockets[owner].sendto(datagram, targets[owner])
            for s in sockets:
                while True:
                    try:
                        s.recv(2048)
                        received += 1
                    except BlockingIOError:
                        break
            delay = start + (t + 1) * 0.02 - time.monotonic()
            if delay > 0:
                time.sleep(delay)
        cpu = cpu_seconds(process.pid) - cpu0
        if received == 0:
            log.flush()
            with open(os.path.join(folder, "janus.log")) as f:
                print("janus-audiobridge: no mixed audio came back; janus log tail:\n" + "".join(f.readlines()[-60:]),
                      file=sys.stderr)
        seconds = time.monotonic() - wall0
        print(json.dumps({"participants": participants, "seconds": round(seconds, 2), "cpu_seconds": round(cpu, 3),
                          "participants_per_core": round(participants * seconds / cpu, 1) if cpu > 0 else None,
                          "mixed_packets_received": received}))
        return 0
    finally:
        janus.running = False
        for s in sockets:
            s.close()
        process.terminate()
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
