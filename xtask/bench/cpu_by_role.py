#!/usr/bin/env python3
"""Where a served run's CPU goes, by process role.

Reads `perf script -F comm,pid,ip,sym` of a system-wide `perf record -a -g -e cpu-clock
-F HZ` taken while clients loop over `maibox exec --server` against a fork server, and
prints each role's CPU per run (samples / HZ / runs) with its largest system calls.
Roles are told apart by process name and, for processes of the same name, by what
their samples show (a sandbox's set-up calls unshare and mount; a forked interpreter
installs seccomp or runs Python code; a zygote lives long). Diagnostic, not a test:
see docs/benchmarks.md for the commands and the figures.

usage: cpu_by_role.py PERF_SCRIPT_OUTPUT RUNS HZ
"""
import collections
import re
import sys


def samples(path: str) -> list[tuple[str, int, list[str]]]:
    """(comm, pid, [frames]) for each sample, frames innermost first."""
    out, cur = [], None
    head = re.compile(r"^\s*(\S.*?)\s+(\d+)\s*$")
    frame = re.compile(r"^\s+[0-9a-f]{6,}\s")
    for line in open(path, errors="replace"):
        if not line.strip():
            if cur:
                out.append(cur)
            cur = None
            continue
        m = head.match(line)
        if cur is None and m and not frame.match(line):
            cur = (m.group(1), int(m.group(2)), [])
        elif cur is not None:
            parts = line.split(None, 1)
            cur[2].append(parts[1].strip().split("+")[0] if len(parts) > 1 else "")
    if cur:
        out.append(cur)
    return out


def role(comm: str, ss: list[tuple[str, int, list[str]]]) -> str:
    """The role of one process (its name and its samples) in a served run."""
    text = " ".join(" ".join(s[2]) for s in ss)
    if comm.startswith("python3"):
        if len(ss) >= 40:
            return "python: zygotes (start, preloads, forks)"
        if "do_seccomp" in text or "landlock" in text or "_PyEval" in text:
            return "python: the forked interpreters"
        return "python: the forks' outside parents"
    if comm == "maibox":
        if len(ss) >= 100:
            return "maibox: the spawner"
        if "__x64_sys_unshare" in text or "__x64_sys_mount" in text:
            return "maibox: sandbox set-up (the spawner's clone)"
        return "maibox: the client (maibox exec --server)"
    if comm.startswith("maibox-pool"):
        return "server: pool refill threads"
    if comm.startswith("maibox-conn"):
        return "server: connection threads"
    if comm.startswith("maibox-"):
        return comm
    if comm.startswith(("kworker", "ksoftirq", "rcu", "kthreadd")):
        return "kernel threads"
    return "idle" if comm == "swapper" else "other: " + comm


def main() -> None:
    path, runs, hz = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    by_pid = collections.defaultdict(list)
    for s in samples(path):
        by_pid[(s[0], s[1])].append(s)
    total, calls = collections.Counter(), collections.defaultdict(collections.Counter)
    for (comm, _), ss in by_pid.items():
        r = role(comm, ss)
        total[r] += len(ss)
        for s in ss:
            sys_ = [f for f in s[2] if f.startswith(("__x64_sys_", "__do_sys_")) or f == "exc_page_fault"]
            calls[r][sys_[-1] if sys_ else "user and the rest"] += 1

    def ms(n: int) -> float:
        return n / hz * 1000 / runs

    busy = sum(n for r, n in total.items() if r != "idle")
    print(f"busy {ms(busy):.2f} ms per run over {runs} runs")
    for r, n in total.most_common():
        top = ", ".join(f"{c.replace('__x64_sys_', '').replace('__do_sys_', '')} {ms(k):.2f}"
                        for c, k in calls[r].most_common(4))
        print(f"{ms(n):6.2f}  {r}  [{top}]")


if __name__ == "__main__":
    main()
