#!/usr/bin/env python3
"""A `pct` stand-in for the ssh transport's tests (only `pct exec`): it runs on the "node" side of a
real sshd, asks the PVE simulator whether the container exists on this node and runs, and then REALLY
RUNS the command (on the test machine, standing in for the container), so exit codes, signals,
stdout and stderr are those of a real process.

Configuration (environment; the wrapper script in tests/ssh/node.ts sets it):
  PVESH_SIM_URL, PVESH_SIM_TOKEN  as for pvesh.py
  PCT_NODE         the node this "is" (pct acts on containers of the local node only)
  PVESH_STATE_DIR  optional: `pct-calls.jsonl` gets one line per invocation (argv as received)

What real `pct exec <vmid> -- <argv>` does, and what this reproduces (pve-container
PVE/CLI/pct.pm `exec`): load_config on THIS node — a container elsewhere dies
"Configuration file 'nodes/<node>/lxc/<vmid>.conf' does not exist"; a stopped one dies
"container '<vmid>' not running!"; no argv dies "missing command". Dies are uncaught Perl dies
(exit 255 here; the number is errno-dependent in reality). Then pct execs `lxc-attach -n <vmid>
--keep-env -- <argv>`, which passes stdin/stdout/stderr through and exits with the command's exit
status, or 128+N when the command was killed by signal N (lxc's lxc_attach main). A program that
cannot be executed makes lxc-attach exit 127 with its error on stderr (a guess at the exact text).
"""

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request


def die(message):
    sys.stderr.write(message + "\n")
    sys.exit(255)


def log_call(argv):
    state = os.environ.get("PVESH_STATE_DIR")
    if not state:
        return
    with open(os.path.join(state, "pct-calls.jsonl"), "a", encoding="utf-8") as f:
        f.write(json.dumps({"argv": [os.fsencode(a).decode("utf-8", "replace") for a in argv]}) + "\n")


def container_status(node, vmid):
    """`status` of the container on `node`, or None when its config is not on that node."""
    token_id, secret = os.environ["PVESH_SIM_TOKEN"].split("=", 1)
    url = f"{os.environ['PVESH_SIM_URL']}/api2/json/nodes/{node}/lxc/{vmid}/status/current"
    request = urllib.request.Request(url, headers={"Authorization": f"PVEAPIToken={token_id}={secret}"})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return json.load(answer)["data"]["status"]
    except urllib.error.HTTPError as error:
        if error.code == 500:
            return None
        die(f"{error.code} {error.reason}")


def main(argv):
    log_call(argv[1:])
    if len(argv) < 2 or argv[1] != "exec":
        die("pct fixture: only `pct exec` is simulated")
    if len(argv) < 3 or not argv[2].isdigit():
        die("400 Parameter verification failed.\nvmid: type check ('integer') failed")
    vmid = argv[2]
    rest = argv[3:]
    command = rest[rest.index("--") + 1:] if "--" in rest else []
    node = os.environ["PCT_NODE"]
    status = container_status(node, vmid)
    if status is None:
        die(f"Configuration file 'nodes/{node}/lxc/{vmid}.conf' does not exist")
    if status != "running":
        die(f"container '{vmid}' not running!")
    if not command:
        die("missing command")
    try:
        code = subprocess.call(command)
    except OSError as error:
        sys.stderr.write(f"lxc-attach: {vmid}: attach.c: lxc_attach_run_command: {error.strerror} - Failed to exec \"{command[0]}\"\n")
        sys.exit(127)
    # lxc-attach: the command's exit status, or 128+N for a command killed by signal N.
    sys.exit(code if code >= 0 else 128 - code)


if __name__ == "__main__":
    main(sys.argv)
