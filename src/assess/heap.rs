//! Room on the heap for a process's first assessment, made in one system call.
//!
//! The parser's tree and the analyzer's tables take about 24 bytes of heap per byte
//! of source, most of it fresh pages in a fresh process (`maibox exec`, `maibox
//! assess`): 120 to 160 page faults for 1,000 lines, each a trap into the kernel that
//! costs 3 to 4 µs on the 2-vCPU VM, a fifth of the assessment's time. Asking the
//! kernel to populate those pages at once (`MADV_POPULATE_WRITE`, Linux 5.14) skips
//! the traps; the pages are then given to the allocator, which hands them out again.
//! glibc's allocator has no call for this, hence the few lines below. A kernel
//! without the advice leaves the pages to fault as before; a process that assessed
//! before (a server) has its heap already, and is left alone.

use std::sync::Once;

/// Heap the assessment of one byte of source takes, measured (see the module's note).
const PER_SOURCE_BYTE: usize = 24;
/// Chunks below glibc's mmap threshold (128 KiB): they come from the heap, which
/// keeps them after `free`.
const CHUNK: usize = 64 << 10;
const MAX: usize = 32 << 20;
const MADV_POPULATE_WRITE: libc::c_int = 23;

/// Makes room for assessing `source_len` bytes, once per process.
pub(super) fn reserve(source_len: usize) {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| populate((source_len * PER_SOURCE_BYTE).clamp(CHUNK, MAX)));
}

fn populate(bytes: usize) {
    let n = bytes / CHUNK;
    // SAFETY: mallopt and malloc/free of our own chunks; madvise on whole pages that
    // lie inside what those chunks (and the heap between them) cover, while they are
    // allocated to us.
    unsafe {
        // The freed chunks must stay on the heap rather than go back to the kernel.
        libc::mallopt(
            libc::M_TRIM_THRESHOLD,
            i32::try_from(bytes * 2).unwrap_or(i32::MAX),
        );
        let chunks: Vec<*mut libc::c_void> = (0..n)
            .map(|_| libc::malloc(CHUNK))
            .take_while(|p| !p.is_null())
            .collect();
        let (lo, hi) = chunks.iter().fold((usize::MAX, 0), |(lo, hi), p| {
            (lo.min(*p as usize), hi.max(*p as usize + CHUNK))
        });
        let page = 4096;
        let (start, end) = ((lo + page - 1) & !(page - 1), hi & !(page - 1));
        if start < end {
            libc::madvise(start as *mut libc::c_void, end - start, MADV_POPULATE_WRITE);
        }
        for p in chunks {
            libc::free(p);
        }
    }
}
