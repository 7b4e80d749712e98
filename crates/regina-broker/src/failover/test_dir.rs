//! A scratch directory for unit tests, removed when dropped.

use std::path::{Path, PathBuf};

/// A fresh directory under the system temp directory.
pub(crate) struct TestDir(PathBuf);

impl TestDir {
    pub(crate) fn new() -> TestDir {
        let path = std::env::temp_dir().join(format!(
            "regina-failover-test-{}",
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::create_dir_all(&path).expect("create the test directory");
        TestDir(path)
    }

    pub(crate) fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TestDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
