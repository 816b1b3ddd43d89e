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
        }
    }
}
