//! The container's cgroup, made and kept by the OCI front door: maibox's
//! limits group ([`RunCgroup`]) at the spec's path, the side groups the verbs
//! need (freezer, blkio, cpuacct, cpuset, the unified hierarchy of a hybrid
//! host), the spec's exact CPU and memory values, and its device rules.

use std::path::{Path, PathBuf};

use oci_spec::runtime::LinuxResources;

use super::spec::OciCgroup;
use crate::cgroup::freezer::frozen;
use crate::cgroup::hierarchy::{existing_groups, has_v1, v1_mount, v2_mount};
use crate::cgroup::resources::{blkio, cpuset, devfilter, devices, enable_v2_controller, Swap};
use crate::cgroup::{CgroupError, Layout, RunCgroup};

/// The container's cgroup: maibox's limits group plus, for device rules, the v1
/// devices group. Removed on drop unless [`ContainerCgroup::persist`]ed.
pub struct ContainerCgroup {
    limits: Option<RunCgroup>,
    /// v1 groups outside maibox's own hierarchies: devices, freezer, cpuacct,
    /// cpuset, and the unified group of a hybrid host.
    extra: Vec<PathBuf>,
    /// Groups that existed before this create: never removed by its failure.
    preexisting: Vec<PathBuf>,
    /// Device rules, applied by [`ContainerCgroup::apply_devices`].
    devices: Option<(DeviceRules, Vec<(bool, String)>)>,
    /// Processes the groups held before this create (another container's):
    /// the caller warns, as runc 1.1 does.
    pub found_processes: usize,
}

enum DeviceRules {
    /// A v1 devices group.
    V1(PathBuf),
    /// A v2 group, for a device program.
    V2(PathBuf),
}

impl ContainerCgroup {
    /// Creates the container's groups as `want` says, with the exact values of
    /// `resources` (see [`apply_exact`]) and memory+swap by `swap`'s rule.
    /// Errors name the group.
    pub fn create(
        want: &OciCgroup,
        resources: Option<&LinuxResources>,
        swap: Swap,
    ) -> Result<ContainerCgroup, String> {
        let refuse = |e: String| format!("container cgroup {}: {e}", want.rel.display());
        let layout = crate::cgroup::detect();
        // A failed `create` empties but leaves these, which are someone else's.
        let preexisting = existing_groups(&want.rel);
        let found_processes = crate::cgroup::processes_in(&preexisting);
        let mut base = want.limits;
        if swap == Swap::AsGiven {
            // maibox's own limits withhold swap: the memory limit goes with the
            // spec's swap instead, in the order the kernel takes them.
            base.memory_bytes = 0;
        }
        let limits = RunCgroup::create_at(&layout, &want.rel, base).map_err(|e| {
            let hint = match nix::unistd::geteuid().is_root() {
                true => "",
                // A rootless caller asked for limits or a group it cannot have.
                false => " (the runtime is not root: give it a cgroupsPath in a subtree this user may write, or leave limits, devices and cgroupsPath out of the bundle)",
            };
            refuse(format!("{e}{hint}"))
        })?;
        if let Some(r) = resources {
            apply_exact(&limits.paths(), r, swap).map_err(refuse)?;
        }
        let mut group = ContainerCgroup {
            limits: Some(limits),
            extra: Vec::new(),
            preexisting,
            devices: None,
            found_processes,
        };
        group
            .extra
            .extend(create_side_groups(&want.rel, &layout).map_err(refuse)?);
        // A group someone froze beforehand would freeze the init mid-setup (and the
        // runtime with it, waiting): refused, as runc does.
        if frozen(&group.paths()) {
            return Err(refuse(
                "the container's cgroup unexpectedly frozen (thaw it or choose another cgroupsPath)"
                    .into(),
            ));
        }
        group.add_cpuset(want, &layout).map_err(refuse)?;
        if !want.blkio.is_empty() {
            group.add_blkio(want, &layout).map_err(refuse)?;
        }
        if !want.devices.is_empty() {
            group.add_device_rules(want, &layout).map_err(refuse)?;
        }
        Ok(group)
    }

    /// On v1 the cpuset group is made in any case (inheriting its parent's CPUs
    /// and memory nodes), so that `update --cpuset-cpus` has it; on v2 the
    /// container's group takes cpuset files once the controller is enabled.
    fn add_cpuset(&mut self, want: &OciCgroup, layout: &Layout) -> Result<(), String> {
        let v1_cpuset = matches!(layout, Layout::V1 { .. }) && has_v1("cpuset");
        let cpuset = want
            .cpuset
            .clone()
            .or_else(|| v1_cpuset.then(|| (String::new(), String::new())));
        let Some((cpus, mems)) = &cpuset else {
            return Ok(());
        };
        let v2_dir = match layout {
            Layout::V2 { .. } => self
                .limits
                .as_ref()
                .and_then(|l| l.paths().into_iter().next()),
            _ => None,
        };
        self.extra.extend(
            cpuset::apply_cpuset(&want.rel, cpus, mems, v2_dir.as_deref())
                .map_err(|e| format!("cpuset: {e}"))?,
        );
        Ok(())
    }

    fn add_blkio(&mut self, want: &OciCgroup, layout: &Layout) -> Result<(), String> {
        if let (Layout::V2 { .. }, Some(dir)) = (layout, self.paths().first().cloned()) {
            enable_v2_controller(&dir, "io").map_err(|e| format!("blockIO: {e}"))?;
        }
        blkio::apply(&self.paths(), &want.blkio).map_err(|e| format!("blockIO: {e}"))
    }

    /// The rules are written once the init has made the container's device
    /// nodes (as runc does, see [`Self::apply_devices`]): a "deny all" would
    /// stop its mknod.
    fn add_device_rules(&mut self, want: &OciCgroup, layout: &Layout) -> Result<(), String> {
        match devices::devices_group(&want.rel)? {
            Some(d) => {
                self.extra.push(d.clone());
                self.devices = Some((DeviceRules::V1(d), want.devices.clone()));
            }
            // cgroup v2: the rules become a device program on the container's group.
            None if matches!(layout, Layout::V2 { .. }) => {
                let dirs = self.limits.as_ref().map(|l| l.paths()).unwrap_or_default();
                let dir = dirs
                    .first()
                    .ok_or_else(|| "no cgroup v2 directory for the device rules".to_string())?;
                self.devices = Some((DeviceRules::V2(dir.clone()), want.devices.clone()));
            }
            None => {
                return Err(
                    "the spec gives device rules but this host has neither a v1 devices controller nor cgroup v2 to enforce them".into(),
                )
            }
        }
        Ok(())
    }
    pub fn attach(&self, pid: i32) -> Result<(), CgroupError> {
        if let Some(l) = &self.limits {
            l.attach(pid)?;
        }
        for d in &self.extra {
            let f = d.join("cgroup.procs");
            std::fs::write(&f, pid.to_string()).map_err(|e| CgroupError::Io {
                step: "attach the container to its devices/freezer cgroup",
                path: f,
                source: e,
            })?;
        }
        Ok(())
    }

    pub fn apply_devices(&self) -> Result<(), String> {
        match &self.devices {
            Some((DeviceRules::V1(dir), rules)) => devices::write_device_rules(dir, rules),
            Some((DeviceRules::V2(dir), rules)) => devfilter::attach(dir, rules),
            None => Ok(()),
        }
    }

    pub fn paths(&self) -> Vec<PathBuf> {
        let mut v = self.limits.as_ref().map(|l| l.paths()).unwrap_or_default();
        v.extend(self.extra.iter().cloned());
        v
    }

    pub fn persist(mut self) {
        self.extra.clear();
        if let Some(l) = self.limits.take() {
            l.persist();
        }
    }
}

impl Drop for ContainerCgroup {
    fn drop(&mut self) {
        let ours: Vec<PathBuf> = std::mem::take(&mut self.extra)
            .into_iter()
            .filter(|d| !self.preexisting.contains(d))
            .collect();
        let _ = crate::cgroup::remove_dirs(&ours);
    }
}

/// On v1 and hybrid hosts, the groups at `rel` an OCI container joins besides
/// maibox's limit controllers (`layout`), each for a verb that needs it: the
/// freezer (`pause`), blkio (block I/O limits, also for `update`), cpuacct
/// when it is mounted apart from cpu (CPU usage for
/// `events`), and on a hybrid host the unified (v2) hierarchy, where runc puts
/// its containers too and tools look for them. v2 groups do all of this
/// themselves: nothing on a v2 host.
pub fn create_side_groups(rel: &Path, layout: &Layout) -> Result<Vec<PathBuf>, String> {
    let Layout::V1 { controllers } = layout else {
        return Ok(Vec::new());
    };
    let mut mounts: Vec<PathBuf> = Vec::new();
    mounts.extend(v1_mount("freezer"));
    mounts.extend(v1_mount("blkio"));
    if !controllers.contains_key("cpuacct") {
        mounts.extend(v1_mount("cpuacct"));
    }
    mounts.extend(v2_mount());
    let mut dirs = Vec::new();
    for m in mounts {
        let dir = m.join(rel);
        if let Err(e) = std::fs::create_dir_all(&dir) {
            let _ = crate::cgroup::remove_dirs(&dirs);
            return Err(format!("create {}: {e}", dir.display()));
        }
        dirs.push(dir);
    }
    Ok(dirs)
}

/// The settings of `r` that maibox's own limits round or leave out, written as
/// the spec gives them to the container's groups `dirs`: the CPU quota with its
/// own period (maibox's limits keep only their ratio), CPU shares, the
/// realtime budget (v1), the memory reservation (a soft limit) and, by runc's
/// rule ([`Swap::AsGiven`]), the memory limit with the spec's memory+swap.
pub fn apply_exact(dirs: &[PathBuf], r: &LinuxResources, swap: Swap) -> Result<(), String> {
    let mut c = crate::cgroup::resources::Changes::default();
    if let Some(cpu) = r.cpu() {
        c.shares = cpu.shares().filter(|s| *s > 0);
        c.quota = cpu.quota().filter(|q| *q > 0);
        c.period = cpu.period().filter(|p| *p > 0);
        c.rt_period = cpu.realtime_period().filter(|p| *p > 0);
        c.rt_runtime = cpu.realtime_runtime().filter(|r| *r > 0);
    }
    if let Some(m) = r.memory() {
        c.reservation = m.reservation().filter(|v| *v > 0);
        if swap == Swap::AsGiven {
            // runc's 0 is "not given"; -1 is "unlimited".
            c.memory = m.limit().filter(|v| *v != 0);
            c.swap = m.swap().filter(|v| *v != 0);
        }
    }
    crate::cgroup::resources::apply(dirs, &c, swap)
}
