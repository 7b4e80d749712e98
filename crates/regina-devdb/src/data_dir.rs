//! Choosing the data directory: the requested one when the server's user can reach it, else a
//! fallback under the system temp directory. A cluster that asks for memory and does not exist
//! yet goes to the memory file system (`/dev/shm`) when it is a tmpfs with room to spare.

use std::fs;
use std::io;
use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::process::Command;

use super::tools::PostgresUser;
use super::{io_error, DevDbError};

/// The memory file system a cluster that asks for memory is placed on.
const MEMORY_ROOT: &str = "/dev/shm";
/// Free space the memory file system must have for a new cluster to be placed on it: a test
/// cluster holds a few dozen databases of about 10 MB and its write-ahead log.
const MEMORY_FREE_MIN: u64 = 2 << 30;
/// `f_type` of a tmpfs in `statfs`.
const TMPFS_MAGIC: i64 = 0x0102_1994;

/// Uses `requested` when the server's user can work in it, else a directory under the temp dir.
/// With `memory`, a cluster that is not in `requested` already lives under [`MEMORY_ROOT`] when
/// that is a tmpfs with [`MEMORY_FREE_MIN`] free (or holds this cluster from an earlier start).
/// Wherever it lands other than `requested`, `<requested>.location` names it.
pub(super) fn data_dir_prepare(
    requested: &Path,
    owner: Option<&PostgresUser>,
    memory: bool,
) -> Result<PathBuf, DevDbError> {
    let requested =
        std::path::absolute(requested).map_err(|e| io_error(e, "resolve", requested))?;
    let location = PathBuf::from(format!("{}.location", requested.display()));
    if memory && !requested.join("PG_VERSION").exists() {
        if let Some(dir) = memory_dir(Path::new(MEMORY_ROOT), &requested) {
            match data_dir_try(&dir, owner) {
                Ok(()) => {
                    location_record(&location, &dir);
                    return Ok(dir);
                }
                Err(reason) => tracing::warn!("{reason}; the cluster stays on disk"),
            }
        }
    }
    let reason = match data_dir_try(&requested, owner) {
        Ok(()) => {
            // A stale pointer would send scripts to the wrong cluster.
            let _ = fs::remove_file(&location);
            return Ok(requested);
        }
        Err(reason) => reason,
    };
    let fallback = std::env::temp_dir().join(hashed_name(&requested));
    tracing::warn!(
        requested = %requested.display(),
        fallback = %fallback.display(),
        "{reason}; using the fallback data directory instead"
    );
    data_dir_try(&fallback, owner).map_err(|reason| DevDbError::Io {
        action: format!("prepare data directory {}", fallback.display()),
        source: io::Error::other(reason),
    })?;
    location_record(&location, &fallback);
    Ok(fallback)
}

/// Where the cluster asked for in `requested` lives in memory under `root`: its directory from an
/// earlier start, else a new one when `root` is a tmpfs with room; `None` keeps it on disk.
fn memory_dir(root: &Path, requested: &Path) -> Option<PathBuf> {
    let dir = root.join(hashed_name(requested));
    (dir.join("PG_VERSION").exists() || tmpfs_with_room(root)).then_some(dir)
}

/// Whether `root` is a tmpfs with [`MEMORY_FREE_MIN`] free.
fn tmpfs_with_room(root: &Path) -> bool {
    let Ok(stat) = rustix::fs::statfs(root) else {
        return false;
    };
    let free = stat
        .f_bavail
        .saturating_mul(u64::try_from(stat.f_bsize).unwrap_or(0));
    #[allow(
        clippy::useless_conversion,
        reason = "`f_type` is an i64 on x86-64 glibc but narrower on other targets"
    )]
    let tmpfs = i64::from(stat.f_type) == TMPFS_MAGIC;
    tmpfs && free >= MEMORY_FREE_MIN
}

/// The name of the directory a cluster asked for in `requested` gets elsewhere (in memory, or
/// under the temp directory): one per requested path, stable across builds.
fn hashed_name(requested: &Path) -> String {
    format!(
        "regina-pg-{:016x}",
        fnv1a(requested.as_os_str().as_encoded_bytes())
    )
}

/// Writes `<requested>.location`, which scripts follow to a cluster that is not in `requested`.
fn location_record(location: &Path, dir: &Path) {
    if let Err(e) = fs::write(location, dir.as_os_str().as_encoded_bytes()) {
        tracing::warn!(path = %location.display(), "cannot record the cluster's location: {e}");
    }
}

/// Creates `dir` (mode 0700, owned by the server's user) and checks the server's user can use it.
fn data_dir_try(dir: &Path, owner: Option<&PostgresUser>) -> Result<(), String> {
    fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let metadata = fs::metadata(dir).map_err(|e| format!("cannot stat {}: {e}", dir.display()))?;
    if metadata.permissions().mode() & 0o077 != 0 {
        fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
            .map_err(|e| format!("cannot chmod {}: {e}", dir.display()))?;
    }
    let Some(owner) = owner else {
        return Ok(());
    };
    if metadata.uid() != owner.uid {
        std::os::unix::fs::chown(dir, Some(owner.uid), Some(owner.gid))
            .map_err(|e| format!("cannot chown {} to postgres: {e}", dir.display()))?;
    }
    let usable = Command::new(&owner.runuser)
        .args(["-u", "postgres", "--", "test", "-w"])
        .arg(dir)
        .current_dir("/")
        .status()
        .is_ok_and(|s| s.success());
    if usable {
        Ok(())
    } else {
        Err(format!(
            "the `postgres` user cannot use {} (a parent directory is not traversable)",
            dir.display()
        ))
    }
}

/// 64-bit FNV-1a: stable across builds and platforms, unlike `DefaultHasher`.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh path under the temp directory for one test.
    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("regina-devdb-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).expect("scratch directory");
        dir
    }

    #[test]
    fn a_new_cluster_asking_for_memory_lives_in_memory_and_is_recorded() {
        if !tmpfs_with_room(Path::new(MEMORY_ROOT)) {
            eprintln!("{MEMORY_ROOT} is not a tmpfs with room: nothing to check here");
            return;
        }
        let requested = scratch("memory").join("pg");
        let dir = data_dir_prepare(&requested, None, true).expect("prepare");
        assert!(dir.starts_with(MEMORY_ROOT), "{}", dir.display());
        assert!(!requested.exists(), "the requested directory is not made");
        let location = fs::read_to_string(format!("{}.location", requested.display()))
            .expect("the location is recorded");
        assert_eq!(Path::new(&location), dir);
        // The same request finds the same directory again.
        assert_eq!(
            data_dir_prepare(&requested, None, true).expect("again"),
            dir
        );
        fs::remove_dir_all(&dir).expect("remove the memory directory");
    }

    #[test]
    fn a_cluster_already_on_disk_stays_there() {
        let requested = scratch("on-disk").join("pg");
        fs::create_dir_all(&requested).expect("data directory");
        fs::write(requested.join("PG_VERSION"), "15\n").expect("PG_VERSION");
        assert_eq!(
            data_dir_prepare(&requested, None, true).expect("prepare"),
            requested
        );
        assert!(!Path::new(&format!("{}.location", requested.display())).exists());
    }

    #[test]
    fn memory_is_only_a_tmpfs_or_a_cluster_already_there() {
        let requested = scratch("other-fs").join("pg");
        // procfs is no tmpfs.
        assert_eq!(memory_dir(Path::new("/proc"), &requested), None);
        // Nor, most often, is the temp directory; a cluster there is found whatever it is on.
        let root = scratch("root");
        let expected = root.join(hashed_name(&requested));
        fs::create_dir_all(&expected).expect("cluster directory");
        fs::write(expected.join("PG_VERSION"), "15\n").expect("PG_VERSION");
        assert_eq!(memory_dir(&root, &requested), Some(expected));
    }

    #[test]
    fn without_memory_the_requested_directory_is_used() {
        let requested = scratch("disk").join("pg");
        assert_eq!(
            data_dir_prepare(&requested, None, false).expect("prepare"),
            requested
        );
        assert!(requested.is_dir());
    }
}
