//! Cloud data and its backups deleted wholesale (MB963): every bucket the
//! account lists emptied and deleted, every snapshot, image or recovery
//! point a listing returns deleted. Retention tools delete too, but pick
//! what to delete by age (they read a creation or modification time) and
//! rarely take both the data and its backups: both at once, or either
//! with no age looked at, is a wiper for the cloud account.

use super::calls::kwarg;
use super::{line, Analyzer, Node, K};

/// SDK methods that delete stored objects or whole buckets.
const DATA_DELETES: &[&str] = &["delete_bucket", "delete_objects", "delete_blobs"];

/// SDK methods that delete backups: snapshots, images, recovery points.
const BACKUP_DELETES: &[&str] = &[
    "delete_snapshot",
    "delete_db_snapshot",
    "delete_db_cluster_snapshot",
    "delete_recovery_point",
    "delete_backup_vault",
    "deregister_image",
    "delete_backup",
];

/// Listings of every backup of a kind.
const BACKUP_LISTINGS: &[&str] = &[
    "describe_snapshots",
    "describe_db_snapshots",
    "describe_db_cluster_snapshots",
    "describe_images",
    "list_recovery_points_by_backup_vault",
    "list_backups",
];

/// Fields that hold when a resource was made or last changed: what a
/// retention rule compares against its cut-off.
const AGE_FIELDS: &[&str] = &[
    "starttime",
    "creationdate",
    "creationtime",
    "snapshotcreatetime",
    "lastmodified",
    "create_time",
    "time_created",
];

impl<'t> Analyzer<'t> {
    pub(super) fn check_cloud_wipe(&mut self) {
        if !self.imports_any_module(&["boto3", "botocore", "google"]) {
            return;
        }
        let (mut data, mut backup) = (None, None);
        for c in &self.calls {
            let Some(m) = c.method else {
                continue;
            };
            let wipes = DATA_DELETES.contains(&m)
                || (m == "delete" && self.deletes_objects(c.node))
                || (m == "delete_object" && self.deletes_versions(c.node));
            if wipes {
                data.get_or_insert(c.node);
            } else if BACKUP_DELETES.contains(&m) {
                backup.get_or_insert(c.node);
            }
        }
        let data = data.filter(|_| self.calls_method("list_buckets"));
        let backup = backup.filter(|_| BACKUP_LISTINGS.iter().any(|l| self.calls_method(l)));
        let by_age = || {
            self.lowered()
                .texts
                .iter()
                .any(|(_, v)| AGE_FIELDS.iter().any(|f| v.contains(f)))
        };
        let at = match (data, backup) {
            (Some(d), Some(_)) => d,
            (Some(n), None) | (None, Some(n)) if !by_age() => n,
            _ => return,
        };
        let detail = self.wipe_detail(data, backup);
        self.add("MB963", at, detail);
    }

    /// `bucket.objects.all().delete()`, `bucket.object_versions.delete()`:
    /// a collection of a bucket's objects deleted in one call.
    fn deletes_objects(&self, call: Node<'t>) -> bool {
        call.child(super::F::Function)
            .filter(|f| f.kind() == K::Attribute)
            .is_some_and(|f| {
                let t = self.text(f);
                t.contains(".objects") || t.contains(".object_versions")
            })
    }

    /// `delete_object(Bucket=b, Key=k, VersionId=v)` in a script that
    /// lists every version of a bucket's objects: the bucket's history
    /// deleted version by version, what versioning kept to restore from.
    fn deletes_versions(&self, call: Node<'t>) -> bool {
        const LISTING: &str = "list_object_versions";
        // Called, or asked of a paginator by name.
        let lists =
            || self.calls_method(LISTING) || self.lowered().texts.iter().any(|(_, t)| t == LISTING);
        kwarg(self.args(call).1, "VersionId").is_some() && lists()
    }

    fn wipe_detail(&self, data: Option<Node<'t>>, backup: Option<Node<'t>>) -> String {
        match (data, backup) {
            (Some(d), Some(b)) => format!(
                "deletes every bucket listed (line {}) and the backups (line {})",
                line(d),
                line(b)
            ),
            (Some(d), None) => format!(
                "deletes every bucket the account lists (line {}), whatever its age",
                line(d)
            ),
            (_, Some(b)) => format!(
                "deletes every backup a listing returns (line {}), whatever its age",
                line(b)
            ),
            _ => String::new(),
        }
    }
}
