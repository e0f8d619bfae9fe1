//! Per-request records kept by the proxy while it runs, and the report `stop`
//! hands back for the `--json` output (and, later, the audit log).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use serde::Serialize;

/// Records beyond this are counted but not kept, so a payload spinning on
/// refused requests cannot grow the supervisor's memory or the report without
/// bound.
pub const MAX_RECORDS: usize = 4096;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Allowed,
    Refused,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct RequestRecord {
    pub host: String,
    pub port: u16,
    /// `CONNECT`, `GET`, `HEAD`, or whatever the client sent (refused).
    pub method: String,
    pub bytes_up: u64,
    pub bytes_down: u64,
    pub verdict: Verdict,
    /// Why it was refused, or why an allowed transfer was cut short.
    pub reason: Option<String>,
    /// The address connected to, once there was one.
    pub address: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct Counts {
    pub requests: u64,
    pub allowed: u64,
    pub refused: u64,
    pub bytes_up: u64,
    pub bytes_down: u64,
    /// Requests counted above whose record was not kept (see `MAX_RECORDS`).
    pub records_dropped: u64,
}

#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct ProxyReport {
    pub requests: Vec<RequestRecord>,
    pub counts: Counts,
    /// Problems of the proxy itself (a panicked runtime thread, ...).
    pub errors: Vec<String>,
}

/// Live byte counters of one request, shared with its transfer.
#[derive(Debug, Default)]
pub struct ByteCounters {
    pub up: AtomicU64,
    pub down: AtomicU64,
}

struct Slot {
    rec: RequestRecord,
    bytes: Arc<ByteCounters>,
}

#[derive(Default)]
struct Inner {
    slots: Vec<Slot>,
    dropped: u64,
    dropped_allowed: u64,
    dropped_refused: u64,
}

/// The proxy's shared record book.
#[derive(Default, Clone)]
pub struct Book {
    inner: Arc<Mutex<Inner>>,
}

/// A handle on one request's record.
pub struct Ticket {
    book: Book,
    idx: Option<usize>,
    pub bytes: Arc<ByteCounters>,
}

impl Book {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic elsewhere while holding the lock leaves plain data behind;
        // keep counting rather than lose the report.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Opens a record; `verdict` may still be changed through the ticket (a
    /// CONNECT is allowed first, then refused if its SNI does not match).
    pub fn open(
        &self,
        host: &str,
        port: u16,
        method: &str,
        verdict: Verdict,
        reason: Option<String>,
    ) -> Ticket {
        let bytes = Arc::new(ByteCounters::default());
        let mut inner = self.lock();
        let idx = if inner.slots.len() < MAX_RECORDS {
            inner.slots.push(Slot {
                rec: RequestRecord {
                    host: host.to_string(),
                    port,
                    method: method.to_string(),
                    bytes_up: 0,
                    bytes_down: 0,
                    verdict,
                    reason,
                    address: None,
                },
                bytes: bytes.clone(),
            });
            Some(inner.slots.len() - 1)
        } else {
            inner.dropped += 1;
            match verdict {
                Verdict::Allowed => inner.dropped_allowed += 1,
                Verdict::Refused => inner.dropped_refused += 1,
            }
            None
        };
        drop(inner);
        Ticket {
            book: self.clone(),
            idx,
            bytes,
        }
    }

    pub fn report(&self, errors: Vec<String>) -> ProxyReport {
        let inner = self.lock();
        let mut counts = Counts {
            records_dropped: inner.dropped,
            requests: inner.dropped,
            allowed: inner.dropped_allowed,
            refused: inner.dropped_refused,
            ..Counts::default()
        };
        let requests: Vec<RequestRecord> = inner
            .slots
            .iter()
            .map(|s| {
                let mut r = s.rec.clone();
                r.bytes_up = s.bytes.up.load(Ordering::Relaxed);
                r.bytes_down = s.bytes.down.load(Ordering::Relaxed);
                r
            })
            .collect();
        for r in &requests {
            counts.requests += 1;
            match r.verdict {
                Verdict::Allowed => counts.allowed += 1,
                Verdict::Refused => counts.refused += 1,
            }
            counts.bytes_up += r.bytes_up;
            counts.bytes_down += r.bytes_down;
        }
        ProxyReport {
            requests,
            counts,
            errors,
        }
    }
}

impl Ticket {
    fn with(&self, f: impl FnOnce(&mut RequestRecord)) {
        if let Some(i) = self.idx {
            let mut inner = self.book.lock();
            if let Some(slot) = inner.slots.get_mut(i) {
                f(&mut slot.rec);
            }
        }
    }

    pub fn refuse(&self, reason: String) {
        self.with(|r| {
            r.verdict = Verdict::Refused;
            r.reason = Some(reason);
        });
    }

    /// Notes why an allowed transfer ended early; the verdict stays `allowed`.
    pub fn note(&self, reason: String) {
        self.with(|r| {
            if r.reason.is_none() {
                r.reason = Some(reason);
            }
        });
    }

    pub fn set_address(&self, addr: std::net::SocketAddr) {
        self.with(|r| r.address = Some(addr.to_string()));
    }
}
