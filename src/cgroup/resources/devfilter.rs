//! Device rules on cgroup v2: a `BPF_PROG_TYPE_CGROUP_DEVICE` program attached
//! to the container's cgroup, which the kernel asks on every open and mknod of a
//! device node (v2 has no devices controller files).
//!
//! The program is emitted here instruction by instruction, as runc and youki do
//! too: the crates that load eBPF (aya, libbpf-rs) bring a toolchain or a C
//! library for what is a few dozen fixed instructions and two bpf() calls.
//!
//! Semantics are those of the v1 controller the rules were written for: the last
//! rule that matches a request decides. An allow rule matches when it grants
//! every access asked for; a deny rule matches when it takes away any of them.
//! With no matching rule the request is allowed (a v1 group starts open; specs
//! begin with "deny all").

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;

/// One eBPF instruction (`struct bpf_insn`).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Insn {
    code: u8,
    /// dst_reg in the low nibble, src_reg in the high one.
    regs: u8,
    off: i16,
    imm: i32,
}

const LDX_MEM_W: u8 = 0x61;
const ALU64_MOV_X: u8 = 0xbf;
const ALU64_MOV_K: u8 = 0xb7;
const ALU64_AND_K: u8 = 0x57;
const ALU64_RSH_K: u8 = 0x77;
const JMP_JNE_K: u8 = 0x55;
const JMP_JEQ_K: u8 = 0x15;
const JMP_EXIT: u8 = 0x95;

// include/uapi/linux/bpf.h
const BPF_PROG_LOAD: libc::c_long = 5;
const BPF_PROG_ATTACH: libc::c_long = 8;
const BPF_PROG_TYPE_CGROUP_DEVICE: u32 = 15;
const BPF_CGROUP_DEVICE: u32 = 6;
const BPF_F_ALLOW_MULTI: u32 = 2;
const DEV_BLOCK: i32 = 1;
const DEV_CHAR: i32 = 2;
const ACC_MKNOD: i32 = 1;
const ACC_READ: i32 = 2;
const ACC_WRITE: i32 = 4;

fn ins(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Insn {
    Insn {
        code,
        regs: dst | (src << 4),
        off,
        imm,
    }
}

/// A rule in the v1 syntax maibox keeps them in ("c 1:3 rwm", "a *:* rwm").
#[derive(Debug, Clone, PartialEq, Eq)]
struct Rule {
    allow: bool,
    kind: Option<i32>,
    major: Option<i32>,
    minor: Option<i32>,
    access: i32,
}

fn parse(allow: bool, rule: &str) -> Result<Rule, String> {
    let bad = || format!("device rule {rule:?}: expected TYPE MAJOR:MINOR ACCESS");
    let mut parts = rule.split_whitespace();
    let kind = match parts.next().ok_or_else(bad)? {
        "a" => None,
        "c" => Some(DEV_CHAR),
        "b" => Some(DEV_BLOCK),
        _ => return Err(bad()),
    };
    let num = |s: &str| -> Result<Option<i32>, String> {
        match s {
            "*" => Ok(None),
            n => n.parse::<i32>().map(Some).map_err(|_| bad()),
        }
    };
    let (major, minor) = match parts.next() {
        Some(mm) => {
            let (a, b) = mm.split_once(':').ok_or_else(bad)?;
            (num(a)?, num(b)?)
        }
        None => (None, None),
    };
    let mut access = 0;
    for c in parts.next().unwrap_or("rwm").chars() {
        access |= match c {
            'r' => ACC_READ,
            'w' => ACC_WRITE,
            'm' => ACC_MKNOD,
            _ => return Err(bad()),
        };
    }
    Ok(Rule {
        allow,
        kind,
        major,
        minor,
        access,
    })
}

/// The program: rules are tried last to first; the first that matches returns.
fn program(rules: &[Rule]) -> Vec<Insn> {
    let all = ACC_READ | ACC_WRITE | ACC_MKNOD;
    let mut p = vec![
        ins(LDX_MEM_W, 2, 1, 0, 0), // r2 = ctx->access_type
        ins(ALU64_MOV_X, 3, 2, 0, 0),
        ins(ALU64_AND_K, 3, 0, 0, 0xffff), // r3 = device type
        ins(ALU64_MOV_X, 4, 2, 0, 0),
        ins(ALU64_RSH_K, 4, 0, 0, 16), // r4 = access asked for
        ins(LDX_MEM_W, 5, 1, 4, 0),    // r5 = major
        ins(LDX_MEM_W, 6, 1, 8, 0),    // r6 = minor
    ];
    for r in rules.iter().rev() {
        // Each check jumps past the rest of the block when it fails.
        let mut checks: Vec<Vec<Insn>> = Vec::new();
        if let Some(k) = r.kind {
            checks.push(vec![ins(JMP_JNE_K, 3, 0, 0, k)]);
        }
        if let Some(m) = r.major {
            checks.push(vec![ins(JMP_JNE_K, 5, 0, 0, m)]);
        }
        if let Some(m) = r.minor {
            checks.push(vec![ins(JMP_JNE_K, 6, 0, 0, m)]);
        }
        if r.allow && r.access != all {
            checks.push(vec![
                ins(ALU64_MOV_X, 7, 4, 0, 0),
                ins(ALU64_AND_K, 7, 0, 0, !r.access & all),
                ins(JMP_JNE_K, 7, 0, 0, 0),
            ]);
        } else if !r.allow && r.access != all {
            checks.push(vec![
                ins(ALU64_MOV_X, 7, 4, 0, 0),
                ins(ALU64_AND_K, 7, 0, 0, r.access),
                ins(JMP_JEQ_K, 7, 0, 0, 0),
            ]);
        }
        let tail = [
            ins(ALU64_MOV_K, 0, 0, 0, i32::from(r.allow)),
            ins(JMP_EXIT, 0, 0, 0, 0),
        ];
        if checks.is_empty() {
            // Matches every request: what would follow is unreachable, which the
            // verifier rejects.
            p.extend(tail);
            return p;
        }
        let block_len: usize = checks.iter().map(Vec::len).sum::<usize>() + tail.len();
        let mut emitted = 0;
        for c in checks {
            emitted += c.len();
            let mut c = c;
            if let Some(last) = c.last_mut() {
                // Relative to the next instruction: skip what is left of the block.
                last.off = i16::try_from(block_len - emitted).unwrap_or(i16::MAX);
            }
            p.extend(c);
        }
        p.extend(tail);
    }
    p.push(ins(ALU64_MOV_K, 0, 0, 0, 1));
    p.push(ins(JMP_EXIT, 0, 0, 0, 0));
    p
}

#[repr(C)]
#[derive(Default)]
struct ProgLoad {
    prog_type: u32,
    insn_cnt: u32,
    insns: u64,
    license: u64,
    log_level: u32,
    log_size: u32,
    log_buf: u64,
    kern_version: u32,
    prog_flags: u32,
    prog_name: [u8; 16],
    prog_ifindex: u32,
    expected_attach_type: u32,
}

#[repr(C)]
#[derive(Default)]
struct ProgAttach {
    target_fd: u32,
    attach_bpf_fd: u32,
    attach_type: u32,
    attach_flags: u32,
    replace_bpf_fd: u32,
}

/// Loads the rules' program and attaches it to the cgroup directory `dir`.
pub fn attach(dir: &Path, rules: &[(bool, String)]) -> Result<(), String> {
    let rules: Vec<Rule> = rules
        .iter()
        .map(|(allow, r)| parse(*allow, r))
        .collect::<Result<_, _>>()?;
    let prog_fd = load(&program(&rules))?;
    let group = std::fs::File::open(dir).map_err(|e| format!("open {}: {e}", dir.display()))?;
    let at = ProgAttach {
        target_fd: group.as_raw_fd() as u32,
        attach_bpf_fd: prog_fd.as_raw_fd() as u32,
        attach_type: BPF_CGROUP_DEVICE,
        attach_flags: BPF_F_ALLOW_MULTI,
        replace_bpf_fd: 0,
    };
    // SAFETY: the fds in `at` are open: `group` and `prog_fd` live past the call.
    if unsafe { bpf(BPF_PROG_ATTACH, &at) } < 0 {
        return Err(format!(
            "attach the device program to {}: {}",
            dir.display(),
            std::io::Error::last_os_error()
        ));
    }
    // The attachment holds the program; our fds may close.
    Ok(())
}

/// bpf(2) with command `cmd` and its attribute `attr` (a `#[repr(C)]` mirror of the
/// member of the kernel's `bpf_attr` that `cmd` reads), whose size is passed with it.
///
/// # Safety
/// Every address `attr` holds (program, license, log buffer) must be valid for the
/// kernel to read, or write for the log, for the whole call, and every fd open.
unsafe fn bpf<T>(cmd: libc::c_long, attr: &T) -> libc::c_long {
    // SAFETY: `attr` is a valid, initialised value of its size for the whole call,
    // and the caller vouches for what it points to.
    unsafe {
        libc::syscall(
            libc::SYS_bpf,
            cmd,
            attr as *const T,
            std::mem::size_of::<T>(),
        )
    }
}

/// Loads `prog` as a cgroup device program; a refusal carries the verifier's log.
fn load(prog: &[Insn]) -> Result<OwnedFd, String> {
    let license = c"Apache-2.0";
    let mut log = vec![0u8; 64 * 1024];
    let mut name = [0u8; 16];
    name[..6].copy_from_slice(b"maibox");
    let load = ProgLoad {
        prog_type: BPF_PROG_TYPE_CGROUP_DEVICE,
        insn_cnt: u32::try_from(prog.len()).map_err(|_| "device program too long")?,
        insns: prog.as_ptr() as u64,
        license: license.as_ptr() as u64,
        log_level: 1,
        log_size: log.len() as u32,
        log_buf: log.as_mut_ptr() as u64,
        prog_name: name,
        ..Default::default()
    };
    // SAFETY: the addresses in `load` (program, license, log buffer) are of
    // values that outlive the call; the log buffer is writable and its size is
    // `log_size`.
    let fd = unsafe { bpf(BPF_PROG_LOAD, &load) };
    if fd < 0 {
        let e = std::io::Error::last_os_error();
        let verifier = String::from_utf8_lossy(&log);
        let verifier = verifier.trim_end_matches('\0').trim();
        let verifier = if verifier.is_empty() {
            String::new()
        } else {
            format!(" (verifier: {verifier})")
        };
        return Err(format!("load the cgroup v2 device program: {e}{verifier}"));
    }
    // SAFETY: bpf() returned a new fd that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_parse_and_blocks_jump_to_their_end() {
        let r = parse(true, "c 1:3 rw").unwrap();
        assert_eq!(
            r,
            Rule {
                allow: true,
                kind: Some(DEV_CHAR),
                major: Some(1),
                minor: Some(3),
                access: ACC_READ | ACC_WRITE
            }
        );
        assert_eq!(parse(false, "a *:* rwm").unwrap().kind, None);
        assert!(parse(true, "x 1:3 r").is_err());
        assert!(parse(true, "c 1:3 q").is_err());
        let p = program(&[r]);
        // prologue (7), three checks + access check (3) + tail (2), default (2).
        assert_eq!(p.len(), 7 + 3 + 3 + 2 + 2);
        // The type check skips the other checks and the tail: 2 + 3 + 2.
        assert_eq!(p[7].off, 7);
        assert_eq!(p[9].off, 5);
        assert_eq!(p[12].off, 2);
        assert_eq!(p.last().unwrap().code, JMP_EXIT);
        // An unconditional rule ends the program: no unreachable instructions.
        let p = program(&[
            parse(false, "a *:* rwm").unwrap(),
            parse(true, "c 1:3 rwm").unwrap(),
        ]);
        assert_eq!(p.len(), 7 + 3 + 2 + 2);
        assert_eq!(p[p.len() - 2].imm, 0, "deny all ends it");
    }
}
