#!/usr/bin/python3
# A stand-in for `tracerd service`, for work on the service test's harness
# only (scenario.sh with TRACERD_TEST_STANDIN=1): it keeps the service's
# contract closely enough for check.sh, with `tracerd record` doing the
# tracing.  Not the service, and not a model of how it should be written.
#
# Reads /etc/tracerd/tracerd.conf ([Service] Directory=, ScanInterval=;
# [Target NAME] Unit=, Comm=, Exe=, Cmdline=, Mode=, Frequency=), runs one
# `tracerd record` per rule on the processes it matches (restarted when
# they change), notifies from its main process (READY, STATUS, WATCHDOG,
# RELOADING), writes NAME/emergency-PID-TIME.tcf (a snapshot) when a
# recorded process crashed, and on SIGTERM stops every record, which
# detaches.
import configparser, fnmatch, os, re, signal, socket, subprocess, sys, time

CONF = "/etc/tracerd/tracerd.conf"
TRACERD = "/usr/bin/tracerd"


def log(pri, msg):
    print("<%d>tracerd: %s" % (pri, msg), flush=True)


def notify(msg):
    addr = os.environ.get("NOTIFY_SOCKET")
    if not addr:
        return
    if addr[0] == "@":
        addr = "\0" + addr[1:]
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
        s.sendto(msg.encode(), addr)


def seconds(v):
    m = re.fullmatch(r"([0-9.]+)\s*(ms|s|m|h)?", v.strip())
    return float(m.group(1)) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600, None: 1}[m.group(2)]


def load():
    c = configparser.ConfigParser(interpolation=None)
    c.optionxform = str
    with open(CONF) as f:
        c.read_file(f)
    svc = c["Service"] if c.has_section("Service") else {}
    rules = {}
    for sec in c.sections():
        if sec.startswith("Target "):
            rules[sec[7:].strip()] = dict(c[sec])
    return svc.get("Directory", "/var/lib/tracerd"), seconds(svc.get("ScanInterval", "2s")), rules


def read(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def matches(pid, r):
    if "Unit" in r:
        cg = read("/proc/%d/cgroup" % pid) or b""
        line = [l for l in cg.decode().splitlines() if l.startswith("0::")]
        if not line or not line[0].endswith("/" + r["Unit"]):
            return False
    if "Comm" in r and not fnmatch.fnmatchcase((read("/proc/%d/comm" % pid) or b"").decode().strip(), r["Comm"]):
        return False
    if "Exe" in r:
        try:
            exe = os.readlink("/proc/%d/exe" % pid)
        except OSError:
            return False
        if not fnmatch.fnmatchcase(exe, r["Exe"]):
            return False
    if "Cmdline" in r:
        cmd = (read("/proc/%d/cmdline" % pid) or b"").replace(b"\0", b" ").decode().strip()
        if not re.search(r["Cmdline"], cmd):
            return False
    return True


def scan(rules, own):
    found = {name: set() for name in rules}
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) in own or d == "1":
            continue
        pid = int(d)
        if not read("/proc/%d/cmdline" % pid):
            continue  # kernel thread, or gone
        for name, r in rules.items():
            if matches(pid, r):
                found[name].add(pid)
    return found


def crashes(repo):
    out = subprocess.run([TRACERD, "report", repo, "--format", "info"], capture_output=True, text=True).stdout
    m = re.search(r"^crashes:\s*(\d+)", out, re.M)
    return int(m.group(1)) if m else 0


class Rule:
    def __init__(self, name, repo, r):
        self.name, self.repo, self.r = name, repo, r
        self.pids, self.proc, self.crashes = set(), None, 0

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait()
        self.proc = None

    def follow(self, pids):
        gone = self.pids - pids
        if pids != self.pids or (pids and (not self.proc or self.proc.poll() is not None)):
            self.stop()
            if gone:
                self.emergency(gone)
            self.pids = pids
            if pids:
                cmd = [TRACERD, "record", "-q", "-r", os.path.join(self.repo, self.name),
                       "-m", self.r.get("Mode", "cpu"), "-F", self.r.get("Frequency", "99")]
                for p in sorted(pids):
                    cmd += ["--pid", str(p)]
                self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
                log(6, "rule %s: following %s" % (self.name, " ".join(map(str, sorted(pids)))))

    def emergency(self, gone):
        repo = os.path.join(self.repo, self.name)
        n = crashes(repo)
        if n > self.crashes:
            for pid in gone:
                out = os.path.join(repo, "emergency-%d-%s.tcf" % (pid, time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())))
                subprocess.run([TRACERD, "snapshot", repo, "-o", out])
                log(4, "rule %s: process %d crashed: %s" % (self.name, pid, out))
        self.crashes = n


flags = set()
signal.signal(signal.SIGHUP, lambda s, f: flags.add("hup"))
signal.signal(signal.SIGTERM, lambda s, f: flags.add("term"))

directory, interval, conf = load()
rules = {n: Rule(n, directory, r) for n, r in conf.items()}
watchdog = int(os.environ.get("WATCHDOG_USEC", "0")) / 1e6
first = True
next_scan = 0
while "term" not in flags:
    if "hup" in flags:
        flags.discard("hup")
        notify("RELOADING=1")
        try:
            directory, interval, conf = load()
            for n in list(rules):
                if n not in conf:
                    rules.pop(n).stop()
            for n, r in conf.items():
                if n not in rules:
                    rules[n] = Rule(n, directory, r)
            log(6, "reloaded %s: %d rules" % (CONF, len(rules)))
        except Exception as e:
            log(3, "reload of %s failed, keeping the old rules: %s" % (CONF, e))
        next_scan = 0
        notify("READY=1")
    if time.monotonic() >= next_scan:
        own = {os.getpid()} | {r.proc.pid for r in rules.values() if r.proc}
        found = scan({n: r.r for n, r in rules.items()}, own)
        for n, r in rules.items():
            r.follow(found[n])
        npids = sum(len(r.pids) for r in rules.values())
        notify("STATUS=following %d processes, 0 samples written" % npids)
        if first:
            notify("READY=1")
            log(6, "ready: %d rules from %s" % (len(rules), CONF))
            first = False
        next_scan = time.monotonic() + interval
    if watchdog:
        notify("WATCHDOG=1")
    time.sleep(0.1)
notify("STOPPING=1")
for r in rules.values():
    r.stop()
log(6, "stopped: every target detached")
