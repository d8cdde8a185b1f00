#!/usr/bin/env python3
"""Runs the age binary with a passphrase typed on a pseudo-terminal, for the interop tests.

age reads passphrases from the terminal only (/dev/tty), never from stdin or the environment, so the
tests run it under a pty (python3's pty module) and answer each "passphrase" prompt: once for -d, twice
(enter + confirm) for -p. Pass the input as a file argument and the output with -o, so the terminal
carries nothing but the prompts.

Usage: agepty.py PASSPHRASE age ARGS...    Exit status: age's (or 124 after 120 s).
What age printed on the terminal goes to stderr.
"""
import os
import pty
import re
import select
import signal
import sys
import time

passphrase = sys.argv[1].encode()
pid, fd = pty.fork()
if pid == 0:
    os.execvp(sys.argv[2], sys.argv[2:])

transcript = b""
answered = 0  # prompts answered so far
deadline = time.time() + 120
while True:
    if time.time() > deadline:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        sys.stderr.write(transcript.decode(errors="replace") + "\nagepty: timed out\n")
        sys.exit(124)
    ready, _, _ = select.select([fd], [], [], 0.2)
    if fd not in ready:
        continue
    try:
        data = os.read(fd, 4096)
    except OSError:  # EIO: the child closed the terminal (it exited)
        break
    if not data:
        break
    transcript += data
    # Each prompt ("Enter passphrase (...): ", "Confirm passphrase: ") ends with ": " on the line that names
    # the passphrase; answer each once. The short pause lets age turn echo off first.
    prompts = len(re.findall(rb"[Pp]assphrase[^\n:]*: ", transcript))
    while answered < prompts:
        time.sleep(0.1)
        os.write(fd, passphrase + b"\n")
        answered += 1

_, status = os.waitpid(pid, 0)
sys.stderr.write(transcript.decode(errors="replace"))
sys.exit(os.waitstatus_to_exitcode(status))
