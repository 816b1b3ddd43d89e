//! Measurements of the current process: resident and peak memory from `/proc/self/status`,
//! and returning freed heap memory to the OS before reading it.

/// A field of `/proc/self/status` in KiB (e.g. `VmRSS`, `VmHWM`); `None` where unavailable.
pub fn status_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status.lines().find_map(|line| {
        let rest = line.strip_prefix(field)?.strip_prefix(':')?;
        rest.trim().trim_end_matches("kB").trim().parse().ok()
    })
}

/// Resident memory in bytes, after handing freed heap pages back to the OS.
pub fn resident_bytes_trimmed() -> Option<u64> {
    trim_heap();
    status_kib("VmRSS").map(|kib| kib * 1024)
}

/// Peak resident memory in KiB.
pub fn peak_rss_kib() -> Option<u64> {
    status_kib("VmHWM")
}

/// CPU seconds (user + system) this process has used so far, from `getrusage`; 0 where
/// unavailable.
pub fn cpu_seconds() -> f64 {
    usage().cpu_s()
}

/// What `getrusage` says this process (all its threads) has used so far: zeros where
/// unavailable.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Usage {
    /// CPU seconds in user space.
    pub user_s: f64,
    /// CPU seconds in the kernel.
    pub system_s: f64,
    /// Context switches: a thread gave up the CPU (to wait for I/O, a lock, a timer) or was
    /// preempted. Each wake-up of an idle runtime thread is one of the first kind.
    pub context_switches: u64,
    /// Minor page faults: pages the kernel had to map (and zero) at their first touch, as
    /// a heap that grows meets them.
    pub minor_faults: u64,
}

impl Usage {
    /// CPU seconds, user and kernel.
    pub fn cpu_s(&self) -> f64 {
        self.user_s + self.system_s
    }
}

impl std::ops::Sub for Usage {
    type Output = Usage;
    fn sub(self, earlier: Usage) -> Usage {
        Usage {
            user_s: self.user_s - earlier.user_s,
            system_s: self.system_s - earlier.system_s,
            context_switches: self
                .context_switches
                .saturating_sub(earlier.context_switches),
            minor_faults: self.minor_faults.saturating_sub(earlier.minor_faults),
        }
    }
}

/// This process's [`Usage`] so far.
pub fn usage() -> Usage {
    usage_impl()
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn usage_impl() -> Usage {
    /// glibc's `struct timeval` and `struct rusage` on 64-bit Linux.
    #[repr(C)]
    #[derive(Default)]
    struct TimeVal {
        sec: i64,
        usec: i64,
    }
    #[repr(C)]
    #[derive(Default)]
    struct RUsage {
        utime: TimeVal,
        stime: TimeVal,
        /// maxrss, ixrss, idrss, isrss.
        sizes: [i64; 4],
        minflt: i64,
        /// majflt to nsignals (7 fields), then nvcsw and nivcsw.
        rest: [i64; 7],
        nvcsw: i64,
        nivcsw: i64,
    }
    unsafe extern "C" {
        fn getrusage(who: i32, usage: *mut RUsage) -> i32;
    }
    const RUSAGE_SELF: i32 = 0;
    let mut usage = RUsage::default();
    // SAFETY: `usage` is a valid, writable `struct rusage` of the platform's layout.
    if unsafe { getrusage(RUSAGE_SELF, &mut usage) } != 0 {
        return Usage::default();
    }
    let seconds = |t: &TimeVal| t.sec as f64 + t.usec as f64 / 1e6;
    Usage {
        user_s: seconds(&usage.utime),
        system_s: seconds(&usage.stime),
        context_switches: u64::try_from(usage.nvcsw.saturating_add(usage.nivcsw)).unwrap_or(0),
        minor_faults: u64::try_from(usage.minflt).unwrap_or(0),
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn usage_impl() -> Usage {
    Usage::default()
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn trim_heap() {
    unsafe extern "C" {
        fn malloc_trim(pad: usize) -> i32;
    }
    // SAFETY: glibc's malloc_trim only releases free memory; it has no preconditions.
    unsafe {
        malloc_trim(0);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn trim_heap() {}

#[cfg(test)]
mod tests {
    #[test]
    fn reads_own_memory() {
        if cfg!(target_os = "linux") {
            let resident = super::status_kib("VmRSS").unwrap();
            assert!(resident > 0);
            // The peak only grows, so a later reading is at least the earlier resident size.
            assert!(super::peak_rss_kib().unwrap() >= resident);
            // Some CPU time has been used by now, and it never goes backwards.
            let spent = super::cpu_seconds();
            let spin: u64 = (0..2_000_000u64).fold(0, |a, b| a.wrapping_add(b * b));
            std::hint::black_box(spin);
            assert!(spent > 0.0 && super::cpu_seconds() >= spent);
            // A thread that sleeps gives up the CPU: one more context switch at least.
            let before = super::usage();
            std::thread::sleep(std::time::Duration::from_millis(1));
            assert!(super::usage().context_switches > before.context_switches);
            // Touching fresh pages faults them in: 64 MiB is 16,384 pages of 4 KiB.
            let before = super::usage();
            let pages = vec![1u8; 64 << 20];
            std::hint::black_box(&pages);
            assert!((super::usage() - before).minor_faults >= 4_096);
        }
    }
}
