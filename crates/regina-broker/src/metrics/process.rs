//! This process's memory and CPU, read from `/proc` (Linux). Where `/proc` is unreadable, the
//! figures read `0`.

/// Clock ticks per second assumed when the kernel does not say (`AT_CLKTCK` in the auxiliary
/// vector): Linux's `USER_HZ` is 100 on every mainstream architecture. `sysconf` would need
/// `unsafe` or `libc`, which the workspace does without.
const CLOCK_TICKS_PER_SECOND_DEFAULT: u64 = 100;

/// The kernel's clock tick rate (the unit of `/proc/self/stat` CPU times).
pub(crate) fn clock_ticks_per_second() -> u64 {
    let auxv = std::fs::read("/proc/self/auxv").unwrap_or_default();
    clock_ticks_in(&auxv).unwrap_or(CLOCK_TICKS_PER_SECOND_DEFAULT)
}

/// Memory and CPU of this process.
pub(crate) struct ProcessSample {
    /// Resident set size, bytes.
    pub(crate) rss_bytes: u64,
    /// CPU time in user mode since the process started, seconds.
    pub(crate) user_seconds: f64,
    /// CPU time in kernel mode since the process started, seconds.
    pub(crate) system_seconds: f64,
}

impl ProcessSample {
    /// Reads `/proc/self`; zeros where it is unreadable.
    pub(crate) async fn read(clock_ticks_per_second: u64) -> ProcessSample {
        let status = tokio::fs::read_to_string("/proc/self/status").await;
        let stat = tokio::fs::read_to_string("/proc/self/stat").await;
        let (user, system) = stat.ok().and_then(|s| cpu_ticks(&s)).unwrap_or((0, 0));
        let ticks = clock_ticks_per_second.max(1) as f64;
        ProcessSample {
            rss_bytes: status.ok().and_then(|s| rss_bytes(&s)).unwrap_or(0),
            user_seconds: user as f64 / ticks,
            system_seconds: system as f64 / ticks,
        }
    }
}

/// Resident set size from `/proc/self/status` (`VmRSS:  1234 kB`), bytes.
fn rss_bytes(status: &str) -> Option<u64> {
    let line = status.lines().find_map(|l| l.strip_prefix("VmRSS:"))?;
    let mut parts = line.split_whitespace();
    let kibibytes: u64 = parts.next()?.parse().ok()?;
    (parts.next() == Some("kB")).then_some(kibibytes * 1024)
}

/// User and system CPU time from `/proc/self/stat` (fields 14 and 15), clock ticks. The command
/// name (field 2) may hold spaces and parentheses, so fields are counted after its last `)`.
fn cpu_ticks(stat: &str) -> Option<(u64, u64)> {
    let (_, after_name) = stat.rsplit_once(')')?;
    // After the name come field 3 (state) onwards: utime is the 12th of those.
    let mut fields = after_name.split_whitespace().skip(11);
    let user = fields.next()?.parse().ok()?;
    let system = fields.next()?.parse().ok()?;
    Some((user, system))
}

/// `AT_CLKTCK` from the auxiliary vector (`/proc/self/auxv`: native-endian word pairs
/// `(type, value)` ending with `AT_NULL`).
fn clock_ticks_in(auxv: &[u8]) -> Option<u64> {
    const AT_NULL: usize = 0;
    const AT_CLKTCK: usize = 17;
    let mut words = auxv
        .chunks_exact(std::mem::size_of::<usize>())
        .filter_map(|chunk| chunk.try_into().ok().map(usize::from_ne_bytes));
    loop {
        let (kind, value) = (words.next()?, words.next()?);
        match kind {
            AT_NULL => return None,
            AT_CLKTCK if value > 0 => return u64::try_from(value).ok(),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rss_is_read_from_status_in_bytes() {
        let status = "Name:\tregina\nVmPeak:\t  9000 kB\nVmRSS:\t    5120 kB\nThreads:\t4\n";
        assert_eq!(rss_bytes(status), Some(5120 * 1024));
        assert_eq!(rss_bytes("Name:\tregina\n"), None);
        assert_eq!(rss_bytes("VmRSS:\t12 MB\n"), None);
        assert_eq!(rss_bytes("VmRSS:\tlots kB\n"), None);
    }

    #[test]
    fn cpu_ticks_are_fields_14_and_15_even_with_odd_command_names() {
        let stat = "4242 (reg) ina (x)) S 1 4242 4242 0 -1 4194560 2263 0 0 0 731 58 0 0 20 0 \
                    9 0 123456 123456789 1280 18446744073709551615";
        assert_eq!(cpu_ticks(stat), Some((731, 58)));
        assert_eq!(cpu_ticks("4242 (regina) S 1 2 3"), None);
        assert_eq!(cpu_ticks("no parenthesis"), None);
    }

    #[test]
    fn clock_tick_rate_is_found_in_the_auxiliary_vector() {
        let vector = |pairs: &[(usize, usize)]| -> Vec<u8> {
            pairs
                .iter()
                .flat_map(|(k, v)| [k.to_ne_bytes(), v.to_ne_bytes()])
                .flatten()
                .collect()
        };
        assert_eq!(
            clock_ticks_in(&vector(&[(6, 4096), (17, 250), (0, 0)])),
            Some(250)
        );
        assert_eq!(
            clock_ticks_in(&vector(&[(6, 4096), (0, 0), (17, 250)])),
            None
        );
        assert_eq!(clock_ticks_in(&vector(&[(6, 4096)])), None);
        assert_eq!(clock_ticks_in(&[1, 2, 3]), None);
    }
}
