//! The warm sandboxes of one trust level: prepared in the background by a few refill
//! threads, taken one per request, never given back. The pool keeps `pool_min` ready,
//! grows toward `pool_max` while requests find it empty, and drops sandboxes idle for
//! longer than `pool_idle` back to the minimum.
//!
//! The refill threads live as long as the server: a sandbox's init is the child of the
//! thread that made it, and dies with it (PR_SET_PDEATHSIG).

use crate::config::{TrustLevel, WarmMode};
use crate::warm::{Warm, Zygote};
use crate::Sandbox;
use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

pub struct Pool {
    pub level: TrustLevel,
    /// Where its sandboxes' interpreters come from.
    pub mode: WarmMode,
    zygote_forks: usize,
    sandbox: Sandbox,
    preload: Vec<String>,
    min: usize,
    max: usize,
    idle: Duration,
    inner: Mutex<Inner>,
    changed: Condvar,
    threads: Mutex<Vec<std::thread::JoinHandle<()>>>,
}

#[derive(Default)]
struct Inner {
    ready: VecDeque<Warm>,
    preparing: usize,
    /// Sandboxes taken and still running their request.
    serving: usize,
    /// How many the pool aims to keep ready, between min and max.
    want: usize,
    stop: bool,
    /// Why the last preparation failed, for the server's log.
    last_failure: Option<String>,
    /// Sandboxes found dead when taken, for a refill thread to destroy: destroying
    /// one waits for its processes to go, which is no request's business.
    dead: Vec<Warm>,
}

/// `warm_mode: fork`: a refill thread's zygote, and the one that replaces it when it
/// is spent, started [`PRESTART`] forks ahead.
#[derive(Default)]
struct Zygotes {
    current: Option<Zygote>,
    next: Option<Zygote>,
}

/// How many forks before a zygote is spent its successor starts. A zygote takes 20
/// to 40 ms of a CPU to start and import the default preloads, during which a refill
/// thread that waited for it prepared nothing (the pool ran empty under load); a few
/// forks ahead, that start overlaps the current zygote's last forks instead.
const PRESTART: usize = 4;

/// A sandbox [`Pool::take`] gave, counted as serving its request until this is
/// dropped (even by a panic): then the refill it held back may start.
pub struct Serving<'p>(&'p Pool);

impl Drop for Serving<'_> {
    fn drop(&mut self) {
        let mut inner = self.0.lock();
        inner.serving = inner.serving.saturating_sub(1);
        self.0.changed.notify_all();
    }
}

/// What a pool holds, for the server's status.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct PoolState {
    pub ready: usize,
    pub preparing: usize,
    pub target: usize,
}

impl Pool {
    pub fn new(
        level: TrustLevel,
        sandbox: Sandbox,
        cfg: &crate::config::ServerConfig,
    ) -> Arc<Pool> {
        let preload = sandbox.config().level(level).preload.clone();
        Arc::new(Pool {
            level,
            mode: cfg.warm_mode,
            zygote_forks: cfg.zygote_forks,
            sandbox,
            preload,
            min: cfg.pool_min,
            max: cfg.pool_max,
            idle: cfg.pool_idle.0,
            inner: Mutex::new(Inner {
                want: cfg.pool_min,
                ..Default::default()
            }),
            changed: Condvar::new(),
            threads: Mutex::new(Vec::new()),
        })
    }

    /// Starts `threads` refill threads.
    pub fn start(self: &Arc<Pool>, threads: usize) {
        let handles = (0..threads).filter_map(|i| {
            let pool = Arc::clone(self);
            std::thread::Builder::new()
                .name(format!("maibox-pool-{}-{i}", self.level))
                .spawn(move || pool.refill())
                .ok()
        });
        if let Ok(mut t) = self.threads.lock() {
            t.extend(handles);
        }
    }

    /// A ready sandbox, waiting up to `wait` for one, and the guard that counts it as
    /// serving until dropped. An empty pool grows.
    pub fn take(&self, wait: Duration) -> Option<(Warm, Serving<'_>)> {
        let deadline = Instant::now() + wait;
        let mut inner = self.lock();
        if inner.ready.is_empty() {
            inner.want = (inner.want + 1).min(self.max);
            self.changed.notify_all();
        }
        loop {
            while let Some(w) = inner.ready.pop_front() {
                self.changed.notify_all();
                if w.alive() {
                    inner.serving += 1;
                    return Some((w, Serving(self)));
                }
                inner.dead.push(w);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || inner.stop {
                return None;
            }
            inner = self
                .changed
                .wait_timeout(inner, left)
                .map(|(g, _)| g)
                .unwrap_or_else(|e| e.into_inner().0);
        }
    }

    pub fn state(&self) -> PoolState {
        let inner = self.lock();
        PoolState {
            ready: inner.ready.len(),
            preparing: inner.preparing,
            target: inner.want,
        }
    }

    /// The last preparation failure, once.
    pub fn take_failure(&self) -> Option<String> {
        self.lock().last_failure.take()
    }

    /// Stops refilling, waits for the refill threads (a sandbox in the making is
    /// destroyed by its thread) and destroys every ready sandbox.
    pub fn stop(&self) {
        let drained: Vec<Warm> = {
            let mut inner = self.lock();
            inner.stop = true;
            self.changed.notify_all();
            inner.ready.drain(..).collect()
        };
        drop(drained);
        let threads = self.threads.lock().map(|mut t| std::mem::take(&mut *t));
        for t in threads.unwrap_or_default() {
            let _ = t.join();
        }
    }

    fn refill(&self) {
        let mut failures = 0u32;
        // `warm_mode: fork`: this thread's zygotes, its children, which die with it.
        let mut zygotes = Zygotes::default();
        loop {
            let mut inner = self.lock();
            let mut old = std::mem::take(&mut inner.dead);
            while inner.ready.len() > self.min
                && inner.ready.front().is_some_and(|w| w.age() > self.idle)
            {
                old.extend(inner.ready.pop_front());
                inner.want = inner.want.saturating_sub(1).max(self.min);
            }
            if inner.stop {
                return;
            }
            // While a request runs and another sandbox is still ready, the refill
            // waits for the run to end: starting an interpreter takes a whole CPU
            // for tens of milliseconds, which the running request would share.
            let hold = inner.serving > 0 && !inner.ready.is_empty();
            if hold || inner.ready.len() + inner.preparing >= inner.want.max(self.min) {
                let wait = self.idle.min(Duration::from_secs(1));
                drop(self.changed.wait_timeout(inner, wait));
                drop(old);
                continue;
            }
            inner.preparing += 1;
            drop(inner);
            drop(old);
            let made = self.prepare(&mut zygotes);
            let mut inner = self.lock();
            inner.preparing -= 1;
            match made {
                Ok(w) if !inner.stop => {
                    failures = 0;
                    inner.ready.push_back(w);
                    self.changed.notify_all();
                }
                Ok(_) => return,
                Err(e) => {
                    failures += 1;
                    inner.last_failure = Some(e.to_string());
                    drop(inner);
                    // Do not spin on a host that cannot make sandboxes now.
                    std::thread::sleep(Duration::from_millis(100 << failures.min(6)));
                }
            }
        }
    }

    /// One warm sandbox: its interpreter started in it, or forked from this thread's
    /// zygote, which is replaced once it has forked `zygote_forks` interpreters, or
    /// after a failure.
    fn prepare(&self, zygotes: &mut Zygotes) -> Result<Warm, crate::Error> {
        if self.mode == WarmMode::Strict {
            return self.sandbox.prepare_warm(&self.preload);
        }
        if zygotes.current.as_ref().is_none_or(Zygote::spent) {
            // The spent one ends before its successor takes over.
            zygotes.current = None;
            let next = match zygotes.next.take() {
                Some(z) => z,
                None => self.start_zygote()?,
            };
            zygotes.current = Some(next);
        }
        let Some(z) = zygotes.current.as_mut() else {
            return Err(crate::Error::Invalid("no zygote".into()));
        };
        let made = self.sandbox.prepare_warm_forked(z);
        if made.is_err() {
            zygotes.current = None;
        } else if z.left() <= PRESTART && zygotes.next.is_none() {
            // Its successor imports the preloads while this one forks its last: a
            // failure to start it shows when it is needed (started again then).
            zygotes.next = self.start_zygote().ok();
        }
        made
    }

    fn start_zygote(&self) -> Result<Zygote, crate::Error> {
        self.sandbox.start_zygote(&self.preload, self.zygote_forks)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}
