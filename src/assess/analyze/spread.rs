//! Self-propagation through files (MB936): the script's own code (its file
//! read back, or the file itself copied) written into files found by walking
//! or globbing, onto removable media and network shares, into notebooks,
//! installed packages or start-up directories; hooks planted into the
//! repositories a walk finds. Copying itself to another machine is MB926
//! ([`super::lateral`]).

use super::flow::Source;
use super::io::FileWrite;
use super::literal::shorten;
use super::{taxonomy, Analyzer};

/// Is `p` somewhere a copy of a script spreads from, rather than the one
/// place an installer puts it? Its directory was found by walking a tree
/// (`**` before the last `/`; one unknown directory, `*`, is as likely a
/// project root a command printed), or it is a place
/// other people's code runs from (see [`taxonomy::spread_target`]).
fn spreads_to(p: &str) -> Option<&'static str> {
    if p == "<self>" || p.starts_with("<tmp:") {
        return None;
    }
    if let Some(what) = taxonomy::spread_target(p) {
        return Some(what);
    }
    let dir = p.rsplit_once('/').map(|(d, _)| d).unwrap_or("");
    dir.contains("**")
        .then_some("files found by walking directory trees")
}

impl<'t> Analyzer<'t> {
    /// MB936 for one write: the script's own code reaching a spreading
    /// target, or a hook planted into repositories found by walking.
    pub(super) fn check_spread(&mut self, w: &FileWrite<'t>) {
        if let Some(src) = w.data.get(Source::OwnCode) {
            if let Some((p, what)) = w.paths.iter().find_map(|p| spreads_to(p).map(|w| (p, w))) {
                let detail = format!(
                    "the script's own code (read at line {}: `{}`) is written to {p}: {what}",
                    src.start_position().row + 1,
                    shorten(self.text(src)),
                );
                return self.add("MB936", w.call, detail);
            }
        }
        let planted = w
            .paths
            .iter()
            .find(|p| p.contains("/.git/hooks") && p.contains("**"));
        if let Some(p) = planted {
            let detail = format!(
                "writes {p}: a hook into every repository a walk finds, run by whoever uses them"
            );
            self.add("MB936", w.call, detail);
        }
    }
}
