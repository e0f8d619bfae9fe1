//! The commands that only read and print: `assess`, `audit`, `doctor`, `seccomp` and
//! `policy`.

use crate::args::WithTool;
use crate::AuditCmd;
use maibox::assess::Verdict;
use maibox::config::{Config, TrustLevel};
use maibox::session::{read_bytes, Code, Source};
use maibox::Sandbox;
use std::io::Write;
use std::path::PathBuf;

pub fn assess(
    script: Option<PathBuf>,
    json: bool,
    fail_at: Option<Verdict>,
    rules: bool,
    config: Option<PathBuf>,
    with: &[WithTool],
) -> anyhow::Result<i32> {
    if rules {
        for r in maibox::assess::rules() {
            println!("{}", serde_json::to_string(r)?);
        }
        return Ok(0);
    }
    let (cfg, _) = Config::load(config.as_deref())?;
    let path = script.ok_or_else(|| anyhow::anyhow!("give a script to assess"))?;
    let source = if path.as_os_str() == "-" {
        Source::Stdin
    } else {
        Source::File(&path)
    };
    let code: Code = read_bytes(source)?;
    let a = Sandbox::new(cfg)
        .with_bandit(with.contains(&WithTool::Bandit))
        .assess(&code)?;
    if json {
        println!("{}", serde_json::to_string(&a)?);
    } else {
        print!("{}", maibox::assess::render_text(&a));
    }
    Ok(match fail_at {
        Some(at) if a.verdict >= at => 3,
        _ => 0,
    })
}

fn audit_dir(dir: Option<PathBuf>, config: Option<&std::path::Path>) -> anyhow::Result<PathBuf> {
    if let Some(d) = dir {
        return Ok(d);
    }
    if let Some(d) = std::env::var_os(maibox::session::audit::DIR_ENV).filter(|d| !d.is_empty()) {
        return Ok(d.into());
    }
    let (cfg, _) = Config::load(config)?;
    Ok(cfg.audit.resolved_dir()?)
}

pub fn audit_cmd(cmd: AuditCmd) -> anyhow::Result<i32> {
    let mut out = std::io::stdout().lock();
    match cmd {
        AuditCmd::Verify { dir, key, config } => {
            let d = audit_dir(dir, config.as_deref())?;
            let r = maibox::audit::verify_pinned(&d, key.as_deref())?;
            writeln!(out, "{r}")?;
            Ok(if r.ok { 0 } else { 1 })
        }
        AuditCmd::Show {
            run,
            since,
            last,
            json,
            dir,
            config,
        } => {
            let d = audit_dir(dir, config.as_deref())?;
            let filter = maibox::audit::ShowFilter {
                run: run.as_deref(),
                since: since.as_deref(),
                last,
            };
            maibox::audit::show(&d, filter, json, &mut out)?;
            Ok(0)
        }
        AuditCmd::Tail {
            follow,
            dir,
            config,
        } => {
            let d = audit_dir(dir, config.as_deref())?;
            maibox::audit::tail(&d, follow, &mut out)?;
            Ok(0)
        }
        AuditCmd::Key { dir, config } => {
            let d = audit_dir(dir, config.as_deref())?;
            writeln!(out, "{}", maibox::audit::key_fingerprint(&d)?)?;
            Ok(0)
        }
    }
}

pub fn doctor(json: bool) -> anyhow::Result<i32> {
    let checks = maibox::doctor::run_checks();
    if json {
        println!("{}", serde_json::to_string_pretty(&checks)?);
    } else {
        for c in &checks {
            let tag = match c.state {
                maibox::doctor::State::Ok => "ok  ",
                maibox::doctor::State::Warn => "warn",
                maibox::doctor::State::Fail => "FAIL",
            };
            println!("[{tag}] {:<16} {}", c.name, c.detail);
            if !c.advice.is_empty() {
                println!("       {:<16} fix: {}", "", c.advice);
            }
        }
    }
    let failed = checks
        .iter()
        .any(|c| c.state == maibox::doctor::State::Fail);
    Ok(if failed { 1 } else { 0 })
}

/// `maibox seccomp`: the syscalls a level's profile allows, and what it does with the rest.
pub fn seccomp(
    trust: Option<TrustLevel>,
    config: Option<PathBuf>,
    json: bool,
) -> anyhow::Result<i32> {
    let (cfg, _) = Config::load(config.as_deref())?;
    let t = trust.unwrap_or(cfg.default_trust);
    let p = &cfg.level(t).seccomp;
    let allowed = maibox::confine::allowed_syscalls(p, maibox::confine::NetAccess::Loopback);
    if json {
        println!(
            "{}",
            serde_json::json!({"trust": t, "default_action": p.default_action, "kill_on": p.kill_on, "deny": p.deny, "allowed": allowed})
        );
    } else {
        println!(
            "# {t}: {} syscalls allowed; everything else: {:?}; killed: {}",
            allowed.len(),
            p.default_action,
            if p.kill_on.is_empty() {
                "none".to_string()
            } else {
                p.kill_on.join(" ")
            }
        );
        for s in allowed {
            if maibox::confine::seccomp::ARG_CHECKED.contains(&s.as_str()) {
                println!("{s}  (argument-checked)");
            } else {
                println!("{s}");
            }
        }
    }
    Ok(0)
}

/// `maibox policy`: the effective policy for a trust level, as JSON.
pub fn policy(trust: Option<TrustLevel>, config: Option<PathBuf>) -> anyhow::Result<i32> {
    let (cfg, _) = Config::load(config.as_deref())?;
    let t = trust.unwrap_or(cfg.default_trust);
    let p = maibox::policy::Policy::build(&cfg, t, &Default::default())?;
    println!("{}", serde_json::to_string_pretty(&p)?);
    Ok(0)
}

/// `maibox serve`: until SIGTERM or SIGINT.
pub fn serve(
    socket: Option<PathBuf>,
    config: Option<PathBuf>,
    warm_mode: Option<maibox::config::WarmMode>,
) -> anyhow::Result<i32> {
    let (mut cfg, _) = Config::load(config.as_deref())?;
    if let Some(m) = warm_mode {
        cfg.server.warm_mode = m;
    }
    let opts = maibox::serve::ServeOptions { socket };
    maibox::serve::serve(cfg, opts, &|line| eprintln!("maibox serve: {line}"))?;
    Ok(0)
}
