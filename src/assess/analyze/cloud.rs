//! Cloud accounts turned against their owners (MB949, MB221): the control
//! plane asked, through an SDK (boto3, google-cloud) or a CLI (aws, gcloud,
//! az, gsutil), to hand access to someone else (admin policies, keys for
//! another user, owner bindings), to open resources to the world (ingress
//! from 0.0.0.0/0, public buckets), to stop recording (CloudTrail,
//! GuardDuty, Config, flow logs, log sinks), to launch machines that fetch
//! and run code, or to copy every bucket elsewhere. One such change to one
//! named resource is HIGH; logging switched off, two kinds of change, a
//! change applied to everything a listing returns, or one made with
//! credentials taken from the host's files or the metadata service is
//! BLOCKED. Listing, tagging and rotating one's own key change nothing of
//! this.

use super::args::Args;
use super::calls::{arg_values, kwarg};
use super::effects::Effects;
use super::literal::shorten;
use super::names::runs_command;
use super::needles::{CREDENTIAL, METADATA};
use super::{line, Analyzer, CallSite, Node};

/// What a control-plane change does to the account.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Abuse {
    /// Access handed out: admin policies, keys for another, owner roles.
    Access,
    /// Resources opened to anyone on the internet.
    Exposure,
    /// Audit and detection switched off.
    Logging,
    /// Machines launched to run fetched code.
    Compute,
    /// Every bucket copied to another one.
    Copy,
}

struct Change<'t> {
    at: Node<'t>,
    kind: Abuse,
    what: String,
    repeated: bool,
}

/// SDK methods that switch audit and detection off.
const LOGGING_OFF: &[(&str, &str)] = &[
    ("stop_logging", "stops a CloudTrail trail"),
    ("delete_trail", "deletes a CloudTrail trail"),
    ("delete_detector", "deletes a GuardDuty detector"),
    (
        "disassociate_from_master_account",
        "detaches GuardDuty from its administrator",
    ),
    ("stop_configuration_recorder", "stops the Config recorder"),
    (
        "delete_configuration_recorder",
        "deletes the Config recorder",
    ),
    ("delete_flow_logs", "deletes VPC flow logs"),
    ("delete_log_group", "deletes a log group"),
    ("disable_security_hub", "disables Security Hub"),
    ("delete_sink", "deletes a log sink"),
];

/// CLI subcommands that switch audit and detection off.
const CLI_LOGGING_OFF: &[&str] = &[
    "cloudtrail stop-logging",
    "cloudtrail delete-trail",
    "guardduty delete-detector",
    "configservice stop-configuration-recorder",
    "ec2 delete-flow-logs",
    "logs delete-log-group",
    "logging sinks delete",
    "monitor diagnostic-settings delete",
];

/// Programs that drive a cloud's control plane.
const CLOUD_CLIS: &[&str] = &["aws", "gcloud", "az", "gsutil"];

/// Words in a policy or a role that amount to everything.
const ADMIN_GRANTS: &[&str] = &[
    "administratoraccess",
    "iamfullaccess",
    "roles/owner",
    "roles/editor",
    "roles/iam.",
];

fn world(texts: &[String]) -> bool {
    texts
        .iter()
        .any(|t| t.contains("0.0.0.0/0") || t.contains("::/0"))
}

fn has(texts: &[String], needle: &str) -> bool {
    texts.iter().any(|t| t.contains(needle))
}

/// A bucket policy or ACL that lets anyone read.
fn public(texts: &[String]) -> bool {
    let principal_any = has(texts, "principal") && texts.iter().any(|t| t == "*");
    principal_any
        || [
            "public-read",
            "authenticated-read",
            "allusers",
            "allauthenticatedusers",
            "\"principal\": \"*\"",
            "\"principal\":\"*\"",
        ]
        .iter()
        .any(|n| has(texts, n))
}

/// A start-up script that fetches something.
fn fetches(texts: &[String]) -> bool {
    ["curl ", "wget ", "http://", "https://", "invoke-webrequest"]
        .iter()
        .any(|n| has(texts, n))
}

impl<'t> Analyzer<'t> {
    /// MB949 and MB221 over SDK calls and cloud command lines.
    pub(super) fn check_cloud(&mut self, fx: &Effects<'t>) {
        let sdk = self.imports_any_module(&["boto3", "botocore", "google"]);
        let mut changes = Vec::new();
        let runs = self.runs_commands();
        let lists_buckets = sdk && self.calls_method("list_buckets");
        for site in &self.calls {
            let by_sdk = sdk.then(|| self.sdk_change(site, lists_buckets)).flatten();
            let by_cli = || {
                runs.then(|| self.cloud_argv(site))
                    .flatten()
                    .and_then(|cmd| cli_change(&cmd))
            };
            for (kind, what) in by_sdk.into_iter().chain(by_cli()) {
                changes.push(Change {
                    at: site.node,
                    kind,
                    what,
                    repeated: self.repeated(site),
                });
            }
        }
        for c in &fx.commands {
            if let Some((kind, what)) = cli_change(&c.line) {
                if !changes.iter().any(|x| x.at == c.call) {
                    changes.push(Change {
                        at: c.call,
                        kind,
                        what,
                        repeated: false,
                    });
                }
            }
        }
        if !changes.is_empty() {
            self.judge_cloud(fx, changes);
        }
    }

    /// Does the script start a process at all?
    pub(super) fn runs_commands(&self) -> bool {
        self.calls.iter().any(|c| {
            self.callee(c.node, c.scope)
                .is_some_and(|q| runs_command(&q))
        })
    }

    pub(super) fn calls_method(&self, name: &str) -> bool {
        self.call_named(name).is_some()
    }

    /// The first call of a method by this name.
    pub(super) fn call_named(&self, method: &str) -> Option<Node<'t>> {
        self.calls
            .iter()
            .find(|c| c.method == Some(method))
            .map(|c| c.node)
    }

    /// The change an SDK call makes, if it is one of these.
    fn sdk_change(&self, site: &CallSite<'t>, lists_buckets: bool) -> Option<(Abuse, String)> {
        let m = site.method?;
        if let Some((_, what)) = LOGGING_OFF.iter().find(|(n, _)| *n == m) {
            return Some((Abuse::Logging, (*what).into()));
        }
        let (pos, kw) = self.args(site.node);
        let texts = || {
            let mut out = Vec::new();
            for a in arg_values(pos, kw) {
                out.extend(self.texts_in(a, site.scope));
            }
            out
        };
        let (kind, what) = match m {
            "authorize_security_group_ingress" if world(&texts()) => {
                (Abuse::Exposure, "opens a security group to 0.0.0.0/0")
            }
            "put_bucket_acl" | "put_object_acl" | "put_bucket_policy" if public(&texts()) => {
                (Abuse::Exposure, "makes a bucket readable by anyone")
            }
            "delete_public_access_block" => {
                (Abuse::Exposure, "removes a bucket's public access block")
            }
            "put_public_access_block" if self.text(site.node).contains("False") => {
                (Abuse::Exposure, "turns a bucket's public access block off")
            }
            "make_public" => (Abuse::Exposure, "makes a bucket or object public"),
            "attach_user_policy"
            | "attach_role_policy"
            | "attach_group_policy"
            | "put_user_policy"
            | "put_role_policy"
            | "put_group_policy"
                if ADMIN_GRANTS.iter().any(|g| has(&texts(), g)) =>
            {
                (Abuse::Access, "grants administrator access")
            }
            "create_access_key"
                if kwarg(kw, "UserName").is_some_and(|u| self.another_user(u, site.scope)) =>
            {
                (Abuse::Access, "creates an access key for another user")
            }
            "create_login_profile" => (Abuse::Access, "gives a user a console password"),
            "run_instances" | "request_spot_instances" | "create_fleet"
                if kwarg(kw, "UserData")
                    .is_some_and(|u| fetches(&self.texts_in(u, site.scope))) =>
            {
                let what = "launches instances whose start-up script fetches code";
                (Abuse::Compute, what)
            }
            "copy_object" | "put_object" | "upload_fileobj" | "upload_file"
                if lists_buckets && self.copies_to_fixed_bucket(site, (pos, kw)) =>
            {
                let what = "copies the listed buckets' objects into a fixed bucket";
                (Abuse::Copy, what)
            }
            _ => return None,
        };
        Some((kind, what.into()))
    }

    /// A copy or an upload (after objects were read back, for an upload) into a bucket
    /// whose name folds to a constant.
    fn copies_to_fixed_bucket(&self, site: &CallSite<'t>, (pos, kw): Args<'t>) -> bool {
        (site.method == Some("copy_object") || self.reads_objects())
            && kwarg(kw, "Bucket")
                .or_else(|| pos.get(1).copied())
                .is_some_and(|b| self.fold(b, site.scope, 0).is_some())
    }

    /// Objects read back out of storage (`get_object`, `download_fileobj`):
    /// with a listing of the buckets, a put to a fixed bucket is a copy.
    fn reads_objects(&self) -> bool {
        self.calls_method("get_object") || self.calls_method("download_fileobj")
    }

    /// A user name that is not the caller's own: a literal, or anything
    /// not read back from `get_user`/`get_caller_identity`.
    fn another_user(&self, u: Node<'t>, scope: usize) -> bool {
        let own = self
            .bound_value(u, scope, |v| {
                let t = self.text(v);
                t.contains("get_user") || t.contains("get_caller_identity")
            })
            .is_some();
        !own
    }

    /// A call whose arguments spell a cloud CLI's command line (`run("gcloud",
    /// "projects", ...)` through a helper, or an argument list).
    fn cloud_argv(&self, site: &CallSite<'t>) -> Option<String> {
        let (pos, _) = self.args(site.node);
        let first = *pos.first()?;
        if first.kind().is_sequence() {
            // The words are joined by spaces already: judged as they are,
            // not split into a vector of copies and joined again.
            let line = self.command_words(first, site.scope)?;
            let head = line.split(' ').next()?.rsplit('/').next()?;
            return CLOUD_CLIS
                .contains(&head)
                .then(|| line.to_ascii_lowercase());
        }
        let words: Vec<String> = {
            // The count first: folding the first argument of every call, in
            // any script that runs a command, was most of this family's cost.
            if pos.len() < 3 {
                return None;
            }
            self.reset_budget();
            let head = self.fold(first, site.scope, 0)?;
            if !CLOUD_CLIS.contains(&head.as_str()) {
                return None;
            }
            pos.iter()
                .map(|a| {
                    self.reset_budget();
                    self.fold(*a, site.scope, 0).unwrap_or_else(|| "*".into())
                })
                .collect()
        };
        let head = words.first()?.rsplit('/').next()?;
        CLOUD_CLIS
            .contains(&head)
            .then(|| words.join(" ").to_ascii_lowercase())
    }

    /// BLOCKED or HIGH, by what the changes add up to.
    fn judge_cloud(&mut self, fx: &Effects<'t>, changes: Vec<Change<'t>>) {
        let cloud_file = |t: &str| {
            [".aws/credentials", ".config/gcloud", ".azure/"]
                .iter()
                .any(|c| t.contains(c))
        };
        let host_creds = fx
            .text_holding(CREDENTIAL)
            .and_then(|_| fx.text_where(cloud_file))
            .or_else(|| fx.text_holding(METADATA));
        let mut kinds: Vec<Abuse> = changes.iter().map(|c| c.kind).collect();
        kinds.dedup();
        kinds.sort_by_key(|k| *k as u8);
        kinds.dedup();
        let steps: Vec<String> = changes
            .iter()
            .take(4)
            .map(|c| format!("{} (line {})", c.what, line(c.at)))
            .collect();
        let steps = steps.join("; ");
        let why = if kinds.contains(&Abuse::Logging) {
            Some("the account's audit trail is switched off".to_string())
        } else if let Some((n, t)) = host_creds {
            Some(format!(
                "with credentials taken from this machine ({}, line {})",
                shorten(t),
                line(n)
            ))
        } else if kinds.len() >= 2 {
            Some(format!("{} kinds of change together", kinds.len()))
        } else if changes.iter().any(|c| c.repeated) {
            Some("to everything a listing returns".to_string())
        } else {
            None
        };
        let at = changes[0].at;
        match why {
            Some(why) => self.add("MB949", at, format!("{steps}: {why}")),
            None => self.add("MB221", at, steps),
        }
    }
}

/// The change a cloud CLI command line makes, if any.
fn cli_change(cmd: &str) -> Option<(Abuse, String)> {
    let head = cmd.split_whitespace().next()?;
    if !CLOUD_CLIS.contains(&head.rsplit('/').next()?) {
        return None;
    }
    let words = [cmd.to_string()];
    let short = shorten(cmd);
    if let Some(sub) = CLI_LOGGING_OFF.iter().find(|s| cmd.contains(*s)) {
        return Some((Abuse::Logging, format!("runs `{sub}`")));
    }
    let opens = [
        "firewall-rules",
        "authorize-security-group-ingress",
        "nsg rule",
        "security-group",
    ]
    .iter()
    .any(|s| cmd.contains(s));
    if (opens && world(&words))
        || public(&words)
        || cmd.contains("--public-access blob")
        || cmd.contains("--public-access container")
    {
        return Some((
            Abuse::Exposure,
            format!("`{short}` opens resources to anyone"),
        ));
    }
    let binds_admin = (cmd.contains("add-iam-policy-binding")
        || cmd.contains("role assignment create"))
        && (ADMIN_GRANTS.iter().any(|g| cmd.contains(g))
            || cmd.contains(" owner")
            || cmd.contains(" contributor"));
    let keys = cmd.contains("service-accounts keys create")
        || (cmd.contains("iam create-access-key") && cmd.contains("--user-name"))
        || cmd.contains("create-for-rbac");
    if binds_admin || keys {
        return Some((Abuse::Access, format!("`{short}` hands out access")));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::cli_change;

    #[test]
    fn cloud_command_lines() {
        for cmd in [
            "aws cloudtrail stop-logging --name main",
            "gcloud compute firewall-rules create x --source-ranges=0.0.0.0/0",
            "gsutil iam ch allusers:objectviewer gs://b",
            "gcloud projects add-iam-policy-binding p --member user:a@b.c --role roles/owner",
            "gcloud iam service-accounts keys create k.json --iam-account a@p.iam",
            "az ad sp create-for-rbac --role contributor",
        ] {
            assert!(cli_change(cmd).is_some(), "{cmd}");
        }
        for cmd in [
            "aws s3 ls",
            "gcloud compute firewall-rules create x --source-ranges=203.0.113.0/24",
            "gcloud projects add-iam-policy-binding p --member user:a@b.c --role roles/viewer",
            "aws configure set aws_access_key_id x",
        ] {
            assert!(cli_change(cmd).is_none(), "{cmd}");
        }
    }
}
