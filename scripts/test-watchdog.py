#!/usr/bin/env python3
"""Runs `swift test` with a time limit, and explains a hang instead of only killing it.

Usage: test-watchdog.py SECONDS REPORT_DIR -- swift test ARGS...

The output is passed through unchanged. When the limit is reached, the report names the tests that
started but never finished (from swift-testing's event lines) and holds every thread's backtrace of
the test process (gdb), the suites that started but never finished, and the test cluster's PostgreSQL
sessions (a hang that waits on the database shows there: a lock wait, a session idle in a
transaction); then the run is interrupted, killed 30 s later, and
the exit status is 124 like coreutils' `timeout`. When the test process crashes instead (a trap, a
signal), the report holds the crash message, the crashed thread's backtrace from Swift's backtracer and the
tests that were running. When tests fail, the summary names each failed test with its first recorded
issue, one short line each. A summary is printed again last, where a truncated CI log still shows it.

The test process keeps a journal of each test's application steps (service group, servers, requests) in
REPORT_DIR/journal (`LATCHKEY_TEST_JOURNAL`); for every unfinished test the report shows its last steps,
which is where a suspended task, invisible in thread backtraces, stopped.
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
from collections import Counter

ANSI = re.compile(r"\x1b\[[0-9;]*m")  # colours, when the bundle runs without `swift test`
STARTED = re.compile(r"^◇ Test (.+) started\.$")
# A parameterized test ends with "… with N test cases passed after …"; its cases print no end line.
# Anchored on what follows the verb: a display name may itself contain "skipped" or "passed".
FINISHED = re.compile(r"^[✔✘➜] Test (.+?)(?: with \d+ test cases?)? (?:(?:passed|failed) after |skipped(?:[.:]|$))")


def unfinished(lines):
    """Tests with more 'started' than 'passed/failed/skipped' lines, in start order."""
    still_open = Counter()
    for line in lines:
        if (match := STARTED.match(line)) and match.group(1) != "run" and not match.group(1).startswith("case passing"):
            still_open[match.group(1)] += 1
        elif (match := FINISHED.match(line)) and still_open[match.group(1)] > 0:
            still_open[match.group(1)] -= 1
    return [name for name, count in still_open.items() if count > 0]  # a Counter keeps insertion order


SUITE_STARTED = re.compile(r"^◇ Suite (.+) started\.$")
SUITE_FINISHED = re.compile(r"^[✔✘➜] Suite (.+?) (?:(?:passed|failed) after |skipped)")


def unfinished_suites(lines):
    """Suites that started and never ended. Sturdier than the test names: a test's end line can be cut
    up by other output written at the same moment, but a suite only ends after all of its tests."""
    still_open = Counter()
    for line in lines:
        if match := SUITE_STARTED.match(line):
            still_open[match.group(1)] += 1
        elif (match := SUITE_FINISHED.match(line)) and still_open[match.group(1)] > 0:
            still_open[match.group(1)] -= 1
    return [name for name, count in still_open.items() if count > 0]


ACTIVITY = """
SELECT pid, usename, datname, state, coalesce(wait_event_type || ':' || wait_event, '-'),
       coalesce(extract(epoch FROM now() - xact_start)::int::text || ' s', '-'),
       extract(epoch FROM now() - state_change)::int || ' s', pg_blocking_pids(pid)::text,
       left(regexp_replace(query, '\\s+', ' ', 'g'), 160)
FROM pg_stat_activity
WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() AND datname IS NOT NULL
ORDER BY xact_start NULLS LAST, state_change
"""


def postgres_sessions():
    """The test cluster's client sessions (state, wait, transaction age, blockers, statement), from
    LATCHKEY_TEST_MIGRATION_DATABASE_URL; statements carry no bound values."""
    url = os.environ.get("LATCHKEY_TEST_MIGRATION_DATABASE_URL")
    psql = shutil.which("psql")
    if not url or not psql:
        return ["  (not read: no LATCHKEY_TEST_MIGRATION_DATABASE_URL or no psql)"]
    try:
        result = subprocess.run([psql, url, "-X", "-A", "-F", " | ", "-t", "-c", ACTIVITY],
                                capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as error:
        return [f"  (not read: {error})"]
    if result.returncode != 0:
        return [f"  (not read: {result.stderr.strip()[:300]})"]
    rows = [line for line in result.stdout.splitlines() if line.strip()]
    header = "  pid | role | database | state | wait | transaction age | in state for | blocked by | statement"
    return [header] + ["  " + row for row in rows] if rows else ["  (no client sessions)"]


def test_processes(root_pid):
    """The test bundle processes under `swift test` (it runs the bundle as a child)."""
    found = []
    try:
        output = subprocess.run(["ps", "-eo", "pid=,ppid=,args="], capture_output=True, text=True).stdout
    except OSError:
        return found
    children = {}
    for row in output.splitlines():
        parts = row.split(None, 2)
        if len(parts) == 3:
            children.setdefault(int(parts[1]), []).append((int(parts[0]), parts[2]))
    stack = [root_pid]
    while stack:
        for pid, args in children.get(stack.pop(), []):
            stack.append(pid)
            if ".xctest" in args or "PackageTests" in args:
                found.append(pid)
    return found


def backtraces(pid, path):
    """Every thread's backtrace of `pid` (gdb, Swift names demangled) into `path`; for the summary, the
    threads that run our code. (The toolchain's lldb needs libpython3.10, which Debian 12 lacks; Swift's
    own backtracer could not suspend threads on this VM.)"""
    demangler = os.path.join(os.path.dirname(os.path.realpath(shutil.which("swift") or "swift")), "swift-demangle")
    try:
        trace = subprocess.run(["gdb", "-p", str(pid), "-batch", "-ex", "set pagination off",
                                "-ex", "thread apply all bt 40"], capture_output=True, text=True, timeout=240).stdout
        if os.path.exists(demangler):
            trace = subprocess.run([demangler], input=trace, capture_output=True, text=True, timeout=120).stdout
    except (OSError, subprocess.TimeoutExpired) as error:
        return [f"(no backtrace: {error})"]
    with open(path, "w") as out:
        out.write(trace)
    ours = re.compile(r"\b(DPoPVerifier|TokenService|RegistrationGateway|AuditConsumer|LatchkeyCore|LatchkeyKafka|LatchkeyPersistence|LatchkeyServer|LatchkeyTestSupport|\w+Tests)\.")
    interesting = []
    for thread in re.split(r"\n(?=Thread \d+ )", trace):
        if ours.search(thread):
            interesting.extend(line[:240] for line in thread.splitlines()[:16])
    return interesting[:600]


JOURNAL_TAIL = 40


def journal_steps(journal_dir, tests):
    """The last journaled steps of each of `tests` (lines: time, test, step), from every test process."""
    steps = {test: [] for test in tests}
    try:
        names = sorted(os.listdir(journal_dir))
    except OSError:
        names = []
    for name in names:
        with open(os.path.join(journal_dir, name), errors="replace") as journal:
            for line in journal:
                parts = line.rstrip("\n").split("\t", 2)
                if len(parts) == 3 and parts[1] in steps:
                    steps[parts[1]].append(f"{parts[0]} {parts[2]}"[:300])
    report = []
    for test in tests:
        report.append(f"last steps of {test}:")
        report += ["  " + step for step in steps[test][-JOURNAL_TAIL:]] or ["  (none journaled)"]
    return report


CRASH_MARKERS = re.compile(r"(Fatal error|Precondition failed|Assertion failed|Program crashed|💣)")
CRASHED_THREAD = re.compile(r"^Thread \d+ (?:\"[^\"]*\" )?crashed:$")
OTHER_THREAD = re.compile(r"^(Thread \d+( \"[^\"]*\")?|Registers):$")
CRASH_FRAMES = 60


def crash_report(lines):
    """The crash messages and the crashed thread's frames in Swift's backtracer output: with every thread
    printed, the crashed one is far above the end of a truncated log."""
    report = [line[:300] for line in lines if CRASH_MARKERS.search(line)][:20]
    for index, line in enumerate(lines):
        if CRASHED_THREAD.match(line.strip()):
            frames = []
            for frame in lines[index:index + CRASH_FRAMES]:
                if frames and OTHER_THREAD.match(frame.strip()):
                    break
                frames.append(frame[:300])
            report += frames
            break
    return report


ISSUE = re.compile(r"^✘ Test (.+?) recorded an issue(?: with \d+ arguments? .*?)? at (\S+?):\d+:\d+: (.*)$")
FAILURE_LINES = 10
FAILURE_WIDTH = 170


def failure_digest(lines):
    """One line per failed test, its first recorded issue: the end of a CI log is kept only a couple of
    thousand characters long, and a failure far above it says nothing about the others."""
    first = {}
    for line in lines:
        match = ISSUE.match(line)
        if match and match.group(1) not in first:
            test, file, issue = match.groups()
            first[test] = f"  {test.split('(')[0]} ({file}): {issue}"[:FAILURE_WIDTH]
    if not first:
        return []
    digest = [f"failed tests ({len(first)}), each with its first issue:"] + list(first.values())[:FAILURE_LINES]
    if len(first) > FAILURE_LINES:
        digest.append(f"  … and {len(first) - FAILURE_LINES} more")
    return digest


def write_summary(report_dir, summary):
    with open(os.path.join(report_dir, "summary.txt"), "w") as out:
        out.write("\n".join(summary) + "\n")
    print("\n".join(summary), flush=True)


def running_tests(lines, journal_dir):
    """The tests and suites that started and had not finished, with the journal's last steps of the tests."""
    tests = unfinished(lines)
    summary = ["tests started but not finished:"]
    summary += [f"  {name}" for name in tests] or ["  (none: outside any test)"]
    summary.append("suites started but not finished:")
    summary += [f"  {name}" for name in unfinished_suites(lines)] or ["  (none)"]
    return summary + journal_steps(journal_dir, tests)


def main():
    limit, report_dir = float(sys.argv[1]), sys.argv[2]
    command = sys.argv[sys.argv.index("--") + 1:]
    os.makedirs(report_dir, exist_ok=True)
    journal_dir = os.path.join(report_dir, "journal")
    shutil.rmtree(journal_dir, ignore_errors=True)
    os.makedirs(journal_dir)
    lines = []
    # Line-buffered: through a pipe the test bundle's stdout is block-buffered, and the lines that say
    # which tests started would only arrive after the hang is over.
    process = subprocess.Popen(["stdbuf", "-oL"] + command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               start_new_session=True, env={**os.environ, "LATCHKEY_TEST_JOURNAL": journal_dir})

    def pump():
        for raw in process.stdout:
            sys.stdout.buffer.write(raw)
            sys.stdout.buffer.flush()
            lines.append(ANSI.sub("", raw.decode("utf-8", "replace").rstrip("\n")))

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    try:
        status = process.wait(timeout=limit)
        reader.join(timeout=60)  # the last lines may still be in the pipe
        # `swift test` runs the bundle as a child and reports a signal that ended it; the bundle run
        # directly ends with the signal itself (a negative status).
        crashed = status < 0 or any("exited with unexpected signal" in line for line in lines[-50:])
        if crashed:
            summary = ["the test process crashed:"] + ["  " + line for line in crash_report(list(lines))]
            write_summary(report_dir, summary + running_tests(list(lines), journal_dir))
        elif status != 0 and (digest := failure_digest(list(lines))):
            write_summary(report_dir, digest)
        return status
    except subprocess.TimeoutExpired:
        pass

    summary = [f"swift test did not finish within {int(limit)} s;"] + running_tests(list(lines), journal_dir)
    summary.append("PostgreSQL sessions of the test cluster:")
    summary += postgres_sessions()
    for pid in test_processes(process.pid):
        path = os.path.join(report_dir, f"backtrace-{pid}.txt")
        summary.append(f"threads of test process {pid} that run our code (all threads: {path}):")
        summary += ["  " + line for line in backtraces(pid, path)]
    write_summary(report_dir, summary)

    os.killpg(process.pid, signal.SIGINT)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    reader.join(timeout=5)
    return 124


if __name__ == "__main__":
    sys.exit(main())
