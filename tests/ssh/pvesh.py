#!/usr/bin/env python3
"""A `pvesh` stand-in for the ssh transport's tests: it runs on the "node" side of a real sshd and
answers by calling the PVE simulator's HTTP API, reproducing what real pvesh shows a client.

Why Python: the node side starts one process per request; CPython with only the standard library
starts in ~20 ms, where a Deno script needs ~60-100 ms, a module cache and permission flags inside
the sshd session. Debian ships python3 (scripts/tools.sh installs it on a fresh machine).

Configuration (environment; the per-fixture wrapper script in tests/ssh/node.ts sets it):
  PVESH_SIM_URL    the simulator's base URL, e.g. http://127.0.0.1:40123
  PVESH_SIM_TOKEN  `<tokenId>=<secret>` of a simulator token (pvesh runs as root@pam: give it no denies)
  PVESH_STATE_DIR  optional: `calls.jsonl` gets one line per invocation (argv exactly as received),
                   `knobs.json` is read per invocation: {"dieExitCode": N} (see below), and
                   {"stall": {"path": "<substring>", "ms": N}} to sleep before calling the
                   simulator for a matching path (a node that hangs mid-call)

What real pvesh does, and what this reproduces (pve-manager PVE/CLI/pvesh.pm, pve-common
PVE/CLIHandler.pm, PVE/RESTEnvironment.pm, PVE/Exception.pm):
- `pvesh [--noproxy] [--nooutput] <get|create|set|delete> <api_path> [options]`. Options are parsed
  by Getopt::Long: `--key=value`, `--key value`, `-key value` and `-key=value` are all accepted; an
  array parameter is the key repeated. (Without the API schema this fixture cannot know which keys
  are booleans: a `--key` followed by another option, or last, is taken as the flag `--key=1`.)
  `--output-format json|json-pretty` and `--quiet` are honoured; other formats are not simulated.
- Success: the result as JSON on stdout (compact, sorted keys, newline); nothing for a null result.
- A task-creating call (the result is a UPID) runs the worker IN THE FOREGROUND (fork_worker's
  `$sync` for the cli environment): the worker's output (the task log; WARN lines included) is copied
  to stdout while it runs, then the UPID is printed as JSON, and pvesh EXITS 0 WHATEVER THE TASK'S
  OUTCOME. A failed task's error goes to stderr as the bare message; a task with warnings prints
  `Task finished with N warning(s)!` on stderr.
- A handler error is an uncaught Perl `die`: the message on stderr and a non-zero exit. A
  PVE::Exception with an HTTP code prints as `<code> <message>` followed by one `<param>: <error>`
  line per parameter error (400 Parameter verification failed.; 403 Permission check failed …); a plain
  die (what the API serves as 500, e.g. `Configuration file '…' does not exist`) prints just the text.
  The EXIT CODE IS NOT A CONTRACT: run_cli_handler catches nothing, so Perl's die rule applies — the
  exit status is errno ($!) if non-zero, else ($? >> 8) if non-zero, else 255. Clients must judge by
  the exit being non-zero and by stderr, never by the number, and must not mistake 255 (the fallback,
  and this fixture's default) for ssh's own connection-failure status. knobs.json can pick another.
- An unknown path: `No '<cmd>' handler defined for '<path>'` on stderr and exit 1 (pvesh checks this
  before parsing options).
Not simulated: proxying to another node over ssh (pvesh's proxy_handler) — the simulator already
answers for every node; `ls`, `usage`, text/yaml output.
"""

import json
import os
import re
import socket
import sys
import time
import urllib.parse

VERBS = {"get": "GET", "create": "POST", "set": "PUT", "delete": "DELETE"}
UPID_RE = re.compile(r"^UPID:([a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?):[0-9A-Fa-f]{8}:")
NUMBER_RE = re.compile(r"^-\d")
# Output options pvesh's formatter takes; only these two shapes are reproduced.
DROPPED_OPTIONS = {"human-readable", "noborder", "noheader", "noproxy"}
HTTP_TIMEOUT_S = 60


def word(arg):
    """An argv item as the bytes the shell passed, decoded as UTF-8 (Python's own decoding may vary
    with the session's locale; surrogateescape keeps the original bytes)."""
    return os.fsencode(arg).decode("utf-8", "replace")


def state_path(name):
    state = os.environ.get("PVESH_STATE_DIR")
    return os.path.join(state, name) if state else None


def knobs():
    path = state_path("knobs.json")
    if not path:
        return {}
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        return {}


def record_call(argv):
    path = state_path("calls.jsonl")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps({"argv": argv}, ensure_ascii=False) + "\n")


def die(message, code=None):
    """pvesh's uncaught die: the message on stderr, a non-zero exit (see the module text)."""
    sys.stdout.flush()
    sys.stderr.write(message if message.endswith("\n") else message + "\n")
    sys.stderr.flush()
    if code is None:
        code = int(knobs().get("dieExitCode", 255))
    sys.exit(code)


def parse_options(args):
    """Getopt::Long's forms: --k=v, -k=v, --k v, -k v; repeated keys collect every value."""
    params = []
    positional = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            positional.extend(args[i + 1:])
            break
        if arg.startswith("-") and len(arg) > 1 and not NUMBER_RE.match(arg):
            name = arg[2:] if arg.startswith("--") else arg[1:]
            if "=" in name:
                key, value = name.split("=", 1)
                params.append((key, value))
            else:
                following = args[i + 1] if i + 1 < len(args) else None
                looks_like_option = following is not None and following.startswith("-") and \
                    len(following) > 1 and not NUMBER_RE.match(following)
                if following is None or looks_like_option:
                    params.append((name, "1"))
                else:
                    params.append((name, following))
                    i += 1
        else:
            positional.append(arg)
        i += 1
    return params, positional


class Sim:
    """The simulator's API, one connection per call (like any short-lived CLI)."""

    def __init__(self):
        url = os.environ.get("PVESH_SIM_URL")
        token = os.environ.get("PVESH_SIM_TOKEN")
        if not url or not token:
            die("pvesh fixture: PVESH_SIM_URL and PVESH_SIM_TOKEN must be set", 2)
        self.base = urllib.parse.urlsplit(url)
        self.auth = "PVEAPIToken=" + token

    def call(self, method, path, params=()):
        """One request; returns (status, reason, body text). A plain socket: http.client alone
        costs ~50 ms of imports per invocation."""
        encoded = urllib.parse.urlencode(list(params))
        target = "/api2/json" + urllib.parse.quote(path)
        body = b""
        headers = [f"Host: {self.base.netloc}", f"Authorization: {self.auth}",
                   "Connection: close"]
        if method in ("GET", "DELETE"):
            if encoded:
                target += "?" + encoded
        else:
            body = encoded.encode("ascii")
            headers.append("Content-Type: application/x-www-form-urlencoded")
        headers.append(f"Content-Length: {len(body)}")
        head = f"{method} {target} HTTP/1.1\r\n" + "\r\n".join(headers) + "\r\n\r\n"
        try:
            sock = socket.create_connection((self.base.hostname, self.base.port or 80),
                                            timeout=HTTP_TIMEOUT_S)
            if self.base.scheme == "https":
                import ssl
                # A local test simulator with a throwaway certificate.
                sock = ssl._create_unverified_context().wrap_socket(
                    sock, server_hostname=self.base.hostname)
            with sock:
                sock.sendall(head.encode("utf-8") + body)
                chunks = []
                while True:
                    chunk = sock.recv(65536)
                    if not chunk:
                        break
                    chunks.append(chunk)
            return parse_response(b"".join(chunks))
        except (OSError, ValueError) as error:
            die(f"pvesh fixture: lost the simulator's answer to {method} {path} ({error})")


def parse_response(raw):
    """(status, reason, body) of an HTTP/1.1 answer read to the end of the connection."""
    head, sep, body = raw.partition(b"\r\n\r\n")
    if not sep:
        raise ValueError("the connection closed before a complete answer")
    lines = head.decode("iso-8859-1").split("\r\n")
    _, status, reason = (lines[0].split(" ", 2) + [""])[:3]
    fields = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        fields[name.strip().lower()] = value.strip()
    if fields.get("transfer-encoding", "").lower() == "chunked":
        decoded, rest = [], body
        while True:
            size_line, _, rest = rest.partition(b"\r\n")
            size = int(size_line.split(b";")[0], 16)
            if size == 0:
                break
            decoded.append(rest[:size])
            rest = rest[size + 2:]
        body = b"".join(decoded)
    elif "content-length" in fields:
        body = body[:int(fields["content-length"])]
    return int(status), reason, body.decode("utf-8", "replace")


def print_json(data, fmt):
    if data is None:
        return  # pvesh prints nothing for a null result
    if fmt == "json-pretty":
        text = json.dumps(data, sort_keys=True, indent=3, ensure_ascii=False)
    else:
        text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def handler_error(cmd, path, status, reason, text):
    try:
        body = json.loads(text)
    except ValueError:
        body = {}
    message = (body.get("message") if isinstance(body, dict) else None) or reason or text
    message = message.rstrip("\n")
    if status == 501:
        die(f"No '{cmd}' handler defined for '{path}'", 1)
    if status == 401:
        die(f"pvesh fixture: the simulator refused the fixture's token ({message})", 2)
    lines = [message if status == 500 else f"{status} {message}"]
    errors = body.get("errors") if isinstance(body, dict) else None
    if isinstance(errors, dict):
        lines.extend(f"{k}: {v}" for k, v in sorted(errors.items()))
    die("\n".join(lines))


FINAL_LINE = re.compile(r"^TASK (OK|ERROR: |WARNINGS: )")


def run_in_foreground(sim, upid):
    """Follows the task like fork_worker's tee: log lines to stdout until it stops; returns exitstatus."""
    node = UPID_RE.match(upid).group(1)
    base = f"/nodes/{node}/tasks/{upid}"
    printed = 0
    pause = 0.02

    def copy_log():
        nonlocal printed
        status, _, text = sim.call("GET", base + "/log", [("start", str(printed)), ("limit", "500")])
        if status != 200:
            return
        for entry in json.loads(text).get("data") or []:
            line = entry.get("t", "")
            printed += 1
            if not FINAL_LINE.match(line):
                sys.stdout.write(line + "\n")
        sys.stdout.flush()

    while True:
        status, reason, text = sim.call("GET", base + "/status")
        if status == 200:
            data = json.loads(text).get("data") or {}
            if data.get("status") == "stopped":
                copy_log()
                return data.get("exitstatus", "unexpected status")
            copy_log()
        elif not (status == 400 and "no such task" in text):
            # The worker is this process in real pvesh: its status cannot be unreadable.
            handler_error("get", base + "/status", status, reason, text)
        time.sleep(pause)
        pause = min(pause * 1.5, 0.2)


def main(argv):
    record_call([word(a) for a in argv])
    args = [word(a) for a in argv]
    nooutput = False
    while args and args[0] in ("--noproxy", "--nooutput"):
        nooutput = nooutput or args[0] == "--nooutput"
        args = args[1:]
    if not args:
        die("ERROR: no command specified")
    cmd = args[0]
    if cmd not in VERBS:
        die(f"pvesh fixture: command '{cmd}' is not simulated (only get, create, set, delete)", 2)
    if len(args) < 2 or args[1].startswith("-"):
        die(f"400 not enough arguments\npvesh {cmd} <api_path> [OPTIONS] [FORMAT_OPTIONS]")
    path = args[1]
    params, extra = parse_options(args[2:])
    if extra:
        die(f"400 too many arguments\npvesh {cmd} <api_path> [OPTIONS] [FORMAT_OPTIONS]")
    fmt = "text"
    quiet = nooutput
    api_params = []
    for key, value in params:
        if key == "output-format":
            fmt = value
        elif key == "quiet":
            quiet = quiet or value not in ("0", "false", "no", "off")
        elif key not in DROPPED_OPTIONS:
            api_params.append((key, value))
    if fmt not in ("json", "json-pretty"):
        die(f"pvesh fixture: --output-format {fmt} is not simulated (use json)", 2)

    sim = Sim()
    stall = knobs().get("stall") or {}
    if stall.get("path") and stall["path"] in path:
        time.sleep(float(stall.get("ms", 0)) / 1000)
    status, reason, text = sim.call(VERBS[cmd], path, api_params)
    if not 200 <= status < 300:
        handler_error(cmd, path, status, reason, text)
    try:
        data = json.loads(text).get("data")
    except (ValueError, AttributeError):
        # A garbled answer (a simulator "body" fault) reaches the client as garbled output.
        sys.stdout.write(text)
        sys.stdout.flush()
        return 0
    if cmd != "get" and isinstance(data, str) and UPID_RE.match(data):
        exitstatus = run_in_foreground(sim, data)
        if exitstatus.startswith("WARNINGS: "):
            sys.stderr.write(f"Task finished with {exitstatus[len('WARNINGS: '):]} warning(s)!\n")
        elif exitstatus != "OK":
            sys.stderr.write(exitstatus + "\n")
        sys.stderr.flush()
    if not quiet:
        print_json(data, fmt)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
