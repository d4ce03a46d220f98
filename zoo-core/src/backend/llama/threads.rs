//! How many threads a llama.cpp context uses for its next decode.
//!
//! llama.cpp's compute threads spin at every barrier of the graph. When
//! another process holds one of the cores, a thread that shares that core
//! is descheduled for whole time slices while its partner spins, and every
//! barrier waits for it: on 2 cores beside one `yes > /dev/null`, 2 threads
//! made 33 tokens/s where 1 thread made 58 (BENCHMARKS.md), and slower
//! machines collapsed to a few tokens per second. Agents of one process
//! compete the same way. So unless the config fixes the counts, a context
//! uses the cores that are free: the machine's cores minus what other
//! processes used over the last moments (read from `/proc`), shared among
//! this process's contexts that are generating at the same time.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How often a generating context looks at the load again. Reading `/proc`
/// twice costs tens of microseconds; a token takes milliseconds.
const RECHECK_EVERY: Duration = Duration::from_millis(200);
/// The shortest window over which CPU time says anything: `/proc` counts
/// in ticks of 10 ms.
const MIN_WINDOW: Duration = Duration::from_millis(100);
/// Part of a core a thread needs before it pays: a thread that gets most of
/// a core still helps, one that gets half of it stalls every barrier.
const CORE_SHARE_ROUNDING: f64 = 0.3;

/// Contexts of this process inside a reply right now.
static GENERATING: AtomicUsize = AtomicUsize::new(0);
/// The last reading of the machine's load, shared by every context.
static LOAD: Mutex<Option<LoadReading>> = Mutex::new(None);

/// Thread counts a context should use: `(single tokens, prompt batches)`.
pub type ThreadCounts = (i32, i32);

/// What the config asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThreadSetting {
    /// Fixed counts, never changed.
    Fixed(ThreadCounts),
    /// Follow the free cores, up to this many threads.
    Auto {
        /// The most threads worth using: the cores this process may run on.
        max: i32,
    },
}

impl ThreadSetting {
    /// From the config's `threads` and `threads_batch` (0 means "follow
    /// the free cores" for `threads`, "same as `threads`" for the batch).
    pub fn from_config(threads: u32, threads_batch: u32) -> Self {
        let cores = std::thread::available_parallelism().map_or(4, |n| n.get()) as i32;
        match (threads, threads_batch) {
            (0, 0) => ThreadSetting::Auto { max: cores },
            (0, b) => ThreadSetting::Fixed((cores, b as i32)),
            (t, 0) => ThreadSetting::Fixed((t as i32, t as i32)),
            (t, b) => ThreadSetting::Fixed((t as i32, b as i32)),
        }
    }

    /// The counts to start a context with, before any reading: every core,
    /// as llama.cpp itself would.
    pub fn initial(self) -> ThreadCounts {
        match self {
            ThreadSetting::Fixed(counts) => counts,
            ThreadSetting::Auto { max } => (max, max),
        }
    }
}

/// Marks a context as generating for as long as it lives.
#[derive(Debug)]
pub struct Generating(());

impl Generating {
    /// Counts one more context generating until dropped.
    pub fn start() -> Self {
        GENERATING.fetch_add(1, Ordering::AcqRel);
        Generating(())
    }
}

impl Drop for Generating {
    fn drop(&mut self) {
        GENERATING.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Decides a context's thread counts from time to time.
#[derive(Debug)]
pub struct ThreadPlanner {
    setting: ThreadSetting,
    current: ThreadCounts,
    checked: Option<Instant>,
}

impl ThreadPlanner {
    /// A planner for a context created with `setting.initial()` threads.
    pub fn new(setting: ThreadSetting) -> Self {
        if let ThreadSetting::Auto { .. } = setting {
            // The first reply then has a window to read the load over.
            LoadReading::refresh();
        }
        ThreadPlanner {
            setting,
            current: setting.initial(),
            checked: None,
        }
    }

    /// The counts in use.
    pub fn current(&self) -> ThreadCounts {
        self.current
    }

    /// New counts when they should change now, `None` to keep the current
    /// ones. Cheap when called at every token: it reads the load at most
    /// every [`RECHECK_EVERY`].
    pub fn update(&mut self) -> Option<ThreadCounts> {
        let ThreadSetting::Auto { max } = self.setting else {
            return None;
        };
        if self.checked.is_some_and(|at| at.elapsed() < RECHECK_EVERY) {
            return None;
        }
        self.checked = Some(Instant::now());
        // Without a window to read the load over yet, keep every core: a
        // prompt batch loses little beside a busy process, and the next
        // check comes within [`RECHECK_EVERY`].
        let others = LoadReading::refresh()?;
        let threads = threads_for(
            machine_cores(),
            others,
            GENERATING.load(Ordering::Acquire),
            max,
        );
        if (threads, threads) == self.current {
            return None;
        }
        tracing::debug!(
            threads,
            others_busy = others,
            "llama.cpp thread count changed"
        );
        self.current = (threads, threads);
        Some(self.current)
    }
}

/// The thread count for one context: the cores left by other processes,
/// shared among `generating` contexts of this process, at least 1 and at
/// most `max`.
fn threads_for(cores: f64, others_busy: f64, generating: usize, max: i32) -> i32 {
    let free = (cores - others_busy).max(1.0);
    let share = free / generating.max(1) as f64;
    ((share + CORE_SHARE_ROUNDING).floor() as i32).clamp(1, max.max(1))
}

/// Cores the machine's `/proc/stat` counts (falls back to the cores this
/// process may use).
fn machine_cores() -> f64 {
    cpu_times().map_or_else(
        || std::thread::available_parallelism().map_or(1, |n| n.get()) as f64,
        |t| t.cores as f64,
    )
}

/// CPU time counters at one moment, in clock ticks.
#[derive(Debug, Clone, Copy)]
struct CpuTimes {
    /// All cores' time, busy or idle.
    total: u64,
    /// All cores' busy time.
    busy: u64,
    /// This process's own CPU time.
    own: u64,
    /// Cores counted in `total`.
    cores: u32,
}

/// The load of other processes over the last window.
#[derive(Debug, Clone, Copy)]
struct LoadReading {
    at: Instant,
    times: CpuTimes,
    /// Cores other processes kept busy between the previous reading and this one.
    others_busy: f64,
}

impl LoadReading {
    /// The latest estimate, reading the counters again when the window since
    /// the last reading is long enough. `None` when there is no estimate yet.
    fn refresh() -> Option<f64> {
        let mut load = LOAD.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        match *load {
            Some(last) if now.duration_since(last.at) < MIN_WINDOW => {
                return last.others_busy.is_finite().then_some(last.others_busy);
            }
            _ => {}
        }
        let times = cpu_times()?;
        let others_busy = match *load {
            Some(last) => others_between(&last.times, &times),
            None => f64::NAN,
        };
        *load = Some(LoadReading {
            at: now,
            times,
            others_busy,
        });
        others_busy.is_finite().then_some(others_busy)
    }
}

/// Cores busy with other processes between two readings.
fn others_between(before: &CpuTimes, after: &CpuTimes) -> f64 {
    let total = after.total.saturating_sub(before.total);
    if total == 0 {
        return 0.0;
    }
    let busy = after.busy.saturating_sub(before.busy);
    let own = after.own.saturating_sub(before.own);
    busy.saturating_sub(own) as f64 / total as f64 * f64::from(after.cores)
}

/// The machine's and this process's CPU time, or `None` where `/proc` is
/// missing (not Linux).
fn cpu_times() -> Option<CpuTimes> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let own = std::fs::read_to_string("/proc/self/stat").ok()?;
    parse_cpu_times(&stat, &own)
}

/// Parses `/proc/stat` (its aggregate `cpu` line and the per-core lines)
/// and `/proc/self/stat` (utime and stime).
fn parse_cpu_times(stat: &str, own: &str) -> Option<CpuTimes> {
    let mut lines = stat.lines();
    let fields: Vec<u64> = lines
        .next()?
        .strip_prefix("cpu ")?
        .split_whitespace()
        .map(|f| f.parse().unwrap_or(0))
        .collect();
    // user nice system idle iowait irq softirq steal (guest time is
    // already inside user).
    let total: u64 = fields.iter().take(8).sum();
    let idle = fields.get(3).copied().unwrap_or(0) + fields.get(4).copied().unwrap_or(0);
    let cores = lines
        .filter(|l| l.starts_with("cpu") && l.as_bytes().get(3).is_some_and(u8::is_ascii_digit))
        .count() as u32;
    // The command name in parentheses may hold spaces: count fields after it.
    let after_name = &own[own.rfind(')')? + 1..];
    let mut own_fields = after_name.split_whitespace().skip(11);
    let utime: u64 = own_fields.next()?.parse().ok()?;
    let stime: u64 = own_fields.next()?.parse().ok()?;
    Some(CpuTimes {
        total,
        busy: total.saturating_sub(idle),
        own: utime + stime,
        cores: cores.max(1),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_idle_machine_gets_every_core() {
        assert_eq!(threads_for(2.0, 0.05, 1, 2), 2);
        assert_eq!(threads_for(8.0, 0.2, 1, 8), 8);
    }

    #[test]
    fn a_busy_core_is_left_to_its_process() {
        // Beside one `yes`: it gets two thirds of a core while we spin on two.
        assert_eq!(threads_for(2.0, 0.67, 1, 2), 1);
        assert_eq!(threads_for(2.0, 1.0, 1, 2), 1);
        assert_eq!(threads_for(2.0, 2.0, 1, 2), 1);
        assert_eq!(threads_for(8.0, 3.0, 1, 8), 5);
    }

    #[test]
    fn contexts_of_one_process_share_the_free_cores() {
        assert_eq!(threads_for(2.0, 0.0, 4, 2), 1);
        assert_eq!(threads_for(8.0, 0.0, 2, 8), 4);
        assert_eq!(threads_for(8.0, 0.0, 0, 8), 8);
    }

    #[test]
    fn the_count_stays_within_bounds() {
        assert_eq!(threads_for(64.0, 0.0, 1, 2), 2);
        assert_eq!(threads_for(1.0, 5.0, 3, 0), 1);
    }

    #[test]
    fn config_counts_are_fixed_or_followed() {
        assert_eq!(
            ThreadSetting::from_config(3, 0),
            ThreadSetting::Fixed((3, 3))
        );
        assert_eq!(
            ThreadSetting::from_config(1, 4),
            ThreadSetting::Fixed((1, 4))
        );
        assert!(matches!(
            ThreadSetting::from_config(0, 0),
            ThreadSetting::Auto { .. }
        ));
        assert_eq!(ThreadSetting::Fixed((1, 2)).initial(), (1, 2));
        let mut fixed = ThreadPlanner::new(ThreadSetting::Fixed((1, 2)));
        assert_eq!(fixed.update(), None);
    }

    #[test]
    fn proc_counters_parse() {
        let stat = "cpu  100 5 50 800 20 3 2 10 0 0\ncpu0 50 2 25 400 10 1 1 5 0 0\ncpu1 50 3 25 400 10 2 1 5 0 0\nintr 1\n";
        let own = "1234 (my (odd) app) S 1 2 3 4 5 6 7 8 9 10 42 8 0 0 20 0";
        let t = parse_cpu_times(stat, own).expect("parses");
        assert_eq!(t.total, 990);
        assert_eq!(t.busy, 170);
        assert_eq!(t.own, 50);
        assert_eq!(t.cores, 2);
    }

    #[test]
    fn other_processes_are_what_is_busy_but_not_ours() {
        let before = CpuTimes {
            total: 1000,
            busy: 100,
            own: 50,
            cores: 2,
        };
        // 200 ticks over 2 cores: 150 busy, 50 of them ours.
        let after = CpuTimes {
            total: 1200,
            busy: 250,
            own: 100,
            cores: 2,
        };
        assert!((others_between(&before, &after) - 1.0).abs() < 1e-9);
    }

    #[test]
    fn this_machine_reads_its_own_counters() {
        if std::path::Path::new("/proc/stat").exists() {
            let t = cpu_times().expect("/proc is readable");
            assert!(t.total >= t.busy && t.cores >= 1);
        }
    }
}
