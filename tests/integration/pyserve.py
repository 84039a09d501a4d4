#!/usr/bin/python3
"""One Python start for all the Python runs of an integration script.

lib.sh's py() starts this once per script (pyserve.py DIR SHELL-PID, its
requests on stdin, its replies on stdout, both FIFOs in DIR) and hands it
each "$PY ARGS" of the script: importing GDAL and numpy costs about 0.4 s
of CPU a start, and a few hundred starts were a good part of `make check`.  For
each request the server forks; the child becomes what `python3 ARGS` would
have been (the caller's environment, working directory and standard
input; sys.argv and sys.path[0] as python3 sets them), runs the script or
-c text as __main__, and leaves as python3 would as far as a script can
tell (its datasets closed, atexit run, streams flushed).  Only the imports
are shared.

A request is one line: the caller's pid, whose fd 6 (its stdin, saved
there while it waits for the reply on fd 0) the child reads as stdin; the caller wrote DIR/argv and DIR/env (NUL-separated)
and DIR/cwd, and reads what the child wrote to DIR/out and DIR/err.  When
the caller's fd 1 and fd 2 are the same file the child writes both to
DIR/out, so their order is kept.  The reply is one line: the exit status,
and "merged" when stderr went to DIR/out.
"""
import gc
import os
import select
import sys

try:  # what the scripts import; a child without them fails as python3 would
    from osgeo import gdal  # noqa: F401
    import numpy  # noqa: F401
except ImportError:
    pass
gc.freeze()  # the children's collections leave the server's objects (and pages) alone


def same_file(pid):
    try:
        a, b = os.stat("/proc/%s/fd/1" % pid), os.stat("/proc/%s/fd/2" % pid)
    except OSError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def child(d, pid, merged):
    """Becomes python3 ARGS; never returns."""
    os.close(0)
    os.close(1)  # the FIFOs are the server's
    with open(os.path.join(d, "argv"), "rb") as f:
        argv = [a.decode("utf-8", "surrogateescape") for a in f.read().split(b"\0")[:-1]]
    with open(os.path.join(d, "env"), "rb") as f:
        env = dict(e.split(b"=", 1) for e in f.read().split(b"\0")[:-1] if b"=" in e)
    with open(os.path.join(d, "cwd"), "rb") as f:
        cwd = f.read().decode("utf-8", "surrogateescape")
    os.environ.clear()
    os.environb.update(env)
    os.chdir(cwd)
    fd = os.open("/proc/%s/fd/6" % pid, os.O_RDONLY)
    os.dup2(fd, 0)
    out = os.open(os.path.join(d, "out"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(out, 1)
    if merged:
        os.dup2(out, 2)
    else:
        err = os.open(os.path.join(d, "err"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(err, 2)
    for f in (fd, out) if merged else (fd, out, err):
        if f > 2:
            os.close(f)
    sys.stdin = open(0, "r", closefd=False)
    sys.stdout = open(1, "w", closefd=False)
    sys.stderr = open(2, "w", closefd=False, errors="backslashreplace")
    os._exit(run(argv))


def run(argv):
    """python3 ARGS: -c TEXT, -m MODULE, - (the script on stdin) or a script
    path, run as __main__; returns the exit status python3 would have
    given."""
    import atexit
    import traceback
    import types
    main = types.ModuleType("__main__")
    main.__builtins__ = __builtins__
    sys.modules["__main__"] = main
    code = 0
    try:
        if argv and argv[0] == "-c":
            sys.argv = ["-c"] + argv[2:]
            sys.path[0] = ""
            src, name = argv[1], "<string>"
        elif argv and argv[0] == "-m":
            import runpy
            sys.argv = argv[1:]
            sys.path[0] = os.getcwd()
            runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
            src = None
        elif not argv or argv[0] == "-":
            sys.argv = ["-"] + argv[1:]
            sys.path[0] = ""
            src, name = sys.stdin.read(), "<stdin>"
        else:
            sys.argv = list(argv)
            sys.path[0] = os.path.dirname(os.path.realpath(argv[0]))
            try:
                with open(argv[0], "rb") as f:
                    src, name = f.read(), argv[0]
            except OSError as e:
                print("/usr/bin/python3: can't open file %r: [Errno %d] %s"
                      % (os.path.abspath(argv[0]), e.errno, e.strerror), file=sys.stderr)
                return 2
            main.__file__ = argv[0]
        if src is not None:
            exec(compile(src, name, "exec"), main.__dict__)
    except SystemExit as e:
        code = e.code
    except BaseException as e:
        # python3's traceback starts in the script: leave out this frame
        traceback.print_exception(type(e), e, e.__traceback__.tb_next)
        code = 1
    if code is None:
        code = 0
    elif not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    # What python3 does on its way out that a script can see: its objects
    # go (GDAL closes their datasets, writing any .aux.xml), the atexit
    # functions run, the streams are flushed.  The rest of finalisation
    # would touch every object shared with the server and copy its page
    # (0.3 s a run); os._exit skips it.
    main.__dict__.clear()
    gc.collect()
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    return code & 0xFF


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def main():
    d, shell = sys.argv[1], int(sys.argv[2])
    os.closerange(3, 1024)  # what the shell had open is none of ours
    buf = b""
    while True:
        # the script's shell may leave with fd 7 still open in a process it
        # started: look at it every second
        if b"\n" not in buf:
            if not select.select([0], [], [], 1.0)[0]:
                if not alive(shell):
                    return
                continue
            more = os.read(0, 4096)
            if not more:
                return
            buf += more
            continue
        line, buf = buf.split(b"\n", 1)
        pid = line.decode().split()[0]
        merged = same_file(pid)
        kid = os.fork()
        if kid == 0:
            child(d, pid, merged)
        _, status = os.waitpid(kid, 0)
        rc = os.waitstatus_to_exitcode(status)
        rc = 128 - rc if rc < 0 else rc
        os.write(1, b"%d%s\n" % (rc, b" merged" if merged else b""))


main()
