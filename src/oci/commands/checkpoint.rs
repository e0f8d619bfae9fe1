//! `checkpoint` and `restore`: runc's CRIU verbs, which maibox does not
//! implement. They exist so that a caller (containerd's `ctr c checkpoint`,
//! Kubernetes' container checkpoint API, runc's help tests) gets a clear "not
//! supported by maibox" with a non-zero status instead of a parse error, and
//! so that `-h` shows their flags as runc's do. runc's flags are accepted (a
//! caller passes them as it would to runc) and change nothing: the verb fails
//! before it looks at any container.

use std::path::PathBuf;

use clap::Args;

use crate::oci::error::OciError;

/// The CRIU flags runc 1.1's `checkpoint` and `restore` share, declared once
/// and flattened into both.
#[derive(Args, Debug)]
pub struct CriuArgs {
    /// Path to criu image files (saved by checkpoint, read by restore).
    #[arg(long)]
    pub image_path: Option<PathBuf>,
    /// Path for saving work files and logs.
    #[arg(long)]
    pub work_path: Option<PathBuf>,
    /// Allow open tcp connections.
    #[arg(long)]
    pub tcp_established: bool,
    /// Allow external unix sockets.
    #[arg(long)]
    pub ext_unix_sk: bool,
    /// Allow shell jobs.
    #[arg(long)]
    pub shell_job: bool,
    /// Handle file locks, for safety.
    #[arg(long)]
    pub file_locks: bool,
    /// Cgroups mode: soft, full or strict.
    #[arg(long)]
    pub manage_cgroups_mode: Option<String>,
    /// Create a namespace, but do not restore its properties.
    #[arg(long)]
    pub empty_ns: Vec<String>,
    /// Enable auto deduplication of memory images.
    #[arg(long)]
    pub auto_dedup: bool,
    /// Use userfaultfd to lazily restore memory pages.
    #[arg(long)]
    pub lazy_pages: bool,
}

/// runc 1.1's `checkpoint` flags.
#[derive(Args, Debug)]
pub struct CheckpointArgs {
    #[command(flatten)]
    pub criu: CriuArgs,
    /// Path for previous criu image files in pre-dump.
    #[arg(long)]
    pub parent_path: Option<PathBuf>,
    /// Leave the process running after checkpointing.
    #[arg(long)]
    pub leave_running: bool,
    /// Criu writes \0 to this fd once lazy-pages is ready.
    #[arg(long)]
    pub status_fd: Option<i32>,
    /// ADDRESS:PORT of the page server.
    #[arg(long)]
    pub page_server: Option<String>,
    /// Dump the container's memory information only, leave it running.
    #[arg(long)]
    pub pre_dump: bool,
    pub id: String,
}

/// runc 1.1's `restore` flags.
#[derive(Args, Debug)]
pub struct RestoreArgs {
    #[command(flatten)]
    pub criu: CriuArgs,
    /// Path to an AF_UNIX socket to receive the pty master.
    #[arg(long)]
    pub console_socket: Option<PathBuf>,
    /// The bundle directory.
    #[arg(long, short = 'b')]
    pub bundle: Option<PathBuf>,
    /// Detach from the container's process.
    #[arg(long, short = 'd')]
    pub detach: bool,
    /// File to write the process id to.
    #[arg(long)]
    pub pid_file: Option<PathBuf>,
    /// Do not use a subreaper to reap reparented processes.
    #[arg(long)]
    pub no_subreaper: bool,
    /// Do not use pivot root to jail the process inside the rootfs.
    #[arg(long)]
    pub no_pivot: bool,
    /// Label for the restored process's LSM profile.
    #[arg(long)]
    pub lsm_profile: Option<String>,
    /// Label for the restored mounts' LSM context.
    #[arg(long)]
    pub lsm_mount_context: Option<String>,
    pub id: String,
}

/// Why: checkpointing needs CRIU, which dumps and rebuilds a process tree
/// from outside it; maibox builds its containers with its own setup chain and
/// has nothing to restore one into.
const WHY: &str = "maibox has no CRIU integration, so a container cannot be checkpointed \
                   or restored (use runc for containers that need it)";

/// `checkpoint`: refused, the container untouched.
pub fn checkpoint(a: &CheckpointArgs) -> Result<(), OciError> {
    Err(OciError::Unsupported {
        verb: "checkpoint",
        id: a.id.clone(),
        why: WHY,
    })
}

/// `restore`: refused, nothing created.
pub fn restore(a: &RestoreArgs) -> Result<(), OciError> {
    Err(OciError::Unsupported {
        verb: "restore",
        id: a.id.clone(),
        why: WHY,
    })
}
