//! Enumerates `sql/migrations/*.sql` and `sql/functions/*.sql` at build time and generates the
//! include list the migration runner embeds, so adding a SQL file needs no Rust change. Also
//! tells cargo to rebuild when the dashboard embedded from `dashboard/dist` changes.

use std::error::Error;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn main() -> Result<(), Box<dyn Error>> {
    let manifest_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?);
    let sql_dir = manifest_dir.join("../../sql");
    let mut out = String::new();
    for (name, dir) in [("MIGRATIONS", "migrations"), ("FUNCTIONS", "functions")] {
        let dir = sql_dir.join(dir);
        // A directory listed here makes cargo rebuild when any file in it is added or changed.
        println!("cargo:rerun-if-changed={}", dir.display());
        writeln!(
            out,
            "/// Files of `sql/{}`, in file-name order.",
            dir_name(&dir)
        )?;
        writeln!(out, "pub(crate) static {name}: &[SqlFile] = &[")?;
        for file in sql_files(&dir)? {
            let file_name = file
                .file_name()
                .and_then(|n| n.to_str())
                .ok_or("bad file name")?;
            let path = file.canonicalize()?;
            let path = path.to_str().ok_or("non-UTF-8 path")?;
            writeln!(
                out,
                "    SqlFile {{ name: {file_name:?}, sql: include_str!({path:?}) }},"
            )?;
        }
        writeln!(out, "];")?;
    }
    // The dashboard embedded by `http/webapp.rs`: rebuild when it is (re)built. Before its first
    // build, watch its source directory instead (a missing path would rebuild every time).
    let dashboard = manifest_dir.join("../../dashboard");
    let dist = dashboard.join("dist");
    let watched = if dist.is_dir() { dist } else { dashboard };
    println!("cargo:rerun-if-changed={}", watched.display());
    let out_dir = PathBuf::from(std::env::var("OUT_DIR")?);
    std::fs::write(out_dir.join("sql_files.rs"), out)?;
    Ok(())
}

fn dir_name(dir: &Path) -> String {
    dir.file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_owned()
}

/// The `.sql` files of a directory sorted by name; none when the directory is missing.
fn sql_files(dir: &Path) -> Result<Vec<PathBuf>, Box<dyn Error>> {
    if !dir.is_dir() {
        return Ok(Vec::new());
    }
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_file() && path.extension().is_some_and(|e| e == "sql") {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}
