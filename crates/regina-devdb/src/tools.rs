//! Finding and running PostgreSQL's programs, as the `postgres` OS user when this process is root.

use std::fs;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use super::{io_error, DevDbError};

/// Programs run from the PostgreSQL binary directory.
const PROGRAMS: [&str; 3] = ["initdb", "pg_ctl", "postgres"];
/// Debian's (and Ubuntu's) location of versioned PostgreSQL installations.
const DEBIAN_PG_ROOT: &str = "/usr/lib/postgresql";

/// How to run PostgreSQL's programs on this machine.
#[derive(Clone, Debug)]
pub(super) struct Tools {
    bin_dir: PathBuf,
    /// Set when this process is root: the `postgres` user's ids and `runuser`.
    owner: Option<PostgresUser>,
}

#[derive(Clone, Debug)]
pub(super) struct PostgresUser {
    pub(super) uid: u32,
    pub(super) gid: u32,
    pub(super) runuser: PathBuf,
}

impl Tools {
    pub(super) fn find(
        preferred_major: Option<&str>,
        owner: Option<PostgresUser>,
    ) -> Result<Tools, DevDbError> {
        let bin_dir = bin_dir_find(preferred_major)?;
        for program in PROGRAMS {
            if !bin_dir.join(program).is_file() {
                return Err(DevDbError::BinaryMissing {
                    binary: program.to_owned(),
                    searched: bin_dir.display().to_string(),
                });
            }
        }
        Ok(Tools { bin_dir, owner })
    }

    /// A command running `program` from the binary directory, as `postgres` when we are root.
    pub(super) fn command(&self, program: &str) -> Command {
        let path = self.bin_dir.join(program);
        let mut command = match &self.owner {
            Some(owner) => {
                let mut c = Command::new(&owner.runuser);
                c.args(["-u", "postgres", "--"]).arg(path);
                c
            }
            None => Command::new(path),
        };
        // The caller's directory may be unreadable by `postgres`; libpq variables would redirect
        // the programs to another server.
        command
            .current_dir("/")
            .env("LC_ALL", "C")
            .stdin(Stdio::null());
        for var in [
            "PGDATA",
            "PGHOST",
            "PGPORT",
            "PGUSER",
            "PGDATABASE",
            "PGOPTIONS",
        ] {
            command.env_remove(var);
        }
        command
    }

    pub(super) fn chown(&self, path: &Path) -> Result<(), DevDbError> {
        match &self.owner {
            Some(owner) => std::os::unix::fs::chown(path, Some(owner.uid), Some(owner.gid))
                .map_err(|e| io_error(e, "chown to postgres", path)),
            None => Ok(()),
        }
    }

    pub(super) fn version_check(
        &self,
        data_dir: &Path,
        data_version: &str,
    ) -> Result<(), DevDbError> {
        let mut command = self.command("postgres");
        command.arg("--version");
        let output = run(command)?;
        let binary_version = major_version(&String::from_utf8_lossy(&output.stdout));
        if binary_version == data_version {
            return Ok(());
        }
        Err(DevDbError::VersionMismatch {
            data_dir: data_dir.to_owned(),
            data_version: data_version.to_owned(),
            binary_version,
        })
    }

    pub(super) fn initdb(&self, data_dir: &Path, fast_unsafe: bool) -> Result<(), DevDbError> {
        let mut command = self.command("initdb");
        command.arg("-D").arg(data_dir).args([
            "--auth=trust",
            "-U",
            "postgres",
            "-E",
            "UTF8",
            "--locale=C",
        ]);
        if fast_unsafe {
            command.arg("--no-sync");
        }
        run(command)?;
        let conf = data_dir.join("postgresql.conf");
        let mut text = fs::read_to_string(&conf).map_err(|e| io_error(e, "read", &conf))?;
        text.push_str("\ninclude_if_exists = 'regina.conf'\n");
        fs::write(&conf, text).map_err(|e| io_error(e, "write", &conf))
    }
}

/// The highest-versioned Debian installation (or the one matching `preferred_major`), else the
/// directory named by `pg_config --bindir`.
fn bin_dir_find(preferred_major: Option<&str>) -> Result<PathBuf, DevDbError> {
    let mut versions: Vec<(Vec<u32>, String, PathBuf)> = fs::read_dir(DEBIAN_PG_ROOT)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let key = name
                .split('.')
                .map(|p| p.parse().ok())
                .collect::<Option<Vec<u32>>>()?;
            let bin = entry.path().join("bin");
            bin.join("initdb").is_file().then_some((key, name, bin))
        })
        .collect();
    versions.sort();
    if let Some(found) = versions
        .iter()
        .find(|v| Some(v.1.as_str()) == preferred_major)
    {
        return Ok(found.2.clone());
    }
    if let Some(highest) = versions.pop() {
        return Ok(highest.2);
    }
    let from_pg_config = Command::new("pg_config")
        .arg("--bindir")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
        .filter(|dir| dir.join("initdb").is_file());
    from_pg_config.ok_or_else(|| DevDbError::BinaryMissing {
        binary: "initdb".to_owned(),
        searched: format!("{DEBIAN_PG_ROOT}/*/bin and `pg_config --bindir`"),
    })
}

/// `postgres (PostgreSQL) 15.18 (Debian …)` → `15`; before version 10 the major had two parts.
fn major_version(version_output: &str) -> String {
    let number = version_output
        .split_whitespace()
        .find(|w| w.starts_with(|c: char| c.is_ascii_digit()))
        .unwrap_or_default();
    let parts: Vec<&str> = number.split('.').collect();
    match parts.first().and_then(|p| p.parse::<u32>().ok()) {
        Some(major) if major < 10 && parts.len() > 1 => format!("{major}.{}", parts[1]),
        _ => parts.first().copied().unwrap_or_default().to_owned(),
    }
}

pub(super) fn process_is_root() -> bool {
    fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

pub(super) fn postgres_user() -> Result<PostgresUser, DevDbError> {
    let id = |flag: &str| -> Result<u32, DevDbError> {
        let output = Command::new("id")
            .args([flag, "postgres"])
            .output()
            .map_err(|e| DevDbError::PostgresUserUnavailable(format!("cannot run `id`: {e}")))?;
        String::from_utf8_lossy(&output.stdout)
            .trim()
            .parse()
            .map_err(|_| DevDbError::PostgresUserUnavailable("no such user".to_owned()))
    };
    let runuser = ["/usr/sbin/runuser", "/sbin/runuser", "/usr/bin/runuser"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .ok_or_else(|| DevDbError::PostgresUserUnavailable("`runuser` not found".to_owned()))?;
    Ok(PostgresUser {
        uid: id("-u")?,
        gid: id("-g")?,
        runuser,
    })
}

/// Runs `command`, failing with its output when it exits non-zero.
pub(super) fn run(mut command: Command) -> Result<Output, DevDbError> {
    let rendered = format!("{command:?}");
    let output = command.output().map_err(|e| DevDbError::Io {
        action: format!("run {rendered}"),
        source: e,
    })?;
    if output.status.success() {
        return Ok(output);
    }
    Err(DevDbError::Command {
        command: rendered,
        status: output.status.to_string(),
        output: format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn major_version_reads_modern_and_old_numbering() {
        assert_eq!(
            major_version("postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)"),
            "15"
        );
        assert_eq!(major_version("postgres (PostgreSQL) 9.6.24"), "9.6");
    }
}
