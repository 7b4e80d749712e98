//! The development encryption key. When `regina serve` runs its private development cluster
//! (no database configured) and no payload key is configured either, it uses a key kept in
//! `<project>/.regina/dev-encryption.key` (created on first use, mode 0600), so that queues with
//! `encryptionEnabled` work out of the box. A production start (any database setting) never does
//! this: without a key it keeps refusing encrypting queues (`400 encryption_unavailable`).

use std::fs;
use std::io::{ErrorKind, Write as _};
use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _};
use rand::RngCore as _;
use regina_broker::{Config, Secret};

/// File name of the development key inside the development directory (`.regina/`).
pub const DEV_KEY_FILE: &str = "dev-encryption.key";
/// Bytes of an AES-256 key.
const KEY_BYTES: usize = 32;
/// Owner read/write only: the file holds a secret.
const KEY_FILE_MODE: u32 = 0o600;

/// Whether the key file was made by this call or found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// Written now.
    Created,
    /// Read from an earlier run.
    Reused,
}

/// Sets the development key in `config` when it has no key of its own (neither
/// `REGINA_ENCRYPTION_KEY` nor `QUEEN_ENCRYPTION_KEY`), and says so in the log. Returns the key
/// file's path and origin when it was applied.
///
/// # Errors
/// When the key file cannot be read, written, or holds something other than 64 hex characters.
pub fn apply(config: &mut Config, dev_dir: &Path) -> anyhow::Result<Option<(PathBuf, Origin)>> {
    if config.regina_encryption_key.is_some() || config.queen_encryption_key.is_some() {
        return Ok(None);
    }
    let path = dev_dir.join(DEV_KEY_FILE);
    let (key, origin) = load_or_create(&path)?;
    config.regina_encryption_key = Some(Secret(key));
    let action = match origin {
        Origin::Created => "created",
        Origin::Reused => "reusing",
    };
    tracing::warn!(
        "payload encryption: {action} the development key {} (for development only; \
         set REGINA_ENCRYPTION_KEY in production)",
        path.display()
    );
    Ok(Some((path, origin)))
}

/// The hex key stored at `path`, created (mode 0600) when the file does not exist.
///
/// # Errors
/// I/O failures, and a file that does not hold exactly 64 hex characters (it is never replaced:
/// payloads sealed with it would become unreadable).
pub fn load_or_create(path: &Path) -> anyhow::Result<(String, Origin)> {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
    }
    let key = key_new();
    let created = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(KEY_FILE_MODE)
        .open(path);
    match created {
        Ok(mut file) => {
            file.write_all(format!("{key}\n").as_bytes())
                .and_then(|()| file.sync_all())
                .with_context(|| format!("write {}", path.display()))?;
            // The mode above is filtered by the umask; make sure it is exactly 0600.
            fs::set_permissions(path, fs::Permissions::from_mode(KEY_FILE_MODE))
                .with_context(|| format!("restrict {}", path.display()))?;
            Ok((key, Origin::Created))
        }
        Err(e) if e.kind() == ErrorKind::AlreadyExists => Ok((key_read(path)?, Origin::Reused)),
        Err(e) => Err(e).with_context(|| format!("create {}", path.display())),
    }
}

/// 32 random bytes from the operating system's generator, as 64 lowercase hex characters.
fn key_new() -> String {
    let mut bytes = [0_u8; KEY_BYTES];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn key_read(path: &Path) -> anyhow::Result<String> {
    let text = fs::read_to_string(path).with_context(|| format!("read {}", path.display()))?;
    let key = text.trim();
    if key.len() != 2 * KEY_BYTES || !key.bytes().all(|b| b.is_ascii_hexdigit()) {
        bail!(
            "{} must hold 64 hex characters (an AES-256 key); it is left as it is because \
             payloads sealed with it would become unreadable: fix it, or delete it together \
             with the development database (make clean-db)",
            path.display()
        );
    }
    Ok(key.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh directory under the system temp directory, removed on drop.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new(name: &str) -> TempDir {
            let dir = std::env::temp_dir().join(format!(
                "regina-devkey-{name}-{}-{}",
                std::process::id(),
                uuid::Uuid::new_v4()
            ));
            TempDir(dir)
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn the_key_is_created_once_with_mode_0600_and_then_reused() {
        let dir = TempDir::new("create");
        let path = dir.0.join(".regina").join(DEV_KEY_FILE);
        let (first, origin) = load_or_create(&path).expect("created");
        assert_eq!(origin, Origin::Created);
        assert_eq!(first.len(), 64);
        assert!(first.bytes().all(|b| b.is_ascii_hexdigit()));
        let mode = fs::metadata(&path).expect("file").permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "mode {mode:o}");
        let (second, origin) = load_or_create(&path).expect("reused");
        assert_eq!(origin, Origin::Reused);
        assert_eq!(second, first, "the same key on the next start");
        let other = TempDir::new("other");
        let (third, _) = load_or_create(&other.0.join(DEV_KEY_FILE)).expect("created");
        assert_ne!(third, first, "keys are random");
    }

    #[test]
    fn a_damaged_key_file_is_an_error_and_stays_untouched() {
        let dir = TempDir::new("damaged");
        fs::create_dir_all(&dir.0).expect("dir");
        let path = dir.0.join(DEV_KEY_FILE);
        fs::write(&path, "not a key\n").expect("write");
        let error = load_or_create(&path).expect_err("refused");
        assert!(
            format!("{error:#}").contains("64 hex characters"),
            "{error:#}"
        );
        assert_eq!(fs::read_to_string(&path).expect("read"), "not a key\n");
    }

    #[test]
    fn apply_sets_the_key_only_when_none_is_configured() {
        let dir = TempDir::new("apply");
        let mut config = Config::default();
        let (path, origin) = apply(&mut config, &dir.0).expect("ok").expect("applied");
        assert_eq!(origin, Origin::Created);
        let stored = fs::read_to_string(&path).expect("read");
        let Some(Secret(key)) = &config.regina_encryption_key else {
            panic!("no key set");
        };
        assert_eq!(key, stored.trim());

        for configured in [
            |c: &mut Config| c.regina_encryption_key = Some(Secret("ab".repeat(32))),
            |c: &mut Config| c.queen_encryption_key = Some(Secret("cd".repeat(32))),
        ] {
            let other = TempDir::new("configured");
            let mut config = Config::default();
            configured(&mut config);
            assert!(apply(&mut config, &other.0).expect("ok").is_none());
            assert!(!other.0.join(DEV_KEY_FILE).exists(), "no file is written");
            assert!(
                config.regina_encryption_key.is_none() || config.queen_encryption_key.is_none()
            );
        }
    }
}
