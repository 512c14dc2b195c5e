#!/usr/bin/env python3
"""The oracle of orchestrator/tests/ansible_parity.rs: ansible-core's own
`ansible-inventory` and `ansible` command lines, many runs in one Python.

usage: ci/ansible-oracle.py   (run with the Python that has ansible-core)

Reads one JSON request a line on stdin, {"program": "ansible-inventory" |
"ansible", "args": [...]}, runs that program's entry point
(`InventoryCLI.cli_executor` / `AdHocCLI.cli_executor`, what the installed
scripts call) in the current directory, and writes one JSON line back:
{"rc": EXIT CODE, "stdout": ..., "stderr": ...}. Exits at end of input.

Why not one process a run: importing ansible-core takes about a second on
this machine and a corpus case needs 5-20 runs, so the parity test spent
five minutes starting Pythons. Nor one run after another in this process:
ansible-core keeps per-run state in globals (the vault secrets context, the
collection finder) and refuses a second run. So this imports ansible-core
once and forks a child per request, which starts from exactly the state a
fresh `ansible-inventory` has after its imports, and exits with the run.
The test starts this driver once per case.
"""
import json
import os
import sys
import tempfile

from ansible.cli.adhoc import AdHocCLI
from ansible.cli.inventory import InventoryCLI

PROGRAMS = {"ansible-inventory": InventoryCLI, "ansible": AdHocCLI}


def child(cli, argv, out, err):
    """In the forked child: the program's entry point with fds 1 and 2 on
    the files; never returns."""
    code = 1
    try:
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
        # cli_executor ends in sys.exit(code), as the installed script does.
        cli.cli_executor(argv)
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def run(program, args):
    cli = PROGRAMS[program]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:
            child(cli, [program, *args], out, err)
        _, status = os.waitpid(pid, 0)
        out.seek(0)
        err.seek(0)
        return {
            "rc": os.waitstatus_to_exitcode(status),
            "stdout": out.read().decode("utf-8", "replace"),
            "stderr": err.read().decode("utf-8", "replace"),
        }


def main():
    for line in sys.stdin:
        if not line.strip():
            continue
        req = json.loads(line)
        sys.stdout.write(json.dumps(run(req["program"], req["args"])) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
