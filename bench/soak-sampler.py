#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""soak-sampler: watch a throwaway Slurm cluster's nodes for CPU overlap.

Every PERIOD seconds, for every node of the cluster (its cgroup tree, cgroup
v1 or v2 as Slurm 22.05 lays them out) and every running job J on it whose
user tasks run (a process in J's cgroups that is not slurmstepd), it reads
the CPUs Slurm allotted J (the node's Synergy record, StateDir/<node>.job_J,
"allotted=") and checks that no process of another job K on the same node
may run on one of them (its Cpus_allowed_list), unless that process runs
idle (harvesting J's idle cycles: SCHED_IDLE, and in an idle cpu group,
cgroup v1 a synergy_* cpu cgroup, v2 a job cgroup with cpu.idle 1), which is
counted apart, or it exited between the reads (a zombie, or on cgroup v1
a task shown in the root cgroup: the kernel shows an exiting task there).
Jobs of different nodes of this one machine share its real CPUs; only jobs
of one node are compared.

It runs until the file named by --stop exists, then prints one line
    samples=N overlaps=N pairs=N harvested=N
and, per overlap seen, "overlap node=... job=J other=K cpus=... pid=..." to
the --log file. Read-only: it only reads /sys/fs/cgroup, /proc and StateDir.
"""
import argparse
import os
import sys
import time


def cpus_of(text):
    out = set()
    for item in text.strip().split(","):
        if not item:
            continue
        if "-" in item:
            a, b = item.split("-", 1)
            out.update(range(int(a), int(b) + 1))
        else:
            out.add(int(item))
    return out


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def job_dirs(node_root, version):
    """{jobid: [cgroup directories of the job, the job's own first]}"""
    jobs = {}
    if not os.path.isdir(node_root):
        return jobs
    tops = []
    if version == 1:
        for u in os.listdir(node_root):
            if u.startswith("uid_"):
                d = os.path.join(node_root, u)
                tops += [os.path.join(d, j) for j in os.listdir(d) if j.startswith("job_")] \
                    if os.path.isdir(d) else []
    else:
        tops = [os.path.join(node_root, j) for j in os.listdir(node_root)
                if j.startswith("job_")]
    for top in tops:
        try:
            jid = int(os.path.basename(top)[4:])
        except ValueError:
            continue
        dirs = []
        for root, subdirs, _ in os.walk(top):
            dirs.append(root)
        jobs[jid] = dirs
    return jobs


def procs(dirs):
    pids = set()
    for d in dirs:
        text = read(os.path.join(d, "cgroup.procs"))
        if text:
            pids.update(int(p) for p in text.split())
    return pids


def comm(pid):
    text = read("/proc/%d/comm" % pid)
    return text.strip() if text else None


def affinity(pid):
    text = read("/proc/%d/status" % pid)
    if not text:
        return None
    for line in text.splitlines():
        if line.startswith("Cpus_allowed_list:"):
            return cpus_of(line.split(":", 1)[1])
    return None


def cgroups(pid):
    """pid's /proc/PID/cgroup as (hierarchy id, [controllers], path)."""
    out = []
    for line in (read("/proc/%d/cgroup" % pid) or "").splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3:
            out.append((parts[0], parts[1].split(","), parts[2].strip()))
    return out


def exiting(pid, version):
    """pid ended between the reads (or is ending): it runs no more. A
    zombie shows state Z (X: being reaped); on cgroup v1 a task that is
    exiting shows the root, "/", in every hierarchy (the kernel's
    proc_cgroup_show for a PF_EXITING task), while it was found in a job's
    cgroup: its sched policy and affinity are a dead task's, not a
    placement."""
    text = read("/proc/%d/stat" % pid)
    if not text or ")" not in text:
        return True
    fields = text.rsplit(")", 1)[1].split()
    if not fields or fields[0] in ("Z", "X", "x"):
        return True
    if version == 1:
        for _, ctls, path in cgroups(pid):
            if "cpuset" in ctls:
                return path == "/"
        return True
    return False


def runs_idle(pid, version):
    """pid harvests: SCHED_IDLE, and its CPU group idle."""
    try:
        if os.sched_getscheduler(pid) != os.SCHED_IDLE:
            return False
    except OSError:
        return False
    for hid, ctls, where in cgroups(pid):
        if version == 1 and "cpu" in ctls:
            return os.path.basename(where).startswith("synergy_")
        if version == 2 and hid == "0":
            path = where.strip("/").split("/")
            for i in range(len(path), 0, -1):
                if path[i - 1].startswith("job_"):
                    idle = read(os.path.join("/sys/fs/cgroup", *path[:i], "cpu.idle"))
                    return bool(idle) and idle.strip() == "1"
    return False


def why(pid):
    """What the sampler saw of an overlapping process: its policy and groups."""
    try:
        p = os.sched_getscheduler(pid)
        pol = {os.SCHED_IDLE: "idle", os.SCHED_OTHER: "other"}.get(p, "policy%d" % p)
    except OSError:
        pol = "gone"
    groups = ["%s=%s" % (",".join(ctls) or "v2", path) for hid, ctls, path in cgroups(pid)
              if hid == "0" or set(ctls) & {"cpu", "cpuset"}]
    return "sched=%s %s" % (pol, " ".join(groups))


def record(state_dir, node, jid):
    """The job's record, one line (its harvest and allotted fields)."""
    text = read(os.path.join(state_dir, "%s.job_%d" % (node, jid))) or ""
    keep = [l for l in text.splitlines() if l.split("=", 1)[0] in
            ("allotted", "harvest", "spare_milli", "synergy")]
    return ",".join(keep) or "none"


def allotted(state_dir, node, jid):
    text = read(os.path.join(state_dir, "%s.job_%d" % (node, jid)))
    if not text:
        return None
    for line in text.splitlines():
        if line.startswith("allotted="):
            return cpus_of(line[9:])
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--node", action="append", required=True,
                    help="NAME=CGROUP_DIR (the node's cpuset cgroup directory)")
    ap.add_argument("--version", type=int, choices=(1, 2), default=1)
    ap.add_argument("--state-dir", required=True)
    ap.add_argument("--stop", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--period", type=float, default=0.2)
    a = ap.parse_args()
    nodes = [n.split("=", 1) for n in a.node]
    samples = overlaps = harvested = 0
    seen = set()
    with open(a.log, "a") as log:
        while not os.path.exists(a.stop):
            for name, root in nodes:
                jobs = job_dirs(root, a.version)
                running = {}
                for jid, dirs in jobs.items():
                    info = []
                    for pid in procs(dirs):
                        c = comm(pid)
                        if c is None or c == "slurmstepd":
                            continue
                        aff = affinity(pid)
                        if aff is not None:
                            info.append((pid, c, aff))
                    running[jid] = info
                for jid, info in running.items():
                    if not info:
                        continue
                    mine = allotted(a.state_dir, name, jid)
                    if not mine:
                        continue
                    for other, oinfo in running.items():
                        if other == jid:
                            continue
                        for pid, c, aff in oinfo:
                            both = aff & mine
                            # Re-check the job still has its allotment (it may
                            # have ended between the reads).
                            if not both or not allotted(a.state_dir, name, jid):
                                continue
                            # Harvesting: idle first, then widened; narrowed
                            # first, then restored. Read the priority, then
                            # the affinity again.
                            if runs_idle(pid, a.version):
                                harvested += 1
                                continue
                            again = affinity(pid)
                            # Read the state last: a task that exited since
                            # the list was read shows the root cgroup (v1).
                            if again is not None and again & mine and \
                                    not exiting(pid, a.version):
                                overlaps += 1
                                key = (name, jid, other)
                                if key not in seen:
                                    seen.add(key)
                                log.write("overlap node=%s job=%d other=%d cpus=%s pid=%d "
                                          "comm=%s t=%.3f %s job:[%s] other:[%s]\n" %
                                          (name, jid, other, sorted(both), pid, c,
                                           time.time(), why(pid),
                                           record(a.state_dir, name, jid),
                                           record(a.state_dir, name, other)))
                                log.flush()
            samples += 1
            time.sleep(a.period)
    print("samples=%d overlaps=%d pairs=%d harvested=%d" % (samples, overlaps, len(seen),
                                                           harvested))
    return 0


if __name__ == "__main__":
    sys.exit(main())
