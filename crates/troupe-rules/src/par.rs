//! Independent pieces of one check or compile run on the machine's cores
//! (Format 17.1: the result of checking and compiling depends on the input
//! alone; docs/performance.md, Run AU).
//!
//! [`map`] applies one function to every item of a slice on up to
//! [`jobs`] threads and gives the results **in input order**, so that
//! whatever the number of threads, every diagnostic comes in the same
//! order and every output byte is the same: only the loop changes, never
//! the per-item function. A worker runs inside the caller's CEL parse
//! scope ([`crate::cel::parse::ParseCache`]), so an expression is still
//! parsed once per run, whichever thread meets it first.
//!
//! How many threads: the innermost [`with_jobs`] on the calling thread,
//! else the cores this process may use. A worker's own nested [`map`]
//! runs on its thread (no threads spawned from workers).

use std::cell::Cell;
use std::thread::LocalKey;

/// A debug build's count, per thread, of one kind of work (the parses of
/// CEL expressions and of templates: the parse-once tests of issue 41
/// item 2). [`Counter::bump`] where the work is done; [`map`] and [`join`]
/// add their workers' counts to the calling thread's, so a run counts its
/// work whichever thread did it. Release builds count nothing.
pub(crate) struct Counter(pub(crate) &'static LocalKey<Cell<u64>>);

impl Counter {
    /// One more (debug builds).
    pub(crate) fn bump(&self) {
        #[cfg(debug_assertions)]
        self.0.with(|c| c.set(c.get() + 1));
    }

    /// The count on this thread.
    #[cfg(test)]
    pub(crate) fn get(&self) -> u64 {
        self.0.with(Cell::get)
    }

    /// `f()` and how much this thread counted while it ran.
    fn counted<R>(&self, f: impl FnOnce() -> R) -> (R, u64) {
        let before = self.0.with(Cell::get);
        let r = f();
        (r, self.0.with(Cell::get) - before)
    }

    /// Counts `n` done on this thread's behalf by a worker.
    fn add(&self, n: u64) {
        self.0.with(|c| c.set(c.get() + n));
    }
}

thread_local! {
    /// The innermost [`with_jobs`] on this thread; 0 when none is open.
    static JOBS: Cell<usize> = const { Cell::new(0) };
}

/// The cores this process may use (at least 1): the default of [`jobs`].
/// Asked once per process (the answer reads the scheduler's affinity and
/// cgroup limits: a few system calls that a small pack's checks should not
/// repeat).
pub fn default_jobs() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES
        .get_or_init(|| std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get))
}

/// How many threads [`map`] uses on this thread: the innermost
/// [`with_jobs`], else [`default_jobs`].
pub fn jobs() -> usize {
    match JOBS.with(Cell::get) {
        0 => default_jobs(),
        n => n,
    }
}

/// Runs `f` with [`map`] using `jobs` threads on this thread (0: the
/// default, [`default_jobs`]; 1: everything on this thread, as before
/// threads were used); the previous setting is restored afterwards, also on
/// unwind.
pub fn with_jobs<R>(jobs: usize, f: impl FnOnce() -> R) -> R {
    struct Restore(usize);
    impl Drop for Restore {
        fn drop(&mut self) {
            JOBS.with(|j| j.set(self.0));
        }
    }
    let _restore = Restore(JOBS.with(|j| j.replace(jobs)));
    f()
}

/// `f(index, item)` for every item of `items`, on up to [`jobs`] threads,
/// the results in `items`' order. Each thread takes a contiguous run of
/// items (the runs differ in length by at most one), so that a pack's
/// neighbouring scenarios, which often share what they read, stay on one
/// thread. With one job, or fewer than two items, nothing is spawned.
///
/// A panic in `f` is resumed on the calling thread, as if `f` had run
/// there.
pub fn map<T: Sync, R: Send>(items: &[T], f: impl Fn(usize, &T) -> R + Sync) -> Vec<R> {
    let jobs = if items.len() < 2 {
        1
    } else {
        jobs().clamp(1, items.len())
    };
    if jobs == 1 {
        return items.iter().enumerate().map(|(i, t)| f(i, t)).collect();
    }
    let parse_scope = crate::cel::parse::active_scope();
    let chunk = items.len().div_ceil(jobs);
    let f = &f;
    let parse_scope = &parse_scope;
    let mut out = Vec::with_capacity(items.len());
    std::thread::scope(|scope| {
        let workers: Vec<_> = items
            .chunks(chunk)
            .enumerate()
            .map(|(c, part)| {
                scope.spawn(move || {
                    as_worker(parse_scope, || {
                        part.iter()
                            .enumerate()
                            .map(|(i, t)| f(c * chunk + i, t))
                            .collect::<Vec<R>>()
                    })
                })
            })
            .collect();
        for w in workers {
            out.extend(joined(w.join()));
        }
    });
    out
}

/// `(a(), b())`, `a` on a thread of its own while `b` runs on this one
/// when [`jobs`] allows more than one thread, else one after the other:
/// two independent pieces of one run (writing `ir.json` and `ir.compact`;
/// freeing a tree while the next step runs). The results do not depend on
/// the threads. A panic in `a` is resumed here, as if `a` had run here.
pub fn join<A: Send, B>(a: impl FnOnce() -> A + Send, b: impl FnOnce() -> B) -> (A, B) {
    if jobs() < 2 {
        return (a(), b());
    }
    let parse_scope = crate::cel::parse::active_scope();
    let parse_scope = &parse_scope;
    std::thread::scope(|scope| {
        let worker = scope.spawn(move || as_worker(parse_scope, a));
        let b = b();
        (joined(worker.join()), b)
    })
}

/// What [`map`]'s and [`join`]'s worker threads run `f` in: one thread
/// (no nested threads), the caller's parse scope, and the parses counted
/// for the caller (debug builds).
fn as_worker<R>(
    parse_scope: &Option<std::sync::Arc<crate::cel::parse::ParseCache>>,
    f: impl FnOnce() -> R,
) -> ((R, u64), u64) {
    let run = || with_jobs(1, f);
    crate::cel::parse::PARSES.counted(|| {
        crate::template::PARSES.counted(|| match parse_scope {
            Some(cache) => cache.scope(run),
            None => run(),
        })
    })
}

/// A worker's result on the calling thread, its parses counted there; its
/// panic resumed there.
fn joined<R>(worker: std::thread::Result<((R, u64), u64)>) -> R {
    match worker {
        Ok(((done, templates), parses)) => {
            crate::cel::parse::PARSES.add(parses);
            crate::template::PARSES.add(templates);
            done
        }
        Err(panic) => std::panic::resume_unwind(panic),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Results come in input order whatever the number of threads, and a
    /// worker runs on one thread only.
    #[test]
    fn results_keep_the_input_order() {
        let items: Vec<usize> = (0..101).collect();
        for jobs in [1, 2, 3, 7, 200] {
            let got = with_jobs(jobs, || map(&items, |i, x| (i, *x * 2, super::jobs())));
            assert_eq!(got.len(), items.len());
            for (i, (at, twice, inner)) in got.into_iter().enumerate() {
                assert_eq!((at, twice), (i, i * 2));
                assert_eq!(inner, 1, "no nested threads from a worker");
            }
        }
        let none: Vec<u8> = Vec::new();
        assert!(with_jobs(4, || map(&none, |_, x| *x)).is_empty());
    }

    /// A worker parses through the caller's parse scope: a text parsed on
    /// any thread is parsed once, and counted on the caller's thread.
    #[test]
    fn workers_share_the_callers_parse_cache() {
        let cache = std::sync::Arc::new(crate::cel::parse::ParseCache::default());
        let texts: Vec<String> = (0..40).map(|i| format!("x + {}", i % 10)).collect();
        let before = crate::cel::parse::PARSES.get();
        cache.scope(|| {
            with_jobs(4, || {
                map(&texts, |_, t| crate::cel::parse::parse_shared(t).is_ok())
            })
        });
        assert_eq!(cache.len(), 10);
        assert_eq!(crate::cel::parse::PARSES.get() - before, 10);
    }

    /// `join` gives both results whatever the number of threads, runs its
    /// first function on another thread only when more than one is
    /// allowed, and counts that thread's parses on the caller's.
    #[test]
    fn join_runs_two_pieces_and_counts_their_parses() {
        let cache = std::sync::Arc::new(crate::cel::parse::ParseCache::default());
        for jobs in [1, 2] {
            let caller = std::thread::current().id();
            let before = crate::cel::parse::PARSES.get();
            let ((a, a_thread), b) = cache.scope(|| {
                with_jobs(jobs, || {
                    join(
                        || {
                            let parsed = crate::cel::parse::parse_shared(&format!("a{jobs} + 1"));
                            (parsed.is_ok(), std::thread::current().id())
                        },
                        || 7,
                    )
                })
            });
            assert!(a);
            assert_eq!(b, 7);
            assert_eq!(a_thread == caller, jobs == 1, "jobs {jobs}");
            assert_eq!(crate::cel::parse::PARSES.get() - before, 1, "jobs {jobs}");
        }
        let r = std::panic::catch_unwind(|| with_jobs(2, || join(|| panic!("in a"), || 1)));
        assert!(r.is_err());
    }

    /// A panic in a worker reaches the caller.
    #[test]
    fn a_workers_panic_reaches_the_caller() {
        let items = [1, 2, 3, 4];
        let r = std::panic::catch_unwind(|| with_jobs(2, || map(&items, |_, x| assert_ne!(*x, 4))));
        assert!(r.is_err());
    }
}
