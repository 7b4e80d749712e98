//! CPU time and memory of processes, read from `/proc` (Linux only; elsewhere every reading is
//! absent and the figures come out as zero or `None`).
//!
//! CPU times in `/proc/<pid>/stat` are in clock ticks of `USER_HZ`. Reading it properly needs
//! `sysconf(_SC_CLK_TCK)`, which is an `unsafe` FFI call here; `USER_HZ` is part of the kernel's
//! user-space ABI and is 100 on every architecture Linux still supports for servers (x86, arm64,
//! ppc64, s390x, riscv), independently of the kernel's internal `HZ`, so it is a constant here.

use std::path::Path;

/// Clock ticks per second of the CPU times in `/proc/<pid>/stat` (`USER_HZ`, see the module doc).
pub const TICKS_PER_SEC: f64 = 100.0;

/// The fields of `/proc/<pid>/stat` the sampler uses.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProcStat {
    /// Process id (field 1).
    pub pid: u32,
    /// Executable name, at most 15 bytes (field 2, without the parentheses).
    pub comm: String,
    /// Parent's pid (field 4).
    pub ppid: u32,
    /// User-mode CPU time, ticks (field 14).
    pub utime: u64,
    /// Kernel-mode CPU time, ticks (field 15).
    pub stime: u64,
    /// User-mode CPU time of children that exited and were waited for, ticks (field 16).
    pub cutime: u64,
    /// Kernel-mode CPU time of waited-for children, ticks (field 17).
    pub cstime: u64,
}

impl ProcStat {
    /// The process's own CPU time, ticks.
    pub fn own_ticks(&self) -> u64 {
        self.utime + self.stime
    }

    /// Own CPU time plus that of the children it has reaped, ticks.
    pub fn tree_ticks(&self) -> u64 {
        self.utime + self.stime + self.cutime + self.cstime
    }
}

/// Parses one `/proc/<pid>/stat` line.
///
/// The name (field 2) is in parentheses and may itself contain spaces and parentheses, so the
/// line is split at the first `(` and the *last* `)`; the fields after it are space-separated.
/// Returns None for anything malformed.
pub fn parse_stat(line: &str) -> Option<ProcStat> {
    let open = line.find('(')?;
    let close = line.rfind(')')?;
    if close < open {
        return None;
    }
    let pid = line[..open].trim().parse().ok()?;
    let comm = line[open + 1..close].to_owned();
    // Fields from 3 (state) on; index 0 here is field 3.
    let rest: Vec<&str> = line[close + 1..].split_whitespace().collect();
    let field = |n: usize| -> Option<u64> { rest.get(n - 3)?.parse().ok() };
    // cutime and cstime are signed in the kernel's format (`%ld`) but never negative in practice.
    let signed = |n: usize| -> Option<u64> {
        let v: i64 = rest.get(n - 3)?.parse().ok()?;
        Some(v.max(0).unsigned_abs())
    };
    Some(ProcStat {
        pid,
        comm,
        ppid: u32::try_from(field(4)?).ok()?,
        utime: field(14)?,
        stime: field(15)?,
        cutime: signed(16)?,
        cstime: signed(17)?,
    })
}

/// `VmRSS` of a `/proc/<pid>/status` text, in bytes. None when absent (kernel threads, zombies).
pub fn parse_status_rss(status: &str) -> Option<u64> {
    kib_field(status, "VmRSS:")
}

/// A `Name:   <n> kB` field of `/proc/<pid>/status` or `/proc/meminfo`, in bytes.
pub fn kib_field(text: &str, name: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with(name))?;
    let mut parts = line[name.len()..].split_whitespace();
    let value: u64 = parts.next()?.parse().ok()?;
    let factor = match parts.next() {
        None => 1,
        Some(unit) if unit.eq_ignore_ascii_case("kb") => 1024,
        Some(unit) if unit.eq_ignore_ascii_case("mb") => 1024 * 1024,
        Some(_) => return None,
    };
    value.checked_mul(factor)
}

/// CPU model and logical CPU count from a `/proc/cpuinfo` text.
///
/// The model is the first `model name` (x86), else `Hardware`, `Model`, `cpu model` or `cpu`
/// (other architectures); the count is the number of `processor` entries.
pub fn parse_cpuinfo(text: &str) -> (Option<String>, usize) {
    let value = |key: &str| {
        text.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == key && !v.trim().is_empty()).then(|| v.trim().to_owned())
        })
    };
    let model = ["model name", "Hardware", "Model", "cpu model", "cpu"]
        .iter()
        .find_map(|k| value(k));
    let cpus = text
        .lines()
        .filter(|l| {
            l.split_once(':')
                .is_some_and(|(k, _)| k.trim() == "processor")
        })
        .count();
    (model, cpus)
}

/// Reads and parses `/proc/<pid>/stat`.
pub fn read_stat(pid: u32) -> Option<ProcStat> {
    read_stat_at(&Path::new("/proc").join(pid.to_string()))
}

/// Reads and parses `/proc/self/stat`.
pub fn read_self_stat() -> Option<ProcStat> {
    read_stat_at(Path::new("/proc/self"))
}

fn read_stat_at(dir: &Path) -> Option<ProcStat> {
    parse_stat(&std::fs::read_to_string(dir.join("stat")).ok()?)
}

/// Resident set size of a process, bytes.
pub fn read_rss(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    parse_status_rss(&status)
}

/// Every process's `stat`, in no particular order. Processes that exit while being read are
/// skipped.
pub fn scan() -> Vec<ProcStat> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
        })
        .filter_map(|e| read_stat_at(&e.path()))
        .collect()
}

/// Which processes make up PostgreSQL.
#[derive(Clone, Copy, Debug)]
pub enum Selector {
    /// The postmaster with this pid and its children.
    Postmaster(u32),
    /// Every process named `postgres`.
    ByName,
}

impl Selector {
    /// The processes of `all` that belong to PostgreSQL.
    pub fn select<'a>(&self, all: &'a [ProcStat]) -> Vec<&'a ProcStat> {
        match *self {
            Selector::Postmaster(pid) => all
                .iter()
                .filter(|p| p.pid == pid || p.ppid == pid)
                .collect(),
            Selector::ByName => all.iter().filter(|p| p.comm == "postgres").collect(),
        }
    }
}

/// A reading of PostgreSQL's processes at one instant.
#[derive(Clone, Copy, Debug, Default)]
pub struct GroupReading {
    /// Cumulative CPU of the group, ticks (see [`group_reading`]).
    pub ticks: u64,
    /// Sum of the processes' RSS, bytes.
    pub rss_bytes: u64,
    /// Processes found.
    pub processes: usize,
}

/// Cumulative CPU ticks and summed RSS of the processes `selector` picks, from a fresh scan of
/// `/proc` (backends come and go, so every reading scans again).
///
/// The CPU figure is, over the selected processes, own time *plus the time of children they have
/// reaped* (`cutime + cstime`). A backend's own time is counted while it lives; when it exits,
/// the postmaster reaps it and the kernel adds its whole CPU time to the postmaster's
/// `cutime/cstime`, so the sum does not drop and the CPU a short-lived backend used between two
/// readings is still counted. The difference of two readings is therefore the group's CPU in
/// between, including backends that started and exited in between, as long as the postmaster is
/// among the selected processes (always with [`Selector::Postmaster`]; with [`Selector::ByName`]
/// when the postmaster runs as `postgres`, which is the norm). A backend that has exited but is
/// not yet reaped is a zombie whose times `/proc` still shows, so it is not lost either. Missed:
/// processes that do not descend from a selected process, and with [`Selector::ByName`] every
/// other PostgreSQL cluster on the machine is counted too.
pub fn group_reading(selector: Selector, all: &[ProcStat]) -> GroupReading {
    let selected = selector.select(all);
    let ticks = selected.iter().map(|p| p.tree_ticks()).sum();
    let rss_bytes = selected.iter().filter_map(|p| read_rss(p.pid)).sum();
    GroupReading {
        ticks,
        rss_bytes,
        processes: selected.len(),
    }
}

/// A reading of one process (the broker, or the harness itself).
#[derive(Clone, Copy, Debug, Default)]
pub struct ProcessReading {
    /// Own CPU time, ticks.
    pub ticks: u64,
    /// RSS, bytes (None when unreadable).
    pub rss_bytes: Option<u64>,
}

/// Reads one process; None when it does not exist (or `/proc` is unavailable).
pub fn process_reading(pid: u32) -> Option<ProcessReading> {
    let stat = read_stat(pid)?;
    Some(ProcessReading {
        ticks: stat.own_ticks(),
        rss_bytes: read_rss(pid),
    })
}

/// Ticks as seconds.
pub fn ticks_to_secs(ticks: u64) -> f64 {
    ticks as f64 / TICKS_PER_SEC
}

/// CPU use between two cumulative tick counts `secs` seconds apart, percent of one core (0 when
/// the counter went backwards or no time passed).
pub fn cpu_pct(before: u64, after: u64, secs: f64) -> f64 {
    if secs <= 0.0 {
        return 0.0;
    }
    ticks_to_secs(after.saturating_sub(before)) / secs * 100.0
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = "1234 (postgres) S 1200 1234 1234 0 -1 4194560 2107 0 0 0 \
                        150 37 12 5 20 0 1 0 98765 224739328 6543 18446744073709551615 \
                        1 1 0 0 0 0 0 16781312 19975 0 0 0 17 1 0 0 0 0 0";

    #[test]
    fn stat_fields() {
        let s = parse_stat(STAT).expect("parses");
        assert_eq!(s.pid, 1234);
        assert_eq!(s.comm, "postgres");
        assert_eq!(s.ppid, 1200);
        assert_eq!((s.utime, s.stime, s.cutime, s.cstime), (150, 37, 12, 5));
        assert_eq!(s.own_ticks(), 187);
        assert_eq!(s.tree_ticks(), 204);
    }

    #[test]
    fn stat_name_with_spaces_and_parentheses() {
        let line = STAT.replace("(postgres)", "(my (odd) name) x)");
        let s = parse_stat(&line).expect("parses");
        assert_eq!(s.comm, "my (odd) name) x");
        assert_eq!(s.ppid, 1200);
        assert_eq!(s.utime, 150);
    }

    #[test]
    fn stat_malformed() {
        assert_eq!(parse_stat(""), None);
        assert_eq!(parse_stat("12 (x) S 1 2"), None);
        assert_eq!(parse_stat("x (postgres) S 1"), None);
        assert_eq!(parse_stat(") 12 ("), None);
        // Negative child times (never seen, but the format is signed) read as 0.
        let line = STAT.replace(" 12 5 20 ", " -3 5 20 ");
        assert_eq!(parse_stat(&line).map(|s| s.cutime), Some(0));
    }

    #[test]
    fn own_stat_is_readable() {
        if cfg!(target_os = "linux") {
            let me = read_self_stat().expect("/proc/self/stat");
            assert_eq!(me.pid, std::process::id());
            assert!(read_rss(std::process::id()).is_some_and(|r| r > 0));
            assert!(scan().iter().any(|p| p.pid == std::process::id()));
        }
    }

    #[test]
    fn status_rss() {
        let status = "Name:\tpostgres\nVmPeak:\t  300000 kB\nVmRSS:\t   26172 kB\nThreads:\t1\n";
        assert_eq!(parse_status_rss(status), Some(26_172 * 1024));
        assert_eq!(parse_status_rss("Name:\tkthreadd\nThreads:\t1\n"), None);
        assert_eq!(parse_status_rss("VmRSS:\tlots kB\n"), None);
        assert_eq!(
            kib_field("MemTotal:       16305012 kB\n", "MemTotal:"),
            Some(16_305_012 * 1024)
        );
    }

    #[test]
    fn cpuinfo() {
        let x86 = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) CPU @ 2.20GHz\n\n\
                   processor\t: 1\nmodel name\t: Intel(R) Xeon(R) CPU @ 2.20GHz\n";
        assert_eq!(
            parse_cpuinfo(x86),
            (Some("Intel(R) Xeon(R) CPU @ 2.20GHz".to_owned()), 2)
        );
        let arm = "processor\t: 0\nBogoMIPS\t: 50.00\nCPU part\t: 0xd0c\n\nprocessor\t: 1\n\
                   BogoMIPS\t: 50.00\n\nprocessor\t: 2\n\nHardware\t: Neoverse-N1\n";
        assert_eq!(parse_cpuinfo(arm), (Some("Neoverse-N1".to_owned()), 3));
        assert_eq!(parse_cpuinfo(""), (None, 0));
    }

    #[test]
    fn selectors_and_cpu() {
        let p = |pid, comm: &str, ppid, utime| ProcStat {
            pid,
            comm: comm.to_owned(),
            ppid,
            utime,
            cutime: 7,
            ..ProcStat::default()
        };
        let all = vec![
            p(1, "init", 0, 1),
            p(100, "postgres", 1, 10),
            p(101, "postgres", 100, 20),
            p(102, "postgres", 100, 30),
            p(200, "postgres", 1, 40),
            p(300, "regina", 1, 50),
        ];
        let pids = |v: Vec<&ProcStat>| v.iter().map(|p| p.pid).collect::<Vec<_>>();
        assert_eq!(
            pids(Selector::Postmaster(100).select(&all)),
            vec![100, 101, 102]
        );
        assert_eq!(
            pids(Selector::ByName.select(&all)),
            vec![100, 101, 102, 200]
        );
        assert_eq!(cpu_pct(100, 150, 1.0), 50.0);
        assert_eq!(cpu_pct(100, 350, 2.0), 125.0);
        assert_eq!(cpu_pct(150, 100, 1.0), 0.0);
        assert_eq!(cpu_pct(100, 150, 0.0), 0.0);
        assert_eq!(ticks_to_secs(250), 2.5);
    }
}
