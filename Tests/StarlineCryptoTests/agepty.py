#!/usr/bin/env python3
"""Runs a program on a pseudo-terminal and types passphrases at its prompts: the one pty driver of the tests
and the benchmarks.

age reads passphrases from the terminal only (/dev/tty), never from stdin or the environment, and sl-memory
asks there too when no other source is set, so the tests run them under a pty (python3's pty module) and
answer each "passphrase" prompt. Pass the input as a file argument and the output with -o, so the terminal
carries nothing but the prompts.

Usage: agepty.py PASSPHRASE PROGRAM ARGS...          answers every prompt with PASSPHRASE (age -d once, -p
                                                      twice: enter + confirm)
       agepty.py --answers JSON PROGRAM ARGS...       answers the prompts in order with the JSON list's
                                                      strings; a prompt after the last is left unanswered
Exit status: the program's (or 124 after 120 s). What the terminal showed goes to stderr.
"""
import json
import os
import pty
import re
import select
import signal
import sys
import termios
import time

if sys.argv[1] == "--answers":
    answers, command = [a.encode() for a in json.loads(sys.argv[2])], sys.argv[3:]
else:
    answers, command = None, sys.argv[2:]  # None: every prompt gets sys.argv[1]
pid, fd = pty.fork()
if pid == 0:
    os.execvp(command[0], command)

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
    # Each prompt ("Enter passphrase (...): ", "Confirm passphrase: ", "Passphrase for DIR: ", a retry's
    # "Wrong passphrase, try again. Passphrase: ") ends with ": " on the line that names the passphrase;
    # answer each once, after the program has turned echo off: it does so with TCSAFLUSH (as getpass(3)
    # does), which throws away what was typed before — an answer typed early on a loaded machine was lost
    # and the program waited for it until the deadline.
    prompts = len(re.findall(rb"[Pp]assphrase[^\n]*: ", transcript))
    while answered < prompts and (answers is None or answered < len(answers)):
        quiet_by = time.time() + 30
        while termios.tcgetattr(fd)[3] & termios.ECHO and time.time() < quiet_by:
            time.sleep(0.01)
        time.sleep(0.05)
        os.write(fd, (sys.argv[1].encode() if answers is None else answers[answered]) + b"\n")
        answered += 1

_, status = os.waitpid(pid, 0)
sys.stderr.write(transcript.decode(errors="replace"))
sys.exit(os.waitstatus_to_exitcode(status))
