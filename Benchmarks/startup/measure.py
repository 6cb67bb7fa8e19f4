#!/usr/bin/env python3
"""Start-up time and idle memory of the four services (driven by Benchmarks/startup/run.sh).

Each service is started `--runs` times on a free port: the time from spawn to the first 200 from
/healthz (listening) and from /readyz (dependencies checked) is measured by polling every 2 ms; after the
last run the process idles `--idle-seconds` and its VmRSS / VmHWM are read from /proc. Then SIGTERM,
and the time to exit is measured too.
"""
import argparse
import os
import socket
import statistics
import subprocess
import time
import urllib.error
import urllib.request

SERVICES = ["registration-gateway", "token-service", "dpop-verifier", "audit-consumer"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ok(url):
    try:
        with urllib.request.urlopen(url, timeout=1) as response:
            return response.status == 200
    except (urllib.error.URLError, ConnectionError, OSError):
        return False


def wait_until(url, process, deadline):
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"exited with {process.returncode} before {url} answered")
        if ok(url):
            return time.monotonic()
        time.sleep(0.002)
    raise RuntimeError(f"{url} did not answer in time")


def memory(pid):
    values = {}
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                values[key] = int(value.split()[0]) / 1024
    return values


def measure(binary, runs, idle):
    listening, ready, stopping = [], [], []
    rss = hwm = 0.0
    for run in range(runs):
        port, management = free_port(), free_port()
        env = dict(os.environ, HTTP_PORT=str(port), MANAGEMENT_PORT=str(management))
        started = time.monotonic()
        process = subprocess.Popen([binary], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            listening.append(wait_until(f"http://127.0.0.1:{management}/healthz", process, started + 30) - started)
            ready.append(wait_until(f"http://127.0.0.1:{management}/readyz", process, started + 60) - started)
            if run == runs - 1:
                time.sleep(idle)
                values = memory(process.pid)
                rss, hwm = values["VmRSS"], values["VmHWM"]
        finally:
            stop = time.monotonic()
            process.terminate()
            process.wait(timeout=60)
            stopping.append(time.monotonic() - stop)
    return listening, ready, stopping, rss, hwm


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True)
    parser.add_argument("--machine", required=True)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--idle-seconds", type=float, default=10)
    parser.add_argument("--report", required=True)
    args = parser.parse_args()
    rows = []
    for service in SERVICES:
        listening, ready, stopping, rss, hwm = measure(os.path.join(args.bin, service), args.runs, args.idle_seconds)
        rows.append((service, statistics.median(listening), max(listening), statistics.median(ready), max(ready),
                     statistics.median(stopping), rss, hwm))
        print(f"{service}: listening {statistics.median(listening) * 1000:.0f} ms, ready "
              f"{statistics.median(ready) * 1000:.0f} ms, idle RSS {rss:.1f} MiB")
    lines = [
        "# Start-up and idle memory", "",
        f"Machine: {args.machine}. Release build; PostgreSQL and the embedded Kafka cluster already running; "
        f"{args.runs} starts per service; RSS read after {args.idle_seconds:g} s idle. Target: "
        "starts in < 1 s, idles under 64 MB.", "",
        "| service | listening (median / max) | ready (median / max) | SIGTERM → exit (median) | idle RSS | peak RSS |",
        "|---|---|---|---|---|---|",
    ]
    for service, l_med, l_max, r_med, r_max, s_med, rss, hwm in rows:
        lines.append(f"| {service} | {l_med * 1000:.0f} / {l_max * 1000:.0f} ms | {r_med * 1000:.0f} / {r_max * 1000:.0f} ms "
                     f"| {s_med * 1000:.0f} ms | {rss:.1f} MiB | {hwm:.1f} MiB |")
    with open(args.report, "w") as report:
        report.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
