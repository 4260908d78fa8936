//! The calling thread's CPU clock, which the synthetic units are measured against.

// clock_gettime is a foreign function; the block says why it is sound.
#![allow(unsafe_code)]

/// CPU time the calling thread has used, in microseconds; `None` where there is no
/// thread CPU clock.
pub(crate) fn now_us() -> Option<f64> {
    #[cfg(target_os = "linux")]
    {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime writes one timespec into the value we pass and reads
        // nothing else.
        let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        (rc == 0).then(|| ts.tv_sec as f64 * 1e6 + ts.tv_nsec as f64 / 1e3)
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

#[cfg(test)]
mod tests {
    #[test]
    #[cfg(target_os = "linux")]
    fn the_clock_advances_with_work() {
        let a = super::now_us().expect("a thread CPU clock on Linux");
        let mut x = 0u64;
        for i in 0..5_000_000u64 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
        }
        let b = super::now_us().expect("a thread CPU clock on Linux");
        assert!(b > a, "{a} then {b}");
    }
}
