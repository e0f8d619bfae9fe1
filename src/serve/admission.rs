//! Which requests run now: runs are admitted while their CPUs and memory, added up,
//! fit the host's (times `server.overcommit`); the rest wait in a bounded FIFO queue,
//! and a request that finds the queue full is answered "busy" at once.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex};

/// What one run asks of the host.
#[derive(Debug, Clone, Copy)]
pub struct Demand {
    pub cpus: f64,
    pub memory_bytes: u64,
}

#[derive(Default)]
struct State {
    cpus: f64,
    memory_bytes: u64,
    running: usize,
    /// Tickets of the waiting requests, oldest first.
    queue: VecDeque<u64>,
    next_ticket: u64,
}

pub struct Admission {
    cpus: f64,
    memory_bytes: u64,
    queue_max: usize,
    state: Mutex<State>,
    changed: Condvar,
}

/// A run's place among the admitted ones: dropping it frees the place.
pub struct Permit<'a> {
    adm: &'a Admission,
    demand: Demand,
}

#[derive(Debug)]
pub struct Busy {
    pub waiting: usize,
}

impl Admission {
    /// Room for `cpus` CPUs and `memory_bytes` of memory (the host's times the
    /// overcommit factor) and `queue_max` waiting requests.
    pub fn new(cpus: f64, memory_bytes: u64, queue_max: usize) -> Admission {
        Admission {
            cpus,
            memory_bytes,
            queue_max,
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
        }
    }

    /// Admits `d` when it fits (waiting its turn), or says busy when the queue is full.
    /// A run alone is always admitted, however large: the policy already bounds it by
    /// the host.
    pub fn admit(&self, d: Demand) -> Result<Permit<'_>, Busy> {
        let mut st = self.lock();
        if st.queue.is_empty() && self.fits(&st, d) {
            return Ok(self.enter(st, d));
        }
        if st.queue.len() >= self.queue_max {
            return Err(Busy {
                waiting: st.queue.len(),
            });
        }
        let ticket = st.next_ticket;
        st.next_ticket += 1;
        st.queue.push_back(ticket);
        loop {
            if st.queue.front() == Some(&ticket) && self.fits(&st, d) {
                st.queue.pop_front();
                self.changed.notify_all();
                return Ok(self.enter(st, d));
            }
            st = self.changed.wait(st).unwrap_or_else(|e| e.into_inner());
        }
    }

    fn fits(&self, st: &State, d: Demand) -> bool {
        st.running == 0
            || (st.cpus + d.cpus <= self.cpus + 1e-9
                && st.memory_bytes.saturating_add(d.memory_bytes) <= self.memory_bytes)
    }

    fn enter(&self, mut st: std::sync::MutexGuard<'_, State>, d: Demand) -> Permit<'_> {
        st.cpus += d.cpus;
        st.memory_bytes = st.memory_bytes.saturating_add(d.memory_bytes);
        st.running += 1;
        Permit {
            adm: self,
            demand: d,
        }
    }

    /// Runs admitted now, and requests waiting.
    #[cfg(test)]
    pub fn load(&self) -> (usize, usize) {
        let st = self.lock();
        (st.running, st.queue.len())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        let mut st = self.adm.lock();
        st.cpus = (st.cpus - self.demand.cpus).max(0.0);
        st.memory_bytes = st.memory_bytes.saturating_sub(self.demand.memory_bytes);
        st.running -= 1;
        self.adm.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    const GIB: u64 = 1 << 30;

    #[test]
    fn admits_what_fits_queues_the_rest_and_refuses_beyond_the_queue() {
        let adm = Admission::new(2.0, 4 * GIB, 1);
        let d = Demand {
            cpus: 1.0,
            memory_bytes: GIB,
        };
        let a = adm.admit(d).unwrap();
        let b = adm.admit(d).unwrap();
        std::thread::scope(|s| {
            // The third waits for a place; with it queued, a fourth is busy at once.
            let waiter = s.spawn(|| adm.admit(d).map(|_| ()));
            while adm.load().1 == 0 {
                std::thread::sleep(Duration::from_millis(1));
            }
            assert!(matches!(adm.admit(d), Err(Busy { waiting: 1 })));
            drop(a);
            assert!(waiter.join().unwrap().is_ok());
        });
        drop(b);
        assert_eq!(adm.load(), (0, 0));
    }

    #[test]
    fn a_run_alone_is_admitted_however_large() {
        let adm = Admission::new(1.0, GIB, 0);
        let big = Demand {
            cpus: 8.0,
            memory_bytes: 64 * GIB,
        };
        let p = adm.admit(big).unwrap();
        assert!(adm.admit(big).is_err(), "the queue holds none");
        drop(p);
    }
}
