//! The rule table. Ids are `MB` + Bandit's number where the check is the
//! same as Bandit's (so `MB602` is Bandit `B602`); maibox-only checks use
//! numbers Bandit does not (`MB0xx` meta, `MB2xx` privilege and other
//! HIGH behaviours, `MB4xx` dynamic code and capabilities, `MB9xx`
//! known-malicious shapes).

use std::sync::OnceLock;

use serde::Serialize;

use super::verdict::Severity;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Rule {
    pub id: &'static str,
    pub severity: Severity,
    pub title: &'static str,
    pub rationale: &'static str,
    pub cwe: Option<&'static str>,
    pub bandit: Option<&'static str>,
}

const fn r(
    id: &'static str,
    severity: Severity,
    title: &'static str,
    rationale: &'static str,
    cwe: Option<&'static str>,
    bandit: Option<&'static str>,
) -> Rule {
    Rule {
        id,
        severity,
        title,
        rationale,
        cwe,
        bandit,
    }
}

use super::verdict::Verdict::{Blocked, High, Low, Medium};

pub static RULES: &[Rule] = &[
    // --- meta: the input itself -------------------------------------------------
    r("MB001", Medium, "syntax error", "The file does not parse; the rest was assessed from the parser's recovery, so parts may be missed. Python will report its own error when run.", None, None),
    r("MB002", Medium, "nesting too deep to assess fully", "Expressions nested deeper than the configured limit were not examined; such nesting is rare in real code and can be used to hide code from analysers.", None, None),
    r("MB003", Medium, "source is not valid UTF-8", "Non-UTF-8 bytes were replaced before parsing; string contents may be assessed wrongly.", Some("CWE-176"), None),
    r("MB004", High, "binary content, cannot be assessed", "The file contains NUL bytes (e.g. compiled bytecode), which Python may still run but which cannot be read as source.", Some("CWE-506"), None),
    // --- dynamic code ---------------------------------------------------------------
    r("MB101", Low, "exec/eval/compile of a literal string", "Running a constant string is visible to review but needless; usually harmless.", Some("CWE-95"), None),
    r("MB111", Low, "eval of a syntax tree checked first", "The code is an ast.parse tree that the same function walks and checks node by node (isinstance against a whitelist) before compiling it: a calculator's shape, not arbitrary code.", Some("CWE-95"), None),
    r("MB102", High, "exec of non-literal code", "exec() of a computed string runs code that static review cannot see.", Some("CWE-95"), Some("B102")),
    r("MB307", High, "eval of non-literal code", "eval() of a computed string runs arbitrary code; ast.literal_eval is the safe alternative for data.", Some("CWE-95"), Some("B307")),
    r("MB110", High, "compile of non-literal code", "compile() of a computed string builds code objects that static review cannot see.", Some("CWE-95"), None),
    r("MB411", High, "import of a computed module name", "__import__/importlib.import_module with a non-constant name hides which module is loaded.", Some("CWE-470"), None),
    r("MB412", Low, "__import__ used instead of an import statement", "Calling __import__ directly is a common way to hide an import from readers.", Some("CWE-470"), None),
    r("MB413", High, "getattr with a computed attribute name on a module", "getattr(module, <expression>) hides which function is called.", Some("CWE-470"), None),
    r("MB414", Medium, "attribute name built from pieces", "getattr with a name assembled by concatenation, join or reversal; it was folded and resolved, but the disguise itself is suspicious.", Some("CWE-470"), None),
    r("MB415", High, "interpreter introspection used for escapes", "__subclasses__, __globals__, __builtins__ walking and frame access are the building blocks of Python sandbox escapes.", Some("CWE-913"), None),
    r("MB420", Medium, "large encoded blob decoded", "A long base64/hex/compressed literal is decoded at run time; payloads are often hidden this way.", Some("CWE-506"), None),
    // --- processes --------------------------------------------------------------------
    r("MB602", Medium, "subprocess call with shell=True", "The command string is interpreted by a shell.", Some("CWE-78"), Some("B602")),
    r("MB603", Low, "subprocess call without shell", "Starts an external program.", Some("CWE-78"), Some("B603")),
    r("MB604", Medium, "function call with shell=True", "A non-subprocess API is asked to run a command through a shell.", Some("CWE-78"), Some("B604")),
    r("MB605", Medium, "process started with a shell (os.system/os.popen)", "The command string is interpreted by a shell.", Some("CWE-78"), Some("B605")),
    r("MB606", Medium, "process started without a shell (os.exec*/spawn*, pty.spawn)", "Replaces or spawns a process directly.", Some("CWE-78"), Some("B606")),
    r("MB404", Low, "subprocess module imported", "The script can start external programs.", Some("CWE-78"), Some("B404")),
    r("MB416", Low, "process fork", "os.fork duplicates the interpreter.", Some("CWE-400"), None),
    r("MB417", Medium, "fork inside a loop", "Forking in a loop multiplies processes quickly.", Some("CWE-400"), None),
    // --- deserialisation ------------------------------------------------------------
    r("MB301", Medium, "pickle-style deserialisation", "pickle/dill/shelve/joblib loading runs code embedded in the data.", Some("CWE-502"), Some("B301")),
    r("MB302", Medium, "marshal deserialisation", "marshal.loads produces code objects; it is how compiled payloads are smuggled.", Some("CWE-502"), Some("B302")),
    r("MB418", High, "pickle gadget: __reduce__ returns a command or code runner", "A class whose __reduce__ returns os.system, subprocess, exec or eval makes whoever unpickles its instances run that call: the classic pickle remote-code-execution payload. Honest __reduce__ methods return their own class or a constructor with plain data.", Some("CWE-502"), None),
    r("MB403", Low, "pickle module imported", "Deserialising untrusted pickles runs code.", Some("CWE-502"), Some("B403")),
    r("MB506", Medium, "yaml.load without a safe loader", "yaml.load with the default or full loader can construct arbitrary objects.", Some("CWE-20"), Some("B506")),
    // --- privilege and system files -------------------------------------------
    r("MB201", High, "write to a system path", "Writing, deleting or changing files under /etc, /usr, /boot, /proc/sys, /sys, /dev, /bin, /sbin, /lib or /root modifies the system.", Some("CWE-732"), None),
    r("MB202", High, "process identity change (setuid/setgid family)", "Changing uid/gid is a privilege-escalation or privilege-juggling step.", Some("CWE-250"), None),
    r("MB203", High, "setuid/setgid permission bit", "Setting the setuid/setgid bit creates a privilege-escalation vector.", Some("CWE-732"), None),
    r("MB103", Medium, "world-writable permission", "chmod with world-writable bits lets any user modify the file.", Some("CWE-732"), Some("B103")),
    r("MB204", High, "sudo/su invocation", "The script tries to gain root through sudo, su, pkexec or doas.", Some("CWE-250"), None),
    r("MB205", High, "credential file access", "Paths of system credential stores (/etc/shadow, /etc/sudoers), of keys and credentials in other users' homes or matched by a pattern, and of browser and keyring stores appear in the code.", Some("CWE-522"), None),
    r("MB206", High, "cloud metadata endpoint", "169.254.169.254 and friends hand out cloud credentials to any process that asks.", Some("CWE-918"), None),
    r("MB207", High, "raw socket", "SOCK_RAW / AF_PACKET sockets sniff or forge traffic and need privileges.", Some("CWE-250"), None),
    r("MB208", High, "system administration command", "Commands that add users, change firewall or kernel state, or edit crontabs.", Some("CWE-250"), None),
    r("MB209", High, "dynamic-linker hijack", "LD_PRELOAD or /etc/ld.so.preload inject code into other processes.", Some("CWE-426"), None),
    r("MB210", High, "privileged libc call through ctypes", "setuid, ptrace, mount, mprotect and similar called directly through libc bypass Python-level review.", Some("CWE-250"), None),
    r("MB211", High, "script deletes itself", "Removing __file__ or sys.argv[0] is an anti-forensics habit of malware.", Some("CWE-506"), None),
    r("MB213", Low, "privileges dropped", "The process changes to a non-root user or group (a named account, a fixed non-zero id, an empty group list): a server shedding root after binding its port, the opposite of privilege gain.", Some("CWE-250"), None),
    r("MB214", High, "clock or time limit defeated", "The clock functions a harness measures time with (time.time, monotonic, perf_counter) are replaced, or the signals that enforce time and CPU limits (SIGALRM, SIGXCPU) are ignored: the script hides how long it runs.", Some("CWE-693"), None),
    r("MB215", High, "grader's files read", "Autograder directories, hidden test cases or their answers are read: the script looks up the expected results instead of computing them.", Some("CWE-200"), None),
    r("MB216", High, "screen, camera or microphone captured", "The screen, a camera or the microphone is recorded again and again (a capture tool or an X11 image grab in a loop), or its device (/dev/fb*, /dev/video*, /dev/snd) is read raw: covert surveillance. One screenshot of a window is not this.", Some("CWE-200"), None),
    r("MB217", High, "forged client address in requests", "Requests carry client-address headers (X-Forwarded-For, X-Real-IP, Forwarded...) with computed values, random or rotating: they pretend to come from many machines to dodge a third party's rate limits and bans. A fixed address for a test proxy is not this.", Some("CWE-290"), None),
    r("MB218", High, "developer tool set to run or trust others' code", "An agent's or editor's settings are changed so that it acts without asking (auto-approve, bypassed permissions, disabled workspace trust), a task runs whenever a folder is opened, git is given hooks, an SSH command or a credential helper for every repository, a package manager is pointed at another index, or an agent's global memory is rewritten: every later session obeys whoever wrote it. Reading these settings is not this.", Some("CWE-15"), None),
    r("MB219", High, "database account made all-powerful", "A database role or user is created or altered with SUPERUSER, or given every privilege (GRANT ALL, WITH GRANT OPTION): an account that can read and change everything, often named to pass for a system one. Granting a service the tables it uses is not this.", Some("CWE-269"), None),
    r("MB220", High, "root certificate trusted", "A certificate is put into the system's or a browser's trust store (ca-certificates, ca-trust anchors, an NSS database, update-ca-certificates, certutil -A): whoever holds its key can read and change every TLS connection of the machine. A test CA kept in the project's own files is not this.", Some("CWE-295"), None),
    r("MB221", High, "cloud account opened up", "One change to a cloud account that hands out access (an administrator policy, a key for another user, an owner binding), opens a resource to the whole internet (ingress from 0.0.0.0/0, a public bucket), launches machines whose start-up script fetches code, or copies buckets to a fixed one. An administrator may mean it; it deserves a look before it runs.", Some("CWE-284"), None),
    r("MB222", Medium, "the user's own login credentials named", "The path of a file a client tool logs in with (an SSH key, ~/.aws/credentials, .netrc, a kubeconfig) in the current user's home: the script may read or rewrite it to log in as that user. System credential stores, other users' homes and patterns over keys are MB205; its contents sent anywhere are exfiltration.", Some("CWE-522"), None),
    r("MB224", Medium, "the user's own start-up file or service set up", "A start-up file linked to a file the script does not write (a dotfiles checkout), or a per-user service unit whose command the script spells out and which names nothing remote, hidden or temporary, written by a script that uses no network and does not copy itself: an installer of the user's own setup. Also the user's crontab replaced by such a script from a function called only after it asked the user, when no literal names a URL or a fetching tool. Units that fetch, hide or copy the script stay MB906.", Some("CWE-912"), None),
    r("MB223", High, "security notices deleted from a mailbox", "Messages found by searching for an account's security notices (sign-in alerts, password changes, verification codes, new forwarding or inbox rules) are deleted or moved to the bin: whoever takes an account over hides the warnings from its owner. Clearing newsletters or old mail is not this.", Some("CWE-223"), None),
    r("MB225", Medium, "keyboard read by a script that keeps nothing", "A global keyboard listener in a script that writes no file, keeps no database, runs no command and uses no network: what it reads stays in memory (a typing test, a reaction game). Worth a look, not a keylogger; with any way to keep or send keystrokes it is MB212 or MB940.", Some("CWE-200"), None),
    r("MB226", Medium, "a root certificate of the script's own making trusted", "A certificate authority the script creates itself (with a key made on this machine, by cryptography or openssl) is put into a trust store by a script that uses no network: a local development root for HTTPS on localhost, as mkcert makes. Nobody else holds its key; a root that is downloaded, carried, or trusted beside a proxy or redirection is MB220 or MB947.", Some("CWE-295"), None),
    r("MB227", Medium, "the user's own history cleared after asking", "A shell, browser or editor history in the user's home is deleted or emptied by a function that first asks the user (`input()`) and waits for the answer: a privacy cleaner run on request. Without the question, or on system logs and login records, it is MB923.", Some("CWE-117"), None),
    r("MB228", Medium, "instance metadata read for what the instance is", "The cloud metadata service is asked only what the instance is (its region, zone, identity document, id or type) by a script that names none of its credentials, identity tokens or user data and decodes no hidden text: a region or inventory lookup. Naming credentials or hiding text makes it MB206.", Some("CWE-918"), None),
    r("MB229", Medium, "the script re-run as root after asking", "The script runs itself again through sudo (or su, pkexec, doas) from a function that first asks the user and waits for the answer: root is asked for openly, and sudo asks for the password again. What the script then does as root is judged on its own; without the question it is MB204.", Some("CWE-250"), None),
    r("MB230", Medium, "the project's own library preloaded into its children", "LD_PRELOAD is set, in the environment handed to child processes, to a library inside the project beside the script (a sanitizer or profiler runtime it built): a test harness, not a hijack of other programs. A system path, a home, a temporary directory or /etc/ld.so.preload stay MB209.", Some("CWE-426"), None),
    r("MB231", Medium, "an administration command run through sudo after asking", "A command is run through sudo (or su, pkexec, doas) from a function that first asks the user and waits for the answer, in a script of the user's own setup that names nothing remote: the change is shown and confirmed, and sudo asks for the password again. Persistence and privilege gains at the same call are judged on their own; without the question it is MB204.", Some("CWE-250"), None),
    r("MB232", Medium, "container runtime socket queried read-only", "The Docker socket is asked only with GET requests (container lists, statistics, inspection) and the script names no other HTTP method and uses no SDK: nothing is created, started or changed. The socket stays root-equivalent, so its use is noted; a script that also creates or starts containers is MB423.", Some("CWE-250"), None),
    r("MB212", High, "keyboard capture", "Global keyboard listeners are keylogger building blocks.", Some("CWE-200"), None),
    // --- network and native code ----------------------------------------------------
    r("MB401", Medium, "socket creation", "The script opens network sockets directly.", Some("CWE-200"), None),
    r("MB104", Medium, "binding to all interfaces", "Listening on 0.0.0.0 exposes the service to the whole network.", Some("CWE-605"), Some("B104")),
    r("MB310", Low, "network client", "The script fetches or sends data over the network.", Some("CWE-200"), Some("B310")),
    r("MB421", High, "several environment variables sent over the network", "Values of several environment variables flow into one network request; environments carry tokens and keys. Reading one variable for configuration does not count.", Some("CWE-526"), None),
    r("MB422", High, "user input in a shell command", "Text the user typed or passed on the command line is pasted into a command a shell interprets: whoever controls the input chooses the command (command injection). Quote it (shlex.quote) or pass an argument list without a shell.", Some("CWE-78"), None),
    r("MB423", High, "container runtime socket", "The Docker socket (or its SDK) is root on the host: whoever can create containers can mount the host's file system.", Some("CWE-250"), None),
    r("MB432", High, "package installed from an unauthenticated source", "pip is told to trust a host without TLS checks (--trusted-host) or to install from a plain-http index, link page or URL: whoever sits on the path chooses the code that is installed and later run.", Some("CWE-494"), None),
    r("MB410", Medium, "native code through ctypes", "ctypes calls C functions directly, outside Python's safety checks.", Some("CWE-676"), None),
    // --- known-malicious shapes ----------------------------------------------------
    r("MB901", Blocked, "reverse shell", "A socket connected to a shell (socket + dup2/fileno + shell, or /dev/tcp, nc -e) hands control of the machine to a remote party.", Some("CWE-506"), None),
    r("MB902", Blocked, "fork bomb", "Processes created in an unbounded loop exhaust the machine.", Some("CWE-400"), None),
    r("MB903", Blocked, "obfuscated code execution", "Decoded, decompressed or unmarshalled data is executed: the payload is deliberately hidden.", Some("CWE-506"), None),
    r("MB904", Blocked, "credential exfiltration", "Credential files are read by a script that also sends data over the network.", Some("CWE-522"), None),
    r("MB905", Blocked, "crypto-miner indicator", "Mining pool protocols or known miner names.", Some("CWE-506"), None),
    r("MB906", Blocked, "persistence or account tampering", "Writes to authorized_keys, sudoers, passwd/shadow, crontabs, ld.so.preload, init or systemd units.", Some("CWE-506"), None),
    r("MB907", Blocked, "destructive command", "rm -rf /, mkfs, dd onto a disk, or deleting the root file system; also every shadow copy, the backup catalogue or boot recovery removed (what ransomware and wipers do first).", Some("CWE-506"), None),
    r("MB908", Blocked, "download and execute", "A remote script is piped into a shell, or downloaded code is executed directly.", Some("CWE-494"), None),
    r("MB909", Blocked, "shellcode loader", "ctypes with executable memory (PROT_EXEC, mprotect, VirtualAlloc) runs raw machine code.", Some("CWE-506"), None),
    r("MB910", Blocked, "file exfiltration by a command", "A shell or subprocess command hands credentials, account files or the environment to a network tool (cat /etc/passwd | nc, curl -d @/etc/shadow).", Some("CWE-200"), None),
    r("MB911", Blocked, "environment exfiltration", "The whole environment (os.environ, a copy or a dump of it) is sent over the network, with every token and key the process was given.", Some("CWE-526"), None),
    r("MB912", Blocked, "armed pickle exploit", "A pickle gadget carries a ready command or code, or an instance of it is pickled in the same script: a payload built to run code in whoever loads it.", Some("CWE-502"), None),
    r("MB913", Blocked, "remote command execution", "Data received from the network, or from the request a server handles, runs as a command: a remote party controls the machine (a command-and-control loop or a web shell).", Some("CWE-78"), None),
    r("MB914", Blocked, "code from the network", "Data received from the network is run as Python code, turned into a function, or deserialised (pickle, marshal, unsafe YAML), which runs whatever the sender put in it.", Some("CWE-502"), None),
    r("MB915", Blocked, "dropper", "A file written with downloaded data, or with a payload decoded from a long encoded literal the script carries, is made executable, run, or loaded as a library: the classic download-and-execute stage of malware.", Some("CWE-494"), None),
    r("MB916", Blocked, "secret sent over the network", "Data read from a credential, key, browser, history or account file (or captured keystrokes) flows into a network send; or the home directory is walked for files picked as keys, vaults and credentials (.kdbx, .p12, id_rsa, .npmrc...) whose contents are sent to a peer the script names.", Some("CWE-200"), None),
    r("MB917", Blocked, "ransomware", "The script walks files, scrambles their contents (a cipher, XOR, byte arithmetic) into new or the same files, and deletes, renames or overwrites the originals.", Some("CWE-506"), None),
    r("MB918", Blocked, "resource exhaustion", "An endless loop that never waits grows memory, writes to disk or starts threads or processes until the machine gives out.", Some("CWE-400"), None),
    r("MB919", Blocked, "terminal input injection", "TIOCSTI pushes characters into a terminal's input queue: the commands run as whoever owns the terminal, outside the sandbox.", Some("CWE-77"), None),
    r("MB920", Blocked, "raw input or memory device read", "Reading /dev/input (every key pressed) or /dev/mem, /dev/kmem: a keylogger or a memory scraper.", Some("CWE-200"), None),
    r("MB921", Blocked, "host takeover through the container runtime", "A privileged container, or one with the host's / mounted, is started through the Docker socket, SDK or CLI, or asked of the Kubernetes API or client (`privileged: True`, a `hostPath` of `/`): root on the host.", Some("CWE-250"), None),
    r("MB922", Blocked, "chained attack steps", "Two steps of an attack that each alone only deserve review occur in one script: gaining privilege, collecting credentials or keystrokes, running code static review cannot see, erasing the script's own traces. Together they are a chain, not an accident.", Some("CWE-506"), None),
    r("MB923", Blocked, "traces erased", "System logs, login records (wtmp, btmp, lastlog) or shell histories are deleted, emptied, shredded or pointed at /dev/null, or history recording is switched off; on Windows event logs cleared, the audit policy cleared or switched off, the event log service stopped or disabled, the NTFS change journal deleted (also when the command is kept in a table a helper runs): covering tracks. Rotating a program's own logs, or removing rotated archives, is not this.", Some("CWE-117"), None),
    r("MB924", Blocked, "security defences disabled", "A defence is switched off: the audit daemon, SELinux or AppArmor stopped or set permissive, the firewall flushed or disabled, kernel hardening settings (ASLR, ptrace scope) written, security agents killed, on Windows Defender disabled or told to exclude a path, or UAC's admin approval turned off, on macOS Gatekeeper disabled or a file's quarantine mark removed (xattr -d com.apple.quarantine: the download is never checked before it runs). Reading their status is not this.", Some("CWE-693"), None),
    r("MB925", Blocked, "password guessing", "A login (SSH, FTP, SMTP, IMAP, HTTP authentication or a web sign-in's posted password, a password option of a remote-administration command, sudo) is tried in a loop with passwords taken one by one from a list or a word file, and the target does not change with the password: a brute-force or spraying attack.", Some("CWE-307"), None),
    r("MB926", Blocked, "self-propagation", "The script copies its own file to another machine (scp, rsync, SFTP put) or sends it over the network: a worm's spreading step.", Some("CWE-506"), None),
    r("MB927", Blocked, "network flood", "A loop that never waits, endless or running until a deadline, sends packets or requests as fast as it can: a denial-of-service flood against the destination.", Some("CWE-400"), None),
    r("MB928", Blocked, "root backdoor", "The setuid bit, or capabilities that amount to root (cap_setuid, cap_sys_admin, cap_dac_override...), are put on a shell, an interpreter, a copy of one, or a file in a temporary directory: anyone can then run it as root.", Some("CWE-250"), None),
    r("MB929", Blocked, "code injected into another process", "Another process's memory, registers or executable is written: through /proc/PID/mem, ptrace POKETEXT/POKEDATA/SETREGS, process_vm_writev, the Windows calls of injection (WriteProcessMemory, CreateRemoteThread, QueueUserAPC, SetThreadContext), or /proc/PID/exe and descriptors reopened through /proc. Debuggers read processes; writing into one makes it run the writer's code with its privileges.", Some("CWE-94"), None),
    r("MB930", Blocked, "container escape", "A file the host kernel acts on is written (core_pattern, a cgroup release_agent, the uevent or modprobe helper, binfmt_misc, sysrq-trigger), or another process's namespaces or root directory are entered (setns on /proc/N/ns, chroot into /proc/N/root): the classic ways out of a container onto the host.", Some("CWE-250"), None),
    r("MB934", Blocked, "network sweep reported out", "The hosts of an address range are enumerated (probed one by one) and data is sent to a public address the script names: mapping the network from inside and reporting it to someone outside.", Some("CWE-200"), None),
    r("MB935", Blocked, "clipboard hijacking", "The clipboard is read and replaced by a script that carries a crypto-currency address or a pattern matching one: copied wallet addresses are swapped for the attacker's.", Some("CWE-506"), None),
    r("MB936", Blocked, "self-propagation into files", "The script's own code (its file read back or copied) is written into files a walk or glob found, onto removable media or shares, into notebooks, installed packages or start-up directories, or hooks are planted into the repositories a walk finds: a file infector or worm spreading on this machine. A formatter rewriting its own project's files does not write its own code into them.", Some("CWE-506"), None),
    r("MB937", Blocked, "test harness tampered with", "Tests, expected outputs, test configuration (conftest.py) or test and coverage reports are written, or the test framework or the interpreter's exit is replaced at run time (asserts made no-ops, failures turned into successes, a fake test module planted, sys.exit forced): the checks are made to pass instead of the code.", Some("CWE-693"), None),
    r("MB938", Blocked, "parent process killed", "The process that started this one (the test runner, grader or supervising shell) is killed or stopped, so it cannot record or enforce the result.", Some("CWE-693"), None),
    r("MB939", Blocked, "kernel attacked directly", "Raw system calls that load code into the kernel (bpf, init_module, kexec) or are the building blocks of kernel exploits (userfaultfd, add_key/keyctl sprays, io_uring) are made through ctypes, or physical memory (/dev/mem, /dev/kmem) or I/O ports (/dev/port) are written: the kernel itself is the target.", Some("CWE-269"), None),
    r("MB940", Blocked, "surveillance shipped off the host", "The screen, camera, microphone, keystrokes or clipboard are captured by a script that also sends data to a network peer: spying on the user and reporting it to someone else.", Some("CWE-200"), None),
    r("MB941", Blocked, "forged packets", "Packets are sent in a loop through a raw socket whose IP header the script writes itself (IPPROTO_RAW, IP_HDRINCL): the source address can be anyone's, the shape of spoofing, reflection and amplification attacks. Ping and traceroute let the kernel write the header.", Some("CWE-290"), None),
    r("MB942", Blocked, "mass mail through rotating relays", "Mail is sent in a loop to every address of a list read from a file or the network, through SMTP servers that change within the loop: a spam or phishing run spreading over relays to dodge blocking. A newsletter goes through its one configured server.", Some("CWE-799"), None),
    r("MB943", Blocked, "coding agents or developer tools hijacked", "Instructions are planted into the agent rule and memory files (.cursorrules, CLAUDE.md, AGENTS.md, copilot-instructions) of projects found by searching the disk, or an agent, editor, git or package-manager setting that runs or trusts others' code is written by a script that also fetches code to run, sends data out, or reaches many projects: later agents and tools carry out the attacker's instructions. A scaffolder writing its new project's AGENTS.md is not this.", Some("CWE-506"), None),
    r("MB945", Blocked, "database abused", "SQL that attacks data the script does not own: every database or table a catalogue query lists (SHOW DATABASES, information_schema, pg_database, sqlite_master) dropped or emptied by computed name; roles, admin flags, balances or points changed for every row with no WHERE; password hashes, tokens or cards selected, another application's database opened, or an all-powerful account made, by a script that sends data out. Migrations of the script's own database and a test dropping the database it created are not this.", Some("CWE-89"), None),
    r("MB946", Blocked, "credentials phished", "A password prompt dressed as another program's (sudo, ssh, a keyring, PyPI, single sign-on) whose answer is sent over the network or written to a file; a login form served by a script that writes or forwards what is posted to it; a program named like sudo or ssh planted on the user's own PATH, where it sees the password typed to it. A tool asking for the password of its own service, or a login page checking a test user, is not this.", Some("CWE-1021"), None),
    r("MB947", Blocked, "traffic hijacked", "Other programs' traffic is redirected or intercepted: well-known names mapped to other addresses in /etc/hosts, the resolver replaced by an outside server, a proxy exported to every login, NAT rules sending web or DNS traffic elsewhere, ARP replies forged, or a root certificate trusted together with one of these or downloaded to be trusted. Reading these files or proxying one's own app is not this.", Some("CWE-300"), None),
    r("MB948", Blocked, "data smuggled out through a covert channel", "File contents, secrets, the environment or mail leave through a channel not made for data: encoded into the names a script looks up (DNS tunnelling), into request headers and cookies, in the payloads of ICMP echoes, hidden in an image's pixels before an upload, spelled out in the pauses between requests, or posted to a public paste or drop service. Resolving names a user gives, an API token in Authorization and watermarking one's own images are not this.", Some("CWE-514"), None),
    r("MB949", Blocked, "cloud account abused", "The cloud control plane is asked, through an SDK or a CLI, to hand access to someone else (administrator policies, keys for another user, owner bindings), to open resources to the whole internet (ingress from 0.0.0.0/0, public buckets), to stop recording (CloudTrail, GuardDuty, Config, flow logs, log sinks), to launch machines whose start-up script fetches code, or to copy every bucket elsewhere; and it switches logging off, combines two of these, applies one to everything a listing returns, or uses credentials taken from this machine's files or its metadata service. Listing, tagging and rotating one's own key are not this.", Some("CWE-284"), None),
    r("MB950", Blocked, "mail hijacked", "The user's mail is sent on to someone else: forwarding set up where the user will not look (a .forward file, a procmail or sieve recipe that redirects, a Gmail forwarding address or forwarding filter, a Microsoft Graph or Exchange inbox rule that forwards or redirects) towards an address the script fixes, or whole messages fetched from a mailbox and sent out again. A vacation reply, a digest of one's own headers mailed to oneself and filters that only label or file are not this.", Some("CWE-359"), None),
    r("MB951", Blocked, "payment details swapped", "Files found by searching (invoices, ledgers, shop settings, web pages) are read and written back in place by a script that carries a payment identifier of its own (an IBAN with a valid check, a crypto-currency address): whoever pays from them pays that account. Writing new invoices with one's own bank details, converting a file into another and validating IBANs are not this.", Some("CWE-451"), None),
    r("MB952", Blocked, "code planted into other Python files", "A piece of Python kept in the script's strings that is BLOCKED on its own (it fetches and runs code, sends secrets) is written or appended into .py files the script found by listing or walking (a model hub's cached hubconf.py, a project's modules): whoever imports them runs it. Generating a harmless module is not this.", Some("CWE-506"), None),
    r("MB953", Blocked, "data corrupted in place", "Files found by searching are written back with random bytes, a fill of one repeated value, or their own values altered by random numbers: the data is destroyed or falsified while the files stay and look intact, what logic bombs and saboteurs leave behind. Random test data written to new files, or to the script's own temporary files, is not this.", Some("CWE-506"), None),
    r("MB954", Blocked, "program started on another machine", "A service created through another machine's service manager (impacket's scmr, `sc \\\\host create`), PsExec or `wmic /node:` process creation: the PsExec way of moving through a network, running a program of the script's choosing on each host as SYSTEM.", Some("CWE-284"), None),
    r("MB955", Blocked, "browser hijacked", "A browser's settings (a profile's Preferences or user.js, a launcher, the forced-install policy) are written with a search provider, a proxy, an extension loaded or forced, or Safe Browsing and add-on signature checks switched off: every page the user visits can be redirected, read or altered.", Some("CWE-506"), None),
    r("MB956", Blocked, "malicious code kept in a string and released", "Python held in the script's strings (a template, an f-string, a `.format` text) is written to a file, run with the interpreter's -c or executed, and assessed on its own it is BLOCKED (a reverse shell, a loop running commands fetched from a server, secrets sent): the agent the script drops or starts is what it does. Harmless generated modules and helpers are not this.", Some("CWE-506"), None),
    r("MB957", Blocked, "UAC bypassed", "The per-user open command of a class an auto-elevating Windows program looks up (ms-settings for fodhelper, mscfile for eventvwr, Folder for sdclt, exefile's runas) is written: the command then runs with administrator rights and no UAC prompt. A file type's own handler is not this.", Some("CWE-269"), None),
    r("MB958", Blocked, "personal documents harvested", "The user's home or its personal folders (Documents, Desktop, Pictures, OneDrive...) are walked for files picked by document type (office files, PDFs), and file contents are sent to a peer the script itself names (a URL, an IP or mail address among its literals, possibly reversed): how document stealers work, whether the files reach the send directly or through queues, threads, pools or an archive. Backups and syncs that send to a destination the user gives, and indexers that keep their index local, are not this.", Some("CWE-200"), None),
    r("MB959", Medium, "system path written after the user asked for root", "A file under a system path (what MB201 names) is written by a script that re-runs itself as root only after asking the user (MB229): the system-wide install the user requested, a font or a driver put where every account sees it. Also a system path written by a function that first asks the user, in a setup script whose literals name nothing remote and no IPv4 address but the loopback (a hosts entry for local development, shown and confirmed). Without the asking it stays MB201.", Some("CWE-732"), None),
    r("MB960", Blocked, "file contents sent to a hidden destination", "The contents of files (read directly, or packed into an archive in memory first) are sent to a URL whose host, or mailed to an address whose domain, the script spells out only once decoded: base64, hex, rot13, reversed or built from character codes, in none of its literals as written. Uploaders name where they upload; hiding where the user's files go hides it from the reader. Uploads to a host the script names, or that the user gives, are not this.", Some("CWE-200"), None),
    r("MB961", High, "login key put on other machines", "A script that runs commands on other machines over SSH (ssh, plink, paramiko's exec_command) names authorized_keys, or pushes a key with ssh-copy-id: a login key is planted on every host it reaches, access that outlives the session and the person who ran it. Key rotation by an administrator looks the same, so it is shown for review, not blocked.", Some("CWE-284"), None),
    r("MB962", Blocked, "commands run on machines the script found", "Commands are run on other machines (over SSH told to accept any host key, or over Windows remote management: wmic /node:, psexec) whose names the script collects itself: the user's known_hosts or shell histories, the ARP table, net view, an address range swept. How worms move from machine to machine; administration reaches the hosts it is given.", Some("CWE-506"), None),
    r("MB963", Blocked, "cloud data and backups deleted wholesale", "Through a cloud SDK, every bucket the account lists is emptied or deleted, or every snapshot, machine image or recovery point a listing returns is deleted: with both at once, or with neither picked by age (no creation or modification time read), the account's data and the copies that would restore it are gone. Retention tools choose what to delete by age.", Some("CWE-506"), None),
    r("MB964", Blocked, "HTTP client patched to copy requests to a hidden host", "The request or send method of an HTTP client library (requests, http.client, urllib3, httpx) is replaced by the script's own function, in a script holding a URL whose host it spells out only once decoded (base64, base32, hex, character codes, reversed). Every later request of the program, with its authorization headers, cookies and bodies, passes through the replacement: how credential-stealing shims of popular packages work. Shims that add retries or timeouts hide no destination.", Some("CWE-506"), None),
    r("MB965", Blocked, "Windows credential store dumped", "A process's memory is dumped through comsvcs.dll's MiniDump (the LOLBin way of copying lsass, which holds the hashes and tickets of everyone logged on), ProcDump is pointed at lsass, or the SAM and SECURITY registry hives are saved to files: the first step of taking over other accounts and machines. Debuggers dump the programs they debug with their own tools.", Some("CWE-522"), None),
    r("MB966", Blocked, "ransom note left", "A note telling the reader that their files are locked or encrypted, and how to get them back by paying or writing to someone, is kept by a script that walks directories and deletes or renames files: ransomware, whose encryption can hide in worker threads or stream ciphers but whose demand must be read. Tools that encrypt a folder for its owner explain themselves in their usage text, not in a demand left behind.", Some("CWE-506"), None),
    r("MB967", Blocked, "cloud credentials sent to a hidden destination", "What the cloud metadata service answers is sent to a host the script spells out only once decoded (base64, hex, character codes, reversed), in a script that asks the service for role credentials or user data: the instance's keys leave for a destination the reader is not shown. Inventory agents report instance facts to the database they name.", Some("CWE-522"), None),
    r("MB968", Blocked, "firmware tampered with", "The flash chip rewritten (flashrom -w), UEFI variables written or the boot order changed (efibootmgr) while the checks are switched off (flashrom --noverify, mokutil --disable-validation), or an administrator account added to the baseboard management controller (ipmitool user priv 4, privilege=4) whose event log is then cleared (ipmitool sel clear): changes that outlive every reinstall, made where nobody looks. Inventory readers list flash, boot entries and sensors; updaters verify what they write.", Some("CWE-1326"), None),
    r("MB969", Blocked, "spam sent under forged senders or past bot checks", "Mail sent from a loop through SMTP servers the script does not name (picked from a rotation or a file of logins) with each message's From header a random pick, or requests posted through proxies the script changes by a script that hands CAPTCHAs to a solving service: bulk spam and comment spam, made to look like many senders and to get past the checks against bots. Newsletters send from one address through one server; scrapers that meet a CAPTCHA back off.", Some("CWE-799"), None),
    r("MB970", Blocked, "one number flooded with verification codes", "Several services' one-time-code or verification-call URLs are asked in turn from a loop (or a function called from one), with the requests' client address forged or the list of services long: the same phone number sent code after code, SMS and call bombing. Sign-up flows and their tests ask one service once.", Some("CWE-799"), None),
    r("MB971", High, "the host's namespaces entered", "A command is run through nsenter in the namespaces of process 1 (nsenter -t 1 -m ...): from a container sharing the host's process table that is the host's init, so the command runs on the host itself, outside the container. Node debugging tools do this on purpose, so it is shown for review; what runs there is judged as if run here.", Some("CWE-250"), None),
    r("MB972", High, "another application's messages read", "A script that runs SQL names a mail or chat client's own database (Thunderbird's message index, Signal, Slack, Discord, Telegram, Evolution, macOS Messages): other people's correspondence is read out of a store the script does not own. Sent anywhere it is MB945; kept, it is shown for review.", Some("CWE-359"), None),
    r("MB973", Blocked, "program run from memory", "An anonymous in-memory file (memfd_create, also found through getattr or called as the raw system call) is executed: os.fexecve, exec of its descriptor, or a program run from /proc/self/fd/N or /dev/fd/N. The program never exists on disk, where scanners would see it: what fileless loaders do with the binary they carry or fetch. A memory file used as shared memory is not this.", Some("CWE-506"), None),
    r("MB931", Blocked, "untrusted package installed and imported", "A package is installed from an unauthenticated source and the script then imports modules by computed name: code from whoever answers is fetched and run in one go (typosquatting and dependency-confusion installers).", Some("CWE-494"), None),
    r("MB932", Blocked, "installed packages or dependency manifests tampered with", "An installed package's own source file is rewritten (located through find_spec, __file__ or inspect), dependency manifests of projects found by walking are rewritten with an extra package index, or popular packages are mapped to look-alike names one letter off (requestss, urlib3) by a script that names manifests or installs: every later import or install runs the attacker's code.", Some("CWE-506"), None),
    r("MB933", Blocked, "timestamps forged", "Another file's access and modification times (a stat result, copystat) are copied onto a system file or an installed package's source, or a file's own times, taken before the script rewrote it, are put back: the change is disguised so that tools and administrators looking for recently modified files miss it.", Some("CWE-506"), None),
];

/// The whole rule table, in a stable order.
pub fn rules() -> &'static [Rule] {
    RULES
}

/// Rules that see one behaviour, running code the reader cannot see, through
/// different doors. Debuggers, doctest and inspect use several of them at
/// once, which is one risky behaviour, not several independent ones.
const DYNAMIC_CODE: &[&str] = &["MB102", "MB307", "MB110", "MB411", "MB413"];

/// What the escalation thresholds count: a rule's id, or the behaviour it
/// shares with others (see [`DYNAMIC_CODE`]).
pub(crate) fn behaviour(id: &str) -> &str {
    if DYNAMIC_CODE.contains(&id) {
        "dynamic code"
    } else {
        id
    }
}

/// Looks a rule up by id (case-sensitive, e.g. "MB602").
///
/// Every finding of a file is looked up (hundreds on a malicious one), so
/// an id of the usual shape (`MB` and three digits) is found by its number
/// in a table built once per process; a binary search by id compared about
/// nine strings per look-up. Any other id is searched for in the list.
pub fn rule(id: &str) -> Option<&'static Rule> {
    static BY_NUMBER: OnceLock<Vec<u16>> = OnceLock::new();
    let by_number = BY_NUMBER.get_or_init(|| {
        let mut t = vec![0u16; 1000];
        for (i, r) in RULES.iter().enumerate() {
            let slot = number(r.id).and_then(|n| t.get_mut(n));
            if let (Some(slot), Ok(at)) = (slot, u16::try_from(i + 1)) {
                *slot = at;
            }
        }
        t
    });
    match number(id) {
        Some(n) => {
            let at = usize::from(*by_number.get(n)?);
            RULES.get(at.checked_sub(1)?).filter(|r| r.id == id)
        }
        None => RULES.iter().find(|r| r.id == id),
    }
}

/// The number of an id of the shape `MB` and three digits (below 1000).
fn number(id: &str) -> Option<usize> {
    let digits = id.strip_prefix("MB")?.as_bytes();
    if digits.len() != 3 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(digits.iter().fold(0, |n, d| n * 10 + usize::from(d - b'0')))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn ids_unique_and_bandit_ids_match_numbers() {
        let mut seen = HashSet::new();
        for rule in RULES {
            assert!(seen.insert(rule.id), "duplicate id {}", rule.id);
            assert!(
                rule.id.starts_with("MB") && rule.id.len() == 5,
                "{}",
                rule.id
            );
            if let Some(b) = rule.bandit {
                assert_eq!(
                    &rule.id[2..],
                    &b[1..],
                    "bandit id must match number for {}",
                    rule.id
                );
            }
            assert!(!rule.title.is_empty() && !rule.rationale.is_empty());
        }
        assert!(rule("MB602").is_some());
        assert!(rule("MB999").is_none());
    }

    /// The look-up by number finds every rule by its id and nothing else:
    /// not an id of another shape, a prefix, or a different case.
    #[test]
    fn lookup_by_number_is_exact() {
        for r in RULES {
            assert!(std::ptr::eq(rule(r.id).unwrap(), r), "{}", r.id);
        }
        for id in [
            "", "MB", "MB6", "MB60", "MB6020", "mb602", "MB 602", "B602", "MB-12", "MB1000",
        ] {
            assert!(rule(id).is_none(), "{id}");
        }
    }
}
