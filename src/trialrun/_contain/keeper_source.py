"""The keeper's own code (see `_containment`), run by a Python of its own as `python -I -S -c KEEPER ...`: built-in
modules only, so that it starts fast and never imports trialrun or anything installed."""

__all__ = ["KEEPER"]

#: The keeper. `python -I -S -c KEEPER MODE -- ARGV...` keeps one command (its stdin: the control socket). MODE
#: "agent": when the agent exits, kill what it left. MODE "command": when the command exits, report it and keep what
#: it left (a `server &` for the next command) until told to stop or until that ends by itself.
#: `python -I -S -c KEEPER serve` is the keeper server: each request on its stdin (a length, then mode, folder,
#: argv and environment, with the control socket and the output pipes attached) is kept by a fork of it, which
#: costs about a millisecond where a new interpreter costs ten or more. Built-in modules only.
KEEPER = r"""
import os, select, sys, time, _signal
try:  # prctl(PR_SET_CHILD_SUBREAPER), found once (the server's forks inherit it)
    import _ctypes
    PRCTL, call = _ctypes.dlsym(_ctypes.dlopen(None), "prctl"), _ctypes.call_function
except Exception:
    PRCTL = call = None
def keep(mode, argv, env, ctl, out=None):
    me = os.getpid()
    def say(line):
        try:
            os.write(ctl, line.encode("utf-8", "replace") + b"\n")
        except OSError:
            pass
    way = "subreaper" if PRCTL is not None and call(PRCTL, (36, 1, 0, 0, 0)) == 0 else "process group"
    wake, woken = os.pipe()
    os.set_blocking(wake, False)
    os.set_blocking(woken, False)
    _signal.set_wakeup_fd(woken)
    stop = []
    _signal.signal(17, lambda *a: None)
    for number in (1, 2, 15):
        _signal.signal(number, lambda *a: stop.append(1))
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
    def below():
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
        found = []
        for pid in alive:
            up, hops = parents.get(pid), 0
            while up is not None and hops < 1000:
                if up == me:
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
    deadline, seen = time.monotonic() + 5, set()
    while reap():
        targets = below() if way == "subreaper" and os.path.isdir("/proc/self") else [-leader]
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
def serve():
    import _socket
    server = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM, 0, 0)
    def reap(*_):  # the keepers it forked (reaped here, not by the kernel: their CPU time counts as its children's)
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            pass
    _signal.signal(17, reap)
    while True:
        try:
            head, fds, _, _ = server.recvmsg(8, _socket.CMSG_SPACE(12), getattr(_socket, "MSG_CMSG_CLOEXEC", 0))
        except InterruptedError:
            continue
        while head and len(head) < 8:
            head += server.recv(8 - len(head))
        if len(head) < 8:
            os._exit(0)  # trialrun is gone
        passed = [n for level, kind, data in fds for n in memoryview(data).cast("i")]
        for fd in passed:  # never inherited by the command (MSG_CMSG_CLOEXEC is Linux's only)
            os.set_inheritable(fd, False)
        size, body = int(head), b""
        while len(body) < size:
            more = server.recv(size - len(body))
            if not more:
                os._exit(0)
            body += more
        if len(passed) != 3:
            for fd in passed:
                os.close(fd)
            continue
        fields = body.split(b"\0")
        mode, cwd, count = fields[0].decode(), fields[1], int(fields[2])
        argv = fields[3:3 + count]
        env = dict(item.split(b"=", 1) for item in fields[3 + count:] if b"=" in item)
        if os.fork() == 0:
            try:
                os.dup2(passed[0], 0)
                os.setsid()
                os.chdir(cwd)
                keep(mode, argv, env, 0, (passed[1], passed[2]))
            except BaseException as exc:
                try:
                    os.write(0, f"fail 0 {exc!r}\n".encode())
                finally:
                    os._exit(127)
        for fd in passed:
            os.close(fd)
if sys.argv[1] == "serve":
    serve()
else:
    try:
        with open("/proc/self/environ", "rb") as f:  # as given: not with the LC_CTYPE Python's start may have added
            given = dict(v.split(b"=", 1) for v in f.read().split(b"\0") if b"=" in v)
    except OSError:
        given = os.environb
    keep(sys.argv[1], sys.argv[3:], given, 0)
"""
