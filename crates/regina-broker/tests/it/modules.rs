//! No import cycles between the top-level modules of any crate of the workspace: each module
//! can be read, and changed, knowing only the modules below it. The graph is built from the
//! sources themselves (`lex`, `graph`), so the check needs no tool and gives the same answer on
//! every machine; a failure names each cycle with a file and line of every edge in it.

mod graph;
mod lex;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use graph::ModuleGraph;

/// `crates/`, from this crate's manifest directory.
fn crates_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("crates/")
        .to_path_buf()
}

/// Every `.rs` file under `dir`, keyed by its path relative to `src`, `/`-separated.
fn read_sources(src: &Path, dir: &Path, files: &mut BTreeMap<String, String>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("read_dir")
        .map(|entry| entry.expect("entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            read_sources(src, &path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let relative = path.strip_prefix(src).expect("under src");
            let key = relative
                .components()
                .map(|c| c.as_os_str().to_string_lossy())
                .collect::<Vec<_>>()
                .join("/");
            files.insert(key, std::fs::read_to_string(&path).expect("source"));
        }
    }
}

/// The graph of every crate root of the workspace: `("regina-broker/lib.rs", graph)`, …
fn workspace_graphs() -> Vec<(String, ModuleGraph)> {
    let mut crates: Vec<PathBuf> = std::fs::read_dir(crates_dir())
        .expect("crates/")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| path.join("src").is_dir())
        .collect();
    crates.sort();
    let mut graphs = Vec::new();
    for dir in crates {
        let src = dir.join("src");
        let mut files = BTreeMap::new();
        read_sources(&src, &src, &mut files);
        let name = dir
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        for root in ["lib.rs", "main.rs"] {
            if let Some(source) = files.get(root) {
                graphs.push((format!("{name}/{root}"), ModuleGraph::build(source, &files)));
            }
        }
    }
    graphs
}

#[test]
fn no_crate_has_an_import_cycle_between_top_level_modules() {
    let graphs = workspace_graphs();
    let roots: Vec<&str> = graphs.iter().map(|(root, _)| root.as_str()).collect();
    // The check sees the crates and their imports (it cannot pass by reading nothing).
    for expected in [
        "regina-broker/lib.rs",
        "regina/main.rs",
        "regina-testkit/lib.rs",
    ] {
        assert!(
            roots.contains(&expected),
            "{expected} not scanned: {roots:?}"
        );
    }
    let broker = &graphs[roots
        .iter()
        .position(|r| *r == "regina-broker/lib.rs")
        .expect("broker")]
    .1;
    assert!(broker.has_edge("http", "engine"), "http → engine not seen");
    let mut failures = Vec::new();
    for (root, graph) in &graphs {
        for cycle in graph.cycles() {
            failures.push(format!(
                "{root}: {}\n{}",
                cycle.join(" ↔ "),
                graph.explain(&cycle)
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "import cycles between top-level modules:\n{}",
        failures.join("\n")
    );
}

/// A crate from `(path, source)` pairs, `lib.rs` among them.
fn fixture(files: &[(&str, &str)]) -> ModuleGraph {
    let files: BTreeMap<String, String> = files
        .iter()
        .map(|(path, source)| (path.to_string(), source.to_string()))
        .collect();
    ModuleGraph::build(&files["lib.rs"], &files)
}

#[test]
fn a_cycle_through_crate_and_super_paths_is_found() {
    let graph = fixture(&[
        ("lib.rs", "mod a;\nmod b;\nmod c;\nmod d;"),
        ("a.rs", "use crate::b::X;"),
        ("b/mod.rs", "mod inner;"),
        ("b/inner.rs", "use super::super::c::Y;"),
        ("c.rs", "fn f() { crate::a::g(); crate::d::h(); }"),
        ("d.rs", "use super::*;"),
    ]);
    assert_eq!(graph.cycles(), vec![vec!["a", "b", "c"]]);
    assert!(graph.has_edge("c", "d"));
    let explained = graph.explain(&graph.cycles()[0]);
    assert!(
        explained.contains("b → c: super::super::c (b/inner.rs:1)"),
        "{explained}"
    );
}

#[test]
fn comments_strings_and_characters_are_not_paths() {
    let graph = fixture(&[
        ("lib.rs", "mod a;\nmod b;\nmod c;"),
        (
            "a.rs",
            "//! [`crate::b`]\n/* crate::b /* nested */ crate::b */\n\
             const S: &str = \"crate::b::X \\\" crate::b\";\nconst R: &str = r#\"crate::b\"#;\n\
             const Q: char = '\"';\nfn f<'x>(_: &'x str) {}\nuse crate::c::Z;",
        ),
        ("b.rs", "use crate::a::S;"),
    ]);
    assert!(graph.cycles().is_empty());
    assert!(!graph.has_edge("a", "b"));
    assert!(
        graph.has_edge("a", "c"),
        "the lexer resumed after the literals"
    );
    assert!(graph.has_edge("b", "a"));
}

#[test]
fn use_groups_inline_modules_and_root_reexports_are_followed() {
    let graph = fixture(&[
        (
            "lib.rs",
            "mod a;\nmod b;\nmod c;\npub use c::{inner::Thing as Renamed, Other};",
        ),
        ("a.rs", "use crate::{b::X, Renamed};"),
        (
            "b.rs",
            "#[cfg(test)]\nmod tests {\n    use super::super::a::Y;\n}",
        ),
        ("c.rs", "fn f() -> crate::Other { todo!() }"),
    ]);
    assert!(graph.has_edge("a", "b"));
    assert!(graph.has_edge("a", "c"), "crate::Renamed is c's");
    assert!(!graph.has_edge("c", "c"));
    assert_eq!(graph.cycles(), vec![vec!["a", "b"]]);
}
