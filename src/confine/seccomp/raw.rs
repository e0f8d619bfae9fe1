//! Classic BPF as the kernel's seccomp takes it: the opcodes, `seccomp_data`
//! offsets and return values maibox's hand-written instructions use.

use seccompiler::sock_filter;

pub(super) const BPF_LD_W_ABS: u16 = 0x20;
pub(super) const BPF_JMP_JEQ_K: u16 = 0x15;
pub(super) const BPF_JMP_JGE_K: u16 = 0x35;
pub(super) const BPF_RET_K: u16 = 0x06;
pub(super) const SECCOMP_DATA_NR: u32 = 0;
pub(super) const SECCOMP_DATA_ARCH: u32 = 4;
pub(super) const RET_KILL_PROCESS: u32 = 0x8000_0000;
pub(super) const RET_ALLOW: u32 = 0x7fff_0000;
pub(super) const RET_ERRNO: u32 = 0x0005_0000;
pub(super) const RET_EPERM: u32 = RET_ERRNO | libc::EPERM as u32;
pub(super) const X32_SYSCALL_BIT: u32 = 0x4000_0000;
/// The kernel's limit on a program's length.
pub(super) const BPF_MAXINSNS: usize = 4096;

pub(super) const BPF_JMP_JGT_K: u16 = 0x25;
pub(super) const BPF_JMP_JA: u16 = 0x05;
/// SECCOMP_RET_USER_NOTIF: the call waits for the filter's listener to answer.
pub(crate) const RET_USER_NOTIF: u32 = 0x7fc0_0000;

pub(super) fn stmt(code: u16, k: u32) -> sock_filter {
    sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}

pub(super) fn jump(code: u16, k: u32, jt: u8, jf: u8) -> sock_filter {
    sock_filter { code, jt, jf, k }
}
