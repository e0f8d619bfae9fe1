//! The sandbox's life is tied to the supervisor's: signals are forwarded, and a
//! supervisor killed outright takes the whole sandbox with it.

mod common;
use common::*;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use std::io::Read;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// Starts maibox on `code` and waits until the code printed its first line.
fn start(who: As, code: &str) -> (std::process::Child, String) {
    let mut child = command(who)
        .args(["exec", "--timeout", "20", "-c", code])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut line = Vec::new();
    let mut b = [0u8; 1];
    while out.read(&mut b).unwrap() == 1 && b[0] != b'\n' {
        line.push(b[0]);
    }
    child.stdout = Some(out);
    (child, String::from_utf8_lossy(&line).into_owned())
}

#[test]
fn sigterm_is_forwarded_to_the_code() {
    for who in identities("sigterm_is_forwarded_to_the_code") {
        // os.write, not print: the signal may land inside print('ready'), and a
        // print from the handler would then be a reentrant call that Python refuses.
        // Short sleeps: CPython only runs a handler between bytecodes, so a signal
        // that lands just before a long sleep() starts would wait for all of it.
        let code = "import os, signal, sys, time\n\
                    def h(s, f):\n    os.write(1, b'got %d\\n' % s); sys.exit(5)\n\
                    signal.signal(signal.SIGTERM, h)\nprint('ready', flush=True)\nwhile True: time.sleep(0.05)\n";
        let (mut child, first) = start(who, code);
        assert_eq!(first, "ready");
        kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM).unwrap();
        let st = child.wait().unwrap();
        let mut rest = String::new();
        child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut rest)
            .unwrap();
        let mut err = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        assert_eq!(rest, "got 15\n", "{who:?}: {st:?} stderr: {err}");
        assert_eq!(st.code(), Some(5), "{who:?}");
    }
}

#[test]
fn killing_the_supervisor_kills_the_sandbox() {
    for who in identities("killing_the_supervisor_kills_the_sandbox") {
        let token = format!("maibox-orphan-{}-{:?}", std::process::id(), who);
        let code = format!(
            "import os, time\nos.execv('/usr/bin/python3', ['python3', '-c', 'print(\"ready\", flush=True)\\nimport time\\ntime.sleep(60)', {token:?}])\n"
        );
        let (mut child, first) = start(who, &code);
        assert_eq!(first, "ready");
        assert!(
            !processes_with(&token).is_empty(),
            "control: the payload runs"
        );
        kill(Pid::from_raw(child.id() as i32), Signal::SIGKILL).unwrap();
        child.wait().unwrap();
        // Generous: the kernel kills the sandbox asynchronously, and the VM lane runs
        // this under software emulation.
        let t0 = Instant::now();
        while !processes_with(&token).is_empty() && t0.elapsed() < Duration::from_secs(30) {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(
            processes_with(&token).is_empty(),
            "{who:?}: the payload outlived its supervisor"
        );
    }
}
