//! runc's calling conventions that clap alone cannot tell apart: `exec` shared between
//! maibox's Python exec and runc's `exec --process FILE ID`, and runc's `-v`.

use std::path::PathBuf;

/// The options of runc's `exec` that maibox's own `exec` does not have.
const RUNC_EXEC_FLAGS: [&str; 16] = [
    "--process",
    "-p",
    "--pid-file",
    "--detach",
    "-d",
    "--console-socket",
    "--tty",
    "-t",
    "--user",
    "-u",
    "--cwd",
    "--additional-gids",
    "-g",
    "--ignore-paused",
    "--preserve-fds",
    "--cgroup",
];

/// The OCI state root the command line names (`--root DIR` or `--root=DIR`), or the
/// default one.
fn state_root(args: &[std::ffi::OsString]) -> PathBuf {
    args.iter()
        .position(|a| a == "--root")
        .and_then(|i| args.get(i + 1))
        .map(PathBuf::from)
        .or_else(|| {
            args.iter().find_map(|a| {
                a.to_str()
                    .and_then(|s| s.strip_prefix("--root="))
                    .map(PathBuf::from)
            })
        })
        .unwrap_or_else(|| PathBuf::from(maibox::oci::state::DEFAULT_ROOT))
}

/// runc's `exec --process FILE ID` (how Docker and containerd run `docker exec`) shares
/// its name with maibox's own `exec` of Python code; the runc form is told apart by
/// its flags and routed to the hidden `oci-exec` verb.
pub fn route_oci_exec(mut args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    let Some(pos) = args.iter().position(|a| a == "exec") else {
        return args;
    };
    // Only maibox's own options count: after `--` come the code's arguments.
    let own = || args[pos + 1..].iter().take_while(|a| *a != "--");
    let oci_flag = own().any(|a| {
        let a = a.to_string_lossy();
        RUNC_EXEC_FLAGS.iter().any(|f| {
            a.strip_prefix(f)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('='))
        })
    });
    // `exec ID CMD...` without flags (runc's plain form): an argument naming a
    // container under the state root, and no file of that name, means OCI.
    let root = state_root(&args);
    let names_container = || {
        own().any(|a| {
            let s = a.to_string_lossy();
            !s.starts_with('-')
                && !s.contains('/')
                && root.join(&*s).join("state.json").is_file()
                && !std::path::Path::new(a).exists()
        })
    };
    // runc's callers name a state root before the verb; maibox's own exec has no
    // use for one. So `--root DIR exec ID ...` is OCI even when ID does not exist
    // (and fails as runc's does: no such container, status 255).
    let state_root = args[..pos].iter().any(|a| {
        let a = a.to_string_lossy();
        a == "--root" || a.starts_with("--root=")
    });
    if oci_flag || state_root || names_container() {
        args[pos] = "oci-exec".into();
    }
    args
}

/// `-v` alone, after any of runc's global options (`--root DIR -v`).
pub fn is_runc_version(args: &[String]) -> bool {
    let mut rest = args.iter();
    while let Some(a) = rest.next() {
        match a.as_str() {
            "--root" | "--log" | "--log-format" => {
                rest.next();
            }
            "--debug" | "--systemd-cgroup" => {}
            "-v" => return rest.next().is_none(),
            s if s.starts_with("--root=") || s.starts_with("--log=") => {}
            s if s.starts_with("--log-format=") => {}
            _ => return false,
        }
    }
    false
}

/// runc's answer to help for a verb it does not have (`runc foo -h`, `runc help
/// foo`): "No help topic for 'foo'", with a non-zero exit. `None` when `e` is
/// not an unknown subcommand or no help was asked for (clap's own error then
/// stands).
pub fn unknown_help_topic(e: &clap::Error, args: &[std::ffi::OsString]) -> Option<String> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if e.kind() != ErrorKind::InvalidSubcommand {
        return None;
    }
    let Some(ContextValue::String(topic)) = e.get(ContextKind::InvalidSubcommand) else {
        return None;
    };
    let asked = args
        .iter()
        .skip(1)
        .any(|a| a == "-h" || a == "--help" || a == "help");
    asked.then(|| {
        format!("No help topic for '{topic}' (`maibox --help` lists the verbs, `maibox VERB -h` explains one)")
    })
}

#[cfg(test)]
mod route_tests {
    use super::route_oci_exec;

    fn routed(args: &[&str]) -> Vec<String> {
        route_oci_exec(args.iter().map(|a| a.into()).collect())
            .into_iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn runc_exec_is_told_apart_from_python_exec() {
        let docker = [
            "maibox",
            "--root",
            "/r",
            "exec",
            "--process",
            "/p.json",
            "--detach",
            "id",
        ];
        assert_eq!(routed(&docker)[3], "oci-exec");
        assert_eq!(
            routed(&["maibox", "exec", "--pid-file=/f", "-d", "id"])[1],
            "oci-exec"
        );
        // The code's own arguments after `--` never count.
        let py = ["maibox", "exec", "code.py", "--", "-d", "--process"];
        assert_eq!(routed(&py)[1], "exec");
        assert_eq!(routed(&["maibox", "exec", "-c", "pass"])[1], "exec");
        // A state root before the verb is runc's form, whether or not the
        // container exists; so are --preserve-fds and --cgroup.
        let plain = ["maibox", "--root", "/nonexistent", "exec", "nosuch", "true"];
        assert_eq!(routed(&plain)[3], "oci-exec");
        assert_eq!(
            routed(&["maibox", "exec", "--preserve-fds=2", "id", "cat"])[1],
            "oci-exec"
        );
    }
}
