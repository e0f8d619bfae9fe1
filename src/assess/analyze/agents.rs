//! Coding agents and developer tools turned against their users (MB943,
//! MB218): instructions planted into the agent rule and memory files of
//! projects found by walking, MCP servers and editor tasks that fetch and
//! run remote code, agents told to stop asking before they act, git told
//! to run hooks, an SSH command or a credential helper of the script's
//! choosing, and package managers pointed at another index. The judgement
//! is by where the write lands and what the script carries, never by the
//! script's name.

use std::cell::OnceCell;

use super::effects::Effects;
use super::literal::shorten;
use super::{Analyzer, Node};

/// What kind of developer-tool configuration a path is.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    /// Instructions an agent reads as its own (rules, memory files).
    Instructions,
    /// An agent's or editor's settings, MCP servers included.
    Settings,
    /// Editor tasks, which can run when a folder is opened.
    Tasks,
    /// git's configuration.
    Git,
    /// A package manager's index or registry configuration.
    PackageIndex,
}

/// File names (lower-cased path endings) of each kind.
const KINDS: &[(&str, Kind)] = &[
    ("/.cursorrules", Kind::Instructions),
    ("/claude.md", Kind::Instructions),
    ("/claude.local.md", Kind::Instructions),
    ("/agents.md", Kind::Instructions),
    ("/gemini.md", Kind::Instructions),
    ("/.github/copilot-instructions.md", Kind::Instructions),
    ("/.windsurfrules", Kind::Instructions),
    ("/.clinerules", Kind::Instructions),
    ("/mcp.json", Kind::Settings),
    ("/claude_desktop_config.json", Kind::Settings),
    ("/.claude.json", Kind::Settings),
    ("/.claude/settings.json", Kind::Settings),
    ("/.claude/settings.local.json", Kind::Settings),
    ("/user/settings.json", Kind::Settings),
    ("/.vscode/settings.json", Kind::Settings),
    ("/.continue/config.json", Kind::Settings),
    ("/.codex/config.toml", Kind::Settings),
    ("/.gemini/settings.json", Kind::Settings),
    ("/.aider.conf.yml", Kind::Settings),
    ("/.vscode/tasks.json", Kind::Tasks),
    ("/.gitconfig", Kind::Git),
    ("/.config/git/config", Kind::Git),
    ("/etc/gitconfig", Kind::Git),
    ("/pip.conf", Kind::PackageIndex),
    ("/pip.ini", Kind::PackageIndex),
    ("/.pypirc", Kind::PackageIndex),
    ("/.pydistutils.cfg", Kind::PackageIndex),
    ("/uv.toml", Kind::PackageIndex),
    ("/.npmrc", Kind::PackageIndex),
    ("/.yarnrc", Kind::PackageIndex),
    ("/.yarnrc.yml", Kind::PackageIndex),
    ("/.condarc", Kind::PackageIndex),
];

/// The names of [`KINDS`] without a dot (see `named_kind`).
const DOTLESS_KINDS: &[&str] = &["/etc/gitconfig"];

/// Directories of agent rules and memories, whatever the file's name.
const INSTRUCTION_DIRS: &[&str] = &["/.cursor/rules/", "/.claude/memory", "/.windsurf/rules/"];

/// Settings that let an agent act without asking, or an editor run a
/// workspace's tasks unasked.
const UNGUARDED: &[&str] = &[
    "autoapprove",
    "auto_approve",
    "alwaysallow",
    "bypasspermissions",
    "skip-permissions",
    "skippermissions",
    "yolo",
    "allowautomatictasks",
    "trust.enabled",
    "approval_policy",
    "full-auto",
];

/// git settings that make git run a program of the writer's choosing.
const GIT_RUNNERS: &[&str] = &[
    "core.hookspath",
    "core.sshcommand",
    "credential.helper",
    "core.fsmonitor",
    "core.pager",
    "core.editor",
];

/// Keys that choose where packages come from.
const INDEX_KEYS: &[&str] = &["index-url", "index_url", "registry", "extra-index"];

/// Default package indexes: pointing a tool at them changes nothing.
const DEFAULT_INDEXES: &[&str] = &[
    "pypi.org",
    "files.pythonhosted.org",
    "registry.npmjs.org",
    "registry.yarnpkg.com",
];

fn kind_of(path: &str) -> Option<Kind> {
    kind_of_lower(&path.to_ascii_lowercase())
}

/// [`kind_of`] for a path already lower-cased.
fn kind_of_lower(lower: &str) -> Option<Kind> {
    if INSTRUCTION_DIRS.iter().any(|d| lower.contains(d)) {
        return Some(Kind::Instructions);
    }
    KINDS
        .iter()
        .find(|(end, _)| lower.ends_with(end) || *lower == end[1..])
        .map(|(_, k)| *k)
}

/// The kind of configuration file a literal names by itself (`mcp.json`,
/// `.npmrc`, `~/.cursor/mcp.json`). `path` is a buffer to reuse: this is
/// asked of every literal, and a `format!` each was a fifth of the cost.
fn named_kind(t: &str, path: &mut String) -> Option<Kind> {
    // Every folder of `INSTRUCTION_DIRS` and every name of `KINDS` but
    // those of `DOTLESS_KINDS` holds a dot: a literal with neither a dot
    // nor the end of one of those names none (most of them).
    let dotless = || !t.contains('.') && !DOTLESS_KINDS.iter().any(|e| t.ends_with(&e[1..]));
    if t.is_empty() || dotless() || t.contains(char::is_whitespace) {
        return None;
    }
    // The literals are lower-cased already (`Effects::texts`).
    path.clear();
    path.push('/');
    path.push_str(t.trim_start_matches('/'));
    kind_of_lower(path)
}

/// A path in projects the script found rather than made: a walked tree, or
/// directories listed under a home directory.
fn found_by_search(path: &str) -> bool {
    path.contains("**")
        || ((path.starts_with('~') || path.starts_with("/home")) && path.contains('*'))
}

/// An agent's own, global memory (read in every project).
fn global_memory(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    ["~/.claude/", "~/.codex/", "~/.gemini/", "~/.cursor/"]
        .iter()
        .any(|d| lower.starts_with(d))
}

/// A literal that fetches code and runs it: a download piped into an
/// interpreter, or a package runner given a URL.
pub(super) fn remote_code(t: &str) -> bool {
    let mut segs = t.split('|');
    let first = segs.next().unwrap_or("");
    let mut fetching = first.contains("curl") || first.contains("wget");
    for seg in segs {
        let head = seg.split_whitespace().next().unwrap_or("");
        let head = head.rsplit('/').next().unwrap_or(head);
        let interp = [
            "sh", "bash", "zsh", "dash", "python", "python3", "node", "perl", "ruby",
        ];
        if fetching && interp.contains(&head) {
            return true;
        }
        fetching = seg.contains("curl") || seg.contains("wget");
    }
    let runner = ["npx ", "uvx ", "bunx ", "pipx run "]
        .iter()
        .any(|r| t.contains(r));
    (runner && (t.contains("http://") || t.contains("https://") || t.contains("git+")))
        || ((t.contains("urlopen") || t.contains("requests.get")) && t.contains("exec("))
}

/// A shell line (lower-cased) that uploads files or its input with curl:
/// `-F k=@file`, `--data-binary @-`, `-T file`.
fn uploads_files(t: &str) -> bool {
    t.contains("curl ")
        && [
            "=@",
            "--data-binary @",
            "--data @",
            "-d @",
            "--upload-file",
            " -t ",
        ]
        .iter()
        .any(|u| t.contains(u))
}

/// The host of the first http(s) URL in `t`.
pub(super) fn url_host(t: &str) -> Option<&str> {
    let at = t
        .find("http://")
        .map(|i| i + 7)
        .or_else(|| t.find("https://").map(|i| i + 8))?;
    let rest = &t[at..];
    let end = rest
        .find(['/', ':', '"', '\'', ' ', '\n'])
        .unwrap_or(rest.len());
    Some(&rest[..end]).filter(|h| h.contains('.'))
}

/// What a command line changes in a developer tool's configuration: `git
/// config --global core.hooksPath DIR`, `pip config set global.index-url
/// URL`, `npm config set registry URL`.
fn tool_config_change(line: &str) -> Option<String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let head = words.first().map(|h| h.rsplit('/').next().unwrap_or(h));
    let global = words
        .iter()
        .any(|w| matches!(*w, "--global" | "--system" | "--user"));
    let reads = words
        .iter()
        .any(|w| w.starts_with("--get") || matches!(*w, "--list" | "-l"));
    let set = words.contains(&"set") || !reads;
    match head {
        Some("git") if words.get(1) == Some(&"config") && global && set => GIT_RUNNERS
            .iter()
            .find(|g| words.contains(g))
            .filter(|_| words.len() >= 5)
            .map(|g| format!("sets {g}, a program git runs everywhere")),
        Some("pip" | "pip3" | "npm" | "yarn" | "pnpm" | "uv")
            if words.contains(&"config") && words.contains(&"set") =>
        {
            words
                .iter()
                .find(|w| INDEX_KEYS.iter().any(|k| w.contains(k)))
                .map(|k| format!("sets {k}, where packages come from"))
        }
        _ => None,
    }
}

/// What the script carries that makes a configuration change hostile.
struct Signs<'t> {
    remote: Option<(Node<'t>, String)>,
    unguarded: Option<(Node<'t>, String)>,
    folder_open: bool,
    git_runner: Option<String>,
    foreign_index: Option<String>,
    sends: bool,
}

impl<'t> Analyzer<'t> {
    /// MB943 and MB218 over the writes and commands of the file.
    pub(super) fn check_agent_config(&mut self, fx: &Effects<'t>) {
        // Both scan every literal of the file, and most files write no
        // developer-tool configuration: computed at the first judgement
        // that needs them, not before (a fifth of the assessment's time
        // on ordinary code went here).
        let signs = OnceCell::new();
        let named = OnceCell::new();
        let named = || {
            named.get_or_init(|| {
                let mut path = String::new();
                fx.texts()
                    .iter()
                    .filter_map(|(_, t)| {
                        named_kind(t, &mut path)
                            .map(|k| (format!("a computed path (the script names {t})"), k))
                    })
                    .collect::<Vec<(String, Kind)>>()
            })
        };
        let mut judged: Vec<String> = Vec::new();
        for w in &fx.writes {
            let known: Vec<(String, Kind)> = w
                .paths
                .iter()
                .filter_map(|p| kind_of(p).map(|k| (p.clone(), k)))
                .collect();
            let targets = if known.is_empty() && w.paths.iter().all(|p| p == "*") {
                // A path the folder could not follow (a dict of
                // destinations): judged by the configuration files the
                // script names.
                named().clone()
            } else {
                known
            };
            for (p, kind) in targets {
                if judged.contains(&p) {
                    continue;
                }
                let signs = signs.get_or_init(|| self.agent_signs(fx));
                if self.judge_agent_write(&p, kind, w.call, signs) {
                    judged.push(p);
                    break;
                }
            }
        }
        for c in &fx.commands {
            if let Some(what) = tool_config_change(&c.line) {
                let signs = signs.get_or_init(|| self.agent_signs(fx));
                self.judge_tool_command(&c.line, what, c.call, signs);
            }
        }
    }

    fn agent_signs(&self, fx: &Effects<'t>) -> Signs<'t> {
        let found = |pred: &dyn Fn(&str) -> bool| fx.text_where(pred).map(|(n, t)| (n, shorten(t)));
        let remote = found(&|t| remote_code(t));
        let unguarded = found(&|t| UNGUARDED.iter().any(|u| t.contains(u)));
        let folder_open = fx.text_where(|t| t.contains("folderopen")).is_some();
        let git_runner = fx
            .texts()
            .iter()
            .find_map(|(_, t)| GIT_RUNNERS.iter().find(|g| t.contains(*g)))
            .map(|g| g.to_string());
        let has_index_key = fx
            .text_where(|t| INDEX_KEYS.iter().any(|k| t.contains(k)))
            .is_some();
        let foreign_index = fx
            .texts()
            .iter()
            .filter_map(|(_, t)| url_host(t))
            .find(|h| !DEFAULT_INDEXES.iter().any(|d| h.ends_with(d)))
            .filter(|_| has_index_key)
            .map(str::to_string);
        Signs {
            remote,
            unguarded,
            folder_open,
            git_runner,
            foreign_index,
            // A hook or wrapper kept in a string that uploads files with
            // curl sends as surely as the script's own requests.
            sends: self.signs.network_send.is_some() || fx.text_where(uploads_files).is_some(),
        }
    }

    /// Judges one write of a developer-tool configuration; true when a
    /// finding was made.
    fn judge_agent_write(&mut self, p: &str, kind: Kind, at: Node<'t>, s: &Signs<'t>) -> bool {
        let searched = found_by_search(p);
        let remote = s
            .remote
            .as_ref()
            .map(|(n, t)| format!("`{t}` (line {})", n.start_position().row + 1));
        let hostile = remote.clone().or_else(|| {
            if searched {
                Some("projects found by searching the disk".into())
            } else if s.sends {
                Some("a send of data over the network".into())
            } else {
                None
            }
        });
        let weakens: Option<String> = match kind {
            Kind::Instructions if searched => {
                Some("plants instructions into other projects' agent files".into())
            }
            Kind::Instructions if global_memory(p) => {
                Some("rewrites an agent's global memory".into())
            }
            Kind::Settings if remote.is_some() => {
                Some("registers a server or setting that runs remote code".into())
            }
            Kind::Settings => s
                .unguarded
                .as_ref()
                .map(|(_, t)| format!("lets the agent act unasked ({t})")),
            Kind::Tasks if s.folder_open => {
                Some("adds a task that runs when the folder is opened".into())
            }
            Kind::Git => s
                .git_runner
                .as_ref()
                .map(|g| format!("sets {g}, a program git runs")),
            Kind::PackageIndex => s
                .foreign_index
                .as_ref()
                .map(|h| format!("points installs at {h}")),
            _ => None,
        };
        let Some(what) = weakens else { return false };
        match hostile {
            Some(why) => {
                let detail = format!("writes {p}: {what}, in a script with {why}");
                self.add("MB943", at, detail);
            }
            None => self.add("MB218", at, format!("writes {p}: {what}")),
        }
        true
    }

    /// Judges a developer tool's configuration change (`what`) run as a
    /// command line.
    fn judge_tool_command(&mut self, line: &str, what: String, at: Node<'t>, s: &Signs<'t>) {
        let shown = shorten(line);
        if s.remote.is_some() || s.sends {
            let detail = format!("runs `{shown}`: {what}, in a script that also fetches or sends");
            self.add("MB943", at, detail);
        } else {
            self.add("MB218", at, format!("runs `{shown}`: {what}"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `named_kind` turns away literals without a dot unless they end like
    /// one of the names without one, listed in `DOTLESS_KINDS`.
    #[test]
    fn named_kinds_without_a_dot_are_listed() {
        let dotless: Vec<&str> = KINDS
            .iter()
            .map(|(end, _)| *end)
            .filter(|end| !end.contains('.'))
            .collect();
        assert_eq!(dotless, DOTLESS_KINDS);
        assert!(INSTRUCTION_DIRS.iter().all(|d| d.contains('.')));
        let mut path = String::new();
        assert!(named_kind("~/.cursor/mcp.json", &mut path).is_some());
        assert!(named_kind("/etc/gitconfig", &mut path).is_some());
        assert!(named_kind("etc/gitconfig", &mut path).is_some());
        assert!(named_kind("mcp", &mut path).is_none());
    }

    #[test]
    fn hosts_of_urls() {
        assert_eq!(url_host("https://a.example/x"), Some("a.example"));
        assert_eq!(url_host("ftp://a"), None);
    }
}
