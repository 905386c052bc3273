"""The keeper's own code (see `keeper`), run by a Python of its own as `python -I -S -c KEEPER ...`: the standard
library only, so that it starts fast and never imports trialrun or anything installed."""

__all__ = ["KEEPER"]

#: The keeper. `python -I -S -c KEEPER MODE CGROUP -- ARGV...` keeps one command (its stdin: the control socket).
#: MODE "agent": when the agent exits, kill what it left. MODE "command": when the command exits, report it and keep
#: what it left (a `server &` for the next command) until told to stop or until that ends by itself. CGROUP: a cgroup
#: v2 folder to make and move into before the command starts ("-": none).
#:
#: `python -I -S -c KEEPER serve` is the keeper server: each request on its stdin (a length, then mode, cgroup,
#: folder, argv and environment, with the control socket and the output pipes attached) is kept by a fork of it,
#: which costs about a millisecond where a new interpreter costs ten or more. The server is also the keepers'
#: warden, the second line: a child subreaper itself, so what a keeper that is killed leaves is re-parented to it,
#: never past it; it is told at once (SIGCHLD, with WUNTRACED for a stop) when a keeper is killed or stopped, and then
#: kills everything of that keeper (what was below it and what it adopted from it) and says so on that keeper's
#: control socket (it keeps a copy of each), before `done`. For requests that want a cgroup it keeps a spare keeper
#: forked ahead that has already entered a fresh one (entering a cgroup waits out an RCU grace period, up to ~10 ms
#: on a loaded machine), so that no agent waits for it; the spare reports the cgroup it is in.
#:
#: Public modules only: `ctypes` for prctl (PR_SET_CHILD_SUBREAPER, PR_SET_DUMPABLE) and `signal`, where it used the
#: `_ctypes` and `_signal` privates. They cost a new keeper interpreter about 10 ms more CPU (`bench/containment.py`,
#: keeper1 over bare `true`: +14 to +16 ms before, +24 to +27 ms after, two interleaved runs of 40 rounds, load 12):
#: the keeper server pays it once per trialrun process, its forks (every trial's keeper) nothing, so no realistic run
#: is 10% faster with the privates. Where ctypes is missing (a Python built without libffi) the keeper kills by
#: process group and the warden adopts nothing, and the cgroup and the sweep (`scope`) are what remains.
KEEPER = r"""
import os, select, signal, sys, time
try:
    import ctypes
    _prctl = ctypes.CDLL(None, use_errno=True).prctl
    _prctl.restype = ctypes.c_int
    _prctl.argtypes = (ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong)
except Exception:  # no ctypes, or no prctl (not Linux)
    _prctl = None
def prctl(option, value):
    return _prctl is not None and _prctl(option, value, 0, 0, 0) == 0
def guard():
    # a child subreaper (36), and not dumpable (4: no ptrace attach, no /proc/PID/mem by the agent, same user or not)
    prctl(4, 0)
    return prctl(36, 1)
def table():
    parents, alive = {}, []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open("/proc/" + name + "/stat", "rb") as f:
                    fields = f.read().rpartition(b")")[2].split()
            except OSError:
                continue
            parents[int(name)] = int(fields[1])
            if fields[0] != b"Z":
                alive.append(int(name))
    return parents, alive
def below(roots, stops=()):
    # the live processes whose line of parents reaches one of `roots` before any of `stops` (neither included)
    parents, alive = table()
    found = []
    for pid in alive:
        if pid in roots or pid in stops:
            continue
        up, hops = parents.get(pid), 0
        while up is not None and hops < 1000 and up not in stops:
            if up in roots:
                found.append(pid)
                break
            up, hops = parents.get(up), hops + 1
    return found
def argv_of(pid):
    try:
        with open("/proc/" + str(pid) + "/cmdline", "rb") as f:
            text = f.read(600).replace(b"\0", b" ")
    except OSError:
        text = b""
    return " ".join(text.decode("utf-8", "replace").split())[:300] or "?"
def say_to(fd, line):
    try:
        os.write(fd, line.encode("utf-8", "replace") + b"\n")
    except OSError:
        pass
def join(cgroup):
    # a cgroup of the command's own: made here and entered before the command starts (what it starts is born in it)
    try:
        os.mkdir(cgroup)
    except OSError as exc:
        return "no " + (exc.strerror or str(exc))
    try:
        if not os.path.exists(cgroup + "/cgroup.kill"):
            raise OSError(0, "no cgroup.kill (Linux before 5.14)")
        with open(cgroup + "/cgroup.procs", "w") as f:
            f.write("0")
    except OSError as exc:
        try:
            os.rmdir(cgroup)
        except OSError:
            pass
        return "no " + (exc.strerror or str(exc))
    return "ok"
def members(cgroup):
    try:
        with open(cgroup + "/cgroup.procs") as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        return []
def kill_cgroup(cgroup):
    try:
        with open(cgroup + "/cgroup.kill", "w") as f:
            f.write("1")
    except OSError:
        pass
def remove_cgroup(cgroup):
    for _ in range(100):
        try:
            os.rmdir(cgroup)
            return
        except FileNotFoundError:
            return
        except OSError:  # something in it still (or for a moment after the kill)
            kill_cgroup(cgroup)
            time.sleep(0.01)
def keep(mode, cgroup, argv, env, ctl, out=None, joined=None):
    me = os.getpid()
    def say(line):
        say_to(ctl, line)
    way = "subreaper" if guard() else "process group"
    if joined is None and cgroup != "-":
        joined = join(cgroup)
    if joined is not None:
        say("cgroup " + joined + (" " + cgroup if joined == "ok" else ""))
        if joined != "ok":
            cgroup = "-"
    wake, woken = os.pipe()
    os.set_blocking(wake, False)
    os.set_blocking(woken, False)
    signal.set_wakeup_fd(woken)
    stop = []
    signal.signal(signal.SIGCHLD, lambda *a: None)
    for number in (signal.SIGHUP, signal.SIGINT, signal.SIGTERM):
        signal.signal(number, lambda *a: stop.append(1))
    actions = [(os.POSIX_SPAWN_OPEN, 0, "/dev/null", os.O_RDONLY, 0)]
    if out is not None:
        actions += [(os.POSIX_SPAWN_DUP2, out[0], 1), (os.POSIX_SPAWN_DUP2, out[1], 2)]
    if b"PATH" in env:  # posix_spawnp looks the program up on this process's PATH
        os.environ["PATH"] = os.fsdecode(env[b"PATH"])
    try:
        leader = os.posix_spawnp(argv[0], argv, env, file_actions=actions, setsigdef=(1, 2, 13, 15, 17, 25),
                                 **({} if way == "subreaper" else {"setpgroup": 0}))
    except OSError as exc:
        say(f"fail {exc.errno} {exc.strerror}")
        os._exit(127)
    say(f"way {leader} {me} {way}")
    blank = os.open("/dev/null", os.O_RDWR)  # the command's output pipes: never held open here
    for fd in (1, 2, *(out or ())):
        os.dup2(blank, fd)
    status = None
    def reap():
        nonlocal status
        ended = None
        while True:
            try:
                pid, st = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                pid = -1
            if pid == leader:
                status = ended = -os.WTERMSIG(st) if os.WIFSIGNALED(st) else os.WEXITSTATUS(st)
            elif pid <= 0:
                if ended is not None:  # and whether it left anything running
                    say(f"exit {ended} {int(pid == 0)}")
                return pid == 0
    def drain():
        try:
            os.read(wake, 4096)
        except OSError:
            pass
    try:
        while True:
            children = reap()
            if stop or (status is not None and (mode == "agent" or not children)):
                break
            for ready in select.select([ctl, wake], [], [])[0]:
                if ready == wake:
                    drain()
                    continue
                try:
                    data = os.read(ctl, 4096)
                except OSError:
                    data = b""
                if not data:
                    stop.append(0)
    except Exception as exc:  # never leave the command's processes without their keeper: kill them below
        say(f"crash {exc!r}")
    deadline, seen = time.monotonic() + 5, set()
    while reap():
        targets = below({me}) if way == "subreaper" and os.path.isdir("/proc/self") else [-leader]
        # every one named before any is killed: a process that dies with its parent (bwrap --die-with-parent,
        # PR_SET_PDEATHSIG) would be gone, unnamed, by the time its turn came
        for pid in targets:
            if pid > 0 and pid not in seen:
                seen.add(pid)
                say(f"k {pid} {argv_of(pid)}")
        for pid in targets:
            try:
                os.kill(pid, 9)
            except OSError:
                pass
        if time.monotonic() > deadline:
            say("stuck " + " ".join(map(str, targets)))
            break
        select.select([wake], [], [], 0.05)
        drain()
    say(f"done {status}")
    os._exit(0 if status is None else status if status >= 0 else 128 - status)
class Warden:
    # the keeper server's second line: what a keeper that was killed or stopped leaves is killed here
    def __init__(self):
        self.me = os.getpid()
        self.keepers = {}  # pid -> [its control socket (a copy), its cgroup or "-", taken over]
        self.events = []   # (pid, status) of keepers, reaped meanwhile
        self.gone = set()  # the other children reaped since the server last looked (adopted ones, a killed spare)
        self.spare = None  # the spare keeper's pid (a child that is no orphan: never swept)
    def add(self, pid, ctl, cgroup):
        self.keepers[pid] = [ctl, cgroup, False]
    def reap(self):
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG | os.WUNTRACED)
            except ChildProcessError:
                return
            if pid <= 0:
                return
            if pid in self.keepers:
                self.events.append((pid, status))
            elif not os.WIFSTOPPED(status):
                self.gone.add(pid)
    def tend(self):
        self.reap()
        while self.events:
            pid, status = self.events.pop(0)
            entry = self.keepers.get(pid)
            if entry is None:
                continue
            if os.WIFSTOPPED(status):  # stopped: not reaped, so its pid is still its own to kill
                if not entry[2]:
                    self.take_over(pid, "stopped by signal %d" % os.WSTOPSIG(status), alive=True)
                continue
            if os.WIFSIGNALED(status) and not entry[2]:
                self.take_over(pid, "killed by signal %d" % os.WTERMSIG(status), alive=False)
            del self.keepers[pid]
            os.close(entry[0])
            if entry[1] != "-":
                remove_cgroup(entry[1])
    def take_over(self, keeper, how, alive):
        # everything below the lost keeper (a stopped one's tree is whole), everything adopted from it (this server
        # is a subreaper), and what its cgroup holds: each named on its control socket, then killed, until none is
        # left (5 s at most), then `done`
        entry = self.keepers[keeper]
        entry[2] = True
        ctl, cgroup = entry[0], entry[1]
        say_to(ctl, "lost " + how)
        live = {pid for pid, e in self.keepers.items() if not e[2]} | {self.spare}
        seen, deadline = {keeper}, time.monotonic() + 5
        while True:
            found = [("w", pid) for pid in below({keeper, self.me}, live)]
            if cgroup != "-":
                found += [("c", pid) for pid in members(cgroup)]
            for tag, pid in found:
                if pid not in seen:
                    seen.add(pid)
                    say_to(ctl, f"{tag} {pid} {argv_of(pid)}")
            for _, pid in found:
                try:
                    os.kill(pid, 9)
                except OSError:
                    pass
            if alive:
                try:
                    os.kill(keeper, 9)
                except OSError:
                    pass
            if cgroup != "-" and found:
                kill_cgroup(cgroup)
            self.reap()
            if not found or time.monotonic() > deadline:
                break
            time.sleep(0.01)
        say_to(ctl, "done None")
def read_request(sock):
    # a request: a length (8 digits) with the three descriptors attached, then the body; None at the end of `sock`
    import socket
    head, fds, _, _ = sock.recvmsg(8, socket.CMSG_SPACE(12), getattr(socket, "MSG_CMSG_CLOEXEC", 0))
    while head and len(head) < 8:
        head += sock.recv(8 - len(head))
    if len(head) < 8:
        return None
    passed = [n for level, kind, data in fds for n in memoryview(data).cast("i")]
    for fd in passed:  # never inherited by the command (MSG_CMSG_CLOEXEC is Linux's only)
        os.set_inheritable(fd, False)
    size, body = int(head), b""
    while len(body) < size:
        more = sock.recv(size - len(body))
        if not more:
            return None
        body += more
    return head, body, passed
def parse(body):
    fields = body.split(b"\0")
    mode, cgroup, cwd, count = fields[0].decode(), os.fsdecode(fields[1]), fields[2], int(fields[3])
    env = dict(item.split(b"=", 1) for item in fields[4 + count:] if b"=" in item)
    return mode, cgroup, cwd, fields[4:4 + count], env
def run_kept(request, cgroup, joined=None):
    # (in a fork of the server) keep the request's command
    head, body, passed = request
    mode, _, cwd, argv, env = parse(body)
    try:
        os.dup2(passed[0], 0)
        os.chdir(cwd)
        keep(mode, cgroup, argv, env, 0, (passed[1], passed[2]), joined)
    except BaseException as exc:
        try:
            os.write(0, f"fail 0 {exc!r}\n".encode())
        finally:
            os._exit(127)
def serve():
    import array, socket
    guard()
    warden = Warden()
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM, 0, 0)
    wake, woken = os.pipe()
    os.set_blocking(wake, False)
    os.set_blocking(woken, False)
    signal.set_wakeup_fd(woken)
    signal.signal(signal.SIGCHLD, lambda *a: None)
    spare, spares = [], [0]  # a keeper forked ahead, in a fresh cgroup: [pid, its socket, its cgroup]
    def forked():
        # in a new child: let go of what is the server's (its socket is fd 0: /dev/null there until the request's)
        signal.set_wakeup_fd(-1)
        blank = os.open("/dev/null", os.O_RDONLY)
        os.dup2(blank, 0)
        os.close(blank)
        for fd in (wake, woken, *(other[0] for other in warden.keepers.values())):
            os.close(fd)
        os.setsid()
    def make_spare(like):
        # entering a cgroup can take milliseconds (the kernel waits out an RCU grace period): a spare keeper does it
        # while nobody waits, and the next request that wants a cgroup takes it
        spares[0] += 1
        name = like.rsplit("-", 1)[0] + "-s" + str(spares[0])
        ours, theirs = socket.socketpair()
        pid = os.fork()
        if pid == 0:
            try:
                ours.close()
                forked()
                joined = join(name)
                request = read_request(theirs)
                if request is None:  # the server is gone: leave the cgroup, and remove it
                    try:
                        with open(os.path.dirname(name) + "/cgroup.procs", "w") as f:
                            f.write("0")
                        os.rmdir(name)
                    except OSError:
                        pass
                    os._exit(0)
                run_kept(request, name if joined == "ok" else "-", joined)
            finally:
                os._exit(127)
        theirs.close()
        spare[:] = [pid, ours, name]
        warden.spare = pid
    while True:
        try:
            ready = select.select([server, wake], [], [])[0]
        except InterruptedError:
            continue
        if wake in ready:
            try:
                os.read(wake, 4096)
            except OSError:
                pass
            warden.tend()
            if spare and spare[0] in warden.gone:  # the spare itself died (killed): none now
                spare[1].close()
                remove_cgroup(spare[2])
                spare.clear()
                warden.spare = None
            warden.gone.clear()
        if server not in ready:
            continue
        request = read_request(server)
        if request is None:
            os._exit(0)  # trialrun is gone
        head, body, passed = request
        if len(passed) != 3:
            for fd in passed:
                os.close(fd)
            continue
        cgroup = parse(body)[1]
        if cgroup != "-" and spare:  # the spare takes it: the request goes on to it, with its descriptors
            pid, sock, cgroup = spare
            spare.clear()
            warden.spare = None
            try:
                sent = sock.sendmsg([head + body], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", passed))])
                sock.sendall((head + body)[sent:])
            except OSError:  # (it died meanwhile: killed) a fork of the server keeps it instead
                pid, cgroup = None, parse(body)[1]
            sock.close()
        else:
            pid = None
        if pid is None:
            pid = os.fork()
            if pid == 0:
                try:
                    forked()
                    run_kept(request, cgroup)
                finally:
                    os._exit(127)
        warden.add(pid, passed[0], cgroup)  # its control socket kept: the warden's words go there
        for fd in passed[1:]:
            os.close(fd)
        if cgroup != "-" and not spare:
            make_spare(cgroup)
if sys.argv[1] == "serve":
    serve()
else:
    try:
        with open("/proc/self/environ", "rb") as f:  # as given: not with the LC_CTYPE Python's start may have added
            given = dict(v.split(b"=", 1) for v in f.read().split(b"\0") if b"=" in v)
    except OSError:
        given = os.environb
    keep(sys.argv[1], sys.argv[2], sys.argv[4:], given, 0)
"""
