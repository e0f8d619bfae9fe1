//! `--rootfs DIR`: the root is an overlay of an image with a throw-away upper layer.

mod common;
use common::*;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// One image for all tests here, built from the host's python (hard links: fast).
fn image() -> &'static Path {
    static IMG: OnceLock<PathBuf> = OnceLock::new();
    IMG.get_or_init(|| {
        let dir =
            Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("image-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        maibox::image::build(&dir, Path::new("/usr/bin/python3")).unwrap();
        // World-writable directories in the image, owned by the host id the sandbox
        // user maps to (as root: host_id_base + 1000; rootless: the caller), so that
        // overlayfs may copy them up: DAC allows the write, only the overlay keeps it
        // from reaching the image.
        for (name, owner) in [("data-root", 1_000_001_000u32), ("data-user", USER_ID)] {
            let data = dir.join(name);
            std::fs::create_dir_all(&data).unwrap();
            std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o1777)).unwrap();
            if is_root() {
                nix::unistd::chown(
                    &data,
                    Some(nix::unistd::Uid::from_raw(owner)),
                    Some(nix::unistd::Gid::from_raw(owner)),
                )
                .unwrap();
            }
        }
        std::os::unix::fs::symlink("/nonexistent/python", dir.join("usr/bin/python-missing"))
            .unwrap();
        let noexec = dir.join("usr/bin/python-noexec");
        std::fs::write(&noexec, "not a program").unwrap();
        std::fs::set_permissions(&noexec, std::fs::Permissions::from_mode(0o644)).unwrap();
        let badinterp = dir.join("usr/bin/python-badinterp");
        std::fs::write(&badinterp, "#!/nonexistent/interpreter\n").unwrap();
        std::fs::set_permissions(&badinterp, std::fs::Permissions::from_mode(0o755)).unwrap();
        // The image must be reachable by the unprivileged user too.
        let mut p = dir.clone();
        while p != Path::new("/") {
            let m = std::fs::metadata(&p).unwrap().permissions().mode();
            if m & 0o005 != 0o005 {
                std::fs::set_permissions(&p, std::fs::Permissions::from_mode(m | 0o005)).unwrap();
            }
            if !p.pop() {
                break;
            }
        }
        dir
    })
}

const WRITE: &str = r#"
import os, json, sys
res = {"root": sorted(os.listdir("/")), "usr_bin": sorted(os.listdir("/usr/bin"))}
d = sys.argv[-1]
try:
    with open(d + "/probe.txt", "w") as f: f.write("x")
    res["data_write"] = open(d + "/probe.txt").read()
except OSError as e:
    res["data_write"] = e.__class__.__name__ + ":" + str(e.errno)
print(json.dumps(res))
"#;

#[test]
fn overlay_root_writes_never_reach_the_image() {
    let img = image().to_str().unwrap().to_string();
    let s = Scratch::new();
    let script = s.file("write.py", WRITE.as_bytes());
    for who in identities("overlay_root_writes_never_reach_the_image") {
        let dir = if who == As::User || !is_root() {
            "/data-user"
        } else {
            "/data-root"
        };
        let go = |trust: &str| {
            let o = run(
                who,
                &[
                    "exec",
                    "--rootfs",
                    &img,
                    "--trust",
                    trust,
                    script.to_str().unwrap(),
                    "--",
                    dir,
                ],
            );
            serde_json::from_str::<serde_json::Value>(stdout(&o).trim())
                .unwrap_or_else(|e| panic!("{e}: {}", stderr(&o)))
        };
        let v = go("trusted");
        assert_eq!(v["data_write"], "x", "{who:?}: {v}");
        assert!(
            !image().join(&dir[1..]).join("probe.txt").exists(),
            "{who:?}: the write reached the image"
        );
        // Only the image's content is visible: no host /usr/bin tools.
        let bins: Vec<String> = serde_json::from_value(v["usr_bin"].clone()).unwrap();
        assert!(!bins.iter().any(|b| b == "perl" || b == "bash"), "{bins:?}");
        // Untrusted: the overlay root is read-only.
        let v = go("untrusted");
        assert_eq!(v["data_write"], "OSError:30", "{who:?}: {v}");
    }
    // Control: on the host the same directory takes the write.
    std::fs::write(image().join("data-user/control.txt"), "x").unwrap();
    std::fs::remove_file(image().join("data-user/control.txt")).unwrap();
}

#[test]
fn interpreter_missing_or_not_executable_in_the_image() {
    let img = image().to_str().unwrap().to_string();
    let exec = |python: &str| {
        run(
            As::Caller,
            &["exec", "--rootfs", &img, "--python", python, "-c", "pass"],
        )
    };
    // What can be seen from the host is refused before anything starts (125), naming
    // the image and what to do.
    for (python, want) in [
        (
            "/usr/bin/python-missing",
            "leads to /nonexistent/python, which is not present there",
        ),
        ("/usr/bin/python-noexec", "is not executable (mode 644)"),
        ("/usr/bin/python-absent", "not present in the root image"),
    ] {
        let o = exec(python);
        assert_eq!(o.status.code(), Some(125), "{python}: {}", stderr(&o));
        assert!(stderr(&o).contains(want), "{python}: {}", stderr(&o));
        assert!(stderr(&o).contains(&img), "{python}: {}", stderr(&o));
        assert!(stderr(&o).contains("cargo xtask rootfs"), "{}", stderr(&o));
    }
    // An executable whose own interpreter is missing passes that check; execve fails
    // inside the sandbox, and that is 127 as for a missing command.
    let o = exec("/usr/bin/python-badinterp");
    assert_eq!(o.status.code(), Some(127), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("cannot execute /usr/bin/python-badinterp"),
        "{}",
        stderr(&o)
    );
}

/// The standard library works in the image `img`: compiled modules (lib-dynload) and
/// the shared libraries they load, the time zone database, the sandbox user's name.
/// A builder that missed one fails here at import or lookup. Returns the code's
/// listing of the image's root.
fn stdlib_runs_under(img: &str, who: As) -> Vec<String> {
    let code = "import json, csv, sqlite3, ssl, ctypes, decimal, hashlib, lzma, bz2, zlib, \
uuid, socket, select, statistics, tempfile, zoneinfo, pwd, os\n\
c = sqlite3.connect(':memory:'); c.execute('create table t(x)'); c.execute('insert into t values (41)')\n\
with tempfile.TemporaryFile(dir='/tmp') as f: f.write(b'x')\n\
print(c.execute('select x + 1 from t').fetchone()[0], hashlib.sha256(b'').hexdigest()[:8], \
ssl.OPENSSL_VERSION.split()[0], zoneinfo.ZoneInfo('Europe/Paris').key, pwd.getpwuid(os.getuid()).pw_name)\n\
print(json.dumps(sorted(os.listdir('/'))))\n";
    let mut root = Vec::new();
    for trust in ["untrusted", "trusted"] {
        let o = run(
            who,
            &["exec", "--trust", trust, "--rootfs", img, "-c", code],
        );
        assert_eq!(o.status.code(), Some(0), "{who:?} {trust}: {}", stderr(&o));
        let out = stdout(&o);
        let mut lines = out.lines();
        assert_eq!(
            lines.next(),
            Some("42 e3b0c442 OpenSSL Europe/Paris sandbox"),
            "{who:?} {trust}: {}",
            stderr(&o)
        );
        root = serde_json::from_str(lines.next().unwrap_or_default()).unwrap();
    }
    root
}

#[test]
fn stdlib_runs_under_the_host_image() {
    let img = image().to_str().unwrap().to_string();
    for who in identities("stdlib_runs_under_the_host_image") {
        let root = stdlib_runs_under(&img, who);
        // The host variant holds only what Python needs: no /var, no /boot.
        assert!(!root.iter().any(|e| e == "var" || e == "boot"), "{root:?}");
    }
}

/// The debootstrap variant takes 30–90 s and the network to build, so it is not built
/// here: `cargo xtask rootfs DIR --from debootstrap`, then
/// `MAIBOX_DEBOOTSTRAP_IMAGE=DIR cargo test --test overlay -- --ignored`.
#[test]
#[ignore = "needs MAIBOX_DEBOOTSTRAP_IMAGE=DIR, built by `cargo xtask rootfs DIR --from debootstrap`"]
fn stdlib_runs_under_a_debootstrap_image() {
    let img = std::env::var("MAIBOX_DEBOOTSTRAP_IMAGE")
        .expect("set MAIBOX_DEBOOTSTRAP_IMAGE to a directory built by `cargo xtask rootfs DIR --from debootstrap`");
    let status = Path::new(&img).join("var/lib/dpkg/status");
    assert!(
        std::fs::read_to_string(&status)
            .unwrap_or_default()
            .contains("Package: python3\n"),
        "{img} is not a debootstrap image with python3 (no {})",
        status.display()
    );
    for who in identities("stdlib_runs_under_a_debootstrap_image") {
        let root = stdlib_runs_under(&img, who);
        // The image's own tree, not the host's view: Debian's /var and /boot are there.
        assert!(
            root.iter().any(|e| e == "var") && root.iter().any(|e| e == "boot"),
            "{root:?}"
        );
    }
}
