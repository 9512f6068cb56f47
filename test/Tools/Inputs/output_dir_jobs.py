"""Two jobs on one output directory, made to overlap deterministically:
the first job is held inside its run, after it has taken the directory's
lock, by a FIFO it reads or writes (zb-compile's model, zb-run's --metrics),
until this script lets it go.

  output_dir_jobs.py compile-twice MODEL OUT ARGS...
      A: zb-compile FIFO -o OUT ARGS (held while it reads the model),
      B: zb-compile MODEL -o OUT ARGS while A holds OUT; then A finishes.
  output_dir_jobs.py compile-killed MODEL OUT SIGNAL ARGS...
      zb-compile FIFO -o OUT ARGS, sent SIGNAL (TERM or KILL) while it
      holds OUT; prints how it ended and what it left in OUT.
  output_dir_jobs.py compile-bad-cc MODEL OUT ARGS...
      zb-compile MODEL -o OUT ARGS with a C compiler on PATH that fails
      (the last phase, linking the rank programs).
  output_dir_jobs.py run-twice PLAN CKDIR ARGS...
      A: zb-run PLAN --checkpoint CKDIR --metrics FIFO ARGS (held when it
      opens the metrics file, after rank 0 has locked CKDIR),
      B: zb-run PLAN --checkpoint CKDIR ARGS while A holds CKDIR; then A
      finishes.
Each prints "A: exit N", "B: exit N" and B's stderr for FileCheck.
"""
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time


def wait_for_lock(directory, proc, seconds=120):
    """Waits until `directory`/.zb-lock names its holder; returns the line."""
    lock = os.path.join(directory, ".zb-lock")
    end = time.time() + seconds
    while time.time() < end:
        if proc.poll() is not None:
            sys.exit("the first job ended before it held %s (exit %d): %s"
                     % (directory, proc.returncode, proc.stderr.read()))
        try:
            with open(lock) as f:
                line = f.read()
            if line.endswith("\n"):
                return line.split()
        except FileNotFoundError:
            pass
        time.sleep(0.02)
    sys.exit("no lock in %s after %d s" % (directory, seconds))


def release_reader(fifo, reader):
    """Ends `reader`'s blocking open of `fifo` if the job it waited for
    ended without opening its end (a job that failed early): an empty
    writer lets the open return, so the script cannot hang."""
    reader.join(timeout=5)
    if reader.is_alive():
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass
        reader.join(timeout=60)


def write_fifo(fifo, text, proc):
    """Writes `text` into `fifo` once `proc` has opened its end for reading;
    gives up (returns False) if `proc` ends first."""
    while True:
        try:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            break
        except OSError:  # ENXIO: no reader yet
            if proc.poll() is not None:
                return False
            time.sleep(0.02)
    os.set_blocking(fd, True)
    with os.fdopen(fd, "w") as dst:
        dst.write(text)
    return True


def report_b(b, holder):
    print("B: exit %d" % b.returncode)
    sys.stdout.write(b.stderr)
    tool, pid, host = holder
    if ("(pid %s on host %s)" % (pid, host)) in b.stderr:
        print("B names A's pid and host")


def compile_twice(model, out, args):
    with tempfile.TemporaryDirectory() as tmp:
        fifo = os.path.join(tmp, "model.mlir")
        os.mkfifo(fifo)
        a = subprocess.Popen(["zb-compile", fifo, "-o", out] + args,
                             stderr=subprocess.PIPE, text=True)
        holder = wait_for_lock(out, a)
        b = subprocess.run(["zb-compile", model, "-o", out] + args,
                           stderr=subprocess.PIPE, text=True)
        with open(model) as src:
            write_fifo(fifo, src.read(), a)
        _, err = a.communicate()
        print("A: exit %d" % a.returncode)
        sys.stdout.write(err)
        report_b(b, holder)


def compile_killed(model, out, sig, args):
    with tempfile.TemporaryDirectory() as tmp:
        fifo = os.path.join(tmp, "model.mlir")
        os.mkfifo(fifo)
        a = subprocess.Popen(["zb-compile", fifo, "-o", out] + args,
                             stderr=subprocess.PIPE, text=True)
        wait_for_lock(out, a)
        builds = []
        for _ in range(500):
            builds = [n for n in os.listdir(out) if n.startswith(".zb-build")]
            if builds:
                break
            time.sleep(0.02)
        time.sleep(0.2)  # it is reading the model (the FIFO) now
        print("while compiling: %d build directory" % len(builds))
        a.send_signal(getattr(signal, "SIG" + sig))
        _, err = a.communicate()
        print("A: ended by SIG%s" % sig if a.returncode == -getattr(signal, "SIG" + sig)
              else "A: exit %d" % a.returncode)
        sys.stdout.write(err)
        for name in sorted(os.listdir(out)):
            if name.startswith("."):
                print("left: %s" % ("build directory" if name.startswith(".zb-build")
                                    else name))


def compile_bad_cc(model, out, args):
    with tempfile.TemporaryDirectory() as tmp:
        for cc in ("cc", "gcc"):
            path = os.path.join(tmp, cc)
            with open(path, "w") as f:
                f.write("#!/bin/sh\necho 'cc: cannot link (test)' >&2\nexit 1\n")
            os.chmod(path, 0o755)
        env = dict(os.environ, PATH=tmp + os.pathsep + os.environ["PATH"])
        a = subprocess.run(["zb-compile", model, "-o", out] + args,
                           stderr=subprocess.PIPE, text=True, env=env)
        print("A: exit %d" % a.returncode)
        sys.stdout.write(a.stderr)


def run_twice(plan, ckdir, args):
    with tempfile.TemporaryDirectory() as tmp:
        fifo = os.path.join(tmp, "metrics.jsonl")
        os.mkfifo(fifo)
        a = subprocess.Popen(["zb-run", plan, "--checkpoint", ckdir,
                              "--metrics", fifo] + args,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             text=True)
        holder = wait_for_lock(ckdir, a)
        b = subprocess.run(["zb-run", plan, "--checkpoint", ckdir] + args,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           text=True)
        lines = []
        reader = threading.Thread(
            target=lambda: lines.extend(open(fifo).read().splitlines()),
            daemon=True)
        reader.start()
        _, err = a.communicate()
        release_reader(fifo, reader)
        print("A: exit %d, %d metrics lines" % (a.returncode, len(lines)))
        sys.stdout.write(err)
        report_b(b, holder)


def main(argv):
    what = argv[0]
    if what == "compile-twice":
        compile_twice(argv[1], argv[2], argv[3:])
    elif what == "compile-killed":
        compile_killed(argv[1], argv[2], argv[3], argv[4:])
    elif what == "compile-bad-cc":
        compile_bad_cc(argv[1], argv[2], argv[3:])
    elif what == "run-twice":
        run_twice(argv[1], argv[2], argv[3:])
    else:
        sys.exit("unknown job " + what)


if __name__ == "__main__":
    main(sys.argv[1:])
