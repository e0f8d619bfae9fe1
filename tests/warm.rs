//! Warm sandboxes through the library: prepared ahead, one script each, nothing shared.

mod common;

use maibox::warm::Remains;
use maibox::{Code, Config, Io, Sandbox, TrustLevel};
use std::time::Duration;

fn sandbox() -> Sandbox {
    static AUDIT: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    let dir = AUDIT.get_or_init(|| tempfile::tempdir().unwrap());
    std::env::set_var("MAIBOX_AUDIT_DIR", dir.path().join("audit"));
    let (cfg, _) = Config::load(None).unwrap();
    Sandbox::new(cfg).trust(TrustLevel::Untrusted)
}

fn run_warm(s: &Sandbox, code: &str, args: &[&str]) -> maibox::Run {
    run_warm_kept(s, code, args).0
}

/// A warm run and what is left of its sandbox, destroyed when the caller drops it.
fn run_warm_kept(s: &Sandbox, code: &str, args: &[&str]) -> (maibox::Run, Remains) {
    let warm = s.prepare_warm(&["json".to_string()]).unwrap();
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    let timeline = maibox::Timeline::new();
    match warm.run(
        s,
        &Code::inline(code).unwrap(),
        &args,
        Io::capture(),
        &timeline,
    ) {
        Ok((run, remains)) => (run, remains),
        Err(Ok((_, why))) => panic!("not servable: {why:?}"),
        Err(Err(e)) => panic!("{e}"),
    }
}

#[test]
fn a_warm_sandbox_runs_its_script_like_a_cold_run() {
    let s = sandbox();
    let code = "import sys, json\nprint(json.dumps(sys.argv), __name__, __file__)\nprint('err', file=sys.stderr)\nsys.exit(3)\n";
    let warm = run_warm(&s, code, &["a b", "c"]);
    let cold = s
        .run(
            &Code::inline(code).unwrap(),
            &["a b".into(), "c".into()],
            Io::capture(),
        )
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&warm.stdout),
        String::from_utf8_lossy(&cold.stdout)
    );
    assert_eq!(warm.stderr, cold.stderr);
    assert_eq!(warm.report.exit_code, 3);
    assert_eq!(cold.report.exit_code, 3);
    assert!(warm.report.layers.seccomp && warm.report.layers.landlock);
    // A traceback shows the script's lines and none of the runner's.
    let tb = "def f():\n    1 / 0\nf()\n";
    let (w, c) = (run_warm(&s, tb, &[]), s.run_code(tb).unwrap());
    assert_eq!(
        String::from_utf8_lossy(&w.stderr),
        String::from_utf8_lossy(&c.stderr)
    );
    assert_eq!(w.report.exit_code, 1);
    // So does a warning, and the runner has not imported linecache for them before the
    // code asks (as in a cold run, where nothing has).
    let warn =
        "import sys, warnings\nprint('linecache' in sys.modules)\nwarnings.warn('careful')\n";
    let (w, c) = (run_warm(&s, warn, &[]), s.run_code(warn).unwrap());
    assert_eq!(String::from_utf8_lossy(&w.stdout), "False\n");
    assert_eq!(w.stdout, c.stdout);
    assert_eq!(
        String::from_utf8_lossy(&w.stderr),
        String::from_utf8_lossy(&c.stderr)
    );
    assert!(String::from_utf8_lossy(&w.stderr).contains("warnings.warn('careful')"));
    let syntax = "print(\n";
    let (w, c) = (run_warm(&s, syntax, &[]), s.run_code(syntax).unwrap());
    assert_eq!(
        String::from_utf8_lossy(&w.stderr),
        String::from_utf8_lossy(&c.stderr)
    );
}

#[test]
fn warm_sandboxes_share_no_state_or_seeds() {
    let s = sandbox();
    let probe = "import os, random, sys\nopen('/tmp/left', 'w').write('x')\nprint(os.path.exists('/tmp/left-before'), random.getrandbits(64), hash('maibox'), os.readlink('/proc/self/ns/pid'))\nopen('/tmp/left-before', 'w').write('x')\n";
    // The first sandbox's remains (its namespaces) are kept until the second exists,
    // as `maibox serve` keeps them: freed, their inode numbers would be handed out
    // again, and fresh namespaces could show the same number (docs/server.md).
    let (a, kept) = run_warm_kept(&s, probe, &[]);
    let a = String::from_utf8(a.stdout).unwrap();
    let b = String::from_utf8(run_warm(&s, probe, &[]).stdout).unwrap();
    drop(kept);
    let (fa, fb): (Vec<&str>, Vec<&str>) = (
        a.split_whitespace().collect(),
        b.split_whitespace().collect(),
    );
    assert_eq!(fa[0], "False", "{a}");
    assert_eq!(fb[0], "False", "a file of the previous run is visible: {b}");
    for i in 1..4 {
        assert_ne!(fa[i], fb[i], "field {i} shared: {a} / {b}");
    }
}

#[test]
fn a_request_above_the_level_is_not_servable_and_a_lower_one_is_applied() {
    let s = sandbox();
    let warm = s.prepare_warm(&[]).unwrap();
    let more = s.clone().memory(4 << 30).allow_raise(true);
    let t = maibox::Timeline::new();
    let code = Code::inline("pass").unwrap();
    let warm = match warm.run(&more, &code, &[], Io::capture(), &t) {
        Err(Ok((w, maibox::warm::NotServable::Differs(_)))) => w,
        Err(Ok((_, why))) => panic!("not servable for another reason: {why:?}"),
        Err(Err(e)) => panic!("{e}"),
        Ok((r, _)) => panic!("served: {:?}", r.report.limits),
    };
    let less = s.clone().memory(64 << 20).timeout(Duration::from_secs(5));
    let hog = Code::inline("x = bytearray(200 << 20)\nprint('survived')").unwrap();
    let (run, _) = warm.run(&less, &hog, &[], Io::capture(), &t).ok().unwrap();
    assert!(
        run.report
            .violations
            .iter()
            .any(|v| matches!(v, maibox::Violation::Memory { .. })),
        "{:?}",
        run.report.violations
    );
    assert_eq!(run.report.limits.memory_bytes, 64 << 20);
}

#[test]
fn a_warm_run_ends_as_a_cold_one() {
    let s = sandbox();
    for code in [
        "import sys\nsys.exit('a message')\n",
        "import sys\nprint('no newline', end='')\nsys.exit(300)\n",
        "import atexit\natexit.register(lambda: print('at exit'))\nprint('main')\n",
        "import threading, time\ndef late():\n    time.sleep(0.2)\n    print('thread done', flush=True)\nthreading.Thread(target=late).start()\nprint('main done')\n",
        "import sys\nsys.stdout.write('buffered')\nexit(None)\n",
        "raise KeyError('k')\n",
    ] {
        let w = run_warm(&s, code, &[]);
        let c = s.run_code(code).unwrap();
        assert_eq!(
            (String::from_utf8_lossy(&w.stdout), String::from_utf8_lossy(&w.stderr), w.report.exit_code),
            (String::from_utf8_lossy(&c.stdout), String::from_utf8_lossy(&c.stderr), c.report.exit_code),
            "{code}"
        );
    }
}

#[test]
fn a_warm_sandbox_has_its_preloads_imported_and_a_missing_one_is_refused() {
    let s = sandbox();
    let probe =
        "import sys\nprint(sorted(m for m in ('tempfile', 'statistics') if m in sys.modules))\n";
    let warm = s
        .prepare_warm(&["tempfile".to_string(), "statistics".to_string()])
        .unwrap();
    let (run, remains) = match warm.run(
        &s,
        &Code::inline(probe).unwrap(),
        &[],
        Io::capture(),
        &maibox::Timeline::new(),
    ) {
        Ok(done) => done,
        Err(_) => panic!("the warm sandbox could not serve the probe"),
    };
    drop(remains);
    assert_eq!(
        String::from_utf8_lossy(&run.stdout),
        "['statistics', 'tempfile']\n"
    );
    // Control: a cold run starts without them.
    let cold = s.run_code(probe).unwrap();
    assert_eq!(String::from_utf8_lossy(&cold.stdout), "[]\n");
    // A preload that cannot be imported: the sandbox is refused, saying why.
    let e = match s.prepare_warm(&["no_such_module_here".to_string()]) {
        Ok(_) => panic!("a sandbox whose preload cannot be imported was prepared"),
        Err(e) => e.to_string(),
    };
    assert!(e.contains("preloaded module"), "{e}");
}

#[test]
fn a_zygote_forks_at_most_its_bound_and_refuses_a_preload_it_cannot_import() {
    let s = sandbox();
    let mut z = s.zygote(&["json".to_string()], 2).unwrap();
    let code =
        Code::inline("import json, sys\nprint('json' in sys.modules, json.dumps([1]))").unwrap();
    for _ in 0..2 {
        assert!(!z.spent());
        let warm = s.prepare_warm_forked(&mut z).unwrap();
        let (run, _) = match warm.run(&s, &code, &[], Io::capture(), &maibox::Timeline::new()) {
            Ok(done) => done,
            Err(_) => panic!("the forked sandbox could not serve"),
        };
        assert_eq!(String::from_utf8_lossy(&run.stdout), "True [1]\n");
    }
    assert!(z.spent());
    let e = match s.prepare_warm_forked(&mut z) {
        Ok(_) => panic!("a spent zygote forked again"),
        Err(e) => e.to_string(),
    };
    assert!(e.contains("forked its 2 interpreters"), "{e}");
    let e = match s.zygote(&["no_such_module_here".to_string()], 2) {
        Ok(_) => panic!("a zygote whose preload cannot be imported started"),
        Err(e) => e.to_string(),
    };
    assert!(e.contains("no_such_module_here"), "{e}");
}

/// A zygote started without waiting (as a pool starts the next one ahead): its first
/// fork waits for the preloads, and a preload it cannot import fails that fork with
/// the import's error rather than at the start.
#[test]
fn a_zygote_started_ahead_serves_once_ready_and_reports_its_failed_preload_at_the_fork() {
    let s = sandbox();
    let mut z = s.start_zygote(&["json".to_string()], 1).unwrap();
    let code = Code::inline("import sys\nprint('json' in sys.modules)").unwrap();
    let warm = s.prepare_warm_forked(&mut z).unwrap();
    let (run, _) = match warm.run(&s, &code, &[], Io::capture(), &maibox::Timeline::new()) {
        Ok(done) => done,
        Err(_) => panic!("the forked sandbox could not serve"),
    };
    assert_eq!(String::from_utf8_lossy(&run.stdout), "True\n");
    let mut bad = s
        .start_zygote(&["no_such_module_here".to_string()], 1)
        .expect("starting does not wait for the preloads");
    let e = match s.prepare_warm_forked(&mut bad) {
        Ok(_) => panic!("a zygote whose preload cannot be imported forked"),
        Err(e) => e.to_string(),
    };
    assert!(e.contains("no_such_module_here"), "{e}");
}

/// The processes named `comm`, with their parents.
fn named_with_parents(comm: &str) -> Vec<(i32, i32)> {
    common::processes_named(comm)
        .into_iter()
        .map(|p| (p, common::parent_of(p)))
        .collect()
}

fn voluntary_switches(pid: nix::unistd::Pid) -> u64 {
    common::status_field(pid.as_raw(), "voluntary_ctxt_switches")
        .and_then(|v| v.parse().ok())
        .unwrap()
}

/// A fresh spawner, and its count of voluntary switches once it sleeps on its socket
/// (it has just been forked): each sandbox it clones wakes it.
fn asleep_spawner() -> (std::sync::Arc<maibox::warm::Spawner>, u64) {
    let spawner = std::sync::Arc::new(maibox::warm::Spawner::start().unwrap());
    let before = switches_once_asleep(spawner.pid());
    (spawner, before)
}

/// A spawner's count of voluntary switches once it sleeps on its socket.
fn switches_once_asleep(sp: nix::unistd::Pid) -> u64 {
    while !common::status_field(sp.as_raw(), "State").is_some_and(|s| s.starts_with('S')) {
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(50));
    voluntary_switches(sp)
}

/// A server's spawner process clones its warm sandboxes: it does the work (it wakes
/// for each sandbox, and stays asleep for one made without it: the control), the
/// sandbox's init is the caller's child, never the spawner's, and the run is the same.
/// When the spawner is gone, sandboxes are cloned by the caller again.
#[test]
fn a_spawner_clones_warm_sandboxes_that_stay_the_callers_children() {
    let (spawner, before) = asleep_spawner();
    let sp = spawner.pid();
    let code = "import os, sys\nprint(os.getpid(), sys.flags.no_user_site)\n";
    let plain = run_warm(&sandbox(), code, &[]);
    assert_eq!(
        voluntary_switches(sp),
        before,
        "the control woke the spawner"
    );
    let s = sandbox().spawner(std::sync::Arc::clone(&spawner));
    let warm = s.prepare_warm(&[]).unwrap();
    assert!(
        voluntary_switches(sp) > before,
        "the spawner did not clone it"
    );
    let me = std::process::id() as i32;
    let inits = named_with_parents("maibox-init");
    assert!(inits.iter().any(|(_, ppid)| *ppid == me), "{inits:?}");
    assert!(
        inits.iter().all(|(_, ppid)| *ppid != sp.as_raw()),
        "{inits:?}"
    );
    let t = maibox::Timeline::new();
    let Ok((run, _remains)) = warm.run(&s, &Code::inline(code).unwrap(), &[], Io::capture(), &t)
    else {
        panic!("the spawner's sandbox did not run");
    };
    assert_eq!(run.stdout, plain.stdout);
    assert_eq!(String::from_utf8_lossy(&run.stdout), "2 1\n");
    assert!(run.report.layers.seccomp && run.report.layers.landlock);
    nix::sys::signal::kill(sp, nix::sys::signal::Signal::SIGKILL).unwrap();
    std::thread::sleep(Duration::from_millis(100));
    let after = run_warm(&s, code, &[]);
    assert_eq!(after.stdout, plain.stdout);
}

/// A spawner that ends is replaced by the nursery: the new one is this process's
/// child, a different process, and clones the next sandbox (it wakes for it); while
/// the old one lives nothing is replaced. The control: with the nursery gone too, no
/// spawner can be made, and runs are cloned by the caller, with the same result.
#[test]
fn a_spawner_that_ends_is_replaced_by_another() {
    let (spawner, _) = asleep_spawner();
    let old = spawner.pid();
    assert_eq!(
        spawner.respawn_if_ended().unwrap(),
        None,
        "replaced a live spawner"
    );
    nix::sys::signal::kill(old, nix::sys::signal::Signal::SIGKILL).unwrap();
    let t0 = std::time::Instant::now();
    let (was, new) = loop {
        if let Some(replaced) = spawner.respawn_if_ended().unwrap() {
            break replaced;
        }
        assert!(t0.elapsed() < Duration::from_secs(10), "never replaced");
        std::thread::sleep(Duration::from_millis(10));
    };
    assert_eq!((was, spawner.pid()), (old, new));
    assert_ne!(new, old);
    assert_eq!(common::parent_of(new.as_raw()), std::process::id() as i32);
    assert!(
        !std::path::Path::new(&format!("/proc/{old}")).exists(),
        "not reaped"
    );
    let before = switches_once_asleep(new);
    let code = "print(6 * 7)\n";
    let s = sandbox().spawner(std::sync::Arc::clone(&spawner));
    let run = s.run_code(code).unwrap();
    assert_eq!(
        String::from_utf8_lossy(&run.stdout),
        "42\n",
        "{:?}",
        run.stderr
    );
    assert!(
        voluntary_switches(new) > before,
        "the new spawner did not clone it"
    );
    // Control: the nursery gone, the next spawner cannot be made.
    let nursery = spawner.nursery_pid();
    nix::sys::signal::kill(nursery, nix::sys::signal::Signal::SIGKILL).unwrap();
    nix::sys::signal::kill(new, nix::sys::signal::Signal::SIGKILL).unwrap();
    let _ = nix::sys::wait::waitpid(nursery, None);
    std::thread::sleep(Duration::from_millis(100));
    let e = spawner.respawn_if_ended().unwrap_err();
    assert!(e.to_string().contains("nursery"), "{e}");
    // Asked again (the server asks every second), the reaped pid is left alone.
    assert!(spawner.respawn_if_ended().is_err());
    let run = s.run_code(code).unwrap();
    assert_eq!(
        String::from_utf8_lossy(&run.stdout),
        "42\n",
        "{:?}",
        run.stderr
    );
    assert!(spawner.is_gone());
}

/// A cold run of a sandbox that has a spawner (a server's request that no warm
/// sandbox fits) is cloned by the spawner as well, with the same result; the
/// control, the same run without it, leaves the spawner asleep.
#[test]
fn a_spawner_clones_cold_runs_too() {
    let (spawner, before) = asleep_spawner();
    let sp = spawner.pid();
    let code = "import os\nprint(os.getpid(), os.getuid(), open('/proc/self/status').read().count('Seccomp:\\t2'))\n";
    let plain = sandbox().run_code(code).unwrap();
    assert_eq!(
        voluntary_switches(sp),
        before,
        "the control woke the spawner"
    );
    let cold = sandbox()
        .spawner(std::sync::Arc::clone(&spawner))
        .run_code(code)
        .unwrap();
    assert!(
        voluntary_switches(sp) > before,
        "the spawner did not clone it"
    );
    assert_eq!(cold.report.exit_code, 0, "{:?}", cold.stderr);
    assert_eq!(cold.stdout, plain.stdout);
    assert!(cold.report.layers.seccomp && cold.report.layers.landlock);
}
