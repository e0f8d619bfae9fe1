//! `cargo xtask rootfs DIR [--from debootstrap|host] [--python P] [--mirror URL]
//! [--suite S]`: builds the minimal Python root image of `rootfs/` into DIR, for
//! `maibox exec --rootfs DIR`.
//!
//! `--from debootstrap` installs the recipe's Debian packages on debootstrap's minbase
//! variant from the mirror apt already uses on this host (sources.list or
//! sources.list.d), then prunes the recipe's paths; `--from host` assembles the image
//! from the host's interpreter (maibox::image::build). The default is debootstrap when
//! it is installed and we are root (it needs root to chown and mknod), host otherwise.

use crate::progress::{Progress, Stage, Work};
use anyhow::{bail, Context, Result};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

const USAGE: &str = "usage: cargo xtask rootfs DIR [--from debootstrap|host] [--python PATH] [--mirror URL] [--suite SUITE]";
/// Debian 12, the release this project is developed and tested on.
const DEFAULT_SUITE: &str = "bookworm";

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum From {
    Debootstrap,
    Host,
}

#[derive(Debug, PartialEq)]
pub struct Options {
    pub dest: PathBuf,
    /// None: pick (debootstrap when installed and root, else host).
    pub from: Option<From>,
    pub python: PathBuf,
    pub mirror: Option<String>,
    pub suite: String,
}

pub fn options(args: &[String]) -> Result<Options> {
    let mut dest = None;
    let mut o = Options {
        dest: PathBuf::new(),
        from: None,
        python: PathBuf::from("/usr/bin/python3"),
        mirror: None,
        suite: DEFAULT_SUITE.into(),
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .cloned()
                .with_context(|| format!("{name} needs a value ({USAGE})"))
        };
        match a.as_str() {
            "--from" => {
                o.from = Some(match value("--from")?.as_str() {
                    "debootstrap" => From::Debootstrap,
                    "host" => From::Host,
                    other => bail!(
                        "unknown --from value {other:?}: give debootstrap (Debian packages) or host (this host's interpreter)"
                    ),
                })
            }
            "--python" => o.python = PathBuf::from(value("--python")?),
            "--mirror" => o.mirror = Some(value("--mirror")?),
            "--suite" => o.suite = value("--suite")?,
            other if other.starts_with('-') => bail!("unknown rootfs option {other} ({USAGE})"),
            other if dest.is_none() => dest = Some(PathBuf::from(other)),
            other => bail!(
                "unexpected argument {other:?}: give the interpreter with --python ({USAGE})"
            ),
        }
    }
    o.dest = dest.context(USAGE)?;
    if o.from == Some(From::Debootstrap) && o.python != Path::new("/usr/bin/python3") {
        bail!("--python is for --from host; the debootstrap image has Debian's python3");
    }
    Ok(o)
}

pub fn rootfs(args: &[String]) -> Result<()> {
    let o = options(args)?;
    let dest = absolute(&o.dest)?;
    check_destination(&dest, &crate::root())?;
    let root = is_root();
    let from = match o.from {
        Some(f) => f,
        None => match (crate::which("debootstrap"), root) {
            (Some(_), true) => From::Debootstrap,
            (None, _) => {
                eprintln!("note: debootstrap is not installed (apt-get install debootstrap); building from this host's interpreter");
                From::Host
            }
            (Some(_), false) => {
                eprintln!("note: debootstrap needs root; building from this host's interpreter");
                From::Host
            }
        },
    };
    let t = Instant::now();
    let progress = Progress::new("rootfs", stages(from, &o.python));
    progress.begin_as_planned(0);
    let what = match from {
        From::Host => {
            let built = maibox::image::build(&dest, &o.python)?;
            progress.begin_as_planned(1);
            format!(
                "from this host's {} ({} files, hard links where the filesystem allows)",
                o.python.display(),
                built.files
            )
        }
        From::Debootstrap => from_debootstrap(&o, &dest, root, &progress)?,
    };
    let secs = t.elapsed().as_secs_f64();
    // The same check `maibox exec --rootfs` makes: a build that left no usable
    // interpreter fails here, not at the first run.
    maibox::interpreter::resolve_in_image(&dest, "auto")
        .with_context(|| format!("the image in {} has no usable python", dest.display()))?;
    let size = maibox::image::disk_usage(&dest)?;
    drop(progress);
    println!(
        "root image in {}: {what}; {:.1} MiB on disk (du), built in {secs:.1} s{}",
        dest.display(),
        size as f64 / 1048576.0,
        python_version(&dest)
            .map(|v| format!("; python3 {v}"))
            .unwrap_or_default()
    );
    println!(
        "run: maibox exec --rootfs {} script.py (or `rootfs: {}` in a trust level of config/sandbox.yaml)",
        dest.display(),
        dest.display()
    );
    Ok(())
}

/// debootstrap's minbase with the recipe's packages, pruned and finished; says what it built.
fn from_debootstrap(o: &Options, dest: &Path, root: bool, progress: &Progress) -> Result<String> {
    if !root {
        bail!("debootstrap needs root (it creates device nodes and files owned by other users); run as root, or build from this host's interpreter with --from host");
    }
    let debootstrap = crate::which("debootstrap").context("debootstrap is not installed: apt-get install debootstrap, or build from this host's interpreter with --from host")?;
    let source = match &o.mirror {
        Some(m) => Source {
            uri: m.clone(),
            keyring: None,
            file: "--mirror".into(),
        },
        None => apt_source(&o.suite)?,
    };
    let recipe = maibox::image::recipe();
    debootstrap_into(
        &debootstrap,
        dest,
        (&o.suite, &source),
        &recipe.packages,
        progress,
    )?;
    progress.begin_as_planned(1);
    let pruned = maibox::image::prune(dest, &recipe)?;
    maibox::image::finish(dest, &recipe)?;
    progress.begin_as_planned(2);
    Ok(format!(
        "debootstrap --variant=minbase {} from {} (packages: {}; pruned {} paths, {:.1} MiB)",
        o.suite,
        source.uri,
        recipe.packages.join(" "),
        pruned.paths,
        pruned.bytes as f64 / 1048576.0
    ))
}

/// The steps of a build, for the progress line; none has a length known beforehand.
fn stages(from: From, python: &Path) -> Vec<Stage> {
    let check = Stage::new("checking the image", Work::Open);
    match from {
        From::Host => vec![
            Stage::new(
                format!("copying {} and what it loads", python.display()),
                Work::Open,
            ),
            check,
        ],
        From::Debootstrap => vec![
            Stage::new("debootstrap", Work::Open),
            Stage::new("pruning", Work::Open),
            check,
        ],
    }
}

fn absolute(p: &Path) -> Result<PathBuf> {
    Ok(if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir()
            .context("the current directory")?
            .join(p)
    })
}

/// DIR must be new or empty, and not inside the repository's work tree (where git would
/// see a few thousand files; `target/` is ignored and allowed).
fn check_destination(dest: &Path, repo: &Path) -> Result<()> {
    match std::fs::read_dir(dest) {
        Ok(mut rd) => {
            if rd.next().is_some() {
                bail!(
                    "{} is not empty; give a new or empty directory (remove a failed build first)",
                    dest.display()
                );
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => bail!("{}: {e}; give a new or empty directory", dest.display()),
    }
    // The nearest existing ancestor, resolved, tells where DIR really lands.
    let mut probe = dest.to_path_buf();
    while !probe.exists() && probe.pop() {}
    let real = std::fs::canonicalize(&probe).unwrap_or(probe);
    let repo = std::fs::canonicalize(repo).unwrap_or_else(|_| repo.to_path_buf());
    if real.starts_with(&repo) && !real.starts_with(repo.join("target")) {
        bail!(
            "{} is inside the repository ({}); build the image outside it, e.g. /var/tmp/maibox-rootfs (rootfs/ holds only its recipe)",
            dest.display(),
            repo.display()
        );
    }
    Ok(())
}

fn is_root() -> bool {
    // The owner of /proc/self is the effective uid: no libc needed for one number.
    std::fs::metadata("/proc/self")
        .map(|m| m.uid() == 0)
        .unwrap_or(false)
}

/// An apt source for the suite: the mirror, and the keyring apt checks it with.
#[derive(Debug, PartialEq)]
pub struct Source {
    pub uri: String,
    pub keyring: Option<PathBuf>,
    /// The file it came from, for messages.
    pub file: String,
}

/// The first enabled `deb` source of `suite` in apt's configuration, in apt's own
/// order: sources.list, then sources.list.d/*.list and *.sources by name.
fn apt_source(suite: &str) -> Result<Source> {
    let etc = Path::new("/etc/apt");
    let mut files = vec![etc.join("sources.list")];
    if let Ok(rd) = std::fs::read_dir(etc.join("sources.list.d")) {
        let mut more: Vec<PathBuf> = rd
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "list" || x == "sources"))
            .collect();
        more.sort();
        files.extend(more);
    }
    for f in &files {
        let Ok(text) = std::fs::read_to_string(f) else {
            continue;
        };
        let found = if f.extension().is_some_and(|x| x == "sources") {
            deb822_source(&text, suite)
        } else {
            one_line_source(&text, suite)
        };
        if let Some((uri, keyring)) = found {
            return Ok(Source {
                uri,
                keyring: keyring.map(PathBuf::from).filter(|k| k.is_file()),
                file: f.display().to_string(),
            });
        }
    }
    bail!(
        "no enabled http(s) `deb` source for suite {suite} in /etc/apt/sources.list or sources.list.d; give one with --mirror URL (e.g. the Debian mirror `apt-get update` uses), or build from this host's interpreter with --from host"
    )
}

fn usable_uri(u: &str) -> bool {
    u.starts_with("http://") || u.starts_with("https://") || u.starts_with("file:/")
}

/// `deb [options] URI SUITE COMPONENTS...` lines; returns the URI and `signed-by`.
pub fn one_line_source(text: &str, suite: &str) -> Option<(String, Option<String>)> {
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        let Some(rest) = line
            .strip_prefix("deb ")
            .or_else(|| line.strip_prefix("deb\t"))
        else {
            continue;
        };
        let rest = rest.trim_start();
        let (opts, rest) = match rest.strip_prefix('[') {
            Some(r) => match r.split_once(']') {
                Some((o, r)) => (o, r),
                None => continue,
            },
            None => ("", rest),
        };
        let mut words = rest.split_whitespace();
        let (Some(uri), Some(s)) = (words.next(), words.next()) else {
            continue;
        };
        if s == suite && usable_uri(uri) {
            let keyring = opts
                .split_whitespace()
                .find_map(|o| o.strip_prefix("signed-by="))
                .map(str::to_string);
            return Some((uri.to_string(), keyring));
        }
    }
    None
}

/// deb822 stanzas (`Types: deb`, `URIs:`, `Suites:`, `Enabled:`, `Signed-By:`).
pub fn deb822_source(text: &str, suite: &str) -> Option<(String, Option<String>)> {
    for stanza in text.split("\n\n") {
        let mut fields: Vec<(String, String)> = Vec::new();
        for line in stanza.lines() {
            if line.starts_with('#') {
                continue;
            }
            if line.starts_with([' ', '\t']) {
                // A continuation line (a multi-line Signed-By key block, say).
                if let Some(last) = fields.last_mut() {
                    last.1.push('\n');
                    last.1.push_str(line.trim());
                }
                continue;
            }
            if let Some((k, v)) = line.split_once(':') {
                fields.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
            }
        }
        let get = |k: &str| fields.iter().find(|(f, _)| f == k).map(|(_, v)| v.as_str());
        let listed =
            |k: &str, want: &str| get(k).is_some_and(|v| v.split_whitespace().any(|w| w == want));
        if !listed("types", "deb") || !listed("suites", suite) {
            continue;
        }
        if get("enabled").is_some_and(|v| v.eq_ignore_ascii_case("no")) {
            continue;
        }
        if let Some(uri) = get("uris").and_then(|v| v.split_whitespace().find(|u| usable_uri(u))) {
            // Only a file name; an inline key block is not a keyring debootstrap reads.
            let keyring = get("signed-by")
                .filter(|k| k.starts_with('/') && !k.contains('\n'))
                .map(str::to_string);
            return Some((uri.to_string(), keyring));
        }
    }
    None
}

/// apt's own proxy setting (Acquire::http::Proxy), for debootstrap's wget, which
/// does not read apt's configuration.
fn apt_proxy(scheme: &str) -> Option<String> {
    let o = Command::new("apt-config")
        .args(["shell", "P", &format!("Acquire::{scheme}::Proxy")])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&o.stdout);
    let v = text
        .trim()
        .strip_prefix("P=")?
        .trim_matches('\'')
        .to_string();
    (!v.is_empty() && v != "DIRECT").then_some(v)
}

fn debootstrap_into(
    debootstrap: &str,
    dest: &Path,
    (suite, source): (&str, &Source),
    packages: &[String],
    progress: &Progress,
) -> Result<()> {
    let mut cmd = Command::new(debootstrap);
    cmd.arg("--variant=minbase");
    if !packages.is_empty() {
        cmd.arg(format!("--include={}", packages.join(",")));
    }
    if let Some(k) = &source.keyring {
        cmd.arg(format!("--keyring={}", k.display()));
    }
    cmd.args([suite, &dest.display().to_string(), &source.uri]);
    for (scheme, var) in [("http", "http_proxy"), ("https", "https_proxy")] {
        if std::env::var_os(var).is_none() {
            if let Some(p) = apt_proxy(scheme) {
                progress.note(&format!("==> {var}={p} (apt's Acquire::{scheme}::Proxy)"));
                cmd.env(var, p);
            }
        }
    }
    progress.note(&format!(
        "==> {} (mirror from {})",
        std::iter::once(cmd.get_program())
            .chain(cmd.get_args())
            .map(|a| a.to_string_lossy())
            .collect::<Vec<_>>()
            .join(" "),
        source.file
    ));
    let st = if progress.visible() {
        status_on_the_line(&mut cmd, progress)
    } else {
        cmd.status()
    }
    .with_context(|| format!("running {debootstrap}"))?;
    if !st.success() {
        let log = dest.join("debootstrap/debootstrap.log");
        let log = if log.is_file() {
            format!("; its log is {}", log.display())
        } else {
            String::new()
        };
        bail!(
            "debootstrap failed ({st}) installing {suite} from {} into {}{log}. Check that `apt-get update` reaches that mirror (or give another with --mirror URL), remove {} and retry; or build from this host's interpreter with --from host",
            source.uri,
            dest.display(),
            dest.display()
        );
    }
    Ok(())
}

/// On a terminal: runs `cmd` with its output shown one line at a time on the progress
/// line (debootstrap prints hundreds), and its last lines printed if it fails.
fn status_on_the_line(
    cmd: &mut Command,
    progress: &Progress,
) -> std::io::Result<std::process::ExitStatus> {
    use std::io::BufRead;
    use std::process::Stdio;
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn()?;
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let readers: Vec<Box<dyn std::io::Read + Send>> = [
        child
            .stdout
            .take()
            .map(|o| Box::new(o) as Box<dyn std::io::Read + Send>),
        child
            .stderr
            .take()
            .map(|e| Box::new(e) as Box<dyn std::io::Read + Send>),
    ]
    .into_iter()
    .flatten()
    .collect();
    for r in readers {
        let tx = tx.clone();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(r).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
    }
    drop(tx);
    let mut last = std::collections::VecDeque::new();
    // Ends when both pipes are closed, that is when the command (and anything it
    // left holding them) is gone.
    for line in rx {
        progress.set_detail(&line);
        last.push_back(line);
        if last.len() > 20 {
            last.pop_front();
        }
    }
    let st = child.wait()?;
    if !st.success() {
        for l in &last {
            progress.note(l);
        }
    }
    Ok(st)
}

/// python3's version from the image's dpkg database, when it has one.
fn python_version(dest: &Path) -> Option<String> {
    let status = std::fs::read_to_string(dest.join("var/lib/dpkg/status")).ok()?;
    status.split("\n\n").find_map(|s| {
        s.lines()
            .any(|l| l == "Package: python3")
            .then(|| {
                s.lines()
                    .find_map(|l| l.strip_prefix("Version: "))
                    .map(str::to_string)
            })
            .flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn options_parse_and_refuse() {
        let o = options(&args(&[
            "/x",
            "--from",
            "host",
            "--python",
            "/opt/py/bin/python3",
        ]))
        .unwrap();
        assert_eq!(o.from, Some(From::Host));
        assert_eq!(o.dest, Path::new("/x"));
        assert_eq!(o.python, Path::new("/opt/py/bin/python3"));
        assert_eq!(o.suite, "bookworm");
        assert_eq!(options(&args(&["/x"])).unwrap().from, None);
        for (a, want) in [
            (
                vec!["/x", "--from", "docker"],
                "unknown --from value \"docker\"",
            ),
            (vec!["/x", "--from"], "--from needs a value"),
            (vec!["/x", "--frm", "host"], "unknown rootfs option --frm"),
            (
                vec!["/x", "/usr/bin/python3"],
                "give the interpreter with --python",
            ),
            (vec![], "usage: cargo xtask rootfs DIR"),
            (
                vec!["/x", "--from", "debootstrap", "--python", "/p"],
                "--python is for --from host",
            ),
        ] {
            let e = format!("{:#}", options(&args(&a)).unwrap_err());
            assert!(e.contains(want), "{a:?}: {e}");
        }
    }

    #[test]
    fn destination_must_be_empty_and_outside_the_repo() {
        let d = tempfile_dir();
        let repo = d.join("repo");
        std::fs::create_dir_all(repo.join("target")).unwrap();
        std::fs::create_dir_all(d.join("full")).unwrap();
        std::fs::write(d.join("full/f"), "x").unwrap();
        assert!(check_destination(&d.join("new/img"), &repo).is_ok());
        assert!(check_destination(&repo.join("target/img"), &repo).is_ok());
        let e = check_destination(&d.join("full"), &repo)
            .unwrap_err()
            .to_string();
        assert!(e.contains("is not empty"), "{e}");
        let e = check_destination(&repo.join("rootfs/img"), &repo)
            .unwrap_err()
            .to_string();
        assert!(e.contains("inside the repository"), "{e}");
        std::fs::remove_dir_all(&d).unwrap();
    }

    fn tempfile_dir() -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "xtask-rootfs-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn sources_one_line() {
        let text = "# deb http://old.example/debian bookworm main\n\
            deb-src http://src.example/debian bookworm main\n\
            deb cdrom:[Debian]/ bookworm main\n\
            deb https://cloud.example/apt cloud-sdk-bookworm main\n\
            deb [arch=amd64 signed-by=/usr/share/keyrings/k.gpg] http://mirror.example/debian bookworm main\n";
        assert_eq!(
            one_line_source(text, "bookworm"),
            Some((
                "http://mirror.example/debian".into(),
                Some("/usr/share/keyrings/k.gpg".into())
            ))
        );
        assert_eq!(one_line_source(text, "trixie"), None);
    }

    #[test]
    fn sources_deb822() {
        let text = "Types: deb\nURIs: http://off.example/debian\nSuites: bookworm\nEnabled: no\n\n\
            Types: deb-src\nURIs: http://src.example/debian\nSuites: bookworm\n\n\
            Types: deb\n# http://snapshot.example/archive/debian/20250520T000000Z\nURIs: http://deb.example/debian\nSuites: bookworm bookworm-updates\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n\n\
            Types: deb\nURIs: http://deb.example/debian-security\nSuites: bookworm-security\n";
        assert_eq!(
            deb822_source(text, "bookworm"),
            Some((
                "http://deb.example/debian".into(),
                Some("/usr/share/keyrings/debian-archive-keyring.gpg".into())
            ))
        );
        assert_eq!(
            deb822_source(text, "bookworm-security").map(|s| s.0),
            Some("http://deb.example/debian-security".into())
        );
        let inline = "Types: deb\nURIs: http://x.example/debian\nSuites: bookworm\nSigned-By:\n -----BEGIN PGP PUBLIC KEY BLOCK-----\n .\n abc\n";
        assert_eq!(
            deb822_source(inline, "bookworm"),
            Some(("http://x.example/debian".into(), None))
        );
    }
}
