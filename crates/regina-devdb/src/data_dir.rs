//! Choosing the data directory: the requested one when the server's user can reach it, else a
//! fallback under the system temp directory.

use std::fs;
use std::io;
use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::process::Command;

use super::tools::PostgresUser;
use super::{io_error, DevDbError};

/// Uses `requested` when the server's user can work in it, else a directory under the temp dir.
pub(super) fn data_dir_prepare(
    requested: &Path,
    owner: Option<&PostgresUser>,
) -> Result<PathBuf, DevDbError> {
    let requested =
        std::path::absolute(requested).map_err(|e| io_error(e, "resolve", requested))?;
    let location = PathBuf::from(format!("{}.location", requested.display()));
    let reason = match data_dir_try(&requested, owner) {
        Ok(()) => {
            // A stale pointer would send scripts to the wrong cluster.
            let _ = fs::remove_file(&location);
            return Ok(requested);
        }
        Err(reason) => reason,
    };
    let fallback = std::env::temp_dir().join(format!(
        "regina-pg-{:016x}",
        fnv1a(requested.as_os_str().as_encoded_bytes())
    ));
    tracing::warn!(
        requested = %requested.display(),
        fallback = %fallback.display(),
        "{reason}; using the fallback data directory instead"
    );
    data_dir_try(&fallback, owner).map_err(|reason| DevDbError::Io {
        action: format!("prepare data directory {}", fallback.display()),
        source: io::Error::other(reason),
    })?;
    if let Err(e) = fs::write(&location, fallback.as_os_str().as_encoded_bytes()) {
        tracing::warn!(path = %location.display(), "cannot record the fallback location: {e}");
    }
    Ok(fallback)
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
